-- The diversity family over subtopic qrels: alpha-DCG, alpha-nDCG, ERR-IA, nERR-IA, NRBP, nNRBP,
-- MAP-IA, P-IA and subtopic recall, as ndeval 4.5 (TREC Web track 2009-2012; Clarke et al. SIGIR
-- 2008, ICTIR 2009; Chapelle et al. CIKM 2009; Agrawal et al. WSDM 2009) computes them through
-- pyndeval 0.0.8, ir_measures' provider of this family.
--
-- A judgment here is (query_id, subtopic, doc_id, relevance): a doc is relevant to a subtopic when
-- its grade there is >= rel_level (ndeval binarises every judgment; a negative grade is relevant only
-- when rel_level is below it, as pyndeval reads it). A query's subtopics are those with a relevant
-- doc (ndeval ignores the others); S is their number. Every measure is 0 for a query with S = 0
-- (nNRBP: NaN, ndeval's 0 / 0, unless nothing was retrieved: a qrels query the run misses, which
-- ndeval does not score and ir_measures scores 0).
--
-- The gain of the doc at rank i: g(i) = sum over the subtopics j it is relevant to of (1 - alpha)^c,
-- c = the docs relevant to j ranked above it (ndeval's novelty-discounted gain). The ideal ranking is
-- ndeval's greedy one: at each rank the judged doc of highest gain given those above it, a tie to the
-- largest doc id.
--
-- The ad-hoc measures never read this file's relation: duckrank.rank_subtopics is a pass of its own,
-- run only when a diversity measure is asked for.

-- The gains g(i) of the docs of a ranking (as {rank, topics}, rank order), as {rank, gain}: a
-- subtopic's weight is (1 - alpha)^(the docs above relevant to it); ndeval multiplies it down doc by
-- doc, which agrees to rounding.
CREATE OR REPLACE MACRO duckrank.novelty_gains(docs, alpha) AS
    list_transform(docs, lambda d, p: {'rank': d.rank, 'gain': list_sum(list_transform(d.topics, lambda t:
        power(1 - alpha, len(list_filter(docs[1:p - 1], lambda above: list_contains(above.topics, t))))))});
COMMENT ON MACRO duckrank.novelty_gains IS 'g(i) = sum over the doc''s subtopics of (1 - alpha)^(docs of that subtopic above it), as {rank, gain}';

-- The gains of ndeval's greedy ideal ranking of the candidates (each a doc's topics, doc id
-- descending), as {rank, gain}: at each rank the candidate of highest gain, the first of equals. A
-- fold whose every element is the state (weights, what is left, the gains so far), so that the
-- state and the elements have one type, as list_reduce needs on every DuckDB.
CREATE OR REPLACE MACRO duckrank.ideal_novelty_gains(candidates, subtopic_count, alpha) AS
    list_reduce(list_transform(range(len(candidates) + 1), lambda step: {
            'weights': list_transform(range(subtopic_count), lambda j: CAST(1 AS DOUBLE)),
            'left': candidates, 'gains': CAST([] AS STRUCT(rank BIGINT, gain DOUBLE)[])}),
        lambda s, unused: list_transform(
            [list_transform(s.left, lambda c: list_sum(list_transform(c, lambda t: s.weights[t])))],
            lambda scores: list_transform([list_position(scores, list_max(scores))], lambda best: {
                'weights': list_transform(s.weights, lambda w, j: CASE WHEN list_contains(s.left[best], j)
                                                                       THEN w * (1 - alpha) ELSE w END),
                'left': list_filter(s.left, lambda c, i: i <> best),
                'gains': list_append(s.gains, {'rank': len(s.gains) + 1, 'gain': scores[best]})})[1])[1]).gains;
COMMENT ON MACRO duckrank.ideal_novelty_gains IS 'the gains of ndeval''s greedy ideal ranking, as {rank, gain}';

