"""The measure catalogue: one entry per measure of the registry, for `duckrank metrics` and the README.

Read from duckrank.registry alone (no SQL, no database), so it lists exactly what the library declares.
"""

from __future__ import annotations

from typing import Any

from duckrank.registry import METRICS, Metric

def spellings(metric: Metric) -> list[str]:
    """The names a measure answers to, as a user writes them (registry.Metric.shown_spellings):
    trec_eval's, then ir_measures', ranx's and the aliases; one of each, whatever the case."""
    unique: dict[str, str] = {}
    for names in metric.shown_spellings().values():
        for name in names:
            unique.setdefault(name.lower(), name)
    return list(unique.values())


def catalog() -> list[dict[str, Any]]:
    """Every measure, in the registry's order: its name, spellings, definition, options with their
    defaults, how its per-query values are summarised, the sql/ file of its math, and its oracle."""
    return [{
        "name": metric.name,
        "spellings": spellings(metric),
        "definition": metric.doc,
        "options": metric.defaults(),
        "summary": "summary only: one value over the scored queries" if metric.summary == "whole" else metric.summary,
        "source": metric.source,
        "oracle": metric.oracle,
    } for metric in METRICS.values()]
