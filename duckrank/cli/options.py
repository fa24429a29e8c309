"""The options the duckrank commands declare the same way (the conventions of duckrank.options,
compare's statistics of duckrank.registry; columns, output, engine settings) and the reading of their values, each bad
one a problem reported at once."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import click

from duckrank import _output as output
from duckrank import registry
from duckrank.cli.common import CONVENTION_NOTES, CONVENTIONS, Problems
from duckrank.cli.failures import clean_message, spelled


def read_measures(problems: Problems, measures: Sequence[str]) -> list[str]:
    """The -m spellings (compare's default measures when none), trec_eval's lists expanded, each parsed so that
    every bad one is a problem at once; a repeated one kept once."""
    from duckrank.errors import MeasureError
    from duckrank.measures import expand_measures, parse_measure

    spellings: list[str] = []
    try:
        expanded = expand_measures(list(measures) or list(registry.COMPARE_MEASURES))
    except MeasureError as error:
        problems.add(clean_message(error))
        expanded = []
    for spelling in expanded:
        try:
            parse_measure(spelling)
        except MeasureError as error:
            problems.add(clean_message(error))
            continue
        if spelling not in spellings:
            spellings.append(spelling)
    return spellings


def convention_options(also: dict[str, tuple[str, ...]] | None = None,
                       notes: dict[str, str] | None = None) -> Callable:
    """-l, --ties, -M, -c, --empty, --unjudged, --duplicates and --gain, as the registry declares
    them; the command receives their values as one dict, `conventions` (None or False: not given).

    `also` adds a command's own spellings of a flag, `notes` a sentence to its help."""
    also, notes = also or {}, {**CONVENTION_NOTES, **(notes or {})}

    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def command(*args, **kwargs):
            return function(*args, conventions={c.name: kwargs.pop(c.name) for c in CONVENTIONS}, **kwargs)

        for convention in reversed(CONVENTIONS):
            param = convention.param
            text = param.help()
            text = f"{text[0].upper()}{text[1:]}." + (f" {notes[param.name]}" if param.name in notes else "")
            command = click.option(*convention.flags, *also.get(param.name, ()), param.name,
                                   metavar=convention.metavar or None, is_flag=param.type == "boolean",
                                   help=text)(command)
        return command

    return decorate


def read_conventions(problems: Problems, values: dict[str, Any]) -> dict[str, Any]:
    """The conventions given on the command line, for the facade: numbers read here (each bad one
    a problem), words passed on for the SQL library to check, a flag only when set."""
    conventions = {}
    for convention in CONVENTIONS:
        value, flag, kind = values.get(convention.name), convention.flags[0], convention.param.type
        if kind == "number":
            value = problems.number(flag, value)
        elif kind == "integer":  # -M 0 is trec_eval's too: nothing retrieved counts
            value = problems.integer(flag, value, minimum=0)
        elif kind == "boolean":
            value = value or None
        if value is not None:
            conventions[convention.name] = value
    return conventions


def column_options(function: Callable) -> Callable:
    """--query-col, --doc-col, --score-col, --relevance-col and --literal/--glob: how every command
    that reads finds its inputs' columns and files."""
    function = click.option("--literal/--glob", "literal", default=None,
                            help="Read every input path as that very file (--literal) or expand every path "
                                 "with * ? [ as a glob (--glob). Default: a path that exists is that file, "
                                 "a glob is expanded only when no file has its name.")(function)
    for option, default, what in reversed([("--query-col", "query_id", "the query id"),
                                           ("--doc-col", "doc_id", "the document id"),
                                           ("--score-col", "score", "the run's score"),
                                           ("--relevance-col", "relevance", "the qrels grade")]):
        function = click.option(option, metavar="COL", help=f"Column holding {what} (default {default}).")(function)
    return function


def statistics_options(tukey_marks: str) -> Callable:
    """compare's statistics settings (--permutations, --bootstrap, --seed, --confidence, --alpha,
    --correction, --test) with the registry's defaults and choices; `tukey_marks` says how --test
    tukey marks the runs a run beats."""
    defaults = registry.COMPARE_DEFAULTS
    corrections = ", ".join(f"{name} ({what})" for name, what in registry.COMPARE_CORRECTIONS.items())
    tests = ", ".join(f"{name} ({what})" for name, what in registry.COMPARE_TESTS.items())
    options = [
        click.option("--permutations", metavar="N", help=f"Sign flips of the randomization test (default "
                                                         f"{defaults['permutations']}; 0 skips it)."),
        click.option("--bootstrap", metavar="N", help=f"Bootstrap replicates for the intervals (default "
                                                      f"{defaults['bootstrap']}; 0 skips them)."),
        click.option("--seed", metavar="N", help=f"Seed of every random draw (default {defaults['seed']}): same "
                                                 "seed, same numbers."),
        click.option("--confidence", metavar="LEVEL", help=f"Level of the bootstrap intervals (default "
                                                           f"{defaults['confidence']})."),
        click.option("--alpha", metavar="A", help=f"Significance level for marking differences (default "
                                                  f"{defaults['alpha']})."),
        click.option("--correction", metavar="METHOD",
                     help=f"Multiple-comparison correction of the t and randomization tests over all (run, "
                          f"measure) comparisons: {corrections}; default {defaults['correction']}."),
        click.option("--test", metavar="TEST",
                     help=f"The test whose p marks significance: {tests}; default {defaults['test']}. tukey "
                          f"compares every pair of runs (no --correction) and {tukey_marks}, as ranx does."),
    ]

    def decorate(function: Callable) -> Callable:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def read_statistics(problems: Problems, values: dict[str, str | None]) -> dict[str, Any]:
    """The statistics options' values for duckrank.compare, within the registry's bounds (a negative
    seed, which the library takes, would read as a flag); bad values go to `problems`."""
    return {
        **{name: problems.integer(f"--{name}", values[name], 0, registry.COMPARE_MAX_REPLICATES)
           for name in ("permutations", "bootstrap")},
        "seed": problems.integer("--seed", values["seed"], 0, registry.COMPARE_SEED_RANGE[1]),
        **{name: problems.fraction(f"--{name}", values[name]) for name in ("confidence", "alpha")},
        "correction": problems.choice("--correction", values["correction"], tuple(registry.COMPARE_CORRECTIONS)),
        "test": problems.choice("--test", values["test"], tuple(registry.COMPARE_TESTS)),
    }


ROUNDING = ("Machine formats keep full double precision; table, markdown, latex and trec round to 4 decimals "
            "like trec_eval.")


def output_options(formats: tuple[str, ...] = output.FORMATS, about: str = ROUNDING,
                   quiet: str = "No progress indicator on stderr.") -> Callable:
    """--format (one of `formats`; `about` says more), -o/--output and --quiet (its help: `quiet`)."""

    def decorate(function: Callable) -> Callable:
        function = click.option("--quiet", is_flag=True, help=quiet)(function)
        function = click.option(
            "-o", "--output", "output_path", metavar="FILE",
            help="Write to FILE (atomically: a temporary file in the same folder, then a rename) instead "
                 "of stdout. Its extension (.csv .tsv .json .jsonl .parquet .md .tex) picks the format "
                 "when --format is not given.",
        )(function)
        return click.option(
            "-f", "--format", "fmt", metavar="FORMAT",
            help=f"One of {', '.join(formats)}. Default: table on a terminal, else tsv (or what -o FILE's "
                 f"extension says).{' ' + about if about else ''}",
        )(function)

    return decorate


def engine_options(function: Callable) -> Callable:
    """DuckDB engine settings, so larger-than-memory inputs spill to disk instead of failing."""
    function = click.option("--temp-dir", metavar="DIR", help="Where DuckDB spills (temp_directory).")(function)
    function = click.option(
        "--memory-limit", metavar="SIZE",
        help="Memory for DuckDB and its headroom, e.g. 4GB or 50% (DuckDB gets 80%; the process may pass it by up to a third)."
    )(function)
    function = click.option("--threads", metavar="N", help="DuckDB worker threads (default: all cores).")(function)
    return function




def check_engine(problems: Problems, threads: str | None, memory_limit: str | None,
                 temp_dir: str | None) -> dict[str, Any]:
    from duckrank._library import engine_problems

    settings: dict[str, Any] = {}
    if threads is not None:
        settings["threads"] = problems.integer("--threads", threads)
    found = engine_problems(settings.get("threads"), memory_limit)
    for problem in found:
        problems.add(spelled(problem))
    if found:
        settings.pop("threads", None)
    elif memory_limit is not None:
        settings["memory_limit"] = memory_limit
    if temp_dir is not None:
        if os.path.exists(temp_dir) and not os.path.isdir(temp_dir):
            problems.add(f"--temp-dir {temp_dir} exists and is not a folder")
        else:
            settings["temp_dir"] = temp_dir
    return {key: value for key, value in settings.items() if value is not None}
