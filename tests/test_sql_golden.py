"""Golden values for duckrank's SQL macros: the worked examples of the tutorial articles duckrank's
users learned from (numbered 000-004; each example is restated in full in its test), then
hand-computed edge cases for every metric and every convention option.

Each expected number is derived in the comments next to it, from the definitions in the README's
metric reference, not copied from duckrank's output. D(i) = 1 / log2(i + 1) is the DCG discount of rank i:
D(1) = 1, D(2) = 0.63093, D(3) = 0.5, D(4) = 0.43068, D(5) = 0.38685, D(6) = 0.35621.
"""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers import examples
from oracles import pair_auc

from duckrank._library import connect
from duckrank.registry import METRICS


@pytest.fixture(scope="module")
def con():
    """One connection for the module (loading the library costs more than most tests here); every
    test registers the qrels and run it reads, so none sees another's data."""
    connection = connect()
    yield connection
    connection.close()


def D(i: int) -> float:
    return 1 / math.log2(i + 1)


def sql_value(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dict):
        keys = ", ".join(str(float(k)) for k in value)
        vals = ", ".join(str(float(v)) for v in value.values())
        return f"MAP([{keys}], [{vals}])"
    return repr(value)


def options(**opts) -> str:
    return "".join(f", {name} := {sql_value(value)}" for name, value in opts.items())


def register(con, qrels, run):
    con.register("qrels", pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))
    con.register("run", pd.DataFrame(run, columns=["query_id", "doc_id", "score"]))


def values(con, macro: str, column: str = "value", **opts) -> dict:
    sql = f"SELECT query_id, {column} FROM duckrank.\"{macro}\"('qrels', 'run'{options(**opts)})"
    return dict(con.execute(sql).fetchall())


def value(con, macro: str, query: str = "q", column: str = "value", **opts) -> float:
    return values(con, macro, column, **opts)[query]


def ranked_run(grades, query="q"):
    """qrels and run for one query whose docs, in rank order, carry `grades` (None = unjudged)."""
    qrels = [(query, f"d{i}", g) for i, g in enumerate(grades, 1) if g is not None]
    run = [(query, f"d{i}", float(len(grades) - i)) for i in range(1, len(grades) + 1)]
    return qrels, run


# ============================================================================ the tutorials' worked examples


def test_tutorial_001_dcg_idcg_ndcg(con):
    # grades in ranked order [5, 2, 3]: DCG = 5 + 2 D(2) + 3 D(3) = 5 + 1.262 + 1.5 = 7.762;
    # ideal [5, 3, 2]: IDCG = 5 + 3 D(2) + 2 D(3) = 5 + 1.893 + 1 = 7.893; nDCG = 0.983.
    register(con, *ranked_run([5, 2, 3]))
    dcg, idcg, ndcg = (value(con, m, k=3) for m in ("dcg", "idcg", "ndcg"))
    assert dcg == pytest.approx(5 + 2 * D(2) + 3 * D(3), abs=1e-12)
    assert idcg == pytest.approx(5 + 3 * D(2) + 2 * D(3), abs=1e-12)
    assert (round(dcg, 3), round(idcg, 3), round(ndcg, 3)) == (7.762, 7.893, 0.983)
    assert value(con, "cg", k=3) == 10
    # [2, 3, 5]: DCG = 2 + 3 D(2) + 5 D(3) = 2 + 1.893 + 2.5 = 6.393
    register(con, *ranked_run([2, 3, 5]))
    assert round(value(con, "dcg", k=3), 3) == 6.393


def test_tutorial_003_average_precision(con):
    # relevant at ranks 1, 3, 6 of six, R = 3: AP = (1/1 + 2/3 + 3/6) / 3 = 0.7222
    register(con, *ranked_run([1, 0, 1, 0, 0, 1]))
    assert value(con, "average_precision") == pytest.approx((1 + 2 / 3 + 3 / 6) / 3, abs=1e-12)
    assert round(value(con, "average_precision"), 4) == 0.7222


def test_tutorial_003_ndcg_is_0_818_and_its_0_785_belongs_to_other_qrels(con):
    """Tutorial 003 ranks grades 3,2,3,0,1,2 and has two more judged docs, graded 3 and 0, that were not
    retrieved. DCG@6 = 3 + 2 D(2) + 3 D(3) + 0 + 1 D(5) + 2 D(6) = 6.861. The ideal top 6 of all eight
    judgments (3,3,3,2,2,1,0,0) gives IDCG@6 = 3 + 3 D(2) + 3 D(3) + 2 D(4) + 2 D(5) + 1 D(6) = 8.384,
    so nDCG@6 = 0.818. The tutorial prints IDCG 8.740 and nDCG 0.785: that is the ideal 3,3,3,2,2,2, which
    needs a third grade-2 doc, i.e. the last unretrieved judgment graded 2 instead of the 0 its own
    table says. duckrank computes the qrels it is given; with that other qrels it prints the tutorial's
    numbers, so the discrepancy is in the tutorial's text, not in the formula."""
    qrels, run = ranked_run([3, 2, 3, 0, 1, 2])
    qrels += [("q", "x1", 3), ("q", "x2", 0)]
    register(con, qrels, run)
    dcg, idcg, ndcg = (value(con, m, k=6) for m in ("dcg", "idcg", "ndcg"))
    assert dcg == pytest.approx(3 + 2 * D(2) + 3 * D(3) + 1 * D(5) + 2 * D(6), abs=1e-12)
    assert idcg == pytest.approx(3 + 3 * D(2) + 3 * D(3) + 2 * D(4) + 2 * D(5) + 1 * D(6), abs=1e-12)
    assert (round(dcg, 3), round(idcg, 3), round(ndcg, 3)) == (6.861, 8.384, 0.818), (
        "tutorial 003 with its stated qrels (unretrieved judged docs graded 3 and 0)")

    other = qrels[:-1] + [("q", "x2", 2)]  # the qrels the tutorial's 8.740 / 0.785 actually belong to
    register(con, other, run)
    assert (round(value(con, "idcg", k=6), 3), round(value(con, "ndcg", k=6), 3)) == (8.740, 0.785), (
        "8.740 / 0.785 are the tutorial's numbers only when the last judged doc is graded 2")


def test_tutorial_004_average_precision(con):
    # ten results, relevant at 1, 4, 5, 8, R = 4: AP = (1/1 + 2/4 + 3/5 + 4/8) / 4 = 2.6 / 4 = 0.65
    register(con, *ranked_run([1, 0, 0, 1, 1, 0, 0, 1, 0, 0]))
    assert value(con, "average_precision") == pytest.approx(0.65, abs=1e-12)


def test_tutorial_004_ndcg_linear_and_exp(con):
    # grades [7, 2, 5, 10, 1], ideal from the same five: [10, 7, 5, 2, 1].
    register(con, *ranked_run([7, 2, 5, 10, 1]))
    # linear: DCG = 7 + 2 D(2) + 5 D(3) + 10 D(4) + 1 D(5) = 15.46; IDCG = 10 + 7 D(2) + 5 D(3)
    # + 2 D(4) + D(5) = 18.16; nDCG = 0.851 (the tutorial rounds to 0.85)
    linear = [value(con, m, k=5) for m in ("dcg", "idcg", "ndcg")]
    assert [round(v, 2) for v in linear[:2]] == [15.46, 18.16] and round(linear[2], 3) == 0.851
    # exp: gains 127, 3, 31, 1023, 1: DCG = 585.36; IDCG = 1023 + 127 D(2) + 31 D(3) + 3 D(4) + D(5)
    # = 1120.31; nDCG = 0.5225 (the tutorial prints 0.53)
    exp = [value(con, m, k=5, gain="exp") for m in ("dcg", "idcg", "ndcg")]
    assert exp[0] == pytest.approx(127 + 3 * D(2) + 31 * D(3) + 1023 * D(4) + D(5), abs=1e-9)
    assert [round(v, 2) for v in exp[:2]] == [585.36, 1120.31] and round(exp[2], 4) == 0.5225
    # ideal := 'run' is the same here: every judged doc was retrieved
    assert value(con, "ndcg", k=5, ideal="run") == pytest.approx(linear[2], abs=1e-12)


