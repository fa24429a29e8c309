"""Bad arguments fail inside SQL, with a message that says what is wrong and how to fix it.

The checks live in the macros (sql/10_checks.sql, duckrank.ranked, the log macros), so the DuckDB
shell, Python and any other client get the same message. Each test asserts the parts of the message
a user needs: the option or column, the offending value, and for data errors the query and doc.
"""

from __future__ import annotations

import re

import duckdb
import pandas as pd
import pytest

from duckrank._checks import _checks_query, _given_sql
from duckrank._library import connect
from duckrank.measures import option_literal
from duckrank.options import CONVENTIONS, OPTIONS


@pytest.fixture(scope="module")
def con():
    connection = connect()
    connection.register("qrels", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]}))
    connection.register("run", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 2.0]}))
    connection.register("log", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 2.0],
                                             "label": [1, 0]}))
    yield connection
    connection.close()


def fails(con, sql: str, *patterns: str, error=duckdb.InvalidInputException) -> str:
    """Run sql, expect `error`, and check every regex pattern occurs in the message."""
    with pytest.raises(error) as caught:
        con.execute(sql).fetchall()
    message = str(caught.value)
    for pattern in patterns:
        assert re.search(pattern, message), f"{pattern!r} not in {message!r}"
    return message


def call(macro: str, args: str = "", inputs: str = "'qrels', 'run'") -> str:
    return f"SELECT * FROM duckrank.\"{macro}\"({inputs}{args})"


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize("macro", ["precision", "recall", "f_measure", "hit_rate", "reciprocal_rank",
                                   "average_precision", "cg", "dcg", "idcg", "ndcg", "err", "rbp"])
@pytest.mark.parametrize("k", ["0", "-3", "2.5"])
def test_k_must_be_a_positive_integer(con, macro, k):
    fails(con, call(macro, f", k := {k}"), r"duckrank: k must be a positive integer", re.escape(f"got '{k}'"))


@pytest.mark.parametrize("option, bad, allowed, macro", [
    ("ties", "random", "trec, doc_ascending, input, average, pessimistic, optimistic", "ndcg"),
    ("gain", "log", "linear, exp, raw, binary", "ndcg"),
    ("empty", "drop", "zero, skip, nan", "precision"),
    ("unjudged", "zero", "nonrelevant, skip, mean, median", "bpref"),
    ("denominator", "k", "R, min, hits", "average_precision"),
    ("ideal", "both", "qrels, run", "ndcg"),
    ("duplicates", "first", "error, max", "precision"),
])
def test_unknown_option_values_name_the_choices(con, option, bad, allowed, macro):
    fails(con, call(macro, f", {option} := '{bad}'"),
          rf"{option} must be one of {re.escape(allowed)}", re.escape(f"got '{bad}'"))


@pytest.mark.parametrize("macro, args, pattern", [
    ("rbp", ", p := 1.0", r"p must be strictly between 0 and 1; got '1.0'"),
    ("f_measure", ", beta := 0", r"beta must be positive; got '0'"),
    ("interpolated_precision", ", recall := 1.5", r"recall must be between 0 and 1; got '1.5'"),
    ("err", ", g_max := 0", r"g_max must be positive"),
    ("r_precision", ", mult := 0", r"mult must be positive; got '0'"),
    ("precision", ", max_rank := -1", r"max_rank must be a whole number from 0 to 9223372036854775807"),
    ("counts", ", rel_level := 'nan'::DOUBLE", r"rel_level must be a finite number; got 'nan'"),
])
def test_numeric_option_ranges(con, macro, args, pattern):
    fails(con, call(macro, args), pattern)


def test_log_macro_options(con):
    fails(con, call("gauc", ", weight := 'clicks'", "'log'"),
          r"weight must be one of impressions, positives; got 'clicks'")
    fails(con, call("classification", ", threshold := 'inf'::DOUBLE", "'log'"), r"threshold must be a finite number")


def test_ranked_checks_its_own_conventions(con):
    fails(con, "SELECT * FROM duckrank.ranked('qrels', 'run', ties := 'x')", r"ties must be one of")


def test_auc_refuses_a_relation_without_the_unjudged_docs(con):
    """judged_only := true leaves the unjudged docs out, so per-query AUC could not rank among them:
    it says so instead of returning a number."""
    fails(con, "SELECT query_id, duckrank.auc_of(q) "
               "FROM duckrank.ranked('qrels', 'run', judged_only := true) q",
          r"AUC needs every retrieved doc: read duckrank.ranked\(\.\.\., judged_only := false\)")
    assert con.execute("SELECT count(*) FROM (SELECT duckrank.auc_of(q) "
                       "FROM duckrank.ranked('qrels', 'run') q)").fetchall()[0][0] > 0


def test_several_bad_options_are_reported_together(con):
    message = fails(con, call("average_precision", ", k := 0, denominator := 'x'"), "k must be", "denominator must be")
    assert message.count("duckrank:") == 1


@pytest.mark.parametrize("macro, options", [(m, "") for m in ["average_precision", "reciprocal_rank", "bpref",
                                                                  "err", "hit_rate", "interpolated_precision",
                                                                  "eleven_point_average", "judged"]]
                         + [("rbp", "")])  # graded RBP (the default): its weights are not tie means
def test_average_ties_are_refused_where_not_linear(con, macro, options):
    fails(con, call(macro, f"{options}, ties := 'average'"),
          r"ties := 'average' is defined for metrics linear in the ranking",
          r"use ties := 'trec', 'pessimistic' or 'optimistic'")


@pytest.mark.parametrize("macro, options", [(m, "") for m in ["precision", "recall", "f_measure", "r_precision",
                                                              "cg", "dcg", "ndcg"]]
                         + [("rbp", ", graded := false")])
