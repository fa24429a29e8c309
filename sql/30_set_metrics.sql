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

-- F_beta@k = (1 + x) P R / (x P + R), x = b^2, 0 when nothing relevant is retrieved. k NULL:
-- trec_eval set_F. Computed as m_set_F.c writes it, not as the equal (1 + x) hits / (x R + k): the
-- two round apart by an ulp, which prints another 4th decimal where the value is 0.xxxx5 (5 hits,
-- R = 6, 58 retrieved: 0.15625 one way, 0.15625000000000003 the other). x is recall_weight when
-- given (set_F.x's own x), else beta * beta.
CREATE OR REPLACE MACRO duckrank.f_measure_of(q, k, beta, recall_weight) AS
    list_transform([coalesce(CAST(recall_weight AS DOUBLE), CAST(beta AS DOUBLE) * beta)], lambda x:
        CASE WHEN duckrank.hits_of(q, k) > 0
             THEN (x + 1.0) * duckrank.precision_of(q, k) * duckrank.recall_of(q, k, false)
                  / (x * duckrank.precision_of(q, k) + duckrank.recall_of(q, k, false))
             ELSE 0.0 END)[1];
COMMENT ON MACRO duckrank.f_measure_of IS 'F_beta@k = (1+x) P R / (x P + R), x = recall_weight or b^2; k NULL: set_F';

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

-- Microsoft Recommenders' r_precision_at_k (python_evaluation 1.2.1): the relevant docs in the top
-- min(R, k) / R (k NULL: R-precision). A query with none there has no value (NULL): its mean divides
-- per-user Series whose users without such a hit are NaN, and pandas' mean skips them, so they
-- leave its average; this reproduces that number, where Rprec averages over every query.
CREATE OR REPLACE MACRO duckrank.recommenders_r_precision_of(q, k) AS
    nullif(duckrank.ratio(duckrank.hits_of(q, least(q.num_rel, coalesce(k, q.num_rel))), q.num_rel), 0.0);
COMMENT ON MACRO duckrank.recommenders_r_precision_of IS 'MS Recommenders r_precision_at_k: relevant docs in the top min(R, k) / R, NULL when none (left out of the mean)';

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

-- ir_measures' NumQ for one query: 1 for a query the run holds, 0 for a qrels query it misses that
-- complete := true scores (ir_measures scores every qrels query, those with 0); summed, the queries
-- the run answers. (Under unjudged := 'skip', trec_eval -J, which ir_measures lacks, such a query
-- is an empty ranking and counts 1.)
CREATE OR REPLACE MACRO duckrank.run_query_of(q) AS
    CASE WHEN q.zero_filled THEN 0.0 ELSE 1.0 END;
COMMENT ON MACRO duckrank.run_query_of IS '1 for a query the run holds, 0 for a qrels query it misses (ir_measures NumQ)';

CREATE OR REPLACE MACRO duckrank.num_nonrel_judged_ret_of(q) AS
    len(list_filter(q.docs, lambda d: d.nonrel > 0));
COMMENT ON MACRO duckrank.num_nonrel_judged_ret_of IS 'judged non-relevant documents retrieved (trec_eval num_nonrel_judged_ret)';

-- set_map (trec_eval 10, m_set_map.c): num_rel_ret^2 / (num_ret * R), 0 when nothing is retrieved or
-- R = 0. The unranked AP: every relevant retrieved doc counts the set's precision, every missed
-- one 0, so it is set precision times set recall. Quadratic in the hits, so not averaged over ties.
CREATE OR REPLACE MACRO duckrank.set_average_precision_of(q) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(duckrank.hits_of(q, NULL) * duckrank.hits_of(q, NULL), q.num_ret * q.num_rel),
        q.tie_rule, 'set_map');
COMMENT ON MACRO duckrank.set_average_precision_of IS 'set_map = num_rel_ret^2 / (num_ret * R) = set P * set recall (trec_eval set_map)';

-- unj@k (trec_eval 10, m_unjudged.c, printed unj_5, unj_10, unj_20): the docs in the top k that are
-- unjudged, not in the qrels or with a negative grade (RELVALUE_NONPOOL, RELVALUE_UNJUDGED), / k.
-- trec_eval divides by k even when fewer were retrieved ("irrelevant, not unjudged, docs fill in
-- the rest"); k NULL divides by the number retrieved. The judged docs of the top k are those with
-- judged_grade >= 0 (an imputed grade is no judgment, as for Judged), so the judged docs suffice.
CREATE OR REPLACE MACRO duckrank.unjudged_fraction_of(q, k) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(least(coalesce(k, q.num_ret), q.num_ret)
                       - len(list_filter(duckrank.top_docs(q, k), lambda d: d.judged_grade >= 0)),
                       coalesce(k, q.num_ret)),
        q.tie_rule, 'unj');
COMMENT ON MACRO duckrank.unjudged_fraction_of IS 'unj@k = unjudged docs (not in the qrels, or a negative grade) in the top k / k (trec_eval unj)';

-- trec_eval -c scores a query the run misses (q.zero_filled) on a stand-in ranking of one unjudged
-- doc (trec_eval.c's bogus_ranking), then resets num_ret, utility, relstring, unj and rbp_resid to
-- nothing by their bare printed names; printed with a parameter (utility_1,-1,0,0, rbp_resid_p=0.5,
-- relstring_20) they keep the stand-in's value. stand_in := true scores that ranking: the docs it
-- adds to those retrieved, 1 for such a query, else 0.
CREATE OR REPLACE MACRO duckrank.stand_in_docs(q, stand_in) AS
    CASE WHEN stand_in AND q.zero_filled THEN 1 ELSE 0 END;
COMMENT ON MACRO duckrank.stand_in_docs IS 'the unjudged doc trec_eval -c retrieves for a query the run misses: 1 under stand_in for such a query, else 0';

-- utility (trec_eval 10, m_utility.c): a weighted sum over the contingency table of one query,
--   retrieved_relevant * a + retrieved_nonrelevant * b + missed_relevant * c + missed_nonrelevant * d,
-- a = num_rel_ret, b = num_ret - num_rel_ret (unjudged retrieved docs count as non-relevant),
-- c = R - num_rel_ret, d = collection_size + num_rel_ret - num_ret - R (trec_eval -N: the
-- collection's size, 0 unless given, so d is only meaningful with it). trec_eval's default weights
-- are 1, -1, 0, 0 (utility.1.0,-1.0,0.0,0.0). Linear in the hits, so ties := 'average' is exact.
-- stand_in: num_ret counts the stand-in doc (trec_eval -c's utility_1,-1,0,0 is -1 for such a query).
CREATE OR REPLACE MACRO duckrank.utility_of(q, retrieved_relevant, retrieved_nonrelevant, missed_relevant,
                                             missed_nonrelevant, collection_size, stand_in) AS
    CAST(retrieved_relevant AS DOUBLE) * duckrank.hits_of(q, NULL)
    + CAST(retrieved_nonrelevant AS DOUBLE) * (q.num_ret + duckrank.stand_in_docs(q, stand_in) - duckrank.hits_of(q, NULL))
    + CAST(missed_relevant AS DOUBLE) * (q.num_rel - duckrank.hits_of(q, NULL))
    + CAST(missed_nonrelevant AS DOUBLE) * (collection_size + duckrank.hits_of(q, NULL)
                                            - (q.num_ret + duckrank.stand_in_docs(q, stand_in)) - q.num_rel);
COMMENT ON MACRO duckrank.utility_of IS 'utility = p1 a + p2 b + p3 c + p4 d over the retrieved/missed x relevant/non-relevant table (trec_eval utility)';
