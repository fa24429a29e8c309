"""trec_eval conformance: duckrank's SQL macros print trec_eval 10.0's own numbers.

The golden files in tests/data/trec_eval are trec_eval's output on real TREC qrels and runs
(README.md there gives each command line). For every measure duckrank supports, every per-query
value and the `all` summary must equal the printed value when formatted the same way (4 decimals,
integers for the counters). There is no tolerance: a value that differs at the 4th decimal is a
bug, not rounding noise.

Loading: trec_eval reads a run line as `query_id Q0 doc_id rank score run_id [junk...]` and ignores
the rank column; ids are strings. Scores are rounded through float32 as trec_eval's C float would
(on these files that changes no tie: reading them as doubles gives the same output).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from trec_files import read_qrels, read_run

# trec_eval measures printed in the golden files that duckrank deliberately does not compute.
# Each is listed with the reason, so the omission is a decision and not an oversight.
UNSUPPORTED_TREC_MEASURES = {
    "runid": "not a measure: echoes the run's name",
}

# Measures whose name carries a parameter: base name -> pattern of the full printed name.
_PARAM = re.compile(r"^(?P<base>[A-Za-z_]+?)_(?P<param>[0-9.]+)$")

CONFIGS = {
    # expected file: (qrels file, run file, conventions passed to every macro)
    "out.test.aq": ("qrels.test", "results.test", {}),
    "out.test.aqc": ("qrels.test", "results.trunc", {"complete": "true"}),
    "out.test.aqcM": ("qrels.test", "results.trunc", {"complete": "true", "max_rank": "100"}),
    "out.test.aql": ("qrels.rel_level", "results.test", {"rel_level": "2"}),
}


def read_expected(path: Path) -> dict[tuple[str, str], str]:
    expected = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        measure, query_id, value = (part.strip() for part in line.split("\t"))
        expected[(measure, query_id)] = value
    return expected


def _is_unsupported(measure: str) -> bool:
    base = re.sub(r"_[-0-9.,=]+$", "", measure)
    return measure in UNSUPPORTED_TREC_MEASURES or base in UNSUPPORTED_TREC_MEASURES


def macro_sql(measure: str, conv: dict[str, str]) -> tuple[str, str] | None:
    """SQL returning (query_id, value) for a trec_eval measure name, and how `all` summarises it
    ('mean', 'sum', 'gm', 'count'; 'text' for relstring, which has no summary). None for a measure
    duckrank does not support."""
    opts = "".join(f", {name} := {value}" for name, value in conv.items())

    def call(name: str, extra: str = "", column: str = "value") -> str:
        return f"SELECT query_id, {column} FROM duckrank.\"{name}\"('qrels', 'run'{extra}{opts})"

    fixed = {
        "map": (call("average_precision"), "mean"),
        "gm_map": (call("average_precision"), "gm"),
        "Rprec": (call("r_precision"), "mean"),
        "bpref": (call("bpref"), "mean"),
        "gm_bpref": (call("bpref"), "gm"),
        "recip_rank": (call("reciprocal_rank"), "mean"),
        "11pt_avg": (call("eleven_point_average"), "mean"),
        "ndcg": (call("ndcg"), "mean"),
        "set_P": (call("precision"), "mean"),
        "set_recall": (call("recall"), "mean"),
        "set_relative_P": (call("recall", ", cap := true"), "mean"),
        "set_F": (call("f_measure"), "mean"),
        "rbp": (call("rbp", ", p := 0.9"), "mean"),
        "rbp_resid": (call("rbp", ", p := 0.9", column="residual"), "mean"),
        "num_q": (call("counts", column="num_q"), "count"),
        "num_ret": (call("counts", column="num_ret"), "sum"),
        "num_rel": (call("counts", column="num_rel"), "sum"),
        "num_rel_ret": (call("counts", column="num_rel_ret"), "sum"),
        "num_nonrel_judged_ret": (call("counts", column="num_nonrel_judged_ret"), "sum"),
        "infAP": (call("inferred_average_precision"), "mean"),
        "utility": (call("utility"), "mean"),
        "binG": (call("binary_normalized_gain"), "mean"),
        "G": (call("normalized_gain"), "mean"),
        "ndcg_rel": (call("ndcg_rel"), "mean"),
        "Rndcg": (call("r_ndcg"), "mean"),
        "set_map": (call("set_average_precision"), "mean"),
        "utility_2,-1,0,0": (call("utility", ", retrieved_relevant := 2"), "mean"),
        "relstring": (call("relevance_string", ", k := 10"), "text"),
    }
    if measure in fixed:
        return fixed[measure]
    if measure.startswith("ndcg_") and "=" in measure:
        # ndcg_1=3,2=9,4=4.5: trec_eval's custom gain map.
        pairs = [pair.split("=") for pair in measure[len("ndcg_"):].split(",")]
        keys = ", ".join(f"{float(g)}" for g, _ in pairs)
        values = ", ".join(f"{float(v)}" for _, v in pairs)
        return call("ndcg", f", gain_map := MAP([{keys}], [{values}])"), "mean"
    if measure.startswith("11pt_avg_"):
        # 11pt_avg_.25,.5,.75: the recall levels as trec_eval printed them.
        levels = ", ".join(str(float(level)) for level in measure[len("11pt_avg_"):].split(","))
        return call("eleven_point_average", f", recall_levels := [{levels}]"), "mean"
    match = _PARAM.match(measure)
    if not match:
        return None
    base, param = match["base"], match["param"]
    # trec_eval truncates a cutoff given as 23.4 to 23 (it parses cutoffs as longs).
    k = int(float(param))
    by_cutoff = {
        "P": ("precision", ""),
        "recall": ("recall", ""),
        "map_cut": ("average_precision", ""),
        "ndcg_cut": ("ndcg", ""),
        "relative_P": ("recall", ", cap := true"),
        "success": ("hit_rate", ""),
        "unj": ("unjudged_fraction", ""),
    }
    if base == "relstring":
        return call("relevance_string", f", k := {k}"), "text"
    if base in by_cutoff:
        name, extra = by_cutoff[base]
        return call(name, f", k := {k}{extra}"), "mean"
    if base == "iprec_at_recall":
        return call("interpolated_precision", f", recall := {float(param)}"), "mean"
    if base == "Rprec_mult":
        return call("r_precision", f", mult := {float(param)}"), "mean"
    return None


def _format(measure: str, value: float) -> str:
    if measure.startswith("num_"):
        return str(int(value))
    return f"{value:.4f}"


def _summary(rule: str, values: list[float]) -> float:
    if rule == "sum":
        return sum(values)
    if rule == "count":
        return len(values)
    if rule == "gm":
        # trec_eval's gm_map: exp(mean(log(max(v, 1e-5)))); duckrank.geometric_mean is the aggregate.
        return math.exp(sum(math.log(max(v, 1e-5)) for v in values) / len(values))
    return sum(values) / len(values)


@pytest.fixture(scope="module")
def trec_con(trec_data):
    from duckrank._library import connect

    connection = connect()
    yield connection
    connection.close()


def _evaluate(con, trec_data: Path, expected_file: str, extra_expected: str | None = None):
    """Compare every supported measure of an expected file; return (checked, mismatches, unknown)."""
    qrels_file, run_file, conv = CONFIGS[expected_file]
    qrels = read_qrels(trec_data / qrels_file)
    run = read_run(trec_data / run_file)
    con.register("qrels", qrels)
    con.register("run", run)
    expected = read_expected(trec_data / (extra_expected or expected_file))
    measures = sorted({m for m, _ in expected})
    checked, mismatches, unknown = [], [], []
    for measure in measures:
        if _is_unsupported(measure):
            continue
        this_conv = dict(conv)
        got = macro_sql(measure, this_conv)
        if got is None:
            unknown.append(measure)
            continue
        sql, rule = got
        rows = dict(con.execute(sql).fetchall())
        for (m, qid), want in expected.items():
            if m != measure:
                continue
            if qid == "all":
                value = _summary(rule, [float(v) for v in rows.values()])
            elif qid not in rows:
                mismatches.append(f"{measure} {qid}: missing, expected {want}")
                continue
            elif rule == "text":  # relstring, printed per query only, quoted
                value = rows[qid]
            else:
                value = float(rows[qid])
            have = f"'{value}'" if rule == "text" else _format(measure, value)
            checked.append((measure, qid))
            if have != want:
                mismatches.append(f"{measure} {qid}: duckrank {value!r} -> {have}, trec_eval {want}")
        # gm_map, gm_bpref and num_q are printed only under `all`.
        extra_q = set(rows) - {q for (m, q) in expected if m == measure}
        if extra_q and rule not in ("gm", "count"):
            mismatches.append(f"{measure}: duckrank reports queries trec_eval does not: {sorted(extra_q)}")
    return checked, mismatches, unknown


# `-m "not slow"` keeps trec_eval's default output; the full run adds -c, -c -M and -l
@pytest.mark.parametrize("expected_file", [name if name == "out.test.aq" else pytest.param(name, marks=pytest.mark.slow)
                                           for name in sorted(CONFIGS)])
def test_every_supported_measure_matches_trec_eval(trec_con, trec_data, expected_file):
    checked, mismatches, unknown = _evaluate(trec_con, trec_data, expected_file)
    assert not unknown, f"measures neither supported nor listed as unsupported: {unknown}"
    assert not mismatches, "\n".join(mismatches)
    # The file's measures are all checked: per query and the summary.
    assert len(checked) > 300


def test_measure_parameters_match_trec_eval(trec_con, trec_data):
    """out.test.meas_params: iprec at custom levels, P.3/5/7, recall.20/2000, Rprec_mult 5/0.2/0.35,
    11pt_avg at .25/.5/.75, ndcg with the gain map {1: 3, 2: 9, 4: 4.5}, ndcg_cut 10/20/23.4
    (trec_eval truncates 23.4 to 23), success.2/5/20."""
    checked, mismatches, unknown = _evaluate(trec_con, trec_data, "out.test.aq", "out.test.meas_params")
    assert not unknown, f"measures neither supported nor listed as unsupported: {unknown}"
    assert not mismatches, "\n".join(mismatches)
    names = {m for m, _ in checked}
    assert {"ndcg_1=3,2=9,4=4.5", "ndcg_cut_23", "Rprec_mult_5.00", "11pt_avg_.25,.5,.75",
            "iprec_at_recall_0.25", "recall_2000", "success_2", "P_7"} <= names
    assert len(checked) == 4 * len(names)


def test_ndcg_ignores_rel_level_like_trec_eval(trec_con, trec_data):
    """trec_eval -l changes P, AP, bpref... but not nDCG, which uses the grades as gains: out.test.aql's
    ndcg for qrels.rel_level equals the ndcg of the same qrels at the default level."""
    trec_con.register("qrels", read_qrels(trec_data / "qrels.rel_level"))
    trec_con.register("run", read_run(trec_data / "results.test"))
    at_two = dict(trec_con.execute(
        "SELECT query_id, value FROM duckrank.\"ndcg\"('qrels', 'run', rel_level := 2)").fetchall())
    at_one = dict(trec_con.execute(
        "SELECT query_id, value FROM duckrank.\"ndcg\"('qrels', 'run')").fetchall())
    # equal up to the order DuckDB's parallel sums add the same terms in
    assert at_two == pytest.approx(at_one, rel=1e-12, abs=0)
    expected = read_expected(trec_data / "out.test.aql")
    assert {q: f"{v:.4f}" for q, v in at_two.items()} == {
        q: v for (m, q), v in expected.items() if m == "ndcg" and q != "all"}


def test_geometric_mean_aggregate_is_trec_gm_map(trec_con, trec_data):
    """duckrank.geometric_mean over per-query AP / bpref reproduces gm_map / gm_bpref, including the
    1e-5 floor (gm_bpref is 0.0083 because query 301's bpref is 0 and is floored)."""
    trec_con.register("qrels", read_qrels(trec_data / "qrels.test"))
    trec_con.register("run", read_run(trec_data / "results.test"))
    expected = read_expected(trec_data / "out.test.aq")
    for measure, macro in (("gm_map", "average_precision"), ("gm_bpref", "bpref")):
        (value,) = trec_con.execute(
            f"SELECT duckrank.geometric_mean(value) FROM duckrank.\"{macro}\"('qrels', 'run')").fetchall()[0]
        assert f"{value:.4f}" == expected[(measure, "all")]


def test_unsupported_list_covers_every_other_printed_measure(trec_data):
    """Every measure in the golden files is either computed above or listed as unsupported."""
    printed = set()
    for name in [*CONFIGS, "out.test.meas_params"]:
        printed |= {m for m, _ in read_expected(trec_data / name)}
    not_computed = {m for m in printed if macro_sql(m, {}) is None}
    assert all(_is_unsupported(m) for m in not_computed), sorted(not_computed)
    # and nothing listed unsupported is silently computed
    assert not any(macro_sql(m, {}) for m in printed if _is_unsupported(m))
