"""Every ranx metric name and form with ranx's numbers: its 14 names (ranx.metrics.metric_switch), with
and without @k, its rbp written with the persistence (rbp.95 = rbp@95 = p 0.95) and its relevance-level
suffix -lN (ndcg@10-l2: grade >= 2 is relevant, and ranx's gains count only those grades).

Oracle: ranx itself (in a process of its own: tests/helpers.py), with
make_comparable=True, on generated tie-free runs with graded, zero and negative labels, relevant docs
never retrieved, a query whose judgments are all 0, a qrels query the run misses (ranx scores it 0:
complete=True) and a run query the qrels lack. Plain `bpref` is trec_eval's (README: the collision
table), compared here on data without negative grades and with a judged non-relevant and a relevant
doc in every query, where ranx's bpref and trec_eval's agree; ranx's own (bpref@k, bpref-lN) is held
to ranx where they differ in tests/test_provider_spellings.py."""

from __future__ import annotations

import json
import os
import random

import pytest
from helpers import ranx
from helpers import run as cli

import duckrank
from duckrank.errors import MeasureError

pytest.importorskip("ranx")

NAMES = ["hits", "hit_rate", "precision", "recall", "f1", "r-precision", "mrr", "map", "dcg", "dcg_burges", "ndcg",
         "ndcg_burges"]
CUT = [name for name in NAMES if name != "r-precision"]  # ranx reads r-precision's @k and ignores it
FORMS = [*NAMES, *(f"{name}@{k}" for name in CUT for k in (1, 5, 30)), "rbp.95", "rbp@95", "rbp.8", "rbp@5"]
SPELLINGS = [*FORMS, *(f"{form}-l{level}" for form in FORMS for level in (2, 3))]
BPREF = ["bpref", "bpref-l2", "bpref-l3"]


def generate(seed: int, grades: list[int]) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(14):
        query = f"q{q:02d}"
        docs = [f"d{d:03d}" for d in rng.sample(range(300), 50)]
        if q != 12:  # q12: judged, never retrieved
            scores = rng.sample(range(10_000), 40)  # distinct: ranx's tie order is its own
            run[query] = {doc: score / 100 for doc, score in zip(docs[:rng.randint(1, 40)], scores)}
        if q != 13:  # q13: retrieved, never judged
            # q11's judgments are all 0; the others hold judged non-relevant docs, some never retrieved
            labels = [0] if q == 11 else grades
            qrels[query] = {doc: rng.choice(labels) for doc in docs[20:50]} | {docs[20]: 0}
    return qrels, run


@pytest.fixture(scope="module", params=[1, pytest.param(2, marks=pytest.mark.slow)])  # a second data set: the full run
def data(request):
    return generate(request.param, [-1, 0, 0, 1, 2, 3])


@pytest.fixture(scope="module")
def expected(data):
    return ranx(*data, SPELLINGS)


def test_every_ranx_spelling_gives_ranx_numbers(data, expected):
    qrels, run = data
    got = duckrank.evaluate(qrels, run, SPELLINGS, complete=True)
    assert got == pytest.approx({m: expected[m]["mean"] for m in SPELLINGS}, abs=1e-12)
    per_query = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, SPELLINGS, complete=True,
                                                            per_query=True).fetchall()}
    assert per_query == pytest.approx({(q, m): v for m in SPELLINGS for q, v in expected[m]["scores"].items()},
                                      abs=1e-12)
    # the data reach every difference the suffixes and the persistence make
    assert got["ndcg@5-l2"] != got["ndcg@5"] and got["ndcg_burges@5-l3"] != got["ndcg_burges@5"]
    assert got["rbp.95"] != got["rbp.8"] and got["rbp.95-l2"] != got["rbp.95"]
    assert got["hits@5"] != got["hit_rate@5"]


def test_bpref_gives_ranx_numbers_where_ranx_and_trec_eval_agree():
    qrels, run = generate(3, [0, 0, 1, 2, 3])
    # without q11 (no relevant doc): there ranx divides 0 by 0, which its numba kernels give as 0 (as
    # duckrank does) and the plain Python this oracle runs as NaN
    del qrels["q11"], run["q11"]
    expected = ranx(qrels, run, BPREF)
    per_query = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, BPREF, complete=True,
                                                            per_query=True).fetchall()}
    assert per_query == pytest.approx({(q, m): v for m in BPREF for q, v in expected[m]["scores"].items()},
                                      abs=1e-12)


def test_std_is_ranx_return_std(data, expected):
    """return_std: numpy's population standard deviation over the queries' values."""
    qrels, run = data
    measures = ["ndcg@5", "map", "hits@5-l2", "rbp.95"]
    got = duckrank.evaluate(qrels, run, measures, complete=True, std=True)
    assert got == pytest.approx({**{m: expected[m]["mean"] for m in measures},
                                 **{f"{m}_std": expected[m]["std"] for m in measures}}, abs=1e-12)
    assert list(got) == ["ndcg@5", "ndcg@5_std", "map", "map_std", "hits@5-l2", "hits@5-l2_std", "rbp.95",
                         "rbp.95_std"]


