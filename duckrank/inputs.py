"""Turn whatever the user hands us (a path, gzip or zstd compressed or not; '-' for standard input;
a table name; an Arrow/pandas/polars table; a DuckDB relation) into a DuckDB view with duckrank's
standard columns, or a clear InputError. TREC text is read as trec_eval 10 reads it (see below)."""

from __future__ import annotations

import atexit
import dataclasses
import glob
import gzip
import itertools
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import duckdb

from duckrank import peer_inputs
from duckrank._library import memory_limit_bytes, memory_problem
from duckrank._sql import literal as sql_text
from duckrank._sql import quote_identifier
from duckrank.errors import InputError, OptionError, quoted, quoted_path

FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec_run", "trec_qrels")
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
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv", ".tsv": "tsv",
             ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}
_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
            "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL", "BOOLEAN")
# Score types whose every value a DOUBLE holds exactly: no need to look for scores that would tie.
_HELD_BY_DOUBLE = ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER", "FLOAT", "DOUBLE", "REAL",
                   "BOOLEAN")
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
    has_run_id: bool = False  # a run_id column that names several runs (never a TREC text file's tags)
    name: str | None = None  # a TREC text run's name: the tag of its last line, as trec_eval's runid
    inner_view: str | None = None  # a view of the input as given (a list run's rows), for messages
    given: str | None = None  # the path (or '-') or table name as given; None for an object


def detect_format(path: str | os.PathLike, kind: str = "run", *, shown: str | None = None) -> str:
    """The format of a file from its name (less any .gz/.zst), or for TREC text from its first line
    that holds fields and is no comment (decompressed, if the file is gzip or zstd). `shown` names
    the file in the message, if not its path (standard input's temporary copy)."""
    text = str(path)
    if os.path.isdir(text):
        return "parquet"
    name = _strip_compression(text.lower())
    for suffix, fmt in _SUFFIXES.items():
        if name.endswith(suffix):
            return fmt
    fields = len(_first_data_line(_head(text, _compression(text), kind, shown)).split())
    if fields >= 6:  # trec_eval ignores anything after the sixth field
        return "trec_run"
    if fields == 4:
        return "trec_qrels"
    expected = "run (query_id Q0 doc_id rank score run_id)" if kind == "run" else "qrels (query_id 0 doc_id relevance)"
    raise InputError(
        f"cannot tell the format of {kind} file {shown or quoted_path(text)}: its name has no known extension "
        f"(.parquet, .csv, .tsv, .jsonl, each optionally .gz or .zst) and its first line is not a TREC {expected}; "
        + (f"name the format with --{kind}-format / {kind}_format=" if kind in ("run", "qrels", "log")
           else "give the file one of those extensions"))


def _exists(path: str, literal: bool | None = None) -> bool:
    if literal:
        return os.path.exists(path)
    return os.path.exists(path) or bool(glob.glob(path, recursive=True))


_GLOB_CHARACTERS = re.compile(r"[*?\[]")


def is_glob(path: str, literal: bool | None = None) -> bool:
    """Whether `path` is read as a glob. By default (literal None) when it has glob characters and
    no file has that very name (a path that exists is read literally, however many other files it
    would match); literal=True reads every path literally, literal=False expands every path with
    glob characters (--literal, --glob)."""
    if literal is None:
        return bool(_GLOB_CHARACTERS.search(path)) and not os.path.exists(path)
    return not literal and bool(_GLOB_CHARACTERS.search(path))


def files_of(path: str, literal: bool | None = None) -> list[str]:
    """Every file an input path reads: the file itself, each file a glob matches, each file in a
    (hive-partitioned) folder. For -o's check that no input is overwritten."""
    if path == "-":
        return []
    if os.path.isdir(path):
        return [os.path.join(root, name) for root, _, names in os.walk(path) for name in names]
    if is_glob(path, literal):
        return [found for found in glob.glob(path, recursive=True) if os.path.isfile(found)]
    return [path]


def _literal(path: str) -> str:
    """A name DuckDB reads as exactly this file or folder: a path with glob characters that exists
    is reached through a link of a plain name (keeping its extensions) in the scratch folder."""
    if not _GLOB_CHARACTERS.search(path) or not os.path.exists(path):
        return path
    from duckrank import _scratch

    name = os.path.basename(os.path.normpath(path))
    suffixes = "".join(s for s in Path(name).suffixes if not _GLOB_CHARACTERS.search(s))
    link = _scratch.path(f"{fresh_name('literal')}{suffixes}")
    os.symlink(os.path.abspath(path), link)
    return link


# ---------------------------------------------------------------------------------------------
# compressed files and standard input

_COMPRESSION_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))


def _strip_compression(name: str) -> str:
    root, suffix = os.path.splitext(name)
    return root if suffix.lower() in _COMPRESSION_SUFFIXES else name


