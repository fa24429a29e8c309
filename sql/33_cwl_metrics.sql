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
    CASE WHEN grade IS NULL THEN 0.0  -- greatest skips a NULL: an unjudged doc would gain as grade 0
         ELSE (least(greatest(greatest(grade, 0), min_rel), max_rel) - min_rel) / (max_rel - min_rel) END;
COMMENT ON MACRO duckrank.cwl_gain IS 'C/W/L gain of a grade: max(grade, 0) clipped to [min_rel, max_rel] and scaled to [0, 1]; 0 unjudged';

-- Every measure's C(i) is one product, at rank i with gain g(i) and gain so far cg(i) (ranks 1..i):
--   C(i) = patience * ((i + a - 1) / (i + a))^ratio_power * (log2(i + 1) / log2(i + 2))^log_power
--          * (1 - stop_at_gain * g(i)) * [cg(i) < goal] * [i < k],   a = shift - shift_per_gain * cg(i)
-- (a NULL goal or k: no such stop). Each measure below gives its factors c, as cwl_eval's metric
-- classes write C(i) (cwl_bpm.py, cwl_dcg.py, cwl_inst.py, cwl_insq.py, cwl_nerr.py). One arithmetic
-- form, not a CASE over the measures: DuckDB would bind every branch in each folded lambda.
CREATE OR REPLACE MACRO duckrank.cwl_continuation(i, g, cg, k, c) AS
    c.patience * power((i + c.shift - c.shift_per_gain * cg - 1) / (i + c.shift - c.shift_per_gain * cg), c.ratio_power)
    * power(ln(i + 1) / ln(i + 2), c.log_power) * (1 - c.stop_at_gain * g)
    * CASE WHEN coalesce(cg < c.goal, true) AND i < coalesce(k, i + 1) THEN 1.0 ELSE 0.0 END;
COMMENT ON MACRO duckrank.cwl_continuation IS 'C(i), the chance to go on from rank i to i + 1, of a C/W/L measure with factors c (cwl_eval)';

-- prod_{j=first}^{i-1} C(j) over ranks that gain nothing (an unjudged doc, or none: g = 0 and the
-- gain so far cg throughout), telescoped; 1 for i = first. The cutoff plays no part: the ranks
-- read stop at k (cwl_rate_of).
CREATE OR REPLACE MACRO duckrank.cwl_gainless_reach(first, i, cg, c) AS
    power(c.patience, i - first)
    * power((first + c.shift - c.shift_per_gain * cg - 1) / (i - 1 + c.shift - c.shift_per_gain * cg), c.ratio_power)
    * power(ln(first + 1) / ln(i + 1), c.log_power) * CASE WHEN i = first OR coalesce(cg < c.goal, true) THEN 1.0 ELSE 0.0 END;
COMMENT ON MACRO duckrank.cwl_gainless_reach IS 'prod_{j=first}^{i-1} C(j) of a C/W/L measure over ranks of gain 0';

-- sum_{i=first}^{last} prod_{j=first}^{i-1} C(j) over ranks that gain nothing.
CREATE OR REPLACE MACRO duckrank.cwl_gainless_reached(first, last, cg, c) AS
    coalesce(list_sum(list_transform(range(first, last + 1),
                                     lambda i: duckrank.cwl_gainless_reach(first, i, cg, c))), 0.0);
COMMENT ON MACRO duckrank.cwl_gainless_reached IS 'sum_{i=first}^{last} prod_{j=first}^{i-1} C(j) of a C/W/L measure over ranks of gain 0';

