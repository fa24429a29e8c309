"""Independent implementations of every registry measure, keyed by the oracle its Metric names.

ORACLES[name](metric, options, qrels, run, rel_level) -> {query_id: value}, as that implementation
computes it, for the queries duckrank scores (those in both run and qrels, trec_eval's default):

  metric     the registry name (duckrank.registry.METRICS)
  options    every option of the metric (registry defaults filled in), plus the convention
             `unjudged` ('nonrelevant' or 'skip', trec_eval -J)
  qrels      rows (query_id, doc_id, grade); run rows (query_id, doc_id, score). For the log
             measures (reads == 'log') the two halves of one log: (query_id, doc_id, label) and
             (query_id, doc_id, score).
  rel_level  grade >= rel_level is relevant (trec_eval -l)

A measure reported only as a summary (per_query=False: num_q, gm_map, gm_bpref; the log measures
gauc, global_auc) comes back as {"all": value}, to compare with duckrank's summary; a value the
measure leaves undefined (AUC without both classes) is left out. A query whose value the oracle
cannot judge (documented where it happens) maps to None: duckrank must score it, but its value
is not compared. An option combination the oracle cannot express raises pytest.skip with the
reason.

Nothing here reads duckrank's SQL: each oracle is a library (pytrec_eval, ranx, scikit-learn,
ir_measures) or NIST's trec_eval 10 binary fed duckrank's conventions through its input, or a formula written from the
definition in README.md ("Metric reference", "Conventions"). The conventions every oracle respects:
  - the ranking is score descending, then doc_id descending (string order), as trec_eval; the
    libraries that break ties otherwise are given score = -rank in that order;
  - a negative grade is "pooled but unjudged": never relevant, no judgment, gain 0 (except
    gain := 'raw', where it counts as given).
"""

from __future__ import annotations

import functools
import itertools
import math
import os
import random
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from helpers import ranx

Rows = list[tuple]
Values = dict[str, float | None]

# ----------------------------------------------------------------------------- data

QUERY_IDS = ["1", "2", "9", "10", "q", "Q", "11"]
DOC_IDS = ["1", "2", "3", "9", "10", "11", "100", "a", "B", "b"]
TIED_SCORES = [-1.0, 0.0, 0.5, 1.0, 1.0, 2.0, 3.25]  # exact in float32, as pytrec_eval stores scores
GRADES = [-1, 0, 0, 1, 1, 2, 3]
RUN_SIZES = [1, 1, 2, 3, 5, 10]


def gen_case(rnd: random.Random, *, scores: list[float] | None = TIED_SCORES, grades: list[int] = GRADES,
             queries: list[str] = QUERY_IDS, docs: list[str] = DOC_IDS, run_sizes: list[int] = RUN_SIZES,
             pytrec_safe: bool = True) -> tuple[Rows, Rows]:
    """Hostile qrels rows (query_id, doc_id, grade) and run rows (query_id, doc_id, score): heavy
    ties (scores=None: distinct scores), ids whose string order is not their numeric order,
    graded and negative grades, relevant docs never retrieved, queries with no relevant doc,
    queries only in the run or only in the qrels, one-document runs (run_sizes: how many docs a
    query's run may hold). The first query is in both.
    pytrec_safe: every judged query keeps a grade >= 0 (pytrec_eval corrupts its memory on a query
    whose judgments are all negative); without it such queries occur."""
    qrels: Rows = []
    run: Rows = []
    for position, query in enumerate(queries):
        kind = "both" if position == 0 else rnd.choice(
            ["both", "both", "both", "no_relevant", "all_negative", "run_only", "qrels_only", "none"])
        if kind == "all_negative" and pytrec_safe:
            kind = "no_relevant"
        if kind in ("both", "no_relevant", "all_negative", "qrels_only"):
            pool = {"no_relevant": [g for g in grades if g <= 0] or [0],
                    "all_negative": [-1, -2]}.get(kind, grades)
            judged = [(query, doc, rnd.choice(pool)) for doc in rnd.sample(docs, rnd.randint(1, len(docs)))]
            if pytrec_safe and all(g < 0 for _, _, g in judged):
                judged[0] = (query, judged[0][1], 0)
            qrels += judged
        if kind in ("both", "no_relevant", "all_negative", "run_only"):
            ranked = rnd.sample(docs, min(rnd.choice(run_sizes), len(docs)))
            if scores is None:
                values = rnd.sample(range(1, 1000), len(ranked))
                run += [(query, doc, value / 8.0) for doc, value in zip(ranked, values)]
            else:
                run += [(query, doc, rnd.choice(scores)) for doc in ranked]
    return qrels, run


def log_of(qrels: Rows, run: Rows) -> Rows:
    """An impression log (query_id, doc_id, score, label) from a run and its qrels: the retrieved
    docs of the judged queries, an unjudged one labelled 0."""
    grades = {(q, d): g for q, d, g in qrels}
    judged_queries = {q for q, _, _ in qrels}
    return [(q, d, s, grades.get((q, d), 0)) for q, d, s in run if q in judged_queries]


