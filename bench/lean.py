"""What-ifs for the profile: the benchmark's twelve trec_eval measures in one lean DuckDB query,
and GAUC in one window pass.

Not part of duckrank. It exists to measure how close to the floor a query can get that computes
the same numbers (checked against duckrank's and pytrec_eval's), and so which restructuring of
duckrank.ranked would pay. It handles only the benchmark's conventions (ties = trec,
rel_level = 1, unjudged = nonrelevant, linear gain, complete = false, empty = zero), but keeps
the input checks that matter for speed (duplicate (query, doc) rows, NULL ids, non-finite scores).

The ideas, each measured in bench/README.md:
  1. With unjudged = nonrelevant every trec_eval measure only reads the *judged* retrieved docs
     (their rank and grade) plus per-query counts (retrieved, R, N). So the run is ranked once
     (the floor's row_number() pass), joined to the qrels with an INNER join, and every later
     step works on the judged rows only (2 M of W10M's 10 M rows).
  2. The running counts AP and bpref need (relevant at or above a rank, judged non-relevant
     above it) are windows over those judged rows ordered by the integer rank, not over every
     retrieved row ordered by (score, doc_id).
  3. IDCG needs no ranking of the qrels: the ideal ranking puts the n_g docs of each gain g in
     one block, so IDCG@k = sum_g g * (H(min(k, end_g)) - H(min(k, start_g))) with
     H(n) = sum_{i<=n} 1/log2(i+1), from a per-(query, grade) count and a small table of H.
  4. The input checks share one pass: duplicates by one GROUP BY (query_id, doc_id) over the
     run; NULL ids and NaN scores as FILTER counts in the per-query aggregate that counts the
     retrieved docs anyway.
"""

from __future__ import annotations

LEAN_SQL = """
WITH
run AS NOT MATERIALIZED (SELECT query_id, doc_id, CAST(score AS DOUBLE) AS score FROM read_parquet($run)),
qrels AS NOT MATERIALIZED (SELECT query_id, doc_id, CAST(relevance AS DOUBLE) AS grade FROM read_parquet($qrels)),
-- the floor: one ranking pass over the run
ranked AS (
    SELECT query_id, doc_id,
           row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rank
    FROM run),
-- checks: duplicates need one hash aggregate over (query, doc); the rest ride on the per-query count
duplicates AS (
    SELECT count(*) AS duplicated FROM (SELECT 1 FROM run GROUP BY query_id, doc_id HAVING count(*) > 1)),
retrieved AS (
    SELECT query_id, count(*) AS num_ret,
           count(*) FILTER (WHERE doc_id IS NULL OR score IS NULL OR NOT isfinite(score)) AS bad_rows
    FROM run GROUP BY query_id),
judgments AS (
    SELECT query_id, count(*) FILTER (WHERE grade >= 1) AS num_rel,
           count(*) FILTER (WHERE grade >= 0 AND grade < 1) AS num_nonrel
    FROM qrels GROUP BY query_id),
-- IDCG from per-(query, grade) counts: no sort of the qrels
grade_blocks AS (
    SELECT query_id, grade, count(*) AS n FROM qrels WHERE grade > 0 GROUP BY query_id, grade),
blocks AS (
    SELECT query_id, grade, n,
           sum(n) OVER (PARTITION BY query_id ORDER BY grade DESC ROWS UNBOUNDED PRECEDING) - n AS start
    FROM grade_blocks),
harmonic AS (
    SELECT i AS n, sum(CASE WHEN i = 0 THEN 0 ELSE 1 / log2(i + 1) END) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS h
    FROM range(0, (SELECT CAST(coalesce(max(start + n), 0) + 1 AS BIGINT) FROM blocks)) t(i)),
ideal AS (
    SELECT b.query_id,
           sum(b.grade * (h_end.h - h_start.h)) AS idcg,
           sum(b.grade * (h_end10.h - h_start10.h)) AS idcg10
    FROM blocks b
    JOIN harmonic h_start ON h_start.n = b.start
    JOIN harmonic h_end ON h_end.n = b.start + b.n
    JOIN harmonic h_start10 ON h_start10.n = least(b.start, 10)
    JOIN harmonic h_end10 ON h_end10.n = least(b.start + b.n, 10)
    GROUP BY b.query_id),
-- the judged retrieved docs, with the running counts over them ordered by rank
judged AS (
    SELECT r.query_id, r.rank, q.grade
    FROM ranked r JOIN qrels q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    WHERE q.grade >= 0),
running AS (
    SELECT query_id, rank, grade,
           sum(CASE WHEN grade >= 1 THEN 1 ELSE 0 END) OVER w AS rel_at,
           row_number() OVER w AS judged_at
    FROM judged
    WINDOW w AS (PARTITION BY query_id ORDER BY rank ROWS UNBOUNDED PRECEDING)),
per_query_judged AS (
    SELECT j.query_id,
           sum(CASE WHEN grade >= 1 THEN rel_at / rank END) AS ap_sum,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 5) AS rel5,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 10) AS rel10,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 20) AS rel20,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 100) AS rel100,
           count(*) FILTER (WHERE grade >= 1 AND rank <= 1000) AS rel1000,
           count(*) FILTER (WHERE grade >= 1 AND rank <= s.num_rel) AS rel_r,
           sum(CASE WHEN grade > 0 THEN grade / log2(rank + 1) END) AS dcg,
           sum(CASE WHEN grade > 0 AND rank <= 10 THEN grade / log2(rank + 1) END) AS dcg10,
           min(rank) FILTER (WHERE grade >= 1) AS first_rel,
           sum(CASE WHEN grade >= 1 THEN
                   CASE WHEN judged_at - rel_at > 0
                        THEN 1 - least(judged_at - rel_at, s.num_rel) / least(s.num_rel, s.num_nonrel)
                        ELSE 1 END END) AS bpref_sum
    FROM running j JOIN judgments s ON s.query_id = j.query_id
    GROUP BY j.query_id),
per_query AS (
    SELECT r.query_id, s.num_rel,
           coalesce(p.ap_sum, 0) AS ap_sum, coalesce(p.rel5, 0) AS rel5, coalesce(p.rel10, 0) AS rel10,
           coalesce(p.rel20, 0) AS rel20, coalesce(p.rel100, 0) AS rel100, coalesce(p.rel1000, 0) AS rel1000,
           coalesce(p.rel_r, 0) AS rel_r, coalesce(p.dcg, 0) AS dcg, coalesce(p.dcg10, 0) AS dcg10,
           p.first_rel, coalesce(p.bpref_sum, 0) AS bpref_sum, coalesce(i.idcg, 0) AS idcg,
           coalesce(i.idcg10, 0) AS idcg10, r.bad_rows
    FROM retrieved r
    JOIN judgments s ON s.query_id = r.query_id          -- queries in both run and qrels
    LEFT JOIN per_query_judged p ON p.query_id = r.query_id
    LEFT JOIN ideal i ON i.query_id = r.query_id)
SELECT
    CASE WHEN (SELECT duplicated FROM duplicates) > 0 OR sum(bad_rows) > 0
         THEN error('duplicate (query_id, doc_id) rows, NULL ids or non-finite scores in the run') END AS problem,
    avg(CASE WHEN num_rel > 0 THEN ap_sum / num_rel ELSE 0 END) AS "map",
    avg(rel5 / 5) AS "P_5", avg(rel10 / 10) AS "P_10", avg(rel20 / 20) AS "P_20",
    avg(CASE WHEN num_rel > 0 THEN rel100 / num_rel ELSE 0 END) AS "recall_100",
    avg(CASE WHEN num_rel > 0 THEN rel1000 / num_rel ELSE 0 END) AS "recall_1000",
    avg(CASE WHEN idcg > 0 THEN dcg / idcg ELSE 0 END) AS "ndcg",
    avg(CASE WHEN idcg10 > 0 THEN dcg10 / idcg10 ELSE 0 END) AS "ndcg_cut_10",
    avg(coalesce(1 / first_rel, 0)) AS "recip_rank",
    avg(CASE WHEN num_rel > 0 THEN rel_r / num_rel ELSE 0 END) AS "Rprec",
    avg(CASE WHEN num_rel > 0 THEN bpref_sum / num_rel ELSE 0 END) AS "bpref",
    avg(CASE WHEN rel10 > 0 THEN 1 ELSE 0 END) AS "success_10"
FROM per_query
"""


