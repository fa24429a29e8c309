"""The diversity family (sql/34_diversity_metrics.sql) against its oracle, ir_measures with its pyndeval
provider (ndeval 4.5), per query and in the mean, through the three front doors: Python, the CLI and
the SQL table macros.

The data: several subtopics per query, graded and negative labels, docs judged for a subtopic and
relevant to none, relevant docs never retrieved, unjudged retrieved docs, a query with no relevant
subtopic, a query only in the qrels and one only in the run, and tied scores. ndeval breaks a tie by
doc id ascending (pyndeval sorts a run by (-score, doc_id)), which is duckrank's ties='doc_ascending':
every comparison runs under it.

ir_measures is asked for one measure at a time: given measures that need different ndeval settings
(alpha, beta, rel) in one call, it hands the run, an iterator, to the first setting's evaluator and an
exhausted one to the next (ir_measures 0.4.3, pyndeval_provider.py), which then scores nothing.
Its judged_only is broken the same way (it indexes that iterator), so judged_only's oracle is the
run filtered to the judged docs, which is what the provider means to do.
"""

from __future__ import annotations

import json
import math
import random
import subprocess

import duckdb
import ir_measures
import pandas as pd
import pytest
from helpers import duckrank_command
from helpers import run as cli
from ir_measures import Qrel, ScoredDoc

import duckrank
from duckrank._library import connect
from duckrank.errors import InputError, OptionError
from duckrank.evaluation import compute
from duckrank.measures import parse_measures

TIES = "doc_ascending"
# ir_measures scores every qrels query, a query its run misses as 0: duckrank's complete
IR_MEASURES = {"ties": TIES, "complete": True}
# every measure and option, cutoffs 1 (ndeval leaves rank 1 unnormalised), within and at ndeval's
# deepest (20) and past the depth of every ranking; pairs that differ in one option only (alpha, beta,
# rel, k) show that each option reaches the math
MEASURES = [
    "alpha_nDCG@1", "alpha_nDCG@10", "alpha_nDCG(alpha=0.3)@10", "alpha_nDCG(rel=2)@10", "alpha_nDCG(alpha=1.0)@20",
    "alpha_DCG@1", "alpha_DCG@5", "alpha_DCG(alpha=0.3)@5",
    "ERR_IA@1", "ERR_IA@10", "nERR_IA@5", "nERR_IA(rel=2)@20",
    "NRBP", "NRBP(beta=0.9)", "NRBP(alpha=0.3)", "nNRBP", "nNRBP(alpha=1.0,beta=0.3)",
    "AP_IA", "MAP_IA(rel=2)", "P_IA@1", "P_IA@7", "StRecall@3", "StRecall(rel=2)@20",
    "α_nDCG@5", "α_DCG(alpha=0.3)@10",  # ir_measures' own spellings of alpha_nDCG and alpha_DCG
]
CHANGED = [("alpha_nDCG@10", "alpha_nDCG(alpha=0.3)@10"), ("alpha_nDCG@10", "alpha_nDCG(rel=2)@10"),
           ("alpha_DCG@5", "alpha_DCG(alpha=0.3)@5"), ("NRBP", "NRBP(beta=0.9)"), ("NRBP", "NRBP(alpha=0.3)"),
           ("AP_IA", "MAP_IA(rel=2)"), ("P_IA@1", "P_IA@7"), ("ERR_IA@1", "ERR_IA@10")]


def generate(seed: int) -> tuple[list[Qrel], list[ScoredDoc]]:
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(7):
        query = f"q{q}"
        docs = [f"d{i:02d}" for i in range(18)]
        subtopics = rng.randint(2, 5)
        for doc in docs[:13]:  # d13..d17: never judged
            for subtopic in range(1, subtopics + 1):
                if rng.random() < 0.45:
                    # q3 has no relevant subtopic: its grades are 0 and -1 only
                    grade = rng.choice([-1, 0]) if q == 3 else rng.choice([-1, 0, 0, 1, 1, 2, 3])
                    qrels.append(Qrel(query, doc, grade, str(subtopic)))
        if q == 6:  # only in the qrels
            continue
        for doc in rng.sample(docs, 12):  # some relevant docs go unretrieved
            run.append(ScoredDoc(query, doc, float(rng.randint(0, 4))))  # ties
    run += [ScoredDoc("q9", "d00", 1.0), ScoredDoc("q9", "d01", 0.5)]  # only in the run
    # only in the qrels, with no relevant subtopic: ir_measures scores it 0, nNRBP too (q3's is 0 / 0)
    qrels += [Qrel("q7", "d00", 0, "1"), Qrel("q7", "d01", -1, "2")]
    return qrels, run


