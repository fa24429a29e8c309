"""The real trec_eval 10 binary as the oracle: `duckrank eval -m all_trec -q --format trec` prints its lines.

For the real TREC data in tests/data/trec_eval and for cases from tests/trec_adversarial.py (a crafted
one, and DUCKRANK_TREC_SEEDS adversarial ones, default 2), under each of trec_eval's nine flag sets
below, both tools print every measure of all_trec (relstring included) per query and in the summary:
the outputs must be the same bytes, line for line. So must trec_eval's other measure sets and
spellings with parameters (MEASURE_LISTS), under the flag sets where they differ.

The binary comes from ../shared/tools/trec_eval/build.sh (tests/trec_eval_binary.py); without it the
tests skip (never in CI). `python tests/test_trec_eval_binary.py` prints the agreement table per measure list and flag set.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import run as cli
from trec_adversarial import Case, generate, halfway
from trec_eval_binary import trec_eval_binary


REPO = Path(__file__).resolve().parent.parent
TREC_DATA = REPO / "tests" / "data" / "trec_eval"

# trec_eval's flag sets (duckrank eval takes the same flags).
FLAG_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "-c": ("-c",),
    "-M 20": ("-M", "20"),
    "-l 2": ("-l", "2"),
    "-c -M 20": ("-c", "-M", "20"),
    "-J": ("-J",),
    "-J -M 20": ("-J", "-M", "20"),
    "-c -J": ("-c", "-J"),
    "-c -l 2": ("-c", "-l", "2"),
}

# The real data: (qrels, run) in tests/data/trec_eval.
REAL_CASES = {
    "results.test": ("qrels.test", "results.test"),
    "results.trunc": ("qrels.test", "results.trunc"),  # 2 of the 3 qrels queries retrieved
    "rel_level": ("qrels.rel_level", "results.test"),  # grades -1..4
}
SEEDS = range(int(os.environ.get("DUCKRANK_TREC_SEEDS", "2")))
# Cases built to hit one pitfall (tests/trec_adversarial.py): set_F exactly halfway between two
# printed values, and a qrels-only query.
CRAFTED = {"halfway": halfway}
CASES = [*REAL_CASES, *CRAFTED, *(f"seed{seed}" for seed in SEEDS)]


def generated(case: str) -> Case:
    """A case of tests/trec_adversarial.py by its name here: crafted, or seedN."""
    return CRAFTED[case]() if case in CRAFTED else generate(int(case.removeprefix("seed")))


@dataclass(frozen=True)
class Diff:
    """A (measure, query) key whose lines differ, or that one tool prints and the other does not."""

    case: str
    flags: str
    measure: str
    query: str
    ours: str | None  # duckrank's value field; None when duckrank does not print the key
    theirs: str | None  # trec_eval's

    def __str__(self) -> str:
        return (f"[{self.case} {self.flags}] {self.measure} {self.query}: "
                f"trec_eval {self.theirs or '(absent)'} / duckrank {self.ours or '(absent)'}")


def trec_lines(text: str) -> dict[tuple[str, str], str]:
    """trec_eval's output as {(measure, query): line}, in printed order."""
    lines: dict[tuple[str, str], str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        measure, query, value = line.split("\t")
        key = (measure.rstrip(), query)
        assert key not in lines, f"{key} printed twice"
        lines[key] = line
    return lines


@dataclass
class Comparison:
    case: str
    flags: str
    compared: int = 0  # keys both print
    identical: int = 0
    diffs: list[Diff] = field(default_factory=list)
    order: list[tuple[str, str]] = field(default_factory=list)  # first common key out of trec_eval's order


def compare(case: str, flags: str, theirs_text: str, ours_text: str) -> Comparison:
    theirs, ours = trec_lines(theirs_text), trec_lines(ours_text)
    result = Comparison(case, flags)
    for key in {**theirs, **ours}:
        measure, query = key
        mine, reference = ours.get(key), theirs.get(key)
        if mine is not None and reference is not None:
            result.compared += 1
            if mine == reference:
                result.identical += 1
                continue
        result.diffs.append(Diff(case, flags, measure, query, mine.split("\t")[2] if mine else None,
                                 reference.split("\t")[2] if reference else None))
    common_theirs = [key for key in theirs if key in ours]
    common_ours = [key for key in ours if key in theirs]
    for mine, reference in zip(common_ours, common_theirs):
        if mine != reference:
            result.order = [reference, mine]
            break
    return result


# ------------------------------------------------------------------------------- running both tools


def run_trec_eval(binary: Path, flags: tuple[str, ...], qrels: Path, run: Path,
                  measures: tuple[str, ...] = ("-m", "all_trec")) -> str:
    done = subprocess.run([str(binary), "-q", *measures, *flags, str(qrels), str(run)],
                          capture_output=True, timeout=120)
    assert done.returncode == 0, f"trec_eval {' '.join(flags)} {qrels} {run}: exit {done.returncode}: " \
                                 f"{done.stderr.decode(errors='replace')}"
    return done.stdout.decode()


def run_duckrank(qrels: Path, run: Path, *options: str, measures: tuple[str, ...] = ("-m", "all_trec")) -> str:
    result = cli("eval", str(qrels), str(run), *measures, "-q", *options,
                 "--format", "trec", "--quiet")
    assert result.exit_code == 0, f"duckrank eval {' '.join(options)} {qrels} {run}: exit {result.exit_code}: " \
                                  f"{result.output}{result.exception!r}"
    return result.stdout


class Inputs:
    """Each case's files, written once: the qrels (all of it for -c; without the queries the run misses
    otherwise, since trec_eval 10 exits 4 on those without -c) and the run."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.files: dict[tuple[str, bool], tuple[Path, Path]] = {}

    def text(self, case: str, complete: bool) -> tuple[Path, Path]:
        key = (case, complete)
        if key not in self.files:
            folder = self.directory / f"{case}-{'c' if complete else 'nc'}"
            folder.mkdir(parents=True, exist_ok=True)
            if case in REAL_CASES:
                qrels_name, run_name = REAL_CASES[case]
                qrels, run = TREC_DATA / qrels_name, TREC_DATA / run_name
                if not complete:
                    retrieved = {line.split()[0] for line in run.read_text().splitlines() if line.strip()}
                    kept = [line for line in qrels.read_text().splitlines(keepends=True)
                            if line.strip() and line.split()[0] in retrieved]
                    qrels = folder / qrels_name
                    qrels.write_text("".join(kept))
            else:
                written = generated(case)
                qrels, run = (written if complete else written.without_qrels_only()).write_text(folder)
            self.files[key] = (qrels, run)
        return self.files[key]

    def parquet(self, case: str, complete: bool) -> tuple[Path, Path]:
        written = generated(case)
        folder = self.directory / f"{case}-{'c' if complete else 'nc'}-parquet"
        folder.mkdir(parents=True, exist_ok=True)
        return (written if complete else written.without_qrels_only()).write_parquet(folder)


# Measure lists beside all_trec, each under the flag sets where it differs: trec_eval's other measure
# sets (the default, official, and set, each with its runid line), and spellings with parameters,
# which print otherwise than the bare names under -c (a query the run misses: utility_2,-1,3,0.5,
# rbp_resid_p=0.5 and relstring_3 keep trec_eval's stand-in ranking's values) and read recall levels
# and a set_F weight. (Not rbp.p=...: m_rbp.c reads its min and max gain uninitialised, so beside a
# gain map (ndcg.1=3,2=9) or under -l 2 its number follows what the measures before it left on the
# stack: 0.0977 for the 0.9688 of RBP with p = 0.5 on the halfway case.)
MEASURE_LISTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "official (no -m)": ((), ("none", "-c")),
    "set": (("-m", "set"), ("none", "-c", "-c -J", "-c -M 20")),
    "parameters": (("-m", "utility.2,-1,3,0.5", "-m", "rbp_resid.p=0.5", "-m", "relstring.3", "-m", "set_F.0.25",
                    "-m", "11pt_avg.0.2,0.5,0.8", "-m", "unj.3", "-m", "Rprec_mult.0.5",
                    "-m", "ndcg.1=3,2=9", "-m", "runid"), tuple(FLAG_SETS)),
}
ALL_TREC = ("-m", "all_trec")


class Oracle:
    """Both tools' output per (case, flag set, measures), computed on first use and kept for the module."""

    def __init__(self, binary: Path, directory: Path) -> None:
        self.binary = binary
        self.inputs = Inputs(directory)
        self.outputs: dict[tuple[str, str, tuple[str, ...]], tuple[str, str]] = {}

    def output(self, case: str, flags: str, measures: tuple[str, ...] = ALL_TREC) -> tuple[str, str]:
        """(trec_eval's output, duckrank's output)."""
        if (case, flags, measures) not in self.outputs:
            qrels, run = self.inputs.text(case, "-c" in FLAG_SETS[flags])
            self.outputs[case, flags, measures] = (
                run_trec_eval(self.binary, FLAG_SETS[flags], qrels, run, measures),
                run_duckrank(qrels, run, *FLAG_SETS[flags], measures=measures))
        return self.outputs[case, flags, measures]

    def comparison(self, case: str, flags: str, measures: tuple[str, ...] = ALL_TREC) -> Comparison:
        return compare(case, flags, *self.output(case, flags, measures))


@pytest.fixture(scope="module")
def oracle(trec_eval, tmp_path_factory) -> Oracle:
    return Oracle(trec_eval, tmp_path_factory.mktemp("trec_oracle"))


def problems_of(comparison: Comparison) -> list[str]:
    problems = [str(diff) for diff in comparison.diffs]
    if comparison.order:
        problems.append(f"[{comparison.case} {comparison.flags}] lines out of trec_eval's order: trec_eval "
                        f"prints {comparison.order[0]} where duckrank prints {comparison.order[1]}")
    return problems


# ------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_duckrank_prints_trec_eval_lines(oracle, flags):
    """Both print the same keys, in the same order, and every line is the same bytes."""
    problems = []
    compared = 0
    for case in CASES:
        comparison = oracle.comparison(case, flags)
        compared += comparison.compared
        problems += problems_of(comparison)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])
    assert compared > 1000


