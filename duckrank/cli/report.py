"""`duckrank report QRELS RUN [RUN ...] -o report.html`: one self-contained HTML page comparing runs.

The command maps onto duckrank.reporting.report; this module parses options (reporting every bad
one at once) and leaves the numbers to duckrank.compare and duckrank.compute. `duckrank plot`
(duckrank.cli.plot) shares its options. Both need the extra duckrank[plot] (matplotlib).

Exit status: 0 success, 1 a data problem, 2 a usage problem (also: the extra is not installed).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shlex
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import click

from duckrank import registry
from duckrank.cli.common import (
    CONTEXT_SETTINGS,
    INPUT_FORMATS,
    Problems,
    check_output,
    check_standard_input,
    facade_format,
)
from duckrank.cli.failures import clean_message, handle_errors
from duckrank.cli.options import (
    check_engine,
    column_options,
    convention_options,
    engine_options,
    read_conventions,
    read_measures,
    read_statistics,
    statistics_options,
)


def require_plot_extra() -> None:
    """Exit 2 with one line when matplotlib is missing, before reading any input."""
    if importlib.util.find_spec("matplotlib") is None:
        click.echo(f"Error: {registry.PLOT_EXTRA_HINT}", err=True)
        raise click.exceptions.Exit(2)


def report_options(function: Callable) -> Callable:
    """What report and plot share: measures, baseline, --by, the statistics, conventions, columns,
    input formats and engine settings; the command receives them as one dict, `request`."""

    @functools.wraps(function)
    def command(*args, **kwargs):
        names = ("measures", "baseline", "segments", "permutations", "bootstrap", "seed", "confidence", "alpha",
                 "correction", "test", "conventions", "query_col", "doc_col", "score_col", "relevance_col", "literal",
                 "run_format", "qrels_format", "threads", "memory_limit", "temp_dir")
        return function(*args, request={name: kwargs.pop(name) for name in names}, **kwargs)

    for decorate in reversed([
        click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
                     help=f"A headline measure, repeatable (a mean of per-query values): map, ndcg_cut.10, "
                          f"nDCG@10, P.5,10. Default: {', '.join(registry.COMPARE_MEASURES)}. A measure with a "
                          "cutoff (ERR@20) also gets a curve over k."),
        click.option("--baseline", metavar="RUN", help="The run the others are compared with: its path, file name "
                                                       "or stem (default: the first run)."),
        click.option("--by", "segments", metavar="COL",
                     help="Also show the per-query distributions per value of COL, a column of the runs."),
        statistics_options("marks each mean with the letters of the runs it beats"),
        convention_options(also={"complete": ("--complete",)}),
        column_options,
        click.option("--run-format", metavar="FORMAT",
                     help=f"Read runs as {', '.join(INPUT_FORMATS)} instead of detecting it."),
        click.option("--qrels-format", metavar="FORMAT",
                     help=f"Read the qrels as {', '.join(INPUT_FORMATS)} instead of detecting it."),
        engine_options,
    ]):
        command = decorate(command)
    return command


def read_request(problems: Problems, request: dict[str, Any], inputs: list[str]) -> tuple[list[str], dict[str, Any]]:
    """The headline measures and duckrank.reporting.report's keyword arguments; bad values go to
    `problems` (all reported at once)."""
    settings = read_statistics(problems, request)
    conventions = read_conventions(problems, request["conventions"])
    run_fmt = problems.choice("--run-format", request["run_format"], INPUT_FORMATS)
    qrels_fmt = problems.choice("--qrels-format", request["qrels_format"], INPUT_FORMATS)
    engine = check_engine(problems, request["threads"], request["memory_limit"], request["temp_dir"])
    check_standard_input(problems, inputs[0], inputs[1:])

    spellings = read_measures(problems, request["measures"])
    options = {key: value for key, value in {**settings, **conventions, **engine}.items() if value is not None}
    options.update({key: value for key, value in {
        "run_format": facade_format(run_fmt, "run"), "qrels_format": facade_format(qrels_fmt, "qrels"),
        "query_col": request["query_col"], "doc_col": request["doc_col"], "score_col": request["score_col"],
        "relevance_col": request["relevance_col"], "baseline": request["baseline"], "by": request["segments"],
        "literal": request["literal"],
    }.items() if value is not None})
    return spellings, options


def check_writable(problems: Problems, path: str) -> None:
    """A file can be made in -o's folder: probed before the evaluation, which can take minutes on a
    large run, rather than found out after it."""
    folder = os.path.dirname(path) or "."
    if path == "-" or not os.path.isdir(folder):
        return  # stdout; a missing folder is check_output's
    try:
        fd, probe = tempfile.mkstemp(prefix=".duckrank-probe-", dir=folder)
    except OSError as error:
        problems.add(f"-o {path}: cannot write in {folder} ({error.strerror}); choose another folder")
        return
    os.close(fd)
    os.unlink(probe)


def command_line() -> str:
    """The command as typed, for the report's record of what produced it."""
    return shlex.join(["duckrank", *sys.argv[1:]])


@click.command("report", context_settings=CONTEXT_SETTINGS)
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]")
@click.option("-o", "--output", "output_path", metavar="FILE", required=True,
              help="The HTML file to write (atomically: nothing is left behind on failure); - for stdout.")
@report_options
@click.option("--quiet", is_flag=True, help="No notes on stderr.")
@handle_errors
def report_command(qrels, runs, output_path, request, quiet):
    """Write one self-contained HTML page comparing runs: the summary table (compare's CIs, adjusted
    p-values, W/T/L), precision-recall and measure@k curves, per-query wins and losses, per-query
    distributions (per segment with --by) and the data's shape. It opens offline.

    \b
    Examples:
      duckrank report qrels.parquet bm25.parquet dense.parquet -o report.html
      duckrank report qrels.txt a.txt b.txt c.txt --baseline b -m ndcg_cut.10 -m ERR@20 -o r.html
      duckrank report qrels.parquet a.parquet b.parquet --by country -o report.html

    One run gives the page without the comparison. Needs the extra: pip install 'duckrank[plot]'.
    """
    require_plot_extra()
    problems = Problems()
    spellings, options = read_request(problems, request, [qrels, *runs])
    check_output(problems, "html", output_path, [qrels, *runs], request["literal"])
    check_writable(problems, output_path)
    problems.raise_if_any()

    from duckrank.reporting import report

    result = report(qrels, list(runs), None, spellings, command=command_line(), **options)
    result.save(output_path)
    if not quiet:
        for note in result.data.notes:
            click.echo(f"Note: {clean_message(note)}", err=True)