def _compression(path: str) -> str | None:
    """'gzip' or 'zstd' from a file's magic bytes, None for a file that is neither: the bytes decide,
    not the name (a run.txt.gz that is plain text is read as it is; gzip data named run.txt is
    decompressed). A glob, which has no bytes of its own, goes by its name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError:
        return None if os.path.exists(path) else _COMPRESSION_SUFFIXES.get(os.path.splitext(path.lower())[1])
    return next((codec for magic, codec in _MAGIC if head.startswith(magic)), None)


def _open_bytes(path: str, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        return gzip.open(path, "rb")  # reads concatenated gzip members too, as gzip -dc does
    if compression == "zstd":
        import pyarrow as pa  # a dependency of duckrank, imported only when needed: its import costs

        return pa.input_stream(path, compression="zstd")
    return open(path, "rb")


_READ_ERRORS = (OSError, EOFError, ValueError, zlib.error)  # what a corrupt gzip or zstd stream raises


def _head(path: str, compression: str | None, kind: str = "run", shown: str | None = None,
          size: int = 1 << 16) -> bytes:
    """The first `size` bytes of the file, decompressed: b'' if it cannot be opened (the caller's
    own checks name that), an InputError if it is compressed and cannot be decompressed."""
    try:
        with _open_bytes(path, compression) as stream:
            return stream.read(size)
    except _READ_ERRORS as error:
        if compression is None:
            return b""
        raise InputError(f"cannot decompress {kind} file {shown or quoted_path(path)} as {compression}: "
                         f"{_first(error)}; "
                         f"check the file") from None


def is_stdin(source: Any) -> bool:
    """Whether an input names standard input: the text '-' (Path('-') is a file named '-')."""
    return isinstance(source, str) and not isinstance(source, Path) and source == "-"


def stdin_problem(named: list[tuple[str, Any]]) -> str | None:
    """What is wrong when more than one input is '-', or None: standard input can be read once.
    `named` pairs each input with its name as the caller spells it (QRELS, RUN 1; qrels, runs[0]),
    so that the message is found before any input is read, whatever the first one would say."""
    given = [name for name, source in named if is_stdin(source)]
    if len(given) < 2:
        return None
    return (f"{', '.join(given[:-1])} and {given[-1]} are {'both' if len(given) == 2 else 'all'} '-', but "
            f"standard input can be read once; give all but one of them as files")


# Standard input, read once into a temporary file: the readers take paths, and a second read of
# '-' in the same process (duckrank convert tries qrels, then run) must see the same bytes.
_STDIN: dict[str, Any] = {"stream": None, "path": None, "kinds": set()}


def _stdin_path(kind: str) -> str:
    stream = sys.stdin
    if _STDIN["path"] is not None and _STDIN["stream"] is stream:
        other = sorted(_STDIN["kinds"] - {kind})
        if other:
            raise InputError(f"standard input ('-') was read as the {other[0]} already; only one of the "
                             f"qrels and the runs can be '-': give the {kind} as a file")
        return _STDIN["path"]
    if stream is None:
        raise InputError(f"the {kind} is '-' but there is no standard input; give the {kind} file's path")
    if getattr(stream, "isatty", lambda: False)():
        raise InputError(f"the {kind} is '-' (standard input), but standard input is a terminal: pipe the "
                         f"{kind} in (e.g. zcat run.gz | duckrank eval qrels.txt -) or give its path")
    descriptor, path = tempfile.mkstemp(prefix="duckrank-stdin-")
    atexit.register(_remove_quietly, path)
    with os.fdopen(descriptor, "wb") as target:
        buffer = getattr(stream, "buffer", None)
        if buffer is not None:
            shutil.copyfileobj(buffer, target, 1 << 20)
        else:  # a text stream without bytes beneath (io.StringIO in a notebook, say)
            for block in iter(lambda: stream.read(1 << 20), ""):
                target.write(block.encode("utf-8"))
    _STDIN.update(stream=stream, path=path, kinds=set())
    return path


def _is_pipe(path: str) -> bool:
    """A FIFO or character device (`<(zcat run.gz)` is /dev/fd/63): bytes that can be read once."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def _pipe_copy(path: str) -> str:
    """A pipe's bytes in a scratch file, read once: telling the format reads its head, which a
    second read of the pipe would have lost."""
    from duckrank import _scratch

    copy = _scratch.path(fresh_name("pipe"))
    with open(path, "rb") as source, open(copy, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    return copy


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


# ---------------------------------------------------------------------------------------------
# files


def _read_file(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str, shown: str,
               subtopics: bool = False) -> _Read:
    local = os.path.isfile(path) and not _GLOB_CHARACTERS.search(path)  # a literal path comes as a plain link
    compression = _compression(path) if local else None
    if fmt == "parquet":
        if compression is not None:
            raise InputError(f"{kind} file {shown} is {compression}-compressed Parquet; Parquet compresses its "
                             f"own pages, so decompress the file first")
        target = os.path.join(path, "**", "*.parquet") if os.path.isdir(path) else path
        return _Read(con.read_parquet(target, hive_partitioning=os.path.isdir(path), union_by_name=True))
    # a local file's bytes decide its compression; a glob's files go by their names (DuckDB's 'auto')
    options = {"compression": compression or "none"} if local else {}
    if fmt in ("csv", "tsv"):
        return _Read(con.read_csv(path, header=True, sep="\t" if fmt == "tsv" else ",", **options))
    if fmt == "jsonl":
        return _Read(con.read_json(path, format="newline_delimited", **options))
    trec = _read_trec(con, path, fmt, kind, compression, shown, subtopics)
    return _Read(trec.relation, name=trec.tag, trec=True)


# ---------------------------------------------------------------------------------------------
# TREC text, read as trec_eval 10 reads it (get_trec_results.c, get_qrels.c):
#
# - a line ends at '\n'; its fields are separated by runs of C's isspace() characters (space, \t,
#   \v, \f, \r; trec_eval never calls setlocale, so no other byte separates: a no-break space is
#   part of a field); whitespace before the first field and after the last is dropped;
# - a run line has at least 6 fields (query_id Q0 doc_id rank score run_id): the 2nd, 4th (the
#   rank: trec_eval ranks by score) and 7th on are ignored; a line whose first field starts with
#   '#' is a comment; a line of whitespace is skipped;
# - a qrels line has exactly 4 fields (query_id iteration doc_id relevance); a line that starts
#   with '#' is a comment (only at the very start of the line: ' # x' is a judgment line);
# - the score is read by atof, the relevance by atol. Both read the longest prefix that is a
#   number and ignore the rest ('1_000' is 1, '3abc' is 3, 'high' is 0): duckrank takes the same
#   value wherever the whole field is a number as C reads it, and otherwise stops with the file,
#   the line and the value, since a silently different number is the worst outcome. A relevance
#   '1.7' is 1 (atol stops at the point: trec_eval's grades are integers) but '1e2' is an error
#   (atol reads 1, the text says 100);
# - one file is one run, whatever its tags: trec_eval names it by the tag of its last line.
#
# Where trec_eval 10 fails on a file (a blank line in qrels, a comment on the last line of qrels,
# where it reads past its buffer), duckrank reads the lines that have a meaning; where the two
# would read the same file differently, duckrank stops and says so (a NUL byte, where trec_eval
# stops reading; a UTF-8 byte-order mark, which trec_eval makes part of the first query id; a qrels
# comment right after another, which trec_eval reads as a judgment).

_C_SPACE = " \t\n\v\f\r"
_BOM = b"\xef\xbb\xbf"
_LAYOUTS = {  # the fields of a line, the numeric one, and the ones kept (in this order)
    "trec_run": (("query_id", "q0", "doc_id", "rank", "score", "run_id"), "score",
                 ("query_id", "doc_id", "score", "run_id")),
    "trec_qrels": (("query_id", "iteration", "doc_id", "relevance"), "relevance", ("query_id", "doc_id", "relevance")),
}
# TREC diversity qrels put the subtopic where ad-hoc qrels have the unused iteration: read as the
# subtopic when a diversity measure is asked for (ndeval's qrels), never otherwise.
_SUBTOPIC_FIELD = "iteration"
_SHAPES = {"trec_run": "at least 6: query_id Q0 doc_id rank score run_id",
           "trec_qrels": "exactly 4: query_id iteration doc_id relevance"}
# The whole field as strtod reads it: a decimal number; inf, infinity or nan (any case); a C99 hex float.
_DECIMAL = r"[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?"
_SPECIAL = r"[+-]?([iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN]([(][0-9A-Za-z_]*[)])?)"
_HEX = r"[+-]?0[xX]([0-9a-fA-F]+[.]?[0-9a-fA-F]*|[.][0-9a-fA-F]+)([pP][+-]?[0-9]+)?"
# A relevance as atol reads it whole, but for a fraction it drops (as trec_eval does): '2', '+1', '1.7', '.5'.
_INTEGER = r"[+-]?[0-9]+"
_GRADE = r"[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)"


def _score_sql(text: str) -> str:
    """SQL for atof's value of the field `text` (an expression) when the whole field is a decimal
    number, inf or nan; NULL otherwise (a hex float included: the line reader converts those).
    DuckDB's CAST rounds a decimal string correctly, as glibc's strtod does."""
    return (f"CASE WHEN regexp_full_match({text}, '{_DECIMAL}') THEN CAST({text} AS DOUBLE) "
            f"WHEN regexp_full_match({text}, '{_SPECIAL}') THEN CASE WHEN contains(lower({text}), 'a') "
            f"THEN 'nan'::DOUBLE WHEN starts_with({text}, '-') THEN '-inf'::DOUBLE ELSE 'inf'::DOUBLE END END")


def _grade_sql(text: str) -> str:
    """SQL for atol's value (as a DOUBLE) of the field `text` when the whole field is an integer, or
    a decimal fraction whose integer part atol reads; NULL otherwise, or past a BIGINT."""
    whole = f"regexp_extract({text}, '^[+-]?[0-9]*')"
    return (f"CAST(CASE WHEN regexp_full_match({text}, '{_INTEGER}') THEN TRY_CAST({text} AS BIGINT) "
            f"WHEN regexp_full_match({text}, '{_GRADE}') THEN CASE WHEN {whole} IN ('', '+', '-') THEN 0 "
            f"ELSE TRY_CAST({whole} AS BIGINT) END END AS DOUBLE)")


def _number_sql(fmt: str, text: str) -> str:
    return _score_sql(text) if fmt == "trec_run" else _grade_sql(text)


@dataclass(frozen=True)
class _Trec:
    """TREC text read into a TEMP TABLE, and a run's tag of its last line (trec_eval's runid)."""

    relation: duckdb.DuckDBPyRelation
    tag: str | None = None


def _read_trec(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str, compression: str | None,
               shown: str, subtopics: bool = False) -> _Trec:
    """TREC text: DuckDB's parallel CSV reader for the common layout, else the line reader. With
    subtopics, qrels keep their second field as the subtopic column."""
    subtopics = subtopics and fmt == "trec_qrels"
    fast = _read_trec_fast(con, path, fmt, compression, subtopics)
    return fast if fast is not None else _read_trec_lines(con, path, fmt, kind, shown, subtopics)


def _kept_columns(kept: tuple[str, ...], subtopics: bool) -> str:
    """The SELECT list of a TREC file's kept fields (with the subtopic, when asked for)."""
    columns = [quote_identifier(n) for n in kept]
    if subtopics:
        columns.append(f"{quote_identifier(_SUBTOPIC_FIELD)} AS {SUBTOPIC}")
    return ", ".join(columns)


def _first_data_line(head: bytes) -> bytes:
    """The first line of `head` that holds a field and is no comment."""
    for line in head.split(b"\n"):
        fields = line.split()  # bytes.split() splits on exactly C's isspace() characters
        if fields and not fields[0].startswith(b"#"):
            return line
    return b""


def _plain_bytes(path: str, sep: str) -> bool:
    """Whether `path` is one local, uncompressed file holding no C whitespace but the separator and
    '\\n', no NUL, and no line that starts with '#'. Then every field DuckDB's CSV reader splits off
    is a field trec_eval splits off too, and no line is a comment, so the per-row checks reduce to
    'no field is empty'. A byte scan: about 0.2 s for 250 MB, against about 0.8 s of CPU for the
    per-row checks it saves."""
    if any(c in path for c in "*?[") or _compression(path) is not None:
        return False  # a glob, or a file to decompress: check every row
    forbidden = [c.encode() for c in "\t\v\f\r \0" if c != sep]
    previous = b"\n"
    try:
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 22):
                if (any(c in chunk for c in forbidden) or b"\n#" in chunk
                        or (previous == b"\n" and chunk.startswith(b"#"))):
                    return False
                previous = chunk[-1:]
    except OSError:
        return False
    return True


