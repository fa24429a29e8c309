"""`duckrank sql`: the whole macro library as SQL, to install in any DuckDB database."""

from __future__ import annotations

import click

from duckrank import _output as output
from duckrank.cli.common import CONTEXT_SETTINGS, Problems, check_output, handle_errors


@click.command("sql", context_settings=CONTEXT_SETTINGS)
@click.option("-o", "--output", "output_path", metavar="FILE",
              help="Write to FILE (atomically) instead of stdout.")
@handle_errors
def sql_command(output_path):
    """Print the whole macro library as SQL.

    \b
    Install it in any DuckDB database:
      duckrank sql | duckdb my.db
    then call e.g. SELECT * FROM duckrank.ndcg('qrels.parquet', 'run.parquet', k := 10).
    """
    problems = Problems()
    check_output(problems, "sql", output_path, [])
    problems.raise_if_any()
    from duckrank._library import library_sql

    text = library_sql()
    if not text.endswith("\n"):
        text += "\n"
    with output.text_output(output_path) as stream:
        stream.write(text)
