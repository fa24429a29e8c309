"""TREC text, read as trec_eval 10 reads it: DuckDB's parallel CSV reader for the common layout,
a line reader (Arrow's string kernels) for the rest, and C's atof and atol for the numbers."""

from __future__ import annotations

import glob
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb

from duckrank._library import memory_limit_bytes
from duckrank._sql import fresh_name, quote_identifier
from duckrank._sql import sql_literal
from duckrank.errors import InputError, quoted, quoted_path
from duckrank.inputs.columns import SUBTOPIC
from duckrank.inputs.paths import (GLOB_CHARACTERS, READ_ERRORS, Source, compression_of, error_line,
                                   first_data_line, head_of, open_bytes)

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
LAYOUTS = {  # the fields of a line, the numeric one, and the ones kept (in this order)
    "trec_run": (("query_id", "q0", "doc_id", "rank", "score", "run_id"), "score",
                 ("query_id", "doc_id", "score", "run_id")),
    "trec_qrels": (("query_id", "iteration", "doc_id", "relevance"), "relevance", ("query_id", "doc_id", "relevance")),
}
# TREC diversity qrels put the subtopic where ad-hoc qrels have the unused iteration: read as the
# subtopic when a diversity measure is asked for (ndeval's qrels), never otherwise.
_SUBTOPIC_FIELD = "iteration"
SHAPES = {"trec_run": "at least 6: query_id Q0 doc_id rank score run_id",
           "trec_qrels": "exactly 4: query_id iteration doc_id relevance"}
# The whole field as strtod reads it: a decimal number; inf, infinity or nan (any case); a C99 hex float.
DECIMAL = r"[+-]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][+-]?[0-9]+)?"
_SPECIAL = r"[+-]?([iI][nN][fF]([iI][nN][iI][tT][yY])?|[nN][aA][nN]([(][0-9A-Za-z_]*[)])?)"
HEX = r"[+-]?0[xX]([0-9a-fA-F]+[.]?[0-9a-fA-F]*|[.][0-9a-fA-F]+)([pP][+-]?[0-9]+)?"
# A relevance as atol reads it whole, but for a fraction it drops (as trec_eval does): '2', '+1', '1.7', '.5'.
INTEGER = r"[+-]?[0-9]+"
GRADE = r"[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)"


def _score_sql(text: str) -> str:
    """SQL for atof's value of the field `text` (an expression) when the whole field is a decimal
    number, inf or nan; NULL otherwise (a hex float included: the line reader converts those).
    DuckDB's CAST rounds a decimal string correctly, as glibc's strtod does."""
    return (f"CASE WHEN regexp_full_match({text}, '{DECIMAL}') THEN CAST({text} AS DOUBLE) "
            f"WHEN regexp_full_match({text}, '{_SPECIAL}') THEN CASE WHEN contains(lower({text}), 'a') "
            f"THEN 'nan'::DOUBLE WHEN starts_with({text}, '-') THEN '-inf'::DOUBLE ELSE 'inf'::DOUBLE END END")


def _grade_sql(text: str) -> str:
    """SQL for atol's value (as a DOUBLE) of the field `text` when the whole field is an integer, or
    a decimal fraction whose integer part atol reads; NULL otherwise, or past a BIGINT."""
    whole = f"regexp_extract({text}, '^[+-]?[0-9]*')"
    return (f"CAST(CASE WHEN regexp_full_match({text}, '{INTEGER}') THEN TRY_CAST({text} AS BIGINT) "
            f"WHEN regexp_full_match({text}, '{GRADE}') THEN CASE WHEN {whole} IN ('', '+', '-') THEN 0 "
            f"ELSE TRY_CAST({whole} AS BIGINT) END END AS DOUBLE)")


def _number_sql(fmt: str, text: str) -> str:
    return _score_sql(text) if fmt == "trec_run" else _grade_sql(text)


@dataclass(frozen=True)
class _Trec:
    """TREC text read into a TEMP TABLE, and a run's tag of its last line (trec_eval's runid)."""

    relation: duckdb.DuckDBPyRelation
    tag: str | None = None


def read_trec(con: duckdb.DuckDBPyConnection, source: Source, fmt: str, kind: str, subtopics: bool = False) -> _Trec:
    """TREC text: DuckDB's parallel CSV reader for the common layout of one file, else the line
    reader. With subtopics, qrels keep their second field as the subtopic column."""
    subtopics = subtopics and fmt == "trec_qrels"
    # a glob goes to the line reader, which reads each of its files by its name
    fast = None if source.is_glob else _read_trec_fast(con, source.duckdb_path, fmt, source.compression, subtopics)
    return fast if fast is not None else _read_trec_lines(con, source.duckdb_path, fmt, kind, source.shown, subtopics)


def _kept_columns(kept: tuple[str, ...], subtopics: bool) -> str:
    """The SELECT list of a TREC file's kept fields (with the subtopic, when asked for)."""
    columns = [quote_identifier(n) for n in kept]
    if subtopics:
        columns.append(f"{quote_identifier(_SUBTOPIC_FIELD)} AS {SUBTOPIC}")
    return ", ".join(columns)

