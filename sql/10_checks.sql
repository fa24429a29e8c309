-- Argument checking shared by every macro. Problems are collected as text, one per line, and raised together
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

-- Every per-metric option, checked in one place. Returns '' when all are valid.
CREATE OR REPLACE MACRO duckrank.option_problems(k := NULL, empty := 'zero', gain := 'linear',
        ideal := 'qrels', denominator := 'R', beta := 1.0, p := 0.8, recall := 0.0,
        g_max := NULL, weight := 'impressions', threshold := 0.0, mult := 1.0) AS
    nullif(concat_ws(chr(10),
        CASE WHEN k IS NOT NULL AND (k < 1 OR k <> floor(k))
             THEN 'k must be a positive integer (or NULL for full depth); got ' || duckrank.show(k) END,
        CASE WHEN empty IS NULL OR empty NOT IN ('zero', 'skip', 'nan')
             THEN 'empty must be one of zero, skip, nan; got ' || duckrank.show(empty) END,
        CASE WHEN gain IS NULL OR gain NOT IN ('linear', 'exp', 'raw')
             THEN 'gain must be one of linear, exp, raw (or pass gain_map); got ' || duckrank.show(gain) END,
        CASE WHEN ideal IS NULL OR ideal NOT IN ('qrels', 'run')
             THEN 'ideal must be one of qrels, run; got ' || duckrank.show(ideal) END,
        CASE WHEN denominator IS NULL OR denominator NOT IN ('R', 'min', 'hits')
             THEN 'denominator must be one of R, min, hits; got ' || duckrank.show(denominator) END,
        CASE WHEN beta IS NULL OR beta <= 0
             THEN 'beta must be positive; got ' || duckrank.show(beta) END,
        CASE WHEN p IS NULL OR p <= 0 OR p >= 1
             THEN 'p must be strictly between 0 and 1; got ' || duckrank.show(p) END,
        CASE WHEN recall IS NULL OR recall < 0 OR recall > 1
             THEN 'recall must be between 0 and 1; got ' || duckrank.show(recall) END,
        CASE WHEN g_max IS NOT NULL AND g_max <= 0
             THEN 'g_max must be positive (or NULL for the largest grade in the qrels); got ' || duckrank.show(g_max) END,
        CASE WHEN weight IS NULL OR weight NOT IN ('impressions', 'positives')
             THEN 'weight must be one of impressions, positives; got ' || duckrank.show(weight) END,
        CASE WHEN threshold IS NULL OR NOT isfinite(threshold)
             THEN 'threshold must be a finite number; got ' || duckrank.show(threshold) END,
        CASE WHEN mult IS NULL OR mult <= 0
             THEN 'mult must be positive; got ' || duckrank.show(mult) END), '');
COMMENT ON MACRO duckrank.option_problems IS 'check per-metric options (k, empty, gain, ideal, denominator, beta, p, recall, g_max, weight, threshold, mult); returns the problems as text, NULL if none';

-- The relation-level conventions, checked in one place.
CREATE OR REPLACE MACRO duckrank.convention_problems(rel_level := 1, ties := 'trec', max_rank := NULL,
        unjudged := 'nonrelevant', duplicates := 'error') AS
    nullif(concat_ws(chr(10),
        CASE WHEN rel_level IS NULL OR NOT isfinite(rel_level)
             THEN 'rel_level must be a finite number; got ' || duckrank.show(rel_level) END,
        CASE WHEN ties IS NULL OR ties NOT IN ('trec', 'input', 'average', 'pessimistic', 'optimistic')
             THEN 'ties must be one of trec, input, average, pessimistic, optimistic; got ' || duckrank.show(ties) END,
        CASE WHEN max_rank IS NOT NULL AND (max_rank < 1 OR max_rank <> floor(max_rank))
             THEN 'max_rank must be a positive integer (or NULL for no cap); got ' || duckrank.show(max_rank) END,
        CASE WHEN unjudged IS NULL OR unjudged NOT IN ('nonrelevant', 'skip', 'mean', 'median')
             THEN 'unjudged must be one of nonrelevant, skip, mean, median; got ' || duckrank.show(unjudged) END,
        CASE WHEN duplicates IS NULL OR duplicates NOT IN ('error', 'max')
             THEN 'duplicates must be one of error, max; got ' || duckrank.show(duplicates) END), '');
COMMENT ON MACRO duckrank.convention_problems IS 'check the ranking conventions (rel_level, ties, max_rank, unjudged, duplicates); returns the problems as text, NULL if none';

-- ties := 'average' gives the expected value over all orderings of tied documents. That is exact
-- for metrics linear in the per-rank relevance (P, R, F, R-prec, CG, DCG, nDCG, RBP); for the
-- others it would silently be something else, so they refuse it.
CREATE OR REPLACE MACRO duckrank.needs_strict_ties(value, tie_rule, metric) AS
    CASE WHEN tie_rule = 'average'
         THEN error('duckrank: ties := ''average'' is defined for metrics linear in the ranking '
                    || '(P, recall, F, R-prec, CG, DCG, nDCG, RBP); ' || metric
                    || ' is not: use ties := ''trec'', ''pessimistic'' or ''optimistic''')
         ELSE value END;
COMMENT ON MACRO duckrank.needs_strict_ties IS 'refuse ties := average for a metric that is not linear in the ranking';