# GAUC with one sort: per user, the rank-sum AUC needs each impression's average rank among the
# user's scores; rank() and the tie group's size share one window (same partition and order), so
# there is no GROUP BY (user, score) of the whole log and no second window over it.
GAUC_SQL = """
WITH ranked AS (
    SELECT user_id, click >= 1 AS positive,
           rank() OVER w + (count(*) OVER (w RANGE BETWEEN CURRENT ROW AND CURRENT ROW) - 1) / 2.0 AS average_rank
    FROM read_parquet($log)
    WINDOW w AS (PARTITION BY user_id ORDER BY score)),
per_user AS (
    SELECT count(*) AS n, count(*) FILTER (WHERE positive) AS p,
           sum(average_rank) FILTER (WHERE positive) AS rank_sum
    FROM ranked GROUP BY user_id)
SELECT sum(n * (rank_sum - p * (p + 1) / 2.0) / (p * (n - p))) / sum(n) AS "GAUC"
FROM per_user WHERE p > 0 AND p < n
"""


def lean_values(con, qrels: str, run: str) -> dict[str, float]:
    cursor = con.execute(LEAN_SQL, {"run": run, "qrels": qrels})
    row = cursor.fetchall()[0]
    names = [d[0] for d in cursor.description]
    return {name: float(value) for name, value in zip(names[1:], row[1:])}


if __name__ == "__main__":  # python bench/lean.py QRELS RUN  |  python bench/lean.py --gauc LOG
    import json
    import sys
    import time

    import duckdb

    started = time.perf_counter()
    if sys.argv[1] == "--gauc":
        values = {"GAUC": duckdb.connect().execute(GAUC_SQL, {"log": sys.argv[2]}).fetchall()[0][0]}
    else:
        values = lean_values(duckdb.connect(), sys.argv[1], sys.argv[2])
    print(json.dumps({"values": values, "phases": {"query": round(time.perf_counter() - started, 4)}}))
