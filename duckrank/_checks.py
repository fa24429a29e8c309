"""What is wrong, said before the query runs or after it fails: the options and conventions (as the
SQL library's generated checks word them), the inputs' id types and segments, the training and item
tables the beyond-accuracy measures need, and a DuckDB error as a message that names the user's
inputs (memory, no query in common, ids that differ only in normalization)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import duckdb

from duckrank._library import library_digest, memory_problem
from duckrank._sql import fresh_name, quote_identifier
from duckrank.errors import DuckrankError, InputError, OptionError, Problem, quoted, subject
from duckrank.inputs import SUBTOPIC, InputView, StandardInput, read_items, read_table
from duckrank.measures import Measure, option_literal
from duckrank.options import CONVENTIONS, OPTIONS, SUBTOPIC_TIES, SUBTOPIC_UNJUDGED
from duckrank.registry import METRICS

def option_problems(con: duckdb.DuckDBPyConnection, conventions: dict[str, Any],
                    measures: list[Measure]) -> list[Problem]:
    """Every problem with the conventions and the measures' options, as the SQL library's checks
    (generated from the registry) word them, so all can be reported at once; a convention's names
    the option at fault as such (each front door spells it: ties, --ties)."""
    problems = []
    for name, value in conventions.items():
        param = CONVENTIONS[name].param if name in CONVENTIONS else OPTIONS[name]
        if value is not None and not _has_type(value, param.type):
            kind = {"integer": "a number", "number": "a number", "boolean": "True or False"}.get(param.type, "a string")
            problems.append(subject(name, f" must be {kind}; got {value!r}"))
    if problems:
        return problems
    # the conventions (and gain, sampled and correction, given as conventions) in one set, then each
    # measure's distinct set of options once (-m all_trec's 99 measures give 43 sets)
    general = _given_sql({name: value for name, value in conventions.items() if value is not None
                          and (name in CONVENTIONS or name in ("gain", "sampled", "correction"))})
    given = [_given_sql(dict(measure.given)) for measure in measures]
    distinct = list(dict.fromkeys(given))
    found = _run_checks(con, _checks_query([general, *distinct]))
    # a check says "<option> must ..." (Param.check): the option is its first word by construction
    problems = [subject(name, text.removeprefix(name)) for name, text in zip(_checked(general), found[0]) if text]
    texts = dict(zip(distinct, found[1:]))
    for measure, values in zip(measures, given):
        problems.extend((f"in measure {measure.spelling!r}: {text}",) for text in texts[values] if text)
    return problems


# Every convention's and option's declaration by name, in the order the check macros list them
# (the conventions' names and the options' are distinct).
_CHECKABLE = {**{name: convention.param for name, convention in CONVENTIONS.items()}, **OPTIONS}


def _given_sql(given: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Given values as (name, SQL literal) in declaration order: one set to check, and its key."""
    return tuple((name, option_literal(given[name])) for name in _CHECKABLE if name in given)


def _checked(values: tuple[tuple[str, str], ...]) -> list[str]:
    """The options of a set of given values that have a check, in the checks' order."""
    given = dict(values)
    return [name for name, param in _CHECKABLE.items() if name in given and param.check]


def _checks_query(sets: list[tuple[tuple[str, str], ...]]) -> str:
    """For each set of given values, in order, the problem each checked option has (_checked's
    order), as the generated check macros word them; NULL for one without. Only the given values
    are checked, each by its option's macro (duckrank.check_<option>), with the defaults of what
    else it reads (max_rel's reads min_rel): duckrank.option_problems binds all 40 options' checks,
    70 ms on an idle machine."""
    problems = []
    for values in sets:
        given = dict(values)
        calls = [_CHECKABLE[name].check_call(lambda name: given.get(name, _CHECKABLE[name].default_sql))
                 for name in _checked(values)]
        problems.append(f"[{', '.join(calls)}]::VARCHAR[]")
    return f"SELECT [{', '.join(problems)}]"


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
_CHECKED: dict[tuple[str, str], list[list[str | None]]] = {}


