"""The benchmark's contenders, one subcommand each; bench/run.py starts each as its own process.

    python bench/contenders.py pytrec_eval QRELS RUN
    python bench/contenders.py ranx QRELS RUN           # NUMBA_CACHE_DIR picks a cold or warm cache
    python bench/contenders.py ranx QRELS RUN --untie=1 # ties pre-broken in trec_eval's order (diagnostic)
    python bench/contenders.py floor QRELS RUN
    python bench/contenders.py sklearn_auc LOG
    python bench/contenders.py numpy_gauc LOG            # vectorised rank sums: a GAUC oracle
    python bench/contenders.py duckrank_twice QRELS RUN  # duckrank.evaluate twice in one fresh process
    python bench/contenders.py pytrec_eval_text QRELS.txt RUN.txt   # TREC text, pytrec_eval's own parsers
    python bench/contenders.py s5k_duckrank QRELS RUN    # S5K: in-process calls on pandas DataFrames
    python bench/contenders.py s5k_pytrec_eval QRELS RUN
    python bench/contenders.py s5k_duckdb QRELS RUN      # S5K: a hand-written DuckDB query
    python bench/contenders.py s5k_sweep_duckrank QRELS SWEEP       # 100 runs in one call
    python bench/contenders.py s5k_sweep_pytrec_eval QRELS SWEEP    # 100 runs, one evaluate each

Each prints one JSON object on stdout: {"values": {measure: mean}, "phases": {phase: seconds}}.
Measures use trec_eval's printed names (map, P_5, ..., success_10) so they compare directly with
`duckrank eval --format json`. Imports happen inside the commands: their cost is part of the
end-to-end time, as it is for the duckrank CLI. The s5k_* commands stand for a notebook loop: they
read their Parquet files into pandas first (phase "read", not part of any target), then time
calls on the DataFrames; "first_call" is the first, "warm_median" the median of the calls after it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

# The trec_eval standard set of the benchmark, as each tool spells it.
TREC_MEASURES = ["map", "P_5", "P_10", "P_20", "recall_100", "recall_1000", "ndcg", "ndcg_cut_10",
                 "recip_rank", "Rprec", "bpref", "success_10"]
DUCKRANK_MEASURES = ["map", "P.5", "P.10", "P.20", "recall.100", "recall.1000", "ndcg", "ndcg_cut.10",
                     "recip_rank", "Rprec", "bpref", "success.10"]
PYTREC_MEASURES = {"map", "P.5,10,20", "recall.100,1000", "ndcg", "ndcg_cut.10", "recip_rank", "Rprec",
                   "bpref", "success.10"}
RANX_MEASURES = {"map": "map", "precision@5": "P_5", "precision@10": "P_10", "precision@20": "P_20",
                 "recall@100": "recall_100", "recall@1000": "recall_1000", "ndcg": "ndcg",
                 "ndcg@10": "ndcg_cut_10", "mrr": "recip_rank", "r-precision": "Rprec", "bpref": "bpref",
                 "hit_rate@10": "success_10"}
# S5K's measures: duckrank's spelling -> trec_eval's printed name; pytrec_eval's spelling
S5K_MEASURES = {"ndcg@10": "ndcg_cut_10", "map": "map", "recip_rank": "recip_rank", "P@10": "P_10"}
S5K_PYTREC_MEASURES = {"ndcg_cut.10", "map", "recip_rank", "P.10"}
WARM_CALLS = 50  # S5K: calls after the first, per single-run contender
SWEEP_CALLS = 5  # S5K: sweeps (100 runs each) after the first

_START = time.perf_counter()


class Phases:
    """Wall time of each named phase, measured inside the process."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()
        self.seconds["startup"] = self._last - _START

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._last
        self._last = now


def emit(values: dict, phases: Phases, **extra) -> None:
    # microseconds: S5K's calls take milliseconds
    print(json.dumps({"values": values, "phases": {k: round(v, 6) for k, v in phases.seconds.items()}, **extra}))


# ---------------------------------------------------------------------------------------------
# pytrec_eval (pytrec-eval-terrier): read Parquet with pyarrow, build its dicts, evaluate, average


