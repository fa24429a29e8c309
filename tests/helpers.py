"""What several test modules share: the CLI run in-process, the programs the tests start (the DuckDB
shell, the duckrank command) and ranx run as an oracle in a process of its own.

The programs are looked for beside this Python first (the virtual environment the README's test
command makes has both), then on PATH. Both come from PyPI with the test extra, so a missing one
fails the test that needs it, saying what to install; it never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from duckrank.cli import main

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# the CLI, in-process


def run(*args: str | os.PathLike, input: str | bytes | None = None):
    """Invoke the CLI in-process; never let an exception escape as a traceback."""
    result = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {result.exception!r}\n{result.output}") from result.exception
    return result


def first_error(result) -> str:
    """The first 'Error: ' line on stderr (there must be one, and no traceback)."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert lines, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# ---------------------------------------------------------------------------------------------
# the programs: the DuckDB shell (duckdb-cli, a test extra) and the duckrank command


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


# ---------------------------------------------------------------------------------------------
# ranx as an oracle: ranx.evaluate(make_comparable=True) in a process of its own, the tests' environment
# (numba's JIT off: tests/conftest.py)

RANX = r"""
import json, sys
from ranx import Qrels, Run, evaluate
case = json.load(sys.stdin)
out = {}
for metric in case["metrics"]:
    run = Run(case["run"])
    got = evaluate(Qrels(case["qrels"]), run, metric, return_std=True, make_comparable=True)
    out[metric] = {"mean": float(got["mean"]), "std": float(got["std"]),
                   "scores": {q: float(v) for q, v in run.scores[metric].items()}}
print(json.dumps(out))
"""


def ranx(qrels: dict, run: dict, metrics: list[str]) -> dict:
    """{metric: {"mean", "std", "scores": {query_id: value}}} as ranx computes them."""
    done = subprocess.run([sys.executable, "-c", RANX], input=json.dumps({"qrels": qrels, "run": run,
                                                                          "metrics": metrics}),
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)
