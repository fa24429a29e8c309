"""The Spark engine against the Spark floor: a hand-written Spark SQL query for the same measures.

    python bench/spark.py --workload W10M      # needs pip install -e '.[spark]' and Java 17
    python bench/spark.py --planning           # Spark's planning of -m all_trec and 20 more measures

One local SparkSession (local[*], the machine's cores); each contender runs `--repeat` times in it
and its fastest run counts (the first run of each also warms the JVM's code). Both read the same
Parquet files; the floor's numbers are checked against the engine's. Prints a markdown row per
contender and merges the figures into bench/results.json under "spark".

--planning times what Spark spends before and around the work on the repository's tiny data/
inputs (50 queries) for PLANNING_MEASURES: evaluate() (rendering, Spark's parser and analyser), the
physical plan (optimiser, planner), and the collect, which on so little data is the adaptive
re-planning of each stage and the code generation; the first call of the session (a cold JVM)
and a second one with the same measures. Merged under "spark" -> "planning".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
# the repository instead of bench/ on the path: bench/profile.py would shadow the profile module pyspark imports
sys.path[0] = str(BENCH.parent)

# the trec_eval standard set of bench/contenders.py, as duckrank spells it
MEASURES = ["map", "P.5", "P.10", "P.20", "recall.100", "recall.1000", "ndcg", "ndcg_cut.10",
            "recip_rank", "Rprec", "bpref", "success.10"]

# The floor: what a careful engineer writes by hand in Spark SQL for these measures: one window
# pass ranks each query's docs (trec_eval's order: score, then doc_id, descending) with the running
# counts AP and bpref need, one aggregation per query, the ideal DCG from the qrels.
FLOOR_SQL = """
WITH judged AS (
    SELECT r.query_id, r.doc_id, r.score, q.relevance AS grade
    FROM run r LEFT JOIN qrels q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
),
ranked AS (
    SELECT query_id, rank, grade, rel, nonrel,
           sum(rel) OVER (PARTITION BY query_id ORDER BY rank ROWS UNBOUNDED PRECEDING) AS rel_so_far,
           sum(nonrel) OVER (PARTITION BY query_id ORDER BY rank ROWS UNBOUNDED PRECEDING) - nonrel AS nonrel_above
    FROM (SELECT query_id, grade,
                 row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rank,
                 CASE WHEN grade >= 1 THEN 1 ELSE 0 END AS rel,
                 CASE WHEN grade >= 0 AND grade < 1 THEN 1 ELSE 0 END AS nonrel
          FROM judged)
),
ideal AS (
    SELECT query_id, sum(CASE WHEN relevance >= 1 THEN 1 ELSE 0 END) AS num_rel,
           sum(CASE WHEN relevance >= 0 AND relevance < 1 THEN 1 ELSE 0 END) AS num_nonrel,
           sum(greatest(relevance, 0) / log2(ideal_rank + 1)) AS idcg,
           sum(CASE WHEN ideal_rank <= 10 THEN greatest(relevance, 0) / log2(ideal_rank + 1) ELSE 0 END) AS idcg10
    FROM (SELECT query_id, relevance,
                 row_number() OVER (PARTITION BY query_id ORDER BY relevance DESC) AS ideal_rank FROM qrels)
    GROUP BY query_id
),
per_query AS (
    SELECT r.query_id, i.num_rel AS R, i.num_nonrel AS N, i.idcg, i.idcg10,
           sum(CASE WHEN rel = 1 THEN rel_so_far / rank ELSE 0 END) AS ap_sum,
           sum(CASE WHEN rank <= 5 THEN rel ELSE 0 END) AS hits5,
           sum(CASE WHEN rank <= 10 THEN rel ELSE 0 END) AS hits10,
           sum(CASE WHEN rank <= 20 THEN rel ELSE 0 END) AS hits20,
           sum(CASE WHEN rank <= 100 THEN rel ELSE 0 END) AS hits100,
           sum(CASE WHEN rank <= 1000 THEN rel ELSE 0 END) AS hits1000,
           sum(CASE WHEN rank <= i.num_rel THEN rel ELSE 0 END) AS hits_r,
           sum(greatest(coalesce(grade, 0), 0) / log2(rank + 1)) AS dcg,
           sum(CASE WHEN rank <= 10 THEN greatest(coalesce(grade, 0), 0) / log2(rank + 1) ELSE 0 END) AS dcg10,
           max(CASE WHEN rel = 1 THEN 1.0 / rank ELSE 0 END) AS rr,
           sum(CASE WHEN rel = 1 THEN 1 - CASE WHEN nonrel_above > 0
                    THEN least(nonrel_above, i.num_rel) / least(i.num_nonrel, i.num_rel) ELSE 0 END ELSE 0 END) AS bpref_sum
    FROM ranked r JOIN ideal i ON i.query_id = r.query_id
    GROUP BY r.query_id, i.num_rel, i.num_nonrel, i.idcg, i.idcg10
)
SELECT avg(CASE WHEN R > 0 THEN ap_sum / R ELSE 0 END) AS map,
       avg(hits5 / 5) AS P_5, avg(hits10 / 10) AS P_10, avg(hits20 / 20) AS P_20,
       avg(CASE WHEN R > 0 THEN hits100 / R ELSE 0 END) AS recall_100,
       avg(CASE WHEN R > 0 THEN hits1000 / R ELSE 0 END) AS recall_1000,
       avg(CASE WHEN idcg > 0 THEN dcg / idcg ELSE 0 END) AS ndcg,
       avg(CASE WHEN idcg10 > 0 THEN dcg10 / idcg10 ELSE 0 END) AS ndcg_cut_10,
       avg(rr) AS recip_rank,
       avg(CASE WHEN R > 0 THEN hits_r / R ELSE 0 END) AS Rprec,
       avg(CASE WHEN R > 0 THEN bpref_sum / R ELSE 0 END) AS bpref,
       avg(CASE WHEN hits10 > 0 THEN 1.0 ELSE 0.0 END) AS success_10
