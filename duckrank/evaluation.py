"""Compose one DuckDB query for a whole list of measures and hand back the results.

All measures that share the ranking conventions read one duckrank.ranked pass, so
the run is sorted once however many measures are asked for. Several runs and segments (`by=`)
ride in the same pass: each query is keyed by {run, segment values, query}. Python only composes
and validates; every number comes from the SQL library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import duckdb

from duckrank._borrowed import BorrowedConnection
from duckrank._checks import (check_common_queries, check_id_types, empty_typed_as, option_problems, read_top_k_inputs,
                              sampled_measures, subtopic_convention_problems, subtopic_problem, translate_error)
from duckrank._duckdb_sql import (corrections, cut_views, lean_case, log_values_sql, missing_queries, per_query_sql,
                                  ranking_values, read_training_pairs_once, reshaped, run_summary_sql, run_tags,
                                  scored_views, split_log, subtopic_values_sql, summary_sql, top_k_values_sql,
                                  top_lists, worded_problem)
from duckrank._library import configure, connect, holds_library, interruptible, load_as_guest, shared_cursor
from duckrank._partitions import batched_per_query, query_batches, query_slices
from duckrank._sql import fresh_name, quote_identifier
from duckrank._sql import sql_literal
from duckrank.errors import DuckrankError, InputError, OptionError, one_per_line
from duckrank.inputs import SUBTOPIC, StandardInput, read_table, stdin_problem
from duckrank.measures import Measure, option_literal, parse_measures, with_gain_map
from duckrank.options import CONVENTIONS
from duckrank.peer_inputs import runs_and_names

@dataclass
class Results:
    """The per-query values of every (run, segment, measure). compute() materialises them once in a
    temporary table; a summary-only evaluation keeps just the summary rows (`rows`)."""

    con: duckdb.DuckDBPyConnection
    runs: list[str]
    measures: list[Measure]
    table: str | None
    by: list[str] = field(default_factory=list)
    rows: list[tuple] | None = None
    # (run, qrels queries the run lacks, qrels queries): filled when compute(count_missing=True)
    missing: list[tuple[str, int, int]] = field(default_factory=list)
    tags: list[str | None] = field(default_factory=list)  # each run's TREC tag (None: not TREC text)
    std: bool = False  # whether the summary adds each mean's standard deviation (<measure>_std)

    def _by_sql(self, prefix: str = "") -> str:
        return "".join(f"{prefix}{quote_identifier(name)}, " for name in self.by)

    @property
    def has_text(self) -> bool:
        """Whether a measure's per-query values are text (relstring), in a `text` column."""
        return any(m.metric.value == "text" for m in self.measures)

    @property
    def per_query(self) -> duckdb.DuckDBPyRelation:
        """Columns run, [segment columns,] query_id, measure, value (and text, when a measure's
        values are text: value is NULL on its rows); one row per evaluated query."""
        if self.table is None:
            raise DuckrankError("these results hold the summary only; evaluate with per_query=True")
        text = ", r.text" if self.has_text else ""
        return self.con.sql(
            f"SELECT r.run, {self._by_sql('r.')}r.query_id, m.measure, r.value{text} FROM {self.table} r "
            f"JOIN {self.table}_measures m USING (measure_index) WHERE m.per_query AND r.query_id IS NOT NULL "
            f"ORDER BY r.run_index, {self._by_sql('r.')}r.query_id, r.measure_index")

    @property
    def summary(self) -> duckdb.DuckDBPyRelation:
        """Columns run, [segment columns,] measure, value: each measure summarised over the queries."""
        if self.table is None:
            raise DuckrankError("these results hold the summary rows only (Results.rows)")
        return self.con.sql(summary_sql(self.table, self.runs, self.measures, self.by, self.std))

    def as_dict(self) -> dict[Any, Any]:
        """{measure: mean} for one run; {run: {measure: mean}} for several. With segments, each
        measure dict sits under its segment value (a tuple for several `by` columns)."""
        values: dict[Any, Any] = {}
        for row in self.rows if self.rows is not None else self.summary.fetchall():
            run, segment, measure, value = row[0], row[1:-2], row[-2], row[-1]
            target = values.setdefault(run, {}) if len(self.runs) > 1 else values
            if self.by:
                target = target.setdefault(segment[0] if len(segment) == 1 else segment, {})
            target[measure] = value
        return values


