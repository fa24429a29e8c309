"""Fusion against its oracle, ranx 0.3.21 (ranx.fuse, its fusion and normalisation functions,
ranx.optimize_fusion): every method with its default parameters (ranx gives gamma, phi, weights,
n_segments and w none: the tests give them), every normalisation, on seeded runs whose doc sets overlap
but differ, with a query one run lacks (ranx: an empty entry), negative scores and ties.

ranx ranks a run's tied scores in its sort's order, not by a rule. So the methods that read only
scores are compared on tied runs as they are; the methods that read ranks are given, on ranx's side,
the same runs with every tie broken by the trec rule (doc_id descending), which is how duckrank ranks
the tied runs it fuses; the trained methods (ranx re-sorts a normalised run before learning from it)
are compared on tie-free runs. Scores are compared per (query, doc) to 1e-9: every method defines its
scores exactly, Condorcet too where the runs' majority preference is a strict order (its data).
"""

from __future__ import annotations

import math
import random

import pytest

import duckrank
from helpers import first_error, run
from duckrank.registry import FUSION_METHODS

ranx = pytest.importorskip("ranx")
from ranx import Qrels, Run  # noqa: E402
from ranx import fusion as ranx_fusion  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:unsafe cast")  # numba's, inside ranx

QUERIES = [f"q{i}" for i in range(1, 8)]
POOL = [f"d{j:02d}" for j in range(14)]


def make_runs(seed: int, ties: bool, n_runs: int = 3, full: bool = False) -> list[dict]:
    """n_runs runs of QUERIES: each retrieves its own sample of the pool (all of it when full), scores
    in [-5, 5]; the last run lacks q7 (unless full). With ties, scores have one decimal (so a list ties
    often) and run 1 scores every doc of q5 alike; without, every list's scores differ."""
    rng = random.Random(seed)
    runs: list[dict] = [{} for _ in range(n_runs)]
    for query in QUERIES:
        for index, current in enumerate(runs):
            if query == "q7" and index == n_runs - 1 and not full:
                continue
            docs = list(POOL) if full else rng.sample(POOL, rng.randint(2, 10))
            if ties:
                scores = [2.5] * len(docs) if (query == "q5" and index == 0) else \
                    [round(rng.uniform(-5, 5), 1) for _ in docs]
            else:
                scores = [value / 100 for value in rng.sample(range(-500, 500), len(docs))]
            current[query] = dict(zip(docs, scores))
    return runs


def make_qrels(seed: int) -> dict:
    """Judgments of every query (ranx's optimize_fusion needs the runs' queries): grades 0-2, one query
    with no relevant doc."""
    rng = random.Random(seed)
    qrels = {}
    for query in QUERIES:
        judged = rng.sample(POOL, 6)
        qrels[query] = {doc: (0 if query == "q3" else rng.choice([0, 1, 2])) for doc in judged}
    return qrels


def trec_ranked(runs: list[dict]) -> list[dict]:
    """The runs with each list's scores replaced by its trec ranks' (score descending, doc_id
    descending): the order duckrank ranks the tied runs in, with nothing left for ranx to break."""
    ranked = []
    for current in runs:
        ranked.append({query: {doc: -float(rank) for rank, (doc, _score) in enumerate(
            sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True), start=1)}
            for query, docs in current.items()})
    return ranked


def ranx_runs(runs: list[dict]) -> list[Run]:
    """ranx needs every run to hold every query: one a run lacks is an empty entry."""
    return [Run({query: dict(current.get(query, {})) for query in QUERIES}) for current in runs]


def scores_of(fused) -> dict:
    found: dict = {}
    for query, doc, score in fused.fetchall():
        assert doc not in found.setdefault(query, {}), (query, doc)
        found[query][doc] = score
    return found


def assert_same(ours: dict, theirs: Run) -> None:
    expected = {query: dict(docs) for query, docs in theirs.to_dict().items() if docs}
    assert ours.keys() == expected.keys()
    for query in ours:
        assert ours[query].keys() == expected[query].keys(), query
        for doc, score in ours[query].items():
            assert math.isclose(score, expected[query][doc], rel_tol=1e-12, abs_tol=1e-9), (query, doc, score,
                                                                                             expected[query][doc])