def test_tutorial_002_rank_sum_auc_equals_pair_count_with_ties_half(con):
    # positives 0.9, 0.5; negatives 0.5, 0.1. Ascending ranks: 0.1 -> 1, the two 0.5s share
    # (2 + 3) / 2 = 2.5, 0.9 -> 4. Rank sum of positives 4 + 2.5 = 6.5; AUC = (6.5 - 2*3/2) / (2*2)
    # = 3.5 / 4 = 0.875. Pairs: 0.9>0.5, 0.9>0.1, 0.5=0.5 (1/2), 0.5>0.1: 3.5 / 4.
    rows = [("u", "a", 0.9, 1), ("u", "b", 0.5, 0), ("u", "c", 0.5, 1), ("u", "d", 0.1, 0)]
    con.register("log", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "label"]))
    assert con.execute("SELECT value FROM duckrank.\"log_auc\"('log')").fetchall() == [(0.875,)]
    assert con.execute("SELECT value FROM duckrank.\"global_auc\"('log')").fetchall() == [(0.875,)]
    # the same through the run/qrels path: duckrank.auc ranks with asc_rank (average ranks)
    register(con, [("u", d, y) for _, d, _, y in rows], [("u", d, s) for _, d, s, _ in rows])
    assert values(con, "auc") == {"u": 0.875}
    # and on random inputs with heavy ties, the rank-sum form equals the O(n^2) pair count
    rnd = random.Random(2)
    for _ in range(25):
        n = rnd.randint(2, 30)
        scores = [rnd.choice([0.0, 0.5, 1.0, 1.5]) for _ in range(n)]
        labels = [rnd.random() < 0.4 for _ in range(n)]
        if not any(labels) or all(labels):
            continue
        rows = [("u", str(i), s, int(y)) for i, (s, y) in enumerate(zip(scores, labels))]
        con.register("log", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "label"]))
        (got,), = con.execute("SELECT value FROM duckrank.\"global_auc\"('log')").fetchall()
        assert got == pytest.approx(pair_auc(scores, labels), abs=1e-12)


# ============================================================================ one graded query, every metric
#
# Query 'g': ranked d1 (grade 2), d2 (0), d3 (1), d4 (-1: pooled but unjudged), u1 (not judged);
# d5 (grade 3) is judged but never retrieved. Relevant at level 1: d1, d3, d5, so R = 3; judged
# non-relevant: d2 only (N = 1: a negative grade is not a judgment of non-relevance).
# Query 'norel': judged docs all grade 0 (R = 0). Query 'allneg': its only judgment is negative.
# Query 'onlyqrels' has no run; query 'onlyrun' has no qrels.

EDGE_QRELS = [("g", "d1", 2), ("g", "d2", 0), ("g", "d3", 1), ("g", "d4", -1), ("g", "d5", 3),
              ("norel", "d1", 0), ("norel", "d2", 0), ("allneg", "d1", -1), ("onlyqrels", "d1", 1)]
EDGE_RUN = [("g", "d1", 0.9), ("g", "d2", 0.8), ("g", "d3", 0.7), ("g", "d4", 0.6), ("g", "u1", 0.5),
            ("norel", "d1", 0.5), ("norel", "d9", 0.4), ("allneg", "d1", 1.0), ("allneg", "d2", 0.5),
            ("onlyrun", "d1", 1.0)]
SCORED = {"g", "norel", "allneg"}  # queries in both: the default set (trec_eval)