def _read_trec_fast(con: duckdb.DuckDBPyConnection, path: str, fmt: str,
                    compression: str | None = None, subtopics: bool = False) -> _Trec | None:
    """The file in a TEMP TABLE written by DuckDB's parallel CSV reader, or None if any line is
    not the common layout, so that the caller falls back to the line reader (whose message names
    the bad line). Nothing is returned before the whole file has been read and checked.

    The fast path accepts only files that read here as trec_eval reads them, field for field:
    every non-blank line has exactly the layout's fields, one space (or one tab) apart (strict
    mode: a seventh run field, a double or leading separator, a lone carriage return fail); no
    field is empty (the CSV reader makes an empty field NULL); no field but the value holds a C
    whitespace character or NUL; no line starts with '#'; the value, less the whitespace around
    it (trec_eval's own runs pad their scores), is a number in full as _score_sql or _grade_sql
    reads it, and for a run finite (the line reader names a score atof reads as inf or nan); the file
    has no byte-order mark (which the CSV reader drops and trec_eval keeps)."""
    if any(c in path for c in "*?["):
        return None  # DuckDB would expand it as a glob: the line reader reads the file by its name
    head = _head(path, compression)
    if head.startswith(_BOM):
        return None
    names, value, kept = _LAYOUTS[fmt]
    sep = "\t" if b"\t" in _first_data_line(head) else " "
    plain = compression is None and _plain_bytes(path, sep)
    raw = quote_identifier(value)
    if plain:
        text = raw
        checks = [f"{quote_identifier(n)} IS NOT NULL" for n in names if n != value]
        joined = ""
    else:  # the other fields joined once (NULL if any is empty), then searched for each character
        text = f"trim({raw}, {sql_text(_C_SPACE)})"
        checks = [*(f"NOT contains(duckrank_fields, chr({ord(c)}))" for c in "\t\v\f\r \0" if c != sep),
                  f"NOT starts_with({quote_identifier(names[0])}, '#')"]
        joined = ", " + " || ".join(quote_identifier(n) for n in names if n != value) + " AS duckrank_fields"
    number_read = "isfinite(duckrank_number)" if fmt == "trec_run" else "duckrank_number IS NOT NULL"
    valid = " AND ".join([number_read, *checks])
    # error() fails the whole read on the first bad row: a table that exists is valid throughout.
    selected = ", ".join(f"CASE WHEN {valid} THEN duckrank_number ELSE error('not the common TREC layout') END "
                         f"AS {raw}" if n == value else quote_identifier(n)
                         for n in (*kept, *((_SUBTOPIC_FIELD,) if subtopics else ())))
    # a compressed run has no tail to read its last tag from: it keeps its line order instead
    ordered = compression is not None and fmt == "trec_run"
    columns = ", ".join(f"{sql_text(n)}: 'VARCHAR'" for n in names)
    table = fresh_name("trec")
    try:
        con.execute(
            f"CREATE TEMP TABLE {table} AS SELECT {selected}{', ordinality AS duckrank_line' if ordered else ''} "
            f"FROM (SELECT *{joined}, {_number_sql(fmt, 'duckrank_text')} AS duckrank_number "
            f"FROM (SELECT *, {text} AS duckrank_text "
            f"FROM read_csv({sql_text(path)}, delim={sql_text(sep)}, quote='', escape='', comment='', header=false, "
            f"auto_detect=false, strict_mode=true, null_padding=false, ignore_errors=false, "
            f"compression={sql_text(compression or 'none')}, columns={{{columns}}}){' WITH ORDINALITY' if ordered else ''}))"
        ).fetchall()
    except duckdb.InterruptException:
        raise
    except duckdb.Error:
        return None
    tag = None
    if fmt == "trec_run":
        if ordered:
            found = con.execute(f"SELECT run_id FROM {table} ORDER BY duckrank_line DESC LIMIT 1").fetchall()
            tag = found[0][0] if found else None
        else:
            tag = _last_tag(path)
    return _Trec(con.sql(f"SELECT {_kept_columns(kept, subtopics)} FROM {table}"), tag)


