"""Reading TREC text: the line reader reads what trec_eval 10 reads (checked against a port of
trec_eval's own parsers, with C's strtod and strtol from the C library); the fast path (DuckDB's
parallel CSV reader into a TEMP TABLE) reads every file it accepts exactly as the line reader does,
and leaves every other file to the line reader, which reads it or names its bad line."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import re

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import examples

import duckrank
from duckrank import inputs
from duckrank.inputs import trec
from duckrank.errors import InputError

KIND = {"trec_run": "run", "trec_qrels": "qrels"}


def _write(tmp_path, text: str | bytes, name: str = "input.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def _rows(relation: duckdb.DuckDBPyRelation) -> tuple[list[str], list[str], list[tuple]]:
    # repr keeps what == hides: -0.0 against 0.0, nan against nan
    return relation.columns, [str(t) for t in relation.types], [tuple(map(repr, row)) for row in relation.fetchall()]


def _fast(path: str, fmt: str):
    con = duckdb.connect()
    read = trec._read_trec_fast(con, path, fmt)
    return None if read is None else _rows(read.relation)


def _lines(path: str, fmt: str):
    con = duckdb.connect()
    return _rows(trec._read_trec_lines(con, path, fmt, KIND[fmt]).relation)


def _read_table(path: str, fmt: str):
    con = duckdb.connect()
    source = inputs.read_table(con, path, KIND[fmt], fmt=fmt)
    return _rows(con.sql(f"SELECT * FROM {source.view}"))


RUN = "q1 Q0 d1 1 2.5 myrun\nq1 Q0 d2 2 1.5 myrun\nq2 Q0 d1 1 0.5 myrun\n"
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n"

# Files in the common layout: the fast path must read them, and read them as the line reader does.
FAST = {
    "run, single spaces": ("trec_run", RUN),
    "run, single tabs": ("trec_run", RUN.replace(" ", "\t")),
    "run, scientific scores": ("trec_run", "q1 Q0 d1 1 1e-3 r\nq1 Q0 d2 2 -2.5E+2 r\nq1 Q0 d3 3 +.5 r\n"
                                           "q1 Q0 d4 4 5. r\nq1 Q0 d5 5 -0 r\nq1 Q0 d6 6 1e2 r\n"),
    "run, odd scores": ("trec_run", "q1 Q0 d5 5 00012 r\nq1 Q0 d7 7 2e-324 r\nq1 Q0 d8 8 1e308 r\n"),
    "run, integer-looking ids": ("trec_run", "10 Q0 9 1 3 7\n9 Q0 010 2 2 7\n010 0 1.0 3 1 7\n"),
    "run, ids that look like NULL, quotes or comments": ("trec_run", "NULL Q0 null 1 3 NULL\nq#1 Q0 \"d'1\\ 2 1 #\n"),
    "run, CRLF": ("trec_run", RUN.replace("\n", "\r\n")),
    "run, CRLF with tabs": ("trec_run", RUN.replace(" ", "\t").replace("\n", "\r\n")),
    "run, blank trailing line": ("trec_run", RUN + "\n"),
    "run, blank lines between": ("trec_run", "\n" + RUN.replace("\n", "\n\n")),
    "run, no final newline": ("trec_run", RUN.rstrip("\n")),
    "run, one trailing separator": ("trec_run", RUN.replace("\n", " \n")),
    "run, one trailing separator before CRLF on one line": ("trec_run", "q1\tQ0\td1\t1\t2.5\tr\n"
                                                                     "q1\tQ0\td2\t2\t1.5\tr\t\r\n"),
    "run, non-ASCII ids": ("trec_run", "q\u00e9 Q0 d\u00a0x 1 2 r\u00fcn\nq\u00e9 Q0 \u6587 2 1 r\u00fcn\n"),
    # C's isspace() knows ASCII only: these are parts of fields for trec_eval too
    "run, no-break space before the line": ("trec_run", "\u00a0q1 Q0 d1 1 2.5 r\n"),
    "run, ideographic space after the line": ("trec_run", "q1 Q0 d1 1 2.5 r\u3000\n"),
    "run, \\x01 inside an id": ("trec_run", "q1 Q0 d\x011 1 2.5 r\n"),
    "run, tab-separated with padded scores (trec_eval's own layout)": (
        "trec_run", "301\tQ0\tFR940202-2-00150\t104\t  2.129133\tSTANDARD\n301\tQ0\tFR9\t4\t 12\tSTANDARD\n"),
    "qrels, single spaces": ("trec_qrels", QRELS),
    "qrels, single tabs": ("trec_qrels", QRELS.replace(" ", "\t")),
    "qrels, graded, negative and fractional": ("trec_qrels", "q1 0 d1 -1\nq1 0 d2 0.5\nq1 Q0 d3 +2\nq1 0 d4 1.7\n"
                                                             "q1 0 d5 -1.7\nq1 0 d6 .5\nq1 0 d7 -0\nq1 0 d8 2.\n"),
    "qrels, CRLF and blank trailing line": ("trec_qrels", QRELS.replace("\n", "\r\n") + "\r\n"),
    "qrels, integer-looking ids": ("trec_qrels", "10 0 9 1\n9 0 010 0\n"),
}

# Files the fast path must leave to the line reader, which reads them as trec_eval does.
FALLBACK = {
    "run, mixed spaces and tabs": ("trec_run", "q1 Q0\td1 1 2.5 r\nq1\tQ0 d2 2 1.5 r\n"),
    "run, two spaces": ("trec_run", "q1  Q0 d1 1 2.5 r\n"),
    "run, leading space": ("trec_run", " q1 Q0 d1 1 2.5 r\n"),
    "run, leading tab": ("trec_run", "\tq1 Q0 d1 1 2.5 r\n"),
    "run, seventh field": ("trec_run", "q1 Q0 d1 1 2.5 r extra\nq1 Q0 d2 2 1.5 r more fields\n"),
    "run, tab at the end of a space-separated line": ("trec_run", "q1 Q0 d1 1 2.5 r\t\n"),
    "run, space inside a tab-separated line": ("trec_run", "q1\tQ0\td1\t1\t2.5\tr x\n"),
    "run, form feed between fields": ("trec_run", "q1 Q0\fx d1 1 2.5 r\n"),
    "run, vertical tab inside what looks like an id": ("trec_run", "q1 Q0 d\x0b1 1 2 r\n"),
    "run, lone carriage return between fields": ("trec_run", "q1 Q0 d1\r1 2.5 r\n"),
    "run, spaces-only line": ("trec_run", "q1 Q0 d1 1 2.5 r\n   \nq1 Q0 d2 2 1.5 r\n"),
    "run, first line tab-separated, the rest spaces": ("trec_run", "q1\tQ0\td1\t1\t2.5\tr\nq1 Q0 d2 2 1.5 r\n"),
    "run, comments": ("trec_run", "# a run\nq1 Q0 d1 1 2.5 r\n  # indented\n#q1 Q0 d2 2 9 r\nq1 Q0 d2 2 1.5 r\n#end"),
    "run, hex float scores": ("trec_run", "q1 Q0 d1 1 0x10 r\nq1 Q0 d2 2 -0X1.8P-1 r\nq1 Q0 d3 3 0x.8 r\n"),
    "run, mixed line endings": ("trec_run", "q1 Q0 d1 1 2.5 r\nq1 Q0 d2 2 1.5 r\r\n"),
    "run, value and tag glued by a vertical tab": ("trec_run", "q1 Q0 d1 1 2.5\x0br x\n"),
    "qrels, double tab": ("trec_qrels", "q1\t\t0\td1\t1\n"),
    "qrels, comment lines": ("trec_qrels", "# judged by x\nq1 0 d1 1\n# more\nq1 0 d2 0\n# last"),
    "qrels, blank and whitespace lines": ("trec_qrels", "\nq1 0 d1 1\n \t \nq1 0 d2 0\n\n"),
    "qrels, an indented '#' is a judgment": ("trec_qrels", " #q 0 d1 1\n"),
}

# What each fallback case reads (query_id, doc_id, value[, tag]), as trec_eval reads it.
FALLBACK_READS = {
    "run, vertical tab inside what looks like an id": [("q1", "d", 1.0, "2")],
    "run, lone carriage return between fields": [("q1", "d1", 2.5, "r")],
    "run, comments": [("q1", "d1", 2.5, "r"), ("q1", "d2", 1.5, "r")],
    "run, hex float scores": [("q1", "d1", 16.0, "r"), ("q1", "d2", -0.75, "r"), ("q1", "d3", 0.5, "r")],
    "run, value and tag glued by a vertical tab": [("q1", "d1", 2.5, "r")],
    "run, form feed between fields": [("q1", "x", 1.0, "2.5")],
    "qrels, comment lines": [("q1", "d1", 1.0), ("q1", "d2", 0.0)],
    "qrels, an indented '#' is a judgment": [("#q", "d1", 1.0)],
}

# Lines the line reader rejects, naming the file, the line and what is wrong.
BAD = {
    "run, score not a number": ("trec_run", RUN + "q3 Q0 d9 1 high myrun\n", 4,
                                "the score 'high' is not a number as trec_eval reads it: C's atof would silently take 0"),
    "run, score with an underscore": ("trec_run", RUN + "q3 Q0 d9 1 1_000 myrun\n", 4,
                                      "the score '1_000' is not a number as trec_eval reads it: C's atof would "
                                      "silently take 1"),
    "run, five fields": ("trec_run", "q1 Q0 d0 1 3 r\nq3 Q0 d9 1 2.0\n" + RUN, 2,
                         "'q3 Q0 d9 1 2.0' has 5 fields, but a TREC run line has at least 6: query_id Q0 doc_id "
                         "rank score run_id (trec_eval stops at it: 'Malformed line')"),
    "run, trailing space leaves five fields": ("trec_run", RUN + "q3 Q0 d9 1 2.0 \n", 4, "'q3 Q0 d9 1 2.0 ' has 5 fields"),
    # atof reads these as inf or nan, and trec_eval ranks them; duckrank scores finite numbers only (issue 26)
    "run, a score past a double's range": ("trec_run", RUN + "q3 Q0 d9 1 1e400 myrun\n", 4,
                                           "the score '1e400' is beyond a double's range: C's atof reads it as inf, "
                                           "which trec_eval ranks above every finite score; duckrank scores finite "
                                           "numbers only: write a score within ±1.7976931348623157e308 (the largest "
                                           "double), e.g. 1.7976931348623157e308 to rank the doc first"),
    "run, a negative score past a double's range, tab-separated and padded": (
        "trec_run", "q1\tQ0\td1\t1\t  -1e400\tr\n", 1,
        "the score '-1e400' is beyond a double's range: C's atof reads it as -inf, which trec_eval ranks below every "
        "finite score; duckrank scores finite numbers only: write a score within ±1.7976931348623157e308 (the largest "
        "double), e.g. -1.7976931348623157e308 to rank the doc last"),
    "run, a hex score past a double's range": ("trec_run", "q1 Q0 d4 4 0x1p99999 r\n", 1,
                                               "the score '0x1p99999' is beyond a double's range: C's atof reads it "
                                               "as inf"),
    "run, an infinite score": ("trec_run", "q1 Q0 d1 1 2 r\nq1 Q0 d2 2 -Infinity r\n", 2,
                               "the score '-Infinity' is infinite, which trec_eval ranks below every finite score"),
    "run, a NaN score": ("trec_run", "q1 Q0 d3 3 NaN(x_1) r\n", 1,
                         "the score 'NaN(x_1)' is NaN as C's atof reads it, which trec_eval's sort places "
                         "arbitrarily; duckrank scores finite numbers only: write a number such as 12.5, or remove "
                         "the line"),
    "qrels, three fields": ("trec_qrels", QRELS + "q3 0 d9\n", 4, "'q3 0 d9' has 3 fields, but a TREC qrels line has "
                                                                  "exactly 4"),
    "qrels, fifth field": ("trec_qrels", QRELS + "q3 0 d9 1 extra\n", 4, "'q3 0 d9 1 extra' has 5 fields"),
    "qrels, relevance not a number": ("trec_qrels", QRELS.replace("\n", "\r\n") + "q3 0 d9 yes\r\n", 4,
                                      "the relevance 'yes' is not an integer as trec_eval reads it: C's atol would "
                                      "silently take 0"),
    "qrels, relevance with an exponent": ("trec_qrels", QRELS + "q3 0 d9 1e2\n", 4,
                                          "the relevance '1e2' is not an integer as trec_eval reads it: C's atol "
                                          "would silently take 1"),
    "qrels, relevance past a long": ("trec_qrels", QRELS + "q3 0 d9 99999999999999999999\n", 4,
                                     "the relevance '99999999999999999999' is too large (C's atol would silently "
                                     "take 9223372036854775807)"),
    "qrels, two comment lines in a row": ("trec_qrels", "# one\n#two 0 d1 1\n" + QRELS, 2,
                                          "a '#' line right after another"),
}


@pytest.mark.parametrize("case", FAST)
def test_fast_path_reads_the_common_layout_as_the_line_reader_does(tmp_path, case):
    fmt, text = FAST[case]
    path = _write(tmp_path, text)
    fast = _fast(path, fmt)
    assert fast is not None, "the common layout must take the fast path"
    assert fast == _lines(path, fmt)
    assert _read_table(path, fmt)[2] == fast[2]


@pytest.mark.parametrize("case", FAST)
def test_byte_scan_shortcut_agrees_with_the_per_row_checks(tmp_path, monkeypatch, case):
    """A plain file skips the per-row character checks; checking every row reads it the same."""
    fmt, text = FAST[case]
    path = _write(tmp_path, text)
    shortcut = _fast(path, fmt)
    monkeypatch.setattr(trec, "_plain_bytes", lambda *args: False)
    assert _fast(path, fmt) == shortcut


@pytest.mark.parametrize(("text", "sep", "name", "plain"), [
    (RUN, " ", "run.txt", True),
    (RUN.replace(" ", "\t"), "\t", "run.txt", True),
    ("q\u00e9 Q0 d1 1 2.5 r\n", " ", "run.txt", True),  # bytes past ASCII are field bytes, for trec_eval too
    ("q1 Q0 d\x011 1 2.5 r\n", " ", "run.txt", True),
    (RUN, " ", "run.txt.gz", True),  # plain text, whatever its name says
    ("q1\tQ0\td1\t1\t  2.129133\tSTANDARD\n", "\t", "run.txt", False),  # trec_eval's layout: padded scores
    (RUN.replace("\n", "\r\n"), " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\t\n", " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\f\n", " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\x0b\n", " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\x00\n", " ", "run.txt", False),
    ("#c\n" + RUN, " ", "run.txt", False),
    (RUN + "#c\n", " ", "run.txt", False),
    (RUN, " ", "run[1].txt", False),  # DuckDB would read it as a glob
])
def test_byte_scan_shortcut_is_taken_only_for_plain_files(tmp_path, text, sep, name, plain):
    assert trec._plain_bytes(_write(tmp_path, text, name), sep) is plain


def test_byte_scan_sees_a_comment_at_a_chunk_boundary(tmp_path):
    line = "q1 Q0 d1 1 2.5 r\n"
    text = line * ((1 << 22) // len(line) + 1)
    cut = (1 << 22) - (1 << 22) % len(line)  # a line starts right at the second chunk
    path = _write(tmp_path, text[:cut] + "#" + text[cut + 1:])
    assert not trec._plain_bytes(path, " ")


def test_empty_field_deep_in_a_plain_file_fails_the_fast_path(tmp_path):
    path = tmp_path / "run.txt"
    good = [f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run\n" for i in range(200_000)]
    path.write_text("".join(good) + "q9999 Q0  1 2.5 r\n" + "".join(good[:1000]))
    assert trec._plain_bytes(str(path), " ")
    assert trec._read_trec_fast(duckdb.connect(), str(path), "trec_run") is None
    with pytest.raises(InputError, match="line 200001: 'q9999 Q0  1 2.5 r' has 5 fields"):  # as trec_eval: Malformed
        inputs.read_table(duckdb.connect(), str(path), "run")


def test_fast_path_keeps_ids_as_strings_and_values_as_doubles(tmp_path):
    path = _write(tmp_path, "10 Q0 9 1 1e-3 7\n9 Q0 010 2 -2.5E+2 7\n")
    columns, types, rows = _fast(path, "trec_run")
    assert columns == ["query_id", "doc_id", "score", "run_id"]
    assert types == ["VARCHAR", "VARCHAR", "DOUBLE", "VARCHAR"]
    assert rows == [("'10'", "'9'", "0.001", "'7'"), ("'9'", "'010'", "-250.0", "'7'")]


@pytest.mark.parametrize("case", FALLBACK)
def test_other_layouts_fall_back_to_the_line_reader(tmp_path, case):
    fmt, text = FALLBACK[case]
    path = _write(tmp_path, text)
    assert _fast(path, fmt) is None, "this layout must not take the fast path"
    read = _read_table(path, fmt)[2]
    assert read == _lines(path, fmt)[2]
    if case in FALLBACK_READS:
        assert read == [tuple(map(repr, row)) for row in FALLBACK_READS[case]]


def test_seventh_field_is_ignored_as_trec_eval_does(tmp_path):
    path = _write(tmp_path, "q1 Q0 d1 1 2.5 r extra\nq1 Q0 d2 2 1.5 r\n")
    assert _read_table(path, "trec_run")[2] == [("'q1'", "'d1'", "2.5", "'r'"), ("'q1'", "'d2'", "1.5", "'r'")]


@pytest.mark.parametrize("case", BAD)
def test_bad_line_is_named(tmp_path, case):
    fmt, text, line, problem = BAD[case]
    path = _write(tmp_path, text)
    kind = KIND[fmt]
    assert _fast(path, fmt) is None
    with pytest.raises(InputError) as raised:
        _read_table(path, fmt)
    assert str(raised.value).startswith(f"{kind} file {path!r}, line {line}: "), str(raised.value)
    assert problem in str(raised.value)


def test_read_table_takes_the_fast_path_for_the_common_layout(tmp_path, monkeypatch):
    """A regression that silently always fell back would pass every equality test above: here the
    line reader is not allowed to run at all."""
    def no_line_reader(*args, **kwargs):
        raise AssertionError("the common layout fell back to the line reader")

    monkeypatch.setattr(trec, "_read_trec_lines", no_line_reader)
    for fmt, text in (("trec_run", RUN), ("trec_qrels", QRELS), ("trec_run", RUN.replace(" ", "\t"))):
        path = _write(tmp_path, text)
        con = duckdb.connect()
        source = inputs.read_table(con, path, KIND[fmt])  # the format detected from the first line
        assert con.sql(f"SELECT count(*) FROM {source.view}").fetchall() == [(3,)]
        assert source.name == ("myrun" if fmt == "trec_run" else None)


def test_read_table_falls_back_for_other_layouts(tmp_path, monkeypatch):
    calls = []
    line_reader = trec._read_trec_lines

    def counting(*args, **kwargs):
        calls.append(args[1])
        return line_reader(*args, **kwargs)

    monkeypatch.setattr(trec, "_read_trec_lines", counting)
    path = _write(tmp_path, "q1  Q0 d1 1 2.5 r\n")
    inputs.read_table(duckdb.connect(), path, "run")
    assert calls == [path]


@pytest.mark.parametrize("fast", [True, False])
def test_reading_is_materialised_before_read_table_returns(tmp_path, monkeypatch, fast):
    """The file is read once, in full, into a TEMP TABLE: the view outlives the file."""
    if not fast:
        monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    con = duckdb.connect()
    source = inputs.read_table(con, str(path), "run")
    path.unlink()
    assert con.sql(f"SELECT count(*), sum(score) FROM {source.view}").fetchall() == [(3, 4.5)]
    temp_tables = con.sql("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    assert [name for (name,) in temp_tables if name.startswith("duckrank_trec_")]
    assert not [name for (name,) in temp_tables if name.startswith("duckrank_trec_lines_")]  # staging is dropped


def test_bad_line_deep_in_a_large_file_leaves_no_rows_behind(tmp_path):
    """A bad line far past the first CSV buffers (read by another thread) still fails the fast
    path as a whole, and the line reader then names it."""
    path = tmp_path / "run.txt"
    good = [f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run\n" for i in range(300_000)]
    path.write_text("".join(good) + "q9999 Q0 d1 1 2.5\tr\n" + "".join(good[:1000]) + "q9999 Q0 oops\n")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    tables_before = con.sql("SELECT count(*) FROM duckdb_tables()").fetchall()
    assert trec._read_trec_fast(con, str(path), "trec_run") is None
    assert con.sql("SELECT count(*) FROM duckdb_tables()").fetchall() == tables_before
    with pytest.raises(InputError, match="line 301002: 'q9999 Q0 oops' has 3 fields"):
        inputs.read_table(con, str(path), "run")
    assert con.sql("SELECT count(*) FROM duckdb_tables()").fetchall() == tables_before


def test_large_file_takes_the_fast_path_and_matches_the_line_reader(tmp_path, monkeypatch):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run{i % 3}\n"
                            for i in range(200_000)))
    monkeypatch.setattr(trec, "_CHUNK", 1 << 20)  # the line reader reads it in several pieces
    con = duckdb.connect()
    fast = trec._read_trec_fast(con, str(path), "trec_run")
    assert fast is not None
    lines = trec._read_trec_lines(con, str(path), "trec_run", "run")
    assert fast.relation.fetchall() == lines.relation.fetchall()  # row for row, in file order
    assert fast.tag == lines.tag == "run1"  # line 200000's


def test_line_numbers_count_across_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(trec, "_CHUNK", 1000)
    lines = [f"q1 Q0 d{i} 1 {i} r\n" for i in range(500)]
    lines[437] = "q1 Q0 d437 1 4_37 r\n"
    path = _write(tmp_path, "".join(lines))
    with pytest.raises(InputError, match="line 438: the score '4_37'"):
        trec._read_trec_lines(duckdb.connect(), path, "trec_run", "run")


def test_evaluate_gives_the_same_numbers_on_either_path(tmp_path, monkeypatch):
    qrels = _write(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d4 1\n", "qrels.txt")
    run = _write(tmp_path, "q1 Q0 d1 1 3.0 r\nq1 Q0 d3 2 2.0 r\nq1 Q0 d9 3 1.0 r\nq2 Q0 d4 1 1e-3 r\n"
                           "q2 Q0 d1 2 -2.5E+2 r\n", "run.txt")
    measures = ["map", "ndcg", "P.2", "recip_rank"]
    fast = duckrank.evaluate(qrels, run, measures)
    monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
    assert duckrank.evaluate(qrels, run, measures) == fast


@pytest.mark.parametrize("sep", [" ", "\t"])
def test_whitespace_around_the_value_reads_as_the_line_reader_reads_it(tmp_path, sep):
    """The fast path trims C's whitespace from around the value (trec_eval's runs pad their scores):
    wherever it then accepts a line, the line reader reads the same."""
    chars = [chr(c) for c in range(1, 33) if c != 10] + ["\x7f", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff"]
    con = duckdb.connect()
    fast_reads = 0
    for fmt, template in (("trec_run", "q1{s}Q0{s}d1{s}1{s}{v}{s}r\n"), ("trec_qrels", "q1{s}0{s}d1{s}{v}\n")):
        for char in chars:
            for value in (char + "1.5", "1.5" + char, "1" + char + "5", char * 2 + "2", "2" + char * 2):
                path = _write(tmp_path, template.format(s=sep, v=value))
                fast = trec._read_trec_fast(con, path, fmt)
                if fast is not None:
                    fast_reads += 1
                    assert _rows(fast.relation) == _lines(path, fmt), repr(value)
    assert fast_reads >= 10


# ---------------------------------------------------------------------------------------------
# the oracle: trec_eval 10's get_trec_results.c and get_qrels.c, line for line, in Python


def _c_library():
    name = ctypes.util.find_library("c")
    try:
        library = ctypes.CDLL(name)
    except OSError:
        return None
    library.strtod.restype = ctypes.c_double
    library.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]
    library.strtol.restype = ctypes.c_long
    library.strtol.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int]
    return library


LIBC = _c_library()


def _c_read(field: bytes, integer: bool) -> tuple[float, int]:
    """C's strtod (atof) or strtol (atol) of `field`: the value and how many bytes it read."""
    buffer = ctypes.create_string_buffer(field)
    end = ctypes.c_char_p()
    value = LIBC.strtol(buffer, ctypes.byref(end), 10) if integer else LIBC.strtod(buffer, ctypes.byref(end))
    return float(value), ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buffer)


