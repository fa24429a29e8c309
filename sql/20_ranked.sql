-- The ranked-and-judged relation: the one building block every ranking metric aggregates over.
--
-- One row per retrieved document (is_ideal = false), ranked per query by score descending with
-- the tie rule `ties`, joined to its judgment; plus the ideal ranking (is_ideal = true) as one
-- row per (query, grade) block, so that IDCG and the queries a run missed live in the same
-- relation. Each metric is then a single aggregate over this relation grouped by query_id, so
-- any number of metrics share one sort of the run.
--
-- judged_only := true lets the relation leave out the retrieved docs that are not in the qrels
-- (they add nothing to any metric but AUC: no relevance, no gain, no judged non-relevant doc
-- above anything). With ties 'trec' or 'input' and unjudged 'nonrelevant' the run is then ranked
-- on ids and score alone, and only the judged rows are joined, counted and aggregated: the
-- difference between a window over every retrieved doc and one over the judged ones.
--
-- Inputs: qrels(query_id, doc_id, relevance), run(query_id, doc_id, score); table or view names,
-- or file paths (query_table). Which queries appear: those in both (trec_eval); with
-- complete := true every qrels query (trec_eval -c). Queries only in the run are never scored.
--
-- Columns:
--   query_id, doc_id, score, is_ideal
--   rank          1-based rank; on an ideal row the first rank of its block
--   judged_grade  the qrels grade, NULL if the doc is not in the qrels
--   grade         judged_grade, or the imputed grade under unjudged := mean|median
--   doc_rel       1 if grade >= rel_level (and grade >= 0), else 0
--   doc_gain      gain_of(grade)
--   tied_rel, tied_gain  doc_rel, doc_gain; under ties := 'average' the mean over the tie group
--   cum_rel       relevant docs at ranks <= rank (run rows)
--   judged_nonrel 1 for a judged non-relevant doc (0 <= judged_grade < rel_level)
--   nonrel_above  judged non-relevant docs ranked above (bpref)
--   is_unjudged   not in the qrels, or a negative ("pooled, unjudged") grade
--   err_stop      ERR's stopping probability (2^g - 1) / 2^g_max
--   err_reach     probability the user reaches this rank: prod_{i<rank} (1 - err_stop_i)
--   asc_rank      ascending rank of the score within the query, ties averaged (AUC; NULL when
--                 the relation is judged_only, which cannot rank among the unjudged)
--   run_ideal_rank rank of the doc when the run's own docs are sorted by gain (ideal := 'run')
--   ideal_docs    ideal rows: the docs in the block (all of one grade)
--   ideal_discount ideal rows: sum of 1/log2(i + 1) over the block's ranks (0 for a gain <= 0)
--   num_ret       documents the query retrieved (up to max_rank; after unjudged := 'skip')
--   num_rel       R, relevant docs of the query in the qrels
--   num_nonrel    judged non-relevant docs of the query in the qrels (bpref's N)
--   tie_rule      the ties option, so non-linear metrics can refuse 'average'

-- sum_{i=first..last} 1 / log2(i + 1): the DCG discount of a run of ranks (0 when last < first).
CREATE OR REPLACE MACRO duckrank.discount_sum(first_rank, last_rank) AS
    coalesce(list_sum(list_transform(range(CAST(first_rank AS BIGINT), CAST(last_rank AS BIGINT) + 1),
                                     lambda i: 1.0 / log2(i + 1))), 0.0);
COMMENT ON MACRO duckrank.discount_sum IS 'sum of the DCG discounts 1/log2(i+1) for ranks first..last';

-- Whether duckrank.ranked may rank the run before judging it and keep only the judged rows: the
-- tie rule needs no grade and an unjudged doc is simply not relevant. Constant per call, so the
-- planner drops the path not taken.
CREATE OR REPLACE MACRO duckrank.ranks_before_judging(judged_only, ties, unjudged) AS
    judged_only AND ties IN ('trec', 'input') AND unjudged = 'nonrelevant';
COMMENT ON MACRO duckrank.ranks_before_judging IS 'true when duckrank.ranked can rank ids and scores first and join the judgments after';

CREATE OR REPLACE MACRO duckrank.ranked(qrels, run, rel_level := 1, ties := 'trec', max_rank := NULL,
        complete := false, unjudged := 'nonrelevant', gain := 'linear',
        gain_map := MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), g_max := NULL,
        duplicates := 'error', judged_only := false) AS TABLE
