"""The macro library in the real DuckDB shell: `.read sql/duckrank.sql` from the repository root.

The shell is the duckdb-cli binary of the test extra (tests/helpers.py finds it).
"""

from __future__ import annotations

from pathlib import Path

from helpers import run_shell


def load_trec(trec_data: Path) -> str:
    return f"""
CREATE TABLE qrels AS
    SELECT column0 AS query_id, column2 AS doc_id, column3 AS relevance
    FROM read_csv('{trec_data / "qrels.test"}', delim = ' ', header = false,
                  columns = {{'column0': 'VARCHAR', 'column1': 'VARCHAR', 'column2': 'VARCHAR', 'column3': 'INTEGER'}});
CREATE TABLE run AS
    SELECT column0 AS query_id, column2 AS doc_id, column4 AS score
    FROM read_csv('{trec_data / "results.test"}', delim = '\\t', header = false,
                  columns = {{'column0': 'VARCHAR', 'column1': 'VARCHAR', 'column2': 'VARCHAR', 'column3': 'INTEGER',
                             'column4': 'DOUBLE', 'column5': 'VARCHAR'}});
"""


def expected(trec_data: Path, measure: str) -> dict[str, str]:
    out = {}
    for line in (trec_data / "out.test.aq").read_text().splitlines():
        name, query, value = (part.strip() for part in line.split("\t"))
        if name == measure:
            out[query] = value
    return out


def test_shell_loads_twice_and_matches_trec_eval(trec_data):
    script = (".read sql/duckrank.sql\n.read sql/duckrank.sql\n" + load_trec(trec_data)
              + "SELECT query_id, printf('%.4f', value) FROM duckrank.\"ndcg\"('qrels', 'run', k := 10) ORDER BY 1;\n"
              + "SELECT printf('%.4f', avg(value)) FROM duckrank.\"average_precision\"('qrels', 'run');\n")
    done = run_shell(script, "-csv", "-noheader")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    lines = done.stdout.split()
    per_query = dict(line.split(",") for line in lines[:-1])
    want = expected(trec_data, "ndcg_cut_10")
    assert per_query == {q: v for q, v in want.items() if q != "all"}
    assert lines[-1] == expected(trec_data, "map")["all"]


def test_shell_reports_a_bad_k_on_stderr(trec_data):
    script = (".read sql/duckrank.sql\n" + load_trec(trec_data)
              + "SELECT * FROM duckrank.\"ndcg\"('qrels', 'run', k := 0);\n")
    done = run_shell(script, "-csv", "-noheader")
    assert done.returncode != 0
    assert "duckrank: k must be a positive integer (or NULL for full depth); got '0'" in done.stderr
    assert done.stdout.strip() == ""
