"""Differential tests: duckrank's SQL macros against independent implementations, to 1e-9.

Oracles (test-only dependencies):
  pytrec_eval   trec_eval itself, in-process: P, recall, map, map_cut, ndcg, ndcg_cut, recip_rank,
                Rprec, Rprec_mult, bpref, success, set_F (incl. its beta parameter), set_P,
                set_recall, set_relative_P, relative_P, iprec_at_recall, 11pt_avg, num_ret, num_rel,
                num_rel_ret, num_nonrel_judged_ret; its relevance_level (= rel_level) and
                judged_docs_only_flag (= unjudged := 'skip').
  scikit-learn  roc_auc_score (global AUC) and ndcg_score (ties := 'average', ideal := 'run').
  ranx          ndcg_burges (exp gain), hit_rate, f1, rbp.
  formulas      ERR (Chapelle et al. 2009) and per-query AUC / GAUC by O(n^2) pair counting,
                written out below.

The generated data is hostile on purpose: few distinct scores (heavy ties, broken by doc_id
descending in both trec_eval and duckrank), ids whose string order differs from their numeric
order ('10' < '9'), graded and negative grades, relevant docs never retrieved, queries with no
relevant docs, queries only in the run or only in the qrels, and one-document runs.

The bulk comparisons compose the per-query *_of macros over one duckrank.ranked relation (as the
Python layer does): one query per data set instead of one table-macro call per measure. The seeded
test runs every table macro too, so both layers meet the oracle.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys

import pandas as pd
import pytest
import pytrec_eval
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from helpers import examples
from oracles import iprec_rules_agree
from oracles import pair_auc as pairwise_auc
from sklearn.metrics import ndcg_score, roc_auc_score

from duckrank._library import connect
from duckrank.measures import parse_measure

ABS = 1e-9
QUERY_IDS = ["1", "2", "9", "10", "q"]
DOC_IDS = ["1", "2", "3", "9", "10", "11", "100", "a", "B", "b"]
TIED_SCORES = [-1.0, 0.0, 0.5, 1.0, 1.0, 2.0, 3.25]  # exact in float32 too, as trec_eval stores them
GRADES = [-1, 0, 0, 1, 1, 2, 3]
CUTOFFS = [1, 2, 3, 5, 10]
RPREC_MULTS = [0.2, 0.5, 1.5, 2.0]
# derandomize: the same examples every run (a failure reproduces); database=None: no .hypothesis/
SETTINGS = settings(max_examples=examples(60), deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def con():
    """One connection for the module: loading the macro library costs more than a small evaluation,
    so tests and hypothesis examples share it and re-register the tables they read."""
    connection = connect()
    yield connection
    connection.close()


# ----------------------------------------------------------------------------- data


def gen_case(rnd: random.Random, *, scores=TIED_SCORES, grades=GRADES, queries=QUERY_IDS,
             docs=DOC_IDS, min_run=1, pytrec_safe=True):
    """qrels rows (query_id, doc_id, relevance) and run rows (query_id, doc_id, score).
    The first query is always in both; the others are in both, only one, or neither.
    pytrec_safe: every judged query keeps at least one grade >= 0 (see pytrec())."""
    qrels, run = [], []
    for position, query in enumerate(queries):
        kind = "both" if position == 0 else rnd.choice(
            ["both", "both", "both", "no_relevant", "run_only", "qrels_only", "none"])
        if kind in ("both", "no_relevant", "qrels_only"):
            pool = [g for g in grades if g <= 0] if kind == "no_relevant" else grades
            judged = [(query, doc, rnd.choice(pool)) for doc in rnd.sample(docs, rnd.randint(1, len(docs)))]
            if pytrec_safe and all(g < 0 for _, _, g in judged):
                judged[0] = (query, judged[0][1], 0)
            qrels += judged
        if kind in ("both", "no_relevant", "run_only"):
            size = rnd.choice([min_run, min_run, 2, 3, 5, len(docs)])
            ranked = rnd.sample(docs, max(size, min_run))
            if scores is None:  # distinct scores
                values = rnd.sample(range(1, 1000), len(ranked))
                run += [(query, doc, value / 8.0) for doc, value in zip(ranked, values)]
            else:
                run += [(query, doc, rnd.choice(scores)) for doc in ranked]
    return qrels, run


def register(con, qrels, run):
    con.register("qrels", pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))
    con.register("run", pd.DataFrame(run, columns=["query_id", "doc_id", "score"]))


def as_dicts(qrels, run):
    qrel_dict, run_dict = {}, {}
    for q, d, g in qrels:
        qrel_dict.setdefault(q, {})[d] = int(g)
    for q, d, s in run:
        run_dict.setdefault(q, {})[d] = float(s)
    return qrel_dict, run_dict


def close(a: float, b: float) -> bool:
    return abs(a - b) <= ABS


# ----------------------------------------------------------------------------- pytrec_eval

PYTREC_MEASURES = {
    "P", "recall", "map_cut", "ndcg_cut", "success", "relative_P",  # with cutoffs, below
    "map", "ndcg", "recip_rank", "Rprec", "bpref", "set_F", "set_P", "set_recall", "set_relative_P",
    "iprec_at_recall", "11pt_avg", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret",
    "Rprec_mult",
}


def pytrec_measure_set():
    cut = ",".join(map(str, CUTOFFS))
    out = set()
    for m in PYTREC_MEASURES:
        if m in ("P", "recall", "map_cut", "ndcg_cut", "success", "relative_P"):
            out.add(f"{m}.{cut}")
        elif m == "Rprec_mult":
            out.add("Rprec_mult." + ",".join(map(str, RPREC_MULTS)))
        else:
            out.add(m)
    return out


def duckrank_columns():
    """pytrec_eval output key -> duckrank's aggregate over duckrank.ranked for that trec_eval
    measure: parsed from the key (trec_eval's printed name, P_5) by duckrank's own parser, so the
    registry's trec_eval spellings are what is tested."""
    cut = {"P", "recall", "map_cut", "ndcg_cut", "success", "relative_P"}
    keys = [m for m in PYTREC_MEASURES if m not in cut and m not in ("iprec_at_recall", "Rprec_mult")]
    keys += [f"{m}_{k}" for m in cut for k in CUTOFFS]
    keys += [f"iprec_at_recall_{level / 10:.2f}" for level in range(11)]
    keys += [f"Rprec_mult_{mult:.2f}" for mult in RPREC_MULTS]
    return {key: parse_measure(key).aggregate_sql() for key in keys}


COLUMNS = duckrank_columns()


def duckrank_by_aggregates(con, rel_level=1, unjudged="nonrelevant", judged_rows_only=False):
    """judged_rows_only: duckrank.ranked's judged_only, which switches (by default) to ranking
    before judging; every aggregate must give the same numbers either way."""
    names = list(COLUMNS)
    select = ",\n".join(f'{COLUMNS[n]} AS "{n}"' for n in names)
    sql = (f"SELECT query_id, {select} FROM duckrank.ranked('qrels', 'run', rel_level := {rel_level}, "
           f"unjudged := '{unjudged}', judged_only := {judged_rows_only}) q")
    return {row[0]: dict(zip(names, map(float, row[1:]))) for row in con.execute(sql).fetchall()}


def pytrec(qrels, run, rel_level=1, judged_only=False, measures=None):
    """pytrec_eval's per-query values (queries in both run and qrels, as trec_eval).

    Never give pytrec_eval a query whose judgments are all negative: trec_eval's code then corrupts
    memory inside pytrec_eval (later evaluations lose measures, hang in nDCG or crash the
    interpreter). gen_case(..., pytrec_safe=True) keeps a non-negative grade in every judged query;
    the all-negative query is a golden case in test_sql_golden.py instead."""
    assert all(any(g >= 0 for q2, _, g in qrels if q2 == q) for q in {q for q, _, _ in qrels})
    qrel_dict, run_dict = as_dicts(qrels, run)
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrel_dict, measures or pytrec_measure_set(), relevance_level=rel_level,
        judged_docs_only_flag=judged_only)
    return evaluator.evaluate(run_dict)


