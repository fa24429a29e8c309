-- Rating-prediction errors over judged (query, doc) pairs: the score is read as a predicted grade
-- (seed 000). Per query, over the retrieved docs that have a judgment; queries without one are
-- excluded. The summary is the mean over queries.

CREATE OR REPLACE MACRO duckrank.mae_of(q) AS
    list_avg(list_transform(list_filter(q.docs, lambda d: d.judged_grade IS NOT NULL),
                            lambda d: abs(d.score - d.judged_grade)));
COMMENT ON MACRO duckrank.mae_of IS 'MAE = mean |score - grade| over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.rmse_of(q) AS
    sqrt(list_avg(list_transform(list_filter(q.docs, lambda d: d.judged_grade IS NOT NULL),
                                 lambda d: (d.score - d.judged_grade) * (d.score - d.judged_grade))));
COMMENT ON MACRO duckrank.rmse_of IS 'RMSE = sqrt(mean (score - grade)^2) over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.mae(qrels, run, duplicates := 'error') AS TABLE
WITH per_query AS (
    SELECT q.query_id, duckrank.mae_of(q) AS value FROM duckrank.ranked(qrels, run, duplicates := duplicates) q)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.mae IS 'MAE per query: mean |score - relevance| over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.rmse(qrels, run, duplicates := 'error') AS TABLE
WITH per_query AS (
    SELECT q.query_id, duckrank.rmse_of(q) AS value FROM duckrank.ranked(qrels, run, duplicates := duplicates) q)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.rmse IS 'RMSE per query: sqrt(mean (score - relevance)^2) over judged retrieved docs';
