"""duckrank reads TREC text as trec_eval 10 reads it (its get_trec_results.c and get_qrels.c), or
stops with the file, the line and the value where trec_eval would silently read a different number.

Each case states trec_eval's numbers by hand (as its -q output prints them), so the tests assert
without the binary; with the binary (../shared/tools/trec_eval/build.sh, or $TREC_EVAL), a second
test checks that trec_eval itself prints exactly those numbers for the same bytes."""

from __future__ import annotations

import gzip
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest
from helpers import run as cli

import duckrank
from duckrank import inputs
from duckrank.inputs import trec
from duckrank.errors import InputError

REPO = Path(__file__).resolve().parent.parent
DUCKRANK = Path(sys.executable).parent / "duckrank"


def _printed(text: str) -> dict[tuple[str, str], str]:
    """trec_eval's output (or a case's expected lines) as {(measure, query): value}."""
    rows = (line.split() for line in text.splitlines() if line.strip())
    return {(measure, query): value for measure, query, value in rows}


def _write(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def _measure_args(measures) -> list[str]:
    return [a for m in measures for a in ("-m", m)]


def _run_trec_eval(binary: str, *args, input: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([binary, *map(str, args)], input=input, capture_output=True, timeout=60)


# ---------------------------------------------------------------------------------------------
# files trec_eval reads: duckrank reads them the same, number for number

QRELS = b"q1 0 a 1\nq1 0 b 0\nq1 0 c 2\nq2 0 a 1\nq2 0 d 1\n"
RUN = b"q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq1 Q0 c 3 1 t\nq2 Q0 a 1 1 t\nq2 Q0 d 2 2 t\n"
RUN_NUMBERS = """
num_ret q1 3
map q1 0.8333
ndcg q1 0.7602
num_ret q2 2
map q2 1.0000
ndcg q2 1.0000
num_ret all 5
map all 0.9167
ndcg all 0.8801
"""

# name: (qrels bytes, run bytes, measures, trec_eval -q's output)
CASES = {
    "tabs, runs of spaces and tabs, leading whitespace, CRLF, \\v \\f \\r between fields": (
        b" q1\t0  a\t2 \r\nq1 0\tb 0\n\tq1\x0b0\x0cc\t 1\r\nq2 0 a 1\nq2\t\t0\t\td\t\t3\n",
        b"q1\tQ0\ta\t1\t3.0\tt\n  q1 Q0   b 2 2.0 t\nq1\x0b\x0cQ0\rc 3\t  1.0\t\tt\r\n\tq2 Q0 a 1 0.5 t\n"
        b"q2  Q0  d  2  0.7  t  \n",
        ("num_ret", "num_rel", "map", "ndcg"), """
num_ret q1 3
num_rel q1 2
map q1 0.8333
ndcg q1 0.9502
num_ret q2 2
num_rel q2 2
map q2 1.0000
ndcg q2 1.0000
num_ret all 5
num_rel all 4
map all 0.9167
ndcg all 0.9751
"""),
    # '#q1 Q0 c 3 9 t' is a comment: read as a line, c would rank first
    "blank lines, whitespace lines and '#' comments": (
        b"q1 0 a 2\n# judged by x\nq1 0 b 0\nq1 0 c 1\n",
        b"# run header\n\nq1 Q0 a 1 3 t\n   \n\t# indented comment 1 2 3 4 5 6\nq1 Q0 b 2 2 t\n#q1 Q0 c 3 9 t\n\n"
        b"q1 Q0 c 3 1 t\n# last line, no newline",
        ("num_ret", "num_rel", "map", "ndcg"), """
num_ret q1 3
num_rel q1 2
map q1 0.8333
ndcg q1 0.9502
num_ret all 3
num_rel all 2
map all 0.8333
ndcg all 0.9502
"""),
    # atof: 1e2 = 100, 0x10 = 16, +3 = 3, 0x1.4p1 = 2.5, 5. = 5, .5 = 0.5, -0 = 0, 1E-2 = 0.01, 00012 = 12
    "scores as atof reads them (exponents, signs, hex floats)": (
        b"q1 0 a 0\nq1 0 b 1\nq1 0 c 2\nq1 0 d 0\nq1 0 e 0\nq1 0 f 3\nq1 0 g 1\nq1 0 h 0\nq1 0 i 2\n",
        b"q1 Q0 a 1 1e2 t\nq1 Q0 b 2 0x10 t\nq1 Q0 c 3 +3 t\nq1 Q0 d 4 0x1.4p1 t\nq1 Q0 e 5 5. t\nq1 Q0 f 6 .5 t\n"
        b"q1 Q0 g 7 -0 t\nq1 Q0 h 8 1E-2 t\nq1 Q0 i 9 00012 t\n",
        ("num_ret", "map", "ndcg", "recip_rank", "P.3"), """
num_ret q1 9
map q1 0.5787
recip_rank q1 0.5000
P_3 q1 0.6667
ndcg q1 0.6095
num_ret all 9
map all 0.5787
recip_rank all 0.5000
P_3 all 0.6667
ndcg all 0.6095
"""),
    # atol: 1.7 = 1, 2. = 2, +2 = 2, .5 = 0, -0 = 0, 0.9 = 0, 00 = 0, -1.7 = -1 (judged, not relevant)
    "relevance as atol reads it (a fraction drops)": (
        b"q1 0 a 1.7\nq1 0 b 2.\nq1 0 c +2\nq1 0 d .5\nq1 0 e -0\nq1 0 f 0.9\nq1 0 g 00\nq1 0 h 3\nq1 0 i -1.7\n",
        b"q1 Q0 a 1 9 t\nq1 Q0 b 2 8 t\nq1 Q0 c 3 7 t\nq1 Q0 d 4 6 t\nq1 Q0 e 5 5 t\nq1 Q0 f 6 4 t\nq1 Q0 g 7 3 t\n"
        b"q1 Q0 h 8 2 t\nq1 Q0 i 9 1 t\nq1 Q0 j 10 0.5 t\n",
        ("num_ret", "num_rel", "num_rel_ret", "map", "ndcg", "bpref", "P.5"), """
num_ret q1 10
num_rel q1 4
num_rel_ret q1 4
map q1 0.8750
bpref q1 0.7500
P_5 q1 0.6000
ndcg q1 0.7393
num_ret all 10
num_rel all 4
num_rel_ret all 4
map all 0.8750
bpref all 0.7500
P_5 all 0.6000
ndcg all 0.7393
"""),
    "the rank column and the fields past the sixth are ignored": (
        QRELS, b"q1 Q0 a 7 1 t\nq1 Q0 b x 3 t\nq1 Q0 c - 2 t extra fields here\nq2 Q0 d 1 0.25 t\nq2 Q0 a 1 0.5 t\n",
        ("num_ret", "map", "ndcg", "recip_rank"), """
num_ret q1 3
map q1 0.5833
recip_rank q1 0.5000
ndcg q1 0.6697
num_ret q2 2
map q2 1.0000
recip_rank q2 1.0000
ndcg q2 1.0000
num_ret all 5
map all 0.7917
recip_rank all 0.7500
ndcg all 0.8348
"""),
    # C's isspace() knows ASCII only: '\u00a0q1' is another query, 'c\u00a0' another document
    "a no-break space is part of a field": (
        QRELS, "q1 Q0 a 1 3 t\n\u00a0q1 Q0 z 1 9 t\nq1 Q0 b 2 2 t\u00a0\nq1 Q0 c\u00a0 3 1 t\nq2 Q0 a 1 1 t\n"
                "q2 Q0 d 2 2 t\n".encode(),
        ("num_ret", "num_rel_ret", "map", "ndcg"), """
num_ret q1 3
num_rel_ret q1 1
map q1 0.5000
ndcg q1 0.3801
num_ret q2 2
num_rel_ret q2 2
map q2 1.0000
ndcg q2 1.0000
num_ret all 5
num_rel_ret all 3
map all 0.7500
ndcg all 0.6900
"""),
    "a run whose tag varies is one run": (
        QRELS, b"q1 Q0 a 1 3 first\nq1 Q0 b 2 2 second\nq1 Q0 c 3 1 first\nq2 Q0 a 1 1 second\nq2 Q0 d 2 2 third\n",
        ("num_ret", "map", "ndcg"), RUN_NUMBERS),
}


@pytest.mark.parametrize("case", CASES)
def test_duckrank_reads_what_trec_eval_reads(tmp_path, case):
    qrels, run, measures, expected = CASES[case]
    result = cli("eval", _write(tmp_path, "qrels.txt", qrels), _write(tmp_path, "run.txt", run), "-q",
                 *_measure_args(measures), "--format", "trec")
    assert result.exit_code == 0, result.output
    assert _printed(result.stdout) == _printed(expected)


@pytest.mark.parametrize("case", CASES)
def test_trec_eval_prints_the_stated_numbers(tmp_path, trec_eval, case):
    qrels, run, measures, expected = CASES[case]
    done = _run_trec_eval(trec_eval, "-q", *_measure_args(measures), _write(tmp_path, "qrels.txt", qrels),
                          _write(tmp_path, "run.txt", run))
    assert done.returncode == 0, done.stderr
    assert _printed(done.stdout.decode()) == _printed(expected)


def test_either_reader_reads_every_case_the_same(tmp_path, monkeypatch):
    """The cases the fast path takes and those it leaves to the line reader give the same numbers
    when the line reader reads them all."""
    monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
    for case, (qrels, run, measures, expected) in CASES.items():
        result = cli("eval", _write(tmp_path, "qrels.txt", qrels), _write(tmp_path, "run.txt", run), "-q",
                     *_measure_args(measures), "--format", "trec")
        assert result.exit_code == 0, (case, result.output)
        assert _printed(result.stdout) == _printed(expected), case


# ---------------------------------------------------------------------------------------------
# one file, one run: named by its last line's tag (trec_eval's runid)

TAGGED = CASES["a run whose tag varies is one run"][1]


def test_runid_line_is_the_last_lines_tag(tmp_path):
    result = cli("eval", _write(tmp_path, "qrels.txt", QRELS), _write(tmp_path, "run.txt", TAGGED),
                 "-m", "official", "--format", "trec")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:3] == [f"{'runid':<22}\tall\tthird", f"{'num_q':<22}\tall\t2",
                                              f"{'num_ret':<22}\tall\t5"]


def test_trec_eval_names_the_run_by_its_last_tag(tmp_path, trec_eval):
    done = _run_trec_eval(trec_eval, "-m", "official", _write(tmp_path, "qrels.txt", QRELS),
                          _write(tmp_path, "run.txt", TAGGED))
    assert done.stdout.decode().splitlines()[:3] == [f"{'runid':<22}\tall\tthird", f"{'num_q':<22}\tall\t2",
                                                     f"{'num_ret':<22}\tall\t5"]


def test_api_reads_a_tagged_trec_file_as_one_run(tmp_path):
    qrels, run = _write(tmp_path, "qrels.txt", QRELS), _write(tmp_path, "run.txt", TAGGED)
    assert duckrank.evaluate(str(qrels), str(run), ["num_ret", "map"]) == {"num_ret": 5.0,
                                                                           "map": pytest.approx(0.9166666666666666)}
    results = duckrank.evaluation.compute(str(qrels), str(run), ["map"])
    assert results.runs == ["third"]
    results.con.close()


def test_a_run_id_column_of_a_csv_or_parquet_run_still_splits_it(tmp_path):
    rows = [("q1", "a", 3.0, "x"), ("q1", "b", 2.0, "x"), ("q1", "c", 1.0, "y"), ("q1", "b", 3.0, "y")]
    frame = pa.table({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                      "score": [r[2] for r in rows], "run_id": [r[3] for r in rows]})
    path = tmp_path / "runs.parquet"
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute(f"COPY (SELECT * FROM frame) TO '{path}' (FORMAT parquet)")
    qrels = _write(tmp_path, "qrels.txt", QRELS)
    assert duckrank.evaluate(str(qrels), str(path), ["num_ret"]) == {"x": {"num_ret": 2.0}, "y": {"num_ret": 2.0}}


def test_tags_stay_in_the_table_for_convert(tmp_path):
    """The tags do not split a TREC run, but read_table keeps them: a TREC run converted to TREC
    text keeps each line's tag."""
    con = duckdb.connect()
    source = inputs.read_table(con, str(_write(tmp_path, "run.txt", TAGGED)), "run")
    assert (source.has_run_id, source.name) == (False, "third")
    assert [t for (t,) in con.sql(f"SELECT run_id FROM {source.view}").fetchall()] == [
        "first", "second", "first", "second", "third"]
    target = tmp_path / "again.txt"
    assert cli("convert", tmp_path / "run.txt", target, "--to", "trec").exit_code == 0
    assert sorted(line.split()[5] for line in target.read_text().splitlines()) == [
        "first", "first", "second", "second", "third"]


def test_segmenting_by_the_tag_scores_each_tag(tmp_path):
    """The way to score a TREC file per tag, now that the tags no longer split it: by='run_id'."""
    qrels, run = _write(tmp_path, "qrels.txt", QRELS), _write(tmp_path, "run.txt", TAGGED)
    assert duckrank.evaluate(str(qrels), str(run), ["num_ret"], by="run_id") == {
        "first": {"num_ret": 2.0}, "second": {"num_ret": 2.0}, "third": {"num_ret": 1.0}}


# ---------------------------------------------------------------------------------------------
# numbers trec_eval reads as a prefix of junk: a clear error, never a silently different number

# (which file, text, line, value, what C's atof or atol silently takes)
JUNK = {
    "score 1_000": ("run", RUN.replace(b"a 1 3 t", b"a 1 1_000 t"), 1, "1_000", "1"),
    "score 0_9": ("run", RUN.replace(b"d 2 2 t", b"d 2 0_9 t"), 5, "0_9", "0"),
    "score 3abc": ("run", RUN.replace(b"b 2 2 t", b"b 2 3abc t"), 2, "3abc", "3"),
    "score 1.5abc": ("run", RUN.replace(b"c 3 1 t", b"c 3 1.5abc t"), 3, "1.5abc", "1.5"),
    "score high": ("run", RUN.replace(b"c 3 1 t", b"c 3 high t"), 3, "high", "0"),
    "score 1e (no exponent)": ("run", RUN.replace(b"c 3 1 t", b"c 3 1e t"), 3, "1e", "1"),
    "score 1,5": ("run", RUN.replace(b"c 3 1 t", b"c 3 1,5 t"), 3, "1,5", "1"),
    "score 0x (no digits)": ("run", RUN.replace(b"c 3 1 t", b"c 3 0x t"), 3, "0x", "0"),
    "relevance 1e2": ("qrels", QRELS.replace(b"c 2", b"c 1e2"), 3, "1e2", "1"),
    "relevance 0x10": ("qrels", QRELS.replace(b"c 2", b"c 0x10"), 3, "0x10", "0"),
    "relevance 3abc": ("qrels", QRELS.replace(b"d 1", b"d 3abc"), 5, "3abc", "3"),
    "relevance 1_0": ("qrels", QRELS.replace(b"d 1", b"d 1_0"), 5, "1_0", "1"),
    "relevance inf": ("qrels", QRELS.replace(b"d 1", b"d inf"), 5, "inf", "0"),
    "relevance yes": ("qrels", b"# a comment line counts\r\n" + QRELS.replace(b"\n", b"\r\n").replace(b"d 1", b"d yes"),
                      6, "yes", "0"),
}


def _junk_files(tmp_path, case):
    which, text, _line, _value, _reads = JUNK[case]
    qrels = _write(tmp_path, "qrels.txt", text if which == "qrels" else QRELS)
    run = _write(tmp_path, "run.txt", text if which == "run" else RUN)
    return which, qrels, run


@pytest.mark.parametrize("case", JUNK)
def test_junk_after_a_number_is_an_error_naming_file_line_and_value(tmp_path, case):
    which, qrels, run = _junk_files(tmp_path, case)
    _which, _text, line, value, reads = JUNK[case]
    result = cli("eval", str(qrels), str(run), "-m", "map")
    assert result.exit_code == 1, result.output
    function, field = ("atof", "score") if which == "run" else ("atol", "relevance")
    path = qrels if which == "qrels" else run
    assert (f"{which} file {str(path)!r}, line {line}: the {field} {value!r} is not "
            f"{'a number' if which == 'run' else 'an integer'} as trec_eval reads it: C's {function} would "
            f"silently take {reads};") in result.stderr, result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("case", JUNK)
def test_junk_is_an_error_on_either_path(tmp_path, monkeypatch, case):
    which, qrels, run = _junk_files(tmp_path, case)
    _which, _text, line, value, _reads = JUNK[case]
    for fast in (True, False):
        if not fast:
            monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
        with pytest.raises(InputError, match=f"line {line}: the .*{value!r}"):
            duckrank.evaluate(str(qrels), str(run), ["map"])


@pytest.mark.parametrize("case", JUNK)
def test_trec_eval_reads_the_junk_silently(tmp_path, trec_eval, case):
    """What the errors guard against: trec_eval takes the prefix and says nothing."""
    _which, qrels, run = _junk_files(tmp_path, case)
    done = _run_trec_eval(trec_eval, "-m", "map", qrels, run)
    assert done.returncode == 0 and done.stderr == b"", done.stderr


# Scores atof reads as infinite or NaN: trec_eval ranks them; duckrank scores finite numbers only and
# names the line (issue 26). (case: the run, its line, the value, what the message says of it)
NOT_FINITE = {
    "1e400": (RUN.replace(b"c 3 1 t", b"c 3 1e400 t"), 3, "1e400",
              "is beyond a double's range: C's atof reads it as inf, which trec_eval ranks above every finite score"),
    "-1e400": (RUN.replace(b"a 1 3 t", b"a 1 -1e400 t"), 1, "-1e400",
               "is beyond a double's range: C's atof reads it as -inf, which trec_eval ranks below every finite score"),
    "inf": (RUN.replace(b"d 2 2 t", b"d 2 inf t"), 5, "inf", "is infinite, which trec_eval ranks above every finite "
                                                              "score"),
}


@pytest.mark.parametrize("case", NOT_FINITE)
def test_a_score_read_as_infinite_is_an_error_naming_file_line_value_and_fix(tmp_path, monkeypatch, case):
    text, line, value, read = NOT_FINITE[case]
    qrels, run = _write(tmp_path, "qrels.txt", QRELS), _write(tmp_path, "run.txt", text)
    result = cli("eval", str(qrels), str(run), "-m", "map")
    assert result.exit_code == 1, result.output
    largest = ("-" if value.startswith("-") else "") + "1.7976931348623157e308"
    assert (f"Error: run file {str(run)!r}, line {line}: the score {value!r} {read}; duckrank scores finite numbers "
            f"only: write a score within ±1.7976931348623157e308 (the largest double), e.g. {largest} to rank the "
            f"doc {'last' if value.startswith('-') else 'first'}") in result.stderr, result.stderr
    monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
    with pytest.raises(InputError, match=f"line {line}: the score {value!r} {re.escape(read)}"):
        duckrank.evaluate(str(qrels), str(run), ["map"])


def test_trec_eval_ranks_a_score_past_a_double_first(tmp_path, trec_eval):
    """What trec_eval does with 1e400 (atof: inf): ranks it above every finite score, so writing the
    largest double instead, as the message says, gives trec_eval's numbers."""
    qrels = _write(tmp_path, "qrels.txt", QRELS)
    past = _write(tmp_path, "past.txt", RUN.replace(b"c 3 1 t", b"c 3 1e400 t"))
    largest = _write(tmp_path, "largest.txt", RUN.replace(b"c 3 1 t", b"c 3 1.7976931348623157e308 t"))
    done = _run_trec_eval(trec_eval, "-q", "-m", "relstring", "-m", "map", qrels, past)
    assert done.returncode == 0 and b"relstring             \tq1\t'210'" in done.stdout, done.stdout
    assert done.stdout == _run_trec_eval(trec_eval, "-q", "-m", "relstring", "-m", "map", qrels, largest).stdout
    result = cli("eval", str(qrels), str(largest), "-q", "-m", "relstring", "-m", "map",
                 "--format", "trec")
    assert result.stdout.encode() == done.stdout


def test_api_message_names_the_bad_value_as_before(tmp_path):
    run = _write(tmp_path, "run.txt", b"q1 Q0 a 1 0.5 tag\nq1 Q0 b 2 notanumber tag\n")
    with pytest.raises(InputError) as raised:
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(run), ["map"])
    assert str(raised.value) == (
        f"run file {str(run)!r}, line 2: the score 'notanumber' is not a number as trec_eval reads it: C's atof "
        f"would silently take 0; write the score as a number such as 12.5 or 1.25e1")