# The parameters ranx has no default for: the tests give them.
GIVEN = {"gmnz": {"gamma": 0.5}, "rbc": {"phi": 0.8}, "probfuse": {"n_segments": 3}, "slidefuse": {"w": 2}}
WEIGHTS = [0.5, 0.3, 0.2]
# The methods that read only the scores: compared on tied runs as they are.
BY_SCORE = ["sum", "mnz", "max", "min", "med", "anz", "gmnz", "wsum", "wmnz", "mixed"]
# The methods that read ranks: ranx is given the same runs ranked by the trec rule.
BY_RANK = ["isr", "log_isr", "logn_isr", "rrf", "rbc", "bordafuse", "w_bordafuse"]
TRAINED = ["posfuse", "probfuse", "segfuse", "slidefuse", "bayesfuse", "mapfuse"]
CONDORCET = ["condorcet", "w_condorcet"]


def test_the_tests_cover_every_method():
    assert sorted(BY_SCORE + BY_RANK + TRAINED + CONDORCET) == sorted(FUSION_METHODS)


def _ranx_fused(method: str, runs: list[dict], norm: str | None = "min-max") -> Run:
    params = dict(GIVEN.get(method, {}))
    if "weights" in FUSION_METHODS[method].params:
        params["weights"] = WEIGHTS
    return ranx.fuse(ranx_runs(runs), norm=norm, method=method, params=params)


def _fused(method: str, runs: list[dict], norm: str | None = "min-max", **extra) -> dict:
    weights = WEIGHTS if "weights" in FUSION_METHODS[method].params else None
    return scores_of(duckrank.fuse(runs, method, norm, weights, **GIVEN.get(method, {}), **extra))


@pytest.mark.parametrize("method", BY_SCORE)
@pytest.mark.parametrize("seed", [1, 2])
def test_score_methods_equal_ranx_on_tied_runs(method, seed):
    runs = make_runs(seed, ties=True)
    assert_same(_fused(method, runs), _ranx_fused(method, runs))


@pytest.mark.parametrize("method", BY_RANK)
@pytest.mark.parametrize("seed", [1, 2])
def test_rank_methods_equal_ranx_with_ties_broken_by_the_trec_rule(method, seed):
    runs = make_runs(seed, ties=True)
    assert_same(_fused(method, runs), _ranx_fused(method, trec_ranked(runs)))


def test_the_tie_rule_decides_the_ranks():
    """Not the order a file lists the docs in: the same tied runs reversed fuse alike, and not as
    doc_id ascending would rank them."""
    runs = make_runs(3, ties=True)
    reversed_runs = [{query: dict(reversed(list(docs.items()))) for query, docs in current.items()}
                     for current in runs]
    assert _fused("rrf", reversed_runs) == _fused("rrf", runs)
    ascending = [{query: {doc: -rank for rank, (doc, _s) in enumerate(sorted(
        docs.items(), key=lambda item: (-item[1], item[0])), start=1)} for query, docs in current.items()}
        for current in runs]
    assert _fused("rrf", ascending) != _fused("rrf", runs)


def _full_runs_with_a_strict_majority(seed: int) -> list[dict]:
    """Three runs listing every doc, each a noisy copy of one order; the majority of three prefers one
    doc to another for every pair, and (checked) without a cycle."""
    rng = random.Random(seed)
    runs = []
    for _ in range(3):
        current = {}
        for query in QUERIES:
            base = {doc: float(i) + rng.uniform(-1.5, 1.5) for i, doc in enumerate(POOL)}
            current[query] = base
        runs.append(current)
    for query in QUERIES:
        wins = {doc: sum(sum(r[query][doc] > r[query][other] for r in runs) >= 2 for other in POOL if other != doc)
                for doc in POOL}
        assert sorted(wins.values()) == list(range(len(POOL))), "the majority has a cycle: pick another seed"
    return runs


@pytest.mark.parametrize("method", CONDORCET)
def test_condorcet_equals_ranx_where_the_majority_is_an_order(method):
    runs = _full_runs_with_a_strict_majority(0)
    weights = [0.6, 0.3, 0.1] if method == "w_condorcet" else None  # no two run sets weigh the same
    ours = scores_of(duckrank.fuse(runs, method, weights=weights))
    theirs = ranx.fuse(ranx_runs(runs), method=method, params={"weights": weights} if weights else {})
    assert_same(ours, theirs)


