-- AUC per query, GAUC and global AUC over an impression log, and the classification view of a log.
-- Sources: the Mann-Whitney rank-sum form of AUC, the confusion matrix, and the CTR convention for
-- GAUC (user-grouped AUC weighted by impressions or positives). The table macros with defaults
-- (duckrank.log_auc, gauc, global_auc, classification) are generated in sql/60_measures.sql.
--
-- Rank-sum AUC: (sum of ascending ranks of the positives - n+(n+ + 1)/2) / (n+ n-), tied scores
-- sharing their average rank. Per query (log_auc, GAUC) the average ranks come from one window
-- pass. Over a whole log (global_auc) the same sum is taken per distinct score: a positive's rank
-- minus the positives at or below it is the negatives below it plus half those tied with it, so
-- AUC = sum_scores pos(s) (neg_below(s) + neg(s) / 2) / (n+ n-), which sorts the distinct scores
-- instead of all rows. Undefined (NULL) when a query has no positive or no negative.

-- Rows of a log that no AUC can rank: a NULL or non-finite score would sort as the highest (NaN)
-- or vanish (NULL), a NULL label would count as neither class; integer or DECIMAL scores that are
-- one DOUBLE would tie. Returns NULL when there are none.
CREATE OR REPLACE MACRO duckrank.log_problems(log) AS (
    SELECT nullif(concat_ws(chr(10), duckrank.log_score_problems(log),
        CASE WHEN count(*) FILTER (WHERE NOT coalesce(isfinite(CAST(score AS DOUBLE)), false)) > 0
             THEN 'log ' || duckrank.show(log) || ' has '
                  || count(*) FILTER (WHERE NOT coalesce(isfinite(CAST(score AS DOUBLE)), false))
                  || ' row(s) with a NULL, NaN or infinite score; scores must be finite numbers: fix or drop those rows' END,
        CASE WHEN count(*) FILTER (WHERE NOT coalesce(isfinite(CAST(label AS DOUBLE)), false)) > 0
             THEN 'log ' || duckrank.show(log) || ' has '
                  || count(*) FILTER (WHERE NOT coalesce(isfinite(CAST(label AS DOUBLE)), false))
                  || ' row(s) with a NULL, NaN or infinite label; labels must be numbers: fix or drop those rows' END), '')
    FROM query_table(CAST(log AS VARCHAR)));
COMMENT ON MACRO duckrank.log_problems IS 'check a log''s scores and labels; returns the problems as text, NULL if none';

-- The summed positions of the relevant docs when a query's docs are sorted by (score, key)
-- ascending: with key = rel the negatives come first within a tie, with key = -rel the positives.
CREATE OR REPLACE MACRO duckrank.positive_positions(q, key_sign) AS
    coalesce(list_sum(list_filter(
        list_transform(list_sort(list_transform(q.docs, lambda d: {'score': d.score, 'key': key_sign * d.rel})),
                       lambda d, i: CASE WHEN d.key <> 0 THEN i END),
        lambda i: i IS NOT NULL)), 0);
COMMENT ON MACRO duckrank.positive_positions IS 'sum of the ascending positions of the relevant docs, ties ordered by key_sign * rel';

-- Per-query AUC by rank sums. A positive's average rank within its tie group is the mean of its
-- position with the negatives of the group first and with them last, so the rank sum is the mean
-- of the two sorts' positive positions; AUC = (rank sum - P(P + 1)/2) / (P N).
CREATE OR REPLACE MACRO duckrank.auc_of(q) AS
    CASE WHEN NOT q.all_docs
             -- a judged_only relation leaves out unjudged docs, so it cannot rank among them
             THEN error('AUC needs every retrieved doc: read duckrank.ranked(..., judged_only := false)')
         WHEN list_bool_or(list_transform(q.docs, lambda d: d.rel > 0))
              AND list_bool_or(list_transform(q.docs, lambda d: d.rel = 0))
         THEN ((duckrank.positive_positions(q, 1) + duckrank.positive_positions(q, -1)) / 2.0
               - duckrank.num_rel_ret_of(q) * (duckrank.num_rel_ret_of(q) + 1) / 2.0)
              / (duckrank.num_rel_ret_of(q) * (len(q.docs) - duckrank.num_rel_ret_of(q))) END;
COMMENT ON MACRO duckrank.auc_of IS 'AUC of the retrieved docs of a query by rank sums (ties averaged); NULL without both classes';