C_SPACE = b" \t\n\v\f\r"


class Refused(Exception):
    """A file duckrank must refuse: trec_eval fails on it, or reads a number from junk."""


def trec_eval_reads(data: bytes, fmt: str) -> list[tuple]:
    """The rows trec_eval reads, as duckrank should read them: trec_eval's own parse, plus
    duckrank's documented choices (blank qrels lines and a final qrels comment skipped; a NUL, a
    byte-order mark, a qrels comment right after another, a value C reads only a prefix of, a score it
    reads as inf or nan: Refused)."""
    if b"\0" in data or data.startswith(b"\xef\xbb\xbf"):
        raise Refused("NUL or BOM")
    rows = []
    previous_comment = False
    for line in data.split(b"\n"):  # the buffer's final '\n' (appended if missing) ends the last line
        if fmt == "trec_qrels":
            if line.startswith(b"#"):  # 'if (*ptr == '#')' at the start of a line only
                if previous_comment:
                    raise Refused("trec_eval reads a second comment line as a judgment")
                previous_comment = True
                continue
            previous_comment = False
            fields = line.split()  # bytes.split(): C's isspace() set
            if not fields:
                continue  # trec_eval: 'Malformed line'; duckrank skips it
            if len(fields) != 4:
                raise Refused("Malformed line")
            value, read = _c_read(fields[3], integer=True)
            text = fields[3].decode()
            fraction = re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", text)  # atol stops at the point: a fraction drops
            if not (read == len(fields[3]) or fraction) or abs(value) >= 2 ** 63 - 1:
                raise Refused("relevance")
            rows.append((fields[0].decode(), fields[2].decode(), value))
        else:
            stripped = line.lstrip(C_SPACE)
            if not stripped.strip(C_SPACE) or stripped.startswith(b"#"):
                continue
            fields = stripped.split()
            if len(fields) < 6:
                raise Refused("Malformed line")
            value, read = _c_read(fields[4], integer=False)
            if read != len(fields[4]) or not math.isfinite(value):
                raise Refused("score")
            rows.append((fields[0].decode(), fields[2].decode(), value, fields[5].decode()))
    return rows


