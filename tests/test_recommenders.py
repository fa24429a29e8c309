"""Microsoft Recommenders' vocabulary against Microsoft Recommenders itself.

The oracle is recommenders.evaluation.python_evaluation (recommenders 1.2.1, installed with
`pip install --no-deps recommenders==1.2.1`: the README's test command does it). It is imported
plainly: it is on PyPI, so a missing package fails this module instead of skipping it.

The data is generated (seeded loops): users x items, graded ratings 1..5 in the truth, tie-free
predicted scores (MS ranks with pandas' sort, whose order among equal scores is its own), users
only in the truth, users only in the predictions, users with no hit, lists shorter than k. Every
MS spelling is compared with MS's function overall, and per user by calling that function on the
user's rows alone (MS's mean over one user is that user's value), through the three front doors:
duckrank.evaluate, the CLI and the SQL macros. Other recommender modules extend this file.
"""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest
from helpers import run as cli
from recommenders.evaluation import python_evaluation as ms

import duckrank
from duckrank.errors import MeasureError, OptionError

ABS = 1e-9
SEEDS = range(6)
CUTOFFS = [1, 3, 10, 25]  # 25: beyond every generated list
MS_DEFAULT_K = 10  # python_evaluation's DEFAULT_K


def generate(seed: int, users: int = 40, items: int = 30) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(truth, predictions) in MS's default columns: userID, itemID, rating / prediction."""
    rnd = random.Random(seed)
    truth, predicted = [], []
    for user in range(users):
        kind = rnd.choice(["both"] * 6 + ["truth_only", "prediction_only", "no_hit"])
        relevant = rnd.sample(range(items), rnd.randint(1, 14))  # R > k for some users at k = 10
        if kind != "prediction_only":
            truth += [(user, item, rnd.randint(1, 5)) for item in relevant]
        if kind != "truth_only":
            pool = [i for i in range(items) if i not in relevant] if kind == "no_hit" else list(range(items))
            listed = rnd.sample(pool, min(len(pool), rnd.randint(1, 20)))
            scores = rnd.sample(range(1, 10_000), len(listed))  # distinct: no ties
            predicted += [(user, item, score / 7.0) for item, score in zip(listed, scores)]
    return (pd.DataFrame(truth, columns=["userID", "itemID", "rating"]),
            pd.DataFrame(predicted, columns=["userID", "itemID", "prediction"]))