# ---------------------------------------------------------------------------------------------
# lines trec_eval rejects: so does duckrank, naming the line

MALFORMED = {
    "run line of 5 fields": ("run", RUN + b"q3 Q0 z 1 2.0\n", 6, "'q3 Q0 z 1 2.0' has 5 fields, but a TREC run line "
                                                                "has at least 6: query_id Q0 doc_id rank score run_id"),
    "run line of 5 fields and a trailing space": ("run", b"\n" + RUN + b"q3 Q0 z 1 2.0 \n", 7,
                                                   "'q3 Q0 z 1 2.0 ' has 5 fields"),
    "qrels line of 5 fields": ("qrels", QRELS + b"q3 0 z 1 extra\n", 6,
                               "'q3 0 z 1 extra' has 5 fields, but a TREC qrels line has exactly 4: "
                               "query_id iteration doc_id relevance"),
    "qrels line of 3 fields": ("qrels", QRELS.replace(b"q1 0 b 0\n", b"q3 0 z\n"), 2, "'q3 0 z' has 3 fields"),
    "indented '#' in qrels is a judgment line": ("qrels", QRELS + b" # not a comment here\n", 6,
                                                 "' # not a comment here' has 5 fields"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_line_is_named(tmp_path, case):
    which, text, line, fragment = MALFORMED[case]
    qrels = _write(tmp_path, "qrels.txt", text if which == "qrels" else QRELS)
    run = _write(tmp_path, "run.txt", text if which == "run" else RUN)
    with pytest.raises(InputError) as raised:
        duckrank.evaluate(str(qrels), str(run), ["map"])
    message = str(raised.value)
    path = qrels if which == "qrels" else run
    assert message.startswith(f"{which} file {str(path)!r}, line {line}: "), message
    assert fragment in message and "Malformed line" in message, message


@pytest.mark.parametrize("case", MALFORMED)
def test_trec_eval_rejects_the_malformed_line(tmp_path, trec_eval, case):
    which, text, _line, _fragment = MALFORMED[case]
    qrels = _write(tmp_path, "qrels.txt", text if which == "qrels" else QRELS)
    run = _write(tmp_path, "run.txt", text if which == "run" else RUN)
    done = _run_trec_eval(trec_eval, "-m", "map", qrels, run)
    assert done.returncode == 2 and b"Malformed line" in done.stderr, (done.returncode, done.stderr)


# ---------------------------------------------------------------------------------------------
# where trec_eval 10 fails or reads one file two ways, duckrank reads the lines that have a meaning,
# or stops and says why

def test_blank_qrels_lines_are_skipped(tmp_path):
    """trec_eval 10 stops at a blank qrels line ('Malformed line'); duckrank skips it, as it skips
    blank run lines: the numbers are those of the file without it."""
    qrels = _write(tmp_path, "qrels.txt", b"\n" + QRELS.replace(b"\nq2", b"\n\n  \t\nq2") + b"\n")
    result = cli("eval", qrels, _write(tmp_path, "run.txt", RUN), "-q", "-m", "num_ret", "-m", "map",
                 "-m", "ndcg", "--format", "trec")
    assert _printed(result.stdout) == _printed(RUN_NUMBERS)


def test_trec_eval_stops_at_a_blank_qrels_line(tmp_path, trec_eval):
    done = _run_trec_eval(trec_eval, "-m", "map", _write(tmp_path, "qrels.txt", QRELS + b"\n"),
                          _write(tmp_path, "run.txt", RUN))
    assert done.returncode == 2 and b"Malformed line 6" in done.stderr


def test_comment_on_the_last_qrels_line_is_skipped(tmp_path):
    """trec_eval 10 reads past its buffer there (and mostly crashes)."""
    qrels = _write(tmp_path, "qrels.txt", QRELS + b"# the end")
    result = cli("eval", qrels, _write(tmp_path, "run.txt", RUN), "-q", "-m", "num_ret", "-m", "map",
                 "-m", "ndcg", "--format", "trec")
    assert _printed(result.stdout) == _printed(RUN_NUMBERS)


COMMENTS_TWICE = b"# first comment\n#x y z 1\n" + QRELS


def test_two_qrels_comment_lines_in_a_row_are_an_error(tmp_path):
    qrels = _write(tmp_path, "qrels.txt", COMMENTS_TWICE)
    with pytest.raises(InputError, match=r"line 2: a '#' line right after another: trec_eval skips one comment "
                                         r"line, then reads the next line as a judgment"):
        duckrank.evaluate(str(qrels), str(_write(tmp_path, "run.txt", RUN)), ["map"])


def test_trec_eval_reads_a_second_comment_line_as_a_judgment(tmp_path, trec_eval):
    """'#x y z 1' becomes a judged query '#x' (which -c then averages in)."""
    done = _run_trec_eval(trec_eval, "-c", "-q", "-m", "num_q", "-m", "num_rel",
                          _write(tmp_path, "qrels.txt", COMMENTS_TWICE), _write(tmp_path, "run.txt", RUN))
    assert done.returncode == 0
    assert _printed(done.stdout.decode())[("num_rel", "#x")] == "1"
    assert _printed(done.stdout.decode())[("num_q", "all")] == "3"


NUL_RUN = RUN.replace(b"q2 Q0 a", b"\0q2 Q0 a")


def test_nul_byte_is_an_error(tmp_path):
    run = _write(tmp_path, "run.txt", NUL_RUN)
    with pytest.raises(InputError, match=r"run file .*run.txt', line 4 is not TREC text: it holds a NUL byte "
                                         r"\('\\x00q2 Q0 a 1 1 t'\), where trec_eval stops reading"):
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(run), ["map"])


def test_trec_eval_stops_reading_at_a_nul_byte(tmp_path, trec_eval):
    done = _run_trec_eval(trec_eval, "-m", "num_ret", "-c", _write(tmp_path, "qrels.txt", QRELS),
                          _write(tmp_path, "run.txt", NUL_RUN))
    assert _printed(done.stdout.decode()) == {("num_ret", "all"): "3"}  # of 5 lines


BOM_RUN = b"\xef\xbb\xbf" + RUN


def test_byte_order_mark_is_an_error(tmp_path):
    run = _write(tmp_path, "run.txt", BOM_RUN)
    with pytest.raises(InputError, match="starts with a UTF-8 byte-order mark, which trec_eval reads as part of "
                                         "the first query id"):
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(run), ["map"])