def assert_same_as_pytrec(got, want, context):
    assert set(got) == set(want), f"{context}: queries differ: duckrank {sorted(got)}, trec {sorted(want)}"
    problems = []
    for query, measures in want.items():
        missing = set(measures) - set(got[query])
        assert not missing, f"measures not compared: {missing}"
        num_rel = int(got[query]["num_rel"])
        for name, value in measures.items():
            nothing = got[query]["num_ret"] == 0
            if name.startswith("iprec_at_recall_") and not iprec_rules_agree(float(name[16:]), num_rel, nothing):
                continue
            if name == "11pt_avg" and not all(iprec_rules_agree(t / 10, num_rel, nothing) for t in range(11)):
                continue
            if math.isnan(value):
                # trec_eval -J can leave a query with nothing retrieved; its iprec then divides
                # 0 by 0 (NaN, printed -nan), and so does duckrank's
                assert math.isnan(got[query][name]), (query, name)
                continue
            if not close(got[query][name], value):
                problems.append(f"{name} q={query}: duckrank {got[query][name]!r} trec_eval {value!r}")
    assert not problems, f"{context}\n" + "\n".join(problems)


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([1, 2]), st.booleans(), st.booleans())
def test_trec_measures_match_pytrec_eval(con, rnd, rel_level, judged_only, judged_rows_only):
    qrels, run = gen_case(rnd)
    register(con, qrels, run)
    got = duckrank_by_aggregates(con, rel_level, "skip" if judged_only else "nonrelevant", judged_rows_only)
    want = pytrec(qrels, run, rel_level, judged_only)
    assert_same_as_pytrec(got, want, f"rel_level={rel_level} judged_only={judged_only} "
                                     f"judged_rows_only={judged_rows_only}\nqrels={qrels}\nrun={run}")