QRELS, RUN = generate(26)


def oracle(measure: str, qrels=QRELS, run=RUN, judged_only: bool = False) -> dict[str, float]:
    """ir_measures' per-query values (pyndeval provider), one measure per call."""
    if judged_only:
        judged = {(q.query_id, q.doc_id) for q in qrels}
        run = [r for r in run if (r.query_id, r.doc_id) in judged]
    return {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(measure)], qrels, run)}


def oracle_mean(measure: str) -> float:
    return ir_measures.calc_aggregate([ir_measures.parse_measure(measure)], QRELS, RUN)[
        ir_measures.parse_measure(measure)]


def same(got: float, expected: float) -> bool:
    return (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected, abs=1e-12)


def assert_per_query(got: dict[str, float], expected: dict[str, float], what: str) -> None:
    assert set(got) == set(expected), (what, set(got) ^ set(expected))
    wrong = {q: (got[q], expected[q]) for q in expected if not same(got[q], expected[q])}
    assert not wrong, (what, wrong)


def per_query(relation, column: str = "measure") -> dict[str, dict[str, float]]:
    values: dict[str, dict[str, float]] = {}
    for query, measure, value in relation.fetchall():
        values.setdefault(measure, {})[query] = value
    return values


@pytest.fixture(scope="module")
def expected() -> dict[str, dict[str, float]]:
    return {measure: oracle(measure) for measure in MEASURES}


@pytest.fixture(scope="module")
def results() -> tuple[dict[str, dict[str, float]], dict[str, float]]:
    """duckrank's per-query values and means of every measure, from one evaluation."""
    computed = compute(QRELS, RUN, MEASURES, **IR_MEASURES)
    means = {measure: value for _, measure, value in computed.summary.fetchall()}
    return per_query(computed.per_query.project("query_id, measure, value")), means


def test_the_data_is_as_hostile_as_it_says():
    queries = {q.query_id for q in QRELS}
    assert {"q3", "q6", "q7"} <= queries and "q9" not in queries and not {"q6", "q7"} & {r.query_id for r in RUN}
    assert all(q.relevance <= 0 for q in QRELS if q.query_id in ("q3", "q7"))
    assert {q.relevance for q in QRELS} == {-1, 0, 1, 2, 3}
    scores = [(r.query_id, r.score) for r in RUN]
    assert len(set(scores)) < len(scores)  # ties


def test_python_equals_ir_measures_per_query_and_in_the_mean(results, expected):
    got, means = results
    for measure in MEASURES:
        assert_per_query(got[measure], expected[measure], measure)
        assert same(means[measure], oracle_mean(measure)), measure
    # nNRBP is 0 / 0 for the query with no relevant subtopic, as in ndeval, so its mean is NaN; 0 for
    # such a query the run misses, as ir_measures scores it
    assert math.isnan(got["nNRBP"]["q3"]) and math.isnan(means["nNRBP"]) and got["nNRBP"]["q7"] == 0.0


def test_options_change_the_values(results):
    """Each option reaches the math: a changed alpha, beta, rel or cutoff changes the value."""
    _, means = results
    for one, other in CHANGED:
        assert abs(means[one] - means[other]) > 1e-6, (one, other)
    # the tie rule matters on these ties, and trec's is not ndeval's; without complete the qrels
    # query the run misses is not averaged
    assert duckrank.evaluate(QRELS, RUN, ["alpha_nDCG@10"], complete=True)["alpha_nDCG@10"] != pytest.approx(
        means["alpha_nDCG@10"], abs=1e-9)
    assert duckrank.evaluate(QRELS, RUN, ["alpha_nDCG@10"], ties=TIES)["alpha_nDCG@10"] == pytest.approx(
        means["alpha_nDCG@10"] * 8 / 6, abs=1e-12)  # q6 and q7 score 0 with complete


