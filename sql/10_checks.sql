-- Argument checking shared by every macro (each option's check is generated from the registry
-- into sql/55_option_checks.sql: duckrank.check_<option>, and duckrank.option_problems and
-- duckrank.convention_problems for all at once). Problems are collected as text, one per line, and
-- raised together by duckrank.raise_problems inside a CTE that the result depends on, so the shell and Python
-- see the same message, and every bad option is reported at once.

-- Line breaks, tabs and ESC written as Python writes them (\n, \r, \t, \x1b), so that an id cannot
-- forge a line of a message or restyle the terminal it is printed on (chr(92) is the backslash:
-- Spark reads backslashes in a literal as escapes, DuckDB does not).
CREATE OR REPLACE MACRO duckrank.escaped(text) AS
    replace(replace(replace(replace(text, chr(10), chr(92) || 'n'), chr(13), chr(92) || 'r'), chr(9), chr(92) || 't'),
            chr(27), chr(92) || 'x1b');
COMMENT ON MACRO duckrank.escaped IS 'a text with its line breaks, tabs and ESC escaped, for a message';

-- A value as it should appear in a message: quoted, or NULL. Past 80 characters it is cut, with how
-- many more there are, as duckrank.errors.quoted cuts the messages Python builds (QUOTED_LIMIT): an id
-- of 100,000 characters makes no 100 KB message. Escaped once (the first 80 characters are all of a
-- shorter text): DuckDB binds a macro's body at every call, and a table macro's checks call it often.
CREATE OR REPLACE MACRO duckrank.show(value) AS
    CASE WHEN value IS NULL THEN 'NULL'
         ELSE '''' || duckrank.escaped(left(CAST(value AS VARCHAR), 80)) || ''''
              || CASE WHEN length(CAST(value AS VARCHAR)) > 80
                      THEN '…(' || printf('%,d', length(CAST(value AS VARCHAR)) - 80) || ' more characters)'
                      ELSE '' END END;
COMMENT ON MACRO duckrank.show IS 'a value quoted for an error message (escaped, cut after 80 characters), or NULL';

-- Each text of a list as duckrank.show shows it: a message that shows several values calls this once
-- instead of show once per value, as DuckDB binds a macro's body at every call and a lambda's once
-- (rank_queries' messages show 18 values: binding them one by one was about a quarter of a
-- duckrank.ranked call).
CREATE OR REPLACE MACRO duckrank.shown_all(texts) AS
    list_transform(texts, lambda text: duckrank.show(text));
COMMENT ON MACRO duckrank.shown_all IS 'each text of a list quoted for an error message, as duckrank.show quotes it';

-- Raise all collected problems (NULL or '' means none). Returns NULL otherwise.
-- Pass it a column, not the checks themselves: a macro's argument is bound once per use, and binding
-- a table macro's checks three times took two thirds of its call's time (half a second).
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

-- duckrank.rank_queries and the log macros rank on the scores as DOUBLE (and duckrank convert writes
-- them so). An integer or DECIMAL score has more digits than a double holds from 2^52 units of its
-- scale on (2^53 + 1 is 2^53 as a double), so two scores could become one double and tie where the
-- input orders them. Whether `score` is such a score: false for FLOAT and DOUBLE (the scans fold
-- away), and for the scores too small to collide.
CREATE OR REPLACE MACRO duckrank.past_double_precision(score) AS
    typeof(score) NOT IN ('FLOAT', 'DOUBLE')
    AND abs(CAST(score AS DOUBLE)) >= 4503599627370496  -- 2^52 units of the score's scale
        / power(10, coalesce(TRY_CAST(regexp_extract(typeof(score), ',(\d+)\)$', 1) AS INTEGER), 0));
COMMENT ON MACRO duckrank.past_double_precision IS 'whether an integer or DECIMAL score is large enough to share its DOUBLE with another';

-- The problem of two scores `low` and `high` that are one DOUBLE: of one query (a ranking), or of
-- the whole `what` when query_id is NULL (a log's global AUC ranks every row together).
CREATE OR REPLACE MACRO duckrank.merged_scores_problem(what, source, column_name, low, high, query_id) AS
    what || ' ' || duckrank.show(source) || ': column ' || duckrank.show(column_name) || ' holds ' || low
    || ' and ' || high || CASE WHEN query_id IS NULL THEN '' ELSE ' for query_id ' || duckrank.show(query_id) END
    || ', which are the same DOUBLE (' || CAST(low AS DOUBLE) || '), so they would tie: a DOUBLE holds integers '
    || 'exactly only up to 2^53 (about 16 digits); rescale the scores'
    || CASE WHEN query_id IS NULL THEN '' ELSE ' (e.g. subtract each query''s smallest)' END
    || ', or cast them to DOUBLE if the ties are meant';
COMMENT ON MACRO duckrank.merged_scores_problem IS 'the message for two integer or DECIMAL scores that are the same DOUBLE';

-- The first pair of a run's scores of one query that are the same DOUBLE, as a problem (NULL if
-- none). `column_name` names the run's score column in the message. Every table macro's guard
-- calls it; so does Python, on the scores as given, before it casts them.
CREATE OR REPLACE MACRO duckrank.score_problems(run, column_name := 'score') AS (
    SELECT duckrank.merged_scores_problem('run', run, column_name, min(score), max(score), query_id)
    FROM query_table(CAST(run AS VARCHAR))
    WHERE duckrank.past_double_precision(score)
    GROUP BY query_id, CAST(score AS DOUBLE) HAVING min(score) <> max(score)
    LIMIT 1);
COMMENT ON MACRO duckrank.score_problems IS 'two integer or DECIMAL scores of one query that are the same DOUBLE, as a problem (NULL if none)';

-- The same for a log, over all its rows: its global AUC ranks them together (and a log needs no
-- query_id for it). Every log macro's guard calls it (duckrank.log_problems); so does Python.
CREATE OR REPLACE MACRO duckrank.log_score_problems(log, column_name := 'score') AS (
    SELECT duckrank.merged_scores_problem('log', log, column_name, min(score), max(score), NULL)
    FROM query_table(CAST(log AS VARCHAR))
    WHERE duckrank.past_double_precision(score)
    GROUP BY CAST(score AS DOUBLE) HAVING min(score) <> max(score)
    LIMIT 1);
COMMENT ON MACRO duckrank.log_score_problems IS 'two integer or DECIMAL scores of a log that are the same DOUBLE, as a problem (NULL if none)';
