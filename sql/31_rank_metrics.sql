-- Rank-sensitive binary metrics: reciprocal rank, average precision, bpref, interpolated precision,
-- and trec_eval's relevance string of the top ranks.
-- Sources: trec_eval 10.0 m_recip_rank.c, m_map.c, m_map_cut.c, m_bpref.c, m_iprec_at_recall.c,
-- m_11pt_avg.c, m_relstring.c.

-- The ranks of the relevant docs at ranks <= k, in rank order. The j-th of them has exactly j
-- relevant docs at or above it, so precision at that rank is j / rank: no running sum needed.
CREATE OR REPLACE MACRO duckrank.relevant_ranks(q, k) AS
    list_transform(list_filter(q.docs, lambda d: d.rel > 0 AND d.rank <= coalesce(k, d.rank)), lambda d: d.rank);
COMMENT ON MACRO duckrank.relevant_ranks IS 'ranks of the relevant docs within k, in rank order';

-- RR@k = 1 / rank of the first relevant doc at ranks <= k, else 0. k NULL: trec_eval recip_rank.
CREATE OR REPLACE MACRO duckrank.reciprocal_rank_of(q, k) AS
    duckrank.needs_strict_ties(coalesce(1.0 / duckrank.relevant_ranks(q, k)[1], 0.0), q.tie_rule, 'reciprocal rank');
COMMENT ON MACRO duckrank.reciprocal_rank_of IS 'RR@k = 1 / rank of the first relevant doc within k, else 0';

-- AP@k = sum_{i<=k, rel(i)} P@i / D. D = R (trec_eval map, map_cut), min(R, k) ("min", recsys
-- MAP@k) or the relevant docs retrieved in the top k ("hits", as some tutorials teach); 0 when D = 0.
CREATE OR REPLACE MACRO duckrank.average_precision_of(q, k, denominator) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            coalesce(list_sum(list_transform(duckrank.relevant_ranks(q, k), lambda r, j: j / r)), 0.0),
            CASE denominator
                WHEN 'min' THEN least(q.num_rel, coalesce(k, q.num_rel))
                WHEN 'hits' THEN len(duckrank.relevant_ranks(q, k))
                ELSE q.num_rel END),
        q.tie_rule, 'average precision');
COMMENT ON MACRO duckrank.average_precision_of IS 'AP@k = sum over relevant ranks i<=k of P@i, divided by R (or min(R,k), or hits)';

-- bpref = (1/R) sum over relevant retrieved r of (1 - min(n_r, R) / min(N, R)), n_r = judged
-- non-relevant docs above r, N = judged non-relevant docs of the query. Unjudged docs and
-- negative grades are skipped, exactly as trec_eval. Among the judged docs in rank order, the
-- j-th relevant one at position p has p - j non-relevant docs above it.
CREATE OR REPLACE MACRO duckrank.bpref_of(q) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            coalesce(list_sum(list_transform(
                list_filter(list_transform(list_filter(q.docs, lambda d: d.rel > 0 OR d.nonrel > 0),
                                           lambda d, p: CASE WHEN d.rel > 0 THEN p END),
                            lambda p: p IS NOT NULL),
                lambda p, j: 1.0 - CASE WHEN p - j > 0 THEN least(p - j, q.num_rel) / least(q.num_nonrel, q.num_rel)
                                        ELSE 0.0 END)), 0.0),
            q.num_rel),
        q.tie_rule, 'bpref');
COMMENT ON MACRO duckrank.bpref_of IS 'bpref = (1/R) sum_{relevant retrieved r} (1 - min(n_r, R) / min(N, R)) (trec_eval bpref)';

-- ranx's bpref (ranx 0.3.21, ranx/metrics/bpref.py): the same sum, but every judged doc below the
-- relevance level is non-relevant, a negative grade too (in n_r and in N = num_judged - R); with
-- N = 0 a relevant doc retrieved adds 1 - 0 / 0, NaN (trec_eval adds 1); 0 when R = 0 (ranx's numba
-- kernel; its plain Python divides 0 by 0).
CREATE OR REPLACE MACRO duckrank.ranx_bpref_of(q) AS
    duckrank.needs_strict_ties(
        CASE WHEN q.num_rel = 0 THEN 0.0
             ELSE coalesce(list_sum(list_transform(
                      list_filter(list_transform(list_filter(q.docs, lambda d: d.grade IS NOT NULL),
                                                 lambda d, p: CASE WHEN d.rel > 0 THEN p END),
                                  lambda p: p IS NOT NULL),
                      lambda p, j: CASE WHEN q.num_judged = q.num_rel THEN 'NaN'::DOUBLE
                                        ELSE 1.0 - least(p - j, q.num_rel) / least(q.num_judged - q.num_rel, q.num_rel) END)),
                           0.0) / q.num_rel END,
        q.tie_rule, 'bpref');
