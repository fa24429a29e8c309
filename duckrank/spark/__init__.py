"""duckrank on Apache Spark: the same measures, computed by Spark SQL rendered from sql/.

    from duckrank import spark as duckrank_spark
    per_query = duckrank_spark.evaluate(spark, "qrels.parquet", "run.parquet", ["ndcg@10", "map"],
                                        per_query=True)

Needs the `spark` extra (pyspark, sqlglot) and Java. The SQL is duckrank's own macros, inlined and
rendered for Spark by duckrank/spark/_render.py; `duckrank sql --dialect spark -m ...` prints it.
Every measure of one ranking convention is one column of one wide row per query, unpivoted at the
end, so Spark plans one pass however many measures are asked for.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

from duckrank.errors import InputError, OptionError, one_per_line, quoted_path

# Options of duckrank.evaluate that the Spark engine honours; the rest are refused, never ignored.
CONVENTION_OPTIONS = ("ties", "rel_level", "max_rank", "complete", "empty", "unjudged", "gain", "duplicates")
COLUMN_OPTIONS = {"query_col": "query_id", "doc_col": "doc_id", "score_col": "score", "relevance_col": "relevance"}
_counter = itertools.count()
# A Spark table name: up to three dot-separated identifiers (catalog.schema.table), each plain
# (letters, digits, _) or quoted in backticks, a backtick inside doubled (`my ``odd`` table`).
_NAME_PART = r"`(?:[^`]|``)+`|\w+"


def table_parts(name: Any) -> list[str] | None:
    """The identifiers of a table name such as logs.run or `my db`.`run 2`, unquoted; None when
    `name` is not one. The rendered SQL quotes them again: a name is never parsed as SQL."""
    if not isinstance(name, str) or not re.fullmatch(rf"(?:{_NAME_PART})(?:\.(?:{_NAME_PART})){{0,2}}", name):
        return None
    return [part[1:-1].replace("``", "`") if part.startswith("`") else part
            for part in re.findall(_NAME_PART, name)]


def table_problem(option: str, name: Any) -> str | None:
    """Why `name` is not a table name, for the message of the option (or argument) that gave it."""
    if table_parts(name) is not None:
        return None
    return (f"{option} must be a table name: up to three identifiers joined by dots (logs.run), each of letters, "
            f"digits and _ or quoted in backticks (`my run`, a backtick inside doubled); got {name!r}")


def _column(name: str) -> str:
    """A column name as a quoted Spark identifier: backticks around it, a backtick inside doubled."""
    return "`" + name.replace("`", "``") + "`"


def _conventions(options: dict[str, Any], parsed: list) -> tuple[dict[str, Any], list]:
    """The conventions with the registry's defaults, checked exactly as the DuckDB engine checks them
    (the checks are the library's, run on DuckDB: they read no data)."""
    from duckrank._library import shared_cursor
    from duckrank._checks import option_problems
    from duckrank.measures import with_gain_map
    from duckrank.options import CONVENTIONS

    sampled = sorted({name for name in ("sampled", "correction") if name in options}
                     | {name for m in parsed for name, _ in m.given if name in ("sampled", "correction")})
    if sampled:
        raise OptionError(f"the Spark engine does not correct sampled metrics ({', '.join(sampled)}); use the DuckDB "
                          f"engine for them")
    diverse = [m.spelling for m in parsed if m.metric.reads == "subtopics"]
    if diverse:
        raise OptionError(f"{', '.join(diverse)} read subtopic qrels (the diversity family), which the Spark engine "
                          f"does not compute; use the DuckDB engine for them (--engine duckdb)")
    unknown = sorted(set(options) - set(CONVENTION_OPTIONS) - {"gain_map"})
    if unknown:
        raise OptionError(f"the Spark engine does not take {', '.join(unknown)}; it takes "
                          f"{', '.join(CONVENTION_OPTIONS)} and the column names {', '.join(COLUMN_OPTIONS)}")
    given = {name: value for name, value in options.items() if value is not None}
    if given.get("gain") is not None:
        parsed = [m.with_default("gain", given["gain"]) for m in parsed]
    if "gain_map" in given:
        parsed = with_gain_map(parsed, given.pop("gain_map"))
    con = shared_cursor()
    try:
        problems = option_problems(con, given, parsed)
    finally:
        con.close()
    if problems:
        raise OptionError(*one_per_line(problems))
    conventions = {name: convention.param.default for name, convention in CONVENTIONS.items()}
    conventions.update({name: value for name, value in given.items() if name in CONVENTIONS})
    if conventions["ties"] == "input":
        raise OptionError("ties := 'input' needs the order of the input rows, which Spark does not keep; "
                          "use ties := 'trec' (or pessimistic, optimistic, average) with the Spark engine")
    log_measures = [m.spelling for m in parsed if m.summary == "log"]
    if log_measures:
        raise OptionError(f"{', '.join(log_measures)} read a whole log, which the Spark engine does not compute; "
                          f"use the DuckDB engine for them")
    top_k_measures = [m.spelling for m in parsed if m.metric.reads == "top_k"]
    if top_k_measures:
        raise OptionError(f"{', '.join(top_k_measures)} read training interactions (train=, --train), which the "
                          f"Spark engine does not compute; use the DuckDB engine for them")
    return conventions, parsed


def _per_query_sql(qrels: str, run: str, parsed: list, conventions: dict[str, Any],
                   labels: tuple[str, str] = ("qrels", "run"), pretty: bool = False) -> str:
    """Spark SQL with columns (query_id, measure_index, value, text): for each group of measures
    sharing the ranking options, one ranked pass and one wide row per query, unpivoted with stack().
    text holds a text measure's value (relstring), NULL for the others, as in the DuckDB engine."""
    from duckrank.plan import ranking_passes
    try:
        from sqlglot import exp

        from duckrank import _inliner
        from duckrank.lean import shared_subexpressions
        from duckrank.spark import _render
    except ImportError:
        raise OptionError("rendering Spark SQL needs sqlglot: pip install 'duckrank[spark]'") from None

    tables = tuple(tuple(table_parts(name) or ()) for name in (qrels, run))  # checked by sql() or made by _view()
    parts = []
    for group, ranking in enumerate(ranking_passes(parsed, conventions)):
        indexes = ranking.measures
        empty = _render.spark_literal(conventions["empty"]).sql("duckdb")
        # the first pass checks the data; the others read the same inputs
        relation = _render.ranked_query(tables[0], tables[1], labels[0], labels[1], ranking.arguments,
                                        checked=group == 0)
        constants = _inliner.constant_columns(relation)
        # a subtree several measures compute is computed once, under them (duckrank.lean's rule)
        expressions, shared = shared_subexpressions([_inliner.with_constant_columns(_render.measure_expression(
            parsed[i].metric.per_query_value(parsed[i].aggregate_sql(), "q.num_rel", empty)).copy(), constants)
            for i in indexes])
        read = {dot.name for expression in (*expressions, *shared) for dot in expression.find_all(exp.Dot)}
        ranked = _inliner.narrowed_docs(relation, read).sql("spark", pretty=pretty)
        if shared:
            ranked = (f"SELECT q.*{''.join(f', {_render.spark_sql(tree)} AS s{i}' for i, tree in enumerate(shared))}"
                      f" FROM (\n{ranked}\n) q")
        columns = ", ".join(_render.spark_sql(expression) + f" AS m{i}" for i, expression in zip(indexes, expressions))
        stacked = ", ".join(f"{i}, CAST(NULL AS DOUBLE), m{i}" if parsed[i].metric.value == "text"
                            else f"{i}, m{i}, CAST(NULL AS STRING)" for i in indexes)
        parts.append(f"SELECT query_id, measure_index, value, text FROM (\n"
                     f"  SELECT query_id, stack({len(indexes)}, {stacked}) AS (measure_index, value, text) FROM (\n"
                     f"    SELECT q.query_id, {columns}\n"
                     f"    FROM (\n{ranked}\n) q)) WHERE value IS NOT NULL OR text IS NOT NULL")
    return "\nUNION ALL\n".join(parts)


def _summary_sql(per_query: str, parsed: list) -> str:
    """(measure, value) of each summarised measure: text ones (relstring) have no summary."""
    from duckrank.plan import SUMMARY_SQL
    from duckrank.spark._render import summary_sql

    summarised = [i for i, m in enumerate(parsed) if m.summary != "none"]
    if not summarised:
        return "SELECT CAST(NULL AS STRING) AS measure, CAST(NULL AS DOUBLE) AS value WHERE false"
    rules = " ".join(f"WHEN {i} THEN {summary_sql(SUMMARY_SQL[parsed[i].summary].format(value='value'))}"
                     for i in summarised)
    names = ", ".join(f"({i}, {_string(parsed[i].spelling)})" for i in summarised)
    return (f"SELECT m.measure, s.value FROM (SELECT measure_index, CASE measure_index {rules} END AS value "
            f"FROM ({per_query}) GROUP BY measure_index) s "
            f"JOIN (VALUES {names}) AS m(measure_index, measure) USING (measure_index) ORDER BY s.measure_index")


def _per_query_rows_sql(per_query: str, parsed: list) -> str:
    """(query_id, measure, value) of each measure reported per query, and text when one is text
    (value is NULL on its rows), as the DuckDB engine's Results.per_query."""
    names = ", ".join(f"({i}, {_string(m.spelling)})" for i, m in enumerate(parsed) if m.metric.per_query)
    text = ", p.text" if any(m.metric.value == "text" for m in parsed) else ""
    return (f"SELECT p.query_id, m.measure, p.value{text} FROM ({per_query}) p\n"
            f"JOIN (VALUES {names}) AS m(measure_index, measure) USING (measure_index)\n"
            f"ORDER BY p.query_id, p.measure_index\n")


def _string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql(measures: list[str] | str = ("map",), *, qrels: str = "qrels", run: str = "run", per_query: bool = False,
        **options: Any) -> str:
    """The Spark SQL that evaluates `measures` over the tables (or views) `qrels` (query_id, doc_id,
    relevance) and `run` (query_id, doc_id, score): the summary (measure, value), or per query
    (query_id, measure, value, and text when a measure is text: relstring). Runs anywhere Spark SQL does: Databricks, EMR, Spark Connect."""
    from duckrank.measures import parse_measures

    problems = [problem for problem in (table_problem("qrels", qrels), table_problem("run", run)) if problem]
    if problems:
        raise OptionError("\n".join(problems))
    parsed = parse_measures(list(measures) if not isinstance(measures, str) else [measures])
    conventions, parsed = _conventions(options, parsed)
    per_query_sql = _per_query_sql(qrels, run, parsed, conventions, (qrels, run), pretty=True)
    if per_query:
        return _per_query_rows_sql(per_query_sql, parsed)
    return _summary_sql(per_query_sql, parsed) + "\n"


@dataclass(frozen=True)
class _Input:
    """An input as a temporary view with the standard columns."""

    view: str
    label: str  # the path, the table, or DataFrame: how messages name it
    types: dict[str, str]  # the standard columns' Spark types
    name: str | None = None  # a run's name as the DuckDB engine gives it: its TREC tag, or its one run_id
    tag: str | None = None  # a TREC text run's tag of its last line (trec_eval's runid)


def _frame(spark: Any, source: Any, kind: str, fmt: str | None) -> tuple[Any, str, str | None]:
    """A DataFrame over a DataFrame, a table name, a Parquet path (file or folder, hive-partitioned
    too) or a TREC text file; the name messages use for it; and a TREC run's tag."""
    import os

    from pyspark.sql import DataFrame

    from duckrank.inputs import detect_format

    if isinstance(source, DataFrame):
        return source, "DataFrame", None
    if table_parts(source) is not None and spark.catalog.tableExists(source):
        return spark.table(source), source, None
    if not isinstance(source, str):
        raise InputError(f"{kind} must be a Spark DataFrame, a table name, a Parquet path or a TREC text file; got "
                         f"{type(source).__name__}")
    if source == "-":
        raise InputError(f"the Spark engine does not read standard input ('-' as the {kind}); give the {kind} file's "
                         f"path, or use the DuckDB engine")
    if not os.path.exists(source) and "://" not in source:
        raise InputError(f"{kind} {source!r} is neither a Spark table nor a file or folder; check the path")
    # a local file's format as the DuckDB engine tells it; a remote path is Parquet unless named
    chosen = fmt or (detect_format(source, kind, shown=quoted_path(source)) if os.path.isfile(source) else "parquet")
    if chosen in ("trec_run", "trec_qrels"):
        from duckrank.spark import _trec

        frame, tag = _trec.read(spark, source, chosen, kind, quoted_path(source))
        return frame, source, tag
    if chosen != "parquet":
        raise InputError(f"{kind} {source!r} is {chosen}: the Spark engine reads Parquet files and folders, TREC text "
                         f"files and Spark tables; convert it first with `duckrank convert`")
    return spark.read.parquet(source), source, None


def _run_id(frame: Any, label: str) -> str | None:
    """The one value of a run's run_id column, which names the run as in the DuckDB engine; an
    InputError when it holds several runs, which the DuckDB engine scores apart."""
    low, high, nulls = frame.selectExpr("min(CAST(run_id AS STRING))", "max(CAST(run_id AS STRING))",
                                        "count_if(run_id IS NULL)").collect()[0]
    if low != high or (nulls and low is not None):
        shown = ", ".join(repr(v) for v in (low, high) if v is not None) + (", NULL" if nulls else "")
        raise InputError(f"run {label!r} holds several runs in its run_id column ({shown}); the Spark engine scores "
                         f"one run at a time: give one run's rows, or use the DuckDB engine, which scores each")
    return low


def _view(spark: Any, source: Any, kind: str, columns: dict[str, str | None], fmt: str | None = None) -> _Input:
    """A temporary view over `source` (see _frame; `fmt` names its format, else it is told as the
    DuckDB engine tells it) with the standard columns."""
    wanted = {"run": ("query_id", "doc_id", "score"), "qrels": ("query_id", "doc_id", "relevance")}[kind]
    frame, label, tag = _frame(spark, source, kind, fmt)
    types = dict(frame.dtypes)
    mapping = {std: columns.get(option) or std for option, std in COLUMN_OPTIONS.items() if std in wanted}
    lists = [name for name, column_type in types.items() if column_type.startswith("array")]
    if kind == "run" and lists and (mapping["doc_id"] not in types or mapping["doc_id"] in lists):
        raise InputError(f"run {label!r} holds its rankings as lists (column {lists[0]!r}), which the Spark engine "
                         f"does not read; use the DuckDB engine, or write the long form first with "
                         f"`duckrank convert` (query_id, doc_id, score)")
    from duckrank.inputs.columns import missing_columns_problem

    missing = missing_columns_problem(f"{kind} {label!r}", kind, mapping, types)
    if missing:
        raise InputError(*missing)
    for std in wanted[2:]:
        if types[mapping[std]] in ("string", "binary", "boolean") or types[mapping[std]].startswith(("array", "struct")):
            raise InputError(f"{kind} {label!r}: column {mapping[std]!r} holds {types[mapping[std]]}, but {std} must be "
                             f"numeric; cast it")
    # a TREC file is one run, named by its tag; a run_id column names the run (as in the DuckDB engine)
    run_id = (_run_id(frame, label) if kind == "run" and tag is None and "run_id" in types
              and "run_id" not in mapping.values() else None)
    name = f"duckrank_{kind}_{next(_counter)}"
    frame.selectExpr(*(f"{_column(given)} AS {std}" for std, given in mapping.items())).createOrReplaceTempView(name)
    return _Input(name, label, {std: types[given] for std, given in mapping.items()}, tag or run_id, tag)


def _prepare(spark: Any, qrels: Any, run: Any, measures: list[str] | str,
             options: dict[str, Any]) -> tuple[list, str, _Input, _Input]:
    """The parsed measures, the per-query Spark SQL over views of the inputs, and those inputs
    (qrels, run)."""
    from duckrank.measures import parse_measures

    columns = {name: options.pop(name) for name in list(options) if name in COLUMN_OPTIONS}
    formats = {kind: options.pop(f"{kind}_format", None) for kind in ("qrels", "run")}
    parsed = parse_measures(list(measures) if not isinstance(measures, str) else [measures])
    conventions, parsed = _conventions(options, parsed)
    qrels_input = _view(spark, qrels, "qrels", columns, formats["qrels"])
    run_input = _view(spark, run, "run", columns, formats["run"])
    for column in ("query_id", "doc_id"):
        run_type, qrels_type = run_input.types[column], qrels_input.types[column]
        if (run_type == "string") != (qrels_type == "string"):
            raise InputError(f"run {run_input.label!r} has {column} of type {run_type} but qrels {qrels_input.label!r} "
                             f"has {qrels_type}; ids are compared as given, so make both strings or both integers")
    per_query_sql = _per_query_sql(qrels_input.view, run_input.view, parsed, conventions,
                                   (qrels_input.label, run_input.label))
    return parsed, per_query_sql, qrels_input, run_input


def evaluate(spark: Any, qrels: Any, run: Any, measures: list[str] | str = ("map",), *, per_query: bool = False,
             **options: Any) -> Any:
    """Evaluate `run` against `qrels` on Spark: a DataFrame (measure, value), or with per_query=True
    (query_id, measure, value, and text when a measure is text: relstring). qrels and run are Spark
    DataFrames, table names, Parquet paths or TREC text files (read as the DuckDB engine reads them;
    run_format= / qrels_format= 'trec_run', 'trec_qrels' or 'parquet' when the name does not tell).
    Options: the conventions ties (not 'input'), rel_level, max_rank, complete, empty, unjudged, gain,
    duplicates, gain_map, and the column names query_col, doc_col, score_col, relevance_col. The numbers are
    the DuckDB engine's (tests/test_spark.py holds them to 1e-12 per query). Spark evaluates lazily:
    bad data raises when the result is collected, with duckrank's message (see input_error())."""
    parsed, per_query_sql, _, _ = _prepare(spark, qrels, run, measures, dict(options))
    if per_query:
        return spark.sql(_per_query_rows_sql(per_query_sql, parsed))
    return spark.sql(_summary_sql(per_query_sql, parsed))


def input_error(error: Exception) -> InputError | None:
    """duckrank's own message inside a Spark exception (raised by the SQL's checks), if any."""
    found = re.search(r"duckrank: (.*?)(?:\s*SQLSTATE|\n\s*at |\s*$)", str(error), re.DOTALL)
    return InputError(found.group(1).strip()) if found else None


def session() -> Any:
    """The active SparkSession, or a new local one (spark-submit, SPARK_REMOTE and spark-defaults.conf
    decide where it runs); a clear error when pyspark or Java is missing."""
    try:
        from pyspark.errors import PySparkException
        from pyspark.sql import SparkSession
    except ImportError:
        raise OptionError("the Spark engine needs pyspark: pip install 'duckrank[spark]'") from None
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    try:
        spark = SparkSession.builder.appName("duckrank").config("spark.ui.showConsoleProgress", "false").getOrCreate()
    except PySparkException as error:  # JAVA_GATEWAY_EXITED when the JVM does not start
        if "JAVA" in str(error).upper():
            raise OptionError("the Spark engine needs Java 17 or newer (e.g. apt-get install openjdk-17-jre-headless) "
                              "and JAVA_HOME or java on the PATH") from None
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def compute(qrels: Any, run: Any, measures: list[str], con: Any, *, spark: Any = None, count_missing: bool = False,
            **options: Any) -> Any:
    """duckrank.evaluation.Results whose per-query values Spark computed: the rows are collected
    into a DuckDB table of `con`, so the CLI formats them as it formats the DuckDB engine's.
    count_missing fills Results.missing, as the DuckDB engine's compute does."""
    from duckrank._sql import sql_literal
    from duckrank.evaluation import Results
    from duckrank._sql import fresh_name

    spark = spark or session()
    parsed, per_query_sql, qrels_input, run_input = _prepare(spark, qrels, run, measures, dict(options))
    from pyspark.errors import PySparkException

    name = run_input.name or str(run)  # as the DuckDB engine names a lone run (its tag, its run_id, its path)

    try:
        rows = spark.sql(f"SELECT 0 AS run_index, query_id, measure_index, value, text FROM ({per_query_sql})").toArrow()
        missing = []
        if count_missing:  # the qrels queries the run lacks: not scored unless complete
            lacking, total = spark.sql(
                f"SELECT count(*) FILTER (WHERE r.query_id IS NULL), count(*) "
                f"FROM (SELECT DISTINCT query_id FROM {qrels_input.view}) j "
                f"LEFT JOIN (SELECT DISTINCT query_id FROM {run_input.view}) r ON r.query_id = j.query_id"
            ).collect()[0]
            missing = [(name, lacking, total)]
    except PySparkException as error:
        raise input_error(error) or error from None
    if rows.num_rows == 0:
        raise InputError(f"no query_id in common between run {run!r} and qrels {qrels!r}; check that both "
                         f"describe the same queries")
    table = fresh_name("results")
    con.register(f"{table}_arrow", rows)
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT 0 AS run_index, {sql_literal(name)} AS run, "
                f"query_id, CAST(measure_index AS INTEGER) AS measure_index, value, text FROM {table}_arrow").fetchall()
    con.unregister(f"{table}_arrow")
    measure_rows = [(i, m.spelling, m.metric.per_query) for i, m in enumerate(parsed)]
    con.execute(f"CREATE TEMP TABLE {table}_measures (measure_index INTEGER, measure VARCHAR, per_query BOOLEAN)")
    con.executemany(f"INSERT INTO {table}_measures VALUES (?, ?, ?)", measure_rows)
    return Results(con, [name], parsed, table, missing=missing, tags=[run_input.tag])


def cli_problems(log: Any, runs: tuple, segments: tuple, run_format: str | None, qrels_format: str | None,
                 engine: dict[str, Any]) -> list[str]:
    """What `duckrank eval --engine spark` cannot do, each as a line for the CLI's problem list."""
    problems = []
    if log is not None:
        problems.append("--engine spark scores QRELS RUN, not --log; use the DuckDB engine for logs")
    if len(runs) > 1:
        problems.append("--engine spark scores one run at a time; give one RUN")
    if segments:
        problems.append("--engine spark has no --by; use the DuckDB engine for segments")
    if any(fmt not in (None, "parquet", "trec") for fmt in (run_format, qrels_format)):
        problems.append("--engine spark reads Parquet files and folders and TREC text files; convert other inputs "
                        "with duckrank convert")
    if engine:
        problems.append(f"{', '.join('--' + name.replace('_', '-') for name in engine)} set DuckDB's engine; "
                        f"Spark's memory and cores are set by spark-submit or spark-defaults.conf")
    return problems
