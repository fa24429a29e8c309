"""Deterministic workloads for the duckrank benchmark, generated in DuckDB SQL.

    python bench/generate.py W10M            # -> bench/work/W10M/{qrels,run}.parquet
    python bench/generate.py L50M            # -> bench/work/L50M/log.parquet
    python bench/generate.py S5K             # -> bench/work/S5K/{qrels,run,sweep}.parquet
    python bench/generate.py T5M             # -> bench/work/T5M/{qrels,run}.txt (TREC text)
    python bench/generate.py all --seed 7

Ranking workloads (W*): Q queries x 1,000 retrieved docs; per query 400 judged docs with grades
0-3 (about 50/25/15/10 %), 200 of them retrieved and 200 not (so recall < 1 and bpref/R-prec see
unretrieved relevant docs). query_id 'q0000042', doc_id 'D0123456' (strings; docs are shared
across queries like a real corpus). Scores are rounded to 4 decimals, so every query has a few
tied scores (about a dozen pairs), and correlate with the grade so the measures are not trivial.
Rows are grouped by query, in doc order (not sorted by score), as a typical run file.

Small workloads (S*, read into pandas by the in-process contenders): Q queries x 100 retrieved
docs, half of them judged plus 20 judged docs never retrieved; grades -1..3 (about 5 % -1, which
trec_eval treats as non-relevant with no gain), scores rounded to 2 decimals (about 15 ties per
query). sweep.parquet holds 100 runs of the same queries and docs (run_id 'r000'..'r099'),
each with its own noise and a grade weight rising from 0.4 to 1.2, as a parameter sweep would.

TREC text workloads (T*): the W* rows (the same SQL) written as trec_eval reads them: qrels
`qid 0 docid grade`, run `qid Q0 docid rank score runid`, single spaces, the run grouped by query
in rank order (score descending, ties by doc_id descending: trec_eval's own order) with ranks
1..1000 and scores printed with their 4 decimals, as a real run file is.

Log workloads (L*): U users x 50 impressions (user_id 'u0000042', item_id 'i0123456', a model
score rounded to 5 decimals (ties) and a click 0/1 at roughly 8 % CTR that rises with the score).

Every pseudo-random number is hash(seed, stream, ids) from DuckDB's hash(), so a workload holds
the same values in the same row order on every run with the same DuckDB version and seed; each
file is one parallel SQL statement over range() (rows keep range()'s order: no sort; the T* run
is the one file sorted, by rank).
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
    "S5K": ("small", 50, 100),
    "T5M": ("text", 5_000, 1_000),
}
JUDGED_RETRIEVED_EVERY = 5  # 1,000 / 5 = 200 retrieved docs judged per query
UNRETRIEVED_JUDGED = 200  # docs 1000..1199 of a query are judged but never retrieved
DOC_SPACE = 10_000_000  # doc ids D0000000..D9999999, shared across queries
DEFAULT_SEED = 20240521
SMALL_JUDGED_EVERY = 2  # S*: 50 of a query's 100 retrieved docs judged
SMALL_UNRETRIEVED_JUDGED = 20
SMALL_NEGATIVE = 0.05  # S*: share of judged docs graded -1
SWEEP_RUNS = 100
RUN_TAG = "bench"  # the T* run's runid column


def _uniform(seed: int, stream: int, *ids: str) -> str:
    """A uniform double in [0, 1) from hash(seed, stream, ids...): deterministic, parallel, no state."""
    return f"(hash({seed}, {stream}, {', '.join(ids)}) % 1000000007) / 1000000007.0"


def _doc_id(query: str, local: str) -> str:
    # distinct within a query: local * 7919 < DOC_SPACE for local < 1,263
    return f"printf('D%07d', ({query} * 104729 + {local} * 7919) % {DOC_SPACE})"


def _grade(seed: int, query: str, local: str, negative: float = 0.0) -> str:
    """0-3 (about 50/25/15/10 %); with `negative`, that share of the docs graded -1 instead of 0."""
    u = _uniform(seed, 1, query, local)
    minus_one = f"WHEN {u} < {negative} THEN -1 " if negative else ""
    return f"(CASE {minus_one}WHEN {u} < 0.50 THEN 0 WHEN {u} < 0.75 THEN 1 WHEN {u} < 0.90 THEN 2 ELSE 3 END)"


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


def small_sql(queries: int, depth: int, seed: int, runs: int = SWEEP_RUNS) -> tuple[str, str, str]:
    """(qrels, run, sweep) SELECTs for the small in-process workload: `queries` x `depth` docs."""
    width = depth + SMALL_UNRETRIEVED_JUDGED
    q, d = f"(t.i // {width})", f"(t.i % {width})"
    qrels = (
        f"SELECT printf('q%07d', {q}) AS query_id, {_doc_id(q, d)} AS doc_id, "
        f"CAST({_grade(seed, q, d, SMALL_NEGATIVE)} AS INTEGER) AS relevance "
        f"FROM range({queries * width}) t(i) "
        f"WHERE ({d} + {q}) % {SMALL_JUDGED_EVERY} = 0 OR {d} >= {depth}"
    )

    def scored(query: str, local: str, weight: str, noise: str) -> str:
        # as in ranking_sql, but 2 decimals (ties in every query) and -1 docs scored like grade 0
        judged = f"(({local} + {query}) % {SMALL_JUDGED_EVERY} = 0)"
        grade = f"(CASE WHEN {judged} THEN greatest({_grade(seed, query, local, SMALL_NEGATIVE)}, 0) ELSE 0 END)"
        return (f"printf('q%07d', {query}) AS query_id, {_doc_id(query, local)} AS doc_id, "
                f"round({weight} * {grade} - ln(1 - {noise}), 2) AS score")

    q, d = f"(t.i // {depth})", f"(t.i % {depth})"
    run = f"SELECT {scored(q, d, '0.8', _uniform(seed, 2, q, d))} FROM range({queries * depth}) t(i)"
    # run r: its own noise, and the grade weighs 0.4 + 0.008 r (a sweep over one parameter)
    r, q = f"(t.i // {queries * depth})", f"((t.i // {depth}) % {queries})"
    sweep = (
        f"SELECT printf('r%03d', {r}) AS run_id, {scored(q, d, f'(0.4 + 0.008 * {r})', _uniform(seed, 7, r, q, d))} "
        f"FROM range({runs * queries * depth}) t(i)"
    )
    return qrels, run, sweep


def text_sql(queries: int, depth: int, seed: int) -> tuple[str, str]:
    """(qrels, run) SELECTs of ranking_sql's rows in TREC text columns (the run in rank order)."""
    qrels, run = ranking_sql(queries, depth, seed)
    return (
        f"SELECT query_id, 0, doc_id, relevance FROM ({qrels})",
        f"SELECT query_id, 'Q0', doc_id, "
        f"row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC) AS rank, "
        f"printf('%.4f', score), '{RUN_TAG}' FROM ({run}) ORDER BY query_id, rank",
    )


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


