"""Sampled metrics and their correction (Krichene & Rendle, "On Sampled Metrics for Item
Recommendation", KDD 2020), against an independent numpy implementation of the paper's estimators
and against the exact full-catalog values of generated data whose full ranking is known.

The oracle here solves the estimators as stacked weighted least-squares problems with
numpy.linalg.lstsq (SVD), with the rank distribution from scipy.stats.binom; duckrank builds the
normal equations from 2m + 1 moment sums and solves them by Gauss-Jordan elimination in SQL.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers import run as cli
from scipy.stats import binom

import duckrank
from duckrank.errors import InputError, OptionError

# The paper's estimators, written from the paper: f~ minimises
#   sum_R w [(E[f~ | R] - f(R))^2 + gamma Var(f~ | R)],  w = 1/N,  r - 1 ~ Binomial(m, (R - 1)/(N - 1)).
# duckrank's documented choices: bv is gamma = 0.1; bias is gamma = 0 with a ridge of 1e-10 on |f~|^2.
BV_GAMMA = 0.1
BIAS_RIDGE = 1e-10


def rank_distribution(catalog: int, negatives: int) -> np.ndarray:
    """A[R - 1, r - 1] = p(sampled rank r | full-catalog rank R)."""
    ranks = np.arange(1, catalog + 1)
    return binom.pmf(np.arange(negatives + 1)[None, :], negatives, ((ranks - 1) / (catalog - 1))[:, None])


def oracle_estimate(metric: np.ndarray, negatives: int, correction: str) -> np.ndarray:
    """f~(r), r = 1..m+1, for f(R) = metric[R - 1], by lstsq on the stacked system."""
    catalog = len(metric)
    a = rank_distribution(catalog, negatives)
    w = 1.0 / catalog
    if correction == "bias":
        design = np.vstack([np.sqrt(w) * a, np.sqrt(BIAS_RIDGE) * np.eye(negatives + 1)])
        target = np.concatenate([np.sqrt(w) * metric, np.zeros(negatives + 1)])
    else:
        # (1-g) |sqrt(w) A x - sqrt(w) f / (1-g)|^2 + g sum_r c_r x_r^2 equals the objective up to a constant
        chance = w * a.sum(axis=0)
        design = np.vstack([np.sqrt(w * (1 - BV_GAMMA)) * a, np.diag(np.sqrt(BV_GAMMA * chance))])
        target = np.concatenate([np.sqrt(w / (1 - BV_GAMMA)) * metric, np.zeros(negatives + 1)])
    return np.linalg.lstsq(design, target, rcond=None)[0]


def full_catalog_metric(name: str, catalog: int, k: int | None) -> np.ndarray:
    """f(R) for R = 1..N: the metric of a query whose one relevant item has full-catalog rank R."""
    ranks = np.arange(1, catalog + 1, dtype=float)
    within = ranks <= (k if k is not None else catalog)
    return {"recall": within * 1.0,
            "precision": within / (k or catalog),
            "ndcg": within / np.log2(ranks + 1),
            "reciprocal": within / ranks,
            "auc": (catalog - ranks) / (catalog - 1)}[name]


def ranks_run(negatives: int, sampled_ranks: list[int], prefix: str = "q") -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query per sampled rank r: its relevant item below r - 1 of its m negatives."""
    run, qrels = [], []
    for r in sampled_ranks:
        query = f"{prefix}{r}"
        scores = np.arange(negatives + 1, 0, -1, dtype=float)  # m + 1 distinct scores, best first
        docs = [f"n{i}" for i in range(negatives + 1)]
        docs[r - 1] = "relevant"
        run += [(query, doc, score) for doc, score in zip(docs, scores)]
        qrels.append((query, "relevant", 1))
    return (pd.DataFrame(run, columns=["query_id", "doc_id", "score"]),
            pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]))


def per_query(qrels, run, measure: str, **options) -> dict[str, float]:
    rows = duckrank.evaluate(qrels, run, [measure], per_query=True, **options).fetchall()
    return {query: value for query, _, value in rows}


# (catalog N, negatives m, measure, oracle metric, k, correction)
CASES = [
    (1000, 50, "recall@10", "recall", 10, "bv"),
    (1000, 50, "recall@10", "recall", 10, "bias"),
    (3000, 100, "nDCG@10", "ndcg", 10, "bv"),
    (3000, 100, "P@5", "precision", 5, "bv"),
    (2000, 100, "map_cut.20", "reciprocal", 20, "bv"),
    (2000, 100, "RR", "reciprocal", None, "bv"),
    (2000, 100, "AUC", "auc", None, "bv"),
    (500, 20, "Success@5", "recall", 5, "bias"),
    (500, 20, "nDCG@3", "ndcg", 3, "bias"),
]