def test_a_qrels_table_with_a_subtopic_column_of_any_type_and_name(results):
    frame = pd.DataFrame(QRELS)
    table = frame.assign(topic=frame.iteration.astype(int)).drop(columns="iteration")
    measures = ["alpha_nDCG@10", "AP_IA", "StRecall@3"]
    got = duckrank.evaluate(table, pd.DataFrame(RUN), measures, subtopic_col="topic", **IR_MEASURES)
    assert got == pytest.approx({m: results[1][m] for m in measures}, abs=1e-12)


def test_judged_only_and_queries_the_run_misses(expected):
    """judged_only drops the docs the query has no judgment of; without complete, the qrels queries the
    run misses (q6, q7) are not scored, and the run's query the qrels lack (q9) never is."""
    measures = ["alpha_nDCG(judged_only=true)@10", "NRBP(judged_only=true)", "ERR_IA@10"]
    got = per_query(duckrank.evaluate(QRELS, RUN, measures, per_query=True, ties=TIES).project(
        "query_id, measure, value"))
    def scored(values: dict[str, float]) -> dict[str, float]:
        return {query: value for query, value in values.items() if query not in ("q6", "q7")}

    assert_per_query(got["alpha_nDCG(judged_only=true)@10"], scored(oracle("alpha_nDCG@10", judged_only=True)),
                     "judged_only")
    assert_per_query(got["NRBP(judged_only=true)"], scored(oracle("NRBP", judged_only=True)), "judged_only")
    assert got["alpha_nDCG(judged_only=true)@10"] != scored(expected["alpha_nDCG@10"])  # it drops unjudged docs
    assert_per_query(got["ERR_IA@10"], scored(expected["ERR_IA@10"]), "not complete")


def test_several_runs(results):
    """Two runs go through query keys of their own (a struct of run and query)."""
    other = [ScoredDoc(r.query_id, r.doc_id, -r.score) for r in RUN]
    both = duckrank.evaluate(QRELS, {"a": RUN, "b": other}, ["alpha_nDCG@10", "nNRBP"], **IR_MEASURES)
    assert both["a"]["alpha_nDCG@10"] == pytest.approx(results[1]["alpha_nDCG@10"], abs=1e-12)
    measure = ir_measures.parse_measure("alpha_nDCG@10")
    assert both["b"]["alpha_nDCG@10"] == pytest.approx(
        ir_measures.calc_aggregate([measure], QRELS, other)[measure], abs=1e-12)


CLI_MEASURES = ["alpha_nDCG@10", "alpha_DCG(alpha=0.3)@5", "nERR_IA@5", "nNRBP", "AP_IA", "P_IA@7", "StRecall@3"]


