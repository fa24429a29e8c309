"""`duckrank sql`: the whole macro library as SQL, to install in any DuckDB database; or, with
--dialect spark, the Spark SQL query that computes some measures (rendered from the same library)."""

from __future__ import annotations

import click

from duckrank import _output as output
from duckrank.cli.common import CONTEXT_SETTINGS, Problems, check_output
from duckrank.cli.failures import clean_message, handle_errors
from duckrank.cli.options import convention_options, read_conventions


@click.command("sql", context_settings=CONTEXT_SETTINGS)
@click.option("-o", "--output", "output_path", metavar="FILE",
              help="Write to FILE (atomically) instead of stdout.")
@click.option("--dialect", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
              help="duckdb: the macro library. spark: one Spark SQL query computing the -m measures over the "
                   "tables --qrels-table and --run-table (needs pip install 'duckrank[spark]').")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="With --dialect spark: a measure, repeatable (as for duckrank eval). Default: map.")
@click.option("-q", "per_query", is_flag=True, help="With --dialect spark: per-query rows instead of the summary.")
@click.option("--qrels-table", default="qrels", show_default=True, metavar="NAME",
              help="With --dialect spark: the table (query_id, doc_id, relevance) the query reads: up to three "
                   "identifiers joined by dots, each quoted in backticks if not plain (`my qrels`).")
@click.option("--run-table", default="run", show_default=True, metavar="NAME",
              help="With --dialect spark: the table (query_id, doc_id, score) the query reads.")
@convention_options()
@handle_errors
def sql_command(output_path, dialect, measures, per_query, qrels_table, run_table, conventions):
    """Print the whole macro library as SQL, or a Spark SQL query.

    \b
    Install it in any DuckDB database:
      duckrank sql | duckdb my.db
    then call e.g. SELECT * FROM duckrank.ndcg('qrels.parquet', 'run.parquet', k := 10).
    Installing replaces schema duckrank whole (an older library's macros go): keep your own
    objects in another schema.

    \b
    Or run the measures where Spark SQL runs (Databricks, EMR, Spark Connect):
      duckrank sql --dialect spark -m ndcg@10 -m map --run-table logs.run
    """
    problems = Problems()
    check_output(problems, "sql", output_path, [])
    conventions = read_conventions(problems, conventions)
    if dialect == "duckdb" and (measures or per_query or conventions):
        problems.add("-m, -q and the conventions choose a Spark query; add --dialect spark")
    if dialect == "spark":
        from duckrank.spark import table_problem

        for option, name in (("--qrels-table", qrels_table), ("--run-table", run_table)):
            problem = table_problem(option, name)
            if problem:
                problems.add(problem)
    problems.raise_if_any()
    if dialect == "spark":
        from duckrank import spark
        from duckrank.errors import DuckrankError

        try:
            text = spark.sql(list(measures) or ["map"], qrels=qrels_table, run=run_table, per_query=per_query,
                             **conventions)
        except DuckrankError as error:
            for line in clean_message(error).splitlines():
                problems.add(line)
            problems.raise_if_any()
            raise
    else:
        from duckrank._library import install_sql

        text = install_sql()
    if not text.endswith("\n"):
        text += "\n"
    with output.text_output(output_path) as stream:
        stream.write(text)
