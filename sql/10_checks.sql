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