def _last_tag(path: str) -> str | None:
    """The run tag (6th field) of the last line of a run file that is neither blank nor a comment,
    read from the end of the file: trec_eval's runid."""
    with open(path, "rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        tail = b""
        while position > 0:
            step = min(1 << 16, position)
            position -= step
            handle.seek(position)
            tail = handle.read(step) + tail
            lines = tail.split(b"\n")
            for line in reversed(lines if position == 0 else lines[1:]):  # the first may be cut
                fields = line.split()
                if fields and not fields[0].startswith(b"#"):
                    return fields[5].decode("utf-8") if len(fields) >= 6 else None
    return None


_CHUNK = 1 << 26  # the line reader's largest piece of text: 64 MiB, cut at a line end
# The line reader's pieces live outside DuckDB's memory limit, and Arrow's splitting holds about ten
# copies of one (a 64 MiB piece peaked 0.87 GB above the interpreter): a piece of this share of
# DuckDB's limit keeps the copies within the headroom duckrank keeps beside it (DUCKDB_MEMORY_SHARE).
_PIECE_OF_LIMIT = 1 / 128
_SMALLEST_PIECE = 1 << 20


def _piece_size(con: duckdb.DuckDBPyConnection) -> int:
    """How many bytes the line reader splits at once under `con`'s memory limit."""
    return int(min(_CHUNK, max(_SMALLEST_PIECE, memory_limit_bytes(con) * _PIECE_OF_LIMIT)))


def _chunks(path: str, compression: str | None, kind: str, shown: str,
            piece: int = _CHUNK) -> Iterator[tuple[int, bytes]]:
    """The file's bytes, decompressed, in pieces of about `piece` bytes that end at a line end (but
    maybe the last), each with the number of its first line. A NUL byte is refused as it is read,
    and so is a line with no end in _CHUNK bytes: no TREC line is that long, and a file of zero bytes
    or binary data would otherwise be held whole in memory before its first line is looked at."""
    line = 1
    piece = min(piece, _CHUNK)
    try:
        with _open_bytes(path, compression) as stream:
            rest = b""
            while block := stream.read(piece):
                block = rest + block
                nul = block.find(b"\0", len(rest))
                if nul >= 0:
                    at = line + block.count(b"\n", 0, nul)
                    raise InputError(
                        f"{kind} file {shown}, line {at} is not TREC text: it holds a "
                        f"NUL byte ({quoted(_line_around(block, nul))}), where trec_eval stops reading the file, "
                        f"silently dropping the rest; check that this is the {kind} file, or remove the NUL bytes")
                cut = block.rfind(b"\n") + 1
                rest = block[cut:]
                if cut:
                    yield line, block[:cut]
                    line += block.count(b"\n", 0, cut)
                if len(rest) > _CHUNK:
                    raise InputError(
                        f"{kind} file {shown}, line {line} is not TREC text: it runs past {_CHUNK:,} bytes with no "
                        f"line end ({quoted(rest)}); check that this is the {kind} file")
            if rest:
                yield line, rest
    except _READ_ERRORS as error:
        how = f" as {compression}" if compression else ""
        raise InputError(f"cannot read {kind} file {shown}{how}: {_first(error)}; check the file") from None


def _line_around(data: bytes, offset: int) -> bytes:
    """The line of `data` that holds the byte at `offset`, for a message."""
    end = data.find(b"\n", offset)
    return data[data.rfind(b"\n", 0, offset) + 1:end if end >= 0 else len(data)]


def _read_trec_lines(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str,
                     shown: str | None = None, subtopics: bool = False) -> _Trec:
    """TREC text as trec_eval reads it, line by line (Arrow's vectorised string kernels split the
    lines and fields), or an InputError naming the file, the line and what is wrong with it (a score
    atof reads as inf or nan among those: duckrank scores finite numbers only)."""
    # a path read literally comes as a plain name (_literal): glob characters mean a glob
    files = sorted(glob.glob(path, recursive=True)) if _GLOB_CHARACTERS.search(path) else [path]
    _fields, value, kept = _LAYOUTS[fmt]
    run = fmt == "trec_run"
    staging, mapping = fresh_name("trec_lines"), fresh_name("trec_hex")
    piece = _piece_size(con)
    con.execute(f"CREATE TEMP TABLE {staging} (duckrank_file INTEGER, duckrank_line BIGINT, query_id VARCHAR, "
                f"doc_id VARCHAR, duckrank_text VARCHAR{', run_id VARCHAR' if run else ''}"
                f"{f', {_SUBTOPIC_FIELD} VARCHAR' if subtopics else ''})").fetchall()
    try:
        for index, file in enumerate(files):
            name = shown if shown is not None and len(files) == 1 else quoted_path(file)
            after_comment = False
            for line, chunk in _chunks(file, _compression(file), kind, name, piece):
                if line == 1 and chunk.startswith(_BOM):
                    raise InputError(
                        f"{kind} file {name} starts with a UTF-8 byte-order mark, which trec_eval reads as part "
                        f"of the first query id ('\\ufeff' + the id); remove it (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//')")
                rows, after_comment = _parse_chunk(chunk, fmt, kind, name, line, after_comment, subtopics)
                if rows.num_rows:
                    view = fresh_name("trec_chunk")
                    con.register(view, rows)
                    try:
                        con.execute(f"INSERT INTO {staging} SELECT {index}, * FROM {view}").fetchall()
                    finally:
                        con.unregister(view)
        number = _number_sql(fmt, "s.duckrank_text")
        join = ""
        if run:  # hex floats, which strtod reads and DuckDB does not: few, converted here
            hexes = con.execute(f"SELECT DISTINCT duckrank_text FROM {staging} "
                                f"WHERE regexp_full_match(duckrank_text, '{_HEX}')").fetchall()
            if hexes:
                con.execute(f"CREATE TEMP TABLE {mapping} (duckrank_text VARCHAR, value DOUBLE)").fetchall()
                con.executemany(f"INSERT INTO {mapping} VALUES (?, ?)", [(t, _from_hex(t)) for (t,) in hexes])
                join = f" LEFT JOIN {mapping} h ON h.duckrank_text = s.duckrank_text"
                number = f"coalesce({number}, h.value)"
        bad = con.execute(f"SELECT s.duckrank_file, s.duckrank_line, s.duckrank_text FROM {staging} s{join} "
                          f"WHERE NOT coalesce(isfinite({number}), false) ORDER BY 1, 2 LIMIT 1").fetchall()
        if bad:
            index, line, text = bad[0]
            name = shown if shown is not None and len(files) == 1 else quoted_path(files[index])
            raise InputError(_value_problem(fmt, kind, name, line, text))
        table = fresh_name("trec")
        con.execute(f"CREATE TEMP TABLE {table} AS SELECT s.query_id, s.doc_id, {number} AS {quote_identifier(value)}"
                    f"{', s.run_id' if run else ''}{f', s.{_SUBTOPIC_FIELD}' if subtopics else ''} FROM {staging} s{join} "
                    f"ORDER BY s.duckrank_file, s.duckrank_line").fetchall()
        tag = None
        if run:
            found = con.execute(f"SELECT run_id FROM {staging} ORDER BY duckrank_file DESC, duckrank_line DESC "
                                f"LIMIT 1").fetchall()
            tag = found[0][0] if found else None
    finally:
        con.execute(f"DROP TABLE IF EXISTS {staging}; DROP TABLE IF EXISTS {mapping}").fetchall()
    return _Trec(con.sql(f"SELECT {_kept_columns(kept, subtopics)} FROM {table}"), tag)


def _parse_chunk(chunk: bytes, fmt: str, kind: str, shown: str, first_line: int,
                 after_comment: bool, subtopics: bool = False) -> tuple[Any, bool]:
    """One piece of a TREC file as an Arrow table (duckrank_line, query_id, doc_id, duckrank_text
    [, run_id] [, iteration]) of its judgment or result lines, and whether its last line is a (qrels)
    comment."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def line_at(offset: int) -> int:
        return first_line + chunk.count(b"\n", 0, offset)

    offsets = pa.array([0, len(chunk)], pa.int64()).buffers()[1]
    text = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, pa.py_buffer(chunk)])  # no copy
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InputError(
                f"{kind} file {shown}, line {line_at(error.start)} is not UTF-8 text (byte 0x{chunk[error.start]:02x} "
                f"in {quoted(_line_around(chunk, error.start))}); duckrank reads ids as UTF-8: check that this is the "
                f"{kind} file, or convert it, e.g. iconv -f latin1 -t utf-8") from None
        raise
    lines = pc.split_pattern(text, "\n").flatten()
    count = len(lines) - 1 if chunk.endswith(b"\n") else len(lines)  # a final '\n' ends a line, not starts one
    trimmed = pc.ascii_trim_whitespace(lines)  # Arrow's ASCII whitespace is C's isspace()
    blank = pc.equal(trimmed, "")
    if fmt == "trec_run":
        comment = pc.starts_with(trimmed, "#")
    else:
        comment = pc.starts_with(lines, "#")
        # trec_eval's qrels reader skips one comment line, then reads the next as a judgment whatever it holds
        twice = pc.indices_nonzero(pc.and_(comment.slice(1), comment.slice(0, len(comment) - 1)))
        if after_comment and count and comment[0].as_py():
            _comment_problem(kind, shown, first_line)
        if len(twice):
            _comment_problem(kind, shown, first_line + twice[0].as_py() + 1)
        after_comment = bool(count) and comment[count - 1].as_py()
    where = pc.indices_nonzero(pc.invert(pc.or_(blank, comment)))
    fields = pc.ascii_split_whitespace(pc.take(trimmed, where))
    counts = pc.list_value_length(fields)
    wrong = pc.indices_nonzero(pc.less(counts, 6) if fmt == "trec_run" else pc.not_equal(counts, 4))
    if len(wrong):
        at = wrong[0].as_py()
        row = where[at].as_py()
        shown_line = lines[row].as_py().removesuffix("\r")
        raise InputError(f"{kind} file {shown}, line {first_line + row}: {quoted(shown_line)} has {counts[at].as_py()} "
                         f"fields, but a TREC {fmt.removeprefix('trec_')} line has {_SHAPES[fmt]} "
                         f"(trec_eval stops at it: 'Malformed line'); fix the line, or name the format with "
                         f"--{kind}-format")
    columns = {"duckrank_line": pc.add(pc.cast(where, pa.int64()), first_line),
               "query_id": pc.list_element(fields, 0), "doc_id": pc.list_element(fields, 2),
               "duckrank_text": pc.list_element(fields, 4 if fmt == "trec_run" else 3)}
    if fmt == "trec_run":
        columns["run_id"] = pc.list_element(fields, 5)
    if subtopics:
        columns[_SUBTOPIC_FIELD] = pc.list_element(fields, 1)
    return pa.table(columns), after_comment


def _comment_problem(kind: str, shown: str, line: int) -> None:
    raise InputError(f"{kind} file {shown}, line {line}: a '#' line right after another: trec_eval skips one "
                     f"comment line, then reads the next line as a judgment (or stops at it: 'Malformed line'); "
                     f"join the comments into one line, or remove them")


# For messages: what C reads from a field it does not read in full.
_ATOF_PREFIX = re.compile(r"[+-]?(0[xX]([0-9a-fA-F]+[.]?[0-9a-fA-F]*|[.][0-9a-fA-F]+)([pP][+-]?[0-9]+)?"
                          r"|[iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN]([(][0-9A-Za-z_]*[)])?"
                          r"|([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?)")


def _from_hex(text: str) -> float:
    try:
        return float.fromhex(text)
    except OverflowError:  # strtod's HUGE_VAL
        return float("-inf") if text.startswith("-") else float("inf")


def _c_atof(text: str) -> float:
    found = _ATOF_PREFIX.match(text.lstrip(_C_SPACE))
    if not found:
        return 0.0
    number = found.group(0).lower()
    if "nan" in number:  # nan(chars), which Python's float does not read
        return math.nan
    return _from_hex(number) if "x" in number else float(number)


def _c_atol(text: str) -> int:
    found = re.match(r"[ \t\n\v\f\r]*([+-]?[0-9]+)", text)
    return max(-(2 ** 63), min(2 ** 63 - 1, int(found.group(1)))) if found else 0


def _shown_number(value: float) -> str:
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    return str(int(value)) if value == int(value) and abs(value) < 1e16 else repr(value)


# The largest double: the score to write for one that atof reads as inf.
_LARGEST = "1.7976931348623157e308"


def _value_problem(fmt: str, kind: str, shown: str, line: int, text: str) -> str:
    where = f"{kind} file {shown}, line {line}"
    value = _c_atof(text)
    if fmt == "trec_run" and re.fullmatch(f"{_DECIMAL}|{_SPECIAL}|{_HEX}", text) and not math.isfinite(value):
        # trec_eval reads it and ranks it; duckrank scores finite numbers only, from any input
        if value != value:
            return (f"{where}: the score {quoted(text)} is NaN as C's atof reads it, which trec_eval's sort places "
                    f"arbitrarily; duckrank scores finite numbers only: write a number such as 12.5, or remove the "
                    f"line")
        sign, side = ("-", "below") if value < 0 else ("", "above")
        how = ("is infinite" if re.fullmatch(_SPECIAL, text)
               else f"is beyond a double's range: C's atof reads it as {sign}inf")
        return (f"{where}: the score {quoted(text)} {how}, which trec_eval ranks {side} every finite score; duckrank "
                f"scores finite numbers only: write a score within ±{_LARGEST} (the largest double), e.g. "
                f"{sign}{_LARGEST} to rank the doc {'last' if sign else 'first'}")
    if fmt == "trec_run":
        return (f"{where}: the score {quoted(text)} is not a number as trec_eval reads it: C's atof would "
                f"silently take "
                f"{_shown_number(value)}; write the score as a number such as 12.5 or 1.25e1")
    if re.fullmatch(_GRADE, text):
        return (f"{where}: the relevance {quoted(text)} is too large (C's atol would silently take "
                f"{_c_atol(text)}); write the grade as a small integer")
    return (f"{where}: the relevance {quoted(text)} is not an integer as trec_eval reads it: C's atol would silently "
            f"take {_c_atol(text)}; write the grade as an integer such as 0, 1 or 2")


# ---------------------------------------------------------------------------------------------
# any input


@dataclass(frozen=True)
class _Read:
    """A relation over an input, and what its reader learnt: a TREC run's tag, whether it came from stdin."""

    relation: duckdb.DuckDBPyRelation
    label: str = ""
    name: str | None = None
    trec: bool = False
    stdin: bool = False
    given: str | None = None  # the path (or '-') or table name as given; None for an object


def _relation(con: duckdb.DuckDBPyConnection, source: Any, kind: str, fmt: str | None,
              literal: bool | None = None, subtopics: bool = False) -> _Read:
    """A DuckDB relation over `source`, and its label for messages; `literal` as is_glob takes it;
    subtopics: TREC qrels keep their second field as the subtopic."""
    if isinstance(source, (str, os.PathLike)):
        text = str(source)
        stdin = is_stdin(source)
        table = (None if stdin or _exists(text, literal) or isinstance(source, Path)
                 else _table_reference(con, text))
        if table is not None:
            return _Read(con.sql(f"SELECT * FROM {table}"), f"{kind} table {quoted(text)}", given=text)
        shown = "'-' (standard input)" if stdin else quoted_path(text)
        label = f"{kind} '-'" if stdin else f"{kind} {shown}"
        if fmt is not None and fmt not in FORMATS:
            raise OptionError(f"--{kind}-format must be one of {', '.join(FORMATS)}; got {quoted(fmt)}")
        if stdin:
            text = _stdin_path(kind)
        elif _is_pipe(text):
            text = _pipe_copy(text)
        elif not _exists(text, literal):
            read_as = (" (read literally: no file has that very name; without --literal / literal=True a "
                       "glob is expanded)" if literal and _GLOB_CHARACTERS.search(text) else "")
            raise InputError(f"{kind} file {shown} not found (looked from {os.getcwd()}){read_as}; check the "
                             f"path, or give '-' to read standard input")
        if os.path.isfile(text) and os.path.getsize(text) == 0:
            # what a failed job leaves, and trec_eval refuses it too; an empty table is read (scored
            # as ir_measures scores an empty input), and a header line says that it is meant
            raise InputError(f"{kind} file {shown} is empty (0 bytes), with not even a header line; if the {kind} "
                             f"holds nothing, write its header ({','.join(STANDARD_COLUMNS.get(kind, ('query_id',)))}"
                             f") as CSV, or pass an empty table")
        chosen = fmt or detect_format(text, kind, shown=shown)
        try:
            read = _read_file(con, text if is_glob(text, literal) else _literal(text), chosen, kind, shown, subtopics)
            read.relation.columns  # noqa: B018 - binding reads the file's schema, surfacing corrupt files here
        except duckdb.Error as error:
            memory = memory_problem(con, error)
            if memory is not None:
                raise InputError(f"cannot read {kind} file {shown}: {memory}") from None
            raise InputError(f"cannot read {kind} file {shown} as {chosen}: {_first(error)}; "
                             f"check the file, or name its format with --{kind}-format") from None
        return dataclasses.replace(read, label=label, given=str(source), stdin=stdin)
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
    return _Read(con.sql(f"SELECT * FROM {quote_identifier(name)}"), f"{kind} ({given_type})")


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


def _first(error: Exception) -> str:
    return str(error).strip().splitlines()[0]


def read_table(con: duckdb.DuckDBPyConnection, source: Any, kind: str, *, fmt: str | None = None,
               columns: dict[str, Any] | None = None, label_map: dict[Any, float] | None = None,
               extra: list[str] | None = None, literal: bool | None = None, subtopics: bool = False) -> Source:
    """Create a view over `source` with the standard columns of `kind` (run, qrels, log, exclude or
    segments), plus the `extra` columns (segments) as they are. `literal`: how a path with glob
    characters is read (is_glob). A run may come as lists (one row per query, its ranking in a LIST
    column: _long_run) or ranked by a rank column instead of a score. A log's label may be several
    event columns (columns['label'] a list; _label_expression). subtopics: qrels keep each judgment's
    subtopic (a column `subtopic`, or columns['subtopic']; TREC qrels' second field) when they have one."""
    bad_grade = next((value for value, grade in (label_map or {}).items()
                      if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade)), None)
    if bad_grade is not None:
        raise OptionError(f"label_map= must give each label a finite number as its grade; got "
                          f"{bad_grade}={quoted(label_map[bad_grade])}")
    read = _relation(con, source, kind, fmt, literal, subtopics and kind == "qrels")
    relation, label = read.relation, read.label
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
        relation, mapping, inner_view = _long_run(con, relation, label, mapping, score_named=bool(columns.get("score")))
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    missing = [quoted(std) + (f" (from {quoted(given)})" if given != std else "")
               for std, given in mapping.items() if given not in available]
    if missing:
        options = ", ".join(sorted({f"{COLUMN_OPTIONS[std]}=" for std, given in mapping.items()
                                    if given not in available}))
        raise InputError(f"{label} has no column {', '.join(missing)}; its columns are "
                         f"{', '.join(quoted(c) for c in available)}; name yours with {options}")
    selected = []
    for std, given in mapping.items():
        column_type = available[given]
        expression = quote_identifier(given)
        if std == "label" and (label_map or len(labels) > 1):
            expression = _label_expression(relation, label, available, labels, label_map or {})
        elif std in ("score", "relevance", "label"):
            if not column_type.upper().startswith(_NUMERIC):
                # a header-only text file reads as VARCHAR columns, an empty DataFrame's as NULL: no
                # value to be wrong, an empty input (scored as ir_measures scores one)
                if relation.limit(1).fetchall():
                    hint = " or map event types to grades with label_map=" if std == "label" else ""
                    raise InputError(f"{label}: column {quoted(given)} holds {column_type}, but {std} must be "
                                     f"numeric; cast it{hint}")
            elif std == "score" and not column_type.upper().startswith(_HELD_BY_DOUBLE):
                _check_scores_held(con, relation, kind, label, quote_identifier(mapping["query_id"]), expression, given)
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
    relation.project(", ".join(selected)).create_view(view)
    types = {std: available[given] for std, given in mapping.items()}
    if read.stdin:
        _STDIN["kinds"].add(kind)
    # A TREC text file is one run, as trec_eval reads it: its tags are kept (duckrank convert writes
    # them back) but do not split it; its name is its last line's tag.
    return Source(view, label, types, keep_run_id and not read.trec, read.name if kind == "run" else None,
                  inner_view, read.given)