def _grouped(table, key: str, value_columns: list[str]):
    """{key: {doc: value}} from an Arrow table, grouping with numpy rather than a Python row loop."""
    import numpy as np
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(table.column(key)).combine_chunks()
    codes = encoded.indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(encoded.dictionary)))])
    names = encoded.dictionary.to_pylist()
    docs = table.column(value_columns[0]).take(order).to_pylist()
    values = table.column(value_columns[1]).to_numpy()[order].tolist()
    return {names[i]: dict(zip(docs[bounds[i]:bounds[i + 1]], values[bounds[i]:bounds[i + 1]]))
            for i in range(len(names))}


def pytrec_eval_command(qrels_path: str, run_path: str) -> None:
    import pyarrow.parquet as pq
    import pytrec_eval

    phases = Phases()
    qrels_table = pq.read_table(qrels_path, columns=["query_id", "doc_id", "relevance"])
    run_table = pq.read_table(run_path, columns=["query_id", "doc_id", "score"])
    phases.mark("read")
    qrels = _grouped(qrels_table, "query_id", ["doc_id", "relevance"])
    run = _grouped(run_table, "query_id", ["doc_id", "score"])
    del qrels_table, run_table
    phases.mark("build")
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES)
    per_query = evaluator.evaluate(run)
    phases.mark("evaluate")
    # trec_eval's summary: the mean over the queries in both run and qrels (all of them here)
    values = {m: sum(q[m] for q in per_query.values()) / len(per_query) for m in TREC_MEASURES}
    phases.mark("mean")
    emit(values, phases, queries=len(per_query))


def pytrec_eval_text_command(qrels_path: str, run_path: str) -> None:
    """TREC text files read by pytrec_eval's own parsers (parse_qrel / parse_run), evaluate, mean."""
    import pytrec_eval

    phases = Phases()
    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
    phases.mark("read")
    per_query = pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)
    phases.mark("evaluate")
    values = {m: sum(q[m] for q in per_query.values()) / len(per_query) for m in TREC_MEASURES}
    phases.mark("mean")
    emit(values, phases, queries=len(per_query))


# ---------------------------------------------------------------------------------------------
# ranx: read Parquet with pandas, Qrels/Run.from_df, evaluate (numba; NUMBA_CACHE_DIR decides
# whether its compiled functions come from a cold or a warm on-disk cache)


def ranx_command(qrels_path: str, run_path: str, untie: str = "") -> None:
    import pandas as pd
    from ranx import Qrels, Run, evaluate

    phases = Phases()
    phases.mark("import")
    qrels_df = pd.read_parquet(qrels_path, columns=["query_id", "doc_id", "relevance"])
    run_df = pd.read_parquet(run_path, columns=["query_id", "doc_id", "score"])
    # ranx asserts object (Python str) id columns and int64 grades; pandas 3 reads strings as str
    qrels_df = qrels_df.astype({"query_id": object, "doc_id": object, "relevance": "int64"})
    run_df = run_df.astype({"query_id": object, "doc_id": object, "score": "float64"})
    if untie:  # diagnostic only: replace scores by trec_eval's order (score desc, doc_id desc)
        run_df = run_df.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False])
        run_df["score"] = -run_df.groupby("query_id").cumcount().astype("float64")
    phases.mark("read")
    qrels = Qrels.from_df(qrels_df, q_id_col="query_id", doc_id_col="doc_id", score_col="relevance")
    run = Run.from_df(run_df, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    del qrels_df, run_df
    phases.mark("from_df")
    scores = evaluate(qrels, run, list(RANX_MEASURES))
    phases.mark("evaluate")
    values = {RANX_MEASURES[k]: float(v) for k, v in scores.items()}
    evaluate(qrels, run, list(RANX_MEASURES))  # the same call again, all compiled and loaded
    phases.mark("evaluate_again")
    emit(values, phases, queries=len(run.keys()))


# ---------------------------------------------------------------------------------------------
# the floor: one row_number() OVER (PARTITION BY query ORDER BY score DESC, doc DESC) pass joined
# to the qrels, the least a correct implementation of any rank-based measure has to do


FLOOR_SQL = """
SELECT count(*) AS judged_retrieved, sum(r.rank * q.relevance) AS checksum
FROM (SELECT query_id, doc_id,
             row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rank
      FROM read_parquet(?)) r
JOIN read_parquet(?) q USING (query_id, doc_id)
"""


def floor_command(qrels_path: str, run_path: str, threads: int | None = None,
                  memory_limit: str | None = None) -> None:
    import duckdb

    phases = Phases()
    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}").fetchall()
    if memory_limit:
        con.execute("SET memory_limit = ?", [memory_limit]).fetchall()
    phases.mark("connect")
    rows, checksum = con.execute(FLOOR_SQL, [run_path, qrels_path]).fetchall()[0]
    phases.mark("query")
    emit({"judged_retrieved": rows, "checksum": checksum}, phases)


