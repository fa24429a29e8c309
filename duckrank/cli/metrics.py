"""`duckrank metrics [NAME ...]`: the measure catalogue (duckrank.catalog), filtered and formatted."""

from __future__ import annotations

from typing import Any

import click

from duckrank import _output as output
from duckrank.cli.common import CONTEXT_SETTINGS, NON_TREC_FORMATS, Problems, binary_target, check_output, pick_format
from duckrank.cli.failures import clean_message, handle_errors
from duckrank.cli.options import output_options
from duckrank.options import default_text

FORMATS = NON_TREC_FORMATS
COLUMNS = ("name", "spellings", "definition", "options", "summary", "source", "oracle")


@click.command("metrics", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, metavar="[NAME ...]")
@output_options(FORMATS, about="")
@handle_errors
def metrics_command(names, fmt, output_path, quiet):
    """List every measure: spellings, definition, options with defaults, summary, SQL file and oracle.

    Read from the measure registry, which the SQL library is generated from. NAME filters the
    list (a metric name or any spelling, e.g. `duckrank metrics ndcg P.5`).
    """
    problems = Problems()
    fmt = pick_format(problems, fmt, output_path, FORMATS)
    check_output(problems, fmt, output_path, [])
    problems.raise_if_any()

    from duckrank.catalog import catalog

    entries = catalog()
    if names:
        entries = _filter(entries, names)
    _write(entries, fmt, output_path)


def _filter(entries: list[dict], names: tuple[str, ...]) -> list[dict]:
    from duckrank.errors import MeasureError
    from duckrank.measures import parse_measure

    wanted: set[str] = set()
    bad = []
    for name in names:
        direct = [e["name"] for e in entries if e["name"].lower() == name.lower()]
        if direct:
            wanted.update(direct)
            continue
        try:
            wanted.add(parse_measure(name).metric.name)
        except MeasureError as error:
            bad.append(clean_message(error))
    if bad:
        raise click.UsageError("\nError: ".join(bad))
    return [e for e in entries if e["name"] in wanted]


def _cell(entry: dict, column: str) -> str:
    value = entry[column]
    if column == "spellings":
        return ", ".join(value)
    if column == "options":
        return ", ".join(f"{name}={default_text(default)}" for name, default in value.items())
    return str(value)


def _write(entries: list[dict], fmt: str, path: str | None) -> None:
    columns = list(COLUMNS)
    if fmt == "parquet":
        import duckdb

        con = duckdb.connect()
        rows = [[_cell(e, c) for c in columns] for e in entries]
        try:
            con.execute(
                "CREATE TABLE catalog AS SELECT * FROM (SELECT "
                + ", ".join(f"unnest($c{i}) AS \"{c}\"" for i, c in enumerate(columns)) + ")",
                {f"c{i}": [row[i] for row in rows] for i in range(len(columns))},
            ).fetchall()
            with binary_target(path) as tmp:
                con.execute("COPY catalog TO $path (FORMAT parquet)", {"path": tmp}).fetchall()
        finally:
            con.close()
        return
    with output.text_output(path) as stream:
        if fmt == "table":
            _write_blocks(entries, stream)
        elif fmt in ("json", "jsonl"):
            output.write_machine(fmt, columns, [[e[c] for c in columns] for e in entries], stream)
        elif fmt in output.MACHINE_FORMATS:
            output.write_machine(fmt, columns, [[_cell(e, c) for c in columns] for e in entries], stream)
        else:
            output.write_human(fmt, columns, [[_cell(e, c) for c in columns] for e in entries], stream)


def _write_blocks(entries: list[dict], stream: Any) -> None:
    for index, entry in enumerate(entries):
        if index:
            stream.write("\n")
        stream.write(f"{entry['name']}\n")
        for column in COLUMNS[1:]:
            text = _cell(entry, column)
            if text:
                stream.write(f"  {column + ':':<12} {text}\n")
