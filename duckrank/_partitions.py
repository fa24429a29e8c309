"""How a run is split into parts of its queries, each ranked by a pass of its own: batches, one
statement each, so that a run too large for the memory limit is ranked a part at a time; slices,
the passes of one statement, so that a large run of few queries uses every core. Both split by a
hash of the query key, and pin ERR's default top grade to the whole qrels' (a part may lack it)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import duckdb

from duckrank._duckdb_sql import ScoredViews, per_query_sql, ranking_values
from duckrank._library import MIN_MEMORY_BYTES, memory_limit_bytes
from duckrank._sql import fresh_name, quote_identifier
from duckrank.measures import Measure

# Memory the list pipeline of duckrank.ranked holds per run row (W10M peaks at about 0.9 GiB for
# 10 M rows; a 25 M-row batch of W100M at 1.7 GB of RSS), with a margin. A run that would fill more
# than 80% of DuckDB's memory limit is scored in batches of queries, each ranked on its own: lists
# that spill to disk cost far more than reading the run once per batch (W100M under 4GB: 190 s
# unbatched, 82 s in 7 batches, 70 s in 4).
BYTES_PER_RUN_ROW = 100
MAX_BATCHES = 128  # each batch reads the run once: past this, spilling is the lesser cost


def query_batches(con: duckdb.DuckDBPyConnection, views: ScoredViews) -> tuple[int, int]:
    """(batches, the run's rows). A run that fits in 80% of the least memory_limit duckrank takes
    (32MB) is one batch without asking DuckDB for its limit, a round trip that was 2% of S5K's call
    (a borrowed connection set below 32MB by hand is not batched for so small a run)."""
    rows = con.execute(f"SELECT count(*) FROM {quote_identifier(views.run_view)}").fetchall()[0][0]
    if rows * BYTES_PER_RUN_ROW <= MIN_MEMORY_BYTES * 0.8:
        return 1, rows
    return min(MAX_BATCHES, max(1, math.ceil(rows * BYTES_PER_RUN_ROW / (memory_limit_bytes(con) * 0.8)))), rows


# A pass's list work after its aggregate (each query's sort, its docs, the measures) runs on one
# thread per chunk of queries the aggregate hands on, so fewer than about 4,096 queries keep it on
# one thread (measured: 1,000 to 3,000 groups of 2 M rows took as long on two threads as on one,
# 5,000 half as long): W1M, 1,000 queries of 1,000 docs, kept one of two cores busy for most of its
# statement. A run of 2 * SLICE_ROWS rows or more with fewer rankings is ranked in slices of its
# queries, a pass per slice in the one statement, which DuckDB runs side by side: W1M's statement
# 0.57 -> 0.45 s on 2 cores. Each slice reads the inputs and is bound once more, so the slices are
# few, and a run of more queries is not sliced (W10M in 2 slices: 4.4 -> 5.3 s).
SLICE_ROWS = 250_000
SERIAL_QUERIES = 4_096
MAX_SLICES = 8


def query_slices(con: duckdb.DuckDBPyConnection, views: ScoredViews, rows: int) -> tuple[list[ScoredViews] | None,
                                                                                             float | None]:
    """(the views of each slice of the queries, the top grade of the whole qrels that each slice's
    ERR then reads), or (None, None) when the run is ranked in one piece."""
    if rows < 2 * SLICE_ROWS:
        return None, None
    threads = con.execute("SELECT current_setting('threads')").fetchall()[0][0]
    count = min(threads, MAX_SLICES, rows // SLICE_ROWS)
    if count < 2 or _rankings(con, views) >= SERIAL_QUERIES:
        return None, None
    top = top_grade(con, views)
    if top is None or not math.isfinite(top):  # no grade, or one the checks refuse: one pass says so
        return None, None
    return hash_slices(con, views, count), top


def _rankings(con: duckdb.DuckDBPyConnection, views: ScoredViews) -> int:
    """About how many rankings a pass sorts: the queries the qrels judge, in each run. Counted in
    the qrels, which are smaller than the run and not keyed by run (the run's {run, query} keys of a
    100-run sweep took 18 ms to count, its qrels' queries 1); a run's unjudged queries are left out."""
    judged = con.execute(f"SELECT count(DISTINCT query_id) FROM {quote_identifier(_judgments(views))}"
                         ).fetchall()[0][0]
    return judged * len(views.runs) if views.shared_qrels_view is not None else judged


def _judgments(views: ScoredViews) -> str:
    """The smallest view of the qrels: as given when the runs share them, else the (keyed) view."""
    return views.shared_qrels_view or views.qrels_view


def top_grade(con: duckdb.DuckDBPyConnection, views: ScoredViews) -> float | None:
    """The qrels' largest grade, 0 at least (ERR's default top grade, duckrank.rank_queries' g_max)."""
    return con.execute(f"SELECT greatest(max(relevance), 0) FROM {quote_identifier(_judgments(views))}"
                       ).fetchall()[0][0]


def hash_slices(con: duckdb.DuckDBPyConnection, views: ScoredViews, count: int) -> list[ScoredViews]:
    """The views in `count` slices of their queries, split by a hash of the query id (each pair of
    views by its own: the struct key of the keyed views, the plain id of the shared ones)."""
    slices = []
    for index in range(count):
        names: dict[str, str | None] = {}
        for kind in ("run_view", "qrels_view", "shared_run_view", "shared_qrels_view"):
            view = getattr(views, kind)
            if view is not None:
                names[kind] = fresh_name("batch")
                con.execute(f"CREATE TEMP VIEW {names[kind]} AS SELECT * FROM {quote_identifier(view)} "
                            f"WHERE hash(query_id) % {count} = {index}").fetchall()
        slices.append(dataclasses.replace(views, **names))
    return slices


def batched_per_query(con: duckdb.DuckDBPyConnection, views: ScoredViews, measures: list[Measure],
                       conventions: dict[str, Any], batches: int, estimates: dict[int, str]) -> list[str]:
    """The per-query SELECT of each batch of queries (split by a hash of the query key)."""
    top = top_grade(con, views)
    return [per_query_sql(part, measures, ranking_values(part, measures, conventions, g_max=top, estimates=estimates))
            for part in hash_slices(con, views, batches)]