# ----------------------------------------------------------------------------- shared helpers


def judgments(qrels: Rows) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, d, g in qrels:
        out.setdefault(q, {})[d] = g
    return out


def f_weight(options: dict[str, Any]) -> float:
    """F's weight of recall, beta^2: recall_weight as given, else beta squared."""
    return options["recall_weight"] if options.get("recall_weight") is not None else options["beta"] ** 2


def rankings(run: Rows, qrels: Rows) -> dict[str, list[tuple[str, float]]]:
    """Each scored query's (doc_id, score) in rank order: score descending, then doc_id
    descending as strings (trec_eval's tie rule, duckrank's ties := 'trec')."""
    judged = {q for q, _, _ in qrels}
    out: dict[str, list[tuple[str, float]]] = {}
    for q, d, s in run:
        if q in judged:
            out.setdefault(q, []).append((d, s))
    return {q: sorted(docs, key=lambda ds: (ds[1], ds[0]), reverse=True) for q, docs in out.items()}


def rank_scores(ranking: list[tuple[str, float]]) -> dict[str, float]:
    """Scores that order a ranking the same way under any tie rule: -rank."""
    return {d: -float(rank) for rank, (d, _) in enumerate(ranking, start=1)}


def only_nonrelevant_unjudged(options: dict[str, Any], oracle: str) -> None:
    if options.get("unjudged", "nonrelevant") != "nonrelevant":
        pytest.skip(f"{oracle} cannot express unjudged := {options['unjudged']!r} (trec_eval -J)")


def summary(values: dict[str, float | None]) -> dict[str, float | None]:
    return {"all": values["all"]} if values.get("all") is not None else {}


# ----------------------------------------------------------------------------- pytrec_eval
#
# trec_eval itself, in-process. A metric is asked for under its registry trec_eval spelling (the
# one whose fixed options and parameter express the options); a few option combinations trec_eval
# has no measure for are derived from trec_eval's own values by the metric's definition (F@k from
# P@k and R@k, RR@k from recip_rank, AP's other denominators from map_cut, hit@full depth from a
# cutoff beyond every run).

BEYOND_EVERY_RUN = 1000


def _trec_spelling(metric_name: str, options: dict[str, Any]) -> tuple[str, str] | None:
    """(measure to request, key pytrec_eval reports) of the registry trec_eval spelling that
    expresses these options, or None."""
    from duckrank.options import OPTIONS
    from duckrank.registry import METRICS

    metric = METRICS[metric_name]
    for spelling in metric.trec_eval:
        fixed = dict(spelling.fixed)
        parameter = None
        fits = True
        for name in metric.options:
            value = options[name]
            if name == spelling.parameter and name == "recall_levels":
                # pytrec_eval's trec_eval reads no levels (11pt_avg.L1,... is its 11pt_avg): the
                # default only; tests/test_trec_eval_binary.py compares other levels with trec_eval 10
                fits = fits and value == OPTIONS[name].default
            elif name == spelling.parameter and name != "gain_map":
                if value is None:
                    fits = False
                parameter = value
            elif name in fixed:
                fits = fits and value == fixed[name]
            else:
                fits = fits and value == OPTIONS[name].default
        if not fits:
            continue
        if parameter is None:
            return spelling.name, spelling.name
        if spelling.parameter == "k":
            return f"{spelling.name}.{int(parameter)}", f"{spelling.name}_{int(parameter)}"
        return f"{spelling.name}.{parameter}", f"{spelling.name}_{float(parameter):.2f}"
    return None


def _pytrec(qrels: Rows, run: Rows, measures: set[str], rel_level: float, judged_only: bool) -> dict[str, dict]:
    import pytrec_eval

    # Never a query whose judgments are all negative: trec_eval then corrupts pytrec_eval's memory
    # (later evaluations lose measures, hang or crash). gen_case(pytrec_safe=True) avoids them.
    by_query = judgments(qrels)
    assert all(any(g >= 0 for g in docs.values()) for docs in by_query.values()), \
        "pytrec_eval must not see a query whose judgments are all negative"
    assert max((sum(1 for r in run if r[0] == q) for q in {r[0] for r in run}), default=0) < BEYOND_EVERY_RUN
    run_dict: dict[str, dict[str, float]] = {}
    for q, d, s in run:
        run_dict.setdefault(q, {})[d] = float(s)
    qrel_dict = {q: {d: int(g) for d, g in docs.items()} for q, docs in by_query.items()}
    evaluator = pytrec_eval.RelevanceEvaluator(qrel_dict, measures, relevance_level=int(rel_level),
                                               judged_docs_only_flag=judged_only)
    return evaluator.evaluate(run_dict)


