-- Graded metrics: CG, DCG, IDCG, nDCG, ERR, RBP.
-- Sources: Jarvelin & Kekalainen 2002 (DCG; trec_eval m_ndcg.c, m_ndcg_cut.c), seeds 001, 003, 004;
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
CREATE OR REPLACE MACRO duckrank.idcg_of(q, k, ideal := 'qrels') AS
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
CREATE OR REPLACE MACRO duckrank.ndcg_of(q, k, ideal := 'qrels') AS
    duckrank.ratio(duckrank.dcg_of(q, k), duckrank.idcg_of(q, k, ideal := ideal));
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

-- RBP(p)@k = (1 - p) sum_{i<=k} rel(i) p^(i-1).
CREATE OR REPLACE MACRO duckrank.rbp_of(q, k, p := 0.8) AS
    (1 - p) * coalesce(list_sum(list_transform(duckrank.top_docs(q, k), lambda d: d.tied_rel * power(p, d.rank - 1))), 0.0);
COMMENT ON MACRO duckrank.rbp_of IS 'RBP(p)@k = (1-p) sum_{i<=k} rel(i) p^(i-1)';

-- RBP's residual: the weight RBP could still gain, from unjudged docs in the evaluated depth d and
-- from the ranks beyond it: p^d + (1 - p) sum_{unjudged i<=d} p^(i-1). The weights of ranks 1..d
-- and beyond sum to 1, so that is 1 - (1 - p) sum_{judged i<=d} p^(i-1), which reads the judged
-- docs only. A query the run missed (complete := true) scores 0 on every measure, the residual
-- included, as in trec_eval -c.
CREATE OR REPLACE MACRO duckrank.rbp_residual_of(q, k, p := 0.8) AS
    CASE WHEN q.num_ret = 0 THEN 0.0 ELSE
    1 - (1 - p) * coalesce(list_sum(list_transform(list_filter(duckrank.top_docs(q, k), lambda d: NOT d.unjudged),
                                                   lambda d: power(p, d.rank - 1))), 0.0) END;
COMMENT ON MACRO duckrank.rbp_residual_of IS 'RBP residual = p^d + (1-p) sum_{unjudged i<=d} p^(i-1) = 1 - (1-p) sum_{judged i<=d} p^(i-1)';

CREATE OR REPLACE MACRO duckrank.cg(qrels, run, k := NULL, gain := 'linear',
        gain_map := MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, gain := gain)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.cg_of(q, k), q.num_rel, empty) AS value
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, gain := gain, gain_map := gain_map, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.cg IS 'CG@k per query: sum of gains in the top k';

CREATE OR REPLACE MACRO duckrank.dcg(qrels, run, k := NULL, gain := 'linear',
        gain_map := MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, gain := gain)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.dcg_of(q, k), q.num_rel, empty) AS value
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, gain := gain, gain_map := gain_map, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.dcg IS 'DCG@k per query: sum of g(i)/log2(i+1) over the top k';

CREATE OR REPLACE MACRO duckrank.idcg(qrels, run, k := NULL, gain := 'linear',
        gain_map := MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), ideal := 'qrels', rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, gain := gain, ideal := ideal)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.idcg_of(q, k, ideal := ideal), q.num_rel, empty) AS value
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, gain := gain, gain_map := gain_map, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.idcg IS 'IDCG@k per query: DCG@k of the ideal ordering (ideal := qrels or run)';

CREATE OR REPLACE MACRO duckrank.ndcg(qrels, run, k := NULL, gain := 'linear',
        gain_map := MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), ideal := 'qrels', rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, gain := gain, ideal := ideal)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.ndcg_of(q, k, ideal := ideal), q.num_rel, empty) AS value
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, gain := gain, gain_map := gain_map, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.ndcg IS 'nDCG@k per query (trec_eval ndcg / ndcg_cut.k; gain linear|exp|raw or gain_map; ideal qrels|run)';

CREATE OR REPLACE MACRO duckrank.err(qrels, run, k := NULL, g_max := NULL, rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, g_max := g_max)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.err_of(q, k), q.num_rel, empty) AS value
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, g_max := g_max, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.err IS 'ERR@k per query (Chapelle et al. 2009; g_max defaults to the largest grade in the qrels)';

CREATE OR REPLACE MACRO duckrank.rbp(qrels, run, p := 0.8, k := NULL, rel_level := 1, ties := 'trec',
        max_rank := NULL, complete := false, empty := 'zero', unjudged := 'nonrelevant',
        duplicates := 'error') AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.option_problems(k := k, empty := empty, p := p)) AS fired),
per_query AS (
    SELECT q.query_id, duckrank.empty_policy(duckrank.rbp_of(q, k, p := p), q.num_rel, empty) AS value,
           duckrank.rbp_residual_of(q, k, p := p) AS residual
    FROM duckrank.ranked(qrels, run, rel_level := rel_level, ties := ties, max_rank := max_rank,
                         complete := complete, unjudged := unjudged, duplicates := duplicates) q
    WHERE (SELECT count(fired) FROM guard) = 0)
SELECT query_id, value, residual FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.rbp IS 'RBP(p)@k per query with its residual (Moffat & Zobel 2008; p default 0.8)';
