"""`duckrank fuse RUN RUN [RUN ...] --method NAME -o OUT`: several runs fused into one, over
duckrank.fusion (the methods and their parameters are duckrank.registry.FUSION_METHODS)."""

from __future__ import annotations

import click

from duckrank import _output as output
from duckrank.cli.common import (
    CONTEXT_SETTINGS,
    Problems,
    TABLE_FORMATS,
    check_output,
    facade_format,
    table_format_from_extension,
)
from duckrank.cli.failures import clean_message, flag, handle_errors
from duckrank.cli.options import column_options
from duckrank.errors import Option
from duckrank.registry import FUSION_METHODS, FUSION_NORMS, FUSION_PARAMS

PARAMETERS = sorted({p for method in FUSION_METHODS.values() for p in method.given if p != "weights"})


@click.command("fuse", context_settings=CONTEXT_SETTINGS)
@click.argument("runs", nargs=-1, metavar="RUN RUN [RUN ...]")
@click.option("--method", metavar="NAME", required=True,
              help=f"The fusion method, as ranx names it: {', '.join(FUSION_METHODS)} (comb_sum, combmnz, ... "
                   "too).")
@click.option("--norm", metavar="NAME",
              help=f"How each run's scores are normalised per query first: {', '.join(FUSION_NORMS)}. "
                   f"Default: {FUSION_PARAMS['norm'].default}, as ranx.")
@click.option("--weights", metavar="W1,W2,...", help="One weight per run, in the order of the runs (wsum, wmnz, "
                                                     "mixed, w_bordafuse, w_condorcet).")
@click.option("--param", "params", multiple=True, metavar="NAME=VALUE",
              help=f"A parameter of the method, repeatable: {', '.join(PARAMETERS)} (k=60 for rrf).")
@click.option("--qrels", metavar="FILE", help="Judgments the method learns from (posfuse, probfuse, segfuse, "
                                              "slidefuse, bayesfuse, mapfuse) or --optimize scores on.")
@click.option("--optimize", metavar="METRIC",
              help="Choose the method's parameters (weights, k, gamma, ...) on --qrels by METRIC (e.g. ndcg@10) "
                   "over ranx.optimize_fusion's grid, print them, and fuse with them.")
@click.option("-o", "--output", "target", metavar="FILE", required=True,
              help="Write the fused run to FILE (atomically; never over an input).")
@click.option("--to", "to_format", metavar="FORMAT",
              help=f"Write FILE as {', '.join(TABLE_FORMATS)}. Default: from FILE's extension (.parquet .csv .tsv "
                   ".jsonl; anything else is TREC text).")
@column_options
@handle_errors
def fuse_command(runs, method, norm, weights, params, qrels, optimize, target, to_format, query_col, doc_col,
                 score_col, relevance_col, literal):
    """Fuse several runs into one run with one of ranx's fusion methods.

    \b
      duckrank fuse bm25.parquet dense.parquet --method rrf -o fused.parquet
      duckrank fuse a.txt b.txt c.txt --method wsum --weights 0.5,0.3,0.2 -o fused.txt
      duckrank fuse a.txt b.txt --method wsum --optimize ndcg@10 --qrels qrels.txt -o fused.txt
    """
    from duckrank.errors import OptionError
    from duckrank.fusion import fusion_method

    problems = Problems()
    if len(runs) < 2:
        problems.add(f"fuse needs at least two runs; got {len(runs)}")
    try:
        chosen = fusion_method(method)
    except OptionError as error:
        problems.add(clean_message(error))
        chosen = None
    weight_list = _weights(problems, weights)
    values = _params(problems, params)
    if optimize is not None and qrels is None:
        problems.add("--optimize scores the trials on judgments: add --qrels FILE")
    if optimize is not None and weights is not None:
        problems.add("--weights and --optimize both set the weights: drop one")
    to_fmt = problems.choice("--to", to_format, TABLE_FORMATS) if to_format else table_format_from_extension(target)
    check_output(problems, "fuse", target, [*runs, *([qrels] if qrels else [])], literal)
    if target == "-":
        problems.add("-o must be a file path")
    problems.raise_if_any()

    from duckrank import fusion, inputs

    options = {"query_col": query_col, "doc_col": doc_col, "score_col": score_col, "relevance_col": relevance_col,
               "literal": literal}
    norm = FUSION_PARAMS["norm"].default if norm is None else norm
    if optimize is not None:
        chosen_params = _optimized(fusion, qrels, list(runs), chosen.name, norm, optimize, options)
        weight_list = chosen_params.pop("weights", weight_list)
        values = {**values, **chosen_params}
    try:
        # --qrels with --optimize only scores the trials of a method that learns nothing from it
        learning_qrels = qrels if chosen.trained or optimize is None else None
        con, table = fusion.fused_table(list(runs), chosen.name, norm, weight_list, learning_qrels, **options,
                                        **values)
    except OptionError as error:
        raise OptionError(clean_message(error, _flag)) from None
    with output.atomic_path(target) as tmp:
        inputs.write_table(con, table, tmp, facade_format(to_fmt, "run"))


def _optimized(fusion, qrels: str, runs: list[str], method: str, norm: str, metric: str, options: dict) -> dict:
    """The parameters optimize_fusion chooses, said on stderr."""
    chosen = fusion.optimize_fusion(qrels, runs, method, norm, metric, **options)
    shown = ", ".join(f"{name}={','.join(map(str, value)) if isinstance(value, list) else value}"
                      for name, value in chosen.items()) or "nothing to choose (learnt from --qrels)"
    click.echo(f"duckrank fuse: {method} on {metric}: {shown}", err=True)
    return dict(chosen)


def _weights(problems: Problems, text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(part) for part in text.split(",")]
    except ValueError:
        problems.add(f"--weights must be numbers separated by commas, one per run; got {text!r}")
        return None


def _params(problems: Problems, given: tuple[str, ...]) -> dict[str, float | int]:
    values: dict[str, float | int] = {}
    for text in given:
        name, _, value = text.partition("=")
        name = name.strip()
        if not _ or name not in FUSION_PARAMS or name in ("norm", "weights", "map_scores"):
            problems.add(f"--param must be NAME=VALUE with NAME one of {', '.join(PARAMETERS)}; got {text!r}")
            continue
        number = problems.number(f"--param {name}", value)
        if number is not None:
            values[name] = number
    return values


def _flag(option: Option) -> str:
    """An option fusion names, as this command spells it: a method's parameter is --param NAME (k is
    --param k=, as given), optimize_fusion is --optimize METRIC --qrels FILE; the rest are the flags
    of their names (--weights, --norm, --qrels)."""
    from duckrank.fusion import OPTIMIZE  # on a failure only: importing fusion loads duckdb

    if option.name in PARAMETERS:
        return f"--param {option}"
    if option.name == OPTIMIZE.name:
        return "--optimize METRIC --qrels FILE"
    return flag(option)