def as_qrels_and_run(truth: pd.DataFrame, predicted: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (truth.rename(columns={"userID": "query_id", "itemID": "doc_id", "rating": "relevance"}),
            predicted.rename(columns={"userID": "query_id", "itemID": "doc_id", "prediction": "score"}))


# Each MS spelling (without its cutoff) and the MS function with the arguments it means.
SPELLINGS = {
    "precision_at_k": (ms.precision_at_k, {}),
    "recall_at_k": (ms.recall_at_k, {}),
    "ndcg_at_k": (ms.ndcg_at_k, {}),  # score_type="binary", its default
    "map_at_k": (ms.map_at_k, {}),
    "ms_map": (ms.map, {}),  # MS's `map`: `map` is trec_eval's
    "r_precision_at_k": (ms.r_precision_at_k, {}),
    "ndcg_at_k(gain=raw)": (ms.ndcg_at_k, {"score_type": "raw"}),
    "ndcg_at_k(gain=exp)": (ms.ndcg_at_k, {"score_type": "exp"}),
}


def spelled(name: str, k: int | None) -> str:
    return name if k is None else f"{name}@{k}"


def ms_value(name: str, truth: pd.DataFrame, predicted: pd.DataFrame, k: int | None) -> float:
    function, arguments = SPELLINGS[name]
    return float(function(truth, predicted, k=MS_DEFAULT_K if k is None else k, **arguments))


def ms_per_user(name: str, truth: pd.DataFrame, predicted: pd.DataFrame, k: int | None) -> dict[int, float]:
    """Each user's value: MS's function over that user's rows alone. The users MS averages over:
    those in both frames, and for ndcg_at_k every user of the truth (a user the predictions miss
    scores 0 there). r_precision_at_k leaves out a user without a hit in the top min(R, k): its
    value for that user alone is 0 (no hit in the top k) or NaN (hits, none within R)."""
    users = set(truth.userID) if name.startswith("ndcg_at_k") else set(truth.userID) & set(predicted.userID)
    out = {}
    for user in sorted(users):
        value = ms_value(name, truth[truth.userID == user], predicted[predicted.userID == user], k)
        if name == "r_precision_at_k" and not value > 0:
            continue
        out[user] = value
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_every_spelling_equals_microsoft_recommenders_overall(seed):
    truth, predicted = generate(seed)
    qrels, run = as_qrels_and_run(truth, predicted)
    spellings = [spelled(name, k) for name in SPELLINGS for k in [*CUTOFFS, None]]
    got = duckrank.evaluate(qrels, run, spellings)
    compared = 0
    for name in SPELLINGS:
        for k in [*CUTOFFS, None]:
            want = ms_value(name, truth, predicted, k)
            assert got[spelled(name, k)] == pytest.approx(want, abs=ABS), (spelled(name, k), seed)
            compared += 1
    assert compared == len(SPELLINGS) * (len(CUTOFFS) + 1)


@pytest.mark.parametrize("seed", [SEEDS[0], *(pytest.param(seed, marks=pytest.mark.slow) for seed in SEEDS[1:3])])
def test_every_spelling_equals_microsoft_recommenders_per_user(seed):  # -m "not slow": one data set of three
    truth, predicted = generate(seed, users=25)
    qrels, run = as_qrels_and_run(truth, predicted)
    spellings = [spelled(name, k) for name in SPELLINGS for k in (3, None)]
    rows = duckrank.evaluate(qrels, run, spellings, per_query=True).fetchall()
    got: dict[str, dict[int, float]] = {s: {} for s in spellings}
    for user, measure, value in rows:
        got[measure][user] = value
    for name in SPELLINGS:
        for k in (3, None):
            want = ms_per_user(name, truth, predicted, k)
            assert set(got[spelled(name, k)]) == set(want), spelled(name, k)
            for user, value in want.items():
                assert got[spelled(name, k)][user] == pytest.approx(value, abs=ABS), (spelled(name, k), user)


def test_the_data_holds_what_the_comparison_needs():
    """A test that cannot fail is a defect: the generated users must include every kind, and the
    spellings must differ from trec_eval's (or the comparison proves nothing about semantics)."""
    truth, predicted = generate(0)
    qrels, run = as_qrels_and_run(truth, predicted)
    truth_users, predicted_users = set(truth.userID), set(predicted.userID)
    assert truth_users - predicted_users and predicted_users - truth_users
    assert any(len(group) < 10 for _, group in predicted.groupby("userID"))
    hits = predicted.merge(truth, on=["userID", "itemID"])
    assert truth_users & predicted_users - set(hits.userID), "no user without a hit"
    got = duckrank.evaluate(qrels, run, ["ndcg_at_k", "nDCG@10", "map_at_k", "AP@10", "r_precision_at_k", "Rprec"])
    assert got["ndcg_at_k"] != pytest.approx(got["nDCG@10"])  # binary gain, users only in the truth
    assert got["map_at_k"] != pytest.approx(got["AP@10"])  # / min(R, k) against / R
    assert got["r_precision_at_k"] != pytest.approx(got["Rprec"])  # users without a hit left out


def test_ndcg_at_k_scores_users_the_predictions_miss_and_the_others_do_not():
    # MS's ndcg_at_k averages over every user of rating_true (its outer merge), its precision over
    # the users in both: user 2 (truth only) counts 0 for ndcg_at_k and is absent from precision_at_k
    truth = pd.DataFrame({"userID": [1, 1, 2], "itemID": [10, 11, 12], "rating": [5, 3, 4]})
    predicted = pd.DataFrame({"userID": [1, 1, 3], "itemID": [10, 13, 12], "prediction": [0.9, 0.8, 0.7]})
    qrels, run = as_qrels_and_run(truth, predicted)
    got = duckrank.evaluate(qrels, run, ["ndcg_at_k@2", "precision_at_k@2", "nDCG(gain=binary)@2"])
    assert got["ndcg_at_k@2"] == pytest.approx(ms.ndcg_at_k(truth, predicted, k=2), abs=ABS)
    assert got["ndcg_at_k@2"] == pytest.approx((1 / (1 + 1 / math.log2(3))) / 2, abs=ABS)
    assert got["precision_at_k@2"] == pytest.approx(ms.precision_at_k(truth, predicted, k=2), abs=ABS) == 0.5
    # the same measure without MS's user set: user 2 is not scored
    assert got["nDCG(gain=binary)@2"] == pytest.approx(1 / (1 + 1 / math.log2(3)), abs=ABS)
    # complete= is every measure's own: the convention (-c) for that measure alone, either way
    per_measure = duckrank.evaluate(qrels, run, ["nDCG(gain=binary,complete=true)@2", "P(complete=false)@2"],
                                    complete=True)
    assert per_measure["nDCG(gain=binary,complete=true)@2"] == got["ndcg_at_k@2"]
    assert per_measure["P(complete=false)@2"] == got["precision_at_k@2"]
    assert duckrank.evaluate(qrels, run, ["P@2"], complete=True)["P@2"] == 0.25


def test_sql_macros_give_the_same_numbers():
    """The SQL front door: the table macros with the options the MS spellings fix."""
    truth, predicted = generate(1)
    qrels, run = as_qrels_and_run(truth, predicted)
    con = duckrank.connect()
    con.register("qrels", qrels)
    con.register("run", run)

    def mean(sql: str) -> float:
        return con.execute(f"SELECT avg(value) FROM {sql}").fetchall()[0][0]

    for k in (1, 3, 10, 25):
        assert mean(f"duckrank.precision('qrels', 'run', k := {k})") == pytest.approx(
            ms.precision_at_k(truth, predicted, k=k), abs=ABS)
        assert mean(f"duckrank.recall('qrels', 'run', k := {k})") == pytest.approx(
            ms.recall_at_k(truth, predicted, k=k), abs=ABS)
        assert mean(f"duckrank.ndcg('qrels', 'run', k := {k}, gain := 'binary', complete := true)") == pytest.approx(
            ms.ndcg_at_k(truth, predicted, k=k), abs=ABS)
        assert mean(f"duckrank.average_precision('qrels', 'run', k := {k}, denominator := 'min')") == pytest.approx(
            ms.map_at_k(truth, predicted, k=k), abs=ABS)
        assert mean(f"duckrank.average_precision('qrels', 'run', k := {k})") == pytest.approx(
            ms.map(truth, predicted, k=k), abs=ABS)
        assert mean(f"duckrank.recommenders_r_precision('qrels', 'run', k := {k})") == pytest.approx(
            ms.r_precision_at_k(truth, predicted, k=k), abs=ABS)
    con.close()


def test_cli_gives_the_same_numbers(tmp_path):
    """The CLI front door, on MS's own column names, from Parquet files."""
    truth, predicted = generate(2)
    truth.to_parquet(tmp_path / "truth.parquet")
    predicted.to_parquet(tmp_path / "predicted.parquet")
    names = ["precision_at_k", "recall_at_k", "ndcg_at_k", "map_at_k", "ms_map", "r_precision_at_k"]
    arguments = ["eval", str(tmp_path / "truth.parquet"), str(tmp_path / "predicted.parquet"),
                 "--query-col", "userID", "--doc-col", "itemID", "--relevance-col", "rating",
                 "--score-col", "prediction", "--format", "json"]
    for name in names:
        arguments += ["-m", name, "-m", f"{name}@5"]
    result = cli(*arguments)
    assert result.exit_code == 0, result.output
    got = {row["metric"]: row["value"] for row in json.loads(result.stdout)}
    for name in names:
        for k in (None, 5):
            assert got[spelled(name, k)] == pytest.approx(ms_value(name, truth, predicted, k), abs=ABS), name


def test_default_k_is_ms_default_k_and_an_at_k_overrides_it():
    truth, predicted = generate(3)
    qrels, run = as_qrels_and_run(truth, predicted)
    got = duckrank.evaluate(qrels, run, ["precision_at_k", "precision_at_k@10", "P@10", "precision_at_k@3", "P@3"])
    assert got["precision_at_k"] == got["precision_at_k@10"] == got["P@10"]
    assert got["precision_at_k@3"] == got["P@3"]


def test_trec_eval_map_keeps_its_meaning():
    """MS's `map` is AP@k / R over the top k (k = 10); trec_eval's `map` is full depth. `map` stays
    trec_eval's; MS's is spelled ms_map."""
    truth, predicted = generate(4)
    qrels, run = as_qrels_and_run(truth, predicted)
    got = duckrank.evaluate(qrels, run, ["map", "ms_map", "map_cut.10", "AP"])
    assert got["map"] == got["AP"]
    assert got["ms_map"] == pytest.approx(got["map_cut.10"], abs=ABS)
    assert got["ms_map"] == pytest.approx(ms.map(truth, predicted), abs=ABS)
    assert got["map"] != pytest.approx(got["ms_map"])


def test_a_rating_below_the_relevance_level_is_where_duckrank_and_ms_differ():
    """MS counts every row of rating_true as relevant; duckrank counts grade >= rel_level (1). On
    positive ratings they agree; a rating of 0 (or 0.5) is relevant to MS only, unless -l says so."""
    truth = pd.DataFrame({"userID": [1, 1], "itemID": [10, 11], "rating": [0.5, 4]})
    predicted = pd.DataFrame({"userID": [1, 1], "itemID": [10, 11], "prediction": [0.9, 0.8]})
    qrels, run = as_qrels_and_run(truth, predicted)
    want = ms.precision_at_k(truth, predicted, k=2)
    assert want == 1.0
    assert duckrank.evaluate(qrels, run, ["precision_at_k@2"])["precision_at_k@2"] == 0.5
    assert duckrank.evaluate(qrels, run, ["precision_at_k@2"], rel_level=0.5)["precision_at_k@2"] == want


# ----------------------------------------------------------------------------- gain=binary, gain maps


def test_binary_gain_is_the_ndcg_of_zero_one_grades():
    """gain=binary on graded qrels equals the linear-gain nDCG of the same qrels read as 0/1 at the
    relevance level in force, for every gain measure, per measure, as the convention and with -l."""
    truth, predicted = generate(5)
    qrels, run = as_qrels_and_run(truth, predicted)
    gain_measures = ["nDCG@5", "nDCG", "DCG@5", "cg@5", "idcg@5", "G", "ndcg_rel", "Rndcg"]
    for level in (1, 3):
        binary_qrels = qrels.assign(relevance=(qrels.relevance >= level).astype(int))
        want = duckrank.evaluate(binary_qrels, run, gain_measures)
        assert duckrank.evaluate(qrels, run, gain_measures, gain="binary", rel_level=level) == pytest.approx(want)
        per_measure = [m.replace("@", f"(gain=binary,rel={level})@") if "@" in m else f"{m}(gain=binary,rel={level})"
                       for m in ["nDCG@5", "DCG@5", "cg@5", "idcg@5"]]
        got = duckrank.evaluate(qrels, run, per_measure)
        assert list(got.values()) == pytest.approx([want[m] for m in ["nDCG@5", "DCG@5", "cg@5", "idcg@5"]])
    graded = duckrank.evaluate(qrels, run, ["nDCG@5"])["nDCG@5"]
    assert graded != pytest.approx(duckrank.evaluate(qrels, run, ["nDCG@5"], gain="binary")["nDCG@5"])


def test_gain_map_in_a_measure_string_and_as_a_keyword():
    truth, predicted = generate(0)
    qrels, run = as_qrels_and_run(truth, predicted)
    trec = duckrank.evaluate(qrels, run, ["ndcg.1=3,2=9"])["ndcg.1=3,2=9"]
    got = duckrank.evaluate(qrels, run, ["nDCG(gain_map={1:3,2:9})", "nDCG(gain_map={1:3,2:9})@5", "nDCG@5"])
    assert got["nDCG(gain_map={1:3,2:9})"] == trec
    assert got["nDCG(gain_map={1:3,2:9})@5"] != got["nDCG@5"]
    keyword = duckrank.evaluate(qrels, run, ["ndcg", "nDCG@5", "nDCG(gain_map={5:1})@5"], gain_map={1: 3, 2: 9})
    assert keyword["ndcg"] == trec
    assert keyword["nDCG@5"] == got["nDCG(gain_map={1:3,2:9})@5"]
    # a measure that names its own map keeps it
    assert keyword["nDCG(gain_map={5:1})@5"] == duckrank.evaluate(qrels, run, ["nDCG(gain_map={5:1})@5"])[
        "nDCG(gain_map={5:1})@5"]


@pytest.mark.parametrize("spelling", ["nDCG(gain_map=1:3)@10", "nDCG(gain_map={1=3})@10", "nDCG(gain_map={})@10"])
def test_a_badly_written_gain_map_says_how_to_write_one(spelling):
    truth, predicted = generate(0)
    qrels, run = as_qrels_and_run(truth, predicted)
    with pytest.raises(MeasureError, match=r"a gain map is written \{grade:gain,...\} in braces, e\.g\. "
                                           r"nDCG\(gain_map=\{1:3,2:9\}\)@10 \(trec_eval: ndcg\.1=3,2=9\)"):
        duckrank.evaluate(qrels, run, [spelling])


@pytest.mark.parametrize("gain_map", [{1: "x"}, [(1, 3)], {}, "1=3,2=9", {True: 1}])
def test_a_bad_gain_map_keyword_is_an_option_error_not_a_type_error(gain_map):
    truth, predicted = generate(0)
    qrels, run = as_qrels_and_run(truth, predicted)
    with pytest.raises(OptionError, match=r"gain_map must be a dict of grade to gain, e\.g\. gain_map=\{1: 3, 2: 9\}"):
        duckrank.evaluate(qrels, run, ["nDCG@10"], gain_map=gain_map)


def test_a_gain_map_with_an_infinite_gain_is_refused():
    truth, predicted = generate(0)
    qrels, run = as_qrels_and_run(truth, predicted)
    with pytest.raises(OptionError, match="gain_map must be a MAP of grade to finite gain"):
        duckrank.evaluate(qrels, run, ["nDCG@10"], gain_map={1: math.inf})


def test_cli_gain_binary_and_a_gain_map_measure(tmp_path):
    truth, predicted = generate(1)
    qrels, run = as_qrels_and_run(truth, predicted)
    qrels.to_parquet(tmp_path / "qrels.parquet")
    run.to_parquet(tmp_path / "run.parquet")
    base = ["eval", str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"), "--format", "json"]
    result = cli(*base, "-m", "nDCG@10", "-m", "nDCG(gain_map={1:3,2:9})@10", "--gain", "binary")
    assert result.exit_code == 0, result.output
    got = {row["metric"]: row["value"] for row in json.loads(result.stdout)}
    want = duckrank.evaluate(qrels, run, ["nDCG(gain=binary)@10", "nDCG(gain_map={1:3,2:9},gain=binary)@10"])
    assert got == {"nDCG@10": want["nDCG(gain=binary)@10"],
                   "nDCG(gain_map={1:3,2:9})@10": want["nDCG(gain_map={1:3,2:9},gain=binary)@10"]}
    bad = cli(*base, "-m", "nDCG(gain_map=1:3)@10")
    assert bad.exit_code == 2 and "a gain map is written {grade:gain,...}" in bad.stderr
    assert "Traceback" not in bad.output
