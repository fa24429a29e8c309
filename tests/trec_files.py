"""trec_eval's qrels and run files as pandas frames, read as trec_eval reads them (the conformance
tests and the Spark engine's compare the SQL's numbers with trec_eval's expected output)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd


def read_qrels(path: Path) -> pd.DataFrame:
    rows = [line.split()[:4] for line in path.read_text().splitlines() if line.strip()]
    frame = pd.DataFrame(rows, columns=["query_id", "iteration", "doc_id", "relevance"])
    frame["relevance"] = frame["relevance"].astype("int64")
    return frame[["query_id", "doc_id", "relevance"]]


def read_run(path: Path) -> pd.DataFrame:
    # trec_eval ignores anything after the sixth field (results.trunc has junk there).
    rows = [line.split()[:5] for line in path.read_text().splitlines() if line.strip()]
    frame = pd.DataFrame(rows, columns=["query_id", "q0", "doc_id", "rank", "score"])
    frame["score"] = frame["score"].astype(np.float32).astype(np.float64)
    return frame[["query_id", "doc_id", "score"]]
