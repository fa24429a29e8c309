"""ir_measures' spellings that its provider resolution sends elsewhere than pytrec_eval, with the
numbers of the provider it picks (ir_measures 0.4.3, cwl-eval installed, perl on the PATH):

  ERR@k, nDCG(dcg='exp-log2')@k   gdeval (ir_measures' bundled gdeval.pl, run by perl): ERR with a
                                  top grade of 4 (gdeval's MAX_JUDGMENT), nDCG with 2^g - 1 gains
  RBP(rel=N)                      cwl_eval: binary RBP (grade >= N), ranks 1..1000
  SDCG(dcg=log2,...)@k            cwl_eval: SDCG, whose one DCG is log2

plus ranx's forms bpref, bpref@k, bpref-lN and r-precision@k (ranx reads the k and ignores it).

Oracles: ir_measures itself (its provider resolution, asserted) and ranx itself (numba's JIT off),
on generated runs without ties, with graded, zero and negative labels, relevant docs never
retrieved, a query judged only 0, one judged only relevant and a qrels query the run misses. gdeval prints its values to 5
decimals, so they are compared to 5e-6; the others to 1e-12."""

from __future__ import annotations

import math
import random

import pytest
from helpers import ranx

import duckrank

ir_measures = pytest.importorskip("ir_measures")


def generate(seed: int) -> tuple[dict, dict]:
    """Numeric query ids (gdeval.pl reads no other) and grades up to 4 (gdeval's top grade)."""
    rng = random.Random(seed)
    qrels, run = {}, {}
    for q in range(13):
        query = str(100 + q)
        docs = [f"d{d:03d}" for d in rng.sample(range(300), 40)]
        if q != 10:  # judged, never retrieved
            scores = rng.sample(range(10_000), 30)  # distinct: every tool's tie order agrees
            run[query] = {doc: score / 100 for doc, score in zip(docs[:rng.randint(1, 30)], scores)}
        # 109: judged only 0; 112: only relevant docs judged (ranx's bpref: 0 / 0)
        labels = {9: [0], 12: [1, 2, 3]}.get(q, [-1, 0, 0, 1, 2, 3, 4])
        qrels[query] = {doc: rng.choice(labels) for doc in docs[10:40]} | ({} if q == 12 else {docs[10]: 0})
    return qrels, run


@pytest.fixture(scope="module")
def data():
    return generate(7)


def provider(measure: str) -> str:
    parsed = ir_measures.parse_measure(measure)
    return next(p.NAME for p in ir_measures.DefaultPipeline.providers if p.is_available() and p.supports(parsed))


def per_query(qrels: dict, run: dict, measures: list[str], **conventions) -> dict:
    return {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, measures, per_query=True,
                                                       **conventions).fetchall()}


IR_MEASURES = {  # spelling: (provider, tolerance)
    "ERR@5": ("gdeval", 5e-6), "ERR@20": ("gdeval", 5e-6),
    "nDCG(dcg='exp-log2')@5": ("gdeval", 5e-6), "nDCG(dcg='exp-log2')@20": ("gdeval", 5e-6),
    "RBP(rel=1)": ("cwl_eval", 1e-12), "RBP(rel=2,p=0.95)": ("cwl_eval", 1e-12), "RBP(rel=3,p=0.5)": ("cwl_eval", 1e-12),
    "SDCG(dcg='log2',max_rel=4)@10": ("cwl_eval", 1e-12),
}


@pytest.mark.parametrize("measure", list(IR_MEASURES))
def test_ir_measures_spelling_gives_its_providers_numbers(data, measure):
    qrels, run = data
    chosen, tolerance = IR_MEASURES[measure]
    assert provider(measure) == chosen
    judgments = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    want = {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(measure)], judgments, run)}
    # ir_measures scores every qrels query, 0 where the provider gives none (gdeval has no line for a
    # query without a relevant doc, cwl_eval none for a query the run misses): duckrank's complete=True
    got = {q: v for (q, _), v in per_query(qrels, run, [measure], complete=True).items()}
    assert got == pytest.approx(want, abs=tolerance) and len(want) == 13 and len(set(want.values())) >= 4