# (macro, options, value for 'g'): every other scored query has R = 0 and scores 0.
EDGE_CASES = [
    ("precision", {"k": 1}, 1.0),
    ("precision", {"k": 2}, 1 / 2),
    ("precision", {"k": 10}, 2 / 10),  # k beyond the list: still divided by k (trec_eval P.10)
    ("precision", {}, 2 / 5),  # k NULL: set_P
    ("recall", {"k": 2}, 1 / 3),
    ("recall", {}, 2 / 3),  # d5 never retrieved
    ("recall", {"k": 2, "cap": True}, 1 / 2),  # relative_P.2: 1 / min(3, 2)
    ("recall", {"cap": True}, 2 / 3),  # set_relative_P: 2 / min(3, 5 retrieved)
    ("f_measure", {}, 2 * 2 / (3 + 5)),  # set_F = 2 hits / (R + retrieved) = 0.5
    ("f_measure", {"k": 2}, 2 * 1 / (3 + 2)),
    ("f_measure", {"beta": 2.0}, 5 * 2 / (4 * 3 + 5)),  # (1 + b^2) hits / (b^2 R + retrieved)
    ("hit_rate", {"k": 1}, 1.0),
    ("hits", {}, 2.0),  # d1 and d3 (ranx's hits: the relevant docs retrieved)
    ("hits", {"k": 2}, 1.0),
    ("hits", {"rel_level": 2}, 1.0),  # d1 only
    ("reciprocal_rank", {}, 1.0),
    ("average_precision", {}, (1 + 2 / 3) / 3),  # (P@1 + P@3) / R = 5/9
    ("average_precision", {"k": 2}, 1 / 3),  # map_cut.2: P@1 / R
    ("average_precision", {"k": 2, "denominator": "min"}, 1 / 2),  # P@1 / min(R, 2)
    ("average_precision", {"k": 2, "denominator": "hits"}, 1.0),  # P@1 / 1 hit in the top 2
    ("average_precision", {"denominator": "hits"}, (1 + 2 / 3) / 2),
    ("average_precision", {"denominator": "min"}, (1 + 2 / 3) / 3),  # no k: min(R, R) = R
    ("r_precision", {}, 2 / 3),  # P@3
    ("r_precision", {"mult": 0.5}, 1 / 2),  # P@floor(0.5*3 + 0.9) = P@2
    ("r_precision", {"mult": 2.0}, 2 / 6),  # P@floor(6.9) = P@6, two hits
    # MS Recommenders' r_precision_at_k: hits in the top min(R, k) / R; no value without relevant docs
    ("recommenders_r_precision", {}, {"g": 2 / 3}),  # top min(3, all) = 3: d1, d3
    ("recommenders_r_precision", {"k": 2}, {"g": 1 / 3}),  # top min(3, 2) = 2: d1
    ("recommenders_r_precision", {"k": 1}, {"g": 1 / 3}),
    # bpref: d1 has no judged non-relevant above: 1; d3 has d2 above: 1 - min(1, 3) / min(N=1, 3) = 0
    ("bpref", {}, 1 / 3),
    # ranx's bpref: d4's negative grade is a judged non-relevant doc, N = 2 (d2, d4); d3 has d2 above
    ("ranx_bpref", {}, (1 + (1 - 1 / 2)) / 3),
    ("ranx_bpref", {"rel_level": 2}, 1 / 2),  # R = 2 (d1, d5), N = 3; d1 is first
    # cwl_eval's RBP: binary gains (d1, d3), weights over ranks 1..1000
    ("cwl_rbp", {}, 0.2 * (1 + 0.8 ** 2) / (1 - 0.8 ** 1000)),
    ("cwl_rbp", {"p": 0.99, "rel_level": 2}, 0.01 / (1 - 0.99 ** 1000)),
    ("cg", {}, 3.0),  # 2 + 0 + 1 + 0 (negative gains 0) + 0
    ("cg", {"gain": "raw"}, 2.0),  # the -1 counts: 2 + 0 + 1 - 1
    ("cg", {"gain": "exp"}, 4.0),  # 3 + 0 + 1
    ("cg", {"gain": "binary"}, 2.0),  # d1 and d3 relevant (grade >= 1): 1 + 0 + 1 + 0 + 0
    ("dcg", {}, 2 + 1 * D(3)),
    ("dcg", {"k": 2}, 2.0),
    ("dcg", {"gain": "raw"}, 2 + D(3) - D(4)),
    ("idcg", {}, 3 + 2 * D(2) + 1 * D(3)),  # ideal 3, 2, 1 (d5 included: it is judged)
    ("idcg", {"ideal": "run"}, 2 + 1 * D(2)),  # only the retrieved: 2, 1
    ("ndcg", {}, (2 + D(3)) / (3 + 2 * D(2) + D(3))),
    ("ndcg", {"k": 2}, 2 / (3 + 2 * D(2))),
    ("ndcg", {"gain": "exp"}, (3 + D(3)) / (7 + 3 * D(2) + D(3))),
    # binary: gain 1 for a relevant doc (d1, d3 and the unretrieved d5), whatever its grade
    ("ndcg", {"gain": "binary"}, (1 + D(3)) / (1 + D(2) + D(3))),
    # raw: the harmful doc lowers DCG; the ideal never places a harmful doc
    ("ndcg", {"gain": "raw"}, (2 + D(3) - D(4)) / (3 + 2 * D(2) + D(3))),
    # trec_eval's ndcg.1=3,2=9: d1 -> 9, d3 -> 3, d5 (3, unlisted) keeps 3
    ("ndcg", {"gain_map": {1: 3, 2: 9}}, (9 + 3 * D(3)) / (9 + 3 * D(2) + 3 * D(3))),
    ("ndcg", {"ideal": "run"}, (2 + D(3)) / (2 + D(2))),
    # ranx's -lN: a grade below the level gains nothing, in the ranking and in the ideal (3, 2; d3's 1 gone)
    ("ndcg", {"gain": "linear_relevant"}, (2 + D(3)) / (3 + 2 * D(2) + D(3))),  # level 1: linear
    ("ndcg", {"gain": "linear_relevant", "rel_level": 2}, 2 / (3 + 2 * D(2))),
    ("ndcg", {"gain": "exp_relevant", "rel_level": 2}, 3 / (7 + 3 * D(2))),
    ("dcg", {"gain": "exp_relevant", "rel_level": 3}, 0.0),  # d5, the only grade 3, is not retrieved
    # ERR, g_max = 3 (the largest grade in the qrels): stop at d1 with (2^2-1)/8, at d3 with 1/8
    ("err", {}, 3 / 8 + (1 - 3 / 8) * (1 / 8) / 3),
    ("err", {"g_max": 2.0}, 3 / 4 + (1 - 3 / 4) * (1 / 4) / 3),
    ("err", {"k": 1}, 3 / 8),
    # graded RBP (trec_eval 10): d1 and d3 weigh 2/3 and 1/3 (grade / the query's top grade, 3);
    # binary RBP: 1 each
    ("rbp", {}, 0.2 * (2 / 3 + 0.8 ** 2 / 3)),
    ("rbp", {"p": 0.5}, 0.5 * (2 / 3 + 0.5 ** 2 / 3)),
    ("rbp", {"graded": False}, 0.2 * (1 + 0.8 ** 2)),
    ("rbp", {"graded": False, "p": 0.5}, 0.5 * (1 + 0.5 ** 2)),
    # unscaled (ranx): a relevant doc weighs its grade, 2 and 1; at level 2 only d1 is relevant
    ("rbp", {"scaled": False}, 0.2 * (2 + 0.8 ** 2)),
    ("rbp", {"scaled": False, "rel_level": 2}, 0.2 * 2),
    # iprec: the cutoff is round(r R) relevant retrieved (at least 1); R = 3, hits at ranks 1 and 3
    ("interpolated_precision", {"recall": 0.0}, 1.0),
    ("interpolated_precision", {"recall": 0.5}, 2 / 3),  # round(1.5) = 2 -> P@3
    ("interpolated_precision", {"recall": 1.0}, 0.0),  # 3 never reached
    # levels 0-.4 -> cutoff 1 (1.0); .5-.8 -> cutoff 2 (2/3); .9, 1 -> cutoff 3 (0)
    ("eleven_point_average", {}, (5 * 1 + 4 * 2 / 3) / 11),
    # Judged: 'g' retrieves d1, d2, d3 (judged), d4 (grade -1: pooled, not judged), u1 (unjudged);
    # 'norel' d1 (judged), d9; 'allneg' d1 (-1), d2. The share is over min(k, retrieved).
    ("judged", {"k": 3}, {"g": 1.0, "norel": 1 / 2, "allneg": 0.0}),
    ("judged", {}, {"g": 3 / 5, "norel": 1 / 2, "allneg": 0.0}),
    ("judged", {"k": 10}, {"g": 3 / 5, "norel": 1 / 2, "allneg": 0.0}),
    # the counters: retrieved, R, relevant retrieved, judged non-relevant retrieved (d2; norel's d1)
    ("num_ret", {}, {"g": 5, "norel": 2, "allneg": 2}),
    ("num_rel", {}, {"g": 3, "norel": 0, "allneg": 0}),
    ("num_rel_ret", {}, {"g": 2, "norel": 0, "allneg": 0}),
    ("num_nonrel_judged_ret", {}, {"g": 1, "norel": 1, "allneg": 0}),
    # ir_measures' NumQ: 1 for each query the run holds; complete's onlyqrels (missed) 0
    ("num_run_queries", {}, {"g": 1, "norel": 1, "allneg": 1}),
    ("num_run_queries", {"complete": True}, {"g": 1, "norel": 1, "allneg": 1, "onlyqrels": 0}),
    # RBP's residual: p^d + (1 - p) sum over the unjudged ranks i of p^(i-1); 'g' has d4 and u1
    # unjudged at ranks 4, 5; 'norel' d9 at 2; 'allneg' both its docs: 0.64 + 0.2 (1 + 0.8) = 1
    ("rbp_residual", {}, {"g": 0.8 ** 5 + 0.2 * (0.8 ** 3 + 0.8 ** 4), "norel": 0.8 ** 2 + 0.2 * 0.8,
                          "allneg": 1.0}),
    # AUC of 'g': positives d1 (0.9), d3 (0.7); negatives d2, d4, u1: 3 + 2 of 6 pairs; the R = 0
    # queries have no positive: undefined, left out
    ("auc", {}, {"g": 5 / 6}),
    # MAE / RMSE over the judged retrieved docs ('g': |0.9-2|, |0.8-0|, |0.7-1| = 1.1, 0.8, 0.3; d4's
    # -1 is no judgment; 'norel': 0.5, d9 unjudged; 'allneg' has no judged doc: no value)
    ("mae", {}, {"g": 2.2 / 3, "norel": 0.5}),
    ("rmse", {}, {"g": math.sqrt((1.21 + 0.64 + 0.09) / 3), "norel": 0.5}),
    # trec_eval 10's other all_trec measures (values checked with its binary as well)
    # set_map = num_rel_ret^2 / (num_ret R) = 2^2 / (5 * 3)
    ("set_average_precision", {}, 4 / 15),
    # unj@k = unjudged in the top k / k: 'g' d4 (-1: pooled, unjudged) and u1; 'norel' d9; 'allneg' d1 (-1)
    # and d2. k beyond the ranking still divides by k; no k divides by the number retrieved
    ("unjudged_fraction", {"k": 5}, {"g": 2 / 5, "norel": 1 / 5, "allneg": 2 / 5}),
    ("unjudged_fraction", {"k": 20}, {"g": 2 / 20, "norel": 1 / 20, "allneg": 2 / 20}),
    ("unjudged_fraction", {"k": 1}, {"g": 0.0, "norel": 0.0, "allneg": 1.0}),
    ("unjudged_fraction", {}, {"g": 2 / 5, "norel": 1 / 2, "allneg": 1.0}),
    # utility = p1 a + p2 b + p3 c + p4 d; 'g': a = 2 relevant retrieved, b = 3 other retrieved (u1 and
    # d4 count), c = 1 missed (d5), d = N + a - retrieved - R; 'norel' and 'allneg': a = 0, b = 2, R = 0
    ("utility", {}, {"g": 2 - 3, "norel": -2.0, "allneg": -2.0}),
    ("utility", {"retrieved_relevant": 2.0, "retrieved_nonrelevant": -0.5, "missed_relevant": 1.0,
                 "missed_nonrelevant": 0.25, "collection_size": 50},
     {"g": 4 - 1.5 + 1 + 0.25 * (50 + 2 - 5 - 3), "norel": -1 + 0.25 * 48, "allneg": -1 + 0.25 * 48}),
    # binG: the relevant d1 (no non-relevant above: 1 / log2 2) and d3 (d2 above: 1 / log2 3), / R = 3
    ("binary_normalized_gain", {}, (1 + D(2)) / 3),
    # infAP: d1 at rank 1 adds 1; d3 at rank 3 has 2 pooled docs above, of which 1 relevant, 1 non-relevant:
    # (1 + 2 (1 + e) / (2 + 2e)) / 3 = 2/3. / R = 3 (as AP here: nothing unpooled or unsampled lies above)
    ("inferred_average_precision", {}, (1 + 2 / 3) / 3),
    # G: gains 2, 0, 1, 0, 0; the ideal 3, 2, 1 (total 6). cost(i) = sum of max(ideal gain, 1) over ranks
    # <= i: 3 at rank 1, 6 at rank 3; got(i) = 2 at rank 1, 3 at rank 3. G = (2 / log2(2 + 3 - 2) +
    # 1 / log2(2 + 6 - 3)) / 6 = (2 D(2) + D(4)) / 6
    ("normalized_gain", {}, (2 * D(2) + D(4)) / 6),
    # exp gains: 3, 0, 1; the ideal 7, 3, 1 (11): cost 7 at rank 1, 7 + 3 + 1 = 11 at rank 3; got 3, then 4
    ("normalized_gain", {"gain": "exp"}, (3 / math.log2(2 + 7 - 3) + 1 / math.log2(2 + 11 - 4)) / 11),
    # ndcg_rel: the positive-gain docs d1 (nDCG@1 = 2/3), d3 (nDCG@3) and d5, never retrieved (nDCG at full
    # depth, which is nDCG@3 again), / 3
    ("ndcg_rel", {}, (2 / 3 + 2 * (2 + D(3)) / (3 + 2 * D(2) + D(3))) / 3),
    # Rndcg: the ideal gain changes after ranks 1 (3 -> 2), 2 (2 -> 1) and 3 (1 -> 0): nDCG@1, @2, @3; and
    # 5 retrieved > L + 1 = 4: nDCG at full depth (= DCG@5 / IDCG@3) once more, / 4
    ("r_ndcg", {}, (2 / 3 + 2 / (3 + 2 * D(2)) + 2 * (2 + D(3)) / (3 + 2 * D(2) + D(3))) / 4),
    # The C/W/L family: sum_i P(i) g(i) / sum_i P(i) over ranks 1..1000, P(i) = prod_{j<i} C(j). Gains
    # with max_rel 2: d1 1, d3 1/2 (d4's -1 and u1 0); with max_rel 3: 2/3 and 1/3; with the default 1: 1, 1.
    # BPM stops at rank K or where the gain so far reaches T: rank 1 (T 1), 3 (T 1.5), never (T 2: K)
    ("bpm", {"k": 10, "t": 1.0, "max_rel": 2}, 1.0),
    ("bpm", {"k": 10, "t": 1.5, "max_rel": 2}, 1.5 / 3),
    ("bpm", {"k": 10, "t": 2.0, "max_rel": 2}, 1.5 / 10),
    ("bpm", {"t": 2.0, "max_rel": 2}, 1.5 / 1000),  # no K: cwl_eval's depth
    ("bpm", {"k": 10, "t": 2.0}, 2 / 3),
    ("sdcg", {"k": 3, "max_rel": 2}, (1 + D(3) / 2) / (D(1) + D(2) + D(3))),
    # INSQ(T = 1): P(i) = (2 / (i + 1))^2
    ("insq", {"max_rel": 3}, (2 / 3 + 1 / 3 * (2 / 4) ** 2) / sum((2 / (i + 1)) ** 2 for i in range(1, 1001))),
    # INST(T = 1): C(i) = ((i + 1 - cg(i)) / (i + 2 - cg(i)))^2 with cg 1, 1, 3/2, 3/2, ...: C = 1/4, 4/9, 25/49,
    # then ((i - 1/2) / (i + 1/2))^2, so P(i) = P(4) (7/2 / (i - 1/2))^2 from rank 4 on
    ("inst", {"max_rel": 2}, (1 + 1 / 9 / 2) / (1 + 1 / 4 + 1 / 9 + sum(
        25 / 441 * (3.5 / (i - 0.5)) ** 2 for i in range(4, 1001)))),
    # NERR8@3: C = 1 - g: 1/3, 1; P = 1, 1/3, 1/3
    ("nerr8", {"k": 3, "max_rel": 3}, (2 / 3 + 1 / 3 * 1 / 3) / (1 + 1 / 3 + 1 / 3)),
    ("nerr8", {"k": 3, "max_rel": 2}, 1.0),  # d1 has full gain: the user stops there
    # NERR9@3: C = i / (i + 1) (1 - g): 1/6, 2/3; P = 1, 1/6, 1/9
    ("nerr9", {"k": 3, "max_rel": 3}, (2 / 3 + 1 / 9 * 1 / 3) / (1 + 1 / 6 + 1 / 9)),
    # NERR10(phi = 1/2): C = 1/6, 1/2, 1/3, then 1/2: P = 1, 1/6, 1/12, 1/36 (1/2)^(i-4)
    ("nerr10", {"phi": 0.5, "max_rel": 3}, (2 / 3 + 1 / 12 * 1 / 3) / (1 + 1 / 6 + 1 / 12 + 1 / 18)),
    # NERR11(T = 1): C = ((i + 1) / (i + 2))^2 (1 - g): 4/27, 9/16, 32/75, then ((i + 1) / (i + 2))^2
    ("nerr11", {"max_rel": 3}, (2 / 3 + 1 / 12 * 1 / 3) / (1 + 4 / 27 + 1 / 12 + sum(
        8 / 225 * (5 / (i + 1)) ** 2 for i in range(4, 1001)))),
    # Compat: the ideal ranking d5, d1, d3; d1 (rank 1, ideal 2) is in both top i's from i = 2, d3 from 3;
    # depth 5 (retrieved): overlaps 0, 1, 2, 2, 2; the ideal's own 1, 2, 3, 3, 3
    ("compat", {}, (0.95 / 2 + 2 * 0.95 ** 2 / 3 + 2 * 0.95 ** 3 / 4 + 2 * 0.95 ** 4 / 5)
     / (1 + 0.95 + 0.95 ** 2 + 3 * 0.95 ** 3 / 4 + 3 * 0.95 ** 4 / 5)),
    ("compat", {"persistence": 0.5, "normalize": False}, (0.5 / 2 + 2 * 0.5 ** 2 / 3 + 2 * 0.5 ** 3 / 4
                                                          + 2 * 0.5 ** 4 / 5) / (1 + 0.5 + 0.25 + 0.125 + 0.0625)),
]

