"""Time `duckrank report` on a generated workload and weigh the page it writes.

    python bench/report.py                          # W10M, the run and one re-scored copy
    python bench/report.py --runs 10 --depth 100    # 10 runs x 10,000 queries, top 100 each

The extra runs are the workload's run with its scores re-noised (deterministic: DuckDB's hash of
the run number and doc id), written with a run_id column to bench/work/<workload>/ once; r0 is the
workload's own run. The report runs as its own process, timed from outside (wall, CPU, peak RSS by
os.wait4), like bench/run.py's contenders.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402


def runs_file(workload: str, runs: int, depth: int | None) -> Path:
    folder = generate.generate(workload, generate.DEFAULT_SEED, generate.WORK, False)
    target = folder / f"report_runs{runs}_depth{depth or 'all'}.parquet"
    if target.exists():
        return target
    source = f"'{folder / 'run.parquet'}'"
    if depth:
        source = (f"(SELECT * FROM {source} QUALIFY row_number() OVER (PARTITION BY query_id "
                  f"ORDER BY score DESC, doc_id) <= {depth})")
    parts = [f"SELECT 'r0' AS run_id, query_id, doc_id, score FROM {source}"]
    parts += [f"SELECT 'r{i}', query_id, doc_id, round(score + (hash({i}, doc_id) % 10000) / 10000.0 * {0.3 * i}, 4) "
              f"FROM {source}" for i in range(1, runs)]
    duckdb.sql(f"COPY ({' UNION ALL '.join(parts)}) TO '{target}' (FORMAT parquet)")
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="W10M")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--depth", type=int, help="keep each query's top DEPTH documents only")
    parser.add_argument("--out", default="/tmp/duckrank-bench-report.html")
    args = parser.parse_args()
    runs = runs_file(args.workload, args.runs, args.depth)
    qrels = HERE / "work" / args.workload / "qrels.parquet"
    command = [sys.executable, "-m", "duckrank", "report", str(qrels), str(runs), "-o", args.out, "--quiet"]
    start = time.monotonic()
    process = subprocess.Popen(command)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    if status != 0:
        sys.exit(f"duckrank report failed (status {status})")
    size = os.path.getsize(args.out)
    print(f"| {args.workload} | {args.runs} | {args.depth or 'all'} | {wall:.1f} s | "
          f"{usage.ru_utime + usage.ru_stime:.1f} s | {usage.ru_maxrss / 1024:.0f} MB | {size / 1e6:.2f} MB |")


if __name__ == "__main__":
    main()