def table_macro_sql(key: str, rel_level: int) -> str:
    """The generated table macro of the measure that pytrec_eval key names, with the options its
    trec_eval spelling sets (e.g. relative_P_3: recall with k := 3, cap := true)."""
    measure = parse_measure(key)
    options = "".join(f", {name} := {value!r}".replace("True", "true") for name, value in measure.given)
    return (f"SELECT query_id, value FROM duckrank.\"{measure.metric.name}\"('qrels', 'run'{options}, "
            f"rel_level := {rel_level})")


@pytest.mark.parametrize("seed", [7, 2024])
def test_every_table_macro_matches_pytrec_eval(con, seed):
    """One large seeded data set (many queries of every kind), every table macro called once."""
    rnd = random.Random(seed)
    queries = [str(n) for n in range(1, 41)]
    qrels, run = gen_case(rnd, queries=queries)
    register(con, qrels, run)
    keys = ["map", "ndcg", "recip_rank", "Rprec", "bpref", "set_F", "set_P", "set_recall", "set_relative_P",
            "11pt_avg", "P_1", "P_3", "P_10", "recall_2", "recall_10", "relative_P_3", "map_cut_3",
            "ndcg_cut_3", "ndcg_cut_10", "success_1", "success_3", "iprec_at_recall_0.00",
            "iprec_at_recall_0.30", "iprec_at_recall_1.00", "Rprec_mult_0.50", "Rprec_mult_2.00",
            "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"]
    rel_level = 1 if seed == 7 else 2
    want = pytrec(qrels, run, rel_level)
    got = {}
    for key in keys:
        for query, value in con.execute(table_macro_sql(key, rel_level)).fetchall():
            got.setdefault(query, {})[key] = float(value)
    want = {q: {k: v for k, v in ms.items() if k in keys} for q, ms in want.items()}
    assert_same_as_pytrec(got, want, f"seed={seed}")
    # and the table macros (judged_only: ranked before judging) equal the aggregate composition over
    # the whole relation (judged after ranking)
    by_agg = duckrank_by_aggregates(con, rel_level)
    for query, measures in got.items():
        for key, value in measures.items():
            assert close(by_agg[query][key], value), (query, key)


