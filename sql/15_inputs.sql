-- Input shapes: what turns a recommender's tables into the long run (query_id, doc_id, score) that
-- duckrank.ranked and every measure read. Python (duckrank.inputs, duckrank.evaluation) calls these
-- same macros, so the shell and Python reshape a run alike.

-- duckrank.run_from_lists(source, list_col := 'docs', query_col := 'query_id', doc_field := 'doc_id',
--                         score_field := NULL)
-- A run written one row per query, its ranking in one LIST column (Spark ALS recommendForAllUsers:
-- user_id, recommendations array<struct<item_id, rating>>), as the long run: one row per list entry.
--   - LIST<VARCHAR | INTEGER ...>: the entries are the doc ids;
--   - LIST<STRUCT<...>>: the doc id is the field doc_field, the score the field score_field.
-- rank = the entry's position in the list (first = 1). Without score_field the list order is the
-- ranking: score = -rank (so it never ties); with it, the score decides and ties follow the tie rule.
-- An empty or NULL list is a query with nothing retrieved (no rows, as in the long form); a NULL entry
-- is an error. Every other column of the source (a segment, run_id) is kept on each entry's row.
-- Output: query_id, doc_id, score, rank, then the source's other columns.
CREATE OR REPLACE MACRO duckrank.run_from_lists(source, list_col := 'docs', query_col := 'query_id',
        doc_field := 'doc_id', score_field := NULL) AS TABLE
WITH entries AS (
    SELECT COLUMNS(lambda c: c = query_col) AS query_id,
           unnest(generate_series(1, len(COLUMNS(lambda c: c = list_col)))) AS duckrank_rank,
           unnest(COLUMNS(lambda c: c = list_col)) AS duckrank_entry,
           -- the source's other columns; duckrank_pad keeps the set from being empty (an error)
           COLUMNS(lambda c: c <> query_col AND c <> list_col)
    FROM (SELECT *, NULL AS duckrank_pad FROM query_table(CAST(source AS VARCHAR)))
),
-- A struct entry's fields become columns ({'duckrank_entry': e} unnested recursively); an id entry
-- stays one column, duckrank_entry. duckrank_no_score stands in for score_field when there is none.
fields AS (
    SELECT * EXCLUDE (duckrank_entry),
           duckrank.raise_problems(CASE WHEN duckrank_entry IS NULL
               THEN 'run ' || duckrank.show(source) || ' has a NULL entry at position ' || duckrank_rank
                    || ' of the list ' || duckrank.show(list_col) || ' of query_id ' || duckrank.show(query_id)
                    || '; every entry must name a doc: drop the NULLs from the lists' END) AS duckrank_problem,
           unnest({'duckrank_entry': duckrank_entry, 'duckrank_no_score': CAST(NULL AS DOUBLE)}, recursive := true)
    FROM entries
)
SELECT * EXCLUDE (duckrank_pad) FROM (
    SELECT query_id,
           COLUMNS(lambda c: c = doc_field OR c = 'duckrank_entry') AS doc_id,
           CASE WHEN score_field IS NULL THEN -CAST(duckrank_rank AS DOUBLE)
                ELSE CAST(COLUMNS(lambda c: c = coalesce(score_field, 'duckrank_no_score')) AS DOUBLE) END AS score,
           duckrank_rank AS rank,
           COLUMNS(lambda c: c NOT IN ('query_id', 'duckrank_rank', 'duckrank_problem', 'duckrank_entry',
                                       'duckrank_no_score', doc_field, coalesce(score_field, 'duckrank_no_score')))
    FROM fields
    WHERE duckrank_problem IS NULL);
COMMENT ON MACRO TABLE duckrank.run_from_lists IS 'a run with one LIST column per query (ids, or structs with doc_field and score_field) as the long run: query_id, doc_id, score, rank (list position), other columns';

-- duckrank.run_excluding(run, exclude)
-- The run without the (query_id, doc_id) pairs of `exclude` (a user's training interactions, the
-- items already seen): removed before ranking, so cutoffs, max_rank and num_ret count only what is
-- left. Extra columns of either side are kept / ignored. The rows keep the run's order (ties :=
-- 'input' reads it; an anti-join alone does not keep it). `exclude` NULL removes nothing.
CREATE OR REPLACE MACRO duckrank.run_excluding(run, exclude) AS TABLE
SELECT * EXCLUDE (duckrank_order)
FROM (SELECT *, row_number() OVER () AS duckrank_order FROM query_table(CAST(run AS VARCHAR))) r
-- (query_table needs a name even when exclude is NULL: the run's own, never read then)
WHERE exclude IS NULL
   OR NOT EXISTS (SELECT 1 FROM query_table(coalesce(CAST(exclude AS VARCHAR), CAST(run AS VARCHAR))) e
                  WHERE e.query_id = r.query_id AND e.doc_id = r.doc_id)
ORDER BY duckrank_order;
COMMENT ON MACRO TABLE duckrank.run_excluding IS 'the run without the (query_id, doc_id) pairs of exclude (seen items), in the run''s order';

-- duckrank.run_without(run, exclude): the same rows in any order, without the run-wide window and
-- sort that keeping the order takes (for every tie rule but ties := 'input').
CREATE OR REPLACE MACRO duckrank.run_without(run, exclude) AS TABLE
SELECT * FROM query_table(CAST(run AS VARCHAR)) r
WHERE exclude IS NULL
   OR NOT EXISTS (SELECT 1 FROM query_table(coalesce(CAST(exclude AS VARCHAR), CAST(run AS VARCHAR))) e
                  WHERE e.query_id = r.query_id AND e.doc_id = r.doc_id);
COMMENT ON MACRO TABLE duckrank.run_without IS 'the run without the (query_id, doc_id) pairs of exclude (seen items), in any order';
