"""The Spark engine (duckrank/spark) against the DuckDB engine: the same per-query numbers.

Every registered measure (derived from the registry through tests/test_front_doors.py, so a new
measure is covered without touching this file) under each convention setting of the front-door
tests, and every option and gain under the default conventions, on one data set that joins
trec_eval's conformance data and adversarial cases (tests/trec_adversarial.py: text, numeric and
unicode ids, extreme and tied scores, negative grades, queries only in one file), with the run read
from a hive-partitioned Parquet folder. Each test is one Spark job; agreement is to 1e-12 per
(query, measure). Skips without pyspark or Java, fails in CI (tests/spark_support.py). Every test
that runs Spark is in this module, so that a test run starts one JVM (its `spark` fixture's).
Time: 206 s alone on an idle 2-core machine, 400 s of one worker's in the whole suite (the option
test alone 46 s: 167 measures, a 313 kB statement), a fifth to a third of the suite; rendering the
statements and Spark's analysis and optimisation of them are most of it, the session interpreting
the expressions (spark_support.session).
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
    from duckrank.options import SAMPLED_OPTIONS

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

    _, per_query_sql, _, _ = duckrank_spark._prepare(spark, qrels, run, measures, dict(conventions))
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


def test_summary_is_the_duckdb_engines(spark, inputs):
    """Both engines summarise by the planner's rules (duckrank.plan.SUMMARY_SQL: means and
    geometric means summed in query order, counters summed): the same bits, not just close."""
    import duckrank
    from duckrank import spark as duckrank_spark

    qrels, run = inputs
    measures = ["map", "ndcg@10", "P@5", "recip_rank", "ERR@20", "gm_map", "num_ret", "num_rel_ret", "num_q"]
    got = dict(duckrank_spark.evaluate(spark, qrels, run, measures).collect())
    assert got == duckrank.evaluate(qrels, run, measures)


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


def test_missing_columns_are_the_duckdb_engines_message(spark, tmp_path):
    """An input without a column says what the DuckDB engine says (one function words it for both):
    the qrels and the run swapped, or the one option that names the column that is missing."""
    import duckrank
    from duckrank import InputError
    from duckrank import spark as duckrank_spark

    qrels, run = tmp_path / "qrels.parquet", tmp_path / "run.parquet"
    duckdb.sql(f"COPY (SELECT 'q1' AS query_id, 'd1' AS doc_id, 1 AS relevance) TO '{qrels}' (FORMAT parquet)")
    duckdb.sql(f"COPY (SELECT 'q1' AS query_id, 'd1' AS doc_id, 1.0 AS points) TO '{run}' (FORMAT parquet)")
    for first, second, options in ((run, qrels, {}), (qrels, run, {}), (qrels, run, {"score_col": "pts"})):
        with pytest.raises(InputError) as on_duckdb:
            duckrank.evaluate(str(first), str(second), ["map"], **options)
        with pytest.raises(InputError) as on_spark:
            duckrank_spark.evaluate(spark, str(first), str(second), ["map"], **options)
        assert str(on_spark.value) == str(on_duckdb.value)
    assert "has no column 'score' (from 'pts'); its columns are 'query_id', 'doc_id', 'points'; name yours with " \
           "score_col=" == str(on_spark.value).split(f"run '{run}' ")[1]


def test_cli_engine_spark(spark, inputs):
    """duckrank eval --engine spark -m all_trec -q --format trec prints the DuckDB engine's bytes,
    relstring's text included (the session is reused), with Spark compiling the expressions as it
    does by default (the other tests interpret them: spark_support.session)."""
    from helpers import run as cli

    qrels, run = inputs
    arguments = ["eval", qrels, run, "-m", "all_trec", "-q", "--format", "trec"]
    with spark_support.compiled(spark):
        spark_out = cli(*arguments, "--engine", "spark")
    duckdb_out = cli(*arguments)
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


# TREC text on Spark (duckrank/spark/_trec.py): read as the DuckDB engine reads it, or refused.
# Cases of Spark's own beside tests/test_trec_text.py's: where a rule needs the line order (line 1's
# byte-order mark, qrels comments in a row) or a Java regex might read otherwise than DuckDB's.
SPARK_TREC_CASES = {
    "run, byte-order mark on line 1": ("trec_run", "\ufeffq1 Q0 d1 1 2 r\n"),
    "run, byte-order mark on a later line (part of the id)": ("trec_run", "q1 Q0 d1 1 2 r\n\ufeffq2 Q0 d1 1 2 r\n"),
    "run, not UTF-8": ("trec_run", b"q1 Q0 d1 1 2 r\nq1 Q0 d\xff 2 1 r\n"),
    "run, NUL byte": ("trec_run", b"q1 Q0 d1 1 2 r\nq1 Q0 d\x002 2 1 r\n"),
    "run, line separator after the score": ("trec_run", "q1 Q0 d1 1 2\u2028 r\n"),
    "run, comments and blank lines only": ("trec_run", "# nothing\n\n"),
    "run, last tag after a comment": ("trec_run", "q1 Q0 d1 1 2 first\nq1 Q0 d2 2 1 last\n# q1 Q0 d3 3 0 not\n"),
    "qrels, comments apart": ("trec_qrels", "# a\n\n# b\nq1 0 d1 1\n# c\nq1 0 d2 2\n"),
    "qrels, comments in a row after judgments": ("trec_qrels", "q1 0 d1 1\n#a\n#b 0 d2 1\nq1 0 d3 0\n"),
    "qrels, line separator after the grade": ("trec_qrels", "q1 0 d1 1\u2028\n"),
}


def duckdb_trec_read(path: str, fmt: str):
    """DuckDB's reading of a TREC file: (sorted rows, tag) or the line its refusal names (0: none)."""
    import re

    from duckrank.errors import InputError
    from duckrank.inputs import read_table

    con = duckdb.connect()
    try:
        source = read_table(con, path, fmt.removeprefix("trec_"), fmt=fmt)
        rows = sorted(tuple(map(repr, row[:3])) for row in con.sql(f"SELECT * FROM {source.view}").fetchall())
        return rows, source.name
    except InputError as error:
        found = re.search(r", line (\d+)", str(error))
        return int(found.group(1)) if found else 0
    finally:
        con.close()