def _run_checks(con: duckdb.DuckDBPyConnection, sql: str) -> list[list[str | None]]:
    key = (library_digest(), sql)
    if key not in _CHECKED:
        if len(_CHECKED) > 1000:
            _CHECKED.clear()
        _CHECKED[key] = con.execute(sql).fetchall()[0][0]
    return _CHECKED[key]


def subtopic_convention_problems(measures: list[Measure], conventions: dict[str, Any]) -> list[str]:
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


def subtopic_problem(measures: list[Measure], qrels: InputView, subtopic_col: str | None) -> str:
    """Why these qrels cannot feed the diversity measures (they have no subtopics)."""
    named = ", ".join(m.spelling for m in measures)
    return (f"{named} read each judgment's subtopic, but {qrels.label} has no column "
            f"{quoted(subtopic_col or SUBTOPIC)}; pass diversity qrels: a table with a subtopic column (name yours "
            f"with subtopic_col=, --subtopic-col), ir_measures Qrels with the subtopic in iteration, or TREC "
            f"diversity qrels (query_id subtopic doc_id relevance)")


def read_top_k_inputs(con: duckdb.DuckDBPyConnection, measures: list[Measure], train: Any, items: Any,
                       columns: dict[str, str | None], runs: list[InputView],
                       literal: bool | None, stdin: StandardInput) -> dict[str, InputView | None]:
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
    read = {"train": read_table(con, train, "train", columns=columns, literal=literal, stdin=stdin) if needs_train
            else None,
            "items": read_items(con, items, doc_col=columns.get("doc_id"), literal=literal, stdin=stdin) if needs_items
            else None}
    for source in read.values():
        if source is not None:
            check_id_types(source, runs)
    return read


def translate_error(error: duckdb.Error, sources: list[InputView], con: duckdb.DuckDBPyConnection) -> DuckrankError:
    """A DuckDB error as a duckrank error that names the user's inputs, not our views."""
    message = str(error).strip()
    memory = memory_problem(con, error, lambda: _largest_query(con, sources))
    if memory is not None:
        return InputError(memory)
    for source in sources:
        for view in filter(None, (source.inner_view, source.view)):
            # the checks say which input they read ("run '<view>' has 2 rows"): a log read as a run
            # and as qrels is the log
            message = re.sub(rf"\b(?:run|qrels) '{re.escape(view)}'", lambda _: source.label, message)
            message = message.replace(f"'{view}'", source.shown).replace(view, source.shown)
    found = re.search(r"duckrank: (.*)", message, re.S)
    if found:
        return InputError(found.group(1).strip())
    return InputError(f"DuckDB could not evaluate the inputs: {message.splitlines()[0]}")


LARGE_QUERY_ROWS = 1_000_000  # a query's ranking of this many rows fills about 100 MB (BYTES_PER_RUN_ROW)


def _largest_query(con: duckdb.DuckDBPyConnection, sources: list[InputView]) -> str:
    """Why batching did not help, when a run's largest query holds LARGE_QUERY_ROWS or more: each
    query's ranking is held in memory whole."""
    hints = []
    for source in sources:
        if source.kind != "run":
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


def check_one_segment(con: duckdb.DuckDBPyConnection, attributes: InputView, by: list[str]) -> None:
    """Each query gets one segment: a query id the segments table gives two values is an error."""
    values = f"list_value({', '.join(quote_identifier(name) for name in by)})"
    found = con.execute(f"SELECT query_id, list(DISTINCT {values}) FROM {attributes.view} GROUP BY query_id "
                        f"HAVING count(DISTINCT {values}) > 1 LIMIT 1").fetchall()
    if found:
        query_id, both = found[0]
        shown = " and ".join(quoted(value[0] if len(value) == 1 else tuple(value)) for value in both[:2])
        raise InputError(f"{attributes.label} gives query_id {quoted(query_id)} two segments ({shown} of "
                         f"{', '.join(by)}); give each query one row")


def check_key_types(run: InputView, other: InputView, keys: tuple[str, ...]) -> None:
    """The ids of the exclusions and the segments table meet the run's as given: a string id never
    silently matches a number."""
    for column in keys:
        if run.columns[column].upper().startswith("VARCHAR") != other.columns[column].upper().startswith("VARCHAR"):
            raise InputError(f"{run.label} has {column} of type {run.columns[column]} but {other.label} has "
                             f"{other.columns[column]}; ids are compared as given, so make both strings or both "
                             f"integers")


