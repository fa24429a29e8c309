"""Compose one DuckDB query for a whole list of measures and hand back the results.

All measures that share the ranking conventions read one duckrank.ranked pass, so
the run is sorted once however many measures are asked for. Several runs and segments (`by=`)
ride in the same pass: each query is keyed by {run, segment values, query}. Python only composes
and validates; every number comes from the SQL library.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Self

import duckdb

from duckrank._library import (
    configure,
    connect,
    holds_library,
    interruptible,
    library_digest,
    load_as_guest,
    memory_limit_bytes,
    memory_problem,
    shared_cursor,
)
from duckrank._sql import literal as sql_text
from duckrank._sql import quote_identifier
from duckrank.errors import DuckrankError, InputError, OptionError, quoted, quoted_path
from duckrank.inputs import SUBTOPIC, Source, fresh_name, read_items, read_table, stdin_problem
from duckrank.lean import available as lean_available
from duckrank.lean import pass_sql as lean_pass_sql
from duckrank.measures import Measure, parse_measures, sql_literal, with_gain_map
from duckrank.peer_inputs import runs_and_names
from duckrank.plan import RankingPass, ranking_passes, reads_top_lists
from duckrank.registry import (CONVENTIONS, EMPTY_GAIN_MAP, METRICS, OPTIONS, SUBTOPIC_OPTIONS, SUBTOPIC_TIES,
                               SUBTOPIC_UNJUDGED)

# Means are summed in query order (not by DuckDB's parallel avg), so a summary is the same bits on
# every run and thread count. Counters are integers: their sums are exact in any order.
_SUMMARY_SQL = {"mean": "list_sum(list(value ORDER BY query_id)) / count(value)", "sum": "sum(value)",
                "gmean": "exp(list_sum(list(duckrank.log_floored(value) ORDER BY query_id)) / count(value))",
                "count": "CAST(count(*) AS DOUBLE)", "log": "avg(value)", "overall": "avg(value)"}
# With std, each mean also gets the standard deviation of its per-query values as ranx's return_std
# computes it (numpy's std: the population's, ddof 0), in query order like the mean, reported as
# the measure's name with this suffix.
_STD_SQL = "list_stddev_pop(list(value ORDER BY query_id))"
STD_SUFFIX = "_std"
_NAN_SQL = "CAST('NaN' AS DOUBLE)"


@dataclass
class Plan:
    """The run and qrels views duckrank.ranked reads. Plain views when one run is scored whole;
    otherwise query_id is a struct {run, by_0, ..., query} so that one pass scores every run and
    segment, and `fields` lists the struct's fields beside `query`."""

    run_view: str
    qrels_view: str
    runs: list[str]
    by: list[str] = field(default_factory=list)

    @property
    def keyed(self) -> bool:
        return len(self.runs) > 1 or bool(self.by)

    def key_columns(self) -> list[tuple[str, str]]:
        """(output column, SQL expression over query_id) for run and each segment column."""
        if not self.keyed:
            return [("run", sql_text(self.runs[0]))]
        return [("run", "query_id.run"), *((name, f"query_id.by_{i}") for i, name in enumerate(self.by))]

    def query_expression(self) -> str:
        return "query_id.query" if self.keyed else "query_id"


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


def summary_sql(source: str, runs: list[str], measures: list[Measure], by: list[str], std: bool = False,
                scored: bool = False) -> str:
    """Each measure summarised over its per-query rows in `source` (a table, or a parenthesised
    query with columns run_index, [segments,] query_id, measure_index, value): one grouping, the
    summary rule picked per measure. Text measures (relstring) have no summary. With std, each mean
    is followed by its standard deviation, named <measure>_std. A run with no scored query (an
    empty run, empty qrels) still gets each summary, as ir_measures' calc_aggregate gives it: a
    mean over no query is NaN, a sum or count of none 0 (per segment there is no such row: no
    segment). scored adds a last column: whether any query was scored for the row."""
    by_sql = "".join(f"{quote_identifier(name)}, " for name in by)
    summarised = [i for i, m in enumerate(measures) if m.summary != "none"]
    rules = " ".join(f"WHEN {i} THEN {_SUMMARY_SQL[measures[i].summary]}" for i in summarised)
    value = f"CASE measure_index {rules} END" if rules else "NULL"
    spread = [i for i in summarised if std and measures[i].summary == "mean"]
    spread_sql = f"CASE WHEN measure_index IN ({', '.join(map(str, spread))}) THEN {_STD_SQL} END" if spread else "NULL"
    run_names = ", ".join(f"({i}, {sql_text(name)})" for i, name in enumerate(runs))
    measure_rows = ", ".join(f"({i}, {sql_text(measures[i].spelling)}, "
                             f"{'0.0' if measures[i].summary in ('sum', 'count') else _NAN_SQL})" for i in summarised)
    return (f"SELECT r.run, {by_sql}m.measure || x.suffix AS measure, "
            f"       CASE WHEN s.scored IS NULL THEN (CASE WHEN x.spread THEN {_NAN_SQL} ELSE m.unscored END) "
            f"            WHEN x.spread THEN s.std ELSE s.value END AS value"
            + (", s.scored IS NOT NULL AS scored " if scored else " ") +
            f"FROM (VALUES {run_names}) r(run_index, run) "
            f"CROSS JOIN (VALUES {measure_rows or '(NULL, NULL, NULL)'}) m(measure_index, measure, unscored) "
            f"{'JOIN' if by else 'LEFT JOIN'} (SELECT run_index, {by_sql}measure_index, {value} AS value, "
            f"      {spread_sql} AS std, true AS scored "
            f"      FROM {source} WHERE measure_index IN ({', '.join(map(str, summarised)) or 'NULL'}) "
            f"      GROUP BY run_index, {by_sql}measure_index) s USING (run_index, measure_index) "
            f"JOIN (VALUES (false, ''), (true, {sql_text(STD_SUFFIX)})) x(spread, suffix) "
            f"  ON NOT x.spread OR m.measure_index IN ({', '.join(map(str, spread)) or 'NULL'}) "
            f"WHERE m.measure_index IS NOT NULL "
            f"ORDER BY r.run_index, {by_sql}m.measure_index, x.spread")


def option_problems(con: duckdb.DuckDBPyConnection, conventions: dict[str, Any],
                    measures: list[Measure]) -> list[str]:
    """Every problem with the conventions and the measures' options, as the SQL library's checks
    (generated from the registry) word them, so all can be reported at once."""
    problems = []
    for name, value in conventions.items():
        param = CONVENTIONS[name].param if name in CONVENTIONS else OPTIONS[name]
        if value is not None and not _has_type(value, param.type):
            kind = {"integer": "a number", "number": "a number", "boolean": "True or False"}.get(param.type, "a string")
            problems.append(f"{name} must be {kind}; got {value!r}")
    if problems:
        return problems
    given = ", ".join(f"{name} := {sql_literal(value)}" for name, value in conventions.items()
                      if name in CONVENTIONS and value is not None)
    checks = [f"concat_ws(chr(10), duckrank.convention_problems({given}), "
              f"duckrank.option_problems(gain := {sql_literal(conventions.get('gain') or 'linear')}"
              + "".join(f", {name} := {sql_literal(conventions[name])}" for name in ("sampled", "correction")
                        if conventions.get(name) is not None) + "))"]
    # each set of option values checked once: DuckDB binds every call by expanding the macro, and
    # -m all_trec's 99 measures give 43 sets (binding 99 calls took 10 s of CPU)
    options = [", ".join(f"{name} := {sql_literal(value)}" for name, value in measure.given) for measure in measures]
    distinct = list(dict.fromkeys(options))
    checks.extend(f"duckrank.option_problems({rendered})" for rendered in distinct)
    found = _run_checks(con, f"SELECT [{', '.join(checks)}]")
    problems = (found[0] or "").splitlines()
    texts = dict(zip(distinct, found[1:]))
    for measure, rendered in zip(measures, options):
        problems.extend(f"in measure {measure.spelling!r}: {line}" for line in (texts[rendered] or "").splitlines())
    return problems


