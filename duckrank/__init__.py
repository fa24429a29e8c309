"""duckrank: trec_eval-exact ranking metrics as DuckDB SQL macros, from Python, the shell or the CLI.

    import duckrank
    duckrank.evaluate("data/qrels.parquet", "data/run.parquet", ["ndcg@10", "map", "mrr"])
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Attributes load on first use, so `duckrank --help` never pays for importing DuckDB.
_EXPORTS = {
    "connect": "duckrank._library", "load": "duckrank._library", "library_sql": "duckrank._library",
    "DuckrankError": "duckrank.errors", "InputError": "duckrank.errors", "MeasureError": "duckrank.errors",
    "OptionError": "duckrank.errors",
    "Results": "duckrank.evaluation", "compute": "duckrank.evaluation", "evaluate": "duckrank.evaluation",
    "parse_measure": "duckrank.measures",
    "compare": "duckrank.comparison",
    "fuse": "duckrank.fusion", "optimize_fusion": "duckrank.fusion",
    "report": "duckrank.reporting", "Report": "duckrank.reporting",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'duckrank' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