def iprec_rules_agree(level: float, num_rel: int, nothing_retrieved: bool = False) -> bool:
    """pytrec_eval embeds trec_eval 9's interpolated precision, whose cutoff is the first rank
    where recall >= r (ceil(r R) relevant docs); duckrank follows trec_eval 10, round(r R) half
    away from zero (README, Conventions). The two agree where they pick the same cutoff. With
    nothing retrieved (-J dropped every doc) a cutoff of 0 divides 0 by 0 (NaN) and any other
    gives 0, so there they agree where both cutoffs are 0 or neither is."""
    tenths = round(level * 10)
    ceil_rule = -(-tenths * num_rel // 10)
    round_rule = (tenths * num_rel * 2 + 10) // 20
    if nothing_retrieved:
        return (ceil_rule == 0) == (round_rule == 0)
    return max(ceil_rule, 1) == max(round_rule, 1)


def pytrec_eval_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    from duckrank.registry import METRICS

    unjudged = options.get("unjudged", "nonrelevant")
    if unjudged not in ("nonrelevant", "skip"):
        pytest.skip(f"trec_eval has no unjudged := {unjudged!r}")
    if options.get("gain") == "binary":
        # trec_eval's gain is the grade: binary gains are its nDCG of the grades read as 0/1 (1 from
        # rel_level up; a negative grade stays "pooled but unjudged"), at relevance level 1
        qrels = [(q, d, (1 if g >= rel_level else 0) if g >= 0 else g) for q, d, g in qrels]
        options, rel_level = {**options, "gain": "linear"}, 1
    k = options.get("k")
    derived: Callable[[dict[str, float]], float | None] | None = None
    requested = {"num_rel", "num_ret"}
    spelled = _trec_spelling(metric, options)
    if spelled is not None:
        measure, key = spelled
        requested.add(measure)
    elif metric == "f_measure" and k is None:
        # trec_eval's set_F.x computes (x + 1) P R / (x P + R): its parameter is beta squared.
        measure, key = f"set_F.{f_weight(options)}", "set_F"
        requested.add(measure)
    elif metric == "f_measure":
        beta2 = f_weight(options)
        requested |= {f"P.{k}", f"recall.{k}"}

        def derived(m: dict[str, float]) -> float:
            p, r = m[f"P_{k}"], m[f"recall_{k}"]
            return (1 + beta2) * p * r / (beta2 * p + r) if p + r > 0 else 0.0
    elif metric == "hit_rate" and k is None:
        measure, key = f"success.{BEYOND_EVERY_RUN}", f"success_{BEYOND_EVERY_RUN}"
        requested.add(measure)
    elif metric == "reciprocal_rank":
        requested.add("recip_rank")

        def derived(m: dict[str, float]) -> float:  # the first relevant rank is 1 / recip_rank
            rr = m["recip_rank"]
            return rr if rr > 0 and round(1 / rr) <= k else 0.0
    elif metric == "average_precision" and options["denominator"] in ("min", "hits"):
        # trec_eval's map / map_cut.k is the sum of P@i over the relevant ranks i <= k, over R
        cut = f"map_cut_{k}" if k is not None else "map"
        requested |= {cut.replace("_cut_", "_cut."), "num_rel_ret"} | ({f"P.{k}"} if k is not None else set())

        def derived(m: dict[str, float]) -> float:
            total = m[cut] * m["num_rel"]
            if options["denominator"] == "min":
                denominator = min(m["num_rel"], k if k is not None else m["num_rel"])
            else:  # the relevant docs in the top k
                denominator = round(m[f"P_{k}"] * k) if k is not None else m["num_rel_ret"]
            return total / denominator if denominator else 0.0
    else:
        pytest.skip(f"trec_eval has no measure for {metric} with {options}")

    if metric in ("interpolated_precision", "eleven_point_average"):
        levels = [options["recall"]] if metric == "interpolated_precision" else [t / 10 for t in range(11)]

        def derived(m: dict[str, float]) -> float | None:
            if not all(iprec_rules_agree(level, int(m["num_rel"]), m["num_ret"] == 0) for level in levels):
                return None  # the two trec_eval versions' cutoffs differ for this R (see above)
            return m[key]

    results = _pytrec(qrels, run, requested, rel_level, unjudged == "skip")
    values = {q: derived(m) if derived is not None else m[key] for q, m in results.items()}
    if not METRICS[metric].per_query:
        import pytrec_eval

        return summary({"all": pytrec_eval.compute_aggregated_measure(key, [v for v in values.values()])})
    return values


# ----------------------------------------------------------------------------- ranx
#
# ranx in its worker process (tests/helpers.py: numba's JIT off, its kernels as plain Python, no
# minute of compilation), on the oracle's own qrels and run as given.


def _ranx(qrels: dict, run: dict, metric: str) -> dict[str, float]:
    return ranx(qrels, run, [metric], make_comparable=False)[metric]["scores"]


def ranx_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    only_nonrelevant_unjudged(options, "ranx")
    ranked = rankings(run, qrels)
    by_query = judgments(qrels)
    k = options.get("k")
    if metric == "dcg":
        # ranx's dcg is Jarvelin's (gain = grade) and dcg_burges Burges' (2^grade - 1); both count
        # only grades >= 1 (ranx's default level), so a negative grade gains 0 as duckrank's linear
        # and exp gains make it. The ranking is the same whatever the rel_level.
        if options.get("gain_map"):
            pytest.skip("ranx has no gain map")
        if options["gain"] == "raw":
            pytest.skip("ranx drops grades below 1 from DCG: it cannot count negative raw gains")
        name = {"linear": "dcg", "binary": "dcg", "exp": "dcg_burges"}[options["gain"]]
        name += f"@{k}" if k is not None else ""
        if options["gain"] == "binary":  # ranx's dcg of grades 0/1: rel(d) = grade >= rel_level
            ranx_qrels = {q: {d: int(g >= 0 and g >= rel_level) for d, g in by_query[q].items()} for q in ranked}
        else:
            ranx_qrels = {q: {d: max(int(g), 0) for d, g in by_query[q].items()} for q in ranked}
        ranx_run = {q: rank_scores(docs) for q, docs in ranked.items()}
    elif metric == "rbp":
        # ranx's RBP weighs a relevant doc (grade >= its -lN level) by its grade: duckrank's graded,
        # unscaled RBP. Binary RBP (graded=False, Moffat & Zobel): ranx is given rel(d) = grade >=
        # rel_level (a negative grade is never relevant). Graded RBP (trec_eval 10) weighs by grade /
        # max(1, the query's top grade), whatever the level: ranx is given the grades (negatives 0) at
        # level 1 and its value, linear in the weights, is divided by that scale below. ranx's RBP
        # has no cutoff: RBP@k is the RBP of the ranking cut at k.
        name = f"rbp.{repr(float(options['p']))[2:]}"
        assert float("0." + name[4:]) == options["p"]
        scaled = options["graded"] and options["scaled"]
        if options["graded"]:
            ranx_qrels = {q: {d: max(int(g), 0) for d, g in by_query[q].items()} for q in ranked}
            if not scaled:
                if not float(rel_level).is_integer():
                    pytest.skip("ranx's relevance level is a whole number")
                name += f"-l{int(rel_level)}"
        else:
            ranx_qrels = {q: {d: int(g >= 0 and g >= rel_level) for d, g in by_query[q].items()} for q in ranked}
        ranx_run = {q: rank_scores(docs[:k] if k is not None else docs) for q, docs in ranked.items()}
        values = dict(_ranx(ranx_qrels, ranx_run, name))
        if scaled:
            values = {q: v / max(1, *by_query[q].values()) for q, v in values.items()}
        return values
    elif metric == "ranx_bpref":
        # ranx's own bpref, given every judgment as it is (a negative grade is judged non-relevant to
        # it). A query without a relevant doc: ranx's numba kernel gives 0 (ranx.evaluate with the JIT
        # on), the plain Python this worker runs divides 0 by 0; its value is taken as the kernel's.
        if not float(rel_level).is_integer():
            pytest.skip("ranx's relevance level is a whole number")
        name = f"bpref-l{int(rel_level)}"
        ranx_qrels = {q: {d: int(g) for d, g in by_query[q].items()} for q in ranked}
        ranx_run = {q: rank_scores(docs) for q, docs in ranked.items()}
        values = _ranx(ranx_qrels, ranx_run, name)
        return {q: 0.0 if not any(g >= rel_level for g in by_query[q].values()) else v for q, v in values.items()}
    elif metric == "hits":  # ranx's hits@k: the relevant docs (grade >= its -lN level) in the top k
        if not float(rel_level).is_integer():
            pytest.skip("ranx's relevance level is a whole number")
        name = ("hits" + (f"@{k}" if k is not None else "")) + f"-l{int(rel_level)}"
        ranx_qrels = {q: {d: max(int(g), 0) for d, g in by_query[q].items()} for q in ranked}
        ranx_run = {q: rank_scores(docs) for q, docs in ranked.items()}
    else:
        raise ValueError(f"no ranx mapping for metric {metric!r}: add one to tests/oracles.py")
    return dict(_ranx(ranx_qrels, ranx_run, name))


# ----------------------------------------------------------------------------- scikit-learn


def sklearn_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    from sklearn.metrics import mean_absolute_error, mean_squared_error, roc_auc_score

    only_nonrelevant_unjudged(options, "scikit-learn")
    if metric == "global_auc":  # over every row of the log, ignoring the query
        labels = {(q, d): label for q, d, label in qrels}
        rows = [(s, labels[q, d] >= rel_level) for q, d, s in run]
        classes = {positive for _, positive in rows}
        if len(classes) < 2:
            return {}  # undefined with one class (roc_auc_score raises)
        return {"all": float(roc_auc_score([p for _, p in rows], [s for s, _ in rows]))}
    if metric in ("mae", "rmse"):
        # The score read as a predicted grade, per query, over the retrieved docs that have a
        # judgment: a negative grade is "pooled but unjudged", no judgment (README, Conventions).
        by_query = judgments(qrels)
        out: Values = {}
        for q, ranking in rankings(run, qrels).items():
            pairs = [(by_query[q][d], s) for d, s in ranking if by_query[q].get(d, -1) >= 0]
            if not pairs:
                continue  # no judged doc retrieved: no value
            truth, predicted = [g for g, _ in pairs], [s for _, s in pairs]
            out[q] = (float(mean_absolute_error(truth, predicted)) if metric == "mae"
                      else math.sqrt(mean_squared_error(truth, predicted)))
        return out
    raise ValueError(f"no scikit-learn mapping for metric {metric!r}: add one to tests/oracles.py")


# ----------------------------------------------------------------------------- ir_measures


# The C/W/L family through ir_measures' cwl_eval provider (cwl_eval's metric classes), with its
# measure names and parameters; a cutoff it requires but duckrank leaves out (NULL) is cwl_eval's depth.
CWL_MEASURES = {"bpm": "BPM", "sdcg": "SDCG", "inst": "INST", "insq": "INSQ", "nerr8": "NERR8", "nerr9": "NERR9",
                "nerr10": "NERR10", "nerr11": "NERR11"}
CWL_DEPTH = 1000


def cwl_measure(metric: str, options: dict[str, Any]):
    """The ir_measures measure of a C/W/L metric with duckrank's options (ir_measures' own names:
    T, p, cutoff; min_rel and max_rel integers, T and p floats, as it requires)."""
    import ir_measures

    params: dict[str, Any] = {"min_rel": int(options["min_rel"]), "max_rel": int(options["max_rel"])}
    assert params["min_rel"] == options["min_rel"] and params["max_rel"] == options["max_rel"], options
    if "t" in options:
        params["T"] = float(options["t"])
    if "phi" in options:
        params["p"] = float(options["phi"])
    if "k" in options:
        params["cutoff"] = options["k"] if options["k"] is not None else CWL_DEPTH
    return ir_measures.parse_measure(CWL_MEASURES[metric])(**params)


def ir_measures_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    import ir_measures

    only_nonrelevant_unjudged(options, "ir_measures")
    if metric == "num_run_queries":  # NumQ: 1 for each query of the run (and the qrels)
        ranked = rankings(run, qrels)
        return {m.query_id: float(m.value) for m in ir_measures.iter_calc(
            [ir_measures.NumQ], [ir_measures.Qrel(q, d, int(g)) for q, d, g in qrels if q in ranked],
            {q: rank_scores(docs) for q, docs in ranked.items()})}
    if metric in CWL_MEASURES:
        # the grades as given (cwl_eval reads a negative one as 0); ties broken in duckrank's order
        # by score = -rank (ir_measures keeps the run's order within a tie); the queries duckrank scores
        ranked = rankings(run, qrels)
        scores = {q: rank_scores(docs) for q, docs in ranked.items()}
        judged = [ir_measures.Qrel(q, d, int(g)) for q, d, g in qrels]
        return {m.query_id: float(m.value) for m in ir_measures.cwl_eval.iter_calc([cwl_measure(metric, options)], judged, scores)
                if m.query_id in ranked}
    if metric == "cwl_rbp":  # ir_measures' RBP(rel=N): cwl_eval's binary RBP at the relevance level
        ranked = rankings(run, qrels)
        scores = {q: rank_scores(docs) for q, docs in ranked.items()}
        judged = [ir_measures.Qrel(q, d, int(g)) for q, d, g in qrels]
        measure = ir_measures.RBP(rel=int(rel_level), p=float(options["p"]))
        return {m.query_id: float(m.value) for m in ir_measures.cwl_eval.iter_calc([measure], judged, scores)
                if m.query_id in ranked}
    if metric == "compat":
        # ir_measures orders the ranking's ties by doc_id ascending and a grade of its ideal ranking by
        # run score (a doc it did not retrieve counting 0): it is given positive scores in duckrank's order
        ranked = rankings(run, qrels)
        scores = {q: {d: float(len(docs) - rank) for rank, (d, _) in enumerate(docs)} for q, docs in ranked.items()}
        judged = [ir_measures.Qrel(q, d, int(g)) for q, d, g in qrels]
        measure = ir_measures.Compat(p=float(options["persistence"]), normalize=options["normalize"])
        return {m.query_id: float(m.value) for m in ir_measures.compat.iter_calc([measure], judged, scores)
                if m.query_id in ranked}
    if metric != "judged":
        raise ValueError(f"no ir_measures mapping for metric {metric!r}: add one to tests/oracles.py")
    # ir_measures' Judged counts any qrels entry as a judgment; in duckrank a negative grade is
    # "pooled but unjudged", so those rows are left out. A query judged only negatively stays a
    # judged query (scored, Judged = 0): it keeps a placeholder judgment of a doc no run retrieves.
    # ir_measures breaks ties by doc_id ascending: it is given score = -rank in duckrank's order.
    ranked = rankings(run, qrels)
    kept = [ir_measures.Qrel(q, d, int(g)) for q, d, g in qrels if g >= 0 and q in ranked]
    kept += [ir_measures.Qrel(q, "\x00never retrieved", 0) for q in ranked if not any(x.query_id == q for x in kept)]
    k = options.get("k")
    measure = ir_measures.Judged @ k if k is not None else ir_measures.Judged
    scores = {q: rank_scores(docs) for q, docs in ranked.items()}
    return {m.query_id: float(m.value) for m in ir_measures.iter_calc([measure], kept, scores)}


# ----------------------------------------------------------------------------- Microsoft Recommenders
#
# recommenders.evaluation.python_evaluation (1.2.1), called per user: one user's truth and
# predictions at a time, so its mean over users is that user's value. It counts every row of
# rating_true as relevant: it is given the docs duckrank counts relevant (grade >= rel_level, never a
# negative grade), and a query with none has no truth rows there, so no value. Its top k is pandas'
# sort, whose tie order is its own: it is given score = -rank in duckrank's order.

RECOMMENDERS_FULL_DEPTH = 10**6


def recommenders_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    import pandas as pd
    from recommenders.evaluation import python_evaluation

    only_nonrelevant_unjudged(options, "Microsoft Recommenders")
    if metric != "recommenders_r_precision":
        raise ValueError(f"no Microsoft Recommenders mapping for metric {metric!r}: add one to tests/oracles.py")
    k = options["k"] if options["k"] is not None else RECOMMENDERS_FULL_DEPTH
    by_query = judgments(qrels)
    out: Values = {}
    for q, ranking in rankings(run, qrels).items():
        relevant = [d for d, g in by_query[q].items() if g >= 0 and g >= rel_level]
        if not relevant:
            continue
        truth = pd.DataFrame({"userID": q, "itemID": relevant, "rating": 1.0})
        predicted = pd.DataFrame({"userID": q, "itemID": [d for d, _ in ranking],
                                  "prediction": [-float(rank) for rank in range(1, len(ranking) + 1)]})
        value = float(python_evaluation.r_precision_at_k(truth, predicted, k=k))
        # 0.0 (no hit in the top k) or NaN (hits, none within R): the user leaves MS's mean
        if value > 0:
            out[q] = value
    return out


# ----------------------------------------------------------------------------- formulas
#
# Written from the definitions in README.md ("Metric reference"), over the trec_eval ranking.


def _gain(grade: float | None, gain: str, rel_level: float) -> float:
    """The gain of a grade (README: linear, negatives 0; exp 2^g - 1; raw, negatives count; binary 1
    for a relevant grade, >= rel_level, else 0). An unjudged doc gains 0; a negative grade is
    "pooled but unjudged" and gains 0 except under raw."""
    if grade is None:
        return 0.0
    if gain == "raw":
        return float(grade)
    if grade < 0:
        return 0.0
    if gain == "binary":
        return 1.0 if grade >= rel_level else 0.0
    return 2.0 ** grade - 1 if gain == "exp" else float(grade)


def _dcg(gains: list[float], k: int | None) -> float:
    return sum(g / math.log2(i + 1) for i, g in enumerate(gains[:k] if k is not None else gains, start=1))


def pair_auc(scores: list[float], positive: list[bool]) -> float | None:
    """Share of (positive, negative) pairs the scores order correctly, a tie counting 1/2."""
    pos = [s for s, p in zip(scores, positive) if p]
    neg = [s for s, p in zip(scores, positive) if not p]
    if not pos or not neg:
        return None
    wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in itertools.product(pos, neg))
    return wins / (len(pos) * len(neg))


