"""What several test modules share: the CLI run in-process, the programs the tests start (the DuckDB
shell, the duckrank command) and ranx run as an oracle in a process of its own.

The programs are looked for beside this Python first (the virtual environment the README's test
command makes has both), then on PATH. Both come from PyPI with the test extra, so a missing one
fails the test that needs it, saying what to install; it never skips.
"""

from __future__ import annotations

import atexit
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
# the quick run

# Whether this is the quick run (`pytest -m "not slow"`): set by conftest.py before any test module
# is imported, in every xdist worker too.
quick_run = False


def examples(full: int) -> int:
    """A property test's number of generated examples: `full` in the whole suite, a quarter (at
    least 5) in the quick run, which checks the same property on the first of the same examples
    (derandomized) to keep that run near a minute."""
    return max(5, full // 4) if quick_run else full


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
# (numba's JIT off: tests/conftest.py), started once per test process and fed one case per line; a
# case's metrics in one evaluate call, which scores each on its own but converts the qrels and run
# once (importing ranx is most of a call's cost: some 4 s of CPU)

RANX_WORKER = r"""
import json, sys
from ranx import Qrels, Run, evaluate
for line in sys.stdin:
    case = json.loads(line)
    run = Run(case["run"])
    got = evaluate(Qrels(case["qrels"]), run, case["metrics"], return_std=True,
                   make_comparable=case["make_comparable"])
    if len(case["metrics"]) == 1:  # ranx returns one metric's result bare
        got = {case["metrics"][0]: got}
    print(json.dumps({metric: {"mean": float(got[metric]["mean"]), "std": float(got[metric]["std"]),
                               "scores": {q: float(v) for q, v in run.scores[metric].items()}}
                      for metric in case["metrics"]}), flush=True)
"""

_ranx_worker: subprocess.Popen | None = None


def ranx(qrels: dict, run: dict, metrics: list[str], make_comparable: bool = True) -> dict:
    """{metric: {"mean", "std", "scores": {query_id: value}}} as ranx computes them."""
    global _ranx_worker
    if _ranx_worker is None or _ranx_worker.poll() is not None:
        _ranx_worker = subprocess.Popen([sys.executable, "-c", RANX_WORKER], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        atexit.register(_stop_ranx, _ranx_worker)
    assert _ranx_worker.stdin is not None and _ranx_worker.stdout is not None
    _ranx_worker.stdin.write(json.dumps({"qrels": qrels, "run": run, "metrics": metrics,
                                         "make_comparable": make_comparable}) + "\n")
    _ranx_worker.stdin.flush()
    line = _ranx_worker.stdout.readline()
    if not line:
        raise RuntimeError(f"the ranx worker died: {_ranx_worker.stderr.read() if _ranx_worker.stderr else ''}")
    return json.loads(line)


def _stop_ranx(worker: subprocess.Popen) -> None:
    if worker.poll() is None:
        assert worker.stdin is not None
        worker.stdin.close()
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