-- One row per scored query: the retrieved docs relevant to a subtopic, in rank order, as {rank,
-- topics} (topics: the 1-based numbers of its subtopics); num_ret; subtopic_count (S); num_rel (docs
-- relevant to some subtopic); relevant_per_topic (docs relevant to each subtopic, by number); alpha;
-- gains (g(i) of those docs, as {rank, gain}) and ideal_gains (those of ndeval's greedy ideal
-- ranking), computed once here for every measure of this alpha.
-- Ranking: score descending, ties by doc id descending (ties := 'trec') or ascending
-- (ties := 'doc_ascending', ndeval's order as pyndeval sorts a run). unjudged := 'skip' drops the
-- docs the query has no judgment of before ranking (ir_measures' judged_only); max_rank keeps each
-- query's top max_rank (ndeval -M); duplicates := 'max' keeps a doc the run repeats at its highest
-- score. A subtopic judgment given twice counts once, at its highest grade. Queries: those in both,
-- or every qrels query with complete := true.
CREATE OR REPLACE MACRO duckrank.rank_subtopics(qrels, run, rel_level, ties, max_rank, complete, unjudged,
        duplicates, alpha) AS TABLE
WITH
judgments AS NOT MATERIALIZED (
    SELECT query_id, doc_id, CAST(subtopic AS VARCHAR) AS subtopic, CAST(relevance AS DOUBLE) AS grade
    FROM query_table(CAST(qrels AS VARCHAR))
),
-- each query's subtopics with a relevant doc, numbered 1..S by their text
topic_docs AS MATERIALIZED (
    SELECT query_id, doc_id, dense_rank() OVER (PARTITION BY query_id ORDER BY subtopic) AS topic
    FROM (SELECT DISTINCT query_id, doc_id, subtopic FROM judgments WHERE grade >= rel_level)
),
-- every judged doc with the subtopics it is relevant to (none: judged, relevant to no subtopic)
judged_docs AS MATERIALIZED (
    SELECT j.query_id, j.doc_id, coalesce(list(t.topic ORDER BY t.topic) FILTER (WHERE t.topic IS NOT NULL), [])
               AS topics
    FROM (SELECT DISTINCT query_id, doc_id FROM judgments) j
    LEFT JOIN topic_docs t ON t.query_id = j.query_id AND t.doc_id = j.doc_id
    GROUP BY j.query_id, j.doc_id
),
query_stats AS (
    SELECT d.query_id, coalesce(s.subtopic_count, 0) AS subtopic_count,
           coalesce(s.relevant_per_topic, []) AS relevant_per_topic, d.num_rel, d.ideal
    FROM (SELECT query_id, count(*) FILTER (WHERE len(topics) > 0) AS num_rel,
                 coalesce(list(topics ORDER BY CAST(doc_id AS VARCHAR) DESC) FILTER (WHERE len(topics) > 0), []) AS ideal
          FROM judged_docs GROUP BY query_id) d
    LEFT JOIN (SELECT query_id, count(*) AS subtopic_count, list(docs ORDER BY topic) AS relevant_per_topic
               FROM (SELECT query_id, topic, count(*) AS docs FROM topic_docs GROUP BY query_id, topic)
               GROUP BY query_id) s ON s.query_id = d.query_id
),
run_docs AS (
    SELECT r.query_id, CAST(r.doc_id AS VARCHAR) AS doc_id, r.score, coalesce(j.topics, []) AS topics
    FROM (SELECT query_id, doc_id, CAST(score AS DOUBLE) AS score FROM query_table(CAST(run AS VARCHAR))
          WHERE duplicates <> 'max'
          UNION ALL
          SELECT query_id, doc_id, max(CAST(score AS DOUBLE)) FROM query_table(CAST(run AS VARCHAR))
          WHERE duplicates = 'max' GROUP BY query_id, doc_id) r
    LEFT JOIN judged_docs j ON j.query_id = r.query_id AND j.doc_id = r.doc_id
    WHERE unjudged <> 'skip' OR j.doc_id IS NOT NULL
),
ranked_docs AS (
    SELECT query_id, count(*) FILTER (WHERE rank <= coalesce(max_rank, rank)) AS num_ret,
           count(*) - count(DISTINCT doc_id) AS repeats,
           count(*) FILTER (WHERE score IS NULL OR NOT isfinite(score)) AS bad_scores,
           coalesce(list({'rank': rank, 'topics': topics} ORDER BY rank)
                        FILTER (WHERE len(topics) > 0 AND rank <= coalesce(max_rank, rank)), []) AS docs
    FROM (SELECT *, row_number() OVER (PARTITION BY query_id ORDER BY score DESC,
                                       CASE WHEN ties = 'trec' THEN doc_id END DESC, doc_id ASC) AS rank
          FROM run_docs)
    GROUP BY query_id
),
problems AS (
    SELECT CASE WHEN ties NOT IN ('trec', 'doc_ascending')
                THEN 'the diversity measures rank by score, ties by doc id: ties must be trec or doc_ascending; got '
                     || duckrank.show(ties) END AS problem
    UNION ALL
    SELECT CASE WHEN unjudged NOT IN ('nonrelevant', 'skip')
                THEN 'the diversity measures read unjudged docs as relevant to no subtopic or skip them: unjudged '
                     || 'must be nonrelevant or skip; got ' || duckrank.show(unjudged) END
    UNION ALL
    (SELECT 'run ' || duckrank.show(run) || ' has a doc twice, or a NULL, NaN or infinite score, for query_id '
            || duckrank.show(query_id) || '; each (query_id, doc_id) must appear once (or pass duplicates := ''max'') '
            || 'with a finite score'
     FROM ranked_docs WHERE repeats > 0 OR bad_scores > 0 LIMIT 1)
),
guard AS (
    SELECT duckrank.raise_problems(string_agg(problem, chr(10))) AS fired FROM problems
)
-- the ideal candidates: each relevant judged doc's topics, doc id descending (the greedy's tie order)
SELECT s.query_id, coalesce(r.docs, []) AS docs, coalesce(r.num_ret, 0) AS num_ret, s.subtopic_count, s.num_rel,
       s.relevant_per_topic, CAST(alpha AS DOUBLE) AS alpha,
       duckrank.novelty_gains(coalesce(r.docs, []), alpha) AS gains,
       duckrank.ideal_novelty_gains(s.ideal, s.subtopic_count, alpha) AS ideal_gains
FROM query_stats s
LEFT JOIN ranked_docs r ON r.query_id = s.query_id
WHERE (complete OR r.query_id IS NOT NULL) AND (SELECT count(fired) FROM guard) = 0;
COMMENT ON MACRO TABLE duckrank.rank_subtopics IS 'the subtopic-ranked relation the diversity measures read: one row per query with its relevant retrieved docs as {rank, topics}, S, the docs per subtopic, and the novelty gains of the run and of the greedy ideal ranking for one alpha';

-- sum over ranks i <= k of g(i) / log2(i + 1) (discount = 'log2') or g(i) / i ('reciprocal').
CREATE OR REPLACE MACRO duckrank.discounted_novelty(gains, k, discount) AS
    coalesce(list_sum(list_transform(list_filter(gains, lambda g: g.rank <= k),
        lambda g: g.gain / CASE WHEN discount = 'log2' THEN log2(g.rank + 1) ELSE g.rank END)), 0.0);
COMMENT ON MACRO duckrank.discounted_novelty IS 'sum_{i<=k} g(i) / log2(i + 1), or / i';

-- ndeval's "ideal ideal" normaliser: the discounted gain of k docs each relevant to all S subtopics,
-- S (1 - alpha)^(i-1) at rank i. ndeval leaves rank 1 unnormalised (its loop starts at the second).
CREATE OR REPLACE MACRO duckrank.ideal_ideal(subtopic_count, alpha, k, discount) AS
    CASE WHEN k = 1 THEN 1.0 ELSE list_sum(list_transform(range(1, k + 1), lambda i:
        subtopic_count * power(1 - alpha, i - 1) / CASE WHEN discount = 'log2' THEN log2(i + 1) ELSE i END)) END;
COMMENT ON MACRO duckrank.ideal_ideal IS 'ndeval''s collection-independent normaliser: sum_{i<=k} S (1 - alpha)^(i-1) / discount(i) (1 at k = 1)';

-- The cutoff a measure reads: k, or every retrieved doc when k is NULL.
CREATE OR REPLACE MACRO duckrank.diversity_depth(q, k) AS coalesce(k, q.num_ret);
COMMENT ON MACRO duckrank.diversity_depth IS 'k, or the number retrieved when k is NULL';

-- alpha-DCG@k (ndeval alpha-DCG: collection-independent normalisation) and alpha-nDCG@k (over the
-- greedy ideal's alpha-DCG@k); with discount = 'reciprocal', ERR-IA@k and nERR-IA@k.
CREATE OR REPLACE MACRO duckrank.novelty_dcg_of(q, k, discount, normalized) AS
    list_transform([duckrank.diversity_depth(q, k)], lambda depth:
        CASE WHEN q.subtopic_count = 0 OR depth = 0 THEN 0.0
             ELSE duckrank.discounted_novelty(q.gains, depth, discount)
                  / CASE WHEN normalized THEN duckrank.discounted_novelty(q.ideal_gains, depth, discount)
                         ELSE duckrank.ideal_ideal(q.subtopic_count, q.alpha, depth, discount) END END)[1];
COMMENT ON MACRO duckrank.novelty_dcg_of IS 'alpha-DCG / alpha-nDCG (discount log2) or ERR-IA / nERR-IA (reciprocal) at k, as ndeval';

-- The alpha of these is the relation's (duckrank.rank_subtopics), which computed the gains.
CREATE OR REPLACE MACRO duckrank.alpha_dcg_of(q, k) AS duckrank.novelty_dcg_of(q, k, 'log2', false);
COMMENT ON MACRO duckrank.alpha_dcg_of IS 'alpha-DCG@k = sum_{i<=k} g(i) / log2(i+1), / sum_{i<=k} S (1-alpha)^(i-1) / log2(i+1) (ndeval)';
CREATE OR REPLACE MACRO duckrank.alpha_ndcg_of(q, k) AS duckrank.novelty_dcg_of(q, k, 'log2', true);
COMMENT ON MACRO duckrank.alpha_ndcg_of IS 'alpha-nDCG@k = alpha-DCG@k / that of ndeval''s greedy ideal ranking';
-- ERR-IA's gain is alpha-DCG's with a 1/i discount, over a relation of alpha 0.5 (ndeval's ERR-IA
-- reads alpha as every subtopic's stopping chance; ir_measures gives it ndeval's default).
CREATE OR REPLACE MACRO duckrank.err_ia_of(q, k) AS duckrank.novelty_dcg_of(q, k, 'reciprocal', false);
COMMENT ON MACRO duckrank.err_ia_of IS 'ERR-IA@k = sum_{i<=k} g(i) / i, / sum_{i<=k} S (1-alpha)^(i-1) / i (ndeval)';
CREATE OR REPLACE MACRO duckrank.nerr_ia_of(q, k) AS duckrank.novelty_dcg_of(q, k, 'reciprocal', true);
COMMENT ON MACRO duckrank.nerr_ia_of IS 'nERR-IA@k = ERR-IA@k / that of ndeval''s greedy ideal ranking';

-- NRBP = (1 - (1 - alpha) patience) / S * sum_i g(i) patience^(i-1) over every retrieved doc.
CREATE OR REPLACE MACRO duckrank.nrbp_value(gains, subtopic_count, alpha, patience) AS
    (1 - (1 - alpha) * patience) / subtopic_count
    * coalesce(list_sum(list_transform(gains, lambda g: g.gain * power(patience, g.rank - 1))), 0.0);
COMMENT ON MACRO duckrank.nrbp_value IS 'NRBP of a ranking''s gains';

CREATE OR REPLACE MACRO duckrank.nrbp_of(q, patience) AS
    CASE WHEN q.subtopic_count = 0 THEN 0.0 ELSE duckrank.nrbp_value(q.gains, q.subtopic_count, q.alpha, patience) END;
COMMENT ON MACRO duckrank.nrbp_of IS 'NRBP = (1 - (1-alpha) beta) / S sum_i g(i) beta^(i-1) (ndeval)';

CREATE OR REPLACE MACRO duckrank.nnrbp_of(q, patience) AS
    CASE WHEN q.subtopic_count = 0 AND q.num_ret = 0 THEN 0.0
         WHEN q.subtopic_count = 0 THEN CAST('NaN' AS DOUBLE)
         ELSE duckrank.nrbp_value(q.gains, q.subtopic_count, q.alpha, patience)
              / duckrank.nrbp_value(q.ideal_gains, q.subtopic_count, q.alpha, patience) END;
COMMENT ON MACRO duckrank.nnrbp_of IS 'nNRBP = NRBP / that of ndeval''s greedy ideal ranking (NaN when S = 0, as ndeval, but 0 with nothing retrieved)';

-- MAP-IA: the mean over the subtopics of AP with the subtopic's relevant docs (precision counts only
-- that subtopic's docs), over every retrieved doc.
CREATE OR REPLACE MACRO duckrank.ap_ia_of(q) AS
    CASE WHEN q.subtopic_count = 0 THEN 0.0 ELSE
        list_sum(list_transform(range(1, q.subtopic_count + 1), lambda t:
            coalesce(list_sum(list_transform(q.docs, lambda d, p: CASE WHEN list_contains(d.topics, t)
                THEN len(list_filter(q.docs[1:p], lambda above: list_contains(above.topics, t))) / d.rank
                ELSE 0.0 END)), 0.0) / q.relevant_per_topic[t])) / q.subtopic_count END;
COMMENT ON MACRO duckrank.ap_ia_of IS 'MAP-IA = mean over subtopics j of sum_{i: rel_j(i)} P_j@i / R_j (ndeval)';

-- P-IA@k = the (doc, subtopic) relevances in the top k / (k S).
CREATE OR REPLACE MACRO duckrank.p_ia_of(q, k) AS
    list_transform([duckrank.diversity_depth(q, k)], lambda depth:
        CASE WHEN q.subtopic_count = 0 OR depth = 0 THEN 0.0
             ELSE coalesce(list_sum(list_transform(list_filter(q.docs, lambda d: d.rank <= depth),
                                                   lambda d: len(d.topics))), 0) / (depth * q.subtopic_count) END)[1];
COMMENT ON MACRO duckrank.p_ia_of IS 'P-IA@k = sum_{i<=k} (subtopics doc i is relevant to) / (k S) (ndeval)';

-- Subtopic recall@k = the subtopics the top k cover / S.
CREATE OR REPLACE MACRO duckrank.subtopic_recall_of(q, k) AS
    CASE WHEN q.subtopic_count = 0 THEN 0.0
         ELSE len(list_distinct(flatten(list_transform(list_filter(q.docs, lambda d: d.rank <= duckrank.diversity_depth(q, k)),
                                                       lambda d: d.topics)))) / q.subtopic_count END;
COMMENT ON MACRO duckrank.subtopic_recall_of IS 'StRecall@k = subtopics covered by the top k / S (ndeval strec)';
