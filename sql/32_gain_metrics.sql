-- Graded metrics: CG, DCG, IDCG, nDCG, ERR, RBP.
-- Sources: Jarvelin & Kekalainen 2002 (DCG; trec_eval m_ndcg.c, m_ndcg_cut.c);
-- Chapelle et al. 2009 (ERR); Moffat & Zobel 2008 (RBP; trec_eval m_rbp.c, m_rbp_resid.c).

-- CG@k = sum_{i<=k} g(i).
CREATE OR REPLACE MACRO duckrank.cg_of(q, k) AS
    coalesce(list_sum(list_transform(duckrank.top_docs(q, k), lambda d: d.tied_gain)), 0.0);
COMMENT ON MACRO duckrank.cg_of IS 'CG@k = sum_{i<=k} g(i)';

-- DCG@k = sum_{i<=k} g(i) / log2(i + 1).
CREATE OR REPLACE MACRO duckrank.dcg_of(q, k) AS
    coalesce(list_sum(list_transform(duckrank.top_docs(q, k), lambda d: d.tied_gain / log2(d.rank + 1))), 0.0);
COMMENT ON MACRO duckrank.dcg_of IS 'DCG@k = sum_{i<=k} g(i) / log2(i+1)';

-- IDCG@k: the DCG@k of the best ordering. ideal := 'qrels' (default, trec_eval) orders every judged
-- doc of the query, retrieved or not: duckrank.ranked's ideal blocks, each counted whole when it
-- ends within k and up to rank k when k cuts it. ideal := 'run' orders only the retrieved docs
-- (scikit-learn). Only positive gains enter the ideal: an ideal ranking never places a harmful doc.
CREATE OR REPLACE MACRO duckrank.idcg_of(q, k, ideal) AS
    CASE WHEN ideal = 'run'
         THEN coalesce(list_sum(list_transform(
                  list_reverse_sort(list_transform(q.docs, lambda d: greatest(d.gain, 0.0))),
                  lambda g, i: CASE WHEN i <= coalesce(k, i) THEN g / log2(i + 1) END)), 0.0)
         ELSE coalesce(list_sum(list_transform(q.ideal,
                  lambda b: CASE WHEN b.first_rank <= coalesce(k, b.first_rank)
                                 THEN b.gain * CASE WHEN k IS NULL OR b.first_rank + b.docs - 1 <= k THEN b.discount
                                                    ELSE duckrank.discount_sum(b.first_rank, k) END END)), 0.0) END;
COMMENT ON MACRO duckrank.idcg_of IS 'IDCG@k = DCG@k of the judged docs sorted by gain (ideal := run: of the retrieved docs)';

-- nDCG@k = DCG@k / IDCG@k, 0 when IDCG = 0.
CREATE OR REPLACE MACRO duckrank.ndcg_of(q, k, ideal) AS
    duckrank.ratio(duckrank.dcg_of(q, k), duckrank.idcg_of(q, k, ideal));
COMMENT ON MACRO duckrank.ndcg_of IS 'nDCG@k = DCG@k / IDCG@k, 0 if IDCG = 0';

-- ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i), R_i = (2^g_i - 1) / 2^g_max (err_stop).
-- Folded from the last rank up: E_r = R_r / r + (1 - R_r) E_{r+1}, ERR = E_1. An unjudged doc
-- (R = 0) leaves E unchanged, so the judged docs alone give the exact value.
CREATE OR REPLACE MACRO duckrank.err_of(q, k) AS
    duckrank.needs_strict_ties(
        list_reduce(list_reverse(list_transform(duckrank.top_docs(q, k),
                                                lambda d: {'t': d.err_stop / d.rank, 's': d.err_stop})),
                    lambda e, d: {'t': d.t + (1 - d.s) * e.t, 's': d.s},
                    {'t': 0.0::DOUBLE, 's': 0.0::DOUBLE}).t,
        q.tie_rule, 'ERR');
COMMENT ON MACRO duckrank.err_of IS 'ERR@k = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i), R = (2^g - 1) / 2^g_max';

-- RBP(p)@k = (1 - p) sum_{i<=k} w(i) p^(i-1). Graded (trec_eval 10, m_rbp.c): w = the doc's grade
-- scaled to [0, 1] when the query has a grade above 1, i.e. grade / max(1, the query's top grade)
-- (negative grades 0; rel_level plays no part). trec_eval scales by (g - min) / (max - min) over
-- the gains of grades 0..top, with min left uninitialised in its source; the built binary behaves as
-- min = 0, which is what this computes. Binary (graded := false, Moffat & Zobel): w = rel(i).
-- Graded weights are not averaged over ties, so graded RBP refuses ties := 'average'. p is read as
-- a DOUBLE, as C reads it (a DECIMAL 1 - 0.9 would be exactly 0.1, trec_eval's double is not).
CREATE OR REPLACE MACRO duckrank.rbp_of(q, k, p, graded) AS
    (1 - CAST(p AS DOUBLE)) * coalesce(list_sum(list_transform(duckrank.top_docs(q, k),
        lambda d: CASE WHEN graded
                       THEN duckrank.needs_strict_ties(greatest(coalesce(d.grade, 0), 0) / greatest(q.top_grade, 1),
                                                       q.tie_rule, 'graded RBP (graded := false is linear)')
                       ELSE d.tied_rel END * power(CAST(p AS DOUBLE), d.rank - 1))), 0.0);
COMMENT ON MACRO duckrank.rbp_of IS 'RBP(p)@k = (1-p) sum_{i<=k} w(i) p^(i-1), w = grade / max(1, top grade) (graded) or rel(i)';

-- RBP's residual: the weight RBP could still gain, from unjudged docs in the evaluated depth d and
-- from the ranks beyond it: p^d + (1 - p) sum_{unjudged i<=d} p^(i-1). The weights of ranks 1..d
-- and beyond sum to 1, so that is 1 - (1 - p) sum_{judged i<=d} p^(i-1), which reads the judged
-- docs only. As trec_eval 10 (m_rbp_resid.c) it is 0 when no unjudged doc was retrieved within d
-- (Moffat & Zobel would keep p^d), and a query the run missed (complete := true) scores 0.
CREATE OR REPLACE MACRO duckrank.rbp_residual_of(q, k, p) AS
    CASE WHEN len(list_filter(duckrank.top_docs(q, k), lambda d: NOT d.unjudged)) = least(coalesce(k, q.num_ret), q.num_ret)
         THEN 0.0
         ELSE 1 - (1 - CAST(p AS DOUBLE)) * coalesce(list_sum(list_transform(list_filter(duckrank.top_docs(q, k), lambda d: NOT d.unjudged),
                                                             lambda d: power(CAST(p AS DOUBLE), d.rank - 1))), 0.0) END;
COMMENT ON MACRO duckrank.rbp_residual_of IS 'RBP residual = p^d + (1-p) sum_{unjudged i<=d} p^(i-1) = 1 - (1-p) sum_{judged i<=d} p^(i-1)';