PARQUET = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1000000"
# TREC text: single spaces, no header; no field holds a space or a quote, so nothing is quoted
TREC_TEXT = "FORMAT csv, DELIMITER ' ', HEADER false"


def _copy(con: duckdb.DuckDBPyConnection, select: str, path: Path, options: str = PARQUET) -> None:
    tmp = path.with_name(path.name + ".tmp")
    con.execute(f"COPY ({select}) TO '{tmp}' ({options})").fetchall()
    os.replace(tmp, path)


def _count(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    source = f"'{path}'" if path.suffix == ".parquet" else f"read_csv('{path}', header = false, delim = ' ')"
    return con.execute(f"SELECT count(*) FROM {source}").fetchall()[0][0]


FILES = {"ranking": ["qrels.parquet", "run.parquet"], "log": ["log.parquet"],
         "small": ["qrels.parquet", "run.parquet", "sweep.parquet"], "text": ["qrels.txt", "run.txt"]}


def generate(name: str, seed: int = DEFAULT_SEED, out: Path = WORK, force: bool = False) -> Path:
    """Write workload `name` under out/name unless an identical one (same manifest) is there."""
    kind, size, per_group = WORKLOADS[name]
    folder = out / name
    manifest = {"workload": name, "kind": kind, "groups": size, "per_group": per_group, "seed": seed,
                "duckdb": duckdb.__version__, "generator_version": 1}
    manifest_path = folder / "manifest.json"
    files = FILES[kind]
    if not force and manifest_path.exists() and all((folder / f).exists() for f in files):
        if json.loads(manifest_path.read_text()).get("config") == manifest:
            return folder
    folder.mkdir(parents=True, exist_ok=True)
    manifest_path.unlink(missing_ok=True)
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{out / '.tmp'}'").fetchall()
    con.execute("SET preserve_insertion_order = true").fetchall()
    started = time.perf_counter()
    if kind in ("ranking", "small", "text"):
        selects = {"ranking": ranking_sql, "small": small_sql, "text": text_sql}[kind](size, per_group, seed)
        for file, select in zip(files, selects):
            _copy(con, select, folder / file, TREC_TEXT if kind == "text" else PARQUET)
        stats = {f"{file.split('.')[0]}_rows": _count(con, folder / file) for file in files}
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