def test_cli_reads_trec_diversity_qrels_in_one_process(tmp_path, expected):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text("".join(f"{q.query_id} {q.iteration} {q.doc_id} {q.relevance}\n" for q in QRELS))
    run.write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score} tag\n" for r in RUN))
    done = subprocess.run([*duckrank_command(), "eval", str(qrels), str(run), *sum((["-m", m] for m in CLI_MEASURES), []),
                           "-q", "-c", "--ties", TIES, "--format", "jsonl"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got: dict[str, dict[str, float]] = {}
    for row in map(json.loads, done.stdout.splitlines()):
        value = float("nan") if row["value"] is None else row["value"]
        got.setdefault(row["metric"], {})[row["query_id"]] = value
    for measure in CLI_MEASURES:
        mean = got[measure].pop("all")
        assert_per_query(got[measure], expected[measure], measure)
        assert same(mean, oracle_mean(measure)), measure


def test_sql_table_macros_equal_ir_measures(expected):
    con = connect()
    try:
        con.register("qrels_rows", pd.DataFrame(QRELS).rename(columns={"iteration": "subtopic"}))
        con.register("run_rows", pd.DataFrame(RUN))
        calls = {"alpha_nDCG(alpha=0.3)@10": "alpha_ndcg('qrels_rows', 'run_rows', k := 10, alpha := 0.3",
                 "NRBP(alpha=0.3)": "nrbp('qrels_rows', 'run_rows', alpha := 0.3"}
        for measure, call in calls.items():
            got = dict(con.execute(f"SELECT query_id, value FROM duckrank.{call}, ties := '{TIES}', "
                                   f"complete := true)").fetchall())
            assert_per_query(got, expected[measure], measure)
        with pytest.raises(duckdb.Error, match="ties must be trec or doc_ascending; got 'average'"):
            con.execute("SELECT * FROM duckrank.subtopic_recall('qrels_rows', 'run_rows', k := 5, ties := 'average')")
    finally:
        con.close()


def test_errors_say_what_to_pass(tmp_path):
    adhoc = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "relevance": [1]})
    run = pd.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [1.0]})
    with pytest.raises(InputError, match=r"alpha_nDCG@5 read each judgment's subtopic, but qrels \(DataFrame\) has "
                                         r"no column 'subtopic'; pass diversity qrels"):
        duckrank.evaluate(adhoc, run, ["alpha_nDCG@5"])
    with pytest.raises(InputError, match=r"has no column 'subtopic' \(from 'topic'\).*subtopic_col="):
        duckrank.evaluate(adhoc, run, ["alpha_nDCG@5"], subtopic_col="topic")
    with pytest.raises(OptionError, match="ties must be trec or doc_ascending; got 'input'"):
        duckrank.evaluate(QRELS, RUN, ["NRBP"], ties="input")
    with pytest.raises(OptionError, match="unjudged must be nonrelevant or skip; got 'mean'"):
        duckrank.evaluate(QRELS, RUN, ["NRBP"], unjudged="mean")
    with pytest.raises(OptionError, match="in measure 'NRBP\\(beta=2\\)': patience must be between 0 and 1; got '2'"):
        duckrank.evaluate(QRELS, RUN, ["NRBP(beta=2)"])
    # the CLI: exit 1 with the same message; Spark refuses the family before it starts
    adhoc.to_csv(tmp_path / "qrels.csv", index=False)
    run.to_csv(tmp_path / "run.csv", index=False)
    result = cli("eval", str(tmp_path / "qrels.csv"), str(tmp_path / "run.csv"),
                 "-m", "alpha_nDCG@5")
    assert result.exit_code == 1 and "--subtopic-col" in result.stderr and "Traceback" not in result.output
    result = cli("eval", str(tmp_path / "qrels.csv"), str(tmp_path / "run.csv"),
                 "-m", "alpha_nDCG@5", "--engine", "spark")
    assert result.exit_code == 2 and "does not compute the diversity measures (alpha_nDCG@5)" in result.stderr
    from duckrank import spark
    with pytest.raises(OptionError, match="alpha_nDCG@5 read subtopic qrels .* use the DuckDB engine"):
        spark._conventions({}, parse_measures(["alpha_nDCG@5"]))


def test_ad_hoc_measures_read_trec_diversity_qrels_as_before(tmp_path):
    """Without a diversity measure the second field stays unread: trec_eval's reading of the file."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 b 0\n")
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["b", "a"], "score": [2.0, 1.0]})
    assert duckrank.evaluate(str(qrels), run, ["map"]) == {"map": 0.5}
    # one subtopic throughout: alpha-nDCG is nDCG with binary gains, the novelty discount never applies twice
    assert duckrank.evaluate(str(qrels), run, ["alpha_nDCG@2"])["alpha_nDCG@2"] == pytest.approx(
        (1 / math.log2(3)) / 1, abs=1e-12)


def test_ad_hoc_measures_beside_the_diversity_ones_equal_them_alone(results):
    """An ad-hoc measure reads diversity qrels as a doc judged once per subtopic: with duplicates
    max, at its highest grade. Asked for together, each family keeps its own pass (the ad-hoc one lean)."""
    together = duckrank.evaluate(QRELS, RUN, ["nDCG@10", "alpha_nDCG@10", "P@5"], duplicates="max", **IR_MEASURES)
    assert together["alpha_nDCG@10"] == pytest.approx(results[1]["alpha_nDCG@10"], abs=1e-12)
    assert {m: together[m] for m in ("nDCG@10", "P@5")} == duckrank.evaluate(
        QRELS, RUN, ["nDCG@10", "P@5"], duplicates="max", **IR_MEASURES)


def test_trec_qrels_off_the_common_layout_keep_their_subtopics(tmp_path, results):
    """The line reader (a comment, tabs and runs of spaces take it) keeps the subtopic as the fast one does."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# query subtopic doc grade\n" + "".join(
        f"{q.query_id}\t{q.iteration}  {q.doc_id} {q.relevance}\n" for q in QRELS))
    measures = ["alpha_nDCG@10", "AP_IA"]
    assert duckrank.evaluate(str(qrels), RUN, measures, **IR_MEASURES) == pytest.approx(
        {m: results[1][m] for m in measures}, abs=1e-12)
