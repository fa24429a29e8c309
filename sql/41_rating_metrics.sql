-- Rating-prediction errors over judged (query, doc) pairs: the score is read as a predicted grade
-- (the rating-prediction view of a ranking). Per query, over the retrieved docs that have a judgment
-- (a grade >= 0: a negative grade is "pooled but unjudged", as everywhere in duckrank); queries without one are
-- excluded. The summary is the mean over queries.

CREATE OR REPLACE MACRO duckrank.mae_of(q) AS
    list_avg(list_transform(list_filter(q.docs, lambda d: d.judged_grade >= 0),
                            lambda d: abs(d.score - d.judged_grade)));
COMMENT ON MACRO duckrank.mae_of IS 'MAE = mean |score - grade| over judged retrieved docs';

CREATE OR REPLACE MACRO duckrank.rmse_of(q) AS
    sqrt(list_avg(list_transform(list_filter(q.docs, lambda d: d.judged_grade >= 0),
                                 lambda d: (d.score - d.judged_grade) * (d.score - d.judged_grade))));
COMMENT ON MACRO duckrank.rmse_of IS 'RMSE = sqrt(mean (score - grade)^2) over judged retrieved docs';
