"""What the duckrank commands share: collecting usage problems, turning duckrank's errors into
exit codes and messages, the options every command declares the same way (the conventions come
from duckrank.registry), atomic output paths, and the progress line."""

from __future__ import annotations

import contextlib
import errno
import functools
import math
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Self

import click

from duckrank import _output as output
from duckrank import registry
from duckrank.errors import quoted

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
INPUT_FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec")
# The output formats of the commands whose rows have no trec_eval layout (compare, metrics).
NON_TREC_FORMATS = tuple(f for f in output.FORMATS if f != "trec")
TABLE_FORMATS = INPUT_FORMATS  # convert and fuse write a run or qrels in every format it is read from

# The ranking conventions, as the registry declares them (flags, metavar, choices, default, help),
# and the gain rule: a measure option (of nDCG, DCG, CG, ...) that the command line sets for every
# measure at once. Their values are checked by the SQL library, which words the messages.
CONVENTIONS: tuple[registry.Convention, ...] = (
    *registry.CONVENTIONS.values(),
    registry.Convention(registry.OPTIONS["gain"], ("--gain",), "GAIN"),
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
# errors

# The word conventions as the facade quotes them (ties := 'x'), said as flags (--ties x).
_WORD_CONVENTIONS = "|".join(c.name for c in CONVENTIONS if c.param.type == "text")


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


def clean_message(message: Any) -> str:
    """A facade message as the CLI says it: no prefixes, options spelled as flags (--score-col)."""
    message = str(message).strip()
    for prefix in ("duckrank: ", "Error: "):
        message = message.removeprefix(prefix)
    message = re.sub(r"(?<![-\w])(query|doc|score|relevance)_col=", r"--\1-col", message)
    message = re.sub(r"(?<![-\w])label_map=", "--label-map", message)
    message = re.sub(r"(?<![-\w])label=", "--label", message)
    message = re.sub(rf"\b({_WORD_CONVENTIONS}) := '(\w+)'", r"--\1 \2", message)
    # run_names= is Python's; on the command line a run is named by its file
    message = message.replace("give each run its own name (run_names=)",
                              "give each run file once (to compare a run with itself, give a copy or a link to it "
                              "under another name)")
    message = message.replace("--run-format / run_format=", "--run-format").replace(
        "--qrels-format / qrels_format=", "--qrels-format")
    return message


# The facade's option names as the command line spells them, for messages that start with one.
OPTION_FLAGS = {**{c.name: c.flags[0] for c in CONVENTIONS}, "by": "--by", "threads": "--threads", "memory_limit": "--memory-limit",
                **{name: f"--{name}" for name in ("permutations", "bootstrap", "seed", "confidence", "alpha",
                                                  "correction", "test", "baseline")}}


def as_flags(problem: str) -> str:
    """The SQL library's "ties must be one of ..." as the CLI says it: "--ties must be one of ..."."""
    name = problem.split(" ", 1)[0]
    return OPTION_FLAGS[name] + problem[len(name):] if name in OPTION_FLAGS else clean_message(problem)


def handle_errors(function: Callable) -> Callable:
    """Turn duckrank's typed errors into click's exits: usage problems 2, data problems 1.

    No user mistake ends in a traceback; set DUCKRANK_DEBUG=1 to see one for a real bug.
    """

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        from duckrank import _scratch

        previous = _scratch.handle_signals()
        watcher = _SignalWatcher.start() if previous else None
        try:
            return _run(function, *args, **kwargs)
        finally:
            if watcher is not None:
                watcher.stop()
            _scratch.restore_signals(previous)

    return wrapper


# The signals that stop a command (duckrank._scratch.handle_signals).
STOPPING_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


class _SignalWatcher:
    """Stops DuckDB's query the moment a signal arrives. Python runs a signal's handler in the main
    thread only between bytecodes, which DuckDB's Python client reaches after each task of a query
    (seconds on a large input); the signal's number also goes to a wakeup pipe, and this thread,
    reading it, interrupts duckrank's connections at once. The handler then runs in the main thread
    (duckrank._scratch.handle_signals), which unwinds and exits with the signal's status."""

    def __init__(self) -> None:
        self.read, self.write = os.pipe()
        try:
            os.set_blocking(self.write, False)
            self.previous = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        except (OSError, ValueError):
            os.close(self.read)
            os.close(self.write)
            raise
        self.thread = threading.Thread(target=self._watch, name="duckrank-signals", daemon=True)
        self.thread.start()

    @classmethod
    def start(cls) -> _SignalWatcher | None:
        """A watcher, or None where a pipe cannot be a wakeup fd (Windows takes only a socket):
        there a signal lands when DuckDB's current task ends, as before."""
        try:
            return cls()
        except (OSError, ValueError):
            return None

    def _watch(self) -> None:
        from duckrank._library import interrupt_all

        while True:
            try:
                data = os.read(self.read, 64)
            except OSError:
                return
            if not data or 0 in data:  # stop() writes a 0: no signal has that number
                return
            if STOPPING_SIGNALS & set(data):
                interrupt_all()

    def stop(self) -> None:
        signal.set_wakeup_fd(self.previous)
        with contextlib.suppress(OSError):
            os.write(self.write, b"\0")
        self.thread.join(timeout=5)
        for fd in (self.read, self.write):
            with contextlib.suppress(OSError):
                os.close(fd)


def _run(function: Callable, *args, **kwargs):
    from duckrank import _scratch

    # The signal's handler raises KeyboardInterrupt or Terminated wherever the main thread is when it
    # runs: also while an error is being handled below (DuckDB's "interrupted" error often arrives
    # first, the watcher having interrupted the query), hence the outer try.
    try:
        try:
            return function(*args, **kwargs)
        except (click.ClickException, click.Abort, click.exceptions.Exit, KeyboardInterrupt, _scratch.Terminated):
            raise
        except Exception as error:
            if _scratch.received is None and _is_interruption(error):
                _await_signal_handler()
            if _scratch.received is None:  # not DuckDB's answer to a signal (which any error can wrap)
                _failed(error)
            raise _stopped() from None
    except (KeyboardInterrupt, _scratch.Terminated):
        raise _stopped() from None


def _is_interruption(error: Exception) -> bool:
    return _is_duckdb_error(error) and "interrupted" in str(error).lower()


def _await_signal_handler(seconds: float = 1.0) -> None:
    """Give a signal that interrupted DuckDB the moment its Python handler needs to run (the main
    thread runs it between bytecodes, here inside sleep), so that the error is reported as the signal."""
    from duckrank import _scratch

    deadline = time.monotonic() + seconds
    while _scratch.received is None and time.monotonic() < deadline:
        time.sleep(0.01)


def _failed(error: Exception) -> None:
    """Raise the click exit that says `error`: usage problems 2, data problems 1."""
    from duckrank.errors import DuckrankError, MeasureError, OptionError

    try:
        raise error
    except (MeasureError, OptionError) as error:
        # "ties must be one of ..." from the library, as the command line spells it: "--ties ..."
        raise click.UsageError("\nError: ".join(as_flags(line) for line in clean_message(error).splitlines())) from None
    except DuckrankError as error:
        raise click.ClickException("\nError: ".join(clean_message(error).splitlines())) from None
    except BrokenPipeError:
        # `duckrank eval ... | head`: the reader left, which is not an error. Point stdout at
        # /dev/null so the interpreter's final flush does not complain either.
        with contextlib.suppress(Exception):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        raise click.exceptions.Exit(0) from None
    except OSError as error:
        if error.errno == errno.ENOSPC:
            raise click.ClickException(_disk_full(error.filename)) from None
        where = f"{error.filename}: " if error.filename else ""
        raise click.ClickException(f"{where}{error.strerror or error}") from None
    except Exception as error:
        if os.environ.get("DUCKRANK_DEBUG"):
            raise
        if _is_duckdb_error(error):
            if "No space left on device" in str(error) or "could not write" in str(error).lower():
                raise click.ClickException(_disk_full(_spill_folder(str(error)))) from None
            raise click.ClickException(clean_message(error)) from None
        raise click.ClickException(
            f"unexpected {type(error).__name__}: {error}. This is a bug in duckrank; please "
            "report it with the command you ran (set DUCKRANK_DEBUG=1 to see the traceback)."
        ) from None


def _stopped() -> click.exceptions.Exit:
    """A signal's exit: one line on stderr, status 128 + the signal (130 for Ctrl-C). The unwinding
    has removed the temporary output; the scratch folder goes at exit."""
    from duckrank import _scratch

    number = _scratch.received or signal.SIGINT
    click.echo(f"duckrank: stopped by {signal.Signals(number).name}; no output was written", err=True)
    return click.exceptions.Exit(128 + number)


def _disk_full(folder: str | None) -> str:
    where = f" in {folder}" if folder else ""
    return (f"the disk is full: no space left{where}; free some space, or point --temp-dir (DuckDB's spill "
            f"files) or -o at a disk with room")


def _spill_folder(message: str) -> str | None:
    found = re.search(r"[\"'](/[^\"']+)[\"']", message)
    return os.path.dirname(found[1]) if found else None


def _is_duckdb_error(error: BaseException) -> bool:
    return type(error).__module__.startswith(("duckdb", "_duckdb"))


# ---------------------------------------------------------------------------------------------
# shared options


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


def check_engine(problems: Problems, threads: str | None, memory_limit: str | None,
                 temp_dir: str | None) -> dict[str, Any]:
    from duckrank._library import engine_problems

    settings: dict[str, Any] = {}
    if threads is not None:
        settings["threads"] = problems.integer("--threads", threads)
    found = engine_problems(settings.get("threads"), memory_limit)
    for problem in found:
        problems.add(as_flags(problem))
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
