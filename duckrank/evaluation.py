"""Compose one DuckDB query for a whole list of measures and hand back the results.

All measures that share the ranking conventions are aggregates over one duckrank.ranked pass, so
the run is sorted once however many measures are asked for. Python only composes and validates.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import duckdb

from duckrank._library import connect, load
from duckrank.errors import DuckrankError, InputError, OptionError
from duckrank.inputs import Source, quote_identifier, read_table
from duckrank.measures import Measure, parse_measures, sql_literal

_names = itertools.count()
CONVENTIONS = ("ties", "rel_level", "max_rank", "complete", "empty", "unjudged", "gain", "duplicates")
_SUMMARY_SQL = {"mean": "avg(value)", "sum": "sum(value)", "gmean": "duckrank.geometric_mean(value)",
                "count": "CAST(count(*) AS DOUBLE)", "log": "avg(value)"}


@dataclass
class Results:
    """The per-query values of every (run, measure), materialised once in a temporary table."""

    con: duckdb.DuckDBPyConnection
    runs: list[str]
    measures: list[Measure]
    table: str

    @property
    def per_query(self) -> duckdb.DuckDBPyRelation:
        """Columns run, query_id, measure, value; one row per evaluated query and measure."""
        return self.con.sql(
            f"SELECT r.run, r.query_id, m.measure, r.value FROM {self.table} r "
            f"JOIN {self.table}_measures m USING (measure_index) WHERE m.per_query "
            f"ORDER BY r.run_index, r.query_id, r.measure_index")

    @property
    def summary(self) -> duckdb.DuckDBPyRelation:
        """Columns run, measure, value: each measure summarised over the evaluated queries."""
        parts = [f"SELECT run_index, measure_index, {_SUMMARY_SQL[m.summary]} AS value FROM {self.table} "
                 f"WHERE measure_index = {i} GROUP BY run_index, measure_index"
                 for i, m in enumerate(self.measures)]
        return self.con.sql(
            f"WITH summary AS ({' UNION ALL '.join(parts)}) "
            f"SELECT r.run, m.measure, s.value FROM summary s "
            f"JOIN {self.table}_measures m USING (measure_index) "
            f"JOIN {self.table}_runs r USING (run_index) ORDER BY s.run_index, s.measure_index")

    def as_dict(self) -> dict[str, Any]:
        """{measure: mean} for one run; {run: {measure: mean}} for several."""
        values: dict[str, dict[str, float]] = {run: {} for run in self.runs}
        for run, measure, value in self.summary.fetchall():
            values[run][measure] = value
        return values[self.runs[0]] if len(self.runs) == 1 else values


def _configure(con: duckdb.DuckDBPyConnection, threads: int | None, memory_limit: str | None,
               temp_dir: str | None) -> None:
    settings = {"threads": threads, "memory_limit": memory_limit, "temp_directory": temp_dir}
    for name, value in settings.items():
        if value is not None:
            try:
                con.execute(f"SET {name} = ?", [value]).fetchall()
            except duckdb.Error as error:
                raise OptionError(f"cannot set DuckDB's {name} to {value!r}: {str(error).splitlines()[0]}") from None


def _check_options(con: duckdb.DuckDBPyConnection, conventions: dict[str, Any], measures: list[Measure]) -> None:
    """Ask the SQL library's own checks about every option at once; raise them all together."""
    problems = []
    for name in ("rel_level", "max_rank"):
        value = conventions[name]
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            problems.append(f"{name} must be a number; got {value!r}")
    for name in ("ties", "empty", "unjudged", "gain", "duplicates"):
        if conventions[name] is not None and not isinstance(conventions[name], str):
            problems.append(f"{name} must be a string; got {conventions[name]!r}")
    if problems:
        raise OptionError("; ".join(problems))
    found = con.execute(
        "SELECT concat_ws('; ', duckrank.convention_problems(rel_level := ?, ties := ?, max_rank := ?, "
        "unjudged := ?, duplicates := ?), duckrank.option_problems(empty := ?, gain := ?))",
        [conventions["rel_level"], conventions["ties"], conventions["max_rank"], conventions["unjudged"],
         conventions["duplicates"], conventions["empty"], conventions["gain"] or "linear"]).fetchall()[0][0]
    problems = [found] if found else []
    checked = set(con.execute("SELECT parameters FROM duckdb_functions() WHERE schema_name = 'duckrank' "
                              "AND function_name = 'option_problems'").fetchall()[0][0])
    for measure in measures:
        options = {k: v for k, v in measure.options if k in checked}
        rendered = ", ".join(f"{name} := {sql_literal(value)}" for name, value in options.items())
        found = con.execute(f"SELECT duckrank.option_problems({rendered})").fetchall()[0][0]
        if found:
            problems.append(f"in measure {measure.spelling!r}: {found}")
    if problems:
        raise OptionError("; ".join(problems))