# Measures with no per-query table macro, and what pins their values by hand instead.
GOLDEN_ELSEWHERE = {"num_q": "test_counts", "gm_map": "test_geometric_mean_is_trec_gm_map",
                    "gm_bpref": "test_geometric_mean_is_trec_gm_map", "gauc": "test_log_metrics_by_hand",
                    "global_auc": "test_log_metrics_by_hand", "relevance_string": "test_relevance_string_by_hand",
                    **dict.fromkeys(("catalog_coverage", "distributional_coverage", "novelty", "diversity",
                                     "serendipity", "arp", "aplt", "aclt"), "test_beyond_accuracy_by_hand"),
                    **dict.fromkeys(("alpha_ndcg", "alpha_dcg", "err_ia", "nerr_ia", "nrbp", "nnrbp", "ap_ia", "p_ia",
                                     "subtopic_recall"), "test_diversity_by_hand")}



@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_has_a_golden_case(name):
    """Every registered measure has a hand-computed case: in EDGE_CASES, or the test GOLDEN_ELSEWHERE
    names."""
    golden = {macro for macro, _, _ in EDGE_CASES}
    assert name in golden or GOLDEN_ELSEWHERE.get(name) in globals(), \
        f"{name}: add a hand-computed case to EDGE_CASES in tests/test_sql_golden.py"

@pytest.fixture
def edge(con):
    register(con, EDGE_QRELS, EDGE_RUN)
    return con


@pytest.mark.parametrize("macro, opts, expected", EDGE_CASES,
                         ids=[f"{m}-{'-'.join(f'{k}={v}' for k, v in o.items())}" for m, o, _ in EDGE_CASES])
def test_edge_values(edge, macro, opts, expected):
    got = values(edge, macro, **opts)
    if isinstance(expected, dict):  # a value for every query it scores
        assert got == {query: pytest.approx(value, abs=1e-12) for query, value in expected.items()}
        return
    assert set(got) == SCORED, "default: exactly the queries in both run and qrels"
    assert got["g"] == pytest.approx(expected, abs=1e-12)
    # no relevant docs (all grade 0, or only a negative grade): every ranking metric is 0, except
    # that raw gain keeps allneg's -1 at rank 1 (CG = DCG = -1)
    raw = opts.get("gain") == "raw" and macro in ("cg", "dcg")
    assert got["norel"] == 0.0 and got["allneg"] == (-1.0 if raw else 0.0)


def test_relevance_string_by_hand(edge):
    # relstring (text): a character per retrieved doc, the grade, '.' a negative grade, '-' not in the qrels.
    # 'g' ranks d1 (2), d2 (0), d3 (1), d4 (-1), u1; 'norel' d1 (0), d9; 'allneg' d1 (-1), d2
    assert values(edge, "relevance_string") == {"g": "201.-", "norel": "0-", "allneg": ".-"}
    assert values(edge, "relevance_string", k=2) == {"g": "20", "norel": "0-", "allneg": ".-"}
    assert values(edge, "relevance_string", unjudged="skip") == {"g": "201", "norel": "0", "allneg": ""}


def test_infap_tells_unpooled_from_unsampled(con):
    # trec_eval's infAP (m_infap.c): ranks 1..5 hold d1 (grade 1), d2 (not in the qrels: unpooled, skipped),
    # d3 (-1: pooled, not sampled), d4 (0) and d5 (2); R = 2. d1 adds 1. d5 at rank 5 has 3 pooled docs
    # above (d1, d3, d4), 1 relevant and 1 non-relevant among the judged: (1 + 3 (1 + e) / (2 + 2e)) / 5 =
    # 2.5 / 5. infAP = (1 + 1/2) / 2 = 3/4, where AP is (1 + 2/5) / 2 = 0.7.
    register(con, *ranked_run([1, None, -1, 0, 2]))
    assert value(con, "inferred_average_precision") == pytest.approx(3 / 4, abs=1e-12)
    assert value(con, "average_precision") == pytest.approx(0.7, abs=1e-12)
    # unjudged := 'skip' (trec_eval -J) drops d2 and d3: d5 is at rank 3 with 2 judged above, as AP
    assert value(con, "inferred_average_precision", unjudged="skip") == pytest.approx((1 + 2 / 3) / 2, abs=1e-12)


