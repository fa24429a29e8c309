"""The README's examples are executed, so they cannot rot."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from helpers import duckdb_shell, duckrank_command

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


@pytest.fixture
def sandbox(tmp_path):
    """A folder where README commands can write files, with the sample data reachable as data/."""
    (tmp_path / "data").symlink_to(REPO / "data")
    (tmp_path / "sql").symlink_to(REPO / "sql")
    return tmp_path


@pytest.mark.parametrize("code", blocks("python"))
def test_python_examples_run(code, sandbox, capsys):
    cwd = os.getcwd()
    os.chdir(sandbox)
    try:
        exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.strip()


def _cli_lines() -> list[str]:
    lines = []
    for block in blocks("console"):
        lines.extend(line for line in block.splitlines() if line.startswith("duckrank "))
    return lines


@pytest.mark.parametrize("line", _cli_lines())
def test_cli_examples_run(line, sandbox):
    result = subprocess.run(duckrank_command() + shlex.split(line)[1:], cwd=sandbox, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    writes_a_file = " -o " in line or line.startswith("duckrank convert")
    assert result.stdout.strip() or writes_a_file


def test_setup_command_evaluates_the_sample_data(sandbox):
    first = blocks("console")[0].strip()
    evaluation = first.split("&&")[-1].strip()
    assert evaluation.startswith(".venv/bin/duckrank eval data/")
    result = subprocess.run(duckrank_command() + shlex.split(evaluation)[1:], cwd=sandbox, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert "ndcg@10" in result.stdout


def test_test_command_is_what_ci_runs():
    second = blocks("console")[1].strip()
    assert "pip install -e '.[test,spark,plot]'" in second and second.endswith("python -m pytest")
    # Microsoft Recommenders, an oracle: its heavy dependency tree (and its pandas < 3 pin) left out
    assert "pip install --no-deps recommenders==1.2.1" in second
    ci = (REPO / ".ci" / "run").read_text()
    assert "README.md" in ci and "-e '.\\[test" in ci  # CI greps this very line out of the README
    assert "DUCKRANK_CI=1" in ci  # under which an oracle from outside PyPI may not skip


def test_shell_example_runs():
    shell = duckdb_shell()
    result = subprocess.run([shell], input=blocks("sql")[0], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and not result.stderr, result.stderr
    assert "ndcg_cut_10" in result.stdout


@pytest.mark.parametrize("script", blocks("sql")[1:])
def test_every_other_shell_example_runs(script):
    shell = duckdb_shell()
    result = subprocess.run([shell], input=script, cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0 and not result.stderr, result.stderr
    assert result.stdout.strip()
