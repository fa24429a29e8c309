"""Turn whatever the user hands us (a path, gzip or zstd compressed or not; '-' for standard input;
a table name; an Arrow/pandas/polars table; a DuckDB relation) into a DuckDB view with duckrank's
standard columns, or a clear InputError. Where the bytes come from is paths.py's job, TREC text
(read as trec_eval 10 reads it) trec.py's, the standard columns columns.py's, writing writers.py's."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank import peer_inputs
from duckrank._library import memory_problem
from duckrank._sql import fresh_name, quote_identifier
from duckrank.errors import InputError, Option, OptionError, quoted
from duckrank.inputs.columns import (COLUMN_OPTIONS, HELD_BY_DOUBLE, NUMERIC, STANDARD_COLUMNS, SUBTOPIC,
                                     check_scores_held, label_expression, long_run,
                                     missing_columns_problem, temp_view)
from duckrank.inputs.paths import (FORMATS, Source, detect_format, error_line, exists, files_of, format_of,
                                   StandardInput, is_glob, is_stdin, source_of, stdin_problem)
from duckrank.inputs.trec import read_trec
from duckrank.inputs.writers import write_table

__all__ = ["COLUMN_OPTIONS", "FORMATS", "STANDARD_COLUMNS", "SUBTOPIC", "InputView", "Source", "StandardInput",
           "detect_format", "files_of", "is_glob", "is_stdin", "read_items", "read_table", "stdin_problem",
           "write_table"]


@dataclass(frozen=True)
class InputView:
    """An input as a view with standard columns. `label` names it in messages: run 'data/run.parquet'
    (its kind, then how it is shown)."""

    view: str
    kind: str  # run, qrels, log, exclude, segments, train or items
    shown: str  # the input in messages, after its kind: 'data/run.parquet', '-', table 'runs', (DataFrame)
    columns: dict[str, str]  # standard column -> DuckDB type
    has_run_id: bool = False  # a run_id column that names several runs (never a TREC text file's tags)
    name: str | None = None  # a TREC text run's name: the tag of its last line, as trec_eval's runid
    inner_view: str | None = None  # a view of the input as given (a list run's rows), for messages
    given: str | None = None  # the path (or '-') or table name as given; None for an object
    parses_text: bool = False  # the view parses a text file (CSV, TSV, JSON lines) each time it is read

    @property
    def label(self) -> str:
        return f"{self.kind} {self.shown}"

    def named(self, name: str) -> InputView:
        """An object input shown with the name it was given (run 'bm25' (DataFrame)): its messages
        must say which of several DataFrames holds the problem. A path or table shows itself."""
        return self if self.given is not None else dataclasses.replace(self, shown=f"{quoted(name)} {self.shown}")


@dataclass(frozen=True)
class _Read:
    """A relation over an input, and what its reader learnt: a TREC run's tag; the Source of a path."""

    relation: duckdb.DuckDBPyRelation
    shown: str = ""
    name: str | None = None
    trec: bool = False
    source: Source | None = None
    given: str | None = None  # the path (or '-') or table name as given; None for an object
    parses_text: bool = False


def _read_file(con: duckdb.DuckDBPyConnection, source: Source, fmt: str, kind: str, subtopics: bool = False) -> _Read:
    path = source.duckdb_path
    compression = source.compression if source.is_file else None
    if fmt == "parquet":
        if compression is not None:
            raise InputError(f"{kind} file {source.shown} is {compression}-compressed Parquet; Parquet compresses its "
                             f"own pages, so decompress the file first")
        target = os.path.join(path, "**", "*.parquet") if os.path.isdir(path) else path
        return _Read(con.read_parquet(target, hive_partitioning=os.path.isdir(path), union_by_name=True))
    # a local file's bytes decide its compression; a glob's files go by their names (DuckDB's 'auto')
    options = {"compression": compression or "none"} if source.is_file else {}
    if fmt in ("csv", "tsv"):
        return _Read(con.read_csv(path, header=True, sep="\t" if fmt == "tsv" else ",", **options), parses_text=True)
    if fmt == "jsonl":
        return _Read(con.read_json(path, format="newline_delimited", **options), parses_text=True)
    trec = read_trec(con, source, fmt, kind, subtopics)
    return _Read(trec.relation, name=trec.tag, trec=True)


