"""Issue 24's input side: runs as lists, exclude= (seen items), segments= (a table of query
attributes), several event columns as labels, and the CLI's note on qrels queries missing from a run.

Oracles: the equivalent long run (a list run must give the very same per-query values, text
included), a pandas anti-join for exclusions, a pandas merge for segments, grades computed in pandas
for events, and Microsoft Recommenders' python_evaluation for the accuracy measures on list runs.
The data are generated: score ties, integer and string ids, empty lists, graded labels, users on
one side only.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import run as cli

import duckrank
from duckrank.errors import InputError, OptionError

MEASURES = ["all_trec", "ndcg@5", "P@3", "recall@10", "success@1", "ndcg(gain=exp)@10", "nDCG(ideal=run)@5"]
# what ties := 'average' defines (the measures linear in the ranking)
LINEAR = ["P@3", "P@10", "recall@5", "recall", "ndcg@5", "ndcg", "ndcg(gain=exp)@10", "Rprec"]


# ---------------------------------------------------------------------------------------------
# generated data


def generated(seed: int, string_ids: bool, queries: int = 40, items: int = 60):
    """(long run, its list form with scores, qrels) as pandas / arrow. Scores have one decimal, so
    they tie; some lists are empty; some qrels users have no list, some lists no qrels."""
    rng = random.Random(seed)
    qid = (lambda q: f"u{q}") if string_ids else (lambda q: q)
    did = (lambda d: f"i{d}") if string_ids else (lambda d: d)
    long_rows, lists, judged = [], {"query_id": [], "recs": []}, []
    for q in range(queries):
        if q % 7 != 6:  # every 7th user is in the qrels only
            chosen = rng.sample(range(items), rng.choice([0, 1, 3, 8, 15, 20]))
            entries = [{"doc_id": did(d), "score": round(rng.random(), 1)} for d in chosen]
            lists["query_id"].append(qid(q))
            lists["recs"].append(entries)
            long_rows += [(qid(q), e["doc_id"], e["score"]) for e in entries]
        if q % 9 != 8:  # every 9th user has no judgments
            for d in rng.sample(range(items), rng.randint(1, 12)):
                judged.append((qid(q), did(d), rng.choice([0, 1, 1, 2, 3])))
    long = pd.DataFrame(long_rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(judged, columns=["query_id", "doc_id", "relevance"])
    id_type = pa.string() if string_ids else pa.int64()
    entry = pa.struct([("doc_id", id_type), ("score", pa.float64())])
    table = pa.table({"query_id": pa.array(lists["query_id"], id_type),
                      "recs": pa.array(lists["recs"], pa.list_(entry))})
    return long, table, qrels


def per_query(qrels, run, measures=None, **options) -> dict:
    measures = measures or (LINEAR if options.get("ties") == "average" else MEASURES)
    relation = duckrank.evaluate(qrels, run, measures, per_query=True, **options)
    rows = relation.fetchall()
    columns = relation.columns
    assert rows, "nothing scored"
    return {tuple(row[:columns.index("value")]): tuple(row[columns.index("value"):]) for row in rows}


def assert_same(got: dict, expected: dict) -> int:
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12, nan_ok=True), key
    return len(expected)


# ---------------------------------------------------------------------------------------------
# runs as lists


@pytest.mark.parametrize("string_ids", [True, False])
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.slow)])  # a second data set: the full run
@pytest.mark.parametrize("ties", ["trec", "average", "pessimistic"])
def test_a_list_run_scores_as_its_long_run(seed, string_ids, ties):
    long, lists, qrels = generated(seed, string_ids)
    for complete in (False, True):
        expected = per_query(qrels, long, ties=ties, complete=complete)
        assert len(expected) > 200
        assert_same(per_query(qrels, lists, ties=ties, complete=complete), expected)


def test_a_list_run_reads_from_every_input_form(tmp_path):
    long, lists, qrels = generated(3, True)
    expected = per_query(qrels, long)
    parquet = tmp_path / "recs.parquet"
    pq.write_table(lists, parquet)
    jsonl = tmp_path / "recs.jsonl"
    jsonl.write_text("".join(json.dumps(row) + "\n" for row in lists.to_pylist()))
    for form in (parquet, str(parquet), jsonl, lists, lists.to_pandas(), pl.from_arrow(lists),
                 duckdb.arrow(lists) if hasattr(duckdb, "arrow") else lists):
        assert_same(per_query(qrels, form), expected)


def test_the_als_shape_works_with_the_column_options():
    """Spark ALS recommendForAllUsers: user_id, recommendations array<struct<item_id, rating>>."""
    long, lists, qrels = generated(4, False)
    als = pa.table({"user_id": lists["query_id"],
                    "recommendations": pa.array([[{"item_id": e["doc_id"], "rating": e["score"]} for e in row]
                                                 for row in lists["recs"].to_pylist()])})
    options = dict(query_col="user_id", doc_col="item_id", score_col="rating", relevance_col="rating")
    renamed = qrels.rename(columns={"query_id": "user_id", "doc_id": "item_id", "relevance": "rating"})
    assert_same(per_query(renamed, als, **options),
                per_query(renamed, long.rename(columns={"query_id": "user_id", "doc_id": "item_id",
                                                        "score": "rating"}), **options))


@pytest.mark.parametrize("string_ids", [True, False])
def test_a_list_of_ids_ranks_by_list_order_as_a_rank_column_does(string_ids):
    long, lists, qrels = generated(5, string_ids)
    # the list order is the ranking: the long run's order by score (trec ties), as ids only
    # (trec_eval breaks ties by the doc id as text: '9' before '10')
    ordered = long.assign(text=long.doc_id.astype(str)).sort_values(["query_id", "score", "text"], ascending=False)
    ordered = ordered.drop(columns="text").assign(rank=ordered.groupby("query_id").cumcount() + 1)
    ids = pa.table({"query_id": lists["query_id"],
                    "items": [list(ordered[ordered.query_id == q].doc_id) for q in lists["query_id"].to_pylist()]})
    expected = per_query(qrels, long)
    assert_same(per_query(qrels, ids), expected)
    # a long run with a rank column and no score ranks by it (rank 1 best)
    assert_same(per_query(qrels, ordered[["query_id", "doc_id", "rank"]]), expected)
    # structs without a score field rank by list order too
    structs = pa.table({"query_id": ids["query_id"],
                        "recs": [[{"doc_id": d} for d in row] for row in ids["items"].to_pylist()]})
    assert_same(per_query(qrels, structs), expected)


def test_list_runs_keep_their_other_columns_for_segments_and_run_ids():
    long, lists, qrels = generated(6, True)
    device = {q: ("phone" if i % 2 else "web") for i, q in enumerate(lists["query_id"].to_pylist())}
    with_device = lists.append_column("device", pa.array([device[q] for q in lists["query_id"].to_pylist()]))
    expected = per_query(qrels, long.assign(device=long.query_id.map(device)), by="device")
    assert_same(per_query(qrels, with_device, by="device"), expected)


def test_list_run_errors_name_the_problem():
    _, lists, qrels = generated(7, True)
    rows = lists.to_pylist()
    rows[2]["recs"] = [*rows[2]["recs"][:1], None]
    with_null = pa.Table.from_pylist(rows, schema=lists.schema)
    with pytest.raises(InputError, match=r"NULL entry at position 2 of the list 'recs' of query_id 'u2'"):
        duckrank.evaluate(qrels, with_null, ["map"])
    rows = lists.to_pylist()
    rows[1]["recs"] = [rows[1]["recs"][0], rows[1]["recs"][0]]
    twice = pa.Table.from_pylist(rows, schema=lists.schema)
    with pytest.raises(InputError, match=r"2 rows for query_id 'u1', doc_id .*duplicates"):
        duckrank.evaluate(qrels, twice, ["map"])
    # the duplicate rule's option applies as to a long run
    long_twice = pd.DataFrame([(r["query_id"], e["doc_id"], e["score"]) for r in twice.to_pylist() for e in r["recs"]],
                              columns=["query_id", "doc_id", "score"])
    assert_same(per_query(qrels, twice, duplicates="max"), per_query(qrels, long_twice, duplicates="max"))
    with pytest.raises(InputError, match=r"no doc id field 'item_id'; name it with doc_col="):
        duckrank.evaluate(qrels.rename(columns={"doc_id": "item_id"}), lists, ["map"], doc_col="item_id")
    with pytest.raises(InputError, match=r"no score field 'pred'"):
        duckrank.evaluate(qrels, lists, ["map"], score_col="pred")
    two = lists.append_column("other", lists["recs"])
    with pytest.raises(InputError, match=r"several list columns \('recs', 'other'\)"):
        duckrank.evaluate(qrels, two, ["map"])


def test_list_runs_match_microsoft_recommenders_accuracy_measures():
    """Microsoft Recommenders' precision/recall/nDCG@k (binary relevance: every item of the user's
    truth is relevant) on a list run with distinct scores (its tie order is its own)."""
    from recommenders.evaluation import python_evaluation as ms

    rng = random.Random(11)
    truth, lists = [], {"user_id": [], "recs": []}
    for user in range(300):
        if user % 10:
            items = rng.sample(range(200), rng.randint(1, 30))
            scores = rng.sample(range(10_000), len(items))
            lists["user_id"].append(user)
            lists["recs"].append([{"item_id": i, "prediction": float(s)} for i, s in zip(items, scores)])
        truth += [(user, item, 1.0) for item in rng.sample(range(200), rng.randint(1, 15))]
    true_df = pd.DataFrame(truth, columns=["user_id", "item_id", "rating"])
    pred_df = pd.DataFrame([(u, e["item_id"], e["prediction"]) for u, row in zip(lists["user_id"], lists["recs"])
                            for e in row], columns=["user_id", "item_id", "prediction"])
    options = dict(query_col="user_id", doc_col="item_id", score_col="prediction", relevance_col="rating")
    compared = 0
    for k in (1, 5, 10, 20):
        ours = duckrank.evaluate(true_df, pa.table(lists), [f"P@{k}", f"recall@{k}", f"ndcg@{k}"], **options)
        ms_args = dict(col_user="user_id", col_item="item_id", col_rating="rating", col_prediction="prediction", k=k)
        assert ours[f"P@{k}"] == pytest.approx(ms.precision_at_k(true_df, pred_df, **ms_args), abs=1e-12)
        assert ours[f"recall@{k}"] == pytest.approx(ms.recall_at_k(true_df, pred_df, **ms_args), abs=1e-12)
        # its nDCG outer-joins the truth: users without recommendations count 0 (trec_eval -c)
        complete = duckrank.evaluate(true_df, pa.table(lists), [f"ndcg@{k}"], complete=True, **options)
        assert complete[f"ndcg@{k}"] == pytest.approx(ms.ndcg_at_k(true_df, pred_df, **ms_args), abs=1e-12)
        compared += 3
    assert compared == 12


def test_the_sql_macro_turns_lists_into_a_run_any_measure_macro_reads(con):
    long, lists, qrels = generated(8, True)
    con.register("recs_arrow", lists)
    con.execute("CREATE TABLE recs AS SELECT * FROM recs_arrow")
    con.register("qrels_frame", qrels)
    con.execute("CREATE TABLE qrels AS SELECT * FROM qrels_frame")
    con.execute("CREATE VIEW run AS SELECT * FROM duckrank.run_from_lists('recs', list_col := 'recs', "
                "score_field := 'score')")
    got = dict(con.execute("SELECT query_id, value FROM duckrank.ndcg('qrels', 'run', k := 10)").fetchall())
    expected = per_query(qrels, long, ["ndcg@10"])
    assert got == pytest.approx({key[0]: value[0] for key, value in expected.items()}, abs=1e-12)
    # the ids-only form: rank = position, score = -rank
    con.execute("CREATE TABLE ids AS SELECT * FROM (VALUES ('a', ['x', 'y', 'z']), ('b', []::VARCHAR[])) "
                "t(query_id, docs)")
    assert con.execute("SELECT query_id, doc_id, score, rank FROM duckrank.run_from_lists('ids')").fetchall() == [
        ("a", "x", -1.0, 1), ("a", "y", -2.0, 2), ("a", "z", -3.0, 3)]


# ---------------------------------------------------------------------------------------------
# exclude= (seen items)


def _seen(long: pd.DataFrame, qrels: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Training pairs: some of the run's rows, some judged docs, some pairs of neither, and an
    extra column (a timestamp) that must be ignored."""
    rng = random.Random(seed)
    pairs = long.sample(frac=0.3, random_state=seed)[["query_id", "doc_id"]]
    judged = qrels.sample(frac=0.2, random_state=seed)[["query_id", "doc_id"]]
    other = pd.DataFrame({"query_id": long.query_id.iloc[:5].values, "doc_id": long.doc_id.iloc[:5].values})
    seen = pd.concat([pairs, judged, other]).assign(timestamp=lambda f: [rng.randint(0, 10**6) for _ in range(len(f))])
    return seen.reset_index(drop=True)


