"""The CLI run in-process, as the CLI and hardening tests drive it."""

from __future__ import annotations

import os

from click.testing import CliRunner

from duckrank.cli import main


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