# ir_measures' names and parameter forms that no other module holds to ir_measures itself (its aliases
# BPref, MAP, NDCG, Precision, Recall, RPrec, MRR; rel=, judged_only=, gains=), all through its default
# provider (pytrec_eval), one call per form: in one call, ir_measures 0.4.3 files an nDCG without gains
# under whichever pytrec_eval invocation its set of measures yields first, so with PYTHONHASHSEED=3
# NDCG@10 came out with the gains of nDCG(gains=...)@10, and that one 0
PYTREC_FORMS = ["Bpref", "BPref", "Bpref(rel=2)", "MAP", "AP(rel=2)@10", "AP(judged_only=True)", "NDCG@10",
                "nDCG(judged_only=True)", "nDCG(gains={0:0,1:1,2:3,3:7,4:15})@10", "Precision@5",
                "P(rel=2,judged_only=True)@10", "Recall@10", "R(rel=2)@20", "RPrec", "Rprec(rel=2)", "MRR",
                "RR(rel=3)@5", "Success@5", "Success(rel=3)@10", "infAP", "infAP(rel=2)", "IPrec@0.3"]


def test_ir_measures_aliases_and_parameter_forms_give_its_numbers(data):
    qrels, run = data
    judgments = [ir_measures.Qrel(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    want = {(m.query_id, spelling): m.value for spelling in PYTREC_FORMS
            for m in ir_measures.iter_calc([ir_measures.parse_measure(spelling)], judgments, run)}
    got = per_query(qrels, run, PYTREC_FORMS, complete=True)
    assert got == pytest.approx(want, abs=1e-12) and len(want) == 13 * len(PYTREC_FORMS)


def test_sdcg_takes_only_its_one_dcg():
    assert duckrank.parse_measure("SDCG(dcg=log2,max_rel=3)@10").params == duckrank.parse_measure(
        "SDCG(max_rel=3)@10").params
    with pytest.raises(duckrank.MeasureError, match="SDCG's dcg is one of 'log2', got 'exp-log2'"):
        duckrank.parse_measure("SDCG(dcg='exp-log2',max_rel=3)@10")


def test_duckrank_forms_stay_reachable():
    # ERR with the qrels' own top grade, graded RBP at a level of its own
    assert duckrank.parse_measure("expected_reciprocal_rank@10").params["g_max"] is None
    assert duckrank.parse_measure("ERR(g_max=3)@10").params["g_max"] == 3
    graded = duckrank.parse_measure("rank_biased_precision(rel=2)")
    assert graded.metric.name == "rbp" and graded.rel_level == 2 and graded.params["graded"]
    assert duckrank.parse_measure("RBP").metric.name == "rbp"
    assert duckrank.parse_measure("RBP(rel=2)").metric.name == "cwl_rbp"


RANX = ["bpref@5", "bpref@1-l2", "bpref-l2", "bpref-l3", "r-precision@5", "r-precision@1-l2"]


def test_ranx_bpref_and_cutoff_forms_give_ranx_numbers(data):
    qrels, run = data
    expected = ranx(qrels, run, RANX)
    got = per_query(qrels, run, RANX, complete=True)
    want = {}
    for m in RANX:
        level = int(m.rpartition("-l")[2]) if "-l" in m else 1
        for q, v in expected[m]["scores"].items():
            # a query without a relevant doc: ranx's numba kernel gives 0, the plain Python here 0 / 0
            relevant = any(g >= level for g in qrels[q].values())
            want[(q, m)] = v if relevant or not m.startswith("bpref") else 0.0
    assert got == pytest.approx(want, abs=1e-12, nan_ok=True)
    # the data reach what makes ranx's bpref its own (a negative grade judged non-relevant)
    trec = per_query(qrels, run, ["bpref"], complete=True)
    assert any(got[(q, "bpref@5")] != v for (q, _), v in trec.items() if q != "112")
    assert math.isnan(got[("112", "bpref@5")]) and trec[("112", "bpref")] > 0


@pytest.mark.parametrize("spelling, message", [
    ("r-precision@5.5", "the cutoff must be a whole number"),
    ("nDCG(dcg=exp)@10", "nDCG's dcg is one of 'log2', 'exp-log2', got 'exp'"),
])
def test_spelling_errors(spelling, message):
    with pytest.raises(duckrank.MeasureError, match=message):
        duckrank.parse_measure(spelling)