def _anti_join(run: pd.DataFrame, seen: pd.DataFrame) -> pd.DataFrame:
    marked = run.merge(seen[["query_id", "doc_id"]].drop_duplicates(), how="left", indicator=True)
    return marked[marked._merge == "left_only"].drop(columns="_merge")


# `-m "not slow"`: every option on text ids, the defaults on integer ids; the full run crosses them
@pytest.mark.parametrize("options, string_ids", [
    (options, string_ids) if string_ids or not options else pytest.param(options, string_ids, marks=pytest.mark.slow)
    for string_ids in (True, False)
    for options in ({}, {"max_rank": 5}, {"complete": True}, {"ties": "average"}, {"unjudged": "skip", "max_rank": 8})])
def test_exclude_equals_deleting_the_pairs_by_hand(options, string_ids):
    long, lists, qrels = generated(9, string_ids)
    seen = _seen(long, qrels, 9)
    expected = per_query(qrels, _anti_join(long, seen), **options)
    assert_same(per_query(qrels, long, exclude=seen, **options), expected)
    assert_same(per_query(qrels, lists, exclude=seen, **options), expected)  # a list run too
    assert per_query(qrels, long, **options) != expected  # the exclusion changed something


def test_exclude_applies_to_every_run_and_segment(tmp_path):
    long, _, qrels = generated(10, True)
    other = long.assign(score=long.score[::-1].values)
    seen = _seen(long, qrels, 10)
    runs = {"a": long, "b": other}
    for name, frame in runs.items():
        frame.assign(device=frame.query_id.str.len() % 2).to_parquet(tmp_path / f"{name}.parquet")
    expected = per_query(qrels, [_anti_join(f.assign(device=f.query_id.str.len() % 2), seen) for f in runs.values()],
                         run_names=["a", "b"], by="device")
    got = per_query(qrels, [tmp_path / "a.parquet", tmp_path / "b.parquet"], run_names=["a", "b"], by="device",
                    exclude=seen)
    assert_same(got, expected)