def test_trec_eval_reads_a_byte_order_mark_into_the_first_query_id(tmp_path, trec_eval):
    done = _run_trec_eval(trec_eval, "-q", "-m", "num_ret", _write(tmp_path, "qrels.txt", QRELS),
                          _write(tmp_path, "run.txt", BOM_RUN))
    assert _printed(done.stdout.decode())[("num_ret", "q1")] == "2"  # its first line went to '\ufeffq1'


def test_invalid_utf8_is_an_error_naming_the_line(tmp_path):
    run = _write(tmp_path, "run.txt", RUN.replace(b"q2 Q0 d", b"q2 Q0 d\xe9"))
    with pytest.raises(InputError, match=r"run.txt', line 5 is not UTF-8 text \(byte 0xe9 in '"):
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(run), ["map"])


# ---------------------------------------------------------------------------------------------
# compressed files (gzip, zstd: by their bytes, not their names) and standard input

def _zstd(data: bytes, path: Path) -> Path:
    with pa.output_stream(str(path), compression="zstd") as stream:
        stream.write(data)
    return path


def _gzip(data: bytes, path: Path) -> Path:
    path.write_bytes(gzip.compress(data))
    return path


def _eval_numbers(qrels, run, *extra, input: bytes | None = None) -> dict:
    result = cli("eval", qrels, run, "-q", "-m", "num_ret", "-m", "map", "-m", "ndcg", "--format", "trec",
                 *extra, input=input)
    assert result.exit_code == 0, result.output
    return _printed(result.stdout)


