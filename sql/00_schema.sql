-- duckrank: offline ranking evaluation as DuckDB SQL macros.
-- Files in sql/ are loaded in name order; each later file may use what earlier ones define.
-- Every statement is CREATE OR REPLACE / IF NOT EXISTS, so loading twice is harmless.
CREATE SCHEMA IF NOT EXISTS duckrank;

-- Division that yields 0 where the denominator is 0 or NULL: trec_eval's convention
-- for every ratio over an empty set (R = 0, nothing retrieved, IDCG = 0). The denominator is read
-- once, as a lambda's argument: DuckDB binds a macro argument at each of its uses, and nDCG's
-- IDCG was bound three times (ten measures over duckrank.ranked on S5K: 219 -> 148 ms).
CREATE OR REPLACE MACRO duckrank.ratio(numerator, denominator) AS
    list_transform([denominator], lambda ratio_denominator:
        CASE WHEN ratio_denominator IS NULL OR ratio_denominator = 0 THEN 0.0
             ELSE CAST(numerator AS DOUBLE) / ratio_denominator END)[1];
COMMENT ON MACRO duckrank.ratio IS 'numerator / denominator, 0 when the denominator is 0 or NULL (trec_eval convention)';

-- Relevance as every binary metric reads it: grade >= rel_level (trec_eval -l), and never a
-- negative grade ("pooled but unjudged"). Unjudged docs (grade NULL) are not relevant.
CREATE OR REPLACE MACRO duckrank.relevant(grade, rel_level) AS
    CAST(CASE WHEN grade >= 0 AND grade >= rel_level THEN 1 ELSE 0 END AS DOUBLE);
COMMENT ON MACRO duckrank.relevant IS '1.0 if grade >= rel_level and grade >= 0, else 0.0 (unjudged and negative grades: 0)';

-- The gain of a judged grade. linear = grade (negatives 0, trec_eval), exp = 2^grade - 1
-- ("industry DCG"), raw = grade as given (negatives penalise), binary = 1 for a relevant grade
-- (>= rel_level, as every binary metric reads it), else 0 (Microsoft Recommenders' and RecBole's
-- nDCG); linear_relevant and exp_relevant are linear and exp for a relevant grade and 0 below the
-- relevance level (ranx, whose -lN suffix drops the judgments below N). gain_map overrides the gain
-- of the grades it lists, as trec_eval's ndcg.1=3,2=9 does; unjudged docs (grade NULL) gain 0.
CREATE OR REPLACE MACRO duckrank.gain_of(grade, gain, gain_map, rel_level) AS
    CASE WHEN grade IS NULL THEN 0.0
         -- the cardinality test folds away for the (constant) empty map, and with it the lookup
         WHEN cardinality(gain_map) > 0 AND grade >= 0
              AND CAST(gain_map AS MAP(DOUBLE, DOUBLE))[CAST(grade AS DOUBLE)] IS NOT NULL
             THEN CAST(gain_map AS MAP(DOUBLE, DOUBLE))[CAST(grade AS DOUBLE)]
         WHEN gain IN ('linear_relevant', 'exp_relevant') AND duckrank.relevant(grade, rel_level) = 0 THEN 0.0
         -- 2^1024 is past a double: a silent inf (and NaN for nDCG) would be a wrong number
         WHEN gain IN ('exp', 'exp_relevant') AND grade >= 1024
             THEN error(concat('duckrank: exp gain 2^g - 1 of grade ', grade, ' is past the largest double ',
                               '(grades up to 1023 have one); use linear gains or a gain_map'))
         -- a query's (I)DCG sums its gains: up to 1e300 each, 10^8 of them stay within a double
         WHEN (gain IN ('exp', 'exp_relevant') AND grade > 996)
              OR (gain IN ('linear', 'linear_relevant') AND grade > 1e300)
              OR (gain = 'raw' AND (grade > 1e300 OR grade < -1e300))
             THEN error(concat('duckrank: ', gain, ' gain of grade ', grade, ' is past 1e300, the largest gain ',
                               'whose sum over a query cannot overflow a double; rescale the grades or use a gain_map'))
         WHEN gain IN ('exp', 'exp_relevant') THEN power(2.0, greatest(grade, 0)) - 1
         WHEN gain = 'raw' THEN CAST(grade AS DOUBLE)
         WHEN gain = 'binary' THEN duckrank.relevant(grade, rel_level)
         ELSE CAST(greatest(grade, 0) AS DOUBLE) END;
COMMENT ON MACRO duckrank.gain_of IS 'gain of a grade: linear (default, negatives 0), exp (2^g-1), raw (as given), binary (1 if grade >= rel_level), linear_relevant / exp_relevant (0 below rel_level); gain_map overrides listed grades';

-- A judged non-relevant doc (bpref's n and N): graded, but below rel_level.
CREATE OR REPLACE MACRO duckrank.judged_nonrelevant(grade, rel_level) AS
    CASE WHEN grade >= 0 AND grade < rel_level THEN 1 ELSE 0 END;
COMMENT ON MACRO duckrank.judged_nonrelevant IS '1 if 0 <= grade < rel_level (a judged non-relevant doc), else 0';

-- ERR's probability that a user stops at a doc: (2^g - 1) / 2^g_max, grades clamped to [0, g_max].
-- Scaled before exponentiating, as 2^(g - g_max) - 2^-g_max: 2^g_max overflows from 1024 on
-- (inf / inf is NaN), and both terms are exact wherever the quotient was.
CREATE OR REPLACE MACRO duckrank.err_stop(grade, g_max) AS
    power(2.0, least(greatest(coalesce(grade, 0), 0), g_max) - g_max) - power(2.0, -g_max);
COMMENT ON MACRO duckrank.err_stop IS 'ERR stopping probability (2^g - 1) / 2^g_max of a grade';

-- How a per-query value is reported for a query with no relevant documents (R = 0).
-- zero keeps the value (0 for every ranking metric), skip drops the query (NULL, filtered),
-- nan reports NaN so it poisons the mean visibly.
CREATE OR REPLACE MACRO duckrank.empty_policy(value, num_rel, empty) AS
    CASE WHEN num_rel > 0 OR empty = 'zero' THEN value
         WHEN empty = 'nan' THEN CAST('NaN' AS DOUBLE)
         ELSE NULL END;
COMMENT ON MACRO duckrank.empty_policy IS 'apply the empty-relevance policy (zero|skip|nan) to a per-query value';

-- The same policy for a text value (relstring): kept, except that skip drops the query.
CREATE OR REPLACE MACRO duckrank.empty_policy_text(value, num_rel, empty) AS
    CASE WHEN num_rel > 0 OR empty <> 'skip' THEN value END;
COMMENT ON MACRO duckrank.empty_policy_text IS 'apply the empty-relevance policy to a per-query text value: skip drops it';

-- trec_eval's gm_map / gm_bpref: geometric mean with values floored at 1e-5. A NULL (no value)
-- stays NULL, so that the aggregate leaves it out as avg() does (greatest() alone would floor it).
CREATE OR REPLACE MACRO duckrank.log_floored(value) AS
    CASE WHEN value IS NOT NULL THEN ln(greatest(value, 0.00001)) END;
COMMENT ON MACRO duckrank.log_floored IS 'ln(max(value, 1e-5)), NULL for NULL: what trec_eval''s gm_map averages';

CREATE OR REPLACE MACRO duckrank.geometric_mean(value) AS
    exp(avg(duckrank.log_floored(value)));
COMMENT ON MACRO duckrank.geometric_mean IS 'geometric mean of per-query values floored at 1e-5 (trec_eval gm_map)';
