-- Comparing runs: significance tests, bootstrap confidence intervals and multiple-testing
-- corrections over per-query values. Everything here works on a per-query table
--     (run, query_id, value, <grouping columns such as measure, country, ...>)
-- so any metric macro's output (plus a run and a measure column) can be compared from a shell:
--     SELECT * FROM duckrank.compare('per_query', baseline := 'bm25', seed := 7);
--
-- Random numbers are a pure function of (seed, stream, replicate, item): 64 bits from DuckDB's
-- hash() of the replicate's key xor the item (hash() of one integer is a murmur64 finaliser, so
-- neighbouring items and replicates get unrelated bits). The same seed gives the same result on
-- every run and every thread count: the resampled sums are integer sums (values are quantised to
-- 2^-49 of the group's largest |value|, far below any statistical resolution), so the order in
-- which threads add them cannot change a single bit.
--
-- Sources: paired t-test (Student 1908; scipy.stats.ttest_rel); the regularized incomplete beta
-- function by Lentz's continued fraction (Numerical Recipes 3rd ed., 6.4); the paired
-- randomization (sign-flip) test (Fisher 1935; Smucker, Allan & Carterette, CIKM 2007) with
-- p = (1 + #{|S*| >= |S|}) / (1 + B) (Phipson & Smyth 2010); the percentile bootstrap (Efron &
-- Tibshirani 1993, 13.3); Holm 1979; Benjamini & Hochberg 1995.

-- ---------------------------------------------------------------------------------------------
-- random bits

-- The key of one replicate of one random stream (1 = sign flips, 2 = bootstrap draws).
CREATE OR REPLACE MACRO duckrank.replicate_key(seed, stream, replicate) AS
    hash(xor(hash(xor(hash(CAST(seed AS BIGINT)), CAST(stream AS UBIGINT))), CAST(replicate AS UBIGINT)));
COMMENT ON MACRO duckrank.replicate_key IS 'the 64-bit key of replicate r of random stream s under a seed: hash(hash(hash(seed) xor s) xor r)';

-- 64 random bits for item i of a replicate: a pure function of (key, item).
CREATE OR REPLACE MACRO duckrank.random_bits(replicate_key, item) AS
    hash(xor(replicate_key, CAST(item AS UBIGINT)));
COMMENT ON MACRO duckrank.random_bits IS '64 reproducible random bits (UBIGINT) for an item of a replicate: hash(key xor item)';

-- A uniform draw in [0, 1) from the top 53 bits.
CREATE OR REPLACE MACRO duckrank.random_unit(replicate_key, item) AS
    CAST(duckrank.random_bits(replicate_key, item) >> 11 AS DOUBLE) / 9007199254740992.0;
COMMENT ON MACRO duckrank.random_unit IS 'a reproducible uniform number in [0, 1) for an item of a replicate';

-- Byte k (0 = the highest) of 64 random bits, as a 1-based index into a list of 256.
CREATE OR REPLACE MACRO duckrank.byte_index(bits, k) AS
    CAST((bits >> (56 - 8 * k)) & 255 AS BIGINT) + 1;
COMMENT ON MACRO duckrank.byte_index IS 'byte k (0 = highest) of 64 random bits as a 1-based index into a 256-entry list';

-- The 1-based index a bootstrap draw picks from a sample of n: floor(u32 * n / 2^32) + 1 for 32
-- random bits u32 (a BIGINT < 2^32); NULL for a draw at 0-based position pos >= n.
CREATE OR REPLACE MACRO duckrank.draw_index(u32, n, pos) AS
    CASE WHEN pos < n THEN ((u32 * n) >> 32) + 1 END;
COMMENT ON MACRO duckrank.draw_index IS 'the 1-based index of a bootstrap draw: floor(u32 * n / 2^32) + 1 (NULL at positions >= n)';

-- The probability in each tail outside a two-sided interval of level `confidence`, kept in
-- [0, 0.5] so a bad level reaches the argument check instead of quantile_cont's binder.
CREATE OR REPLACE MACRO duckrank.tail(confidence) AS
    greatest(CAST(0 AS DOUBLE), least(CAST(0.5 AS DOUBLE), (1 - confidence) / 2));
COMMENT ON MACRO duckrank.tail IS 'the probability in each tail outside a two-sided interval of level confidence: (1 - confidence) / 2';

-- ---------------------------------------------------------------------------------------------
-- Student's t distribution

-- Lentz's continued fraction for the incomplete beta function, NR 6.4.5, run for a fixed number of
-- half-steps k = 2, 3, ... (k = 2m: m(b-m)x / ((a+2m-1)(a+2m)); k = 2m+1: -(a+m)(a+b+m)x /
-- ((a+2m)(a+2m+1))). It converges in O(sqrt(max(a, b))) steps; extra steps multiply by 1. The
-- state {c, d, h} rides in list elements of its own type (k in the fourth field), so list_reduce
-- needs no initial value of another type (DuckDB before 2.0 requires that).
CREATE OR REPLACE MACRO duckrank.beta_cf_term(k, a, b, x) AS
    CASE WHEN k % 2 = 0 THEN (k / 2) * (b - k / 2) * x / ((a + k - 1) * (a + k))
         ELSE -(a + floor(k / 2)) * (a + b + floor(k / 2)) * x / ((a + k - 1) * (a + k)) END;
COMMENT ON MACRO duckrank.beta_cf_term IS 'the k-th partial numerator of the incomplete beta continued fraction (NR 6.4.5)';

CREATE OR REPLACE MACRO duckrank.not_tiny(z) AS
    CASE WHEN abs(z) < 1e-300 THEN CAST(1e-300 AS DOUBLE) ELSE CAST(z AS DOUBLE) END;
COMMENT ON MACRO duckrank.not_tiny IS 'z, or 1e-300 when |z| is smaller (Lentz guard against division by zero)';

CREATE OR REPLACE MACRO duckrank.beta_cf(a, b, x) AS
    list_reduce(
        list_prepend(
            {'c': CAST(1 AS DOUBLE), 'd': 1 / duckrank.not_tiny(1 - (a + b) * CAST(x AS DOUBLE) / (a + 1)),
             'h': 1 / duckrank.not_tiny(1 - (a + b) * CAST(x AS DOUBLE) / (a + 1)), 'k': CAST(1 AS DOUBLE)},
            list_transform(range(2, 2 * (40 + 3 * CAST(ceil(sqrt(greatest(a, b))) AS BIGINT))),
                           lambda k: {'c': CAST(0 AS DOUBLE), 'd': CAST(0 AS DOUBLE), 'h': CAST(0 AS DOUBLE),
                                      'k': CAST(k AS DOUBLE)})),
        lambda s, e: {
            'c': duckrank.not_tiny(1 + duckrank.beta_cf_term(e.k, a, b, x) / s.c),
            'd': 1 / duckrank.not_tiny(1 + duckrank.beta_cf_term(e.k, a, b, x) * s.d),
            'h': s.h * duckrank.not_tiny(1 + duckrank.beta_cf_term(e.k, a, b, x) / s.c)
                     / duckrank.not_tiny(1 + duckrank.beta_cf_term(e.k, a, b, x) * s.d),
            'k': e.k}).h;
COMMENT ON MACRO duckrank.beta_cf IS 'the continued fraction of the incomplete beta function (Lentz, NR 6.4)';

-- I_x(a, b), the regularized incomplete beta function. y is 1 - x; pass it when it is known more
-- precisely than 1 - x can be computed (the t distribution does). Uses the continued fraction
-- where it converges fast (x < (a+1)/(a+b+2)) and the symmetry I_x(a,b) = 1 - I_{1-x}(b,a) elsewhere.
CREATE OR REPLACE MACRO duckrank.regularized_beta(x, a, b, y := NULL) AS
    CASE WHEN x IS NULL OR a IS NULL OR b IS NULL THEN NULL
         WHEN x <= 0 THEN CAST(0 AS DOUBLE)
         WHEN coalesce(y, 1 - x) <= 0 THEN CAST(1 AS DOUBLE)
         WHEN x < (a + 1) / (a + b + 2)
             THEN exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * ln(x) + b * ln(coalesce(y, 1 - x)))
                  * duckrank.beta_cf(a, b, x) / a
         ELSE 1 - exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * ln(x) + b * ln(coalesce(y, 1 - x)))
                  * duckrank.beta_cf(b, a, coalesce(y, 1 - x)) / b END;