def sampled_measures(measures: list[Measure], sampled: int | None, correction: str | None,
                     conventions: dict[str, Any]) -> list[Measure]:
    """The measures with sampled= and correction= as their defaults, or the OptionError that says
    why they cannot be: a correction without sampled lists, a measure whose value is no function of
    its one relevant item's rank (it can only report its plain value: correction='none'), -M.
    (duckrank.sampled_problems says the same to a shell user.)"""
    if sampled is None and correction is not None:
        raise OptionError("correction corrects metrics read on sampled lists; say the catalog size they were "
                          "sampled from with sampled=N (--sampled N), or leave correction out")
    if sampled is not None:
        wanted = correction or OPTIONS["correction"].default
        uncorrectable = [m.spelling for m in measures
                         if not m.metric.sampled and m.summary not in ("count", "sum") and wanted != "none"]
        if uncorrectable:
            can = sorted({s.name for m in METRICS.values() if m.sampled for s in m.ir_measures or m.aliases[:1]})
            raise OptionError(
                f"{', '.join(map(repr, uncorrectable))} cannot be corrected for sampling: its value is not a function "
                f"of the rank of a query's one relevant item. The measures that can: {', '.join(can)} (with @k). "
                f"Pass correction='none' (--correction none) for the plain values on the sampled lists")
        measures = [m.with_default("sampled", sampled).with_default("correction", wanted) for m in measures]
    for measure in measures:
        if measure.catalog is None and "correction" in dict(measure.given):
            raise OptionError(f"in measure {measure.spelling!r}: correction corrects metrics read on sampled lists; "
                              f"say the catalog size they were sampled from with sampled=N (--sampled N), or leave "
                              f"correction out")
    if conventions.get("max_rank") is not None and any(m.catalog is not None for m in measures):
        raise OptionError("max_rank (-M) cuts the sampled lists, which changes each query's number of negatives m; "
                          "leave it out with sampled")
    return measures


def _has_type(value: Any, kind: str) -> bool:
    if kind in ("integer", "number"):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return isinstance(value, str)


# The checks are pure functions of the option values, so a notebook that evaluates the same
# measures in a loop asks the database once. Keyed by the library too, should a connection hold
# another version of it.
_CHECKED: dict[tuple[str, str], list[str | None]] = {}


def _run_checks(con: duckdb.DuckDBPyConnection, sql: str) -> list[str | None]:
    key = (library_digest(), sql)
    if key not in _CHECKED:
        if len(_CHECKED) > 1000:
            _CHECKED.clear()
        _CHECKED[key] = con.execute(sql).fetchall()[0][0]
    return _CHECKED[key]


def _path_of(source: Source) -> str:
    """The user's name for an input: its path or table name as given, else its label (run (DataFrame))."""
    return source.given if source.given is not None else source.label


def tagged_names(names: list[str], tags: list[str | None]) -> list[str] | None:
    """The runs named as trec_eval names a TREC run, by its tag (its last line's), the others as in
    `names`; None when no run has a tag or two runs would share a name. The names people read
    (eval's tables, the report), not the run column of machine output, which keeps `names`."""
    tagged = [tag or name for tag, name in zip(tags, names)]
    return tagged if any(tags) and len(set(tagged)) == len(tagged) else None


def _tags(plan: Plan, runs: list[Source]) -> list[str | None]:
    """Each of the plan's runs' TREC tag: none when one input was split into runs by its run_id."""
    return [source.name for source in runs] if len(runs) == len(plan.runs) else [None] * len(plan.runs)


def _plan(con: duckdb.DuckDBPyConnection, runs: list[Source], qrels: Source, names: list[str] | None,
          by: list[str], attributes: Source | None = None) -> Plan:
    """Name the runs and build the views one duckrank.ranked pass scores. A list entry is one run,
    named by run_names= or its path; a lone run is split by its run_id column when that holds
    several values, and named by it when it holds one. A TREC text file is one run whatever its
    tags (as trec_eval reads it): a lone one is named by the tag of its last line (trec_eval's runid)."""
    if names is not None and len(names) != len(runs):
        raise OptionError(f"run_names has {len(names)} names for {len(runs)} runs")
    segments = "".join(f", {quote_identifier(name)} AS by_{i}" for i, name in enumerate(by))
    if len(runs) == 1:
        source = runs[0]
        ids = ([row[0] for row in con.sql(f"SELECT DISTINCT run_id FROM {source.view} ORDER BY 1").fetchall()]
               if source.has_run_id else [])
        if len(ids) <= 1:
            run_names = names or ids or [source.name or _path_of(source)]
            union = f"SELECT {sql_text(run_names[0])} AS run, query_id, doc_id, score{segments} FROM {source.view}"
        else:
            run_names = ids
            union = f"SELECT run_id AS run, query_id, doc_id, score{segments} FROM {source.view}"
    else:
        run_names = names or [_path_of(source) for source in runs]
        union = " UNION ALL ".join(
            f"SELECT {sql_text(name)} AS run, query_id, doc_id, score{segments} FROM {source.view}"
            for name, source in zip(run_names, runs))
    if len(set(run_names)) != len(run_names):
        repeated = next(name for name in run_names if run_names.count(name) > 1)
        raise InputError(f"two runs share the name {quoted_path(repeated)}; give each run its own name (run_names=)")
    plan = Plan(runs[0].view, qrels.view, run_names, list(by))
    if not plan.keyed:
        return plan
    fields = "".join(f", by_{i} := by_{i}" for i in range(len(by)))
    plan.run_view, plan.qrels_view = fresh_name("runs"), fresh_name("qrels")
    con.execute(f"CREATE TEMP VIEW {plan.run_view} AS SELECT struct_pack(run := run{fields}, query := query_id) "
                f"AS query_id, doc_id, score FROM ({union})").fetchall()
    subtopic = ", q.subtopic" if SUBTOPIC in qrels.columns else ""
    values = ", ".join(f"({sql_text(n)})" for n in run_names)
    if by:  # a query's judgments go to every (run, segment) the query appears in
        keys = ", ".join(["run", *(f"by_{i}" for i in range(len(by))), "query_id"])
        from_keys = "".join(f", by_{i} := k.by_{i}" for i in range(len(by)))
        # and a qrels query a run lacks to that run too, so that complete := true scores it as it does
        # without segments: under its segment in the segments table, else the one another run gives
        # it (the least, should runs differ), else NULL
        if attributes is not None:
            segment_of = "".join(f", s.{quote_identifier(name)} AS by_{i}" for i, name in enumerate(by))
            lookup = (f"(SELECT DISTINCT query_id{''.join(f', {quote_identifier(n)}' for n in by)} "
                      f"FROM {attributes.view})")
        else:
            segment_of = "".join(f", s.segment.by_{i} AS by_{i}" for i in range(len(by)))
            fields = ", ".join(f"by_{i} := by_{i}" for i in range(len(by)))
            lookup = f"(SELECT query_id, min(struct_pack({fields})) AS segment FROM ({union}) GROUP BY query_id)"
        missed = (f"SELECT m.run{segment_of}, m.query_id FROM (SELECT r.run, q.query_id FROM (SELECT DISTINCT "
                  f"query_id FROM {qrels.view}) q CROSS JOIN (VALUES {values}) r(run) ANTI JOIN "
                  f"(SELECT DISTINCT run, query_id FROM ({union})) u ON u.run = r.run AND u.query_id = q.query_id) m "
                  f"LEFT JOIN {lookup} s ON s.query_id = m.query_id")
        con.execute(f"CREATE TEMP VIEW {plan.qrels_view} AS SELECT struct_pack(run := k.run{from_keys}, "
                    f"query := q.query_id) AS query_id, q.doc_id, q.relevance{subtopic} FROM {qrels.view} q "
                    f"JOIN (SELECT DISTINCT {keys} FROM ({union}) UNION ALL {missed}) k "
                    f"ON k.query_id = q.query_id").fetchall()
    else:  # every run is judged on every qrels query, so complete := true still sees missed queries
        con.execute(f"CREATE TEMP VIEW {plan.qrels_view} AS SELECT struct_pack(run := r.run, query := q.query_id) "
                    f"AS query_id, q.doc_id, q.relevance{subtopic} FROM {qrels.view} q CROSS JOIN (VALUES {values}) r(run)").fetchall()
    return plan


