"""trec_eval's relstring: text per query, through every door.

Its characters are checked against trec_eval 10 itself in tests/test_registry_oracles.py (every
cutoff, -l, -J, generated data) and tests/test_trec_eval_binary.py (`-m all_trec -q`); here, the
cases written out by hand from m_relstring.c's definition, and what each front door does with a
measure that is text and has no summary.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers import run

import duckrank

# q1 ranks d1 (grade 3), u (not in the qrels), d2 (-1: pooled, not judged), d3 (12), d4 (0),
# d5 (1.7, read as trec_eval's atol reads "1.7": 1); q2 retrieves nothing judged; q3 is only in the
# qrels; q4 has no relevant doc.
QRELS = pd.DataFrame([("q1", "d1", 3.0), ("q1", "d2", -1.0), ("q1", "d3", 12.0), ("q1", "d4", 0.0),
                      ("q1", "d5", 1.7), ("q2", "x", 1.0), ("q3", "d1", 1.0), ("q4", "d1", 0.0)],
                     columns=["query_id", "doc_id", "relevance"])
RUN = pd.DataFrame([("q1", "d1", 6.0), ("q1", "u", 5.0), ("q1", "d2", 4.0), ("q1", "d3", 3.0), ("q1", "d4", 2.0),
                    ("q1", "d5", 1.0), ("q2", "y", 1.0), ("q4", "d1", 1.0)],
                   columns=["query_id", "doc_id", "score"])
EXPECTED = {"q1": "3-.>01", "q2": "-", "q4": "0"}


def per_query(measures, **options) -> dict[tuple[str, str], str]:
    relation = duckrank.evaluate(QRELS, RUN, measures, per_query=True, **options)
    return {(measure, query): text for query, measure, _, text in relation.fetchall()}


def test_each_doc_is_one_character_of_its_judgment():
    assert per_query(["relstring"]) == {("relstring", q): text for q, text in EXPECTED.items()}
    assert per_query(["relstring.3", "relevance_string@2"]) == {
        **{("relstring.3", q): text[:3] for q, text in EXPECTED.items()},
        **{("relevance_string@2", q): text[:2] for q, text in EXPECTED.items()}}


def test_conventions_apply_as_to_every_measure():
    # -J keeps the judged docs (grade >= 0); -M cuts first; -c adds q3 with nothing retrieved
    assert per_query(["relstring"], unjudged="skip")[("relstring", "q1")] == "3>01"
    assert per_query(["relstring"], max_rank=2)[("relstring", "q1")] == "3-"
    assert per_query(["relstring"], complete=True)[("relstring", "q3")] == ""
    assert ("relstring", "q4") not in per_query(["relstring"], empty="skip")


def test_numbers_beside_it_are_unchanged():
    rows = duckrank.evaluate(QRELS, RUN, ["P.5", "relstring"], per_query=True).fetchall()
    assert {(q, m): (v, t) for q, m, v, t in rows if q == "q1"} == {
        ("q1", "P.5"): (0.4, None), ("q1", "relstring"): (None, EXPECTED["q1"])}


def test_a_summary_has_none():
    with pytest.raises(duckrank.OptionError, match="'relstring' is text for each query, with no summary"):
        duckrank.evaluate(QRELS, RUN, ["map", "relstring"])
    assert "relstring" not in duckrank.evaluate(QRELS, RUN, "all_trec")


def test_ties_average_is_refused():
    with pytest.raises(duckrank.InputError, match="relstring is not"):
        per_query(["relstring"], ties="average")


@pytest.fixture
def files(tmp_path):
    qrels, run = tmp_path / "qrels.parquet", tmp_path / "run.parquet"
    QRELS.to_parquet(qrels)
    RUN.to_parquet(run)
    return str(qrels), str(run)


def cli(*arguments: str) -> str:
    result = run("eval", *arguments, "--quiet")
    assert result.exit_code == 0, result.output
    return result.stdout


def test_cli_prints_it_quoted_per_query_as_trec_eval(files):
    lines = cli(*files, "-m", "relstring", "-m", "P.5", "-q", "--format", "trec").splitlines()
    assert lines[:2] == ["P_5                   \tq1\t0.4000", "relstring             \tq1\t'3-.>01'"]
    assert "relstring             \tq2\t'-'" in lines
    assert not [line for line in lines if line.startswith("relstring") and "\tall\t" in line]
    assert cli(*files, "-m", "relstring", "--format", "trec") == ""  # no summary: nothing, as trec_eval


def test_machine_formats_carry_a_text_column(files):
    rows = [json.loads(line) for line in cli(*files, "-m", "relstring", "-m", "P.5", "-q", "-f", "jsonl").splitlines()]
    assert {"query_id": "q1", "metric": "relstring", "value": None, "text": "3-.>01"} in rows
    assert {"query_id": "all", "metric": "P_5", "value": pytest.approx(0.4 / 3), "text": None} in rows
    table = cli(*files, "-m", "relstring", "-q", "-f", "table")
    assert "'3-.>01'" in table