WITH
-- NOT MATERIALIZED: the run is read by the checks and by the ranking; re-reading a scan is far
-- cheaper than buffering every row of a large run.
run_rows AS NOT MATERIALIZED (
    SELECT query_id, doc_id, CAST(run_score AS DOUBLE) AS score,
           row_number() OVER () AS input_order
    -- a subquery, so that a run without a score column gets "column score not found" and the
    -- candidates, not a confusing complaint about the alias
    FROM (SELECT query_id, doc_id, score AS run_score FROM query_table(CAST(run AS VARCHAR)))
),
-- duplicates := 'max' keeps each doc's highest score (and its first position, for ties := 'input').
run_docs AS NOT MATERIALIZED (
    SELECT query_id, doc_id, max(score) AS score, min(input_order) AS input_order
    FROM run_rows
    GROUP BY query_id, doc_id
),
-- With duplicates := 'error' the checks guarantee one row per (query, doc), so the ranking reads
-- the rows as they are; only duplicates := 'max' pays for collapsing them.
run_unique AS NOT MATERIALIZED (  -- read by the ranking and the per-query counts: re-read, not buffered
    SELECT query_id, doc_id, score, input_order FROM run_rows WHERE duplicates <> 'max'
    UNION ALL
    SELECT query_id, doc_id, score, input_order FROM run_docs WHERE duplicates = 'max'
),
-- Duplicate (query, doc) pairs are found by grouping a 64-bit hash of the pair: a far smaller hash
-- table than one keyed by the two ids, and far less to spill on a large run. Only the rows whose
-- hash repeats are then grouped by their ids, so a hash collision never passes for a duplicate.
run_repeated_hashes AS MATERIALIZED (
    SELECT hash(query_id, doc_id) AS pair_hash FROM run_rows GROUP BY pair_hash HAVING count(*) > 1
),
-- The run's offending pairs: seen twice, or with a NULL id. The messages below read a handful of rows.
run_suspects AS MATERIALIZED (
    SELECT query_id, doc_id, count(*) AS copies
    FROM run_rows
    WHERE hash(query_id, doc_id) IN (SELECT pair_hash FROM run_repeated_hashes) OR query_id IS NULL OR doc_id IS NULL
    GROUP BY query_id, doc_id
    HAVING count(*) > 1 OR query_id IS NULL OR doc_id IS NULL
),
qrels_rows AS NOT MATERIALIZED (
    SELECT query_id, doc_id, CAST(relevance AS DOUBLE) AS grade,
           relevance IS NULL OR NOT isfinite(CAST(relevance AS DOUBLE)) AS bad_grade
    FROM query_table(CAST(qrels AS VARCHAR))
),
qrels_repeated_hashes AS MATERIALIZED (
    SELECT hash(query_id, doc_id) AS pair_hash FROM qrels_rows GROUP BY pair_hash HAVING count(*) > 1
),
-- The rows whose (query, doc) hash repeats (same trick as the run), grouped by their ids: the
-- pairs judged more than once, with their highest and lowest grade, and any hash collision.
qrels_hashed_twice AS MATERIALIZED (
    SELECT query_id, doc_id, max(grade) AS grade, min(grade) AS min_grade
    FROM qrels_rows
    WHERE hash(query_id, doc_id) IN (SELECT pair_hash FROM qrels_repeated_hashes)
    GROUP BY query_id, doc_id
),
-- One row per judged (query, doc), with its highest grade. Not materialized: on a large qrels,
-- re-reading the file is cheaper than buffering (and spilling) a copy of it.
qrels_docs AS NOT MATERIALIZED (
    SELECT query_id, doc_id, grade
    FROM qrels_rows
    WHERE hash(query_id, doc_id) NOT IN (SELECT pair_hash FROM qrels_repeated_hashes)
    UNION ALL
    SELECT query_id, doc_id, grade FROM qrels_hashed_twice
),
-- The first offending qrels rows, found in one pass.
qrels_bad_rows AS (
    SELECT any_value({'query_id': query_id, 'doc_id': doc_id}) FILTER (WHERE query_id IS NULL OR doc_id IS NULL) AS null_id,
           any_value({'query_id': query_id, 'doc_id': doc_id}) FILTER (WHERE bad_grade) AS bad_grade
    FROM qrels_rows
),
problems AS (
    SELECT duckrank.convention_problems(rel_level := rel_level, ties := ties, max_rank := max_rank,
               unjudged := unjudged, duplicates := duplicates) AS problem
    UNION ALL
    (SELECT 'run ' || duckrank.show(run) || ' has a NULL id (query_id ' || duckrank.show(query_id)
            || ', doc_id ' || duckrank.show(doc_id) || '); every row needs a query_id and a doc_id'
     FROM run_suspects WHERE query_id IS NULL OR doc_id IS NULL LIMIT 1)
    UNION ALL
    (SELECT 'run ' || duckrank.show(run) || ' has a NULL, NaN or infinite score for query_id '
            || duckrank.show(query_id) || ', doc_id ' || duckrank.show(doc_id)
            || '; scores must be finite numbers: fix or drop those rows'
     FROM run_rows WHERE score IS NULL OR NOT isfinite(score) LIMIT 1)
    UNION ALL
    (SELECT 'run ' || duckrank.show(run) || ' has ' || copies || ' rows for query_id '
            || duckrank.show(query_id) || ', doc_id ' || duckrank.show(doc_id)
            || '; each (query_id, doc_id) must appear once: remove the duplicates or pass duplicates := ''max'''
     FROM run_suspects WHERE copies > 1 AND duplicates = 'error' LIMIT 1)
    UNION ALL
    SELECT 'qrels ' || duckrank.show(qrels) || ' has a NULL id (query_id ' || duckrank.show(null_id.query_id)
           || ', doc_id ' || duckrank.show(null_id.doc_id) || '); every judgment needs a query_id and a doc_id'
    FROM qrels_bad_rows WHERE null_id IS NOT NULL
    UNION ALL
    SELECT 'qrels ' || duckrank.show(qrels) || ' has a NULL, NaN or infinite relevance for query_id '
           || duckrank.show(bad_grade.query_id) || ', doc_id ' || duckrank.show(bad_grade.doc_id)
           || '; relevance must be a finite number: fix or drop those rows'
    FROM qrels_bad_rows WHERE bad_grade IS NOT NULL
    UNION ALL
    (SELECT 'qrels ' || duckrank.show(qrels) || ' judges query_id ' || duckrank.show(query_id)
            || ', doc_id ' || duckrank.show(doc_id) || ' twice with different grades ('
            || min_grade || ' and ' || grade
            || '); keep one judgment or pass duplicates := ''max'''
     FROM qrels_hashed_twice WHERE min_grade <> grade AND duplicates = 'error' LIMIT 1)
),
guard AS (
    SELECT duckrank.raise_problems(string_agg(problem, chr(10))) AS fired FROM problems
),
-- unjudged := mean|median gives each retrieved unjudged doc the query's mean / median judged grade.
-- The imputed grade then counts as a judgment everywhere (R, N, the ideal ranking), so recall, AP
-- and nDCG stay within [0, 1]. Under the other policies this branch is empty.
imputed AS (
    SELECT r.query_id, r.doc_id, CASE WHEN unjudged = 'mean' THEN s.mean_grade ELSE s.median_grade END AS grade
    FROM run_unique r
    JOIN (SELECT query_id, avg(grade) FILTER (WHERE grade >= 0) AS mean_grade,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY grade) FILTER (WHERE grade >= 0) AS median_grade
          FROM qrels_docs WHERE unjudged IN ('mean', 'median') GROUP BY query_id) s ON s.query_id = r.query_id
    LEFT JOIN qrels_docs q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    WHERE unjudged IN ('mean', 'median') AND q.doc_id IS NULL
),
judgments AS NOT MATERIALIZED (  -- inlined: by default just the qrels, no copy of them
    SELECT query_id, doc_id, grade, false AS imputed FROM qrels_docs
    UNION ALL
    SELECT query_id, doc_id, grade, true AS imputed FROM imputed WHERE grade IS NOT NULL
),
-- The ideal ranking as blocks: the docs of one grade share a run of ranks, best gain first. IDCG
-- is then a sum over a few blocks per query instead of a sort of every judgment.
grade_blocks AS (
    SELECT query_id, grade, duckrank.gain_of(grade, gain := gain, gain_map := gain_map) AS block_gain,
           count(*) AS docs
    FROM judgments
    GROUP BY query_id, grade
),
ideal_blocks AS (
    SELECT query_id, grade, block_gain, docs,
           sum(docs) OVER (PARTITION BY query_id ORDER BY block_gain DESC, grade DESC
                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) - docs + 1 AS first_rank
    FROM grade_blocks
),
-- The queries the run retrieved and how many docs it ranked for each (up to max_rank). Under
-- unjudged := 'skip' that excludes the skipped docs, but a query whose docs were all skipped
-- still counts as retrieved (it scores 0).
retrieved AS (
    SELECT query_id, count(*) AS ranked_docs FROM run_unique WHERE unjudged <> 'skip' GROUP BY query_id
    UNION ALL
    SELECT r.query_id, count(q.grade) FILTER (WHERE q.grade >= 0)
    FROM run_unique r LEFT JOIN judgments q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    WHERE unjudged = 'skip'
    GROUP BY r.query_id
),
query_stats AS (
    SELECT s.query_id, s.num_rel, s.num_nonrel,
           least(coalesce(r.ranked_docs, 0), coalesce(max_rank, r.ranked_docs, 0)) AS num_ret
    FROM (SELECT query_id,
                 CAST(sum(docs * duckrank.relevant(grade, rel_level)) AS BIGINT) AS num_rel,
                 CAST(sum(docs * duckrank.judged_nonrelevant(grade, rel_level)) AS BIGINT) AS num_nonrel
          FROM grade_blocks GROUP BY query_id) s
    LEFT JOIN retrieved r ON r.query_id = s.query_id
    WHERE complete OR r.query_id IS NOT NULL
),
-- ERR's default g_max: the largest grade in the qrels, at least 0 (qrels with only negative grades
-- would otherwise give negative stopping probabilities).
top_grade AS (  -- imputed grades lie within the judged ones, so the blocks hold the largest grade
    SELECT coalesce(CAST(g_max AS DOUBLE), greatest(max(grade), 0)) AS g_max FROM grade_blocks
),
-- Path 1 (duckrank.ranks_before_judging): the floor's one sort of the run on ids and score, then
-- an inner join keeps the judged docs, and the running sums run over those in rank order.
run_ranks AS (
    SELECT query_id, doc_id, score,
           row_number() OVER (PARTITION BY query_id
                              ORDER BY score DESC, CASE WHEN ties = 'input' THEN input_order END ASC,
                                       doc_id DESC) AS rank
    FROM run_unique
    WHERE duckrank.ranks_before_judging(judged_only, ties, unjudged)
),
judged_ranks AS (
    SELECT r.query_id, r.doc_id, r.score, r.rank, q.grade, q.imputed
    FROM run_ranks r
    JOIN judgments q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    WHERE max_rank IS NULL OR r.rank <= max_rank
),
ranked_judged AS (
    SELECT query_id, doc_id, score, grade, imputed, rank,
           CAST(sum(duckrank.relevant(grade, rel_level)) OVER by_rank AS DOUBLE) AS cum_rel,
           CAST(sum(duckrank.judged_nonrelevant(grade, rel_level)) OVER by_rank
                - duckrank.judged_nonrelevant(grade, rel_level) AS BIGINT) AS nonrel_above,
           exp(sum(ln(1 - duckrank.err_stop(grade, (SELECT t.g_max FROM top_grade t)))) OVER by_rank
               - ln(1 - duckrank.err_stop(grade, (SELECT t.g_max FROM top_grade t)))) AS err_reach,
           CAST(NULL AS DOUBLE) AS tied_rel, CAST(NULL AS DOUBLE) AS tied_gain
    FROM judged_ranks
    WINDOW by_rank AS (PARTITION BY query_id ORDER BY rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
),
-- Path 2 (every other convention): join first, since the tie rule or the policy for unjudged docs
-- needs the grade of every retrieved doc, then rank. The window carries only what it must (ids,
-- score, grade); everything else derives from the grade afterwards. A narrow sort is markedly cheaper.
judged AS (
    SELECT r.query_id, r.doc_id, r.score, r.input_order, q.grade, q.imputed
    FROM run_unique r
    LEFT JOIN judgments q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    WHERE NOT duckrank.ranks_before_judging(judged_only, ties, unjudged)
      AND (unjudged <> 'skip' OR q.grade >= 0)
),
ranked_all AS (
    SELECT query_id, doc_id, score, grade, imputed,
           row_number() OVER by_rank AS rank,
           CAST(sum(duckrank.relevant(grade, rel_level))
                OVER (by_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS DOUBLE) AS cum_rel,
           CAST(sum(duckrank.judged_nonrelevant(grade, rel_level))
                OVER (by_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
                - duckrank.judged_nonrelevant(grade, rel_level) AS BIGINT) AS nonrel_above,
           exp(sum(ln(1 - duckrank.err_stop(grade, (SELECT t.g_max FROM top_grade t))))
                   OVER (by_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
               - ln(1 - duckrank.err_stop(grade, (SELECT t.g_max FROM top_grade t)))) AS err_reach,
           -- ties := 'average': every rank of a tie group holds the group's mean. Taken before the
           -- max_rank cut, which may split a group: the ranks kept still hold the expected value.
           CASE WHEN ties = 'average' THEN avg(duckrank.relevant(grade, rel_level)) OVER (PARTITION BY query_id, score)
                END AS tied_rel,
           CASE WHEN ties = 'average'
                THEN avg(duckrank.gain_of(grade, gain := gain, gain_map := gain_map)) OVER (PARTITION BY query_id, score)
                END AS tied_gain
    FROM judged
    WINDOW by_rank AS (
        PARTITION BY query_id
        -- One tie-break key for every rule but 'trec' (a constant NULL there, nearly free to sort).
        ORDER BY score DESC,
                 CASE WHEN ties = 'input' THEN [CAST(input_order AS DOUBLE)]
                      WHEN ties = 'pessimistic'
                          THEN [duckrank.relevant(grade, rel_level), duckrank.gain_of(grade, gain := gain, gain_map := gain_map)]
                      WHEN ties = 'optimistic'
                          THEN [-duckrank.relevant(grade, rel_level), -duckrank.gain_of(grade, gain := gain, gain_map := gain_map)]
                 END ASC,
                 doc_id DESC)
),
ranked_run AS (
    SELECT * FROM ranked_judged
    UNION ALL BY NAME
    SELECT * FROM ranked_all WHERE max_rank IS NULL OR rank <= max_rank
),
run_rows_ranked AS (
    SELECT r.query_id, r.doc_id, r.score, false AS is_ideal, r.rank,
           CASE WHEN NOT r.imputed THEN r.grade END AS judged_grade, r.grade,
           duckrank.relevant(r.grade, rel_level) AS doc_rel,
           duckrank.gain_of(r.grade, gain := gain, gain_map := gain_map) AS doc_gain,
           coalesce(r.tied_rel, duckrank.relevant(r.grade, rel_level)) AS tied_rel,
           coalesce(r.tied_gain, duckrank.gain_of(r.grade, gain := gain, gain_map := gain_map)) AS tied_gain,
           r.cum_rel, duckrank.judged_nonrelevant(r.grade, rel_level) AS judged_nonrel, r.nonrel_above,
           r.grade IS NULL OR r.grade < 0 AS is_unjudged,  -- an imputed grade counts as a judgment
           duckrank.err_stop(r.grade, (SELECT t.g_max FROM top_grade t)) AS err_stop, r.err_reach,
           -- AUC ranks among every retrieved doc, which path 1 does not keep
           CASE WHEN NOT duckrank.ranks_before_judging(judged_only, ties, unjudged)
                THEN rank() OVER (PARTITION BY r.query_id ORDER BY r.score ASC)
                     + (count(*) OVER (PARTITION BY r.query_id, r.score) - 1) / 2.0 END AS asc_rank,
           -- only docs with a positive gain enter IDCG, and those are all judged: path 1 keeps them
           row_number() OVER (PARTITION BY r.query_id
                              ORDER BY duckrank.gain_of(r.grade, gain := gain, gain_map := gain_map) DESC,
                                       r.rank ASC) AS run_ideal_rank,
           CAST(NULL AS BIGINT) AS ideal_docs, CAST(NULL AS DOUBLE) AS ideal_discount,
           s.num_ret, s.num_rel, s.num_nonrel
    FROM ranked_run r
    JOIN query_stats s ON s.query_id = r.query_id
),
ideal_rows AS (
    SELECT b.query_id, NULL AS doc_id, CAST(NULL AS DOUBLE) AS score, true AS is_ideal,
           b.first_rank AS rank, b.grade AS judged_grade, b.grade,
           duckrank.relevant(b.grade, rel_level) AS doc_rel, b.block_gain AS doc_gain,
           b.docs AS ideal_docs,
           CASE WHEN b.block_gain > 0 THEN duckrank.discount_sum(b.first_rank, b.first_rank + b.docs - 1)
                ELSE 0.0 END AS ideal_discount,
           s.num_ret, s.num_rel, s.num_nonrel
    FROM ideal_blocks b
    JOIN query_stats s ON s.query_id = b.query_id
)
SELECT query_id, doc_id, score, is_ideal, rank, judged_grade, grade, doc_rel, doc_gain, tied_rel, tied_gain,
       cum_rel, judged_nonrel, nonrel_above, is_unjudged, err_stop, err_reach, asc_rank, run_ideal_rank,
       ideal_docs, ideal_discount, num_ret, num_rel, num_nonrel, ties AS tie_rule
FROM run_rows_ranked
WHERE (SELECT count(fired) FROM guard) = 0
UNION ALL
SELECT query_id, doc_id, score, is_ideal, rank, judged_grade, grade, doc_rel, doc_gain,
       doc_rel AS tied_rel, doc_gain AS tied_gain,
       CAST(NULL AS DOUBLE) AS cum_rel, 0 AS judged_nonrel, CAST(NULL AS BIGINT) AS nonrel_above, false AS is_unjudged,
       CAST(NULL AS DOUBLE) AS err_stop, CAST(NULL AS DOUBLE) AS err_reach,
       CAST(NULL AS DOUBLE) AS asc_rank, CAST(NULL AS BIGINT) AS run_ideal_rank,
       ideal_docs, ideal_discount, num_ret, num_rel, num_nonrel, ties AS tie_rule
FROM ideal_rows
WHERE (SELECT count(fired) FROM guard) = 0;
COMMENT ON MACRO TABLE duckrank.ranked IS 'the ranked-and-judged relation every metric aggregates over: run rows ranked per query plus the ideal ranking as (query, grade) blocks (is_ideal)';