def test_condorcet_counts_the_docs_a_majority_prefers():
    """Hand-made: run 1 ranks a > b > c, run 2 ranks b > d (a, c unretrieved, below d). a vs b and a vs
    d tie (one run each way); b beats c and d; a beats c; d vs c: run 1 ranks c (d unretrieved), run 2 d."""
    runs = [{"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, {"q": {"b": 0.9, "d": 0.5}}]
    assert scores_of(duckrank.fuse(runs, "condorcet")) == {"q": {"a": 4, "b": 4, "c": 2, "d": 3}}


def _ranx_trained(method: str, runs: list[dict], qrels: dict) -> Run:
    """ranx's two steps: learn on the qrels (over the normalised runs, as optimize_fusion does), fuse."""
    normalized = [ranx.normalize(current, "min-max") for current in ranx_runs(runs)]
    judged = Qrels(qrels)
    if method == "probfuse":
        return ranx_fusion.probfuse(normalized, ranx_fusion.probfuse_train(judged, normalized, 3))
    if method == "slidefuse":
        return ranx_fusion.slidefuse(normalized, ranx_fusion.slidefuse_train(judged, normalized), 2)
    learned = ranx.optimize_fusion(judged, ranx_runs(runs), norm="min-max", method=method)
    return ranx.fuse(ranx_runs(runs), norm="min-max", method=method, params=learned)


@pytest.mark.parametrize("method", TRAINED)
@pytest.mark.parametrize("seed", [1, 2])
def test_trained_methods_equal_ranx(method, seed):
    runs, qrels = make_runs(seed, ties=False), make_qrels(seed)
    assert_same(_fused(method, runs, qrels=qrels), _ranx_trained(method, runs, qrels))


@pytest.mark.parametrize("norm", ["min-max", "min-max-inverted", "max", "sum", "zmuv", None])
def test_score_normalisations_equal_ranx(norm):
    runs = make_runs(4, ties=True)
    assert_same(_fused("sum", runs, norm), _ranx_fused("sum", runs, norm))


@pytest.mark.parametrize("norm", ["rank", "borda"])
def test_rank_normalisations_equal_ranx(norm):
    runs = make_runs(4, ties=True)
    assert_same(_fused("sum", runs, norm), _ranx_fused("sum", trec_ranked(runs), norm))


def test_min_max_of_equal_scores_is_zero_and_ranx_spellings_are_taken():
    runs = [{"q": {"a": 2.5, "b": 2.5}}, {"q": {"a": 1.0, "c": 3.0}}]
    fused = scores_of(duckrank.fuse(runs, "CombSUM", "min_max"))
    assert fused == {"q": {"a": 0.0, "b": 0.0, "c": 1.0}}


def test_the_fused_run_is_ordered_by_the_trec_rule_and_feeds_evaluate():
    runs, qrels = make_runs(6, ties=True), make_qrels(6)
    fused = duckrank.fuse({"bm25": runs[0], "dense": runs[1]}, "rrf")
    rows = fused.fetchall()
    for query in {row[0] for row in rows}:
        listed = [(score, doc) for q, doc, score in rows if q == query]
        assert listed == sorted(listed, reverse=True)
    assert fused.df().columns.tolist() == ["query_id", "doc_id", "score"]
    assert fused.arrow().read_all().num_rows == len(rows)
    as_dict: dict = {}
    for query, doc, score in rows:
        as_dict.setdefault(query, {})[doc] = score
    assert duckrank.evaluate(qrels, fused, ["ndcg@10", "map"]) == duckrank.evaluate(qrels, as_dict, ["ndcg@10", "map"])


def test_the_sql_macro_is_what_python_calls():
    """A DuckDB shell calls duckrank.fuse_<method> over a table of runs numbered from 1."""
    con = duckrank.connect()
    con.execute("CREATE TABLE runs AS SELECT * FROM (VALUES (1, 'q', 'a', 3.0), (1, 'q', 'b', 1.0), "
                "(2, 'q', 'b', 0.5), (2, 'q', 'c', 0.25)) t(run, query_id, doc_id, score)")
    shell = dict((doc, score) for _q, doc, score in con.sql("SELECT * FROM duckrank.fuse_wsum('runs', [0.25, 0.75])"
                                                              ).fetchall())
    runs = [{"q": {"a": 3.0, "b": 1.0}}, {"q": {"b": 0.5, "c": 0.25}}]
    assert shell == scores_of(duckrank.fuse(runs, "wsum", weights=[0.25, 0.75]))["q"] == {"a": 0.25, "b": 0.75,
                                                                                           "c": 0.0}
    with pytest.raises(Exception, match="weights must be one finite number per run"):
        con.sql("SELECT * FROM duckrank.fuse_wsum('runs', [1.0])").fetchall()


@pytest.mark.parametrize("call, message", [
    (dict(method="nope"), "method must be one of"),
    (dict(method="wsum"), "method wsum needs weights: one per run (2)"),
    (dict(method="wsum", weights=[1.0]), "weights must be one per run: 2 runs, 1 weights given"),
    (dict(method="rrf", weights=[1.0, 1.0]), "method rrf takes no weights"),
    (dict(method="rrf", gamma=1), "method rrf takes k (besides norm); got gamma=1"),
    (dict(method="rrf", k=-1), "k must be a number >= 0; got '-1'"),
    (dict(method="rrf", norm="minmax"), "norm must be one of min-max"),
    (dict(method="rrf", norm=3), "norm must be one of min-max"),
    (dict(method="gmnz"), "method gmnz needs gamma: "),
    (dict(method="wsum"), "method wsum needs weights: one per run (2), e.g. 0.5,0.5; or let optimize_fusion choose"),
    (dict(method="posfuse"), "method posfuse learns from qrels: pass qrels (the training queries' judgments)"),
    (dict(method="rrf", qrels={"q": {"a": 1}}), "method rrf learns nothing from qrels (those that do: posfuse"),
    (dict(method="rrf", qrels={"q": {"a": 1}}), "); drop qrels"),
])
def test_bad_arguments_are_named(call, message):
    runs = [{"q": {"a": 1.0}}, {"q": {"b": 2.0}}]
    with pytest.raises(duckrank.OptionError) as error:
        duckrank.fuse(runs, **call)
    assert message in str(error.value)


def test_bad_runs_are_named():
    with pytest.raises(duckrank.OptionError, match="at least two runs"):
        duckrank.fuse([{"q": {"a": 1.0}}], "rrf")
    with pytest.raises(duckrank.InputError, match="score"):
        duckrank.fuse([{"q": {"a": 1.0}}, {"q": {"b": float("nan")}}], "rrf")


def test_runs_come_as_anything_duckrank_reads(tmp_path):
    """ranx Runs, a {name: run} dict, Parquet files: the same fused run."""
    runs = make_runs(10, ties=True, n_runs=2)
    paths = []
    for i, current in enumerate(runs):
        paths.append(tmp_path / f"run{i}.parquet")
        duckrank.connect().execute(
            f"COPY (SELECT * FROM (VALUES {', '.join(str((q, d, s)) for q, docs in current.items() for d, s in docs.items())}) "
            f"t(query_id, doc_id, score)) TO '{paths[-1]}'")
    expected = _fused("mnz", runs)
    assert scores_of(duckrank.fuse(ranx_runs(runs), "mnz")) == expected
    assert scores_of(duckrank.fuse({"a": runs[0], "b": runs[1]}, "mnz")) == expected
    assert scores_of(duckrank.fuse([str(path) for path in paths], "mnz")) == expected


def test_qrels_ids_of_another_type_are_refused():
    runs = [{1: {10: 1.0}}, {1: {11: 2.0}}]
    with pytest.raises(duckrank.InputError, match="ids are compared as given"):
        duckrank.fuse(runs, "posfuse", qrels={"1": {"10": 1}})


def test_optimize_fusion_chooses_ranx_weights():
    runs, qrels = make_runs(7, ties=False, n_runs=2, full=True), make_qrels(7)
    theirs = ranx.optimize_fusion(Qrels(qrels), ranx_runs(runs), method="wsum", metric="ndcg@10",
                                  show_progress=False)
    ours = duckrank.optimize_fusion(qrels, runs, "wsum", metric="ndcg@10")
    assert ours == {"weights": list(theirs["weights"])}
    assert ours["weights"] != [1.0, 0.0]  # not just ranx's last trial: the grid's choice means something


def test_optimize_fusion_takes_ranx_grid_and_its_tie_to_the_last_trial():
    """With every doc in every run, CombGMNZ's gamma changes no ranking: every trial ties, and ranx
    (score >= best) keeps the last."""
    runs, qrels = make_runs(8, ties=False, n_runs=2, full=True), make_qrels(8)
    theirs = ranx.optimize_fusion(Qrels(qrels), ranx_runs(runs), method="gmnz", metric="ndcg@10",
                                  show_progress=False, min_gamma=0.1, max_gamma=0.5, step=0.1)
    assert duckrank.optimize_fusion(qrels, runs, "gmnz", metric="ndcg@10", min_gamma=0.1, max_gamma=0.5,
                                    step=0.1) == theirs == {"gamma": 0.5}


# ---------------------------------------------------------------------------------------------
# the command line


@pytest.fixture
def run_files(tmp_path):
    runs = make_runs(9, ties=True)
    paths = []
    for i, current in enumerate(runs[:2]):
        path = tmp_path / f"run{i}.txt"
        path.write_text("".join(f"{q} Q0 {d} 0 {s} r{i}\n" for q, docs in current.items() for d, s in docs.items()))
        paths.append(path)
    return runs[:2], paths


@pytest.mark.parametrize("suffix", [".parquet", ".txt", ".tsv"])
def test_cli_fuses_files_into_a_run_duckrank_reads(run_files, tmp_path, suffix):
    runs, paths = run_files
    target = tmp_path / f"fused{suffix}"
    result = run("fuse", *paths, "--method", "combmnz", "--norm", "zmuv", "-o", target)
    assert result.exit_code == 0, result.output
    con = duckrank.connect()
    from duckrank.inputs import read_table

    view = read_table(con, str(target), "run").view
    read = {}
    for query, doc, score in con.sql(f"SELECT query_id, doc_id, score FROM {view}").fetchall():
        read.setdefault(query, {})[doc] = score
    assert read == scores_of(duckrank.fuse(runs, "mnz", "zmuv"))


def test_cli_optimize_prints_the_choice(run_files, tmp_path):
    _runs, paths = run_files
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in make_qrels(9).items() for d, g in docs.items()))
    result = run("fuse", *paths, "--method", "rrf", "--optimize", "ndcg@10", "--qrels", qrels, "-o",
                 tmp_path / "fused.parquet")
    assert result.exit_code == 0, result.output
    assert "duckrank fuse: rrf on ndcg@10: k=" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--method", "nope"], "--method must be one of"),
    (["--method", "wsum", "--weights", "1,x"], "--weights must be numbers separated by commas"),
    (["--method", "wsum", "--weights", "1,2,3"], "--weights must be one per run: 2 runs, 3 weights given"),
    (["--method", "rrf", "--param", "k=-1"], "--param k must be a number >= 0; got '-1'"),
    (["--method", "rrf", "--param", "zz=1"], "--param must be NAME=VALUE with NAME one of"),
    (["--method", "gmnz"], "method gmnz needs --param gamma: "),
    (["--method", "gmnz"], "(ranx has no default; --optimize METRIC --qrels FILE chooses one)"),
    (["--method", "wsum"], "method wsum needs --weights: one per run (2), e.g. 0.5,0.5; or let --optimize METRIC "
                           "--qrels FILE choose them"),
    (["--method", "posfuse"], "method posfuse learns from qrels: pass --qrels (the training queries' judgments)"),
    (["--method", "rrf", "--qrels", "QRELS"], "); drop --qrels"),
    (["--method", "rrf", "--norm", "nope"], "--norm must be one of min-max"),
    (["--method", "rrf", "--optimize", "ndcg@10"], "--optimize scores the trials on judgments: add --qrels"),
    (["--method", "wsum", "--weights", "1,2", "--param", "k=2"], "method wsum takes weights (besides norm); got --param k=2"),
    (["--method", "rrf", "--weights", "1,2"], "method rrf takes no weights"),
])
def test_cli_bad_options_exit_2_naming_them_and_write_nothing(run_files, tmp_path, args, message):
    _runs, paths = run_files
    target, qrels = tmp_path / "fused.parquet", tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    result = run("fuse", *paths, *[qrels if arg == "QRELS" else arg for arg in args], "-o", target)
    assert result.exit_code == 2
    assert message in result.stderr
    assert not target.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".fused")] == []


def test_cli_never_overwrites_an_input(run_files):
    _runs, paths = run_files
    before = paths[0].read_bytes()
    result = run("fuse", *paths, "--method", "rrf", "-o", paths[0])
    assert result.exit_code == 2 and "is also an input" in first_error(result)
    assert paths[0].read_bytes() == before


def test_cli_bad_data_exits_1_and_keeps_an_existing_output(run_files, tmp_path):
    _runs, paths = run_files
    broken = tmp_path / "broken.txt"
    broken.write_text("q1 Q0 d1 0 1.0 x\nq1 Q0 d1 0 2.0 x\n")
    target = tmp_path / "fused.txt"
    target.write_text("keep me\n")
    result = run("fuse", paths[0], broken, "--method", "rrf", "-o", target)
    assert result.exit_code == 1 and "twice" in first_error(result)
    assert target.read_text() == "keep me\n"
