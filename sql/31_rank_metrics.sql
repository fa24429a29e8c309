-- Rank-sensitive binary metrics: reciprocal rank, average precision, bpref, interpolated precision.
-- Sources: trec_eval 10.0 m_recip_rank.c, m_map.c, m_map_cut.c, m_bpref.c, m_iprec_at_recall.c,
-- m_11pt_avg.c; seeds 003 and 004 (AP worked examples).

-- RR@k = 1 / rank of the first relevant doc at ranks <= k, else 0. k NULL: trec_eval recip_rank.
CREATE OR REPLACE MACRO duckrank.reciprocal_rank_agg(is_ideal, rank, doc_rel, tie_rule, k) AS
    duckrank.needs_strict_ties(
        coalesce(max(CASE WHEN NOT is_ideal AND doc_rel > 0 AND rank <= coalesce(k, rank)
                          THEN 1.0 / rank END), 0.0),
        tie_rule, 'reciprocal rank');
COMMENT ON MACRO duckrank.reciprocal_rank_agg IS 'RR@k = 1 / rank of the first relevant doc within k, else 0';

-- AP@k = sum_{i<=k, rel(i)} P@i / D. D = R (trec_eval map, map_cut), min(R, k) ("min", recsys
-- MAP@k) or the relevant docs retrieved in the top k ("hits", seed 004); 0 when D = 0.
CREATE OR REPLACE MACRO duckrank.average_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, k,
        denominator := 'R') AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            coalesce(sum(CASE WHEN NOT is_ideal AND doc_rel > 0 AND rank <= coalesce(k, rank)
                              THEN cum_rel / rank END), 0),
            CASE denominator
                WHEN 'min' THEN least(max(num_rel), coalesce(k, max(num_rel)))
                WHEN 'hits' THEN duckrank.hits_agg(is_ideal, rank, doc_rel, k)
                ELSE max(num_rel) END),
        tie_rule, 'average precision');
COMMENT ON MACRO duckrank.average_precision_agg IS 'AP@k = sum over relevant ranks i<=k of P@i, divided by R (or min(R,k), or hits)';

-- bpref = (1/R) sum over relevant retrieved r of (1 - min(n_r, R) / min(N, R)), n_r = judged
-- non-relevant docs above r, N = judged non-relevant docs of the query. Unjudged docs and
-- negative grades are skipped, exactly as trec_eval.
CREATE OR REPLACE MACRO duckrank.bpref_agg(is_ideal, doc_rel, nonrel_above, num_rel, num_nonrel, tie_rule) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            coalesce(sum(CASE WHEN NOT is_ideal AND doc_rel > 0
                              THEN 1.0 - CASE WHEN nonrel_above > 0
                                              THEN CAST(least(nonrel_above, num_rel) AS DOUBLE)
                                                   / least(num_nonrel, num_rel)
                                              ELSE 0.0 END END), 0),
            max(num_rel)),
        tie_rule, 'bpref');
COMMENT ON MACRO duckrank.bpref_agg IS 'bpref = (1/R) sum_{relevant retrieved r} (1 - min(n_r, R) / min(N, R)) (trec_eval bpref)';

-- Interpolated precision at recall level r: the best precision at or below the rank where the
-- relevant docs retrieved reach round(r * R) (half away from zero, as trec_eval 10 prints; at
-- least one), 0 if never reached.
CREATE OR REPLACE MACRO duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule,
        recall) AS
    duckrank.needs_strict_ties(
        coalesce(max(CASE WHEN NOT is_ideal AND doc_rel > 0
                               AND cum_rel >= greatest(round(CAST(recall AS DOUBLE) * num_rel), 1)
                          THEN cum_rel / rank END), 0.0),
        tie_rule, 'interpolated precision');
COMMENT ON MACRO duckrank.interpolated_precision_agg IS 'iP@r = max precision at ranks where recall >= r (trec_eval iprec_at_recall)';

-- 11-point average: the mean of interpolated precision at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg).
CREATE OR REPLACE MACRO duckrank.eleven_point_average_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule) AS
    (duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.0)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.1)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.2)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.3)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.4)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.5)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.6)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.7)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.8)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 0.9)
     + duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, 1.0)) / 11;
COMMENT ON MACRO duckrank.eleven_point_average_agg IS 'mean interpolated precision at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg)';

CREATE OR REPLACE MACRO duckrank.reciprocal_rank(qrels, run, k := NULL, rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty)) AS fired),
per_query AS (
    SELECT query_id,
           duckrank.empty_policy(duckrank.reciprocal_rank_agg(is_ideal, rank, doc_rel, tie_rule, k),
                                 max(num_rel), empty) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates)
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.reciprocal_rank IS 'RR@k per query: 1 / rank of the first relevant doc (trec_eval recip_rank; mean = MRR)';

CREATE OR REPLACE MACRO duckrank.average_precision(qrels, run, k := NULL, denominator := 'R', rel_level := 1,
        ties := 'trec', max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(
                   duckrank.option_problems(k := k, empty := empty, denominator := denominator)) AS fired),
per_query AS (
    SELECT query_id,
           duckrank.empty_policy(
               duckrank.average_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, k,
                                              denominator := denominator),
               max(num_rel), empty) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates)
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.average_precision IS 'AP@k per query (trec_eval map / map_cut.k; denominator R, min or hits; mean = MAP)';

CREATE OR REPLACE MACRO duckrank.bpref(qrels, run, rel_level := 1, ties := 'trec', max_rank := NULL,
        complete := false, empty := 'zero', unjudged := 'nonrelevant', duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(empty := empty)) AS fired),
per_query AS (
    SELECT query_id,
           duckrank.empty_policy(
               duckrank.bpref_agg(is_ideal, doc_rel, nonrel_above, num_rel, num_nonrel, tie_rule),
               max(num_rel), empty) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates)
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.bpref IS 'bpref per query (Buckley & Voorhees 2004, trec_eval bpref)';

CREATE OR REPLACE MACRO duckrank.interpolated_precision(qrels, run, recall := 0.0, rel_level := 1,
        ties := 'trec', max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(empty := empty, recall := recall)) AS fired),
per_query AS (
    SELECT query_id,
           duckrank.empty_policy(
               duckrank.interpolated_precision_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule, recall),
               max(num_rel), empty) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates)
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.interpolated_precision IS 'interpolated precision at a recall level per query (trec_eval iprec_at_recall)';

CREATE OR REPLACE MACRO duckrank.eleven_point_average(qrels, run, rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(empty := empty)) AS fired),
per_query AS (
    SELECT query_id,
           duckrank.empty_policy(
               duckrank.eleven_point_average_agg(is_ideal, rank, doc_rel, cum_rel, num_rel, tie_rule),
               max(num_rel), empty) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates)
    WHERE (SELECT count(fired) FROM guard) = 0
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.eleven_point_average IS '11-point interpolated average precision per query (trec_eval 11pt_avg)';
