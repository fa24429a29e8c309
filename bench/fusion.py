"""Fusion: duckrank.fuse against ranx.fuse on the same five runs (issue 27's workload).

    python bench/fusion.py                     # 5 runs × 1,000 queries × 1,000 docs (W1M-shaped), RRF and
                                               #   CombMNZ (min-max), duckrank and ranx (warm numba cache)
    python bench/fusion.py --queries 50        # a quick check of the script and of the agreement

The runs (generated in DuckDB SQL into bench/work/F<queries>/, deterministic like bench/generate.py's):
run i retrieves docs d(250 i) ... d(250 i + 999) of a 2,000-doc pool for every query, so neighbouring
runs share 750 docs, and scores each with a uniform double of 53 bits from hash(seed, i, query, doc) (ties
are too rare to matter: ranx would break them in its own order).
ranx first fuses a two-query workload, unmeasured, so that numba's compilation lands in the warm cache
(bench/work/.numba-cache, as bench/run.py's ranx_warm). Each contender runs as its own process (bench/run.py's `measure`: wall, CPU, peak RSS; import, reading
the Parquet files and writing the fused run as Parquet count): duckrank with `duckrank.fuse(paths,
method, norm)`, ranx with pyarrow reading the files into its dicts, `ranx.fuse` and pyarrow writing
the result. The parent then compares the two fused runs per (query, doc): the same docs, and the
largest |score difference|. Prints a markdown table; measures nothing it does not print.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

RUNS = 5
POOL = 2_000
DEPTH = 1_000
SHIFT = 250  # run i's docs start at d(SHIFT * i)
SEED = 20261127
METHODS = ("rrf", "mnz")
NORM = "min-max"


def generate(queries: int) -> Path:
    import duckdb

    from generate import WORK

    folder = WORK / f"F{queries}"
    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    for i in range(RUNS):
        path = folder / f"run{i}.parquet"
        if path.exists():
            continue
        doc = f"(j + {SHIFT * i}) % {POOL}"
        con.execute(f"COPY (SELECT 'q' || q AS query_id, 'd' || ({doc}) AS doc_id, "
                    f"(hash({SEED}, {i}, q, {doc}) >> 11) / 9007199254740992.0 AS score "
                    f"FROM range({queries}) a(q), range({DEPTH}) b(j)) "
                    f"TO '{path}' (FORMAT parquet)")
    return folder


def child(contender: str, method: str, paths: list[str], out: str) -> None:
    """One contender's whole job, timed in phases, its output written as Parquet."""
    from contenders import Phases, emit

    phases = Phases()
    if contender == "duckrank":
        import duckrank

        phases.mark("import")
        fused = duckrank.fuse(paths, method, NORM)
        fused.to_parquet(out)
        phases.mark("fuse and write")
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        import ranx

        phases.mark("import")
        runs = []
        for path in paths:
            table = pq.read_table(path).to_pydict()
            scores: dict = {}
            for query, doc, score in zip(table["query_id"], table["doc_id"], table["score"]):
                scores.setdefault(query, {})[doc] = score
            runs.append(ranx.Run(scores))
        phases.mark("read")
        fused = ranx.fuse(runs, norm=NORM, method=method).to_dict()
        phases.mark("fuse")
        rows = [(query, doc, score) for query, docs in fused.items() for doc, score in docs.items()]
        pq.write_table(pa.table({"query_id": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                                 "score": [r[2] for r in rows]}), out)
        phases.mark("write")
    emit({}, phases)


def agreement(ours: Path, theirs: Path) -> dict:
    import duckdb

    row = duckdb.connect().execute(
        f"SELECT count(*) FILTER (WHERE a.doc_id IS NULL OR b.doc_id IS NULL), max(abs(a.score - b.score)) "
        f"FROM '{ours}' a FULL JOIN '{theirs}' b USING (query_id, doc_id)").fetchall()[0]
    return {"unmatched_docs": row[0], "max_abs_diff": row[1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--child", nargs=4, metavar=("CONTENDER", "METHOD", "OUT", "FOLDER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        contender, method, out, folder = args.child
        child(contender, method, [str(p) for p in sorted(Path(folder).glob("run*.parquet"))], out)
        return

    import run as bench

    folder = generate(args.queries)
    primer = generate(2)  # ranx's numba compiles each method once, into the warm cache, unmeasured
    print(f"| method (norm {NORM}) | duckrank | ranx (warm numba) | duckrank vs ranx | same docs | max score diff |")
    print("|---|---:|---:|---:|---:|---:|")
    for method in METHODS:
        primed = bench.measure("ranx_prime", [sys.executable, str(Path(__file__).resolve()), "--child", "ranx", method,
                                              str(primer / f"fused_{method}.parquet"), str(primer)],
                               {"NUMBA_CACHE_DIR": str(bench.NUMBA_WARM)})
        if primed["exit"] != 0:
            raise SystemExit(f"could not prime ranx's numba cache: {primed.get('error')}")
        results = {}
        for contender in ("duckrank", "ranx"):
            out = folder / f"fused_{method}_{contender}.parquet"
            command = [sys.executable, str(Path(__file__).resolve()), "--child", contender, method, str(out),
                       str(folder)]
            results[contender] = bench.measure(contender, command, {"NUMBA_CACHE_DIR": str(bench.NUMBA_WARM)})
            if results[contender]["exit"] != 0:
                raise SystemExit(f"{contender} failed: {results[contender].get('error')}")
        checked = agreement(folder / f"fused_{method}_duckrank.parquet", folder / f"fused_{method}_ranx.parquet")
        ours, theirs = results["duckrank"], results["ranx"]
        print(f"| {method} | {ours['wall_s']:.2f} s, {ours['peak_rss_mb']:.0f} MB "
              f"| {theirs['wall_s']:.2f} s, {theirs['peak_rss_mb']:.0f} MB "
              f"| {theirs['wall_s'] / ours['wall_s']:.1f}× faster | {'yes' if not checked['unmatched_docs'] else 'NO'} "
              f"| {checked['max_abs_diff']:.1e} |")
        print(json.dumps({"method": method, "when": time.strftime("%Y-%m-%d %H:%M:%S"), **checked,
                          "duckrank": ours, "ranx": theirs}), file=sys.stderr)


if __name__ == "__main__":
    main()