-- sum_i P(i) g(i) / sum_i P(i) over ranks 1..min(k, 1000) (P is 0 beyond k), folded down the docs
-- of q.docs (the judged ones suffice): the state holds the last rank folded, the gain so far, P of
-- the rank after it and the two sums; the ranks between two docs gain nothing, so their P telescope.
-- The factors c become a lambda variable, bound once per query, not at each of their uses.
CREATE OR REPLACE MACRO duckrank.cwl_rate_of(q, k, c, min_rel, max_rel, measure) AS
    duckrank.needs_strict_ties(list_transform([c], lambda factors: list_transform(
        [{'depth': least(coalesce(k, 1000), 1000),
          'fold': list_reduce(
              list_transform(list_filter(q.docs, lambda d: d.rank <= least(coalesce(k, 1000), 1000)),
                             lambda d: {'rank': d.rank, 'gain': duckrank.cwl_gain(d.grade, min_rel, max_rel)}),
              lambda s, d: {
                  'rank': d.rank,
                  'cg': s.cg + d.gain,
                  'reach': s.reach * duckrank.cwl_gainless_reach(s.rank + 1, d.rank, s.cg, factors)
                           * duckrank.cwl_continuation(d.rank, d.gain, s.cg + d.gain, k, factors),
                  'reached': s.reached + s.reach * duckrank.cwl_gainless_reached(s.rank + 1, d.rank, s.cg, factors),
                  'gained': s.gained + s.reach * duckrank.cwl_gainless_reach(s.rank + 1, d.rank, s.cg, factors) * d.gain},
              {'rank': 0, 'cg': 0.0::DOUBLE, 'reach': 1.0::DOUBLE, 'reached': 0.0::DOUBLE, 'gained': 0.0::DOUBLE})}],
        lambda x: x.fold.gained / (x.fold.reached + x.fold.reach * duckrank.cwl_gainless_reached(
            x.fold.rank + 1, x.depth, x.fold.cg, factors)))[1])[1],
        q.tie_rule, measure);
COMMENT ON MACRO duckrank.cwl_rate_of IS 'a C/W/L measure''s expected rate of gain sum_i W(i) g(i) over ranks 1..1000 (cwl_eval)';

