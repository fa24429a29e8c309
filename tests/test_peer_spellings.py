"""ir_measures' spellings with ir_measures' numbers, where a spelling was missing or meant something
else: the Set* measures (SetP, SetR, SetF, SetAP, SetRelP) and NumRet(rel=N), which counts the
retrieved docs of grade >= N (ir_measures' NumRelRet at that level), not every retrieved doc; and
trec_eval names with options (set_P(rel=2)), as the README promises every measure takes rel=.

Oracle: ir_measures itself (its pytrec_eval provider), on generated data with graded and negative
labels, relevant docs never retrieved, a qrels query the run misses (ir_measures scores it 0:
complete=True) and one the qrels lack."""

from __future__ import annotations

import random

import pytest

import duckrank
from duckrank.errors import MeasureError

ir_measures = pytest.importorskip("ir_measures")
from ir_measures import Qrel, ScoredDoc  # noqa: E402

SPELLINGS = ["SetP", "SetR", "SetF", "SetAP", "SetRelP", "SetP(rel=2)", "SetR(rel=2)", "NumRet(rel=1)",
             "NumRet(rel=2)", "NumRet(rel=3)", "NumRet", "NumRelRet(rel=2)"]


@pytest.fixture(params=[1, 2, 3])
def data(request):
    rng = random.Random(request.param)
    qrels, run = [], []
    for q in range(15):
        docs = rng.sample(range(300), 50)
        if q != 13:  # judged, never retrieved
            run += [ScoredDoc(f"q{q}", f"d{d}", rng.randint(0, 9) / 3) for d in docs[:rng.randint(1, 40)]]
        if q != 14:  # retrieved, never judged
            qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs[15:50]]
    return qrels, run


def test_set_measures_and_num_ret_with_rel_equal_ir_measures(data):
    qrels, run = data
    # ir_measures prints some spellings in its own form (SetRelP as SetP(relative=True), NumRelRet(rel=2)
    # as NumRet(rel=2)): each spelling's value is that of its parsed measure
    own = {spelling: str(ir_measures.parse_measure(spelling)) for spelling in SPELLINGS}
    expected = {str(m): v for m, v in ir_measures.calc_aggregate(
        [ir_measures.parse_measure(s) for s in SPELLINGS], qrels, run).items()}
    got = duckrank.evaluate(qrels, run, SPELLINGS, complete=True)
    assert got == pytest.approx({spelling: expected[own[spelling]] for spelling in SPELLINGS}, abs=1e-12)
    per_query = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, SPELLINGS, complete=True,
                                                            per_query=True).fetchall()}
    rows = {(row.query_id, str(row.measure)): row.value
            for row in ir_measures.iter_calc([ir_measures.parse_measure(s) for s in SPELLINGS], qrels, run)}
    assert per_query == pytest.approx({(q, spelling): value for (q, measure), value in rows.items()
                                       for spelling in SPELLINGS if own[spelling] == measure}, abs=1e-12)


def test_trec_eval_names_take_rel_like_every_measure(data):
    qrels, run = data
    got = duckrank.evaluate(qrels, run, ["set_P(rel=2)", "set_recall(rel=2)", "SetP(rel=2)", "SetR(rel=2)"])
    assert got["set_P(rel=2)"] == got["SetP(rel=2)"] and got["set_recall(rel=2)"] == got["SetR(rel=2)"]
    assert got["set_P(rel=2)"] != duckrank.evaluate(qrels, run, ["set_P"])["set_P"]


def test_set_names_take_no_cutoff():
    with pytest.raises(MeasureError, match="SetP takes no @cutoff"):
        duckrank.evaluate([Qrel("q", "d", 1)], [ScoredDoc("q", "d", 1.0)], ["SetP@5"])


def test_doc_ascending_ties_equal_ir_measures_msmarco_and_judged_providers():
    # ir_measures' msmarco provider (its MRR@10) and judged provider (Judged@k) break a tie by doc_id
    # ascending, where trec_eval (and its pytrec_eval provider) break it by doc_id descending
    rng = random.Random(7)
    qrels, run = [], []
    for q in range(30):
        docs = rng.sample(range(100), 40)
        run += [ScoredDoc(f"q{q}", f"d{d}", float(rng.randint(0, 3))) for d in docs[:25]]  # many ties
        # no negative grade: ir_measures' Judged counts one as a judgment, duckrank as "pooled, unjudged"
        qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([0, 0, 1, 2])) for d in docs[5:30]]
    rr = ir_measures.msmarco.calc_aggregate([ir_measures.RR @ 10], qrels, run)[ir_measures.RR @ 10]
    judged = ir_measures.judged.calc_aggregate([ir_measures.Judged @ 10], qrels, run)[ir_measures.Judged @ 10]
    got = duckrank.evaluate(qrels, run, ["RR@10", "Judged@10"], ties="doc_ascending")
    assert got == pytest.approx({"RR@10": rr, "Judged@10": judged}, abs=1e-12)
    trec = duckrank.evaluate(qrels, run, ["RR@10", "Judged@10"])
    assert trec["RR@10"] != pytest.approx(rr, abs=1e-9)  # the data do tie where the rules differ