def test_rndcg_skips_full_depth_when_one_doc_follows_the_ideal_ranking(con):
    # trec_eval's Rndcg (m_Rndcg.c) adds nDCG at full depth only when more than L + 1 docs are retrieved
    # (L = the ideal ranking's length); with exactly L + 1 its loop has already passed it. One relevant doc
    # (L = 1), ranked second: nDCG@1 = 0, so Rndcg is 0 with 2 retrieved, (0 + D(2)) / 2 with 3.
    register(con, *ranked_run([None, 1]))
    assert value(con, "r_ndcg") == 0.0
    register(con, *ranked_run([None, 1, None]))
    assert value(con, "r_ndcg") == pytest.approx(D(2) / 2, abs=1e-12)


def test_rbp_residual(edge):
    # 'g': unjudged in the list at ranks 4 (negative grade) and 5; depth 5:
    # p^5 + (1 - p)(p^3 + p^4) = 0.32768 + 0.2 (0.512 + 0.4096) = 0.512
    got = values(edge, "rbp", column="residual")
    assert got["g"] == pytest.approx(0.8 ** 5 + 0.2 * (0.8 ** 3 + 0.8 ** 4), abs=1e-12)
    # 'norel': d9 unjudged at rank 2: p^2 + (1 - p) p = 0.64 + 0.16
    assert got["norel"] == pytest.approx(0.8 ** 2 + 0.2 * 0.8, abs=1e-12)
    # with k: depth min(k, retrieved); the top 2 are judged: 0 (trec_eval 10); the top 4 hold d4
    assert value(edge, "rbp", "g", column="residual", k=2) == 0.0
    assert value(edge, "rbp", "g", column="residual", k=4) == pytest.approx(0.8 ** 4 + 0.2 * 0.8 ** 3, abs=1e-12)


def test_rbp_residual_when_everything_retrieved_is_judged(con):
    """Moffat & Zobel's residual p^d + (1-p) sum_unjudged p^(i-1) keeps p^d, the weight of the ranks
    past the list; trec_eval 10's rbp_resid is 0 when no retrieved doc is unjudged (m_rbp_resid.c
    only sets the value if it saw one), and duckrank prints what trec_eval prints."""
    register(con, *ranked_run([1, 0]))
    assert value(con, "rbp", column="residual") == 0.0
    assert value(con, "rbp_residual", k=1) == 0.0
    register(con, *ranked_run([1, None]))  # an unjudged doc at rank 2: p^2 + (1 - p) p
    assert value(con, "rbp_residual") == pytest.approx(0.8 ** 2 + 0.2 * 0.8, abs=1e-12)


def test_counts(edge):
    got = {row[0]: row[1:] for row in edge.execute(
        "SELECT query_id, num_q, num_ret, num_rel, num_rel_ret, num_nonrel_judged_ret "
        "FROM duckrank.\"counts\"('qrels', 'run')").fetchall()}
    assert got == {"g": (1, 5, 3, 2, 1), "norel": (1, 2, 0, 0, 1), "allneg": (1, 2, 0, 0, 0)}


def test_rel_level_two(edge):
    # relevant at level 2: d1 (2), d5 (3): R = 2; judged non-relevant: d2 (0), d3 (1): N = 2.
    assert value(edge, "precision", "g", k=5, rel_level=2) == pytest.approx(1 / 5)
    assert value(edge, "average_precision", "g", rel_level=2) == pytest.approx(1 / 2)
    assert value(edge, "bpref", "g", rel_level=2) == pytest.approx(1 / 2)  # d1, nothing above
    assert value(edge, "r_precision", "g", rel_level=2) == pytest.approx(1 / 2)  # P@2
    # nDCG uses the grades as gains whatever the level (trec_eval -l leaves ndcg alone)
    assert value(edge, "ndcg", "g", rel_level=2) == value(edge, "ndcg", "g")


# ============================================================================ which queries count


def test_complete_scores_queries_missing_from_the_run(edge):
    # complete := true (trec_eval -c): every qrels query counts; 'onlyqrels' scores 0 everywhere.
    # 'onlyrun' has no judgments and is never scored.
    for macro in ("precision", "recall", "average_precision", "ndcg", "reciprocal_rank", "bpref", "err",
                  "rbp", "hit_rate", "r_precision", "f_measure", "eleven_point_average"):
        got = values(edge, macro, complete=True)
        assert set(got) == SCORED | {"onlyqrels"}, macro
        assert got["onlyqrels"] == 0.0, macro
    assert values(edge, "rbp", column="residual", complete=True)["onlyqrels"] == 0.0
    assert values(edge, "idcg", complete=True)["onlyqrels"] == 1.0  # its ideal exists
    counts = edge.execute("SELECT num_ret, num_rel FROM duckrank.\"counts\"('qrels', 'run', complete := true) "
                          "WHERE query_id = 'onlyqrels'").fetchall()
    assert counts == [(0, 1)]


@pytest.mark.parametrize("macro", ["precision", "ndcg", "average_precision", "reciprocal_rank", "err"])
def test_empty_policy(edge, macro):
    # 'norel' and 'allneg' have R = 0: zero keeps 0 (default), skip drops them, nan reports NaN.
    assert values(edge, macro)["norel"] == 0.0
    assert set(values(edge, macro, empty="skip")) == {"g"}
    got = values(edge, macro, empty="nan")
    assert math.isnan(got["norel"]) and math.isnan(got["allneg"]) and not math.isnan(got["g"])


def test_empty_policy_reaches_counters_auc_mae_and_the_rbp_residual(edge):
    """Every table macro applies `empty` as evaluate() does (the counters, AUC, MAE and RBP's
    residual column once ignored it in SQL): skip drops the R = 0 queries, nan reports NaN."""
    for macro, column in (("num_ret", "value"), ("num_rel_ret", "value"), ("mae", "value"), ("rmse", "value"),
                          ("judged", "value"), ("rbp", "residual"), ("rbp_residual", "value")):
        assert set(values(edge, macro, column, empty="skip")) == {"g"}, macro
        got = values(edge, macro, column, empty="nan")
        assert math.isnan(got["norel"]) and math.isnan(got["allneg"]) and not math.isnan(got["g"]), macro
    assert set(values(edge, "counts", "num_ret", empty="skip")) == {"g"}
    # AUC leaves out a query without both classes; under nan an R = 0 query reports NaN instead
    got = values(edge, "auc", empty="nan")
    assert got["g"] == pytest.approx(5 / 6) and math.isnan(got["norel"]) and math.isnan(got["allneg"])


