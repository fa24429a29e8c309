"""Hostile names (issue 25, "Names are spliced into SQL"): a column or table name stays a name.

Through `duckrank sql --dialect spark` (--run-table / --qrels-table: an identifier, dotted parts
allowed, quoted on output, or exit 2) and the SQL macros in the real DuckDB shell (a table named
we'ird"t, as the README says to quote it). The cases that run Spark (that SQL read by Spark,
duckrank.spark.evaluate's table and column names) are in test_spark.py, which starts the one JVM.
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
