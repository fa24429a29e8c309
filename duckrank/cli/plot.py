"""`duckrank plot KIND QRELS RUN [RUN ...] -o fig.svg`: one of the report's figures, as SVG, PNG or PDF.

The figure is duckrank.reporting.Report.plot(KIND) over the same numbers the report shows; the
options are the report's (duckrank.cli.report). Needs the extra duckrank[plot] (matplotlib).

Exit status: 0 success, 1 a data problem, 2 a usage problem (also: the extra is not installed).
"""

from __future__ import annotations

from pathlib import Path

import click

from duckrank.cli.common import CONTEXT_SETTINGS, Problems, check_output
from duckrank.cli.failures import handle_errors
from duckrank.cli.report import check_writable, command_line, read_request, report_options, require_plot_extra
from duckrank.registry import FIGURE_FORMATS, REPORT_FIGURES

EXTENSIONS = ", ".join(f".{fmt}" for fmt in FIGURE_FORMATS[:-1]) + f" or .{FIGURE_FORMATS[-1]}"


@click.command("plot", context_settings=CONTEXT_SETTINGS)
@click.argument("kind", metavar="KIND")
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN [RUN ...]")
@click.option("-o", "--output", "output_path", metavar="FILE", required=True,
              help=f"The figure to write: {EXTENSIONS} (atomically).")
@click.option("-f", "--format", "fmt", metavar="FORMAT",
              help=f"One of {', '.join(FIGURE_FORMATS)}, instead of what -o FILE's extension says.")
@report_options
@handle_errors
def plot_command(kind, qrels, runs, output_path, fmt, request):
    """Draw one figure of the report. KIND is one of:

    \b
      pr            interpolated precision-recall curves (11 points, and every 0.05 of recall)
      cutoff        P, recall, nDCG (and each -m measure with a cutoff) against k, log axis
      per-query     each query's difference from the baseline, sorted (the win/loss chart)
      diff          each run's mean difference from the baseline with its bootstrap interval
      distribution  per-query values of each measure, one box per run
      segments      the same per value of --by COL

    \b
    Examples:
      duckrank plot pr qrels.parquet bm25.parquet dense.parquet -o pr.svg
      duckrank plot per-query qrels.txt a.txt b.txt -m ndcg_cut.10 -o wins.pdf
      duckrank plot segments qrels.parquet a.parquet b.parquet --by country -o seg.png
    """
    require_plot_extra()
    problems = Problems()
    chosen = kind.lower()
    if chosen not in REPORT_FIGURES:
        problems.add(f"KIND must be one of {', '.join(REPORT_FIGURES)}; got {kind!r}")
    if chosen == "segments" and not request["segments"]:
        problems.add("the segments figure needs --by COL")
    spellings, options = read_request(problems, request, [qrels, *runs])
    figure_format = problems.choice("--format", fmt, FIGURE_FORMATS) if fmt else (
        Path(output_path).suffix.lower().lstrip(".") or None)
    if figure_format not in FIGURE_FORMATS and not fmt:
        problems.add(f"-o {output_path}: the extension must be {EXTENSIONS} (or give --format)")
    check_output(problems, "figure", output_path, [qrels, *runs], request["literal"])
    if output_path == "-":
        problems.add(f"-o must name a file ({EXTENSIONS})")
    check_writable(problems, output_path)
    problems.raise_if_any()

    from duckrank.reporting import report

    # only the diff figure and the win/loss chart's W/T/L show compare's statistics
    result = report(qrels, list(runs), None, spellings, command=command_line(),
                    statistics=chosen in ("diff", "per-query"), **options)
    result.plot(chosen).save(output_path, figure_format)