def _ranked_call(plan: Plan, ranking: RankingPass) -> str:
    """duckrank.rank_queries with every argument spelled out (the options were checked already)."""
    args = ", ".join(EMPTY_GAIN_MAP if name == "gain_map" and not value else sql_literal(value)
                     for name, value in ranking.arguments.items())
    return f"duckrank.rank_queries({sql_text(plan.qrels_view)}, {sql_text(plan.run_view)}, {args})"


def _per_query_sql(plan: Plan, measures: list[Measure], conventions: dict[str, Any],
                   g_max: float | None = None, estimates: dict[int, str] | None = None, lean: bool = False) -> str:
    """(key columns, query_id, measure_index, value, text) for every ranking measure, one pass per
    group of measures sharing the relation options (duckrank.plan); text holds a text measure's
    value (relstring), NULL for the others. g_max pins ERR's default top grade; estimates holds each
    corrected measure's f~ (_corrections). lean: each pass rendered with no macro call once
    duckrank.lean renders it, for the cases _lean_case admits."""
    keys = "".join(f"{expression} AS {quote_identifier(name)}, " for name, expression in plan.key_columns())
    empty = sql_literal(conventions["empty"])
    ctes, selects = [], []
    for group, ranking in enumerate(ranking_passes(measures, conventions, g_max)):
        rendered = lean_pass_sql(ranking.arguments, [
            measures[i].metric.per_query_value(measures[i].aggregate_sql(), "q.num_rel", empty)
            for i in ranking.measures], plan.run_view, plan.qrels_view) if lean else None
        if rendered is not None:
            ctes.append(f"g{group} AS ({rendered})")
            columns = [_value_text(f"v{j}", measures[i]) for j, i in enumerate(ranking.measures)]
        else:
            aggregates = [measures[i].aggregate_sql() if measures[i].catalog is None
                          else measures[i].sampled_sql((estimates or {}).get(i)) for i in ranking.measures]
            computed = ", ".join(f"{aggregate} AS m{i}" for i, aggregate in zip(ranking.measures, aggregates))
            ctes.append(f"g{group} AS (SELECT q.query_id, q.num_rel, {computed} FROM {_ranked_call(plan, ranking)} q)")
            columns = [_value_text(measures[i].metric.per_query_value(f"m{i}", "num_rel", empty), measures[i])
                       for i in ranking.measures]
        selects.extend(f"SELECT {keys}{plan.query_expression()} AS query_id, {i} AS measure_index, "
                       f"{column} FROM g{group}" for i, column in zip(ranking.measures, columns))
    return (f"WITH {', '.join(ctes)} SELECT * FROM ({' UNION ALL '.join(selects)}) "
            f"WHERE value IS NOT NULL OR text IS NOT NULL")


