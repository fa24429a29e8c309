"""Regenerate the sample inputs in data/ deterministically: python data/make_samples.py

run.parquet    a TREC-style run: 50 queries x 100 ranked docs (query_id, doc_id, score)
run_b.parquet  a second system over the same docs, scoring them with more noise (for compare)
qrels.parquet  graded judgments 0-3 for 40 docs per query, about half of them retrieved
log.parquet    a recommender impression log: 300 users x 20 impressions with a model score and
               the user's event on the item (view, click or purchase)
train_interactions.parquet  the same users' training interactions (user_id, item_id): 2-20 items
               each, power-law item popularity, none of them among the user's impressions in log
item_features.parquet       genre flags and a price band (item_id, action, comedy, drama, price) of
               every item of log and train
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent


def make_run_and_qrels(rng: random.Random) -> tuple[pa.Table, pa.Table, pa.Table]:
    run = {"query_id": [], "doc_id": [], "score": []}
    noisier = {"query_id": [], "doc_id": [], "score": []}
    qrels = {"query_id": [], "doc_id": [], "relevance": []}
    for q in range(1, 51):
        query = f"q{q:03d}"
        quality = {f"d{d:05d}": rng.choice([0, 0, 0, 1, 1, 2, 3]) for d in rng.sample(range(100_000), 140)}
        docs = list(quality)
        retrieved, unretrieved = docs[:100], docs[100:]
        for doc in retrieved:
            # Better docs tend to score higher; scores rounded to 2 decimals so ties happen.
            run["query_id"].append(query)
            run["doc_id"].append(doc)
            run["score"].append(round(quality[doc] + rng.gauss(0, 1.2), 2))
            noisier["query_id"].append(query)
            noisier["doc_id"].append(doc)
            noisier["score"].append(round(quality[doc] + rng.gauss(0, 2.0), 2))
        judged = rng.sample(retrieved, 20) + unretrieved[:20]
        for doc in judged:
            qrels["query_id"].append(query)
            qrels["doc_id"].append(doc)
            qrels["relevance"].append(quality[doc])
    return pa.table(run), pa.table(qrels), pa.table(noisier)


def make_log(rng: random.Random) -> pa.Table:
    log = {"user_id": [], "item_id": [], "score": [], "event": []}
    for user in range(1, 301):
        for item in rng.sample(range(5_000), 20):
            affinity = rng.random()
            score = round(min(max(affinity + rng.gauss(0, 0.3), 0.0), 1.0), 3)
            event = "purchase" if affinity > 0.93 else "click" if affinity > 0.75 else "view"
            log["user_id"].append(user)
            log["item_id"].append(item)
            log["score"].append(score)
            log["event"].append(event)
    return pa.table(log)


def make_train_and_items(rng: random.Random, log: pa.Table) -> tuple[pa.Table, pa.Table]:
    shown: dict[int, set[int]] = {}
    for user, item in zip(log.column("user_id").to_pylist(), log.column("item_id").to_pylist()):
        shown.setdefault(user, set()).add(item)
    weights = [1 / (rank + 1) ** 1.1 for rank in range(5_000)]  # item 0 is the most popular
    train = {"user_id": [], "item_id": []}
    for user in range(1, 301):
        trained: set[int] = set()
        for item in rng.choices(range(5_000), weights, k=rng.randint(2, 20)):
            if item not in shown[user] and item not in trained:
                trained.add(item)
                train["user_id"].append(user)
                train["item_id"].append(item)
    catalogue = sorted(set(train["item_id"]) | set(log.column("item_id").to_pylist()))
    genres = [rng.choice(["action", "comedy", "drama"]) for _ in catalogue]
    items = {"item_id": catalogue, **{genre: [float(g == genre) for g in genres] for genre in ("action", "comedy", "drama")},
             "price": [float(rng.randint(1, 3)) for _ in catalogue]}
    return pa.table(train), pa.table(items)


def main() -> None:
    rng = random.Random(20261122)
    run, qrels, noisier = make_run_and_qrels(rng)
    pq.write_table(run, HERE / "run.parquet")
    pq.write_table(qrels, HERE / "qrels.parquet")
    log = make_log(rng)
    pq.write_table(log, HERE / "log.parquet")
    pq.write_table(noisier, HERE / "run_b.parquet")
    train, items = make_train_and_items(random.Random(20261125), log)
    pq.write_table(train, HERE / "train_interactions.parquet")
    pq.write_table(items, HERE / "item_features.parquet")


if __name__ == "__main__":
    main()