def _relation(con: duckdb.DuckDBPyConnection, source: Any, kind: str, fmt: str | None,
              literal: bool | None, subtopics: bool, stdin: StandardInput) -> _Read:
    """A DuckDB relation over `source`, and its name in messages; `literal` as is_glob takes it;
    subtopics: TREC qrels keep their second field as the subtopic; '-' reads `stdin`'s copy."""
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        table = (None if is_stdin(source) or exists(text, literal) or isinstance(source, Path)
                 else _table_reference(con, text))
        if table is not None:
            return _Read(con.sql(f"SELECT * FROM {table}"), f"table {quoted(text)}", given=text)
        if fmt is not None and fmt not in FORMATS:
            raise OptionError(f"--{kind}-format must be one of {', '.join(FORMATS)}; got {quoted(fmt)}")
        found = source_of(source, kind, literal, stdin)
        shown = found.shown
        if os.path.isfile(found.path) and os.path.getsize(found.path) == 0:
            # what a failed job leaves, and trec_eval refuses it too; an empty table is read (scored
            # as ir_measures scores an empty input), and a header line says that it is meant
            raise InputError(f"{kind} file {shown} is empty (0 bytes), with not even a header line; if the {kind} "
                             f"holds nothing, write its header ({','.join(STANDARD_COLUMNS.get(kind, ('query_id',)))}"
                             f") as CSV, or pass an empty table")
        chosen = fmt or format_of(found.path, found.compression, kind, shown)
        try:
            read = _read_file(con, found, chosen, kind, subtopics)
            read.relation.columns  # noqa: B018 - binding reads the file's schema, surfacing corrupt files here
        except duckdb.Error as error:
            memory = memory_problem(con, error)
            if memory is not None:
                raise InputError(f"cannot read {kind} file {shown}: {memory}") from None
            raise InputError(f"cannot read {kind} file {shown} as {chosen}: {error_line(error)}; "
                             f"check the file, or name its format with --{kind}-format") from None
        return dataclasses.replace(read, shown="'-'" if found.stdin else shown, given=found.given, source=found)
    name, given_type = fresh_name("input"), type(source).__name__
    source = peer_inputs.as_table(source, kind)  # pytrec_eval/ranx dicts, ranx objects, ir_measures records
    if isinstance(source, duckdb.DuckDBPyRelation):
        source = source.arrow()
    if hasattr(source, "read_all"):  # a RecordBatchReader can be read once: keep the table
        source = source.read_all()
    try:
        con.register(name, source)
    except Exception:  # noqa: BLE001 - any unsupported object gets the same advice
        raise InputError(f"cannot use a {given_type} as the {kind}: pass a file path, a table name, a pyarrow "
                         f"Table, a pandas or polars DataFrame, a DuckDB relation, a dict {{query_id: {{doc_id: "
                         f"value}}}}, ranx's Qrels or Run, or ir_measures' records") from None
    return _Read(con.sql(f"SELECT * FROM {quote_identifier(name)}"), f"({given_type})")