@interruptible
def compute(qrels: Any = None, runs: Any = None, measures: list[str] | str = ("map",), *, log: Any = None,
            label: str | list[str] | None = None, label_map: dict[Any, float] | None = None,
            run_names: list[str] | None = None,
            by: list[str] | str | None = None, run_format: str | None = None, qrels_format: str | None = None,
            log_format: str | None = None, query_col: str | None = None, doc_col: str | None = None,
            score_col: str | None = None, relevance_col: str | None = None, subtopic_col: str | None = None,
            exclude: Any = None, segments: Any = None, count_missing: bool = False,
            con: duckdb.DuckDBPyConnection | None = None, threads: int | None = None,
            memory_limit: str | None = None, temp_dir: str | None = None, ties: str | None = None,
            rel_level: float | None = None, max_rank: int | None = None, complete: bool | None = None,
            empty: str | None = None, unjudged: str | None = None, gain: str | None = None,
            gain_map: dict[float, float] | None = None, duplicates: str | None = None, sampled: int | None = None,
            correction: str | None = None, literal: bool | None = None, summary_only: bool = False,
            std: bool = False, train: Any = None, items: Any = None, stdin: StandardInput | None = None) -> Results:
    """Evaluate one or more runs (or one log) against qrels for every measure, in one pass per
    ranking convention; see duckrank.evaluate for the friendly front door.

    Without con= (and engine settings) the work runs on a cursor of duckrank's process-wide
    connection, whose macros are loaded once. summary_only computes the summary rows in the same
    query and keeps no per-query table. std adds each mean's standard deviation to the summary
    (<measure>_std). A convention left None takes the registry's default. `stdin`: standard input's
    copy, for a caller that evaluates the same '-' more than once (duckrank.report); one of its own
    otherwise."""
    if not isinstance(std, bool):
        raise OptionError(f"std must be True or False, got {std!r}")
    parsed = parse_measures(list(measures) if not isinstance(measures, str) else measures)
    if not parsed:
        raise OptionError("measures is empty: name at least one, e.g. ['map', 'ndcg@10']")
    # a text measure (relstring) has no summary: named on its own it needs per-query values; within
    # all_trec it is left out of a summary, as trec_eval prints it only with -q
    named = {spelling.strip().lower() for spelling in ([measures] if isinstance(measures, str) else measures)}
    texts = [m.spelling for m in parsed if m.metric.value == "text" and m.spelling.strip().lower() in named]
    if summary_only and texts:
        raise OptionError(f"{', '.join(map(repr, texts))} is text for each query, with no summary: "
                          f"ask for per-query values (per_query=True; duckrank eval -q)")
    given = {name: value for name, value in {
        "ties": ties, "rel_level": rel_level, "max_rank": max_rank, "complete": complete, "empty": empty,
        "unjudged": unjudged, "duplicates": duplicates, "gain": gain}.items() if value is not None}
    conventions = {name: convention.param.default for name, convention in CONVENTIONS.items()}
    conventions.update({name: value for name, value in given.items() if name in CONVENTIONS})
    rel_level = conventions["rel_level"]
    if gain is not None:  # the convention sets the gain of every measure that did not name one
        parsed = [m.with_default("gain", gain) for m in parsed]
    if gain_map is not None:
        parsed = with_gain_map(parsed, gain_map)
    parsed = sampled_measures(parsed, sampled, correction, conventions)
    given.update({name: value for name, value in (("sampled", sampled), ("correction", correction))
                  if value is not None})
    segment_table, segments = segments, [by] if isinstance(by, str) else list(by or [])
    run_list, run_names = runs_and_names(runs, run_names) if runs is not None else ([], run_names)
    stdin_twice = stdin_problem([("qrels", qrels), *((f"runs[{i}]", run) for i, run in enumerate(run_list)),
                                 ("log", log), ("exclude", exclude), ("segments", segment_table), ("train", train),
                                 ("items", items)])
    if stdin_twice:
        raise OptionError(stdin_twice)
    stdin = stdin or StandardInput()
    if segment_table is not None and not segments:
        raise OptionError("segments= is a table of query attributes: name the columns to score by with by=")
    if con is not None:
        con = con if holds_library(con) else load_as_guest(con)
    elif threads is None and memory_limit is None and temp_dir is None:
        con = shared_cursor()
    else:  # engine settings are the database's: a private one, so no other call inherits them
        con = connect()
    configure(con, threads, memory_limit, temp_dir)
    problems = option_problems(con, given, parsed)
    if problems:
        raise OptionError(*one_per_line(problems))
    columns = {"query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col,
               SUBTOPIC: subtopic_col}
    diverse = [(i, m) for i, m in enumerate(parsed) if m.metric.reads == "subtopics"]
    diverse_measures = [m for _, m in diverse]  # their own pass: the ranking passes still render lean
    if diverse:  # what duckrank.rank_subtopics also refuses, said before any input is read
        problems = subtopic_convention_problems(diverse_measures, conventions)
        if problems:
            raise OptionError("\n".join(problems))
    # segment columns come from the run (or log), or all from a segments table joined on the query id
    own_segments = [] if segment_table is not None else segments
    keep_order = conventions["ties"] == "input"  # the only tie rule that reads the run's row order
    exclusions = (read_table(con, exclude, "exclude", columns=columns, literal=literal, stdin=stdin)
                  if exclude is not None else None)
    attributes = (read_table(con, segment_table, "segments", columns=columns, extra=segments, literal=literal,
                             stdin=stdin)
                  if segment_table is not None else None)
    if log is not None:
        if qrels is not None or runs is not None:
            raise OptionError("pass either a log, or qrels and runs, not both")
        if diverse:
            raise OptionError(f"{', '.join(m.spelling for m in diverse_measures)} read subtopic qrels, which a log has "
                              f"not: pass qrels (with a subtopic column) and runs")
        source = read_table(con, log, "log", fmt=log_format, columns={**columns, "label": label},
                            label_map=label_map, extra=own_segments, literal=literal, stdin=stdin)
        source = reshaped(con, source, exclusions, attributes, segments, keep_order)
        run_source, qrels_source = split_log(con, source, segments)
        sources, run_sources = [source, run_source, qrels_source], [run_source]
    else:
        if qrels is None or runs is None:
            raise OptionError("pass qrels and at least one run (or a single log=)")
        if not run_list:
            raise OptionError("pass at least one run")
        qrels_source = read_table(con, qrels, "qrels", fmt=qrels_format, columns=columns, literal=literal,
                                  subtopics=bool(diverse), stdin=stdin)
        if diverse and SUBTOPIC not in qrels_source.columns:
            raise InputError(subtopic_problem(diverse_measures, qrels_source, subtopic_col))
        run_sources = [read_table(con, run, "run", fmt=run_format, columns=columns, extra=own_segments, literal=literal,
                                  stdin=stdin) for run in run_list]
        if run_names is not None:
            run_sources = [source.named(name) for source, name in zip(run_sources, run_names)]
        run_sources = [empty_typed_as(con, run, qrels_source) for run in run_sources]
        qrels_source = empty_typed_as(con, qrels_source, run_sources[0])
        check_id_types(qrels_source, run_sources)
        run_sources = [reshaped(con, run, exclusions, attributes, segments, keep_order) for run in run_sources]
        sources = [qrels_source, *run_sources]
    sources += [extra for extra in (exclusions, attributes) if extra is not None]
    top_k = [(i, m) for i, m in enumerate(parsed) if m.metric.reads == "top_k"]
    tables: dict[str, str | None] = {}
    if top_k:
        read = read_top_k_inputs(con, [m for _, m in top_k], train, items, columns, run_sources, literal, stdin)
        tables = {name: source.view if source else None for name, source in read.items()}
        sources.extend(source for source in read.values() if source)
    table = fresh_name("results")
    views = None
    try:
        views = scored_views(con, run_sources, qrels_source, run_names, segments, attributes)
        ranking = [m for m in parsed if m.summary != "log"]
        ranked = [m for m in parsed if m.ranked]
        depth, slices = None, []
        if top_k:
            tables = read_training_pairs_once(con, tables)
            depth, slices = top_lists(con, views, [m for _, m in top_k], conventions)
        ranked_views = cut_views(con, views, parsed, depth, slices, conventions)
        batches, rows = query_batches(con, ranked_views) if ranked else (1, 0)
        # a text input is parsed again at every read, and each slice reads the inputs
        sliceable = ranked and batches == 1 and not any(source.parses_text for source in sources)
        query_parts, top_grade = query_slices(con, ranked_views, rows) if sliceable else (None, None)
        estimates = corrections(con, ranked_views, parsed, conventions)
        values = (ranking_values(ranked_views, parsed, conventions, g_max=top_grade, estimates=estimates,
                                 lean=lean_case([m for m in parsed if m not in diverse_measures], batches), rows=rows,
                                 slices=query_parts)
                  if ranked and batches == 1 else None)
        parts = (batched_per_query(con, ranked_views, parsed, conventions, batches, estimates) if batches > 1
                 else [per_query_sql(ranked_views, parsed, values)] if ranked else [])
        if diverse:  # never batched: few queries judge subtopics
            subtopic_sql = subtopic_values_sql(views, diverse, conventions)
            parts = [f"{parts[0]} UNION ALL {subtopic_sql}", *parts[1:]] if parts else [subtopic_sql]
        if top_k:  # never batched: coverage is over every query at once
            top_k_sql = top_k_values_sql(views, top_k, conventions, tables, slices)
            parts = [f"{parts[0]} UNION ALL {top_k_sql}", *parts[1:]] if parts else [top_k_sql]
        log_measures = [(i, m) for i, m in enumerate(parsed) if m.summary == "log"]
        if log_measures:
            log_sql = log_values_sql(con, views, log_measures, rel_level, source if log is not None else None)
            parts = [f"{parts[0]} UNION ALL {log_sql}", *parts[1:]] if parts else [log_sql]
        runs_sql = ", ".join(f"({i}, {sql_literal(n)})" for i, n in enumerate(views.runs))
        per_query = [f"SELECT r.run_index, p.* FROM ({part}) p JOIN (VALUES {runs_sql}) r(run_index, run) USING (run)"
                     for part in parts]
        if summary_only and len(per_query) == 1:
            # one run scored whole by ranking measures alone: summarised straight from its passes
            whole = values is not None and not (views.keyed or std or diverse or top_k or log_measures)
            rows = con.execute(run_summary_sql(views.runs[0], parsed, values) if whole else
                               summary_sql(f"({per_query[0]})", views.runs, parsed, segments, std, scored=True)
                               ).fetchall()
            scored = {row[-3] for row in rows if row[-1]}
            rows = [row[:-1] for row in rows]
            if not any(m.spelling in scored for m in ranking) and any(m.metric.per_query for m in ranking):
                check_common_queries(con, run_sources, qrels_source)
            missing = missing_queries(con, views, qrels_source) if count_missing and log is None else []
            return Results(con, views.runs, parsed, None, segments, rows, missing, run_tags(views, run_sources), std)
        con.execute(f"CREATE TEMP TABLE {table}_runs AS SELECT * FROM (VALUES {runs_sql}) t(run_index, run)").fetchall()
        measures_sql = ", ".join(f"({i}, {sql_literal(m.spelling)}, {option_literal(m.metric.per_query)})"
                                 for i, m in enumerate(parsed))
        con.execute(f"CREATE TEMP TABLE {table}_measures AS SELECT * FROM (VALUES {measures_sql}) "
                    f"t(measure_index, measure, per_query)").fetchall()
        # one batch at a time, so that each batch's lists are freed before the next is ranked
        con.execute(f"CREATE TEMP TABLE {table} AS {per_query[0]}").fetchall()
        for part in per_query[1:]:
            con.execute(f"INSERT INTO {table} {part}").fetchall()
    except duckdb.Error as error:
        if views is not None:
            error = worded_problem(con, error, views, run_sources, qrels_source, parsed, conventions)
        raise translate_error(error, sources, con) from None
    evaluated = con.execute(f"SELECT count(*) FROM {table} WHERE query_id IS NOT NULL").fetchall()[0][0]
    if evaluated == 0 and any(m.metric.per_query and m.summary != "log" for m in parsed):
        check_common_queries(con, run_sources, qrels_source)
    missing = missing_queries(con, views, qrels_source) if count_missing and log is None else []
    return Results(con, views.runs, parsed, table, segments, missing=missing, tags=run_tags(views, run_sources), std=std)