def _runs_view(con: duckdb.DuckDBPyConnection, runs: list[Source], qrels: Source,
               names: list[str] | None) -> tuple[str, str, list[str], bool]:
    """The run and qrels views duckrank.ranked scores, the run names, and whether the views are
    keyed by {run, query}. Several runs (a list, or one table whose run_id column holds several
    values) are scored in one duckrank.ranked pass by keying every query with its run. A list entry
    is one run, named by run_names= or its path; a lone run is named by its run_id, else its path."""
    if names is not None and len(names) != len(runs):
        raise OptionError(f"run_names has {len(names)} names for {len(runs)} runs")
    if len(runs) == 1:
        source = runs[0]
        ids = ([row[0] for row in con.sql(f"SELECT DISTINCT run_id FROM {source.view} ORDER BY 1").fetchall()]
               if source.has_run_id else [])
        if len(ids) <= 1:
            return source.view, qrels.view, names or ids or [_path_of(source)], False
        run_names = ids
        union = f"SELECT run_id AS run, query_id, doc_id, score FROM {source.view}"
    else:
        run_names = names or [_path_of(source) for source in runs]
        union = " UNION ALL ".join(f"SELECT {sql_string(name)} AS run, query_id, doc_id, score FROM {source.view}"
                                   for name, source in zip(run_names, runs))
    if len(set(run_names)) != len(run_names):
        repeated = next(name for name in run_names if run_names.count(name) > 1)
        raise InputError(f"two runs share the name {repeated!r}; give each run its own name (run_names=)")
    run_view, qrels_view = f"duckrank_runs_{next(_names)}", f"duckrank_qrels_{next(_names)}"
    con.execute(f"CREATE TEMP VIEW {run_view} AS SELECT {{'run': run, 'query': query_id}} AS query_id, doc_id, score "
                f"FROM ({union})").fetchall()
    names_sql = ", ".join(f"({sql_string(n)})" for n in run_names)
    con.execute(f"CREATE TEMP VIEW {qrels_view} AS SELECT {{'run': r.run, 'query': q.query_id}} AS query_id, "
                f"q.doc_id, q.relevance FROM {qrels.view} q CROSS JOIN (VALUES {names_sql}) r(run)").fetchall()
    return run_view, qrels_view, run_names, True


def _path_of(source: Source) -> str:
    """The user's name for an input: the path or table name inside its label (run 'x.parquet')."""
    return source.label.split(" ", 1)[1].strip("'") if "'" in source.label else source.label