def test_a_trec_qrels_file_and_the_ties_input_order_work_with_exclude(tmp_path):
    long, _, qrels = generated(12, True)
    seen = _seen(long, qrels, 12)
    trec = tmp_path / "train.qrels"
    trec.write_text("".join(f"{q} 0 {d} 1\n" for q, d in zip(seen.query_id, seen.doc_id)))
    for ties in ("trec", "input"):
        expected = per_query(qrels, _anti_join(long, seen), ties=ties)
        assert_same(per_query(qrels, long, exclude=str(trec), ties=ties), expected)
        assert_same(per_query(qrels, long, exclude=seen, ties=ties), expected)


def test_exclude_renames_its_columns_as_the_qrels_and_checks_id_types():
    long, _, qrels = generated(13, False)
    seen = _seen(long, qrels, 13)
    options = dict(query_col="user_id", doc_col="item_id", score_col="pred", relevance_col="rating")
    renamed = {"query_id": "user_id", "doc_id": "item_id", "score": "pred", "relevance": "rating"}
    assert_same(per_query(qrels.rename(columns=renamed), long.rename(columns=renamed),
                          exclude=seen.rename(columns=renamed), **options),
                per_query(qrels, _anti_join(long, seen)))
    with pytest.raises(InputError, match=r"exclude \(DataFrame\) has VARCHAR|has doc_id of type BIGINT but exclude"):
        duckrank.evaluate(qrels, long, ["map"], exclude=seen.astype({"doc_id": str}))
    with pytest.raises(InputError, match=r"exclude \(DataFrame\) has no column 'doc_id'"):
        duckrank.evaluate(qrels, long, ["map"], exclude=seen[["query_id"]])


