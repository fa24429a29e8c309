"""Shared fixtures: a DuckDB connection with the macros loaded, and trec_eval's conformance data."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from duckrank._library import connect

# Generated cases are the same on every run, so a test that passes in CI passes everywhere; a new
# counterexample is found by changing the data generators, not by luck.
settings.register_profile("duckrank", derandomize=True, deadline=None)
settings.load_profile("duckrank")

REPO = Path(__file__).resolve().parent.parent
# trec_eval's own qrels, runs and expected output: ../shared/data/trec_eval beside the checkout.
TREC_DATA = REPO.parent / "shared" / "data" / "trec_eval"


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