def _table_reference(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    """The SQL reference to the table or view `name` names, or None: a table of that very name (a
    dot may be part of it), else `name` read as schema.table (in the current database),
    catalog.table (in its main schema) or catalog.schema.table. Looked up in the catalog, not by
    binding a query: that would also find a Python variable of the name (a replacement scan)."""
    parts = name.split(".")
    whole, qualified = con.execute(
        "SELECT count(*) FILTER (WHERE name = $name), count(*) FILTER (WHERE CASE len($parts) "
        "      WHEN 2 THEN name = $parts[2] AND ((schema_name = $parts[1] AND database_name = current_database()) "
        "                                        OR (database_name = $parts[1] AND schema_name = 'main')) "
        "      WHEN 3 THEN [database_name, schema_name, name] = $parts ELSE false END) "
        "FROM (SELECT database_name, schema_name, table_name AS name FROM duckdb_tables() "
        "      UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views())",
        {"name": name, "parts": parts}).fetchall()[0]
    if whole:
        return quote_identifier(name)
    if qualified:
        return ".".join(quote_identifier(part) for part in parts)
    return None



def read_table(con: duckdb.DuckDBPyConnection, source: Any, kind: str, *, fmt: str | None = None,
               columns: dict[str, Any] | None = None, label_map: dict[Any, float] | None = None,
               extra: list[str] | None = None, literal: bool | None = None, subtopics: bool = False,
               stdin: StandardInput | None = None) -> InputView:
    """Create a view over `source` with the standard columns of `kind` (run, qrels, log, exclude or
    segments), plus the `extra` columns (segments) as they are. `literal`: how a path with glob
    characters is read (is_glob). A run may come as lists (one row per query, its ranking in a LIST
    column: long_run) or ranked by a rank column instead of a score. A log's label may be several
    event columns (columns['label'] a list; label_expression). subtopics: qrels keep each judgment's
    subtopic (a column `subtopic`, or columns['subtopic']; TREC qrels' second field) when they have one.
    `stdin`: the command's or evaluation's standard input, when it reads '-' more than once (a copy
    of its own otherwise)."""
    bad_grade = next((value for value, grade in (label_map or {}).items()
                      if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade)), None)
    if bad_grade is not None:
        raise OptionError(Option("label_map"), f" must give each label a finite number as its grade; got "
                                               f"{bad_grade}={quoted(label_map[bad_grade])}")
    stdin = stdin or StandardInput()
    read = _relation(con, source, kind, fmt, literal, subtopics and kind == "qrels", stdin)
    relation, label = read.relation, f"{kind} {read.shown}"
    columns = dict(columns or {})
    labels = columns.get("label")
    labels = [labels] if isinstance(labels, str) else list(labels or [])
    columns["label"] = labels[0] if labels else None
    mapping = {std: columns.get(std) or std for std in STANDARD_COLUMNS[kind]}
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    if subtopics and kind == "qrels" and (columns.get(SUBTOPIC) or SUBTOPIC in available):
        mapping[SUBTOPIC] = columns.get(SUBTOPIC) or SUBTOPIC
    inner_view = None
    if kind == "run":
        relation, mapping, inner_view = long_run(con, relation, label, mapping, score_named=bool(columns.get("score")))
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    missing = missing_columns_problem(label, kind, mapping, available)
    if missing:
        raise InputError(*missing)
    selected = []
    for std, given in mapping.items():
        column_type = available[given]
        expression = quote_identifier(given)
        if std == "label" and (label_map or len(labels) > 1):
            expression = label_expression(relation, label, available, labels, label_map or {})
        elif std in ("score", "relevance", "label"):
            if not column_type.upper().startswith(NUMERIC):
                # a header-only text file reads as VARCHAR columns, an empty DataFrame's as NULL: no
                # value to be wrong, an empty input (scored as ir_measures scores one)
                if relation.limit(1).fetchall():
                    hint = (" or map event types to grades with ", Option("label_map")) if std == "label" else ()
                    raise InputError(f"{label}: column {quoted(given)} holds {column_type}, but {std} must be "
                                     f"numeric; cast it", *hint)
            elif std == "score" and not column_type.upper().startswith(HELD_BY_DOUBLE):
                check_scores_held(con, relation, kind, label, quote_identifier(mapping["query_id"]), expression, given)
            expression = f"CAST({expression} AS DOUBLE)"
            if std == "score" and given == "rank" and not columns.get("score"):  # rank 1 is the best
                expression = f"-{expression}"
        elif std == SUBTOPIC:  # a label, compared as text whatever its type
            expression = f"CAST({expression} AS VARCHAR)"
        elif column_type.upper().startswith("ENUM"):  # a pandas categorical: its ids are text
            expression, available[given] = f"CAST({expression} AS VARCHAR)", "VARCHAR"
        selected.append(f"{expression} AS {std}")
    for name in extra or []:
        if name not in available:
            what = "to segment by" if kind != "segments" else "for --by"
            raise InputError(f"{label} has no column {quoted(name)} {what}; its columns are "
                             f"{', '.join(quoted(c) for c in available)}")
        if name in mapping.values() or (kind != "segments" and name in STANDARD_COLUMNS["log"]):
            raise OptionError(f"cannot segment by {quoted(name)}: it is one of the ranking's own columns")
        selected.append(quote_identifier(name))
    keep_run_id = kind == "run" and "run_id" in available and "run_id" not in mapping.values()
    if keep_run_id and "run_id" not in (extra or []):
        selected.append(f"CAST({quote_identifier('run_id')} AS VARCHAR) AS run_id")
    view = fresh_name(kind)
    temp_view(con, view, relation, ", ".join(selected))
    types = {std: available[given] for std, given in mapping.items()}
    if read.source is not None and read.source.stdin:
        stdin.read_as(kind)
    # A TREC text file is one run, as trec_eval reads it: its tags are kept (duckrank convert writes
    # them back) but do not split it; its name is its last line's tag.
    return InputView(view, kind, read.shown, types, keep_run_id and not read.trec,
                     read.name if kind == "run" else None, inner_view, read.given, read.parses_text)