@pytest.mark.parametrize("how", ["run.txt.gz", "run.txt.zst", "run.zstd", "gzip, no extension", "zstd, no extension",
                                 "qrels.txt.gz", "qrels.txt.zst", "both, gzip"])
def test_compressed_trec_text(tmp_path, how):
    qrels, run = QRELS.replace(b"\n", b"\r\n"), b"# header\n" + RUN.replace(b" ", b"\t")  # not only the fast path
    q, r = _write(tmp_path, "qrels.txt", qrels), _write(tmp_path, "run.txt", run)
    if how.startswith("run."):
        r = (_gzip if how.endswith(".gz") else _zstd)(run, tmp_path / how)
    elif how.startswith("qrels."):
        q = (_gzip if how.endswith(".gz") else _zstd)(qrels, tmp_path / how)
    elif how == "gzip, no extension":
        r = _gzip(run, tmp_path / "run")
    elif how == "zstd, no extension":
        r = _zstd(run, tmp_path / "run")
    else:
        q, r = _gzip(qrels, tmp_path / "q.gz"), _gzip(run, tmp_path / "r.gz")
    assert _eval_numbers(q, r) == _printed(RUN_NUMBERS)
    assert duckrank.evaluate(str(q), str(r), ["map"]) == {"map": pytest.approx(0.9166666666666666)}


