-- The ranked relation: the one building block every ranking metric reads.
--
-- duckrank.rank_queries takes every option as an argument; duckrank.ranked (generated in
-- sql/60_measures.sql from the registry) checks the options and supplies their defaults.
--
-- One row per scored query. Its `docs` column is the query's ranking as a list in rank order,
-- built by a single sort per query: the run is joined to the qrels, each query's retrieved docs
-- are collected into one list and that list is sorted by the tie rule. Every metric is then a
-- scalar macro over that row (sql/30..41: duckrank.<metric>_of(q, ...)), so any number of
-- metrics share the one sort, and running quantities (relevant docs so far, judged non-relevant
-- docs above, ERR's chance to reach a rank) are list positions instead of a second window.
--
-- Inputs: qrels(query_id, doc_id, relevance), run(query_id, doc_id, score); table or view names,
-- or file paths (query_table). Which queries appear: those in both (trec_eval); with
-- complete := true every qrels query (trec_eval -c). Queries only in the run are never scored.
--
-- Columns:
--   query_id
--   docs        the retrieved docs in rank order (after unjudged := 'skip' and the max_rank cut),
--               as structs:
--                 rank       1-based rank
--                 doc_id, score  as in the run
--                 grade      the judged grade, or the imputed one under unjudged := mean|median;
--                            NULL for an unjudged doc
--                 judged_grade  the qrels grade (NULL when unjudged or imputed)
--                 rel        1 if grade >= rel_level (and grade >= 0), else 0
--                 nonrel     1 for a judged non-relevant doc (0 <= grade < rel_level), else 0
--                 gain       gain_of(grade)
--                 tied_rel, tied_gain  rel and gain; under ties := 'average' the mean over the
--                            doc's tie group (the expected value over every order of the ties)
--                 unjudged   not in the qrels, or a negative ("pooled, unjudged") grade
--                 err_stop   ERR's stopping probability (2^g - 1) / 2^g_max
--               With judged_only := true (the default) only the docs a metric can see are kept:
--               those with a grade (under ties := 'average' every doc, since an unjudged doc
--               shares its tie group's relevance). AUC ranks among every retrieved doc, so it
--               needs judged_only := false.
--   ideal       the ideal ranking as blocks of one grade with a positive gain, best first:
--               {first_rank, docs, gain, discount}, discount = sum of 1/log2(i + 1) over the
--               block's ranks. IDCG sums whole blocks and cuts the one block k falls in.
--   num_ret     documents retrieved (up to max_rank; after unjudged := 'skip')
--   num_rel     R, relevant docs of the query in the qrels
--   num_nonrel  judged non-relevant docs of the query in the qrels (bpref's N)
--   num_judged  judged docs of the query in the qrels, whatever their grade (ranx's bpref: N = num_judged - R)
--   top_grade   the query's highest grade in the qrels, at least 0 (graded RBP's scale)
--   zero_filled a query the run has not (complete := true), which trec_eval -c scores on a stand-in
--               ranking of one unjudged doc (duckrank.stand_in_docs) that it then mostly zeroes;
--               not under -J (unjudged := 'skip') or -M 0, which drop that doc: an empty ranking
--   all_docs    whether docs holds every retrieved doc (judged_only := false)
--   tie_rule    the ties option, so metrics that are not linear in the ranking can refuse 'average'

-- sum_{i=first..last} 1 / log2(i + 1): the DCG discount of a run of ranks (0 when last < first).
CREATE OR REPLACE MACRO duckrank.discount_sum(first_rank, last_rank) AS
    coalesce(list_sum(list_transform(range(CAST(first_rank AS BIGINT), CAST(last_rank AS BIGINT) + 1),
                                     lambda i: 1.0 / log2(i + 1))), 0.0);
COMMENT ON MACRO duckrank.discount_sum IS 'sum of the DCG discounts 1/log2(i+1) for ranks first..last';

-- The first offending row of a run or qrels, for a message: one of the rows where `bad` holds.
CREATE OR REPLACE MACRO duckrank.first_offender(query_id, doc_id, bad) AS
    any_value({'query_id': query_id, 'doc_id': doc_id}) FILTER (WHERE bad);
COMMENT ON MACRO duckrank.first_offender IS 'aggregate: the ids of one row where bad holds, NULL if none';

-- A doc that a sorted list of doc ids holds more than once (NULL if none). Evaluated only for a
-- query already known to repeat a doc, so its quadratic count does not matter.
CREATE OR REPLACE MACRO duckrank.repeated_doc(sorted_ids) AS
    list_filter(list_transform(range(1, len(sorted_ids)),
                               lambda i: CASE WHEN sorted_ids[i] = sorted_ids[i + 1] THEN sorted_ids[i] END),
                lambda d: d IS NOT NULL)[1];
COMMENT ON MACRO duckrank.repeated_doc IS 'a doc id that occurs twice in a sorted list of ids, NULL if none';

-- One entry of a query's sorted docs; under ties := 'trec' it is also the sort key (score, then
-- doc_id, descending), so its fields and their order are the trec tie rule. The doc id is its text:
-- trec_eval compares ids as strings, so integer ids tie-break as if written to a text file
-- ('9' before '10').
CREATE OR REPLACE MACRO duckrank.ranking_entry(score, doc_id, judged_grade) AS
    {'score': score, 'doc_id': CAST(doc_id AS VARCHAR), 'judged_grade': judged_grade};
COMMENT ON MACRO duckrank.ranking_entry IS 'an entry of a query''s sorted docs: {score, doc_id, judged_grade}';

-- Aggregate: what the run's checks need of one query's rows: NULL doc ids and a bad score.
CREATE OR REPLACE MACRO duckrank.run_checks(query_id, doc_id, score) AS
    {'null_docs': count(*) FILTER (WHERE doc_id IS NULL),
     'bad_score': duckrank.first_offender(query_id, doc_id, score IS NULL OR NOT isfinite(score))};
COMMENT ON MACRO duckrank.run_checks IS 'aggregate: a run query''s NULL doc ids and first bad score';

-- One doc of a ranking as metrics read it, from d = {rank, doc_id, score, judged_grade, grade, tied}:
-- grade is the judged grade, else the query's imputed one (unjudged := mean|median), else NULL;
-- tied holds its tie group's mean relevance and gain under ties := 'average' (else NULL).
CREATE OR REPLACE MACRO duckrank.ranked_doc(d, rel_level, gain, gain_map, stop_scale) AS
    {'rank': d.rank, 'doc_id': d.doc_id, 'score': d.score, 'grade': d.grade, 'judged_grade': d.judged_grade,
     'rel': duckrank.relevant(d.grade, rel_level),
     'nonrel': CAST(duckrank.judged_nonrelevant(d.grade, rel_level) AS DOUBLE),
     'gain': duckrank.gain_of(d.grade, gain, gain_map, rel_level),
     'tied_rel': coalesce(d.tied.rel, duckrank.relevant(d.grade, rel_level)),
     'tied_gain': coalesce(d.tied.gain, duckrank.gain_of(d.grade, gain, gain_map, rel_level)),
     'unjudged': d.grade IS NULL OR d.grade < 0,  -- an imputed grade counts as a judgment
     'err_stop': duckrank.err_stop(d.grade, stop_scale)};
COMMENT ON MACRO duckrank.ranked_doc IS 'one element of duckrank.ranked''s docs: rank, ids, grade and what metrics read of it';

-- The ranking as metrics read it, from a query's ranked entries `top` (duckrank.ranking_entry,
-- num_ret of them, in rank order): each doc kept gets its rank and what metrics read of its grade
-- (duckrank.ranked_doc). every_doc keeps them all; otherwise only the judged ones (their positions
-- are found first, so only those become structs). imputed_grade stands in for a missing judgment
-- (unjudged := mean|median); tied holds the tie groups' means in rank order (ties := 'average').
CREATE OR REPLACE MACRO duckrank.ranking_docs(top, every_doc, num_ret, imputed_grade, tied, rel_level, gain,
        gain_map, stop_scale) AS
    list_transform(list_transform(
        CASE WHEN every_doc THEN range(1, num_ret + 1)
             ELSE list_filter(list_transform(top, lambda d, i: CASE WHEN d.judged_grade IS NOT NULL THEN i END),
                              lambda i: i IS NOT NULL) END,
        lambda i: {'rank': i, 'doc_id': top[i].doc_id, 'score': top[i].score, 'judged_grade': top[i].judged_grade,
                   'grade': coalesce(top[i].judged_grade, imputed_grade), 'tied': tied[i]}),
        lambda d: duckrank.ranked_doc(d, rel_level, gain, gain_map, stop_scale));
COMMENT ON MACRO duckrank.ranking_docs IS 'a query''s ranked entries as the docs metrics read: rank, ids, grade, rel, gain, ...';

-- The ideal ranking from a query's positive-gain grade blocks {docs, gain}, best first: each block
-- with its first rank (the docs of the blocks before it, plus one) and its summed discount.
CREATE OR REPLACE MACRO duckrank.ideal_ranking(blocks) AS
    list_transform(
        list_transform(blocks, lambda b, i: {
            'first_rank': 1 + coalesce(list_sum(list_transform(blocks[1:i - 1], lambda p: p.docs)), 0),
            'docs': b.docs, 'gain': b.gain}),
        lambda b: {'first_rank': b.first_rank, 'docs': b.docs, 'gain': b.gain,
                   'discount': duckrank.discount_sum(b.first_rank, b.first_rank + b.docs - 1)});
COMMENT ON MACRO duckrank.ideal_ranking IS 'the ideal ranking as blocks {first_rank, docs, gain, discount} from grade blocks {docs, gain}, best first';

CREATE OR REPLACE MACRO duckrank.rank_queries(qrels, run, rel_level, ties, max_rank, complete, unjudged, gain,
        gain_map, g_max, duplicates, judged_only) AS TABLE
WITH
run_rows AS NOT MATERIALIZED (
    SELECT query_id, doc_id, CAST(run_score AS DOUBLE) AS score,
           -- only ties := 'input' reads it; the planner drops it otherwise
           row_number() OVER () AS input_order
    -- a subquery, so that a run without a score column gets "column score not found" and the
    -- candidates, not a confusing complaint about the alias
    FROM (SELECT query_id, doc_id, score AS run_score FROM query_table(CAST(run AS VARCHAR)))
),
-- duplicates := 'max' keeps each doc's highest score (and its first position, for ties := 'input').
-- With duplicates := 'error' the rows are read as they are and each query's list is checked.
run_docs AS NOT MATERIALIZED (
    SELECT query_id, doc_id, score, input_order FROM run_rows WHERE duplicates <> 'max'
    UNION ALL
    SELECT query_id, doc_id, max(score), min(input_order) FROM run_rows WHERE duplicates = 'max'
    GROUP BY query_id, doc_id
),
qrels_rows AS NOT MATERIALIZED (
    SELECT query_id, doc_id, CAST(relevance AS DOUBLE) AS grade
    FROM query_table(CAST(qrels AS VARCHAR))
),
-- The qrels checked per query in one pass: how many judgments repeat a doc (counted by 64-bit
-- hashes of the doc ids, far cheaper than grouping every (query, doc) pair), and the first bad rows.
qrels_checks AS MATERIALIZED (
    SELECT query_id, count(*) - list_unique(list(hash(doc_id))) AS repeats,
           duckrank.first_offender(query_id, doc_id, query_id IS NULL OR doc_id IS NULL) AS null_id,
           duckrank.first_offender(query_id, doc_id, grade IS NULL OR NOT isfinite(grade)) AS bad_grade
    FROM qrels_rows GROUP BY query_id
),
-- The pairs judged more than once, with their highest and lowest grade: looked for only in the
-- queries whose hashes repeat (a hash collision is never a duplicate).
qrels_repeated AS MATERIALIZED (
    SELECT query_id, doc_id, max(grade) AS grade, min(grade) AS min_grade
    FROM qrels_rows
    WHERE query_id IN (SELECT query_id FROM qrels_checks WHERE repeats > 0 AND query_id IS NOT NULL)
    GROUP BY query_id, doc_id HAVING count(*) > 1
),
-- One row per judged (query, doc), with its highest grade (the same judgment twice is no conflict).
qrels_docs AS NOT MATERIALIZED (
    SELECT query_id, doc_id, grade FROM qrels_rows
    WHERE query_id NOT IN (SELECT query_id FROM qrels_repeated)
    UNION ALL
    SELECT query_id, doc_id, max(grade) FROM qrels_rows
    WHERE query_id IN (SELECT query_id FROM qrels_repeated)
    GROUP BY query_id, doc_id
),
-- unjudged := mean|median: each query's mean / median judged grade, given to its unjudged docs.
-- Empty under the other policies.
imputation AS (
    SELECT query_id,
           CASE WHEN unjudged = 'mean' THEN avg(grade) FILTER (WHERE grade >= 0)
                ELSE percentile_cont(0.5) WITHIN GROUP (ORDER BY grade) FILTER (WHERE grade >= 0) END AS grade
    FROM qrels_docs WHERE unjudged IN ('mean', 'median') GROUP BY query_id
),
-- Every retrieved doc with its judgment (NULL when unjudged) and its query's imputed grade.
-- unjudged := 'skip' (trec_eval -J) keeps the judged docs only (a negative grade is "pooled but
-- unjudged"); the query stays, scoring 0 if nothing is left. With max_rank as well, trec_eval cuts
-- the ranking first and drops the unjudged docs from what is left, so then every doc is kept until
-- the cut (cut_docs below).
graded AS NOT MATERIALIZED (
    SELECT r.query_id, r.doc_id, r.score, r.input_order, q.grade AS judged_grade, i.grade AS imputed_grade,
           unjudged <> 'skip' OR q.grade >= 0 AS judged_kept,
           unjudged <> 'skip' OR q.grade >= 0 OR max_rank IS NOT NULL AS kept
    FROM run_docs r
    LEFT JOIN qrels_docs q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
    LEFT JOIN imputation i ON i.query_id = r.query_id
),
-- ties := 'average': each (query, score) group's mean relevance and gain. Empty otherwise.
tie_means AS (
    SELECT query_id, score,
           avg(duckrank.relevant(coalesce(judged_grade, imputed_grade), rel_level)) AS tied_rel,
           avg(duckrank.gain_of(coalesce(judged_grade, imputed_grade), gain, gain_map, rel_level)) AS tied_gain
    FROM graded WHERE ties = 'average' AND judged_kept GROUP BY query_id, score
),
-- Each query's docs as one list sorted by the tie rule, as {score, doc_id, judged_grade}. The sort
-- key is as narrow as the rule allows (every extra field slows the sort), so each rule has its own
-- branch and the planner keeps only the branch of the rule asked for. `tied` holds the tie groups'
-- means in the same order under ties := 'average' (else NULL).
sorted_trec AS (  -- trec: score, then doc_id, descending; the key is the element itself
    SELECT query_id, any_value(imputed_grade) AS imputed_grade,
           coalesce(list_reverse_sort(list(duckrank.ranking_entry(score, doc_id, judged_grade))
                                      FILTER (WHERE kept)), []) AS sorted,
           CAST(NULL AS STRUCT(rel DOUBLE, gain DOUBLE)[]) AS tied,
           duckrank.run_checks(query_id, doc_id, score) AS checks
    FROM graded WHERE ties = 'trec' GROUP BY query_id
),
sorted_input AS (  -- input: score descending, then the order of the input
    SELECT query_id, imputed_grade,
           list_transform(sorted, lambda d: duckrank.ranking_entry(d.score, d.doc_id, d.judged_grade)) AS sorted,
           tied, checks
    FROM (SELECT query_id, any_value(imputed_grade) AS imputed_grade,
                 coalesce(list_reverse_sort(list({'score': score, 'position': -input_order, 'doc_id': doc_id,
                                                  'judged_grade': judged_grade}) FILTER (WHERE kept)), []) AS sorted,
                 CAST(NULL AS STRUCT(rel DOUBLE, gain DOUBLE)[]) AS tied,
                 duckrank.run_checks(query_id, doc_id, score) AS checks
          FROM graded WHERE ties = 'input' GROUP BY query_id)
),
sorted_doc_ascending AS (  -- doc_ascending: score descending, then doc_id ascending (ir_measures' msmarco provider)
    SELECT query_id, imputed_grade,
           list_transform(sorted, lambda d: duckrank.ranking_entry(-d.negated_score, d.doc_id, d.judged_grade)) AS sorted,
           tied, checks
    FROM (SELECT query_id, any_value(imputed_grade) AS imputed_grade,
                 -- ascending by (-score, doc_id): the score descending, the id (as text) ascending
                 coalesce(list_sort(list({'negated_score': -score, 'doc_id': CAST(doc_id AS VARCHAR),
                                          'judged_grade': judged_grade}) FILTER (WHERE kept)), []) AS sorted,
                 CAST(NULL AS STRUCT(rel DOUBLE, gain DOUBLE)[]) AS tied,
                 duckrank.run_checks(query_id, doc_id, score) AS checks
          FROM graded WHERE ties = 'doc_ascending' GROUP BY query_id)
),
sorted_by_grade AS (  -- pessimistic (relevant, then high gain, last) or optimistic (first) within a tie
    SELECT query_id, imputed_grade,
           list_transform(sorted, lambda d: duckrank.ranking_entry(d.score, d.doc_id, d.judged_grade)) AS sorted,
           tied, checks
    FROM (SELECT query_id, any_value(imputed_grade) AS imputed_grade,
                 coalesce(list_reverse_sort(list({
                     'score': score,
                     'rel': duckrank.relevant(coalesce(judged_grade, imputed_grade), rel_level)
                            * CASE WHEN ties = 'pessimistic' THEN -1 ELSE 1 END,
                     'gain': duckrank.gain_of(coalesce(judged_grade, imputed_grade), gain, gain_map, rel_level)
                             * CASE WHEN ties = 'pessimistic' THEN -1 ELSE 1 END,
                     'doc_id': CAST(doc_id AS VARCHAR), 'judged_grade': judged_grade}) FILTER (WHERE kept)), []) AS sorted,
                 CAST(NULL AS STRUCT(rel DOUBLE, gain DOUBLE)[]) AS tied,
                 duckrank.run_checks(query_id, doc_id, score) AS checks
          FROM graded WHERE ties IN ('pessimistic', 'optimistic') GROUP BY query_id)
),
sorted_average AS (  -- average: ranked as trec, each doc carrying its tie group's means
    SELECT query_id, imputed_grade,
           list_transform(sorted, lambda d: duckrank.ranking_entry(d.score, d.doc_id, d.judged_grade)) AS sorted,
           list_transform(sorted, lambda d: {'rel': d.tied_rel, 'gain': d.tied_gain}) AS tied, checks
    FROM (SELECT g.query_id, any_value(g.imputed_grade) AS imputed_grade,
                 coalesce(list_reverse_sort(list({'score': g.score, 'doc_id': CAST(g.doc_id AS VARCHAR), 'judged_grade': g.judged_grade,
                                                  'tied_rel': t.tied_rel, 'tied_gain': t.tied_gain})
                                            FILTER (WHERE g.kept)), []) AS sorted,
                 duckrank.run_checks(g.query_id, g.doc_id, g.score) AS checks
          FROM graded g LEFT JOIN tie_means t ON t.query_id = g.query_id AND t.score = g.score
          WHERE ties = 'average' GROUP BY g.query_id)
),
sorted_docs AS (
    SELECT * FROM sorted_trec UNION ALL BY NAME SELECT * FROM sorted_input
    UNION ALL BY NAME SELECT * FROM sorted_doc_ascending
    UNION ALL BY NAME SELECT * FROM sorted_by_grade UNION ALL BY NAME SELECT * FROM sorted_average
),
-- unjudged := 'skip' with max_rank: the cut, then the unjudged docs dropped (trec_eval -J -M).
cut_docs AS (
    SELECT * REPLACE (CASE WHEN unjudged = 'skip' AND max_rank IS NOT NULL
                           THEN list_filter(sorted[1:max_rank], lambda d: d.judged_grade >= 0)
                           ELSE sorted END AS sorted)
    FROM sorted_docs
),
-- The judgments counted per (query, grade).
qrels_blocks AS MATERIALIZED (
    SELECT query_id, grade, count(*) AS docs FROM qrels_docs GROUP BY query_id, grade
),
-- ERR's default g_max: the largest grade in the qrels, at least 0 (qrels with only negative grades
-- would otherwise give negative stopping probabilities). Imputed grades lie within the judged ones.
top_grade AS (
    SELECT coalesce(CAST(g_max AS DOUBLE), greatest(max(grade), 0)) AS stop_scale FROM qrels_blocks
),
-- The ranking as metrics read it: max_rank cuts the list; each kept doc gets its rank and what
-- metrics read of its grade; judged_only keeps only the docs with a grade (their positions are
-- found first, so only those become structs). Also the run's checks, per query: a doc listed
-- twice (among those ranked: unjudged := 'skip' drops the others) is counted by hashes and named
-- only when there is one.
ranked_docs AS MATERIALIZED (
    SELECT query_id, checks, repeats, repeated_doc, repeated_copies, num_ret,
           duckrank.ranking_docs(top, NOT judged_only OR ties = 'average' OR imputed_grade IS NOT NULL, num_ret,
                                 imputed_grade, tied, rel_level, gain, gain_map, stop_scale) AS docs
    -- top: the ranked part of the list (max_rank cuts it), so that each doc's lambda reads a list
    -- of num_ret docs, not the whole run of the query; without max_rank the list itself (a slice
    -- copies it: W1M's statement took a tenth longer)
    FROM (SELECT *, CASE WHEN max_rank IS NULL THEN sorted ELSE sorted[1:num_ret] END AS top,
                 CASE WHEN repeated_doc IS NOT NULL
                      THEN len(list_filter(sorted, lambda d: d.doc_id = repeated_doc)) END AS repeated_copies
          FROM (SELECT *, CASE WHEN repeats > 0
                                   THEN duckrank.repeated_doc(list_sort(list_transform(sorted, lambda d: d.doc_id))) END AS repeated_doc
                FROM (SELECT *, least(len(sorted), coalesce(max_rank, len(sorted))) AS num_ret,
                             -- docs listed more than once, counted by 64-bit hashes of their ids (cheap)
                             len(sorted) - list_unique(list_transform(sorted, lambda d: hash(d.doc_id))) AS repeats
                      FROM cut_docs)))
    CROSS JOIN top_grade
),
-- The ideal ranking as blocks: the docs of one grade share a run of ranks, best gain first. Under
-- unjudged := mean|median the imputed docs join the judgments (R, N and the ideal ranking), so
-- recall, AP and nDCG stay within [0, 1].
grade_blocks AS (
    SELECT query_id, grade, sum(docs) AS docs,
           duckrank.gain_of(grade, gain, gain_map, rel_level) AS block_gain
    FROM (SELECT query_id, grade, docs FROM qrels_blocks
          UNION ALL
          SELECT query_id, imputed_grade, count(*) FROM graded
          WHERE unjudged IN ('mean', 'median') AND judged_grade IS NULL AND imputed_grade IS NOT NULL
          GROUP BY query_id, imputed_grade)
    GROUP BY query_id, grade
),
-- Per query: R, N and the positive-gain blocks best first, each with its first rank (the docs of
-- the blocks before it, plus one) and its summed discount.
query_stats AS (
    SELECT query_id, num_rel, num_nonrel, num_judged, top_grade,
           duckrank.ideal_ranking(blocks) AS ideal
    FROM (SELECT query_id,
                 CAST(sum(docs * duckrank.relevant(grade, rel_level)) AS BIGINT) AS num_rel,
                 CAST(sum(docs * duckrank.judged_nonrelevant(grade, rel_level)) AS BIGINT) AS num_nonrel,
                 CAST(sum(docs) AS BIGINT) AS num_judged,
                 greatest(max(grade), 0) AS top_grade,
                 coalesce(list({'docs': docs, 'gain': block_gain} ORDER BY block_gain DESC, grade DESC)
                              FILTER (WHERE block_gain > 0), []) AS blocks
          FROM grade_blocks GROUP BY query_id)
),
-- Every problem of the data at once: those of the first run query and the first qrels query that
-- have any. (The options were checked before: duckrank.ranked and every table macro check them.)
problems AS (
    (SELECT concat_ws(chr(10),
         CASE WHEN query_id IS NULL OR checks.null_docs > 0
              THEN 'run ' || shown[1] || ' has a NULL id (query_id ' || shown[2]
                   || CASE WHEN checks.null_docs > 0 THEN ', doc_id NULL' ELSE '' END
                   || '); every row needs a query_id and a doc_id' END,
         CASE WHEN checks.bad_score IS NOT NULL
              THEN 'run ' || shown[1] || ' has a NULL, NaN or infinite score for query_id '
                   || shown[3] || ', doc_id ' || shown[4]
                   || '; scores must be finite numbers: fix or drop those rows' END,
         CASE WHEN repeats > 0 AND query_id IS NOT NULL
              THEN 'run ' || shown[1] || ' has ' || repeated_copies || ' rows for query_id '
                   || shown[2] || ', doc_id ' || shown[5]
                   || '; each (query_id, doc_id) must appear once: remove the duplicates or pass duplicates := ''max''' END)
            AS problem
     FROM (SELECT *, duckrank.shown_all([CAST(run AS VARCHAR), CAST(query_id AS VARCHAR),
                                         CAST(checks.bad_score.query_id AS VARCHAR),
                                         CAST(checks.bad_score.doc_id AS VARCHAR), CAST(repeated_doc AS VARCHAR)]) AS shown
           FROM ranked_docs
           WHERE query_id IS NULL OR checks.null_docs > 0 OR checks.bad_score IS NOT NULL OR repeats > 0
           LIMIT 1))
    UNION ALL
    (SELECT concat_ws(chr(10),
         CASE WHEN null_id IS NOT NULL
              THEN 'qrels ' || shown[1] || ' has a NULL id (query_id ' || shown[2]
                   || ', doc_id ' || shown[3] || '); every judgment needs a query_id and a doc_id' END,
         CASE WHEN bad_grade IS NOT NULL
              THEN 'qrels ' || shown[1] || ' has a NULL, NaN or infinite relevance for query_id '
                   || shown[4] || ', doc_id ' || shown[5]
                   || '; relevance must be a finite number: fix or drop those rows' END)
     FROM (SELECT *, duckrank.shown_all([CAST(qrels AS VARCHAR), CAST(null_id.query_id AS VARCHAR),
                                         CAST(null_id.doc_id AS VARCHAR), CAST(query_id AS VARCHAR),
                                         CAST(bad_grade.doc_id AS VARCHAR)]) AS shown
           FROM qrels_checks WHERE null_id IS NOT NULL OR bad_grade IS NOT NULL LIMIT 1))
    UNION ALL
    (SELECT 'qrels ' || shown[1] || ' judges query_id ' || shown[2]
            || ', doc_id ' || shown[3] || ' twice with different grades ('
            || min_grade || ' and ' || grade
            || '); keep one judgment or pass duplicates := ''max'''
     FROM (SELECT *, duckrank.shown_all([CAST(qrels AS VARCHAR), CAST(query_id AS VARCHAR),
                                         CAST(doc_id AS VARCHAR)]) AS shown
           FROM qrels_repeated WHERE min_grade <> grade AND duplicates = 'error' LIMIT 1))
),
guard AS (
    SELECT duckrank.raise_problems(string_agg(problem, chr(10))) AS fired FROM problems
)
SELECT s.query_id, coalesce(r.docs, []) AS docs, s.ideal, coalesce(r.num_ret, 0) AS num_ret,
       s.num_rel, s.num_nonrel, s.num_judged, s.top_grade, r.query_id IS NULL AND unjudged <> 'skip' AND coalesce(max_rank, 1) > 0 AS zero_filled,
       NOT judged_only AS all_docs,
       ties AS tie_rule
FROM query_stats s
LEFT JOIN ranked_docs r ON r.query_id = s.query_id
WHERE (complete OR r.query_id IS NOT NULL) AND (SELECT count(fired) FROM guard) = 0;
COMMENT ON MACRO TABLE duckrank.rank_queries IS 'the ranked relation every metric reads: one row per query with its ranking as a list in rank order (docs), the ideal ranking as grade blocks (ideal), num_ret, num_rel, num_nonrel, num_judged';

-- duckrank.rank_queries' common case, ties := 'trec', unjudged := 'nonrelevant' and
-- duplicates := 'error', in the fewest steps, for the DuckDB engine (its macro calls and its lean
-- statements, duckrank/lean.py): the same rows bit for bit from the same scalar macros, but binding it costs a
-- fraction, as it has no branch of another rule and no message. The qrels are grouped by (query, doc)
-- once, the run is joined and each query's entries sorted in one aggregate, and the data's problems
-- are counted on the way: a NULL id, a score or grade that is not a finite number, a doc listed
-- twice (by 64-bit hashes of its ids) or judged twice with different grades. Any such problem
-- raises an error that says only that; duckrank.rank_queries names it. A run with a duckrank_key
-- column holds several rankings of a query (the DuckDB engine's several runs, keyed {run, query}):
-- each (duckrank_key, query_id) is ranked on its own and judged by its query_id's qrels, grouped
-- once for all of them, and leads its row; complete := true adds a query that no ranking has under
-- a NULL key, so the engine scores such runs with every qrels query keyed instead.
CREATE OR REPLACE MACRO duckrank.rank_queries_lean(qrels, run, rel_level, max_rank, complete, gain, gain_map, g_max,
        judged_only) AS TABLE
WITH
qrels_docs AS MATERIALIZED (
    SELECT query_id, doc_id, max(grade) AS grade,
           count(*) FILTER (WHERE query_id IS NULL OR doc_id IS NULL OR grade IS NULL OR NOT isfinite(grade))
               + coalesce(CAST(min(grade) <> max(grade) AS BIGINT), 0) AS problems
    FROM (SELECT query_id, doc_id, CAST(relevance AS DOUBLE) AS grade FROM query_table(CAST(qrels AS VARCHAR)))
    GROUP BY query_id, doc_id
),
ranked_docs AS MATERIALIZED (
    SELECT * EXCLUDE (sorted, top, stop_scale),
           duckrank.ranking_docs(top, NOT judged_only, num_ret, NULL, CAST(NULL AS STRUCT(rel DOUBLE, gain DOUBLE)[]),
                                 rel_level, gain, gain_map, stop_scale) AS docs
    FROM (SELECT *, CASE WHEN max_rank IS NULL THEN sorted ELSE sorted[1:num_ret] END AS top
          FROM (SELECT *, least(len(sorted), coalesce(max_rank, len(sorted))) AS num_ret
                FROM (SELECT r.* EXCLUDE (doc_id, score),  -- the ranking's key: [duckrank_key,] query_id
                             list_reverse_sort(list(duckrank.ranking_entry(r.score, r.doc_id, q.grade))) AS sorted,
                             count(*) FILTER (WHERE r.query_id IS NULL OR r.doc_id IS NULL OR r.score IS NULL
                                                    OR NOT isfinite(r.score))
                                 + count(*) - list_unique(list(hash(r.doc_id))) AS problems
                      FROM (SELECT COLUMNS(lambda c: c IN ('duckrank_key', 'query_id')), doc_id,
                                   CAST(score AS DOUBLE) AS score
                            FROM query_table(CAST(run AS VARCHAR))) r
                      LEFT JOIN qrels_docs q ON q.query_id = r.query_id AND q.doc_id = r.doc_id
                      GROUP BY ALL)))
    CROSS JOIN (SELECT coalesce(CAST(g_max AS DOUBLE), greatest(max(grade), 0)) AS stop_scale FROM qrels_docs)
),
query_stats AS MATERIALIZED (
    SELECT query_id, num_rel, num_nonrel, num_judged, top_grade, problems, duckrank.ideal_ranking(blocks) AS ideal
    FROM (SELECT query_id,
                 CAST(sum(docs * duckrank.relevant(grade, rel_level)) AS BIGINT) AS num_rel,
                 CAST(sum(docs * duckrank.judged_nonrelevant(grade, rel_level)) AS BIGINT) AS num_nonrel,
                 CAST(sum(docs) AS BIGINT) AS num_judged,
                 greatest(max(grade), 0) AS top_grade,
                 coalesce(list({'docs': docs, 'gain': block_gain} ORDER BY block_gain DESC, grade DESC)
                              FILTER (WHERE block_gain > 0), []) AS blocks,
                 sum(problems) AS problems
          FROM (SELECT query_id, grade, count(*) AS docs, sum(problems) AS problems,
                       duckrank.gain_of(grade, gain, gain_map, rel_level) AS block_gain
                FROM qrels_docs GROUP BY query_id, grade)
          GROUP BY query_id)
),
guard AS (
    SELECT CASE WHEN (SELECT coalesce(sum(problems), 0) FROM ranked_docs)
                     + (SELECT coalesce(sum(problems), 0) FROM query_stats) > 0
                THEN error('duckrank: the run or qrels has a NULL id, a score or grade that is not a finite number, '
                           || 'a doc listed twice or judged twice with different grades; '
                           || 'duckrank.rank_queries names the row') END AS fired
)
SELECT r.* EXCLUDE (query_id, num_ret, problems, docs), s.query_id, coalesce(r.docs, []) AS docs, s.ideal,
       coalesce(r.num_ret, 0) AS num_ret, s.num_rel, s.num_nonrel, s.num_judged, s.top_grade,
       r.query_id IS NULL AND coalesce(max_rank, 1) > 0 AS zero_filled, NOT judged_only AS all_docs, 'trec' AS tie_rule
FROM query_stats s
LEFT JOIN ranked_docs r ON r.query_id = s.query_id
WHERE (complete OR r.query_id IS NOT NULL) AND (SELECT count(fired) FROM guard) = 0;
COMMENT ON MACRO TABLE duckrank.rank_queries_lean IS 'duckrank.rank_queries under ties := ''trec'', unjudged := ''nonrelevant'' and duplicates := ''error'' in fewer steps; a data problem raises an error that duckrank.rank_queries words';