def test_set_f_beta_is_the_square_root_of_trec_evals_parameter(con):
    """trec_eval's set_F.x computes (x+1)PR/(R+xP): its x is beta squared. duckrank's beta is beta."""
    rnd = random.Random(11)
    qrels, run = gen_case(rnd, queries=[str(n) for n in range(20)])
    register(con, qrels, run)
    for x in (0.25, 4.0, 2.0):
        want = pytrec(qrels, run, measures={f"set_F.{x}"})
        got = dict(con.execute(
            f"SELECT query_id, value FROM duckrank.\"f_measure\"('qrels', 'run', beta := {math.sqrt(x)})").fetchall())
        assert set(got) == set(want)
        for q in want:
            assert close(got[q], want[q]["set_F"]), (x, q)


def test_ties_follow_trec_evals_doc_id_descending_rule(con):
    """All scores equal: the ranking is doc_id descending as strings ('9' > '100' > '10' > '1')."""
    docs = ["1", "10", "100", "9", "a"]
    qrels = [("1", "9", 1), ("1", "100", 1)]
    run = [("1", d, 1.0) for d in docs]
    register(con, qrels, run)
    ranking = [d for d, in con.execute(
        "SELECT d.doc_id FROM (SELECT unnest(docs) AS d FROM duckrank.ranked('qrels', 'run', judged_only := false)) "
        "ORDER BY d.rank").fetchall()]
    assert ranking == ["a", "9", "100", "10", "1"]
    want = pytrec(qrels, run, measures={"map", "recip_rank", "P.2"})
    got = duckrank_by_aggregates(con)
    for key in ("map", "recip_rank", "P_2"):
        assert close(got["1"][key], want["1"][key])


# ----------------------------------------------------------------------------- scikit-learn


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([1, 2]))
def test_global_auc_matches_roc_auc_score(con, rnd, rel_level):
    n = rnd.randint(2, 60)
    rows = [(rnd.choice("abc"), str(i), rnd.choice([0.0, 0.25, 0.5, 1.0, rnd.random()]), rnd.choice([0, 1, 2, 3]))
            for i in range(n)]
    labels = [int(label >= rel_level) for *_, label in rows]
    con.register("log", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "label"]))
    value, positives, negatives = con.execute(
        f"SELECT * FROM duckrank.\"global_auc\"('log', rel_level := {rel_level})").fetchall()[0]
    assert (positives, negatives) == (sum(labels), n - sum(labels))
    if 0 < sum(labels) < n:
        assert close(value, roc_auc_score(labels, [r[2] for r in rows]))
    else:
        assert value is None  # undefined with one class; scikit-learn raises


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([None, 1, 2, 3, 5, 10]))
def test_ndcg_average_ties_run_ideal_matches_sklearn_ndcg_score(con, rnd, k):
    """scikit-learn's ndcg_score: linear gain, ideal from the scored docs only, ties averaged."""
    qrels, run = gen_case(rnd, grades=[0, 0, 1, 1, 2, 3], min_run=2)
    register(con, qrels, run)
    k_sql = "NULL" if k is None else str(k)
    got = dict(con.execute(
        f"SELECT query_id, value FROM duckrank.\"ndcg\"('qrels', 'run', k := {k_sql}, ties := 'average', "
        "ideal := 'run')").fetchall())
    qrel_dict, run_dict = as_dicts(qrels, run)
    expected = {}
    for query, scored in run_dict.items():
        if query not in qrel_dict:
            continue
        docs = list(scored)
        y_true = [qrel_dict[query].get(d, 0) for d in docs]
        y_score = [scored[d] for d in docs]
        expected[query] = ndcg_score([y_true], [y_score], k=k)
    assert set(got) == set(expected)
    for query in expected:
        assert close(got[query], expected[query]), (query, got[query], expected[query])


# ----------------------------------------------------------------------------- ranx