@pytest.mark.parametrize(("name", "flags"), [(name, flags) for name, (_, flag_sets) in MEASURE_LISTS.items()
                                              for flags in flag_sets])
def test_other_measure_lists_print_trec_eval_lines(oracle, name, flags):
    """The same for trec_eval's other measure sets and for spellings with parameters."""
    measures = MEASURE_LISTS[name][0]
    problems = []
    compared = 0
    for case in CASES:
        comparison = oracle.comparison(case, flags, measures)
        compared += comparison.compared
        problems += problems_of(comparison)
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:40])
    assert compared > 100


def test_halfway_set_f_prints_trec_evals_digit(oracle):
    """The crafted case reaches what it is for: set_F halfway between two printed values, where
    (1 + b^2) hits / (b^2 R + retrieved) printed the other digit (0.1562 for trec_eval's 0.1563)."""
    theirs, ours = oracle.output("halfway", "none")
    assert f"{'set_F':<22}\th0\t0.1563\n" in theirs and f"{'set_F':<22}\th0\t0.1563\n" in ours
    theirs, ours = oracle.output("halfway", "-c", MEASURE_LISTS["parameters"][0])
    # the stand-in doc retrieved: 2 * 0 - 1 * 1 + 3 * 2 missed relevant + 0.5 * (0 - 1 - 2) missed non-relevant
    assert f"{'utility_2,-1,3,0.5':<22}\tz_qrels_only\t3.5000\n" in theirs
    assert ours == theirs


