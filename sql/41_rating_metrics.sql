-- Rating-prediction errors over judged (query, doc) pairs: the score is read as a predicted grade
-- (seed 000). Per query, over the retrieved docs that have a judgment; queries without one are
-- excluded. The summary is the mean over queries.

CREATE OR REPLACE MACRO duckrank.mae_agg(is_ideal, score, judged_grade) AS
    avg(abs(score - judged_grade)) FILTER (WHERE NOT is_ideal AND judged_grade IS NOT NULL);
COMMENT ON MACRO duckrank.mae_agg IS 'MAE = mean |score - grade| over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.rmse_agg(is_ideal, score, judged_grade) AS
    sqrt(avg((score - judged_grade) * (score - judged_grade)) FILTER (WHERE NOT is_ideal AND judged_grade IS NOT NULL));
COMMENT ON MACRO duckrank.rmse_agg IS 'RMSE = sqrt(mean (score - grade)^2) over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.mae(qrels, run, duplicates := 'error') AS TABLE
WITH per_query AS (
    SELECT query_id, duckrank.mae_agg(is_ideal, score, judged_grade) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, duplicates := duplicates)
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.mae IS 'MAE per query: mean |score - relevance| over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.rmse(qrels, run, duplicates := 'error') AS TABLE
WITH per_query AS (
    SELECT query_id, duckrank.rmse_agg(is_ideal, score, judged_grade) AS value
    FROM duckrank.ranked(qrels, run, judged_only := true, duplicates := duplicates)
    GROUP BY query_id)
SELECT query_id, value FROM per_query WHERE value IS NOT NULL;
COMMENT ON MACRO TABLE duckrank.rmse IS 'RMSE per query: sqrt(mean (score - relevance)^2) over judged retrieved docs';
