"""Deterministic Parquet workloads for the duckrank benchmark, generated in DuckDB SQL.

    python bench/generate.py W10M            # -> bench/work/W10M/{qrels,run}.parquet
    python bench/generate.py L50M            # -> bench/work/L50M/log.parquet
    python bench/generate.py all --seed 7

Ranking workloads (W*): Q queries x 1,000 retrieved docs; per query 400 judged docs with grades
0-3 (about 50/25/15/10 %), 200 of them retrieved and 200 not (so recall < 1 and bpref/R-prec see
unretrieved relevant docs). query_id 'q0000042', doc_id 'D0123456' (strings; docs are shared
across queries like a real corpus). Scores are rounded to 4 decimals, so every query has a few
tied scores (about a dozen pairs), and correlate with the grade so the measures are not trivial.
Rows are grouped by query, in doc order (not sorted by score), as a typical run file.

Log workloads (L*): U users x 50 impressions (user_id 'u0000042', item_id 'i0123456', a model
score rounded to 5 decimals (ties) and a click 0/1 at roughly 8 % CTR that rises with the score).

Every pseudo-random number is hash(seed, stream, ids) from DuckDB's hash(), so a workload holds
the same values in the same row order on every run with the same DuckDB version and seed; each
file is one parallel SQL statement over range() (rows keep range()'s order: no sort).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import duckdb

HERE = Path(__file__).resolve().parent
WORK = HERE / "work"

# name: (kind, size, per-group rows)
WORKLOADS = {
    "W1M": ("ranking", 1_000, 1_000),
    "W10M": ("ranking", 10_000, 1_000),
    "W100M": ("ranking", 100_000, 1_000),
    "L1M": ("log", 20_000, 50),
    "L50M": ("log", 1_000_000, 50),
}
JUDGED_RETRIEVED_EVERY = 5  # 1,000 / 5 = 200 retrieved docs judged per query
UNRETRIEVED_JUDGED = 200  # docs 1000..1199 of a query are judged but never retrieved
DOC_SPACE = 10_000_000  # doc ids D0000000..D9999999, shared across queries
DEFAULT_SEED = 20240521


def _uniform(seed: int, stream: int, *ids: str) -> str:
    """A uniform double in [0, 1) from hash(seed, stream, ids...): deterministic, parallel, no state."""
    return f"(hash({seed}, {stream}, {', '.join(ids)}) % 1000000007) / 1000000007.0"


def _doc_id(query: str, local: str) -> str:
    # distinct within a query: local * 7919 < DOC_SPACE for local < 1,263
    return f"printf('D%07d', ({query} * 104729 + {local} * 7919) % {DOC_SPACE})"


def _grade(seed: int, query: str, local: str) -> str:
    u = _uniform(seed, 1, query, local)
    return f"(CASE WHEN {u} < 0.50 THEN 0 WHEN {u} < 0.75 THEN 1 WHEN {u} < 0.90 THEN 2 ELSE 3 END)"


def _is_judged(query: str, local: str) -> str:
    return f"(({local} + {query}) % {JUDGED_RETRIEVED_EVERY} = 0 OR {local} >= 1000)"


def ranking_sql(queries: int, depth: int, seed: int) -> tuple[str, str]:
    """(qrels SELECT, run SELECT) for `queries` queries x `depth` retrieved docs."""
    width = depth + UNRETRIEVED_JUDGED
    q, d = f"(t.i // {width})", f"(t.i % {width})"
    qrels = (
        f"SELECT printf('q%07d', {q}) AS query_id, {_doc_id(q, d)} AS doc_id, "
        f"CAST({_grade(seed, q, d)} AS INTEGER) AS relevance "
        f"FROM range({queries * width}) t(i) WHERE {_is_judged(q, d)}"
    )
    q, d = f"(t.i // {depth})", f"(t.i % {depth})"
    # score = 0.8 * grade + Exp(1) noise: a grade-g doc is e^(0.8 g) times likelier than a
    # non-relevant one to pass any high threshold (a decent but imperfect ranker; P@10 about
    # 0.35); unjudged docs look like grade 0. Rounding to 4 decimals makes ties.
    grade = f"(CASE WHEN {_is_judged(q, d)} THEN {_grade(seed, q, d)} ELSE 0 END)"
    run = (
        f"SELECT printf('q%07d', {q}) AS query_id, {_doc_id(q, d)} AS doc_id, "
        f"round(0.8 * {grade} - ln(1 - {_uniform(seed, 2, q, d)}), 4) AS score "
        f"FROM range({queries * depth}) t(i)"
    )
    return qrels, run


def log_sql(users: int, impressions: int, seed: int) -> str:
    u, j = f"(t.i // {impressions})", f"(t.i % {impressions})"
    score = f"round({_uniform(seed, 3, u, j)} * {_uniform(seed, 4, u, j)}, 5)"  # skewed to 0, ties
    # click probability 0.01 + 0.3 * score^0.7 ~ 8 % on average, with a per-user taste factor
    taste = f"(0.5 + {_uniform(seed, 6, u)})"
    click = f"CAST({_uniform(seed, 5, u, j)} < (0.01 + 0.3 * power({score}, 0.7)) * {taste} AS INTEGER)"
    return (
        f"SELECT printf('u%07d', {u}) AS user_id, "
        f"printf('i%07d', ({u} * 104729 + {j} * 7919) % {DOC_SPACE}) AS item_id, "
        f"{score} AS score, {click} AS click "
        f"FROM range({users * impressions}) t(i)"
    )


def _copy(con: duckdb.DuckDBPyConnection, select: str, path: Path) -> None:
    tmp = path.with_suffix(".parquet.tmp")
    con.execute(f"COPY ({select}) TO '{tmp}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1000000)").fetchall()
    os.replace(tmp, path)


def generate(name: str, seed: int = DEFAULT_SEED, out: Path = WORK, force: bool = False) -> Path:
    """Write workload `name` under out/name unless an identical one (same manifest) is there."""
    kind, size, per_group = WORKLOADS[name]
    folder = out / name
    manifest = {"workload": name, "kind": kind, "groups": size, "per_group": per_group, "seed": seed,
                "duckdb": duckdb.__version__, "generator_version": 1}
    manifest_path = folder / "manifest.json"
    files = ["qrels.parquet", "run.parquet"] if kind == "ranking" else ["log.parquet"]
    if not force and manifest_path.exists() and all((folder / f).exists() for f in files):
        if json.loads(manifest_path.read_text()).get("config") == manifest:
            return folder
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path.unlink(missing_ok=True)
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{out / '.tmp'}'").fetchall()
    con.execute("SET preserve_insertion_order = true").fetchall()
    started = time.perf_counter()
    if kind == "ranking":
        qrels, run = ranking_sql(size, per_group, seed)
        _copy(con, qrels, folder / "qrels.parquet")
        _copy(con, run, folder / "run.parquet")
        stats = {
            "run_rows": con.execute(f"SELECT count(*) FROM '{folder / 'run.parquet'}'").fetchall()[0][0],
            "qrels_rows": con.execute(f"SELECT count(*) FROM '{folder / 'qrels.parquet'}'").fetchall()[0][0],
        }
    else:
        _copy(con, log_sql(size, per_group, seed), folder / "log.parquet")
        rows, clicks = con.execute(f"SELECT count(*), sum(click) FROM '{folder / 'log.parquet'}'").fetchall()[0]
        stats = {"log_rows": rows, "ctr": clicks / rows}
    stats["seconds"] = round(time.perf_counter() - started, 2)
    stats["bytes"] = {f: (folder / f).stat().st_size for f in files}
    manifest_path.write_text(json.dumps({"config": manifest, "stats": stats}, indent=2) + "\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="+", choices=[*WORKLOADS, "all"])
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=WORK)
    parser.add_argument("--force", action="store_true", help="regenerate even if the files are there")
    args = parser.parse_args()
    names = list(WORKLOADS) if "all" in args.workloads else args.workloads
    for name in names:
        folder = generate(name, args.seed, args.out, args.force)
        stats = json.loads((folder / "manifest.json").read_text())["stats"]
        print(f"{name}: {folder} {json.dumps(stats)}", file=sys.stderr)


if __name__ == "__main__":
    main()