@pytest.mark.parametrize("measures", [
    ("-m", "P", "-m", "P.10"),  # the first -m that gives parameters sets them: P_10 only
    ("-m", "P.10", "-m", "all_trec"),
    ("-m", "P.5", "-m", "P.10", "-m", "map"),
    ("-m", "relstring.5", "-m", "relstring.20", "-m", "ndcg_cut.20,5"),
    ("-m", "set_F.0.5", "-m", "set_F", "-m", "official"),
    ("-m", "set",),  # trec_eval's measure sets print its runid line
    ("-m", "set", "-m", "P.5", "-m", "all_trec"),
    ("-m", "runid",),
    ("-m", "runid.3", "-m", "map"),  # a parameter of runid is ignored
    ("-m", "11pt_avg.0.0,0.5,1.0", "-m", "11pt_avg"),  # recall levels, printed as written: 11pt_avg_0.0,0.5,1.0
    ("-m", "11pt_avg..25,.5,.75,1e0",),
], ids=" ".join)
def test_several_m_print_what_trec_eval_prints(trec_eval, trec_data, measures):
    qrels, run = trec_data / "qrels.test", trec_data / "results.test"
    done = subprocess.run([str(trec_eval), "-q", *measures, str(qrels), str(run)], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    result = cli("eval", str(qrels), str(run), "-q", *measures, "--format", "trec", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout == done.stdout


@pytest.mark.parametrize("name", ["all_prefs", "prefs", "qrels_jg"])
def test_measure_sets_over_other_judgments_are_refused(trec_eval, trec_data, name):
    """trec_eval's preference and judgment-group sets fail on qrels (exit 4, "Can't calculate
    measure"); duckrank says what they need."""
    qrels, run = trec_data / "qrels.test", trec_data / "results.test"
    done = subprocess.run([str(trec_eval), "-m", name, str(qrels), str(run)], capture_output=True, text=True)
    assert done.returncode == 4 and "Can't calculate measure" in done.stderr
    result = cli("eval", str(qrels), str(run), "-m", name, "--format", "trec")
    assert result.exit_code == 2
    assert f"'{name}' is trec_eval's measure set over " in result.output and "which duckrank does not read" in result.output


def test_trec_eval_10_needs_c_for_qrels_queries_the_run_misses(trec_eval, trec_data, tmp_path):
    """Why the harness drops qrels-only queries without -c: trec_eval 10 exits 4 on them ("result qid
    '302' not found in qrels", trec_eval.c), after printing the queries before."""
    done = subprocess.run([str(trec_eval), "-q", str(trec_data / "qrels.test"), str(trec_data / "results.trunc")],
                          capture_output=True, text=True)
    assert done.returncode == 4 and "qid '302' not found" in done.stderr
    done = subprocess.run([str(trec_eval), "-q", "-c", str(trec_data / "qrels.test"),
                           str(trec_data / "results.trunc")], capture_output=True, text=True)
    assert done.returncode == 0


@pytest.mark.parametrize("flags", ["none", "-c -J"])
def test_parquet_input_prints_what_text_input_prints(oracle, flags):
    """The same data as Parquet (ids VARCHAR, the score as the DOUBLE its text denotes, grade INTEGER):
    the same bytes."""
    built = [case for case in CASES if case not in REAL_CASES]
    case = built[list(FLAG_SETS).index(flags) % len(built)]
    _, text_output = oracle.output(case, flags)
    qrels, run = oracle.inputs.parquet(case, "-c" in FLAG_SETS[flags])
    assert run_duckrank(qrels, run, *FLAG_SETS[flags]) == text_output, case


def test_output_is_byte_identical_across_runs_and_threads(oracle):
    """The same command twice, and under --threads 1, 2 and 4: the same bytes."""
    for case, threads in [("results.test", True), (next(c for c in CASES if c not in REAL_CASES), False)]:
        qrels, run = oracle.inputs.text(case, True)
        _, first = oracle.output(case, "-c")
        assert run_duckrank(qrels, run, "-c") == first, case
        if threads:
            assert run_duckrank(qrels, run, "-c", "--threads", "1") == first, case
            assert run_duckrank(qrels, run, "-c", "--threads", "2") == first, case
            assert run_duckrank(qrels, run, "-c", "--threads", "4") == first, case


# ------------------------------------------------------------------------------------------ report


def agreement(oracle: Oracle) -> str:
    """The agreement table: per measure list and flag set, lines compared and identical, and the first
    differences; then the totals."""
    out = []
    totals = [0, 0]
    lists = {"all_trec": (ALL_TREC, tuple(FLAG_SETS)), **MEASURE_LISTS}
    for name, (measures, flag_sets) in lists.items():
        for flags in flag_sets:
            comparisons = [oracle.comparison(case, flags, measures) for case in CASES]
            compared = sum(c.compared for c in comparisons)
            identical = sum(c.identical for c in comparisons)
            totals[0] += compared
            totals[1] += identical
            out.append(f"{name}, {flags}: {compared} lines compared, {identical} identical, "
                       f"{compared - identical} differ")
            out.extend(f"    {problem}" for comparison in comparisons for problem in problems_of(comparison)[:5])
    out.append(f"all: {totals[1]:,} of {totals[0]:,} lines identical")
    return "\n".join(out)


if __name__ == "__main__":
    import tempfile

    binary = trec_eval_binary()
    if binary is None:
        raise SystemExit("trec_eval 10 not available")
    with tempfile.TemporaryDirectory() as tmp:
        print(agreement(Oracle(binary, Path(tmp))))


# (x, relevant retrieved, relevant, retrieved) where F computed with beta = sqrt(x), squared back,
# prints another 4th decimal than trec_eval's (x + 1) P R / (x P + R) with x itself: 0.40625 an ulp
# below for set_F.0.3 with 4 of 6 relevant docs among 11 retrieved.
SET_F_ULPS = [(0.3, 4, 6, 11), (0.3, 9, 10, 45), (2.0, 1, 4, 24), (3.0, 15, 23, 59), (0.7, 2, 2, 5)]


def test_set_f_weighs_by_trec_evals_x_itself(trec_eval, tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"q{n} 0 r{i} 1\n" for n, (_, _, rel, _) in enumerate(SET_F_ULPS) for i in range(rel))
                     + "".join(f"q{n} 0 n{i} 0\n" for n, (_, hits, _, ret) in enumerate(SET_F_ULPS)
                               for i in range(ret - hits)))
    run.write_text("".join(f"q{n} Q0 {doc} 0 {ret - i} r\n" for n, (_, hits, _, ret) in enumerate(SET_F_ULPS)
                           for i, doc in enumerate([*(f"r{j}" for j in range(hits)),
                                                    *(f"n{j}" for j in range(ret - hits))])))
    measures = [a for x in sorted({case[0] for case in SET_F_ULPS}) for a in ("-m", f"set_F.{x}")]
    done = subprocess.run([str(trec_eval), "-q", *measures, str(qrels), str(run)], capture_output=True, text=True,
                          check=True)
    result = cli("eval", str(qrels), str(run), "-q", *measures, "--format", "trec", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout == done.stdout
    assert f"{'set_F_0.3':<22}\tq0\t0.4063\n" in done.stdout