# ---------------------------------------------------------------------------------------------
# duckrank's Python API twice in one fresh process: the warm-up tax check


def duckrank_twice_command(qrels_path: str, run_path: str) -> None:
    phases = Phases()
    import duckrank

    phases.mark("import")
    first = duckrank.evaluate(qrels_path, run_path, DUCKRANK_MEASURES)
    phases.mark("first_evaluate")
    second = duckrank.evaluate(qrels_path, run_path, DUCKRANK_MEASURES)
    phases.mark("second_evaluate")
    names = dict(zip(DUCKRANK_MEASURES, TREC_MEASURES))
    # parallel sums may differ in the last bits between two runs; anything more is a bug
    assert all(abs(first[k] - second[k]) <= 1e-12 for k in first), (first, second)
    emit({names[k]: v for k, v in first.items()}, phases)


# ---------------------------------------------------------------------------------------------
# S5K: 50 queries x 100 docs held as pandas DataFrames, evaluated again and again in one process
# (a notebook loop). What counts is the time of a call, not the process's.


def _read_frames(*paths: str):
    import pandas as pd

    return [pd.read_parquet(path) for path in paths]


def _first_and_warm(phases: Phases, call, warm: int):
    """Time `call` once (phase first_call: the caller marks the phase before), then `warm` more
    times (phase warm_calls, their total; warm_median, their median); return the first result."""
    result = call()
    phases.mark("first_call")
    times = []
    for _ in range(warm):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    phases.mark("warm_calls")
    phases.seconds["warm_median"] = statistics.median(times)
    return result


def _pytrec_dict(frame, value: str) -> dict:
    """{query: {doc: value}} from a DataFrame by one zip over its columns as lists: the fastest
    way measured here (a groupby per query is about 3x slower at 50 queries)."""
    nested: dict = {}
    for query, doc, v in zip(frame["query_id"].tolist(), frame["doc_id"].tolist(), frame[value].tolist()):
        nested.setdefault(query, {})[doc] = v
    return nested


def _mean(per_query: dict) -> dict:
    return {m: sum(q[m] for q in per_query.values()) / len(per_query) for m in S5K_MEASURES.values()}


def s5k_duckrank_command(qrels_path: str, run_path: str) -> None:
    """`import duckdb` alone, then `import duckrank`, then duckrank.evaluate on the DataFrames
    (no con=: each call is on its own, as a user's would be)."""
    phases = Phases()
    qrels_df, run_df = _read_frames(qrels_path, run_path)
    phases.mark("read")
    # timed alone (the first call's budget is measured against it), after pandas as in a notebook
    import duckdb  # noqa: F401

    phases.mark("import_duckdb")
    import duckrank

    phases.mark("import_duckrank")
    first = _first_and_warm(phases, lambda: duckrank.evaluate(qrels_df, run_df, list(S5K_MEASURES)), WARM_CALLS)
    emit({S5K_MEASURES[k]: v for k, v in first.items()}, phases)


def s5k_pytrec_eval_command(qrels_path: str, run_path: str) -> None:
    """Per call what a pytrec_eval user does with two DataFrames: build its dicts, evaluate, mean."""
    phases = Phases()
    qrels_df, run_df = _read_frames(qrels_path, run_path)
    phases.mark("read")
    import pytrec_eval

    phases.mark("import")

    def call() -> dict:
        evaluator = pytrec_eval.RelevanceEvaluator(_pytrec_dict(qrels_df, "relevance"), S5K_PYTREC_MEASURES)
        return _mean(evaluator.evaluate(_pytrec_dict(run_df, "score")))

    emit(_first_and_warm(phases, call, WARM_CALLS), phases)