def test_compressed_run_on_the_fast_path_keeps_its_last_tag(tmp_path, monkeypatch):
    def no_line_reader(*args, **kwargs):
        raise AssertionError("a plain compressed run fell back to the line reader")

    monkeypatch.setattr(trec, "_read_trec_lines", no_line_reader)
    for writer, name in ((_gzip, "run.txt.gz"), (_zstd, "run.txt.zst")):
        run = writer(TAGGED, tmp_path / name)
        con = duckdb.connect()
        source = inputs.read_table(con, str(run), "run")
        assert source.name == "third"
        assert con.sql(f"SELECT count(*) FROM {source.view}").fetchall() == [(5,)]


@pytest.mark.parametrize("fast", [True, False])
def test_concatenated_gzip_members_and_zstd_frames_are_read_whole(tmp_path, monkeypatch, fast):
    """cat a.gz b.gz > c.gz is one gzip file to gzip -dc: every member is read, on either path."""
    if not fast:
        monkeypatch.setattr(trec, "_read_trec_fast", lambda *args, **kwargs: None)
    half = TAGGED.index(b"q2")
    qrels = _write(tmp_path, "qrels.txt", QRELS)
    gz = _write(tmp_path, "run.txt.gz", gzip.compress(TAGGED[:half]) + gzip.compress(TAGGED[half:]))
    zst = _write(tmp_path, "run.txt.zst", _zstd(TAGGED[:half], tmp_path / "a").read_bytes()
                 + _zstd(TAGGED[half:], tmp_path / "b").read_bytes())
    for run in (gz, zst):
        assert _eval_numbers(qrels, run) == _printed(RUN_NUMBERS)
        assert inputs.read_table(duckdb.connect(), str(run), "run").name == "third"