def _subtopic_sql(plan: Plan, measures: list[tuple[int, Measure]], conventions: dict[str, Any]) -> str:
    """The diversity measures (sql/34_diversity_metrics.sql): one duckrank.rank_subtopics pass per
    relevance level, complete and unjudged rule and alpha, its measures' values unnested into rows."""
    keys = "".join(f"{expression} AS {quote_identifier(name)}, " for name, expression in plan.key_columns())
    empty = sql_literal(conventions["empty"])
    groups: dict[tuple, list[tuple[int, Measure]]] = {}
    for index, measure in measures:
        complete = measure.complete if measure.complete is not None else conventions["complete"]
        key = (measure.level(conventions["rel_level"]), complete, measure.unjudged or conventions["unjudged"],
               *(measure.params.get(name, OPTIONS[name].default) for name in SUBTOPIC_OPTIONS))
        groups.setdefault(key, []).append((index, measure))
    selects = []
    for (rel_level, complete, unjudged, *options), members in groups.items():
        arguments = ", ".join(sql_literal(value) for value in (
            rel_level, conventions["ties"], conventions["max_rank"], complete, unjudged, conventions["duplicates"],
            *options))
        indexes = ", ".join(str(index) for index, _ in members)
        values = ", ".join(measure.metric.per_query_value(measure.aggregate_sql(), "q.num_rel", empty)
                           for _, measure in members)
        selects.append(
            f"SELECT * FROM (SELECT {keys}{plan.query_expression()} AS query_id, unnest([{indexes}]) AS measure_index, "
            f"unnest([{values}]) AS value, CAST(NULL AS VARCHAR) AS text "
            f"FROM duckrank.rank_subtopics({sql_text(plan.qrels_view)}, {sql_text(plan.run_view)}, {arguments}) q) "
            f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _subtopic_convention_problems(measures: list[Measure], conventions: dict[str, Any]) -> list[str]:
    """The conventions the diversity measures cannot follow: ndeval ranks by score and doc id, and an
    unjudged doc is relevant to no subtopic (or skipped)."""
    problems = []
    if conventions["ties"] not in SUBTOPIC_TIES:
        problems.append(f"the diversity measures rank by score, ties by doc id: ties must be "
                        f"{' or '.join(SUBTOPIC_TIES)}; got {quoted(conventions['ties'])}")
    unjudged = sorted({m.unjudged or conventions["unjudged"] for m in measures} - set(SUBTOPIC_UNJUDGED))
    if unjudged:
        problems.append(f"the diversity measures read unjudged docs as relevant to no subtopic or skip them: unjudged "
                        f"must be {' or '.join(SUBTOPIC_UNJUDGED)}; got {quoted(unjudged[0])}")
    return problems


def _subtopic_problem(measures: list[Measure], qrels: Source, subtopic_col: str | None) -> str:
    """Why these qrels cannot feed the diversity measures (they have no subtopics)."""
    named = ", ".join(m.spelling for m in measures)
    return (f"{named} read each judgment's subtopic, but {qrels.label} has no column "
            f"{quoted(subtopic_col or SUBTOPIC)}; pass diversity qrels: a table with a subtopic column (name yours "
            f"with subtopic_col=, --subtopic-col), ir_measures Qrels with the subtopic in iteration, or TREC "
            f"diversity qrels (query_id subtopic doc_id relevance)")


def _value_text(value: str, measure: Measure) -> str:
    """A measure's per-query value (Metric.per_query_value) as the value and text columns: a text
    measure fills text, the others value."""
    if measure.metric.value == "text":
        return f"CAST(NULL AS DOUBLE) AS value, {value} AS text"
    return f"{value} AS value, CAST(NULL AS VARCHAR) AS text"


def _lean_case(plan: Plan, measures: list[Measure], batches: int) -> bool:
    """Whether the ranking passes render lean (duckrank.lean): one run scored whole (no segments, no
    batches), every measure a ranking measure on full rankings, and sqlglot at hand. Anything else
    calls the macros."""
    return (not plan.keyed and batches == 1 and all(m.ranked and m.catalog is None for m in measures)
            and lean_available())


def _log_sql(con: duckdb.DuckDBPyConnection, plan: Plan, measures: list[tuple[int, Measure]],
             rel_level: float, log: Source | None) -> str:
    """GAUC and global AUC are whole-log values: one macro call per (run, segment) slice of a log.
    A log given as such is read as it is; otherwise the log is built from the run and qrels (an
    unjudged impression is a negative; only judged queries count)."""
    if log is not None and not plan.keyed:
        log_view = log.view
    else:
        log_view = fresh_name("log")
        con.execute(
            f"CREATE TEMP VIEW {log_view} AS SELECT r.query_id, r.doc_id, r.score, coalesce(q.relevance, 0) AS label "
            f"FROM {plan.run_view} r LEFT JOIN {plan.qrels_view} q ON q.query_id = r.query_id AND q.doc_id = r.doc_id "
            f"WHERE r.query_id IN (SELECT query_id FROM {plan.qrels_view})").fetchall()
    key_columns = plan.key_columns()
    if plan.keyed:
        expressions = ", ".join(expression for _, expression in key_columns)
        slices = con.sql(f"SELECT DISTINCT {expressions} FROM {log_view} ORDER BY ALL").fetchall()
    else:
        slices = [(plan.runs[0],)]
    selects = []
    for values in slices:
        source = log_view
        if plan.keyed:
            source = fresh_name("log_slice")
            condition = " AND ".join(f"{expression} IS NOT DISTINCT FROM {sql_text(value)}"
                                     for (_, expression), value in zip(key_columns, values))
            con.execute(f"CREATE TEMP VIEW {source} AS SELECT query_id, score, label FROM {log_view} "
                        f"WHERE {condition}").fetchall()
        constants = "".join(f"{sql_text(value)} AS {quote_identifier(name)}, "
                            for (name, _), value in zip(key_columns, values))
        for index, measure in measures:
            level = measure.level(rel_level)
            call = measure.metric.aggregate.format(
                log=sql_text(source), rel_level=sql_literal(level),
                **{name: sql_literal(value) for name, value in measure.params.items()})
            selects.append(f"SELECT {constants}NULL AS query_id, {index} AS measure_index, value, "
                           f"CAST(NULL AS VARCHAR) AS text FROM {call} "
                           f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _slices(con: duckdb.DuckDBPyConnection, plan: Plan) -> list[tuple[tuple, str, str]]:
    """Each (run, segment) slice of a plan as (its key values, run view, qrels view) whose query_id is
    the query itself (what training interactions call the user)."""
    if not plan.keyed:
        return [((plan.runs[0],), plan.run_view, plan.qrels_view)]
    key_columns = plan.key_columns()
    expressions = ", ".join(expression for _, expression in key_columns)
    slices = []
    for values in con.sql(f"SELECT DISTINCT {expressions} FROM {plan.run_view} ORDER BY ALL").fetchall():
        condition = " AND ".join(f"{expression} IS NOT DISTINCT FROM {sql_text(value)}"
                                 for (_, expression), value in zip(key_columns, values))
        views = []
        for view, columns in ((plan.run_view, "doc_id, score"), (plan.qrels_view, "doc_id, relevance")):
            name = fresh_name("slice")
            con.execute(f"CREATE TEMP VIEW {name} AS SELECT query_id.query AS query_id, {columns} FROM {view} "
                        f"WHERE {condition}").fetchall()
            views.append(name)
        slices.append((values, *views))
    return slices


def _top_lists(con: duckdb.DuckDBPyConnection, plan: Plan, measures: list[Measure],
               conventions: dict[str, Any]) -> tuple[int | None, list[tuple[tuple, dict[float, str]]]]:
    """The run ranked once for every beyond-accuracy measure: each (run, segment) slice's top lists
    (duckrank.recommended) as deep as the deepest measure reads (None: whole lists), one table per
    relevance level the measures use (a list's rel and R depend on it). The slices are the queries
    themselves, since training interactions call them users. Returns the depth and, per slice, its
    key values and {relevance level: table}."""
    cutoffs = [m.params.get("k") for m in measures]
    depth = None if None in cutoffs else max(cutoffs)
    levels = sorted({m.level(conventions["rel_level"]) for m in measures})
    # the measures a refusal (ties := 'average') names
    names = sql_text(", ".join(dict.fromkeys(m.spelling for m in measures)))
    slices = []
    for values, run_view, qrels_view in _slices(con, plan):
        tables = {}
        for level in levels:
            ranking = {**conventions, "k": depth, "rel_level": level}
            arguments = ", ".join(sql_literal(ranking[name]) for name in
                                  ("k", "rel_level", "ties", "max_rank", "complete", "unjudged", "duplicates"))
            tables[level] = fresh_name("top_lists")
            con.execute(f"CREATE TEMP TABLE {tables[level]} AS SELECT * FROM duckrank.recommended("
                        f"{sql_text(qrels_view)}, {sql_text(run_view)}, {arguments}, {names})").fetchall()
        slices.append((values, tables))
    return depth, slices


def _read_training_pairs_once(con: duckdb.DuckDBPyConnection, tables: dict[str, str | None]) -> dict[str, str | None]:
    """The tables with train's distinct pairs in a table: each measure's macro reads them, some more
    than once, and each would otherwise redo the DISTINCT."""
    if not tables.get("train"):
        return tables
    pairs = fresh_name("training_pairs")
    con.execute(f"CREATE TEMP TABLE {pairs} AS SELECT user_id AS query_id, doc_id "
                f"FROM duckrank.training_pairs({sql_text(tables['train'])})").fetchall()
    return {**tables, "train": pairs}


def _top_k_sql(plan: Plan, measures: list[tuple[int, Measure]], conventions: dict[str, Any],
               tables: dict[str, str | None], slices: list[tuple[tuple, dict[float, str]]]) -> str:
    """The beyond-accuracy measures (sql/42_beyond_accuracy.sql): each reads its table macro over a
    slice's top lists (_top_lists) and the training (and item) tables. A measure of the whole set
    (coverage) gives one row with no query_id."""
    key_columns = plan.key_columns()
    selects = []
    for values, lists in slices:
        constants = "".join(f"{sql_text(value)} AS {quote_identifier(name)}, "
                            for (name, _), value in zip(key_columns, values))
        for index, measure in measures:
            call = measure.top_k_sql({"users": lists[measure.level(conventions["rel_level"])], **tables}, conventions["empty"])
            query = "NULL" if measure.summary == "overall" else "query_id"
            selects.append(f"SELECT {constants}{query} AS query_id, {index} AS measure_index, "
                           f"CAST(value AS DOUBLE) AS value, CAST(NULL AS VARCHAR) AS text FROM {call} "
                           f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _cut_plan(con: duckdb.DuckDBPyConnection, plan: Plan, measures: list[Measure], depth: int | None,
              slices: list[tuple[tuple, dict[float, str]]], conventions: dict[str, Any]) -> Plan:
    """The plan the ranking measures read: when the run was ranked into top lists anyway and the
    measures may be scored from them (duckrank.plan.reads_top_lists), the run's rows of those lists,
    so that each ranking pass sorts k docs a query, not the whole run (one run, no segments)."""
    if plan.keyed or not reads_top_lists(measures, depth, conventions):
        return plan
    (_, lists), = slices
    table = fresh_name("run_top")
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM duckrank.run_top({sql_text(plan.run_view)}, "
                f"{sql_text(next(iter(lists.values())))})").fetchall()
    return dataclasses.replace(plan, run_view=table)


def _read_top_k_inputs(con: duckdb.DuckDBPyConnection, measures: list[Measure], train: Any, items: Any,
                       columns: dict[str, str | None], runs: list[Source],
                       literal: bool | None) -> dict[str, Source | None]:
    """The training interactions and item features the beyond-accuracy measures read, checked against
    what they need; their ids must be of the run's kind (text or numbers), as qrels' are."""
    needs_train = [m.spelling for m in measures if "train" in m.metric.inputs]
    needs_items = [m.spelling for m in measures if m.params.get("similarity") == "features"]
    if needs_train and train is None:
        raise OptionError(f"{', '.join(map(repr, needs_train))} need training interactions: pass train= "
                          f"(duckrank eval --train FILE), a table of query_id (the user) and doc_id (the item)")
    if needs_items and items is None:
        raise OptionError(f"{', '.join(map(repr, needs_items))} need item features (similarity=features): pass "
                          f"items= (duckrank eval --items FILE), a table of doc_id and feature columns")
    read = {"train": read_table(con, train, "train", columns=columns, literal=literal) if needs_train else None,
            "items": read_items(con, items, doc_col=columns.get("doc_id"), literal=literal) if needs_items else None}
    for source in read.values():
        if source is not None:
            check_id_types(source, runs)
    return read


def _translate(error: duckdb.Error, sources: list[Source], con: duckdb.DuckDBPyConnection) -> DuckrankError:
    """A DuckDB error as a duckrank error that names the user's inputs, not our views."""
    message = str(error).strip()
    memory = memory_problem(con, error, lambda: _largest_query(con, sources))
    if memory is not None:
        return InputError(memory)
    for source in sources:
        name = source.label.split(" ", 1)[1] if " " in source.label else source.label
        for view in filter(None, (source.inner_view, source.view)):
            message = message.replace(f"'{view}'", name).replace(view, name)
    found = re.search(r"duckrank: (.*)", message, re.S)
    if found:
        return InputError(found.group(1).strip())
    return InputError(f"DuckDB could not evaluate the inputs: {message.splitlines()[0]}")


LARGE_QUERY_ROWS = 1_000_000  # a query's ranking of this many rows fills about 100 MB (BYTES_PER_RUN_ROW)


def _largest_query(con: duckdb.DuckDBPyConnection, sources: list[Source]) -> str:
    """Why batching did not help, when a run's largest query holds LARGE_QUERY_ROWS or more: each
    query's ranking is held in memory whole."""
    hints = []
    for source in sources:
        if not source.label.startswith("run"):
            continue
        try:
            found = con.execute(f"SELECT query_id, count(*), count(DISTINCT doc_id) FROM {quote_identifier(source.view)} "
                                f"GROUP BY query_id ORDER BY 2 DESC LIMIT 1").fetchall()
        except duckdb.Error:
            continue  # short of memory for this too: the limit alone is the advice
        if found and found[0][1] >= LARGE_QUERY_ROWS:
            query_id, rows, docs = found[0]
            repeats = (f"; only {docs:,} of its doc_ids differ: --duplicates max (duplicates='max') keeps one row "
                       f"per doc" if docs < rows else "")
            hints.append(f"; each query's ranking is held in memory whole, and query_id {quoted(query_id)} of "
                         f"{source.label} has {rows:,} rows{repeats}")
    return "".join(hints)


def _reshaped(con: duckdb.DuckDBPyConnection, source: Source, exclusions: Source | None,
              attributes: Source | None, by: list[str], keep_order: bool) -> Source:
    """A run (or log) without the excluded (query_id, doc_id) pairs, with its segment columns
    from the segments table: the relation every later step reads (ranking, cutoffs, -M, num_ret, AUC)."""
    view = source.view
    if exclusions is not None:
        _check_key_types(source, exclusions, ("query_id", "doc_id"))
        view = fresh_name("kept")
        # a table: several passes read it (the ranking, the beyond-accuracy measures' top k, the
        # batch count), and each would otherwise redo the anti-join; in the run's order when the tie
        # rule reads it (ties := 'input')
        remove = "run_excluding" if keep_order else "run_without"
        try:
            con.execute(f"CREATE TEMP TABLE {view} AS SELECT * FROM duckrank.{remove}("
                        f"{sql_text(source.view)}, {sql_text(exclusions.view)})").fetchall()
        except duckdb.Error as error:
            raise _translate(error, [source, exclusions], con) from None
    if attributes is not None:
        _check_key_types(source, attributes, ("query_id",))
        _check_one_segment(con, attributes, by)
        joined = fresh_name("segmented")
        chosen = ", ".join(f"s.{quote_identifier(name)}" for name in by)
        # a query the segments table lacks is scored under a NULL segment; the run's order is kept
        # (ties := 'input' reads it)
        con.execute(f"CREATE TEMP VIEW {joined} AS SELECT r.* EXCLUDE (duckrank_order), {chosen} "
                    f"FROM (SELECT *, row_number() OVER () AS duckrank_order FROM {view}) r "
                    f"LEFT JOIN (SELECT DISTINCT * FROM {attributes.view}) s ON s.query_id = r.query_id "
                    f"ORDER BY r.duckrank_order").fetchall()
        view = joined
    return dataclasses.replace(source, view=view) if view != source.view else source


def _check_one_segment(con: duckdb.DuckDBPyConnection, attributes: Source, by: list[str]) -> None:
    """Each query gets one segment: a query id the segments table gives two values is an error."""
    values = f"list_value({', '.join(quote_identifier(name) for name in by)})"
    found = con.execute(f"SELECT query_id, list(DISTINCT {values}) FROM {attributes.view} GROUP BY query_id "
                        f"HAVING count(DISTINCT {values}) > 1 LIMIT 1").fetchall()
    if found:
        query_id, both = found[0]
        shown = " and ".join(quoted(value[0] if len(value) == 1 else tuple(value)) for value in both[:2])
        raise InputError(f"{attributes.label} gives query_id {quoted(query_id)} two segments ({shown} of "
                         f"{', '.join(by)}); give each query one row")


def _check_key_types(run: Source, other: Source, keys: tuple[str, ...]) -> None:
    """The ids of the exclusions and the segments table meet the run's as given: a string id never
    silently matches a number."""
    for column in keys:
        if run.columns[column].upper().startswith("VARCHAR") != other.columns[column].upper().startswith("VARCHAR"):
            raise InputError(f"{run.label} has {column} of type {run.columns[column]} but {other.label} has "
                             f"{other.columns[column]}; ids are compared as given, so make both strings or both "
                             f"integers")


def _missing_queries(con: duckdb.DuckDBPyConnection, plan: Plan, qrels: Source) -> list[tuple[str, int, int]]:
    """For each run: how many qrels queries it lacks (they are not scored unless complete), of how many."""
    run_query = "query_id.query" if plan.keyed else "query_id"
    run_name = "query_id.run" if plan.keyed else sql_text(plan.runs[0])
    names = ", ".join(f"({sql_text(name)})" for name in plan.runs)
    rows = con.execute(
        f"WITH judged AS (SELECT DISTINCT query_id FROM {qrels.view}), "
        f"ranked AS (SELECT DISTINCT {run_name} AS run, {run_query} AS query_id FROM {plan.run_view}) "
        f"SELECT r.run, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ranked x WHERE x.run = r.run "
        f"AND x.query_id = j.query_id)), count(*) "
        f"FROM (VALUES {names}) r(run) CROSS JOIN judged j GROUP BY r.run").fetchall()
    order = {name: i for i, name in enumerate(plan.runs)}
    return sorted(rows, key=lambda row: order[row[0]])


def _split_log(con: duckdb.DuckDBPyConnection, log: Source, by: list[str]) -> tuple[Source, Source]:
    """A log as a run (query_id, doc_id, score, segments) and qrels (its label as the relevance)."""
    run_view, qrels_view = fresh_name("run"), fresh_name("qrels")
    segments = "".join(f", {quote_identifier(name)}" for name in by)
    con.execute(f"CREATE TEMP VIEW {run_view} AS SELECT query_id, doc_id, score{segments} FROM {log.view}").fetchall()
    con.execute(f"CREATE TEMP VIEW {qrels_view} AS SELECT query_id, doc_id, label AS relevance FROM {log.view}").fetchall()
    return (Source(run_view, log.label, log.columns, given=log.given),
            Source(qrels_view, log.label, log.columns, given=log.given))


def _empty_typed_as(con: duckdb.DuckDBPyConnection, source: Source, other: Source) -> Source:
    """An empty input with the other input's id types where one is text and the other not (a
    header-only CSV reads its ids as text): with no value its ids cannot disagree, and DuckDB
    compares ids of one kind only."""
    def is_text(column_type: str) -> bool:
        return column_type.upper().startswith("VARCHAR")
    differ = [column for column in ("query_id", "doc_id") if column in source.columns and column in other.columns
              and "NULL" not in (source.columns[column].strip('"').upper(), other.columns[column].strip('"').upper())
              and is_text(source.columns[column]) != is_text(other.columns[column])]
    if not differ or con.sql(f"SELECT 1 FROM {quote_identifier(source.view)} LIMIT 1").fetchall():
        return source
    view = fresh_name("empty")
    casts = ", ".join(f"CAST({quote_identifier(c)} AS {other.columns[c]}) AS {quote_identifier(c)}" for c in differ)
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * REPLACE ({casts}) FROM {quote_identifier(source.view)}").fetchall()
    return dataclasses.replace(source, view=view, columns={**source.columns, **{c: other.columns[c] for c in differ}})


def check_id_types(qrels: Source, runs: list[Source]) -> None:
    """Ids are compared as given: a string id never silently matches a number."""
    def is_text(column_type: str) -> bool:
        return column_type.upper().startswith("VARCHAR")
    for run in runs:
        for column in (c for c in ("query_id", "doc_id") if c in qrels.columns):
            if "NULL" in (run.columns[column].strip('"').upper(), qrels.columns[column].strip('"').upper()):
                continue  # a column with no values (an empty DataFrame's object column) has no type
            if is_text(run.columns[column]) != is_text(qrels.columns[column]):
                raise InputError(
                    f"{run.label} has {column} of type {run.columns[column]} but {qrels.label} has "
                    f"{qrels.columns[column]}; ids are compared as given, so make both strings or both integers")


def _count(con: duckdb.DuckDBPyConnection, view: str) -> int:
    return con.sql(f"SELECT count(*) FROM {quote_identifier(view)}").fetchall()[0][0]


def _no_common_queries(con: duckdb.DuckDBPyConnection, runs: list[Source], qrels: Source) -> InputError | None:
    """Nothing was scored: an InputError that says why, or None when the qrels or every run is empty. An
    empty input scores nothing as ir_measures scores it (no per-query rows; means NaN, sums 0), and
    is no mistake to report; non-empty inputs without a query in common very likely are one (wrong
    file, ids written differently), where trec_eval too stops ("No queries with both results and
    relevance info")."""
    def sample(view: str) -> str:
        ids = con.sql(f"SELECT DISTINCT query_id FROM {quote_identifier(view)} ORDER BY 1 LIMIT 3").fetchall()
        return ", ".join(quoted(row[0]) for row in ids)
    runs = [run for run in runs if _count(con, run.view)]
    if not runs or _count(con, qrels.view) == 0:
        return None
    common = con.sql(f"SELECT count(*) FROM (SELECT query_id FROM {quote_identifier(runs[0].view)} INTERSECT "
                     f"SELECT query_id FROM {quote_identifier(qrels.view)})").fetchall()[0][0]
    if common:  # every query in common was left out: empty := 'skip', and none has a relevant doc
        return InputError(f"{runs[0].label} and {qrels.label} share {common} queries, but none has a relevant doc, and "
                          f"empty := 'skip' leaves such queries out; use empty := 'zero' or empty := 'nan' to score them")
    return InputError(f"no query_id in common between {runs[0].label} (e.g. {sample(runs[0].view)}) and "
                      f"{qrels.label} (e.g. {sample(qrels.view)}); "
                      + (_normalization_hint(con, runs[0], qrels) or "check that both describe the same queries"))


def _normalization_hint(con: duckdb.DuckDBPyConnection, run: Source, qrels: Source) -> str | None:
    """What to do when text ids differ only in their Unicode normalization ('é' as U+00E9 in one
    file, as e + U+0301 in the other), which no message can show unescaped; None otherwise."""
    if not all(source.columns["query_id"].upper().startswith("VARCHAR") for source in (run, qrels)):
        return None
    found = con.sql(f"SELECT r.query_id, q.query_id "
                    f"FROM (SELECT DISTINCT query_id FROM {quote_identifier(run.view)}) r "
                    f"JOIN (SELECT DISTINCT query_id FROM {quote_identifier(qrels.view)}) q "
                    f"ON nfc_normalize(r.query_id) = nfc_normalize(q.query_id) LIMIT 1").fetchall()
    if not found:
        return None
    in_run, in_qrels = found[0]
    return (f"their ids differ only in Unicode normalization: the run's {quoted(in_run)} is the qrels' "
            f"{quoted(in_qrels)} composed another way; normalize both files' ids to NFC, e.g. with "
            f"unicodedata.normalize('NFC', id)")


# Memory the list pipeline of duckrank.ranked holds per run row (W10M peaks at about 0.9 GiB for
# 10 M rows; a 25 M-row batch of W100M at 1.7 GB of RSS), with a margin. A run that would fill more
# than 80% of DuckDB's memory limit is scored in batches of queries, each ranked on its own: lists
# that spill to disk cost far more than reading the run once per batch (W100M under 4GB: 190 s
# unbatched, 82 s in 7 batches, 70 s in 4).
BYTES_PER_RUN_ROW = 100
MAX_BATCHES = 128  # each batch reads the run once: past this, spilling is the lesser cost


def _query_batches(con: duckdb.DuckDBPyConnection, plan: Plan) -> int:
    rows = con.execute(f"SELECT count(*) FROM {quote_identifier(plan.run_view)}").fetchall()[0][0]
    return min(MAX_BATCHES, max(1, math.ceil(rows * BYTES_PER_RUN_ROW / (memory_limit_bytes(con) * 0.8))))


# The corrected estimates f~ by (library, f(R) over the catalog, m, correction): pure functions of
# those, solved once per process (a catalog of 100,000 items costs seconds per measure).
_ESTIMATES: dict[tuple[str, str, int, str], list[float]] = {}


def _corrections(con: duckdb.DuckDBPyConnection, plan: Plan, measures: list[Measure],
                 conventions: dict[str, Any]) -> dict[int, str]:
    """Each corrected measure's f~ for the numbers of negatives m its queries have, as SQL: a MAP
    from m to the list f~(1..m+1). The queries' m are read by the ranking pass that scores it."""
    maps = {}
    for ranking in ranking_passes(measures, conventions):
        corrected = [i for i in ranking.measures if measures[i].corrected]
        if not corrected:
            continue
        negatives = con.execute(
            f"SELECT coalesce(list(DISTINCT duckrank.sampled_negatives(q) ORDER BY duckrank.sampled_negatives(q)), "
            f"[]) FROM {_ranked_call(plan, ranking)} q").fetchall()[0][0]
        for index in corrected:
            measure = measures[index]
            values, correction = measure.metric_values_sql(), measure.params["correction"]
            cached = {m: (library_digest(), values, m, correction) for m in negatives}
            missing = [m for m, entry in cached.items() if entry not in _ESTIMATES]
            if missing:
                if len(_ESTIMATES) > 1000:
                    _ESTIMATES.clear()
                for m, estimate in con.execute(f"SELECT negatives, estimate FROM duckrank.sampled_estimators("
                                               f"{values}, ?::BIGINT[], ?)", [missing, correction]).fetchall():
                    _ESTIMATES[cached[m]] = estimate
            # each f~ as text cast to DOUBLE[]: exact, where a literal 0.5 would be a DECIMAL
            entries = ", ".join(f"{m}: {sql_text(str(_ESTIMATES[entry]))}::DOUBLE[]" for m, entry in cached.items())
            maps[index] = f"CAST(MAP {{{entries}}} AS MAP(BIGINT, DOUBLE[]))" if entries else None
    return maps


def _batched_per_query(con: duckdb.DuckDBPyConnection, plan: Plan, measures: list[Measure],
                       conventions: dict[str, Any], batches: int, estimates: dict[int, str]) -> list[str]:
    """The per-query SELECT of each batch of queries (split by a hash of the query key)."""
    top = con.execute(f"SELECT greatest(max(relevance), 0) FROM {quote_identifier(plan.qrels_view)}").fetchall()[0][0]
    selects = []
    for batch in range(batches):
        views = []
        for view in (plan.run_view, plan.qrels_view):
            name = fresh_name("batch")
            con.execute(f"CREATE TEMP VIEW {name} AS SELECT * FROM {quote_identifier(view)} "
                        f"WHERE hash(query_id) % {batches} = {batch}").fetchall()
            views.append(name)
        part = dataclasses.replace(plan, run_view=views[0], qrels_view=views[1])
        selects.append(_per_query_sql(part, measures, conventions, g_max=top, estimates=estimates))
    return selects


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
            std: bool = False, train: Any = None, items: Any = None) -> Results:
    """Evaluate one or more runs (or one log) against qrels for every measure, in one pass per
    ranking convention; see duckrank.evaluate for the friendly front door.

    Without con= (and engine settings) the work runs on a cursor of duckrank's process-wide
    connection, whose macros are loaded once. summary_only computes the summary rows in the same
    query and keeps no per-query table. std adds each mean's standard deviation to the summary
    (<measure>_std). A convention left None takes the registry's default."""
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
        raise OptionError("\n".join(problems))
    columns = {"query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col,
               SUBTOPIC: subtopic_col}
    diverse = [(i, m) for i, m in enumerate(parsed) if m.metric.reads == "subtopics"]
    diverse_measures = [m for _, m in diverse]  # their own pass: the ranking passes still render lean
    if diverse:  # what duckrank.rank_subtopics also refuses, said before any input is read
        problems = _subtopic_convention_problems(diverse_measures, conventions)
        if problems:
            raise OptionError("\n".join(problems))
    # segment columns come from the run (or log), or all from a segments table joined on the query id
    own_segments = [] if segment_table is not None else segments
    keep_order = conventions["ties"] == "input"  # the only tie rule that reads the run's row order
    exclusions = (read_table(con, exclude, "exclude", columns=columns, literal=literal)
                  if exclude is not None else None)
    attributes = (read_table(con, segment_table, "segments", columns=columns, extra=segments, literal=literal)
                  if segment_table is not None else None)
    if log is not None:
        if qrels is not None or runs is not None:
            raise OptionError("pass either a log, or qrels and runs, not both")
        if diverse:
            raise OptionError(f"{', '.join(m.spelling for m in diverse_measures)} read subtopic qrels, which a log has "
                              f"not: pass qrels (with a subtopic column) and runs")
        source = read_table(con, log, "log", fmt=log_format, columns={**columns, "label": label},
                            label_map=label_map, extra=own_segments, literal=literal)
        source = _reshaped(con, source, exclusions, attributes, segments, keep_order)
        run_source, qrels_source = _split_log(con, source, segments)
        sources, run_sources = [source, run_source, qrels_source], [run_source]
    else:
        if qrels is None or runs is None:
            raise OptionError("pass qrels and at least one run (or a single log=)")
        if not run_list:
            raise OptionError("pass at least one run")
        qrels_source = read_table(con, qrels, "qrels", fmt=qrels_format, columns=columns, literal=literal,
                                  subtopics=bool(diverse))
        if diverse and SUBTOPIC not in qrels_source.columns:
            raise InputError(_subtopic_problem(diverse_measures, qrels_source, subtopic_col))
        run_sources = [read_table(con, run, "run", fmt=run_format, columns=columns, extra=own_segments, literal=literal)
                       for run in run_list]
        run_sources = [_empty_typed_as(con, run, qrels_source) for run in run_sources]
        qrels_source = _empty_typed_as(con, qrels_source, run_sources[0])
        check_id_types(qrels_source, run_sources)
        run_sources = [_reshaped(con, run, exclusions, attributes, segments, keep_order) for run in run_sources]
        sources = [qrels_source, *run_sources]
    sources += [extra for extra in (exclusions, attributes) if extra is not None]
    top_k = [(i, m) for i, m in enumerate(parsed) if m.metric.reads == "top_k"]
    tables: dict[str, str | None] = {}
    if top_k:
        read = _read_top_k_inputs(con, [m for _, m in top_k], train, items, columns, run_sources, literal)
        tables = {name: source.view if source else None for name, source in read.items()}
        sources.extend(source for source in read.values() if source)
    table = fresh_name("results")
    try:
        plan = _plan(con, run_sources, qrels_source, run_names, segments, attributes)
        ranking = [m for m in parsed if m.summary != "log"]
        ranked = [m for m in parsed if m.ranked]
        depth, slices = None, []
        if top_k:
            tables = _read_training_pairs_once(con, tables)
            depth, slices = _top_lists(con, plan, [m for _, m in top_k], conventions)
        ranked_plan = _cut_plan(con, plan, parsed, depth, slices, conventions)
        batches = _query_batches(con, ranked_plan) if ranked else 1
        estimates = _corrections(con, ranked_plan, parsed, conventions)
        parts = (_batched_per_query(con, ranked_plan, parsed, conventions, batches, estimates) if batches > 1
                 else [_per_query_sql(ranked_plan, parsed, conventions, estimates=estimates,
                                      lean=_lean_case(ranked_plan, [m for m in parsed if m not in diverse_measures],
                                                      batches))] if ranked else [])
        if diverse:  # never batched: few queries judge subtopics
            subtopic_sql = _subtopic_sql(plan, diverse, conventions)
            parts = [f"{parts[0]} UNION ALL {subtopic_sql}", *parts[1:]] if parts else [subtopic_sql]
        if top_k:  # never batched: coverage is over every query at once
            top_k_sql = _top_k_sql(plan, top_k, conventions, tables, slices)
            parts = [f"{parts[0]} UNION ALL {top_k_sql}", *parts[1:]] if parts else [top_k_sql]
        log_measures = [(i, m) for i, m in enumerate(parsed) if m.summary == "log"]
        if log_measures:
            log_sql = _log_sql(con, plan, log_measures, rel_level, source if log is not None else None)
            parts = [f"{parts[0]} UNION ALL {log_sql}", *parts[1:]] if parts else [log_sql]
        runs_sql = ", ".join(f"({i}, {sql_text(n)})" for i, n in enumerate(plan.runs))
        per_query = [f"SELECT r.run_index, p.* FROM ({part}) p JOIN (VALUES {runs_sql}) r(run_index, run) USING (run)"
                     for part in parts]
        if summary_only and len(per_query) == 1:
            rows = con.execute(summary_sql(f"({per_query[0]})", plan.runs, parsed, segments, std, scored=True)
                               ).fetchall()
            scored = {row[-3] for row in rows if row[-1]}
            rows = [row[:-1] for row in rows]
            if not any(m.spelling in scored for m in ranking) and any(m.metric.per_query for m in ranking):
                error = _no_common_queries(con, run_sources, qrels_source)
                if error:
                    raise error
            missing = _missing_queries(con, plan, qrels_source) if count_missing and log is None else []
            return Results(con, plan.runs, parsed, None, segments, rows, missing, _tags(plan, run_sources), std)
        con.execute(f"CREATE TEMP TABLE {table}_runs AS SELECT * FROM (VALUES {runs_sql}) t(run_index, run)").fetchall()
        measures_sql = ", ".join(f"({i}, {sql_text(m.spelling)}, {sql_literal(m.metric.per_query)})"
                                 for i, m in enumerate(parsed))
        con.execute(f"CREATE TEMP TABLE {table}_measures AS SELECT * FROM (VALUES {measures_sql}) "
                    f"t(measure_index, measure, per_query)").fetchall()
        # one batch at a time, so that each batch's lists are freed before the next is ranked
        con.execute(f"CREATE TEMP TABLE {table} AS {per_query[0]}").fetchall()
        for part in per_query[1:]:
            con.execute(f"INSERT INTO {table} {part}").fetchall()
    except duckdb.Error as error:
        raise _translate(error, sources, con) from None
    evaluated = con.execute(f"SELECT count(*) FROM {table} WHERE query_id IS NOT NULL").fetchall()[0][0]
    if evaluated == 0 and any(m.metric.per_query and m.summary != "log" for m in parsed):
        error = _no_common_queries(con, run_sources, qrels_source)
        if error:
            raise error
    missing = _missing_queries(con, plan, qrels_source) if count_missing and log is None else []
    return Results(con, plan.runs, parsed, table, segments, missing=missing, tags=_tags(plan, run_sources), std=std)


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
    with Guest.of(con) as guest:
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


class Guest:
    """On a connection the caller owns (con=), leave the database as it was found: the engine
    settings the call changed restored, the call's views and tables dropped (but the tables a
    returned relation reads), and the macro library removed again: the whole schema when the call
    made it, else just the macros and views it added to the caller's own schema `duckrank` (so each
    such call loads it: pass a duckrank.connect() connection to load it once)."""

    SETTINGS = ("threads", "memory_limit", "temp_directory")

    def __init__(self, con: duckdb.DuckDBPyConnection | None) -> None:
        self.con = con
        self.kept: set[str] = set()

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection | None) -> Guest:
        """The guard for a call given `con`: a no-op for none (duckrank's own connection) and for
        a connection that holds the library (duckrank.connect()'s, the caller's to manage)."""
        return cls(con if con is not None and not holds_library(con) else None)

    def keep(self, *names: str | None) -> None:
        self.kept.update(name for name in names if name)

    def __enter__(self) -> Self:
        if self.con is not None:
            self.settings = {name: self._setting(name) for name in self.SETTINGS}
            self.had_library = bool(self.con.execute(
                "SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'duckrank' "
                "AND database_name = current_database()").fetchall()[0][0])
            self.before = self._objects()
            self.library_before = self._library_objects()
        return self

    def _objects(self) -> set[tuple[str, str]]:
        return set(self.con.execute(
            "SELECT 'VIEW', view_name FROM duckdb_views() WHERE view_name LIKE 'duckrank\\_%' ESCAPE '\\' "
            "UNION ALL SELECT 'TABLE', table_name FROM duckdb_tables() "
            "WHERE table_name LIKE 'duckrank\\_%' ESCAPE '\\'").fetchall())

    def _library_objects(self) -> set[tuple[str, str]]:
        """(DROP keyword, name) of every macro and view in schema duckrank of the current database."""
        return set(self.con.execute(
            "SELECT CASE function_type WHEN 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END, function_name "
            "FROM duckdb_functions() WHERE schema_name = 'duckrank' AND database_name = current_database() "
            "AND function_type IN ('macro', 'table_macro') "
            "UNION ALL SELECT 'VIEW', view_name FROM duckdb_views() "
            "WHERE schema_name = 'duckrank' AND database_name = current_database()").fetchall())

    def _setting(self, name: str) -> Any:
        return self.con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0]

    def __exit__(self, *exc: object) -> None:
        if self.con is None:
            return
        # views first: they read the tables
        for kind, name in sorted(self._objects() - self.before, key=lambda item: item[0] == "TABLE"):
            if name not in self.kept:
                self.con.execute(f"DROP {kind} IF EXISTS {quote_identifier(name)}").fetchall()
        for name, value in self.settings.items():
            if self._setting(name) != value:  # only a setting the call changed: the others stay exact
                self._restore(name, value)
        if not self.had_library:  # the tables kept are materialised: they read no macro
            self.con.execute("DROP SCHEMA IF EXISTS duckrank CASCADE").fetchall()
            return
        # views first: they may call the macros
        for kind, name in sorted(self._library_objects() - self.library_before, key=lambda item: item[0] != "VIEW"):
            self.con.execute(f"DROP {kind} IF EXISTS duckrank.{quote_identifier(name)}").fetchall()

    def _restore(self, name: str, shown: str) -> None:
        """Set `name` back to the value that read back as `shown`. DuckDB shows a size truncated to a
        tenth of its unit (counted in whole 1/1024ths of it) and exposes no exact value, so setting
        the text back drifts down a tenth each call ('2.7GiB' reads 2.6 GiB, which set reads 2.5
        GiB). So: the default when it reads the same, else the fewest bytes that read as `shown`,
        which read the same however often they are restored."""
        self.con.execute(f"RESET {name}").fetchall()
        if self._setting(name) == shown:
            return
        size = re.fullmatch(r"(\d+(?:\.\d+)?) ([KMGTP])iB", shown) if name == "memory_limit" else None
        if size:
            sub_unit = 1024 ** "KMGTP".index(size[2])
            shown = f"{math.ceil(Fraction(size[1]) * 1024) * sub_unit}B"
        self.con.execute(f"SET {name} = ?", [shown]).fetchall()