FROM per_query
"""


# -m all_trec and 20 other measures: the planning target of issue 22 is under 30 s in local mode
PLANNING_MEASURES = ["all_trec", "ndcg@5", "ndcg@10", "P@5", "P@20", "recall@100", "map@10", "mrr@10", "ERR@20",
                     "RBP(p=0.8)", "success@1", "bpref", "infAP", "Rprec", "ndcg_cut.20", "dcg@10", "Judged@10",
                     "BPM@10", "SDCG@10", "INST", "cwl_rbp", "ndcg_rel", "hits@10"]


def planning(spark, repeat: int) -> list[dict]:
    """evaluate() / physical plan / collect seconds of PLANNING_MEASURES on data/, `repeat` times."""
    from duckrank import spark as duckrank_spark

    data = BENCH.parent / "data"
    calls = []
    for _ in range(repeat):
        began = time.perf_counter()
        frame = duckrank_spark.evaluate(spark, str(data / "qrels.parquet"), str(data / "run.parquet"),
                                        PLANNING_MEASURES)
        evaluated = time.perf_counter()
        frame._jdf.queryExecution().executedPlan()
        planned = time.perf_counter()
        rows = frame.collect()
        collected = time.perf_counter()
        calls.append({"evaluate_s": evaluated - began, "plan_s": planned - evaluated, "collect_s": collected - planned,
                      "total_s": collected - began, "measures": len(rows)})
        print(f"evaluate() {evaluated - began:.1f} s, physical plan {planned - evaluated:.1f} s, collect "
              f"{collected - planned:.1f} s: {collected - began:.1f} s for {len(rows)} measures", flush=True)
    return calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="W10M")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--planning", action="store_true", help="time the planning of PLANNING_MEASURES instead")
    args = parser.parse_args()
    folder = BENCH / "work" / args.workload
    if not args.planning and not (folder / "run.parquet").exists():
        sys.exit(f"{folder} has no run.parquet: generate it first (python bench/run.py --workload {args.workload})")
    qrels, run = str(folder / "qrels.parquet"), str(folder / "run.parquet")

    from pyspark.sql import SparkSession

    from duckrank import spark as duckrank_spark

    start = time.perf_counter()
    spark = (SparkSession.builder.master("local[*]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.driver.memory", "8g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    session_s = time.perf_counter() - start
    path = BENCH / "results.json"
    everything = json.loads(path.read_text()) if path.exists() else {}
    if args.planning:
        calls = planning(spark, args.repeat)
        everything.setdefault("spark", {})["planning"] = {
            "session_s": session_s, "cores": os.cpu_count(), "load_average": os.getloadavg()[0],
            "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "measures": PLANNING_MEASURES,
            "calls": calls}
        path.write_text(json.dumps(everything, indent=2) + "\n")
        return

    def floor() -> dict:
        spark.read.parquet(qrels).createOrReplaceTempView("qrels")
        spark.read.parquet(run).createOrReplaceTempView("run")
        row = spark.sql(FLOOR_SQL).collect()[0]
        return dict(zip(MEASURES, map(float, row)))  # some averages are DECIMAL

    def engine() -> dict:
        return {row[0]: row[1] for row in duckrank_spark.evaluate(spark, qrels, run, MEASURES).collect()}

    results = {}
    for name, call in (("spark_floor", floor), ("duckrank_spark", engine)):
        times, values = [], None
        for _ in range(args.repeat):
            began = time.perf_counter()
            values = call()
            times.append(time.perf_counter() - began)
            print(f"{name}: {times[-1]:.2f} s", flush=True)
        results[name] = {"wall_s": min(times), "runs_s": times, "values": values}
    off = max(abs(results["spark_floor"]["values"][m] - results["duckrank_spark"]["values"][m]) for m in MEASURES)
    ratio = results["duckrank_spark"]["wall_s"] / results["spark_floor"]["wall_s"]
    print(f"| {args.workload} | Spark session start {session_s:.1f} s | cores {os.cpu_count()} |")
    print("| contender | fastest of runs | runs |")
    print("|---|---:|---|")
    for name, result in results.items():
        print(f"| {name} | {result['wall_s']:.2f} s | {', '.join(f'{t:.2f}' for t in result['runs_s'])} |")
    print(f"duckrank_spark / spark_floor = {ratio:.2f}x; largest difference of the summaries {off:.1e}")
    if off > 1e-9:
        sys.exit("the floor and the engine disagree: fix the floor before reading the times")
    everything.setdefault("spark", {})[args.workload] = {
        "session_s": session_s, "ratio": ratio, "max_difference": off, "cores": os.cpu_count(),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **{name: {k: v for k, v in result.items() if k != "values"} for name, result in results.items()}}
    path.write_text(json.dumps(everything, indent=2) + "\n")


if __name__ == "__main__":
    main()