def read_items(con: duckdb.DuckDBPyConnection, source: Any, *, doc_col: str | None = None,
               literal: bool | None = None, stdin: StandardInput | None = None) -> InputView:
    """A view items(doc_id, features DOUBLE[]) over an item table: doc_id (renamed by doc_col) and
    either numeric feature columns, in their order, or one embedding column (a LIST or ARRAY of
    numbers). Every vector must be complete and as long as the others: a cosine needs both. `stdin` as
    read_table's."""
    read = _relation(con, source, "items", None, literal, False, stdin or StandardInput())
    relation, label = read.relation, f"items {read.shown}"
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    doc = doc_col or "doc_id"
    if doc not in available:
        raise InputError(f"{label} has no column {quoted(doc)}; its columns are {', '.join(map(quoted, available))}; "
                         f"name yours with ", Option("doc_col"))
    features = {name: kind for name, kind in available.items() if name != doc}
    vectors = [name for name, kind in features.items() if kind.upper().endswith("]")]
    if len(features) == 1 and vectors:
        expression = f"CAST({quote_identifier(vectors[0])} AS DOUBLE[])"
    else:
        bad = [name for name, kind in features.items() if not kind.upper().startswith(NUMERIC)]
        if not features or bad:
            shown = f"column {quoted(bad[0])} holds {features[bad[0]]}" if bad else "it has no feature column"
            raise InputError(f"{label}: {shown}; items hold {quoted(doc)} and numeric feature columns, or one "
                             f"embedding "
                             f"column (a list of numbers)")
        expression = "[" + ", ".join(f"CAST({quote_identifier(name)} AS DOUBLE)" for name in features) + "]"
    doc_type = available[doc]
    doc_expression = (f"CAST({quote_identifier(doc)} AS VARCHAR)" if doc_type.upper().startswith("ENUM")
                      else quote_identifier(doc))
    view = fresh_name("items")
    temp_view(con, view, relation, f"{doc_expression} AS doc_id, {expression} AS features")
    bad_row = con.sql(f"SELECT doc_id FROM {quote_identifier(view)} WHERE features IS NULL "
                      f"OR list_contains(list_transform(features, lambda v: v IS NULL OR NOT isfinite(v)), true) "
                      f"OR len(features) <> (SELECT max(len(features)) FROM {quote_identifier(view)}) LIMIT 1").fetchall()
    if bad_row:
        raise InputError(f"{label}: the features of doc_id {quoted(bad_row[0][0])} are missing, not finite, or not as "
                         f"long as the others; every item needs a complete feature vector of one length")
    return InputView(view, "items", read.shown,
                     {"doc_id": "VARCHAR" if doc_type.upper().startswith("ENUM") else doc_type})
