"""Where duckrank's time goes: EXPLAIN ANALYZE of the query duckrank.compute composes.

    python bench/profile.py W10M                 # operator breakdown of the composed query
    python bench/profile.py W10M --threads 2 --sql   # also print the composed SQL

Runs duckrank.compute once on a recording connection (every statement it executes, timed),
then replays its big statement (the composed per-query query) under DuckDB's JSON profiler
and prints the most expensive operators, next to the floor query (one row_number() pass joined
to the qrels). Changes nothing in duckrank.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate
from contenders import DUCKRANK_MEASURES, FLOOR_SQL


class RecordingConnection:
    """Forwards everything to a DuckDB connection and records each execute()'s SQL and wall time,
    so the statements duckrank.compute runs can be timed and the big one replayed under the
    profiler without depending on duckrank's private helpers."""

    def __init__(self, con) -> None:
        self._con = con
        self.statements: list[tuple[float, str]] = []

    def execute(self, sql, *args, **kwargs):
        started = time.perf_counter()
        result = self._con.execute(sql, *args, **kwargs)
        self.statements.append((time.perf_counter() - started, sql))
        return result

    def __getattr__(self, name):
        return getattr(self._con, name)


def composed_sql(con, qrels: str, run: str, measures: list[str]) -> tuple[str, list[tuple[float, str]]]:
    """The CREATE TABLE ... AS SELECT that duckrank.compute runs (as its SELECT), and every
    statement compute executed with its wall time."""
    from duckrank.evaluation import compute

    recorder = RecordingConnection(con)
    started = time.perf_counter()
    compute(qrels, run, measures, con=recorder)
    total = time.perf_counter() - started
    print(f"duckrank.compute in process: {total:.2f} s; its statements:")
    for seconds, sql in recorder.statements:
        if seconds > 0.005:
            print(f"  {seconds:6.2f} s  {' '.join(sql.split())[:140]}")
    big = max(recorder.statements, key=lambda item: item[0])[1]
    select = big[big.index(" AS ") + 4:] if big.lstrip().upper().startswith("CREATE") else big
    return select, recorder.statements


def profile(con, sql: str, label: str, top: int) -> float:
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        con.execute("PRAGMA enable_profiling = 'json'").fetchall()
        con.execute(f"PRAGMA profiling_output = '{out.name}'").fetchall()
        con.execute("SET profiling_mode = 'detailed'").fetchall()
        started = time.perf_counter()
        con.execute(f"CREATE OR REPLACE TEMP TABLE bench_profile_output AS {sql}").fetchall()
        wall = time.perf_counter() - started
        con.execute("PRAGMA disable_profiling").fetchall()
        tree = json.loads(Path(out.name).read_text())
    by_operator: dict[str, float] = defaultdict(float)
    rows: list[tuple[float, str, int]] = []

    def walk(node):
        name = (node.get("type") or node.get("operator_type") or node.get("name") or "?").strip()
        timing = float(node.get("timing", node.get("operator_timing", 0.0)) or 0.0)
        if timing:
            by_operator[name] += timing
            extra = node.get("extra_info", {})
            detail = ""
            if isinstance(extra, dict):
                for key in ("Function", "Partitions", "Join Type", "Conditions", "Groups", "Aggregates",
                            "Projections", "Order By", "Table", "Text"):
                    if key in extra:
                        value = extra[key]
                        text = " | ".join(map(str, value)) if isinstance(value, list) else str(value)
                        detail += f" [{key}: {' '.join(text.split())[:120]}]"
            rows.append((timing, f"{name}{detail}", int(node.get("intermediate_rows", node.get("operator_cardinality", 0)))))
        for child in node.get("children", []):
            walk(child)

    roots = tree.get("operator") if isinstance(tree.get("operator"), list) else [tree]
    for root in roots:
        walk(root)
    total = sum(by_operator.values())
    query = tree.get("query", {})
    system = tree.get("system", {})
    print(f"\n### {label}: {wall:.2f} s wall; operator time summed over threads {total:.2f} s; "
          f"DuckDB cpu_time {query.get('cpu_time', 0):.2f} s; planner {tree.get('planner', {}).get('total_time', 0):.3f} s; "
          f"optimizer {sum(v for v in tree.get('optimizer', {}).values() if isinstance(v, (int, float))):.3f} s; "
          f"peak buffer memory {system.get('peak_buffer_memory', 0) / 2 ** 20:.0f} MiB; "
          f"intermediate rows {query.get('total_intermediate_rows', 0):,}")
    print("\nby operator type (s, % of the summed operator time):")
    for name, seconds in sorted(by_operator.items(), key=lambda item: -item[1])[:top]:
        print(f"  {name:<28} {seconds:7.2f}  {100 * seconds / max(total, 1e-9):5.1f} %")
    print(f"\ntop {top} operators:")
    for seconds, name, cardinality in sorted(rows, reverse=True)[:top]:
        print(f"  {seconds:7.2f} s  rows {cardinality:>11,}  {name[:230]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload", nargs="?", default="W10M", choices=[w for w, spec in generate.WORKLOADS.items()
                                                                           if spec[0] == "ranking"])
    parser.add_argument("--threads", type=int)
    parser.add_argument("--memory-limit")
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument("--sql", action="store_true", help="print the composed SQL")
    parser.add_argument("-m", "--measure", action="append", help="measures (default: the benchmark's set)")
    args = parser.parse_args()
    import duckrank

    folder = generate.generate(args.workload)
    qrels, run = str(folder / "qrels.parquet"), str(folder / "run.parquet")
    con = duckrank.connect()
    if args.threads:
        con.execute(f"SET threads = {args.threads}").fetchall()
    if args.memory_limit:
        con.execute("SET memory_limit = ?", [args.memory_limit]).fetchall()
    sql, _statements = composed_sql(con, qrels, run, args.measure or DUCKRANK_MEASURES)
    if args.sql:
        print(sql)
    floor = FLOOR_SQL.replace("read_parquet(?)", f"read_parquet('{run}')", 1).replace(
        "read_parquet(?)", f"read_parquet('{qrels}')", 1)
    floor_wall = profile(con, floor, "floor", args.top)
    wall = profile(con, sql, "duckrank composed query", args.top)
    print(f"\ncomposed / floor: {wall / floor_wall:.2f}×")


if __name__ == "__main__":
    main()