@pytest.mark.parametrize("catalog, negatives, measure, metric, k, correction", CASES)
def test_estimate_equals_the_papers_estimator(catalog, negatives, measure, metric, k, correction):
    """Each sampled rank r = 1..m+1 reads f~(r) equal to the numpy oracle's (m + 1 values per case)."""
    expected = oracle_estimate(full_catalog_metric(metric, catalog, k), negatives, correction)
    run, qrels = ranks_run(negatives, list(range(1, negatives + 2)))
    got = per_query(qrels, run, measure, sampled=catalog, correction=correction)
    values = np.array([got[f"q{r}"] for r in range(1, negatives + 2)])
    # the minimal-bias system is conditioned like 1/ridge: agreement to ~1e-8 of its largest value
    tolerance = 1e-9 if correction == "bv" else 1e-6
    np.testing.assert_allclose(values, expected, rtol=0, atol=tolerance * max(1.0, np.abs(expected).max()))


def test_minimal_bias_has_less_bias_than_bv_and_than_no_correction():
    catalog, negatives, k = 1000, 50, 10
    metric = full_catalog_metric("recall", catalog, k)
    a = rank_distribution(catalog, negatives)
    run, qrels = ranks_run(negatives, list(range(1, negatives + 2)))

    def bias(estimate: np.ndarray) -> float:
        return float(np.mean((a @ estimate - metric) ** 2))

    def variance(estimate: np.ndarray) -> float:
        return float(np.mean(a @ estimate ** 2 - (a @ estimate) ** 2))

    estimates = {}
    for correction in ("none", "bias", "bv"):
        got = per_query(qrels, run, "recall@10", sampled=catalog, correction=correction)
        estimates[correction] = np.array([got[f"q{r}"] for r in range(1, negatives + 2)])
    # none reads the plain value on the sampled list: recall@10 = 1 if the sampled rank is <= 10
    np.testing.assert_array_equal(estimates["none"], (np.arange(1, negatives + 2) <= k) * 1.0)
    assert bias(estimates["bias"]) < bias(estimates["bv"]) < bias(estimates["none"])
    assert variance(estimates["bv"]) < variance(estimates["bias"])


def test_several_relevant_items_and_other_list_lengths():
    """Each relevant item is ranked among the non-relevant docs only; a relevant item missing from the
    list ranks last (m + 1); a query's value is the mean; each query's m is its own."""
    catalog, negatives = 1500, 30
    expected = oracle_estimate(full_catalog_metric("ndcg", catalog, 10), negatives, "bv")
    shorter = oracle_estimate(full_catalog_metric("ndcg", catalog, 10), negatives - 10, "bv")
    run = [("two", f"n{i}", float(100 - i)) for i in range(negatives)]
    # relevant docs at list positions 1 and 6 (after 5 negatives) -> sampled ranks 1 and 6
    run = [("two", "a", 200.0)] + run[:5] + [("two", "b", 95.5)] + run[5:]
    run += [("missing", f"n{i}", float(100 - i)) for i in range(negatives)] + [("missing", "c", 80.5)]
    run += [("short", f"n{i}", float(100 - i)) for i in range(negatives - 10)] + [("short", "d", 96.5)]
    qrels = [("two", "a", 1), ("two", "b", 2), ("missing", "c", 1), ("missing", "gone", 1), ("short", "d", 1),
             ("short", "unjudged-negatives-count", 0)]
    run = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
    qrels = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"])
    got = per_query(qrels, run, "nDCG@10", sampled=catalog)
    assert got["two"] == pytest.approx((expected[0] + expected[5]) / 2, abs=1e-12)
    # c is below 20 of the 30 negatives: sampled rank 21; "gone" is not retrieved: rank m + 1
    assert got["missing"] == pytest.approx((expected[20] + expected[negatives]) / 2, abs=1e-12)
    assert got["short"] == pytest.approx(shorter[4], abs=1e-12)  # below 4 of its 20 negatives


# --- generated data whose full ranking is known -------------------------------------------------

def sampled_protocol(full_ranks: np.ndarray, catalog: int, negatives: int, seed: int) -> pd.DataFrame:
    """The run a sampled evaluation scores: for each user, the held-out item (scored by its full rank)
    and m negatives drawn uniformly from the other catalog items, scored by theirs."""
    rng = np.random.default_rng(seed)
    rows = []
    for user, rank in enumerate(full_ranks):
        others = rng.choice(catalog - 1, size=negatives, replace=False) + 1  # ranks 1..N-1, rank skipped below
        others = np.where(others >= rank, others + 1, others)
        rows.append((user, "held-out", -float(rank)))
        rows += [(user, f"item{o}", -float(o)) for o in others]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def exact(full_ranks: np.ndarray, metric: str, catalog: int, k: int) -> float:
    return float(np.mean(full_catalog_metric(metric, catalog, k)[full_ranks - 1]))


