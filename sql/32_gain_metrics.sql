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
-- min = 0, which is what this computes. Graded, not scaled (ranx): w = the grade of a relevant doc,
-- else 0. Binary (graded := false, Moffat & Zobel): w = rel(i).
-- Graded weights are not averaged over ties, so graded RBP refuses ties := 'average'. p is read as
-- a DOUBLE, as C reads it (a DECIMAL 1 - 0.9 would be exactly 0.1, trec_eval's double is not).
CREATE OR REPLACE MACRO duckrank.rbp_of(q, k, p, graded, scaled) AS
    (1 - CAST(p AS DOUBLE)) * coalesce(list_sum(list_transform(duckrank.top_docs(q, k),
        lambda d: CASE WHEN graded
                       THEN duckrank.needs_strict_ties(
                                CASE WHEN scaled THEN greatest(coalesce(d.grade, 0), 0) / greatest(q.top_grade, 1)
                                     WHEN d.rel > 0 THEN d.grade ELSE 0 END,
                                q.tie_rule, 'graded RBP (graded := false is linear)')
                       ELSE d.tied_rel END * power(CAST(p AS DOUBLE), d.rank - 1))), 0.0);
COMMENT ON MACRO duckrank.rbp_of IS 'RBP(p)@k = (1-p) sum_{i<=k} w(i) p^(i-1), w = grade / max(1, top grade) (graded, scaled), the grade of a relevant doc (graded) or rel(i)';

-- RBP's residual: the weight RBP could still gain, from unjudged docs in the evaluated depth d and
-- from the ranks beyond it: p^d + (1 - p) sum_{unjudged i<=d} p^(i-1). The weights of ranks 1..d
-- and beyond sum to 1, so that is 1 - (1 - p) sum_{judged i<=d} p^(i-1), which reads the judged
-- docs only. As trec_eval 10 (m_rbp_resid.c) it is 0 when no unjudged doc was retrieved within d
-- (Moffat & Zobel would keep p^d), and a query the run missed (complete := true) scores 0, or under
-- stand_in 1: the stand-in's one unjudged doc leaves all of the weight (duckrank.stand_in_docs).
CREATE OR REPLACE MACRO duckrank.rbp_residual_of(q, k, p, stand_in) AS
    CASE WHEN duckrank.stand_in_docs(q, stand_in) = 1 THEN 1.0
         WHEN len(list_filter(duckrank.top_docs(q, k), lambda d: NOT d.unjudged)) = least(coalesce(k, q.num_ret), q.num_ret)
         THEN 0.0
         ELSE 1 - (1 - CAST(p AS DOUBLE)) * coalesce(list_sum(list_transform(list_filter(duckrank.top_docs(q, k), lambda d: NOT d.unjudged),
                                                             lambda d: power(CAST(p AS DOUBLE), d.rank - 1))), 0.0) END;
COMMENT ON MACRO duckrank.rbp_residual_of IS 'RBP residual = p^d + (1-p) sum_{unjudged i<=d} p^(i-1) = 1 - (1-p) sum_{judged i<=d} p^(i-1)';

-- The gains as trec_eval's G, ndcg_rel and Rndcg read them (gain_init.c setup_gains): a judged doc's
-- gain is its grade, or its gain_map entry (duckrank's gain := exp | raw as well); the relevance
-- level plays no part, so a grade below rel_level still gains. The ideal ranking is duckrank.ranked's
-- `ideal` blocks: the judged docs of positive gain, best first (trec_eval walks its gain levels down
-- and stops at the first gain <= 0).

-- G (trec_eval 10, m_G.c, "normalized gain"): the doc at rank i adds gain(i) / log2(2 + cost(i) -
-- got(i)), got(i) = the gains of ranks 1..i and cost(i) = sum over ranks p <= i of max(ideal gain
-- at p, 1) (1 beyond the ideal ranking: min_cost); G = that sum / the ideal's total gain, 0 when
-- it has none. cost(i) from the blocks: i plus (gain - 1) for each ideal rank <= i whose gain is
-- above 1. Folded down the ranking with got(i); a doc of gain 0 adds nothing, so the judged docs
-- suffice.
CREATE OR REPLACE MACRO duckrank.ideal_cost(q, i) AS
    i + coalesce(list_sum(list_transform(q.ideal, lambda b: greatest(b.gain - 1, 0.0)
                                                      * least(greatest(i - b.first_rank + 1, 0), b.docs))), 0.0);
COMMENT ON MACRO duckrank.ideal_cost IS 'trec_eval G''s cost at rank i: sum over ranks p <= i of max(ideal gain at p, 1)';

CREATE OR REPLACE MACRO duckrank.normalized_gain_of(q) AS
    duckrank.needs_strict_ties(
        duckrank.ratio(
            list_reduce(q.docs,
                        lambda s, d: {'got': s.got + d.gain,
                                      'sum': s.sum + CASE WHEN d.gain <> 0
                                          THEN d.gain / log2(2 + duckrank.ideal_cost(q, d.rank) - (s.got + d.gain))
                                          ELSE 0.0 END},
                        {'got': 0.0::DOUBLE, 'sum': 0.0::DOUBLE}).sum,
            coalesce(list_sum(list_transform(q.ideal, lambda b: b.gain * b.docs)), 0.0)),
        q.tie_rule, 'G');
COMMENT ON MACRO duckrank.normalized_gain_of IS 'G = sum_i g(i) / log2(2 + cost(i) - sum_{p<=i} g(p)) / total ideal gain (trec_eval G)';

-- ndcg_rel (trec_eval 10, m_ndcg_rel.c): nDCG averaged over the relevant docs, relevant meaning a
-- positive gain. A retrieved one at rank r counts nDCG@r = DCG@r / IDCG@r; each of the L - n never
-- retrieved (L = the ideal ranking's length, n = those retrieved) counts DCG / IDCG at full depth.
-- The sum / L, 0 unless positive. Folded down the ranking with DCG@r.
CREATE OR REPLACE MACRO duckrank.ndcg_rel_of(q) AS
    duckrank.needs_strict_ties(
        list_transform(
            [list_reduce(q.docs,
                         lambda acc, doc: {'dcg': acc.dcg + doc.gain / log2(doc.rank + 1),
                                       'sum': acc.sum + CASE WHEN doc.gain > 0
                                           THEN (acc.dcg + doc.gain / log2(doc.rank + 1)) / duckrank.idcg_of(q, doc.rank, 'qrels')
                                           ELSE 0.0 END,
                                       'hits': acc.hits + CASE WHEN doc.gain > 0 THEN 1 ELSE 0 END},
                         {'dcg': 0.0::DOUBLE, 'sum': 0.0::DOUBLE, 'hits': 0.0::DOUBLE})],
            -- f: the fold; L: the ideal ranking's length; t: the sum with the never retrieved docs
            lambda f: list_transform(
                [{'L': coalesce(list_sum(list_transform(q.ideal, lambda b: b.docs)), 0), 'f': f}],
                lambda x: list_transform(
                    [CASE WHEN x.L > 0 THEN x.f.sum + (x.L - x.f.hits) * x.f.dcg / duckrank.idcg_of(q, NULL, 'qrels') END],
                    lambda t: CASE WHEN t > 0 THEN t / x.L ELSE 0.0 END)[1])[1])[1],
        q.tie_rule, 'ndcg_rel');
COMMENT ON MACRO duckrank.ndcg_rel_of IS 'ndcg_rel = mean over the positive-gain judged docs of nDCG at its rank (at full depth if not retrieved) (trec_eval ndcg_rel)';

-- Rndcg (trec_eval 10, m_Rndcg.c): nDCG averaged at the "R levels", the ranks E where the ideal
-- ranking's gain changes (the end of each gain level, the last one where it drops to 0), each
-- counting DCG@min(E, retrieved) / IDCG@E; and, when more than one doc is retrieved beyond the ideal
-- ranking's length L, DCG / IDCG at full depth once more (the "implied R-level change at
-- num_retrieved": trec_eval's loop skips it when exactly L + 1 are retrieved). 0 when R = 0 (R at
-- rel_level: the only use of it); NaN, as trec_eval's 0/0, when R > 0 but no judged doc has a
-- positive gain (a gain_map that zeroes the relevant grades).
CREATE OR REPLACE MACRO duckrank.r_ndcg_of(q) AS
    duckrank.needs_strict_ties(
        CASE WHEN q.num_rel = 0 THEN 0.0 ELSE list_transform(
            [list_concat(
                -- the ends of the gain levels: a block whose next block's gain differs (the lambdas' names must
                -- not be those inside dcg_of and idcg_of, which the cutoff expression is pasted into)
                list_filter(list_transform(q.ideal, lambda level, position: CASE WHEN q.ideal[position + 1].gain IS DISTINCT FROM level.gain
                                                                     THEN duckrank.dcg_of(q, level.first_rank + level.docs - 1)
                                                                          / duckrank.idcg_of(q, level.first_rank + level.docs - 1, 'qrels')
                                                                END),
                            lambda value: value IS NOT NULL),
                CASE WHEN len(q.ideal) > 0 AND q.num_ret > list_sum(list_transform(q.ideal, lambda b: b.docs)) + 1
                     THEN [duckrank.dcg_of(q, NULL) / duckrank.idcg_of(q, NULL, 'qrels')] ELSE [] END)],
            lambda terms: CASE WHEN len(terms) = 0 THEN 'NaN'::DOUBLE ELSE list_sum(terms) / len(terms) END)[1] END,
        q.tie_rule, 'Rndcg');
COMMENT ON MACRO duckrank.r_ndcg_of IS 'Rndcg = mean nDCG at the ranks where the ideal gain changes (and at full depth) (trec_eval Rndcg)';
