"""The peers' in-memory inputs (duckrank/peer_inputs.py): pytrec_eval/ranx dicts, ranx Qrels and Run,
ir_measures' Qrel/ScoredDoc records (lists and generators) and a dict of runs {name: run}.

Generated data with ties, graded and negative labels, relevant docs never retrieved, a qrels query
the run misses and a run query the qrels lack. Each form gives the same numbers as the same rows in a
DataFrame, and on tie-free scores the numbers of the tool that holds the form (pytrec_eval on the
dicts, ranx on its objects, ir_measures on its records)."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

import duckrank
from duckrank.errors import InputError

MEASURES = ["map", "ndcg@10", "P@5", "recip_rank", "recall@20"]


def generate(seed: int, ties: bool) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(12):
        query = f"q{q:02d}"
        docs = [f"d{d:03d}" for d in rng.sample(range(200), 40)]
        if q != 11:  # q11: judged, never retrieved
            run[query] = {doc: (rng.randint(0, 6) if ties else rng.random()) for doc in docs[:30]}
        if q != 10:  # q10: retrieved, never judged
            qrels[query] = {doc: rng.choice([-1, 0, 0, 1, 2, 3]) for doc in docs[10:40]}  # 10 never retrieved
    return qrels, run


def frame(scores: dict, column: str) -> pd.DataFrame:
    return pd.DataFrame([(q, d, v) for q, docs in scores.items() for d, v in docs.items()],
                        columns=["query_id", "doc_id", column])


@pytest.fixture(params=[1, 2])
def tied(request):
    return generate(request.param, ties=True)


@pytest.fixture(params=[3, 4])
def untied(request):
    return generate(request.param, ties=False)


def test_dicts_equal_the_same_rows_as_dataframes(tied):
    qrels, run = tied
    expected = duckrank.evaluate(frame(qrels, "relevance"), frame(run, "score"), MEASURES)
    assert duckrank.evaluate(qrels, run, MEASURES) == expected
    per_query = duckrank.evaluate(qrels, run, MEASURES, per_query=True).fetchall()
    assert per_query == duckrank.evaluate(frame(qrels, "relevance"), frame(run, "score"), MEASURES,
                                          per_query=True).fetchall()


def test_dicts_equal_pytrec_eval(untied):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = untied
    names = {"map": "map", "ndcg_cut_10": "ndcg@10", "P_5": "P@5", "recip_rank": "recip_rank",
             "recall_20": "recall@20"}
    scored = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    got = duckrank.evaluate(qrels, run, list(names.values()), per_query=True).fetchall()
    assert {(q, m): v for q, m, v in got} == pytest.approx(
        {(q, names[m]): v for q, values in scored.items() for m, v in values.items()}, abs=1e-12)


def test_ranx_objects_equal_ranx(untied):
    ranx = pytest.importorskip("ranx")
    qrels, run = untied
    qrels = {q: {d: g for d, g in docs.items() if g >= 0} for q, docs in qrels.items()}  # ranx has no negatives
    ranx_qrels, ranx_run = ranx.Qrels(qrels), ranx.Run(run, name="bm25")
    # ranx scores a qrels query the run misses 0 (make_comparable): duckrank's complete=True
    got = duckrank.evaluate(ranx_qrels, ranx_run, ["map", "ndcg@10", "precision@5", "mrr"], complete=True)
    expected = ranx.evaluate(ranx_qrels, ranx_run, ["map", "ndcg@10", "precision@5", "mrr"], make_comparable=True)
    assert got == pytest.approx(expected, abs=1e-9)
    # several ranx runs are named by their names
    other = ranx.Run({q: {d: -s for d, s in docs.items()} for q, docs in run.items()}, name="reversed")
    both = duckrank.evaluate(ranx_qrels, [ranx_run, other], ["map"], complete=True)
    assert list(both) == ["bm25", "reversed"]
    assert both["reversed"]["map"] == pytest.approx(ranx.evaluate(ranx_qrels, other, "map", make_comparable=True),
                                                    abs=1e-9)


def test_ir_measures_records_equal_ir_measures(untied):
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import Qrel, ScoredDoc

    qrels, run = untied
    qrel_records = [Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]

    def scored_docs():
        return (ScoredDoc(q, d, s) for q, docs in run.items() for d, s in docs.items())

    measures = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P @ 5, ir_measures.RR]
    expected = {str(m): v for m, v in ir_measures.calc_aggregate(measures, qrel_records, scored_docs()).items()}
    # ir_measures scores a qrels query the run misses 0: duckrank's complete=True
    got = duckrank.evaluate(qrel_records, scored_docs(), ["AP", "nDCG@10", "P@5", "RR"], complete=True)  # a generator
    assert got == pytest.approx(expected, abs=1e-12)


def test_a_dict_of_runs_is_named_by_its_keys_in_evaluate_and_compare(tied):
    from ir_measures import ScoredDoc

    qrels, run = tied
    flipped = {q: {d: -s for d, s in docs.items()} for q, docs in run.items()}
    runs = {"base": run, "flipped": (ScoredDoc(q, d, s) for q, docs in flipped.items() for d, s in docs.items())}
    values = duckrank.evaluate(qrels, runs, ["map"])
    assert values == {"base": duckrank.evaluate(qrels, run, ["map"]), "flipped": duckrank.evaluate(qrels, flipped, ["map"])}
    comparison = duckrank.compare(qrels, {"base": run, "flipped": flipped}, ["map"], permutations=200, bootstrap=200)
    assert comparison.runs == ["base", "flipped"]


def test_bad_peer_inputs_are_named():
    qrels, run = generate(5, ties=True)
    with pytest.raises(InputError, match=r"run \(dict\): query_id 'q00', doc_id 'x' has score 'high'; a score must be a number"):
        duckrank.evaluate(qrels, {"q00": {"x": "high"}}, ["map"])
    with pytest.raises(InputError, match=r"qrels \(dict\): doc_id mixes str and int ids \('a' and 7\)"):
        duckrank.evaluate({"q00": {"a": 1, 7: 1}}, run, ["map"])
    with pytest.raises(InputError, match=r"run \(list\): record 1 is .*needs query_id, doc_id and score"):
        from ir_measures import Qrel

        duckrank.evaluate(qrels, [Qrel("q00", "d", 1)], ["map"])


def test_a_run_given_as_the_qrels_is_refused_not_scored():
    """Dicts and records lose the column names that tell a run from qrels: a run's fractional scores
    in the qrels' place would be scored as grades without a word. Qrels in these forms hold integer
    grades, as pytrec_eval requires (ranx truncates), so a fractional one is refused, naming the
    swap; whole-number floats are grades; a table keeps fractional grades."""
    from ir_measures import Qrel

    qrels, run = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2.0}}, {"q1": {"d1": 0.5, "d2": 1.7}, "q2": {"d1": 0.1}}
    swapped = "if these are a run's scores, the qrels and the run are swapped: give the qrels first, then the run"
    with pytest.raises(InputError, match=r"qrels \(dict\): query_id 'q1', doc_id 'd1' has relevance 0\.5, not a whole "
                                         r"number: qrels as dicts or records hold integer grades") as caught:
        duckrank.evaluate(run, qrels, ["map"])
    assert swapped in str(caught.value)
    with pytest.raises(InputError, match=r"qrels \(list\): query_id 'q1', doc_id 'd' has relevance 1\.5, not a whole"):
        duckrank.evaluate([Qrel("q1", "d", 1.5)], run, ["map"])
    as_dict = duckrank.evaluate(qrels, run, ["map", "ndcg"])
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    assert as_dict == duckrank.evaluate(pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]), run,
                                        ["map", "ndcg"])
    fractional = pd.DataFrame([("q1", "d1", 0.5), ("q1", "d2", 1.5)], columns=["query_id", "doc_id", "relevance"])
    assert duckrank.evaluate(fractional, run, ["ndcg"])["ndcg"] > 0
    infinite = {"q1": {"d1": math.inf}}  # no whole number either, but not a score: the table's own message
    with pytest.raises(InputError) as as_dict_error:
        duckrank.evaluate(infinite, run, ["map"])
    with pytest.raises(InputError) as as_table_error:
        duckrank.evaluate(pd.DataFrame([("q1", "d1", math.inf)], columns=["query_id", "doc_id", "relevance"]), run,
                          ["map"])
    assert str(as_dict_error.value) == str(as_table_error.value)
    assert "swapped" not in str(as_dict_error.value)


def test_empty_inputs_score_as_ir_measures_scores_them():
    """An empty run scores every qrels query 0 with complete (ir_measures' providers score every
    qrels query); empty qrels, or an empty run without complete, score nothing: no per-query rows,
    a mean NaN, a count 0 (calc_aggregate's nan and 0). In every form an empty input comes in."""
    ir_measures = pytest.importorskip("ir_measures")
    from ir_measures import Qrel, ScoredDoc

    qrels = {"a": {"x": 1, "y": 0}, "b": {"z": 2}}
    run = {"a": {"x": 0.5, "z": 0.2}, "c": {"x": 0.1}}
    measures = [ir_measures.AP, ir_measures.nDCG @ 10, ir_measures.P @ 5, ir_measures.NumQ, ir_measures.NumRet]
    spellings = [str(measure) for measure in measures]

    def forms(scores: dict, kind: str) -> list:
        record, column = (ScoredDoc, "score") if kind == "run" else (Qrel, "relevance")
        rows = [(q, d, v) for q, docs in scores.items() for d, v in docs.items()]
        frame = pd.DataFrame(rows, columns=["query_id", "doc_id", column])
        if not rows:  # an empty DataFrame's object columns: no type in DuckDB
            frame = frame.astype({"query_id": str, "doc_id": str})
        return [scores, frame, iter([record(*row) for row in rows])]

    def same(got: float, expected: float) -> bool:
        return got == pytest.approx(expected) or (math.isnan(got) and math.isnan(expected))

    for qrels_given, run_given in ((qrels, {}), ({}, run), ({}, {})):
        peer_qrels = [Qrel(q, d, g) for q, docs in qrels_given.items() for d, g in docs.items()]
        peer_run = [ScoredDoc(q, d, v) for q, docs in run_given.items() for d, v in docs.items()]
        means = {str(m): v for m, v in ir_measures.calc_aggregate(measures, peer_qrels, peer_run).items()}
        rows = sorted((r.query_id, str(r.measure), r.value) for r in ir_measures.iter_calc(measures, peer_qrels, peer_run))
        for qrels_form, run_form in zip(forms(qrels_given, "qrels"), forms(run_given, "run")):
            got = duckrank.evaluate(qrels_form, run_form, spellings, complete=True)
            assert all(same(got[s], means[s]) for s in spellings), (qrels_given, run_given, got, means)
        got_rows = duckrank.evaluate(qrels_given, run_given, spellings, complete=True, per_query=True).fetchall()
        assert sorted(got_rows) == rows
    # without complete an empty run scores nothing, as empty qrels do
    nothing = duckrank.evaluate(qrels, {}, spellings)
    assert all(same(nothing[s], means[s]) for s in spellings), nothing
    assert duckrank.evaluate(qrels, {}, spellings, per_query=True).fetchall() == []
