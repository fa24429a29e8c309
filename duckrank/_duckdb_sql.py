"""The DuckDB SQL of an evaluation: the views one duckrank.ranked pass scores (several runs and
segments keyed into one query id), the per-query SELECT of each group of measures (ranking passes,
diversity, beyond-accuracy, whole-log AUC) and the summary over the per-query rows (the parts a run
is split into are duckrank._partitions'). Python composes; every number comes from the SQL library."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import duckdb

from duckrank._checks import check_key_types, check_one_segment, translate_error
from duckrank._library import library_digest
from duckrank._sql import fresh_name, fresh_names_in, quote_identifier
from duckrank._sql import sql_literal
from duckrank.errors import InputError, OptionError, quoted_path
from duckrank.inputs import SUBTOPIC, InputView
from duckrank.lean import CHECK_FIRED
from duckrank.lean import available as lean_available
from duckrank.lean import pass_sql as lean_pass_sql
from duckrank.measures import Measure, option_literal
from duckrank.options import EMPTY_GAIN_MAP, OPTIONS, SUBTOPIC_OPTIONS
from duckrank.plan import SUMMARY_SQL, RankingPass, ranking_passes, reads_top_lists

# With std, each mean also gets the standard deviation of its per-query values as ranx's return_std
# computes it (numpy's std: the population's, ddof 0), in query order like the mean, reported as
# the measure's name with this suffix.
_STD_SQL = "list_stddev_pop(list(value ORDER BY query_id))"
STD_SUFFIX = "_std"
_NAN_SQL = "CAST('NaN' AS DOUBLE)"


@dataclass
class ScoredViews:
    """The run and qrels views duckrank.ranked reads, and the runs' names and segment columns they
    hold (what to rank and compute is duckrank.plan's). Plain views when one run is scored whole;
    otherwise query_id is a struct {run, by_0, ..., query} (by_i the segment column `by[i]`) so that
    one pass scores every run and segment."""

    run_view: str
    qrels_view: str
    runs: list[str]
    by: list[str] = field(default_factory=list)
    # Several runs keyed by run alone: their rows keyed by duckrank_key {run, query} beside the plain
    # query_id, and the qrels as given, which duckrank.rank_queries_lean judges every run by at once,
    # so a sweep of 100 runs groups its qrels once, not 100 times (complete := false: its zero-filled
    # queries would have no key)
    shared_run_view: str | None = None
    shared_qrels_view: str | None = None

    @property
    def keyed(self) -> bool:
        return len(self.runs) > 1 or bool(self.by)

    def key_columns(self) -> list[tuple[str, str]]:
        """(output column, SQL expression over query_id) for run and each segment column."""
        if not self.keyed:
            return [("run", sql_literal(self.runs[0]))]
        return [("run", "query_id.run"), *((name, f"query_id.by_{i}") for i, name in enumerate(self.by))]

    def query_expression(self) -> str:
        return "query_id.query" if self.keyed else "query_id"


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
    rules = " ".join(f"WHEN {i} THEN {SUMMARY_SQL[measures[i].summary].format(value='value')}" for i in summarised)
    value = f"CASE measure_index {rules} END" if rules else "NULL"
    spread = [i for i in summarised if std and measures[i].summary == "mean"]
    spread_sql = f"CASE WHEN measure_index IN ({', '.join(map(str, spread))}) THEN {_STD_SQL} END" if spread else "NULL"
    run_names = ", ".join(f"({i}, {sql_literal(name)})" for i, name in enumerate(runs))
    measure_rows = ", ".join(f"({i}, {sql_literal(measures[i].spelling)}, {_unscored_sql(measures[i])})"
                             for i in summarised)
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
            f"JOIN (VALUES (false, ''), (true, {sql_literal(STD_SUFFIX)})) x(spread, suffix) "
            f"  ON NOT x.spread OR m.measure_index IN ({', '.join(map(str, spread)) or 'NULL'}) "
            f"WHERE m.measure_index IS NOT NULL "
            f"ORDER BY r.run_index, {by_sql}m.measure_index, x.spread")


def _unscored_sql(measure: Measure) -> str:
    """A measure's summary over no scored query: a sum or count of none is 0, a mean NaN."""
    return "0.0" if measure.summary in ("sum", "count") else _NAN_SQL


def _path_of(source: InputView) -> str:
    """The user's name for an input: its path or table name as given, else its label (run (DataFrame))."""
    return source.given if source.given is not None else source.label


def tagged_names(names: list[str], tags: list[str | None]) -> list[str] | None:
    """The runs named as trec_eval names a TREC run, by its tag (its last line's), the others as in
    `names`; None when no run has a tag or two runs would share a name. The names people read
    (eval's tables, the report), not the run column of machine output, which keeps `names`."""
    tagged = [tag or name for tag, name in zip(tags, names)]
    return tagged if any(tags) and len(set(tagged)) == len(tagged) else None


def run_tags(views: ScoredViews, runs: list[InputView]) -> list[str | None]:
    """Each of the scored runs' TREC tag: none when one input was split into runs by its run_id."""
    return [source.name for source in runs] if len(runs) == len(views.runs) else [None] * len(views.runs)


def scored_views(con: duckdb.DuckDBPyConnection, runs: list[InputView], qrels: InputView, names: list[str] | None,
                 by: list[str], attributes: InputView | None = None) -> ScoredViews:
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
            union = f"SELECT {sql_literal(run_names[0])} AS run, query_id, doc_id, score{segments} FROM {source.view}"
        else:
            run_names = ids
            union = f"SELECT run_id AS run, query_id, doc_id, score{segments} FROM {source.view}"
    else:
        run_names = names or [_path_of(source) for source in runs]
        union = " UNION ALL ".join(
            f"SELECT {sql_literal(name)} AS run, query_id, doc_id, score{segments} FROM {source.view}"
            for name, source in zip(run_names, runs))
    if len(set(run_names)) != len(run_names):
        repeated = next(name for name in run_names if run_names.count(name) > 1)
        raise InputError(f"two runs share the name {quoted_path(repeated)}; give each run its own name (run_names=)")
    views = ScoredViews(runs[0].view, qrels.view, run_names, list(by))
    if not views.keyed:
        return views
    fields = "".join(f", by_{i} := by_{i}" for i in range(len(by)))
    views.run_view, views.qrels_view = fresh_name("runs"), fresh_name("qrels")
    con.execute(f"CREATE TEMP VIEW {views.run_view} AS SELECT struct_pack(run := run{fields}, query := query_id) "
                f"AS query_id, doc_id, score FROM ({union})").fetchall()
    subtopic = ", q.subtopic" if SUBTOPIC in qrels.columns else ""
    values = ", ".join(f"({sql_literal(n)})" for n in run_names)
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
        con.execute(f"CREATE TEMP VIEW {views.qrels_view} AS SELECT struct_pack(run := k.run{from_keys}, "
                    f"query := q.query_id) AS query_id, q.doc_id, q.relevance{subtopic} FROM {qrels.view} q "
                    f"JOIN (SELECT DISTINCT {keys} FROM ({union}) UNION ALL {missed}) k "
                    f"ON k.query_id = q.query_id").fetchall()
    else:  # every run is judged on every qrels query, so complete := true still sees missed queries
        con.execute(f"CREATE TEMP VIEW {views.qrels_view} AS SELECT struct_pack(run := r.run, query := q.query_id) "
                    f"AS query_id, q.doc_id, q.relevance{subtopic} FROM {qrels.view} q CROSS JOIN (VALUES {values}) r(run)").fetchall()
        views.shared_run_view, views.shared_qrels_view = fresh_name("runs"), qrels.view
        con.execute(f"CREATE TEMP VIEW {views.shared_run_view} AS SELECT struct_pack(run := run, query := query_id) "
                    f"AS duckrank_key, query_id, doc_id, score FROM ({union})").fetchall()
    return views


def _ranked_call(views: ScoredViews, ranking: RankingPass, worded: bool = False) -> str:
    """The pass's relation called with every argument spelled out (the options were checked
    already); worded: duckrank.rank_queries whatever the pass's relation, as its checks word a
    data problem."""
    relation, arguments = (("rank_queries", ranking.arguments) if worded
                           else (ranking.relation, ranking.relation_arguments))
    args = ", ".join(EMPTY_GAIN_MAP if name == "gain_map" and not value else option_literal(value)
                     for name, value in arguments.items())
    return f"duckrank.{relation}({sql_literal(views.qrels_view)}, {sql_literal(views.run_view)}, {args})"


@dataclass(frozen=True)
class RankingValues:
    """The ranking passes of one statement as CTEs g0, g1, ... (one row per query) and each ranking
    measure's per-query value as SQL over its pass's row: (measure index, pass, value), in the
    passes' order."""

    ctes: list[str]
    values: list[tuple[int, str, str]]


def ranking_values(views: ScoredViews, measures: list[Measure], conventions: dict[str, Any],
                   g_max: float | None = None, estimates: dict[int, str] | None = None, lean: bool = False,
                   rows: int = 0, slices: list[ScoredViews] | None = None) -> RankingValues:
    """Every ranking measure's per-query value, one pass per group of measures sharing the relation
    options (duckrank.plan). g_max pins ERR's default top grade; estimates holds each corrected
    measure's f~ (corrections). lean: each pass rendered with no macro call once duckrank.lean
    renders it (rows: the run's, which can make that the first call), for the cases lean_case admits.
    slices: views of disjoint sets of the queries (query_slices), each ranked by a pass of its own
    whose rows the pass's CTE unites; the views themselves when None."""
    empty = option_literal(conventions["empty"])
    ctes, values = [], []
    for group, ranking in enumerate(ranking_passes(measures, conventions, g_max)):
        shared = (views.shared_run_view is not None and ranking.relation == "rank_queries_lean"
                  and not ranking.arguments["complete"])
        parts = [dataclasses.replace(part, run_view=part.shared_run_view, qrels_view=part.shared_qrels_view)
                 if shared else part for part in slices or [views]]
        key = "q.duckrank_key AS query_id" if shared else "q.query_id"
        per_query = [measures[i].metric.per_query_value(measures[i].aggregate_sql(), "q.num_rel", empty)
                     for i in ranking.measures]
        # the first slice decides whether the pass renders lean; the others then find it rendered
        rendered = (lean_pass_sql(ranking.relation, ranking.relation_arguments, per_query, parts[0].run_view,
                                  parts[0].qrels_view, rows, key) if lean else None)
        if rendered is not None:
            selects = [rendered, *(lean_pass_sql(ranking.relation, ranking.relation_arguments, per_query,
                                                 part.run_view, part.qrels_view, rows, key) for part in parts[1:])]
            values.extend((i, f"g{group}", f"v{j}") for j, i in enumerate(ranking.measures))
        else:
            aggregates = [measures[i].aggregate_sql() if measures[i].catalog is None
                          else measures[i].sampled_sql((estimates or {}).get(i)) for i in ranking.measures]
            computed = ", ".join(f"{aggregate} AS m{i}" for i, aggregate in zip(ranking.measures, aggregates))
            selects = [f"SELECT {key}, q.num_rel, {computed} FROM {_ranked_call(part, ranking)} q" for part in parts]
            values.extend((i, f"g{group}", measures[i].metric.per_query_value(f"m{i}", "num_rel", empty))
                          for i in ranking.measures)
        ctes.append(f"g{group} AS ({' UNION ALL '.join(f'SELECT * FROM ({select})' for select in selects)})"
                    if len(selects) > 1 else f"g{group} AS ({selects[0]})")
    return RankingValues(ctes, values)


def per_query_sql(views: ScoredViews, measures: list[Measure], ranked: RankingValues) -> str:
    """(key columns, query_id, measure_index, value, text) for every ranking measure: text holds a
    text measure's value (relstring), NULL for the others."""
    keys = "".join(f"{expression} AS {quote_identifier(name)}, " for name, expression in views.key_columns())
    selects = [f"SELECT {keys}{views.query_expression()} AS query_id, {i} AS measure_index, "
               f"{_value_text(value, measures[i])} FROM {group}" for i, group, value in ranked.values]
    return (f"WITH {', '.join(ranked.ctes)} SELECT * FROM ({' UNION ALL '.join(selects)}) "
            f"WHERE value IS NOT NULL OR text IS NOT NULL")


def run_summary_sql(run: str, measures: list[Measure], ranked: RankingValues) -> str:
    """summary_sql's rows (run, measure, value, scored) for one run scored whole, straight from its
    passes' rows: each measure's summary rule over its value in each pass, no per-query rows
    unpivoted, keyed and grouped first (a fifth of a small call's planning). Measures without a
    summary (relstring, which compute refuses to summarise alone) are left out, as summary_sql leaves
    them."""
    passes: dict[str, list[tuple[int, str]]] = {}
    for i, group, value in ranked.values:
        if measures[i].summary != "none":
            passes.setdefault(group, []).append((i, value))
    summaries = []
    for group, values in passes.items():
        columns = ", ".join(f"{value} AS c{i}" for i, value in values)
        aggregates = ", ".join(f"count(c{i}) AS n{i}, {SUMMARY_SQL[measures[i].summary].format(value=f'c{i}')} AS s{i}"
                               for i, _ in values)
        summaries.append(f"(SELECT {aggregates} FROM (SELECT query_id, {columns} FROM {group}))")
    ordered = sorted(i for values in passes.values() for i, _ in values)
    return (f"WITH {', '.join(ranked.ctes)} SELECT {sql_literal(run)} AS run, "
            f"unnest([{', '.join(sql_literal(measures[i].spelling) for i in ordered)}]) AS measure, "
            f"unnest([{', '.join(f'CASE WHEN n{i} > 0 THEN s{i} ELSE {_unscored_sql(measures[i])} END' for i in ordered)}])"
            f" AS value, unnest([{', '.join(f'n{i} > 0' for i in ordered)}]) AS scored FROM {', '.join(summaries)}")


def worded_problem(con: duckdb.DuckDBPyConnection, error: duckdb.Error, views: ScoredViews, runs: list[InputView],
                   qrels: InputView, measures: list[Measure], conventions: dict[str, Any]) -> duckdb.Error:
    """`error` as the macros word it for the run that has it when a check found a data problem that
    its message cannot name: a lean statement's (lean.CHECK_FIRED, no wording), or one that names a
    view of duckrank's own instead of an input: keyed views' (the view of every run, and a
    {run, query} key) or a batch's. Each run's duckrank.rank_queries passes run over its own view
    until one raises; any other error is returned as it is."""
    message = str(error)
    inputs = {view for source in (*runs, qrels) for view in (source.view, source.inner_view)}
    if CHECK_FIRED not in message and not fresh_names_in(message) - inputs:
        return error
    for run in runs:
        own = ScoredViews(run.view, qrels.view, [run.label])
        for ranking in ranking_passes(measures, conventions):
            try:
                con.execute(f"SELECT count(*) FROM {_ranked_call(own, ranking, worded=True)}").fetchall()
            except duckdb.Error as worded:
                return worded
    return error


def subtopic_values_sql(views: ScoredViews, measures: list[tuple[int, Measure]], conventions: dict[str, Any]) -> str:
    """The diversity measures (sql/34_diversity_metrics.sql): one duckrank.rank_subtopics pass per
    relevance level, complete and unjudged rule and alpha, its measures' values unnested into rows."""
    keys = "".join(f"{expression} AS {quote_identifier(name)}, " for name, expression in views.key_columns())
    empty = option_literal(conventions["empty"])
    groups: dict[tuple, list[tuple[int, Measure]]] = {}
    for index, measure in measures:
        complete = measure.complete if measure.complete is not None else conventions["complete"]
        key = (measure.level(conventions["rel_level"]), complete, measure.unjudged or conventions["unjudged"],
               *(measure.params.get(name, OPTIONS[name].default) for name in SUBTOPIC_OPTIONS))
        groups.setdefault(key, []).append((index, measure))
    selects = []
    for (rel_level, complete, unjudged, *options), members in groups.items():
        arguments = ", ".join(option_literal(value) for value in (
            rel_level, conventions["ties"], conventions["max_rank"], complete, unjudged, conventions["duplicates"],
            *options))
        indexes = ", ".join(str(index) for index, _ in members)
        values = ", ".join(measure.metric.per_query_value(measure.aggregate_sql(), "q.num_rel", empty)
                           for _, measure in members)
        selects.append(
            f"SELECT * FROM (SELECT {keys}{views.query_expression()} AS query_id, unnest([{indexes}]) AS measure_index, "
            f"unnest([{values}]) AS value, CAST(NULL AS VARCHAR) AS text "
            f"FROM duckrank.rank_subtopics({sql_literal(views.qrels_view)}, {sql_literal(views.run_view)}, "
            f"{arguments}) q) "
            f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _value_text(value: str, measure: Measure) -> str:
    """A measure's per-query value (Metric.per_query_value) as the value and text columns: a text
    measure fills text, the others value."""
    if measure.metric.value == "text":
        return f"CAST(NULL AS DOUBLE) AS value, {value} AS text"
    return f"{value} AS value, CAST(NULL AS VARCHAR) AS text"


def lean_case(measures: list[Measure], batches: int) -> bool:
    """Whether the ranking passes render lean (duckrank.lean): the queries scored in one batch (one
    run or several, keyed by run and segment), every measure a ranking measure on full rankings, and
    sqlglot at hand. Anything else calls the macros."""
    return batches == 1 and all(m.ranked and m.catalog is None for m in measures) and lean_available()


def log_values_sql(con: duckdb.DuckDBPyConnection, views: ScoredViews, measures: list[tuple[int, Measure]],
             rel_level: float, log: InputView | None) -> str:
    """GAUC and global AUC are whole-log values: one macro call per (run, segment) slice of a log.
    A log given as such is read as it is; otherwise the log is built from the run and qrels (an
    unjudged impression is a negative; only judged queries count)."""
    if log is not None and not views.keyed:
        log_view = log.view
    else:
        log_view = fresh_name("log")
        con.execute(
            f"CREATE TEMP VIEW {log_view} AS SELECT r.query_id, r.doc_id, r.score, coalesce(q.relevance, 0) AS label "
            f"FROM {views.run_view} r LEFT JOIN {views.qrels_view} q ON q.query_id = r.query_id AND q.doc_id = r.doc_id "
            f"WHERE r.query_id IN (SELECT query_id FROM {views.qrels_view})").fetchall()
    key_columns = views.key_columns()
    if views.keyed:
        expressions = ", ".join(expression for _, expression in key_columns)
        slices = con.sql(f"SELECT DISTINCT {expressions} FROM {log_view} ORDER BY ALL").fetchall()
    else:
        slices = [(views.runs[0],)]
    selects = []
    for values in slices:
        source = log_view
        if views.keyed:
            source = fresh_name("log_slice")
            condition = " AND ".join(f"{expression} IS NOT DISTINCT FROM {sql_literal(value)}"
                                     for (_, expression), value in zip(key_columns, values))
            con.execute(f"CREATE TEMP VIEW {source} AS SELECT query_id, score, label FROM {log_view} "
                        f"WHERE {condition}").fetchall()
        constants = "".join(f"{sql_literal(value)} AS {quote_identifier(name)}, "
                            for (name, _), value in zip(key_columns, values))
        for index, measure in measures:
            level = measure.level(rel_level)
            call = measure.metric.aggregate.format(
                log=sql_literal(source), rel_level=option_literal(level),
                **{name: option_literal(value) for name, value in measure.params.items()})
            selects.append(f"SELECT {constants}NULL AS query_id, {index} AS measure_index, value, "
                           f"CAST(NULL AS VARCHAR) AS text FROM {call} "
                           f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _slices(con: duckdb.DuckDBPyConnection, views: ScoredViews) -> list[tuple[tuple, str, str]]:
    """Each (run, segment) slice of the views as (its key values, run view, qrels view) whose query_id is
    the query itself (what training interactions call the user)."""
    if not views.keyed:
        return [((views.runs[0],), views.run_view, views.qrels_view)]
    key_columns = views.key_columns()
    expressions = ", ".join(expression for _, expression in key_columns)
    slices = []
    for values in con.sql(f"SELECT DISTINCT {expressions} FROM {views.run_view} ORDER BY ALL").fetchall():
        condition = " AND ".join(f"{expression} IS NOT DISTINCT FROM {sql_literal(value)}"
                                 for (_, expression), value in zip(key_columns, values))
        slice_views = []
        for view, columns in ((views.run_view, "doc_id, score"), (views.qrels_view, "doc_id, relevance")):
            name = fresh_name("slice")
            con.execute(f"CREATE TEMP VIEW {name} AS SELECT query_id.query AS query_id, {columns} FROM {view} "
                        f"WHERE {condition}").fetchall()
            slice_views.append(name)
        slices.append((values, *slice_views))
    return slices


def top_lists(con: duckdb.DuckDBPyConnection, views: ScoredViews, measures: list[Measure],
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
    names = sql_literal(", ".join(dict.fromkeys(m.spelling for m in measures)))
    slices = []
    for values, run_view, qrels_view in _slices(con, views):
        tables = {}
        for level in levels:
            ranking = {**conventions, "k": depth, "rel_level": level}
            arguments = ", ".join(option_literal(ranking[name]) for name in
                                  ("k", "rel_level", "ties", "max_rank", "complete", "unjudged", "duplicates"))
            tables[level] = fresh_name("top_lists")
            con.execute(f"CREATE TEMP TABLE {tables[level]} AS SELECT * FROM duckrank.recommended("
                        f"{sql_literal(qrels_view)}, {sql_literal(run_view)}, {arguments}, {names})").fetchall()
        slices.append((values, tables))
    return depth, slices


def read_training_pairs_once(con: duckdb.DuckDBPyConnection, tables: dict[str, str | None]) -> dict[str, str | None]:
    """The tables with train's distinct pairs in a table: each measure's macro reads them, some more
    than once, and each would otherwise redo the DISTINCT."""
    if not tables.get("train"):
        return tables
    pairs = fresh_name("training_pairs")
    con.execute(f"CREATE TEMP TABLE {pairs} AS SELECT user_id AS query_id, doc_id "
                f"FROM duckrank.training_pairs({sql_literal(tables['train'])})").fetchall()
    return {**tables, "train": pairs}


def top_k_values_sql(views: ScoredViews, measures: list[tuple[int, Measure]], conventions: dict[str, Any],
               tables: dict[str, str | None], slices: list[tuple[tuple, dict[float, str]]]) -> str:
    """The beyond-accuracy measures (sql/42_beyond_accuracy.sql): each reads its table macro over a
    slice's top lists (top_lists) and the training (and item) tables. A measure of the whole set
    (coverage) gives one row with no query_id."""
    key_columns = views.key_columns()
    selects = []
    for values, lists in slices:
        constants = "".join(f"{sql_literal(value)} AS {quote_identifier(name)}, "
                            for (name, _), value in zip(key_columns, values))
        for index, measure in measures:
            call = measure.top_k_sql({"users": lists[measure.level(conventions["rel_level"])], **tables}, conventions["empty"])
            query = "NULL" if measure.summary == "overall" else "query_id"
            selects.append(f"SELECT {constants}{query} AS query_id, {index} AS measure_index, "
                           f"CAST(value AS DOUBLE) AS value, CAST(NULL AS VARCHAR) AS text FROM {call} "
                           f"WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def cut_views(con: duckdb.DuckDBPyConnection, views: ScoredViews, measures: list[Measure], depth: int | None,
              slices: list[tuple[tuple, dict[float, str]]], conventions: dict[str, Any]) -> ScoredViews:
    """The views the ranking measures read: when the run was ranked into top lists anyway and the
    measures may be scored from them (duckrank.plan.reads_top_lists), the run's rows of those lists,
    so that each ranking pass sorts k docs a query, not the whole run (one run, no segments)."""
    if views.keyed or not reads_top_lists(measures, depth, conventions):
        return views
    (_, lists), = slices
    table = fresh_name("run_top")
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT * FROM duckrank.run_top({sql_literal(views.run_view)}, "
                f"{sql_literal(next(iter(lists.values())))})").fetchall()
    return dataclasses.replace(views, run_view=table)


def reshaped(con: duckdb.DuckDBPyConnection, source: InputView, exclusions: InputView | None,
              attributes: InputView | None, by: list[str], keep_order: bool) -> InputView:
    """A run (or log) without the excluded (query_id, doc_id) pairs, with its segment columns
    from the segments table: the relation every later step reads (ranking, cutoffs, -M, num_ret, AUC)."""
    view = source.view
    if exclusions is not None:
        check_key_types(source, exclusions, ("query_id", "doc_id"))
        view = fresh_name("kept")
        # a table: several passes read it (the ranking, the beyond-accuracy measures' top k, the
        # batch count), and each would otherwise redo the anti-join; in the run's order when the tie
        # rule reads it (ties := 'input')
        remove = "run_excluding" if keep_order else "run_without"
        try:
            con.execute(f"CREATE TEMP TABLE {view} AS SELECT * FROM duckrank.{remove}("
                        f"{sql_literal(source.view)}, {sql_literal(exclusions.view)})").fetchall()
        except duckdb.Error as error:
            raise translate_error(error, [source, exclusions], con) from None
    if attributes is not None:
        check_key_types(source, attributes, ("query_id",))
        check_one_segment(con, attributes, by)
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


def missing_queries(con: duckdb.DuckDBPyConnection, views: ScoredViews, qrels: InputView) -> list[tuple[str, int, int]]:
    """For each run: how many qrels queries it lacks (they are not scored unless complete), of how many."""
    run_query = "query_id.query" if views.keyed else "query_id"
    run_name = "query_id.run" if views.keyed else sql_literal(views.runs[0])
    names = ", ".join(f"({sql_literal(name)})" for name in views.runs)
    rows = con.execute(
        f"WITH judged AS (SELECT DISTINCT query_id FROM {qrels.view}), "
        f"ranked AS (SELECT DISTINCT {run_name} AS run, {run_query} AS query_id FROM {views.run_view}) "
        f"SELECT r.run, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ranked x WHERE x.run = r.run "
        f"AND x.query_id = j.query_id)), count(*) "
        f"FROM (VALUES {names}) r(run) CROSS JOIN judged j GROUP BY r.run").fetchall()
    order = {name: i for i, name in enumerate(views.runs)}
    return sorted(rows, key=lambda row: order[row[0]])


def split_log(con: duckdb.DuckDBPyConnection, log: InputView, by: list[str]) -> tuple[InputView, InputView]:
    """A log as a run (query_id, doc_id, score, segments) and qrels (its label as the relevance)."""
    run_view, qrels_view = fresh_name("run"), fresh_name("qrels")
    segments = "".join(f", {quote_identifier(name)}" for name in by)
    con.execute(f"CREATE TEMP VIEW {run_view} AS SELECT query_id, doc_id, score{segments} FROM {log.view}").fetchall()
    con.execute(f"CREATE TEMP VIEW {qrels_view} AS SELECT query_id, doc_id, label AS relevance FROM {log.view}").fetchall()
    return (InputView(run_view, log.kind, log.shown, log.columns, given=log.given, parses_text=log.parses_text),
            InputView(qrels_view, log.kind, log.shown, log.columns, given=log.given, parses_text=log.parses_text))


# The corrected estimates f~ by (library, f(R) over the catalog, m, correction): pure functions of
# those, solved once per process (a catalog of 100,000 items costs seconds per measure).
_ESTIMATES: dict[tuple[str, str, int, str], list[float]] = {}


def corrections(con: duckdb.DuckDBPyConnection, views: ScoredViews, measures: list[Measure],
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
            f"[]) FROM {_ranked_call(views, ranking)} q").fetchall()[0][0]
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
            entries = ", ".join(f"{m}: {sql_literal(str(_ESTIMATES[entry]))}::DOUBLE[]" for m, entry in cached.items())
            maps[index] = f"CAST(MAP {{{entries}}} AS MAP(BIGINT, DOUBLE[]))" if entries else None
    return maps
