-- Sampled metrics and their correction (Krichene & Rendle, "On Sampled Metrics for Item
-- Recommendation", KDD 2020; CACM 2022).
--
-- A sampled evaluation ranks each query's relevant item among m negatives drawn uniformly from a
-- catalog of N items, instead of among all N. An item of full-catalog rank R then has the sampled
-- rank r, where r - 1 ~ Binomial(m, q), q = (R - 1) / (N - 1) (the paper's with-replacement
-- model). A top-k metric read on the sampled list is biased (and can reverse A vs B); the paper
-- corrects it by reading, instead of f(r), an estimate f~(r) chosen so that E[f~(r) | R] is
-- close to f(R), the metric's value at the full-catalog rank:
--
--   f~ = argmin  sum_R w_R [ (E[f~ | R] - f(R))^2 + gamma Var(f~ | R) ]      (w_R = 1/N, uniform)
--
-- With A[R, r] = p(r | R), G = A' W A and c = A' W 1 (the mean chance of each sampled rank), its
-- normal equations are  ((1 - gamma) G + gamma diag(c)) f~ = A' W f.
--   correction := 'bv'    the bias-variance trade-off, gamma = 0.1;
--   correction := 'bias'  the minimal-bias estimator, gamma = 0. G is a Gram matrix of Bernstein
--                         polynomials, so singular to working precision for m ~ 100: a ridge of
--                         1e-10 (in units where the weights sum to 1) makes the solution unique
--                         and close to the minimum-norm least-squares one. Its variance is huge
--                         (the paper's finding), which is why 'bv' is the default.
--   correction := 'none'  the plain value on the sampled list.
-- f(R) is the measure's value for a query with one relevant item at rank R: each correctable
-- measure declares it in the registry (duckrank/registry.py, Metric.sampled) with the macros below.
--
-- A query with several relevant items: each is ranked among the query's non-relevant docs only
-- (its sampled rank is 1 + the non-relevant docs above it), a relevant item missing from the list
-- ranks last (m + 1), and the query's value is the mean of f~ over its relevant items; m is the
-- query's own number of non-relevant retrieved docs, so lists of any length are corrected.

-- f(R) of the measures: a query's one relevant item at full-catalog rank `rank` of `catalog`.
CREATE OR REPLACE MACRO duckrank.hit_at_rank(rank, k) AS
    CAST(rank <= coalesce(k, rank) AS DOUBLE);
COMMENT ON MACRO duckrank.hit_at_rank IS 'recall@k and hit@k of one relevant item at rank: 1 if rank <= k';

CREATE OR REPLACE MACRO duckrank.precision_at_rank(rank, k, catalog) AS
    CAST(rank <= coalesce(k, catalog) AS DOUBLE) / coalesce(k, catalog);
COMMENT ON MACRO duckrank.precision_at_rank IS 'P@k of one relevant item at rank: 1/k if rank <= k (k NULL: 1/catalog)';

CREATE OR REPLACE MACRO duckrank.reciprocal_at_rank(rank, k) AS
    CASE WHEN rank <= coalesce(k, rank) THEN 1.0 / rank ELSE 0.0 END;
COMMENT ON MACRO duckrank.reciprocal_at_rank IS 'RR@k and AP@k of one relevant item at rank: 1/rank if rank <= k';

CREATE OR REPLACE MACRO duckrank.discount_at_rank(rank, k) AS
    CASE WHEN rank <= coalesce(k, rank) THEN 1.0 / log2(rank + 1) ELSE 0.0 END;
COMMENT ON MACRO duckrank.discount_at_rank IS 'nDCG@k of one relevant item at rank: 1/log2(rank + 1) if rank <= k';

CREATE OR REPLACE MACRO duckrank.auc_at_rank(rank, catalog) AS
    (catalog - rank) / (catalog - 1.0);
COMMENT ON MACRO duckrank.auc_at_rank IS 'AUC of one relevant item at rank among catalog items: (catalog - rank) / (catalog - 1)';

-- The options' problems that no single option's check sees (Python says the same, in
-- duckrank.evaluation.sampled_measures): a correction needs sampled lists, and -M would change m.
CREATE OR REPLACE MACRO duckrank.sampled_problems(sampled, correction, max_rank) AS
    nullif(concat_ws(chr(10),
        CASE WHEN sampled IS NULL AND correction <> 'bv'
             THEN 'correction corrects metrics read on sampled lists; say the catalog size they were sampled '
                  || 'from with sampled := N, or leave correction out' END,
        CASE WHEN sampled IS NOT NULL AND max_rank IS NOT NULL
             THEN 'max_rank cuts the sampled lists, which changes each query''s number of negatives m; leave it '
                  || 'out with sampled' END), '');
COMMENT ON MACRO duckrank.sampled_problems IS 'check sampled, correction and max_rank together; returns the problems as text, NULL if none';

-- ln C(n, j)
CREATE OR REPLACE MACRO duckrank.log_choose(n, j) AS
    lgamma(n + 1) - lgamma(j + 1) - lgamma(n - j + 1);
COMMENT ON MACRO duckrank.log_choose IS 'ln of the binomial coefficient C(n, j)';

-- P(X = j) for X ~ Binomial(n, p) in log space (C(200, 100) p^100 would under- or overflow), from
-- ln C(n, j), ln p and ln(1 - p) computed beforehand; p = 0 and 1 exactly.
CREATE OR REPLACE MACRO duckrank.binomial_term(n, j, log_choose, p, log_p, log_1p) AS
    CASE WHEN p <= 0 THEN CAST(j = 0 AS DOUBLE)
         WHEN p >= 1 THEN CAST(j = n AS DOUBLE)
         ELSE exp(log_choose + j * log_p + (n - j) * log_1p) END;
COMMENT ON MACRO duckrank.binomial_term IS 'P(X = j) for X ~ Binomial(n, p), from ln C(n, j), ln p and ln(1 - p)';

-- A query's sampled negatives m: its non-relevant retrieved docs (unjudged ones included).
CREATE OR REPLACE MACRO duckrank.sampled_negatives(q) AS
    q.num_ret - len(duckrank.relevant_ranks(q, NULL));
COMMENT ON MACRO duckrank.sampled_negatives IS 'a sampled query''s negatives m: its non-relevant retrieved docs';

-- The sampled rank of each of a query's relevant items: 1 + the non-relevant docs above it (the
-- j-th relevant doc at rank p has p - j of them), m + 1 for a relevant item not retrieved.
CREATE OR REPLACE MACRO duckrank.sampled_ranks(q) AS
    list_concat(list_transform(duckrank.relevant_ranks(q, NULL), lambda p, j: p - j + 1),
                list_transform(range(q.num_rel - len(duckrank.relevant_ranks(q, NULL))),
                               lambda i: duckrank.sampled_negatives(q) + 1));
COMMENT ON MACRO duckrank.sampled_ranks IS 'the sampled rank of each relevant item of a query: 1 + the non-relevant docs above it (m + 1 if not retrieved)';

-- The trade-off of each correction: gamma, and the ridge that makes the minimal-bias system well posed.
CREATE OR REPLACE MACRO duckrank.correction_gamma(correction) AS
    CASE correction WHEN 'bv' THEN 0.1 ELSE 0.0 END;
COMMENT ON MACRO duckrank.correction_gamma IS 'gamma of a correction: bv 0.1 (bias-variance trade-off), bias 0';
CREATE OR REPLACE MACRO duckrank.correction_ridge(correction) AS
    CASE correction WHEN 'bias' THEN 1e-10 ELSE 0.0 END;
COMMENT ON MACRO duckrank.correction_ridge IS 'the ridge added to a correction''s system: 1e-10 for bias (gamma = 0), else 0';

-- One Gauss-Jordan step on the augmented matrix a (rows of a square system plus its right side):
-- column `col`'s pivot is the row at or below col with the largest magnitude (partial pivoting),
-- swapped into place, scaled to 1 and eliminated from every other row.
CREATE OR REPLACE MACRO duckrank.pivot_row(a, col) AS
    list_max(list_transform(range(col, len(a) + 1), lambda r: {'size': abs(a[r][col]), 'row': r})).row;
COMMENT ON MACRO duckrank.pivot_row IS 'Gauss-Jordan: the row at or below col with the largest entry in column col';

CREATE OR REPLACE MACRO duckrank.eliminate(a, col, scaled) AS
    list_transform(a, lambda row, r: CASE WHEN r = col THEN scaled
                                          ELSE list_transform(row, lambda v, c: v - row[col] * scaled[c]) END);
COMMENT ON MACRO duckrank.eliminate IS 'Gauss-Jordan: every row but col minus its multiple of the scaled pivot row';

-- The corrected metric f~(r), r = 1..m+1, for each m in `negatives` (one row per distinct m):
-- metric_values[R] = f(R) for R = 1..N (its length is the catalog N), correction 'bias' or 'bv'.
-- The Gram matrix needs only 2m + 1 sums over R, by
--   sum_R p(a|R) p(b|R) = C(m,a) C(m,b) / C(2m,a+b) * sum_R Binomial(2m, q).pmf(a + b);
-- c is its row sums (the p(b|R) sum to 1 over b); the right side sums over the R where f(R) <> 0.
CREATE OR REPLACE MACRO duckrank.sampled_estimators(metric_values, negatives, correction) AS TABLE
WITH RECURSIVE
catalog AS MATERIALIZED (SELECT metric_values AS f, len(metric_values) AS n),
systems AS (
    SELECT DISTINCT m FROM (SELECT unnest(negatives) AS m)
    WHERE CASE WHEN correction IN ('bias', 'bv') THEN true
               ELSE error('duckrank: sampled_estimators solves correction := ''bias'' or ''bv''; got '
                          || duckrank.show(correction)) END
),
ranks AS MATERIALIZED (
    SELECT rank, q, value, CASE WHEN q > 0 THEN ln(q) END AS log_q, CASE WHEN q < 1 THEN ln(1 - q) END AS log_1q
    FROM (SELECT rank, (rank - 1) / (n - 1.0) AS q, value
          FROM (SELECT generate_subscripts(f, 1) AS rank, unnest(f) AS value, n FROM catalog))
),
-- sum_R Binomial(2m, q).pmf(j), j = 0..2m: N (2m + 1) terms, the bulk of the work, so the
-- logarithms are taken once per R and per (m, j)
moments AS (
    SELECT s.m, s.j, sum(duckrank.binomial_term(2 * s.m, s.j, s.log_choose, r.q, r.log_q, r.log_1q)) AS moment
    FROM (SELECT m, j, duckrank.log_choose(2 * m, j) AS log_choose
          FROM (SELECT m, unnest(range(0, 2 * m + 1)) AS j FROM systems)) s CROSS JOIN ranks r
    GROUP BY s.m, s.j
),
gram AS (
    SELECT m, list_transform(range(0, m + 1), lambda a: list_transform(range(0, m + 1), lambda b:
               exp(duckrank.log_choose(m, a) + duckrank.log_choose(m, b) - duckrank.log_choose(2 * m, a + b))
               * moments[a + b + 1] / n)) AS g
    FROM (SELECT m, list(moment ORDER BY j) AS moments FROM moments GROUP BY m), catalog
),
right_side AS (
    SELECT s.m, list(coalesce(b.total, 0.0) ORDER BY s.j) AS rhs
    FROM (SELECT m, unnest(range(0, m + 1)) AS j FROM systems) s
    LEFT JOIN (SELECT s.m, s.j, sum(duckrank.binomial_term(s.m, s.j, s.log_choose, r.q, r.log_q, r.log_1q) * r.value) / any_value(c.n) AS total
               FROM (SELECT m, j, duckrank.log_choose(m, j) AS log_choose
                     FROM (SELECT m, unnest(range(0, m + 1)) AS j FROM systems)) s
               CROSS JOIN (SELECT * FROM ranks WHERE value <> 0) r CROSS JOIN catalog c
               GROUP BY s.m, s.j) b ON b.m = s.m AND b.j = s.j
    GROUP BY s.m
),
augmented AS (
    SELECT g.m, list_transform(g.g, lambda row, i: list_append(
               list_transform(row, lambda v, j: (1 - duckrank.correction_gamma(correction)) * v
                   + CASE WHEN i = j THEN duckrank.correction_gamma(correction) * list_sum(row)
                                          + duckrank.correction_ridge(correction) ELSE 0.0 END),
               rhs[i])) AS a
    FROM gram g JOIN right_side USING (m)
),
solving(m, col, a) AS (
    SELECT m, 1, a FROM augmented
    UNION ALL
    SELECT m, col + 1, duckrank.eliminate(a, col, scaled)
    FROM (SELECT m, col, a, list_transform(a[col], lambda v: v / a[col][col]) AS scaled
          FROM (SELECT m, col, list_transform(a, lambda row, r: CASE WHEN r = col THEN a[pivot_row]
                                                                  WHEN r = pivot_row THEN a[col] ELSE row END) AS a
                FROM (SELECT *, duckrank.pivot_row(a, col) AS pivot_row FROM solving WHERE col <= m + 1)))
)
SELECT m AS negatives, list_transform(a, lambda row: row[m + 2]) AS estimate FROM solving WHERE col = m + 2;
COMMENT ON MACRO TABLE duckrank.sampled_estimators IS 'the corrected sampled metric f~(r), r = 1..m+1, per m: f(R) given for R = 1..N, correction bias or bv (Krichene & Rendle 2020)';

-- A query's value on a sampled list: its plain value (correction none), or the mean of the
-- estimate f~ over its relevant items' sampled ranks; `estimates` maps m to f~. A list longer than
-- the catalog cannot have been sampled from it.
CREATE OR REPLACE MACRO duckrank.sampled_value(q, plain_value, estimates, catalog, correction) AS
    CASE WHEN catalog IS NULL THEN plain_value
         WHEN q.num_ret > catalog
         THEN error('duckrank: query ' || duckrank.show(q.query_id) || ' lists ' || q.num_ret || ' docs, more than '
                    || 'the catalog of sampled := ' || catalog || ' items they were sampled from; sampled must be '
                    || 'the number of items in the catalog (N)')
         -- nothing to correct: no relevant item, or a query the run lacks (complete := true scores it 0)
         WHEN correction = 'none' OR q.num_rel = 0 OR q.num_ret = 0 THEN plain_value
         ELSE duckrank.needs_strict_ties(
                  coalesce(list_avg(list_transform(duckrank.sampled_ranks(q),
                                                   lambda r: estimates[duckrank.sampled_negatives(q)][r])), 0.0),
                  q.tie_rule, 'a corrected sampled metric') END;
COMMENT ON MACRO duckrank.sampled_value IS 'a query''s value on a sampled list: plain (correction none) or the mean corrected estimate over its relevant items';