-- Per-query AUC of a log(query_id, score, label); label >= rel_level is a positive. One window
-- pass: rank() and the size of the row's tie group share one partition and order (one sort), and
-- give each impression its average ascending rank; the rank sums then need one GROUP BY query.
CREATE OR REPLACE MACRO duckrank.query_auc_of_log(log, rel_level) AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(problems) AS fired FROM (SELECT duckrank.log_problems(log) AS problems)),
ranked_log AS (
    SELECT query_id, label >= rel_level AS positive,
           rank() OVER by_score
               + (count(*) OVER (by_score RANGE BETWEEN CURRENT ROW AND CURRENT ROW) - 1) / 2.0 AS average_rank
    -- the cast sits in a subquery so that a missing score column is reported as missing
    FROM (SELECT query_id, CAST(score AS DOUBLE) AS score_value, label FROM query_table(CAST(log AS VARCHAR)))
    WHERE (SELECT count(fired) FROM guard) = 0
    WINDOW by_score AS (PARTITION BY query_id ORDER BY score_value)
),
per_query AS (
    SELECT query_id, count(*) FILTER (WHERE positive) AS positives, count(*) FILTER (WHERE NOT positive) AS negatives,
           sum(average_rank) FILTER (WHERE positive) AS positive_rank_sum
    FROM ranked_log GROUP BY query_id
)
SELECT query_id, (positive_rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives) AS value,
       positives + negatives AS impressions, positives
FROM per_query WHERE positives > 0 AND negatives > 0;
COMMENT ON MACRO TABLE duckrank.query_auc_of_log IS 'AUC per query of a log(query_id, score, label), with impressions and positives; queries without both classes excluded';

-- GAUC: per-query AUC averaged with weights = impressions (default) or positives.
CREATE OR REPLACE MACRO duckrank.gauc_of_log(log, weight, rel_level) AS TABLE
SELECT sum(value * CASE WHEN weight = 'positives' THEN positives ELSE impressions END)
       / sum(CASE WHEN weight = 'positives' THEN positives ELSE impressions END) AS value,
       count(*) AS num_q
FROM duckrank.query_auc_of_log(log, rel_level);
COMMENT ON MACRO TABLE duckrank.gauc_of_log IS 'GAUC of a log: per-query AUC weighted by impressions (default) or positives';

-- Global AUC: the rank-sum AUC over every row of a log, ignoring the query (scikit-learn roc_auc_score).
CREATE OR REPLACE MACRO duckrank.global_auc_of_log(log, rel_level) AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(problems) AS fired FROM (SELECT duckrank.log_problems(log) AS problems)),
by_score AS (
    SELECT score_value AS score,
           count(*) FILTER (WHERE label >= rel_level) AS pos,
           count(*) FILTER (WHERE NOT (label >= rel_level)) AS neg
    FROM (SELECT CAST(score AS DOUBLE) AS score_value, label FROM query_table(CAST(log AS VARCHAR)))
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY score_value
),
below AS (
    SELECT pos, neg,
           coalesce(sum(neg) OVER (ORDER BY score ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS neg_below
    FROM by_score
)
SELECT CASE WHEN sum(pos) > 0 AND sum(neg) > 0
            THEN sum(pos * (neg_below + neg / 2.0)) / (sum(pos) * sum(neg)) END AS value,
       CAST(sum(pos) AS BIGINT) AS positives, CAST(sum(neg) AS BIGINT) AS negatives
FROM below;
COMMENT ON MACRO TABLE duckrank.global_auc_of_log IS 'AUC over all rows of a log(score, label), ignoring the query (= scikit-learn roc_auc_score); NULL without both classes';

-- The classification view of a log at a score threshold: predicted
-- positive when score >= threshold, actually positive when label >= rel_level.
CREATE OR REPLACE MACRO duckrank.confusion_of_log(log, threshold, rel_level) AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(problems) AS fired FROM (SELECT duckrank.log_problems(log) AS problems)),
confusion AS (
    SELECT count(*) FILTER (WHERE score >= threshold AND label >= rel_level) AS tp,
           count(*) FILTER (WHERE score >= threshold AND NOT (label >= rel_level)) AS fp,
           count(*) FILTER (WHERE NOT (score >= threshold) AND NOT (label >= rel_level)) AS tn,
           count(*) FILTER (WHERE NOT (score >= threshold) AND label >= rel_level) AS fn
    FROM query_table(CAST(log AS VARCHAR))
    WHERE (SELECT count(fired) FROM guard) = 0
)
SELECT tp, fp, tn, fn,
       duckrank.ratio(tp + tn, tp + fp + tn + fn) AS accuracy,
       duckrank.ratio(tp, tp + fp) AS precision,
       duckrank.ratio(tp, tp + fn) AS recall,
       duckrank.ratio(2 * tp, 2 * tp + fp + fn) AS f1
FROM confusion;
COMMENT ON MACRO TABLE duckrank.confusion_of_log IS 'TP, FP, TN, FN, accuracy, precision, recall, F1 of a log(score, label) at a score threshold';