def empty_typed_as(con: duckdb.DuckDBPyConnection, source: InputView, other: InputView) -> InputView:
    """An empty input with the other input's id types where one is text and the other not (a
    header-only CSV reads its ids as text): with no value its ids cannot disagree, and DuckDB
    compares ids of one kind only."""
    differ = ids_of_another_kind(source, other)
    if not differ or con.sql(f"SELECT 1 FROM {quote_identifier(source.view)} LIMIT 1").fetchall():
        return source
    view = fresh_name("empty")
    casts = ", ".join(f"CAST({quote_identifier(c)} AS {other.columns[c]}) AS {quote_identifier(c)}" for c in differ)
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * REPLACE ({casts}) FROM {quote_identifier(source.view)}").fetchall()
    return dataclasses.replace(source, view=view, columns={**source.columns, **{c: other.columns[c] for c in differ}})


def ids_of_another_kind(source: InputView, other: InputView) -> list[str]:
    """The id columns (query_id, doc_id) both inputs have, text in one and not in the other. A column
    with no values (an empty DataFrame's object column, typed NULL) has no type, so no kind."""
    def is_text(column_type: str) -> bool:
        return column_type.upper().startswith("VARCHAR")
    return [column for column in ("query_id", "doc_id") if column in source.columns and column in other.columns
            and "NULL" not in (source.columns[column].strip('"').upper(), other.columns[column].strip('"').upper())
            and is_text(source.columns[column]) != is_text(other.columns[column])]


def check_id_types(qrels: InputView, runs: list[InputView]) -> None:
    """Ids are compared as given: a string id never silently matches a number."""
    for run in runs:
        differ = ids_of_another_kind(run, qrels)
        if differ:
            column = differ[0]
            raise InputError(f"{run.label} has {column} of type {run.columns[column]} but {qrels.label} has "
                             f"{qrels.columns[column]}; ids are compared as given, so make both strings or both integers")


def _count(con: duckdb.DuckDBPyConnection, view: str) -> int:
    return con.sql(f"SELECT count(*) FROM {quote_identifier(view)}").fetchall()[0][0]


def check_common_queries(con: duckdb.DuckDBPyConnection, runs: list[InputView], qrels: InputView) -> None:
    """Nothing was scored: raise an InputError that says why, unless the qrels or every run is empty. An
    empty input scores nothing as ir_measures scores it (no per-query rows; means NaN, sums 0), and
    is no mistake to report; non-empty inputs without a query in common very likely are one (wrong
    file, ids written differently), where trec_eval too stops ("No queries with both results and
    relevance info")."""
    def sample(view: str) -> str:
        ids = con.sql(f"SELECT DISTINCT query_id FROM {quote_identifier(view)} ORDER BY 1 LIMIT 3").fetchall()
        return ", ".join(quoted(row[0]) for row in ids)
    runs = [run for run in runs if _count(con, run.view)]
    if not runs or _count(con, qrels.view) == 0:
        return
    common = con.sql(f"SELECT count(*) FROM (SELECT query_id FROM {quote_identifier(runs[0].view)} INTERSECT "
                     f"SELECT query_id FROM {quote_identifier(qrels.view)})").fetchall()[0][0]
    if common:  # every query in common was left out: empty := 'skip', and none has a relevant doc
        raise InputError(f"{runs[0].label} and {qrels.label} share {common} queries, but none has a relevant doc, and "
                          f"empty := 'skip' leaves such queries out; use empty := 'zero' or empty := 'nan' to score them")
    raise InputError(f"no query_id in common between {runs[0].label} (e.g. {sample(runs[0].view)}) and "
                      f"{qrels.label} (e.g. {sample(qrels.view)}); "
                      + (_normalization_hint(con, runs[0], qrels) or "check that both describe the same queries"))


def _normalization_hint(con: duckdb.DuckDBPyConnection, run: InputView, qrels: InputView) -> str | None:
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