def test_trec_text_reads_as_the_duckdb_engine_reads_it(spark, tmp_path):
    """Every case of tests/test_trec_text.py (the common layout, the layouts only DuckDB's line reader
    reads, the bad lines) and Spark's own: Spark keeps the rows DuckDB keeps, with the same values
    and run tag, and refuses the files DuckDB refuses, at the same line. One check job and one read
    per layout (the files read together, told apart by Spark's file path)."""
    from urllib.parse import urlparse

    from pyspark.sql import functions as F
    from test_trec_text import BAD, FALLBACK, FAST

    from duckrank.spark import _trec

    cases = {name: case[:2] for name, case in {**FAST, **FALLBACK, **BAD}.items()} | SPARK_TREC_CASES
    files: dict[str, dict[str, str]] = {}
    for i, (name, (fmt, text)) in enumerate(cases.items()):
        path = tmp_path / f"case{i}.txt"
        path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
        files.setdefault(fmt, {})[str(path)] = name
    compared = 0
    for fmt, names in files.items():
        checked = {urlparse(file).path: found for file, found in _trec.checked(spark, list(names), fmt).items()}
        lines = _trec._lines(spark, list(names)).select("value", F.col("_metadata.file_path").alias("file"))
        read: dict[str, list] = {}
        for row in _trec.rows(lines, fmt, ("file",)).collect():
            read.setdefault(urlparse(row[0]).path, []).append(tuple(map(repr, row[1:])))
        for path, name in names.items():
            expected, found = duckdb_trec_read(path, fmt), checked[path]
            # a byte-order mark, which Spark's line reader drops, is looked for in the file's head
            problem = (1, None, "byte-order mark") if _trec._starts_with_bom(spark, path) else found.problem
            if isinstance(expected, int):
                assert problem is not None, f"{name}: Spark reads what DuckDB refuses"
                assert expected in (0, problem[0]), f"{name}: DuckDB names line {expected}, Spark {problem}"
            else:
                assert problem is None, f"{name}: Spark refuses {problem}"
                assert (sorted(read.get(path, [])), found.tag) == expected, name
            compared += 1
    assert compared == len(cases)


def test_trec_compression_is_told_by_the_name_on_spark(tmp_path):
    """Spark decompresses by the name, DuckDB by the bytes: a file they would read apart is refused."""
    import gzip

    from duckrank.spark._trec import _compression_problem

    (tmp_path / "run.gz").write_bytes(gzip.compress(b"q1 Q0 d1 1 2 r\n"))
    (tmp_path / "run.txt").write_bytes(gzip.compress(b"q1 Q0 d1 1 2 r\n"))
    (tmp_path / "plain.gz").write_bytes(b"q1 Q0 d1 1 2 r\n")
    assert _compression_problem(str(tmp_path / "run.gz"), "run", "'run.gz'") is None
    assert "is gzip-compressed but not named .gz" in _compression_problem(str(tmp_path / "run.txt"), "run", "'x'")
    assert "is named .gz but is not gzip-compressed" in _compression_problem(str(tmp_path / "plain.gz"), "run", "'x'")


