"""Sampled metrics vs their corrections vs the exact values, on generated data whose full ranking is known.

    python bench/sampled_demo.py                     # the README's table (about 15 s)
    python bench/sampled_demo.py --example-data data # also writes the README's tiny example files

Each user has one held-out item; a model's full-catalog rank of it is drawn from the model's
distribution, so the exact Recall@10 and nDCG@10 over the whole catalog are known. The sampled
evaluation ranks the held-out item among m negatives drawn uniformly (without replacement) from the
other catalog items, as papers do, and duckrank reports the plain sampled value (correction none),
the minimal-bias estimate (bias) and the bias-variance estimate (bv) of the full-catalog value.

Model A is sharp but brittle: the held-out item in its top 3 for 30% of users, deep in the catalog
otherwise. Model B is mediocre everywhere: always at ranks 20-60, never in the top 10.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

import duckrank


def full_ranks(model: str, users: int, catalog: int, rng: np.random.Generator) -> np.ndarray:
    if model == "A":
        top = rng.random(users) < 0.3
        return np.where(top, rng.integers(1, 4, users), rng.integers(catalog // 2, catalog + 1, users))
    return rng.integers(20, 61, users)


def sampled_run(ranks: np.ndarray, catalog: int, negatives: int, rng: np.random.Generator) -> pd.DataFrame:
    """Each user's held-out item and `negatives` others drawn uniformly, scored by minus their full rank."""
    users = len(ranks)
    others = np.stack([rng.choice(catalog - 1, size=negatives, replace=False) + 1 for _ in range(users)])
    others = np.where(others >= ranks[:, None], others + 1, others)  # every rank but the held-out item's
    items = np.concatenate([np.full((users, 1), -1), others], axis=1)
    scores = -np.concatenate([ranks[:, None], others], axis=1).astype(float)
    return pd.DataFrame({"query_id": np.repeat(np.arange(users), negatives + 1),
                         "doc_id": [f"item{i}" if i >= 0 else "held-out" for i in items.ravel()],
                         "score": scores.ravel()})


def exact(ranks: np.ndarray, measure: str) -> float:
    within = ranks <= 10
    return float(np.mean(within if measure == "recall@10" else within / np.log2(ranks + 1)))


def table(catalog: int, users: int, negatives: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    qrels = pd.DataFrame({"query_id": np.arange(users), "doc_id": "held-out", "relevance": 1})
    lines = [f"N = {catalog:,} items, {users:,} users with one held-out item each, m = {negatives} sampled negatives",
             "", "| model | measure | exact (full catalog) | sampled (none) | corrected: bias | corrected: bv |",
             "|---|---|---|---|---|---|"]
    for model in ("A", "B"):
        ranks = full_ranks(model, users, catalog, rng)
        run = sampled_run(ranks, catalog, negatives, rng)
        measures = ["recall@10", "nDCG@10"]
        values = {c: duckrank.evaluate(qrels, run, measures, sampled=catalog, correction=c)
                  for c in ("none", "bias", "bv")}
        for measure in measures:
            lines.append(f"| {model} | {measure} | {exact(ranks, measure):.3f} | {values['none'][measure]:.3f} "
                         f"| {values['bias'][measure]:.3f} | {values['bv'][measure]:.3f} |")
    return "\n".join(lines)


def write_example(folder: Path) -> None:
    """The README's example: 100 users, a catalog of 1,000 items, 50 sampled negatives, models A and B."""
    rng = np.random.default_rng(2020)
    catalog, users, negatives = 1000, 100, 50
    pd.DataFrame({"query_id": np.arange(users), "doc_id": "held-out", "relevance": 1}).to_parquet(
        folder / "sampled_qrels.parquet", index=False)
    for model in ("A", "B"):
        ranks = full_ranks(model, users, catalog, rng)
        sampled_run(ranks, catalog, negatives, rng).to_parquet(folder / f"sampled_{model.lower()}.parquet", index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--catalog", type=int, default=5000)
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--negatives", type=int, default=100)
    parser.add_argument("--seed", type=int, default=2020)
    parser.add_argument("--example-data", type=Path, metavar="DIR")
    args = parser.parse_args()
    if args.example_data:
        write_example(args.example_data)
    print(table(args.catalog, args.users, args.negatives, args.seed))


if __name__ == "__main__":
    main()
