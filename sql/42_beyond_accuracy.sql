-- Beyond accuracy: coverage, novelty, diversity, serendipity (Microsoft Recommenders 1.2.1's
-- definitions, recommenders/evaluation/python_evaluation.py) and popularity bias (ARP, APLT, ACLT;
-- Abdollahpouri, Burke and Mobasher, "Managing Popularity Bias in Recommender Systems with
-- Personalized Re-ranking", FLAIRS 2019).
--
-- Each measure reads each query's (user's) top k of the run, ranked by duckrank.rank_queries's tie
-- rule over every retrieved doc (k NULL: the whole list), and a table of training interactions
-- train(query_id, doc_id); diversity and serendipity with similarity := 'features' read
-- items(doc_id, features DOUBLE[]) instead of co-occurrence.
--
-- Training interactions are read as a set: a (user, item) pair listed twice counts once (MS
-- Recommenders assumes there are no duplicates). An item's popularity n(i) is the number of users
-- who interacted with it; N = the number of (user, item) pairs.
--
-- The run is ranked once for every measure (duckrank.recommended, at the largest k asked for): the
-- per-query table macros duckrank.<measure>_of(users, train, ..., k, empty) read those lists from
-- `users`, the name of a relation of duckrank.recommended's columns (a table, or a WITH of the
-- calling query), each cutting them to its own k, and return (query_id, value) under the empty
-- policy. The public macros duckrank.<measure>(qrels, run, train, ...), with defaults and option
-- checks, rank and call them (generated from the registry: sql/60_measures.sql). The coverage
-- measures return one row (value).
-- A query with no retrieved doc has no value (NULL), whatever `complete` says; so has a query with
-- fewer than two docs for diversity and a user with no training interaction for serendipity (MS
-- Recommenders leaves those users out too).

-- The items table similarity := 'cooccurrence' binds (and never reads): DuckDB binds every
-- query_table of a macro, even in a branch that a constant condition turns off.
CREATE OR REPLACE VIEW duckrank.no_items AS
    SELECT CAST(NULL AS VARCHAR) AS doc_id, CAST(NULL AS DOUBLE[]) AS features WHERE false;

-- Aggregate: the mean of `value` summed in ascending order of the values, so that it is the same
-- bits on every run and thread count (avg sums in whatever order the threads meet the rows). Sorting
-- each group's values after collecting them costs far less than an ordered aggregate
-- (list(value ORDER BY key)): diversity's 8 M pair similarities took 11.6 s that way.
CREATE OR REPLACE MACRO duckrank.stable_mean(value) AS
    list_sum(list_sort(list(value))) / count(value);
COMMENT ON MACRO duckrank.stable_mean IS 'aggregate: mean of value summed in ascending order (the same bits on every run)';

-- The distinct (user, item) pairs of the training interactions, item ids as text as
-- duckrank.rank_queries holds them (ids are compared as given: Python checks that train and run
-- ids are both text or both numbers).
CREATE OR REPLACE MACRO duckrank.training_pairs(train) AS TABLE
WITH train_rows AS (
    SELECT query_id, doc_id FROM query_table(CAST(train AS VARCHAR))
),
guard AS (
    SELECT duckrank.raise_problems(CASE WHEN count(*) > 0
        THEN 'train ' || duckrank.show(train) || ' has a NULL id (query_id ' || duckrank.show(any_value(query_id))
             || ', doc_id ' || duckrank.show(any_value(doc_id)) || '); every training interaction needs a query_id '
             || 'and a doc_id' END) AS fired
    FROM train_rows WHERE query_id IS NULL OR doc_id IS NULL
)
SELECT DISTINCT query_id AS user_id, CAST(doc_id AS VARCHAR) AS doc_id FROM train_rows
WHERE (SELECT count(fired) FROM guard) = 0;
COMMENT ON MACRO TABLE duckrank.training_pairs IS 'the distinct (user_id, doc_id) pairs of training interactions, doc_id as text';

