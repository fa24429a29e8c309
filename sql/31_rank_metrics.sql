-- Rank-sensitive binary metrics: reciprocal rank, average precision, bpref, interpolated precision.
-- Sources: trec_eval 10.0 m_recip_rank.c, m_map.c, m_map_cut.c, m_bpref.c, m_iprec_at_recall.c,
-- m_11pt_avg.c.

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

-- Interpolated precision at recall level r: the best precision at or below the rank where the
-- relevant docs retrieved reach round(r * R) (half away from zero, as trec_eval 10 prints; at
-- least one), 0 if never reached.
CREATE OR REPLACE MACRO duckrank.interpolated_precision_of(q, recall) AS
    duckrank.needs_strict_ties(
        coalesce(list_max(list_transform(duckrank.relevant_ranks(q, NULL),
                                         lambda r, j: CASE WHEN j >= greatest(round(CAST(recall AS DOUBLE) * q.num_rel), 1)
                                                           THEN j / r END)), 0.0),
        q.tie_rule, 'interpolated precision');
COMMENT ON MACRO duckrank.interpolated_precision_of IS 'iP@r = max precision at ranks where recall >= r (trec_eval iprec_at_recall)';

-- 11-point average: the mean of interpolated precision at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg).
CREATE OR REPLACE MACRO duckrank.eleven_point_average_of(q) AS
    list_sum(list_transform(range(11), lambda level: duckrank.interpolated_precision_of(q, level / 10))) / 11;
COMMENT ON MACRO duckrank.eleven_point_average_of IS 'mean interpolated precision at recall 0, 0.1, ..., 1 (trec_eval 11pt_avg)';
