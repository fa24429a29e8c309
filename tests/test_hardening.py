"""Hostile cases (issue 13): files are sacred, bounds, numbers stay numbers, the API is a good guest.

Each case asserts the exit code and the first line of the message, that no output or temporary
file is left behind, and that every input and special file is unchanged in bytes and in type. The
command line runs in-process (click's CliRunner) except where only a real process will do: signals,
and /dev/stdout. Budget: about 15 s on 2 cores, most of it the two signalled subprocesses.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from fractions import Fraction
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

import duckrank

from helpers import first_error, run, run_shell

DATA = Path(__file__).resolve().parent.parent / "data"
DUCKRANK = Path(sys.executable).parent / "duckrank"




def snapshot(folder: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under `folder`: its type and its bytes (a link: its target)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            found[str(path)] = ("link", os.readlink(path))
        elif stat.S_ISREG(mode):
            found[str(path)] = ("file", path.read_bytes())
        else:
            found[str(path)] = (stat.filemode(mode)[0], "")
    return found


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    for name in ("qrels.parquet", "run.parquet", "run_b.parquet"):
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


def map_of(qrels, run) -> float:
    return duckrank.evaluate(str(qrels), str(run), ["map"])["map"]


# ---------------------------------------------------------------------------------------------
# files are sacred


def test_output_through_a_link_writes_its_target_and_keeps_the_link(inputs):
    target = inputs / "target.tsv"
    target.write_text("old\n")
    (inputs / "link.tsv").symlink_to("target.tsv")
    result = run("eval", inputs / "qrels.parquet", inputs / "run.parquet", "-m", "map", "-o", inputs / "link.tsv")
    assert result.exit_code == 0, result.output
    assert os.path.islink(inputs / "link.tsv") and os.readlink(inputs / "link.tsv") == "target.tsv"
    assert target.read_text().startswith("query_id\tmetric\tvalue\n")
    assert not [p for p in inputs.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_output_to_a_fifo_is_streamed_and_the_fifo_stays(inputs):
    fifo = inputs / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = run("eval", inputs / "qrels.parquet", inputs / "run.parquet", "-m", "map", "-f", "tsv", "-o", fifo)
    reader.join(10)
    assert result.exit_code == 0, result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received and received[0].startswith(b"query_id\tmetric\tvalue\n")


@pytest.mark.parametrize("fmt", ["tsv", "parquet"])
def test_output_to_a_device_is_written_never_replaced(inputs, fmt):
    device = inputs / "null"
    try:  # a null device of our own, so that a regression cannot replace the system's /dev/null
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device needs root")
    result = run("eval", inputs / "qrels.parquet", inputs / "run.parquet", "-m", "map", "-f", fmt, "-o", device)
    assert result.exit_code == 0, result.output
    assert stat.S_ISCHR(os.lstat(device).st_mode)
    assert sorted(p.name for p in inputs.iterdir()) == ["null", "qrels.parquet", "run.parquet", "run_b.parquet"]


def test_output_to_dev_stdout_goes_to_the_pipe(inputs):
    done = subprocess.run([DUCKRANK, "eval", "qrels.parquet", "run.parquet", "-m", "map", "-f", "tsv",
                           "-o", "/dev/stdout"], cwd=inputs, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("query_id\tmetric\tvalue\nall\tmap\t")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("given, output", [
    ("run*.parquet", "run_b.parquet"),  # a glob that reads the output
    ("hive", "hive/part=1/data.parquet"),  # a hive-partitioned folder that holds it
    ("run[1].parquet", "run[1].parquet"),  # a literal name with glob characters
])
def test_output_never_overwrites_a_file_an_input_reads(inputs, given, output):
    (inputs / "hive" / "part=1").mkdir(parents=True)
    shutil.copy(inputs / "run.parquet", inputs / "hive" / "part=1" / "data.parquet")
    shutil.copy(inputs / "run.parquet", inputs / "run[1].parquet")
    before = snapshot(inputs)
    result = run("eval", inputs / "qrels.parquet", inputs / given, "-m", "map", "-o", inputs / output)
    assert result.exit_code == 2
    assert first_error(result).startswith(f"Error: -o {inputs / output} is also an input")
    assert snapshot(inputs) == before


def test_a_path_that_exists_is_read_literally_and_a_glob_only_when_none_does(inputs):
    shutil.copy(inputs / "run_b.parquet", inputs / "run[1].parquet")  # 'run[1]' as a glob matches run1 only
    shutil.copy(inputs / "run.parquet", inputs / "run1.parquet")
    qrels = inputs / "qrels.parquet"
    assert map_of(qrels, inputs / "run[1].parquet") == map_of(qrels, inputs / "run_b.parquet")
    assert map_of(qrels, inputs / "run[1].parquet") != map_of(qrels, inputs / "run1.parquet")
    (inputs / "run[1].parquet").unlink()  # now no file has that name: it is a glob, and matches run1
    assert map_of(qrels, inputs / "run[1].parquet") == map_of(qrels, inputs / "run1.parquet")


def test_literal_and_glob_force_either_reading(inputs, tmp_path):
    shutil.copy(inputs / "run_b.parquet", inputs / "run[1].parquet")
    shutil.copy(inputs / "run.parquet", inputs / "run1.parquet")
    qrels, odd = str(inputs / "qrels.parquet"), str(inputs / "run[1].parquet")
    b, one = map_of(inputs / "qrels.parquet", inputs / "run_b.parquet"), map_of(inputs / "qrels.parquet", inputs / "run1.parquet")
    assert duckrank.evaluate(qrels, odd, ["map"], literal=True)["map"] == b
    assert duckrank.evaluate(qrels, odd, ["map"], literal=False)["map"] == one  # the glob matches run1 only
    for flag, expected in (("--literal", b), ("--glob", one)):
        result = run("eval", qrels, odd, "-m", "map", flag, "-f", "csv")
        assert result.exit_code == 0, result.output
        assert float(result.stdout.splitlines()[1].split(",")[-1]) == pytest.approx(expected, abs=1e-12)
    # -o compares with every file the forced glob reads
    result = run("eval", qrels, odd, "-m", "map", "--glob", "-o", inputs / "run1.parquet")
    assert result.exit_code == 2 and "is also an input" in first_error(result)
    # --literal never expands: a name no file has is not found, saying why
    result = run("eval", qrels, str(inputs / "run?.parquet"), "-m", "map", "--literal")
    assert result.exit_code == 1 and "read literally" in first_error(result)
    assert (inputs / "run1.parquet").read_bytes() == (DATA / "run.parquet").read_bytes()


def test_a_fifo_input_is_read_once_whole(inputs):
    """`duckrank eval qrels <(zcat run.gz)`: telling the format reads the head, which must not be lost."""
    run_text = inputs / "run.txt"
    assert run("convert", inputs / "run.parquet", run_text).exit_code == 0
    fifo = inputs / "run.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(run_text.read_bytes()))
    writer.start()
    result = run("eval", inputs / "qrels.parquet", fifo, "-m", "map", "-f", "tsv")
    writer.join(10)
    assert result.exit_code == 0, result.output
    assert result.stdout == run("eval", inputs / "qrels.parquet", run_text, "-m", "map", "-f", "tsv").stdout


def test_a_full_disk_is_reported_as_a_full_disk(inputs, monkeypatch):
    def full(source, target):  # as a write to a full disk fails: no file name
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    result = run("eval", inputs / "qrels.parquet", inputs / "run.parquet", "-m", "map", "-o", inputs / "out.tsv")
    assert result.exit_code == 1
    assert first_error(result).startswith(f"Error: the disk is full: no space left in {inputs};")
    assert sorted(p.name for p in inputs.iterdir()) == ["qrels.parquet", "run.parquet", "run_b.parquet"]


def test_a_full_spill_disk_is_not_called_out_of_memory(tmp_path):
    from duckrank._checks import translate_error

    con = duckdb.connect()
    con.execute("SET temp_directory = ?", [str(tmp_path)])
    error = duckdb.OutOfMemoryException("Out of Memory Error: failed to offload data block of size 64.0 KiB "
                                        "(1.7 MiB/1.7 MiB used).")
    assert str(translate_error(error, [], con)).startswith(f"the disk is full: no space left in {tmp_path} for DuckDB")


def test_convert_refuses_an_empty_id(tmp_path):
    source = tmp_path / "run.parquet"
    duckdb.sql("SELECT * FROM (VALUES ('q1', 'a', 1.0), ('', 'b', 2.0)) t(query_id, doc_id, score)").write_parquet(
        str(source))
    result = run("convert", source, tmp_path / "run.txt")
    assert result.exit_code == 1
    assert first_error(result).startswith("Error: cannot write TREC text: query_id '', doc_id 'b' is empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.parquet"]


def test_the_spill_folder_is_private_not_the_working_directory():
    import tempfile

    from duckrank._library import connect, shared_cursor

    for con in (shared_cursor(), connect()):
        folder = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
        assert folder.startswith(tempfile.gettempdir()) and ".tmp" not in folder, folder
        con.close()


@pytest.mark.parametrize("number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_long_run_leaving_nothing_behind(inputs, number, status):
    scratch = inputs / "scratch"
    scratch.mkdir()
    before = snapshot(inputs)
    process = subprocess.Popen(
        [DUCKRANK, "compare", "qrels.parquet", "run.parquet", "run_b.parquet", "-m", "map", "-m", "ndcg@10",
         "--permutations", "1000000", "--bootstrap", "1000000", "-o", "out.tsv"],
        cwd=inputs, env={**os.environ, "TMPDIR": str(scratch)}, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(2.0)  # well into the million replicates (about 15 s of work)
        assert process.poll() is None, "the run ended before the signal"
        process.send_signal(number)
        stderr = process.communicate(timeout=30)[1]
    finally:
        process.kill()
        process.wait()
    assert process.returncode == status, stderr
    assert stderr == f"duckrank: stopped by {signal.Signals(number).name}; no output was written\n"
    assert snapshot(inputs) == before  # no output, no temporary output, no ./.tmp, scratch emptied


# ---------------------------------------------------------------------------------------------
# bounds: refused before any work starts


@pytest.mark.parametrize("args, message", [
    (["compare", "--permutations", "2000000000"], "Error: --permutations must be a whole number from 0 to 1000000"),
    (["compare", "--bootstrap", "-1"], "Error: --bootstrap must be a whole number from 0 to 1000000"),
    (["eval", "--threads", "100000"], "Error: --threads must be a whole number from 1 to 1024"),
    (["eval", "--threads", "0"], "Error: --threads must be a whole number >= 1"),
    (["eval", "--memory-limit", "-1GB"], "Error: --memory-limit must be a size of at least 32MB"),
    (["eval", "--memory-limit", "1KB"], "Error: --memory-limit must be a size of at least 32MB"),
    (["eval", "--memory-limit", "150%"], "Error: --memory-limit must be a size of at least 32MB"),
    (["eval", "-M", "99999999999999999999"], "Error: -M must be a whole number from 0 to 9223372036854775807"),
])
def test_numbers_past_a_sane_limit_are_refused(inputs, args, message):
    command, *options = args
    runs = ["run.parquet", "run_b.parquet"] if command == "compare" else ["run.parquet"]
    result = run(command, inputs / "qrels.parquet", *(inputs / r for r in runs), "-m", "map", *options)
    assert result.exit_code == 2
    assert first_error(result).startswith(message)


def test_the_api_refuses_the_same_limits(inputs):
    qrels, runs = str(inputs / "qrels.parquet"), [str(inputs / "run.parquet"), str(inputs / "run_b.parquet")]
    with pytest.raises(duckrank.OptionError, match="^permutations must be a whole number from 0 to 1000000"):
        duckrank.compare(qrels, runs, ["map"], permutations=10 ** 9)
    with pytest.raises(duckrank.OptionError, match="^threads must be a whole number from 1 to 1024"):
        duckrank.evaluate(qrels, runs[0], ["map"], threads=10 ** 5)
    with pytest.raises(duckrank.OptionError, match="^memory_limit must be a size of at least 32MB"):
        duckrank.evaluate(qrels, runs[0], ["map"], memory_limit="-1GB")


def test_the_smallest_memory_limit_the_message_names_is_taken(inputs):
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    assert duckrank.evaluate(qrels, run_path, ["map"], memory_limit="32MB")["map"] == map_of(qrels, run_path)
    with pytest.raises(duckrank.OptionError, match="^memory_limit must be a size of at least 32MB.*got '31.9MB'"):
        duckrank.evaluate(qrels, run_path, ["map"], memory_limit="31.9MB")


# ---------------------------------------------------------------------------------------------
# numbers stay numbers


def err_reference(grades: list[float], g_max: float) -> float:
    """ERR (Chapelle et al. 2009) in exact rationals: sum_r (1/r) R_r prod_{i<r} (1 - R_i), with
    R = (2^g - 1) / 2^g_max, grades clamped to [0, g_max]."""
    total, reach = Fraction(0), Fraction(1)
    for rank, grade in enumerate(grades, 1):
        grade = int(max(0, min(grade, g_max)))
        stop = (Fraction(2) ** grade - 1) / Fraction(2) ** int(g_max)
        total += reach * stop / rank
        reach *= 1 - stop
    return float(total)


def ranking(grades: list[float]) -> tuple[pa.Table, pa.Table]:
    docs = [f"d{i}" for i in range(len(grades))]
    run = pa.table({"query_id": ["q"] * len(docs), "doc_id": docs, "score": [float(-i) for i in range(len(docs))]})
    qrels = pa.table({"query_id": ["q"] * len(docs), "doc_id": docs, "relevance": [float(g) for g in grades]})
    return qrels, run


@pytest.mark.parametrize("top", [3, 53, 54, 60, 1023, 1024, 1100, 10_000])
def test_err_has_no_overflow_for_any_top_grade(top):
    grades = [1, top - 1, 0, top, 2, top // 2, top]
    qrels, run = ranking(grades)
    assert duckrank.evaluate(qrels, run, ["err"])["err"] == pytest.approx(err_reference(grades, top), rel=1e-12)
    assert duckrank.evaluate(qrels, run, [f"err(g_max={top + 7})"])[f"err(g_max={top + 7})"] == pytest.approx(
        err_reference(grades, top + 7), rel=1e-12)


def test_exp_gain_past_a_double_is_refused_and_large_gain_maps_are_exact():
    qrels, run = ranking([1024, 3])
    with pytest.raises(duckrank.InputError, match="^exp gain 2\\^g - 1 of grade 1024.0 is past the largest double"):
        duckrank.evaluate(qrels, run, ["ndcg"], gain="exp")
    qrels, run = ranking([2, 1, 0])
    # DCG = 1e300/log2(2) + 1e299/log2(3); the ideal order is the same: nDCG is exactly 1
    assert duckrank.evaluate(qrels, run, ["ndcg.1=1e299,2=1e300"])["ndcg.1=1e299,2=1e300"] == 1.0
    for bad in ("inf", "nan"):
        with pytest.raises(duckrank.OptionError, match="gain_map must be a MAP of grade to finite gain"):
            duckrank.evaluate(qrels, run, [f"ndcg.1={bad}"])


def test_bad_values_get_a_clear_error_not_a_crash(inputs):
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    with pytest.raises(duckrank.OptionError, match="^complete must be True or False; got 'no'"):
        duckrank.evaluate(qrels, run_path, ["map"], complete="no")
    with pytest.raises(duckrank.OptionError, match="^measures is empty"):
        duckrank.evaluate(qrels, run_path, [])
    log = pa.table({"query_id": ["a", "a"], "doc_id": ["x", "y"], "score": [1.0, 2.0], "event": ["click", "none"]})
    with pytest.raises(duckrank.OptionError, match="^label_map= must give each label a finite number"):
        duckrank.evaluate(log=log, label="event", label_map={"click": float("nan")}, measures=["auc"])
    log_file = inputs / "log.parquet"
    duckdb.from_arrow(log).write_parquet(str(log_file))
    result = run("eval", "--log", log_file, "--label", "event", "--label-map", "click=nan", "-m", "auc")
    assert result.exit_code == 2
    assert first_error(result).startswith("Error: --label-map's grade for 'click' must be a finite number; got 'nan'")


def test_categorical_ids_score_as_their_text(inputs):
    qrels = duckdb.read_parquet(str(inputs / "qrels.parquet")).df()
    run_frame = duckdb.read_parquet(str(inputs / "run.parquet")).df()
    categorical = run_frame.astype({"query_id": "category", "doc_id": "category"})
    assert duckrank.evaluate(qrels, categorical, ["map", "ndcg@10"]) == duckrank.evaluate(qrels, run_frame,
                                                                                          ["map", "ndcg@10"])


def test_compare_takes_seed_0_and_identical_runs_tie_on_every_query(inputs):
    shutil.copy(inputs / "run.parquet", inputs / "copy.parquet")
    result = run("compare", inputs / "qrels.parquet", inputs / "run.parquet", inputs / "copy.parquet", "-m", "map",
                 "--seed", "0", "--permutations", "100", "--bootstrap", "100", "-f", "jsonl", "--quiet")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if '"is_baseline": false' in line)
    queries = duckrank.evaluate(str(inputs / "qrels.parquet"), str(inputs / "run.parquet"), ["num_q"])["num_q"]
    assert f'"wins": 0, "ties": {int(queries)}, "losses": 0' in row


# ---------------------------------------------------------------------------------------------
# the Python API is a good guest


def catalog(con: duckdb.DuckDBPyConnection) -> tuple:
    return (con.execute("SELECT current_setting('threads'), current_setting('memory_limit'), "
                        "current_setting('temp_directory')").fetchall(),
            con.execute("SELECT schema_name FROM duckdb_schemas() ORDER BY ALL").fetchall(),
            con.execute("SELECT count(*) FROM duckdb_functions() WHERE NOT internal").fetchall(),
            con.execute("SELECT table_name FROM duckdb_tables() ORDER BY ALL").fetchall(),
            con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal ORDER BY ALL").fetchall())


def test_evaluate_leaves_the_callers_database_as_it_found_it(inputs, tmp_path):
    con = duckdb.connect(str(tmp_path / "user.duckdb"))
    con.execute("SET threads = 1")
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    before = catalog(con)
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    values = duckrank.evaluate(qrels, run_path, ["map", "gm_map"], con=con, threads=2, memory_limit="1GB")
    assert values == duckrank.evaluate(qrels, run_path, ["map", "gm_map"])
    assert catalog(con) == before
    con.close()


def test_compare_leaves_the_callers_settings_and_keeps_only_the_tables_it_reads(inputs, tmp_path):
    con = duckdb.connect(str(tmp_path / "user.duckdb"))
    con.execute("SET threads = 1")
    con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    settings, _, _, tables, views = catalog(con)
    runs = [str(inputs / "run.parquet"), str(inputs / "run_b.parquet")]
    comparison = duckrank.compare(str(inputs / "qrels.parquet"), runs, ["map"], con=con, threads=2,
                                  memory_limit="1GB", permutations=200, bootstrap=200)
    alone = duckrank.compare(str(inputs / "qrels.parquet"), runs, ["map"], permutations=200, bootstrap=200)
    assert comparison.records() == alone.records()  # and the comparison still reads its tables
    after_settings, _, _, after_tables, after_views = catalog(con)
    assert after_settings == settings and after_views == views
    assert sorted(set(after_tables) - set(tables)) == sorted([(comparison.table,), (comparison.per_query_table,)])
    con.close()


def test_memory_limit_reads_the_same_after_any_number_of_calls(inputs):
    # DuckDB shows a size truncated to a tenth: '2.7GiB' reads '2.6 GiB', and setting that text back
    # read '2.5 GiB'. A call that leaves the setting alone must not touch it; one that changes it
    # restores a value that reads the same, call after call.
    con = duckdb.connect()
    con.execute("SET memory_limit = '2.7GiB'")
    shown = con.execute("SELECT current_setting('memory_limit')").fetchall()
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    for memory_limit in (None, "1GB", "1GB", None, "1GB"):
        duckrank.evaluate(qrels, run_path, ["map"], con=con, memory_limit=memory_limit)
        assert con.execute("SELECT current_setting('memory_limit')").fetchall() == shown
    duckrank.compare(qrels, [run_path, str(inputs / "run_b.parquet")], ["map"], con=con, memory_limit="1GB",
                     permutations=10, bootstrap=10)
    assert con.execute("SELECT current_setting('memory_limit')").fetchall() == shown
    con.close()


def test_a_users_own_schema_duckrank_keeps_their_objects_and_gets_no_macros(inputs):
    con = duckdb.connect()
    con.execute("CREATE SCHEMA duckrank")
    con.execute("CREATE TABLE duckrank.notes AS SELECT 1 AS x")
    con.execute("CREATE VIEW duckrank.note_view AS SELECT x FROM duckrank.notes")
    con.execute("CREATE MACRO duckrank.double_it(x) AS 2 * x")
    before = catalog(con)
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    duckrank.evaluate(qrels, run_path, ["map", "ndcg@10"], con=con)
    duckrank.evaluate(qrels, run_path, ["map"], con=con, per_query=True).fetchall()
    duckrank.compare(qrels, [run_path, str(inputs / "run_b.parquet")], ["map"], con=con, permutations=10,
                     bootstrap=10)
    assert catalog(con)[:3] == before[:3]
    assert con.execute("SELECT function_name FROM duckdb_functions() WHERE schema_name = 'duckrank'").fetchall() == [
        ("double_it",)]
    assert con.execute("SELECT view_name FROM duckdb_views() WHERE schema_name = 'duckrank'").fetchall() == [
        ("note_view",)]
    assert con.execute("SELECT duckrank.double_it(x) FROM duckrank.note_view").fetchall() == [(2,)]
    con.close()


def test_a_schema_or_catalog_qualified_table_is_read_as_that_table(inputs, tmp_path):
    con = duckdb.connect()
    run_path = str(inputs / "run.parquet")
    con.execute("CREATE SCHEMA s")
    con.execute(f"CREATE TABLE s.onlyhere AS SELECT * FROM read_parquet('{run_path}')")
    con.execute(f"ATTACH '{tmp_path / 'other.duckdb'}' AS other")
    con.execute(f"CREATE TABLE other.runs AS SELECT * FROM read_parquet('{run_path}')")
    con.execute("CREATE SCHEMA other.s2")
    con.execute(f"CREATE TABLE other.s2.run AS SELECT * FROM read_parquet('{run_path}')")
    con.execute("CREATE TABLE \"dotted.name\" AS SELECT * FROM s.onlyhere")
    qrels = str(inputs / "qrels.parquet")
    expected = duckrank.evaluate(qrels, run_path, ["map"])
    for table in ("s.onlyhere", "other.runs", "other.s2.run", "dotted.name"):
        assert duckrank.evaluate(qrels, table, ["map"], con=con) == expected, table
    with pytest.raises(duckrank.InputError, match="^run file 's.nothere' not found"):
        duckrank.evaluate(qrels, "s.nothere", ["map"], con=con)
    con.close()


# ---------------------------------------------------------------------------------------------
# installing the SQL library replaces an older one


STALE = ("CREATE SCHEMA IF NOT EXISTS duckrank; CREATE MACRO duckrank.obsolete_measure(x) AS x; "
         "COMMENT ON MACRO duckrank.obsolete_measure IS 'a measure an older library defined'")


def library_functions(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute("SELECT function_name, function_type, comment FROM duckdb_functions() "
                       "WHERE schema_name = 'duckrank' ORDER BY ALL").fetchall()


def test_duckrank_sql_installs_over_an_older_library_leaving_none_of_it(tmp_path):
    script = run("sql").stdout
    con = duckdb.connect(str(tmp_path / "my.duckdb"))
    con.execute(script)
    installed = library_functions(con)
    con.execute(STALE)
    con.execute(script)
    assert library_functions(con) == installed
    assert ("obsolete_measure",) not in [row[:1] for row in installed]
    con.execute(script)  # and again: idempotent
    assert library_functions(con) == installed
    con.close()


@pytest.mark.parametrize("older", ["loaded from python", "installed from the shell"])
def test_load_replaces_an_older_library_leaving_none_of_it(older):
    con = duckrank.load(duckdb.connect())
    installed = library_functions(con)
    con.execute(STALE)
    if older == "loaded from python":  # what an older load() left: its own digest
        con.execute("CREATE OR REPLACE MACRO duckrank.library_digest() AS 'an older library'")
    else:  # `duckrank sql` and `.read` leave no digest
        con.execute("DROP MACRO duckrank.library_digest")
    assert duckrank.load(con) is con
    assert library_functions(con) == installed
    assert duckrank.load(con) is con and library_functions(con) == installed  # and again: idempotent
    con.close()


def test_a_call_with_con_over_an_older_library_leaves_it_for_load_to_replace(inputs):
    """evaluate(con=) loads over an older library as a guest (dropping nothing); it must not mark
    the database as holding this library, or the next load() would keep the older one's leftovers."""
    con = duckrank.load(duckdb.connect())
    installed = library_functions(con)
    con.execute(STALE)
    con.execute("CREATE OR REPLACE MACRO duckrank.library_digest() AS 'an older library'")
    qrels, run_path = str(inputs / "qrels.parquet"), str(inputs / "run.parquet")
    assert duckrank.evaluate(qrels, run_path, ["map"], con=con) == duckrank.evaluate(qrels, run_path, ["map"])
    assert ("obsolete_measure", "macro", "a measure an older library defined") in library_functions(con)
    duckrank.load(con)
    assert library_functions(con) == installed
    con.close()


def test_read_in_the_shell_installs_over_an_older_library_leaving_none_of_it(tmp_path):
    database = tmp_path / "shell.duckdb"
    listing = ("SELECT function_name, function_type FROM duckdb_functions() WHERE schema_name = 'duckrank' "
               "ORDER BY ALL;")

    def shell_run(script: str) -> str:
        done = run_shell(script, "-csv", "-noheader", str(database), timeout=120)
        assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
        return done.stdout

    installed = shell_run(".read sql/duckrank.sql\n" + listing)
    assert shell_run(STALE + ";\n.read sql/duckrank.sql\n" + listing) == installed
    assert "obsolete_measure" not in installed
    assert shell_run(".read sql/duckrank.sql\n" + listing) == installed
