"""The duckrank command line: `duckrank eval|metrics|sql|convert`.

Each command maps onto one facade function (duckrank.evaluation.compute, duckrank.measures.catalog,
duckrank._library.library_sql, duckrank.inputs.read_table/write_table); this module parses options,
reports every bad one at once, and formats what the SQL computed. It holds no metric math.

Imports of duckdb and the facade happen inside the commands so `duckrank --help` stays fast.
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import click

from duckrank import __version__
from duckrank import _output as output

# The conventions' accepted values (validated again by the SQL; listed here for --help and so
# that every bad option is reported in one message before any data is read).
TIES = ("trec", "input", "average", "pessimistic", "optimistic")
GAINS = ("linear", "exp", "raw")
EMPTY = ("zero", "skip", "nan")
UNJUDGED = ("nonrelevant", "skip", "mean", "median")
DUPLICATES = ("error", "max")
INPUT_FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec")
CONVERT_FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec")
KINDS = ("run", "qrels")

# trec_eval's default measure set ("official"), which `duckrank eval` prints without -m.
DEFAULT_MEASURES = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall.0.00,0.10,0.20,0.30,0.40,0.50,0.60,0.70,0.80,0.90,1.00",
    "P.5,10,15,20,30,100,200,500,1000",
]

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# ---------------------------------------------------------------------------------------------
# errors


class Problems:
    """Bad option values, collected so a single usage error reports all of them."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def add(self, message: str) -> None:
        self.messages.append(message)

    def choice(self, option: str, value: str | None, choices: tuple[str, ...]) -> str | None:
        if value is None:
            return None
        if value.lower() in choices:
            return value.lower()
        self.add(f"{option} must be one of {', '.join(choices)}; got {value!r}")
        return None

    def integer(self, option: str, value: str | None, minimum: int = 1) -> int | None:
        if value is None:
            return None
        try:
            number = int(value.strip())
        except ValueError:
            number = None
        if number is None or number < minimum:
            self.add(f"{option} must be an integer >= {minimum}; got {value!r}")
            return None
        return number

    def number(self, option: str, value: str | None) -> float | int | None:
        if value is None:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            self.add(f"{option} must be a finite number; got {value!r}")
            return None
        return int(number) if number.is_integer() else number

    def raise_if_any(self) -> None:
        if self.messages:
            # click prints "Error: " before the first line; give every other line the same start.
            raise click.UsageError("\nError: ".join(self.messages))


def _clean_message(message: str) -> str:
    message = str(message).strip()
    for prefix in ("duckrank: ", "Error: "):
        if message.startswith(prefix):
            message = message[len(prefix):]
    return message


