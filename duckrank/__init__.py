"""duckrank: trec_eval-exact ranking metrics as DuckDB SQL macros, from Python, the shell or the CLI.

    import duckrank
    duckrank.evaluate("qrels.parquet", "run.parquet", ["ndcg@10", "map", "mrr"])
"""

from __future__ import annotations

from duckrank._library import connect, library_sql, load
from duckrank.errors import DuckrankError, InputError, MeasureError, OptionError
from duckrank.evaluation import Results, compute, evaluate
from duckrank.measures import parse_measure

__version__ = "0.1.0"

__all__ = [
    "DuckrankError", "InputError", "MeasureError", "OptionError", "Results",
    "__version__", "compute", "connect", "evaluate", "library_sql", "load", "parse_measure",
]