def formula_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    only_nonrelevant_unjudged(options, "the formula")
    if options.get("gain_map"):
        pytest.skip("the formulas take no gain map")
    by_query = judgments(qrels)
    ranked = rankings(run, qrels)
    k = options.get("k")
    out: Values = {}
    if metric == "gauc":
        # GAUC: each query's AUC (over its log rows, label >= rel_level positive), averaged with
        # weights impressions (its rows) or positives; queries without both classes left out.
        labels = {(q, d): label for q, d, label in qrels}
        weighted = []
        for q in sorted({q for q, _, _ in run}):
            rows = [(s, labels[q, d] >= rel_level) for q2, d, s in run if q2 == q]
            auc = pair_auc([s for s, _ in rows], [p for _, p in rows])
            if auc is not None:
                weight = len(rows) if options["weight"] == "impressions" else sum(p for _, p in rows)
                weighted.append((auc, weight))
        if not weighted:
            return {}
        return {"all": sum(a * w for a, w in weighted) / sum(w for _, w in weighted)}
    for q, ranking in ranked.items():
        grades = [by_query[q].get(d) for d, _ in ranking]
        top = ranking[:k] if k is not None else ranking
        if metric == "cg":  # CG@k = sum of the gains in the top k
            out[q] = sum(_gain(g, options["gain"], rel_level) for g in grades[:len(top)])
        elif metric == "idcg":
            # DCG@k of the ideal ordering: the best DCG@k any ordering of the judged docs (ideal :=
            # qrels) or of the retrieved docs (ideal := run) reaches: the positive gains, largest first
            # (a doc of gain <= 0 never raises DCG, so the ideal ordering places none).
            pool = by_query[q].values() if options["ideal"] == "qrels" else grades
            gains = sorted((g for g in (_gain(x, options["gain"], rel_level) for x in pool) if g > 0), reverse=True)
            out[q] = _dcg(gains, k)
        elif metric == "err":
            # Chapelle et al. 2009: the user stops at rank r with probability
            # R_r = (2^g - 1) / 2^g_max (unjudged and negative grades 0, grades above g_max clipped);
            # ERR@k = sum over r <= k of (1/r) R_r prod_{i<r} (1 - R_i). g_max defaults to the
            # largest grade in the qrels (of every query).
            g_max = options["g_max"] if options["g_max"] is not None else max(0, max(g for _, _, g in qrels))
            reach, value = 1.0, 0.0
            for r, g in enumerate(grades[:len(top)], start=1):
                stop = (2.0 ** min(max(g or 0, 0), g_max) - 1) / 2.0 ** g_max
                value += reach * stop / r
                reach *= 1 - stop
            out[q] = value
        elif metric == "rbp_residual":
            # RBP's residual over the evaluated depth d = min(k, retrieved): p^d + (1 - p) times
            # the sum of p^(i-1) over the unjudged docs at ranks i <= d (a negative grade is unjudged).
            # As trec_eval 10 (m_rbp_resid.c): 0 when no doc within d is unjudged.
            p, depth = options["p"], len(top)
            unjudged = [i for i, g in enumerate(grades[:depth], start=1) if g is None or g < 0]
            out[q] = p ** depth + (1 - p) * sum(p ** (i - 1) for i in unjudged) if unjudged else 0.0
        elif metric == "auc":
            # per query over the retrieved docs: relevant (grade >= rel_level) positive, every other
            # retrieved doc (non-relevant, negative, unjudged) negative; ties count 1/2
            auc = pair_auc([s for _, s in ranking], [g is not None and g >= 0 and g >= rel_level for g in grades])
            if auc is not None:
                out[q] = auc
        else:
            raise ValueError(f"no formula for metric {metric!r}: add one to tests/oracles.py")
    return out