def sql_string(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _ranked_call(run_view: str, qrels_view: str, key: tuple, conventions: dict[str, Any]) -> str:
    rel_level, gain, gain_map, g_max = key
    args = [f"rel_level := {sql_literal(rel_level)}", f"ties := {sql_literal(conventions['ties'])}",
            f"max_rank := {sql_literal(conventions['max_rank'])}", f"complete := {sql_literal(bool(conventions['complete']))}",
            f"unjudged := {sql_literal(conventions['unjudged'])}", f"gain := {sql_literal(gain)}",
            f"g_max := {sql_literal(g_max)}", f"duplicates := {sql_literal(conventions['duplicates'])}"]
    if gain_map:
        args.append(f"gain_map := {sql_literal(dict(gain_map))}")
    return f"duckrank.ranked({sql_string(qrels_view)}, {sql_string(run_view)}, {', '.join(args)})"


def _per_query_sql(run_view: str, qrels_view: str, measures: list[Measure], conventions: dict[str, Any],
                   keyed: bool) -> str:
    """SELECT run, query_id, measure_index, value for every ranking measure, one pass per relation key."""
    groups: dict[tuple, list[int]] = {}
    for index, measure in enumerate(measures):
        if measure.summary != "log":
            groups.setdefault(measure.relation_key(conventions["rel_level"]), []).append(index)
    ctes, selects = [], []
    run_expr, query_expr = ("query_id.run", "query_id.query") if keyed else ("NULL", "query_id")
    empty = sql_literal(conventions["empty"])
    for group_index, (key, indexes) in enumerate(groups.items()):
        columns = ", ".join(f"{measures[i].aggregate_sql()} AS m{i}" for i in indexes)
        ctes.append(f"g{group_index} AS (SELECT query_id, max(num_rel) AS num_rel, {columns} "
                    f"FROM {_ranked_call(run_view, qrels_view, key, conventions)} GROUP BY query_id)")
        selects.extend(f"SELECT {run_expr} AS run, {query_expr} AS query_id, {i} AS measure_index, "
                       f"CAST(duckrank.empty_policy(m{i}, num_rel, {empty}) AS DOUBLE) AS value FROM g{group_index}"
                       for i in indexes)
    return f"WITH {', '.join(ctes)} SELECT * FROM ({' UNION ALL '.join(selects)}) WHERE value IS NOT NULL"


def _log_view(con: duckdb.DuckDBPyConnection, run_view: str, qrels_view: str, keyed: bool) -> str:
    """A log(query_id, score, label) from a run and its qrels: unjudged impressions are negatives,
    only queries the qrels know are kept, as for every other measure."""
    view = f"duckrank_log_{next(_names)}"
    con.execute(
        f"CREATE TEMP VIEW {view} AS SELECT r.query_id, r.doc_id, r.score, coalesce(q.relevance, 0) AS label "
        f"FROM {run_view} r LEFT JOIN {qrels_view} q ON q.query_id = r.query_id AND q.doc_id = r.doc_id "
        f"WHERE r.query_id IN (SELECT query_id FROM {qrels_view})").fetchall()
    return view


def _translate(error: duckdb.Error, sources: list[Source]) -> DuckrankError:
    """A DuckDB error as a duckrank error that names the user's inputs, not our views."""
    message = str(error).strip()
    for source in sources:
        name = source.label.split(" ", 1)[1] if " " in source.label else source.label
        message = message.replace(f"'{source.view}'", name).replace(source.view, name)
    found = re.search(r"duckrank: (.*)", message, re.S)
    if found:
        return InputError(found.group(1).strip())
    return InputError(f"DuckDB could not evaluate the inputs: {message.splitlines()[0]}")


def compute(qrels: Any = None, runs: Any = None, measures: list[str] | str = ("map",), *, log: Any = None,
            label: str | None = None, label_map: dict[Any, float] | None = None, run_names: list[str] | None = None,
            run_format: str | None = None, qrels_format: str | None = None, log_format: str | None = None,
            query_col: str | None = None, doc_col: str | None = None, score_col: str | None = None,
            relevance_col: str | None = None, con: duckdb.DuckDBPyConnection | None = None,
            threads: int | None = None, memory_limit: str | None = None, temp_dir: str | None = None,
            ties: str = "trec", rel_level: float = 1, max_rank: int | None = None, complete: bool = False,
            empty: str = "zero", unjudged: str = "nonrelevant", gain: str | None = None,
            duplicates: str = "error") -> Results:
    """Evaluate one or more runs (or one log) against qrels for every measure, in one pass per
    ranking convention; see duckrank.evaluate for the friendly front door."""
    parsed = parse_measures(list(measures) if not isinstance(measures, str) else measures)
    conventions = {"ties": ties, "rel_level": rel_level, "max_rank": max_rank, "complete": complete,
                   "empty": empty, "unjudged": unjudged, "gain": gain, "duplicates": duplicates}
    if gain is not None:  # the convention sets the gain of every measure that did not name one
        parsed = [_with_gain(m, gain) for m in parsed]
    con = load(con) if con is not None else connect()
    _configure(con, threads, memory_limit, temp_dir)
    _check_options(con, conventions, parsed)
    columns = {"query_id": query_col, "doc_id": doc_col, "score": score_col, "relevance": relevance_col}
    if log is not None:
        if qrels is not None or runs is not None:
            raise OptionError("pass either a log, or qrels and runs, not both")
        source = read_table(con, log, "log", fmt=log_format, columns={**columns, "label": label}, label_map=label_map)
        run_source = Source(*_split_log(con, source, "run"))
        qrels_source = Source(*_split_log(con, source, "qrels"))
        sources = [source, run_source, qrels_source]
        run_sources = [run_source]
    else:
        if qrels is None or runs is None:
            raise OptionError("pass qrels and at least one run (or a single log=)")
        run_list = list(runs) if isinstance(runs, (list, tuple)) else [runs]
        if not run_list:
            raise OptionError("pass at least one run")
        qrels_source = read_table(con, qrels, "qrels", fmt=qrels_format, columns=columns)
        run_sources = [read_table(con, run, "run", fmt=run_format, columns=columns) for run in run_list]
        sources = [qrels_source, *run_sources]
        _check_id_types(qrels_source, run_sources)
    try:
        run_view, qrels_view, names, keyed = _runs_view(con, run_sources, qrels_source, run_names)
        table = f"duckrank_results_{next(_names)}"
        selects = []
        if any(m.summary != "log" for m in parsed):
            selects.append(_per_query_sql(run_view, qrels_view, parsed, conventions, keyed))
        log_measures = [(i, m) for i, m in enumerate(parsed) if m.summary == "log"]
        if log_measures:
            log_view = _log_view(con, run_view, qrels_view, keyed)
            if keyed:
                for run in names:
                    con.execute(f"CREATE TEMP VIEW duckrank_log_run_{run_key(run)} AS SELECT query_id.query AS query_id, "
                                f"score, label FROM {log_view} WHERE query_id.run = {sql_string(run)}").fetchall()
            for index, measure in log_measures:
                selects.append(_log_sql(log_view, measure, index, names, keyed, rel_level))
        names_sql = ", ".join(f"({i}, {sql_string(n)})" for i, n in enumerate(names))
        con.execute(f"CREATE TEMP TABLE {table}_runs AS SELECT * FROM (VALUES {names_sql}) t(run_index, run)").fetchall()
        measures_sql = ", ".join(f"({i}, {sql_string(m.spelling)}, {sql_literal(m.metric.per_query)})"
                                 for i, m in enumerate(parsed))
        con.execute(f"CREATE TEMP TABLE {table}_measures AS SELECT * FROM (VALUES {measures_sql}) "
                    f"t(measure_index, measure, per_query)").fetchall()
        run_column = "coalesce(p.run, (SELECT min(run) FROM {t}_runs))".format(t=table)
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT r.run_index, {run_column} AS run, p.query_id, "
                    f"p.measure_index, p.value FROM ({' UNION ALL '.join(selects)}) p "
                    f"JOIN {table}_runs r ON r.run = {run_column}").fetchall()
    except duckdb.Error as error:
        raise _translate(error, sources) from None
    evaluated = con.execute(f"SELECT count(*) FROM {table} WHERE query_id IS NOT NULL").fetchall()[0][0]
    if evaluated == 0 and any(m.metric.per_query and m.summary != "log" for m in parsed):
        raise _no_common_queries(con, run_sources, qrels_source)
    return Results(con, names, parsed, table)