def test_average_ties_are_accepted_where_linear(con, macro, options):
    assert con.execute(call(macro, f"{options}, ties := 'average'")).fetchall()


# ----------------------------------------------------------------------------- data


def test_missing_column_is_named_by_the_binder(con):
    con.register("run_pred", pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "pred": [1.0]}))
    fails(con, call("ndcg", inputs="'qrels', 'run_pred'"), r'column "score" not found', error=duckdb.BinderException)
    con.register("qrels_doc", pd.DataFrame({"query_id": ["q"], "doc": ["a"], "relevance": [1]}))
    fails(con, call("ndcg", inputs="'qrels_doc', 'run'"), r'column "doc_id" not found', r'"doc"',
          error=duckdb.BinderException)
    con.register("log_nolabel", pd.DataFrame({"query_id": ["q"], "score": [1.0]}))
    fails(con, call("global_auc", inputs="'log_nolabel'"), r'"label"', error=duckdb.BinderException)


def test_missing_table_is_named(con):
    fails(con, call("ndcg", inputs="'qrels', 'no_such_run'"), r"no_such_run", error=duckdb.CatalogException)


def test_duplicate_run_rows_name_query_and_doc(con):
    con.register("run_dup", pd.DataFrame({"query_id": ["q", "q", "q"], "doc_id": ["a", "a", "b"],
                                          "score": [1.0, 2.0, 0.5]}))
    for macro in ("ndcg", "precision", "mae", "auc", "counts"):
        fails(con, call(macro, inputs="'qrels', 'run_dup'"), r"run 'run_dup' has 2 rows for query_id 'q', doc_id 'a'",
              r"duplicates := 'max'")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf"), None])
def test_non_finite_or_null_scores(con, bad):
    con.register("run_bad", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, bad]}))
    fails(con, call("ndcg", inputs="'qrels', 'run_bad'"),
          r"run 'run_bad' has a NULL, NaN or infinite score for query_id 'q', doc_id 'b'", r"must be finite")


@pytest.mark.parametrize("column", ["query_id", "doc_id"])
def test_null_ids(con, column):
    frame = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]})
    frame[column] = [None]
    con.register("run_null", frame)
    fails(con, call("precision", inputs="'qrels', 'run_null'"), r"run 'run_null' has a NULL id")
    qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    qrels[column] = [None]
    con.register("qrels_null", qrels)
    fails(con, call("precision", inputs="'qrels_null', 'run'"), r"qrels 'qrels_null' has a NULL id")


def test_conflicting_grades(con):
    con.register("qrels_conflict", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 2]}))
    fails(con, call("ndcg", inputs="'qrels_conflict', 'run'"),
          r"judges query_id 'q', doc_id 'a' twice with different grades \(1\.0 and 2\.0\)", r"duplicates := 'max'")


@pytest.mark.parametrize("bad", [float("nan"), None])
def test_bad_relevance(con, bad):
    con.register("qrels_bad", pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [bad, 1.0]}))
    fails(con, call("precision", inputs="'qrels_bad', 'run'"),
          r"qrels 'qrels_bad' has a NULL, NaN or infinite relevance for query_id 'q', doc_id 'a'")


@pytest.mark.parametrize("macro", ["global_auc", "log_auc", "gauc", "classification"])
@pytest.mark.parametrize("column, bad", [("score", float("nan")), ("score", None), ("score", float("inf")),
                                         ("label", None)])
def test_log_rows_must_be_rankable(con, macro, column, bad):
    """A NaN score would sort above every other, a NULL one or a NULL label would silently drop out of
    both classes: the log macros refuse them (before this check, global_auc took NaN as the top score)."""
    frame = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 0.5], "label": [1.0, 0.0]})
    frame[column] = frame[column].astype(object)
    frame.loc[1, column] = bad
    con.register("log_bad", frame)
    fails(con, call(macro, inputs="'log_bad'"), rf"log 'log_bad' has 1 row\(s\) with a NULL, NaN or infinite {column}")


# Five rounds of values for every option at once: valid and invalid ones, NULLs, NaN.
_ROUNDS = {
    "integer": [-1, 0, 0.5, 2, float("nan")],
    "number": [-1, 0, 0.5, 2, float("nan")],
    "boolean": [None, True, False, None, True],
    "numbers": [(), (-1.0,), (0.5,), (2.0,), (0.0, 1.0)],
    "gain_map": [{}, {1: -1.0}, {1: 2.0}, {}, {}],
}


@pytest.mark.parametrize("round_", range(5))
def test_python_checks_only_the_given_options_in_the_macros_words(con, round_):
    """evaluate() and the CLI check only the options a call gives (duckrank._checks): they must say
    what duckrank.option_problems and duckrank.convention_problems say of the same values."""
    def value(param):
        texts = ["bogus", *param.choices, "x"]
        return _ROUNDS[param.type][round_] if param.type in _ROUNDS else texts[round_ % len(texts)]

    conventions = {name: value(c.param) for name, c in CONVENTIONS.items()}
    options = {name: value(param) for name, param in OPTIONS.items()}

    def macro(name, values):
        given = ", ".join(f"{option} := {option_literal(v)}" for option, v in values.items())
        return con.execute(f"SELECT duckrank.{name}({given})").fetchone()[0]

    expected = [macro("convention_problems", conventions), macro("option_problems", options)]
    assert any(expected), "a round that finds no problem tests nothing"
    found = con.execute(_checks_query([_given_sql(conventions), _given_sql(options)])).fetchone()[0]
    # one text per checked option (NULL where it has no problem), the macros' lines in their order
    assert ["\n".join(text for text in texts if text) or None for texts in found] == expected