# The four S5K measures as trec_eval computes them, by hand: queries in both run and qrels; rank
# by score desc, then doc_id desc; relevant = grade >= 1; gain = the grade (negatives 0) over
# log2(rank + 1); IDCG@10 from the query's qrels grades; AP over the query's relevant docs in the
# qrels; P@10 over 10 even when fewer docs are retrieved; 0 where a denominator is 0.
S5K_SQL = """
WITH ranked AS (
    SELECT run.query_id, coalesce(qrels.relevance, 0) AS grade,
           row_number() OVER (PARTITION BY run.query_id ORDER BY run.score DESC, run.doc_id DESC) AS rank
    FROM run LEFT JOIN qrels USING (query_id, doc_id)
    WHERE run.query_id IN (SELECT query_id FROM qrels)
),
ideal AS (
    SELECT query_id, count(*) FILTER (WHERE relevance >= 1) AS relevant,
           sum(greatest(relevance, 0) / log2(position + 1)) FILTER (WHERE position <= 10) AS idcg10
    FROM (SELECT query_id, relevance,
                 row_number() OVER (PARTITION BY query_id ORDER BY relevance DESC) AS position
          FROM qrels)
    GROUP BY query_id
),
per_query AS (
    SELECT query_id,
           coalesce(sum(greatest(grade, 0) / log2(rank + 1)) FILTER (WHERE rank <= 10)
                    / nullif(any_value(idcg10), 0), 0) AS ndcg10,
           coalesce(sum(relevant_above / rank) FILTER (WHERE grade >= 1) / nullif(any_value(relevant), 0), 0) AS ap,
           coalesce(1 / min(rank) FILTER (WHERE grade >= 1), 0) AS rr,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 10) / 10 AS p10
    FROM (SELECT *, count(*) FILTER (WHERE grade >= 1) OVER (PARTITION BY query_id ORDER BY rank) AS relevant_above
          FROM ranked)
    JOIN ideal USING (query_id)
    GROUP BY query_id
)
SELECT avg(ndcg10), avg(ap), avg(rr), avg(p10) FROM per_query
"""


def s5k_duckdb_command(qrels_path: str, run_path: str) -> None:
    """S5K_SQL on one connection made once; each call registers the two DataFrames again (as
    duckrank gets them on every call) and runs the query."""
    phases = Phases()
    qrels_df, run_df = _read_frames(qrels_path, run_path)
    phases.mark("read")
    import duckdb

    phases.mark("import_duckdb")
    con = duckdb.connect()
    phases.mark("connect")

    def call() -> dict:
        con.register("qrels", qrels_df)
        con.register("run", run_df)
        return dict(zip(S5K_MEASURES.values(), con.execute(S5K_SQL).fetchall()[0]))

    emit(_first_and_warm(phases, call, WARM_CALLS), phases)


def _sweep_values(results: dict) -> dict:
    """{run: {measure: mean}} flattened to {"r007:map": mean}, comparable between the sweeps."""
    return {f"{run}:{measure}": v for run, means in results.items() for measure, v in means.items()}


def s5k_sweep_duckrank_command(qrels_path: str, sweep_path: str) -> None:
    """The 100 runs in one DataFrame with a run_id column, in one duckrank.evaluate call."""
    phases = Phases()
    qrels_df, sweep_df = _read_frames(qrels_path, sweep_path)
    phases.mark("read")
    import duckrank

    phases.mark("import")
    first = _first_and_warm(phases, lambda: duckrank.evaluate(qrels_df, sweep_df, list(S5K_MEASURES)), SWEEP_CALLS)
    emit(_sweep_values({run: {S5K_MEASURES[k]: v for k, v in means.items()} for run, means in first.items()}),
         phases, runs=len(first))


def s5k_sweep_pytrec_eval_command(qrels_path: str, sweep_path: str) -> None:
    """The 100 runs with pytrec_eval: one evaluator per sweep, then per run its dict, evaluate,
    mean. The runs are split into their own DataFrames before timing, as a sweep that makes one
    run at a time would hold them (the generous reading for pytrec_eval)."""
    phases = Phases()
    qrels_df, sweep_df = _read_frames(qrels_path, sweep_path)
    runs = {run: frame for run, frame in sweep_df.groupby("run_id", sort=True)}
    phases.mark("read")
    import pytrec_eval

    phases.mark("import")

    def call() -> dict:
        evaluator = pytrec_eval.RelevanceEvaluator(_pytrec_dict(qrels_df, "relevance"), S5K_PYTREC_MEASURES)
        return {run: _mean(evaluator.evaluate(_pytrec_dict(frame, "score"))) for run, frame in runs.items()}

    first = _first_and_warm(phases, call, SWEEP_CALLS)
    emit(_sweep_values(first), phases, runs=len(first))


