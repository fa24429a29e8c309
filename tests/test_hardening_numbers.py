"""Extreme numbers (issue 25, "Numbers"): a seed beyond a BIGINT is refused by name, with its range,
from the command line, Python and the SQL macro alike; never DuckDB's INT128 conversion error."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from helpers import run as cli

import duckrank

DATA = Path(__file__).resolve().parent.parent / "data"
RUNS = [str(DATA / "run.parquet"), str(DATA / "run.parquet")]
BIGINT = "from -9223372036854775808 to 9223372036854775807"


@pytest.mark.parametrize("seed", [str(10 ** 30), str(2 ** 63), "-1"])
def test_cli_compare_seed_out_of_range_is_a_usage_error(seed):
    result = cli("compare", str(DATA / "qrels.parquet"), *RUNS, "--seed", seed)
    assert result.exit_code == 2, result.output
    assert f"Error: --seed must be a whole number from 0 to 9223372036854775807; got '{seed}'" in result.stderr
    assert "INT128" not in result.output and "Conversion" not in result.output


@pytest.mark.parametrize("seed", [10 ** 30, 2 ** 63, -2 ** 63 - 1, 10 ** 500])
def test_python_compare_seed_out_of_range_names_seed(seed):
    with pytest.raises(duckrank.OptionError, match=rf"^seed must be a whole number {BIGINT}; got "):
        duckrank.compare(str(DATA / "qrels.parquet"), RUNS, seed=seed)


def test_python_compare_largest_seed_works():
    result = duckrank.compare(str(DATA / "qrels.parquet"), RUNS, ["map"], run_names=["a", "b"], seed=2 ** 63 - 1, permutations=10,
                              bootstrap=10)
    assert len(result.records()) == 2


@pytest.mark.parametrize("seed", ["10::HUGEINT ** 30", "1e30", "-9223372036854775809::HUGEINT"])
def test_sql_compare_seed_out_of_range_names_seed(seed):
    con = duckrank.connect()
    con.execute("CREATE TABLE pq AS SELECT r AS run, 'map' AS metric, 'q' || i AS query_id, i / 10 AS value "
                "FROM range(5) t(i), (VALUES ('a'), ('b')) v(r)")
    with pytest.raises(duckdb.Error, match=rf"seed must be a whole number {BIGINT}"):
        con.sql(f"SELECT * FROM duckrank.compare('pq', seed := {seed}, permutations := 10, bootstrap := 10)").fetchall()


# ---------------------------------------------------------------------------------------------
# integer and DECIMAL scores past a double: ranking on the DOUBLE would tie them


def scores_table(con: duckdb.DuckDBPyConnection, name: str, top: str, second: str, sql_type: str) -> None:
    """Query q: doc 'best' scores `top`, doc 'next' `second` (one less), as `sql_type`; only 'best' is
    relevant, so P@1 is 1.0 on the exact scores and 0.0 (the trec tie break: 'next' > 'best') on doubles."""
    con.execute(f"CREATE TABLE {name} AS SELECT * FROM (VALUES ('q', 'best', CAST('{top}' AS {sql_type})), "
                f"('q', 'next', CAST('{second}' AS {sql_type}))) t(query_id, doc_id, score)")


CLOSE_SCORES = [(str(2 ** 53 + 1), str(2 ** 53), "BIGINT"), (str(2 ** 63 - 1), str(2 ** 63 - 2), "BIGINT"),
                (str(10 ** 37 + 1), str(10 ** 37), "DECIMAL(38,0)"),
                ("12345678901234.567", "12345678901234.566", "DECIMAL(18,3)")]


@pytest.mark.parametrize(("top", "second", "sql_type"), CLOSE_SCORES)
def test_scores_a_double_cannot_tell_apart_are_refused_by_every_door(top, second, sql_type, tmp_path):
    con = duckrank.connect()
    scores_table(con, "run", top, second, sql_type)
    con.execute("CREATE TABLE qrels AS SELECT 'q' AS query_id, 'best' AS doc_id, 1 AS relevance")
    refusal = (rf"column 'score' holds {second} and {top} for query_id 'q', which are the same DOUBLE "
               r"\(.*\), so they would tie: a DOUBLE holds integers exactly only up to 2\^53")
    with pytest.raises(duckdb.Error, match=rf"run 'run': {refusal}.*rescale the scores"):
        con.sql("SELECT * FROM duckrank.precision('qrels', 'run', k := 1)").fetchall()
    with pytest.raises(duckdb.Error, match=rf"run 'run': {refusal}"):
        con.sql("SELECT * FROM duckrank.ranked('qrels', 'run')").fetchall()
    run_file, qrels_file = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    con.execute(f"COPY (SELECT query_id, doc_id, score AS points FROM run) TO '{run_file}'")
    con.execute(f"COPY qrels TO '{qrels_file}'")
    with pytest.raises(duckrank.InputError, match=rf"^run '{run_file}': {refusal.replace('score', 'points')}"):
        duckrank.evaluate(str(qrels_file), str(run_file), ["P@1"], score_col="points")
    result = cli("eval", str(qrels_file), str(run_file), "-m", "P@1", "--score-col", "points")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"Error: run '{run_file}': column 'points' holds {second} and {top}" in result.stderr


@pytest.mark.parametrize(("top", "second", "sql_type"), CLOSE_SCORES)
@pytest.mark.parametrize("same_query", [True, False], ids=["one query", "two queries"])
def test_log_scores_a_double_cannot_tell_apart_are_refused_by_the_log_macros_as_by_python(top, second, sql_type,
                                                                                          same_query):
    """The log macros refuse what Python refuses, with its message: close scores anywhere in a log
    (its global AUC ranks every row together), where they gave AUC 0.5 instead of 1.0."""
    con = duckrank.connect()
    scores_table(con, "log", top, second, sql_type)
    con.execute("ALTER TABLE log ADD COLUMN label INTEGER")
    con.execute("UPDATE log SET label = CASE doc_id WHEN 'best' THEN 1 ELSE 0 END")
    con.execute("INSERT INTO log VALUES ('q', 'low', 0, 0), ('other', 'low', 0, 0), ('other', 'top', 1, 1)")
    if not same_query:
        con.execute("UPDATE log SET query_id = 'other' WHERE doc_id = 'next'")
    refusal = (f"log 'log': column 'score' holds {second} and {top}, which are the same DOUBLE "
               f"({float(top)}), so they would tie: a DOUBLE holds integers exactly only up to 2^53 (about "
               f"16 digits); rescale the scores, or cast them to DOUBLE if the ties are meant")
    for macro in ("gauc('log')", "log_auc('log')", "global_auc('log')", "classification('log', threshold := 1)"):
        with pytest.raises(duckdb.Error) as raised:
            con.sql(f"SELECT * FROM duckrank.{macro}").fetchall()
        assert f"duckrank: {refusal}" in str(raised.value), macro
    for measure in ("GAUC", "AUC_global", "P@1"):
        with pytest.raises(duckrank.InputError) as raised:
            duckrank.evaluate(log=con.table("log"), measures=[measure], label="label")
        assert str(raised.value) == refusal.replace("log 'log'", "log (DuckDBPyRelation)"), measure


def test_integer_scores_a_double_holds_rank_as_given():
    con = duckrank.connect()
    scores_table(con, "run", str(2 ** 60), str(2 ** 60 - 2 ** 8), "BIGINT")  # both exact doubles
    scores_table(con, "split", str(2 ** 53 + 1), str(2 ** 53), "BIGINT")
    con.execute("UPDATE split SET query_id = doc_id")  # close scores of different queries never tie
    con.execute("CREATE TABLE qrels AS SELECT * FROM (VALUES ('q', 'best', 1), ('best', 'best', 1), "
                "('next', 'next', 1)) t(query_id, doc_id, relevance)")
    assert duckrank.evaluate(con.table("qrels"), con.table("run"), ["P@1"]) == {"P@1": 1.0}
    assert duckrank.evaluate(con.table("qrels"), con.table("split"), ["P@1"]) == {"P@1": 1.0}
    assert con.sql("SELECT value FROM duckrank.precision('qrels', 'run', k := 1)").fetchall() == [(1.0,)]


# ---------------------------------------------------------------------------------------------
# gains whose sum over a query could overflow a double: refused, as the exp gain of a grade >= 1024 is


def graded(grades: list[float]) -> tuple[pa.Table, pa.Table]:
    docs = [f"d{i}" for i in range(len(grades))]
    run = pa.table({"query_id": ["q"] * len(docs), "doc_id": docs, "score": [float(-i) for i in range(len(docs))]})
    qrels = pa.table({"query_id": ["q"] * len(docs), "doc_id": docs, "relevance": [float(g) for g in grades]})
    return qrels, run


# The message names a grade past the bound; with two such grades (1.7e308 and 1.8e307), which one
# is met first is the engine's order of work.
@pytest.mark.parametrize(("grades", "options", "gain", "named"), [
    ([1.7e308, 1.8e307, 0], {}, "linear", ("1.7e+308", "1.8e+307")),
    ([-1.7e308, 1], {"gain": "raw"}, "raw", ("-1.7e+308",)),
    ([1000, 3], {"gain": "exp"}, "exp", ("1000.0",)),
])
def test_gains_past_1e300_are_refused_not_summed_to_inf(grades, options, gain, named):
    qrels, run = graded(grades)
    message = f"{gain} gain of grade ({'|'.join(map(re.escape, named))}) is past 1e300"
    with pytest.raises(duckrank.InputError, match=rf"^{message}, the largest gain whose sum over a "
                                                  r"query cannot overflow a double; rescale the grades"):
        duckrank.evaluate(qrels, run, ["ndcg@10", "dcg"], **options)
    con = duckrank.connect()
    con.register("qrels_frame", qrels)
    con.register("run_frame", run)
    sql_options = "".join(f", {name} := '{value}'" for name, value in options.items())
    with pytest.raises(duckdb.Error, match=message):
        con.sql(f"SELECT * FROM duckrank.ndcg('qrels_frame', 'run_frame', k := 10{sql_options})").fetchall()


def test_a_gain_map_past_1e300_is_refused_by_every_door(tmp_path):
    qrels, run = graded([1, 3, 0])
    refusal = r"gain_map must be a MAP of grade to finite gain of at most 1e300 in size"
    with pytest.raises(duckrank.OptionError, match=rf"in measure 'ndcg\(gain_map=\{{1:1e308,3:1.5e308\}}\)@10': {refusal}"):
        duckrank.evaluate(qrels, run, ["ndcg(gain_map={1:1e308,3:1.5e308})@10"])
    with pytest.raises(duckrank.OptionError, match=refusal):
        duckrank.evaluate(qrels, run, ["ndcg@10"], gain_map={1: 1e308, 3: 1.5e308})
    qrels_file, run_file = tmp_path / "qrels.parquet", tmp_path / "run.parquet"
    duckdb.from_arrow(qrels).write_parquet(str(qrels_file))
    duckdb.from_arrow(run).write_parquet(str(run_file))
    result = cli("eval", str(qrels_file), str(run_file), "-m", "ndcg.1=1e308,3=1.5e308")
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "gain_map must be a MAP of grade to finite gain of at most 1e300 in size" in result.stderr
    con = duckrank.connect()
    with pytest.raises(duckdb.Error, match=refusal):
        con.sql(f"SELECT * FROM duckrank.ndcg('{qrels_file}', '{run_file}', k := 10, "
                f"gain_map := MAP {{1: 1e308, 3: 1.5e308}})").fetchall()
    # at the limit the sums stay finite: DCG = 1e300 / log2(2) + 1e299 / log2(3), the ideal order
    assert duckrank.evaluate(*graded([3, 1, 0]), ["ndcg(gain_map={1:1e299,3:1e300})@10"]) == {
        "ndcg(gain_map={1:1e299,3:1e300})@10": 1.0}
