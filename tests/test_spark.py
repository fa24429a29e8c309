"""The Spark engine (duckrank/spark) against the DuckDB engine: the same per-query numbers.

Every registered measure (derived from the registry through tests/test_front_doors.py, so a new
measure is covered without touching this file) under each convention setting of the front-door
tests, and every option and gain under the default conventions, on one data set that joins
trec_eval's conformance data and adversarial cases (tests/trec_adversarial.py: text, numeric and
unicode ids, extreme and tied scores, negative grades, queries only in one file), with the run read
from a hive-partitioned Parquet folder. Each test is one Spark job; agreement is to 1e-12 per
(query, measure). Skips without pyspark or Java, fails in CI (tests/spark_support.py).
Time: 12 min on the 2-core machine under a load average of 11-17 (the option test alone 219 s):
far over the ~90 s the module was given.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest
import spark_support
import trec_adversarial
from front_door_cases import (
    GAIN_SETTING,
    RANKING,
    SETTINGS,
    SUMMARY_ONLY,
    cases_for,
    metric_cases,
)
from trec_files import read_qrels, read_run

TOLERANCE = 1e-12
ADVERSARIAL_SEEDS = range(6)
SNAPSHOT = Path(__file__).parent / "data" / "spark" / "ndcg10_map_p5.sql"


@pytest.fixture(scope="module")
def spark():
    spark_support.require()
    return spark_support.session()


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, trec_data) -> tuple[str, str]:
    return write_inputs(tmp_path_factory.mktemp("spark_parity"), trec_data)


def write_inputs(folder: Path, trec_data: Path) -> tuple[str, str]:
    """qrels.parquet and a run folder partitioned by source (hive layout: run/source=.../*.parquet)."""
    qrels_rows, run_rows = [], []
    qrels, run = read_qrels(trec_data / "qrels.test"), read_run(trec_data / "results.test")
    qrels_rows += [(f"c/{q}", d, int(g), "conformance") for q, d, g in qrels.itertuples(index=False)]
    run_rows += [(f"c/{q}", d, float(s), "conformance") for q, d, s in run.itertuples(index=False)]
    for seed in ADVERSARIAL_SEEDS:
        case = trec_adversarial.generate(seed)
        qrels_rows += [(f"a{seed}/{q}", d, int(g), "adversarial") for q, _, d, g in case.qrels]
        run_rows += [(f"a{seed}/{q}", d, float(s), "adversarial") for q, _, d, _, s, _ in case.run]
    con = duckdb.connect()
    con.execute("CREATE TABLE q (query_id VARCHAR, doc_id VARCHAR, relevance INTEGER, source VARCHAR)")
    con.executemany("INSERT INTO q VALUES (?, ?, ?, ?)", qrels_rows)
    con.execute("CREATE TABLE r (query_id VARCHAR, doc_id VARCHAR, score DOUBLE, source VARCHAR)")
    con.executemany("INSERT INTO r VALUES (?, ?, ?, ?)", run_rows)
    con.execute(f"COPY (SELECT query_id, doc_id, relevance FROM q) TO '{folder / 'qrels.parquet'}' (FORMAT parquet)")
    con.execute(f"COPY r TO '{folder / 'run'}' (FORMAT parquet, PARTITION_BY (source))")
    con.close()
    return str(folder / "qrels.parquet"), str(folder / "run")


def spark_conventions(setting: str) -> dict:
    """A setting's conventions as the Spark engine takes them: ties := 'input' needs the input
    order, which Spark refuses (test_refusals); its other conventions run under 'trec'."""
    conventions = dict(SETTINGS[setting])
    if conventions.get("ties") == "input":
        conventions["ties"] = "trec"
    return conventions


def unsampled(cases) -> list[str]:
    """The cases' measures, less the sampled ones, which the Spark engine refuses (test_sampled.py)."""
    from duckrank.registry import SAMPLED_OPTIONS

    return list(dict.fromkeys(case.measure for case in cases if not set(dict(case.options)) & set(SAMPLED_OPTIONS)))


def setting_measures(qrels: str, run: str, setting: str) -> list[str]:
    """Every registered measure at its defaults, the summary-only ones too; under ties := 'average'
    those the DuckDB engine accepts (the metrics not linear in the ranking refuse it)."""
    import duckrank

    measures = unsampled(case for metric in RANKING for case in metric_cases(metric, "defaults"))
    measures += [m.trec_eval[0].name for m in SUMMARY_ONLY]
    conventions = spark_conventions(setting)
    if conventions.get("ties") != "average":
        return measures
    kept = []
    for measure in measures:
        text = duckrank.parse_measure(measure).metric.value == "text"  # relstring: per query only
        try:
            duckrank.evaluate(qrels, run, [measure], per_query=text, **conventions)
            kept.append(measure)
        except duckrank.InputError:
            pass
    return kept


def duckdb_values(qrels: str, run: str, measures: list[str], conventions: dict) -> dict:
    """{(query_id, measure index): value} of every measure, the summary-only ones too; a text
    measure's value (relstring) is its text."""
    from duckrank.evaluation import compute

    results = compute(qrels, run, measures, **conventions)
    text = "text" if results.has_text else "NULL"
    rows = results.con.execute(f"SELECT query_id, measure_index, value, {text} FROM {results.table} "
                               f"WHERE query_id IS NOT NULL").fetchall()
    results.con.close()
    return {(str(q), int(i)): v if t is None else t for q, i, v, t in rows}


def same(a, b) -> bool:
    if a is None or b is None or a == b or isinstance(a, str) or isinstance(b, str):  # equal infinities, texts
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= TOLERANCE


def assert_parity(spark, qrels: str, run: str, measures: list[str], conventions: dict) -> None:
    from duckrank import spark as duckrank_spark

    _, per_query_sql, _ = duckrank_spark._prepare(spark, qrels, run, measures, dict(conventions))
    got = {(str(q), int(i)): v if t is None else t for q, i, v, t in spark.sql(per_query_sql).collect()}
    expected = duckdb_values(qrels, run, measures, conventions)
    assert len(expected) > 20 * len(measures)
    wrong = [(measures[i], q, expected.get((q, i)), got.get((q, i)))
             for q, i in sorted(set(expected) | set(got)) if not same(expected.get((q, i)), got.get((q, i)))]
    assert not wrong, f"{len(wrong)} of {len(expected)} values differ, e.g. {wrong[:5]}"


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_parity(spark, inputs, setting):
    """Every registered measure under each convention setting of the front-door tests."""
    qrels, run = inputs
    assert_parity(spark, qrels, run, setting_measures(qrels, run, setting), spark_conventions(setting))


def test_parity_of_options(spark, inputs):
    """Every option of every measure at a non-default value, and the gains (a gain map, exp, raw),
    under the default conventions: several ranking passes in one Spark job."""
    qrels, run = inputs
    measures = unsampled([*cases_for("defaults"), *cases_for(GAIN_SETTING)])
    assert_parity(spark, qrels, run, measures, {})


def test_parity_of_recommender_spellings(spark, inputs):
    """Microsoft Recommenders' spellings (ndcg_at_k scores the queries the run misses, a per-measure
    complete; r_precision_at_k has no value for some queries), binary gains and a gain map option."""
    qrels, run = inputs
    measures = ["precision_at_k", "recall_at_k@5", "ndcg_at_k", "ndcg_at_k@3", "map_at_k", "ms_map@5",
                "r_precision_at_k", "nDCG(gain=binary)@10", "nDCG(gain_map={1:3,2:9})@5"]
    assert_parity(spark, qrels, run, measures, {})
    assert_parity(spark, qrels, run, ["nDCG@10", "G"], {"gain": "binary", "rel_level": 2})
    import duckrank
    from duckrank import spark as duckrank_spark

    (row,) = duckrank_spark.evaluate(spark, qrels, run, ["nDCG@5"], gain_map={1: 3, 2: 9}).collect()
    spelled = "nDCG(gain_map={1:3,2:9})@5"
    assert same(row["value"], duckrank.evaluate(qrels, run, [spelled])[spelled])


def test_refusals(spark, inputs):
    """What Spark cannot compute exactly is refused, never approximated."""
    from duckrank import OptionError
    from duckrank import spark as duckrank_spark

    qrels, run = inputs
    with pytest.raises(OptionError, match="ties := 'input' needs the order of the input rows"):
        duckrank_spark.evaluate(spark, qrels, run, ["map"], ties="input")
    with pytest.raises(OptionError, match="read a whole log"):
        duckrank_spark.evaluate(spark, qrels, run, ["gauc"])
    with pytest.raises(OptionError, match="ties must be one of"):
        duckrank_spark.evaluate(spark, qrels, run, ["map"], ties="random")


def test_bad_data_is_duckranks_message(spark, tmp_path):
    """A run that lists a doc twice fails with the DuckDB engine's message, not a Spark trace."""
    from duckrank import InputError
    from duckrank import spark as duckrank_spark

    qrels = spark.createDataFrame([("q1", "d1", 1)], "query_id string, doc_id string, relevance int")
    run = spark.createDataFrame([("q1", "d1", 1.0), ("q1", "d1", 2.0)], "query_id string, doc_id string, score double")
    frame = duckrank_spark.evaluate(spark, qrels, run, ["map"])
    with pytest.raises(Exception) as raised:
        frame.collect()
    error = duckrank_spark.input_error(raised.value)
    assert isinstance(error, InputError)
    assert "has 2 rows for query_id 'q1', doc_id 'd1'" in str(error)


def test_cli_engine_spark(spark, inputs):
    """duckrank eval --engine spark -m all_trec -q --format trec prints the DuckDB engine's bytes,
    relstring's text included (the session is reused)."""
    from click.testing import CliRunner

    from duckrank.cli import main

    qrels, run = inputs
    arguments = ["eval", qrels, run, "-m", "all_trec", "-q", "--format", "trec"]
    spark_out = CliRunner().invoke(main, [*arguments, "--engine", "spark"])
    duckdb_out = CliRunner().invoke(main, arguments)
    assert spark_out.exit_code == 0, spark_out.output
    assert spark_out.stderr == duckdb_out.stderr and "qrels queries are not in run" in spark_out.stderr  # the note
    assert "relstring" in spark_out.stdout and spark_out.stdout == duckdb_out.stdout


def test_sql_snapshot():
    """The Spark SQL of a few measures, as generated: a change of sqlglot or of a macro shows up
    here as a diff. After checking the diff, regenerate with
    duckrank sql --dialect spark -m ndcg@10 -m map -m P@5 -o tests/data/spark/ndcg10_map_p5.sql"""
    spark_support.require("rendering Spark SQL")
    from duckrank import spark as duckrank_spark

    assert duckrank_spark.sql(["ndcg@10", "map", "P@5"]) == SNAPSHOT.read_text()


def test_readme_example(spark, monkeypatch, capsys):
    """The README's Spark example runs (on the test session, which getOrCreate() returns)."""
    import re

    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python spark\n(.*?)```", readme, re.DOTALL)
    monkeypatch.chdir(Path(__file__).parent.parent)
    exec(compile(code, "README.md", "exec"), {})
    assert "ndcg@10" in capsys.readouterr().out


def test_base_install_needs_no_spark():
    """import duckrank (and its CLI) loads neither pyspark nor sqlglot: DuckDB stays the default."""
    import subprocess
    import sys

    code = ("import sys, duckrank, duckrank.cli, duckrank.evaluation; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'sqlglot', 'py4j')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