# ---------------------------------------------------------------------------------------------
# scikit-learn: global AUC over a whole log (read with pyarrow, roc_auc_score); GAUC by a loop over
# users (an oracle for small logs: impression-weighted mean of per-user AUC, users with both classes)


def sklearn_auc_command(log_path: str, label: str = "click", score: str = "score") -> None:
    import pyarrow.parquet as pq
    from sklearn.metrics import roc_auc_score

    phases = Phases()
    phases.mark("import")
    table = pq.read_table(log_path, columns=[score, label])
    y_score = table.column(score).to_numpy()
    y_true = table.column(label).to_numpy()
    del table
    phases.mark("read")
    value = float(roc_auc_score(y_true, y_score))
    phases.mark("score")
    emit({"AUC_global": value}, phases)


def _rank_sum_auc(group, score, label):
    """Per-group AUC by rank sums with tied scores sharing their average rank (vectorised numpy).
    Returns (auc, impressions, positives) per group, NaN where a group lacks a class."""
    import numpy as np

    order = np.lexsort((score, group))
    g, s, y = group[order], score[order], label[order].astype(np.float64)
    n = len(g)
    index = np.arange(n)
    new_group = np.r_[True, g[1:] != g[:-1]]
    group_start = np.maximum.accumulate(np.where(new_group, index, 0))
    position = index - group_start + 1  # 1-based rank of the score within its group
    new_tie = new_group | np.r_[True, s[1:] != s[:-1]]
    tie = np.cumsum(new_tie) - 1
    tie_first = position[new_tie]
    tie_last = np.r_[position[np.r_[new_tie[1:], True]]]  # last position of each tie run
    average_rank = ((tie_first + tie_last) / 2.0)[tie]
    groups = np.cumsum(new_group) - 1
    size = np.bincount(groups).astype(np.float64)
    positives = np.bincount(groups, weights=y)
    rank_sum = np.bincount(groups, weights=average_rank * y)
    negatives = size - positives
    with np.errstate(invalid="ignore", divide="ignore"):
        auc = (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)
    return auc, size, positives


def numpy_gauc_command(log_path: str, label: str = "click", score: str = "score", user: str = "user_id") -> None:
    """An independent oracle for GAUC (impression-weighted mean of per-user AUC over users with
    both classes) and global AUC; its global AUC is checked against scikit-learn's here."""
    import numpy as np
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    phases = Phases()
    table = pq.read_table(log_path, columns=[user, score, label])
    codes = pc.dictionary_encode(table.column(user)).combine_chunks().indices.to_numpy(zero_copy_only=False)
    y_score = table.column(score).to_numpy()
    y_true = (table.column(label).to_numpy() >= 1).astype(np.int8)
    del table
    phases.mark("read")
    auc, size, positives = _rank_sum_auc(codes, y_score, y_true)
    both = (positives > 0) & (positives < size)
    gauc = float(np.sum(auc[both] * size[both]) / np.sum(size[both]))
    phases.mark("gauc")
    global_auc = float(_rank_sum_auc(np.zeros(len(y_true), dtype=np.int8), y_score, y_true)[0][0])
    phases.mark("global_auc")
    emit({"GAUC": gauc, "AUC_global": global_auc}, phases, users_with_both_classes=int(both.sum()))


COMMANDS = {
    "pytrec_eval": pytrec_eval_command,
    "pytrec_eval_text": pytrec_eval_text_command,
    "ranx": ranx_command,
    "floor": floor_command,
    "duckrank_twice": duckrank_twice_command,
    "sklearn_auc": sklearn_auc_command,
    "numpy_gauc": numpy_gauc_command,
    "s5k_duckrank": s5k_duckrank_command,
    "s5k_pytrec_eval": s5k_pytrec_eval_command,
    "s5k_duckdb": s5k_duckdb_command,
    "s5k_sweep_duckrank": s5k_sweep_duckrank_command,
    "s5k_sweep_pytrec_eval": s5k_sweep_pytrec_eval_command,
}


def main(argv: list[str]) -> None:
    if not argv or argv[0] not in COMMANDS:
        sys.exit(f"usage: contenders.py {{{'|'.join(COMMANDS)}}} ARGS...")
    args, options = [], {}
    for item in argv[1:]:
        if item.startswith("--"):
            key, _, value = item[2:].partition("=")
            options[key.replace("-", "_")] = value
        else:
            args.append(item)
    COMMANDS[argv[0]](*args, **options)


if __name__ == "__main__":
    main(sys.argv[1:])