def test_the_sql_macro_removes_the_pairs_before_any_measure(con):
    long, _, qrels = generated(14, True)
    seen = _seen(long, qrels, 14)
    for name, frame in (("run", long), ("qrels", qrels), ("seen", seen)):
        con.register(f"{name}_frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_frame")
    con.execute("CREATE VIEW unseen AS SELECT * FROM duckrank.run_excluding('run', 'seen')")
    got = dict(con.execute("SELECT query_id, value FROM duckrank.ndcg('qrels', 'unseen', k := 10, "
                           "max_rank := 12)").fetchall())
    expected = per_query(qrels, _anti_join(long, seen), ["ndcg@10"], max_rank=12)
    assert got == pytest.approx({key[0]: value[0] for key, value in expected.items()}, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# segments= (a table of query attributes)


def test_segments_from_a_table_equal_the_column_joined_by_hand(tmp_path):
    long, lists, qrels = generated(15, True)
    users = sorted(set(long.query_id))
    table = pd.DataFrame({"query_id": users, "age_band": [("young", "old", "mid")[i % 3] for i in range(len(users))],
                          "country": [("fr", "cn")[i % 2] for i in range(len(users))]})
    table = table[table.query_id != users[4]]  # a user the table lacks: scored under a NULL segment
    joined = long.merge(table, how="left", on="query_id")
    expected = per_query(qrels, joined, by=["age_band", "country"])
    assert any(key[0] is None for key in expected)
    path = tmp_path / "users.parquet"
    pd.concat([table, table.iloc[:3]]).to_parquet(path)  # a row repeated with the same values is fine
    assert_same(per_query(qrels, long, segments=path, by=["age_band", "country"]), expected)
    assert_same(per_query(qrels, lists, segments=table, by=["age_band", "country"]), expected)


def test_a_query_in_two_segments_is_an_error_naming_it():
    long, _, qrels = generated(16, True)
    table = pd.DataFrame({"query_id": ["u1", "u2", "u1"], "age_band": ["young", "old", "old"]})
    with pytest.raises(InputError, match=r"gives query_id 'u1' two segments \('old' and 'young'|'young' and 'old'"):
        duckrank.evaluate(qrels, long, ["map"], segments=table, by="age_band")
    with pytest.raises(InputError, match=r"has no column 'age' for --by"):
        duckrank.evaluate(qrels, long, ["map"], segments=table, by="age")
    with pytest.raises(OptionError, match=r"name the columns to score by with by="):
        duckrank.evaluate(qrels, long, ["map"], segments=table)


# ---------------------------------------------------------------------------------------------
# events: several label columns


def per_query_rows(relation) -> dict:
    return {(query_id, measure): value for query_id, measure, value in relation.fetchall()}


def _events_log(seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for user in range(60):
        for item in rng.sample(range(100), rng.randint(1, 12)):
            clicked = rng.random() < 0.4
            rows.append((f"u{user}", item, round(rng.random(), 1), clicked, int(clicked and rng.random() < 0.4),
                         rng.choice(["view", "click", "purchase"])))
    return pd.DataFrame(rows, columns=["user_id", "item_id", "pred", "clicked", "purchased", "event"])


def test_event_columns_grade_a_row_by_its_highest_true_event():
    log = _events_log(17)
    grades = {"purchased": 3, "clicked": 1}
    # oracle: the grade computed row by row in Python
    graded = log.assign(label=[max([g for c, g in grades.items() if row[c]], default=0)
                               for _, row in log.iterrows()])
    options = dict(query_col="user_id", doc_col="item_id", score_col="pred")
    measures = ["ndcg@5", "map", "P@3", "gauc", "auc"]
    expected = per_query_rows(duckrank.evaluate(log=graded, label="label", measures=measures, per_query=True,
                                                **options))
    got = per_query_rows(duckrank.evaluate(log=log, label=["purchased", "clicked"], label_map=grades,
                                           measures=measures, per_query=True, **options))
    assert got.keys() == expected.keys() and len(got) > 100
    assert got == pytest.approx(expected, abs=1e-12)
    # a single boolean event column keyed by its name, and by its values
    one = log.assign(label=log.clicked.astype(int) * 2)
    expected = duckrank.evaluate(log=one, label="label", measures=measures, **options)
    assert duckrank.evaluate(log=log, label="clicked", label_map={"clicked": 2}, measures=measures,
                             **options) == pytest.approx(expected)
    assert duckrank.evaluate(log=log, label="clicked", label_map={"true": 2}, measures=measures,
                             **options) == pytest.approx(expected)


def test_label_maps_that_match_nothing_are_errors():
    log = _events_log(18)
    options = dict(query_col="user_id", doc_col="item_id", score_col="pred", measures=["map"])
    with pytest.raises(InputError, match=r"key 'buy' matches no value of label column 'event' \(its values: 'click', "
                                         r"'purchase', 'view'\)"):
        duckrank.evaluate(log=log, label="event", label_map={"purchase": 3, "buy": 2}, **options)
    with pytest.raises(OptionError, match=r"key 'bought' is not one of the event columns"):
        duckrank.evaluate(log=log, label=["clicked", "purchased"], label_map={"clicked": 1, "bought": 3}, **options)
    with pytest.raises(OptionError, match=r"gives no grade to event column 'purchased'"):
        duckrank.evaluate(log=log, label=["clicked", "purchased"], label_map={"clicked": 1}, **options)
    with pytest.raises(OptionError, match=r"give each its grade with label_map="):
        duckrank.evaluate(log=log, label=["clicked", "purchased"], **options)
    with pytest.raises(InputError, match=r"event column 'event' holds VARCHAR"):
        duckrank.evaluate(log=log, label=["clicked", "event"], label_map={"clicked": 1, "event": 2}, **options)
    counts = log.assign(purchased=log.purchased * 2)
    with pytest.raises(InputError, match=r"event column 'purchased' holds 2"):
        duckrank.evaluate(log=counts, label=["clicked", "purchased"], label_map={"clicked": 1, "purchased": 3},
                          **options)
    with pytest.raises(InputError, match=r"no label column 'liked'"):
        duckrank.evaluate(log=log, label=["clicked", "liked"], label_map={"clicked": 1, "liked": 3}, **options)


# ---------------------------------------------------------------------------------------------
# the CLI


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    long, lists, qrels = generated(19, False)
    renamed = {"query_id": "user_id", "doc_id": "item_id", "relevance": "rating"}
    seen = _seen(long, qrels, 19)
    paths = {name: tmp_path / f"{name}.parquet" for name in ("qrels", "recs", "long", "seen", "users", "log")}
    qrels.rename(columns=renamed).to_parquet(paths["qrels"])
    pq.write_table(pa.table({"user_id": lists["query_id"], "recommendations": pa.array(
        [[{"item_id": e["doc_id"], "rating": e["score"]} for e in row] for row in lists["recs"].to_pylist()])}),
        paths["recs"])
    long.rename(columns={**renamed, "score": "rating"}).to_parquet(paths["long"])
    seen.rename(columns=renamed).to_parquet(paths["seen"])
    users = sorted(set(long.query_id))
    pd.DataFrame({"user_id": users, "age_band": [("young", "old")[i % 2] for i in range(len(users))]}).to_parquet(
        paths["users"])
    _events_log(20).to_parquet(paths["log"])
    return paths


ALS = ["--query-col", "user_id", "--doc-col", "item_id", "--score-col", "rating", "--relevance-col", "rating"]


def test_cli_list_runs_exclude_and_segments(files):
    expected = cli("eval", files["qrels"], files["long"], *ALS, "-m", "ndcg@10", "-m", "map", "-q", "--exclude",
                   files["seen"], "--segments", files["users"], "--by", "age_band", "--format", "csv")
    assert expected.exit_code == 0, expected.output
    got = cli("eval", files["qrels"], files["recs"], *ALS, "-m", "ndcg@10", "-m", "map", "-q", "--exclude",
              files["seen"], "--segments", files["users"], "--by", "age_band", "--format", "csv")
    assert got.exit_code == 0 and got.stdout == expected.stdout
    assert len(got.stdout.splitlines()) > 50 and "young" in got.stdout and "old" in got.stdout
    plain = cli("eval", files["qrels"], files["recs"], *ALS, "-m", "ndcg@10", "--format", "csv")
    assert plain.stdout != cli("eval", files["qrels"], files["recs"], *ALS, "-m", "ndcg@10", "--format", "csv",
                               "--exclude", files["seen"]).stdout


def test_cli_notes_qrels_queries_missing_from_the_run_on_stderr_only(files):
    result = cli("eval", files["qrels"], files["recs"], *ALS, "-m", "map")
    queries = pd.read_parquet(files["qrels"]).user_id.nunique()
    in_run = set(pq.read_table(files["recs"]).to_pandas().query("recommendations.str.len() > 0").user_id)
    lacking = len(set(pd.read_parquet(files["qrels"]).user_id) - in_run)
    assert lacking > 0
    note = (f"note: {lacking} of {queries} qrels queries are not in run '{files['recs']}'; they are not scored "
            f"(pass -c to score them 0)")
    assert result.exit_code == 0 and note in result.stderr and "note:" not in result.stdout
    for quiet in (["-c"], ["--quiet"]):
        assert "note:" not in cli("eval", files["qrels"], files["recs"], *ALS, "-m", "map", *quiet).stderr


def test_cli_event_labels(files):
    args = ["eval", "--log", files["log"], "--query-col", "user_id", "--doc-col", "item_id", "--score-col", "pred",
            "-m", "ndcg@5", "--format", "csv"]
    got = cli(*args, "--label", "purchased", "--label", "clicked", "--label-map", "purchased=3,clicked=1")
    assert got.exit_code == 0, got.output
    log = pd.read_parquet(files["log"])
    graded = log.assign(label=[3 if p else 1 if c else 0 for p, c in zip(log.purchased, log.clicked)])
    expected = duckrank.evaluate(log=graded, label="label", measures=["ndcg@5"], query_col="user_id",
                                 doc_col="item_id", score_col="pred")["ndcg@5"]
    assert float(got.stdout.splitlines()[1].split(",")[-1]) == pytest.approx(expected, abs=1e-12)
    twice = cli(*args, "--label", "clicked", "--label-map", "clicked=1,clicked=2")
    assert twice.exit_code == 2 and "Error: --label-map gives 'clicked' twice" in twice.stderr
    unmatched = cli(*args, "--label", "event", "--label-map", "buy=3")
    assert unmatched.exit_code == 1 and "--label-map key 'buy' matches no value of label column 'event'" \
        in unmatched.stderr and "Traceback" not in unmatched.output


def test_cli_refuses_exclude_and_segments_on_spark(files):
    for flag, value in (("--exclude", files["seen"]), ("--segments", files["users"])):
        extra = ["--by", "age_band"] if flag == "--segments" else []
        result = cli("eval", files["qrels"], files["long"], *ALS, "-m", "map", "--engine", "spark", flag, value, *extra)
        assert result.exit_code == 2 and f"--engine spark does not take {flag}" in result.stderr


def test_cli_segments_need_by(files):
    result = cli("eval", files["qrels"], files["long"], *ALS, "-m", "map", "--segments", files["users"])
    assert result.exit_code == 2 and "name the column(s) to score by with --by COL" in result.stderr


def test_generated_data_has_the_nasty_cases():
    long, lists, qrels = generated(1, True)
    assert any(len(row) == 0 for row in lists["recs"].to_pylist())  # empty lists
    assert long.duplicated(["query_id", "score"]).any()  # score ties
    assert set(qrels.query_id) - set(long.query_id) and set(long.query_id) - set(qrels.query_id)
    assert set(qrels.relevance) == {0, 1, 2, 3} and not math.isnan(long.score.sum())


def test_a_null_list_is_a_query_with_nothing_retrieved():
    long, lists, qrels = generated(21, True)
    rows = lists.to_pylist()
    emptied = rows[0]["query_id"]
    rows[0]["recs"] = None
    with_null = pa.Table.from_pylist(rows, schema=lists.schema)
    for complete in (False, True):
        assert_same(per_query(qrels, with_null, complete=complete),
                    per_query(qrels, long[long.query_id != emptied], complete=complete))


def test_exclude_and_segments_apply_to_a_log():
    log = _events_log(23).assign(label=lambda f: f.clicked.astype(int))
    options = dict(query_col="user_id", doc_col="item_id", score_col="pred", label="label")
    seen = log.sample(frac=0.25, random_state=1)[["user_id", "item_id"]]
    users = pd.DataFrame({"user_id": sorted(set(log.user_id))[5:]}).assign(band=lambda f: f.user_id.str.len())
    measures = ["ndcg@5", "map", "gauc", "auc_global"]
    kept = log.merge(seen, how="left", indicator=True).query("_merge == 'left_only'").drop(columns="_merge")
    expected = duckrank.evaluate(log=kept.merge(users, how="left"), measures=measures, by="band", **options)
    got = duckrank.evaluate(log=log, measures=measures, exclude=seen, segments=users, by="band", **options)
    assert got.keys() == expected.keys() and None in got
    for segment, values in expected.items():
        assert got[segment] == pytest.approx(values, abs=1e-12)
