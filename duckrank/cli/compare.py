"""`duckrank compare QRELS RUN1 RUN2 [RUN ...]`: significance tests between runs.

The command maps onto duckrank.comparison.compare; this module parses options (reporting every bad
one at once), and formats what the SQL computed with the shared writers in duckrank._output.

Exit status: 0 success, 1 a data problem (duckrank.DuckrankError), 2 a usage problem
(duckrank.MeasureError, duckrank.OptionError, a bad option value).
"""

from __future__ import annotations

import math
from typing import Any

import click

from duckrank import _output as output
from duckrank import registry
from duckrank.cli.common import (
    CONTEXT_SETTINGS,
    INPUT_FORMATS,
    NON_TREC_FORMATS,
    Problems,
    Progress,
    binary_target,
    check_output,
    check_standard_input,
    facade_format,
    pick_format,
    progress_enabled,
)
from duckrank.cli.failures import clean_message, handle_errors
from duckrank.cli.options import (
    check_engine,
    column_options,
    convention_options,
    engine_options,
    output_options,
    read_conventions,
    read_measures,
    read_statistics,
    statistics_options,
)

FORMATS = NON_TREC_FORMATS


@click.command("compare", context_settings=CONTEXT_SETTINGS)
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, metavar="RUN1 RUN2 [RUN ...]")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help=f"A measure to compare, repeatable: map, ndcg_cut.10, nDCG@10, P.5,10 (trec_eval's comma "
                   f"lists). Default: {', '.join(registry.COMPARE_MEASURES)}.")
@click.option("--baseline", metavar="RUN", help="The run the others are compared with: its path, file name or "
                                                "stem (default: the first run).")
@statistics_options("marks, in markdown and LaTeX, the runs each run beats with their letters")
@click.option("--by", "segments", multiple=True, metavar="COL",
              help="Compare per value of COL, a column of the runs such as country or device; repeatable.")
@convention_options(also={"complete": ("--complete",)},
                    notes={"complete": "Without it, runs are compared on the queries every run answered."})
@column_options
@click.option("--run-format", metavar="FORMAT",
              help=f"Read runs as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--qrels-format", metavar="FORMAT",
              help=f"Read the qrels as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@output_options(FORMATS, about="Machine formats keep full precision and send notes to stderr.",
                quiet="No notes on stderr.")
@engine_options
@handle_errors
def compare_command(qrels, runs, measures, baseline, permutations, bootstrap, seed, confidence, alpha, correction,
                    test, segments, conventions, query_col, doc_col, score_col, relevance_col, literal, run_format,
                    qrels_format, fmt, output_path, quiet, threads, memory_limit, temp_dir):
    """Compare runs against a baseline: mean, difference, bootstrap CIs, paired t-test and
    randomization test (Holm or BH adjusted), wins/ties/losses and effect size per measure.

    \b
    Examples:
      duckrank compare qrels.txt bm25.txt dense.txt -m map -m ndcg_cut.10
      duckrank compare qrels.parquet a.parquet b.parquet c.parquet --baseline b --correction bh
      duckrank compare qrels.parquet a.parquet b.parquet -m P.10 --by country -f jsonl -o cmp.jsonl
      duckrank compare qrels.txt a.txt b.txt c.txt d.txt --test tukey -f latex

    Runs are compared on the queries every run answered (the queries left out are listed);
    --complete scores a missing query as 0 instead. Exit status: 0 success, 1 a data
    problem, 2 a usage problem.
    """
    problems = Problems()
    if not runs:  # one run file may hold several runs in its run_id column
        problems.add("compare needs QRELS and at least two runs (RUN1 RUN2 [RUN ...])")
    settings = read_statistics(problems, {"permutations": permutations, "bootstrap": bootstrap, "seed": seed,
                                          "confidence": confidence, "alpha": alpha, "correction": correction,
                                          "test": test})
    conventions = read_conventions(problems, conventions)
    run_fmt = problems.choice("--run-format", run_format, INPUT_FORMATS)
    qrels_fmt = problems.choice("--qrels-format", qrels_format, INPUT_FORMATS)
    engine = check_engine(problems, threads, memory_limit, temp_dir)

    spellings = read_measures(problems, measures)
    fmt = pick_format(problems, fmt, output_path, FORMATS)
    check_output(problems, fmt, output_path, [qrels, *runs], literal)
    check_standard_input(problems, qrels, runs)
    problems.raise_if_any()

    from duckrank._library import connect
    from duckrank.comparison import compare as compare_runs

    options = {key: value for key, value in {**settings, **conventions, **engine}.items() if value is not None}
    options.update({key: value for key, value in {
        "run_format": facade_format(run_fmt, "run"), "qrels_format": facade_format(qrels_fmt, "qrels"),
        "query_col": query_col, "doc_col": doc_col, "score_col": score_col, "relevance_col": relevance_col,
        "literal": literal,
    }.items() if value is not None})
    con = connect()
    try:
        # a million replicates take a while: show progress (Ctrl-C stops it, leaving no output)
        with Progress(con, "comparing", progress_enabled(quiet)):
            result = compare_runs(qrels, list(runs), spellings, baseline=baseline, by=list(segments), con=con,
                                  **options)
            write(result, fmt, output_path, quiet=quiet)
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------
# output


