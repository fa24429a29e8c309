"""The programs the tests run: the DuckDB shell (duckdb-cli, a test extra) and the duckrank command.

Each is looked for beside this Python first (the virtual environment the README's test command
makes has both), then on PATH. Both come from PyPI with the test extra, so a missing one fails the
test that needs it, saying what to install; it never skips.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _beside_python_or_on_path(name: str) -> str | None:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.is_file() else shutil.which(name)


def duckdb_shell() -> str:
    """The duckdb shell's path."""
    found = _beside_python_or_on_path("duckdb")
    if found is None:
        pytest.fail("no DuckDB shell beside this Python or on PATH: install the test extra (duckdb-cli)")
    return found


def duckrank_command() -> list[str]:
    """The installed `duckrank` command, else `python -m duckrank`."""
    found = _beside_python_or_on_path("duckrank")
    return [found] if found else [sys.executable, "-m", "duckrank"]


def run_shell(script: str, *arguments: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The script run by `duckdb -batch ARGUMENTS` from the repository root (so `.read
    sql/duckrank.sql` works)."""
    return subprocess.run([duckdb_shell(), "-batch", *arguments], input=script, text=True, capture_output=True,
                          cwd=REPO, timeout=timeout)