def _check_scores_held(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, kind: str, label: str,
                       query_id: str, score: str, column: str) -> None:
    """Refuse integer or DECIMAL scores that are the same DOUBLE (ranking would tie them), before
    they are cast: the SQL library's own check over the scores as given, of one query in a run
    (duckrank.score_problems), anywhere in a log (duckrank.log_score_problems: its global AUC ranks
    every row together)."""
    _ensure_input_macros(con)
    view = fresh_name("scores")
    relation.project(f"{query_id} AS query_id, {score} AS score").create_view(view)
    check = "log_score_problems" if kind == "log" else "score_problems"
    problem = con.execute(f"SELECT duckrank.{check}({sql_text(view)}, column_name := {sql_text(column)})"
                          ).fetchall()[0][0]
    con.execute(f"DROP VIEW {view}").fetchall()
    if problem:
        raise InputError(problem.replace(f"{'log' if kind == 'log' else 'run'} {sql_text(view)}", label, 1))


def _long_run(con: duckdb.DuckDBPyConnection, relation: duckdb.DuckDBPyRelation, label: str,
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
                         f"a run as lists holds its ranking in one: keep one, or name it with doc_col=")
    else:
        if score not in types and not score_named and "rank" in types:
            mapping = {**mapping, "score": "rank"}
        return relation, mapping, None
    query = mapping["query_id"]
    if query not in types:
        raise InputError(f"{label} has no column {quoted(query)} (from query_col=) beside its list column "
                         f"{quoted(list_col)}; its columns are {', '.join(map(quoted, types))}; name yours with "
                         f"query_col=")
    entry = types[list_col].child
    doc_field, score_field = "duckrank_entry", None
    if entry.id == "struct":
        fields = [name for name, _ in entry.children]
        if doc not in fields:
            raise InputError(f"{label}: the entries of list column {quoted(list_col)} are structs with fields "
                             f"{', '.join(map(quoted, fields))} but no doc id field {quoted(doc)}; name it with "
                             f"doc_col=")
        if score_named and score not in fields:
            raise InputError(f"{label}: the entries of list column {quoted(list_col)} have no score field "
                             f"{quoted(score)} "
                             f"(their fields are {', '.join(map(quoted, fields))}); name it with score_col=, or "
                             f"leave score_col out to rank by list order")
        doc_field, score_field = doc, score if score in fields else None
        if score_field is not None and not str(dict(entry.children)[score_field]).upper().startswith(_NUMERIC):
            raise InputError(f"{label}: field {quoted(score_field)} of the entries of {quoted(list_col)} holds "
                             f"{dict(entry.children)[score_field]}, but a score must be numeric; cast it")
    elif entry.id in ("list", "map", "union", "array"):
        raise InputError(f"{label}: list column {quoted(list_col)} holds {types[list_col]}; a run as lists holds doc "
                         f"ids (LIST<VARCHAR> or LIST<INTEGER>) or structs with a doc id field")
    _ensure_input_macros(con)
    inner = fresh_name("lists")
    relation.create_view(inner)
    long = con.sql(f"SELECT * FROM duckrank.run_from_lists({sql_text(inner)}, list_col := {sql_text(list_col)}, "
                   f"query_col := {sql_text(query)}, doc_field := {sql_text(doc_field)}, "
                   f"score_field := {sql_text(score_field) if score_field else 'NULL'})")
    return long, {"query_id": "query_id", "doc_id": "doc_id", "score": "score"}, inner


