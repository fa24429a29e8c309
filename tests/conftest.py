"""Shared fixtures: a DuckDB connection with the macros loaded, and trec_eval's conformance data."""

from __future__ import annotations

import compileall
import os
import shutil
import tempfile
from pathlib import Path

# ranx (an oracle) compiles its numba kernels on first use: some 15 s of CPU in every test process,
# where plain Python scores the tests' small data in milliseconds, and again in every ranx process the
# oracles start, which inherit this (test_ranx_spellings and test_fusion: 364 s with the JIT off, 552 s
# on, on a busy 2-core machine). The one place it is set. Set before anything imports numba.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

import pytest
from hypothesis import settings

import helpers
from duckrank._library import connect

# The `trec_eval` fixture: NIST trec_eval 10's binary, or a skip saying how to get it.
from trec_eval_binary import trec_eval  # noqa: F401

# Generated cases are the same on every run, so a test that passes in CI passes everywhere; a new
# counterexample is found by changing the data generators, not by luck.
settings.register_profile("duckrank", derandomize=True, deadline=None)
settings.load_profile("duckrank")

REPO = Path(__file__).resolve().parent.parent
# trec_eval's own qrels, runs and expected output, kept in the repository (a copy of
# ../shared/data/trec_eval) so that a plain clone runs every conformance test.
TREC_DATA = REPO / "tests" / "data" / "trec_eval"


# `pytest -m "not slow"` skips what starts other programs at length: a JVM (the Spark engine), the
# trec_eval binary, a browser, the duckdb shell over every measure, the README's commands, signals
# sent to child processes, the peers' suites through every door. What is left covers the logic,
# against the Python oracles, in minutes. An exhaustive sweep (every setting, data set or form) keeps
# a representative in that run and marks the rest slow where it is parametrized (test_lean,
# test_ranx_spellings, test_sql_trec_conformance, ...).
SLOW_MODULES = {"test_spark", "test_front_doors", "test_trec_eval_binary", "test_hardening_processes", "test_readme",
                "test_conformance"}
SLOW_FIXTURES = {"spark", "trec_eval"}


def pytest_collection_modifyitems(items):
    for item in items:
        if item.module.__name__ in SLOW_MODULES or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_configure(config):
    """Whether this is the quick run, for the property tests (helpers.examples); and duckrank's
    catalog cache of this test session, never the developer's ~/.cache: made by the controlling
    process (or the only one, -n 0) before the xdist workers start, which inherit it, as do the
    command lines the tests run, and share it (its writes are atomic); removed at the end.

    The controlling process also compiles duckrank's modules, as installing a package does: a
    checkout has no bytecode, and under PYTHONDONTWRITEBYTECODE (set on this project's machines)
    every duckrank command a test starts would compile them again (0.45 against 0.33 s for a small
    `duckrank eval`)."""
    helpers.quick_run = "not slow" in (config.getoption("markexpr") or "")
    if not hasattr(config, "workerinput"):
        config.duckrank_cache = os.environ["DUCKRANK_CACHE_DIR"] = tempfile.mkdtemp(prefix="duckrank-test-cache-")
        compileall.compile_dir(REPO / "duckrank", quiet=1)


def pytest_unconfigure(config):
    if hasattr(config, "duckrank_cache"):
        shutil.rmtree(config.duckrank_cache, ignore_errors=True)


@pytest.fixture
def con():
    connection = connect()
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def trec_data() -> Path:
    if not TREC_DATA.is_dir():
        pytest.fail(f"trec_eval conformance data not found at {TREC_DATA}")
    return TREC_DATA
