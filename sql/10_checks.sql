-- Argument checking shared by every macro (the checks of each option are generated from the
-- registry into sql/60_measures.sql: duckrank.option_problems, duckrank.convention_problems). Problems are collected as text, one per line, and raised together
-- by duckrank.raise_problems inside a CTE that the result depends on, so the shell and Python
-- see the same message, and every bad option is reported at once.

-- A value as it should appear in a message: quoted, or NULL.
CREATE OR REPLACE MACRO duckrank.show(value) AS
    coalesce('''' || CAST(value AS VARCHAR) || '''', 'NULL');
COMMENT ON MACRO duckrank.show IS 'a value quoted for an error message, or NULL';

-- Raise all collected problems (NULL or '' means none). Returns NULL otherwise.
CREATE OR REPLACE MACRO duckrank.raise_problems(problems) AS
    CASE WHEN problems IS NOT NULL AND problems <> ''
         THEN error('duckrank: ' || problems) END;
COMMENT ON MACRO duckrank.raise_problems IS 'raise the collected argument problems as one error';

-- ties := 'average' gives the expected value over all orderings of tied documents. That is exact
-- for metrics linear in the per-rank relevance (P, R, F, R-prec, CG, DCG, nDCG, binary RBP); for the
-- others it would silently be something else, so they refuse it.
CREATE OR REPLACE MACRO duckrank.needs_strict_ties(value, tie_rule, metric) AS
    CASE WHEN tie_rule = 'average'
         THEN error('duckrank: ties := ''average'' is defined for metrics linear in the ranking '
                    || '(P, recall, F, R-prec, CG, DCG, nDCG, binary RBP: graded := false); ' || metric
                    || ' is not: use ties := ''trec'', ''pessimistic'' or ''optimistic''')
         ELSE value END;
COMMENT ON MACRO duckrank.needs_strict_ties IS 'refuse ties := average for a metric that is not linear in the ranking';

-- duckrank.rank_queries ranks on the scores as DOUBLE (and duckrank convert writes them so). An
-- integer or DECIMAL score has more digits than a double holds from 2^52 units of its scale on
-- (2^53 + 1 is 2^53 as a double), so two scores of a query could become one double and tie where
-- the run orders them. The first such pair as a problem (NULL if none); the scan folds away for
-- FLOAT and DOUBLE scores, and looks only at the scores large enough to collide. `column_name`
-- names the run's score column in the message. Every table macro's guard calls it; so does Python.
CREATE OR REPLACE MACRO duckrank.score_problems(run, column_name := 'score') AS (
    SELECT 'run ' || duckrank.show(run) || ': column ' || duckrank.show(column_name) || ' holds ' || min(score)
           || ' and ' || max(score) || ' for query_id ' || duckrank.show(query_id) || ', which are the same DOUBLE ('
           || CAST(score AS DOUBLE) || '), so they would tie: a DOUBLE holds integers exactly only up to 2^53 '
           || '(about 16 digits); rescale the scores (e.g. subtract each query''s smallest), or cast them to DOUBLE if the ties are meant'
    FROM query_table(CAST(run AS VARCHAR))
    WHERE typeof(score) NOT IN ('FLOAT', 'DOUBLE')
      AND abs(CAST(score AS DOUBLE)) >= 4503599627370496  -- 2^52 units of the score's scale
          / power(10, coalesce(TRY_CAST(regexp_extract(typeof(score), ',(\d+)\)$', 1) AS INTEGER), 0))
    GROUP BY query_id, CAST(score AS DOUBLE) HAVING min(score) <> max(score)
    LIMIT 1);
COMMENT ON MACRO duckrank.score_problems IS 'two integer or DECIMAL scores of one query that are the same DOUBLE, as a problem (NULL if none)';