def test_cli_engine_spark_reads_trec_text(spark, tmp_path, trec_data):
    """--engine spark on trec_eval's own files (gzip qrels; a run with junk past the sixth field)
    prints the DuckDB engine's bytes, its runid the run's last tag; a bad line is refused with the
    DuckDB engine's message."""
    import gzip

    from helpers import run as cli

    qrels = tmp_path / "qrels.test.gz"
    qrels.write_bytes(gzip.compress((trec_data / "qrels.test").read_bytes()))
    arguments = ["eval", str(qrels), str(trec_data / "results.trunc"), "-m", "runid", "-m", "map", "-m", "P@5",
                 "-q", "--format", "trec"]
    spark_out = cli(*arguments, "--engine", "spark")
    duckdb_out = cli(*arguments)
    assert spark_out.exit_code == 0, spark_out.output
    assert "runid" in spark_out.stdout and spark_out.stdout == duckdb_out.stdout
    assert spark_out.stderr == duckdb_out.stderr
    bad = tmp_path / "bad.run"
    bad.write_text("q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 high r\n")
    arguments = ["eval", str(trec_data / "qrels.test"), str(bad), "-m", "map"]
    spark_out = cli(*arguments, "--engine", "spark")
    duckdb_out = cli(*arguments)
    assert spark_out.exit_code == duckdb_out.exit_code == 1
    assert "line 2" in spark_out.stderr and spark_out.stderr == duckdb_out.stderr


def test_run_id_names_the_run(spark, tmp_path, inputs):
    """A run's one run_id names it, as in the DuckDB engine (the runid line of --format trec); a
    run_id column holding several runs is refused (the DuckDB engine scores each apart)."""
    from duckrank import InputError
    from duckrank import spark as duckrank_spark

    qrels, run = inputs
    con = duckdb.connect()
    named, several = tmp_path / "named.parquet", tmp_path / "several.parquet"
    con.execute(f"COPY (SELECT *, 'bm25' AS run_id FROM read_parquet('{run}/*/*.parquet')) TO '{named}'")
    con.execute(f"COPY (SELECT *, CASE WHEN doc_id < 'm' THEN 'a' ELSE 'b' END AS run_id "
                f"FROM read_parquet('{run}/*/*.parquet')) TO '{several}'")
    con.close()
    assert duckrank_spark._view(spark, str(named), "run", {}).name == "bm25"
    with pytest.raises(InputError, match=r"holds several runs in its run_id column \('a', 'b'\)"):
        duckrank_spark._view(spark, str(several), "run", {})


# ---------------------------------------------------------------------------------------------
# The Spark cases of other subjects (hostile names, cut messages, list runs), kept here so that a
# test run starts one JVM: a second one, in another xdist worker, cost 10-20 s of CPU to start and
# tens of seconds more of cold planning for these few queries.

DATA = Path(__file__).resolve().parent.parent / "data"
LONG_ID = "x" * 100_000


def test_sql_spark_reads_the_quoted_table_on_spark(spark):
    """The query `duckrank sql --dialect spark` prints for odd table names runs on Spark and reads them."""
    import duckrank
    from helpers import run as cli

    spark.read.parquet(str(DATA / "run.parquet")).createOrReplaceTempView("duckrank_names_run")
    spark.read.parquet(str(DATA / "qrels.parquet")).createOrReplaceTempView("duckrank_names_qrels")
    spark.sql("CREATE OR REPLACE TEMP VIEW `we'ird\"t ``r` AS SELECT * FROM duckrank_names_run")
    spark.sql("CREATE OR REPLACE TEMP VIEW `select` AS SELECT * FROM duckrank_names_qrels")
    result = cli("sql", "--dialect", "spark", "-m", "map", "--run-table", "`we'ird\"t ``r`",
                 "--qrels-table", "`select`")
    assert result.exit_code == 0, result.output
    (row,) = spark.sql(result.stdout).collect()
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map"])["map"]
    assert row["value"] == pytest.approx(expected, abs=1e-12)