-- Per trained item: its popularity n(i), its novelty -log2(n(i) / N) (MS historical_item_novelty)
-- and whether it is in the short head: the most popular items that together hold `head` of the
-- interactions. An item is in the head when the items strictly more popular than it hold less than
-- head * N, so the item that crosses the share is in, and so is every item as popular as it (the
-- boundary depends on popularity only, never on ids).
CREATE OR REPLACE MACRO duckrank.item_popularity(train, head) AS TABLE
WITH counts AS (
    SELECT doc_id, count(*) AS interactions FROM duckrank.training_pairs(train) GROUP BY doc_id
),
total AS (SELECT sum(interactions) AS interactions FROM counts),
levels AS (  -- per popularity level: the interactions of the items strictly more popular
    SELECT interactions,
           coalesce(sum(interactions * items) OVER (ORDER BY interactions DESC
                                                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS above
    FROM (SELECT interactions, count(*) AS items FROM counts GROUP BY interactions)
)
SELECT c.doc_id, c.interactions, -log2(c.interactions / t.interactions) AS novelty,
       l.above < head * t.interactions AS short_head
FROM counts c JOIN levels l USING (interactions) CROSS JOIN total t;
COMMENT ON MACRO TABLE duckrank.item_popularity IS 'per trained item: interactions n(i), novelty -log2(n(i)/N), short_head (the items holding the head share)';

-- Each scored query's top k as a list of {rank, doc_id, rel}, and its R for the empty policy.
-- Every retrieved doc is ranked (judged or not); ties := 'average' is refused, as the top k of a
-- tie has no one membership. The ranking is cut at k as max_rank would cut it, so that only k docs
-- a query are built (not under unjudged := 'skip': -J -M drops the unjudged docs after the cut).
CREATE OR REPLACE MACRO duckrank.recommended(qrels, run, k, rel_level, ties, max_rank, complete, unjudged,
        duplicates, metric) AS TABLE
SELECT q.query_id, q.num_rel,
       duckrank.needs_strict_ties(
           list_transform(duckrank.top_docs(q, k), lambda d: {'rank': d.rank, 'doc_id': d.doc_id, 'rel': d.rel}),
           q.tie_rule, metric) AS top
FROM duckrank.rank_queries(qrels, run, rel_level, ties,
                           CASE WHEN unjudged = 'skip' OR k IS NULL THEN max_rank
                                ELSE least(coalesce(max_rank, k), k) END,
                           complete, unjudged, 'linear', MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[])), NULL,
                           duplicates, false) q;
COMMENT ON MACRO TABLE duckrank.recommended IS 'each scored query''s top k (every retrieved doc ranked) as a list of {rank, doc_id, rel}, with num_rel';

-- Each query's top k from `users`, a relation of duckrank.recommended's columns (query_id, num_rel,
-- top) ranked at least k deep: one ranking serves every measure, each cutting it to its own k.
-- `users` is a relation's name: a table's, or a WITH's of the calling query.
CREATE OR REPLACE MACRO duckrank.top_of(users, k) AS TABLE
SELECT query_id, num_rel, list_filter(top, lambda d: d.rank <= coalesce(k, d.rank)) AS top
FROM query_table(users);
COMMENT ON MACRO TABLE duckrank.top_of IS 'each query''s top k (query_id, num_rel, top) of a relation of duckrank.recommended''s columns';

