"""compare --test tukey: Tukey's HSD over all runs, against ranx and scipy.

  distribution    duckrank's studentized range sf against scipy.stats.studentized_range.sf over a
                  grid of (q, k, df), and against the closed form of its left tail
  statistic       duckrank.tukey_hsd's q, k, df give scipy.stats.tukey_hsd's p-values, per group;
                  with two runs, the pooled two-sample t-test's
  p_tukey, marks  ranx.compare(stat_test="tukey") on generated runs (ties in per-query values, a run
                  equal to the baseline): its p-values, and its Report's superscript letters in
                  duckrank's markdown, LaTeX and report page
  front doors     compare --test tukey and report --test tukey end to end; bad combinations exit 2;
                  the real duckdb shell runs the statistic and the verdicts
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import duckrank
from duckrank._library import connect
from duckrank._studentized_range import sf
from duckrank.comparison import Comparison
from duckrank.errors import InputError, OptionError

from helpers import duckdb_shell
from helpers import run as cli

# ---------------------------------------------------------------------------------------------
# the studentized range distribution


@pytest.mark.parametrize("k", [2, 3, 5, 10, 26])
def test_studentized_range_sf_matches_scipy(k):
    for df in (2, 3, 7, 30, 250, 5000, 99_999, 100_000, 10 ** 6):
        for q in (0.05, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 12.0, 30.0):
            assert sf(q, k, df) == pytest.approx(stats.studentized_range.sf(q, k, df), abs=1e-9), (q, k, df)


def test_studentized_range_left_tail_has_its_closed_form():
    # for w -> 0 the range of k standard normals is at most w with probability
    # k w^(k-1) (2 pi)^(-(k-1)/2) / sqrt(k) (the integral of k phi(z)^k w^(k-1)); scipy's adaptive
    # integration loses this tail (3e-12 for 5.7e-10 at k = 5)
    for k in (3, 5, 8):
        w = 1e-3
        expected = k * w ** (k - 1) * (2 * math.pi) ** (-(k - 1) / 2) / math.sqrt(k)
        assert 1 - sf(w, k, 10 ** 6) == pytest.approx(expected, rel=1e-4)


def test_studentized_range_edges():
    assert sf(0.0, 3, 10) == 1.0 and sf(-1.0, 3, 10) == 1.0 and sf(math.inf, 3, 10) == 0.0
    for q, k, df in ((1.0, 1, 10), (1.0, 3, 0), (math.nan, 3, 10)):
        with pytest.raises(ValueError, match="studentized range needs k >= 2, df > 0"):
            sf(q, k, df)


# ---------------------------------------------------------------------------------------------
# the SQL statistic


@pytest.fixture(scope="module")
def db():
    connection = connect()
    yield connection
    connection.close()


def tukey_rows(con, frame: pd.DataFrame, **args) -> list[dict]:
    con.register("tukey_input", frame)
    try:
        rendered = "".join(f", {key} := ${key}" for key in args)
        relation = con.execute(f"SELECT * FROM duckrank.tukey_hsd('tukey_input'{rendered})", args)
        columns = [d[0] for d in relation.description]
        return [dict(zip(columns, row)) for row in relation.fetchall()]
    finally:
        con.unregister("tukey_input")


def test_statistic_gives_scipy_tukey_hsd_per_group(db):
    rng = np.random.default_rng(3)
    groups = {"x": {"a": rng.normal(0.5, 0.2, 40), "b": rng.normal(0.6, 0.2, 40), "c": rng.normal(0.4, 0.3, 40),
                    "d": rng.integers(0, 3, 40) / 2},
              "y": {"a": rng.random(12), "b": rng.random(12), "c": rng.random(12), "d": rng.random(12)}}
    frame = pd.DataFrame([(g, run, f"q{i}", float(v)) for g, runs in groups.items() for run, values in runs.items()
                          for i, v in enumerate(values)], columns=["dataset", "run", "query_id", "value"])
    rows = tukey_rows(db, frame, runs=["a", "b", "c", "d"])
    assert len(rows) == 2 * 4 * 3
    for group, runs in groups.items():
        names = list(runs)
        expected = stats.tukey_hsd(*runs.values()).pvalue
        for row in (r for r in rows if r["dataset"] == group):
            assert (row["k"], row["n"], row["df"]) == (4, len(runs["a"]), 4 * len(runs["a"]) - 4)
            assert row["mean"] == pytest.approx(np.mean(runs[row["run"]]), abs=1e-12)
            got = stats.studentized_range.sf(row["q"], row["k"], row["df"])
            assert got == pytest.approx(expected[names.index(row["run"]), names.index(row["other"])], abs=1e-12)


def test_statistic_of_two_runs_is_the_pooled_two_sample_t_test(db):
    rng = np.random.default_rng(4)
    a, b = rng.random(25), rng.random(25) + 0.2
    frame = pd.DataFrame([("m", run, f"q{i}", float(v)) for run, values in (("a", a), ("b", b))
                          for i, v in enumerate(values)], columns=["metric", "run", "query_id", "value"])
    row = tukey_rows(db, frame)[0]
    assert row["q"] == pytest.approx(math.sqrt(2) * abs(stats.ttest_ind(a, b).statistic), rel=1e-12)
    assert sf(row["q"], row["k"], row["df"]) == pytest.approx(stats.ttest_ind(a, b).pvalue, abs=1e-9)


def test_statistic_without_variance_and_on_common_queries_only(db):
    frame = pd.DataFrame([("m", "a", "q1", 1.0), ("m", "a", "q2", 1.0), ("m", "b", "q1", 0.0), ("m", "b", "q2", 0.0),
                          ("m", "c", "q1", 1.0), ("m", "c", "q2", 1.0), ("m", "c", "q3", 0.5)],
                         columns=["metric", "run", "query_id", "value"])
    q = {(r["run"], r["other"]): (r["n"], r["q"]) for r in tukey_rows(db, frame)}
    assert q[("a", "b")] == (2, math.inf)  # different means, no variance: p = 0
    assert q[("a", "c")] == (2, None)  # equal means, no variance: no statistic


def test_statistic_refuses_one_run_duplicates_and_nan(db):
    one = pd.DataFrame([("m", "a", "q1", 1.0), ("m", "a", "q2", 0.5)], columns=["metric", "run", "query_id", "value"])
    with pytest.raises(duckdb.Error, match="Tukey's HSD needs at least two runs; got 1: a"):
        tukey_rows(db, one)
    bad = pd.DataFrame([("m", "a", "q1", 1.0), ("m", "a", "q1", 0.5), ("m", "b", "q1", math.inf)],
                       columns=["metric", "run", "query_id", "value"])
    with pytest.raises(duckdb.Error, match="(?s)has 2 values for query 'q1'.*the value inf for query 'q1'; "
                                           "Tukey's HSD needs finite values"):
        tukey_rows(db, bad)


def test_verdicts_refuse_a_baseline_not_among_the_runs_and_a_bad_alpha(db):
    pairs = pd.DataFrame([("m", "a", "b", 2, 2, 2, 0.5, 0.4, 1.0, 0.6)],
                         columns=["metric", "run", "other", "n", "k", "df", "mean", "other_mean", "q", "p"])
    db.register("tukey_tested", pairs)
    try:
        with pytest.raises(duckdb.Error, match=r"(?s)baseline 'c' is not one of the runs \(a, b\).*alpha must be "
                                               r"strictly between 0 and 1; got '2'"):
            db.execute("SELECT * FROM duckrank.tukey_verdicts('tukey_tested', ['a', 'b'], 'c', alpha := 2)").fetchall()
        assert db.execute("SELECT run, p_tukey, significant, beats FROM duckrank.tukey_verdicts('tukey_tested', "
                          "['a', 'b'], 'b')").fetchall() == [("a", 0.6, False, [])]
    finally:
        db.unregister("tukey_tested")


# ---------------------------------------------------------------------------------------------
# against ranx


def generated(seed: int, skills: dict[str, float], queries: int = 30):
    """qrels and runs as dicts (ranx's input) with distinct scores, so that both tools rank alike;
    binary P@5 and RR give many tied per-query values. A run named 'same' copies the first run."""
    rng = np.random.default_rng(seed)
    ids = [f"q{i:02d}" for i in range(queries)]
    qrels = {q: {f"d{j}": 1 for j in range(10) if rng.random() < 0.35} or {"d3": 1} for q in ids}
    runs = {}
    for name, skill in skills.items():
        if name == "same":
            runs[name] = runs[next(iter(runs))]
            continue
        runs[name] = {q: {f"d{j}": float(skill * (f"d{j}" in qrels[q]) + rng.normal()) for j in range(25)}
                      for q in ids}
    return qrels, runs


def frames(qrels, runs):
    qrels_frame = pd.DataFrame([(q, d, r) for q, docs in qrels.items() for d, r in docs.items()],
                               columns=["query_id", "doc_id", "relevance"])
    run_frames = {name: pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                                     columns=["query_id", "doc_id", "score"]) for name, run in runs.items()}
    return qrels_frame, run_frames


# ranx.compare with stat_test="tukey", in one process with numba's JIT off (its kernels as plain
# Python: no compilation): per case, the means, every pair's p-value, and the letters its Report
# writes as each run's superscript.
RANX_COMPARE = r"""
import json, sys
from ranx import Qrels, Run, compare
answers = []
for case in json.load(sys.stdin):
    report = compare(Qrels(case["qrels"]), [Run(run, name=name) for name, run in case["runs"].items()],
                     case["metrics"], stat_test="tukey", max_p=0.05)
    names, metrics = report.model_names, case["metrics"]
    answers.append({
        "means": report.results,
        "p": {a: {b: {m: float(report.comparisons[a, b][m]["p_value"]) for m in metrics} for b in names if b != a}
              for a in names},
        "marks": {m: {run: report.get_superscript_for_latex(run, m) for run in names} for m in metrics}})
print(json.dumps(answers))
"""


def ranx_tukey(*cases: tuple[dict, dict, list[str]]) -> list[dict]:
    """ranx's answer for each (qrels, runs, metrics), at max_p 0.05."""
    done = subprocess.run([sys.executable, "-c", RANX_COMPARE], input=json.dumps(
        [{"qrels": qrels, "runs": runs, "metrics": metrics} for qrels, runs, metrics in cases]),
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# duckrank's spelling -> ranx's, the same numbers on tie-free runs
MEASURES = {"P.5": "precision@5", "recip_rank": "mrr", "map": "map", "ndcg_cut.10": "ndcg@10"}
SKILLS = {"mid": 1.0, "good": 2.2, "bad": 0.2, "same": 0.0, "close": 1.1}
TWO_RUNS = ("mid", "good")


class Case(NamedTuple):
    ranx: dict  # ranx's answer for the runs
    comparison: Comparison
    qrels: dict
    runs: dict
    ranx_two_runs: dict  # ranx's answer for TWO_RUNS alone


@pytest.fixture(scope="module")
def against_ranx() -> Case:
    qrels, runs = generated(11, SKILLS)
    report, two_runs = ranx_tukey((qrels, runs, list(MEASURES.values())),
                                  (qrels, {name: runs[name] for name in TWO_RUNS}, ["map"]))
    comparison = duckrank.compare(*frames(qrels, runs), list(MEASURES), test="tukey", permutations=0, bootstrap=0)
    return Case(report, comparison, qrels, runs, two_runs)


def test_p_tukey_equals_ranx(against_ranx):
    report, comparison = against_ranx.ranx, against_ranx.comparison
    rows = comparison.records()
    assert len(rows) == len(MEASURES) * len(SKILLS)
    for row in rows:
        metric = MEASURES[row["metric"]]
        assert row["mean"] == pytest.approx(report["means"][row["run"]][metric], abs=1e-12)
        if row["is_baseline"]:
            assert row["p_tukey"] is None and row["significant"] is None
            continue
        expected = report["p"]["mid"][row["run"]][metric]
        assert row["p_tukey"] == pytest.approx(expected, abs=1e-9), (row["metric"], row["run"])
        assert row["p_adjusted"] == row["p_tukey"] and row["significant"] == (expected < 0.05)
    same = [row for row in rows if row["run"] == "same"]
    assert [row["p_tukey"] for row in same] == [1.0] * len(MEASURES)
    assert any(row["significant"] for row in rows) and not all(row["significant"] for row in rows
                                                               if not row["is_baseline"])


def ranx_marks(report: dict) -> dict[tuple[str, str], str]:
    """{(duckrank measure, run): the letters ranx's Report writes as the run's superscript}."""
    return {(measure, run): letters for measure, metric in MEASURES.items()
            for run, letters in report["marks"][metric].items()}


def test_beats_are_ranx_superscripts(against_ranx):
    report, comparison = against_ranx.ranx, against_ranx.comparison
    letters = dict(zip(SKILLS, "abcdefghijklmnopqrstuvwxyz"))
    got = {(row["metric"], row["run"]): "".join(letters[run] for run in row["beats"])
           for row in comparison.records()}
    expected = ranx_marks(report)
    assert got == expected
    assert sum(map(len, expected.values())) >= 8  # enough marks to tell a wrong rule


@pytest.fixture(scope="module")
def files(against_ranx, tmp_path_factory):
    qrels, runs = against_ranx.qrels, against_ranx.runs
    folder = tmp_path_factory.mktemp("tukey")
    qrels_frame, run_frames = frames(qrels, runs)
    qrels_frame.to_parquet(folder / "qrels.parquet")
    paths = []
    for name, frame in run_frames.items():
        frame.to_parquet(folder / f"{name}.parquet")
        paths.append(folder / f"{name}.parquet")
    return folder / "qrels.parquet", paths


def table_marks(text: str, pattern: str, measure_column: int, run_column: int) -> dict[tuple[str, str], str]:
    """{(measure, run stem): superscript letters} from a markdown or LaTeX table's rows."""
    marks = {}
    for line in text.splitlines():
        cells = [cell.strip().replace("\\_", "_") for cell in re.split(r" \| | & ", line.strip("| \\"))]
        if len(cells) > run_column and cells[measure_column] in MEASURES:
            run = cells[run_column].split()[0].rsplit("/", 1)[-1].removesuffix(".parquet")
            found = re.search(pattern, cells[run_column + 1])
            marks[(cells[measure_column], run)] = found.group(1) if found else ""
    return marks


def test_cli_markdown_and_latex_mark_what_ranx_marks(against_ranx, files):
    report = against_ranx.ranx
    qrels, runs = files
    args = ["compare", qrels, *runs, *(a for m in MEASURES for a in ("-m", m)), "--test", "tukey",
            "--permutations", "0", "--bootstrap", "0"]
    expected = ranx_marks(report)
    markdown = cli(*args, "-f", "markdown")
    assert markdown.exit_code == 0, markdown.output
    assert markdown.stdout.startswith("| metric | # | run | mean |") and "p (Tukey)" in markdown.stdout
    assert "Tukey's HSD over all 5 runs" in markdown.stdout
    assert table_marks(markdown.stdout, r"<sup>(\w+)</sup>", 0, 2) == expected
    latex = cli(*args, "-f", "latex")
    assert latex.exit_code == 0, latex.output
    assert table_marks(latex.stdout, r"\$\^\{(\w+)\}\$", 0, 2) == expected
    assert "\\#" in latex.stdout and "$p < 0.05$" in latex.stdout
    lines = cli(*args, "-f", "jsonl").stdout.splitlines()
    records = [json.loads(line) for line in lines]
    assert {(r["metric"], r["run"].rsplit("/", 1)[-1].removesuffix(".parquet")): r["p_tukey"] for r in records} \
        == pytest.approx({(m, run): (None if run == "mid" else report["p"]["mid"][run][MEASURES[m]])
                          for m in MEASURES for run in SKILLS}, abs=1e-9)


def test_report_page_marks_what_ranx_marks(against_ranx, files, tmp_path):
    pytest.importorskip("matplotlib")
    report = against_ranx.ranx
    qrels, runs = files
    page = tmp_path / "report.html"
    result = cli("report", qrels, *runs, *(a for m in MEASURES for a in ("-m", m)), "--test", "tukey",
                 "--permutations", "0", "--bootstrap", "0", "-o", page)
    assert result.exit_code == 0, result.output
    html = page.read_text()
    summary = html[html.index('id="summary-table"'):html.index("</table>", html.index('id="summary-table"'))]
    marks = {}
    for row in re.findall(r"<tr.*?</tr>", summary)[1:]:
        measure = re.search(r'<th scope="row">([^<]+)</th>', row).group(1)
        run = re.findall(r'<td class="run">([^< ]+)', row)[1]
        found = re.search(r'<sup data-name="beats">(\w+)</sup>', row)
        marks[(measure, run)] = found.group(1) if found else ""
    assert marks == ranx_marks(report)
    assert "<th>p (Tukey)</th>" in summary and "Tukey's HSD over all 5 runs" in html


# ---------------------------------------------------------------------------------------------
# options


def test_tukey_segments_and_the_other_tests_leave_its_columns_empty(against_ranx):
    qrels, runs = against_ranx.qrels, against_ranx.runs
    qrels_frame, run_frames = frames(qrels, runs)
    for frame in run_frames.values():
        frame["half"] = frame["query_id"].map(lambda q: "low" if q < "q15" else "high")
    by = duckrank.compare(qrels_frame, run_frames, ["P.5"], test="tukey", by="half", permutations=0, bootstrap=0)
    values = {}
    for name, frame in run_frames.items():
        scored = duckrank.evaluate(qrels_frame, frame, ["P.5"], per_query=True).df()
        values[name] = scored[scored["query_id"] != "all"].set_index("query_id")["value"]
    names = list(run_frames)
    for half, chosen in (("low", [q for q in qrels if q < "q15"]), ("high", [q for q in qrels if q >= "q15"])):
        expected = stats.tukey_hsd(*(values[name].loc[chosen].to_numpy() for name in names)).pvalue
        for row in (r for r in by.records() if r["half"] == half and not r["is_baseline"]):
            assert row["p_tukey"] == pytest.approx(expected[0, names.index(row["run"])], abs=1e-9)
    plain = duckrank.compare(qrels_frame, run_frames, ["P.5"], permutations=0, bootstrap=0)
    assert all(row["p_tukey"] is None and row["beats"] is None for row in plain.records())


def test_tukey_takes_no_correction():
    with pytest.raises(OptionError, match="correction 'bh' does not apply to test tukey: Tukey's HSD adjusts for "
                                          "every pair of runs itself; leave correction unset"):
        duckrank.compare("q", ["a", "b"], test="tukey", correction="bh")
    with pytest.raises(OptionError, match="test must be one of t, randomization, tukey; got 'hsd'"):
        duckrank.compare("q", ["a", "b"], test="hsd")


def test_tukey_of_two_runs(against_ranx):
    qrels, runs = against_ranx.qrels, against_ranx.runs
    two = {name: runs[name] for name in TWO_RUNS}
    comparison = duckrank.compare(*frames(qrels, two), ["map"], test="tukey", permutations=0, bootstrap=0)
    row = comparison.records()[1]
    assert row["p_tukey"] == pytest.approx(against_ranx.ranx_two_runs["p"]["mid"]["good"]["map"], abs=1e-9)


def test_cli_bad_combinations_exit_2(files):
    qrels, runs = files
    for extra, message in ((("--test", "tukey", "--correction", "holm"),
                            "--correction 'holm' does not apply to test tukey"),
                           (("--test", "hsd"), "--test must be one of t, randomization, tukey; got 'hsd'")):
        for command in ("compare", "report"):
            output = ("-o", str(qrels.parent / "r.html")) if command == "report" else ()
            result = cli(command, qrels, *runs[:3], "-m", "map", *extra, *output)
            assert result.exit_code == 2, (command, result.output)
            assert message in result.stderr and "Traceback" not in result.output, (command, result.stderr)


def test_cli_help_lists_tukey():
    for command in ("compare", "report"):
        assert "tukey" in cli(command, "--help").stdout


def test_tukey_needs_two_common_queries(against_ranx):
    qrels, runs = against_ranx.qrels, against_ranx.runs
    one = {q: qrels[q] for q in list(qrels)[:1]}
    with pytest.raises(InputError, match="only 1 query in common"):
        duckrank.compare(*frames(one, runs), ["map"], test="tukey", permutations=0, bootstrap=0)


def test_the_duckdb_shell_gives_the_statistic_and_the_verdicts(tmp_path):
    """The documented shell path: duckrank.tukey_hsd's q, k, df; scipy's studentized range for p;
    duckrank.tukey_verdicts for p_tukey and beats."""
    shell = duckdb_shell()
    rng = np.random.default_rng(8)
    values = {"a": rng.random(40), "b": rng.random(40) + 0.3, "c": rng.random(40) * 0.9, "d": rng.random(40) + 0.25}
    frame = pd.DataFrame([("map", run, f"q{i:02d}", float(v)) for run, vs in values.items() for i, v in enumerate(vs)],
                         columns=["metric", "run", "query_id", "value"])
    frame.to_csv(tmp_path / "pq.csv", index=False)
    sql_dir = Path(duckrank.__file__).resolve().parent.parent / "sql"
    load = "".join(f".read {path}\n" for path in sorted(sql_dir.glob("[0-9][0-9]_*.sql")))
    load += f"CREATE TABLE pq AS SELECT * FROM read_csv('{tmp_path / 'pq.csv'}');\n.mode json\n"

    def run(script: str) -> list[dict]:
        done = subprocess.run([shell], input=load + script, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and not done.stderr, done.stderr
        return json.loads(done.stdout)

    names = list(values)
    pairs = run(f"SELECT * FROM duckrank.tukey_hsd(pq, runs := {names});\n")
    expected = stats.tukey_hsd(*values.values()).pvalue
    for pair in pairs:
        pair["p"] = stats.studentized_range.sf(pair["q"], pair["k"], pair["df"])
        assert pair["p"] == pytest.approx(expected[names.index(pair["run"]), names.index(pair["other"])], abs=1e-12)
    pd.DataFrame(pairs).to_csv(tmp_path / "pairs.csv", index=False)
    verdicts = run(f"CREATE TABLE pairs AS SELECT * FROM read_csv('{tmp_path / 'pairs.csv'}');\n"
                   f"SELECT run, p_tukey, beats FROM duckrank.tukey_verdicts(pairs, {names}, 'a') ORDER BY run;\n")
    for verdict in verdicts:
        i = names.index(verdict["run"])
        assert verdict["p_tukey"] == (None if i == 0 else pytest.approx(expected[i, 0], abs=1e-12))
        assert verdict["beats"] == [other for j, other in enumerate(names)
                                    if expected[i, j] < 0.05 and values[verdict["run"]].mean() > values[other].mean()]
    assert any(verdict["beats"] for verdict in verdicts)


def test_tukey_keeps_only_the_tables_the_comparison_reads(against_ranx):
    qrels, runs = against_ranx.qrels, against_ranx.runs

    def tables(con) -> set[str]:
        return {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}

    mine = duckdb.connect()
    before = tables(mine)
    comparison = duckrank.compare(*frames(qrels, runs), ["map"], test="tukey", con=mine, permutations=0, bootstrap=0)
    assert tables(mine) - before == {comparison.table, comparison.per_query_table}
    assert len(comparison.records()) == len(runs)
    # on duckrank's own connection too, the pairs and their p-values go once the verdicts are in
    own = duckrank.compare(*frames(qrels, runs), ["map"], test="tukey", permutations=0, bootstrap=0)
    assert not [name for name in tables(own.con) if "tukey" in name]


def test_letters_past_z_are_two_letters_and_marks_take_commas():
    from duckrank.comparison import beaten_letters, run_letters

    five = run_letters([f"r{i}" for i in range(5)])
    assert list(five.values()) == ["a", "b", "c", "d", "e"] and beaten_letters(["r0", "r3"], five) == "ad"
    many = run_letters([f"r{i}" for i in range(28)])
    assert (many["r25"], many["r26"], many["r27"]) == ("z", "aa", "ab")
    assert beaten_letters(["r1", "r27"], many) == "b,ab" and beaten_letters([], many) == ""
    with pytest.raises(OptionError, match="labels at most 702 runs with letters; got 703"):
        run_letters([f"r{i}" for i in range(703)])