def test_the_cli_gives_ranx_numbers(data, expected, tmp_path):
    qrels, run = data
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                                for d, g in docs.items()))
    (tmp_path / "run.txt").write_text("".join(f"{q} Q0 {d} 0 {s} r\n" for q, docs in run.items()
                                              for d, s in docs.items()))
    measures = ["ndcg@5-l2", "hits@5", "rbp@95", "f1", "map-l3"]
    done = cli("eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), "-c", "-q",
               "--std", "--format", "jsonl", *(a for m in measures for a in ("-m", m)))
    assert done.exit_code == 0, done.output
    rows = {(row["query_id"], row["metric"]): row["value"] for row in map(json.loads, done.stdout.splitlines())}
    want = {("all", m): expected[m]["mean"] for m in measures}
    want |= {("all", f"{m}_std"): expected[m]["std"] for m in measures}
    want |= {(q, m): v for m in measures for q, v in expected[m]["scores"].items()}
    assert rows == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("spelling, message", [
    ("P@5-l2", "-l2 is ranx's relevance level"),  # not a ranx name: P(rel=2)@5
    ("rbp-l2", "rbp as rbp.NN"),  # ranx's rbp needs its persistence
    ("nDCG(gain=exp)@5-l2", "-l2 is ranx's relevance level"),
])
def test_the_level_suffix_is_ranx_only(spelling, message):
    with pytest.raises(MeasureError, match=message.replace(".", r"\.")):
        duckrank.parse_measure(spelling)


def test_rbp_at_is_ranx_persistence_only_in_ranx_spelling():
    # ranx writes rbp@95 for p = 0.95; ir_measures' RBP@95 (any other case) is a cutoff at 95
    assert duckrank.parse_measure("rbp@95").params["p"] == 0.95
    assert duckrank.parse_measure("rbp@95").params["k"] is None
    assert duckrank.parse_measure("RBP@95").params["k"] == 95
    assert duckrank.parse_measure("RBP@95").params["p"] == 0.8


# `-m "not slow"` asks for a mean, the counters and a geometric mean; the full run for all_trec
@pytest.mark.parametrize("measures", [["-m", "map", "-m", "P.5", "-m", "ndcg_cut.10", "-m", "num_q", "-m", "num_ret",
                                       "-m", "gm_map", "-m", "relstring.5"],
                                      pytest.param(["-m", "all_trec"], marks=pytest.mark.slow)], ids=["some", "all_trec"])
def test_std_adds_lines_to_trec_eval_output_and_nothing_else(measures):
    """--format trec stays trec_eval's bytes without --std; with it, each mean's line is followed by
    its _std line and every other line is unchanged."""
    folder = os.path.join(os.path.dirname(__file__), "data", "trec_eval")
    arguments = ["eval", os.path.join(folder, "qrels.test"), os.path.join(folder, "results.test"), *measures,
                 "-q", "--format", "trec"]
    plain = cli(*arguments)
    spread = cli(*arguments, "--std")
    assert plain.exit_code == spread.exit_code == 0, (plain.output, spread.output)
    assert "_std" not in plain.stdout
    std_lines = [line for line in spread.stdout.splitlines() if line.split()[0].endswith("_std")]
    assert [line for line in spread.stdout.splitlines() if line not in std_lines] == plain.stdout.splitlines()
    lines = spread.stdout.splitlines()
    for line in std_lines:  # right after its measure's summary, never per query
        name, query, _ = line.split()
        assert query == "all" and lines[lines.index(line) - 1].split()[:2] == [name[:-len("_std")], "all"]
    assert {line.split()[0] for line in std_lines} >= {"map_std", "P_5_std", "ndcg_cut_10_std"}
    assert not {"num_q_std", "num_ret_std", "gm_map_std"} & {line.split()[0] for line in std_lines}


@pytest.mark.parametrize("arguments, message", [
    (["-n", "-q", "--std"], "--std adds lines to the summary, which -n drops"),
])
def test_std_cli_errors(tmp_path, arguments, message):
    (tmp_path / "qrels.txt").write_text("q 0 d 1\n")
    (tmp_path / "run.txt").write_text("q Q0 d 1 1.0 r\n")
    done = cli("eval", str(tmp_path / "qrels.txt"), str(tmp_path / "run.txt"), *arguments)
    assert done.exit_code == 2 and message in done.output


def test_std_python_errors():
    qrels, run = {"q": {"d": 1}}, {"q": {"d": 1.0}}
    with pytest.raises(duckrank.OptionError, match="std=True adds standard deviations to the summary"):
        duckrank.evaluate(qrels, run, ["map"], std=True, per_query=True)
    with pytest.raises(duckrank.OptionError, match="std must be True or False, got 'yes'"):
        duckrank.evaluate(qrels, run, ["map"], std="yes")