def test_iprec_cuts_recall_as_ir_measures_does(data):
    # ir_measures' IPrec@r (pytrec_eval: trec_eval 9) needs floor(r R + 0.9) relevant docs where
    # trec_eval 10's iprec_at_recall needs round(r R)
    qrels, run = data
    levels = [0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1.0]
    measures = [ir_measures.IPrec @ r for r in levels]
    expected = {(row.query_id, f"IPrec@{row.measure.params['recall']}"): row.value
                for row in ir_measures.iter_calc(measures, qrels, run)}
    spellings = [f"IPrec@{r}" for r in levels]
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    # trec_eval's spelling keeps trec_eval 10's cutoff, which IPrec takes as an option; the data hit
    # levels where the two cutoffs differ
    trec = [f"iprec_at_recall.{r:.2f}" for r in levels]
    rounded = [f"IPrec(recall_cutoff=round)@{r}" for r in levels]
    values = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, [*trec, *rounded], complete=True,
                                                         per_query=True).fetchall()}
    queries = {q for q, _ in values}
    assert all(values[(q, a)] == values[(q, b)] for q in queries for a, b in zip(trec, rounded))
    assert any(values[(q, a)] != got[(q, b)] for q in queries for a, b in zip(trec, spellings))


def test_num_q_per_query_equals_ir_measures(data):
    # ir_measures' NumQ is 1 for each query the run holds and 0 for a qrels query it misses (q13),
    # summed; trec_eval's num_q counts every scored query (under -c the missed one too), summary only
    qrels, run = data
    rows = {(row.query_id, "NumQ"): row.value for row in ir_measures.iter_calc([ir_measures.NumQ], qrels, run)}
    assert rows[("q13", "NumQ")] == 0.0
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, ["NumQ", "num_q"], complete=True,
                                                      per_query=True).fetchall()}
    assert got == rows
    summary = duckrank.evaluate(qrels, run, ["NumQ", "num_q"], complete=True)
    assert summary == {"NumQ": ir_measures.calc_aggregate([ir_measures.NumQ], qrels, run)[ir_measures.NumQ],
                       "num_q": 14.0}


@pytest.fixture(params=[4, 5])
def untied(request):
    rng = random.Random(request.param)
    qrels, run = [], []
    for q in range(15):
        docs = rng.sample(range(300), 50)
        if q != 13:  # judged, never retrieved
            scores = rng.sample(range(10_000), 40)  # distinct: Accuracy orders a tie its own way
            run += [ScoredDoc(f"q{q}", f"d{d}", s / 100) for d, s in zip(docs[:rng.randint(5, 40)], scores)]
        if q != 14:  # retrieved, never judged
            qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs[3:50]]
    return qrels, run


@pytest.mark.parametrize("spellings", [
    # Accuracy: the share of (relevant, non-relevant) pairs of retrieved docs in order: AUC, no value
    # for a query without both (nor for one the run misses). Asked for alone: computed beside another
    # provider's measure, ir_measures fills every qrels query Accuracy has no value for with 0.
    ["Accuracy", "Accuracy(rel=2)"],
    # gains={grade:gain}: nDCG of the qrels with those grades rewritten to their gains (pytrec_eval)
    ["nDCG(gains={2:5})@10", "nDCG(gains={0:1,1:3,3:4})", "nDCG(gains={1:0,2:0})@5"],
])
def test_accuracy_and_gains_equal_ir_measures(untied, spellings):
    qrels, run = untied
    measures = [ir_measures.parse_measure(s) for s in spellings]
    own = {str(measure): spelling for spelling, measure in zip(spellings, measures)}
    expected = {(row.query_id, own[str(row.measure)]): row.value for row in ir_measures.iter_calc(measures, qrels, run)}
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    aggregate = ir_measures.calc_aggregate(measures, qrels, run)
    summary = duckrank.evaluate(qrels, run, spellings, complete=True)
    assert summary == pytest.approx({s: aggregate[m] for s, m in zip(spellings, measures)}, abs=1e-12)
    if spellings[0].startswith("nDCG"):  # the gains change the numbers
        plain = duckrank.evaluate(qrels, run, ["nDCG@10", "nDCG", "nDCG@5"], complete=True)
        assert all(summary[gains] != pytest.approx(plain[name], abs=1e-9) for gains, name in zip(spellings, plain))


def test_gains_refuse_what_ir_measures_reads_otherwise():
    with pytest.raises(MeasureError, match="gains= takes grades and gains of at least 0"):
        duckrank.parse_measure("nDCG(gains={1:-1})@10")


def test_judged_only_equals_ir_measures(data):
    # judged_only=True is trec_eval -J for that measure alone (pytrec_eval's judged_docs_only_flag):
    # the unjudged docs leave the ranking before it is cut
    qrels, run = data
    spellings = ["P(judged_only=True)@5", "nDCG(judged_only=True)@10", "AP(judged_only=True)", "RR(judged_only=True)",
                 "Rprec(judged_only=True)", "P(judged_only=False)@5", "P@5"]
    measures = [ir_measures.parse_measure(s) for s in spellings]
    # ir_measures prints P(judged_only=False)@5 as P@5: each spelling takes its parsed measure's rows
    expected = {(row.query_id, spelling): row.value for row in ir_measures.iter_calc(measures, qrels, run)
                for spelling, measure in zip(spellings, measures) if str(measure) == str(row.measure)}
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    summary = duckrank.evaluate(qrels, run, spellings, complete=True)
    assert summary["P(judged_only=True)@5"] != summary["P@5"] == summary["P(judged_only=False)@5"]
    # per measure: under -J (unjudged='skip') judged_only=False still counts the unjudged docs
    skipped = duckrank.evaluate(qrels, run, ["P(judged_only=False)@5", "P@5"], complete=True, unjudged="skip")
    assert skipped == {"P(judged_only=False)@5": summary["P@5"], "P@5": summary["P(judged_only=True)@5"]}