def _ensure_input_macros(con: duckdb.DuckDBPyConnection) -> None:
    """The input macros and checks (sql/10_checks.sql, 15_inputs.sql) on a connection that has not the
    library (duckrank convert's)."""
    found = con.execute("SELECT count(*) FROM duckdb_functions() WHERE schema_name = 'duckrank' "
                        "AND function_name = 'run_from_lists'").fetchall()[0][0]
    if not found:
        from duckrank._library import sql_dir

        for name in ("00_schema.sql", "10_checks.sql", "15_inputs.sql"):
            con.execute((sql_dir() / name).read_text(encoding="utf-8")).fetchall()


def _label_expression(relation: duckdb.DuckDBPyRelation, label: str, available: dict[str, str],
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
            raise OptionError(f"label= names {len(labels)} event columns ({', '.join(labels)}): give each its grade "
                              f"with label_map=, e.g. {labels[0]}=3,{labels[1]}=1")
        unknown = [str(key) for key in label_map if key not in labels]
        if unknown:
            raise OptionError(f"label_map= key {', '.join(map(quoted, unknown))} is not one of the event columns "
                              f"given with label= ({', '.join(labels)}); with several label columns the map's keys "
                              f"are their names")
        ungraded = [name for name in labels if name not in label_map]
        if ungraded:
            raise OptionError(f"label_map= gives no grade to event column {', '.join(map(quoted, ungraded))}; "
                              f"add e.g. {ungraded[0]}=1")
        cases = []
        for name in labels:
            column = quote_identifier(name)
            if not available[name].upper().startswith(_NUMERIC):
                raise InputError(f"{label}: event column {quoted(name)} holds {available[name]}, but an event column "
                                 f"must be BOOLEAN or 0/1; cast it, or grade its values with one label= and label_map=")
            if available[name].upper() != "BOOLEAN":
                bad = relation.filter(f"{column} IS NOT NULL AND {column} NOT IN (0, 1)").limit(1).fetchall()
                if bad:
                    raise InputError(f"{label}: event column {quoted(name)} holds "
                                     f"{quoted(bad[0][relation.columns.index(name)])}, "
                                     f"but an event column must be BOOLEAN or 0/1; grade its values with one "
                                     f"label= and label_map= instead")
            cases.append(f"CASE WHEN CAST({column} AS BOOLEAN) THEN {float(label_map[name])!r} END")
        return f"coalesce(greatest({', '.join(cases)}), 0.0)"
    name = labels[0]
    column = quote_identifier(name)
    found = relation.aggregate(f"list(DISTINCT CAST({column} AS VARCHAR))").fetchall()[0][0] or []
    values = {value for value in found if value is not None}
    unmatched = [str(key) for key in label_map if str(key) not in values]
    if unmatched:
        shown = ", ".join(map(quoted, sorted(values)[:10])) + (", ..." if len(values) > 10 else "")
        raise InputError(f"{label}: label_map= key {', '.join(map(quoted, unmatched))} matches no value of "
                         f"label column "
                         f"{quoted(name)} (its values: {shown or 'none'}); fix the key, or, for event columns, give "
                         f"label= each column and key the map by their names")
    cases = " ".join(f"WHEN {sql_text(str(value))} THEN {float(grade)!r}" for value, grade in label_map.items())
    return f"CASE CAST({column} AS VARCHAR) {cases} ELSE 0.0 END"


def read_items(con: duckdb.DuckDBPyConnection, source: Any, *, doc_col: str | None = None,
               literal: bool | None = None) -> Source:
    """A view items(doc_id, features DOUBLE[]) over an item table: doc_id (renamed by doc_col) and
    either numeric feature columns, in their order, or one embedding column (a LIST or ARRAY of
    numbers). Every vector must be complete and as long as the others: a cosine needs both."""
    read = _relation(con, source, "items", None, literal)
    relation, label = read.relation, read.label
    available = dict(zip(relation.columns, (str(t) for t in relation.types)))
    doc = doc_col or "doc_id"
    if doc not in available:
        raise InputError(f"{label} has no column {quoted(doc)}; its columns are {', '.join(map(quoted, available))}; "
                         f"name yours with doc_col=")
    features = {name: kind for name, kind in available.items() if name != doc}
    vectors = [name for name, kind in features.items() if kind.upper().endswith("]")]
    if len(features) == 1 and vectors:
        expression = f"CAST({quote_identifier(vectors[0])} AS DOUBLE[])"
    else:
        bad = [name for name, kind in features.items() if not kind.upper().startswith(_NUMERIC)]
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
    relation.project(f"{doc_expression} AS doc_id, {expression} AS features").create_view(view)
    bad_row = con.sql(f"SELECT doc_id FROM {quote_identifier(view)} WHERE features IS NULL "
                      f"OR list_contains(list_transform(features, lambda v: v IS NULL OR NOT isfinite(v)), true) "
                      f"OR len(features) <> (SELECT max(len(features)) FROM {quote_identifier(view)}) LIMIT 1").fetchall()
    if bad_row:
        raise InputError(f"{label}: the features of doc_id {quoted(bad_row[0][0])} are missing, not finite, or not as "
                         f"long as the others; every item needs a complete feature vector of one length")
    return Source(view, label, {"doc_id": "VARCHAR" if doc_type.upper().startswith("ENUM") else doc_type})


def _check_trec_writable(con: duckdb.DuckDBPyConnection, relation: str, kind: str) -> None:
    """TREC text cannot hold an id with whitespace (it would split into other fields) and trec_eval
    reads a grade as an integer (0.5 would come back as 0): refuse those rows rather than write a
    file that reads back as different data."""
    grade = ("relevance IS NULL OR relevance <> trunc(relevance)" if kind == "qrels" else "false")
    row = con.execute(
        f"SELECT query_id, doc_id, {'relevance' if kind == 'qrels' else 'NULL'} FROM {relation} "
        f"WHERE regexp_matches(CAST(query_id AS VARCHAR), '[ \\t\\n\\r\\v\\f]') "
        f"OR regexp_matches(CAST(doc_id AS VARCHAR), '[ \\t\\n\\r\\v\\f]') "
        f"OR coalesce(CAST(query_id AS VARCHAR), '') = '' OR coalesce(CAST(doc_id AS VARCHAR), '') = '' "
        f"OR {grade} LIMIT 1").fetchall()
    if not row:
        return
    query_id, doc_id, relevance = row[0]
    if query_id in (None, "") or doc_id in (None, ""):  # the line would lose a field
        raise InputError(f"cannot write TREC text: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} is "
                         f"empty, which TREC "
                         "text cannot hold (the line would lose a field); fill in the id or write Parquet, CSV "
                         "or JSONL")
    if any(ch in str(value) for value in (query_id, doc_id) for ch in " \t\n\r\v\f"):
        raise InputError(f"cannot write TREC text: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} holds "
                         "whitespace, which TREC text reads as a field separator; write Parquet, CSV or JSONL")
    raise InputError(f"cannot write TREC qrels: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} has relevance "
                     f"{quoted(relevance)}, and trec_eval reads grades as integers (it would read "
                     f"{int(relevance) if relevance is not None and relevance == relevance else 'nothing'}); "
                     "round the grades or write Parquet, CSV or JSONL")


def write_table(con: duckdb.DuckDBPyConnection, view: str, path: str, fmt: str) -> None:
    """Write a standard-column view to `path` in `fmt` (TREC text in trec_eval's layouts)."""
    target = sql_text(path)
    relation = quote_identifier(view)
    if fmt == "parquet":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT parquet)").fetchall()
    elif fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else ","
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT csv, HEADER, DELIMITER '{sep}')").fetchall()
    elif fmt == "jsonl":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT json)").fetchall()
    elif fmt == "trec_run":
        _check_trec_writable(con, relation, "run")
        columns = [c for (c, *_rest) in con.execute(f"DESCRIBE {relation}").fetchall()]
        run_id = "run_id" if "run_id" in columns else "'duckrank'"
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 'Q0', doc_id, "
            f"row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), score, {run_id}) "
            f"FROM {relation} ORDER BY query_id, score DESC, doc_id DESC) TO {target} "
            f"(FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    elif fmt == "trec_qrels":
        _check_trec_writable(con, relation, "qrels")
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 0, doc_id, CASE WHEN relevance = round(relevance) "
            f"THEN CAST(CAST(relevance AS BIGINT) AS VARCHAR) ELSE CAST(relevance AS VARCHAR) END) FROM {relation} "
            f"ORDER BY query_id, doc_id) TO {target} (FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    else:
        raise OptionError(f"output format must be one of {', '.join(FORMATS)}; got {quoted(fmt)}")