-- The run's rows of the queries' top lists in `users` (duckrank.recommended's columns): a run
-- whose top k (any k up to the lists') is the full run's under the same conventions, so that other
-- passes need not rank the whole run (sorting a subset keeps its order under ties := 'trec').
CREATE OR REPLACE MACRO duckrank.run_top(run, users) AS TABLE
SELECT r.query_id, r.doc_id, r.score
FROM query_table(CAST(run AS VARCHAR)) r
SEMI JOIN (SELECT u.query_id, d.doc_id FROM query_table(users) u, unnest(u.top) t(d)) top
    ON top.query_id = r.query_id AND top.doc_id = CAST(r.doc_id AS VARCHAR);
COMMENT ON MACRO TABLE duckrank.run_top IS 'the run rows of each query''s top list in users (duckrank.recommended''s columns)';

-- Cosine similarity of two items from co-occurrence (Zhang et al., Auralist, WSDM 2012; MS
-- _get_cooccurrence_similarity): users who have both / sqrt(n(i)) sqrt(n(j)).
CREATE OR REPLACE MACRO duckrank.cooccurrence_similarity(shared_users, interactions_i, interactions_j) AS
    shared_users / (sqrt(interactions_i) * sqrt(interactions_j));
COMMENT ON MACRO duckrank.cooccurrence_similarity IS 'co-occurrence cosine: users with both items / (sqrt n(i) sqrt n(j))';

-- The users who trained on both items of each pair (i1 < i2) of `needed`, for the pairs that have
-- any, from `trained` (user_id, doc_id); both are the names of relations of the calling query. Each
-- user's trained items are paired among themselves, but only the items some needed pair names, and
-- only the needed pairs are counted: never the full item-item matrix. (Probing each pair's users of
-- one item for the other would cost the items' popularity per pair: far more, as top-k lists favour
-- popular items.)
CREATE OR REPLACE MACRO duckrank.shared_users(needed, trained) AS TABLE
WITH wanted AS (SELECT i1 AS doc_id FROM query_table(needed) UNION SELECT i2 FROM query_table(needed)),
candidates AS MATERIALIZED (
    SELECT t.user_id, t.doc_id FROM query_table(trained) t SEMI JOIN wanted w ON w.doc_id = t.doc_id
),
user_pairs AS (
    SELECT a.doc_id AS i1, b.doc_id AS i2
    FROM candidates a JOIN candidates b ON a.user_id = b.user_id AND a.doc_id < b.doc_id
)
SELECT p.i1, p.i2, count(*) AS users
FROM user_pairs p SEMI JOIN query_table(needed) n ON n.i1 = p.i1 AND n.i2 = p.i2
GROUP BY p.i1, p.i2;
COMMENT ON MACRO TABLE duckrank.shared_users IS 'users who trained on both items of each needed pair (i1 < i2)';

-- Cosine similarity of two feature vectors (MS _get_item_feature_similarity); 0 when either is
-- all zeros (MS: NaN).
CREATE OR REPLACE MACRO duckrank.feature_similarity(f1, f2) AS
    CASE WHEN list_dot_product(f1, f1) = 0 OR list_dot_product(f2, f2) = 0 THEN 0.0
         ELSE list_dot_product(f1, f2) / (sqrt(list_dot_product(f1, f1)) * sqrt(list_dot_product(f2, f2))) END;
COMMENT ON MACRO duckrank.feature_similarity IS 'cosine of two feature vectors, 0 if either is all zeros';

-- The similarity option's check against what was given: features need an items table.
CREATE OR REPLACE MACRO duckrank.similarity_problems(similarity, items) AS
    CASE WHEN similarity = 'features' AND items IS NULL
         THEN 'similarity := ''features'' needs items: a table of doc_id and features (DOUBLE[])' END;
COMMENT ON MACRO duckrank.similarity_problems IS 'check that similarity := ''features'' has an items table';

-- novelty@k per user: the mean novelty -log2(n(i) / N) of the top k; an item never trained on
-- counts 0, as in MS novelty (which sums item novelty over the recommendations it can join to
-- train and divides by all of them). The mean over users is MS's novelty when every list has k items.
CREATE OR REPLACE MACRO duckrank.novelty_of(users, train, k, empty) AS TABLE
WITH chosen AS MATERIALIZED (SELECT * FROM duckrank.top_of(users, k)),
listed AS (SELECT u.query_id, d.doc_id FROM chosen u, unnest(u.top) t(d)),
per_user AS (
    SELECT l.query_id, duckrank.stable_mean(coalesce(p.novelty, 0.0)) AS value
    FROM listed l LEFT JOIN duckrank.item_popularity(train, 0) p USING (doc_id)
    GROUP BY l.query_id
)
SELECT u.query_id, duckrank.empty_policy(p.value, u.num_rel, empty) AS value
FROM chosen u LEFT JOIN per_user p USING (query_id);
COMMENT ON MACRO TABLE duckrank.novelty_of IS 'novelty@k per query of ranked top lists (users)';

-- Popularity bias per user over the top k, with p(i) = n(i) (0 for an item never trained on) and
-- the long tail = every item outside the short head (untrained items included):
--   ARP@k  = mean p(i);  APLT@k = share of long-tail items;  ACLT@k = count of long-tail items.
CREATE OR REPLACE MACRO duckrank.popularity_bias_of(users, train, k, head, empty, metric) AS TABLE
WITH chosen AS MATERIALIZED (SELECT * FROM duckrank.top_of(users, k)),
listed AS (SELECT u.query_id, d.doc_id FROM chosen u, unnest(u.top) t(d)),
per_user AS (
    SELECT l.query_id,
           CASE metric WHEN 'arp' THEN avg(coalesce(p.interactions, 0))
                       WHEN 'aplt' THEN avg(CASE WHEN p.short_head THEN 0.0 ELSE 1.0 END)
                       WHEN 'aclt' THEN sum(CASE WHEN p.short_head THEN 0.0 ELSE 1.0 END) END AS value
    FROM listed l LEFT JOIN duckrank.item_popularity(train, head) p USING (doc_id)
    GROUP BY l.query_id
)
SELECT u.query_id, duckrank.empty_policy(p.value, u.num_rel, empty) AS value
FROM chosen u LEFT JOIN per_user p USING (query_id);
COMMENT ON MACRO TABLE duckrank.popularity_bias_of IS 'arp, aplt or aclt (metric) per query of ranked top lists (users)';

CREATE OR REPLACE MACRO duckrank.arp_of(users, train, k, head, empty) AS TABLE
SELECT * FROM duckrank.popularity_bias_of(users, train, k, head, empty, 'arp');
COMMENT ON MACRO TABLE duckrank.arp_of IS 'ARP@k per query of ranked top lists (users)';

CREATE OR REPLACE MACRO duckrank.aplt_of(users, train, k, head, empty) AS TABLE
SELECT * FROM duckrank.popularity_bias_of(users, train, k, head, empty, 'aplt');
COMMENT ON MACRO TABLE duckrank.aplt_of IS 'APLT@k per query of ranked top lists (users)';

CREATE OR REPLACE MACRO duckrank.aclt_of(users, train, k, head, empty) AS TABLE
SELECT * FROM duckrank.popularity_bias_of(users, train, k, head, empty, 'aclt');
COMMENT ON MACRO TABLE duckrank.aclt_of IS 'ACLT@k per query of ranked top lists (users)';

-- diversity@k per user (MS user_diversity, Ziegler et al. 2005): 1 - the mean similarity over the
-- pairs of distinct items of the top k; a pair with no similarity (never co-occurring, an item never
-- trained on or without features) counts 0. Only the pairs some top k holds are looked up: for
-- co-occurrence, the users of one item of each pair are probed for the other, never the full
-- item-item matrix.
CREATE OR REPLACE MACRO duckrank.diversity_of(users, train, items, k, similarity, empty) AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.similarity_problems(similarity, items)) AS fired),
chosen AS MATERIALIZED (
    SELECT * FROM duckrank.top_of(users, k) WHERE (SELECT count(fired) FROM guard) = 0
),
listed AS (SELECT u.query_id, d.doc_id FROM chosen u, unnest(u.top) t(d)),
pairs AS MATERIALIZED (
    SELECT a.query_id, a.doc_id AS i1, b.doc_id AS i2
    FROM listed a JOIN listed b ON a.query_id = b.query_id AND a.doc_id < b.doc_id
),
needed AS MATERIALIZED (SELECT DISTINCT i1, i2 FROM pairs),
trained AS MATERIALIZED (SELECT * FROM duckrank.training_pairs(train) WHERE similarity = 'cooccurrence'),
popularity AS (SELECT doc_id, count(*) AS interactions FROM trained GROUP BY doc_id),
shared AS (SELECT * FROM duckrank.shared_users(needed, trained) WHERE similarity = 'cooccurrence'),
similarities AS (
    SELECT s.i1, s.i2, duckrank.cooccurrence_similarity(s.users, p1.interactions, p2.interactions) AS sim
    FROM shared s JOIN popularity p1 ON p1.doc_id = s.i1 JOIN popularity p2 ON p2.doc_id = s.i2
    WHERE similarity = 'cooccurrence'
    UNION ALL
    SELECT n.i1, n.i2, duckrank.feature_similarity(f1.features, f2.features)
    FROM needed n
    JOIN query_table(coalesce(items, 'duckrank.no_items')) f1 ON CAST(f1.doc_id AS VARCHAR) = n.i1
    JOIN query_table(coalesce(items, 'duckrank.no_items')) f2 ON CAST(f2.doc_id AS VARCHAR) = n.i2
    WHERE similarity = 'features'
),
per_user AS (
    SELECT p.query_id, 1 - duckrank.stable_mean(coalesce(s.sim, 0.0)) AS value
    FROM pairs p LEFT JOIN similarities s ON s.i1 = p.i1 AND s.i2 = p.i2
    GROUP BY p.query_id
)
SELECT u.query_id, duckrank.empty_policy(p.value, u.num_rel, empty) AS value
FROM chosen u LEFT JOIN per_user p USING (query_id);
COMMENT ON MACRO TABLE duckrank.diversity_of IS 'diversity@k per query of ranked top lists (users)';

