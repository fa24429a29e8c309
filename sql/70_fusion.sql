-- Fusion: several runs of the same queries combined into one run, as ranx 0.3.21 (ranx.fuse) combines
-- them. Every macro reads a table of runs (run, query_id, doc_id, score): `run` numbers the runs 1, 2,
-- ... (a run's weight is weights[run]); a doc appears once per run and query. A run that lacks a query
-- has retrieved nothing for it. The public table macros, duckrank.fuse_<method>(runs, ...), are
-- generated from duckrank/registry.py (FUSION_METHODS) into sql/75_fusion_methods.sql: each checks its
-- arguments and calls the macro of its method below, over duckrank.fusion_ranked.
-- Ranks everywhere follow the trec rule: score descending, then doc_id descending.

-- duckrank.fusion_normalized(runs, norm): each run's scores per query normalised as ranx normalises
-- them (ranx/normalization): min-max (s - min) / max(max - min, 1e-9); min-max-inverted
-- (max - s) / max(max - min, 1e-9); max s / max(max, 1e-9); sum (s - min) / max(sum - min n, 1e-9);
-- zmuv (s - mean) / max(population standard deviation, 1e-9); rank 1 - (rank - 1) / n; borda over the
-- query's candidates (every doc any run retrieved, C of them): 1 - (rank - 1) / C for a doc the run
-- retrieved, 0.5 - (n - 1) / (2 C) for one it did not (so every run then lists every candidate);
-- none: the scores as given. n is the run's docs for the query. The 1e-9 floors are ranx's: a query
-- whose scores are all equal normalises to 0 (min-max, sum, zmuv).
CREATE OR REPLACE MACRO duckrank.fusion_normalized(runs, norm) AS TABLE
WITH given AS (
    SELECT run, query_id, doc_id, CAST(score AS DOUBLE) AS score FROM query_table(CAST(runs AS VARCHAR))
),
lists AS (
    SELECT *,
           min(score) OVER (PARTITION BY run, query_id) AS low,
           max(score) OVER (PARTITION BY run, query_id) AS high,
           sum(score) OVER (PARTITION BY run, query_id) AS total,
           avg(score) OVER (PARTITION BY run, query_id) AS mean,
           count(*) OVER (PARTITION BY run, query_id) AS listed,
           row_number() OVER (PARTITION BY run, query_id ORDER BY score DESC, doc_id DESC) AS rank
    FROM given
),
-- two passes, as numpy's std: the deviations from the mean, then their mean square
spread AS (
    SELECT *, sqrt(avg((score - mean) * (score - mean)) OVER (PARTITION BY run, query_id)) AS deviation FROM lists
),
candidates AS (
    SELECT query_id, doc_id, count(*) OVER (PARTITION BY query_id) AS candidates
    FROM (SELECT DISTINCT query_id, doc_id FROM given)
),
-- every run with every query, listing 0 docs where it retrieved none
run_lists AS (
    SELECT r.run, q.query_id, coalesce(l.listed, 0) AS listed
    FROM (SELECT DISTINCT run FROM given) r
    CROSS JOIN (SELECT DISTINCT query_id FROM given) q
    LEFT JOIN (SELECT run, query_id, count(*) AS listed FROM given GROUP BY run, query_id) l
           ON l.run = r.run AND l.query_id = q.query_id
)
SELECT run, query_id, doc_id,
       CASE norm
           WHEN 'min-max' THEN (score - low) / greatest(high - low, 1e-9)
           WHEN 'min-max-inverted' THEN (high - score) / greatest(high - low, 1e-9)
           WHEN 'max' THEN score / greatest(high, 1e-9)
           WHEN 'sum' THEN (score - low) / greatest(total - low * listed, 1e-9)
           WHEN 'zmuv' THEN (score - mean) / greatest(deviation, 1e-9)
           WHEN 'rank' THEN 1 - (rank - 1) / listed
           WHEN 'none' THEN score
       END AS score
FROM spread
WHERE norm <> 'borda'
UNION ALL BY NAME
SELECT l.run, c.query_id, c.doc_id,
       CASE WHEN s.rank IS NOT NULL THEN 1 - (s.rank - 1) / c.candidates
            ELSE 0.5 - (l.listed - 1) / (2 * c.candidates) END AS score
FROM run_lists l
JOIN candidates c ON c.query_id = l.query_id
LEFT JOIN lists s ON s.run = l.run AND s.query_id = c.query_id AND s.doc_id = c.doc_id
WHERE norm = 'borda';
COMMENT ON MACRO TABLE duckrank.fusion_normalized IS 'the runs (run, query_id, doc_id, score) with each run''s scores per query normalised as ranx does: min-max, min-max-inverted, max, sum, zmuv, rank, borda or none';

-- duckrank.fusion_ranked(runs, norm): the normalised runs, each doc with its rank in its run's list for
-- the query (by the normalised score, ties doc_id descending) and the list's length (listed).
CREATE OR REPLACE MACRO duckrank.fusion_ranked(runs, norm) AS TABLE
SELECT run, query_id, doc_id, score,
       row_number() OVER (PARTITION BY run, query_id ORDER BY score DESC, doc_id DESC) AS rank,
       count(*) OVER (PARTITION BY run, query_id) AS listed
FROM duckrank.fusion_normalized(runs, norm);
COMMENT ON MACRO TABLE duckrank.fusion_ranked IS 'the normalised runs with each doc''s rank in its run''s list for the query (ties doc_id descending) and the list''s length';

-- duckrank.fusion_dense(runs, norm): every run with every candidate of every query (a doc any run
-- retrieved for it), the rank NULL where the run did not retrieve it; `candidates` counts the query's
-- candidates and `listed` the run's docs for the query (0 for a query it lacks). Borda and Condorcet
-- give a doc a run did not retrieve a place in that run.
CREATE OR REPLACE MACRO duckrank.fusion_dense(runs, norm) AS TABLE
WITH ranked AS (SELECT * FROM duckrank.fusion_ranked(runs, norm)),
candidates AS (
    SELECT query_id, doc_id, count(*) OVER (PARTITION BY query_id) AS candidates
    FROM (SELECT DISTINCT query_id, doc_id FROM ranked)
),
run_lists AS (
    SELECT r.run, q.query_id, coalesce(l.listed, 0) AS listed
    FROM (SELECT DISTINCT run FROM ranked) r
    CROSS JOIN (SELECT DISTINCT query_id FROM ranked) q
    LEFT JOIN (SELECT run, query_id, any_value(listed) AS listed FROM ranked GROUP BY run, query_id) l
           ON l.run = r.run AND l.query_id = q.query_id
)
SELECT l.run, c.query_id, c.doc_id, d.rank, l.listed, c.candidates
FROM run_lists l
JOIN candidates c ON c.query_id = l.query_id
LEFT JOIN ranked d ON d.run = l.run AND d.query_id = c.query_id AND d.doc_id = c.doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_dense IS 'every run with every candidate doc of every query: its rank (NULL if the run did not retrieve it), the run''s list length and the query''s candidates';

-- duckrank.fusion_training(runs, qrels, norm): what the supervised methods learn from, ranx's hit lists:
-- for each run and each query of the qrels, each retrieved doc's rank and whether it is relevant
-- (grade >= 1, as ranx reads qrels), with `queries` the number of qrels queries. A qrels query the run
-- lacks still counts in `queries` (ranx's empty hit list); a run query the qrels lack is not training data.
CREATE OR REPLACE MACRO duckrank.fusion_training(runs, qrels, norm) AS TABLE
WITH judged AS (
    SELECT query_id, doc_id, max(relevance) AS relevance FROM query_table(CAST(qrels AS VARCHAR)) GROUP BY ALL
),
queries AS (SELECT count(DISTINCT query_id) AS queries FROM judged)
SELECT r.run, r.query_id, r.rank, r.listed,
       CASE WHEN j.relevance >= 1 THEN 1.0 ELSE 0.0 END AS hit,
       (SELECT queries FROM queries) AS queries
FROM duckrank.fusion_ranked(runs, norm) r
LEFT JOIN judged j ON j.query_id = r.query_id AND j.doc_id = r.doc_id
WHERE r.query_id IN (SELECT query_id FROM judged);
COMMENT ON MACRO TABLE duckrank.fusion_training IS 'ranx''s hit lists: each run''s retrieved docs of each qrels query with rank, list length and hit (grade >= 1), and the number of qrels queries';

-- duckrank.fusion_rank_probabilities(runs, qrels, norm): PosFuse's and SlideFuse's estimate (ranx
-- estimate_probs): for each run and rank, the share of the qrels queries with a doc at that rank whose doc
-- there is relevant.
CREATE OR REPLACE MACRO duckrank.fusion_rank_probabilities(runs, qrels, norm) AS TABLE
SELECT run, rank, avg(hit) AS probability
FROM duckrank.fusion_training(runs, qrels, norm)
GROUP BY run, rank;
COMMENT ON MACRO TABLE duckrank.fusion_rank_probabilities IS 'for each run and rank, the share of the qrels queries ranking a relevant doc there (PosFuse, SlideFuse)';

-- The methods. Each returns (query_id, doc_id, score) for every doc some run retrieved; a doc a run did
-- not retrieve adds nothing to that run's part (0 to a sum), unless the method says otherwise.
-- A doc's parts are added in run order (list_sum over a list ordered by run), as ranx adds them: sum()
-- adds in the order its threads meet the rows, so the last bit of a score could differ between calls.

-- CombSUM, CombMNZ, CombANZ, CombGMNZ, CombMAX, CombMIN, CombMED (Fox & Shaw 1993): the sum of the
-- doc's scores over the runs that retrieved it, times the number of those runs (MNZ), divided by it
-- (ANZ), times it to the power gamma (GMNZ); or their largest, smallest or median (the mean of the
-- middle two for an even count, as numpy's).
CREATE OR REPLACE MACRO duckrank.fusion_comb(runs, norm, combination, gamma) AS TABLE
SELECT query_id, doc_id,
       CASE combination
           WHEN 'sum' THEN list_sum(list(score ORDER BY run))
           WHEN 'mnz' THEN list_sum(list(score ORDER BY run)) * count(*)
           WHEN 'anz' THEN list_sum(list(score ORDER BY run)) / count(*)
           WHEN 'gmnz' THEN list_sum(list(score ORDER BY run)) * power(count(*), gamma)
           WHEN 'max' THEN max(score)
           WHEN 'min' THEN min(score)
           WHEN 'med' THEN percentile_cont(0.5) WITHIN GROUP (ORDER BY score)
       END AS score
FROM duckrank.fusion_ranked(runs, norm)
GROUP BY query_id, doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_comb IS 'CombSUM, CombMNZ, CombANZ, CombGMNZ (gamma), CombMAX, CombMIN or CombMED of the runs';

-- Weighted sums (ranx wsum, wmnz, mixed): sum of w s; sum of s times the sum of the weights of the runs
-- that retrieved the doc (WMNZ); sum of w s times the square root of their number (Mixed).
CREATE OR REPLACE MACRO duckrank.fusion_weighted(runs, norm, combination, weights) AS TABLE
SELECT query_id, doc_id,
       CASE combination
           WHEN 'wsum' THEN list_sum(list(weights[run] * score ORDER BY run))
           WHEN 'wmnz' THEN list_sum(list(score ORDER BY run)) * list_sum(list(weights[run] ORDER BY run))
           WHEN 'mixed' THEN list_sum(list(weights[run] * score ORDER BY run)) * sqrt(count(*))
       END AS score
FROM duckrank.fusion_ranked(runs, norm)
GROUP BY query_id, doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_weighted IS 'weighted sum (wsum), WMNZ or Mixed of the runs, weights[run] each';

-- Rank-based sums: RRF 1 / (k + rank) (Cormack et al. 2009); RBC (1 - phi) phi^(rank - 1) (Bailey et al.
-- 2017); ISR 1 / rank^2 times the number of runs that retrieved the doc, log_ISR times its logarithm,
-- LogN_ISR times ln(number + sigma) (Mourão et al. 2015); MAPFuse map_scores[run] / rank (Lillis et al.
-- 2010), map_scores being each run's MAP on the training qrels.
CREATE OR REPLACE MACRO duckrank.fusion_by_rank(runs, norm, combination, k, phi, sigma, map_scores) AS TABLE
SELECT query_id, doc_id,
       CASE combination
           WHEN 'rrf' THEN list_sum(list(1 / (k + rank) ORDER BY run))
           WHEN 'rbc' THEN list_sum(list((1 - phi) * power(phi, rank - 1) ORDER BY run))
           WHEN 'isr' THEN list_sum(list(1 / (rank * rank) ORDER BY run)) * count(*)
           WHEN 'log_isr' THEN list_sum(list(1 / (rank * rank) ORDER BY run)) * ln(count(*))
           WHEN 'logn_isr' THEN list_sum(list(1 / (rank * rank) ORDER BY run)) * ln(count(*) + sigma)
           WHEN 'mapfuse' THEN list_sum(list(map_scores[run] / rank ORDER BY run))
       END AS score
FROM duckrank.fusion_ranked(runs, norm)
GROUP BY query_id, doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_by_rank IS 'RRF (k), RBC (phi), ISR, log_ISR, LogN_ISR (sigma) or MAPFuse (map_scores) of the runs';

-- BordaFuse (Aslam & Montague 2001): a run gives a doc C - rank + 1 points (C: the query's candidates),
-- and (C - n + 1) / 2 to each candidate it did not retrieve (n: its list's length); weighted BordaFuse
-- sums weights[run] times the points.
CREATE OR REPLACE MACRO duckrank.fusion_borda(runs, norm, weights) AS TABLE
SELECT query_id, doc_id,
       list_sum(list(coalesce(weights[run], 1.0)
           * CASE WHEN rank IS NOT NULL THEN candidates - rank + 1 ELSE (candidates - listed + 1) / 2 END ORDER BY run)) AS score
FROM duckrank.fusion_dense(runs, norm)
GROUP BY query_id, doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_borda IS 'BordaFuse (weights NULL) or weighted BordaFuse of the runs';

-- Condorcet fuse (Montague & Aslam 2002): doc y beats doc x when the runs that rank y above x outweigh
-- those that rank x above y (each run's weight weights[run], 1 when NULL; a doc a run did not retrieve
-- ranks below all it did). A doc scores C minus the number of docs that beat it: when the majority
-- preference is a strict order, C for the first, C - 1 for the second, ..., ranx's scores. (ranx sorts
-- the candidates with a comparison that is not an order where the preference has cycles or ties, so
-- there its result depends on its sort; this count is defined everywhere.)
CREATE OR REPLACE MACRO duckrank.fusion_condorcet(runs, norm, weights) AS TABLE
WITH placed AS (
    SELECT run, query_id, doc_id, candidates, coalesce(weights[run], 1.0) AS weight,
           coalesce(rank, listed + 1) AS place  -- below every doc the run retrieved
    FROM duckrank.fusion_dense(runs, norm)
),
-- each pair of a query's candidates once: the weight of the runs that rank each above the other
duels AS (
    SELECT x.query_id, x.doc_id AS first, y.doc_id AS second,
           sum(CASE WHEN x.place < y.place THEN x.weight ELSE 0.0 END) AS for_first,
           sum(CASE WHEN y.place < x.place THEN x.weight ELSE 0.0 END) AS for_second
    FROM placed x
    JOIN placed y ON y.query_id = x.query_id AND y.run = x.run AND x.doc_id < y.doc_id
    GROUP BY x.query_id, x.doc_id, y.doc_id
),
defeats AS (
    SELECT query_id, CASE WHEN for_first > for_second THEN second ELSE first END AS doc_id
    FROM duels WHERE for_first <> for_second
)
SELECT c.query_id, c.doc_id, any_value(c.candidates) - count(d.doc_id) AS score
FROM (SELECT DISTINCT query_id, doc_id, candidates FROM placed) c
LEFT JOIN defeats d ON d.query_id = c.query_id AND d.doc_id = c.doc_id
GROUP BY c.query_id, c.doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_condorcet IS 'Condorcet (weights NULL) or weighted Condorcet fuse of the runs: candidates minus the docs a majority prefers';

-- PosFuse (Lillis et al. 2010): a doc at rank r of a run scores the run's probability that a doc there is
-- relevant (duckrank.fusion_rank_probabilities; 0 past the deepest training rank). SlideFuse (Lillis et
-- al. 2008): the mean of those probabilities over ranks r - w to r + w (clipped to the list; a rank past
-- the deepest training rank counts 0).
CREATE OR REPLACE MACRO duckrank.fusion_by_position(runs, qrels, norm, combination, w) AS TABLE
WITH ranked AS (SELECT * FROM duckrank.fusion_ranked(runs, norm)),
probabilities AS (SELECT * FROM duckrank.fusion_rank_probabilities(runs, qrels, norm)),
windows AS (
    SELECT r.run, r.query_id, r.doc_id,
           CASE combination WHEN 'posfuse' THEN r.rank ELSE greatest(r.rank - w, 1) END AS first_rank,
           CASE combination WHEN 'posfuse' THEN r.rank ELSE least(r.rank + w, r.listed) END AS last_rank
    FROM ranked r
),
per_run AS (
    SELECT w.query_id, w.doc_id,
           coalesce(sum(p.probability), 0) / (any_value(w.last_rank) - any_value(w.first_rank) + 1) AS score
    FROM windows w
    LEFT JOIN probabilities p ON p.run = w.run AND p.rank BETWEEN w.first_rank AND w.last_rank
    GROUP BY w.run, w.query_id, w.doc_id
)
SELECT query_id, doc_id, sum(score) AS score FROM per_run GROUP BY query_id, doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_by_position IS 'PosFuse or SlideFuse (w) of the runs, trained on qrels';

-- ProbFuse (Lillis et al. 2006): each run's lists cut into n_segments segments of ceil(n / n_segments)
-- docs; a segment's probability is the mean over the qrels queries of the share of relevant docs in it
-- (a query with no docs there adds 0); a doc in segment k (from 1) scores that probability / k.
-- SegFuse (Shokouhi 2007): segments of fixed sizes, ranks 1-5, 6-15, 16-35, ... up to 5115 (10 2^(k-1) - 5),
-- a segment's probability the mean over the qrels queries of its relevant docs / its size; a doc scores
-- that probability times (its score + 1), and 0 below rank 5115. BayesFuse (Aslam & Montague 2001):
-- segments at ranks 1-5, 6-10, 11-15, 16-20, 21-30, 31-100, 101-200, 201-500, 501-1000; p the mean
-- precision in the segment over the qrels queries (0 read as 0.001, and 1 - p = 0 as 0.001), a doc scores
-- ln(p / (1 - p)),
-- a run that did not retrieve it (or retrieved it below rank 1000) adds ln(0.001 / 0.999).
CREATE OR REPLACE MACRO duckrank.fusion_by_segment(runs, qrels, norm, combination, n_segments) AS TABLE
WITH bounds AS (
    -- the first rank of each fixed segment after the first, and one past the last
    SELECT CASE combination WHEN 'segfuse' THEN [6, 16, 36, 76, 156, 316, 636, 1276, 2556, 5116]
                            ELSE [6, 11, 16, 21, 31, 101, 201, 501, 1001] END AS starts
),
segmented AS (
    SELECT t.*,
           CASE combination WHEN 'probfuse' THEN CAST(floor((t.rank - 1) / ceil(t.listed / n_segments)) AS BIGINT)
                ELSE len(list_filter(b.starts, lambda s: s <= t.rank)) END AS segment
    FROM duckrank.fusion_training(runs, qrels, norm) t CROSS JOIN bounds b
),
-- each qrels query's part of a segment's probability: hits / segment size (ProbFuse: the segment's own
-- docs; the fixed segments: their nominal size)
parts AS (
    SELECT run, query_id, segment, any_value(queries) AS queries,
           CASE combination WHEN 'probfuse' THEN avg(hit)
                ELSE sum(hit) / (list_concat([1], b.starts)[segment + 2] - list_concat([1], b.starts)[segment + 1]) END AS part
    FROM segmented CROSS JOIN bounds b
    GROUP BY run, query_id, segment, b.starts
),
probabilities AS (
    SELECT run, segment, sum(part) / any_value(queries) AS probability FROM parts GROUP BY run, segment
),
-- ranx moves a probability of 0 to 0.001, then 1 minus it from 0 to 0.001
odds AS (
    SELECT run, segment, ln(p / CASE WHEN 1 - p = 0 THEN 0.001 ELSE 1 - p END) AS log_odds
    FROM (SELECT run, segment, CASE WHEN probability = 0 THEN 0.001 ELSE probability END AS p FROM probabilities)
),
placed AS (
    SELECT r.*,
           CASE combination WHEN 'probfuse' THEN CAST(floor((r.rank - 1) / ceil(r.listed / n_segments)) AS BIGINT)
                ELSE len(list_filter(b.starts, lambda s: s <= r.rank)) END AS segment
    FROM duckrank.fusion_ranked(runs, norm) r CROSS JOIN bounds b
)
SELECT d.query_id, d.doc_id,
       CASE combination
           WHEN 'probfuse' THEN sum(coalesce(p.probability, 0) / (d.segment + 1))
           WHEN 'segfuse' THEN sum(coalesce(p.probability, 0) * (d.score + 1))
           WHEN 'bayesfuse' THEN sum(coalesce(o.log_odds, ln(0.001 / 0.999)))
               + ((SELECT count(DISTINCT run) FROM duckrank.fusion_ranked(runs, norm)) - count(*)) * ln(0.001 / 0.999)
       END AS score
FROM placed d
LEFT JOIN probabilities p ON p.run = d.run AND p.segment = d.segment
LEFT JOIN odds o ON o.run = d.run AND o.segment = d.segment
GROUP BY d.query_id, d.doc_id;
COMMENT ON MACRO TABLE duckrank.fusion_by_segment IS 'ProbFuse (n_segments), SegFuse or BayesFuse of the runs, trained on qrels';