CATALOG, NEGATIVES, USERS = 3000, 100, 400


def users_qrels() -> pd.DataFrame:
    return pd.DataFrame({"query_id": range(USERS), "doc_id": "held-out", "relevance": 1})


def test_corrected_estimates_are_closer_to_the_exact_values():
    rng = np.random.default_rng(7)
    models = {"A": np.minimum(rng.geometric(1 / 40, USERS), CATALOG),  # good: ranks ~ 40
              "B": np.minimum(rng.geometric(1 / 300, USERS), CATALOG)}  # weaker: ranks ~ 300
    qrels = users_qrels()
    compared = 0
    for seed, (name, ranks) in enumerate(models.items()):
        run = sampled_protocol(ranks, CATALOG, NEGATIVES, seed)
        for measure, metric in (("recall@10", "recall"), ("nDCG@10", "ndcg"), ("P@10", "precision")):
            truth = exact(ranks, metric, CATALOG, 10)
            sampled = duckrank.evaluate(qrels, run, measure, sampled=CATALOG, correction="none")[measure]
            corrected = duckrank.evaluate(qrels, run, measure, sampled=CATALOG)[measure]  # bv, the default
            assert abs(corrected - truth) < abs(sampled - truth) / 2, (name, measure, truth, sampled, corrected)
            compared += 1
    assert compared == 6