COMMENT ON MACRO duckrank.ranx_bpref_of IS 'ranx''s bpref: trec_eval''s, a negative grade judged non-relevant, NaN where N = 0 and a relevant doc is retrieved';

-- The relevant docs recall level r needs among R: round(r * R), half away from zero, as trec_eval 10;
-- recall_cutoff := 'trec_eval9': floor(r * R + 0.9), as trec_eval 9 (pytrec_eval, ir_measures' IPrec).
CREATE OR REPLACE MACRO duckrank.recall_cutoff(recall, num_rel, rule) AS
    CASE WHEN rule = 'trec_eval9' THEN floor(CAST(recall AS DOUBLE) * num_rel + 0.9)
         ELSE round(CAST(recall AS DOUBLE) * num_rel) END;
COMMENT ON MACRO duckrank.recall_cutoff IS 'the relevant docs recall r needs: round(r R), or floor(r R + 0.9) under trec_eval9';

-- Interpolated precision at recall level r: the best precision at or below the rank where the
-- relevant docs retrieved reach the recall cutoff (at least one), 0 if never reached. A query with
-- nothing retrieved has no precision at all: trec_eval 10 divides 0 by 0 for the levels whose
-- cutoff is 0 and prints -nan, and so does duckrank (NaN), except for the queries trec_eval -c
-- fills with zeros (q.zero_filled).
CREATE OR REPLACE MACRO duckrank.interpolated_precision_of(q, recall, recall_cutoff) AS
    duckrank.needs_strict_ties(
        CASE WHEN q.num_ret = 0 AND NOT q.zero_filled AND duckrank.recall_cutoff(recall, q.num_rel, recall_cutoff) = 0
             THEN 'NaN'::DOUBLE
             ELSE coalesce(list_max(list_transform(duckrank.relevant_ranks(q, NULL),
                                    lambda r, j: CASE WHEN j >= greatest(duckrank.recall_cutoff(recall, q.num_rel,
                                                                                                recall_cutoff), 1)
                                                      THEN j / r END)), 0.0) END,
        q.tie_rule, 'interpolated precision');
COMMENT ON MACRO duckrank.interpolated_precision_of IS 'iP@r = max precision at ranks where recall >= r (trec_eval iprec_at_recall)';

-- 11-point average (trec_eval 11pt_avg): the mean of interpolated precision at the recall levels, by
-- default 0, 0.1, ..., 1 (11pt_avg.0.2,0.5,0.8: three). Summed from the last level to the first, in
-- m_11pt_avg.c's order, so the sum is trec_eval's to the bit. (That loop assumes ascending levels.)
CREATE OR REPLACE MACRO duckrank.eleven_point_average_of(q, recall_levels) AS
    list_reduce(list_reverse(list_transform(recall_levels,
                                            lambda level: duckrank.interpolated_precision_of(q, level, 'round'))),
                lambda total, precision: total + precision, 0.0) / len(recall_levels);
COMMENT ON MACRO duckrank.eleven_point_average_of IS 'mean interpolated precision at the recall levels, default 0, 0.1, ..., 1 (trec_eval 11pt_avg)';

-- binG (trec_eval 10, m_binG.c, "Binary G"): each relevant retrieved doc counts
-- 1 / log2(2 + the non-relevant docs above it), summed and divided by R. Those docs are every doc
-- above it that is not relevant, judged or not: the j-th relevant doc at rank r has r - j of them
-- (trec_eval's 1 / log2(3 + i - rel_so_far) at 0-based i = r - 1).
CREATE OR REPLACE MACRO duckrank.binary_normalized_gain_of(q) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(coalesce(list_sum(list_transform(duckrank.relevant_ranks(q, NULL),
                                                        lambda r, j: 1.0 / log2(2 + r - j))), 0.0),
                       q.num_rel),
        q.tie_rule, 'binG');
COMMENT ON MACRO duckrank.binary_normalized_gain_of IS 'binG = (1/R) sum over the j-th relevant retrieved doc at rank r of 1 / log2(2 + r - j) (trec_eval binG)';

-- infAP (trec_eval 10, m_infap.c; Yilmaz & Aslam, CIKM 2006): AP estimated from a sampled pool.
-- trec_eval splits the retrieved docs into unpooled (not in the qrels: skipped), pooled but
-- unjudged (a negative grade: not sampled), judged relevant and judged non-relevant. A relevant doc
-- at rank r adds 1 / r + ((r - 1) / r) * (pooled above / (r - 1)) * ((rel above + e) / (rel above +
-- nonrel above + 2e)), e = 0.00001 (INFAP_EPSILON), i.e. (1 + pooled above * the judged share of
-- relevant above) / r; 1 at rank 1. The sum is divided by R. In duckrank's docs a doc is pooled
-- when it has a grade (judged_grade NULL is "not in the qrels"; an imputed grade counts as judged),
-- so the judged docs suffice; folded down the ranking with the counts above each doc.
CREATE OR REPLACE MACRO duckrank.inferred_average_precision_of(q) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            list_reduce(list_filter(q.docs, lambda d: d.grade IS NOT NULL),
                        lambda s, d: {'rel': s.rel + d.rel, 'nonrel': s.nonrel + d.nonrel, 'pooled': s.pooled + 1,
                                      'sum': s.sum + CASE WHEN d.rel > 0
                                          THEN (1 + s.pooled * ((s.rel + 0.00001) / (s.rel + s.nonrel + 2 * 0.00001))) / d.rank
                                          ELSE 0.0 END},
                        {'rel': 0.0::DOUBLE, 'nonrel': 0.0::DOUBLE, 'pooled': 0.0::DOUBLE, 'sum': 0.0::DOUBLE}).sum,
            q.num_rel),
        q.tie_rule, 'infAP');