-- serendipity@k per user (MS user_serendipity, Zhang et al. 2012): the mean over the top k of
-- (1 - the item's mean similarity to each item the user trained on) * rel(i), rel(i) = 1 when the
-- qrels grade the item >= rel_level (MS's col_relevance). An item's similarity to itself is 1 under
-- co-occurrence (a recommended item the user trained on), its feature cosine under features.
CREATE OR REPLACE MACRO duckrank.serendipity_of(users, train, items, k, similarity, empty) AS TABLE
WITH guard AS (SELECT duckrank.raise_problems(duckrank.similarity_problems(similarity, items)) AS fired),
chosen AS MATERIALIZED (
    SELECT * FROM duckrank.top_of(users, k) WHERE (SELECT count(fired) FROM guard) = 0
),
trained AS MATERIALIZED (SELECT * FROM duckrank.training_pairs(train)),
-- every (recommended, trained) pair of a user, as (i1 <= i2)
listed AS (SELECT u.query_id, d.doc_id, d.rel FROM chosen u, unnest(u.top) t(d)),
history AS MATERIALIZED (
    SELECT l.query_id, l.doc_id, l.rel, least(l.doc_id, t.doc_id) AS i1, greatest(l.doc_id, t.doc_id) AS i2
    FROM listed l JOIN trained t ON t.user_id = l.query_id
),
needed AS MATERIALIZED (SELECT DISTINCT i1, i2 FROM history),
shared AS (SELECT * FROM duckrank.shared_users(needed, trained) WHERE similarity = 'cooccurrence'),
popularity AS (SELECT doc_id, count(*) AS interactions FROM trained GROUP BY doc_id),
similarities AS (
    SELECT n.i1, n.i2, 1.0 AS sim FROM needed n WHERE n.i1 = n.i2 AND similarity = 'cooccurrence'
    UNION ALL
    SELECT s.i1, s.i2, duckrank.cooccurrence_similarity(s.users, p1.interactions, p2.interactions)
    FROM shared s JOIN popularity p1 ON p1.doc_id = s.i1 JOIN popularity p2 ON p2.doc_id = s.i2
    WHERE similarity = 'cooccurrence'
    UNION ALL
    SELECT n.i1, n.i2, duckrank.feature_similarity(f1.features, f2.features)
    FROM needed n
    JOIN query_table(coalesce(items, 'duckrank.no_items')) f1 ON CAST(f1.doc_id AS VARCHAR) = n.i1
    JOIN query_table(coalesce(items, 'duckrank.no_items')) f2 ON CAST(f2.doc_id AS VARCHAR) = n.i2
    WHERE similarity = 'features'
),
per_item AS (
    SELECT h.query_id, h.doc_id, (1 - duckrank.stable_mean(coalesce(s.sim, 0.0))) * any_value(h.rel)
           AS serendipity
    FROM history h LEFT JOIN similarities s ON s.i1 = h.i1 AND s.i2 = h.i2
    GROUP BY h.query_id, h.doc_id
),
per_user AS (SELECT query_id, duckrank.stable_mean(serendipity) AS value FROM per_item GROUP BY query_id)
SELECT u.query_id, duckrank.empty_policy(p.value, u.num_rel, empty) AS value
FROM chosen u LEFT JOIN per_user p USING (query_id);
COMMENT ON MACRO TABLE duckrank.serendipity_of IS 'serendipity@k per query of ranked top lists (users)';

-- The recommendations of the queries a summary averages: empty := 'skip' leaves out the queries
-- with no relevant doc, as it does from every mean.
CREATE OR REPLACE MACRO duckrank.summarised_recommendations(users, k, empty) AS TABLE
SELECT u.query_id, d.doc_id
FROM duckrank.top_of(users, k) u, unnest(u.top) t(d)
WHERE u.num_rel > 0 OR empty <> 'skip';
COMMENT ON MACRO TABLE duckrank.summarised_recommendations IS 'the (query_id, doc_id) pairs of the top k of the queries a summary averages';

-- catalog_coverage@k (MS catalog_coverage; Shani and Gunawardana 2010): the distinct items of the
-- scored queries' top k / the distinct items of train. An item never trained on counts in the
-- numerator, as in MS (so the value may pass 1).
CREATE OR REPLACE MACRO duckrank.catalog_coverage_of(users, train, k, empty) AS TABLE
SELECT (SELECT count(DISTINCT doc_id) FROM duckrank.summarised_recommendations(users, k, empty))
       / (SELECT count(DISTINCT doc_id) FROM duckrank.training_pairs(train)) AS value;
COMMENT ON MACRO TABLE duckrank.catalog_coverage_of IS 'catalog_coverage@k of ranked top lists (users)';

-- distributional_coverage@k (MS distributional_coverage; Shani and Gunawardana 2010, eq. 21): the
-- entropy -sum p(i) log2 p(i) of how often each item is recommended, p(i) = its share of all the
-- recommendations (top k rows) of the scored queries. Reads no training data.
CREATE OR REPLACE MACRO duckrank.distributional_coverage_of(users, k, empty) AS TABLE
WITH counts AS (
    SELECT doc_id, count(*) AS times FROM duckrank.summarised_recommendations(users, k, empty) GROUP BY doc_id
)
SELECT -list_sum(list((times / total) * log2(times / total) ORDER BY doc_id)) AS value
FROM counts CROSS JOIN (SELECT CAST(sum(times) AS DOUBLE) AS total FROM counts);
COMMENT ON MACRO TABLE duckrank.distributional_coverage_of IS 'distributional_coverage@k of ranked top lists (users)';