def test_ties_reach_auc_and_the_counters_when_max_rank_cuts_a_tie(con):
    # x (relevant) scores 2; a (relevant), b, c score 1. max_rank := 2 keeps x and one of the tie:
    # trec orders it c, b, a (doc_id descending) and keeps c; optimistic keeps a (relevant first);
    # pessimistic keeps a non-relevant one.
    register(con, [("q", "x", 1), ("q", "a", 1), ("q", "b", 0), ("q", "c", 0)],
             [("q", "x", 2.0), ("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)])
    for ties, relevant_retrieved, auc in (("trec", 1, 1.0), ("pessimistic", 1, 1.0), ("optimistic", 2, None)):
        assert values(con, "num_rel_ret", ties=ties, max_rank=2) == {"q": relevant_retrieved}, ties
        # x above one non-relevant doc: AUC 1; two relevant docs and no negative: undefined
        assert values(con, "auc", ties=ties, max_rank=2) == ({"q": auc} if auc is not None else {}), ties


def test_mae_and_rmse_take_every_convention(edge):
    """mae/rmse once took only `duplicates`; now every convention, like every measure."""
    # max_rank := 1: 'g' keeps d1 only: |0.9 - 2|
    assert value(edge, "mae", "g", max_rank=1) == pytest.approx(1.1, abs=1e-12)
    assert value(edge, "rmse", "g", max_rank=1) == pytest.approx(1.1, abs=1e-12)
    # complete := true adds 'onlyqrels', which retrieves nothing: no judged retrieved doc, no value
    assert set(values(edge, "mae", complete=True)) == {"g", "norel"}
    # unjudged := 'skip' drops what MAE never reads (unjudged docs, negative grades); rel_level
    # changes nothing that MAE reads
    assert values(edge, "mae", unjudged="skip", rel_level=2) == values(edge, "mae")


def test_max_rank_truncates_before_every_metric(edge):
    # max_rank := 2 (trec_eval -M2): 'g' is d1, d2 only.
    assert value(edge, "precision", "g", k=5, max_rank=2) == pytest.approx(1 / 5)
    assert value(edge, "precision", "g", max_rank=2) == pytest.approx(1 / 2)  # set_P over 2 retrieved
    assert value(edge, "recall", "g", max_rank=2) == pytest.approx(1 / 3)
    assert value(edge, "average_precision", "g", max_rank=2) == pytest.approx(1 / 3)
    assert value(edge, "rbp", "g", column="residual", max_rank=2) == 0.0  # d1, d2 judged (trec_eval 10)
    assert value(edge, "rbp", "g", column="residual", max_rank=4) == pytest.approx(0.8 ** 4 + 0.2 * 0.8 ** 3)
    assert value(edge, "counts", "g", column="num_ret", max_rank=2) == 2
    # the ideal is not truncated: IDCG still sees d5
    assert value(edge, "idcg", "g", max_rank=2) == pytest.approx(3 + 2 * D(2) + D(3))


def test_unjudged_skip_drops_unjudged_and_negative_grades(edge):
    # unjudged := 'skip' (trec_eval -J): 'g' becomes d1, d2, d3 (d4's -1 and u1 are dropped).
    assert value(edge, "precision", "g", unjudged="skip") == pytest.approx(2 / 3)
    assert value(edge, "precision", "g", k=3, unjudged="skip") == pytest.approx(2 / 3)
    assert value(edge, "rbp", "g", column="residual", unjudged="skip") == 0.0  # nothing unjudged is left
    # 'norel' keeps d1 only
    assert value(edge, "counts", "norel", column="num_ret", unjudged="skip") == 1


def test_max_rank_zero_scores_nothing_retrieved_as_trec_eval(edge):
    # trec_eval -M 0 cuts every ranking to nothing: num_ret 0, every measure 0, R still counted
    assert values(edge, "num_ret", max_rank=0) == {"g": 0, "norel": 0, "allneg": 0}
    assert values(edge, "num_rel", max_rank=0) == {"g": 3, "norel": 0, "allneg": 0}
    assert values(edge, "average_precision", max_rank=0) == {"g": 0.0, "norel": 0.0, "allneg": 0.0}


def test_unjudged_skip_with_max_rank_cuts_first_as_trec_eval(con):
    # trec_eval -J -M1 cuts the ranking at 1 (u1, unjudged) and then drops u1: nothing is left.
    # Dropping first would score 'a' (relevant) at rank 1.
    register(con, [("q", "a", 1), ("q", "b", 0)], [("q", "u1", 3.0), ("q", "a", 2.0), ("q", "b", 1.0)])
    assert values(con, "num_ret", unjudged="skip", max_rank=1) == {"q": 0}
    assert values(con, "precision", k=1, unjudged="skip", max_rank=1) == {"q": 0.0}
    assert values(con, "precision", k=1, unjudged="skip", max_rank=2) == {"q": 1.0}  # u1, a -> a
    assert values(con, "num_ret", unjudged="skip") == {"q": 2}


def test_unjudged_mean_and_median_impute_a_judgment(con):
    # judged grades 0, 1, 3: mean 4/3, median 1. Ranking: x3 (3), u (unjudged), x1 (0).
    register(con, [("q", "x1", 0), ("q", "x2", 1), ("q", "x3", 3)],
             [("q", "x3", 0.9), ("q", "u", 0.8), ("q", "x1", 0.7)])
    # nonrelevant (default): u gains 0. DCG = 3; IDCG = 3 + 1 D(2) (x3, x2)
    assert value(con, "ndcg") == pytest.approx(3 / (3 + D(2)))
    assert value(con, "precision", k=2) == pytest.approx(1 / 2)
    # mean: u is graded 4/3, relevant, and joins the judgments: R = 3 (x2, x3, u),
    # DCG = 3 + 4/3 D(2); IDCG = 3 + 4/3 D(2) + 1 D(3)
    assert value(con, "ndcg", unjudged="mean") == pytest.approx((3 + 4 / 3 * D(2)) / (3 + 4 / 3 * D(2) + D(3)))
    assert value(con, "precision", k=2, unjudged="mean") == 1.0
    assert value(con, "recall", unjudged="mean") == pytest.approx(2 / 3)
    # median: u is graded 1: DCG = 3 + D(2); IDCG = 3 + D(2) + D(3)
    assert value(con, "ndcg", unjudged="median") == pytest.approx((3 + D(2)) / (3 + D(2) + D(3)))
    # MAE compares scores with real judgments only (judged_grade stays NULL for u)
    assert value(con, "mae", ) == pytest.approx((abs(0.9 - 3) + 0.7) / 2)
    # RBP's residual is the weight still unknown: under imputation u has a grade, nothing retrieved is
    # unjudged, and the residual is 0 (trec_eval 10 leaves out the tail past the list then);
    # without imputation u's weight (1 - p) p and the tail p^3 are unknown.
    assert value(con, "rbp", column="residual", unjudged="mean") == 0.0
    assert value(con, "rbp", column="residual") == pytest.approx(0.8 ** 3 + 0.2 * 0.8)


def test_imputation_keeps_bounded_metrics_within_one(con):
    """Before imputed grades joined the judgments, two unjudged docs imputed as relevant made
    recall and AP 1.5 and nDCG 1.31 (R and IDCG counted only the real qrels)."""
    register(con, [("q", "a", 2), ("q", "b", 1)], [("q", "u", 3.0), ("q", "v", 2.0), ("q", "a", 1.0)])
    for policy in ("mean", "median"):  # both 1.5 here: u and v are relevant, R = 4 (a, b, u, v)
        assert value(con, "recall", unjudged=policy) == pytest.approx(3 / 4)
        assert value(con, "average_precision", unjudged=policy) == pytest.approx(3 / 4)
        assert value(con, "ndcg", unjudged=policy) == pytest.approx(
            (1.5 + 1.5 * D(2) + 2 * D(3)) / (2 + 1.5 * D(2) + 1.5 * D(3) + 1 * D(4)))


def test_duplicates_max(con):
    # run lists (q, a) twice: duplicates := 'max' keeps the higher score, 3.0, which ranks a first
    register(con, [("q", "a", 1), ("q", "b", 0)], [("q", "a", 1.0), ("q", "a", 3.0), ("q", "b", 2.0)])
    assert value(con, "precision", k=1, duplicates="max") == 1.0
    assert value(con, "counts", column="num_ret", duplicates="max") == 2
    # qrels judge (q, a) 1 and 2: 'max' keeps 2
    register(con, [("q", "a", 1), ("q", "a", 2), ("q", "b", 0)], [("q", "a", 1.0), ("q", "b", 2.0)])
    assert value(con, "dcg", duplicates="max") == pytest.approx(2 * D(2))
    # the same judgment twice is not a conflict
    register(con, [("q", "a", 1), ("q", "a", 1)], [("q", "a", 1.0)])
    assert value(con, "precision") == 1.0


# ============================================================================ ties

# One query: a (3.0), then a three-way tie at 2.0 given in the file as d, b, c, then e (1.0).
# Grades: a 0, b 2, c 0, d 1, e 1; R = 3 (b, d, e).
#   trec        (score desc, doc_id desc): a d c b e   relevance 0 1 0 1 1   gains 0 1 0 2 1
#   input       (file order):              a d b c e   relevance 0 1 1 0 1   gains 0 1 2 0 1
#   pessimistic (non-relevant, low gain first in a tie): a c d b e   0 0 1 1 1   gains 0 0 1 2 1
#   optimistic  (relevant, high gain first):             a b d c e   0 1 1 0 1   gains 0 2 1 0 1
#   average     every rank of the tie holds the tie's mean: relevance 2/3, gain 1
TIE_QRELS = [("q", "a", 0), ("q", "b", 2), ("q", "c", 0), ("q", "d", 1), ("q", "e", 1)]
TIE_RUN = [("q", "a", 3.0), ("q", "d", 2.0), ("q", "b", 2.0), ("q", "c", 2.0), ("q", "e", 1.0)]
IDEAL = 2 + D(2) + D(3)  # gains 2, 1, 1
TIE_EXPECTED = {
    # mode: P@2, P@3, RR, AP, nDCG
    "trec": (1 / 2, 1 / 3, 1 / 2, (1 / 2 + 2 / 4 + 3 / 5) / 3, (D(2) + 2 * D(4) + D(5)) / IDEAL),
    "input": (1 / 2, 2 / 3, 1 / 2, (1 / 2 + 2 / 3 + 3 / 5) / 3, (D(2) + 2 * D(3) + D(5)) / IDEAL),
    "pessimistic": (0.0, 1 / 3, 1 / 3, (1 / 3 + 2 / 4 + 3 / 5) / 3, (D(3) + 2 * D(4) + D(5)) / IDEAL),
    "optimistic": (1 / 2, 2 / 3, 1 / 2, (1 / 2 + 2 / 3 + 3 / 5) / 3, (2 * D(2) + D(3) + D(5)) / IDEAL),
    # doc_ascending (doc_id ascending in a tie):         a b c d e   0 1 0 1 1   gains 0 2 0 1 1
    "doc_ascending": (1 / 2, 1 / 3, 1 / 2, (1 / 2 + 2 / 4 + 3 / 5) / 3, (2 * D(2) + D(4) + D(5)) / IDEAL),
    # P@2 = (0 + 2/3) / 2, P@3 = (0 + 2/3 + 2/3) / 3; RR and AP refuse 'average' (not linear)
    "average": (1 / 3, 4 / 9, None, None, (D(2) + D(3) + D(4) + D(5)) / IDEAL),
}


@pytest.mark.parametrize("mode", sorted(TIE_EXPECTED))
def test_tie_modes(con, mode):
    register(con, TIE_QRELS, TIE_RUN)
    p2, p3, rr, ap, ndcg = TIE_EXPECTED[mode]
    assert value(con, "precision", k=2, ties=mode) == pytest.approx(p2, abs=1e-12)
    assert value(con, "precision", k=3, ties=mode) == pytest.approx(p3, abs=1e-12)
    assert value(con, "ndcg", ties=mode) == pytest.approx(ndcg, abs=1e-12)
    if mode == "average":
        for macro in ("reciprocal_rank", "average_precision"):
            with pytest.raises(Exception, match="ties := 'average'"):
                values(con, macro, ties=mode)
    else:
        assert value(con, "reciprocal_rank", ties=mode) == pytest.approx(rr, abs=1e-12)
        assert value(con, "average_precision", ties=mode) == pytest.approx(ap, abs=1e-12)


def test_average_ties_survive_a_max_rank_cut_through_the_tie(con):
    """max_rank := 2 keeps a and one doc of the three-way tie. Under ties := 'average' that rank holds
    the tie's expected relevance, 2/3, whichever doc trec order happened to keep: P@2 = (0 + 2/3) / 2.
    (Before the fix the mean was taken after the cut, over the one kept doc d: P@2 = 1/2.)"""
    register(con, TIE_QRELS, TIE_RUN)
    assert value(con, "precision", k=2, ties="average", max_rank=2) == pytest.approx(1 / 3, abs=1e-12)
    assert value(con, "precision", ties="average", max_rank=2) == pytest.approx(1 / 3, abs=1e-12)


def test_integer_ids_tie_break_by_their_text_as_trec_eval(con):
    """trec_eval compares doc ids as strings ('9' > '10'); integer ids tie-break the same way, as if
    the ids had been written to a text file, so Parquet and TREC text give the same numbers."""
    con.register("qrels", pd.DataFrame({"query_id": [1], "doc_id": [10], "relevance": [1]}))
    con.register("run", pd.DataFrame({"query_id": [1, 1], "doc_id": [9, 10], "score": [1.0, 1.0]}))
    assert values(con, "reciprocal_rank") == {1: 0.5}  # '9' > '10' ranks first
    for ties, expected in (("pessimistic", 0.5), ("optimistic", 1.0), ("input", 0.5)):  # input: 9 comes first
        assert values(con, "reciprocal_rank", ties=ties) == {1: expected}, ties
    register(con, [("1", "10", 1)], [("1", "9", 1.0), ("1", "10", 1.0)])
    assert values(con, "reciprocal_rank") == {"1": 0.5}


# ============================================================================ more conventions


def test_iprec_uses_trec_eval_10_rounding(con):
    """R = 2, one relevant doc retrieved at rank 1. iprec at recall 0.6 needs round(0.6 * 2) = 1
    relevant doc in trec_eval 10 (the golden files), so it is 1.0; trec_eval 9's "recall >= 0.6"
    (pytrec_eval) would need 2 and give 0."""
    register(con, [("q", "a", 1), ("q", "x", 1)], [("q", "a", 1.0)])
    assert value(con, "interpolated_precision", recall=0.6) == 1.0
    assert value(con, "interpolated_precision", recall=0.8) == 0.0  # round(1.6) = 2


def test_geometric_mean_is_trec_gm_map(con):
    """0 is floored at 1e-5; a NULL is no query, left out as avg() leaves it out (not floored)."""
    rows = con.execute("SELECT duckrank.geometric_mean(v) FROM (VALUES (0.5), (0.0), (NULL)) t(v)").fetchall()
    assert rows[0][0] == pytest.approx(math.exp((math.log(0.5) + math.log(1e-5)) / 2), abs=1e-15)
    assert con.execute("SELECT duckrank.geometric_mean(NULL::DOUBLE)").fetchall() == [(None,)]


def test_log_metrics_by_hand(con):
    # u1: positives a (.9), c (.5); negatives b (.5), d (.1): AUC 3.5/4 (as in tutorial 002's example)
    # u2: positive b (.3) tied with negative a (.3): AUC 1/2. u3: one positive only: left out.
    rows = [("u1", "a", 0.9, 1), ("u1", "b", 0.5, 0), ("u1", "c", 0.5, 1), ("u1", "d", 0.1, 0),
            ("u2", "a", 0.3, 0), ("u2", "b", 0.3, 1), ("u2", "c", 0.2, 0), ("u3", "a", 0.2, 1)]
    con.register("log", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "label"]))
    per_query = con.execute("SELECT * FROM duckrank.\"log_auc\"('log') ORDER BY query_id").fetchall()
    # u2: b beats c (1), ties a (1/2): 1.5 / 2
    assert per_query == [("u1", 0.875, 4, 2), ("u2", 0.75, 3, 1)]
    # GAUC by impressions (4, 3) and by positives (2, 1)
    gauc = con.execute("SELECT * FROM duckrank.\"gauc\"('log')").fetchall()
    assert gauc[0][0] == pytest.approx((0.875 * 4 + 0.75 * 3) / 7) and gauc[0][1] == 2
    gauc = con.execute("SELECT value FROM duckrank.\"gauc\"('log', weight := 'positives')").fetchall()
    assert gauc[0][0] == pytest.approx((0.875 * 2 + 0.75 * 1) / 3)
    # global: positives .9 .5 .3 .2 vs negatives .5 .1 .3 .2 -> 4+2.5+2.5? count pairs:
    # .9 beats all 4 (4); .5 ties .5, beats .1 .3 .2 (3.5); .3 beats .1 .2, ties .3 (2.5);
    # .2 beats .1, ties .2 (1.5): 11.5 / 16
    (value_, positives, negatives), = con.execute("SELECT * FROM duckrank.\"global_auc\"('log')").fetchall()
    assert (value_, positives, negatives) == (pytest.approx(11.5 / 16), 4, 4)
    # classification at 0.5: predicted positive u1 a, b, c -> TP 2 (a, c), FP 1 (b);
    # TN u1 d, u2 a, u2 c = 3; FN u2 b, u3 a = 2
    (tp, fp, tn, fn, accuracy, precision, recall, f1), = con.execute(
        "SELECT * FROM duckrank.\"classification\"('log')").fetchall()
    assert (tp, fp, tn, fn) == (2, 1, 3, 2)
    assert (accuracy, precision, recall, f1) == pytest.approx((5 / 8, 2 / 3, 1 / 2, 4 / 7))
    # label >= rel_level is a positive: at level 2 there are none, AUC is undefined
    assert con.execute("SELECT value FROM duckrank.\"global_auc\"('log', rel_level := 2)").fetchall() == [(None,)]


def test_beyond_accuracy_by_hand(con):
    # train: u1 {a, b}, u2 {a, c}, u3 {a, b, c}, u4 {d}: n(a) = 3, n(b) = n(c) = 2, n(d) = 1, N = 8 pairs.
    # Co-occurrence cosine: sim(a, b) = sim(a, c) = 2 / sqrt(3 * 2), sim(b, c) = 1 / sqrt(2 * 2); d and e
    # (never trained on) share no user with anything: 0.
    # run: u1 ranks c, d; u4 ranks a, b, c. qrels: u1 c = 1, d = 0; u4 a = 1, b = 0 (c unjudged).
    train = [("u1", "a"), ("u1", "b"), ("u2", "a"), ("u2", "c"), ("u3", "a"), ("u3", "b"), ("u3", "c"), ("u4", "d")]
    con.register("train", pd.DataFrame(train, columns=["query_id", "doc_id"]))
    register(con, [("u1", "c", 1), ("u1", "d", 0), ("u4", "a", 1), ("u4", "b", 0)],
             [("u1", "c", 2.0), ("u1", "d", 1.0), ("u4", "a", 3.0), ("u4", "b", 2.0), ("u4", "c", 1.0)])
    def measure(macro, *arguments):
        return dict(con.execute(f"SELECT * FROM duckrank.{macro}('qrels', 'run', 'train'"
                                f"{''.join(', ' + a for a in arguments)})").fetchall())
    # novelty -log2(n / N): c 2, d 3; a -log2(3/8), b 2
    assert measure("novelty") == pytest.approx({"u1": 2.5, "u4": (-math.log2(3 / 8) + 2 + 2) / 3})
    # diversity: u1's one pair (c, d) is 0 -> 1; u4: 1 - (2/sqrt6 + 2/sqrt6 + 1/2) / 3
    assert measure("diversity") == pytest.approx({"u1": 1.0, "u4": 1 - (4 / math.sqrt(6) + 0.5) / 3})
    # serendipity: u1's c is 1 - (sim(c, a) + sim(c, b)) / 2 away from its history {a, b}, relevant;
    # d is not relevant: 0. u4's history {d} shares no user with a, b, c: a (relevant) 1, b, c 0
    assert measure("serendipity") == pytest.approx({"u1": (1 - (2 / math.sqrt(6) + 0.5) / 2) / 2, "u4": 1 / 3})
    # short head at 0.2 (1.6 of 8 pairs): a only. Top 2: u1 c, d (tail, tail); u4 a, b (head, tail)
    assert measure("arp", "k := 2") == {"u1": 1.5, "u4": 2.5}
    assert measure("aplt", "k := 2") == {"u1": 1.0, "u4": 0.5}
    assert measure("aclt", "k := 2") == {"u1": 2.0, "u4": 1.0}
    # at head 0.5 (4 pairs): a (0 above), b and c (3 above, tied) are in: u4's top 2 has no tail item
    assert measure("aclt", "k := 2", "head := 0.5") == {"u1": 1.0, "u4": 0.0}
    # coverage of the top 2 (c, d, a, b: 4 of the 4 trained items, each recommended once: entropy 2)
    # and of the top 1 (c, a: 2 of 4, entropy 1)
    coverage = "SELECT value FROM duckrank.{}('qrels', 'run'{}, k := {})"
    assert con.execute(coverage.format("catalog_coverage", ", 'train'", 2)).fetchall() == [(1.0,)]
    assert con.execute(coverage.format("catalog_coverage", ", 'train'", 1)).fetchall() == [(0.5,)]
    assert con.execute(coverage.format("distributional_coverage", "", 2)).fetchall() == [(2.0,)]
    assert con.execute(coverage.format("distributional_coverage", "", 1)).fetchall() == [(1.0,)]


def test_file_paths_work_as_inputs(con, tmp_path):
    """Table macros read names or file paths (query_table)."""
    qrels, run = ranked_run([1, 0, 1])
    pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]).to_parquet(tmp_path / "q.parquet")
    pd.DataFrame(run, columns=["query_id", "doc_id", "score"]).to_csv(tmp_path / "r.csv", index=False)
    got = con.execute(f"SELECT value FROM duckrank.\"average_precision\"('{tmp_path / 'q.parquet'}', "
                      f"'{tmp_path / 'r.csv'}')").fetchall()
    assert got == [(pytest.approx((1 + 2 / 3) / 2),)]


