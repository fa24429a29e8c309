"""The peers' in-memory inputs, as the tables duckrank reads.

What a user migrating from pytrec_eval, ranx or ir_measures holds in a notebook:
  - a dict of dicts {query_id: {doc_id: score or grade}} (pytrec_eval, ranx, trec-style dicts);
  - ranx's Qrels and Run (their to_dict(); a Run's name names it);
  - ir_measures' qrels and runs: lists or iterators of Qrel(query_id, doc_id, relevance, iteration)
    and ScoredDoc(query_id, doc_id, score) namedtuples (any namedtuple with those fields);
  - several runs as a dict {name: run} of any of duckrank's inputs.
Each becomes a pyarrow Table of the standard columns (query_id, doc_id, then score for a run or
relevance otherwise), so it is read exactly as the same rows in a DataFrame would be. Qrels records
keep their `iteration` as the column `subtopic` (ir_measures' diversity qrels hold the subtopic
there), which only the diversity measures read.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from duckrank.errors import InputError, quoted


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_ranx(value: Any) -> bool:
    return type(value).__module__.startswith("ranx.") and callable(getattr(value, "to_dict", None))


def _is_scores(value: Any) -> bool:
    """A dict of dicts of values (not of dicts): one run or one qrels, not a dict of runs."""
    return isinstance(value, Mapping) and all(
        isinstance(docs, Mapping) and not any(isinstance(v, Mapping) for v in docs.values())
        for docs in value.values())


def _is_records(value: Any) -> bool:
    """A list, tuple or iterator of namedtuples with query_id and doc_id fields (ir_measures')."""
    if isinstance(value, (list, tuple)):
        return bool(value) and not hasattr(value, "_fields") and _is_record(value[0])
    return _is_iterator(value)


def _is_iterator(value: Any) -> bool:
    # (an Arrow RecordBatchReader is read as a table, with read_all)
    return isinstance(value, Iterator) and not hasattr(value, "read_all")


def _is_record(value: Any) -> bool:
    fields = getattr(value, "_fields", ())
    return "query_id" in fields and "doc_id" in fields


def _is_one_input(value: Any) -> bool:
    """Whether `value` is one of the peers' forms of a single run or qrels (so a list of ScoredDoc
    is one run, not a list of runs)."""
    return _is_ranx(value) or _is_scores(value) or _is_records(value)


def runs_and_names(runs: Any, names: list[str] | None) -> tuple[list[Any], list[str] | None]:
    """The runs as a list, and their names: a dict {name: run} names its runs by its keys (unless
    run_names= does), ranx Runs by their names. An iterator of records is read into a table here, so
    that it can be read more than once (report reads each run twice)."""
    if isinstance(runs, Mapping) and runs and not _is_scores(runs):
        run_list, names = list(runs.values()), names if names is not None else [str(name) for name in runs]
    elif isinstance(runs, (list, tuple)) and not _is_one_input(runs):
        run_list = list(runs)
    else:
        run_list = [runs]
    if names is None and run_list and all(_is_ranx(run) and getattr(run, "name", None) for run in run_list):
        names = [run.name for run in run_list]
    return [as_table(run, "run") if _is_iterator(run) else run for run in run_list], names


def as_table(source: Any, kind: str) -> Any:
    """`source` as a pyarrow Table of query_id, doc_id and the value column of `kind` (score for a
    run, relevance for qrels and the other inputs) when it is a peer's form; else `source` as is.
    A generator is read once, here."""
    label = f"{kind} ({type(source).__name__})"
    if _is_ranx(source):
        source = source.to_dict()
    if isinstance(source, Mapping):
        return _table(_dict_rows(source, label), kind, label)
    if _is_records(source):
        return _table(_record_rows(source, kind, label), kind, label)
    return source


def _value_column(kind: str) -> str:
    return "score" if kind == "run" else "relevance"


def _dict_rows(source: Mapping, label: str) -> Iterator[tuple[Any, Any, Any]]:
    for query_id, docs in source.items():
        if not isinstance(docs, Mapping):
            raise InputError(f"{label}: query_id {quoted(query_id)} maps to a {type(docs).__name__}; each query_id "
                             f"must map to a dict {{doc_id: value}}")
        for doc_id, value in docs.items():
            yield query_id, doc_id, value


def _record_rows(source: Iterable, kind: str, label: str) -> Iterator[tuple[Any, Any, Any, Any]]:
    column = _value_column(kind)
    for number, record in enumerate(source, 1):
        if not _is_record(record) or column not in record._fields:
            raise InputError(f"{label}: record {number} is {record!r}; a {kind} as records needs "
                             f"query_id, doc_id and {column} fields (ir_measures' "
                             f"{'ScoredDoc' if kind == 'run' else 'Qrel'})")
        yield record.query_id, record.doc_id, getattr(record, column), getattr(record, "iteration", None)


def _table(rows: Iterable[tuple[Any, ...]], kind: str, label: str) -> Any:
    import pyarrow as pa

    column = _value_column(kind)
    query_ids, doc_ids, values, subtopics = [], [], [], []
    for query_id, doc_id, value, *subtopic in rows:
        subtopics.append(subtopic[0] if subtopic else None)
        if not _is_number(value) or (isinstance(value, float) and math.isnan(value)):
            raise InputError(f"{label}: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} has {column} "
                             f"{value!r}; a {column} must be a number")
        if kind == "qrels" and math.isfinite(value) and not float(value).is_integer():
            # pytrec_eval refuses such a grade, ranx truncates it: here it is most likely a score, a run
            # given where the qrels go, which would be scored as qrels without a word (an infinite
            # grade is refused by the library's own check, as it is in a table)
            raise InputError(f"{label}: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} has relevance {value!r}, "
                             f"not a whole number: qrels as dicts or records hold integer grades, as pytrec_eval "
                             f"requires; if these are a run's scores, the qrels and the run are swapped: give the "
                             f"qrels first, then the run (trec_eval's order); fractional grades are read from a "
                             f"table (a DataFrame or a file)")
        query_ids.append(query_id)
        doc_ids.append(doc_id)
        values.append(value)
    columns = {"query_id": _ids(query_ids, "query_id", label), "doc_id": _ids(doc_ids, "doc_id", label),
               column: pa.array(values, pa.float64())}
    if kind == "qrels" and any(subtopic is not None for subtopic in subtopics):
        columns["subtopic"] = pa.array([None if s is None else str(s) for s in subtopics], pa.string())
    return pa.table(columns)


def _ids(values: list[Any], column: str, label: str) -> Any:
    """The ids as one Arrow column: all strings, or all integers (ids are compared as given)."""
    import pyarrow as pa

    if all(isinstance(v, str) for v in values):
        return pa.array(values, pa.string())
    if all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        return pa.array(values, pa.int64())
    odd = next(v for v in values if not isinstance(v, type(values[0])) or isinstance(v, bool))
    raise InputError(f"{label}: {column} mixes {type(values[0]).__name__} and {type(odd).__name__} ids "
                     f"({quoted(values[0])} and {quoted(odd)}); make every {column} a string, or every one an integer")
