"""Hostile inputs (issue 25, third round): standard input named twice, binary files given as TREC
text, ids too long to print, look-alike Unicode ids, duplicate label-map keys, and the name eval
gives a TREC run. Each asserts the exit code and the first line of the message."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import duckrank
from duckrank.cli import main
from duckrank.errors import OptionError

DATA = Path(__file__).resolve().parent.parent / "data"
RUN_LINE = "q1 Q0 d1 1 2.0 tagged\n"


def run(*args, input: str | bytes | None = None):
    result = CliRunner().invoke(main, [str(a) for a in args], input=input, catch_exceptions=True)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"uncaught {result.exception!r}\n{result.output}") from result.exception
    return result


def first_error(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    assert lines, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


# ---------------------------------------------------------------------------------------------
# standard input can be read once


@pytest.mark.parametrize(("args", "named"), [
    (["eval", "-", "-"], "QRELS and RUN"),
    (["eval", DATA / "qrels.parquet", "-", "-"], "RUN 1 and RUN 2"),
    (["compare", "-", "-", DATA / "run.parquet"], "QRELS and RUN 1"),
])
def test_standard_input_named_twice_is_a_usage_error_naming_both(args, named):
    result = run(*args, input=RUN_LINE)
    assert result.exit_code == 2, result.output
    message = first_error(result)
    assert named in message and "standard input can be read once" in message, message


def test_python_refuses_standard_input_named_twice_before_reading_it():
    with pytest.raises(OptionError, match=r"qrels and runs\[0\] are both '-'.*standard input can be read once"):
        duckrank.evaluate("-", ["-"], ["map"])
