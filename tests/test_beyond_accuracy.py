"""Beyond-accuracy measures against Microsoft Recommenders 1.2.1 (recommenders.evaluation.python_evaluation,
run as its authors ran it: pandas < 3; a test that needs it skips without it, and fails under CI) and popularity bias against formulas written here in pandas.

The data are generated: power-law item popularity, users with a single training item and users with
none, items recommended but never trained on, items that never co-occur, graded qrels, distinct
scores so that each user's top k is unambiguous. Every value goes through Python (duckrank.evaluate),
the CLI (duckrank eval --train/--items) and SQL (the duckrank.<measure> table macros)."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest

import duckrank
from duckrank.errors import InputError, OptionError

from external import missing
from helpers import REPO, run_shell
from helpers import run as cli

try:  # installed without its heavy dependencies: pip install recommenders==1.2.1 --no-deps (see the README)
    from recommenders.evaluation import python_evaluation as pe
except ImportError:
    pe = None

K = 10
USER, ITEM = "userID", "itemID"


def generate(seed: int, users: int = 60, catalog: int = 80, depth: int = 15, string_ids: bool = False):
    """train, run (depth docs per user, none of them the user's training items), qrels, items."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, catalog + 1) ** 1.1  # power law: item 0 is the most popular
    weights[-8:] = 0  # the last 8 items are never trained on (but may be recommended)
    weights /= weights.sum()
    train_rows, run_rows, qrels_rows = [], [], []
    for user in range(users):
        size = [0, 1, 1][user] if user < 3 else int(rng.integers(2, 12))  # no history, single item
        trained = set(rng.choice(catalog, size=size, replace=False, p=weights).tolist()) if size else set()
        train_rows += [(user, item) for item in trained]
        candidates = [item for item in range(catalog) if item not in trained]
        listed = rng.choice(candidates, size=depth, replace=False).tolist()
        scores = rng.permutation(depth) + rng.random()  # distinct: no ties
        run_rows += [(user, item, float(score)) for item, score in zip(listed, scores)]
        judged = rng.choice(candidates, size=8, replace=False).tolist()
        qrels_rows += [(user, item, int(rng.integers(0, 3))) for item in judged]
    train = pd.DataFrame(train_rows, columns=["query_id", "doc_id"])
    run = pd.DataFrame(run_rows, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(qrels_rows, columns=["query_id", "doc_id", "relevance"])
    items = pd.DataFrame({"doc_id": range(catalog), **{f"f{j}": rng.random(catalog).round(3) for j in range(4)}})
    items.loc[3, ["f0", "f1", "f2", "f3"]] = [0.0, 0.0, 0.0, 1.0]
    if string_ids:
        for frame in (train, run, qrels, items):
            for column in ("query_id", "doc_id"):
                if column in frame:
                    frame[column] = frame[column].map(lambda v: f"x{v:03d}")
    return train, run, qrels, items


def top_k(run: pd.DataFrame, k: int) -> pd.DataFrame:
    ranked = run.sort_values(["query_id", "score"], ascending=[True, False])
    return ranked.groupby("query_id").head(k)


def ms_frames(train, run, qrels, items, k=K, rel_level=1):
    """MS Recommenders' inputs: train_df, reco_df (the top k, with col_relevance from the qrels) and
    item_feature_df (a features vector per item)."""
    reco = top_k(run, k).merge(qrels, on=["query_id", "doc_id"], how="left")
    reco["relevant"] = (reco["relevance"].fillna(-1) >= rel_level).astype(float)
    reco = reco.rename(columns={"query_id": USER, "doc_id": ITEM})[[USER, ITEM, "relevant"]]
    train_df = train.rename(columns={"query_id": USER, "doc_id": ITEM})
    features = items.rename(columns={"doc_id": ITEM})
    feature_df = pd.DataFrame({ITEM: features[ITEM],
                               "features": list(features.drop(columns=[ITEM]).to_numpy(dtype=float))})
    return train_df.reset_index(drop=True), reco.reset_index(drop=True), feature_df


def ms(function, *args, **kwargs):
    if pe is None:
        missing("Microsoft Recommenders is not installed: pip install recommenders==1.2.1 --no-deps")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(pe, function)(*args, **kwargs)


def per_user(frame: pd.DataFrame, column: str) -> dict:
    return {user: value for user, value in zip(frame[USER], frame[column])}


def duck_per_query(qrels, run, measure, **options) -> dict:
    rows = duckrank.evaluate(qrels, run, [measure], per_query=True, **options).fetchall()
    return {query: value for query, _, value in rows}


def close(got: dict, expected: dict) -> None:
    assert set(got) == set(expected), set(got) ^ set(expected)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


SEEDS = [1, 2, 3]


@pytest.fixture(params=SEEDS)
def data(request):
    return generate(request.param)


@pytest.mark.parametrize("similarity", ["cooccurrence", "features"])
def test_diversity_and_serendipity_equal_ms_per_user_and_overall(data, similarity):
    train, run, qrels, items = data
    train_df, reco, feature_df = ms_frames(train, run, qrels, items)
    sim = {"item_sim_measure": "item_cooccurrence_count"} if similarity == "cooccurrence" else {
        "item_sim_measure": "item_feature_vector", "item_feature_df": feature_df}
    options = {"train": train, "items": items}
    suffix = f"(similarity={similarity})@{K}"

    expected = per_user(ms("user_diversity", train_df, reco[[USER, ITEM]], **sim), "user_diversity")
    close(duck_per_query(qrels, run, f"diversity{suffix}", **options), expected)
    overall = duckrank.evaluate(qrels, run, [f"diversity{suffix}"], **options)[f"diversity{suffix}"]
    assert overall == pytest.approx(ms("diversity", train_df, reco[[USER, ITEM]], **sim), abs=1e-9)

    expected = per_user(ms("user_serendipity", train_df, reco, col_relevance="relevant", **sim), "user_serendipity")
    assert len(expected) < len(reco[USER].unique())  # a user with no training item has no value, in MS too
    close(duck_per_query(qrels, run, f"serendipity{suffix}", **options), expected)
    overall = duckrank.evaluate(qrels, run, [f"serendipity{suffix}"], **options)[f"serendipity{suffix}"]
    assert overall == pytest.approx(ms("serendipity", train_df, reco, col_relevance="relevant", **sim), abs=1e-9)


def test_novelty_and_coverage_equal_ms(data):
    train, run, qrels, items = data
    train_df, reco, _ = ms_frames(train, run, qrels, items)
    assert set(reco[ITEM]) - set(train_df[ITEM]), "some recommended items were never trained on"
    got = duckrank.evaluate(qrels, run, [f"novelty@{K}", f"catalog_coverage@{K}", f"distributional_coverage@{K}"],
                            train=train)
    # every user has K items, so the mean of the per-user novelty is MS's novelty
    assert got[f"novelty@{K}"] == pytest.approx(ms("novelty", train_df, reco[[USER, ITEM]]), abs=1e-9)
    assert got[f"catalog_coverage@{K}"] == pytest.approx(ms("catalog_coverage", train_df, reco[[USER, ITEM]]), abs=1e-9)
    assert got[f"distributional_coverage@{K}"] == pytest.approx(
        ms("distributional_coverage", train_df, reco[[USER, ITEM]]), abs=1e-9)
    # per user: MS's historical_item_novelty averaged over the user's top k (an untrained item: 0, as MS)
    novelty = per_user(ms("historical_item_novelty", train_df, reco[[USER, ITEM]]).rename(columns={ITEM: USER}),
                       "item_novelty")
    expected = reco.assign(n=reco[ITEM].map(novelty).fillna(0.0)).groupby(USER)["n"].mean().to_dict()
    close(duck_per_query(qrels, run, f"novelty@{K}", train=train), expected)


def test_string_ids_and_another_cutoff():
    train, run, qrels, items = generate(7, string_ids=True)
    train_df, reco, feature_df = ms_frames(train, run, qrels, items, k=4, rel_level=2)
    expected = per_user(ms("user_serendipity", train_df, reco, col_relevance="relevant"), "user_serendipity")
    close(duck_per_query(qrels, run, "serendipity(rel=2)@4", train=train), expected)
    expected = per_user(ms("user_diversity", train_df, reco[[USER, ITEM]], item_sim_measure="item_feature_vector",
                           item_feature_df=feature_df), "user_diversity")
    close(duck_per_query(qrels, run, "diversity(similarity=features)@4", train=train, items=items), expected)


def test_duplicate_training_interactions_count_once(data):
    train, run, qrels, _ = data
    measures = [f"novelty@{K}", f"diversity@{K}", f"serendipity@{K}", f"arp@{K}", f"catalog_coverage@{K}"]
    assert duckrank.evaluate(qrels, run, measures, train=pd.concat([train, train.iloc[::3]])) == \
        pytest.approx(duckrank.evaluate(qrels, run, measures, train=train), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# popularity bias: ARP, APLT, ACLT against the definitions (METRICS.md), written here in pandas


def popularity_bias(train: pd.DataFrame, run: pd.DataFrame, k: int, head: float) -> dict[str, dict]:
    popularity = train.drop_duplicates().groupby("doc_id").size()
    total = popularity.sum()
    # the short head: items whose strictly more popular items hold less than head * total
    short_head = {item for item, n in popularity.items() if popularity[popularity > n].sum() < head * total}
    top = top_k(run, k)
    values: dict[str, dict] = {"arp": {}, "aplt": {}, "aclt": {}}
    for user, group in top.groupby("query_id"):
        items = list(group["doc_id"])
        tail = [item for item in items if item not in short_head]
        values["arp"][user] = sum(popularity.get(item, 0) for item in items) / len(items)
        values["aplt"][user] = len(tail) / len(items)
        values["aclt"][user] = float(len(tail))
    return values


@pytest.mark.parametrize("head", [0.2, 0.5, 0.05])
def test_popularity_bias_equals_its_formula(data, head):
    train, run, qrels, _ = data
    expected = popularity_bias(train, run, 5, head)
    for name in ("arp", "aplt", "aclt"):
        spelling = f"{name}(head={head})@5" if head != 0.2 else f"{name}@5"
        got = duck_per_query(qrels, run, spelling, train=train)
        close(got, expected[name])
        mean = duckrank.evaluate(qrels, run, [spelling], train=train)[spelling]
        assert mean == pytest.approx(sum(expected[name].values()) / len(expected[name]), abs=1e-9)


def test_short_head_ties_join_the_head():
    # popularity a: 3, b: 2, c: 2, d: 1 (8 pairs); head 0.4 = 3.2 pairs: a (0 above) and b, c (3 above,
    # both: they tie) are in, d (7 above) is not; with head 0.2 = 1.6 only a
    train = pd.DataFrame({"query_id": [1, 2, 3, 1, 2, 3, 4, 4], "doc_id": list("aaabbccd")})
    run = pd.DataFrame({"query_id": [9] * 4, "doc_id": list("abcd"), "score": [4.0, 3.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"query_id": [9], "doc_id": ["a"], "relevance": [1]})
    assert duckrank.evaluate(qrels, run, ["aclt(head=0.4)", "aclt", "arp"], train=train) == \
        {"aclt(head=0.4)": 1.0, "aclt": 3.0, "arp": 2.0}


# ---------------------------------------------------------------------------------------------
# which queries, conventions, the CLI and SQL doors, errors


def test_users_averaged_are_those_of_every_other_measure():
    train, run, qrels, _ = generate(4)
    # a qrels user missing from the run, and a run user missing from the qrels
    qrels = pd.concat([qrels[qrels.query_id != 5], pd.DataFrame({"query_id": [999], "doc_id": [1], "relevance": [1]})])
    got = duckrank.evaluate(qrels, run, [f"novelty@{K}", f"nDCG@{K}", "num_q"], train=train, per_query=True).df()
    by_measure = got.groupby("measure")["query_id"].apply(set)
    assert by_measure[f"novelty@{K}"] == by_measure[f"nDCG@{K}"]
    assert 5 not in by_measure[f"novelty@{K}"] and 999 not in by_measure[f"novelty@{K}"]
    # -c: the missing user scores nDCG 0 but has no recommendation to be novel: it has no value
    complete = duckrank.evaluate(qrels, run, [f"novelty@{K}"], train=train, complete=True, per_query=True).df()
    assert 999 not in set(complete["query_id"])
    # empty=skip leaves out the users with no relevant doc, from coverage too
    relevant = set(qrels[qrels.relevance >= 1].query_id) & set(run.query_id)
    skipped = duckrank.evaluate(qrels, run, [f"novelty@{K}"], train=train, empty="skip", per_query=True).df()
    assert set(skipped["query_id"]) == relevant
    covered = top_k(run[run.query_id.isin(relevant)], K)
    assert duckrank.evaluate(qrels, run, [f"catalog_coverage@{K}"], train=train, empty="skip")[
        f"catalog_coverage@{K}"] == pytest.approx(covered.doc_id.nunique() / train.doc_id.nunique(), abs=1e-12)


def test_coverage_is_summary_only_and_runs_and_segments_each_get_theirs():
    train, run, qrels, _ = generate(5)
    per_query = duckrank.evaluate(qrels, run, [f"catalog_coverage@{K}", f"novelty@{K}"], train=train, per_query=True)
    assert set(per_query.df()["measure"]) == {f"novelty@{K}"}
    b = run.assign(score=-run.score)
    both = duckrank.evaluate(qrels, [run, b], [f"catalog_coverage@{K}", f"diversity@{K}"], train=train,
                             run_names=["a", "b"])
    assert both["a"] == duckrank.evaluate(qrels, run, [f"catalog_coverage@{K}", f"diversity@{K}"], train=train)
    assert both["b"] == duckrank.evaluate(qrels, b, [f"catalog_coverage@{K}", f"diversity@{K}"], train=train)
    segmented = run.assign(half=run.query_id % 2)
    by = duckrank.evaluate(qrels, segmented, [f"distributional_coverage@{K}", f"serendipity@{K}"], train=train,
                           by="half")
    for half in (0, 1):
        part = run[run.query_id % 2 == half]
        assert by[half] == pytest.approx(duckrank.evaluate(qrels, part, [f"distributional_coverage@{K}",
                                                                          f"serendipity@{K}"], train=train))


def test_ranking_conventions_apply():
    train, run, qrels, _ = generate(6)
    # max_rank caps the list before k; ties := average has no one top k and is refused
    assert duckrank.evaluate(qrels, run, ["novelty@10"], train=train, max_rank=3) == \
        {"novelty@10": duckrank.evaluate(qrels, run, ["novelty@3"], train=train)["novelty@3"]}
    with pytest.raises(InputError, match="ties := 'average'.*novelty"):
        duckrank.evaluate(qrels, run, ["novelty@10"], train=train, ties="average")


def test_sql_table_macros_give_the_same_values(con):
    train, run, qrels, items = generate(8)
    for name, frame in (("train", train), ("run", run), ("qrels", qrels), ("items_raw", items)):
        con.register(name, frame)
    con.execute("CREATE VIEW items AS SELECT doc_id, [f0, f1, f2, f3] AS features FROM items_raw")
    for macro, measure, arguments in [
        ("novelty", "novelty@10", "'train', k := 10"),
        ("diversity", "diversity@10", "'train', k := 10"),
        ("diversity", "diversity(similarity=features)@10", "'train', k := 10, similarity := 'features', "
                                                          "items := 'items'"),
        ("serendipity", "serendipity(rel=2)@5", "'train', k := 5, rel_level := 2"),
        ("arp", "arp(head=0.3)@5", "'train', k := 5, head := 0.3"),
        ("aplt", "aplt@5", "'train', k := 5"),
        ("aclt", "aclt@5", "'train', k := 5"),
    ]:
        got = dict(con.sql(f"SELECT * FROM duckrank.{macro}('qrels', 'run', {arguments})").fetchall())
        close(got, duck_per_query(qrels, run, measure, train=train, items=items))
    for macro, arguments in [("catalog_coverage", "'train', k := 10"), ("distributional_coverage", "k := 10")]:
        (value,), = con.sql(f"SELECT * FROM duckrank.{macro}('qrels', 'run', {arguments})").fetchall()
        assert value == pytest.approx(duckrank.evaluate(qrels, run, [f"{macro}@10"], train=train)[f"{macro}@10"])
    with pytest.raises(Exception, match="similarity := 'features' needs items"):
        con.sql("SELECT * FROM duckrank.diversity('qrels', 'run', 'train', similarity := 'features')").fetchall()
    with pytest.raises(Exception, match="head must be between 0 and 1"):
        con.sql("SELECT * FROM duckrank.arp('qrels', 'run', 'train', head := 2)").fetchall()


def test_cli_reads_train_and_items(tmp_path):
    train, run, qrels, items = generate(9)
    paths = {}
    for name, frame in (("train", train), ("run", run), ("qrels", qrels), ("items", items)):
        paths[name] = tmp_path / f"{name}.parquet"
        frame.to_parquet(paths[name])
    measures = ["novelty@10", "diversity(similarity=features)@10", "serendipity@10", "catalog_coverage@10", "aplt@10"]
    result = cli("eval", str(paths["qrels"]), str(paths["run"]), "--train", str(paths["train"]),
                 "--items", str(paths["items"]), *sum((["-m", m] for m in measures), []),
                 "--format", "json")
    assert result.exit_code == 0, result.output
    got = {row["metric"]: row["value"] for row in json.loads(result.stdout)}
    assert got == pytest.approx(duckrank.evaluate(qrels, run, measures, train=train, items=items), abs=1e-12)
    # a measure that needs --train without it: a usage error naming the option
    missing = cli("eval", str(paths["qrels"]), str(paths["run"]), "-m", "novelty@10")
    assert missing.exit_code == 2 and "--train FILE" in missing.stderr and "Traceback" not in missing.output


def test_errors_name_the_input_and_the_fix():
    train, run, qrels, items = generate(10)
    with pytest.raises(OptionError, match=r"'arp@5' need training interactions: pass train="):
        duckrank.evaluate(qrels, run, ["arp@5"])
    with pytest.raises(OptionError, match=r"need item features \(similarity=features\): pass items="):
        duckrank.evaluate(qrels, run, ["serendipity(similarity=features)"], train=train)
    with pytest.raises(OptionError, match="similarity must be one of cooccurrence, features; got 'cosine'"):
        duckrank.evaluate(qrels, run, ["diversity(similarity=cosine)"], train=train)
    with pytest.raises(InputError, match="train .* has no column 'doc_id'"):
        duckrank.evaluate(qrels, run, ["novelty"], train=train.rename(columns={"doc_id": "item"}))
    with pytest.raises(InputError, match="has doc_id of type BIGINT but train .* has VARCHAR"):
        duckrank.evaluate(qrels, run, ["novelty"], train=train.assign(doc_id=train.doc_id.astype(str)))
    with pytest.raises(InputError, match="train .* has a NULL id"):
        duckrank.evaluate(qrels, run, ["novelty"], train=train.assign(doc_id=train.doc_id.astype("Int64").where(
            train.index != 4)))
    with pytest.raises(InputError, match="column 'name' holds VARCHAR; items hold 'doc_id' and numeric"):
        duckrank.evaluate(qrels, run, ["diversity(similarity=features)"], train=train, items=items.assign(name="x"))
    with pytest.raises(InputError, match="the features of doc_id 2 are missing"):
        duckrank.evaluate(qrels, run, ["diversity(similarity=features)"], train=train,
                          items=items.assign(f0=items.f0.where(items.doc_id != 2)))


def test_embedding_column_equals_feature_columns():
    train, run, qrels, items = generate(11)
    embedded = pd.DataFrame({"doc_id": items.doc_id, "vector": list(items.drop(columns="doc_id").to_numpy())})
    measures = ["diversity(similarity=features)@5", "serendipity(similarity=features)@5"]
    assert duckrank.evaluate(qrels, run, measures, train=train, items=embedded) == pytest.approx(
        duckrank.evaluate(qrels, run, measures, train=train, items=items), abs=1e-12)


def test_spark_engine_refuses_them(tmp_path):
    from duckrank import spark
    with pytest.raises(OptionError, match="novelty@10 read training interactions.*DuckDB engine"):
        spark._conventions({}, duckrank.measures.parse_measures(["novelty@10"]))
    train, run, qrels, _ = generate(13)
    for name, frame in (("train", train), ("run", run), ("qrels", qrels)):
        frame.to_parquet(tmp_path / f"{name}.parquet")
    result = cli("eval", str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"),
                 "--train", str(tmp_path / "train.parquet"), "-m", "novelty@10",
                 "--engine", "spark")
    assert result.exit_code == 2 and "--engine spark does not compute the beyond-accuracy" in result.stderr


def test_cooccurrence_pairs_are_exact_without_the_item_matrix():
    # a heavy user (every item) makes the full item-item matrix catalog^2; the measures look up only
    # the pairs a top k holds and still equal MS, which builds the whole matrix
    train, run, qrels, items = generate(12, users=30, catalog=40)
    heavy = pd.DataFrame({"query_id": 1000, "doc_id": range(40)})
    train = pd.concat([train, heavy], ignore_index=True)
    train_df, reco, _ = ms_frames(train, run, qrels, items)
    close(duck_per_query(qrels, run, f"diversity@{K}", train=train),
          per_user(ms("user_diversity", train_df, reco[[USER, ITEM]]), "user_diversity"))
    close(duck_per_query(qrels, run, f"serendipity@{K}", train=train),
          per_user(ms("user_serendipity", train_df, reco, col_relevance="relevant"), "user_serendipity"))
    assert not math.isnan(duckrank.evaluate(qrels, run, [f"novelty@{K}"], train=train)[f"novelty@{K}"])


@pytest.mark.parametrize("conventions", [{}, {"unjudged": "skip", "max_rank": 7}, {"ties": "pessimistic", "rel_level": 2},
                                         {"duplicates": "max", "complete": True}])
def test_measures_together_equal_each_alone(conventions):
    # several measures share one ranking of the run (its top k rows): the same values as one at a time
    train, run, qrels, items = generate(14)
    run["score"] = run["score"].round(0)  # ties, for the tie rules
    if conventions.get("duplicates") == "max":
        run = pd.concat([run, run.iloc[::5].assign(score=lambda r: r.score - 1)], ignore_index=True)
    measures = ["novelty@10", "diversity@5", "serendipity(rel=2)@10", "arp@3", "catalog_coverage@10",
                "distributional_coverage@4", "aclt(head=0.5)@10"]
    together = duckrank.evaluate(qrels, run, measures, train=train, **conventions)
    alone = {m: duckrank.evaluate(qrels, run, [m], train=train, **conventions)[m] for m in measures}
    assert together == pytest.approx(alone, abs=1e-12)


RANKING_MEASURES = ["P@5", "R@10", "nDCG@10", "AP@10", "RR@10", "ERR@10", "RBP(p=0.5)@10", "Judged@10",
                    "success@3", "ndcg_at_k@10", "map_at_k@10", "r_precision_at_k@10", "P(rel=2)@3",
                    "nDCG(gain=exp)@7", "nDCG(ideal=run)@5", "map", "num_ret"]


# `-m "not slow"`: every convention with lists as deep as the deepest ranking measure (10), the defaults
# with shallower lists (4: the deeper measures are scored from the run); the full run crosses them
@pytest.mark.parametrize("depth, conventions", [
    (depth, conventions) if depth == 10 or not conventions else pytest.param(depth, conventions, marks=pytest.mark.slow)
    for depth in (10, 4)
    for conventions in ({}, {"complete": True}, {"duplicates": "max"}, {"max_rank": 7}, {"ties": "pessimistic"},
                        {"ties": "input"}, {"unjudged": "skip"}, {"rel_level": 2, "empty": "skip"})])
def test_ranking_measures_beside_beyond_accuracy_equal_them_alone(conventions, depth):
    # with a beyond-accuracy measure the run is ranked into top lists; ranking measures that read no
    # deeper than those lists are then scored from the lists' rows (depth 10), the others from the run
    train, run, qrels, items = generate(21, depth=30)
    run["score"] = run["score"].round(0) % 7  # ties, broken by doc_id under the trec rule
    run = run[run.query_id != 4]  # a judged query the run misses (complete), and one never judged
    qrels = pd.concat([qrels[qrels.query_id != 5], qrels.iloc[::6].assign(relevance=-1)]).drop_duplicates(
        ["query_id", "doc_id"])  # negative grades: pooled, unjudged
    if conventions.get("duplicates") == "max":
        run = pd.concat([run, run.iloc[::5].assign(score=lambda r: r.score - 1)], ignore_index=True)
    options = {"train": train, **conventions}
    together = duckrank.evaluate(qrels, run, [*RANKING_MEASURES, f"novelty@{depth}"], **options)
    alone = duckrank.evaluate(qrels, run, RANKING_MEASURES, **conventions)
    assert {m: together[m] for m in RANKING_MEASURES} == pytest.approx(alone, abs=1e-12)
    per_query = duckrank.evaluate(qrels, run, [*RANKING_MEASURES, f"novelty@{depth}"], per_query=True,
                                  **options).fetchall()
    assert sorted(row for row in per_query if row[1] in RANKING_MEASURES) == sorted(
        duckrank.evaluate(qrels, run, RANKING_MEASURES, per_query=True, **conventions).fetchall())


def test_real_duckdb_shell_reads_the_sample_data():
    script = (".read sql/duckrank.sql\n.mode csv\n.headers off\n"
              "CREATE VIEW train AS SELECT user_id AS query_id, item_id AS doc_id FROM 'data/train_interactions.parquet';\n"
              "CREATE VIEW run AS SELECT user_id AS query_id, item_id AS doc_id, score FROM 'data/log.parquet';\n"
              "CREATE VIEW qrels AS SELECT user_id AS query_id, item_id AS doc_id, "
              "CASE event WHEN 'purchase' THEN 3 WHEN 'click' THEN 1 ELSE 0 END AS relevance FROM 'data/log.parquet';\n"
              "SELECT avg(value) FROM duckrank.serendipity('qrels', 'run', 'train', k := 10);\n"
              "SELECT value FROM duckrank.distributional_coverage('qrels', 'run', k := 10);\n")
    result = run_shell(script)
    assert result.returncode == 0 and not result.stderr, result.stderr
    got = [float(line) for line in result.stdout.split()]
    expected = duckrank.evaluate(log=str(REPO / "data/log.parquet"), label="event",
                                 label_map={"purchase": 3, "click": 1}, query_col="user_id", doc_col="item_id",
                                 train=str(REPO / "data/train_interactions.parquet"),
                                 measures=["serendipity@10", "distributional_coverage@10"])
    assert got == pytest.approx(list(expected.values()), abs=1e-12)


def test_values_are_the_same_bits_on_any_thread_count():
    train, run, qrels, items = generate(15, users=120)
    measures = ["novelty@10", "diversity@10", "serendipity@10", "distributional_coverage@10",
                "diversity(similarity=features)@10"]
    one = duckrank.evaluate(qrels, run, measures, train=train, items=items, threads=1)
    assert duckrank.evaluate(qrels, run, measures, train=train, items=items, threads=2) == one
    assert duckrank.evaluate(qrels, run.sample(frac=1, random_state=3), measures, train=train.sample(frac=1),
                             items=items, threads=2) == one
