"""Turn whatever the user hands us (a path, a table name, an Arrow/pandas/polars table, a DuckDB
relation) into a DuckDB view with duckrank's standard columns, or a clear InputError."""

from __future__ import annotations

import glob
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from duckrank._sql import literal, quote_identifier
from duckrank.errors import InputError, OptionError

FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec_run", "trec_qrels")
STANDARD_COLUMNS = {
    "run": ("query_id", "doc_id", "score"),
    "qrels": ("query_id", "doc_id", "relevance"),
    "log": ("query_id", "doc_id", "score", "label"),
}
# Which option renames each standard column, for the hint in a missing-column error.
COLUMN_OPTIONS = {"query_id": "query_col", "doc_id": "doc_col", "score": "score_col",
                  "relevance": "relevance_col", "label": "label"}
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv", ".tsv": "tsv",
             ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
            "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL", "BOOLEAN")
_names = itertools.count()


def fresh_name(what: str) -> str:
    """A name for a view or table duckrank creates, unique in this process: every module takes
    its names from this one counter, so no two can collide on a connection."""
    return f"duckrank_{what}_{next(_names)}"


@dataclass(frozen=True)
class Source:
    """An input as a view with standard columns. `label` names it in messages: run 'data/run.parquet'."""

    view: str
    label: str
    columns: dict[str, str]  # standard column -> DuckDB type
    has_run_id: bool = False


def detect_format(path: str | os.PathLike, kind: str = "run") -> str:
    """The format of a file from its name, or for TREC text from its first line."""
    text = str(path)
    if os.path.isdir(text):
        return "parquet"
    name = text.lower().removesuffix(".gz").removesuffix(".zst")
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    first = _first_line(text)
    fields = len(first.split()) if first else 0
    if fields >= 6:  # trec_eval ignores anything after the sixth field
        return "trec_run"
    if fields == 4:
        return "trec_qrels"
    expected = "run (query_id Q0 doc_id rank score run_id)" if kind == "run" else "qrels (query_id 0 doc_id relevance)"
    raise InputError(
        f"cannot tell the format of {kind} file {text!r}: its name has no known extension "
        f"(.parquet, .csv, .tsv, .jsonl) and its first line is not a TREC {expected}; "
        f"name the format with --{kind}-format / {kind}_format=")


