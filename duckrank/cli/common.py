"""What the duckrank commands share: the formats, the conventions as the registry declares them,
collecting usage problems, the checks of inputs and output paths, atomic output, and the progress
line. The options every command declares the same way are cli/options.py's; how a command fails
(errors as exits and messages, signals) is cli/failures.py's."""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Self

import click

from duckrank import _output as output
from duckrank import options as measure_options
from duckrank.errors import quoted

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
INPUT_FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec")
# The output formats of the commands whose rows have no trec_eval layout (compare, metrics).
NON_TREC_FORMATS = tuple(f for f in output.FORMATS if f != "trec")
TABLE_FORMATS = INPUT_FORMATS  # convert and fuse write a run or qrels in every format it is read from

# The ranking conventions, as the registry declares them (flags, metavar, choices, default, help),
# and the gain rule: a measure option (of nDCG, DCG, CG, ...) that the command line sets for every
# measure at once. Their values are checked by the SQL library, which words the messages.
CONVENTIONS: tuple[measure_options.Convention, ...] = (
    *measure_options.CONVENTIONS.values(),
    measure_options.Convention(measure_options.OPTIONS["gain"], ("--gain",), "GAIN"),
)
# What the command line adds to a convention's help.
CONVENTION_NOTES = {"gain": "A per-grade map is a measure option: -m 'nDCG(gain_map={1:3,2:9})@10' "
                            "(trec_eval's -m ndcg.1=3,2=9)."}


def _float_or_nan(value: str) -> float:
    """An option's text as a number; NaN (which fails every range check) when it is not one."""
    try:
        return float(value)
    except ValueError:
        return math.nan


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
        self.add(f"{option} must be one of {', '.join(choices)}; got {quoted(value)}")
        return None

    def integer(self, option: str, value: str | None, minimum: int | None = 1,
                maximum: int | None = None) -> int | None:
        if value is None:
            return None
        try:
            number: int | None = int(value.strip())
        except ValueError:
            number = None
        if number is None or (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
            bound = (f" from {minimum} to {maximum}" if maximum is not None else
                     f" >= {minimum}" if minimum is not None else "")
            self.add(f"{option} must be a whole number{bound}; got {quoted(value)}")
            return None
        return number

    def fraction(self, option: str, value: str | None) -> float | None:
        if value is None:
            return None
        number = _float_or_nan(value)
        if not 0 < number < 1:
            self.add(f"{option} must be a number strictly between 0 and 1; got {quoted(value)}")
            return None
        return number

    def number(self, option: str, value: str | None) -> float | int | None:
        if value is None:
            return None
        number = _float_or_nan(value)
        if not math.isfinite(number):
            self.add(f"{option} must be a finite number; got {quoted(value)}")
            return None
        return int(number) if number.is_integer() else number

    def raise_if_any(self) -> None:
        if self.messages:
            # click prints "Error: " before the first line; give every other line the same start.
            raise click.UsageError("\nError: ".join(self.messages))


# ---------------------------------------------------------------------------------------------
# checks


def table_format_from_extension(path: str) -> str:
    """A run or qrels file's format from its extension; TREC text for any other name."""
    guessed = output.format_from_extension(path)
    return guessed if guessed in TABLE_FORMATS else "trec"


def pick_format(problems: Problems, fmt: str | None, path: str | None, allowed: tuple[str, ...]) -> str:
    if fmt is not None:
        chosen = problems.choice("--format", fmt, allowed)
        return chosen or allowed[0]
    guessed = output.format_from_extension(path)
    if guessed in allowed:
        return guessed
    if path in (None, "-"):
        return "table" if sys.stdout.isatty() else "tsv"
    return "table" if "table" in allowed else allowed[0]


def check_output(problems: Problems, fmt: str, path: str | None, inputs: list[str],
                 literal: bool | None = None) -> None:
    if path in (None, "-"):
        if fmt == "parquet" and sys.stdout.isatty():
            problems.add("parquet is binary and stdout is a terminal; write it to a file with -o FILE")
        return
    if output.is_stream(path):  # a device, pipe or descriptor: written to, never replaced
        return
    from duckrank.inputs import files_of

    for source in inputs:
        read = (next((file for file in files_of(source, literal) if output.same_file(path, file)), None)
                if source else None)
        if read is not None:
            also = "" if output.same_file(read, source) else f", which reads {read}"
            problems.add(f"-o {path} is also an input ({source}{also}); choose another output path so the "
                         "input is not overwritten")
    folder = os.path.dirname(os.path.realpath(path))
    if not os.path.isdir(folder):
        problems.add(f"-o {path}: folder {folder} does not exist; create it first")
    elif os.path.isdir(path):
        problems.add(f"-o {path} is a folder; give a file name")


def check_standard_input(problems: Problems, qrels: str | None, runs: Sequence[str],
                         options: dict[str, str | None] | None = None) -> None:
    """At most one input can be '-' (standard input, read once): said before any input is read,
    naming the arguments as given (QRELS, RUN 1, --exclude)."""
    from duckrank.inputs import stdin_problem

    named = [("QRELS", qrels), *((f"RUN {i}" if len(runs) > 1 else "RUN", run) for i, run in enumerate(runs, 1)),
             *(options or {}).items()]
    problem = stdin_problem(named)
    if problem:
        problems.add(problem)


def facade_format(fmt: str | None, kind: str) -> str | None:
    """The CLI's 'trec' is the facade's trec_run or trec_qrels."""
    if fmt == "trec":
        return f"trec_{kind}"
    return fmt


# ---------------------------------------------------------------------------------------------
# output


@contextlib.contextmanager
def binary_target(path: str | None) -> Iterator[str]:
    """A path for DuckDB to COPY a binary file to: renamed onto -o FILE, or streamed to stdout."""
    if path not in (None, "-"):
        with output.atomic_path(path) as tmp:
            yield tmp
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="duckrank-") as folder:
        tmp = os.path.join(folder, "output.parquet")
        yield tmp
        output.copy_to_stdout(tmp)


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

    def __enter__(self) -> Self:
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


def progress_enabled(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty()