# ============================================================================ invariants

BOUNDED = {
    "precision": "duckrank.precision_of(q, 3)",
    "recall": "duckrank.recall_of(q, NULL, false)",
    "f": "duckrank.f_measure_of(q, NULL, 1.0, NULL)",
    "ap": "duckrank.average_precision_of(q, NULL, 'R')",
    "ndcg": "duckrank.ndcg_of(q, NULL, 'qrels')",
    "bpref": "duckrank.bpref_of(q)",
    "rprec": "duckrank.r_precision_of(q, 1.0)",
    "err": "duckrank.err_of(q, NULL)",
    "rbp": "duckrank.rbp_of(q, NULL, 0.8, true, true)",
    "rbp_plus_residual": "duckrank.rbp_of(q, NULL, 0.8, false, true) + duckrank.rbp_residual_of(q, NULL, 0.8, false)",
    "iprec": "duckrank.eleven_point_average_of(q, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])",
    "judged": "duckrank.judged_of(q, 3)",
}


@settings(max_examples=examples(30), deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(["1", "2", "3", "10", "x"]),
                          st.sampled_from([-1, 0, 1, 2, 3])), min_size=1, max_size=12),
       st.lists(st.tuples(st.sampled_from("ab"), st.sampled_from(["1", "2", "3", "10", "x", "y"]),
                          st.sampled_from([0.0, 1.0, 2.0])), min_size=1, max_size=12),
       st.sampled_from(["nonrelevant", "skip", "mean", "median"]),
       st.sampled_from(["trec", "pessimistic", "optimistic"]), st.booleans())
