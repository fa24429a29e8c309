"""Regenerate the small recommender samples in data/ deterministically: python data/make_recs.py

recs.parquet        a model's top 20 per user in Spark ALS's shape: user_id, recommendations
                    LIST<STRUCT<item_id, rating>> (200 users, 300 items, power-law popularity)
recs_train.parquet  the training interactions (user_id, item_id, timestamp): the items each user has
                    seen, which the model (like most) still ranks high
recs_test.parquet   the held-out interactions after the time split (user_id, item_id, rating 1)
users.parquet       user attributes: user_id, age_band, country (a few users have no row)
events.parquet      an impression log with boolean events: user_id, item_id, pred, clicked, purchased
"""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).parent
USERS, ITEMS, TOP = 200, 300, 20


def main() -> None:
    rng = random.Random(24)
    popularity = [1.0 / (rank + 1) ** 0.9 for rank in range(ITEMS)]  # item i's chance, power law
    train, test, recs = [], [], []
    for user in range(1, USERS + 1):
        taste = {item: rng.random() for item in range(ITEMS)}
        history = rng.choices(range(ITEMS), weights=[p * (0.5 + taste[i]) for i, p in enumerate(popularity)],
                              k=rng.randint(5, 30))
        seen = list(dict.fromkeys(history))
        later = [item for item in rng.choices(range(ITEMS), weights=[p * (0.2 + taste[i]) ** 2 for i, p in
                                                                     enumerate(popularity)], k=8) if item not in seen]
        for step, item in enumerate(seen):
            train.append((user, item, 1_000 + step))
        for item in dict.fromkeys(later):
            test.append((user, item, 1.0))
        # the model scores what the user has seen highest: the items to exclude before evaluating
        scores = {item: round(popularity[item] * 3 + taste[item] + (1.5 if item in seen else 0.0)
                              + rng.gauss(0, 0.3), 2) for item in range(ITEMS)}
        ranked = sorted(scores, key=lambda i: -scores[i])[:TOP + 10]
        if user % 25 == 0:
            ranked = []  # a user the model returned nothing for
        recs.append((user, [{"item_id": item, "rating": scores[item]} for item in ranked]))
    entry = pa.struct([("item_id", pa.int64()), ("rating", pa.float64())])
    pq.write_table(pa.table({"user_id": pa.array([u for u, _ in recs], pa.int64()),
                             "recommendations": pa.array([r for _, r in recs], pa.list_(entry))}),
                   HERE / "recs.parquet")
    pq.write_table(pa.table(dict(zip(("user_id", "item_id", "timestamp"), map(list, zip(*train))))),
                   HERE / "recs_train.parquet")
    pq.write_table(pa.table(dict(zip(("user_id", "item_id", "rating"), map(list, zip(*test))))),
                   HERE / "recs_test.parquet")
    users = [(user, rng.choice(["18-24", "25-44", "45+"]), rng.choice(["cn", "fr", "us"]))
             for user in range(1, USERS + 1) if user % 40]
    pq.write_table(pa.table(dict(zip(("user_id", "age_band", "country"), map(list, zip(*users))))),
                   HERE / "users.parquet")
    events = []
    for user in range(1, 101):
        for item in rng.sample(range(ITEMS), 10):
            pred = round(rng.random(), 3)
            clicked = rng.random() < 0.2 + 0.5 * pred
            events.append((user, item, pred, clicked, clicked and rng.random() < 0.3))
    pq.write_table(pa.table(dict(zip(("user_id", "item_id", "pred", "clicked", "purchased"), map(list, zip(*events))))),
                   HERE / "events.parquet")


if __name__ == "__main__":
    main()
