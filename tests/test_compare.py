"""duckrank compare: every statistic against an oracle.

  t-test          scipy.stats.ttest_rel / scipy.stats.t / scipy.special.betainc, to 1e-9
  randomization   exact enumeration of all 2^n sign flips, within Monte-Carlo error
  bootstrap       coverage of seeded intervals on data with a known mean; width ~ the standard error
  corrections     Holm 1979 and Benjamini-Hochberg 1995 textbook examples (and scipy's BH)
  seeds           the same seed gives the same bits, on any thread count; another seed differs
  facade / CLI    common queries, --complete, segments, messages, every --format, exit codes
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import special, stats

import duckrank
from duckrank._library import connect
from duckrank.cli.compare import compare_command
from duckrank.comparison import compare, resolve_baseline
from duckrank.errors import InputError, MeasureError, OptionError

from helpers import duckdb_shell, examples, run


@pytest.fixture(scope="module")
def db():
    connection = connect()
    yield connection
    connection.close()


def per_query_frame(groups: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    """{group: {run: values}} -> a per-query table (dataset, run, query_id, value)."""
    rows = [(group, run, f"q{i:05d}", float(v))
            for group, runs in groups.items() for run, values in runs.items() for i, v in enumerate(values)]
    return pd.DataFrame(rows, columns=["dataset", "run", "query_id", "value"])


def run_macro(con, frame: pd.DataFrame, **args) -> list[dict]:
    name = f"pq_{abs(hash(frame.to_csv())) % 10**9}"
    con.register(name, frame)
    try:
        rendered = "".join(f", {key} := ${key}" for key in args)
        relation = con.execute(f"SELECT * FROM duckrank.compare('{name}'{rendered})", args)
        columns = [d[0] for d in relation.description]
        return [dict(zip(columns, row)) for row in relation.fetchall()]
    finally:
        con.unregister(name)


# ---------------------------------------------------------------------------------------------
# Student's t, from the incomplete beta function up


def test_regularized_beta_matches_scipy(db):
    cases = [(a, b, x) for a in (0.5, 1.0, 2.5, 10.0, 50.0, 500.0, 5000.0, 50000.0) for b in (0.5, 1.0, 3.0)
             for x in (1e-9, 1e-4, 0.01, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999999)]
    got = db.execute("SELECT duckrank.regularized_beta(x, a, b) FROM (SELECT unnest($a) AS a, unnest($b) AS b, "
                     "unnest($x) AS x)", {"a": [c[0] for c in cases], "b": [c[1] for c in cases],
                                          "x": [c[2] for c in cases]}).fetchall()
    for (a, b, x), (value,) in zip(cases, got):
        assert value == pytest.approx(special.betainc(a, b, x), abs=1e-10), (a, b, x)
    assert db.execute("SELECT duckrank.regularized_beta(0.0, 2.0, 3.0), duckrank.regularized_beta(1.0, 2.0, 3.0)"
                      ).fetchall() == [(0.0, 1.0)]


def test_t_pvalue_matches_scipy(db):
    grid = [(t, df) for df in (1, 2, 3, 5, 10, 29, 100, 1000, 9999, 100000)
            for t in (0.0, 1e-7, 0.05, 0.5, 1.0, 1.96, 2.5, 4.0, 8.0, 30.0, -2.0, -40.0, 1e4)]
    got = db.execute("SELECT duckrank.t_pvalue(t, df) FROM (SELECT unnest($t) AS t, unnest($df) AS df)",
                     {"t": [g[0] for g in grid], "df": [g[1] for g in grid]}).fetchall()
    for (t, df), (value,) in zip(grid, got):
        assert value == pytest.approx(2 * stats.t.sf(abs(t), df), abs=1e-9), (t, df)
    assert db.execute("SELECT duckrank.t_pvalue('inf'::DOUBLE, 5), duckrank.t_pvalue(1.0, 0), "
                      "duckrank.t_pvalue(NULL, 5)").fetchall() == [(0.0, None, None)]


def random_pairs(rng: np.random.Generator, count: int) -> dict[str, dict[str, np.ndarray]]:
    """Paired samples of many shapes: continuous, graded with ties, skewed, tiny n, large n."""
    groups = {}
    for index in range(count):
        n = int(rng.choice([2, 3, 4, 7, 15, 50, 200, 1000]))
        kind = index % 4
        if kind == 0:
            a = rng.random(n)
            b = np.clip(a + rng.normal(rng.normal(0, 0.05), 0.1, n), 0, 1)
        elif kind == 1:  # graded metrics: many exact ties
            a = rng.integers(0, 4, n) / 4
            b = rng.integers(0, 4, n) / 4
        elif kind == 2:  # skewed (reciprocal ranks)
            a = 1 / rng.integers(1, 20, n)
            b = 1 / rng.integers(1, 15, n)
        else:  # large effect
            a = rng.random(n)
            b = a + rng.random(n) * 0.5
        groups[f"d{index:03d}"] = {"a": a, "b": b}
    return groups


def test_paired_t_test_matches_scipy_ttest_rel(db):
    groups = random_pairs(np.random.default_rng(2024), 160)
    rows = run_macro(db, per_query_frame(groups), runs=["a", "b"], permutations=0, bootstrap=0)
    checked = 0
    for row in rows:
        if row["is_baseline"]:
            continue
        a, b = groups[row["dataset"]]["a"], groups[row["dataset"]]["b"]
        d = b - a
        assert row["n"] == len(a)
        assert row["mean"] == pytest.approx(b.mean(), abs=1e-12)
        assert row["diff"] == pytest.approx(d.mean(), abs=1e-12)
        if np.all(d == d[0]):
            assert row["p_ttest"] is None and row["t"] is None and row["note"]
            continue
        expected = stats.ttest_rel(b, a)
        assert row["t"] == pytest.approx(expected.statistic, rel=1e-9, abs=1e-9)
        assert row["df"] == expected.df
        assert row["p_ttest"] == pytest.approx(expected.pvalue, abs=1e-9), row["dataset"]
        assert row["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)
        assert (row["wins"], row["ties"], row["losses"]) == (int((d > 0).sum()), int((d == 0).sum()),
                                                              int((d < 0).sum()))
        assert row["relative_change"] == pytest.approx(d.mean() / a.mean(), rel=1e-9)
        checked += 1
    assert checked > 120


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=40))
def test_t_test_property(db, pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    row = run_macro(db, per_query_frame({"x": {"a": a, "b": b}}), runs=["a", "b"], permutations=0, bootstrap=0)[1]
    d = b - a
    if np.all(d == d[0]):
        assert row["p_ttest"] is None
        return
    # duckrank measures differences in units of 2^-49 of the largest value: spreads far below that
    # are rounding noise, where scipy's t is meaningless too, so only clear cases are compared.
    scale = max(np.abs(a).max(), np.abs(b).max())
    if np.ptp(d) > 1e-12 * scale:
        assert row["p_ttest"] == pytest.approx(stats.ttest_rel(b, a).pvalue, abs=1e-9)


# ---------------------------------------------------------------------------------------------
# randomization test: all 2^n sign flips


def exact_sign_flip_p(d: np.ndarray) -> float:
    """P(|sum s_i d_i| >= |sum d_i|) over all 2^n sign vectors (d dyadic: sums are exact)."""
    signs = np.array(list(itertools.product([1, -1], repeat=len(d))))
    totals = np.abs(signs @ d)
    return float(np.mean(totals >= abs(d.sum())))


@pytest.mark.parametrize("d", [
    [0.25, 0.5, -0.125, 0.375, 0.25, 0.5, 0.125, -0.25, 0.625, 0.5],  # p ~ 0.02
    [0.5, -0.25, 0.25, 0.125, -0.375, 0.5, 0.25, 0.0, -0.125, 0.25, 0.375],  # p ~ 0.3
    [1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 0.0, 1.0, 1.0, -1.0],  # many exact ties
    [0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0],  # all positive: p = 2/256
    [0.0625, -0.0625, 0.5, -0.5, 0.25, 0.0, 0.125],  # symmetric: p near 1
])
def test_randomization_p_matches_exact_enumeration(db, d):
    d = np.array(d)
    exact = exact_sign_flip_p(d)
    permutations = 20_000
    row = run_macro(db, per_query_frame({"x": {"a": np.zeros(len(d)), "b": d}}), runs=["a", "b"],
                    permutations=permutations, bootstrap=0, seed=11)[1]
    # p = (1 + hits) / (1 + B): within 4 Monte-Carlo standard errors (+ the 1/B of the +1)
    tolerance = 4 * math.sqrt(max(exact * (1 - exact), 1e-4) / permutations) + 1 / permutations
    assert abs(row["p_randomization"] - exact) <= tolerance, (row["p_randomization"], exact)


def test_randomization_matches_enumeration_on_real_values(db):
    rng = np.random.default_rng(7)
    for _ in range(3):
        a, b = rng.random(12), rng.random(12)
        b = b + 0.1
        d = b - a
        signs = np.array(list(itertools.product([1, -1], repeat=12)))
        exact = float(np.mean(np.abs(signs @ d) >= abs(d.sum()) * (1 - 1e-12)))
        row = run_macro(db, per_query_frame({"x": {"a": a, "b": b}}), runs=["a", "b"], permutations=20_000,
                        bootstrap=0, seed=5)[1]
        assert abs(row["p_randomization"] - exact) <= 4 * math.sqrt(exact * (1 - exact) / 20_000) + 1e-4


def test_randomization_of_many_queries_agrees_with_the_t_test(db):
    rng = np.random.default_rng(3)
    a = rng.random(3000)
    b = a + rng.normal(0.01, 0.2, 3000)
    row = run_macro(db, per_query_frame({"x": {"a": a, "b": b}}), runs=["a", "b"], permutations=5000,
                    bootstrap=0)[1]
    assert row["p_randomization"] == pytest.approx(row["p_ttest"], abs=0.02)


# ---------------------------------------------------------------------------------------------
# bootstrap


def test_bootstrap_interval_coverage(db):
    """On data with a known mean, about `confidence` of the seeded intervals contain it."""
    rng = np.random.default_rng(99)
    true_mean = 2 / 7  # Beta(2, 5), a skewed metric-like distribution on [0, 1]
    groups = {f"s{i:03d}": {"zero": np.zeros(50), "x": rng.beta(2, 5, 50)} for i in range(300)}
    rows = run_macro(db, per_query_frame(groups), runs=["zero", "x"], permutations=0, bootstrap=1000,
                     seed=1, confidence=0.95)
    xs = [row for row in rows if row["run"] == "x"]
    mean_hits = sum(row["mean_ci_low"] <= true_mean <= row["mean_ci_high"] for row in xs)
    diff_hits = sum(row["ci_low"] <= true_mean <= row["ci_high"] for row in xs)
    assert 0.91 <= mean_hits / len(xs) <= 0.98, mean_hits
    assert diff_hits == mean_hits  # the difference from an all-zero baseline is the mean itself
    groups = dict(itertools.islice(groups.items(), 150))
    rows80 = run_macro(db, per_query_frame(groups), runs=["zero", "x"], permutations=0, bootstrap=1000,
                       seed=2, confidence=0.8)
    hits80 = sum(r["mean_ci_low"] <= true_mean <= r["mean_ci_high"] for r in rows80 if r["run"] == "x")
    assert 0.72 <= hits80 / 150 <= 0.88, hits80


def test_bootstrap_interval_width_is_the_standard_error(db):
    rng = np.random.default_rng(4)
    a = rng.random(2000)
    b = a + rng.normal(0.02, 0.1, 2000)
    row = run_macro(db, per_query_frame({"x": {"a": a, "b": b}}), runs=["a", "b"], permutations=0,
                    bootstrap=4000, seed=2)[1]
    se_mean = b.std(ddof=0) / math.sqrt(len(b))
    se_diff = (b - a).std(ddof=0) / math.sqrt(len(b))
    assert (row["mean_ci_high"] - row["mean_ci_low"]) == pytest.approx(2 * 1.96 * se_mean, rel=0.08)
    assert (row["ci_high"] - row["ci_low"]) == pytest.approx(2 * 1.96 * se_diff, rel=0.08)
    assert row["ci_low"] < row["diff"] < row["ci_high"]
    assert row["mean_ci_low"] < row["mean"] < row["mean_ci_high"]


# ---------------------------------------------------------------------------------------------
# reproducibility


def test_same_seed_same_bits_on_any_thread_count():
    rng = np.random.default_rng(8)
    groups = {"m": {"a": rng.random(500), "b": rng.random(500), "c": rng.random(500)}}
    frame = per_query_frame(groups)
    results = []
    for threads in (1, 2, 4):
        con = connect()
        con.execute(f"SET threads = {threads}").fetchall()
        results.append(run_macro(con, frame, runs=["a", "b", "c"], permutations=3000, bootstrap=3000, seed=42))
        con.close()
    assert results[0] == results[1] == results[2]
    other = run_macro(connect(), frame, runs=["a", "b", "c"], permutations=3000, bootstrap=3000, seed=43)
    assert [r["mean_ci_low"] for r in other] != [r["mean_ci_low"] for r in results[0]]
    assert [r["p_randomization"] for r in other] != [r["p_randomization"] for r in results[0]]
    assert [r["p_ttest"] for r in other] == [r["p_ttest"] for r in results[0]]


def test_random_bits_are_a_pure_function(db):
    first = db.execute("SELECT duckrank.random_bits(duckrank.replicate_key(5, 1, 7), 3)").fetchall()
    again = db.execute("SELECT duckrank.random_bits(duckrank.replicate_key(5, 1, 7), 3)").fetchall()
    assert first == again
    units = db.execute("SELECT avg(u), min(u) >= 0, max(u) < 1 FROM (SELECT duckrank.random_unit("
                       "duckrank.replicate_key(1, 2, r), i) AS u FROM range(200) a(r), range(500) b(i))").fetchall()[0]
    assert units[0] == pytest.approx(0.5, abs=0.005) and units[1] and units[2]


# ---------------------------------------------------------------------------------------------
# multiple-testing corrections: textbook examples


def adjust(con, p_values, method):
    frame = pd.DataFrame({"id": range(len(p_values)), "p": p_values})
    con.register("p_table", frame)
    try:
        rows = con.execute("SELECT id, p_adjusted FROM duckrank.p_adjust('p_table', method := $m) ORDER BY id",
                           {"m": method}).fetchall()
    finally:
        con.unregister("p_table")
    return [value for _, value in rows]


def test_holm_textbook_example(db):
    # Holm (1979); R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02
    assert adjust(db, [0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    # step-down stops: 0.04 * 1 = 0.04 would be below 0.06, the running maximum keeps it 0.06
    assert adjust(db, [0.2, 0.5, 0.9], "holm") == pytest.approx([0.6, 1.0, 1.0])  # capped at 1
    assert adjust(db, [0.01, 0.01, 0.5], "holm") == pytest.approx([0.03, 0.03, 0.5])  # ties share a value


BH_1995 = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
           0.5719, 0.6528, 0.7590, 1.0000]


def test_benjamini_hochberg_textbook_example(db):
    # Benjamini & Hochberg (1995), section 4: 15 p-values, q* = 0.05 rejects the four smallest.
    adjusted = adjust(db, BH_1995, "bh")
    expected = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.0638571428571, 0.0638571428571, 0.0645,
                0.0765, 0.486, 0.581181818182, 0.714875, 0.753230769231, 0.813214285714, 1.0]
    assert adjusted == pytest.approx(expected, abs=1e-9)
    assert sum(p <= 0.05 for p in adjusted) == 4
    shuffled = list(reversed(BH_1995))
    assert adjust(db, shuffled, "bh") == pytest.approx(stats.false_discovery_control(shuffled), abs=1e-12)


def test_corrections_ignore_null_and_reject_unknown_methods(db):
    assert adjust(db, [0.01, None, 0.04], "holm") == [pytest.approx(0.02), None, pytest.approx(0.04)]
    assert adjust(db, [0.01, None, 0.04], "bh") == [pytest.approx(0.02), None, pytest.approx(0.04)]
    with pytest.raises(duckdb.Error, match="correction must be one of holm, bh"):
        adjust(db, [0.1], "bonferroni")


def test_compare_adjusts_across_all_runs_and_measures(db):
    groups = random_pairs(np.random.default_rng(12), 8)
    frame = per_query_frame(groups)
    frame.loc[frame["run"] == "b", "run"] = "b"
    rows = run_macro(db, frame, runs=["a", "b"], permutations=500, bootstrap=0, correction="holm")
    tested = [r for r in rows if r["p_ttest"] is not None]
    raw = [r["p_ttest"] for r in tested]
    assert [r["p_ttest_adjusted"] for r in tested] == pytest.approx(adjust(db, raw, "holm"), abs=1e-15)
    rows = run_macro(db, frame, runs=["a", "b"], permutations=500, bootstrap=0, correction="bh",
                     test="randomization", alpha=0.2)
    tested = [r for r in rows if r["p_randomization"] is not None]
    raw = [r["p_randomization"] for r in tested]
    assert [r["p_adjusted"] for r in tested] == pytest.approx(adjust(db, raw, "bh"), abs=1e-15)
    assert all(r["significant"] == (r["p_adjusted"] < 0.2) for r in tested)


# ---------------------------------------------------------------------------------------------
# the SQL macro's own checks


def test_macro_reports_every_bad_argument_at_once(db):
    frame = per_query_frame({"x": {"a": np.arange(5.0), "b": np.arange(5.0) + 1}})
    with pytest.raises(duckdb.Error) as caught:
        run_macro(db, frame, baseline="nope", correction="bonferroni", confidence=1.5, permutations=-1)
    message = str(caught.value)
    for fragment in ("baseline 'nope' is not one of the runs (a, b)", "correction must be one of holm, bh",
                     "confidence must be strictly between 0 and 1", "permutations must be a whole number"):
        assert fragment in message


def test_macro_refuses_duplicates_and_nan(db):
    frame = per_query_frame({"x": {"a": np.arange(3.0), "b": np.arange(3.0)}})
    with pytest.raises(duckdb.Error, match="one value per"):
        run_macro(db, pd.concat([frame, frame.head(1)]))
    db.register("nan_frame", frame)
    db.execute("CREATE OR REPLACE TEMP TABLE with_nan AS SELECT dataset, run, query_id, "
               "CASE WHEN query_id = 'q00001' AND run = 'b' THEN 'NaN'::DOUBLE ELSE value END AS value "
               "FROM nan_frame").fetchall()
    with pytest.raises(duckdb.Error, match="finite values"):
        db.execute("SELECT * FROM duckrank.compare('with_nan')").fetchall()


def test_macro_edge_cases(db):
    frame = per_query_frame({
        "same": {"a": np.array([0.1, 0.5, 0.7]), "b": np.array([0.1, 0.5, 0.7])},
        "shift": {"a": np.array([0.25, 0.5, 0.75]), "b": np.array([0.5, 0.75, 1.0])},
    })
    frame = pd.concat([frame, pd.DataFrame([("lone", "a", "q1", 0.5), ("lone", "b", "q1", 0.7),
                                            ("none", "a", "q1", 0.5), ("none", "b", "q2", 0.7)],
                                           columns=frame.columns)])
    rows = {(r["dataset"], r["run"]): r for r in run_macro(db, frame, runs=["a", "b"], bootstrap=100,
                                                           permutations=100)}
    same = rows[("same", "b")]
    assert same["diff"] == 0 and same["p_ttest"] is None and same["p_randomization"] is None
    assert "identical to the baseline on all 3 queries" in same["note"]
    shift = rows[("shift", "b")]
    assert shift["diff"] == pytest.approx(0.25) and shift["p_ttest"] is None and shift["effect_size"] is None
    assert "same +0.25 on every query (zero variance)" in shift["note"]
    assert shift["p_randomization"] == pytest.approx(2 / 8, abs=0.15)  # all-same-sign flips: 2 of 8
    assert "only 1 query is scored by every run" in rows[("lone", "b")]["note"]
    assert rows[("none", "b")]["n"] == 0 and "only 0 queries" in rows[("none", "b")]["note"]
    assert all(not isinstance(v, float) or not math.isnan(v) for r in rows.values() for v in r.values())


def test_the_duckdb_shell_computes_the_same_numbers(tmp_path):
    """The macros load with .read in the real duckdb shell (another DuckDB version) and draw the same
    random numbers (hash() is the only source of randomness): the same sign-flip count, and
    intervals equal up to the last bit of the final division."""
    shell = duckdb_shell()
    rng = np.random.default_rng(6)
    frame = per_query_frame({"map": {"a": rng.random(80), "b": rng.random(80) * 0.9 + 0.1}})
    frame.to_csv(tmp_path / "pq.csv", index=False)
    query = ("SELECT run, mean, diff, p_ttest, p_randomization, mean_ci_low, mean_ci_high, ci_low, ci_high "
             "FROM duckrank.compare(pq, permutations := 3000, bootstrap := 3000, seed := 9)")
    sql_dir = Path(duckrank.__file__).resolve().parent.parent / "sql"
    script = "".join(f".read {path}\n" for path in sorted(sql_dir.glob("[0-9][0-9]_*.sql")))
    script += f"CREATE TABLE pq AS SELECT * FROM read_csv('{tmp_path / 'pq.csv'}');\n.mode json\n{query};\n"
    done = subprocess.run([shell], input=script, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and not done.stderr, done.stderr
    from_shell = json.loads(done.stdout)
    con = connect()
    con.execute(f"CREATE TABLE pq AS SELECT * FROM read_csv('{tmp_path / 'pq.csv'}')").fetchall()
    relation = con.execute(query)
    names = [d[0] for d in relation.description]
    from_python = [dict(zip(names, row)) for row in relation.fetchall()]
    for shell_row, python_row in zip(from_shell, from_python, strict=True):
        assert shell_row["p_randomization"] == python_row["p_randomization"]  # a count: exact
        for key in ("mean", "diff", "p_ttest", "mean_ci_low", "mean_ci_high", "ci_low", "ci_high"):
            if python_row[key] is None:  # the baseline's row
                assert shell_row[key] is None, key
            else:
                assert shell_row[key] == pytest.approx(python_row[key], rel=1e-12, abs=1e-15), key
    assert from_python[1]["p_randomization"] is not None


# ---------------------------------------------------------------------------------------------
# the Python facade


QRELS = [("q1", "d1", 1), ("q1", "d2", 0), ("q1", "d3", 2), ("q2", "d1", 1), ("q2", "d4", 1),
         ("q3", "d2", 1), ("q3", "d5", 0), ("q4", "d1", 2), ("q4", "d3", 1), ("q5", "d6", 1)]


def ranking(order: dict[str, list[str]], country: dict[str, str] | None = None) -> pd.DataFrame:
    rows = [(q, d, float(len(docs) - i)) for q, docs in order.items() for i, d in enumerate(docs)]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    if country:
        frame["country"] = frame["query_id"].map(country)
    return frame


RUN_A = {"q1": ["d2", "d1", "d3"], "q2": ["d1", "d9", "d4"], "q3": ["d5", "d2"], "q4": ["d3", "d1"],
         "q5": ["d7", "d6"]}
RUN_B = {"q1": ["d3", "d1", "d2"], "q2": ["d4", "d1"], "q3": ["d2", "d5"], "q4": ["d1", "d3"]}  # no q5
COUNTRY = {"q1": "uk", "q2": "uk", "q3": "us", "q4": "us", "q5": "us"}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("compare")
    paths = {"qrels": folder / "qrels.parquet", "a": folder / "a.parquet", "b": folder / "b.parquet",
             "a_copy": folder / "a_copy.parquet"}
    pd.DataFrame(QRELS, columns=["query_id", "doc_id", "relevance"]).to_parquet(paths["qrels"])
    ranking(RUN_A, COUNTRY).to_parquet(paths["a"])
    ranking(RUN_B, COUNTRY).to_parquet(paths["b"])
    ranking(RUN_A, COUNTRY).to_parquet(paths["a_copy"])
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS))
    paths["qrels_txt"] = folder / "qrels.txt"
    return paths


def per_query(files, run, measure, **options) -> dict[str, float]:
    relation = duckrank.evaluate(str(files["qrels"]), str(files[run]), [measure], per_query=True, **options)
    return {q: v for q, _, v in relation.fetchall()}


def test_facade_compares_on_common_queries_and_says_which_differ(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map", "ndcg_cut.10"],
                     run_names=["A", "B"], permutations=2000, bootstrap=500, seed=1)
    a, b = per_query(files, "a", "map"), per_query(files, "b", "map")
    common = sorted(set(a) & set(b))
    assert common == ["q1", "q2", "q3", "q4"]
    rows = result.as_dict()["map"]
    assert rows["A"]["mean"] == pytest.approx(np.mean([a[q] for q in common]), abs=1e-12)
    assert rows["B"]["diff"] == pytest.approx(np.mean([b[q] - a[q] for q in common]), abs=1e-12)
    expected = stats.ttest_rel([b[q] for q in common], [a[q] for q in common])
    assert rows["B"]["p_ttest"] == pytest.approx(expected.pvalue, abs=1e-9)
    assert rows["A"]["is_baseline"] and rows["A"]["diff"] is None and rows["A"]["p_adjusted"] is None
    assert any("run 'B' has no results for 1 of the 5 queries" in note and "q5" in note for note in result.notes)
    assert result.relation.columns[:3] == ["metric", "run", "is_baseline"]
    assert [r["metric"] for r in result.records()] == ["map", "map", "ndcg_cut.10", "ndcg_cut.10"]
    assert result.df().shape == (4, len(result.columns))


def test_complete_scores_missing_queries_as_zero(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map"], complete=True,
                     run_names=["A", "B"], permutations=0, bootstrap=0)
    a = per_query(files, "a", "map", complete=True)
    b = per_query(files, "b", "map", complete=True)
    assert b["q5"] == 0.0
    rows = result.as_dict()["map"]
    assert rows["B"]["n"] == 5
    assert rows["B"]["mean"] == pytest.approx(np.mean(list(b.values())), abs=1e-12)
    assert rows["B"]["p_ttest"] == pytest.approx(
        stats.ttest_rel([b[q] for q in sorted(a)], [a[q] for q in sorted(a)]).pvalue, abs=1e-9)
    assert any("they score 0 (complete)" in note for note in result.notes)


def test_segments_compare_per_value_of_a_run_column(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map"], by="country",
                     run_names=["A", "B"], permutations=200, bootstrap=200)
    rows = result.as_dict()
    a, b = per_query(files, "a", "map"), per_query(files, "b", "map")
    for country in ("uk", "us"):
        queries = [q for q in ("q1", "q2", "q3", "q4") if COUNTRY[q] == country]
        assert rows[country]["map"]["A"]["mean"] == pytest.approx(np.mean([a[q] for q in queries]), abs=1e-12)
        assert rows[country]["map"]["B"]["diff"] == pytest.approx(np.mean([b[q] - a[q] for q in queries]),
                                                                    abs=1e-12)
    assert result.columns[0] == "country"
    assert [r["country"] for r in result.records()] == ["uk", "uk", "us", "us"]


def test_segments_with_complete_score_a_missing_query_zero_in_its_segment(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map"], by="country",
                     complete=True, run_names=["A", "B"], permutations=0, bootstrap=0)
    rows = result.as_dict()
    a = per_query(files, "a", "map")
    assert rows["us"]["map"]["B"]["n"] == 3  # q3, q4 and q5, which B did not answer
    b = per_query(files, "b", "map")
    assert rows["us"]["map"]["B"]["mean"] == pytest.approx((b["q3"] + b["q4"] + 0.0) / 3, abs=1e-12)
    assert rows["us"]["map"]["A"]["mean"] == pytest.approx((a["q3"] + a["q4"] + a["q5"]) / 3, abs=1e-12)
    assert rows["uk"]["map"]["B"]["n"] == 2


def test_identical_runs_and_too_few_queries_give_messages(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["a_copy"])], ["map"], permutations=100,
                     bootstrap=100)
    row = result.records()[1]
    assert row["p_ttest"] is None and "identical to the baseline on all 5 queries" in row["note"]
    assert any("identical" in note for note in result.notes)
    lone = pd.DataFrame([("q1", "d3", 1.0)], columns=["query_id", "doc_id", "score"])
    with pytest.raises(InputError, match="only 1 query in common.*at least two"):
        compare(str(files["qrels"]), [lone, str(files["a"])], ["map"], run_names=["lone", "a"])


def test_facade_option_errors(files):
    qrels, runs = str(files["qrels"]), [str(files["a"]), str(files["b"])]
    with pytest.raises(OptionError) as caught:
        compare(qrels, runs, permutations=-5, confidence=2, correction="bonferroni", test="wilcoxon")
    for fragment in ("permutations must be", "confidence must be", "correction must be one of holm, bh",
                     "test must be one of t, randomization"):
        assert fragment in str(caught.value)
    with pytest.raises(MeasureError, match="'num_ret' is a sum over queries"):
        compare(qrels, runs, ["num_ret"])
    with pytest.raises(MeasureError, match="unknown measure"):
        compare(qrels, runs, ["nope@3"])
    with pytest.raises(OptionError, match="at least two runs"):
        compare(qrels, [runs[0]])
    with pytest.raises(OptionError, match="baseline 'c' is not one of the runs"):
        compare(qrels, runs, baseline="c")
    with pytest.raises(OptionError, match="cannot segment by 'run'"):
        compare(qrels, runs, by="run")


def test_one_file_holding_several_runs(files, tmp_path):
    both = pd.concat([ranking(RUN_A).assign(run_id="x"), ranking(RUN_B).assign(run_id="y")])
    both.to_parquet(tmp_path / "both.parquet")
    result = compare(str(files["qrels"]), str(tmp_path / "both.parquet"), ["map"], baseline="y", permutations=0,
                     bootstrap=0)
    assert result.runs == ["x", "y"] and result.baseline == "y"
    assert [r["run"] for r in result.records()] == ["x", "y"]


def test_baseline_by_name_index_file_name_or_stem():
    runs = ["data/x/bm25.parquet", "data/y/dense.parquet"]
    assert resolve_baseline(None, runs) == runs[0]
    assert resolve_baseline(1, runs) == runs[1]
    assert resolve_baseline("dense.parquet", runs) == runs[1]
    assert resolve_baseline("dense", runs) == runs[1]
    assert resolve_baseline("data/x/bm25.parquet", runs) == runs[0]
    with pytest.raises(OptionError, match="several runs"):
        resolve_baseline("run", ["a/run.txt", "b/run.txt"])


def test_baseline_changes_the_direction(files):
    result = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map"], baseline="b",
                     permutations=0, bootstrap=0)
    rows = result.as_dict()["map"]
    assert result.baseline == str(files["b"])
    forward = compare(str(files["qrels"]), [str(files["a"]), str(files["b"])], ["map"], permutations=0,
                      bootstrap=0).as_dict()["map"]
    assert rows[str(files["a"])]["diff"] == pytest.approx(-forward[str(files["b"])]["diff"], abs=1e-15)


# ---------------------------------------------------------------------------------------------
# speed


def test_ten_thousand_sign_flips_over_ten_thousand_queries(db):
    rng = np.random.default_rng(0)
    a = rng.random(10_000)
    b = np.clip(a + rng.normal(0.005, 0.2, 10_000), 0, 1)
    frame = per_query_frame({"m": {"a": a, "b": b}})
    db.register("big", frame)
    db.execute("CREATE TEMP TABLE big_table AS SELECT * FROM big").fetchall()
    start = time.perf_counter()
    row = db.execute("SELECT p_randomization, p_ttest FROM duckrank.compare('big_table', runs := ['a', 'b'], "
                     "permutations := 10000, bootstrap := 0) WHERE NOT is_baseline").fetchall()[0]
    elapsed = time.perf_counter() - start
    assert elapsed < 30, elapsed  # about 3 s on 2 busy cores
    assert row[0] == pytest.approx(row[1], abs=0.03)


# ---------------------------------------------------------------------------------------------
# the command line


def cli(*args):
    return run("compare", *args)


FAST = ("--permutations", "500", "--bootstrap", "300")


def test_cli_jsonl_has_the_documented_keys(files):
    result = cli(files["qrels"], files["a"], files["b"], "-m", "map", "-m", "P.2", "-f", "jsonl", *FAST)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(records) == 4
    for key in ("run", "metric", "mean", "diff", "ci_low", "ci_high", "p_ttest", "p_randomization", "p_adjusted",
                "wins", "ties", "losses"):
        assert all(key in record for record in records), key
    baseline = records[0]
    assert baseline["diff"] is None and baseline["p_ttest"] is None and baseline["wins"] is None
    assert records[1]["wins"] + records[1]["ties"] + records[1]["losses"] == 4
    assert "Note: run" in result.stderr and "q5" in result.stderr


@pytest.mark.parametrize("fmt", ["csv", "tsv", "json"])
def test_cli_machine_formats(files, fmt):
    result = cli(files["qrels"], files["a"], files["b"], "-m", "map", "-f", fmt, *FAST)
    assert result.exit_code == 0
    if fmt == "json":
        assert len(json.loads(result.stdout)) == 2
    else:
        lines = result.stdout.splitlines()
        assert lines[0].split("," if fmt == "csv" else "\t")[:3] == ["metric", "run", "is_baseline"]
        assert len(lines) == 3


def test_cli_human_formats_mark_significance_with_alpha(tmp_path):
    rng = np.random.default_rng(1)
    qrels, a, b = [], [], []
    for q in range(30):
        for d in range(10):
            rel = int(d < 3)
            qrels.append((f"q{q}", f"d{d}", rel))
            a.append((f"q{q}", f"d{d}", rng.random()))
            b.append((f"q{q}", f"d{d}", rng.random() + rel))
    pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]).to_csv(tmp_path / "q.csv", index=False)
    pd.DataFrame(a, columns=["query_id", "doc_id", "score"]).to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame(b, columns=["query_id", "doc_id", "score"]).to_csv(tmp_path / "b.csv", index=False)
    args = (tmp_path / "q.csv", tmp_path / "a.csv", tmp_path / "b.csv", "-m", "map", *FAST)
    table = cli(*args, "-f", "table", "--alpha", "0.01").stdout
    assert "(baseline)" in table and "* adjusted p < 0.01" in table and "Holm-Bonferroni" in table
    assert any(line.startswith("map") and "*" in line for line in table.splitlines())
    markdown = cli(*args, "-f", "markdown", "--correction", "bh").stdout
    assert markdown.startswith("| metric | run |") and "\\* adjusted p < 0.05" in markdown
    assert "Benjamini-Hochberg" in markdown
    latex = cli(*args, "-f", "latex").stdout
    assert "\\begin{tabular}" in latex and "$p < 0.05$" in latex and "mean 95\\% CI" in latex


def test_cli_writes_files_atomically(files, tmp_path):
    target = tmp_path / "out.jsonl"
    result = cli(files["qrels"], files["a"], files["b"], "-m", "map", "-o", target, *FAST)
    assert result.exit_code == 0 and result.stdout == ""
    assert len(target.read_text().splitlines()) == 2  # the extension picked jsonl
    parquet = tmp_path / "out.parquet"
    assert cli(files["qrels"], files["a"], files["b"], "-m", "map", "-o", parquet, *FAST).exit_code == 0
    assert duckdb.sql(f"SELECT count(*) FROM '{parquet}'").fetchall() == [(2,)]
    target.write_text("keep me")
    failed = cli(files["qrels"], files["a"], tmp_path / "missing.parquet", "-m", "map", "-o", target)
    assert failed.exit_code == 1
    assert target.read_text() == "keep me"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl", "out.parquet"]


def test_cli_same_seed_same_output(files):
    args = (files["qrels"], files["a"], files["b"], "-m", "map", "-f", "csv", "--seed", "7", *FAST)
    assert cli(*args).stdout == cli(*args).stdout
    assert cli(*args).stdout != cli(*args[:-6], "--seed", "8", *FAST).stdout


def assert_error(result, code: int, *fragments: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stderr.count("Error: ") >= 1 and "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in result.stderr, (fragment, result.stderr)


def test_cli_usage_errors_exit_2_and_report_everything(files):
    assert_error(cli(files["qrels"]), 2, "at least two runs")
    assert_error(cli(files["qrels"], files["a"]), 2, "at least two runs; got one")
    assert_error(cli(files["qrels"], files["a"], files["b"], "--permutations", "-1", "--confidence", "95",
                     "--correction", "sidak", "-m", "nope@5", "-f", "yaml"), 2,
                 "--permutations must be a whole number from 0 to 1000000", "--confidence must be a number strictly between",
                 "--correction must be one of holm, bh", "unknown measure 'nope@5'", "--format must be one of")
    assert_error(cli(files["qrels"], files["a"], files["b"], "-m", "num_ret"), 2, "compare tests means")
    assert_error(cli(files["qrels"], files["a"], files["b"], "--baseline", "zzz"), 2, "--baseline 'zzz'")


def test_cli_data_errors_exit_1(files, tmp_path):
    assert_error(cli(files["qrels"], files["a"], tmp_path / "missing.parquet"), 1, "not found")
    other = tmp_path / "other.parquet"
    pd.DataFrame([("x1", "d1", 1.0)], columns=["query_id", "doc_id", "score"]).to_parquet(other)
    assert_error(cli(files["qrels"], files["a"], other, "-m", "map"), 1, "has no query in common with the qrels")


def test_cli_baseline_by_stem_and_segments(files):
    result = cli(files["qrels"], files["a"], files["b"], "-m", "map", "--baseline", "b", "--by", "country",
                 "-f", "csv", *FAST)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("country,metric,run,is_baseline")
    assert [line.split(",")[0] for line in lines[1:]] == ["uk", "uk", "us", "us"]
    fields = lines[2].split(",")
    assert fields[2].endswith("b.parquet") and fields[3] == "True"  # --baseline b: the stem


def test_cli_attaches_to_the_duckrank_group():
    from duckrank.cli import main

    added = "compare" not in main.commands
    main.add_command(compare_command)
    try:
        result = run("compare", "-h")
    finally:
        if added:
            main.commands.pop("compare")
    assert result.exit_code == 0 and "--permutations" in result.stdout and "--correction" in result.stdout
    assert "Usage: main compare" in result.stdout or "Usage: duckrank compare" in result.stdout
