SELECT m.measure, s.value FROM (SELECT measure_index, CASE measure_index WHEN 0 THEN AGGREGATE(SORT_ARRAY(COLLECT_LIST(STRUCT(query_id AS k0, value AS v)) FILTER(WHERE NOT value IS NULL), TRUE), CAST(NULL AS DOUBLE), (duckrank_sum, x) -> COALESCE(COALESCE(duckrank_sum, 0) + x.v, duckrank_sum)) / COUNT(value) WHEN 1 THEN AGGREGATE(SORT_ARRAY(COLLECT_LIST(STRUCT(query_id AS k0, value AS v)) FILTER(WHERE NOT value IS NULL), TRUE), CAST(NULL AS DOUBLE), (duckrank_sum, x) -> COALESCE(COALESCE(duckrank_sum, 0) + x.v, duckrank_sum)) / COUNT(value) WHEN 2 THEN AGGREGATE(SORT_ARRAY(COLLECT_LIST(STRUCT(query_id AS k0, value AS v)) FILTER(WHERE NOT value IS NULL), TRUE), CAST(NULL AS DOUBLE), (duckrank_sum, x) -> COALESCE(COALESCE(duckrank_sum, 0) + x.v, duckrank_sum)) / COUNT(value) END AS value FROM (SELECT query_id, measure_index, value, text FROM (
  SELECT query_id, stack(3, 0, m0, CAST(NULL AS STRING), 1, m1, CAST(NULL AS STRING), 2, m2, CAST(NULL AS STRING)) AS (measure_index, value, text) FROM (
    SELECT q.query_id, CAST(CASE WHEN q.s0 IS NULL OR q.s0 = 0 THEN CAST(0.0 AS DOUBLE) ELSE CAST(COALESCE(AGGREGATE(SLICE(q.docs, 1, GREATEST(10 - 1 + 1, 0)), CAST(NULL AS DOUBLE), (duckrank_sum, d) -> CASE WHEN d.rank <= 10 THEN COALESCE(COALESCE(duckrank_sum, 0) + (d.tied_gain / LOG(2, d.rank + 1)), duckrank_sum) ELSE duckrank_sum END), CAST(0.0 AS DOUBLE)) AS DOUBLE) / q.s0 END AS DOUBLE) AS m0, CAST(CASE WHEN q.num_rel IS NULL OR q.num_rel = 0 THEN CAST(0.0 AS DOUBLE) ELSE CAST(COALESCE(AGGREGATE(FILTER(TRANSFORM(TRANSFORM(FILTER(q.docs, d -> d.rel > 0 AND d.rank <= d.rank), d -> d.rank), (r, j) -> (j + 1) / r), x -> NOT x IS NULL), CAST(NULL AS DOUBLE), (acc, x) -> COALESCE(acc, 0) + x), CAST(0.0 AS DOUBLE)) AS DOUBLE) / q.num_rel END AS DOUBLE) AS m1, CAST(CASE WHEN (5 = 0) THEN CAST(0.0 AS DOUBLE) ELSE CAST(COALESCE(AGGREGATE(SLICE(q.docs, 1, GREATEST(5 - 1 + 1, 0)), CAST(NULL AS DOUBLE), (duckrank_sum, d) -> CASE WHEN d.rank <= 5 THEN COALESCE(COALESCE(duckrank_sum, 0) + d.tied_rel, duckrank_sum) ELSE duckrank_sum END), CAST(0.0 AS DOUBLE)) AS DOUBLE) / 5 END AS DOUBLE) AS m2
    FROM (
SELECT q.*, COALESCE(AGGREGATE(q.ideal, CAST(NULL AS DOUBLE), (duckrank_sum, b) -> COALESCE(COALESCE(duckrank_sum, 0) + CASE WHEN b.first_rank <= 10 THEN b.gain * CASE WHEN (b.first_rank + b.docs - 1 <= 10) THEN b.discount ELSE COALESCE(AGGREGATE(IF((CAST(10 AS BIGINT) + 1 - 1) < CAST(b.first_rank AS BIGINT), ARRAY(), SEQUENCE(CAST(b.first_rank AS BIGINT), (CAST(10 AS BIGINT) + 1 - 1))), CAST(NULL AS DOUBLE), (duckrank_sum, i) -> COALESCE(COALESCE(duckrank_sum, 0) + (CAST(1.0 AS DOUBLE) / LOG(2, i + 1)), duckrank_sum)), CAST(0.0 AS DOUBLE)) END END, duckrank_sum)), CAST(0.0 AS DOUBLE)) AS s0 FROM (
WITH run_rows AS (
  SELECT
    query_id,
    doc_id,
    CAST(run_score AS DOUBLE) AS score,
    CAST(0 AS BIGINT) AS input_order /* only ties := 'input' reads it; the planner drops it otherwise */
  /* a subquery, so that a run without a score column gets "column score not found" and the */
  /* candidates, not a confusing complaint about the alias */
  FROM (
    SELECT
      query_id,
      doc_id,
      score AS run_score
    FROM run
  )
), run_docs /* duplicates := 'max' keeps each doc's highest score (and its first position, for ties := 'input'). */ /* With duplicates := 'error' the rows are read as they are and each query's list is checked. */ AS (
  SELECT
    query_id,
    doc_id,
    score,
    input_order
  FROM run_rows
), qrels_rows AS (
  SELECT
    query_id,
    doc_id,
    CAST(relevance AS DOUBLE) AS grade
  FROM qrels
), qrels_checks /* The qrels checked per query in one pass: how many judgments repeat a doc (counted by 64-bit */ /* hashes of the doc ids, far cheaper than grouping every (query, doc) pair), and the first bad rows. */ AS (
  SELECT
    *
  FROM (
    SELECT
      query_id,
      COUNT(*) - SIZE(ARRAY_DISTINCT(FILTER(COLLECT_LIST(XXHASH64(doc_id)), x -> NOT x IS NULL))) AS repeats,
      (
        ANY_VALUE(STRUCT(query_id AS query_id, doc_id AS doc_id), TRUE) FILTER(WHERE
          query_id IS NULL OR doc_id IS NULL)
      ) AS null_id,
      (
        ANY_VALUE(STRUCT(query_id AS query_id, doc_id AS doc_id), TRUE) FILTER(WHERE
          grade IS NULL
          OR NOT (
            NOT ISNAN(grade) AND ABS(grade) <> CAST('Infinity' AS DOUBLE)
          ))
      ) AS bad_grade
    FROM qrels_rows
    GROUP BY
      query_id
  ) AS once
  WHERE
    RAND() >= 0
), qrels_repeated /* The pairs judged more than once, with their highest and lowest grade: looked for only in the */ /* queries whose hashes repeat (a hash collision is never a duplicate). */ AS (
  SELECT
    *
  FROM (
    SELECT
      query_id,
      doc_id,
      MAX(grade) AS grade,
      MIN(grade) AS min_grade
    FROM qrels_rows
    WHERE
      query_id IN (
        SELECT
          query_id
        FROM qrels_checks
        WHERE
          repeats > 0 AND NOT query_id IS NULL
      )
    GROUP BY
      query_id,
      doc_id
    HAVING
      COUNT(*) > 1
  ) AS once
  WHERE
    RAND() >= 0
), qrels_docs /* One row per judged (query, doc), with its highest grade (the same judgment twice is no conflict). */ AS (
  SELECT
    query_id,
    doc_id,
    grade
  FROM qrels_rows
  WHERE
    NOT query_id IN (
      SELECT
        query_id
      FROM qrels_repeated
    )
  UNION ALL
  SELECT
    query_id,
    doc_id,
    MAX(grade)
  FROM qrels_rows
  WHERE
    query_id IN (
      SELECT
        query_id
      FROM qrels_repeated
    )
  GROUP BY
    query_id,
    doc_id
), imputation /* unjudged := mean|median: each query's mean / median judged grade, given to its unjudged docs. */ /* Empty under the other policies. */ AS (
  SELECT
    *
  FROM (
    SELECT
      query_id,
      (
        PERCENTILE(grade, CAST(0.5 AS DOUBLE)) FILTER(WHERE
          grade >= 0)
      ) AS grade
    FROM qrels_docs
    WHERE
      FALSE
    GROUP BY
      query_id
  ) AS once
  WHERE
    RAND() >= 0
), graded /* Every retrieved doc with its judgment (NULL when unjudged) and its query's imputed grade. */ /* unjudged := 'skip' (trec_eval -J) keeps the judged docs only (a negative grade is "pooled but */ /* unjudged"); the query stays, scoring 0 if nothing is left. With max_rank as well, trec_eval cuts */ /* the ranking first and drops the unjudged docs from what is left, so then every doc is kept until */ /* the cut (cut_docs below). */ AS (
  SELECT /*+ SHUFFLE_HASH(q) */
    r.query_id,
    r.doc_id,
    r.score,
    r.input_order,
    q.grade AS judged_grade,
    i.grade AS imputed_grade,
    TRUE AS judged_kept,
    TRUE AS kept
  FROM run_docs AS r
  LEFT JOIN qrels_docs AS q
    ON q.query_id = r.query_id AND q.doc_id = r.doc_id
  LEFT JOIN imputation AS i
    ON i.query_id = r.query_id
), sorted_trec /* Each query's docs as one list sorted by the tie rule, as {score, doc_id, judged_grade}. The sort */ /* key is as narrow as the rule allows (every extra field slows the sort), so each rule has its own */ /* branch and the planner keeps only the branch of the rule asked for. `tied` holds the tie groups' */ /* means in the same order under ties := 'average' (else NULL). */ AS (
  SELECT
    *
  FROM (
    SELECT
      query_id,
      ANY_VALUE(imputed_grade, TRUE) AS imputed_grade,
      COALESCE(
        SORT_ARRAY(
          COLLECT_LIST(
            STRUCT(score AS score, CAST(doc_id AS STRING) AS doc_id, judged_grade AS judged_grade)
          ) FILTER(WHERE
            kept),
          FALSE
        ),
        ARRAY()
      ) AS sorted,
      CAST(NULL AS ARRAY<STRUCT<rel: DOUBLE, gain: DOUBLE>>) AS tied,
      STRUCT(
        COUNT(*) FILTER(WHERE
          doc_id IS NULL) AS null_docs,
        (
          ANY_VALUE(STRUCT(query_id AS query_id, doc_id AS doc_id), TRUE) FILTER(WHERE
            score IS NULL
            OR NOT (
              NOT ISNAN(score) AND ABS(score) <> CAST('Infinity' AS DOUBLE)
            ))
        ) AS bad_score
      ) AS checks
    FROM graded
    GROUP BY
      query_id
  ) AS once
  WHERE
    RAND() >= 0
), sorted_docs AS (
  SELECT
    *
  FROM sorted_trec
), cut_docs /* unjudged := 'skip' with max_rank: the cut, then the unjudged docs dropped (trec_eval -J -M). */ AS (
  SELECT
    query_id,
    imputed_grade,
    sorted AS sorted,
    tied,
    checks
  FROM sorted_docs
), qrels_blocks /* The judgments counted per (query, grade). */ AS (
  SELECT
    *
  FROM (
    SELECT
      query_id,
      grade,
      COUNT(*) AS docs
    FROM qrels_docs
    GROUP BY
      query_id,
      grade
  ) AS once
  WHERE
    RAND() >= 0
), top_grade /* ERR's default g_max: the largest grade in the qrels, at least 0 (qrels with only negative grades */ /* would otherwise give negative stopping probabilities). Imputed grades lie within the judged ones. */ AS (
  SELECT
    GREATEST(MAX(grade), 0) AS stop_scale
  FROM qrels_blocks
), ranked_docs /* The ranking as metrics read it: max_rank cuts the list; each kept doc gets its rank and what */ /* metrics read of its grade; judged_only keeps only the docs with a grade (their positions are */ /* found first, so only those become structs). Also the run's checks, per query: a doc listed */ /* twice (among those ranked: unjudged := 'skip' drops the others) is counted by hashes and named */ /* only when there is one. */ AS (
  SELECT
    query_id,
    checks,
    repeats,
    repeated_doc,
    repeated_copies,
    num_ret,
    TRANSFORM(
      TRANSFORM(
        CASE
          WHEN (
            NOT imputed_grade IS NULL
          )
          THEN IF((
            num_ret + 1 - 1
          ) < 1, ARRAY(), SEQUENCE(1, (
            num_ret + 1 - 1
          )))
          ELSE FILTER(
            TRANSFORM(top, (d, i) -> CASE WHEN NOT d.judged_grade IS NULL THEN (
              i + 1
            ) END),
            i -> NOT i IS NULL
          )
        END,
        i -> STRUCT(
          i AS rank,
          COALESCE(TRY_ELEMENT_AT(top, i).judged_grade, imputed_grade) AS grade,
          TRY_ELEMENT_AT(tied, i) AS tied
        )
      ),
      d -> STRUCT(
        d.rank AS rank,
        CAST(CASE WHEN d.grade >= 0 AND d.grade >= 1 THEN 1 ELSE 0 END AS DOUBLE) AS rel,
        CASE
          WHEN d.grade IS NULL
          THEN CAST(0.0 AS DOUBLE)
          WHEN SIZE(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>)) > 0
          AND d.grade >= 0
          AND NOT TRY_ELEMENT_AT(
            CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
            CAST(d.grade AS DOUBLE)
          ) IS NULL
          THEN TRY_ELEMENT_AT(
            CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
            CAST(d.grade AS DOUBLE)
          )
          WHEN (
            (
              d.grade > CAST(1e300 AS DOUBLE)
            )
          )
          THEN RAISE_ERROR(
            CONCAT(
              'duckrank: ',
              'linear',
              ' gain of grade ',
              COALESCE(d.grade, ''),
              ' is past 1e300, the largest gain ',
              'whose sum over a query cannot overflow a double; rescale the grades or use a gain_map'
            )
          )
          ELSE CAST(GREATEST(d.grade, 0) AS DOUBLE)
        END AS gain,
        COALESCE(
          d.tied.rel,
          CAST(CASE WHEN d.grade >= 0 AND d.grade >= 1 THEN 1 ELSE 0 END AS DOUBLE)
        ) AS tied_rel,
        COALESCE(
          d.tied.gain,
          CASE
            WHEN d.grade IS NULL
            THEN CAST(0.0 AS DOUBLE)
            WHEN SIZE(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>)) > 0
            AND d.grade >= 0
            AND NOT TRY_ELEMENT_AT(
              CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
              CAST(d.grade AS DOUBLE)
            ) IS NULL
            THEN TRY_ELEMENT_AT(
              CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
              CAST(d.grade AS DOUBLE)
            )
            WHEN (
              (
                d.grade > CAST(1e300 AS DOUBLE)
              )
            )
            THEN RAISE_ERROR(
              CONCAT(
                'duckrank: ',
                'linear',
                ' gain of grade ',
                COALESCE(d.grade, ''),
                ' is past 1e300, the largest gain ',
                'whose sum over a query cannot overflow a double; rescale the grades or use a gain_map'
              )
            )
            ELSE CAST(GREATEST(d.grade, 0) AS DOUBLE)
          END
        ) AS tied_gain
      )
    ) AS docs
  /* top: the ranked part of the list (max_rank cuts it), so that each doc's lambda reads a list */
  /* of num_ret docs, not the whole run of the query; without max_rank the list itself (a slice */
  /* copies it: W1M's statement took a tenth longer) */
  FROM (
    SELECT
      *,
      sorted AS top,
      CASE
        WHEN NOT repeated_doc IS NULL
        THEN SIZE(FILTER(sorted, d -> d.doc_id = repeated_doc))
      END AS repeated_copies
    FROM (
      SELECT
        *,
        CASE
          WHEN repeats > 0
          THEN TRY_ELEMENT_AT(
            FILTER(
              TRANSFORM(
                IF(
                  (
                    SIZE(ARRAY_SORT(TRANSFORM(sorted, d -> d.doc_id))) - 1
                  ) < 1,
                  ARRAY(),
                  SEQUENCE(1, (
                    SIZE(ARRAY_SORT(TRANSFORM(sorted, d -> d.doc_id))) - 1
                  ))
                ),
                i -> CASE
                  WHEN TRY_ELEMENT_AT(ARRAY_SORT(TRANSFORM(sorted, d -> d.doc_id)), i) = TRY_ELEMENT_AT(ARRAY_SORT(TRANSFORM(sorted, d -> d.doc_id)), i + 1)
                  THEN TRY_ELEMENT_AT(ARRAY_SORT(TRANSFORM(sorted, d -> d.doc_id)), i)
                END
              ),
              d -> NOT d IS NULL
            ),
            1
          )
        END AS repeated_doc
      FROM (
        SELECT
          *,
          LEAST(SIZE(sorted), SIZE(sorted)) AS num_ret,
          SIZE(sorted) - SIZE(
            ARRAY_DISTINCT(FILTER(TRANSFORM(sorted, d -> XXHASH64(d.doc_id)), x -> NOT x IS NULL))
          ) AS repeats
        FROM cut_docs
      )
    )
  )
  CROSS JOIN top_grade
), grade_blocks /* The ideal ranking as blocks: the docs of one grade share a run of ranks, best gain first. Under */ /* unjudged := mean|median the imputed docs join the judgments (R, N and the ideal ranking), so */ /* recall, AP and nDCG stay within [0, 1]. */ AS (
  SELECT
    query_id,
    grade,
    SUM(docs) AS docs,
    CASE
      WHEN grade IS NULL
      THEN CAST(0.0 AS DOUBLE)
      WHEN SIZE(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>)) > 0
      AND grade >= 0
      AND NOT TRY_ELEMENT_AT(
        CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
        CAST(grade AS DOUBLE)
      ) IS NULL
      THEN TRY_ELEMENT_AT(
        CAST(CAST(MAP_FROM_ARRAYS(ARRAY(), ARRAY()) AS MAP<DOUBLE, DOUBLE>) AS MAP<DOUBLE, DOUBLE>),
        CAST(grade AS DOUBLE)
      )
      WHEN (
        (
          grade > CAST(1e300 AS DOUBLE)
        )
      )
      THEN RAISE_ERROR(
        CONCAT(
          'duckrank: ',
          'linear',
          ' gain of grade ',
          COALESCE(grade, ''),
          ' is past 1e300, the largest gain ',
          'whose sum over a query cannot overflow a double; rescale the grades or use a gain_map'
        )
      )
      ELSE CAST(GREATEST(grade, 0) AS DOUBLE)
    END AS block_gain
  FROM (
    SELECT
      query_id,
      grade,
      docs
    FROM qrels_blocks
  )
  GROUP BY
    query_id,
    grade
), query_stats /* Per query: R, N and the positive-gain blocks best first, each with its first rank (the docs of */ /* the blocks before it, plus one) and its summed discount. */ AS (
  SELECT
    query_id,
    num_rel,
    num_nonrel,
    num_judged,
    top_grade,
    TRANSFORM(
      TRANSFORM(
        blocks,
        (b, i) -> STRUCT(
          1 + COALESCE(
            AGGREGATE(
              SLICE(blocks, 1, GREATEST((
                i + 1
              ) - 1 - 1 + 1, 0)),
              CAST(NULL AS DOUBLE),
              (duckrank_sum, p) -> COALESCE(COALESCE(duckrank_sum, 0) + p.docs, duckrank_sum)
            ),
            0
          ) AS first_rank,
          b.docs AS docs,
          b.gain AS gain
        )
      ),
      b -> STRUCT(
        b.first_rank AS first_rank,
        b.docs AS docs,
        b.gain AS gain,
        COALESCE(
          AGGREGATE(
            IF(
              (
                CAST((
                  b.first_rank + b.docs - 1
                ) AS BIGINT) + 1 - 1
              ) < CAST(b.first_rank AS BIGINT),
              ARRAY(),
              SEQUENCE(
                CAST(b.first_rank AS BIGINT),
                (
                  CAST((
                    b.first_rank + b.docs - 1
                  ) AS BIGINT) + 1 - 1
                )
              )
            ),
            CAST(NULL AS DOUBLE),
            (duckrank_sum, i) -> COALESCE(
              COALESCE(duckrank_sum, 0) + (
                CAST(1.0 AS DOUBLE) / LOG(2, i + 1)
              ),
              duckrank_sum
            )
          ),
          CAST(0.0 AS DOUBLE)
        ) AS discount
      )
    ) AS ideal
  FROM (
    SELECT
      query_id,
      CAST(SUM(docs * CAST(CASE WHEN grade >= 0 AND grade >= 1 THEN 1 ELSE 0 END AS DOUBLE)) AS BIGINT) AS num_rel,
      CAST(SUM(docs * CASE WHEN grade >= 0 AND grade < 1 THEN 1 ELSE 0 END) AS BIGINT) AS num_nonrel,
      CAST(SUM(docs) AS BIGINT) AS num_judged,
      GREATEST(MAX(grade), 0) AS top_grade,
      COALESCE(
        TRANSFORM(
          SORT_ARRAY(
            COLLECT_LIST(
              STRUCT(block_gain AS k0, grade AS k1, STRUCT(docs AS docs, block_gain AS gain) AS v)
            ) FILTER(WHERE
              block_gain > 0),
            FALSE
          ),
          x -> x.v
        ),
        ARRAY()
      ) AS blocks
    FROM grade_blocks
    GROUP BY
      query_id
  )
), problems /* Every problem of the data at once: those of the first run query and the first qrels query that */ /* have any. (The options were checked before: duckrank.ranked and every table macro check them.) */ AS (
  (
    SELECT
      CONCAT_WS(
        CHR(  10),
        CASE
          WHEN query_id IS NULL OR checks.null_docs > 0
          THEN 'run ' || TRY_ELEMENT_AT(shown, 1) || ' has a NULL id (query_id ' || TRY_ELEMENT_AT(shown, 2) || CASE WHEN checks.null_docs > 0 THEN ', doc_id NULL' ELSE '' END || '); every row needs a query_id and a doc_id'
        END,
        CASE
          WHEN NOT checks.bad_score IS NULL
          THEN 'run ' || TRY_ELEMENT_AT(shown, 1) || ' has a NULL, NaN or infinite score for query_id ' || TRY_ELEMENT_AT(shown, 3) || ', doc_id ' || TRY_ELEMENT_AT(shown, 4) || '; scores must be finite numbers: fix or drop those rows'
        END,
        CASE
          WHEN repeats > 0 AND NOT query_id IS NULL
          THEN 'run ' || TRY_ELEMENT_AT(shown, 1) || ' has ' || repeated_copies || ' rows for query_id ' || TRY_ELEMENT_AT(shown, 2) || ', doc_id ' || TRY_ELEMENT_AT(shown, 5) || '; each (query_id, doc_id) must appear once: remove the duplicates or pass duplicates := \'max\''
        END
      ) AS problem
    FROM (
      SELECT
        *,
        TRANSFORM(
          ARRAY(
            CAST('run' AS STRING),
            CAST(query_id AS STRING),
            CAST(checks.bad_score.query_id AS STRING),
            CAST(checks.bad_score.doc_id AS STRING),
            CAST(repeated_doc AS STRING)
          ),
          text -> CASE
            WHEN text IS NULL
            THEN 'NULL'
            ELSE '\'' || REPLACE(
              REPLACE(
                REPLACE(
                  REPLACE(LEFT(CAST(text AS STRING), 80), CHR(  10), CHR(  92) || 'n'),
                  CHR(  13),
                  CHR(  92) || 'r'
                ),
                CHR(  9),
                CHR(  92) || 't'
              ),
              CHR(  27),
              CHR(  92) || 'x1b'
            ) || '\'' || CASE
              WHEN LENGTH(CAST(text AS STRING)) > 80
              THEN '…(' || PRINTF('%,d', LENGTH(CAST(text AS STRING)) - 80) || ' more characters)'
              ELSE ''
            END
          END
        ) AS shown
      FROM ranked_docs
      WHERE
        query_id IS NULL
        OR checks.null_docs > 0
        OR NOT checks.bad_score IS NULL
        OR repeats > 0
      LIMIT 1
    )
  )
  UNION ALL
  (
    SELECT
      CONCAT_WS(
        CHR(  10),
        CASE
          WHEN NOT null_id IS NULL
          THEN 'qrels ' || TRY_ELEMENT_AT(shown, 1) || ' has a NULL id (query_id ' || TRY_ELEMENT_AT(shown, 2) || ', doc_id ' || TRY_ELEMENT_AT(shown, 3) || '); every judgment needs a query_id and a doc_id'
        END,
        CASE
          WHEN NOT bad_grade IS NULL
          THEN 'qrels ' || TRY_ELEMENT_AT(shown, 1) || ' has a NULL, NaN or infinite relevance for query_id ' || TRY_ELEMENT_AT(shown, 4) || ', doc_id ' || TRY_ELEMENT_AT(shown, 5) || '; relevance must be a finite number: fix or drop those rows'
        END
      )
    FROM (
      SELECT
        *,
        TRANSFORM(
          ARRAY(
            CAST('qrels' AS STRING),
            CAST(null_id.query_id AS STRING),
            CAST(null_id.doc_id AS STRING),
            CAST(query_id AS STRING),
            CAST(bad_grade.doc_id AS STRING)
          ),
          text -> CASE
            WHEN text IS NULL
            THEN 'NULL'
            ELSE '\'' || REPLACE(
              REPLACE(
                REPLACE(
                  REPLACE(LEFT(CAST(text AS STRING), 80), CHR(  10), CHR(  92) || 'n'),
                  CHR(  13),
                  CHR(  92) || 'r'
                ),
                CHR(  9),
                CHR(  92) || 't'
              ),
              CHR(  27),
              CHR(  92) || 'x1b'
            ) || '\'' || CASE
              WHEN LENGTH(CAST(text AS STRING)) > 80
              THEN '…(' || PRINTF('%,d', LENGTH(CAST(text AS STRING)) - 80) || ' more characters)'
              ELSE ''
            END
          END
        ) AS shown
      FROM qrels_checks
      WHERE
        NOT null_id IS NULL OR NOT bad_grade IS NULL
      LIMIT 1
    )
  )
  UNION ALL
  (
    SELECT
      'qrels ' || TRY_ELEMENT_AT(shown, 1) || ' judges query_id ' || TRY_ELEMENT_AT(shown, 2) || ', doc_id ' || TRY_ELEMENT_AT(shown, 3) || ' twice with different grades (' || min_grade || ' and ' || grade || '); keep one judgment or pass duplicates := \'max\''
    FROM (
      SELECT
        *,
        TRANSFORM(
          ARRAY(CAST('qrels' AS STRING), CAST(query_id AS STRING), CAST(doc_id AS STRING)),
          text -> CASE
            WHEN text IS NULL
            THEN 'NULL'
            ELSE '\'' || REPLACE(
              REPLACE(
                REPLACE(
                  REPLACE(LEFT(CAST(text AS STRING), 80), CHR(  10), CHR(  92) || 'n'),
                  CHR(  13),
                  CHR(  92) || 'r'
                ),
                CHR(  9),
                CHR(  92) || 't'
              ),
              CHR(  27),
              CHR(  92) || 'x1b'
            ) || '\'' || CASE
              WHEN LENGTH(CAST(text AS STRING)) > 80
              THEN '…(' || PRINTF('%,d', LENGTH(CAST(text AS STRING)) - 80) || ' more characters)'
              ELSE ''
            END
          END
        ) AS shown
      FROM qrels_repeated
      WHERE
        (
          min_grade <> grade
        )
      LIMIT 1
    )
  )
), guard AS (
  SELECT
    CASE
      WHEN NOT LISTAGG(problem, CHR(  10)) IS NULL AND LISTAGG(problem, CHR(  10)) <> ''
      THEN RAISE_ERROR('duckrank: ' || LISTAGG(problem, CHR(  10)))
    END AS fired
  FROM problems
)
SELECT
  s.query_id,
  COALESCE(r.docs, ARRAY()) AS docs,
  s.ideal,
  COALESCE(r.num_ret, 0) AS num_ret,
  s.num_rel,
  s.num_nonrel,
  s.num_judged,
  s.top_grade,
  (
    r.query_id IS NULL
  ) AND 1 > 0 AS zero_filled,
  FALSE AS all_docs,
  'trec' AS tie_rule
FROM query_stats AS s
LEFT JOIN ranked_docs AS r
  ON r.query_id = s.query_id
WHERE
  (
    (
      NOT r.query_id IS NULL
    )
  )
  AND (
    SELECT
      COUNT(fired)
    FROM guard
  ) = 0
) q
) q)) WHERE value IS NOT NULL OR text IS NOT NULL) GROUP BY measure_index) s JOIN (VALUES (0, 'ndcg@10'), (1, 'map'), (2, 'P@5')) AS m(measure_index, measure) USING (measure_index) ORDER BY s.measure_index