RANX_SCRIPT = r"""
import json, sys
from ranx import Qrels, Run, evaluate
out = []
for case in json.load(sys.stdin):
    qrels, run = Qrels(case["qrels"]), Run(case["run"])
    evaluate(qrels, run, case["metrics"], return_mean=False)
    out.append({m: {q: float(v) for q, v in run.scores[m].items()} for m in case["metrics"]})
json.dump(out, sys.stdout)
"""


def ranx_evaluate(cases):
    done = subprocess.run([sys.executable, "-c", RANX_SCRIPT], input=json.dumps(cases), text=True,
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# ranx metric -> duckrank aggregate over ranked(..., gain := 'exp'); k NULL when ranx's k is 0 (full).
def ranx_to_duckrank(metric: str) -> str:
    """duckrank's aggregate for a ranx metric, parsed from ranx's own spelling by duckrank's parser."""
    return parse_measure(metric.partition("-l")[0]).aggregate_sql()


RANX_METRICS = ["ndcg_burges", "ndcg_burges@1", "ndcg_burges@3", "ndcg_burges@10", "hit_rate@1", "hit_rate@3",
                "hit_rate@2-l2", "f1", "f1@1", "f1@3", "f1@10", "f1@3-l2", "rbp.8", "rbp.9", "rbp.5"]


def test_ranx_ndcg_burges_hit_rate_f1_rbp(con):
    """ranx on the queries of the qrels (ranx needs the same queries in run and qrels: queries the run
    missed get an empty run here, as duckrank's complete := true scores them). Scores are distinct
    (ranx breaks ties by its own sort, trec_eval and duckrank by doc_id). RBP is compared on binary
    qrels: ranx's RBP weighs each hit by its grade, duckrank's (and Moffat & Zobel's) by 1. ranx's
    nDCG with -l drops grades below the level from the gains, which trec_eval and duckrank do not,
    so nDCG is compared at level 1 only."""
    rnd = random.Random(5)
    cases, datasets = [], []
    for n in range(12):
        binary = n % 3 == 0
        qrels, run = gen_case(rnd, scores=None, grades=[0, 1] if binary else [0, 0, 1, 2, 3],
                              queries=[f"q{i}" for i in range(6)])
        qrel_dict, run_dict = as_dicts(qrels, run)
        run_dict = {q: run_dict.get(q, {}) for q in qrel_dict}
        metrics = [m for m in RANX_METRICS if binary or not m.startswith("rbp")]
        cases.append({"qrels": qrel_dict, "run": run_dict, "metrics": metrics})
        datasets.append((qrels, [r for r in run if r[0] in qrel_dict]))
    results = ranx_evaluate(cases)
    for case, (qrels, run), want in zip(cases, datasets, results):
        register(con, qrels, run)
        for level, judged_only in ((1, False), (1, True), (2, False), (2, True)):
            metrics = [m for m in case["metrics"] if int(m.partition("-l")[2] or 1) == level]
            select = ", ".join(ranx_to_duckrank(m) for m in metrics)
            sql = (f"SELECT query_id, {select} FROM duckrank.ranked('qrels', 'run', gain := 'exp', "
                   f"rel_level := {level}, complete := true, judged_only := {judged_only}) q")
            rows = {row[0]: dict(zip(metrics, row[1:])) for row in con.execute(sql).fetchall()}
            for metric in metrics:
                assert set(rows) == set(want[metric]), metric
                for query, value in want[metric].items():
                    assert close(rows[query][metric], value), (metric, query, rows[query][metric], value, case)


# ----------------------------------------------------------------------------- ERR


def err_reference(grades_in_rank_order, g_max, k=None):
    """Chapelle, Metzler, Zhang & Grinspan 2009, Algorithm 2: a user scans down the ranking and
    stops at rank r with probability R_r = (2^g_r - 1) / 2^g_max; ERR = sum_r (1/r) P(stop at r).
    Negative and unjudged grades count 0; grades above g_max are clipped to it."""
    p_reach, err = 1.0, 0.0
    for r, grade in enumerate(grades_in_rank_order[:k] if k else grades_in_rank_order, start=1):
        g = min(max(grade or 0, 0), g_max)
        stop = (2.0 ** g - 1) / 2.0 ** g_max
        err += p_reach * stop / r
        p_reach *= 1 - stop
    return err


def trec_order(scored: dict[str, float]) -> list[str]:
    return sorted(scored, key=lambda d: (scored[d], d), reverse=True)


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([None, 1, 3, 5]), st.sampled_from([None, 2.0, 4.0]))
def test_err_matches_chapelle_formula(con, rnd, k, g_max):
    qrels, run = gen_case(rnd, grades=[-1, 0, 1, 2, 3, 4])
    register(con, qrels, run)
    k_sql = "NULL" if k is None else str(k)
    g_sql = "NULL" if g_max is None else str(g_max)
    got = dict(con.execute(
        f"SELECT query_id, value FROM duckrank.\"err\"('qrels', 'run', k := {k_sql}, g_max := {g_sql})").fetchall())
    qrel_dict, run_dict = as_dicts(qrels, run)
    top = g_max if g_max is not None else max(g for _, _, g in qrels)
    expected = {q: err_reference([qrel_dict[q].get(d) for d in trec_order(scored)], top, k)
                for q, scored in run_dict.items() if q in qrel_dict}
    assert set(got) == set(expected)
    for q in expected:
        assert close(got[q], expected[q]), (q, got[q], expected[q])


