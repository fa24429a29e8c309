"""The planner: which ranking passes a list of measures needs, and with which arguments.

Measures whose options shape the ranked relation alike (relevance level, complete, unjudged, gains,
ERR's top grade) share one duckrank.rank_queries pass, so the run is sorted once per such group however many
measures it serves. This module groups the measures and merges their options with the conventions,
once for both engines: duckrank.evaluation renders each pass as a DuckDB macro call, duckrank.spark
as Spark SQL rendered from the same macro. A pass under the common conventions names the relation
that gives the same rows in fewer steps (RankingPass.relation), which the DuckDB engine binds at a
fraction of the cost. It reads no data and knows no engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duckrank.measures import Measure
from duckrank.options import RANK_QUERIES_ARGUMENTS, RANKED_OPTIONS

# How a measure's per-query values become its summary, by Measure.summary: one rule for both
# engines, in the SQL library's dialect (the Spark engine renders it), each a template over a
# column of per-query values ({value}), a NULL value (empty := 'skip') left out. Means are summed in
# query order, not by a parallel avg, so a summary is the same bits on every run, thread count and
# engine. Counters are integers: their sums are exact in any order. log and overall measures are
# scored by the DuckDB engine only.
SUMMARY_SQL = {"mean": "list_sum(list({value} ORDER BY query_id) FILTER (WHERE {value} IS NOT NULL)) / count({value})",
               "sum": "sum({value})",
               "gmean": "exp(list_sum(list(duckrank.log_floored({value}) ORDER BY query_id) "
                        "FILTER (WHERE {value} IS NOT NULL)) / count({value}))",
               "count": "CAST(count({value}) AS DOUBLE)", "log": "avg({value})", "overall": "avg({value})"}


# duckrank.rank_queries_lean: rank_queries' common case in fewer steps, cheaper to bind. The values
# it assumes of the options it does not take.
LEAN_RELATION_ASSUMES = {"ties": "trec", "unjudged": "nonrelevant", "duplicates": "error"}


@dataclass(frozen=True)
class RankingPass:
    """One duckrank.rank_queries pass: its arguments after (qrels, run), by name in the macro's
    order, and the indexes of the measures it serves."""

    arguments: dict[str, Any]
    measures: tuple[int, ...]

    @property
    def relation(self) -> str:
        """The macro that ranks the pass: duckrank.rank_queries_lean when its options are those it
        assumes, else duckrank.rank_queries. Both give the same rows; a data problem is worded
        by rank_queries only."""
        lean = all(self.arguments[name] == value for name, value in LEAN_RELATION_ASSUMES.items())
        return "rank_queries_lean" if lean else "rank_queries"

    @property
    def relation_arguments(self) -> dict[str, Any]:
        """The arguments that self.relation takes after (qrels, run), in its order."""
        if self.relation == "rank_queries":
            return self.arguments
        return {name: value for name, value in self.arguments.items() if name not in LEAN_RELATION_ASSUMES}


def ranking_passes(measures: list[Measure], conventions: dict[str, Any],
                   g_max: float | None = None) -> list[RankingPass]:
    """The passes that score every ranking measure of `measures` (not the log measures, which read a
    whole log, nor the beyond-accuracy ones, which read top lists). g_max pins ERR's default top
    grade (the largest grade of the whole qrels, which one batch of queries may lack)."""
    groups: dict[tuple, list[int]] = {}
    for index, measure in enumerate(measures):
        if measure.ranked:
            groups.setdefault(measure.relation_key(conventions["rel_level"], conventions["complete"],
                                                   conventions["unjudged"]), []).append(index)
    passes = []
    for (rel_level, complete, unjudged, *options), indexes in groups.items():
        values = {**conventions, "rel_level": rel_level, "complete": complete, "unjudged": unjudged,
                  **dict(zip(RANKED_OPTIONS, options)),
                  # AUC and the other measures of every retrieved doc need the unjudged ones too
                  "judged_only": all(measures[i].metric.reads == "judged" for i in indexes)}
        values["gain_map"] = dict(values["gain_map"])
        if values["g_max"] is None and g_max is not None:
            values["g_max"] = g_max
        passes.append(RankingPass({name: values[name] for name in RANK_QUERIES_ARGUMENTS}, tuple(indexes)))
    return passes


def reads_top_lists(measures: list[Measure], depth: int | None, conventions: dict[str, Any]) -> bool:
    """Whether the ranking measures may be scored from the run's rows of top lists `depth` deep
    (duckrank.recommended) instead of the whole run: each reads only a top k those lists hold
    (Measure.depth), under ties := 'trec' (a subset of a ranking keeps its order; 'input' reads the
    rows' order, the grade-ordered rules order ties by each pass's gains) and with every retrieved
    doc judged or not (unjudged := 'skip' renumbers the ranks, mean|median impute from every
    retrieved doc)."""
    ranked = [m for m in measures if m.ranked]
    return (depth is not None and bool(ranked) and conventions["ties"] == "trec"
            and all((m.unjudged or conventions["unjudged"]) == "nonrelevant" for m in ranked)
            and all(m.depth is not None and m.depth <= depth for m in ranked))
