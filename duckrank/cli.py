"""The duckrank command line: `duckrank eval|metrics|sql|convert`.

Each command maps onto one facade function (duckrank.evaluation.compute, duckrank.measures.catalog,
duckrank._library.library_sql, duckrank.inputs.read_table/write_table); this module parses options,
reports every bad one at once, and formats what the SQL computed. It holds no metric math.

Imports of duckdb and the facade happen inside the commands so `duckrank --help` stays fast.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import click

from duckrank import __version__
from duckrank import _output as output
from duckrank._cli_common import (
    CONTEXT_SETTINGS,
    INPUT_FORMATS,
    Problems,
    as_flags,
    binary_target,
    check_engine,
    check_output,
    clean_message,
    column_options,
    convention_options,
    engine_options,
    handle_errors,
    output_options,
    pick_format,
)

CONVERT_FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec")
KINDS = ("run", "qrels")

# trec_eval's default measure set ("official"), which `duckrank eval` prints without -m.
# Each -m argument goes through duckrank.measures.expand_measures like any other.
DEFAULT_MEASURES = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall.0.00,0.10,0.20,0.30,0.40,0.50,0.60,0.70,0.80,0.90,1.00",
    "P.5,10,15,20,30,100,200,500,1000",
]



# ---------------------------------------------------------------------------------------------
# errors


# ---------------------------------------------------------------------------------------------
# shared options


# ---------------------------------------------------------------------------------------------
# progress


class Progress:
    """A progress line on stderr while DuckDB works, only when stderr is a terminal.

    Polls the connection's query_progress() from a thread; short jobs (< 0.5 s) print nothing.
    """

    def __init__(self, con, label: str, enabled: bool, delay: float = 0.5) -> None:
        self.con = con
        self.label = label
        self.enabled = enabled
        self.delay = delay
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False

    def __enter__(self) -> Progress:
        if self.enabled:
            try:
                self.con.execute("SET enable_progress_bar = true").fetchall()
                self.con.execute("SET enable_progress_bar_print = false").fetchall()
            except Exception:  # noqa: BLE001 - progress is a nicety, never a failure
                self.enabled = False
                return self
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        start = time.monotonic()
        if self._stop.wait(self.delay):
            return
        spinner = "|/-\\"
        tick = 0
        while not self._stop.wait(0.1):
            try:
                percent = self.con.query_progress()
            except Exception:  # noqa: BLE001
                percent = -1
            elapsed = time.monotonic() - start
            shown = f"{percent:5.1f}%" if percent is not None and percent > 0 else spinner[tick % 4]
            sys.stderr.write(f"\rduckrank: {self.label} {shown}  {elapsed:5.1f}s")
            sys.stderr.flush()
            self._shown = True
            tick += 1

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def _progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()


# ---------------------------------------------------------------------------------------------
# the group


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="duckrank", message="%(prog)s %(version)s")
def main() -> None:
    """trec_eval-exact ranking metrics (nDCG, MAP, MRR, P@k, ERR, AUC, ...) at DuckDB speed.

    \b
      duckrank eval qrels.txt run.txt -m ndcg_cut.10 -m map
      duckrank eval qrels.parquet a.parquet b.parquet -m nDCG@10 -q --format csv
      duckrank eval --log clicks.parquet --label clicked -m auc -m gauc
      duckrank metrics
      duckrank sql | duckdb my.db
      duckrank convert run.txt run.parquet
    """


# ---------------------------------------------------------------------------------------------
# eval


@main.command("eval", context_settings=CONTEXT_SETTINGS)
@click.argument("qrels", required=False, metavar="QRELS")
@click.argument("runs", nargs=-1, metavar="RUN [RUN ...]")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="A measure, repeatable: nDCG@10, P(rel=2)@5, map, P.5,10,20 (trec_eval's comma "
                   "lists), all_trec (every trec_eval measure duckrank supports). Default: trec_eval's "
                   "default set. `duckrank metrics` lists them all.")
@click.option("-q", "per_query", is_flag=True, help="Per-query rows as well as the summary (trec_eval -q).")
@click.option("-c", "complete", is_flag=True,
              help="Complete: qrels queries missing from the run score 0 (trec_eval -c).")
@click.option("-l", "rel_level", metavar="N",
              help="Relevance level: grade >= N is relevant (trec_eval -l; default 1).")
@click.option("-M", "max_rank", metavar="N",
              help="Max rank: score only the top N of each query (trec_eval -M).")
@click.option("-n", "no_summary", is_flag=True, help="No summary rows (trec_eval -n); use with -q.")
@click.option("-J", "judged_only", is_flag=True,
              help="Judged docs only: drop unjudged docs before ranking (trec_eval -J; --unjudged skip).")
@convention_options
@column_options
@click.option("--log", "log", metavar="FILE",
              help="Score one impression log (query, doc, score and label on each row) instead of QRELS RUN.")
@click.option("--label", metavar="COL", help="With --log: the column holding the judgment (e.g. clicked).")
@click.option("--label-map", metavar="VALUE=GRADE,...",
              help="With --log: grades for a text label column, e.g. purchase=3,click=1 (others grade 0).")
@click.option("--by", "segments", multiple=True, metavar="COL",
              help="Score every measure per value of COL, a column of the run (or --log) such as device; "
                   "repeatable.")
@click.option("--run-format", metavar="FORMAT",
              help=f"Read runs (or the --log) as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--qrels-format", metavar="FORMAT",
              help=f"Read the qrels as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@output_options
@engine_options
@handle_errors
def eval_command(qrels, runs, measures, per_query, complete, rel_level, max_rank, no_summary, judged_only, ties,
                 gain, empty, unjudged, duplicates, query_col, doc_col, score_col, relevance_col, log, label,
                 label_map, segments, run_format, qrels_format, fmt, output_path, quiet, threads, memory_limit, temp_dir):
    """Score one or more runs against QRELS (trec_eval's argument order).

    \b
    Inputs are Parquet, CSV/TSV, JSONL or TREC text (run: query Q0 doc rank score
    run_id; qrels: query iteration doc grade), detected from the file.

    \b
    Examples:
      duckrank eval qrels.txt run.txt -m all_trec -q --format trec
      duckrank eval qrels.parquet a.parquet b.parquet -m nDCG@10 -m P.5,10
      duckrank eval --log log.parquet --label clicked --query-col user_id \\
          --doc-col item_id --score-col pred -m auc -m gauc -m nDCG@10

    Exit status: 0 success, 1 a data problem, 2 a usage problem.
    """
    problems = Problems()

    # positional arguments
    if log is not None:
        if qrels is not None or runs:
            problems.add("--log scores a single impression log; give either --log FILE or QRELS RUN, not both")
        if label is None:
            problems.add("--log needs --label COL: the column that holds each row's judgment (e.g. clicked)")
    else:
        if label is not None or label_map is not None:
            problems.add(f"{'--label' if label is not None else '--label-map'} only applies with --log FILE")
        if qrels is None:
            problems.add("missing QRELS and RUN: give the qrels file, then one or more run files "
                         "(or --log FILE --label COL)")
        elif not runs:
            problems.add(f"missing RUN: give one or more run files after the qrels {qrels}")

    # conventions
    conventions: dict[str, Any] = {}
    # The values of the named conventions are checked by the SQL library itself, below.
    conventions["ties"], conventions["empty"], conventions["unjudged"] = ties, empty, unjudged
    conventions["duplicates"], conventions["gain"] = duplicates, gain
    if judged_only:
        if conventions["unjudged"] not in (None, "skip"):
            problems.add(f"-J means --unjudged skip; it contradicts --unjudged {unjudged}")
        conventions["unjudged"] = "skip"
    conventions["rel_level"] = problems.number("-l", rel_level)
    conventions["max_rank"] = problems.integer("-M", max_rank)
    if complete:
        conventions["complete"] = True
    conventions = {key: value for key, value in conventions.items() if value is not None}
    run_fmt = problems.choice("--run-format", run_format, INPUT_FORMATS)
    qrels_fmt = problems.choice("--qrels-format", qrels_format, INPUT_FORMATS)

    grades = _parse_label_map(problems, label_map) if label_map is not None else None

    if no_summary and not per_query:
        problems.add("-n drops the summary and without -q there are no per-query rows to print; add -q")

    # measures: every bad one reported at once
    from duckrank.errors import MeasureError
    from duckrank.measures import expand_measures, parse_measure

    requested: list[str] = []
    for argument in measures or ["official"]:
        # trec_eval's default set has a name too: -m official
        requested.extend(DEFAULT_MEASURES if argument.strip().lower() == "official" else [argument])
    parsed = []
    seen = set()
    try:
        spellings = expand_measures(requested)
    except MeasureError as error:
        problems.add(clean_message(error))
        spellings = []
    for spelling in spellings:
        if spelling in seen:
            continue
        seen.add(spelling)
        try:
            parsed.append(parse_measure(spelling))
        except MeasureError as error:
            problems.add(clean_message(error))

    # output and engine
    fmt = pick_format(problems, fmt, output_path, output.FORMATS)
    if segments and fmt == "trec":
        problems.add("--format trec has no column for --by segments; use table, tsv, csv, json, jsonl or parquet")
    inputs = [log] if log is not None else [qrels, *runs]
    check_output(problems, fmt, output_path, [source for source in inputs if source])
    engine = check_engine(problems, threads, memory_limit, temp_dir)

    from duckrank._library import connect, shared_cursor
    from duckrank.evaluation import compute, option_problems

    # the part of the library an evaluation reads, loaded once; engine settings are the database's,
    # so they get a private one that no later evaluation in this process inherits
    con = connect() if engine else shared_cursor()
    try:
        for problem in option_problems(con, {k: v for k, v in conventions.items() if v is not None}, parsed):
            problems.add(as_flags(problem))
        problems.raise_if_any()
    except BaseException:
        con.close()
        raise

    # compute: the progress indicator watches the connection from the first read to the last write

    # trec_eval prints its runid line for its measure sets
    with_runid = not measures or any(m.strip().lower() in ("all_trec", "official") for m in measures)
    input_formats = (
        {"log_format": run_fmt} if log is not None
        else {"run_format": _facade_format(run_fmt, "run"), "qrels_format": _facade_format(qrels_fmt, "qrels")}
    )
    kwargs: dict[str, Any] = dict(
        log=log, label=label, label_map=grades, by=list(segments) or None, query_col=query_col, doc_col=doc_col, score_col=score_col,
        relevance_col=relevance_col, **input_formats, **engine, **conventions,
    )
    kwargs = {key: value for key, value in kwargs.items() if value is not None}
    try:
        what = "the log" if log is not None else f"{len(runs)} run" + ("s" if len(runs) > 1 else "")
        with Progress(con, f"scoring {what}", _progress_enabled(quiet)):
            results = compute(qrels, list(runs) if log is None else None, [m.spelling for m in parsed],
                              con=con, **kwargs)
            _write_eval(results, results.measures, fmt, output_path, per_query=per_query, summary=not no_summary,
                        with_runid=with_runid)
    finally:
        con.close()


def _parse_label_map(problems: Problems, text: str) -> dict[str, float] | None:
    grades: dict[str, float] = {}
    for pair in text.split(","):
        value, sep, grade = pair.partition("=")
        try:
            if not sep or not value.strip():
                raise ValueError
            grades[value.strip()] = float(grade)
        except ValueError:
            problems.add(f"--label-map must be VALUE=GRADE pairs such as purchase=3,click=1; got {text!r}")
            return None
    return grades


def _facade_format(fmt: str | None, kind: str) -> str | None:
    """The CLI's 'trec' is the facade's trec_run or trec_qrels."""
    if fmt == "trec":
        return f"trec_{kind}"
    return fmt


# The eval output: one row per (run, segment, query or 'all', measure), ordered as trec_eval prints it:
# per run (and --by segment), every query's block (queries in id order), then the summary block.
_EVAL_SQL = """
WITH measures AS (
    SELECT unnest($spellings) AS spelling, unnest($printed) AS metric,
           unnest($per_query_ok) AS per_query_ok, unnest(range(len($spellings))) AS measure_order
),
runs AS (
    SELECT unnest($runs) AS run, unnest(range(len($runs))) AS run_order
),
rows AS (
    SELECT run, {by_columns}CAST(query_id AS VARCHAR) AS query_id, measure, value, 0 AS part,
           dense_rank() OVER (ORDER BY query_id) AS query_order
    FROM {per_query} WHERE $with_per_query
    UNION ALL
    SELECT run, {by_columns}'all' AS query_id, measure, value, 1 AS part, 0 AS query_order
    FROM {summary} WHERE $with_summary
)
SELECT {run_column}{by_rows}rows.query_id, measures.metric, CAST(rows.value AS DOUBLE) AS value
FROM rows
JOIN measures ON rows.measure = measures.spelling
JOIN runs ON rows.run = runs.run
WHERE rows.part = 1 OR measures.per_query_ok
ORDER BY runs.run_order, {by_rows}rows.part, rows.query_order, measures.measure_order
"""


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _integer_measure(measure) -> bool:
    return measure.summary in ("sum", "count")


def _write_eval(results, measures, fmt: str, path: str | None, *, per_query: bool, summary: bool,
                with_runid: bool) -> None:
    con = results.con
    run_names = [str(run) for run in results.runs]
    segments = list(getattr(results, "by", None) or [])
    several = len(run_names) > 1
    results.summary.create_view("duckrank_cli_summary", replace=True)
    results.per_query.create_view("duckrank_cli_per_query", replace=True)
    sql = _EVAL_SQL.format(
        per_query="duckrank_cli_per_query", summary="duckrank_cli_summary",
        run_column="rows.run, " if several else "",
        by_columns="".join(f"{_quote(name)}, " for name in segments),
        by_rows="".join(f"rows.{_quote(name)}, " for name in segments),
    )
    params = {
        "spellings": [m.spelling for m in measures],
        "printed": [m.printed_name for m in measures],
        "per_query_ok": [bool(getattr(m.metric, "per_query", True)) and m.summary != "log" for m in measures],
        "runs": run_names,
        "with_per_query": bool(per_query),
        "with_summary": bool(summary),
    }
    keys = (["run"] if several else []) + segments
    columns = [*keys, "query_id", "metric", "value"]
    integer_metrics = {m.printed_name for m in measures if _integer_measure(m)}

    if fmt == "parquet":
        with binary_target(path) as tmp:
            con.execute(f"COPY ({sql}) TO $path (FORMAT parquet)", {**params, "path": tmp}).fetchall()
        return

    cursor = con.execute(sql, params)

    def rows() -> Iterator[tuple]:
        while batch := cursor.fetchmany(10_000):
            yield from batch

    with output.text_output(path) as stream:
        if fmt == "trec":
            _write_trec(stream, rows(), several, integer_metrics, run_names, with_runid and summary)
        elif fmt in output.MACHINE_FORMATS:
            output.write_machine(fmt, columns, rows(), stream)
        else:
            _write_eval_human(fmt, stream, rows(), several, segments, per_query, integer_metrics, run_names)


def _write_trec(stream, rows, several: bool, integer_metrics: set[str], run_names: list[str],
                with_runid: bool) -> None:
    current_run = None
    in_summary = False
    for row in rows:
        run, query_id, metric, value = row if several else (run_names[0], *row)
        if run != current_run:
            current_run, in_summary = run, False
        if query_id == "all" and not in_summary:
            in_summary = True
            if with_runid:
                stream.write(output.trec_line("runid", "all", run))
        stream.write(output.trec_line(metric, query_id, value, metric in integer_metrics))


def _write_eval_human(fmt, stream, rows, several, segments, per_query, integer_metrics, run_names) -> None:
    # Pivot runs into columns: one line per (segment, query, metric), one value column per run.
    table: dict[tuple, dict[str, Any]] = {}
    for row in rows:
        run, rest = (row[0], row[1:]) if several else (run_names[0], row)
        *segment, query_id, metric, value = rest
        key = (*("" if v is None else str(v) for v in segment), *([query_id] if per_query else []), metric)
        table.setdefault(key, {})[run] = value
    value_columns = run_names if several else ["value"]
    columns = [*segments, *(["query_id"] if per_query else []), "metric", *value_columns]
    align = ["l"] * (len(columns) - len(value_columns)) + ["r"] * len(value_columns)
    cells = []
    for key, values in table.items():
        integer = key[-1] in integer_metrics
        cells.append([*key, *(output.display_value(values.get(run), integer) for run in run_names)])
    output.write_human(fmt, columns, cells, stream, align)


# ---------------------------------------------------------------------------------------------
# metrics


@main.command("metrics", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, metavar="[NAME ...]")
@output_options
@handle_errors
def metrics_command(names, fmt, output_path, quiet):
    """List every measure: definition, spellings, options with defaults, and the SQL file.

    Read from the SQL catalog, so it is always what the library computes. NAME filters the
    list (a metric name or any spelling, e.g. `duckrank metrics ndcg P.5`).
    """
    problems = Problems()
    allowed = tuple(f for f in output.FORMATS if f != "trec")
    fmt = pick_format(problems, fmt, output_path, allowed)
    check_output(problems, fmt, output_path, [])
    problems.raise_if_any()

    entries = _catalog()
    if names:
        entries = _filter_catalog(entries, names)
    _write_catalog(entries, fmt, output_path)


def _catalog() -> list[dict]:
    return [dict(entry) for entry in _catalog_entries()]


@functools.cache
def _catalog_entries() -> tuple[dict, ...]:
    """duckrank.measures.catalog() when the facade has it; else the same listing built here from the
    measure registry and the SQL catalog: each definition is its macro's COMMENT in duckdb_functions(),
    each source the .sql file that creates the macro, so the listing cannot drift from the library."""
    from duckrank import measures

    if hasattr(measures, "catalog"):
        return tuple(measures.catalog())

    from duckrank._library import connect, library_files

    con = connect()
    comments = dict(con.execute(
        "SELECT function_name, comment FROM duckdb_functions() WHERE schema_name = 'duckrank' "
        "ORDER BY function_type DESC").fetchall())  # table_macro first: the per-query macro wins
    con.close()
    sources: dict[str, str] = {}
    for path in library_files():
        for name in re.findall(r"CREATE OR REPLACE MACRO duckrank\.(\w+)", path.read_text(encoding="utf-8")):
            sources.setdefault(name, f"sql/{path.name}")
    spellings: dict[str, list[str]] = {}
    for name, (metric, _fixed) in measures.NAMES.items():
        cutoff = measures.METRICS[metric].cutoff
        spellings.setdefault(metric, []).append(f"{name}@{cutoff}" if cutoff else name)
    for name, (metric, _fixed, parameter) in measures.TREC_NAMES.items():
        # trec_eval's ndcg parameter is a gain map (ndcg.1=3,2=9); the others are a number (P.5)
        spellings.setdefault(metric, []).append(f"{name}.N" if parameter in ("k", "mult", "recall") else name)
    entries = []
    for metric in measures.METRICS.values():
        macro = next((m for m in (metric.name, *re.findall(r"duckrank\.(\w+)\(", metric.aggregate))
                      if m in comments), None)
        if macro is None and metric.name.startswith("num_"):
            macro = "counts"
        if macro is None and metric.name.startswith("gm_"):
            macro = {"gm_map": "average_precision", "gm_bpref": "bpref"}.get(metric.name)
        definition = comments.get(macro) or ""
        if metric.summary == "gmean":
            definition = f"geometric mean over queries of: {definition}"
        entries.append({
            "name": metric.name,
            "spellings": sorted(set(spellings.get(metric.name, [])), key=str.lower),
            "definition": definition,
            "options": dict(metric.options),
            "summary": metric.summary,
            "source": sources.get(macro or "", ""),
        })
    return tuple(entries)


def _filter_catalog(entries: list[dict], names: tuple[str, ...]) -> list[dict]:
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
            measure = parse_measure(name)
        except MeasureError as error:
            bad.append(clean_message(error))
            continue
        wanted.add(getattr(measure.metric, "name", measure.metric))
    if bad:
        raise click.UsageError("\nError: ".join(bad))
    return [e for e in entries if e["name"] in wanted]


_CATALOG_COLUMNS = ("name", "spellings", "definition", "options", "summary", "source")


def _catalog_cell(entry: dict, column: str) -> Any:
    value = entry.get(column)
    if column == "spellings" and isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    if column == "options" and isinstance(value, dict):
        return ", ".join(f"{key}={_default_text(default)}" for key, default in value.items())
    if column == "options" and isinstance(value, list | tuple):
        return ", ".join(_option_text(option) for option in value)
    return "" if value is None else str(value)


def _default_text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _option_text(option: Any) -> str:
    if isinstance(option, dict):
        name = option.get("name", "?")
        return f"{name}={_default_text(option.get('default'))}"
    return str(option)


def _write_catalog(entries: list[dict], fmt: str, path: str | None) -> None:
    columns = [c for c in _CATALOG_COLUMNS if any(c in e for e in entries)] or list(_CATALOG_COLUMNS)
    if fmt == "parquet":
        import duckdb

        con = duckdb.connect()
        rows = [[_catalog_cell(e, c) for c in columns] for e in entries]
        con.execute(
            "CREATE TABLE catalog AS SELECT * FROM (SELECT "
            + ", ".join(f"unnest($c{i}) AS \"{c}\"" for i, c in enumerate(columns)) + ")",
            {f"c{i}": [row[i] for row in rows] for i in range(len(columns))},
        ).fetchall()
        with binary_target(path) as tmp:
            con.execute("COPY catalog TO $path (FORMAT parquet)", {"path": tmp}).fetchall()
        return
    with output.text_output(path) as stream:
        if fmt == "table":
            _write_catalog_blocks(entries, stream)
        elif fmt in output.MACHINE_FORMATS:
            if fmt in ("json", "jsonl"):
                rows = [[_json_cell(e.get(c)) for c in columns] for e in entries]
            else:
                rows = [[_catalog_cell(e, c) for c in columns] for e in entries]
            output.write_machine(fmt, columns, rows, stream)
        else:
            rows = [[_catalog_cell(e, c) for c in columns] for e in entries]
            output.write_human(fmt, columns, rows, stream)


def _json_cell(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return {str(k): _json_cell(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_cell(v) for v in value]
    return value


def _write_catalog_blocks(entries: list[dict], stream) -> None:
    for index, entry in enumerate(entries):
        if index:
            stream.write("\n")
        stream.write(f"{entry.get('name', '?')}\n")
        for column in _CATALOG_COLUMNS[1:]:
            text = _catalog_cell(entry, column)
            if text:
                stream.write(f"  {column + ':':<12} {text}\n")


# ---------------------------------------------------------------------------------------------
# sql


@main.command("sql", context_settings=CONTEXT_SETTINGS)
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


# ---------------------------------------------------------------------------------------------
# convert


@main.command("convert", context_settings=CONTEXT_SETTINGS)
@click.argument("source", metavar="IN")
@click.argument("target", metavar="OUT")
@click.option("--kind", metavar="KIND",
              help="run or qrels. Default: from a TREC file's shape, else from the columns "
                   "(a relevance column means qrels).")
@click.option("--from", "from_format", metavar="FORMAT",
              help=f"Read IN as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--to", "to_format", metavar="FORMAT",
              help=f"Write OUT as {', '.join(CONVERT_FORMATS)}. Default: from OUT's extension "
                   "(.parquet .csv .tsv .jsonl; anything else is TREC text).")
@click.option("--query-col", metavar="COL", help="Column holding the query id (default query_id).")
@click.option("--doc-col", metavar="COL", help="Column holding the document id (default doc_id).")
@click.option("--score-col", metavar="COL", help="A run's score column (default score).")
@click.option("--relevance-col", metavar="COL", help="A qrels grade column (default relevance).")
@click.option("--quiet", is_flag=True, help="No progress indicator on stderr.")
@engine_options
@handle_errors
def convert_command(source, target, kind, from_format, to_format, query_col, doc_col, score_col,
                    relevance_col, quiet, threads, memory_limit, temp_dir):
    """Convert a run or qrels between TREC text, CSV, TSV, JSONL and Parquet.

    \b
      duckrank convert results.test results.parquet
      duckrank convert clicks.csv qrels.txt --kind qrels --relevance-col clicked
    """
    problems = Problems()
    kind = problems.choice("--kind", kind, KINDS)
    from_fmt = problems.choice("--from", from_format, INPUT_FORMATS)
    to_fmt = problems.choice("--to", to_format, CONVERT_FORMATS)
    if to_format is None:
        to_fmt = _convert_format_from_extension(target)
    if target == "-":
        problems.add("OUT must be a file path")
    else:
        check_output(problems, "convert", target, [source])
    engine = check_engine(problems, threads, memory_limit, temp_dir)
    problems.raise_if_any()

    import duckdb

    from duckrank import inputs
    from duckrank._library import configure

    columns = {
        key: value for key, value in {
            "query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col,
        }.items() if value is not None
    }

    con = duckdb.connect()  # reading and writing need no macros
    try:
        configure(con, **engine)
        with Progress(con, "converting", _progress_enabled(quiet)):
            table = _read_convert_input(inputs, con, source, kind, from_fmt, columns)
            with output.atomic_path(target) as tmp:
                inputs.write_table(con, table.view, tmp, _facade_format(to_fmt, table_kind(table)))
    finally:
        con.close()


def table_kind(source) -> str:
    return "run" if "score" in source.columns else "qrels"


def _read_convert_input(inputs, con, source: str, kind: str | None, fmt: str | None, columns: dict):
    """read_table for IN; without --kind, a TREC file's shape or the columns decide run or qrels."""
    from duckrank.errors import InputError

    if kind is None:
        detected = _facade_format(fmt, "run") if fmt else None
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
        return inputs.read_table(con, source, kind, fmt=_facade_format(fmt, kind), columns=columns or None)
    try:
        return inputs.read_table(con, source, "qrels", fmt=_facade_format(fmt, "qrels"), columns=columns or None)
    except InputError as qrels_error:
        try:
            return inputs.read_table(con, source, "run", fmt=_facade_format(fmt, "run"), columns=columns or None)
        except InputError as run_error:
            if "no column" not in str(run_error) or "no column" not in str(qrels_error):
                raise
            raise InputError(
                f"{source} is neither a run (query_id, doc_id, score) nor qrels (query_id, doc_id, "
                f"relevance): {clean_message(run_error)}; or pass --kind qrels with --relevance-col"
            ) from None


def _convert_format_from_extension(path: str) -> str:
    guessed = output.format_from_extension(path)
    return guessed if guessed in CONVERT_FORMATS else "trec"



# `duckrank compare` lives in its own module (it shares _output, not this file's helpers).
from duckrank.compare_cli import compare as _compare  # noqa: E402

main.add_command(_compare)