# ----------------------------------------------------------------------------- trec_eval 10
#
# NIST trec_eval 10 itself, the binary ../shared/tools/trec_eval/build.sh builds (tests/trec_eval_binary.py),
# for the measures pytrec_eval's trec_eval 9 lacks. The binary prints every value with "%6.4f", too coarse
# for a 1e-9 comparison, so the oracle runs a second build of the same sources whose per-query lines print
# "%.17g" (meas_print_single.c, nothing else changed): the same computation, every digit shown. The qrels and
# run go to TREC text files (string ids, scores written exactly), restricted to the queries in both (this
# trec_eval exits on a qrels query missing from the run); `-q -m <measure>` plus -l, -J and -N as the options
# ask, and the per-query lines are parsed. A query whose judgments are all negative makes trec_eval fail
# (form_res_rels finds no grade >= 0): such a query is given a grade-0 judgment of a doc no run retrieves,
# which changes none of the measures asked of this oracle (R, the ideal ranking, the retrieved docs'
# grades and the pool of retrieved docs stay as they were).

NEVER_RETRIEVED = "never-retrieved-placeholder"
BEYOND_EVERY_UNJ = 1000


def _source_hash(src: Any) -> str:
    import hashlib

    digest = hashlib.sha256()
    for path in sorted([src / "Makefile", *src.glob("*.c"), *src.glob("*.h")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def precise_trec_eval() -> Any:
    """The path of trec_eval 10 built to print per-query values with every digit (built once, cached beside
    the reference binary); skips when ../shared is absent, fails when it cannot be built."""
    import shutil
    import tempfile
    from pathlib import Path

    from trec_eval_binary import BUILD_SH, require_trec_eval

    reference = require_trec_eval()
    src = BUILD_SH.parent / "src"
    binary = Path(reference).parent / f"precise-{_source_hash(src)}" / "trec_eval"
    if not binary.is_file():
        binary.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=binary.parent) as build:
            for path in [src / "Makefile", *src.glob("*.c"), *src.glob("*.h")]:
                shutil.copy(path, build)
            printer = Path(build) / "meas_print_single.c"
            text = printer.read_text()
            assert "%6.4f" in text, "trec_eval's per-query format changed: update tests/oracles.py"
            printer.write_text(text.replace("%6.4f", "%.17g"))
            done = subprocess.run(["make", "-C", build, "trec_eval", f"CC={os.environ.get('CC', 'gcc')}"],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                pytest.fail(f"building the full-precision trec_eval failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")
            os.replace(Path(build) / "trec_eval", binary)
    return binary


def _trec_eval_gains(options: dict[str, Any], qrels: Rows, rel_level: float) -> str:
    """trec_eval's gain parameter (`.1=3,2=9`) for duckrank's gain and gain_map options, "" for the
    default (gain = grade); skips what trec_eval cannot express."""
    if options.get("gain") == "raw":
        pytest.skip("trec_eval gives a negative grade no gain: it cannot express gain := 'raw'")
    gains: dict[int, float] = {}
    if options.get("gain") == "exp":
        gains = {int(g): 2.0 ** int(g) - 1 for _, _, g in qrels if g >= 0}
    if options.get("gain") == "binary":  # every grade in the qrels: 1 from rel_level up, else 0
        gains = {int(g): 1.0 if g >= rel_level else 0.0 for _, _, g in qrels if g >= 0}
    for grade, gain in (options.get("gain_map") or {}).items():
        if float(grade) < 0 or not float(grade).is_integer():
            pytest.skip("trec_eval's gain levels are whole grades >= 0")
        gains[int(grade)] = float(gain)
    return "." + ",".join(f"{grade}={gain!r}" for grade, gain in sorted(gains.items())) if gains else ""


def trec_eval_oracle(metric: str, options: dict[str, Any], qrels: Rows, run: Rows, rel_level: float) -> Values:
    import tempfile
    from pathlib import Path

    unjudged = options.get("unjudged", "nonrelevant")
    if unjudged not in ("nonrelevant", "skip"):
        pytest.skip(f"trec_eval has no unjudged := {unjudged!r}")
    if not float(rel_level).is_integer():
        pytest.skip("trec_eval's -l is a whole number")
    arguments: list[str] = []
    derived: Callable[[dict[str, float]], float] | None = None
    if metric == "set_average_precision":
        measure = "set_map"
    elif metric == "unjudged_fraction":
        k = options["k"]
        if k is not None:
            measure = f"unj.{int(k)}"
        else:  # unj divides by its cutoff, duckrank's full depth by the number retrieved
            measure = f"unj.{BEYOND_EVERY_UNJ}"
            arguments += ["-m", "num_ret"]

            def derived(m: dict[str, float]) -> float:
                return m[f"unj_{BEYOND_EVERY_UNJ}"] * BEYOND_EVERY_UNJ / m["num_ret"] if m["num_ret"] else 0.0
    elif metric == "utility":
        weights = [options[name] for name in ("retrieved_relevant", "retrieved_nonrelevant", "missed_relevant",
                                              "missed_nonrelevant")]
        measure = "utility." + ",".join(repr(float(w)) for w in weights)
        arguments += ["-N", str(int(options["collection_size"]))]
    elif metric == "relevance_string":  # text: the top k docs' judgments
        measure = f"relstring.{int(options['k']) if options['k'] is not None else BEYOND_EVERY_UNJ}"
    elif metric == "binary_normalized_gain":
        measure = "binG"
    elif metric == "inferred_average_precision":
        measure = "infAP"
    elif metric in ("normalized_gain", "ndcg_rel", "r_ndcg"):
        measure = {"normalized_gain": "G", "ndcg_rel": "ndcg_rel", "r_ndcg": "Rndcg"}[metric]
        measure += _trec_eval_gains(options, qrels, rel_level)
    else:
        raise ValueError(f"no trec_eval mapping for metric {metric!r}: add one to tests/oracles.py")
    binary = precise_trec_eval()
    both = {q for q, _, _ in qrels} & {q for q, _, _ in run}
    by_query = judgments([row for row in qrels if row[0] in both])
    for query, docs in by_query.items():
        if all(g < 0 for g in docs.values()):
            assert NEVER_RETRIEVED not in docs and all(d != NEVER_RETRIEVED for _, d, _ in run)
            docs[NEVER_RETRIEVED] = 0
    with tempfile.TemporaryDirectory() as tmp:
        qrels_path, run_path = Path(tmp) / "qrels", Path(tmp) / "run"
        qrels_path.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, docs in by_query.items() for d, g in docs.items()))
        run_path.write_text("".join(f"{q} Q0 {d} {rank} {float(s)!r} oracle\n"
                                    for rank, (q, d, s) in enumerate(r for r in run if r[0] in both)))
        command = [str(binary), "-q", "-l", str(int(rel_level)), *(["-J"] if unjudged == "skip" else []),
                   "-m", measure, *arguments, str(qrels_path), str(run_path)]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}: {done.stderr}")
    per_query: dict[str, dict[str, float]] = {}
    for line in done.stdout.splitlines():
        name, query, value = line.split("\t")
        if query != "all":
            per_query.setdefault(query, {})[name.strip()] = value[1:-1] if value.startswith("'") else float(value)
    printed = measure.split(".")[0] if metric != "unjudged_fraction" else measure.replace(".", "_")
    out: Values = {}
    for query, measures in per_query.items():
        if derived is not None:
            out[query] = derived(measures)
        else:
            (value,) = [v for name, v in measures.items() if name == printed or name.startswith(printed + "_")]
            out[query] = value
    return out


ORACLES: dict[str, Callable[[str, dict[str, Any], Rows, Rows, float], Values]] = {
    "pytrec_eval": pytrec_eval_oracle,
    "ranx": ranx_oracle,
    "sklearn": sklearn_oracle,
    "ir_measures": ir_measures_oracle,
    "formula": formula_oracle,
    "trec_eval": trec_eval_oracle,
    "recommenders": recommenders_oracle,
}

# The oracles that can express trec_eval's judged_docs_only (duckrank's unjudged := 'skip').
SUPPORTS_UNJUDGED_SKIP = {"pytrec_eval", "trec_eval"}