def run_key(run: str) -> str:
    return re.sub(r"\W", "_", run) + f"_{abs(hash(run)) % 10**8}"


def _log_sql(log_view: str, measure: Measure, index: int, runs: list[str], keyed: bool, rel_level: float) -> str:
    level = sql_literal(measure.rel_level if measure.rel_level is not None else rel_level)
    selects = []
    for run in runs:
        source = f"duckrank_log_run_{run_key(run)}" if keyed else log_view
        if measure.metric.name == "gauc":
            call = (f"duckrank.gauc({sql_string(source)}, weight := {sql_literal(measure.params['weight'])}, "
                    f"rel_level := {level})")
        else:
            call = f"duckrank.global_auc({sql_string(source)}, rel_level := {level})"
        selects.append(f"SELECT {sql_string(run)} AS run, NULL AS query_id, {index} AS measure_index, value "
                       f"FROM {call} WHERE value IS NOT NULL")
    return " UNION ALL ".join(selects)


def _with_gain(measure: Measure, gain: str) -> Measure:
    params = measure.params
    if "gain" not in params or params["gain"] != "linear":
        return measure
    params["gain"] = gain
    return Measure(measure.spelling, measure.metric, tuple(params.items()), measure.rel_level, measure.printed_name)


def _split_log(con: duckdb.DuckDBPyConnection, log: Source, kind: str) -> tuple[str, str, dict[str, str]]:
    view = f"duckrank_{kind}_{next(_names)}"
    if kind == "run":
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT query_id, doc_id, score FROM {log.view}").fetchall()
    else:
        con.execute(f"CREATE TEMP VIEW {view} AS SELECT query_id, doc_id, label AS relevance FROM {log.view}").fetchall()
    return view, log.label, log.columns