def test_plain_text_named_gz_is_read_as_plain_text(tmp_path):
    r = _write(tmp_path, "run.txt.gz", RUN)
    assert _eval_numbers(_write(tmp_path, "qrels.txt", QRELS), r) == _printed(RUN_NUMBERS)


@pytest.mark.parametrize("fmt", ["csv.gz", "tsv.zst", "jsonl.gz", "csv (gzip, no extension)"])
def test_compressed_csv_tsv_jsonl(tmp_path, fmt):
    con = duckdb.connect()
    runs = [("q1", "a", 3.0), ("q1", "b", 2.0), ("q1", "c", 1.0), ("q2", "a", 1.0), ("q2", "d", 2.0)]
    frame = pa.table({"query_id": [r[0] for r in runs], "doc_id": [r[1] for r in runs], "score": [r[2] for r in runs]})
    base = fmt.split(" ")[0]
    plain = tmp_path / f"run.{base.split('.')[0]}"
    options = {"csv": "FORMAT csv, HEADER", "tsv": "FORMAT csv, HEADER, DELIMITER '\t'", "jsonl": "FORMAT json"}
    con.register("frame", frame)
    con.execute(f"COPY (SELECT * FROM frame) TO '{plain}' ({options[base.split('.')[0]]})")
    if fmt.endswith("extension)"):
        target = _gzip(plain.read_bytes(), tmp_path / "run_csv")
        extra = ["--run-format", "csv"]
    else:
        target = (_gzip if fmt.endswith(".gz") else _zstd)(plain.read_bytes(), tmp_path / f"run.{fmt}")
        extra = []
    assert _eval_numbers(_write(tmp_path, "qrels.txt", QRELS), target, *extra) == _printed(RUN_NUMBERS)