def write(result, fmt: str, path: str | None, *, quiet: bool = False) -> None:
    """Write a Comparison in `fmt` to `path` (atomically) or stdout."""
    if fmt == "parquet":
        with binary_target(path) as tmp:
            result.relation.write_parquet(tmp)
        _notes_to_stderr(result, quiet)
        return
    relation = result.relation
    columns = relation.columns
    rows = relation.fetchall()
    with output.text_output(path) as stream:
        if fmt in output.MACHINE_FORMATS:
            output.write_machine(fmt, columns, rows, stream)
        else:
            _write_human(result, fmt, [dict(zip(columns, row)) for row in rows], stream)
    if fmt in output.MACHINE_FORMATS:
        _notes_to_stderr(result, quiet)


def _notes_to_stderr(result, quiet: bool) -> None:
    if not quiet:
        for note in result.notes:
            click.echo(f"Note: {clean_message(note)}", err=True)


def _number(value: Any, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:+.4f}" if signed else f"{value:.4f}"


def _p(value: Any) -> str:
    if value is None:
        return ""
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _interval(low: Any, high: Any, signed: bool = False) -> str:
    if low is None or high is None:
        return ""
    return f"[{_number(low, signed)}, {_number(high, signed)}]"


def _mean_cell(mean: Any, marks: str, fmt: str) -> str:
    """The mean with the labels of the runs it beats significantly as a superscript, as ranx writes them."""
    text = _number(mean)
    if not marks:
        return text
    if fmt == "latex":
        return output.Latex(f"{text}$^{{{marks}}}$")
    return f"{text}<sup>{marks}</sup>" if fmt == "markdown" else f"{text}^{marks}"


def _write_human(result, fmt: str, rows: list[dict[str, Any]], stream) -> None:
    from duckrank.comparison import beaten_letters, run_letters

    settings = result.settings
    tukey = settings["test"] == "tukey"
    letters = run_letters(result.runs) if tukey else {}
    level = f"{settings['confidence'] * 100:g}%"
    by = list(result.by)
    columns = [*by, "metric", *(["#"] if tukey else []), "run", "mean", f"mean {level} CI", "diff",
               f"diff {level} CI", "change", "p (t)", "p (rand)", "p (Tukey)" if tukey else "p adj", "W/T/L", "effect"]
    align = ["l"] * (len(by) + 2 + tukey) + ["r"] * 10
    cells = []
    for row in rows:
        diff = _number(row["diff"], signed=True)
        if row["significant"]:
            diff += "*"
        change = "" if row["relative_change"] is None else f"{row['relative_change'] * 100:+.1f}%"
        record = "" if row["wins"] is None else f"{row['wins']}/{row['ties']}/{row['losses']}"
        run = f"{row['run']} (baseline)" if row["is_baseline"] else str(row["run"])
        mean = _mean_cell(row["mean"], beaten_letters(row["beats"], letters), fmt) if tukey else _number(row["mean"])
        cells.append([*("" if row[b] is None else str(row[b]) for b in by), str(row["metric"]),
                      *([letters[row["run"]]] if tukey else []), run,
                      mean, _interval(row["mean_ci_low"], row["mean_ci_high"]), diff,
                      _interval(row["ci_low"], row["ci_high"], signed=True), change, _p(row["p_ttest"]),
                      _p(row["p_randomization"]), _p(row["p_adjusted"]),
                      record, _number(row["effect_size"], signed=True)])
    output.write_human(fmt, columns, cells, stream, align)
    if tukey:
        family = f"Tukey's HSD over all {len(result.runs)} runs"
        marks = (f"; superscripts: the letters (#) of the runs a mean beats at p < {settings['alpha']:g} by "
                 "Tukey's HSD")
    else:
        comparisons = sum(1 for row in rows if row["p_adjusted"] is not None)
        family = (f"{registry.COMPARE_TESTS[settings['test']]}, {registry.COMPARE_CORRECTIONS[settings['correction']]}"
                  f" over {comparisons} comparison{'' if comparisons == 1 else 's'}")
        marks = ""
    legend = (f"* {'p' if tukey else 'adjusted p'} < {settings['alpha']:g} ({family}){marks}; baseline "
              f"{result.baseline}; CIs: percentile bootstrap, "
              f"{settings['bootstrap']} replicates; randomization test: {settings['permutations']} sign flips; "
              f"effect = diff / sd of per-query differences; seed {settings['seed']}")
    notes = [f"Note: {clean_message(note)}" for note in result.notes]
    if fmt == "latex":
        stream.write("\\par\\smallskip{\\footnotesize " + output.latex_escape(legend).replace(
            f"p < {settings['alpha']:g}", f"$p < {settings['alpha']:g}$") + "}\n")
        for note in notes:
            stream.write(f"% {note}\n")
    elif fmt == "markdown":
        stream.write("\n" + legend.replace("*", "\\*", 1) + "\n")
        for note in notes:
            stream.write(f"\n{note}\n")
    else:
        stream.write("\n" + legend + "\n")
        for note in notes:
            stream.write(f"{note}\n")
