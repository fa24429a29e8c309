"""Shared fixtures: a DuckDB connection with the macros loaded, and trec_eval's conformance data."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

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
