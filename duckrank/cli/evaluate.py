"""`duckrank eval QRELS RUN [RUN ...]` (and `--log FILE`): trec_eval's command, over duckrank.evaluation.compute.

This module parses options, reports every bad one at once, and formats what the SQL computed in
trec_eval's order. It holds no metric math.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import click

from duckrank import _output as output
from duckrank._sql import fresh_name, quote_identifier, sql_literal
from duckrank.cli.common import (
    CONTEXT_SETTINGS,
    INPUT_FORMATS,
    Problems,
    Progress,
    binary_target,
    check_output,
    check_standard_input,
    facade_format,
    pick_format,
    progress_enabled,
)
from duckrank.cli.failures import clean_message, handle_errors, spelled
from duckrank.cli.options import (
    check_engine,
    column_options,
    convention_options,
    engine_options,
    output_options,
    read_conventions,
)
from duckrank.errors import quoted, quoted_path
from duckrank.options import OPTIONS


@click.command("eval", context_settings=CONTEXT_SETTINGS)
@click.argument("qrels", required=False, metavar="QRELS")
@click.argument("runs", nargs=-1, metavar="RUN [RUN ...]")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE",
              help="A measure, repeatable: nDCG@10, P(rel=2)@5, map, P.5,10,20 (trec_eval's comma "
                   "lists), P (a trec_eval family: its default cutoffs), all_trec (every trec_eval measure "
                   "duckrank supports), set (its unranked ones), runid (trec_eval's line naming the run). "
                   "Default: trec_eval's default set (official). `duckrank metrics` "
                   "lists them all.")
@click.option("-q", "per_query", is_flag=True, help="Per-query rows as well as the summary (trec_eval -q).")
@click.option("-n", "no_summary", is_flag=True, help="No summary rows (trec_eval -n); use with -q.")
@click.option("--std", "std", is_flag=True,
              help="Each mean's standard deviation over the queries as well, as ranx's return_std computes it "
                   "(numpy's: the population's), on a line <measure>_std after the measure's summary.")
@click.option("-J", "judged_only", is_flag=True,
              help="Judged docs only: drop unjudged docs before ranking (trec_eval -J; --unjudged skip).")
@convention_options()
@click.option("--sampled", metavar="N",
              help="The runs' lists were sampled: each query's relevant items plus negatives drawn uniformly from a "
                   "catalog of N items. Measures then estimate their full-catalog values (--correction).")
@click.option("--correction", type=click.Choice(OPTIONS["correction"].choices), default=None,
              help="With --sampled: bv (default; the bias-variance trade-off of Krichene & Rendle 2020), bias "
                   "(minimal bias, high variance) or none (the plain values on the sampled lists). Per measure: "
                   "-m 'nDCG(correction=none)@10'.")
@column_options
@click.option("--log", "log", metavar="FILE",
              help="Score one impression log (query, doc, score and label on each row) instead of QRELS RUN.")
@click.option("--label", "labels", multiple=True, metavar="COL",
              help="With --log: the column holding the judgment (e.g. clicked); repeatable over boolean or 0/1 "
                   "event columns, graded by --label-map purchased=3,clicked=1 (a row's grade is the highest of "
                   "its true events).")
@click.option("--label-map", metavar="VALUE=GRADE,...",
              help="With --log: grades for a text label column, e.g. purchase=3,click=1 (others grade 0); with "
                   "several --label event columns, their grades by column name.")
@click.option("--by", "segments", multiple=True, metavar="COL",
              help="Score every measure per value of COL, a column of the run (or --log) such as device, or of "
                   "--segments FILE; repeatable.")
@click.option("--segments", "segment_table", metavar="FILE",
              help="A table of query attributes (query id plus columns such as age_band) that --by reads, joined "
                   "on the query id; a query it lacks is scored under an empty segment.")
@click.option("--exclude", metavar="FILE",
              help="(query_id, doc_id) pairs removed from every run before ranking, cutoffs and -M, e.g. each "
                   "user's training interactions (seen items); any input format, TREC qrels too.")
@click.option("--train", "train", metavar="FILE",
              help="Training interactions (query/user id and doc/item id columns, renamed by --query-col and "
                   "--doc-col) for novelty, diversity, serendipity, catalog_coverage, arp, aplt and aclt.")
@click.option("--items", "items", metavar="FILE",
              help="Item features for similarity=features: doc_id and numeric columns, or one embedding list.")
@click.option("--run-format", metavar="FORMAT",
              help=f"Read runs (or the --log) as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@click.option("--subtopic-col", metavar="COL",
              help="Column holding each judgment's subtopic, which the diversity measures (alpha_nDCG, ERR_IA, "
                   "NRBP, ...) read (default subtopic; TREC qrels: the second field, read as the subtopic only "
                   "when a diversity measure is asked for).")
@click.option("--qrels-format", metavar="FORMAT",
              help=f"Read the qrels as {', '.join(INPUT_FORMATS)} instead of detecting it.")
@output_options()
@engine_options
@click.option("--engine", "engine_name", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
              help="Compute on DuckDB (embedded) or Apache Spark (pip install 'duckrank[spark]'; Java 17): the "
                   "same numbers, on Parquet files or folders.")
@handle_errors
def eval_command(qrels, runs, measures, per_query, no_summary, std, judged_only, conventions, sampled, correction, query_col,
                 doc_col, score_col, relevance_col, subtopic_col, literal, log, labels, label_map, segments,
                 segment_table, exclude, train, items, run_format, qrels_format, fmt, output_path, quiet, threads, memory_limit, temp_dir,
                 engine_name):
    """Score one or more runs against QRELS (trec_eval's argument order).

    \b
    Inputs are Parquet, CSV/TSV, JSONL or TREC text (run: query Q0 doc rank score
    run_id; qrels: query iteration doc grade), detected from the file. Diversity
    measures read TREC qrels' second field as the subtopic (query subtopic doc grade).

    \b
    Examples:
      duckrank eval qrels.txt run.txt -m all_trec -q --format trec
      duckrank eval qrels.parquet a.parquet b.parquet -m nDCG@10 -m P.5,10
      duckrank eval --log log.parquet --label clicked --query-col user_id \\
          --doc-col item_id --score-col pred -m auc -m gauc -m nDCG@10

    Exit status: 0 success, 1 a data problem, 2 a usage problem.
    """
    problems = Problems()

    # positional arguments
    if log is not None:
        if qrels is not None or runs:
            problems.add("--log scores a single impression log; give either --log FILE or QRELS RUN, not both")
        if not labels:
            problems.add("--log needs --label COL: the column that holds each row's judgment (e.g. clicked)")
    else:
        if labels or label_map is not None:
            problems.add(f"{'--label' if labels else '--label-map'} only applies with --log FILE")
        if qrels is None:
            problems.add("missing QRELS and RUN: give the qrels file, then one or more run files "
                         "(or --log FILE --label COL)")
        elif not runs:
            problems.add(f"missing RUN: give one or more run files after the qrels {qrels}")

    # conventions: the numbers are read here, the words checked by the SQL library itself, below
    if judged_only and conventions["unjudged"] not in (None, "skip"):
        problems.add(f"-J means --unjudged skip; it contradicts --unjudged {conventions['unjudged']}")
    conventions = read_conventions(problems, conventions)
    if judged_only:
        conventions["unjudged"] = "skip"
    sampled = problems.integer("--sampled", sampled, minimum=2)
    run_fmt = problems.choice("--run-format", run_format, INPUT_FORMATS)
    qrels_fmt = problems.choice("--qrels-format", qrels_format, INPUT_FORMATS)

    grades = _parse_label_map(problems, label_map) if label_map is not None else None
    if segment_table is not None and not segments:
        problems.add("--segments FILE holds query attributes: name the column(s) to score by with --by COL")

    if no_summary and not per_query:
        problems.add("-n drops the summary and without -q there are no per-query rows to print; add -q")
    if no_summary and std:
        problems.add("--std adds lines to the summary, which -n drops; leave out one of them")

    # -m as trec_eval reads it (its default set is -m official; --format trec prints its order);
    # every bad measure reported at once
    from duckrank.errors import MeasureError
    from duckrank.measures import parse_measure, prints_runid, trec_eval_measures

    fmt = pick_format(problems, fmt, output_path, output.FORMATS)
    parsed = []
    for spelling in trec_eval_measures(list(measures) or ["official"], trec_order=fmt == "trec"):
        try:
            parsed.append(parse_measure(spelling))
        except MeasureError as error:
            problems.add(clean_message(error))
    # trec_eval prints its runid line (the run's tag) for -m runid and its measure sets
    with_runid = prints_runid(list(measures) or ["official"])
    runid_only = with_runid and not parsed and not problems.messages
    if runid_only and fmt != "trec":
        problems.add("-m runid prints trec_eval's line naming the run, in --format trec only; name a measure too")
    elif runid_only:  # the files are still read and checked, as trec_eval reads them: num_q scores them
        parsed.append(parse_measure("num_q"))

    # trec_eval -c sums num_rel over every judgment graded above 0, whatever -l says (m_num_rel.c's
    # te_calc_avg_num_rel); its per-query lines follow -l. --format trec prints that summary: the
    # judgments of grade >= 1 (a grade trec_eval reads as 0.5 is 0), counted by a measure of its own.
    trec_num_rel = None
    if (fmt == "trec" and conventions.get("complete") and conventions.get("rel_level", 1) != 1
            and any(m.metric.name == "num_rel" and m.rel_level is None for m in parsed)):
        trec_num_rel = parse_measure("NumRel(rel=1)")
        parsed.append(trec_num_rel)

    # output and engine
    if segments and fmt == "trec":
        problems.add("--format trec has no column for --by segments; use table, tsv, csv, json, jsonl or parquet")
    inputs = [*([log] if log is not None else [qrels, *runs]), exclude, segment_table, train, items]
    check_standard_input(problems, qrels, runs, {"--log": log, "--exclude": exclude, "--segments": segment_table,
                                                 "--train": train, "--items": items})
    check_output(problems, fmt, output_path, [source for source in inputs if source], literal)
    engine = check_engine(problems, threads, memory_limit, temp_dir)
    if engine_name == "spark" and (sampled is not None or correction is not None):
        problems.add("--sampled and --correction need the DuckDB engine: the Spark engine does not correct sampled "
                     "metrics")
    if engine_name == "spark":
        from duckrank.spark import cli_problems
        for problem in cli_problems(log, runs, segments, run_fmt, qrels_fmt, engine):
            problems.add(problem)
        for flag, value in (("--exclude", exclude), ("--segments", segment_table)):
            if value is not None:
                problems.add(f"--engine spark does not take {flag}; use the DuckDB engine for it")
        if train is not None or items is not None:
            problems.add("--engine spark does not compute the beyond-accuracy measures (--train, --items); "
                         "use the DuckDB engine for them")
        diverse = [m.spelling for m in parsed if m.metric.reads == "subtopics"]
        if diverse:
            problems.add(f"--engine spark does not compute the diversity measures ({', '.join(diverse)}), which "
                         f"read subtopic qrels; use the DuckDB engine for them")

    from duckrank._library import connect, shared_cursor
    from duckrank._checks import option_problems
    from duckrank.evaluation import compute

    # the part of the library an evaluation reads, loaded once; engine settings are the database's,
    # so they get a private one that no later evaluation in this process inherits
    con = connect() if engine else shared_cursor()
    try:
        for problem in option_problems(con, conventions, parsed):
            problems.add(spelled(problem))
        problems.raise_if_any()
    except BaseException:
        con.close()
        raise

    # compute: the progress indicator watches the connection from the first read to the last write

    input_formats = (
        {"log_format": run_fmt} if log is not None
        else {"run_format": facade_format(run_fmt, "run"), "qrels_format": facade_format(qrels_fmt, "qrels")}
    )
    kwargs: dict[str, Any] = dict(
        train=train, items=items, log=log,
        label=(labels[0] if len(labels) == 1 else list(labels)) if labels else None, label_map=grades,
        by=list(segments) or None, segments=segment_table, exclude=exclude, query_col=query_col, doc_col=doc_col,
        score_col=score_col, relevance_col=relevance_col, subtopic_col=subtopic_col, literal=literal,
        **input_formats, **engine, **conventions, sampled=sampled, correction=correction,
    )
    kwargs = {key: value for key, value in kwargs.items() if value is not None}
    try:
        what = "the log" if log is not None else f"{len(runs)} run" + ("s" if len(runs) > 1 else "")
        with Progress(con, f"scoring {what}", progress_enabled(quiet)):
            count_missing = not conventions.get("complete") and not quiet
            if engine_name == "spark":  # Spark computes the per-query values; DuckDB formats them
                from duckrank import spark
                results = spark.compute(qrels, runs[0], [m.spelling for m in parsed], con,
                                        count_missing=count_missing, **kwargs)
            else:
                results = compute(qrels, list(runs) if log is None else None, [m.spelling for m in parsed],
                                  con=con, count_missing=count_missing, **kwargs)
            _note_missing(results.missing)
            results = dataclasses.replace(results, std=std)
            _write_eval(results, [] if runid_only else results.measures, fmt, output_path, per_query=per_query,
                        summary=not no_summary, with_runid=with_runid, trec_num_rel=trec_num_rel)
    finally:
        con.close()


def _note_missing(missing: list[tuple[str, int, int]]) -> None:
    """trec_eval silently scores only the queries a run has: say so on stderr when qrels queries are
    left out (never on stdout, which holds the results)."""
    for run, lacking, total in missing:
        if lacking:
            click.echo(f"note: {lacking} of {total} qrels queries are not in run {quoted_path(run)}; they are "
                       f"not scored "
                       f"(pass -c to score them 0)", err=True)


def _parse_label_map(problems: Problems, text: str) -> dict[str, float] | None:
    """--label-map VALUE=GRADE,...: each value once, each grade a finite number."""
    from duckrank._pairs import parse_pairs

    try:
        grades = parse_pairs(text, "VALUE=GRADE")
    except ValueError as error:
        problems.add(f"--label-map {error}; give VALUE=GRADE pairs such as purchase=3,click=1, each value once")
        return None
    numbers = {value: problems.number(f"--label-map's grade for {quoted(value)}", grade)
               for value, grade in grades.items()}
    return numbers if None not in numbers.values() else None


# The eval output: one row per (run, segment, query or 'all', measure), ordered as trec_eval prints it:
# per run (and --by segment), every query's block (queries in id order), then the summary block. The
# human formats put the runs side by side: {order} then lists a line's runs one after another.
_EVAL_SQL = """
WITH measures AS (
    SELECT unnest($spellings) AS spelling, unnest($printed) AS metric,
           unnest($per_query_ok) AS per_query_ok, unnest(range(len($spellings))) AS measure_order
),
runs AS (
    SELECT unnest($runs) AS run, unnest(range(len($runs))) AS run_order
),
rows AS (
    SELECT run, {by_columns}CAST(query_id AS VARCHAR) AS query_id, measure, value, {text} AS text, 0 AS part,
           dense_rank() OVER (ORDER BY query_id) AS query_order
    FROM {per_query} WHERE $with_per_query
    UNION ALL
    SELECT run, {by_columns}'all' AS query_id, measure, value, NULL AS text, 1 AS part, 0 AS query_order
    FROM {summary} WHERE $with_summary
)
SELECT {run_column}{by_rows}rows.query_id, measures.metric, CAST(rows.value AS DOUBLE) AS value{text_column}
FROM rows
JOIN measures ON rows.measure = measures.spelling
JOIN runs ON rows.run = runs.run
WHERE rows.part = 1 OR measures.per_query_ok
ORDER BY {order}
"""


def _integer_measure(measure) -> bool:
    return measure.summary in ("sum", "count")


def _write_eval(results, measures, fmt: str, path: str | None, *, per_query: bool, summary: bool,
                with_runid: bool, trec_num_rel=None) -> None:
    con = results.con
    run_names = [str(run) for run in results.runs]
    segments = list(results.by)
    several = len(run_names) > 1
    if not measures:  # -m runid alone (--format trec): trec_eval's summary holds its line only
        with output.text_output(path) as stream:
            for run in run_names if summary else []:
                stream.write(output.trec_line("runid", "all", run))
        return
    from duckrank.inputs.columns import temp_view

    # the cursor's own views (temporary, named afresh): nothing is left in duckrank's shared database
    summary_view, per_query_view = fresh_name("cli_summary"), fresh_name("cli_per_query")
    temp_view(con, summary_view, results.summary)
    temp_view(con, per_query_view, results.per_query)
    by_rows = "".join(f"rows.{quote_identifier(name)}, " for name in segments)
    sql = _EVAL_SQL.format(
        per_query=quote_identifier(per_query_view), summary=quote_identifier(summary_view),
        run_column="rows.run, " if several else "",
        by_columns="".join(f"{quote_identifier(name)}, " for name in segments),
        by_rows=by_rows,
        text="text" if results.has_text else "CAST(NULL AS VARCHAR)",
        text_column=", rows.text" if results.has_text else "",
        order=(f"{by_rows}rows.part, rows.query_order, measures.measure_order, runs.run_order"
               if fmt in output.HUMAN_FORMATS else
               f"runs.run_order, {by_rows}rows.part, rows.query_order, measures.measure_order"),
    )
    from duckrank._duckdb_sql import STD_SUFFIX

    # each measure, then (--std) its standard deviation, a summary line of its own
    lines = [(m.spelling, m.printed_name, m.metric.per_query and m.summary != "log") for m in measures]
    if results.std:
        lines = [line for m, measure_line in zip(measures, lines)
                 for line in [measure_line, *([(m.spelling + STD_SUFFIX, m.printed_name + STD_SUFFIX, False)]
                                              if m.summary == "mean" else [])]]
    params = {
        "spellings": [spelling for spelling, _, _ in lines],
        "printed": [printed for _, printed, _ in lines],
        "per_query_ok": [ok for _, _, ok in lines],
        "runs": run_names,
        "with_per_query": bool(per_query),
        "with_summary": bool(summary),
    }
    keys = (["run"] if several else []) + segments
    columns = [*keys, "query_id", "metric", "value", *(["text"] if results.has_text else [])]
    integer_metrics = {m.printed_name for m in measures if _integer_measure(m)}

    if fmt == "parquet":
        with binary_target(path) as tmp:
            con.execute(f"COPY ({sql}) TO $path (FORMAT parquet)", {**params, "path": tmp}).fetchall()
        return

    num_rel_totals = {}
    if fmt == "trec" and trec_num_rel is not None:  # read before the rows' cursor holds the connection
        num_rel_totals = dict(results.summary.filter(f"measure = {sql_literal(trec_num_rel.spelling)}")
                              .select("run, value").fetchall())

    def rows() -> Iterator[tuple]:
        """The rows from a cursor of their own, a batch at a time: no output is held in memory."""
        cursor = con.execute(sql, params)
        while batch := cursor.fetchmany(10_000):
            yield from batch

    def shown_rows() -> Iterator[tuple]:
        """Rows for trec and the human formats: a text measure's text as its value, quoted as
        trec_eval prints relstring."""
        for row in rows():
            if not results.has_text:
                yield row
            elif row[-1] is not None:
                yield (*row[:-2], f"'{row[-1]}'")
            else:
                yield row[:-1]

    with output.text_output(path) as stream:
        if fmt == "trec":
            trec_rows = shown_rows()
            if trec_num_rel is not None:
                trec_rows = _with_trec_num_rel(trec_rows, trec_num_rel, num_rel_totals, several, run_names)
            _write_trec(stream, trec_rows, several, integer_metrics, run_names, with_runid and summary)
        elif fmt in output.MACHINE_FORMATS:
            output.write_machine(fmt, columns, rows(), stream)
        else:
            # the table format reads its lines twice (column widths, then the lines): each reading
            # runs the query again rather than keep the lines in memory
            lines = _Lines(lambda: _human_lines(shown_rows(), several, segments, per_query, integer_metrics,
                                                run_names))
            from duckrank._duckdb_sql import tagged_names

            # the runs as people call them: a TREC run by its tag, as the report names it
            value_columns = (tagged_names(run_names, results.tags) or run_names) if several else ["value"]
            headers = [*segments, *(["query_id"] if per_query else []), "metric", *value_columns]
            align = ["l"] * (len(headers) - len(value_columns)) + ["r"] * len(value_columns)
            output.write_human(fmt, headers, lines, stream, align)


def _with_trec_num_rel(rows, measure, totals: dict[str, float], several: bool,
                       run_names: list[str]) -> Iterator[tuple]:
    """The rows with trec_eval -c's summary num_rel (see eval_command), totals by run, and without
    the measure that counted it."""
    for row in rows:
        run, query_id, metric, _ = row if several else (run_names[0], *row)
        if metric == measure.printed_name:
            continue
        if metric == "num_rel" and query_id == "all":
            row = (*row[:-1], totals.get(run, 0.0))
        yield row


def _write_trec(stream, rows, several: bool, integer_metrics: set[str], run_names: list[str],
                with_runid: bool) -> None:
    current_run = None
    in_summary = False
    for row in rows:
        run, query_id, metric, value = row if several else (run_names[0], *row)
        if run != current_run:
            current_run, in_summary = run, False
        if query_id == "all" and not in_summary:
            in_summary = True
            if with_runid:
                stream.write(output.trec_line("runid", "all", run))
        stream.write(output.trec_line(metric, query_id, value, metric in integer_metrics))


class _Lines:
    """An iterable that makes its iterator anew each time it is read."""

    def __init__(self, make: Callable[[], Iterator[list[str]]]) -> None:
        self.make = make

    def __iter__(self) -> Iterator[list[str]]:
        return self.make()


def _human_lines(rows, several, segments, per_query, integer_metrics, run_names) -> Iterator[list[str]]:
    """The human formats' cells: one line per (segment, [query,] metric), one value column per run.
    The rows come sorted by that key with a line's runs adjacent, so they are pivoted as they stream."""
    def line(key: tuple, values: dict[str, Any]) -> list[str]:
        integer = key[-1] in integer_metrics
        return [*key, *(output.display_value(values.get(run), integer) for run in run_names)]

    key, values = None, {}
    for row in rows:
        run, rest = (row[0], row[1:]) if several else (run_names[0], row)
        *segment, query_id, metric, value = rest
        row_key = (*("" if v is None else str(v) for v in segment), *([query_id] if per_query else []), metric)
        if row_key != key:
            if key is not None:
                yield line(key, values)
            key, values = row_key, {}
        values[run] = value
    if key is not None:
        yield line(key, values)