def _check_id_types(qrels: Source, runs: list[Source]) -> None:
    """Ids are compared as given: a string id never silently matches a number."""
    def is_text(column_type: str) -> bool:
        return column_type.upper().startswith("VARCHAR")
    for run in runs:
        for column in ("query_id", "doc_id"):
            if is_text(run.columns[column]) != is_text(qrels.columns[column]):
                raise InputError(
                    f"{run.label} has {column} of type {run.columns[column]} but {qrels.label} has "
                    f"{qrels.columns[column]}; ids are compared as given, so make both strings or both integers")


def _no_common_queries(con: duckdb.DuckDBPyConnection, runs: list[Source], qrels: Source) -> InputError:
    def sample(view: str) -> str:
        ids = con.sql(f"SELECT DISTINCT query_id FROM {quote_identifier(view)} ORDER BY 1 LIMIT 3").fetchall()
        return ", ".join(repr(row[0]) for row in ids) or "none: it is empty"
    if any(con.sql(f"SELECT count(*) FROM {quote_identifier(r.view)}").fetchall()[0][0] == 0 for r in runs):
        empty = next(r for r in runs if con.sql(f"SELECT count(*) FROM {quote_identifier(r.view)}").fetchall()[0][0] == 0)
        return InputError(f"{empty.label} is empty: there is nothing to evaluate")
    if con.sql(f"SELECT count(*) FROM {quote_identifier(qrels.view)}").fetchall()[0][0] == 0:
        return InputError(f"{qrels.label} is empty: there is nothing to evaluate against")
    return InputError(f"no query_id in common between {runs[0].label} (e.g. {sample(runs[0].view)}) and "
                      f"{qrels.label} (e.g. {sample(qrels.view)}); check that both files describe the same queries")


def evaluate(qrels: Any = None, run: Any = None, measures: list[str] | str = ("map",), *, per_query: bool = False,
             **options: Any) -> Any:
    """Evaluate `run` against `qrels`: {measure: mean over queries}, keyed by the measure as given.

    `run` may be a list of runs (or carry a run_id column): the result is then {run: {measure: mean}}.
    `per_query=True` returns a DuckDB relation (query_id, measure, value; plus run for several runs)
    that converts with .arrow(), .df(), .pl(). Options: the conventions ties, rel_level, max_rank,
    complete, empty, unjudged, gain, duplicates; column names query_col, doc_col, score_col,
    relevance_col; input formats run_format, qrels_format; a single log= with label= (and label_map=).
    """
    results = compute(qrels, run, measures, **options)
    if per_query:
        relation = results.per_query
        return relation if len(results.runs) > 1 else relation.project("query_id, measure, value")
    return results.as_dict()
