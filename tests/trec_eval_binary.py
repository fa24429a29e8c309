"""NIST trec_eval 10, the reference binary the oracle tests run.

../shared/tools/trec_eval/build.sh (beside the checkout, as in CI) builds it from source with make and
gcc into a cache and prints its path; it is run at most once per test session ($TREC_EVAL, when set,
names a binary to use instead, as tests/test_inputs_trec_eval.py allows). On a plain clone
without ../shared the binary is unavailable and the tests that need it skip, saying how to enable
them (tests/external.py: never under CI). When build.sh is there but cannot build the binary, those tests fail: a broken oracle must not
pass for an absent one.
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

import pytest

from external import missing

REPO = Path(__file__).resolve().parent.parent
BUILD_SH = REPO.parent / "shared" / "tools" / "trec_eval" / "build.sh"
SKIP_REASON = ("trec_eval 10 not available: put usnistgov trec_eval 10's source where "
               "../shared/tools/trec_eval/build.sh builds it")


class BuildError(RuntimeError):
    """build.sh is there but did not produce a working binary."""


@functools.cache
def trec_eval_binary() -> Path | None:
    """The trec_eval 10 binary's path, built by ../shared/tools/trec_eval/build.sh on the first call;
    None when build.sh is absent. Raises BuildError when build.sh fails ($TREC_EVAL: when it is not
    an executable)."""
    given = os.environ.get("TREC_EVAL")
    if given:
        if not os.access(given, os.X_OK):
            raise BuildError(f"TREC_EVAL={given} is not an executable")
        return Path(given)
    if not BUILD_SH.is_file():
        return None
    done = subprocess.run(["bash", str(BUILD_SH)], capture_output=True, text=True, timeout=900)
    path = Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
    if path is None or not path.is_file():
        raise BuildError(f"{BUILD_SH} exited {done.returncode}: {done.stderr.strip() or done.stdout.strip()}")
    return path


def require_trec_eval() -> Path:
    """The trec_eval 10 binary, for a test: skips it when the binary is not available (see
    SKIP_REASON), fails it when build.sh cannot build one."""
    try:
        path = trec_eval_binary()
    except BuildError as error:
        pytest.fail(str(error))
    if path is None:
        missing(SKIP_REASON)
    return path


@pytest.fixture(scope="session")
def trec_eval() -> Path:
    """The trec_eval 10 binary; skips the test when it is not available (see SKIP_REASON)."""
    return require_trec_eval()