-- BPM(T, K) (Zhang et al., SIGIR 2017; cwl_eval's static BPM): the user stops at rank K or once
-- the gain so far reaches T, whichever comes first; the value is the mean gain of the ranks read.
CREATE OR REPLACE MACRO duckrank.bpm_of(q, k, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, k, {'patience': 1.0, 'shift': 1.0, 'shift_per_gain': 0.0, 'ratio_power': 0.0,
                             'log_power': 0.0, 'stop_at_gain': 0.0, 'goal': CAST(t AS DOUBLE)}, min_rel, max_rel, 'BPM');
COMMENT ON MACRO duckrank.bpm_of IS 'BPM(T)@K = the mean gain of ranks 1..m, m = min(K, the rank where the gain so far reaches T) (cwl_eval)';

-- SDCG@k: DCG@k over the DCG@k of k docs of full gain (W(i) = (1 / log2(i + 1)) / sum_{j<=k} 1 / log2(j + 1)).
CREATE OR REPLACE MACRO duckrank.sdcg_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, k, {'patience': 1.0, 'shift': 1.0, 'shift_per_gain': 0.0, 'ratio_power': 0.0,
                             'log_power': 1.0, 'stop_at_gain': 0.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'SDCG');
COMMENT ON MACRO duckrank.sdcg_of IS 'SDCG@k = sum_{i<=k} g(i) / log2(i+1) / sum_{i<=k} 1 / log2(i+1) (cwl_eval)';

-- INST(T) (Moffat et al., ADCS 2015): C(i) = ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T - the gain so far.
CREATE OR REPLACE MACRO duckrank.inst_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, NULL, {'patience': 1.0, 'shift': 2.0 * t, 'shift_per_gain': 1.0, 'ratio_power': 2.0,
                             'log_power': 0.0, 'stop_at_gain': 0.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'INST');
COMMENT ON MACRO duckrank.inst_of IS 'INST(T): C(i) = ((i + 2T - cg(i) - 1) / (i + 2T - cg(i)))^2 (cwl_eval)';

-- INSQ(T) (Moffat et al., ADCS 2012): C(i) = ((i + 2T - 1) / (i + 2T))^2, whatever the gains.
CREATE OR REPLACE MACRO duckrank.insq_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, NULL, {'patience': 1.0, 'shift': 2.0 * t, 'shift_per_gain': 0.0, 'ratio_power': 2.0,
                             'log_power': 0.0, 'stop_at_gain': 0.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'INSQ');
COMMENT ON MACRO duckrank.insq_of IS 'INSQ(T): C(i) = ((i + 2T - 1) / (i + 2T))^2 (cwl_eval)';

-- NERR, the C/W/L approximations of ERR: the user stops at a doc with the chance of its gain.
-- Equation 8: C(i) = 1 - g(i) up to rank k.
CREATE OR REPLACE MACRO duckrank.nerr8_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, k, {'patience': 1.0, 'shift': 1.0, 'shift_per_gain': 0.0, 'ratio_power': 0.0,
                             'log_power': 0.0, 'stop_at_gain': 1.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'NERR8');
COMMENT ON MACRO duckrank.nerr8_of IS 'NERR8@k: C(i) = 1 - g(i) for i < k, else 0 (cwl_eval)';

-- Equation 9: C(i) = i / (i + 1) (1 - g(i)) up to rank k.
CREATE OR REPLACE MACRO duckrank.nerr9_of(q, k, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, k, {'patience': 1.0, 'shift': 1.0, 'shift_per_gain': 0.0, 'ratio_power': 1.0,
                             'log_power': 0.0, 'stop_at_gain': 1.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'NERR9');
COMMENT ON MACRO duckrank.nerr9_of IS 'NERR9@k: C(i) = i / (i + 1) (1 - g(i)) for i < k, else 0 (cwl_eval)';

-- RBP(p) as cwl_eval computes it for ir_measures' RBP(rel=N): C(i) = p, binary gains (relevant: grade
-- >= N), so W(i) = p^(i-1) / sum_{j<=1000} p^(j-1) = (1 - p) p^(i-1) / (1 - p^1000). Linear in the
-- gains: a tie's docs may share their mean relevance.
CREATE OR REPLACE MACRO duckrank.cwl_rbp_of(q, p) AS
    (1 - CAST(p AS DOUBLE)) * coalesce(list_sum(list_transform(list_filter(q.docs, lambda d: d.rank <= 1000),
                                                               lambda d: d.tied_rel * power(CAST(p AS DOUBLE), d.rank - 1))), 0.0)
    / (1 - power(CAST(p AS DOUBLE), 1000));
COMMENT ON MACRO duckrank.cwl_rbp_of IS 'RBP(p) of cwl_eval: (1 - p) sum_{i<=1000} rel(i) p^(i-1) / (1 - p^1000)';

-- Equation 10: C(i) = phi (1 - g(i)), RBP's patience.
CREATE OR REPLACE MACRO duckrank.nerr10_of(q, phi, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, NULL, {'patience': CAST(phi AS DOUBLE), 'shift': 1.0, 'shift_per_gain': 0.0, 'ratio_power': 0.0,
                             'log_power': 0.0, 'stop_at_gain': 1.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'NERR10');
COMMENT ON MACRO duckrank.nerr10_of IS 'NERR10(phi): C(i) = phi (1 - g(i)) (cwl_eval)';

-- Equation 11: INSQ's C(i) times 1 - g(i).
CREATE OR REPLACE MACRO duckrank.nerr11_of(q, t, min_rel, max_rel) AS
    duckrank.cwl_rate_of(q, NULL, {'patience': 1.0, 'shift': 2.0 * t, 'shift_per_gain': 0.0, 'ratio_power': 2.0,
                             'log_power': 0.0, 'stop_at_gain': 1.0, 'goal': CAST(NULL AS DOUBLE)}, min_rel, max_rel, 'NERR11');
COMMENT ON MACRO duckrank.nerr11_of IS 'NERR11(T): C(i) = ((i + 2T - 1) / (i + 2T))^2 (1 - g(i)) (cwl_eval)';