def test_corrupt_gzip_is_named(tmp_path):
    run = _write(tmp_path, "run.txt.gz", gzip.compress(RUN)[:30])
    with pytest.raises(InputError, match="run.txt.gz' as gzip"):
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(run), ["map"])


def test_compressed_parquet_is_an_error(tmp_path):
    path = tmp_path / "run.parquet"
    duckdb.connect().execute(f"COPY (SELECT 'q1' AS query_id, 'a' AS doc_id, 1.0 AS score) TO '{path}' (FORMAT parquet)")
    packed = _gzip(path.read_bytes(), tmp_path / "run.parquet.gz")
    with pytest.raises(InputError, match="gzip-compressed Parquet"):
        duckrank.evaluate(str(_write(tmp_path, "qrels.txt", QRELS)), str(packed), ["map"])


@pytest.mark.parametrize("which", ["run", "qrels", "run, gzip"])
def test_standard_input(tmp_path, which):
    q, r = _write(tmp_path, "qrels.txt", QRELS), _write(tmp_path, "run.txt", TAGGED)
    if which == "qrels":
        numbers = _eval_numbers("-", r, input=QRELS)
    else:
        numbers = _eval_numbers(q, "-", input=gzip.compress(TAGGED) if "gzip" in which else TAGGED)
    assert numbers == _printed(RUN_NUMBERS)


