"""Run every contender on the same files, each as its own process, and compare.

    python bench/run.py --quick                     # W1M + L1M: every contender, correctness check
    python bench/run.py --workload W10M             # the headline comparison
    python bench/run.py --workload L50M             # AUC / GAUC against scikit-learn
    python bench/run.py --workload W100M --contenders duckrank --memory-limit 4GB --threads 2
    python bench/run.py --workload S5K              # small DataFrames in a notebook loop: per-call ms
    python bench/run.py --workload T5M              # TREC text files: the CLI against NIST trec_eval

Each contender is started by this process with subprocess and reaped with os.wait4, so wall time,
CPU time (user + sys) and peak RSS (ru_maxrss) are the child's own; the files are read once
beforehand so every contender starts from a warm page cache. trec_eval (T5M) is that child itself,
built once by ../shared/tools/trec_eval/build.sh (skipped when it cannot be). On S5K what counts is
measured inside the children: the time of one call on DataFrames already in memory (first call,
median of the warm ones), not the process's. Prints a markdown table per workload, the targets of
the benchmark issue (met or not), and any disagreement between contenders' numbers (with
trec_eval, printed to 4 decimals, to 1e-4; otherwise 1e-6); writes everything to
bench/results.json (merged per workload).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate
from contenders import DUCKRANK_MEASURES

PYTHON = sys.executable
DUCKRANK = shutil.which("duckrank", path=str(Path(PYTHON).parent)) or shutil.which("duckrank") or "duckrank"
CONTENDERS_PY = str(HERE / "contenders.py")
RESULTS = HERE / "results.json"
NUMBA_WARM = generate.WORK / ".numba-cache"
TREC_EVAL_BUILD = HERE.parent.parent / "shared" / "tools" / "trec_eval" / "build.sh"
TOLERANCE = 1e-6
REFERENCE_TOLERANCE = {"trec_eval": 1e-4}  # trec_eval prints 4 decimals
CODE_STATE: dict = {}


# ---------------------------------------------------------------------------------------------
# measuring one child process


def in_spawned_child(function, *args, **kwargs):
    """function(*args, **kwargs) in a fresh spawned process. The workload generators run there: a
    parent whose DuckDB once held gigabytes passes its resident size on to every contender it starts
    (Linux carries it into a child's peak RSS across fork and exec), which would inflate their figures."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(function, args, kwargs)


def cpu_busy_fraction(seconds: float = 1.0) -> float:
    """How busy the machine's CPUs are (0..1) over `seconds`, from /proc/stat."""
    def sample() -> tuple[int, int]:
        with open("/proc/stat") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
        idle = fields[3] + fields[4]
        return sum(fields) - idle, sum(fields)
    busy0, total0 = sample()
    time.sleep(seconds)
    busy1, total1 = sample()
    return (busy1 - busy0) / max(total1 - total0, 1)


def wait_for_idle(max_wait: float, threshold: float = 0.15) -> float:
    """Wait (up to max_wait s) until other processes leave the CPUs mostly idle; returns the busy
    fraction last seen, recorded with each measurement so a noisy one can be spotted."""
    deadline = time.monotonic() + max_wait
    busy = cpu_busy_fraction()
    while busy > threshold and time.monotonic() < deadline:
        busy = cpu_busy_fraction(2.0)
    return busy


def measure(name: str, command: list[str], env: dict | None = None, timeout: float = 3600,
            max_wait: float = 0, parse=None) -> dict:
    """Run `command`, return wall/CPU seconds, peak RSS and its stdout parsed by `parse` (default
    parse_output: the contenders' JSON), or its failure."""
    busy_before = wait_for_idle(max_wait) if max_wait else cpu_busy_fraction(0.5)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        # run from bench/work so that anything a contender leaves behind (DuckDB's .tmp spill
        # folder, caches) stays in the git-ignored folder
        process = subprocess.Popen(command, stdout=out, stderr=err, env={**os.environ, **(env or {})},
                                   cwd=generate.WORK)
        deadline = started + timeout
        status = rusage = None
        while True:
            pid, status, rusage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                pid, status, rusage = os.wait4(process.pid, 0)
                break
            time.sleep(0.005)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    result = {
        "name": name, "command": " ".join(command), "wall_s": round(wall, 3),
        "cpu_s": round(rusage.ru_utime + rusage.ru_stime, 3), "peak_rss_mb": round(rusage.ru_maxrss / 1024, 1),
        "exit": process.returncode, "machine_busy_before": round(busy_before, 2),
        "when": time.strftime("%Y-%m-%d %H:%M:%S"), "code": CODE_STATE,
    }
    if process.returncode != 0:
        result["error"] = (stderr.strip().splitlines() or ["(no stderr)"])[-1][:500]
        result["timed_out"] = wall >= timeout
        return result
    result.update((parse or parse_output)(stdout))
    warnings = [line for line in stderr.splitlines() if line.strip()]
    if warnings:
        result["stderr_tail"] = warnings[-3:]
    return result


def parse_output(stdout: str) -> dict:
    """A contender's JSON object, or duckrank's `--format json` rows, as {values, phases}."""
    data = json.loads(stdout)
    if isinstance(data, list):  # duckrank eval --format json: [{"query_id": "all", "metric", "value"}]
        return {"values": {row["metric"]: row["value"] for row in data if row.get("query_id") == "all"}}
    return data


def parse_trec_eval(stdout: str) -> dict:
    """trec_eval's summary lines (`name \t all \t value`) as {values}; names as trec_eval prints
    them (P_5, ndcg_cut_10, success_10)."""
    values = {}
    for line in stdout.splitlines():
        fields = [f.strip() for f in line.split("\t")]
        if len(fields) == 3 and fields[1] == "all":
            try:
                values[fields[0]] = float(fields[2])
            except ValueError:  # runid's value is the run's name
                pass
    return {"values": values}


# ---------------------------------------------------------------------------------------------
# the contenders of each kind of workload


class Unavailable(Exception):
    """A contender this machine cannot run (trec_eval without make/gcc): skipped, not failed."""


def engine_flags(args) -> list[str]:
    flags = []
    if args.threads:
        flags += ["--threads", str(args.threads)]
    if args.memory_limit:
        flags += ["--memory-limit", args.memory_limit]
    if args.temp_dir:
        flags += ["--temp-dir", args.temp_dir]
    return flags


def duckrank_eval(qrels: Path, run: Path, args) -> list[str]:
    measures = [flag for m in DUCKRANK_MEASURES for flag in ("-m", m)]
    return [DUCKRANK, "eval", str(qrels), str(run), *measures, "--format", "json", "--quiet", *engine_flags(args)]


def duckrank_log(log: Path, measures: list[str], args) -> list[str]:
    flags = [flag for m in measures for flag in ("-m", m)]
    return [DUCKRANK, "eval", "--log", str(log), "--label", "click", "--query-col", "user_id",
            "--doc-col", "item_id", *flags, "--format", "json", "--quiet", *engine_flags(args)]


def floor_command(qrels: Path, run: Path, args) -> list[str]:
    command = [PYTHON, CONTENDERS_PY, "floor", str(qrels), str(run)]
    if args.threads:
        command.append(f"--threads={args.threads}")
    if args.memory_limit:
        command.append(f"--memory-limit={args.memory_limit}")
    return command


def trec_eval_binary() -> str:
    """NIST trec_eval 10's path, built (once; the script caches it) by the shared build script."""
    if not TREC_EVAL_BUILD.exists():
        raise Unavailable(f"{TREC_EVAL_BUILD} not found")
    built = subprocess.run(["bash", str(TREC_EVAL_BUILD)], capture_output=True, text=True)
    if built.returncode != 0 or not built.stdout.strip():
        reason = (built.stderr.strip().splitlines() or ["no output"])[-1]
        raise Unavailable(f"build.sh exited {built.returncode}: {reason}")
    return built.stdout.strip().splitlines()[-1]


# the same twelve measures as DUCKRANK_MEASURES, in trec_eval's own flags
TREC_EVAL_FLAGS = ["-m", "map", "-m", "P.5,10,20", "-m", "recall.100,1000", "-m", "ndcg", "-m", "ndcg_cut.10",
                   "-m", "recip_rank", "-m", "Rprec", "-m", "bpref", "-m", "success.10"]

RANKING_CONTENDERS = ["duckrank", "pytrec_eval", "ranx_cold", "ranx_warm", "floor", "duckrank_twice", "lean"]
LOG_CONTENDERS = ["duckrank_auc", "duckrank_gauc", "duckrank_auc_gauc", "sklearn_auc", "numpy_gauc", "lean_gauc"]
SMALL_CONTENDERS = ["s5k_duckrank", "s5k_duckrank_cold", "s5k_pytrec_eval", "s5k_duckdb", "s5k_sweep_duckrank",
                    "s5k_sweep_pytrec_eval"]
TEXT_CONTENDERS = ["duckrank", "trec_eval", "pytrec_eval"]
CONTENDERS = {"ranking": RANKING_CONTENDERS, "log": LOG_CONTENDERS, "small": SMALL_CONTENDERS,
              "text": TEXT_CONTENDERS}
DESCRIPTIONS = {
    "duckrank": "duckrank CLI, end to end (`duckrank eval ... --format json`)",
    "pytrec_eval": "pytrec_eval-terrier, end to end (pyarrow read, dicts, evaluate)",
    "ranx_cold": "ranx, end to end, numba cache cold",
    "ranx_warm": "ranx, end to end, numba cache warm",
    "floor": "floor: one row_number() pass joined to the qrels (DuckDB)",
    "duckrank_twice": "duckrank.evaluate twice in one fresh process (warm-up check)",
    "ranx_untied": "ranx on the run with ties pre-broken in trec_eval's order (diagnostic)",
    "lean": "what-if: the twelve measures in one lean DuckDB query (bench/lean.py; not duckrank)",
    "duckrank_auc": "duckrank CLI `-m AUC_global`, end to end",
    "duckrank_gauc": "duckrank CLI `-m GAUC`, end to end",
    "duckrank_auc_gauc": "duckrank CLI `-m AUC_global -m GAUC`, end to end",
    "sklearn_auc": "scikit-learn roc_auc_score, end to end (pyarrow read + score)",
    "numpy_gauc": "numpy rank sums: GAUC + global AUC oracle (pyarrow read)",
    "lean_gauc": "what-if: GAUC in one DuckDB window pass (bench/lean.py --gauc; not duckrank)",
    "s5k_duckrank": "duckrank.evaluate on pandas DataFrames, per call (first + median of 50; the bench's cache "
                    "folder, as an earlier process left it)",
    "s5k_duckrank_cold": "s5k_duckrank in a process with an empty cache folder: the first process ever",
    "s5k_pytrec_eval": "pytrec_eval per call: dicts from the DataFrames, evaluate, mean (first + median of 50)",
    "s5k_duckdb": "a hand-written DuckDB query of the four measures, per call (first + median of 50)",
    "s5k_sweep_duckrank": "100 runs (run_id column) in one duckrank.evaluate call (first + median of 5)",
    "s5k_sweep_pytrec_eval": "100 runs: one evaluator, 100 dicts + evaluate + mean (first + median of 5)",
    "trec_eval": "NIST trec_eval 10 (C), the binary itself on the text files",
}
# the same name on TREC text: pytrec_eval reads the files with its own parsers
TEXT_DESCRIPTIONS = {**DESCRIPTIONS,
                     "pytrec_eval": "pytrec_eval-terrier, end to end (parse_qrel / parse_run, evaluate)"}


def ranking_command(name: str, folder: Path, args) -> tuple[list[str], dict]:
    qrels, run = folder / "qrels.parquet", folder / "run.parquet"
    if name == "duckrank":
        return duckrank_eval(qrels, run, args), {}
    if name == "floor":
        return floor_command(qrels, run, args), {}
    if name == "ranx_cold":
        return [PYTHON, CONTENDERS_PY, "ranx", str(qrels), str(run)], {"NUMBA_CACHE_DIR": args.numba_cold}
    if name == "ranx_warm":
        return [PYTHON, CONTENDERS_PY, "ranx", str(qrels), str(run)], {"NUMBA_CACHE_DIR": str(NUMBA_WARM)}
    if name == "lean":
        return [PYTHON, str(HERE / "lean.py"), str(qrels), str(run)], {}
    if name == "ranx_untied":
        return [PYTHON, CONTENDERS_PY, "ranx", str(qrels), str(run), "--untie=1"], {"NUMBA_CACHE_DIR": str(NUMBA_WARM)}
    return [PYTHON, CONTENDERS_PY, name, str(qrels), str(run)], {}


def log_command(name: str, folder: Path, args) -> tuple[list[str], dict]:
    log = folder / "log.parquet"
    if name == "duckrank_auc":
        return duckrank_log(log, ["AUC_global"], args), {}
    if name == "duckrank_gauc":
        return duckrank_log(log, ["GAUC"], args), {}
    if name == "duckrank_auc_gauc":
        return duckrank_log(log, ["AUC_global", "GAUC"], args), {}
    if name == "lean_gauc":
        return [PYTHON, str(HERE / "lean.py"), "--gauc", str(log)], {}
    return [PYTHON, CONTENDERS_PY, name, str(log)], {}


def small_command(name: str, folder: Path, args) -> tuple[list[str], dict]:
    data = folder / ("sweep.parquet" if name.startswith("s5k_sweep") else "run.parquet")
    if name == "s5k_duckrank_cold":
        cold = tempfile.mkdtemp(prefix="duckrank-cold-", dir=generate.WORK)
        return [PYTHON, CONTENDERS_PY, "s5k_duckrank", str(folder / "qrels.parquet"), str(data)], {CACHE_VARIABLE: cold}
    return [PYTHON, CONTENDERS_PY, name, str(folder / "qrels.parquet"), str(data)], {}


def text_command(name: str, folder: Path, args) -> tuple[list[str], dict]:
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    if name == "duckrank":
        return duckrank_eval(qrels, run, args), {}
    if name == "trec_eval":
        return [trec_eval_binary(), *TREC_EVAL_FLAGS, str(qrels), str(run)], {}
    return [PYTHON, CONTENDERS_PY, "pytrec_eval_text", str(qrels), str(run)], {}


COMMANDS = {"ranking": ranking_command, "log": log_command, "small": small_command, "text": text_command}

# duckrank keeps its macro catalog and rendered lean passes in a cache folder (duckrank._library
# .cache_folder): the bench's own, kept between runs as a user's is between processes; a *_cold
# contender gets an empty one of its own.
CACHE_VARIABLE = "DUCKRANK_CACHE_DIR"


def prime_numba_cache(args) -> None:
    """Fill the warm numba cache once (ranx on W1M), so ranx_warm never pays compilation."""
    if NUMBA_WARM.exists() and any(NUMBA_WARM.rglob("*.nbi")):
        return
    print("priming ranx's numba cache (compiles once; a few minutes) ...", file=sys.stderr)
    folder = in_spawned_child(generate.generate, "W1M")
    command, _ = ranking_command("ranx_warm", folder, args)
    result = measure("ranx_prime", command, {"NUMBA_CACHE_DIR": str(NUMBA_WARM)})
    if result["exit"] != 0:
        raise SystemExit(f"could not prime ranx's numba cache: {result.get('error')}")


def warm_page_cache(folder: Path) -> None:
    for path in [*folder.glob("*.parquet"), *folder.glob("*.txt")]:
        with open(path, "rb") as handle:
            while handle.read(1 << 24):
                pass


def help_latency(repeats: int = 5) -> dict:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([DUCKRANK, "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    return {"median_s": round(statistics.median(times), 3), "max_s": round(max(times), 3),
            "runs_s": [round(t, 3) for t in times]}


# ---------------------------------------------------------------------------------------------
# comparing and reporting


def compare(results: dict, reference: str, names: list[str], tolerance: float = TOLERANCE) -> dict:
    """Max absolute difference of every contender's values from the reference's, per measure."""
    ref = results.get(reference, {}).get("values")
    report = {}
    if not ref:
        return report
    for name in names:
        values = results.get(name, {}).get("values")
        if name == reference or not values:
            continue
        diffs = {m: abs(values[m] - ref[m]) for m in ref if m in values
                 and values[m] is not None and ref[m] is not None}
        worst = max(diffs.values(), default=0.0)
        report[name] = {"reference": reference, "compared": sorted(diffs), "max_abs_diff": worst,
                        "agrees": worst <= tolerance and bool(diffs), "tolerance": tolerance,
                        "over_tolerance": {m: d for m, d in diffs.items() if d > tolerance}}
    return report


def failure(result: dict) -> str:
    """A table cell for a contender that did not finish (exit None: skipped, the reason says why)."""
    error = result.get("error", "")[:80]
    return error if result.get("exit") is None else f"failed: {error}"


def fmt_ratio(x: float | None) -> str:
    return "" if x is None else (f"{x:.1f}×" if x >= 10 else f"{x:.2f}×")


def markdown_table(results: dict, base: str) -> str:
    base_result = results.get(base, {})
    rows = ["| contender | wall s | CPU s | peak RSS MB | wall ÷ duckrank | RSS ÷ duckrank | inside the process (s) |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        if r.get("exit") != 0:
            rows.append(f"| {name} | {failure(r)} | | | | | |")
            continue
        wall_ratio = r["wall_s"] / base_result["wall_s"] if base_result.get("exit") == 0 else None
        rss_ratio = r["peak_rss_mb"] / base_result["peak_rss_mb"] if base_result.get("exit") == 0 else None
        # "startup": from the script's start to its libraries imported (pyarrow, pytrec_eval, ranx, ...)
        phases = ", ".join(f"{'imports' if k == 'startup' else k} {v:.2f}" for k, v in r.get("phases", {}).items()
                           if v >= 0.005 or k not in ("import", "startup"))
        rows.append(f"| {name} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} | "
                    f"{fmt_ratio(wall_ratio)} | {fmt_ratio(rss_ratio)} | {phases} |")
    return "\n".join(rows)


def small_base(name: str) -> str:
    """The S5K duckrank contender a row is compared with: the sweep against the sweep."""
    return "s5k_sweep_duckrank" if name.startswith("s5k_sweep") else "s5k_duckrank"


def small_table(results: dict) -> str:
    """S5K: the time of one call inside the process (a sweep of 100 runs counts as one call); the
    process's wall time and RSS are context only (they include starting Python and reading)."""
    rows = ["one call on DataFrames in memory; warm median of 50 calls (sweeps: of 5), ms\n",
            "| contender | first call ms | warm median ms | warm ÷ duckrank | process wall s | peak RSS MB "
            "| other phases (ms) |",
            "|---|---:|---:|---:|---:|---:|---|"]
    for name, r in results.items():
        if r.get("exit") != 0:
            rows.append(f"| {name} | {failure(r)} | | | | | |")
            continue
        phases = r["phases"]
        base = results.get(small_base(name), {})
        ratio = (phases["warm_median"] / base["phases"]["warm_median"]) if base.get("exit") == 0 else None
        other = ", ".join(f"{k} {v * 1e3:.1f}" for k, v in phases.items()
                          if k not in ("first_call", "warm_median", "warm_calls", "startup"))
        rows.append(f"| {name} | {phases['first_call'] * 1e3:.1f} | {phases['warm_median'] * 1e3:.2f} | "
                    f"{fmt_ratio(ratio)} | {r['wall_s']:.2f} | {r['peak_rss_mb']:.0f} | {other} |")
    return "\n".join(rows)


# the targets that depend on the workload (a workload not listed: the default)
PYTREC_SPEEDUP = {"W1M": 2}  # end to end, × faster than pytrec_eval; default 10 (W10M's)
FLOOR_RATIO = {"W10M": 1.0}  # end to end, × the floor; default 1.5 (the earlier target)
W100M_RATIO = 10  # W100M's time ≤ this × W10M's
# issue 22's: S5K's warm call ≤ these × pytrec_eval's and the hand-written query's; the 100-run sweep
# ≤ this × 100 pytrec_eval calls' time; T5M ≤ this × trec_eval 10's
S5K_PYTREC_RATIO, S5K_HAND_WRITTEN_RATIO, SWEEP_RATIO, T5M_TREC_EVAL_RATIO = 3.0, 1.0, 0.5, 0.7


def ranking_targets(workload: str, results: dict, everything: dict, options: dict) -> list[dict]:
    targets = []

    def add(text: str, ok: bool | None, detail: str) -> None:
        targets.append({"target": text, "met": ok, "detail": detail})

    d = results.get("duckrank", {})
    if d.get("exit") != 0:
        add("duckrank completes", False, d.get("error", "not run"))
        return targets
    dw, drss = d["wall_s"], d["peak_rss_mb"]
    p = results.get("pytrec_eval", {})
    if p.get("exit") == 0:
        speedup = PYTREC_SPEEDUP.get(workload, 10)
        add(f"≥{speedup}× faster than pytrec_eval end to end", p["wall_s"] / dw >= speedup,
            f"{p['wall_s']:.2f} s / {dw:.2f} s = {p['wall_s'] / dw:.1f}×")
        add("peak RSS ≤ ¼ of pytrec_eval's", drss <= p["peak_rss_mb"] / 4,
            f"{drss:.0f} MB vs {p['peak_rss_mb']:.0f} MB = {drss / p['peak_rss_mb']:.2f}")
    for ranx in ("ranx_warm", "ranx_cold"):
        r = results.get(ranx, {})
        if r.get("exit") == 0:
            add(f"≥15× faster than ranx end to end ({ranx})", r["wall_s"] / dw >= 15,
                f"{r['wall_s']:.2f} s / {dw:.2f} s = {r['wall_s'] / dw:.1f}×")
    r = results.get("ranx_warm", {})
    if r.get("exit") == 0:
        alone = min(r["phases"]["evaluate"], r["phases"]["evaluate_again"])
        add("faster than ranx's warm evaluate call alone", dw < alone,
            f"{dw:.2f} s vs evaluate {r['phases']['evaluate']:.2f} s (first call, cache loaded from disk), "
            f"{r['phases']['evaluate_again']:.2f} s (second call)")
    f = results.get("floor", {})
    if f.get("exit") == 0:
        ratio = FLOOR_RATIO.get(workload, 1.5)
        add(f"≤{ratio:.1f}× the floor (both end to end)", dw <= ratio * f["wall_s"],
            f"{dw:.2f} s / {f['wall_s']:.2f} s = {dw / f['wall_s']:.2f}× (floor query alone {f['phases']['query']:.2f} s)")
    t = results.get("duckrank_twice", {})
    if t.get("exit") == 0:
        first, second = t["phases"]["first_evaluate"], t["phases"]["second_evaluate"]
        add("first evaluation in a fresh process as fast as the second", first <= 1.15 * second,
            f"first {first:.2f} s, second {second:.2f} s (ratio {first / second:.2f}; import {t['phases']['import']:.2f} s)")
    if workload == "W100M":
        limit = options.get("memory_limit")
        if limit:
            add(f"completes with --memory-limit {limit}", True, f"{dw:.1f} s")
            limit_mb = parse_size_mb(limit)
            if limit_mb:
                add("peak RSS under the memory limit", drss <= limit_mb, f"{drss:.0f} MB vs {limit_mb:.0f} MB")
        w10 = everything.get("W10M", {}).get("contenders", {}).get("duckrank", {})
        if w10.get("exit") == 0:
            add(f"≤{W100M_RATIO}× the W10M time", dw <= W100M_RATIO * w10["wall_s"],
                f"{dw:.1f} s / {w10['wall_s']:.2f} s = {dw / w10['wall_s']:.1f}× (W10M from results.json)")
    return targets


def parse_size_mb(text: str) -> float | None:
    """DuckDB's size spelling (4GB = 4e9 bytes, 4GiB = 4 * 2^30) in MiB, the unit of ru_maxrss / 1024."""
    from duckrank._library import size_bytes

    size = size_bytes(text)
    return None if size is None else size / 2 ** 20


def small_targets(results: dict) -> list[dict]:
    """S5K: duckrank's time per call inside the process against its peers'."""
    targets = []

    def add(text: str, ok: bool, detail: str) -> None:
        targets.append({"target": text, "met": ok, "detail": detail})

    def ok(name: str) -> dict | None:
        r = results.get(name, {})
        return r["phases"] if r.get("exit") == 0 else None

    d = ok("s5k_duckrank")
    if d is None:
        add("duckrank completes", False, results.get("s5k_duckrank", {}).get("error", "not run"))
    else:
        dm = d["warm_median"]
        for peer, factor, what in (("s5k_pytrec_eval", S5K_PYTREC_RATIO, "pytrec_eval's"),
                                   ("s5k_duckdb", S5K_HAND_WRITTEN_RATIO, "the hand-written DuckDB query's")):
            q = ok(peer)
            if q:
                add(f"warm call ≤{factor:.1f}× {what}", dm <= factor * q["warm_median"],
                    f"{dm * 1e3:.2f} ms vs {q['warm_median'] * 1e3:.2f} ms = {dm / q['warm_median']:.2f}×")
        first, imported = d["first_call"], d["import_duckdb"]
        cold = ok("s5k_duckrank_cold")
        add("first call ≤ `import duckdb` + 100 ms", first - 0.1 <= imported,
            f"first call {first * 1e3:.0f} ms vs import duckdb {imported * 1e3:.0f} ms: "
            f"{(first - imported) * 1e3:+.0f} ms (import duckrank, before the call: "
            f"{d['import_duckrank'] * 1e3:.0f} ms; the cache folder as an earlier process left it"
            + (f"; with an empty one, the first process ever: {(cold['first_call'] - cold['import_duckdb']) * 1e3:+.0f} ms"
               if cold else "") + ")")
    ds, ps = ok("s5k_sweep_duckrank"), ok("s5k_sweep_pytrec_eval")
    sweep = f"100-run sweep in one call ≤{SWEEP_RATIO}× the time of 100 pytrec_eval calls"
    if ds and ps:
        add(sweep, ds["warm_median"] <= SWEEP_RATIO * ps["warm_median"],
            f"{ds['warm_median'] * 1e3:.0f} ms / {ps['warm_median'] * 1e3:.0f} ms "
            f"= {ds['warm_median'] / ps['warm_median']:.2f}×")
    elif "s5k_sweep_duckrank" in results and not ds:
        add(sweep, False, results["s5k_sweep_duckrank"].get("error", "not run"))
    return targets


def text_targets(results: dict) -> list[dict]:
    """T5M: the duckrank CLI against NIST trec_eval and pytrec_eval on TREC text, end to end."""
    d = results.get("duckrank", {})
    if d.get("exit") != 0:
        return [{"target": "duckrank completes", "met": False, "detail": d.get("error", "not run")}]
    dw, targets = d["wall_s"], []
    t, p = results.get("trec_eval", {}), results.get("pytrec_eval", {})
    if t.get("exit") == 0:
        targets.append({"target": f"≤{T5M_TREC_EVAL_RATIO}× trec_eval's wall time",
                        "met": dw <= T5M_TREC_EVAL_RATIO * t["wall_s"],
                        "detail": f"{dw:.2f} s vs {t['wall_s']:.2f} s = {dw / t['wall_s']:.2f}×"})
    if p.get("exit") == 0:
        targets.append({"target": "faster than pytrec_eval end to end", "met": dw < p["wall_s"],
                        "detail": f"{dw:.2f} s vs {p['wall_s']:.2f} s "
                                  f"(pytrec_eval ÷ duckrank = {p['wall_s'] / dw:.2f}×)"})
    return targets


def log_targets(results: dict) -> list[dict]:
    targets = []
    s = results.get("sklearn_auc", {})
    for name in ("duckrank_auc", "duckrank_gauc", "duckrank_auc_gauc"):
        d = results.get(name, {})
        if d.get("exit") == 0 and s.get("exit") == 0:
            targets.append({"target": f"{name} faster than scikit-learn end to end",
                            "met": d["wall_s"] < s["wall_s"],
                            "detail": f"{d['wall_s']:.2f} s vs {s['wall_s']:.2f} s = {s['wall_s'] / d['wall_s']:.2f}×"})
    return targets


def code_state() -> dict:
    """Which duckrank the numbers are for: the commit, and a hash of sql/ and duckrank/ as they are
    on disk (uncommitted edits included)."""
    import hashlib

    root = HERE.parent
    digest = hashlib.sha256()
    for path in sorted([*root.glob("sql/*.sql"), *root.glob("duckrank/*.py")]):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    state = {"tree_sha256": digest.hexdigest()[:12]}
    try:
        state["commit"] = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "sql", "duckrank"],
                               capture_output=True, text=True, check=True).stdout.strip()
        state["uncommitted_changes"] = bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        pass
    return state


def machine() -> dict:
    info = {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            info["cpu"] = next((line.split(":", 1)[1].strip() for line in cpuinfo
                                if line.startswith("model name")), "?")
        with open("/proc/meminfo") as meminfo:
            total = next((line for line in meminfo if line.startswith("MemTotal")), None)
            if total:
                info["ram_gb"] = round(int(total.split()[1]) / 1024 ** 2, 1)
    except OSError:
        pass
    versions = {}
    for module in ("duckdb", "duckrank", "pytrec_eval", "ranx", "numba", "sklearn", "pyarrow", "pandas", "numpy"):
        try:
            from importlib.metadata import version
            dist = {"pytrec_eval": "pytrec-eval-terrier", "sklearn": "scikit-learn"}.get(module, module)
            versions[module] = version(dist)
        except Exception:  # noqa: BLE001
            versions[module] = None
    info["versions"] = versions
    return info


# ---------------------------------------------------------------------------------------------


def run_workload(workload: str, args, everything: dict) -> dict:
    kind = generate.WORKLOADS[workload][0]
    print(f"\n## {workload}\n", flush=True)
    started = time.perf_counter()
    folder = in_spawned_child(generate.generate, workload, seed=args.seed)
    manifest = json.loads((folder / "manifest.json").read_text())
    print(f"files: {folder} ({json.dumps(manifest['stats'])}; ready in {time.perf_counter() - started:.1f} s)",
          file=sys.stderr)
    warm_page_cache(folder)
    default = CONTENDERS[kind]
    descriptions = TEXT_DESCRIPTIONS if kind == "text" else DESCRIPTIONS
    names = [n for n in (args.contenders.split(",") if args.contenders else default)
             if n in default or (kind == "ranking" and n == "ranx_untied")]
    if workload == "W1M" and args.verify and "ranx_untied" not in names and "ranx_warm" in names:
        names.append("ranx_untied")
    results: dict[str, dict] = {}
    cold_dir = None
    for name in names:
        if name in ("ranx_warm", "ranx_untied"):
            prime_numba_cache(args)
        if name == "ranx_cold":
            cold_dir = tempfile.mkdtemp(prefix="numba-cold-", dir=generate.WORK)
            args.numba_cold = cold_dir
        try:
            command, env = COMMANDS[kind](name, folder, args)
            env = {CACHE_VARIABLE: str(generate.WORK / "duckrank-cache"), **env}
        except Unavailable as reason:
            print(f"skipping {name}: {reason}", file=sys.stderr, flush=True)
            results[name] = {"name": name, "exit": None, "error": f"skipped: {reason}",
                             "description": descriptions[name]}
            continue
        print(f"running {name}: {' '.join(command)}", file=sys.stderr, flush=True)
        repeats = 1 if name.endswith("_cold") else max(args.repeat, 1)
        parse = parse_trec_eval if name == "trec_eval" else parse_output
        attempts = []
        for _ in range(repeats):
            attempts.append(measure(name, command, env, timeout=args.timeout, max_wait=args.wait_idle,
                                    parse=parse))
            r = attempts[-1]
            status = f"{r['wall_s']:.2f} s, {r['peak_rss_mb']:.0f} MB" if r["exit"] == 0 else f"FAILED: {r.get('error')}"
            print(f"  -> {status} (machine busy {r['machine_busy_before']:.0%} before)", file=sys.stderr, flush=True)
            if r["exit"] != 0:
                break
        # the fastest of the repeats: the one least disturbed by other work on the machine
        best = min(attempts, key=lambda a: (a["exit"] != 0, a["wall_s"]))
        if len(attempts) > 1:
            best["repeats_wall_s"] = [a["wall_s"] for a in attempts]
            best["repeats_peak_rss_mb"] = [a["peak_rss_mb"] for a in attempts]
        best["description"] = descriptions[name]
        results[name] = best
        if name == "ranx_cold" and cold_dir:
            shutil.rmtree(cold_dir, ignore_errors=True)
        if name.endswith("_cold") and env.get(CACHE_VARIABLE, "").startswith(str(generate.WORK / "duckrank-cold-")):
            shutil.rmtree(env[CACHE_VARIABLE], ignore_errors=True)
    previous = everything.get(workload, {}).get("contenders", {}) if args.contenders and not args.fresh else {}
    if previous:  # a partial re-run replaces only the contenders it ran
        order = [*default, "ranx_untied"]
        merged = {**previous, **results}
        results = {n: merged[n] for n in sorted(merged, key=lambda n: order.index(n) if n in order else len(order))}
    options = {"threads": args.threads, "memory_limit": args.memory_limit, "temp_dir": args.temp_dir}
    entry = {"when": time.strftime("%Y-%m-%d %H:%M:%S"), "files": manifest, "contenders": results,
             "options": options}
    entry.update(summarize(workload, entry, everything))
    return entry


# kind: (the duckrank contender the table's ratios divide by, the correctness reference)
BASES = {"ranking": ("duckrank", "pytrec_eval"), "log": ("duckrank_auc_gauc", "numpy_gauc"),
         "small": ("s5k_duckrank", "s5k_pytrec_eval"), "text": ("duckrank", "trec_eval")}


def summarize(workload: str, entry: dict, everything: dict) -> dict:
    """Print a workload's table, targets and correctness; return the targets and correctness."""
    kind = generate.WORKLOADS[workload][0]
    results, options = entry["contenders"], entry.get("options", {})
    base, reference = BASES[kind]
    print(small_table(results) if kind == "small" else markdown_table(results, base))
    if reference not in results or not results[reference].get("values"):
        reference = base
    tolerance = REFERENCE_TOLERANCE.get(reference, TOLERANCE)
    # the sweeps hold other values (per run): they are checked against each other below
    checked = [n for n in results if n != "floor" and not n.startswith("s5k_sweep")]
    correctness = compare(results, reference, checked, tolerance)
    if kind == "small":
        correctness.update(compare(results, "s5k_sweep_pytrec_eval", ["s5k_sweep_duckrank"]))
    if kind == "ranking":
        targets = ranking_targets(workload, results, everything, options)
    elif kind == "small":
        targets = small_targets(results)
    elif kind == "text":
        targets = text_targets(results)
    else:
        targets = log_targets(results)
    if kind == "log" and "sklearn_auc" in results and "numpy_gauc" in results:
        s, n = results["sklearn_auc"].get("values", {}), results["numpy_gauc"].get("values", {})
        if s and n:
            correctness["numpy_gauc (global AUC)"] = {
                "reference": "sklearn_auc", "max_abs_diff": abs(s["AUC_global"] - n["AUC_global"]),
                "agrees": abs(s["AUC_global"] - n["AUC_global"]) <= TOLERANCE}
    print("\nTargets:")
    for t in targets:
        mark = "met" if t["met"] else "MISSED"
        print(f"- {t['target']}: **{mark}** ({t['detail']})")
    print(f"\nCorrectness (max |difference| from the reference, tolerance {tolerance:g}):")
    for name, c in correctness.items():
        verdict = "agrees" if c["agrees"] else "DISAGREES"
        extra = ""
        if c.get("over_tolerance"):
            extra = "; over tolerance: " + ", ".join(f"{m} {d:.2e}" for m, d in c["over_tolerance"].items())
        compared = f" on {', '.join(c['compared'])}" if c.get("compared") and len(c["compared"]) < 4 else ""
        compared += f" ({len(c['compared'])} values)" if len(c.get("compared", [])) > 12 else ""  # the sweeps
        print(f"- {name} vs {c.get('reference', 'sklearn')}{compared}: {verdict} (max {c['max_abs_diff']:.2e}{extra})")
    return {"targets": targets, "correctness": correctness}


def report(everything: dict) -> None:
    """Re-print every workload in results.json (no measuring)."""
    for workload in generate.WORKLOADS:
        entry = everything.get(workload)
        if not entry:
            continue
        ours = ("duckrank", "floor", "lean", "s5k_duckrank", "s5k_sweep_duckrank")
        codes = sorted({json.dumps(r["code"], sort_keys=True) for r in entry["contenders"].values()
                        if r.get("code") and r["name"].startswith(ours)})
        times = [r["when"] for r in entry["contenders"].values() if r.get("when")]
        options = {k: v for k, v in entry.get("options", {}).items() if v}
        print(f"\n## {workload}" + (f" ({', '.join(f'{k}={v}' for k, v in options.items())})" if options else "") + "\n")
        print(f"measured {min(times, default='?')} .. {max(times, default='?')}; duckrank code "
              + ("; ".join(codes) or "?") + "\n")
        summarize(workload, entry, everything)
        latency = entry.get("help_latency")
        if latency:
            print(f"\n`duckrank --help`: median {latency['median_s']:.3f} s over 5 runs")


def compile_duckrank() -> None:
    """duckrank's modules compiled once, as an installed package's are: a child that inherited
    PYTHONDONTWRITEBYTECODE would compile them in every process timed (about 70 ms of a first call,
    of `duckrank --help` too)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    package = importlib.util.find_spec("duckrank")
    if package is not None and package.submodule_search_locations:
        subprocess.run([PYTHON, "-m", "compileall", "-q", *package.submodule_search_locations], check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", action="append", choices=list(generate.WORKLOADS),
                        help="repeatable; default W10M")
    parser.add_argument("--quick", action="store_true", help="W1M and L1M (a few minutes; checks correctness)")
    parser.add_argument("--contenders", help=f"comma list; ranking: {','.join(RANKING_CONTENDERS)},ranx_untied; "
                                             f"log: {','.join(LOG_CONTENDERS)}; small: {','.join(SMALL_CONTENDERS)}; "
                                             f"text: {','.join(TEXT_CONTENDERS)}")
    parser.add_argument("--threads", type=int, help="DuckDB threads for duckrank and the floor")
    parser.add_argument("--memory-limit", help="DuckDB memory_limit for duckrank and the floor, e.g. 4GB")
    parser.add_argument("--temp-dir", help="where duckrank spills")
    parser.add_argument("--seed", type=int, default=generate.DEFAULT_SEED)
    parser.add_argument("--timeout", type=float, default=3600, help="per contender, seconds")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each contender (but ranx_cold) N times and keep the fastest")
    parser.add_argument("--wait-idle", type=float, default=60,
                        help="before each contender wait up to this many seconds for other processes "
                             "to leave the CPUs idle (0: don't wait)")
    parser.add_argument("--no-verify", dest="verify", action="store_false",
                        help="skip the ranx tie diagnostic on W1M")
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--report", action="store_true", help="re-print results.json; measure nothing")
    parser.add_argument("--fresh", action="store_true",
                        help="with --contenders: drop the workload's other contenders from results.json "
                             "instead of keeping them")
    args = parser.parse_args()
    workloads = args.workload or (["W1M", "L1M"] if args.quick else ["W10M"])
    everything = json.loads(args.results.read_text()) if args.results.exists() else {}
    if args.report:
        report(everything)
        return
    CODE_STATE.update(code_state())
    generate.WORK.mkdir(parents=True, exist_ok=True)
    compile_duckrank()
    if args.memory_limit and not args.temp_dir:
        args.temp_dir = str(generate.WORK / ".spill")
    print(f"duckrank benchmark on {machine().get('cpu', '?')} ({os.cpu_count()} cores); duckrank code "
          f"{CODE_STATE.get('commit', '?')}{' + uncommitted changes' if CODE_STATE.get('uncommitted_changes') else ''} "
          f"(sql/ + duckrank/ sha256 {CODE_STATE['tree_sha256']})")
    if args.memory_limit or args.threads:
        print(f"duckrank/floor engine options: threads={args.threads} memory_limit={args.memory_limit}")
    latency = help_latency()
    print(f"`duckrank --help`: median {latency['median_s']:.3f} s over 5 runs "
          f"({'met' if latency['median_s'] < 0.5 else 'MISSED'}: < 0.5 s)")
    for workload in workloads:
        entry = run_workload(workload, args, everything)
        entry["help_latency"] = latency
        entry["machine"] = machine()
        everything[workload] = entry
        args.results.write_text(json.dumps(everything, indent=2) + "\n")
    print(f"\nwrote {args.results}")


if __name__ == "__main__":
    main()