def test_spark_evaluate_reads_quoted_table_names(spark):
    import duckrank
    from duckrank import spark as duckrank_spark

    spark.read.parquet(str(DATA / "run.parquet")).createOrReplaceTempView("duckrank_names_run")
    spark.sql("CREATE OR REPLACE TEMP VIEW `we'ird\"t ``r` AS SELECT * FROM duckrank_names_run")
    rows = duckrank_spark.evaluate(spark, str(DATA / "qrels.parquet"), "`we'ird\"t ``r`", ["map"]).collect()
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map"])["map"]
    assert rows[0]["value"] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(duckrank.InputError, match="is neither a Spark table nor a file"):
        duckrank_spark.evaluate(spark, str(DATA / "qrels.parquet"), "duckrank_names_run -- c", ["map"])


def test_spark_column_names_are_quoted_identifiers(spark):
    """score_col with backticks is the column of that name, never an expression over other columns:
    a name that would negate the scores if spliced leaves MAP unchanged; backticks in query_col work."""
    import duckrank
    from duckrank import spark as duckrank_spark

    score, query = "s` * -1 + 0 * `s", "q`id"
    run = spark.read.parquet(str(DATA / "run.parquet"))
    hostile = run.select(run["query_id"].alias(query), "doc_id", run["score"].alias(score),
                         (run["score"] * 0).alias("s"))
    qrels = spark.read.parquet(str(DATA / "qrels.parquet"))
    qrels = qrels.select(qrels["query_id"].alias(query), "doc_id", "relevance")
    expected = duckrank.evaluate(str(DATA / "qrels.parquet"), str(DATA / "run.parquet"), ["map", "P@5"])
    rows = duckrank_spark.evaluate(spark, qrels, hostile, ["map", "P@5"], score_col=score, query_col=query).collect()
    assert {row["measure"]: row["value"] for row in rows} == pytest.approx(expected, abs=1e-12)


def test_a_long_id_is_cut_in_the_spark_engines_message_too(spark):
    """The Spark rendering of duckrank.show: a text's length stays LENGTH, and printf groups the digits."""
    from duckrank import InputError
    from duckrank import spark as duckrank_spark

    qrels = spark.createDataFrame([("q1", "d1", 1)], "query_id string, doc_id string, relevance int")
    doc = "d\n" + LONG_ID  # a line break too: escaped by chr(92), as Spark reads backslashes in literals
    run_frame = spark.createDataFrame([("q1", doc, 1.0), ("q1", doc, 2.0)],
                                      "query_id string, doc_id string, score double")
    with pytest.raises(Exception) as raised:
        duckrank_spark.evaluate(spark, qrels, run_frame, ["map"]).collect()
    error = duckrank_spark.input_error(raised.value)
    assert isinstance(error, InputError)
    assert "doc_id 'd\\nxxx" in str(error) and "'…(99,922 more characters); each (query_id, doc_id)" in str(error), error
    assert len(str(error)) < 600


def test_the_spark_engine_refuses_list_runs_and_the_new_options(spark, tmp_path):
    """A run holding each query's ranking as a list (test_lists.py), and exclude= and segments=, are
    the DuckDB engine's alone: refused by name, never read as something else."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from duckrank import InputError, OptionError
    from duckrank import spark as duckrank_spark

    entry = pa.struct([("doc_id", pa.string()), ("score", pa.float64())])
    recs = [[{"doc_id": "i1", "score": 0.5}, {"doc_id": "i2", "score": 0.5}], []]
    pq.write_table(pa.table({"query_id": ["u1", "u2"], "recs": pa.array(recs, pa.list_(entry))}),
                   tmp_path / "recs.parquet")
    pq.write_table(pa.table({"query_id": ["u1", "u1"], "doc_id": ["i1", "i2"], "score": [0.5, 0.5]}),
                   tmp_path / "long.parquet")
    pq.write_table(pa.table({"query_id": ["u1", "u2"], "doc_id": ["i2", "i3"], "relevance": [1, 2]}),
                   tmp_path / "qrels.parquet")
    with pytest.raises(InputError, match=r"holds its rankings as lists \(column 'recs'\), which the Spark engine"):
        duckrank_spark.evaluate(spark, str(tmp_path / "qrels.parquet"), str(tmp_path / "recs.parquet"), ["map"])
    for option in ("exclude", "segments"):
        with pytest.raises(OptionError, match=rf"the Spark engine does not take {option}"):
            duckrank_spark.evaluate(spark, str(tmp_path / "qrels.parquet"), str(tmp_path / "long.parquet"), ["map"],
                                    **{option: str(tmp_path / "long.parquet")})