def _reads(rows: list[tuple]) -> list[tuple]:
    return [tuple(map(repr, row)) for row in rows]


FIELD = st.text(st.sampled_from(["q", "d", "1", "0", ".", "e", "-", "x", "#", '"', "\u00e9", "\u00a0", "\u3000",
                                 "\x0b", "\f", "\t", " ", "\r", "\x01"]), min_size=0, max_size=3)
CLEAN = st.sampled_from(["q1", "Q0", "d7", "3", "0", "run", "10", "010", "#q"])
VALUE = st.sampled_from(["1", "2.5", "-2.5E+2", "1e-3", "inf", "-Infinity", "nan", "1_0", "x", "", " 1", "1\t", "1\f",
                         "1\x0b", "\u00a01", "1\u00a0", "1 2", "0x10", "0x1.8p1", "1e", "+.5", "5.", "-0", "1.7",
                         ".5", "3abc", "00012", "1e400", "2e-324", "99999999999999999999"])
LINE = st.sampled_from(["", " ", "\t", "# a comment", "#q1 Q0 d1 1 2 r", " #x 0 d 1", "\r"])


@pytest.mark.skipif(LIBC is None, reason="C's strtod and strtol, which the oracle calls, are not loadable here")
def test_the_line_reader_reads_what_trec_eval_reads_and_the_fast_path_agrees(tmp_path_factory):
    counts = {"read": 0, "refused": 0, "fast": 0}

    cases = examples(300)

    @settings(max_examples=cases)
    @given(st.data())
    def check(data):
        fmt = data.draw(st.sampled_from(["trec_run", "trec_qrels"]))
        sep = data.draw(st.sampled_from([" ", "\t", "  ", " \t", "\x0b"]))
        ending = data.draw(st.sampled_from(["\n", "\r\n"]))
        width = 6 if fmt == "trec_run" else 4
        lines = []
        for _ in range(data.draw(st.integers(1, 4))):
            if data.draw(st.integers(0, 5)) == 0:
                lines.append(data.draw(LINE))
                continue
            count = data.draw(st.sampled_from([width] * 6 + [width - 1, width + 1]))
            fields = [data.draw(CLEAN if data.draw(st.integers(0, 7)) else FIELD) for _ in range(count)]
            if data.draw(st.booleans()):
                fields[min(width - 2 if fmt == "trec_run" else width - 1, len(fields) - 1)] = data.draw(VALUE)
            lines.append(data.draw(st.sampled_from(["", "", " ", "\t"])) + sep.join(fields))
        text = ending.join(lines) + data.draw(st.sampled_from(["", ending, ending * 2]))
        path = _write(tmp_path_factory.mktemp("trec"), text)
        try:
            expected = _reads(trec_eval_reads(text.encode(), fmt))
        except Refused:
            expected = None
        try:
            got = _lines(path, fmt)[2]
        except InputError:
            got = None
        assert got == expected, repr(text)
        counts["read" if got is not None else "refused"] += 1
        fast = _fast(path, fmt)
        if fast is not None:
            counts["fast"] += 1
            assert fast[2] == expected, repr(text)

    check()
    assert min(counts.values()) >= cases // 30, counts  # reads, refusals and the fast path are all exercised


@pytest.mark.skipif(LIBC is None, reason="C's strtod, the reference, is not loadable here")
def test_duckdb_reads_every_decimal_score_as_strtod_does():
    """The fast path and the line reader take a decimal score's value from DuckDB's CAST: it must
    round as glibc's strtod does, long mantissas, subnormals and overflow included."""
    @settings(max_examples=examples(50))
    @given(st.lists(st.from_regex(trec.DECIMAL, fullmatch=True), min_size=50, max_size=50),
           st.lists(st.tuples(st.integers(1, 40), st.integers(-340, 330)), min_size=50, max_size=50))
    def check(texts, shapes):
        texts = [t for t in texts if len(t) < 60]
        texts += [f"{'9' * digits}e{exponent}" for digits, exponent in shapes]
        texts += [f"0.{'0' * digits}1e{exponent}" for digits, exponent in shapes]
        con = duckdb.connect()
        got = con.execute(f"SELECT {trec._score_sql('t')} FROM unnest(?) u(t)", [texts]).fetchall()
        assert [repr(v) for (v,) in got] == [repr(_c_read(t.encode(), integer=False)[0]) for t in texts]

    check()
