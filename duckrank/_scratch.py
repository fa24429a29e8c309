"""duckrank's private scratch folder: DuckDB's spill files, copies of piped inputs and the links
that make a literal path readable. One folder per process, in the system's temporary folder (never
the caller's working directory; a forked child's inside its parent's), removed at exit, also when a
signal stops the command line."""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import sys
import tempfile
import threading
from typing import Any

_folder: str | None = None
_owner: int | None = None  # the process that made it: a forked child neither uses nor removes it
_lock = threading.Lock()


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def folder() -> str:
    """The process's scratch folder, created (mode 0700) on first use."""
    global _folder, _owner
    with _lock:
        if _folder is None or _owner != os.getpid() or not os.path.isdir(_folder):
            # a forked child's folder is inside its parent's: when the child is killed (a fork pool's
            # terminate()), the parent's exit still removes it
            parent = _folder if _folder is not None and _owner != os.getpid() and os.path.isdir(_folder) else None
            _folder, _owner = tempfile.mkdtemp(prefix="duckrank-", dir=parent), os.getpid()
            atexit.register(remove)
            if "multiprocessing" in sys.modules:
                # a multiprocessing worker ends with os._exit, which skips atexit; its own exit runs these
                from multiprocessing import util

                util.Finalize(None, remove, exitpriority=0)
        return _folder


def path(name: str) -> str:
    """A path inside the scratch folder (nothing is created there)."""
    return os.path.join(folder(), name)


def remove() -> None:
    global _folder
    with _lock:
        if _folder is not None and _owner == os.getpid():
            shutil.rmtree(_folder, ignore_errors=True)
            _folder = None


#: The signal that is ending the process (SIGINT, SIGTERM or SIGHUP), once one arrived: DuckDB
#: answers a signal during a query with its own "Query interrupted" error, which this tells apart.
received: int | None = None


class Terminated(SystemExit):
    """SIGTERM or SIGHUP: unwind (so every `finally` removes its temporary files), exit 128 + signal."""


def handle_signals() -> dict[int, Any]:
    """SIGINT raises KeyboardInterrupt, SIGTERM and SIGHUP raise Terminated, in the main thread,
    each noting the signal in `received`: for the command line, whose temporary output and scratch
    folder must go when a user or a job scheduler stops it. Returns the handlers it replaced."""
    global received
    received = None

    def handler(number, _frame):
        global received
        if received is not None:  # DuckDB re-raises a signal it has answered already: once is enough
            return
        received = number
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(128 + number)

    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[number] = signal.signal(number, handler)
    return previous


def restore_signals(previous: dict[int, Any]) -> None:
    for number, handler in previous.items():
        signal.signal(number, handler)