def _plain_bytes(path: str, sep: str) -> bool:
    """Whether `path` is one local, uncompressed file holding no C whitespace but the separator and
    '\\n', no NUL, and no line that starts with '#'. Then every field DuckDB's CSV reader splits off
    is a field trec_eval splits off too, and no line is a comment, so the per-row checks reduce to
    'no field is empty'. A byte scan: about 0.2 s for 250 MB, against about 0.8 s of CPU for the
    per-row checks it saves."""
    if GLOB_CHARACTERS.search(path) or compression_of(path) is not None:
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
    """The file (one file, not a glob) in a TEMP TABLE written by DuckDB's parallel CSV reader, or
    None if any line is not the common layout, so that the caller falls back to the line reader
    (whose message names the bad line). Nothing is returned before the whole file has been read and
    checked.

    The fast path accepts only files that read here as trec_eval reads them, field for field:
    every non-blank line has exactly the layout's fields, one space (or one tab) apart (strict
    mode: a seventh run field, a double or leading separator, a lone carriage return fail); no
    field is empty (the CSV reader makes an empty field NULL); no field but the value holds a C
    whitespace character or NUL; no line starts with '#'; the value, less the whitespace around
    it (trec_eval's own runs pad their scores), is a number in full as _score_sql or _grade_sql
    reads it, and for a run finite (the line reader names a score atof reads as inf or nan); the file
    has no byte-order mark (which the CSV reader drops and trec_eval keeps)."""
    head = head_of(path, compression)
    if head.startswith(_BOM):
        return None
    names, value, kept = LAYOUTS[fmt]
    sep = "\t" if b"\t" in first_data_line(head) else " "
    plain = compression is None and _plain_bytes(path, sep)
    raw = quote_identifier(value)
    if plain:
        text = raw
        checks = [f"{quote_identifier(n)} IS NOT NULL" for n in names if n != value]
        joined = ""
    else:  # the other fields joined once (NULL if any is empty), then searched for each character
        text = f"trim({raw}, {sql_literal(_C_SPACE)})"
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
    columns = ", ".join(f"{sql_literal(n)}: 'VARCHAR'" for n in names)
    table = fresh_name("trec")
    try:
        con.execute(
            f"CREATE TEMP TABLE {table} AS SELECT {selected}{', ordinality AS duckrank_line' if ordered else ''} "
            f"FROM (SELECT *{joined}, {_number_sql(fmt, 'duckrank_text')} AS duckrank_number "
            f"FROM (SELECT *, {text} AS duckrank_text "
            f"FROM read_csv({sql_literal(path)}, delim={sql_literal(sep)}, quote='', escape='', comment='', "
            f"header=false, auto_detect=false, strict_mode=true, null_padding=false, ignore_errors=false, "
            f"compression={sql_literal(compression or 'none')}, columns={{{columns}}}){' WITH ORDINALITY' if ordered else ''}))"
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
        with open_bytes(path, compression) as stream:
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
    except READ_ERRORS as error:
        how = f" as {compression}" if compression else ""
        raise InputError(f"cannot read {kind} file {shown}{how}: {error_line(error)}; check the file") from None


def _line_around(data: bytes, offset: int) -> bytes:
    """The line of `data` that holds the byte at `offset`, for a message."""
    end = data.find(b"\n", offset)
    return data[data.rfind(b"\n", 0, offset) + 1:end if end >= 0 else len(data)]


def _read_trec_lines(con: duckdb.DuckDBPyConnection, path: str, fmt: str, kind: str,
                     shown: str | None = None, subtopics: bool = False) -> _Trec:
    """TREC text as trec_eval reads it, line by line (Arrow's vectorised string kernels split the
    lines and fields), or an InputError naming the file, the line and what is wrong with it (a score
    atof reads as inf or nan among those: duckrank scores finite numbers only)."""
    # a path read literally comes as a plain name (exact_path): glob characters mean a glob
    files = sorted(glob.glob(path, recursive=True)) if GLOB_CHARACTERS.search(path) else [path]
    _fields, value, kept = LAYOUTS[fmt]
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
            for line, chunk in _chunks(file, compression_of(file), kind, name, piece):
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
                                f"WHERE regexp_full_match(duckrank_text, '{HEX}')").fetchall()
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
                         f"fields, but a TREC {fmt.removeprefix('trec_')} line has {SHAPES[fmt]} "
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
    if fmt == "trec_run" and re.fullmatch(f"{DECIMAL}|{_SPECIAL}|{HEX}", text) and not math.isfinite(value):
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
    if re.fullmatch(GRADE, text):
        return (f"{where}: the relevance {quoted(text)} is too large (C's atol would silently take "
                f"{_c_atol(text)}); write the grade as a small integer")
    return (f"{where}: the relevance {quoted(text)} is not an integer as trec_eval reads it: C's atol would silently "
            f"take {_c_atol(text)}; write the grade as an integer such as 0, 1 or 2")