def _first_line(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.strip():
                    return line
    except OSError:
        return ""
    return ""


def _exists(path: str) -> bool:
    return os.path.exists(path) or bool(glob.glob(path, recursive=True))


def _read_file(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str) -> duckdb.DuckDBPyRelation:
    if fmt == "parquet":
        target = os.path.join(path, "**", "*.parquet") if os.path.isdir(path) else path
        return con.read_parquet(target, hive_partitioning=os.path.isdir(path), union_by_name=True)
    if fmt in ("csv", "tsv"):
        return con.read_csv(path, header=True, sep="\t" if fmt == "tsv" else ",")
    if fmt == "jsonl":
        return con.read_json(path, format="newline_delimited")
    return _read_trec(con, path, fmt, kind)


# TREC text: each line's fields as DuckDB reads them (the value as DOUBLE), and the fields kept.
_TREC_LAYOUTS = {
    "trec_run": ({"query_id": "VARCHAR", "q0": "VARCHAR", "doc_id": "VARCHAR", "rank": "VARCHAR",
                  "score": "DOUBLE", "run_id": "VARCHAR"}, ("query_id", "doc_id", "score", "run_id")),
    "trec_qrels": ({"query_id": "VARCHAR", "iteration": "VARCHAR", "doc_id": "VARCHAR", "relevance": "DOUBLE"},
                   ("query_id", "doc_id", "relevance")),
}


def _read_trec(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str) -> duckdb.DuckDBPyRelation:
    """TREC text: DuckDB's parallel CSV reader for the common layout, else the line reader."""
    fast = _read_trec_fast(con, path, fmt)
    return fast if fast is not None else _read_trec_lines(con, path, fmt, kind)


def _trec_delimiter(path: str) -> str:
    """Tab if the first line has one (trec_eval's own runs are tab-separated, their scores padded
    with spaces), else space: a wrong guess only costs the fast path."""
    return "\t" if "\t" in _first_line(path) else " "


# Characters no field may hold, but for the separator: what the line reader also splits on (RE2's
# \s, less the newline), and \x01, the line reader's own column separator, on which it fails.
_SPLITTING = "\t\f\r \x01"


def _plain_bytes(path: str, sep: str) -> bool:
    """Whether `path` is one local, uncompressed file of ASCII bytes holding none of _SPLITTING but
    the separator. Then no field can hold one, nor can a line start or end with a character trim()
    strips (an ASCII one is a space: in a space-separated file, an empty field), so the per-row
    checks reduce to 'no field is empty'. A byte scan: about 0.2 s for 250 MB, against about 0.8 s
    of CPU for the per-row checks it saves."""
    if any(c in path for c in "*?[") or path.lower().endswith((".gz", ".gzip", ".zst", ".zstd")):
        return False  # a glob, or a file DuckDB would decompress: check every row
    forbidden = [c.encode() for c in _SPLITTING if c != sep]
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                if not chunk.isascii() or any(c in chunk for c in forbidden):
                    return False
    except OSError:
        return False  # not a local file (a URL, say): check every row
    return True


def _read_trec_fast(con: duckdb.DuckDBPyConnection, path: str, fmt: str) -> duckdb.DuckDBPyRelation | None:
    """The file in a TEMP TABLE written by DuckDB's parallel CSV reader, or None if any line is
    not the common layout, so that the caller falls back to the line reader (whose message names
    the bad line). Nothing is returned before the whole file has been read and checked.

    The fast path accepts only files the line reader reads the same, field for field: every
    non-blank line has exactly the layout's fields, one space (or one tab) apart (strict mode: a
    seventh run field, a double or leading separator fails); no field is empty (the CSV reader
    makes an empty field NULL); no field holds a character of _SPLITTING but the separator; the
    line does not start or end with a character the line reader's trim() strips (Unicode space
    separators); and the value reads as a DOUBLE (the CSV reader's DOUBLE accepts what CAST does:
    1e-3, -2.5E+2, inf, nan, and the whitespace around a number that the line reader drops)."""
    types, kept = _TREC_LAYOUTS[fmt]
    names = list(types)
    value = next(n for n, t in types.items() if t == "DOUBLE")
    sep = _trec_delimiter(path)
    first, last, number = (quote_identifier(n) for n in (names[0], names[-1], value))
    if _plain_bytes(path, sep):
        checks = [f"{quote_identifier(n)} IS NOT NULL" for n in names]
        joined = ""
    else:  # the text fields joined once (NULL if any is empty), then searched for each character
        checks = [f"{number} IS NOT NULL",
                  *(f"NOT contains(duckrank_line, chr({ord(c)}))" for c in _SPLITTING if c != sep),
                  f"ltrim({first}) = {first}"]
        if names[-1] != value:
            checks.append(f"rtrim({last}) = {last}")
        joined = ", " + " || ".join(quote_identifier(n) for n in names if n != value) + " AS duckrank_line"
    # error() fails the whole read on the first bad row: a table that exists is valid throughout.
    selected = ", ".join(f"CASE WHEN {' AND '.join(checks)} THEN {number} "
                         f"ELSE error('not the common TREC layout') END AS {number}"
                         if n == value else quote_identifier(n) for n in kept)
    columns = ", ".join(f"{literal(n)}: {literal(t)}" for n, t in types.items())
    table = fresh_name("trec")
    try:
        con.execute(
            f"CREATE TEMP TABLE {table} AS SELECT {selected} FROM (SELECT *{joined} "
            f"FROM read_csv({literal(path)}, delim={literal(sep)}, quote='', escape='', comment='', header=false, "
            f"auto_detect=false, strict_mode=true, null_padding=false, ignore_errors=false, "
            f"columns={{{columns}}}))").fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        return None
    return con.sql(f"SELECT * FROM {table}")


def _read_trec_lines(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str) -> duckdb.DuckDBPyRelation:
    """TREC text: whitespace-separated fields, checked line by line so a bad line is named."""
    lines = con.read_csv(path, header=False, sep="\x01", columns={"line": "VARCHAR"}, quotechar="",
                         escapechar="", comment="")
    fields = lines.project("regexp_split_to_array(trim(line), '\\s+') AS f, line")
    width, value_at, layout = ((6, 5, "query_id Q0 doc_id rank score run_id") if fmt == "trec_run"
                               else (4, 4, "query_id iteration doc_id relevance"))
    bad = fields.filter(f"trim(line) <> '' AND (len(f) < {width} OR TRY_CAST(f[{value_at}] AS DOUBLE) IS NULL)")
    bad_line = bad.limit(1).fetchall()
    if bad_line:
        raise InputError(f"{kind} file {path!r} is not a TREC {kind} file: the line {bad_line[0][1]!r} "
                         f"does not read as '{layout}'; fix the line, or name the format with --{kind}-format")
    rows = fields.filter("trim(line) <> ''")
    if fmt == "trec_run":
        return rows.project("f[1] AS query_id, f[3] AS doc_id, CAST(f[5] AS DOUBLE) AS score, f[6] AS run_id")
    return rows.project("f[1] AS query_id, f[3] AS doc_id, CAST(f[4] AS DOUBLE) AS relevance")


def _relation(con: duckdb.DuckDBPyConnection, source: Any, kind: str, fmt: str | None) -> tuple[Any, str]:
    """A DuckDB relation over `source`, and its label for messages."""
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        if not _exists(text) and not isinstance(source, Path) and _is_table(con, text):
            return con.sql(f"SELECT * FROM {quote_identifier(text)}"), f"{kind} table {text!r}"
        label = f"{kind} {text!r}"
        if not _exists(text):
            raise InputError(f"{kind} file {text!r} not found (looked from {os.getcwd()}); check the path")
        if os.path.isfile(text) and os.path.getsize(text) == 0:
            raise InputError(f"{kind} file {text!r} is empty: there is nothing to evaluate")
        if fmt is not None and fmt not in FORMATS:
            raise OptionError(f"--{kind}-format must be one of {', '.join(FORMATS)}; got {fmt!r}")
        chosen = fmt or detect_format(text, kind)
        try:
            relation = _read_file(con, text, chosen, kind)
            relation.columns  # noqa: B018 - binding reads the file's schema, surfacing corrupt files here
        except duckdb.Error as error:
            raise InputError(f"cannot read {kind} file {text!r} as {chosen}: {_first(error)}; "
                             f"check the file, or name its format with --{kind}-format") from None
        return relation, label
    name = fresh_name("input")
    if isinstance(source, duckdb.DuckDBPyRelation):
        source = source.arrow()
    if hasattr(source, "read_all"):  # a RecordBatchReader can be read once: keep the table
        source = source.read_all()
    try:
        con.register(name, source)
    except Exception as error:  # noqa: BLE001 - any unsupported object gets the same advice
        raise InputError(f"cannot use a {type(source).__name__} as the {kind}: pass a file path, a table name, "
                         f"a pyarrow Table, a pandas or polars DataFrame, or a DuckDB relation ({error})") from None
    return con.sql(f"SELECT * FROM {quote_identifier(name)}"), f"{kind} ({type(source).__name__})"


def _is_table(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    found = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ? "
                        "UNION ALL SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [name, name]).fetchall()
    return any(count for (count,) in found)


def _first(error: Exception) -> str:
    return str(error).strip().splitlines()[0]


def read_table(con: duckdb.DuckDBPyConnection, source: Any, kind: str, *, fmt: str | None = None,
               columns: dict[str, str | None] | None = None, label_map: dict[Any, float] | None = None,
               extra: list[str] | None = None) -> Source:
    """Create a view over `source` with the standard columns of `kind` (run, qrels or log), plus
    the `extra` columns (segments) as they are."""
    relation, label = _relation(con, source, kind, fmt)
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    mapping = {std: (columns or {}).get(std) or std for std in STANDARD_COLUMNS[kind]}
    missing = [f"{std!r}" + (f" (from {given!r})" if given != std else "")
               for std, given in mapping.items() if given not in available]
    if missing:
        options = ", ".join(sorted({f"{COLUMN_OPTIONS[std]}=" for std, given in mapping.items()
                                    if given not in available}))
        raise InputError(f"{label} has no column {', '.join(missing)}; its columns are "
                         f"{', '.join(repr(c) for c in available)}; name yours with {options}")
    selected = []
    for std, given in mapping.items():
        column_type = available[given]
        expression = quote_identifier(given)
        if std == "label" and label_map:
            cases = " ".join(f"WHEN {literal(value)} THEN {float(grade)!r}" for value, grade in label_map.items())
            expression = f"CASE {expression} {cases} ELSE 0.0 END"
        elif std in ("score", "relevance", "label"):
            if not column_type.upper().startswith(_NUMERIC):
                if not relation.limit(1).fetchall():  # a header-only text file reads as VARCHAR columns
                    raise InputError(f"{label} is empty: there is nothing to evaluate")
                hint = " or map event types to grades with label_map=" if std == "label" else ""
                raise InputError(f"{label}: column {given!r} holds {column_type}, but {std} must be numeric; "
                                 f"cast it{hint}")
            expression = f"CAST({expression} AS DOUBLE)"
        selected.append(f"{expression} AS {std}")
    for name in extra or []:
        if name not in available:
            raise InputError(f"{label} has no column {name!r} to segment by; its columns are "
                             f"{', '.join(repr(c) for c in available)}")
        if name in mapping.values() or name in STANDARD_COLUMNS["log"]:
            raise OptionError(f"cannot segment by {name!r}: it is one of the ranking's own columns")
        selected.append(quote_identifier(name))
    has_run_id = kind == "run" and "run_id" in available and "run_id" not in mapping.values()
    if has_run_id:
        selected.append(f"CAST({quote_identifier('run_id')} AS VARCHAR) AS run_id")
    view = fresh_name(kind)
    relation.project(", ".join(selected)).create_view(view)
    types = {std: available[given] for std, given in mapping.items()}
    return Source(view, label, types, has_run_id)


def write_table(con: duckdb.DuckDBPyConnection, view: str, path: str, fmt: str) -> None:
    """Write a standard-column view to `path` in `fmt` (TREC text in trec_eval's layouts)."""
    target = literal(path)
    relation = quote_identifier(view)
    if fmt == "parquet":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT parquet)").fetchall()
    elif fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else ","
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT csv, HEADER, DELIMITER '{sep}')").fetchall()
    elif fmt == "jsonl":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT json)").fetchall()
    elif fmt == "trec_run":
        columns = [c for (c, *_rest) in con.execute(f"DESCRIBE {relation}").fetchall()]
        run_id = "run_id" if "run_id" in columns else "'duckrank'"
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 'Q0', doc_id, "
            f"row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), score, {run_id}) "
            f"FROM {relation} ORDER BY query_id, score DESC, doc_id DESC) TO {target} "
            f"(FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    elif fmt == "trec_qrels":
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 0, doc_id, CASE WHEN relevance = round(relevance) "
            f"THEN CAST(CAST(relevance AS BIGINT) AS VARCHAR) ELSE CAST(relevance AS VARCHAR) END) FROM {relation} "
            f"ORDER BY query_id, doc_id) TO {target} (FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    else:
        raise OptionError(f"output format must be one of {', '.join(FORMATS)}; got {fmt!r}")