def handle_errors(function: Callable) -> Callable:
    """Turn duckrank's typed errors into click's exits: usage problems 2, data problems 1.

    No user mistake ends in a traceback; set DUCKRANK_DEBUG=1 to see one for a real bug.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        from duckrank.errors import DuckrankError, MeasureError, OptionError

        try:
            return function(*args, **kwargs)
        except (click.ClickException, click.Abort, click.exceptions.Exit):
            raise
        except (MeasureError, OptionError) as error:
            raise click.UsageError(_clean_message(error)) from None
        except DuckrankError as error:
            raise click.ClickException(_clean_message(error)) from None
        except BrokenPipeError:
            # `duckrank eval ... | head`: the reader left; that is not an error.
            with _suppress_all():
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
            raise click.exceptions.Exit(0) from None
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            raise click.exceptions.Exit(130) from None
        except OSError as error:
            where = f"{error.filename}: " if error.filename else ""
            raise click.ClickException(f"{where}{error.strerror or error}") from None
        except Exception as error:  # noqa: BLE001
            if os.environ.get("DUCKRANK_DEBUG"):
                raise
            if _is_duckdb_error(error):
                raise click.ClickException(_clean_message(error)) from None
            raise click.ClickException(
                f"unexpected {type(error).__name__}: {error}. This is a bug in duckrank; please "
                "report it with the command you ran (set DUCKRANK_DEBUG=1 to see the traceback)."
            ) from None

    return wrapper


class _suppress_all:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return True


def _is_duckdb_error(error: BaseException) -> bool:
    return type(error).__module__.startswith(("duckdb", "_duckdb"))


# ---------------------------------------------------------------------------------------------
# shared options


def output_options(function: Callable) -> Callable:
    """--format, -o/--output and --quiet: the same on every command that prints results."""
    function = click.option(
        "--quiet", is_flag=True, help="No progress indicator on stderr."
    )(function)
    function = click.option(
        "-o", "--output", metavar="FILE",
        help="Write to FILE (atomically: a temporary file in the same folder, then a rename) instead "
             "of stdout. Its extension (.csv .tsv .json .jsonl .parquet .md .tex) picks the format "
             "when --format is not given.",
    )(function)
    function = click.option(
        "-f", "--format", "fmt", metavar="FORMAT",
        help=f"One of {', '.join(output.FORMATS)}. Default: table on a terminal, else tsv (or "
             "what -o FILE's extension says). Machine formats keep full double precision; table, "
             "markdown, latex and trec round to 4 decimals like trec_eval.",
    )(function)
    return function


def engine_options(function: Callable) -> Callable:
    """Pass-through DuckDB settings, so larger-than-memory inputs spill to disk instead of failing."""
    function = click.option("--temp-dir", metavar="DIR", help="Where DuckDB spills (temp_directory).")(function)
    function = click.option(
        "--memory-limit", metavar="SIZE", help="DuckDB memory_limit, e.g. 4GB or 50%."
    )(function)
    function = click.option("--threads", metavar="N", help="DuckDB worker threads (default: all cores).")(function)
    return function


def _pick_format(problems: Problems, fmt: str | None, path: str | None, allowed: tuple[str, ...]) -> str:
    if fmt is not None:
        chosen = problems.choice("--format", fmt, allowed)
        return chosen or allowed[0]
    guessed = output.format_from_extension(path)
    if guessed in allowed:
        return guessed
    if path in (None, "-"):
        return "table" if sys.stdout.isatty() else "tsv"
    return "table" if "table" in allowed else allowed[0]


def _check_output(problems: Problems, fmt: str, path: str | None, inputs: list[str]) -> None:
    if path in (None, "-"):
        if fmt == "parquet" and sys.stdout.isatty():
            problems.add("parquet is binary and stdout is a terminal; write it to a file with -o FILE")
        return
    for source in inputs:
        if source and output.same_file(path, source):
            problems.add(f"-o {path} is also an input ({source}); choose another output path so the "
                         "input is not overwritten")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        problems.add(f"-o {path}: folder {folder} does not exist; create it first")
    elif os.path.isdir(path):
        problems.add(f"-o {path} is a folder; give a file name")


def _check_engine(problems: Problems, threads: str | None, memory_limit: str | None,
                  temp_dir: str | None) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    if threads is not None:
        settings["threads"] = problems.integer("--threads", threads)
    if memory_limit is not None:
        if _valid_memory_limit(memory_limit):
            settings["memory_limit"] = memory_limit
        else:
            problems.add(f"--memory-limit must be a size such as 4GB, 512MB or 50%; got {memory_limit!r}")
    if temp_dir is not None:
        if os.path.exists(temp_dir) and not os.path.isdir(temp_dir):
            problems.add(f"--temp-dir {temp_dir} exists and is not a folder")
        else:
            settings["temp_dir"] = temp_dir
    return {key: value for key, value in settings.items() if value is not None}


def _valid_memory_limit(value: str) -> bool:
    import duckdb

    try:
        duckdb.connect().execute("SET memory_limit = ?", [value]).fetchall()
    except duckdb.Error:
        return False
    return True


def _apply_engine(con, settings: dict[str, Any]) -> None:
    if "threads" in settings:
        con.execute("SET threads = ?", [settings["threads"]]).fetchall()
    if "memory_limit" in settings:
        con.execute("SET memory_limit = ?", [settings["memory_limit"]]).fetchall()
    if "temp_dir" in settings:
        con.execute("SET temp_directory = ?", [settings["temp_dir"]]).fetchall()


# ---------------------------------------------------------------------------------------------
# progress


class Progress:
    """A progress line on stderr while DuckDB works, only when stderr is a terminal.

    Polls the connection's query_progress() from a thread; short jobs (< 0.5 s) print nothing.
    """

    def __init__(self, con, label: str, enabled: bool) -> None:
        self.con = con
        self.label = label
        self.enabled = enabled
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
        if self._stop.wait(0.5):
            return
        spinner = "|/-\\"
        tick = 0
        while not self._stop.wait(0.1):
            try:
                percent = self.con.query_progress()
            except Exception:  # noqa: BLE001
                percent = -1
            elapsed = time.monotonic() - start
            shown = f"{percent:5.1f}%" if percent is not None and percent >= 0 else spinner[tick % 4]
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
@click.option("-l", "rel_level", metavar="N", help="Relevance level: grade >= N is relevant (trec_eval -l; default 1).")
@click.option("-M", "max_rank", metavar="N", help="Max rank: score only the top N of each query (trec_eval -M).")
@click.option("-n", "no_summary", is_flag=True, help="No summary rows (trec_eval -n); use with -q.")
@click.option("--ties", metavar="RULE", help=f"Tie rule: {', '.join(TIES)} (default trec: doc_id descending).")
@click.option("--gain", metavar="GAIN",
              help="Gain of a grade: linear (default), exp (2^g-1), raw, or a map like 1=3,2=9.")
@click.option("--empty", metavar="POLICY", help=f"Queries with no relevant docs: {', '.join(EMPTY)} (default zero).")
@click.option("--unjudged", metavar="POLICY",
              help=f"Unjudged retrieved docs: {', '.join(UNJUDGED)} (default nonrelevant).")
@click.option("--duplicates", metavar="POLICY",
              help=f"A doc twice in a query: {', '.join(DUPLICATES)} (default error).")
@click.option("--query-col", metavar="COL", help="Column holding the query id (default query_id).")
@click.option("--doc-col", metavar="COL", help="Column holding the document id (default doc_id).")
@click.option("--score-col", metavar="COL", help="Column holding the run's score (default score).")
@click.option("--relevance-col", metavar="COL", help="Column holding the qrels grade (default relevance).")
@click.option("--log", "log", metavar="FILE",
              help="Score one impression log (query, doc, score and label on each row) instead of QRELS RUN.")
@click.option("--label", metavar="COL", help="With --log: the column holding the judgment (e.g. clicked).")
@click.option("--run-format", metavar="FORMAT",
              help=f"Read runs (or the --log) as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--qrels-format", metavar="FORMAT",
              help=f"Read the qrels as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@output_options
@engine_options
@handle_errors
def eval_command(qrels, runs, measures, per_query, complete, rel_level, max_rank, no_summary, ties, gain,
                 empty, unjudged, duplicates, query_col, doc_col, score_col, relevance_col, log, label,
                 run_format, qrels_format, fmt, output, quiet, threads, memory_limit, temp_dir):
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
        if label is not None:
            problems.add("--label only applies with --log FILE")
        if qrels is None:
            problems.add("missing QRELS and RUN: give the qrels file, then one or more run files "
                         "(or --log FILE --label COL)")
        elif not runs:
            problems.add(f"missing RUN: give one or more run files after the qrels {qrels}")

    # conventions
    conventions: dict[str, Any] = {}
    conventions["ties"] = problems.choice("--ties", ties, TIES)
    conventions["empty"] = problems.choice("--empty", empty, EMPTY)
    conventions["unjudged"] = problems.choice("--unjudged", unjudged, UNJUDGED)
    conventions["duplicates"] = problems.choice("--duplicates", duplicates, DUPLICATES)
    conventions["rel_level"] = problems.number("-l", rel_level)
    conventions["max_rank"] = problems.integer("-M", max_rank)
    if gain is not None:
        gain_value = _parse_gain(problems, gain)
        if isinstance(gain_value, dict):
            conventions["gain_map"] = gain_value
        else:
            conventions["gain"] = gain_value
    if complete:
        conventions["complete"] = True
    conventions = {key: value for key, value in conventions.items() if value is not None}
    run_fmt = problems.choice("--run-format", run_format, INPUT_FORMATS)
    qrels_fmt = problems.choice("--qrels-format", qrels_format, INPUT_FORMATS)

    if no_summary and not per_query:
        problems.add("-n drops the summary and without -q there are no per-query rows to print; add -q")

    # measures: every bad one reported at once
    from duckrank.errors import MeasureError
    from duckrank.measures import expand_measures, parse_measure

    requested = list(measures) or DEFAULT_MEASURES
    parsed = []
    seen = set()
    try:
        spellings = expand_measures(requested)
    except MeasureError as error:
        problems.add(_clean_message(error))
        spellings = []
    for spelling in spellings:
        if spelling in seen:
            continue
        seen.add(spelling)
        try:
            parsed.append(parse_measure(spelling))
        except MeasureError as error:
            problems.add(_clean_message(error))

    # output and engine
    fmt = _pick_format(problems, fmt, output, output.FORMATS if False else _FORMATS)
    inputs = [log] if log is not None else [qrels, *runs]
    _check_output(problems, fmt, output, [source for source in inputs if source])
    engine = _check_engine(problems, threads, memory_limit, temp_dir)
    problems.raise_if_any()

    # compute
    from duckrank.evaluation import compute

    with_runid = not measures or any(m.strip().lower() == "all_trec" for m in measures)
    kwargs: dict[str, Any] = dict(
        log=log, label=label, run_format=_facade_format(run_fmt, "run"),
        qrels_format=_facade_format(qrels_fmt, "qrels"), query_col=query_col, doc_col=doc_col,
        score_col=score_col, relevance_col=relevance_col, **engine, **conventions,
    )
    kwargs = {key: value for key, value in kwargs.items() if value is not None}
    spellings = [m.spelling for m in parsed]
    results = compute(qrels, list(runs), spellings, **kwargs)
    with Progress(results.con, "scoring", _progress_enabled(quiet)):
        _write_eval(results, parsed, fmt, output, per_query=per_query, summary=not no_summary,
                    with_runid=with_runid)


_FORMATS = output.FORMATS


def _facade_format(fmt: str | None, kind: str) -> str | None:
    if fmt == "trec":
        return f"trec_{kind}"
    return fmt


def _parse_gain(problems: Problems, text: str) -> str | dict[float, float] | None:
    if text.lower() in GAINS:
        return text.lower()
    if "=" in text:
        gains: dict[float, float] = {}
        for pair in text.split(","):
            grade, _, gain = pair.partition("=")
            try:
                gains[float(grade)] = float(gain)
            except ValueError:
                problems.add(f"--gain map must be grade=gain pairs such as 1=3,2=9; got {text!r}")
                return None
        return gains
    problems.add(f"--gain must be one of {', '.join(GAINS)} or a map such as 1=3,2=9; got {text!r}")
    return None


# The eval output: one row per (run, query or 'all', measure), ordered as trec_eval prints it:
# per run, every query's block (queries in id order), then the summary block.
_EVAL_SQL = """
WITH measures AS (
    SELECT unnest($spellings) AS spelling, unnest($printed) AS metric,
           unnest($per_query_ok) AS per_query_ok, unnest(range(len($spellings))) AS measure_order
),
runs AS (
    SELECT unnest($runs) AS run, unnest(range(len($runs))) AS run_order
),
rows AS (
    SELECT run, CAST(query_id AS VARCHAR) AS query_id, measure, value, 0 AS part,
           dense_rank() OVER (ORDER BY query_id) AS query_order
    FROM {per_query} WHERE $with_per_query
    UNION ALL
    SELECT run, 'all' AS query_id, measure, value, 1 AS part, 0 AS query_order
    FROM {summary} WHERE $with_summary
)
SELECT {run_column} rows.query_id, measures.metric, CAST(rows.value AS DOUBLE) AS value
FROM rows
JOIN measures ON rows.measure = measures.spelling
JOIN runs ON rows.run = runs.run
WHERE rows.part = 1 OR measures.per_query_ok
ORDER BY runs.run_order, rows.part, rows.query_order, measures.measure_order
"""


def _integer_measure(measure) -> bool:
    return measure.summary in ("sum", "count")


def _write_eval(results, measures, fmt: str, path: str | None, *, per_query: bool, summary: bool,
                with_runid: bool) -> None:
    con = results.con
    run_names = [str(run) for run in results.runs]
    several = len(run_names) > 1
    results.summary.create_view("duckrank_cli_summary", replace=True)
    results.per_query.create_view("duckrank_cli_per_query", replace=True)
    sql = _EVAL_SQL.format(
        per_query="duckrank_cli_per_query", summary="duckrank_cli_summary",
        run_column="rows.run," if several else "",
    )
    params = {
        "spellings": [m.spelling for m in measures],
        "printed": [m.printed_name for m in measures],
        "per_query_ok": [bool(getattr(m.metric, "per_query", True)) and m.summary != "log" for m in measures],
        "runs": run_names,
        "with_per_query": bool(per_query),
        "with_summary": bool(summary),
    }
    columns = (["run"] if several else []) + ["query_id", "metric", "value"]
    integer_metrics = {m.printed_name for m in measures if _integer_measure(m)}

    if fmt == "parquet":
        if path in (None, "-"):
            with output.atomic_path(os.path.join(_scratch_dir(), "duckrank-stdout.parquet")) as tmp:
                con.execute(f"COPY ({sql}) TO $path (FORMAT parquet)", {**params, "path": tmp}).fetchall()
                output.copy_to_stdout(tmp)
                os.unlink(tmp)
                open(tmp, "w").close()  # atomic_path renames it; leave an empty file to rename
            return
        with output.atomic_path(path) as tmp:
            con.execute(f"COPY ({sql}) TO $path (FORMAT parquet)", {**params, "path": tmp}).fetchall()
        return

    cursor = con.execute(sql, params)

    def rows() -> Iterator[tuple]:
        while batch := cursor.fetchmany(10_000):
            yield from batch

    with output.text_output(path) as stream:
        if fmt == "trec":
            _write_trec(stream, rows(), several, integer_metrics, run_names, results, with_runid and summary)
        elif fmt in output.MACHINE_FORMATS:
            output.write_machine(fmt, columns, rows(), stream)
        else:
            _write_eval_human(fmt, stream, rows(), several, per_query, integer_metrics, run_names)


def _scratch_dir() -> str:
    import tempfile

    return tempfile.gettempdir()


def _write_trec(stream, rows, several: bool, integer_metrics: set[str], run_names: list[str], results,
                with_runid: bool) -> None:
    runids = _run_ids(results, run_names) if with_runid else {}
    current_run = None
    in_summary = False
    for row in rows:
        run, query_id, metric, value = row if several else (run_names[0], *row)
        if run != current_run:
            current_run, in_summary = run, False
        if query_id == "all" and not in_summary:
            in_summary = True
            if with_runid:
                stream.write(output.trec_line("runid", "all", runids.get(run, run)))
        stream.write(output.trec_line(metric, query_id, value, metric in integer_metrics))


def _run_ids(results, run_names: list[str]) -> dict[str, str]:
    """trec_eval prints the run_id column's value on its runid line; fall back to the run's name."""
    finder = getattr(results, "run_ids", None)
    if isinstance(finder, dict):
        return {str(k): str(v) for k, v in finder.items()}
    return {name: name for name in run_names}


def _write_eval_human(fmt, stream, rows, several, per_query, integer_metrics, run_names) -> None:
    # Pivot runs into columns: one row per (query, metric), one value column per run.
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        run, query_id, metric, value = row if several else (run_names[0], *row)
        table.setdefault((query_id, metric), {})[run] = value
    value_columns = run_names if several else ["value"]
    columns = (["query_id"] if per_query else []) + ["metric"] + value_columns
    align = (["l"] if per_query else []) + ["l"] + ["r"] * len(value_columns)
    cells = []
    for (query_id, metric), values in table.items():
        integer = metric in integer_metrics
        shown = [output.display_value(values.get(run), integer) for run in run_names]
        cells.append(([query_id] if per_query else []) + [metric] + shown)
    output.write_human(fmt, columns, cells, stream, align)


# ---------------------------------------------------------------------------------------------
# metrics


@main.command("metrics", context_settings=CONTEXT_SETTINGS)
@click.argument("names", nargs=-1, metavar="[NAME ...]")
@output_options
@handle_errors
def metrics_command(names, fmt, output, quiet):
    """List every measure: definition, spellings, options with defaults, and the SQL file.

    Read from the SQL catalog, so it is always what the library computes. NAME filters the
    list (a metric name or any spelling, e.g. `duckrank metrics ndcg P.5`).
    """
    problems = Problems()
    allowed = tuple(f for f in output.FORMATS if f != "trec")
    fmt = _pick_format(problems, fmt, output, allowed)
    _check_output(problems, fmt, output, [])
    problems.raise_if_any()

    from duckrank.measures import catalog

    entries = list(catalog())
    if names:
        entries = _filter_catalog(entries, names)
    _write_catalog(entries, fmt, output)


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
            bad.append(_clean_message(error))
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
        target = path if path not in (None, "-") else None
        if target is None:
            import tempfile

            with tempfile.TemporaryDirectory() as folder:
                tmp = os.path.join(folder, "metrics.parquet")
                con.execute("COPY catalog TO $path (FORMAT parquet)", {"path": tmp}).fetchall()
                output.copy_to_stdout(tmp)
            return
        with output.atomic_path(target) as tmp:
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
@click.option("-o", "--output", metavar="FILE", help="Write to FILE (atomically) instead of stdout.")
@handle_errors
def sql_command(output_path):
    """Print the whole macro library as SQL.

    \b
    Install it in any DuckDB database:
      duckrank sql | duckdb my.db
    then call e.g. SELECT * FROM duckrank.ndcg('qrels.parquet', 'run.parquet', k := 10).
    """


def _sql_impl(output_path: str | None) -> None:
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
        _check_output(problems, "convert", target, [source])
    engine = _check_engine(problems, threads, memory_limit, temp_dir)
    problems.raise_if_any()

    from duckrank import inputs
    from duckrank._library import connect

    con = connect()
    _apply_engine(con, engine)
    if kind is None:
        kind = _detect_kind(inputs, con, source, from_fmt)
    columns = {
        key: value for key, value in {
            "query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col,
        }.items() if value is not None
    }
    with Progress(con, "converting", _progress_enabled(quiet)):
        view = inputs.read_table(con, source, kind, fmt=_facade_format(from_fmt, kind),
                                 columns=columns or None)
        with output.atomic_path(target) as tmp:
            inputs.write_table(con, view, tmp, _facade_format(to_fmt, kind))


def _convert_format_from_extension(path: str) -> str:
    guessed = output.format_from_extension(path)
    return guessed if guessed in CONVERT_FORMATS else "trec"


def _detect_kind(inputs, con, source: str, fmt: str | None) -> str:
    detected = _facade_format(fmt, "run") if fmt else inputs.detect_format(source)
    if detected == "trec_qrels":
        return "qrels"
    if detected == "trec_run":
        return "run"
    from duckrank.errors import InputError

    raise InputError(
        f"{source}: cannot tell whether it is a run or qrels from its format alone; pass --kind run or "
        "--kind qrels"
    )


def _main_sql_fix() -> None:  # pragma: no cover - placeholder removed below
    pass
