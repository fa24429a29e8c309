"""Processes (issue 25): a forked child works, Ctrl-C is a KeyboardInterrupt, a signal lands at once.

Every case is a real subprocess bounded by a timeout, so a regression fails instead of hanging:
- after one evaluate(), os.fork() and evaluate() in the child (a database per process: the parent's
  worker threads are not in the child), and a multiprocessing fork pool, also with an idle parent;
- SIGINT during duckrank.evaluate() and duckrank.compare() reaches the caller as KeyboardInterrupt,
  not DuckDB's RuntimeError "Query interrupted";
- SIGINT, SIGTERM and SIGHUP stop `duckrank compare` with a million replicates within a couple of
  seconds (they took 9-14 s: Python runs a handler only when DuckDB's current task ends).
Budget: about 20 s on 2 cores.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import duckrank

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
QRELS, RUN, RUN_B = (str(DATA / name) for name in ("qrels.parquet", "run.parquet", "run_b.parquet"))


def python(code: str, timeout: float = 90, tmp: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           **({"TMPDIR": str(tmp)} if tmp else {})}
    try:
        return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                              timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired as error:
        pytest.fail(f"hung for {timeout} s: {error.stdout!r} {error.stderr!r}")


@pytest.fixture(scope="module")
def expected() -> float:
    return duckrank.evaluate(QRELS, RUN, ["map"])["map"]


def test_evaluate_in_a_forked_child(expected, tmp_path):
    done = python(f"""
        import os, sys, duckrank
        print(duckrank.evaluate({QRELS!r}, {RUN!r}, ["map"])["map"], flush=True)
        pid = os.fork()
        if pid == 0:
            print(duckrank.evaluate({QRELS!r}, {RUN!r}, ["map"])["map"], flush=True)
            sys.exit(0)  # a full interpreter exit: the inherited database must not abort it
        print("child", os.waitpid(pid, 0)[1], flush=True)
        print(duckrank.evaluate({QRELS!r}, {RUN!r}, ["map"])["map"])
    """, timeout=60, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[2:4] == ["child", "0"], done.stdout + done.stderr
    assert [float(x) for x in lines[:2] + lines[4:]] == pytest.approx([expected] * 3, abs=1e-12)
    assert list(tmp_path.iterdir()) == []  # the child's scratch folder went with it, the parent's too


@pytest.mark.parametrize("idle", [False, True], ids=["busy-parent", "idle-parent"])
def test_evaluate_in_a_multiprocessing_fork_pool(expected, idle, tmp_path):
    """...and the workers, stopped by the pool's terminate(), leave no scratch folder behind."""
    done = python(f"""
        import multiprocessing, threading, duckrank
        duckrank.evaluate({QRELS!r}, {RUN!r}, ["map"])
        if {idle!r}:
            threading.Event().wait(0.5)  # the parent's database sits idle, its threads parked
        with multiprocessing.get_context("fork").Pool(2) as pool:
            print(*(v["map"] for v in pool.starmap(duckrank.evaluate, [({QRELS!r}, {RUN!r}, ["map"])] * 4)))
    """, timeout=60, tmp=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [float(x) for x in done.stdout.split()] == pytest.approx([expected] * 4, abs=1e-12)
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_during_evaluate_is_a_keyboard_interrupt(tmp_path):
    done = python(f"""
        import os, signal, threading, time, duckdb, duckrank
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")  # this setup's own bar, not duckrank's, would print
        con.execute("COPY (SELECT 'q' || (i % 5000) AS query_id, 'd' || i AS doc_id, hash(i) % 1000 AS score "
                    "FROM range(4000000) t(i)) TO '{tmp_path / "run.parquet"}'")
        con.execute("COPY (SELECT 'q' || (i % 5000) AS query_id, 'd' || i AS doc_id, 1 AS relevance "
                    "FROM range(0, 4000000, 9) t(i)) TO '{tmp_path / "qrels.parquet"}'")
        threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.monotonic()
        try:
            duckrank.evaluate('{tmp_path / "qrels.parquet"}', '{tmp_path / "run.parquet"}', ["map", "ndcg@10", "P@5"])
            print("finished", time.monotonic() - start)
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "KeyboardInterrupt", done.stdout + done.stderr


def test_ctrl_c_during_compare_is_a_keyboard_interrupt():
    done = python(f"""
        import os, signal, threading, duckrank
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        try:
            duckrank.compare({QRELS!r}, [{RUN!r}, {RUN_B!r}], ["map", "ndcg@10"], permutations=1000000,
                             bootstrap=1000000)
            print("finished")
        except KeyboardInterrupt:
            print("KeyboardInterrupt")
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "KeyboardInterrupt", done.stdout + done.stderr


@pytest.mark.parametrize("number", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM], ids=lambda n: n.name)
def test_a_signal_lands_at_once(tmp_path, number):
    process = subprocess.Popen(
        [sys.executable, "-m", "duckrank", "compare", QRELS, RUN, RUN_B, "-m", "map", "-m", "ndcg@10",
         "--permutations", "1000000", "--bootstrap", "1000000", "-o", str(tmp_path / "out.tsv")],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmp_path)})
    try:
        time.sleep(2.5)  # well into the million replicates (about 15 s of work)
        assert process.poll() is None, "the run ended before the signal"
        sent = time.monotonic()
        process.send_signal(number)
        stderr = process.communicate(timeout=30)[1]
        landed = time.monotonic() - sent
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 128 + number, stderr
    assert stderr == f"duckrank: stopped by {signal.Signals(number).name}; no output was written\n"
    assert landed < 3.0, f"{signal.Signals(number).name} took {landed:.1f} s to stop duckrank"
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, and the scratch folder is gone


def test_a_signal_whose_handler_runs_after_duckdbs_interruption_still_stops_cleanly(capsys):
    # the watcher interrupts DuckDB at once, so its "interrupted" error usually reaches the command
    # before Python has run the signal's handler; the command must still exit as stopped by it
    import threading

    import click
    import duckdb

    from duckrank import _scratch
    from duckrank.cli import failures

    def interrupted_query():
        threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
        raise duckdb.InterruptException("INTERRUPT Error: Interrupted!")

    previous = _scratch.handle_signals()
    try:
        with pytest.raises(click.exceptions.Exit) as stopped:
            failures._run(interrupted_query)
    finally:
        _scratch.restore_signals(previous)
    assert stopped.value.exit_code == 128 + signal.SIGTERM
    assert capsys.readouterr().err == "duckrank: stopped by SIGTERM; no output was written\n"
