"""Hostile inputs (issue 25, third round): standard input named twice, binary files given as TREC
text, ids too long to print, look-alike Unicode ids, duplicate label-map keys, and the name eval
gives a TREC run. Each asserts the exit code and the first line of the message."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import duckrank
from duckrank.errors import MeasureError, OptionError
from duckrank.measures import parse_measure

from helpers import first_error, run

DATA = Path(__file__).resolve().parent.parent / "data"
RUN_LINE = "q1 Q0 d1 1 2.0 tagged\n"




# ---------------------------------------------------------------------------------------------
# standard input can be read once


@pytest.mark.parametrize(("args", "named"), [
    (["eval", "-", "-"], "QRELS and RUN"),
    (["eval", DATA / "qrels.parquet", "-", "-"], "RUN 1 and RUN 2"),
    (["compare", "-", "-", DATA / "run.parquet"], "QRELS and RUN 1"),
])
def test_standard_input_named_twice_is_a_usage_error_naming_both(args, named):
    result = run(*args, input=RUN_LINE)
    assert result.exit_code == 2, result.output
    message = first_error(result)
    assert named in message and "standard input can be read once" in message, message


def test_python_refuses_standard_input_named_twice_before_reading_it():
    with pytest.raises(OptionError, match=r"qrels and runs\[0\] are both '-'.*standard input can be read once"):
        duckrank.evaluate("-", ["-"], ["map"])


def test_one_call_reads_standard_input_once_for_all_its_reads(monkeypatch):
    """A report reads its qrels more than once (its evaluation, then the qrels' shape): every read of
    '-' in that call is the one copy of standard input the call owns (inputs.StandardInput)."""
    from duckrank.reporting import gather

    qrels, runs = DATA / "qrels.parquet", [str(DATA / "run.parquet"), str(DATA / "run_b.parquet")]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(qrels.read_bytes())))
    piped = gather("-", runs, ["map"], qrels_format="parquet", statistics=False)
    queries, judged = duckdb.sql(f"SELECT count(DISTINCT query_id), count(*) FROM '{qrels}'").fetchall()[0]
    assert (piped.shape["qrels"]["queries"], piped.shape["qrels"]["judged"]) == (queries, judged)
    given = duckrank.evaluate(str(qrels), runs, ["map"], run_names=piped.runs)
    assert piped.means["map"] == {name: means["map"] for name, means in given.items()}


def test_standard_input_read_as_a_run_is_refused_as_the_qrels(tmp_path):
    result = run("fuse", "-", DATA / "run_b.parquet", "--method", "mapfuse", "--qrels", "-",
                 "-o", tmp_path / "fused.parquet", input=RUN_LINE)
    assert result.exit_code == 1, result.output
    assert first_error(result) == ("Error: standard input ('-') was read as the run already; only one of the qrels "
                                   "and the runs can be '-': give the qrels as a file")


# ---------------------------------------------------------------------------------------------
# user data in messages: cut, and escaped where look-alikes would hide the difference


def write_parquet(path: Path, rows: dict[str, list]) -> Path:
    pq.write_table(pa.table(rows), path)
    return path


LONG_ID = "x" * 100_000


def test_a_long_id_is_cut_in_the_message(tmp_path):
    run_file = write_parquet(tmp_path / "run.parquet", {"query_id": [LONG_ID], "doc_id": ["d1"], "score": [1.0]})
    qrels = write_parquet(tmp_path / "qrels.parquet", {"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    result = run("eval", qrels, run_file)
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert "no query_id in common" in message and "'…(99,920 more characters)" in message, message
    assert len(message) < 600, len(message)


def test_a_long_value_in_trec_text_is_cut_in_the_message(tmp_path):
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "run.txt").write_text(f"q1 Q0 d1 1 {LONG_ID} tag\n")
    result = run("eval", tmp_path / "qrels.txt", tmp_path / "run.txt", "--run-format", "trec")
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert "line 1: the score 'xxx" in message and "'…(99,920 more characters) is not a number" in message, message
    assert len(message) < 600, len(message)


def test_a_long_id_in_a_message_the_sql_library_builds_is_cut(tmp_path):
    run_file = write_parquet(tmp_path / "run.parquet", {"query_id": ["q1", "q1"], "doc_id": [LONG_ID, LONG_ID],
                                                        "score": [1.0, 2.0]})
    qrels = write_parquet(tmp_path / "qrels.parquet", {"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    result = run("eval", qrels, run_file)
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert "has 2 rows for query_id 'q1', doc_id 'xxx" in message, message
    assert "'…(99,920 more characters); each (query_id, doc_id) must appear once" in message, message
    assert len(message) < 600, len(message)
    con = duckrank.connect()  # the shell's front door builds the same message
    with pytest.raises(duckdb.Error) as raised:
        con.execute(f"SELECT * FROM duckrank.ndcg('{qrels}', '{run_file}')").fetchall()
    assert "'…(99,920 more characters); each (query_id, doc_id)" in str(raised.value) and len(str(raised.value)) < 700


def test_a_line_break_in_an_id_cannot_forge_a_line_of_a_message_the_sql_library_builds(tmp_path):
    run_file = write_parquet(tmp_path / "run.parquet", {"query_id": ["q1", "q1"], "doc_id": ["d1\nAll good"] * 2,
                                                        "score": [1.0, 2.0]})
    qrels = write_parquet(tmp_path / "qrels.parquet", {"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    result = run("eval", qrels, run_file)
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1 and "doc_id 'd1\\nAll good'" in result.stderr, result.stderr


@pytest.mark.parametrize("value", ["x" * 100_000, "x" * 80, "é" * 81, "q1", 3, None, "d1\nAll good", "\x1b[31mred\ttab\r"],
                         ids=["100000", "80", "81-accented", "short", "number", "null", "line-break", "escape-tab-return"])
def test_the_sql_library_cuts_a_value_where_python_cuts_it(value):
    from duckrank.errors import quoted

    shown = duckrank.connect().execute("SELECT duckrank.show(CAST(? AS VARCHAR))", [value]).fetchall()[0][0]
    assert shown == ("NULL" if value is None else quoted(str(value)))


def test_a_long_path_is_cut_in_the_message(tmp_path):
    result = run("eval", DATA / "qrels.parquet", tmp_path / LONG_ID)
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert "not found" in message and "more characters)" in message, message
    assert len(message) < 600 + len(str(Path.cwd())), len(message)


def test_a_long_label_map_value_is_cut_in_the_usage_error():
    result = run("eval", "--log", DATA / "log.parquet", "--label", "clicked", "--label-map", "x" * 100_000)
    assert result.exit_code == 2, result.output
    message = first_error(result)
    assert "--label-map" in message and "more characters)" in message, message
    assert len(message) < 400, len(message)


def test_look_alike_ids_are_escaped_in_the_no_common_queries_message(tmp_path):
    composed, decomposed = "caf\u00e9", "cafe\u0301"  # NFC and NFD of the same word
    run_file = write_parquet(tmp_path / "run.parquet", {"query_id": [composed], "doc_id": ["d1"], "score": [1.0]})
    qrels = write_parquet(tmp_path / "qrels.parquet", {"query_id": [decomposed], "doc_id": ["d1"], "relevance": [1]})
    result = run("eval", qrels, run_file)
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert "no query_id in common" in message and "'café'" in message and "'cafe\\u0301'" in message, message
    assert "Unicode normalization" in message and "NFC" in message, message


# ---------------------------------------------------------------------------------------------
# binary data given as TREC text


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_zero_bytes_given_as_trec_text_are_not_trec_text(tmp_path, kind):
    zeros = tmp_path / "zeros.txt"
    zeros.write_bytes(bytes(4096))
    other = DATA / ("qrels.parquet" if kind == "run" else "run.parquet")
    args = [other, zeros] if kind == "run" else [zeros, other]
    result = run("eval", *args, f"--{kind}-format", "trec")
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert f"{kind} file '{zeros}', line 1 is not TREC text: it holds a NUL byte ('\\x00\\x00" in message, message
    assert "'…(4,0" in message and "more bytes)" in message and "empty" not in message, message


def test_a_binary_blob_given_as_trec_text_is_not_trec_text(tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(random.Random(25).randbytes(4096))
    result = run("eval", DATA / "qrels.parquet", blob, "--run-format", "trec")
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert f"run file '{blob}', line " in message and "is not TREC text: it holds a NUL byte ('" in message, message
    assert len(message) < 600, len(message)


def test_binary_without_nul_bytes_shows_the_line_that_is_not_utf8(tmp_path):
    blob = tmp_path / "blob.bin"
    blob.write_bytes(random.Random(25).randbytes(4096).replace(b"\0", b"").replace(b"\n", b""))
    result = run("eval", DATA / "qrels.parquet", blob, "--run-format", "trec")
    assert result.exit_code == 1, result.output
    message = first_error(result)
    assert f"run file '{blob}', line 1 is not UTF-8 text (byte 0x" in message and "more bytes)" in message, message
    assert "check that this is the run file" in message and len(message) < 600, message


def test_a_line_with_no_end_is_refused_before_it_fills_memory(tmp_path, monkeypatch):
    from duckrank.inputs import trec

    monkeypatch.setattr(trec, "_CHUNK", 1000)  # as a 3 GB line against the 64 MiB pieces
    endless = tmp_path / "run.txt"
    endless.write_text("x" * 5000)
    with pytest.raises(duckrank.InputError, match=r"line 1 is not TREC text: it runs past 1,000 bytes with no line end"):
        duckrank.evaluate(str(DATA / "qrels.parquet"), str(endless), ["map"], run_format="trec_run")


# ---------------------------------------------------------------------------------------------
# memory: the line reader's pieces shrink with the limit; running out says which limit and why


def test_the_line_reader_splits_pieces_sized_to_the_memory_limit(tmp_path, monkeypatch):
    """Its pieces are outside DuckDB's limit (Arrow holds about ten copies of one): 64 MiB pieces took
    a 5 M-line gzip under --memory-limit 50MB to 0.98 GB of RSS, where 1 MiB pieces take it to 0.25 GB."""
    from duckrank.inputs import trec

    seen = []
    chunks = trec._chunks
    monkeypatch.setattr(trec, "_chunks", lambda *args: seen.append(args[-1]) or chunks(*args))
    run_file = tmp_path / "run.txt"
    run_file.write_text("q1  Q0 d1 1 2.0 tag\n")  # two spaces: the line reader's layout
    con = duckrank.connect()
    for limit, piece in (("50MB", 1 << 20), ("1GB", 1e9 * 0.8 / 128), ("100GB", 1 << 26)):
        duckrank._library.configure(con, memory_limit=limit)
        trec._read_trec_lines(con, str(run_file), "trec_run", "run")
        assert seen.pop() == pytest.approx(piece, rel=0.01), limit


def test_running_out_of_memory_names_the_limit_and_the_query_too_large_to_batch(tmp_path):
    """A query's ranking is held whole, so batching by queries cannot help a query of a million rows."""
    pq.write_table(pa.table({"query_id": ["q1"] * 1_000_000, "doc_id": [f"d{i % 10}" for i in range(1_000_000)],
                             "score": [float(i) for i in range(1_000_000)]}), tmp_path / "run.parquet")
    write_parquet(tmp_path / "qrels.parquet", {"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]})
    done = subprocess.run([Path(sys.executable).parent / "duckrank", "eval", "qrels.parquet", "run.parquet",
                           "--memory-limit", "64MB"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Error: out of memory: DuckDB's limit of 48.8 MiB (80% of --memory-limit"), done.stderr
    assert ("raise --memory-limit; each query's ranking is held in memory whole, and query_id 'q1' of run "
            "'run.parquet' has 1,000,000 rows; only 10 of its doc_ids differ: --duplicates max") in done.stderr
    assert "Traceback" not in done.stderr


# ---------------------------------------------------------------------------------------------
# VALUE=GRADE lists: each key once


LOG_COLUMNS = ["--query-col", "user_id", "--doc-col", "item_id", "--score-col", "pred"]


def test_a_label_map_key_given_twice_is_a_usage_error_naming_it():
    result = run("eval", "--log", DATA / "events.parquet", "--label", "clicked", "--label", "purchased",
                 "--label-map", "clicked=1,purchased=3,clicked=3", *LOG_COLUMNS)
    assert result.exit_code == 2, result.output
    assert "--label-map gives 'clicked' twice" in first_error(result), result.stderr


@pytest.mark.parametrize("spelling", ["ndcg.1=3,2=9,1=5", "nDCG(gain_map={1:3,2:9,1.0:5})@10"])
def test_a_grade_given_twice_in_a_gain_map_is_refused(spelling):
    with pytest.raises(MeasureError, match=r"the gain map gives '1' twice"):
        parse_measure(spelling)
    result = run("eval", DATA / "qrels.parquet", DATA / "run.parquet", "-m", spelling)
    assert result.exit_code == 2, result.output
    assert "the gain map gives '1' twice" in first_error(result), result.stderr


# ---------------------------------------------------------------------------------------------
# a TREC run's name


def trec_runs(folder: Path, tags: tuple[str, str]) -> list[Path]:
    paths = []
    for name, source, tag in zip(("a", "b"), ("run.parquet", "run_b.parquet"), tags):
        path = folder / f"{name}.txt"
        duckdb.sql(f"COPY (SELECT query_id, 'Q0', doc_id, row_number() OVER (PARTITION BY query_id ORDER BY score DESC), "
                   f"score, '{tag}' FROM '{DATA / source}') TO '{path}' (FORMAT csv, DELIMITER ' ', HEADER false)")
        paths.append(path)
    return paths


def test_eval_tables_name_trec_runs_by_their_tags_as_the_report_does(tmp_path):
    paths = trec_runs(tmp_path, ("bm25", "dense"))
    table = run("eval", DATA / "qrels.parquet", *paths, "-m", "map", "--format", "markdown")
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[0].split("|")[2:4] == [" bm25 ", " dense "], table.stdout
    machine = run("eval", DATA / "qrels.parquet", *paths, "-m", "map", "--format", "tsv")  # the run column keeps paths
    assert [line.split("\t")[0] for line in machine.stdout.splitlines()[1:]] == [str(path) for path in paths]


def test_eval_tables_name_trec_runs_by_their_paths_when_tags_clash(tmp_path):
    paths = trec_runs(tmp_path, ("same", "same"))
    table = run("eval", DATA / "qrels.parquet", *paths, "-m", "map", "--format", "markdown")
    assert table.exit_code == 0, table.output
    assert str(paths[0]) in table.stdout.splitlines()[0] and str(paths[1]) in table.stdout.splitlines()[0]


def test_a_run_read_from_a_table_is_named_by_the_table():
    con = duckrank.connect()
    con.execute(f"CREATE TABLE bm25 AS FROM '{DATA / 'run.parquet'}'; CREATE TABLE dense AS FROM '{DATA / 'run_b.parquet'}'")
    assert list(duckrank.evaluate(str(DATA / "qrels.parquet"), ["bm25", "dense"], ["map"], con=con)) == ["bm25", "dense"]


def test_a_decomposed_path_is_shown_as_written_but_a_decomposed_id_escaped():
    from duckrank.errors import quoted, quoted_path

    assert quoted_path("/Users/me/cafe\u0301/run.txt") == "'/Users/me/cafe\u0301/run.txt'"  # macOS writes NFD names
    assert quoted("cafe\u0301") == "'cafe\\u0301'" and quoted("caf\u00e9") == "'caf\u00e9'"
    assert quoted(bytes(100)) == "'" + "\\x00" * 20 + "'…(80 more bytes)"


QRELS_FRAME = {"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]}


@pytest.mark.parametrize("lean_calls", [1, 2])  # the macros' checks, then a lean statement's, reworded
def test_a_data_error_in_one_of_several_dataframes_names_that_run(lean_calls):
    good = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
    repeated = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "a"], "score": [1.0, 2.0]})
    for _ in range(lean_calls):
        with pytest.raises(duckrank.InputError) as error:
            duckrank.evaluate(pd.DataFrame(QRELS_FRAME), {"bm25": good, "dense": repeated}, ["map", "P@3"])
    assert str(error.value).startswith("run 'dense' (DataFrame) has 2 rows for query_id 'q1', doc_id 'a'")


@pytest.mark.parametrize("as_file", [False, True])
def test_a_data_error_in_a_log_names_the_log(tmp_path, as_file):
    log = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, float("nan")], "label": [1, 0]})
    if as_file:
        log.to_parquet(tmp_path / "log.parquet")
    with pytest.raises(duckrank.InputError) as error:
        duckrank.evaluate(log=str(tmp_path / "log.parquet") if as_file else log, measures=["auc"])
    shown = f"'{tmp_path / 'log.parquet'}'" if as_file else "(DataFrame)"
    assert str(error.value).startswith(f"log {shown} has a NULL, NaN or infinite score for query_id 'q1', doc_id 'b'")
