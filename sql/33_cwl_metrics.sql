-- The C/W/L family: BPM, INST, INSQ, SDCG and NERR (equations 8, 9, 10, 11), as ir_measures'
-- cwl_eval provider computes them with cwl_eval 1.0.12 (Moffat et al.'s C/W/L framework; Azzopardi,
-- Thomas and Moffat, SIGIR 2019; NERR: Azzopardi, Mackenzie and Moffat, ICTIR 2021).
--
-- A user reads rank 1 and goes on from rank i to rank i + 1 with probability C(i). P(i) =
-- prod_{j<i} C(j) is the chance to reach rank i, W(i) = P(i) / sum_j P(j) the share of attention rank
-- i gets, and the measure is the expected rate of gain sum_i W(i) g(i) (cwl_eval's expected utility,
-- the value ir_measures reports). cwl_eval evaluates ranks 1..1000 (its max_n, which ir_measures
-- passes): deeper docs are dropped, a shorter ranking is padded with gain 0, and the sums run over
-- all 1000 ranks (INSQ's and INST's W never reach 0, so the padding counts).
--
-- The gain of a doc (ir_measures' IrmQrelHandler): its grade with negatives read as 0, clipped to
-- [min_rel, max_rel] and scaled to [0, 1]: (clip(max(grade, 0)) - min_rel) / (max_rel - min_rel).
-- An unjudged doc gains 0 (cwl_eval's worst case).

CREATE OR REPLACE MACRO duckrank.cwl_gain(grade, min_rel, max_rel) AS
    coalesce((least(greatest(greatest(grade, 0), min_rel), max_rel) - min_rel) / (max_rel - min_rel), 0.0);
COMMENT ON MACRO duckrank.cwl_gain IS 'C/W/L gain of a grade: max(grade, 0) clipped to [min_rel, max_rel] and scaled to [0, 1]; 0 unjudged';

-- C(i) of each measure at rank i, given the gain g of rank i and the gain cg of ranks 1..i; a
-- cutoff k (BPM's cost budget K, SDCG's and NERR8/9's depth) stops the user at rank k, k NULL never.
-- As written in cwl_eval's metric classes (cwl_bpm.py, cwl_dcg.py, cwl_inst.py, cwl_insq.py,
-- cwl_nerr.py).
CREATE OR REPLACE MACRO duckrank.cwl_continuation(measure, i, g, cg, k, t, phi) AS
    CASE measure
        WHEN 'bpm' THEN CASE WHEN cg < t AND i < coalesce(k, i + 1) THEN 1.0 ELSE 0.0 END
        WHEN 'sdcg' THEN CASE WHEN i < coalesce(k, i + 1) THEN ln(i + 1) / ln(i + 2) ELSE 0.0 END
        WHEN 'inst' THEN power((i + t + (t - cg) - 1) / (i + t + (t - cg)), 2)
        WHEN 'insq' THEN power((i + 2 * t - 1) / (i + 2 * t), 2)
        WHEN 'nerr8' THEN CASE WHEN i < coalesce(k, i + 1) THEN 1 - g ELSE 0.0 END
        WHEN 'nerr9' THEN CASE WHEN i < coalesce(k, i + 1) THEN i / (i + 1) * (1 - g) ELSE 0.0 END
        WHEN 'nerr10' THEN phi * (1 - g)
        WHEN 'nerr11' THEN power((i + 2 * t - 1) / (i + 2 * t), 2) * (1 - g)
    END;
COMMENT ON MACRO duckrank.cwl_continuation IS 'C(i), the chance to go on from rank i to i + 1, of each C/W/L measure (cwl_eval)';

-- sum_i W(i) g(i) over ranks 1..1000, folded down the ranks with P(i), sum P and sum P g; q.docs
-- holds the judged docs in rank order, read one after the other as their ranks come. With a cutoff
-- k, P is 0 beyond rank k, so the fold stops there.
CREATE OR REPLACE MACRO duckrank.cwl_rate_of(q, measure, k, t, phi, min_rel, max_rel) AS
    duckrank.needs_strict_ties(list_transform(
        [list_transform(q.docs, lambda d: {'rank': d.rank, 'gain': duckrank.cwl_gain(d.grade, min_rel, max_rel)})],
        lambda gains: list_transform([list_reduce(range(1, least(coalesce(k, 1000), 1000) + 1),
            lambda s, i: {
                'next': s.next + CASE WHEN gains[s.next].rank = i THEN 1 ELSE 0 END,
                'cg': s.cg + CASE WHEN gains[s.next].rank = i THEN gains[s.next].gain ELSE 0.0 END,
                'reach': s.reach * duckrank.cwl_continuation(
                    measure, i, CASE WHEN gains[s.next].rank = i THEN gains[s.next].gain ELSE 0.0 END,
                    s.cg + CASE WHEN gains[s.next].rank = i THEN gains[s.next].gain ELSE 0.0 END, k, t, phi),
                'reached': s.reached + s.reach,
                'gained': s.gained + s.reach * CASE WHEN gains[s.next].rank = i THEN gains[s.next].gain ELSE 0.0 END},
            {'next': 1, 'cg': 0.0::DOUBLE, 'reach': 1.0::DOUBLE, 'reached': 0.0::DOUBLE, 'gained': 0.0::DOUBLE})],
            lambda f: f.gained / f.reached)[1])[1],
        q.tie_rule, measure);
COMMENT ON MACRO duckrank.cwl_rate_of IS 'a C/W/L measure''s expected rate of gain sum_i W(i) g(i) over ranks 1..1000 (cwl_eval)';

-- BPM(T, K) (Zhang et al., SIGIR 2017; cwl_eval's static BPM): the user stops at rank K or once
-- the gain so far reaches T, whichever comes first; the value is the mean gain of the ranks read.
CREATE OR REPLACE MACRO duckrank.bpm_of(q, k, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'bpm', k, t, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.bpm_of IS 'BPM(T)@K = the mean gain of ranks 1..m, m = min(K, the rank where the gain so far reaches T) (cwl_eval)';

-- SDCG@k: DCG@k over the DCG@k of k docs of full gain (W(i) = (1 / log2(i + 1)) / sum_{j<=k} 1 / log2(j + 1)).
CREATE OR REPLACE MACRO duckrank.sdcg_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'sdcg', k, NULL, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.sdcg_of IS 'SDCG@k = sum_{i<=k} g(i) / log2(i+1) / sum_{i<=k} 1 / log2(i+1) (cwl_eval)';

-- INST(T) (Moffat et al., ADCS 2015): C(i) = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - the gain so far.
CREATE OR REPLACE MACRO duckrank.inst_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'inst', NULL, t, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.inst_of IS 'INST(T): C(i) = ((i + 2T - cg(i) - 1) / (i + 2T - cg(i)))^2 (cwl_eval)';

-- INSQ(T) (Moffat et al., ADCS 2012): C(i) = ((i + 2T - 1) / (i + 2T))^2, whatever the gains.
CREATE OR REPLACE MACRO duckrank.insq_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'insq', NULL, t, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.insq_of IS 'INSQ(T): C(i) = ((i + 2T - 1) / (i + 2T))^2 (cwl_eval)';

-- NERR, the C/W/L approximations of ERR: the user stops at a doc with the chance of its gain.
-- Equation 8: C(i) = 1 - g(i) up to rank k.
CREATE OR REPLACE MACRO duckrank.nerr8_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'nerr8', k, NULL, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.nerr8_of IS 'NERR8@k: C(i) = 1 - g(i) for i < k, else 0 (cwl_eval)';

-- Equation 9: C(i) = i / (i + 1) (1 - g(i)) up to rank k.
CREATE OR REPLACE MACRO duckrank.nerr9_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'nerr9', k, NULL, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.nerr9_of IS 'NERR9@k: C(i) = i / (i + 1) (1 - g(i)) for i < k, else 0 (cwl_eval)';

-- Equation 10: C(i) = phi (1 - g(i)), RBP's patience.
CREATE OR REPLACE MACRO duckrank.nerr10_of(q, phi, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'nerr10', NULL, NULL, phi, min_rel, max_rel);
COMMENT ON MACRO duckrank.nerr10_of IS 'NERR10(phi): C(i) = phi (1 - g(i)) (cwl_eval)';

-- Equation 11: INSQ's C(i) times 1 - g(i).
CREATE OR REPLACE MACRO duckrank.nerr11_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, 'nerr11', NULL, t, NULL, min_rel, max_rel);
COMMENT ON MACRO duckrank.nerr11_of IS 'NERR11(T): C(i) = ((i + 2T - 1) / (i + 2T))^2 (1 - g(i)) (cwl_eval)';