def test_bounded_metrics_stay_in_0_1(con, qrels, run, unjudged, ties, judged_only):
    qrels = list({(q, d): (q, d, g) for q, d, g in qrels}.values())
    run = list({(q, d): (q, d, s) for q, d, s in run}.values())
    register(con, qrels, run)
    select = ", ".join(f'{expr} AS "{name}"' for name, expr in BOUNDED.items())
    for row in con.execute(f"SELECT {select} FROM duckrank.ranked('qrels', 'run', unjudged := '{unjudged}', "
                            f"ties := '{ties}', judged_only := {judged_only}) q").fetchall():
        for name, v in zip(BOUNDED, row):
            assert -1e-12 <= v <= 1 + 1e-12, (name, v, unjudged)


def test_diversity_by_hand(con):
    # subtopic qrels: subtopic 1 judges a and b relevant, subtopic 2 b, subtopic 3 only c as 0 (it has
    # no relevant doc, so it does not count): S = 2. The run ranks a, b, c.
    con.register("subtopic_qrels", pd.DataFrame([("q", "1", "a", 1), ("q", "1", "b", 1), ("q", "2", "b", 1),
                                                 ("q", "3", "c", 0)],
                                                columns=["query_id", "subtopic", "doc_id", "relevance"]))
    con.register("run", pd.DataFrame([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
                                     columns=["query_id", "doc_id", "score"]))
    def measure(macro, arguments=""):
        return con.execute(f"SELECT value FROM duckrank.{macro}('subtopic_qrels', 'run'{arguments})").fetchall()[0][0]
    # alpha 0.5: g(1) = 1 (a: subtopic 1, new), g(2) = 0.5 + 1 = 1.5 (b: subtopic 1 seen once, 2 new), g(3) = 0.
    # The greedy ideal: b first (2), then a (0.5).
    assert measure("alpha_ndcg", ", k := 2") == pytest.approx((1 + 1.5 * D(2)) / (2 + 0.5 * D(2)))
    # alpha-DCG's normaliser: S (1 - alpha)^(i-1) D(i) summed, 2 + 1 D(2); at k = 1 ndeval divides by nothing
    assert measure("alpha_dcg", ", k := 2") == pytest.approx((1 + 1.5 * D(2)) / (2 + 1 * D(2)))
    assert measure("alpha_dcg", ", k := 1") == 1.0
    # ERR-IA: the discount 1/i; its normaliser 2 / 1 + 1 / 2
    assert measure("err_ia", ", k := 2") == pytest.approx((1 + 1.5 / 2) / 2.5)
    assert measure("nerr_ia", ", k := 2") == pytest.approx((1 + 1.5 / 2) / (2 + 0.5 / 2))
    # NRBP (alpha = beta = 0.5): (1 - 0.5 * 0.5) / 2 * (1 + 1.5 * 0.5); the ideal's: 0.375 * (2 + 0.5 * 0.5)
    assert measure("nrbp") == pytest.approx(0.375 * 1.75)
    assert measure("nnrbp") == pytest.approx(1.75 / 2.25)
    # AP-IA: subtopic 1 has a at 1 and b at 2 (AP 1), subtopic 2 b at 2 (AP 1/2): mean 0.75
    assert measure("ap_ia") == pytest.approx(0.75)
    # P-IA@2: (1 + 2) (doc, subtopic) relevances / (2 * 2); StRecall@1: a covers subtopic 1 of 2
    assert measure("p_ia", ", k := 2") == pytest.approx(0.75)
    assert measure("subtopic_recall", ", k := 1") == 0.5