# ----------------------------------------------------------------------------- AUC / GAUC


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from([1, 2]))
def test_per_query_auc_matches_pair_counting(con, rnd, rel_level):
    """duckrank.auc: per query over the retrieved docs, relevant (grade >= rel_level) = positive,
    everything else retrieved (non-relevant, negative grade, unjudged) = negative."""
    qrels, run = gen_case(rnd)
    register(con, qrels, run)
    got = dict(con.execute(
        f"SELECT query_id, value FROM duckrank.\"auc\"('qrels', 'run', rel_level := {rel_level})").fetchall())
    qrel_dict, run_dict = as_dicts(qrels, run)
    expected = {}
    for q, scored in run_dict.items():
        if q not in qrel_dict:
            continue
        docs = list(scored)
        value = pairwise_auc([scored[d] for d in docs], [qrel_dict[q].get(d, 0) >= rel_level for d in docs])
        if value is not None:
            expected[q] = value
    assert set(got) == set(expected)
    for q in expected:
        assert close(got[q], expected[q])


@SETTINGS
@given(st.randoms(use_true_random=False), st.sampled_from(["impressions", "positives"]))
def test_log_auc_and_gauc_match_pair_counting(con, rnd, weight):
    rows = []
    for user in range(rnd.randint(1, 8)):
        for item in range(rnd.randint(1, 12)):
            rows.append((f"u{user}", f"i{item}", rnd.choice([0.0, 0.1, 0.5, 0.5, 0.9, rnd.random()]),
                         rnd.choice([0, 0, 1])))
    con.register("log", pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "label"]))
    per_query = {q: (v, n, p) for q, v, n, p in con.execute(
        "SELECT query_id, value, impressions, positives FROM duckrank.\"log_auc\"('log')").fetchall()}
    gauc, num_q = con.execute(f"SELECT * FROM duckrank.\"gauc\"('log', weight := '{weight}')").fetchall()[0]
    expected, weights = {}, {}
    for user in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == user]
        value = pairwise_auc([r[2] for r in mine], [r[3] == 1 for r in mine])
        if value is not None:
            positives = sum(r[3] for r in mine)
            expected[user] = (value, len(mine), positives)
            weights[user] = len(mine) if weight == "impressions" else positives
    assert set(per_query) == set(expected)
    for q, (value, n, p) in expected.items():
        assert close(per_query[q][0], value) and per_query[q][1:] == (n, p)
    assert num_q == len(expected)
    if expected:
        want = sum(expected[q][0] * weights[q] for q in expected) / sum(weights.values())
        assert close(gauc, want)
    else:
        assert gauc is None