COMMENT ON MACRO duckrank.regularized_beta IS 'I_x(a, b), the regularized incomplete beta function, by continued fraction (NR 6.4); y := 1 - x if known exactly';

-- Two-sided p-value of Student's t with df degrees of freedom: P(|T| >= |t|) = I_{df/(df+t^2)}(df/2, 1/2).
CREATE OR REPLACE MACRO duckrank.t_pvalue(t, df) AS
    CASE WHEN t IS NULL OR df IS NULL OR df <= 0 OR isnan(t) THEN NULL
         WHEN isinf(t) THEN CAST(0 AS DOUBLE)
         ELSE duckrank.regularized_beta(CAST(df AS DOUBLE) / (df + t * t), CAST(df AS DOUBLE) / 2, CAST(0.5 AS DOUBLE),
                                        y := t * t / (df + t * t)) END;
COMMENT ON MACRO duckrank.t_pvalue IS 'two-sided p-value of Student''s t statistic with df degrees of freedom';

-- ---------------------------------------------------------------------------------------------
-- multiple testing

-- Adjust the column p of a table for multiple comparisons; every other column passes through.
-- holm (Holm-Bonferroni, controls the family-wise error rate):
--     p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j))
-- bh (Benjamini-Hochberg, controls the false discovery rate):
--     p_(i) -> min_{j >= i} min(1, m p_(j) / j)
-- where p_(1) <= ... <= p_(m) are the m non-NULL p-values. NULL stays NULL and is not counted.
CREATE OR REPLACE MACRO duckrank.p_adjust(p_values, method := 'holm') AS TABLE
WITH guard AS (
    SELECT duckrank.raise_problems(CASE WHEN method IS NULL OR method NOT IN ('holm', 'bh')
        THEN 'correction must be one of holm, bh; got ' || duckrank.show(method) END) AS fired
),
ranked AS (
    SELECT *, row_number() OVER (ORDER BY p NULLS LAST) AS duckrank_p_rank,
           count(p) OVER () AS duckrank_p_count
    FROM query_table(p_values)
    WHERE (SELECT count(fired) FROM guard) = 0
)
SELECT * EXCLUDE (duckrank_p_rank, duckrank_p_count),
       CASE WHEN p IS NULL THEN NULL
            WHEN method = 'holm' THEN least(CAST(1 AS DOUBLE), max((duckrank_p_count - duckrank_p_rank + 1) * p) OVER (
                ORDER BY duckrank_p_rank ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW))
            ELSE least(CAST(1 AS DOUBLE), min(duckrank_p_count * p / duckrank_p_rank) OVER (
                ORDER BY duckrank_p_rank ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)) END AS p_adjusted
