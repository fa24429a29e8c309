"""Regenerate the sample inputs in data/ deterministically: python data/make_samples.py

run.parquet    a TREC-style run: 50 queries x 100 ranked docs (query_id, doc_id, score)
run_b.parquet  a second system over the same docs, scoring them with more noise (for compare)
qrels.parquet  graded judgments 0-3 for 40 docs per query, about half of them retrieved
log.parquet    a recommender impression log: 300 users x 20 impressions with a model score and
               the user's event on the item (view, click or purchase)
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


def main() -> None:
    rng = random.Random(20261122)
    run, qrels, noisier = make_run_and_qrels(rng)
    pq.write_table(run, HERE / "run.parquet")
    pq.write_table(qrels, HERE / "qrels.parquet")
    pq.write_table(make_log(rng), HERE / "log.parquet")
    pq.write_table(noisier, HERE / "run_b.parquet")


if __name__ == "__main__":
    main()