def test_sampled_metric_flips_the_order_and_the_correction_keeps_it():
    """A ranks the held-out item in the top 3 for 30% of users and deep otherwise; B ranks it around
    40 for everyone. Exactly, A's Recall@10 is far better; sampled among 100 negatives, B's rank 40
    becomes a sampled rank of about 2, so the sampled metric prefers B."""
    rng = np.random.default_rng(11)
    top = rng.random(USERS) < 0.3
    ranks_a = np.where(top, rng.integers(1, 4, USERS), rng.integers(CATALOG // 2, CATALOG + 1, USERS))
    ranks_b = rng.integers(30, 51, USERS)
    qrels = users_qrels()
    values = {}
    for seed, (name, ranks) in enumerate((("A", ranks_a), ("B", ranks_b))):
        run = sampled_protocol(ranks, CATALOG, NEGATIVES, seed)
        values[name] = {c: duckrank.evaluate(qrels, run, "recall@10", sampled=CATALOG, correction=c)["recall@10"]
                        for c in ("none", "bv")}
        values[name]["exact"] = exact(ranks, "recall", CATALOG, 10)
    assert values["A"]["exact"] > values["B"]["exact"]
    assert values["A"]["none"] < values["B"]["none"]  # the sampled metric flips the order
    assert values["A"]["bv"] > values["B"]["bv"]  # the corrected estimate keeps it


# --- the front doors ----------------------------------------------------------------------------

def test_sql_table_macros_take_sampled_and_correction(con, tmp_path):
    run, qrels = ranks_run(40, [1, 3, 9, 41])
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    for correction in ("none", "bias", "bv"):
        shell = dict(con.execute(
            "SELECT query_id, value FROM duckrank.ndcg(?, ?, k := 10, sampled := 800, correction := ?)",
            [str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"), correction]).fetchall())
        python = per_query(qrels, run, "nDCG@10", sampled=800, correction=correction)
        assert shell == pytest.approx(python, abs=1e-12)
    # without sampled the macro is the plain measure
    plain = dict(con.execute("SELECT query_id, value FROM duckrank.ndcg(?, ?, k := 10)",
                             [str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet")]).fetchall())
    assert plain == pytest.approx(per_query(qrels, run, "nDCG@10"), abs=1e-12)


def test_per_measure_correction_and_cli(tmp_path):
    run, qrels = ranks_run(20, [1, 2, 5, 21])
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    both = duckrank.evaluate(qrels, run, ["recall@5", "R(correction=none)@5"], sampled=400)
    assert both["R(correction=none)@5"] == 0.75
    assert both["recall@5"] == pytest.approx(
        duckrank.evaluate(qrels, run, "recall@5", sampled=400, correction="bv")["recall@5"], abs=0)
    result = cli("eval", str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"),
                 "-m", "recall@5", "-m", "R(correction=none)@5", "--sampled", "400",
                 "--format", "json")
    assert result.exit_code == 0, result.output
    assert '"R(correction=none)@5"' in result.output and "0.75" in result.output
    assert f"{both['recall@5']}"[:10] in result.output


def test_estimates_are_solved_once_per_process(monkeypatch):
    from duckrank import _duckdb_sql

    run, qrels = ranks_run(10, [1, 2, 11])
    assert duckrank.evaluate(qrels, run, "nDCG@5", sampled=321)["nDCG@5"] != 0
    (key,) = [key for key in _duckdb_sql._ESTIMATES if key[2] == 10 and "321" in key[1] and "discount" in key[1]]
    # a second call reads the cached f~ (here replaced by zeros) instead of solving again
    monkeypatch.setitem(_duckdb_sql._ESTIMATES, key, [0.0] * 11)
    assert duckrank.evaluate(qrels, run, "nDCG@5", sampled=321)["nDCG@5"] == 0


# --- errors ---------------------------------------------------------------------------------------

def test_catalog_smaller_than_a_list_is_a_data_error(tmp_path):
    run, qrels = ranks_run(20, [1, 2])
    with pytest.raises(InputError, match=r"lists 21 docs, more than the catalog of sampled := 10 items"):
        duckrank.evaluate(qrels, run, "recall@5", sampled=10)
    run.to_parquet(tmp_path / "run.parquet")
    qrels.to_parquet(tmp_path / "qrels.parquet")
    result = cli("eval", str(tmp_path / "qrels.parquet"), str(tmp_path / "run.parquet"),
                 "-m", "recall@5", "--sampled", "10")
    assert result.exit_code == 1 and "Error: query" in result.output and "sampled := 10" in result.output


@pytest.mark.parametrize("catalog", [1000.5, 1, -3])
def test_catalog_must_be_a_whole_number_of_at_least_two(catalog):
    run, qrels = ranks_run(5, [1])
    with pytest.raises(OptionError, match=r"sampled must be a whole number >= 2"):
        duckrank.evaluate(qrels, run, "recall@5", sampled=catalog)


def test_cli_catalog_must_be_a_whole_number(tmp_path):
    result = cli("eval", "q.parquet", "r.parquet", "--sampled", "1e3")
    assert result.exit_code == 2 and "--sampled must be a whole number >= 2; got '1e3'" in result.output


def test_a_measure_that_cannot_be_corrected_is_refused_naming_those_that_can():
    run, qrels = ranks_run(5, [1])
    with pytest.raises(OptionError) as raised:
        duckrank.evaluate(qrels, run, ["nDCG@5", "bpref", "ERR@5"], sampled=100)
    message = str(raised.value)
    assert "'bpref', 'ERR@5' cannot be corrected for sampling" in message
    assert "nDCG" in message and "AP" in message and "correction='none'" in message
    # its plain value on the sampled list stays available, and counters are never corrected
    plain = duckrank.evaluate(qrels, run, ["bpref", "num_q"], sampled=100, correction="none")
    assert plain == {"bpref": 1.0, "num_q": 1.0}
    assert duckrank.evaluate(qrels, run, ["num_rel_ret", "recall@5"], sampled=100)["num_rel_ret"] == 1


def test_correction_without_sampled_is_refused(tmp_path):
    run, qrels = ranks_run(5, [1])
    for call in (lambda: duckrank.evaluate(qrels, run, "recall@5", correction="bias"),
                 lambda: duckrank.evaluate(qrels, run, "nDCG(correction=bv)@5")):
        with pytest.raises(OptionError, match=r"correction corrects metrics read on sampled lists.*sampled=N"):
            call()
    with pytest.raises(OptionError, match=r"correction must be one of none, bias, bv; got 'minimal'"):
        duckrank.evaluate(qrels, run, "recall@5", sampled=100, correction="minimal")


def test_max_rank_and_average_ties_are_refused():
    run, qrels = ranks_run(5, [1])
    with pytest.raises(OptionError, match=r"max_rank \(-M\) cuts the sampled lists"):
        duckrank.evaluate(qrels, run, "recall@5", sampled=100, max_rank=3)
    with pytest.raises(InputError, match=r"ties := 'average'.*a corrected sampled metric"):
        duckrank.evaluate(qrels, run, "recall@5", sampled=100, ties="average")


def test_spark_refuses_sampled_metrics(tmp_path):
    from duckrank.measures import parse_measures
    from duckrank.spark import _conventions

    with pytest.raises(OptionError, match=r"the Spark engine does not correct sampled metrics \(sampled\)"):
        _conventions({"sampled": 1000}, parse_measures(["recall@10"]))
    with pytest.raises(OptionError, match=r"does not correct sampled metrics \(correction\)"):
        _conventions({}, parse_measures(["nDCG(correction=none)@10"]))
    result = cli("eval", "q.parquet", "r.parquet", "--sampled", "1000", "--engine", "spark")
    assert result.exit_code == 2 and "--sampled and --correction need the DuckDB engine" in result.output
