"""Reading TREC text: the fast path (DuckDB's parallel CSV reader into a TEMP TABLE) reads every
file it accepts exactly as the line reader does, and leaves every other file to the line reader,
which reads it (or names its bad line) as before."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import duckrank
from duckrank import inputs
from duckrank.errors import InputError

KIND = {"trec_run": "run", "trec_qrels": "qrels"}


def _write(tmp_path, text: str, name: str = "input.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def _rows(relation: duckdb.DuckDBPyRelation) -> tuple[list[str], list[str], list[tuple]]:
    # repr keeps what == hides: -0.0 against 0.0, nan against nan
    return relation.columns, [str(t) for t in relation.types], [tuple(map(repr, row)) for row in relation.fetchall()]


def _fast(path: str, fmt: str):
    con = duckdb.connect()
    relation = inputs._read_trec_fast(con, path, fmt)
    return None if relation is None else _rows(relation)


def _lines(path: str, fmt: str):
    con = duckdb.connect()
    return _rows(inputs._read_trec_lines(con, path, fmt, KIND[fmt]))


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
                                           "q1 Q0 d4 4 5. r\nq1 Q0 d5 5 -0 r\nq1 Q0 d6 6 1_000 r\n"),
    "run, odd scores": ("trec_run", "q1 Q0 d1 1 inf r\nq1 Q0 d2 2 -Infinity r\nq1 Q0 d3 3 nan r\n"
                                    "q1 Q0 d4 4 1e400 r\nq1 Q0 d5 5 00012 r\n"),
    "run, integer-looking ids": ("trec_run", "10 Q0 9 1 3 7\n9 Q0 010 2 2 7\n010 0 1.0 3 1 7\n"),
    "run, ids that look like NULL or comments": ("trec_run", "NULL Q0 null 1 3 NULL\n#q Q0 \"d'1\\ 2 1 #\n"),
    "run, CRLF": ("trec_run", RUN.replace("\n", "\r\n")),
    "run, CRLF with tabs": ("trec_run", RUN.replace(" ", "\t").replace("\n", "\r\n")),
    "run, blank trailing line": ("trec_run", RUN + "\n"),
    "run, blank lines between": ("trec_run", "\n" + RUN.replace("\n", "\n\n")),
    "run, no final newline": ("trec_run", RUN.rstrip("\n")),
    "run, one trailing separator": ("trec_run", RUN.replace("\n", " \n")),
    "run, non-ASCII ids": ("trec_run", "q\u00e9 Q0 d\u00a0x 1 2 r\u00fcn\nq\u00e9 Q0 \u6587 2 1 r\u00fcn\n"),
    "run, vertical tab inside an id": ("trec_run", "q1 Q0 d\x0b1 1 2 r\n"),
    "qrels, single spaces": ("trec_qrels", QRELS),
    "qrels, single tabs": ("trec_qrels", QRELS.replace(" ", "\t")),
    "qrels, graded and negative": ("trec_qrels", "q1 0 d1 -1\nq1 0 d2 0.5\nq1 Q0 d3 1e1\n"),
    "qrels, CRLF and blank trailing line": ("trec_qrels", QRELS.replace("\n", "\r\n") + "\r\n"),
    "qrels, integer-looking ids": ("trec_qrels", "10 0 9 1\n9 0 010 0\n"),
}

# Files the fast path must leave to the line reader, which reads them as it always has.
FALLBACK = {
    "run, mixed spaces and tabs": ("trec_run", "q1 Q0\td1 1 2.5 r\nq1\tQ0 d2 2 1.5 r\n"),
    "run, two spaces": ("trec_run", "q1  Q0 d1 1 2.5 r\n"),
    "run, leading space": ("trec_run", " q1 Q0 d1 1 2.5 r\n"),
    "run, leading tab": ("trec_run", "\tq1 Q0 d1 1 2.5 r\n"),
    "run, seventh field": ("trec_run", "q1 Q0 d1 1 2.5 r extra\nq1 Q0 d2 2 1.5 r more fields\n"),
    "run, tab at the end of a space-separated line": ("trec_run", "q1 Q0 d1 1 2.5 r\t\n"),
    "run, space inside a tab-separated line": ("trec_run", "q1\tQ0\td1\t1\t2.5\tr x\n"),
    "run, form feed between fields": ("trec_run", "q1 Q0\fx d1 1 2.5 r\n"),
    "run, no-break space before the line": ("trec_run", "\u00a0q1 Q0 d1 1 2.5 r\n"),
    "run, ideographic space after the line": ("trec_run", "q1 Q0 d1 1 2.5 r\u3000\n"),
    "run, spaces-only line": ("trec_run", "q1 Q0 d1 1 2.5 r\n   \nq1 Q0 d2 2 1.5 r\n"),
    "run, first line tab-separated, the rest spaces": ("trec_run", "q1\tQ0\td1\t1\t2.5\tr\nq1 Q0 d2 2 1.5 r\n"),
    "qrels, fifth field": ("trec_qrels", "q1 0 d1 1 extra\n"),
    "qrels, double tab": ("trec_qrels", "q1\t\t0\td1\t1\n"),
}

# Lines the line reader rejects: the same message as before, naming the file and the line.
BAD = {
    "run, score not a number": ("trec_run", RUN + "q3 Q0 d9 1 high myrun\n", "q3 Q0 d9 1 high myrun",
                                "query_id Q0 doc_id rank score run_id"),
    "run, five fields": ("trec_run", "q3 Q0 d9 1 2.0\n" + RUN, "q3 Q0 d9 1 2.0",
                         "query_id Q0 doc_id rank score run_id"),
    "run, trailing space leaves five fields": ("trec_run", RUN + "q3 Q0 d9 1 2.0 \n", "q3 Q0 d9 1 2.0 ",
                                               "query_id Q0 doc_id rank score run_id"),
    "qrels, three fields": ("trec_qrels", QRELS + "q3 0 d9\n", "q3 0 d9", "query_id iteration doc_id relevance"),
    "qrels, relevance not a number": ("trec_qrels", QRELS.replace("\n", "\r\n") + "q3 0 d9 yes\r\n", "q3 0 d9 yes",
                                      "query_id iteration doc_id relevance"),
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
    """A plain ASCII file skips the per-row character checks; checking every row reads it the same."""
    fmt, text = FAST[case]
    path = _write(tmp_path, text)
    shortcut = _fast(path, fmt)
    monkeypatch.setattr(inputs, "_plain_bytes", lambda *args: False)
    assert _fast(path, fmt) == shortcut


@pytest.mark.parametrize(("text", "sep", "name", "plain"), [
    (RUN, " ", "run.txt", True),
    (RUN.replace(" ", "\t"), "\t", "run.txt", True),
    ("q1\tQ0\td1\t1\t  2.129133\tSTANDARD\n", "\t", "run.txt", False),  # trec_eval's layout: padded scores
    (RUN.replace("\n", "\r\n"), " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\t\n", " ", "run.txt", False),
    ("q1 Q0 d1 1 2.5 r\f\n", " ", "run.txt", False),
    ("q1 Q0 d\x011 1 2.5 r\n", " ", "run.txt", False),
    ("q\u00e9 Q0 d1 1 2.5 r\n", " ", "run.txt", False),
    (RUN, " ", "run[1].txt", False),  # DuckDB would read it as a glob
    (RUN, " ", "run.txt.gz", False),  # DuckDB would decompress it
])
def test_byte_scan_shortcut_is_taken_only_for_plain_files(tmp_path, text, sep, name, plain):
    assert inputs._plain_bytes(_write(tmp_path, text, name), sep) is plain


def test_empty_field_deep_in_a_plain_file_fails_the_fast_path(tmp_path):
    path = tmp_path / "run.txt"
    good = [f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run\n" for i in range(200_000)]
    path.write_text("".join(good) + "q9999 Q0  1 2.5 r\n" + "".join(good[:1000]))
    assert inputs._plain_bytes(str(path), " ")
    assert inputs._read_trec_fast(duckdb.connect(), str(path), "trec_run") is None
    with pytest.raises(InputError, match="the line 'q9999 Q0  1 2.5 r' does not read as"):
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
    assert _read_table(path, fmt)[2] == _lines(path, fmt)[2]


def test_seventh_field_is_ignored_as_trec_eval_does(tmp_path):
    path = _write(tmp_path, "q1 Q0 d1 1 2.5 r extra\nq1 Q0 d2 2 1.5 r\n")
    assert _read_table(path, "trec_run")[2] == [("'q1'", "'d1'", "2.5", "'r'"), ("'q1'", "'d2'", "1.5", "'r'")]


@pytest.mark.parametrize("case", BAD)
def test_bad_line_is_named_as_before(tmp_path, case):
    fmt, text, line, layout = BAD[case]
    path = _write(tmp_path, text)
    kind = KIND[fmt]
    assert _fast(path, fmt) is None
    expected = (f"{kind} file {path!r} is not a TREC {kind} file: the line {line!r} does not read as "
                f"'{layout}'; fix the line, or name the format with --{kind}-format")
    with pytest.raises(InputError) as raised:
        _read_table(path, fmt)
    assert str(raised.value) == expected


def test_read_table_takes_the_fast_path_for_the_common_layout(tmp_path, monkeypatch):
    """A regression that silently always fell back would pass every equality test above: here the
    line reader is not allowed to run at all."""
    def no_line_reader(*args, **kwargs):
        raise AssertionError("the common layout fell back to the line reader")

    monkeypatch.setattr(inputs, "_read_trec_lines", no_line_reader)
    for fmt, text in (("trec_run", RUN), ("trec_qrels", QRELS), ("trec_run", RUN.replace(" ", "\t"))):
        path = _write(tmp_path, text)
        con = duckdb.connect()
        source = inputs.read_table(con, path, KIND[fmt])  # the format detected from the first line
        assert con.sql(f"SELECT count(*) FROM {source.view}").fetchall() == [(3,)]


def test_read_table_falls_back_for_other_layouts(tmp_path, monkeypatch):
    calls = []
    line_reader = inputs._read_trec_lines

    def counting(*args, **kwargs):
        calls.append(args[1])
        return line_reader(*args, **kwargs)

    monkeypatch.setattr(inputs, "_read_trec_lines", counting)
    path = _write(tmp_path, "q1  Q0 d1 1 2.5 r\n")
    inputs.read_table(duckdb.connect(), path, "run")
    assert calls == [path]


def test_fast_path_is_materialised_before_read_table_returns(tmp_path):
    """The file is read once, in full, into a TEMP TABLE: the view outlives the file."""
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    con = duckdb.connect()
    source = inputs.read_table(con, str(path), "run")
    path.unlink()
    assert con.sql(f"SELECT count(*), sum(score) FROM {source.view}").fetchall() == [(3, 4.5)]
    temp_tables = con.sql("SELECT table_name FROM duckdb_tables() WHERE temporary").fetchall()
    assert [name for (name,) in temp_tables if name.startswith("duckrank_trec_")]


def test_bad_line_deep_in_a_large_file_leaves_no_rows_behind(tmp_path):
    """A bad line far past the first CSV buffers (read by another thread) still fails the fast
    path as a whole, and the line reader then names it."""
    path = tmp_path / "run.txt"
    good = [f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run\n" for i in range(300_000)]
    path.write_text("".join(good) + "q9999 Q0 d1 1 2.5\tr\n" + "".join(good[:1000]) + "q9999 Q0 oops\n")
    con = duckdb.connect()
    con.execute("SET threads = 2")
    tables_before = con.sql("SELECT count(*) FROM duckdb_tables()").fetchall()
    assert inputs._read_trec_fast(con, str(path), "trec_run") is None
    assert con.sql("SELECT count(*) FROM duckdb_tables()").fetchall() == tables_before
    with pytest.raises(InputError, match="the line 'q9999 Q0 oops' does not read as"):
        inputs.read_table(con, str(path), "run")


def test_large_file_takes_the_fast_path_and_matches_the_line_reader(tmp_path):
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q{i // 1000:04d} Q0 doc{i:07d} {i % 1000 + 1} {i % 97 / 7} run\n"
                            for i in range(200_000)))
    con = duckdb.connect()
    fast = inputs._read_trec_fast(con, str(path), "trec_run")
    assert fast is not None
    lines = inputs._read_trec_lines(con, str(path), "trec_run", "run")
    assert fast.fetchall() == lines.fetchall()  # row for row, in file order


def test_evaluate_gives_the_same_numbers_on_either_path(tmp_path, monkeypatch):
    qrels = _write(tmp_path, "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 2\nq2 0 d1 1\nq2 0 d4 1\n", "qrels.txt")
    run = _write(tmp_path, "q1 Q0 d1 1 3.0 r\nq1 Q0 d3 2 2.0 r\nq1 Q0 d9 3 1.0 r\nq2 Q0 d4 1 1e-3 r\n"
                           "q2 Q0 d1 2 -2.5E+2 r\n", "run.txt")
    measures = ["map", "ndcg", "P.2", "recip_rank"]
    fast = duckrank.evaluate(qrels, run, measures)
    monkeypatch.setattr(inputs, "_read_trec_fast", lambda *args: None)
    assert duckrank.evaluate(qrels, run, measures) == fast


FIELD = st.text(st.sampled_from(["q", "d", "1", "0", ".", "e", "-", "x", "\u00e9", "\u00a0", "\u3000", "\x0b", "\f",
                                 "\t", " ", "\x01", "#", '"']), min_size=0, max_size=3)
CLEAN = st.sampled_from(["q1", "Q0", "d7", "3", "0", "run", "10", "010"])
VALUE = st.sampled_from(["1", "2.5", "-2.5E+2", "1e-3", "inf", "nan", "1_0", "x", "", " 1", "1\t", "1\f", "1\x0b",
                         "\u00a01", "1\u00a0", "1 2"])


def test_whatever_the_fast_path_accepts_reads_as_the_line_reader_reads_it(tmp_path_factory):
    accepted = []

    @settings(max_examples=150)
    @given(st.data())
    def check(data):
        fmt = data.draw(st.sampled_from(["trec_run", "trec_qrels"]))
        sep = data.draw(st.sampled_from([" ", "\t"]))
        ending = data.draw(st.sampled_from(["\n", "\r\n"]))  # one line ending a file: see test_mixed_line_endings
        width = 6 if fmt == "trec_run" else 4
        lines = []
        for _ in range(data.draw(st.integers(1, 3))):
            count = data.draw(st.sampled_from([width] * 6 + [width - 1, width + 1]))
            fields = [data.draw(CLEAN if data.draw(st.integers(0, 7)) else FIELD) for _ in range(count)]
            if data.draw(st.booleans()):
                fields[min(width - 2 if fmt == "trec_run" else width - 1, len(fields) - 1)] = data.draw(VALUE)
            lines.append(sep.join(fields))
        text = ending.join(lines) + data.draw(st.sampled_from(["", ending, ending * 2]))
        path = _write(tmp_path_factory.mktemp("trec"), text)
        fast = _fast(path, fmt)
        if fast is None:
            return
        accepted.append(text)
        try:
            expected = _lines(path, fmt)
        except InputError as error:
            pytest.fail(f"the fast path read {text!r}, which the line reader rejects: {error}")
        assert fast == expected, repr(text)

    check()
    assert len(accepted) >= 10, "the generated files must exercise the fast path, not only the fallback"


def test_mixed_line_endings_read_where_the_line_reader_failed(tmp_path):
    """The one difference found: a file mixing LF and CRLF endings can make the line reader's CSV
    sniffer give up (a DuckDB error, reported as 'cannot read run file'); the fast path reads it,
    the endings stripped, as trec_eval does."""
    path = _write(tmp_path, "q1\tQ0\td1\t1\t2.5\tr\nq1\tQ0\td2\t2\t1.5\tr\t\r\n")
    with pytest.raises(duckdb.Error):
        _lines(path, "trec_run")
    assert _fast(path, "trec_run")[2] == [("'q1'", "'d1'", "2.5", "'r'"), ("'q1'", "'d2'", "1.5", "'r'")]


@pytest.mark.parametrize("sep", [" ", "\t"])
def test_whitespace_around_the_value_reads_as_the_line_reader_reads_it(tmp_path, sep):
    """The CSV reader parses a DOUBLE with some whitespace around it (' 1.5', '1.5\\x0b', '2\\t\\t'):
    wherever it does, the line reader (splitting on \\s, CAST tolerating the rest) gives the same."""
    chars = [chr(c) for c in range(1, 33) if c != 10] + ["\x7f", "\u0085", "\u00a0", "\u2028", "\u3000", "\ufeff"]
    con = duckdb.connect()
    fast_reads = 0
    for fmt, template in (("trec_run", "q1{s}Q0{s}d1{s}1{s}{v}{s}r\n"), ("trec_qrels", "q1{s}0{s}d1{s}{v}\n")):
        for char in chars:
            for value in (char + "1.5", "1.5" + char, "1" + char + "5", char * 2 + "2", "2" + char * 2):
                path = _write(tmp_path, template.format(s=sep, v=value))
                fast = inputs._read_trec_fast(con, path, fmt)
                if fast is not None:
                    fast_reads += 1
                    assert _rows(fast) == _lines(path, fmt), repr(value)
    assert fast_reads >= 10
