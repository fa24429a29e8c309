"""How a duckrank command fails: duckrank's errors as click's exits and messages (usage problems 2,
data problems 1, options spelled as flags), a signal's stop (128 + its number) with DuckDB's query
interrupted at once, a full disk said as such. No user mistake ends in a traceback."""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import click

from duckrank.cli.common import CONVENTIONS
from duckrank.errors import DuckrankError, Option, Problem

# The word conventions as SQL quotes them (ties := 'x'), said as flags (--ties x).
_WORD_CONVENTIONS = "|".join(c.name for c in CONVENTIONS if c.param.type == "text")


def clean_message(message: Any, spell: Callable[[Option], str] | None = None) -> str:
    """A library message as the CLI says it: no prefixes, the options a duckrank error names
    (errors.Option) as the command's flags (--score-col), or as `spell` says them."""
    message = (message.spelled(spell or flag) if isinstance(message, DuckrankError) else str(message)).strip()
    for prefix in ("duckrank: ", "Error: "):
        message = message.removeprefix(prefix)
    # The one regexp left: the SQL library's messages (DuckDB's errors carry them) are text, naming a
    # convention as SQL does (ties := 'x'), and the few Python checks that echo them say it alike.
    message = re.sub(rf"\b({_WORD_CONVENTIONS}) := '(\w+)'", r"--\1 \2", message)
    # Two phrases, replaced whole: run_names= is Python's (on the command line a run is named by its
    # file), and a format is named by both spellings where the message cannot tell the front door.
    message = message.replace("give each run its own name (run_names=)",
                              "give each run file once (to compare a run with itself, give a copy or a link to it "
                              "under another name)")
    message = message.replace("--run-format / run_format=", "--run-format").replace(
        "--qrels-format / qrels_format=", "--qrels-format")
    return message


def flag(option: Option) -> str:
    """An option the library names (label_map, rel_level, label), as the running command spells it:
    the first flag of the option it declares under that name (--label-map, -l), else the flag of
    that spelling it declares (--label, whose values go to `labels`), else as Python does (label_map=)."""
    context = click.get_current_context(silent=True)
    params = [param for param in (context.command.params if context is not None else [])
              if isinstance(param, click.Option)]
    named = [param.opts[0] for param in params if param.name == option.name]
    spelled = "--" + option.name.replace("_", "-")
    if named:
        return named[0]
    return spelled if any(spelled in param.opts for param in params) else str(option)


def spelled(problem: str | Problem) -> str:
    """A problem (a library's parts, or the command's own text) as the command line says it."""
    return problem if isinstance(problem, str) else clean_message(DuckrankError(*problem))


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
        # the options the library names, as the command line spells them: "--ties must be one of ..."
        raise click.UsageError("\nError: ".join(clean_message(error).splitlines())) from None
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
