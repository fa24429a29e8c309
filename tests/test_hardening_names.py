"""Hostile names (issue 25, "Names are spliced into SQL"): a column or table name stays a name.

Through the Spark engine (duckrank.spark.evaluate's column names), `duckrank sql --dialect spark`
(--run-table / --qrels-table: an identifier, dotted parts allowed, quoted on output, or exit 2) and
the SQL macros in the real DuckDB shell (a table named we'ird"t, as the README says to quote it).
The Spark cases skip without pyspark or Java (tests/spark_support.py); one local session, ~30 s.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import spark_support
from helpers import run as cli
from helpers import run_shell

import duckrank

DATA = Path(__file__).resolve().parent.parent / "data"
HOSTILE_TABLES = ["run PIVOT (sum(score) FOR doc_id IN ('a'))", "run UNPIVOT (v FOR k IN (score))", "run -- c",
                  "run/* c */", "run' OR 1=1 --", "", "run;DROP TABLE qrels", "a.b.c.d", "run.", "`run", "r``n"]


@pytest.fixture(scope="module")
def spark():
    spark_support.require()
    return spark_support.session()


def sql_command(*args: str):
    return cli("sql", "--dialect", "spark", *args)


@pytest.mark.parametrize("name", HOSTILE_TABLES)
@pytest.mark.parametrize("option", ["--run-table", "--qrels-table"])
def test_sql_spark_table_name_is_an_identifier_or_a_usage_error(option, name):
    spark_support.require("rendering Spark SQL")
    result = sql_command("-m", "P@5", option, name)
    assert result.exit_code == 2, result.output
    assert f"Error: {option} must be a table name" in result.stderr
    assert repr(name) in result.stderr and "Traceback" not in result.output


def test_python_sql_refuses_a_table_name_that_is_sql():
    spark_support.require("rendering Spark SQL")
    from duckrank import spark as duckrank_spark

    with pytest.raises(duckrank.OptionError, match=r"^run must be a table name.*got 'run -- c'"):
        duckrank_spark.sql(["P@5"], run="run -- c")


def test_sql_spark_quotes_odd_identifiers_and_keeps_plain_ones():
    spark_support.require("rendering Spark SQL")
    result = sql_command("-m", "P@5", "--run-table", "logs.`my ``odd`` run`", "--qrels-table", "`select`")
    assert result.exit_code == 0, result.output
    assert "FROM logs.`my ``odd`` run`" in result.stdout and "FROM `select`" in result.stdout
    plain = sql_command("-m", "P@5", "--run-table", "logs.run")
    assert "FROM logs.run" in plain.stdout and "`" not in plain.stdout.split("FROM logs.run")[0][-20:]


def test_sql_spark_reads_the_quoted_table_on_spark(spark):
    """The query `duckrank sql --dialect spark` prints for odd table names runs on Spark and reads them."""
    spark.read.parquet(str(DATA / "run.parquet")).createOrReplaceTempView("duckrank_names_run")
    spark.read.parquet(str(DATA / "qrels.parquet")).createOrReplaceTempView("duckrank_names_qrels")
    spark.sql("CREATE OR REPLACE TEMP VIEW `we'ird\"t ``r` AS SELECT * FROM duckrank_names_run")
    spark.sql("CREATE OR REPLACE TEMP VIEW `select` AS SELECT * FROM duckrank_names_qrels")
    result = sql_command("-m", "map", "--run-table", "`we'ird\"t ``r`", "--qrels-table", "`select`")
    assert result.exit_code == 0, result.output
    (row,) = spark.sql(result.stdout).collect()
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map"])["map"]
    assert row["value"] == pytest.approx(expected, abs=1e-12)


def test_spark_evaluate_reads_quoted_table_names(spark):
    from duckrank import spark as duckrank_spark

    spark.read.parquet(str(DATA / "run.parquet")).createOrReplaceTempView("duckrank_names_run")
    spark.sql("CREATE OR REPLACE TEMP VIEW `we'ird\"t ``r` AS SELECT * FROM duckrank_names_run")
    rows = duckrank_spark.evaluate(spark, str(DATA / "qrels.parquet"), "`we'ird\"t ``r`", ["map"]).collect()
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map"])["map"]
    assert rows[0]["value"] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(duckrank.InputError, match="is neither a Spark table nor a file"):
        duckrank_spark.evaluate(spark, str(DATA / "qrels.parquet"), "duckrank_names_run -- c", ["map"])


def test_spark_column_names_are_quoted_identifiers(spark):
    """score_col with backticks is the column of that name, never an expression over other columns:
    a name that would negate the scores if spliced leaves MAP unchanged; backticks in query_col work."""
    from duckrank import spark as duckrank_spark

    score, query = "s` * -1 + 0 * `s", "q`id"
    run = spark.read.parquet(str(DATA / "run.parquet"))
    hostile = run.select(run["query_id"].alias(query), "doc_id", run["score"].alias(score),
                         (run["score"] * 0).alias("s"))
    qrels = spark.read.parquet(str(DATA / "qrels.parquet"))
    qrels = qrels.select(qrels["query_id"].alias(query), "doc_id", "relevance")
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map", "P@5"])
    rows = duckrank_spark.evaluate(spark, qrels, hostile, ["map", "P@5"], score_col=score, query_col=query).collect()
    assert {row["measure"]: row["value"] for row in rows} == pytest.approx(expected, abs=1e-12)


def test_macros_on_a_table_named_weird_in_the_shell():
    """The README's shell section: a table name is quoted as an identifier inside the SQL string, and
    a name holding a double quote is read through a plain-named view (the shell's DuckDB 1.x drops
    a doubled "" inside a qualified name)."""
    done = run_shell(f"""
.read sql/duckrank.sql
CREATE TABLE q AS FROM '{DATA / "qrels.parquet"}';
CREATE TABLE "we'ird" AS FROM '{DATA / "run.parquet"}';
CREATE TABLE "we'ird""t" AS FROM '{DATA / "run.parquet"}';
CREATE VIEW r AS FROM "we'ird""t";
SELECT round(avg(value), 6) FROM duckrank.ndcg('q', '"we''ird"', k := 10);
SELECT round(avg(value), 6) FROM duckrank.ndcg('q', 'r', k := 10);
""", "-csv", "-noheader")
    assert done.returncode == 0, done.stderr
    expected = round(duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["ndcg@10"])["ndcg@10"], 6)
    assert [float(line) for line in done.stdout.split()] == pytest.approx([expected, expected], abs=1e-9)


def test_macros_on_a_table_named_weird_in_python():
    con = duckrank.connect()
    con.execute(f"""CREATE TABLE q AS FROM '{DATA / "qrels.parquet"}'""")
    con.execute(f"""CREATE TABLE "we'ird""t" AS FROM '{DATA / "run.parquet"}'""")
    con.execute("""CREATE VIEW r AS FROM "we'ird""t" """)
    ((value,),) = con.sql("SELECT avg(value) FROM duckrank.ndcg('q', 'r', k := 10)").fetchall()
    assert value == pytest.approx(duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"),
                                                    ["ndcg@10"])["ndcg@10"], abs=1e-12)
    with pytest.raises(duckdb.Error):  # the bare name is parsed as a qualified name, never as SQL
        con.sql("""SELECT avg(value) FROM duckrank.ndcg('q', 'we''ird"t', k := 10)""").fetchall()
