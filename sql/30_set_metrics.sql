-- Precision, recall, F, hit rate, R-precision, Judged and the trec_eval counters.
-- Each measure is a scalar macro duckrank.<name>_of(q, ...) over one row q of duckrank.ranked (a
-- query and its ranking); every option is an argument (the registry, duckrank/registry.py, holds
-- the defaults and generates the table macros duckrank.<name>(qrels, run, ...) of sql/60_measures.sql).
-- k NULL = full depth. As in trec_eval 10 (m_P.c, m_recall.c, m_relative_P.c, m_set_F.c,
-- m_success.c, m_Rprec.c, m_Rprec_mult.c, m_num_*.c).

-- The docs retrieved at ranks <= k (all of them when k is NULL).
CREATE OR REPLACE MACRO duckrank.top_docs(q, k) AS
    list_filter(q.docs, lambda d: d.rank <= coalesce(k, d.rank));
COMMENT ON MACRO duckrank.top_docs IS 'the docs of a ranked query at ranks <= k (k NULL: all)';

-- Relevant documents retrieved at ranks <= k (the building block of P, R, F, hit rate); under
-- ties := 'average' the expected number.
CREATE OR REPLACE MACRO duckrank.hits_of(q, k) AS
    coalesce(list_sum(list_transform(duckrank.top_docs(q, k), lambda d: d.tied_rel)), 0.0);
COMMENT ON MACRO duckrank.hits_of IS 'relevant documents retrieved at ranks <= k';

-- P@k = hits@k / k; trec_eval divides by k even when fewer were retrieved. k NULL: set_P.
CREATE OR REPLACE MACRO duckrank.precision_of(q, k) AS
    duckrank.ratio(duckrank.hits_of(q, k), coalesce(k, q.num_ret));
COMMENT ON MACRO duckrank.precision_of IS 'P@k = sum_{i<=k} rel(i) / k (k NULL: relevant retrieved / retrieved, set_P)';

-- R@k = hits@k / R; cap := true divides by min(R, k) (trec_eval relative_P). As for P, k NULL
-- means k = the number retrieved, so cap then divides by min(R, retrieved) (set_relative_P).
CREATE OR REPLACE MACRO duckrank.recall_of(q, k, cap) AS
    duckrank.ratio(duckrank.hits_of(q, k),
                   CASE WHEN cap THEN least(q.num_rel, coalesce(k, q.num_ret)) ELSE q.num_rel END);
COMMENT ON MACRO duckrank.recall_of IS 'R@k = sum_{i<=k} rel(i) / R, 0 if R = 0; cap := true divides by min(R, k) (k NULL: min(R, retrieved), set_relative_P)';

-- F_beta@k = (1 + b^2) P R / (b^2 P + R), 0 when P = R = 0. k NULL: trec_eval set_F.
-- Written as (1 + b^2) hits / (b^2 R + k), which is the same number and linear in the hits.
CREATE OR REPLACE MACRO duckrank.f_measure_of(q, k, beta) AS
    duckrank.ratio((1 + CAST(beta AS DOUBLE) * beta) * duckrank.hits_of(q, k),
                   CAST(beta AS DOUBLE) * beta * q.num_rel + coalesce(k, q.num_ret));
COMMENT ON MACRO duckrank.f_measure_of IS 'F_beta@k = (1+b^2) P R / (b^2 P + R); k NULL: set_F';

-- hit@k (success@k): 1 if any relevant document is retrieved at ranks <= k.
CREATE OR REPLACE MACRO duckrank.hit_rate_of(q, k) AS
    duckrank.needs_strict_ties(CAST(duckrank.hits_of(q, k) > 0 AS DOUBLE), q.tie_rule, 'hit rate');
COMMENT ON MACRO duckrank.hit_rate_of IS 'hit@k (success@k) = 1 if a relevant doc is at rank <= k, else 0';

-- R-precision: P@R, 0 if R = 0. mult scales the cutoff as trec_eval Rprec_mult does:
-- cutoff = floor(mult * R + 0.9).
CREATE OR REPLACE MACRO duckrank.r_precision_of(q, mult) AS
    duckrank.ratio(duckrank.hits_of(q, floor(CAST(mult AS DOUBLE) * q.num_rel + 0.9)),
                   floor(CAST(mult AS DOUBLE) * q.num_rel + 0.9));
COMMENT ON MACRO duckrank.r_precision_of IS 'R-precision = P@R (0 if R = 0); mult: P@floor(mult*R + 0.9), trec_eval Rprec_mult';

-- Judged@k (ir_measures): the share of the top k that has a judgment, over min(k, retrieved). A
-- negative grade ("pooled but unjudged") is no judgment, as everywhere in duckrank; an imputed
-- grade (unjudged := mean|median) is not one either. Reads judged_grade, so the judged docs suffice.
CREATE OR REPLACE MACRO duckrank.judged_of(q, k) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(len(list_filter(duckrank.top_docs(q, k), lambda d: d.judged_grade >= 0)),
                       least(coalesce(k, q.num_ret), q.num_ret)),
        q.tie_rule, 'Judged');
COMMENT ON MACRO duckrank.judged_of IS 'Judged@k = judged docs in the top k / min(k, retrieved)';

-- trec_eval's counters that are not columns of duckrank.ranked already (num_ret, num_rel).
CREATE OR REPLACE MACRO duckrank.num_rel_ret_of(q) AS
    len(list_filter(q.docs, lambda d: d.rel > 0));
COMMENT ON MACRO duckrank.num_rel_ret_of IS 'relevant documents retrieved (trec_eval num_rel_ret)';

CREATE OR REPLACE MACRO duckrank.num_nonrel_judged_ret_of(q) AS
    len(list_filter(q.docs, lambda d: d.nonrel > 0));
COMMENT ON MACRO duckrank.num_nonrel_judged_ret_of IS 'judged non-relevant documents retrieved (trec_eval num_nonrel_judged_ret)';
