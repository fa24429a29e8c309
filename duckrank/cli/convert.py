"""`duckrank convert IN OUT`: a run or qrels between TREC text, CSV, TSV, JSONL and Parquet,
over duckrank.inputs.read_table and write_table."""

from __future__ import annotations

import os

import click

from duckrank import _output as output
from duckrank.cli.common import (
    CONTEXT_SETTINGS,
    INPUT_FORMATS,
    Problems,
    Progress,
    TABLE_FORMATS,
    check_output,
    facade_format,
    progress_enabled,
    table_format_from_extension,
)
from duckrank.cli.failures import clean_message, handle_errors
from duckrank.cli.options import check_engine, column_options, engine_options

KINDS = ("run", "qrels")


@click.command("convert", context_settings=CONTEXT_SETTINGS)
@click.argument("source", metavar="IN")
@click.argument("target", metavar="OUT")
@click.option("--kind", metavar="KIND",
              help="run or qrels. Default: from a TREC file's shape, else from the columns "
                   "(a relevance column means qrels).")
@click.option("--from", "from_format", metavar="FORMAT",
              help=f"Read IN as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--to", "to_format", metavar="FORMAT",
              help=f"Write OUT as {', '.join(TABLE_FORMATS)}. Default: from OUT's extension "
                   "(.parquet .csv .tsv .jsonl; anything else is TREC text).")
@column_options
@click.option("--quiet", is_flag=True, help="No progress indicator on stderr.")
@engine_options
@handle_errors
def convert_command(source, target, kind, from_format, to_format, query_col, doc_col, score_col,
                    relevance_col, literal, quiet, threads, memory_limit, temp_dir):
    """Convert a run or qrels between TREC text, CSV, TSV, JSONL and Parquet.

    \b
      duckrank convert results.test results.parquet
      duckrank convert clicks.csv qrels.txt --kind qrels --relevance-col clicked
    """
    problems = Problems()
    kind = problems.choice("--kind", kind, KINDS)
    from_fmt = problems.choice("--from", from_format, INPUT_FORMATS)
    to_fmt = problems.choice("--to", to_format, TABLE_FORMATS)
    if to_format is None:
        to_fmt = table_format_from_extension(target)
    if target == "-":
        problems.add("OUT must be a file path")
    else:
        check_output(problems, "convert", target, [source], literal)
    engine = check_engine(problems, threads, memory_limit, temp_dir)
    problems.raise_if_any()

    import duckdb

    from duckrank import inputs
    from duckrank._library import configure, private_settings

    columns = {
        key: value for key, value in {
            "query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col,
        }.items() if value is not None
    }

    con = duckdb.connect()  # reading and writing need no macros
    try:
        private_settings(con)
        configure(con, **engine)
        with Progress(con, "converting", progress_enabled(quiet)):
            table = _read_input(inputs, con, source, kind, from_fmt, columns, literal)
            with output.atomic_path(target) as tmp:
                inputs.write_table(con, table.view, tmp, facade_format(to_fmt, _table_kind(table)))
    finally:
        con.close()


def _table_kind(source) -> str:
    return "run" if "score" in source.columns else "qrels"


def _read_input(inputs, con, source: str, kind: str | None, fmt: str | None, columns: dict,
                literal: bool | None):
    """read_table for IN; without --kind, a TREC file's shape or the columns decide run or qrels."""
    from duckrank.errors import InputError

    stdin = inputs.StandardInput()  # IN '-' read as qrels, then as a run: the same bytes

    if kind is None:
        detected = facade_format(fmt, "run") if fmt else None
        if detected is None and os.path.exists(source):
            detected = inputs.detect_format(source)
        if detected in ("trec_run", "trec_qrels"):
            kind = "run" if detected == "trec_run" else "qrels"
            fmt = "trec"
        elif "score" in columns:
            kind = "run"
        elif "relevance" in columns:
            kind = "qrels"
    if kind is not None:
        return inputs.read_table(con, source, kind, fmt=facade_format(fmt, kind), columns=columns or None,
                                 literal=literal, stdin=stdin)
    try:
        return inputs.read_table(con, source, "qrels", fmt=facade_format(fmt, "qrels"), columns=columns or None,
                                 literal=literal, stdin=stdin)
    except InputError as qrels_error:
        try:
            return inputs.read_table(con, source, "run", fmt=facade_format(fmt, "run"), columns=columns or None,
                                     literal=literal, stdin=stdin)
        except InputError as run_error:
            if "no column" not in str(run_error) or "no column" not in str(qrels_error):
                raise
            raise InputError(
                f"{source} is neither a run (query_id, doc_id, score) nor qrels (query_id, doc_id, "
                f"relevance): {clean_message(run_error)}; or pass --kind qrels with --relevance-col"
            ) from None
