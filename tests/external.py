"""Oracles and engines that come from outside PyPI (the trec_eval binary, Java, Chromium).

On a user's machine a test that needs one skips, saying how to enable it. CI (`.ci/run`) installs them
and sets DUCKRANK_CI=1, under which a missing one fails the test instead: CI must never pass by skipping.
"""

from __future__ import annotations

import os

import pytest


def missing(reason: str):
    """Skip the calling test because `reason` (what is missing and how to get it); fail it under CI."""
    if os.environ.get("DUCKRANK_CI") == "1":
        pytest.fail(f"{reason} (DUCKRANK_CI=1: CI must not skip this)")
    pytest.skip(reason)