@interruptible
def evaluate(qrels: Any = None, run: Any = None, measures: list[str] | str = ("map",), *, per_query: bool = False,
             **options: Any) -> Any:
    """Evaluate `run` against `qrels`: {measure: mean over queries}, keyed by the measure as given.

    `run` may be a list of runs (or carry a run_id column): the result is then {run: {measure: mean}}.
    `by=` names extra run (or log) columns to score per value of: {segment: {measure: mean}}.
    `std=True` adds each mean's standard deviation over the queries, as ranx's return_std computes it
    (numpy's: the population's), keyed <measure>_std after the measure.
    `per_query=True` returns a DuckDB relation (query_id, measure, value; plus run for several
    runs and the `by` columns; plus text for a text measure, relstring) that converts with
    .arrow(), .df(), .pl(). Options: the conventions
    ties, rel_level, max_rank, complete, empty, unjudged, gain, duplicates; gain_map={grade: gain} for
    every gain measure that names none (as nDCG(gain_map={1:3,2:9})@10 does); sampled=N (the lists hold each
    query's relevant items plus negatives sampled from a catalog of N items) with correction= bv (default),
    bias or none (the measures then estimate their full-catalog values); column names query_col,
    doc_col, score_col, relevance_col; input formats run_format, qrels_format; a single log= with
    label= (and label_map=; label= a list of boolean or 0/1 event columns, label_map= their grades by
    name: a row's grade is the highest of its true events); exclude= (query_id, doc_id) pairs removed
    from every run before ranking (seen items); segments= a table of query attributes joined on the
    query id, whose by= columns segment the scores (a query it lacks gets a NULL segment); con=,
    threads=, memory_limit=, temp_dir=. The beyond-accuracy measures
    (novelty, diversity, serendipity, catalog_coverage, arp, aplt, aclt) read train= (training
    interactions: query_id, doc_id), and similarity=features reads items= (doc_id and features). The
    diversity measures (alpha_nDCG, ERR_IA, NRBP, ...) read each judgment's subtopic: a qrels column
    subtopic (or subtopic_col=), ir_measures Qrels' iteration, or TREC qrels' second field. A run
    may hold each query's ranking in one LIST column (of doc ids, or of structs with the doc_col and
    score_col fields; rank = list position). A path that exists is read as
    that file even with glob characters in its name, a glob expanded only when none does; literal=True
    reads every path literally, literal=False expands every glob.
    """
    con = options.get("con")
    with BorrowedConnection.of(con) as guest:
        if per_query:
            if options.get("std"):
                raise OptionError("std=True adds standard deviations to the summary; per_query=True returns the "
                                  "per-query values instead: pass one or the other")
            results = compute(qrels, run, measures, **options)
            guest.keep(results.table, f"{results.table}_measures")
            relation = results.per_query
            if len(results.runs) > 1:
                return relation
            return relation.project(", ".join([*(quote_identifier(b) for b in results.by), "query_id", "measure",
                                               "value", *(["text"] if results.has_text else [])]))
        results = compute(qrels, run, measures, summary_only=True, **options)
        values = results.as_dict()
    if con is None:
        results.con.close()  # duckrank's own cursor: its views and registered frames go with it
    return values