COMMENT ON MACRO duckrank.inferred_average_precision_of IS 'infAP = (1/R) sum over relevant retrieved r of (1 + pooled above * (rel above + e) / (judged above + 2e)) / r (trec_eval infAP)';

-- relstring (trec_eval 10, m_relstring.c): the top k docs' judgments as text, one character each:
-- the grade 0-9 (a fractional grade truncated toward zero, as trec_eval's atol reads it), '>' above
-- 9, '-' not in the qrels, '.' a negative grade (form_res_rels.c: "in the pool, but unjudged").
-- Text, not a number: it has no summary.
CREATE OR REPLACE MACRO duckrank.relevance_character(judged_grade) AS
    CASE WHEN judged_grade IS NULL THEN '-'
         WHEN trunc(judged_grade) < 0 THEN '.'
         WHEN trunc(judged_grade) > 9 THEN '>'
         ELSE chr(48 + CAST(trunc(judged_grade) AS INTEGER)) END;
COMMENT ON MACRO duckrank.relevance_character IS 'one doc''s character in trec_eval''s relstring: 0-9, > (above 9), - (not in the qrels), . (negative)';

-- stand_in: the stand-in's one unjudged doc, '-' (duckrank.stand_in_docs).
CREATE OR REPLACE MACRO duckrank.relevance_string_of(q, k, stand_in) AS
    CASE WHEN duckrank.stand_in_docs(q, stand_in) = 1 THEN '-'
         ELSE duckrank.needs_strict_ties(
                  array_to_string(list_transform(q.docs[1:coalesce(k, len(q.docs))],
                                                 lambda d: duckrank.relevance_character(d.judged_grade)), ''),
                  q.tie_rule, 'relstring') END;
COMMENT ON MACRO duckrank.relevance_string_of IS 'the top k docs'' judgments as text, a character each (trec_eval relstring)';

-- Compat (Clarke, Vtyurina and Smucker, TOIS 2021; ir_measures' compat provider): the rank-biased
-- overlap of the ranking with an ideal one, RBO = sum_{i<=n} p^(i-1) O(i) / i / sum_{i<=n} p^(i-1),
-- O(i) = the docs in both top i's, n = max(retrieved, the ideal's length); normalize divides by the
-- ideal's own RBO (where O(i) = min(i, its length)). The ideal ranking is duckrank.ranked's: the judged
-- docs of positive gain (grade > 0), best grade first, within a grade the retrieved ones first in their
-- rank order (ir_measures orders a grade by run score, then by the qrels' order: the same where the
-- scores are positive and distinct). A relevant doc at rank r and ideal position e is in both top i's
-- from i = max(r, e) on.
CREATE OR REPLACE MACRO duckrank.compat_of(q, persistence, normalize) AS
    duckrank.needs_strict_ties(list_transform(
        [{'both_from': list_transform(list_filter(q.docs, lambda d: d.gain > 0),
              lambda d: greatest(d.rank, list_filter(q.ideal, lambda b: b.gain = d.gain)[1].first_rank
                                         + len(list_filter(q.docs, lambda e: e.gain = d.gain AND e.rank < d.rank)))),
          'ideal': CAST(coalesce(list_sum(list_transform(q.ideal, lambda b: b.docs)), 0) AS BIGINT),
          'depth': greatest(q.num_ret, CAST(coalesce(list_sum(list_transform(q.ideal, lambda b: b.docs)), 0) AS BIGINT))}],
        lambda x: duckrank.ratio(
            coalesce(list_sum(list_transform(range(1, x.depth + 1), lambda i: power(CAST(persistence AS DOUBLE), i - 1)
                                                 * len(list_filter(x.both_from, lambda m: m <= i)) / i)), 0.0),
            coalesce(list_sum(list_transform(range(1, x.depth + 1), lambda i: power(CAST(persistence AS DOUBLE), i - 1)
                                                 * CASE WHEN normalize THEN least(i, x.ideal) / i ELSE 1 END)), 0.0)))[1],
        q.tie_rule, 'Compat');
COMMENT ON MACRO duckrank.compat_of IS 'Compat = RBO of the ranking with the ideal one, over the ideal''s own RBO (normalize) (ir_measures Compat)';