FROM ranked;
COMMENT ON MACRO TABLE duckrank.p_adjust IS 'adjust column p for multiple comparisons: holm (Holm-Bonferroni, default) or bh (Benjamini-Hochberg); adds p_adjusted';

-- ---------------------------------------------------------------------------------------------
-- the values compared

-- The runs of a per-query table in display order: `runs` as given, or every run sorted by name.
CREATE OR REPLACE MACRO duckrank.compared_runs(per_query, runs := NULL) AS
    CAST(coalesce(runs, (SELECT list(DISTINCT CAST(run AS VARCHAR) ORDER BY CAST(run AS VARCHAR))
                         FROM query_table(CAST(per_query AS VARCHAR)))) AS VARCHAR[]);
COMMENT ON MACRO duckrank.compared_runs IS 'the runs of a per-query table in display order: runs, or every run sorted by name';

-- What compare and tukey_hsd both read from a per-query table (run, query_id, value, grouping
-- columns): one row per (group, run, query) that one of the runs scored (value not NULL), with g,
-- the group's number in the order of grp (its grouping columns as a struct), run_order, the run's
-- position in runs, and common, whether every run scored the query in the group. It refuses fewer
-- than two runs, a run without rows, two values for one (group, run, query) and a non-finite value,
-- naming `statistic` (compare, Tukey's HSD).
CREATE OR REPLACE MACRO duckrank.compared_values(per_query, runs := NULL, statistic := 'compare') AS TABLE
WITH
source AS (
    SELECT struct_pack(*COLUMNS(* EXCLUDE (run, query_id, value))) AS grp, CAST(run AS VARCHAR) AS run,
           query_id, CAST(value AS DOUBLE) AS value
    FROM query_table(CAST(per_query AS VARCHAR))
),
settings AS (SELECT duckrank.compared_runs(per_query, runs := runs) AS names),
problems AS (
    SELECT concat_ws(chr(10),
        CASE WHEN len(names) < 2
             THEN statistic || ' needs at least two runs; got ' || len(names) || ': ' || array_to_string(names, ', ')
             END,
        (SELECT 'run ' || duckrank.show(s.run) || ' has no rows in the per-query table'
         FROM (SELECT unnest(names) AS run) s WHERE s.run NOT IN (SELECT run FROM source) LIMIT 1),
        (SELECT 'run ' || duckrank.show(run) || ' has ' || copies || ' values for query ' || duckrank.show(query_id)
                || ' in one group; the per-query table needs one value per (group, run, query)'
         FROM (SELECT run, query_id, count(*) AS copies FROM source GROUP BY grp, run, query_id HAVING count(*) > 1)
         LIMIT 1),
        (SELECT 'run ' || duckrank.show(run) || ' has the value ' || CAST(value AS VARCHAR) || ' for query '
                || duckrank.show(query_id) || '; '
                || CASE WHEN statistic = 'compare' THEN 'comparisons need finite values (use empty := ''skip'' or ''zero'')'
                        ELSE statistic || ' needs finite values' END
         FROM source WHERE NOT isfinite(value) LIMIT 1)) AS problem
    FROM settings
),
guard AS (SELECT duckrank.raise_problems(problem) AS fired FROM problems),
scored AS (
    SELECT dense_rank() OVER (ORDER BY s.grp) AS g, s.grp, s.run, list_position(settings.names, s.run) AS run_order,
           s.query_id, s.value
    FROM source s, settings
    WHERE s.value IS NOT NULL AND list_contains(settings.names, s.run) AND (SELECT count(fired) FROM guard) = 0
)
SELECT s.*, c.query_id IS NOT NULL AS common
FROM scored s LEFT JOIN (SELECT g, query_id FROM scored GROUP BY g, query_id
                         HAVING count(*) = (SELECT len(names) FROM settings)) c ON c.g = s.g AND c.query_id = s.query_id;
COMMENT ON MACRO TABLE duckrank.compared_values IS 'the scored values of a per-query table that compare and tukey_hsd read: g, grp, run, run_order, query_id, value, common (every run scored the query in the group); refuses duplicates and non-finite values';

-- ---------------------------------------------------------------------------------------------
-- compare

-- Compare runs on a per-query table: columns run, query_id, value, and any others, which group
-- the comparisons (measure; segments such as country). Within each group, each run is compared
-- with the baseline on the queries every run scored (NULL values are left out).
--
-- Arguments (defaults):
--   runs         the runs in display order (default: every run, sorted by name)
--   baseline     the run the others are compared with (default: the first of runs)
--   permutations sign-flip replicates of the randomization test (10000; 0 skips the test)
--   bootstrap    bootstrap replicates of the confidence intervals (10000; 0 skips them)
--   seed         the random seed (0); the same seed gives the same numbers, bit for bit
--   confidence   level of the percentile bootstrap intervals (0.95)
--   correction   holm (Holm-Bonferroni) or bh (Benjamini-Hochberg), across every (group, run)
--   test         the p-value that is corrected and marks significance: t or randomization
--   alpha        significance level (0.05)
--
-- One row per (group, run): the grouping columns, run, is_baseline,
-- n (common queries), mean and its interval (mean_ci_low, mean_ci_high), diff = mean - baseline
-- mean and its interval (ci_low, ci_high), relative_change = diff / baseline mean, t, df,
-- p_ttest, p_randomization, both adjusted, p_adjusted (the chosen test's), significant,
-- wins / ties / losses (queries where the run is above / equal to / below the baseline),
-- effect_size = diff / sd of the per-query differences, and a note when a test does not apply.
CREATE OR REPLACE MACRO duckrank.compare(per_query, runs := NULL, baseline := NULL, permutations := 10000,
        bootstrap := 10000, seed := 0, confidence := 0.95, correction := 'holm', test := 't',
        alpha := 0.05) AS TABLE
WITH
settings AS (
    SELECT names, coalesce(baseline, names[1]) AS base
    FROM (SELECT duckrank.compared_runs(per_query, runs := runs) AS names)
),
problems AS (
    SELECT concat_ws(chr(10),
        CASE WHEN correction IS NULL OR correction NOT IN ('holm', 'bh')
             THEN 'correction must be one of holm, bh; got ' || duckrank.show(correction) END,
        CASE WHEN test IS NULL OR test NOT IN ('t', 'randomization')
             THEN 'test must be one of t, randomization; got ' || duckrank.show(test) END,
        CASE WHEN permutations IS NULL OR permutations < 0 OR permutations <> floor(permutations)
             THEN 'permutations must be a whole number >= 0; got ' || duckrank.show(permutations) END,
        CASE WHEN bootstrap IS NULL OR bootstrap < 0 OR bootstrap <> floor(bootstrap)
             THEN 'bootstrap must be a whole number >= 0; got ' || duckrank.show(bootstrap) END,
        CASE WHEN seed IS NULL OR seed <> floor(seed) OR NOT seed BETWEEN -9223372036854775808 AND 9223372036854775807
             THEN 'seed must be a whole number from -9223372036854775808 to 9223372036854775807; got '
                  || duckrank.show(seed) END,
        CASE WHEN confidence IS NULL OR NOT (confidence > 0 AND confidence < 1)
             THEN 'confidence must be strictly between 0 and 1; got ' || duckrank.show(confidence) END,
        CASE WHEN alpha IS NULL OR NOT (alpha > 0 AND alpha < 1)
             THEN 'alpha must be strictly between 0 and 1; got ' || duckrank.show(alpha) END,
        CASE WHEN NOT list_contains(names, base)
             THEN 'baseline ' || duckrank.show(base) || ' is not one of the runs ('
                  || array_to_string(names, ', ') || ')' END) AS problem
    FROM settings
),
guard AS (SELECT duckrank.raise_problems(problem) AS fired FROM problems),
-- the values compared: every run's value on the queries all runs scored in the group
scored AS (
    SELECT v.*, v.run = settings.base AS is_base
    FROM duckrank.compared_values(per_query, runs := runs, statistic := 'compare') v, settings
    WHERE (SELECT count(fired) FROM guard) = 0
),
groups AS (
    SELECT g, any_value(grp) AS grp, count(DISTINCT query_id) FILTER (WHERE common) AS n, max(abs(value)) AS max_abs
    FROM scored GROUP BY g
),
-- values as integers (units of 2^-49 of the group's largest |value|), so resampled sums are exact
scaled AS (
    SELECT g, grp, n, CASE WHEN max_abs > 0 THEN pow(2.0, least(1000, greatest(-1000,
               49 - CAST(ceil(log2(max_abs)) AS INTEGER)))) ELSE CAST(1 AS DOUBLE) END AS scale
    FROM groups
),
paired AS (
    SELECT s.g, s.run, s.run_order, s.is_base, s.query_id, s.value,
           CAST(round(s.value * scaled.scale) AS BIGINT) AS units,
           dense_rank() OVER (PARTITION BY s.g ORDER BY s.query_id) AS qidx
    FROM scored s JOIN scaled ON scaled.g = s.g
    WHERE s.common
),
diffs AS (
    SELECT r.g, r.run, r.qidx, r.value - b.value AS d, r.units - b.units AS d_units
    FROM paired r JOIN paired b ON b.g = r.g AND b.qidx = r.qidx AND b.is_base
    WHERE NOT r.is_base
),
-- means and the t statistic from lists in query order, so that they do not depend on how threads
-- split the rows (bit-for-bit reproducible)
means AS (
    SELECT g, run, any_value(run_order) AS run_order, bool_or(is_base) AS is_base,
           list_avg(list(value ORDER BY qidx)) AS mean
    FROM paired GROUP BY g, run
),
paired_stats AS (
    SELECT g, run, count(*) AS n, list_avg(list(d ORDER BY qidx)) AS diff,
           list_stddev_samp(list(d ORDER BY qidx)) AS sd, sum(d_units) AS observed,
           count(*) FILTER (WHERE d_units > 0) AS wins, count(*) FILTER (WHERE d_units = 0) AS ties,
           count(*) FILTER (WHERE d_units < 0) AS losses,
           min(d_units) = max(d_units) AS constant, max(abs(d_units)) = 0 AS identical
    FROM diffs GROUP BY g, run
),
t_tests AS (
    SELECT g, run, CASE WHEN n >= 2 AND NOT constant THEN diff / (sd / sqrt(n)) END AS t,
           CASE WHEN n >= 2 AND NOT constant THEN n - 1 END AS df
    FROM paired_stats
),
-- randomization test: under H0 each query's difference is as likely negated. Query q (1-based)
-- keeps its sign in replicate r when bit (q-1) % 8 of byte ((q-1) // 8) % 4 of
-- random_bits(key_r, (q-1) // 32) is set. So signs come 8 queries at a time: the 256 signed sums
-- of each block of 8 queries are tabulated once, and a replicate's sum adds one entry per block,
-- four blocks (one hash) per row.
flip_replicates AS (
    SELECT r, duckrank.replicate_key(seed, 1, r) AS key
    FROM range(1, CAST(permutations AS BIGINT) + 1) t(r)
),
flip_blocks AS (
    SELECT d.g, d.run, (d.qidx - 1) // 8 AS block, p.pattern,
           CAST(sum(CASE WHEN (p.pattern >> CAST((d.qidx - 1) % 8 AS INTEGER)) & 1 = 1 THEN d.d_units
                         ELSE -d.d_units END) AS BIGINT) AS total
    FROM diffs d, range(256) p(pattern)
    WHERE permutations > 0
    GROUP BY d.g, d.run, block, p.pattern
),
flip_tables AS (
    SELECT g, run, block // 4 AS stretch,
           list(total ORDER BY pattern) FILTER (WHERE block % 4 = 0) AS sums0,
           list(total ORDER BY pattern) FILTER (WHERE block % 4 = 1) AS sums1,
           list(total ORDER BY pattern) FILTER (WHERE block % 4 = 2) AS sums2,
           list(total ORDER BY pattern) FILTER (WHERE block % 4 = 3) AS sums3
    FROM flip_blocks GROUP BY g, run, stretch
),
flips AS (
    SELECT g, run, r,
           sum(coalesce(sums0[duckrank.byte_index(bits, 0)], 0) + coalesce(sums1[duckrank.byte_index(bits, 1)], 0)
               + coalesce(sums2[duckrank.byte_index(bits, 2)], 0) + coalesce(sums3[duckrank.byte_index(bits, 3)], 0))
               AS total
    FROM (SELECT t.*, f.r, duckrank.random_bits(f.key, t.stretch) AS bits FROM flip_replicates f, flip_tables t)
    GROUP BY g, run, r
),
randomization AS (
    SELECT f.g, f.run,
           CAST(1 + count(*) FILTER (WHERE abs(f.total) >= abs(s.observed)) AS DOUBLE) / (permutations + 1) AS p
    FROM flips f JOIN paired_stats s ON s.g = f.g AND s.run = f.run
    GROUP BY f.g, f.run
),
-- percentile bootstrap: replicate r draws n query indexes with replacement. Draw p (0-based) is
-- floor(u * n) + 1 for u the high (p even) or low (p odd) 32 bits of random_bits(key_r, p // 2),
-- over 2^32 (a bias below n / 2^32). Every run and group of the same size gets the same draws (a
-- paired bootstrap), so a difference's replicate is the difference of the runs' replicates.
-- The values travel as one list per run and group through a cross product, which passes each
-- list by reference (a join would copy the list into every row).
boot_replicates AS (
    SELECT r, duckrank.replicate_key(seed, 2, r) AS key
    FROM range(1, CAST(bootstrap AS BIGINT) + 1) t(r)
),
boot_bits AS (
    SELECT r, i, CAST(bits >> 32 AS BIGINT) AS high, CAST(bits & 4294967295 AS BIGINT) AS low
    FROM (SELECT b.r, i, duckrank.random_bits(b.key, i) AS bits
          FROM (SELECT max(n) AS n FROM scaled) s, boot_replicates b, range(0, (s.n + 1) // 2) t(i))
),
boot_values AS (
    SELECT p.g, p.run, any_value(s.n) AS n, list(p.units ORDER BY p.qidx) AS units
    FROM paired p JOIN scaled s ON s.g = p.g WHERE s.n >= 2 GROUP BY p.g, p.run
),
boot AS (
    SELECT v.g, v.run, d.r,
           sum(coalesce(v.units[duckrank.draw_index(d.high, v.n, 2 * d.i)], 0)
               + coalesce(v.units[duckrank.draw_index(d.low, v.n, 2 * d.i + 1)], 0)) AS total
    FROM boot_bits d, boot_values v
    GROUP BY v.g, v.run, d.r
),
boot_diffs AS (
    SELECT r.g, r.run, r.r, r.total - b.total AS total
    FROM boot r JOIN boot b ON b.g = r.g AND b.r = r.r AND b.run = (SELECT base FROM settings)
    WHERE r.run <> (SELECT base FROM settings)
),
-- percentile intervals of the replicate means: of each run (mean) and of each difference (diff)
intervals AS (
    SELECT b.kind, b.g, b.run,
           quantile_cont(CAST(b.total AS DOUBLE), duckrank.tail(confidence)) / s.n / s.scale AS low,
           quantile_cont(CAST(b.total AS DOUBLE), 1 - duckrank.tail(confidence)) / s.n / s.scale AS high
    FROM (SELECT 'mean' AS kind, * FROM boot UNION ALL SELECT 'diff' AS kind, * FROM boot_diffs) b
    JOIN scaled s ON s.g = b.g
    GROUP BY b.kind, b.g, b.run, s.n, s.scale
),
tested AS (
    SELECT s.g, s.run, duckrank.t_pvalue(t.t, t.df) AS p_ttest,
           CASE WHEN s.n >= 2 AND NOT s.identical THEN r.p END AS p_randomization
    FROM paired_stats s JOIN t_tests t ON t.g = s.g AND t.run = s.run
    LEFT JOIN randomization r ON r.g = s.g AND r.run = s.run
),
t_family AS (SELECT g, run, p_ttest AS p FROM tested),
-- (a bad correction is reported by the guard above with every other problem, not by p_adjust first)
t_adjusted AS (SELECT g, run, p_adjusted FROM duckrank.p_adjust(t_family,
    method := CASE WHEN correction = 'bh' THEN 'bh' ELSE 'holm' END)),
randomization_family AS (SELECT g, run, p_randomization AS p FROM tested),
randomization_adjusted AS (SELECT g, run, p_adjusted FROM duckrank.p_adjust(randomization_family,
    method := CASE WHEN correction = 'bh' THEN 'bh' ELSE 'holm' END)),
rows AS (
    SELECT sc.grp, m.g, m.run_order, m.run, m.is_base AS is_baseline, sc.n, m.mean,
           mi.low AS mean_ci_low, mi.high AS mean_ci_high,
           s.diff, di.low AS ci_low, di.high AS ci_high,
           CASE WHEN NOT m.is_base AND base_mean.mean <> 0 THEN s.diff / base_mean.mean END AS relative_change,
           t.t, t.df, x.p_ttest, x.p_randomization,
           ta.p_adjusted AS p_ttest_adjusted, ra.p_adjusted AS p_randomization_adjusted,
           CASE WHEN test = 't' THEN ta.p_adjusted ELSE ra.p_adjusted END AS p_adjusted,
           s.wins, s.ties, s.losses,
           CASE WHEN s.n >= 2 AND NOT s.constant THEN s.diff / s.sd END AS effect_size,
           s.constant, s.identical
    FROM means m
    JOIN scaled sc ON sc.g = m.g
    JOIN means base_mean ON base_mean.g = m.g AND base_mean.is_base
    LEFT JOIN paired_stats s ON s.g = m.g AND s.run = m.run
    LEFT JOIN t_tests t ON t.g = m.g AND t.run = m.run
    LEFT JOIN tested x ON x.g = m.g AND x.run = m.run
    LEFT JOIN t_adjusted ta ON ta.g = m.g AND ta.run = m.run
    LEFT JOIN randomization_adjusted ra ON ra.g = m.g AND ra.run = m.run
    LEFT JOIN intervals mi ON mi.kind = 'mean' AND mi.g = m.g AND mi.run = m.run
    LEFT JOIN intervals di ON di.kind = 'diff' AND di.g = m.g AND di.run = m.run
),
empty_groups AS (  -- groups where no query is scored by every run still get a row per run
    SELECT sc.grp, sc.g, list_position(settings.names, r.run) AS run_order, r.run,
           r.run = settings.base AS is_baseline
    FROM scaled sc, settings, (SELECT unnest(names) AS run FROM settings) r
    WHERE sc.n = 0
)
SELECT unnest(grp), run, is_baseline, n, mean, mean_ci_low, mean_ci_high, diff, ci_low, ci_high,
       relative_change, t, df, p_ttest, p_randomization, p_ttest_adjusted, p_randomization_adjusted,
       p_adjusted, p_adjusted < alpha AS significant, wins, ties, losses, effect_size,
       CASE WHEN is_baseline THEN NULL
            WHEN n < 2 THEN 'only ' || n || ' quer' || CASE WHEN n = 1 THEN 'y is' ELSE 'ies are' END
                 || ' scored by every run: nothing to test'
            WHEN identical THEN 'identical to the baseline on all ' || n || ' queries: no difference to test'
            WHEN constant THEN 'differs from the baseline by the same ' || printf('%+.4g', diff)
                 || ' on every query (zero variance): the t-test and effect size do not apply'
       END AS note
FROM (SELECT * FROM rows
      UNION ALL BY NAME
      SELECT grp, g, run_order, run, is_baseline, 0 AS n FROM empty_groups)
ORDER BY g, run_order;
COMMENT ON MACRO TABLE duckrank.compare IS 'compare runs per (measure, segment) on a per-query table (run, query_id, value, grouping columns): mean, diff, bootstrap CIs, paired t-test, randomization test, Holm/BH-adjusted p, wins/ties/losses, effect size';

-- ---------------------------------------------------------------------------------------------
-- Tukey's HSD

-- Tukey's honestly significant difference over all runs at once, per group, as ranx computes it
-- (scipy.stats.tukey_hsd; Tukey 1949, Kramer 1956): each run's values on the queries every run
-- scored are one sample, unpaired; with k runs of n queries each,
--     mse = the mean of the runs' sample variances (the pooled within-run variance),
--     q   = |mean - other_mean| / sqrt(mse / n),   df = k n - k,
-- and the p-value is P(Q >= q) for Q studentized-range distributed with (k, df). DuckDB has no
-- normal CDF to integrate that distribution with: duckrank computes it in Python
-- (duckrank/_studentized_range.py), a shell with scipy.stats.studentized_range.sf(q, k, df).
-- mse = 0 makes q infinite (p = 0) for different means and NULL for equal ones.
--
-- One row per group and ordered pair of different runs: the grouping columns, run, other, n, k,
-- df, mean, other_mean, q. Arguments: runs (default every run, sorted by name).
CREATE OR REPLACE MACRO duckrank.tukey_hsd(per_query, runs := NULL) AS TABLE
WITH
-- each run's mean and variance from a list in query order (the same bits on any thread count)
samples AS (
    SELECT s.g, any_value(s.grp) AS grp, s.run, any_value(s.run_order) AS run_order, count(*) AS n,
           list_avg(list(s.value ORDER BY s.query_id)) AS mean,
           list_var_samp(list(s.value ORDER BY s.query_id)) AS variance
    FROM duckrank.compared_values(per_query, runs := runs, statistic := 'Tukey''s HSD') s
    WHERE s.common
    GROUP BY s.g, s.run
),
pooled AS (
    SELECT g, count(*) AS k, any_value(n) AS n, list_avg(list(variance ORDER BY run_order)) AS mse
    FROM samples GROUP BY g
)
SELECT unnest(a.grp), a.run, b.run AS other, p.n, p.k, p.k * p.n - p.k AS df, a.mean, b.mean AS other_mean,
       CASE WHEN p.n < 2 THEN NULL
            WHEN p.mse > 0 THEN abs(a.mean - b.mean) / sqrt(p.mse / p.n)
            WHEN a.mean <> b.mean THEN CAST('inf' AS DOUBLE) END AS q
FROM samples a JOIN samples b ON b.g = a.g AND b.run <> a.run JOIN pooled p ON p.g = a.g
ORDER BY a.g, a.run_order, b.run_order;
COMMENT ON MACRO TABLE duckrank.tukey_hsd IS 'Tukey''s HSD statistic per group and pair of runs on a per-query table (run, query_id, value, grouping columns): n, k, df, means and q; p = the studentized range sf(q, k, df)';

-- Tukey's verdicts per group and run, from tukey_hsd's rows with a p column (p = sf(q, k, df)):
-- p_tukey, the p-value against the baseline (NULL for the baseline itself); significant, p_tukey <
-- alpha; beats, the runs whose mean this run's exceeds with p < alpha (ranx marks them with
-- superscript letters), in the order of runs.
CREATE OR REPLACE MACRO duckrank.tukey_verdicts(tukey_pairs, runs, baseline, alpha := 0.05) AS TABLE
WITH problems AS (
    SELECT concat_ws(chr(10),
        CASE WHEN baseline IS NULL OR NOT list_contains(runs, baseline)
             THEN 'baseline ' || duckrank.show(baseline) || ' is not one of the runs ('
                  || array_to_string(runs, ', ') || ')' END,
        CASE WHEN alpha IS NULL OR NOT (alpha > 0 AND alpha < 1)
             THEN 'alpha must be strictly between 0 and 1; got ' || duckrank.show(alpha) END) AS problem
),
guard AS (SELECT duckrank.raise_problems(problem) AS fired FROM problems),
pairs AS (
    SELECT struct_pack(*COLUMNS(* EXCLUDE (run, other, n, k, df, mean, other_mean, q, p))) AS grp, run, other,
           mean, other_mean, p
    FROM query_table(CAST(tukey_pairs AS VARCHAR))
    WHERE (SELECT count(fired) FROM guard) = 0
),
verdicts AS (
    SELECT grp, run,
           any_value(p) FILTER (WHERE other = baseline) AS p_tukey,
           coalesce(list(other ORDER BY list_position(runs, other)) FILTER (WHERE p < alpha AND mean > other_mean),
                    CAST([] AS VARCHAR[])) AS beats
    FROM pairs GROUP BY grp, run
)
SELECT unnest(grp), run, CASE WHEN run <> baseline THEN p_tukey END AS p_tukey,
       CASE WHEN run <> baseline THEN p_tukey < alpha END AS significant, beats
FROM verdicts;
COMMENT ON MACRO TABLE duckrank.tukey_verdicts IS 'per group and run, from duckrank.tukey_hsd''s pairs with their p: p_tukey against the baseline, significant (p_tukey < alpha), and beats, the runs it beats significantly';