def test_standard_input_names_the_run_by_its_tag(tmp_path):
    result = cli("eval", _write(tmp_path, "qrels.txt", QRELS), "-", "-m", "official", "--format", "trec",
                 input=TAGGED)
    assert result.stdout.splitlines()[0] == f"{'runid':<22}\tall\tthird"


def test_standard_input_bad_line_is_named(tmp_path):
    result = cli("eval", str(_write(tmp_path, "qrels.txt", QRELS)), "-", "-m", "map", input=RUN + b"q3 Q0 z 1 oops t\n")
    assert result.exit_code == 1
    assert "run file '-' (standard input), line 6: the score 'oops'" in result.stderr, result.stderr


def test_standard_input_for_both_is_an_error(tmp_path):
    result = cli("eval", "-", "-", "-m", "map", input=QRELS)
    assert result.exit_code == 2
    assert "QRELS and RUN are both '-', but standard input can be read once" in result.stderr, result.stderr
    result = cli("eval", str(_write(tmp_path, "qrels.txt", QRELS)), "-", "-", "-m", "map", input=RUN)
    assert result.exit_code == 2
    assert "RUN 1 and RUN 2 are both '-'" in result.stderr, result.stderr


def test_empty_standard_input(tmp_path):
    result = cli("eval", str(_write(tmp_path, "qrels.txt", QRELS)), "-", "-m", "map", input=b"")
    assert result.exit_code == 1
    assert "run file '-' (standard input) is empty" in result.stderr, result.stderr


def test_standard_input_through_the_console_script(tmp_path):
    done = subprocess.run([str(DUCKRANK), "eval", str(_write(tmp_path, "qrels.txt", QRELS)), "-", "-q", "-m", "num_ret",
                           "-m", "map", "-m", "ndcg", "--format", "trec"], input=gzip.compress(RUN),
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _printed(done.stdout.decode()) == _printed(RUN_NUMBERS)


def test_convert_reads_standard_input(tmp_path):
    """convert tries '-' as qrels, then as a run: both reads see the same bytes."""
    target = tmp_path / "run.parquet"
    result = cli("convert", "-", target, input=TAGGED)
    assert result.exit_code == 0, result.output
    assert duckdb.connect().execute(f"SELECT count(*) FROM '{target}'").fetchall() == [(5,)]


def test_trec_eval_reads_the_run_from_standard_input(tmp_path, trec_eval):
    done = _run_trec_eval(trec_eval, "-q", "-m", "num_ret", "-m", "map", "-m", "ndcg",
                          _write(tmp_path, "qrels.txt", QRELS), "-", input=TAGGED)
    assert _printed(done.stdout.decode()) == _printed(RUN_NUMBERS)


def test_missing_file_mentions_standard_input():
    with pytest.raises(InputError, match="not found .*give '-' to read standard input"):
        duckrank.evaluate("nowhere-qrels.txt", "nowhere.txt", ["map"])

