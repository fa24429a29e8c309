"""An input's columns as duckrank's standard ones: the mapping (query_col=, doc_col=, ...), a run
given as lists or ranked by a rank column, a log's grades from its label columns, and the checks of
the values' types."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import duckdb

from duckrank._library import load_input_macros
from duckrank._sql import fresh_name, quote_identifier
from duckrank._sql import sql_literal
from duckrank.errors import InputError, Option, OptionError, listed, quoted

STANDARD_COLUMNS = {
    "run": ("query_id", "doc_id", "score"),
    "qrels": ("query_id", "doc_id", "relevance"),
    "log": ("query_id", "doc_id", "score", "label"),
    "exclude": ("query_id", "doc_id"),  # pairs removed from the run before ranking (seen items)
    "segments": ("query_id",),  # a table of query attributes, joined on the query id
    "train": ("query_id", "doc_id"),
    "items": ("doc_id",),
}
# Qrels may carry each judgment's subtopic (diversity qrels), which the diversity measures read.
SUBTOPIC = "subtopic"
# Which option renames each standard column, for the hint in a missing-column error.
COLUMN_OPTIONS = {"query_id": "query_col", "doc_id": "doc_col", "score": "score_col",
                  "relevance": "relevance_col", "label": "label", SUBTOPIC: "subtopic_col"}
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
           "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL", "BOOLEAN")
# Score types whose every value a DOUBLE holds exactly: no need to look for scores that would tie.
HELD_BY_DOUBLE = ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER", "FLOAT", "DOUBLE", "REAL",
                  "BOOLEAN")


# The value column only the other of qrels and run has, and what a message calls its owner:
# qrels given where a run is expected (or the reverse) show it, the usual slip of an argument order.
_OTHERS_COLUMN = {"qrels": ("relevance", "score", "a run has"), "run": ("score", "relevance", "qrels have")}


def missing_columns_problem(label: str, kind: str, mapping: dict[str, str],
                            available: Iterable[str]) -> list[str | Option] | None:
    """The message parts saying which of the standard columns `mapping` reads (standard name ->
    the input's) the input lacks, its columns, and the options that name them; or None. Both engines
    say it. When the input lacks its own value column but has the other input's, the qrels and the
    run were given in each other's place: that is said first."""
    available = list(available)
    lacking = {std: given for std, given in mapping.items() if given not in available}
    if not lacking:
        return None
    named = ", ".join(quoted(std) + (f" (from {quoted(given)})" if given != std else "") for std, given in lacking.items())
    own, other, whose = _OTHERS_COLUMN.get(kind, (None, None, None))
    swapped = own in lacking and lacking[own] == own and other in available and "rank" not in available
    hint = (f", as {whose}: if the qrels and the run are swapped, give the qrels first, then the run "
            f"(trec_eval's order); else" if swapped else ";")
    return [f"{label} has no column {named}; its columns are {', '.join(quoted(c) for c in available)}{hint} "
            f"name yours with ", *listed(sorted({COLUMN_OPTIONS[std] for std in lacking}))]


def temp_view(con: duckdb.DuckDBPyConnection, name: str, relation: duckdb.DuckDBPyRelation, select: str = "*") -> None:
    """CREATE TEMP VIEW name AS SELECT `select` FROM the relation. Not relation.create_view: that
    view is persistent, so each call on duckrank's shared database left its views behind (about 20
    KB a call, 6,000 views after 3,000 calls in one notebook), and it costs three times as much."""
    con.execute(f"CREATE TEMP VIEW {quote_identifier(name)} AS SELECT {select} FROM ({relation.sql_query()})"
                ).fetchall()


def check_scores_held(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, kind: str, label: str,
                      query_id: str, score: str, column: str) -> None:
    """Refuse integer or DECIMAL scores that are the same DOUBLE (ranking would tie them), before
    they are cast: the SQL library's own check over the scores as given, of one query in a run
    (duckrank.score_problems), anywhere in a log (duckrank.log_score_problems: its global AUC ranks
    every row together)."""
    load_input_macros(con)
    view = fresh_name("scores")
    temp_view(con, view, relation, f"{query_id} AS query_id, {score} AS score")
    check = "log_score_problems" if kind == "log" else "score_problems"
    problem = con.execute(f"SELECT duckrank.{check}({sql_literal(view)}, column_name := {sql_literal(column)})"
                          ).fetchall()[0][0]
    con.execute(f"DROP VIEW {view}").fetchall()
    if problem:
        raise InputError(problem.replace(f"{'log' if kind == 'log' else 'run'} {sql_literal(view)}", label, 1))


def long_run(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, label: str,
         mapping: dict[str, str], score_named: bool) -> tuple[duckdb.DuckDBPyRelation, dict[str, str], str | None]:
    """A run as the long form duckrank ranks, with the column mapping that reads it, and the view
    of the rows as given when they were reshaped.

    - A run with one LIST column (the doc column itself, or the only list when there is no doc
      column) holds each query's ranking: duckrank.run_from_lists unnests it, rank = position. Its
      entries are doc ids, or structs whose fields are named like the long form's columns (the doc
      id field by doc_col=, an optional score field by score_col=; without a score the list order
      is the ranking).
    - A long run without a score column but with a `rank` column ranks by it (rank 1 best)."""
    types = dict(zip(relation.columns, relation.types))
    doc, score = mapping["doc_id"], mapping["score"]
    lists = [name for name, column_type in types.items() if column_type.id == "list"]
    if doc in types and types[doc].id == "list":
        list_col = doc
    elif doc not in types and len(lists) == 1:
        list_col = lists[0]
    elif doc not in types and len(lists) > 1:
        raise InputError(f"{label} has no column {quoted(doc)} and several list columns "
                         f"({', '.join(map(quoted, lists))}); "
                         f"a run as lists holds its ranking in one: keep one, or name it with ", Option("doc_col"))
    else:
        if score not in types and not score_named and "rank" in types:
            mapping = {**mapping, "score": "rank"}
        return relation, mapping, None
    query = mapping["query_id"]
    if query not in types:
        raise InputError(f"{label} has no column {quoted(query)} (from ", Option("query_col"), ") beside its list "
                         f"column {quoted(list_col)}; its columns are {', '.join(map(quoted, types))}; name yours "
                         f"with ", Option("query_col"))
    entry = types[list_col].child
    doc_field, score_field = "duckrank_entry", None
    if entry.id == "struct":
        fields = [name for name, _ in entry.children]
        if doc not in fields:
            raise InputError(f"{label}: the entries of list column {quoted(list_col)} are structs with fields "
                             f"{', '.join(map(quoted, fields))} but no doc id field {quoted(doc)}; name it with ",
                             Option("doc_col"))
        if score_named and score not in fields:
            raise InputError(f"{label}: the entries of list column {quoted(list_col)} have no score field "
                             f"{quoted(score)} "
                             f"(their fields are {', '.join(map(quoted, fields))}); name it with ", Option("score_col"),
                             ", or leave score_col out to rank by list order")
        doc_field, score_field = doc, score if score in fields else None
        if score_field is not None and not str(dict(entry.children)[score_field]).upper().startswith(NUMERIC):
            raise InputError(f"{label}: field {quoted(score_field)} of the entries of {quoted(list_col)} holds "
                             f"{dict(entry.children)[score_field]}, but a score must be numeric; cast it")
    elif entry.id in ("list", "map", "union", "array"):
        raise InputError(f"{label}: list column {quoted(list_col)} holds {types[list_col]}; a run as lists holds doc "
                         f"ids (LIST<VARCHAR> or LIST<INTEGER>) or structs with a doc id field")
    load_input_macros(con)
    inner = fresh_name("lists")
    temp_view(con, inner, relation)
    long = con.sql(f"SELECT * FROM duckrank.run_from_lists({sql_literal(inner)}, list_col := {sql_literal(list_col)}, "
                   f"query_col := {sql_literal(query)}, doc_field := {sql_literal(doc_field)}, "
                   f"score_field := {sql_literal(score_field) if score_field else 'NULL'})")
    return long, {"query_id": "query_id", "doc_id": "doc_id", "score": "score"}, inner


def label_expression(relation: duckdb.DuckDBPyRelation, label: str, available: dict[str, str],
                     labels: list[str], label_map: dict[Any, float]) -> str:
    """A log's grade from its label column(s) and label_map:
    - events: several label columns (or one, with the map keyed by its name), each boolean or 0/1,
      the map giving each column's grade: a row's grade is the highest among its true events, 0 if
      none (purchased=3,clicked=1: a purchase that was clicked is 3);
    - values: one label column whose values the map grades (purchase=3,click=1), others 0.
    A map key that matches no column or no value is an error: it would silently score nothing."""
    for name in labels:
        if name not in available:
            raise InputError(f"{label} has no label column {quoted(name)}; its columns are "
                             f"{', '.join(quoted(c) for c in available)}")
    if len(labels) > 1 or set(label_map) <= set(labels):
        if not label_map:
            raise OptionError(Option("label"), f" names {len(labels)} event columns ({', '.join(labels)}): give each "
                              f"its grade with ", Option("label_map"), f", e.g. {labels[0]}=3,{labels[1]}=1")
        unknown = [str(key) for key in label_map if key not in labels]
        if unknown:
            raise OptionError(Option("label_map"), f" key {', '.join(map(quoted, unknown))} is not one of the event "
                              f"columns given with ", Option("label"), f" ({', '.join(labels)}); with several label "
                              f"columns the map's keys are their names")
        ungraded = [name for name in labels if name not in label_map]
        if ungraded:
            raise OptionError(Option("label_map"), f" gives no grade to event column "
                              f"{', '.join(map(quoted, ungraded))}; add e.g. {ungraded[0]}=1")
        cases = []
        for name in labels:
            column = quote_identifier(name)
            if not available[name].upper().startswith(NUMERIC):
                raise InputError(f"{label}: event column {quoted(name)} holds {available[name]}, but an event column "
                                 f"must be BOOLEAN or 0/1; cast it, or grade its values with one ", Option("label"),
                                 " and ", Option("label_map"))
            if available[name].upper() != "BOOLEAN":
                bad = relation.filter(f"{column} IS NOT NULL AND {column} NOT IN (0, 1)").limit(1).fetchall()
                if bad:
                    raise InputError(f"{label}: event column {quoted(name)} holds "
                                     f"{quoted(bad[0][relation.columns.index(name)])}, "
                                     f"but an event column must be BOOLEAN or 0/1; grade its values with one ",
                                     Option("label"), " and ", Option("label_map"), " instead")
            cases.append(f"CASE WHEN CAST({column} AS BOOLEAN) THEN {float(label_map[name])!r} END")
        return f"coalesce(greatest({', '.join(cases)}), 0.0)"
    name = labels[0]
    column = quote_identifier(name)
    found = relation.aggregate(f"list(DISTINCT CAST({column} AS VARCHAR))").fetchall()[0][0] or []
    values = {value for value in found if value is not None}
    unmatched = [str(key) for key in label_map if str(key) not in values]
    if unmatched:
        shown = ", ".join(map(quoted, sorted(values)[:10])) + (", ..." if len(values) > 10 else "")
        raise InputError(f"{label}: ", Option("label_map"), f" key {', '.join(map(quoted, unmatched))} matches no "
                         f"value of label column {quoted(name)} (its values: {shown or 'none'}); fix the key, or, for "
                         f"event columns, give ", Option("label"), " each column and key the map by their names")
    cases = " ".join(f"WHEN {sql_literal(str(value))} THEN {float(grade)!r}" for value, grade in label_map.items())
    return f"CASE CAST({column} AS VARCHAR) {cases} ELSE 0.0 END"
