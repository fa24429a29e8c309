"""Extreme numbers (issue 25, "Numbers"): a seed beyond a BIGINT is refused by name, with its range,
from the command line, Python and the SQL macro alike; never DuckDB's INT128 conversion error."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

import duckrank
from duckrank.cli import main

DATA = Path(__file__).resolve().parent.parent / "data"
RUNS = [str(DATA / "run.parquet"), str(DATA / "run.parquet")]
BIGINT = "from -9223372036854775808 to 9223372036854775807"


@pytest.mark.parametrize("seed", [str(10 ** 30), str(2 ** 63), "-1"])
def test_cli_compare_seed_out_of_range_is_a_usage_error(seed):
    result = CliRunner().invoke(main, ["compare", str(DATA / "qrels.parquet"), *RUNS, "--seed", seed])
    assert result.exit_code == 2, result.output
    assert f"Error: --seed must be a whole number from 0 to 9223372036854775807; got '{seed}'" in result.stderr
    assert "INT128" not in result.output and "Conversion" not in result.output


@pytest.mark.parametrize("seed", [10 ** 30, 2 ** 63, -2 ** 63 - 1, 10 ** 500])
def test_python_compare_seed_out_of_range_names_seed(seed):
    with pytest.raises(duckrank.OptionError, match=rf"^seed must be a whole number {BIGINT}; got "):
        duckrank.compare(str(DATA / "qrels.parquet"), RUNS, seed=seed)


def test_python_compare_largest_seed_works():
    result = duckrank.compare(str(DATA / "qrels.parquet"), RUNS, ["map"], run_names=["a", "b"], seed=2 ** 63 - 1, permutations=10,
                              bootstrap=10)
    assert len(result.records()) == 2


@pytest.mark.parametrize("seed", ["10::HUGEINT ** 30", "1e30", "-9223372036854775809::HUGEINT"])
def test_sql_compare_seed_out_of_range_names_seed(seed):
    con = duckrank.connect()
    con.execute("CREATE TABLE pq AS SELECT r AS run, 'map' AS metric, 'q' || i AS query_id, i / 10 AS value "
                "FROM range(5) t(i), (VALUES ('a'), ('b')) v(r)")
    with pytest.raises(duckdb.Error, match=rf"seed must be a whole number {BIGINT}"):
        con.sql(f"SELECT * FROM duckrank.compare('pq', seed := {seed}, permutations := 10, bootstrap := 10)").fetchall()
