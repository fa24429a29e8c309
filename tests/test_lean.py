"""The lean rendering (duckrank/lean.py) gives the macro path's numbers bit for bit: every ranking
measure with a spread of its options under every convention setting of the front-door test, on
its hostile data (ties, unjudged and negatively graded docs, a query without relevant docs, queries
only in the run or only in the qrels), and on integer ids. Refusals and data errors read the same."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections import Counter

import duckdb
import pandas as pd
import pytest
from front_door_cases import QRELS, RUN, SETTINGS, cases_for

import duckrank
from duckrank import _duckdb_sql, evaluation, lean
from duckrank.measures import parse_measure
from duckrank.options import EMPTY_GAIN_MAP

pytest.importorskip("sqlglot")


@pytest.fixture
def rendered(monkeypatch):
    """Every pass rendered from its first call; counts the passes the lean rendering serves, so a
    comparison cannot pass by comparing the macro path with itself."""
    calls = []
    lean_pass_sql = _duckdb_sql.lean_pass_sql

    def counted(*args, **kwargs):
        rendered = lean_pass_sql(*args, **kwargs)
        if rendered is not None:
            calls.append(args)
        return rendered
    monkeypatch.setattr(_duckdb_sql, "lean_pass_sql", counted)
    monkeypatch.setattr(lean, "RENDER_FROM_CALL", 1)
    return calls


def per_query_rows(monkeypatch, rendering: bool, qrels, runs, measures: list[str], **options) -> list[tuple] | str:
    """The rows of one evaluate(per_query=True) call on the lean or the macro path, or its error."""
    with monkeypatch.context() as patch:
        if not rendering:
            patch.setattr(evaluation, "lean_case", lambda *args: False)
        try:
            return duckrank.evaluate(qrels, runs, measures, per_query=True, **options).fetchall()
        except duckrank.DuckrankError as error:
            return f"{type(error).__name__}: {error}"


def outcome(monkeypatch, rendering: bool, qrels, run, measures: list[str], **conventions):
    """{(measure, query_id): value or text} of one run's per-query rows, or its error."""
    rows = per_query_rows(monkeypatch, rendering, qrels, run, measures, **conventions)
    if isinstance(rows, str):
        return rows
    return {(measure, query_id): text if text is not None else value
            for query_id, measure, value, *texts in rows for text in [texts[0] if texts else None]}


def same(lean, macro) -> bool:
    if isinstance(lean, str) or isinstance(macro, str):
        return lean == macro
    return lean.keys() == macro.keys() and all(
        lean[key] == macro[key] or (isinstance(lean[key], float) and math.isnan(lean[key]) and math.isnan(macro[key]))
        for key in lean)


def frames(integer_ids: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    qrels = pd.DataFrame(QRELS, columns=["query_id", "doc_id", "relevance"])
    run = pd.DataFrame(RUN, columns=["query_id", "doc_id", "score"])
    if integer_ids:  # ids as numbers: trec ties still break on the ids as text ('9' before '10')
        for frame in (qrels, run):
            frame["query_id"] = frame["query_id"].str[1:].astype("int64")
            frame["doc_id"] = frame["doc_id"].map(lambda d: sum(ord(c) for c in d))
    return qrels, run


# `-m "not slow"` keeps two settings: every ranking metric with all its options set at once under
# ties := 'input' (and -M, empty, unjudged, duplicates), and the gain convention. The full run adds
# each option on its own (defaults), ties := 'average' (each refused measure alone) and the other tie rules.
FAST_SETTINGS = ("ties=input,empty=skip,unjudged=skip,max_rank=2,duplicates=max", "gain=exp")


@pytest.mark.parametrize("setting", [setting if setting in FAST_SETTINGS else pytest.param(setting, marks=pytest.mark.slow)
                                     for setting in SETTINGS])
def test_lean_and_macro_paths_agree_bit_for_bit(monkeypatch, rendered, setting):
    qrels, run = frames()
    measures = list(dict.fromkeys(case.measure for case in cases_for(setting)
                                  if "sampled" not in dict(case.options)))  # sampled lists call the macros
    lean = outcome(monkeypatch, True, qrels, run, measures, **SETTINGS[setting])
    if isinstance(lean, str):  # a refusal (ties := 'average'): each measure alone, on both paths
        pairs = [(outcome(monkeypatch, True, qrels, run, [m], **SETTINGS[setting]),
                  outcome(monkeypatch, False, qrels, run, [m], **SETTINGS[setting])) for m in measures]
    else:
        pairs = [(lean, outcome(monkeypatch, False, qrels, run, measures, **SETTINGS[setting]))]
    assert rendered, "the lean rendering was not used"
    differing = [(lean, macro) for lean, macro in pairs if not same(lean, macro)]
    assert not differing, differing[0]


@pytest.mark.parametrize("conventions", [{}, {"ties": "doc_ascending", "max_rank": 3}, {"unjudged": "skip"}])
def test_integer_ids_agree(monkeypatch, rendered, conventions):
    qrels, run = frames(integer_ids=True)
    measures = ["ndcg@10", "map", "recip_rank", "P@3", "bpref", "ERR@5", "AUC", "Rprec", "relstring.5"]
    lean = outcome(monkeypatch, True, qrels, run, measures, **conventions)
    assert rendered and not isinstance(lean, str), lean
    assert same(lean, outcome(monkeypatch, False, qrels, run, measures, **conventions))


def keyed_rows(monkeypatch, rendering: bool, qrels, runs, measures: list[str], **options) -> list[tuple] | str:
    """Every per-query row of several runs or segments (a NaN as text, so rows compare), or the error."""
    rows = per_query_rows(monkeypatch, rendering, qrels, runs, measures, **options)
    if isinstance(rows, str):
        return rows
    return sorted(tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row) for row in rows)


@pytest.mark.parametrize("keyed", ["runs", "segments", "runs_complete", "duplicate_in_second_run"])
def test_several_runs_and_segments_agree(monkeypatch, rendered, keyed):
    """Queries keyed by run and segment render lean too: the same rows as the macro path, the same
    error, which names the run that has the problem."""
    qrels, run = frames()
    reversed_run = run.assign(score=-run["score"])[run["query_id"] != "q2"]  # a qrels query it misses
    measures = ["ndcg@10", "map", "recip_rank", "P@3", "bpref", "ERR@5", "AUC", "Rprec", "relstring.5"]
    options = {"complete": True} if keyed == "runs_complete" else {}
    if keyed == "segments":
        runs, options = run.assign(segment=run["query_id"].str[-1:].isin(["1", "3"])), {"by": "segment"}
    elif keyed == "duplicate_in_second_run":
        runs = {"a": run, "b": pd.concat([reversed_run, reversed_run.iloc[[0]]])}
    else:
        runs = {"a": run, "b": reversed_run}
    lean = keyed_rows(monkeypatch, True, qrels, runs, measures, **options)
    assert rendered, "the lean rendering was not used"
    assert isinstance(lean, str) == (keyed == "duplicate_in_second_run"), lean
    assert lean == keyed_rows(monkeypatch, False, qrels, runs, measures, **options)
    if isinstance(lean, str):  # the run's own rows, not the view of every run nor a {run, query} key
        assert "has 2 rows for query_id 'q1', doc_id 'd1'" in lean and "duckrank_" not in lean, lean


@pytest.mark.parametrize("broken", ["duplicate", "null_doc", "nan_score", "qrels_conflict", "no_common"])
def test_data_errors_read_the_same(monkeypatch, rendered, broken):
    qrels, run = frames()
    if broken == "duplicate":
        run = pd.concat([run, run.iloc[[0]]])
    elif broken == "null_doc":
        run.loc[2, "doc_id"] = None
    elif broken == "nan_score":
        run.loc[3, "score"] = math.nan
    elif broken == "qrels_conflict":
        qrels = pd.concat([qrels, pd.DataFrame([("q1", "d1", 0)], columns=qrels.columns)])
    else:
        run["query_id"] = "other"
    lean = outcome(monkeypatch, True, qrels, run, ["map", "ndcg@10"])
    assert rendered and isinstance(lean, str), lean
    assert lean == outcome(monkeypatch, False, qrels, run, ["map", "ndcg@10"])


def test_a_pass_is_rendered_the_second_time_a_process_asks_for_it(monkeypatch):
    """A single call (the CLI) keeps the macros: rendering costs more than binding them once."""
    passes = []
    lean_pass_sql = _duckdb_sql.lean_pass_sql
    monkeypatch.setattr(_duckdb_sql, "lean_pass_sql", lambda *args: passes.append(lean_pass_sql(*args)) or passes[-1])
    qrels, run = frames()
    measures = ["P@7", "recall@7"]  # asked for by no other test
    first, second = (duckrank.evaluate(qrels, run, measures) for _ in range(2))
    # no macro call: the only "duckrank." left is in the message saying which macro words a data problem
    assert passes[0] is None and "duckrank." not in passes[1].replace(lean.CHECK_FIRED, "") and first == second


def test_a_single_call_does_not_import_sqlglot():
    """Importing sqlglot is most of a render's cost: a process that evaluates once never pays it."""
    script = ("import sys, duckrank; duckrank.evaluate({'q1': {'d1': 1}}, {'q1': {'d1': 1.0, 'd2': 0.5}}, ['map', "
              "'ndcg@10']); print('sqlglot' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", done.stderr


@pytest.fixture
def kept_passes(monkeypatch, tmp_path):
    """A cache folder of this test's own, and a process that has rendered nothing yet: each call
    to the lean rendering recorded as the pass it served (None: the macros were called)."""
    monkeypatch.setenv("DUCKRANK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(lean, "_templates", {})
    monkeypatch.setattr(lean, "_asked", Counter())
    served = []
    lean_pass_sql = _duckdb_sql.lean_pass_sql
    monkeypatch.setattr(_duckdb_sql, "lean_pass_sql", lambda *args: served.append(lean_pass_sql(*args)) or served[-1])
    return served


def forget_this_process(monkeypatch):
    """As a new process: nothing rendered in memory, and no render possible (a stored pass or the macros)."""
    monkeypatch.setattr(lean, "_templates", {})
    monkeypatch.setattr(lean, "_asked", Counter())
    monkeypatch.setattr(lean, "_pass_template", lambda *key: pytest.fail("rendered again"))


def test_a_rendered_pass_serves_later_processes_from_their_first_call(monkeypatch, tmp_path, kept_passes):
    qrels, run = frames()
    measures = ["ndcg@10", "map", "recip_rank", "P@10"]
    macro = outcome(monkeypatch, False, qrels, run, measures)
    assert duckrank.evaluate(qrels, run, measures) == duckrank.evaluate(qrels, run, measures)
    assert kept_passes[0] is None and kept_passes[1] is not None and len(list(tmp_path.glob("lean-*.json"))) == 1
    forget_this_process(monkeypatch)
    assert same(outcome(monkeypatch, True, qrels, run, measures), macro)
    assert len(kept_passes) == 3 and kept_passes[-1] is not None  # the stored pass, from the first call


@pytest.mark.parametrize("damage", ["garbage", "cut short", "another key"])
def test_a_damaged_stored_pass_is_not_used(monkeypatch, tmp_path, kept_passes, damage):
    qrels, run = frames()
    measures = ["ndcg@5", "P@5"]
    for _ in range(2):
        duckrank.evaluate(qrels, run, measures)
    [stored] = tmp_path.glob("lean-*.json")
    text = stored.read_text()
    stored.write_text({"garbage": "\x00\xff not json", "cut short": text[: len(text) // 2],
                       "another key": text.replace("ndcg", "ndcg_other")}[damage])
    forget_this_process(monkeypatch)
    assert same(outcome(monkeypatch, True, qrels, run, measures), outcome(monkeypatch, False, qrels, run, measures))
    assert len(kept_passes) == 3 and kept_passes[-1] is None  # the first call after the damage called the macros


def test_a_large_run_renders_at_its_first_call_and_no_cache_folder_keeps_nothing(monkeypatch, tmp_path, kept_passes):
    monkeypatch.setenv("DUCKRANK_CACHE_DIR", "")
    monkeypatch.setattr(lean, "RENDER_AT_ROWS", 5)
    qrels, run = frames()
    measures = ["ndcg@7", "recall@5"]
    assert same(outcome(monkeypatch, True, qrels, run, measures), outcome(monkeypatch, False, qrels, run, measures))
    assert kept_passes[0] is not None and not list(tmp_path.iterdir())


def test_an_unwritable_cache_folder_costs_only_a_render(monkeypatch, tmp_path, kept_passes):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder would be")
    monkeypatch.setenv("DUCKRANK_CACHE_DIR", str(blocked / "cache"))
    qrels, run = frames()
    values = [duckrank.evaluate(qrels, run, ["ndcg@3", "P@2"]) for _ in range(2)]
    assert values[0] == values[1] and kept_passes[1] is not None


def test_the_stored_passes_are_bounded_the_oldest_going_first(monkeypatch, tmp_path, kept_passes):
    monkeypatch.setattr(lean, "MAX_STORED_PASSES", 3)
    qrels, run = frames()
    for k in range(1, 6):  # five passes, each asked for twice: rendered and stored at its second call
        for _ in range(2):
            duckrank.evaluate(qrels, run, [f"P@{k}"])
    kept = [json.loads(path.read_text())["key"] for path in tmp_path.glob("lean-*.json")]
    assert sorted(k for k in range(1, 6) for key in kept if f"precision_of(q, {k})" in key) == [3, 4, 5]


# duckrank.rank_queries_lean against duckrank.rank_queries: the arguments it takes (after qrels and
# run), each row of this table changing several at once from the defaults.
LEAN_RELATION_ARGUMENTS = [
    # rel_level, max_rank, complete, gain, gain_map, g_max, judged_only
    (1, "NULL", "false", "'linear'", EMPTY_GAIN_MAP, "NULL", "true"),
    (2, "2", "true", "'exp'", EMPTY_GAIN_MAP, "4", "false"),
    (1, "4", "false", "'linear'", "MAP {1.0: 3.0, 2.0: 9.0}", "NULL", "false"),
    (0, "0", "true", "'linear'", EMPTY_GAIN_MAP, "NULL", "true"),
    (3, "NULL", "true", "'exp'", EMPTY_GAIN_MAP, "NULL", "false"),
]


@pytest.fixture(scope="module")
def relations_con():
    """The front door's hostile data (plus a judgment given twice alike, which is no conflict), with
    integer ids beside it, and the library loaded."""
    con = duckrank.connect()
    qrels, run = frames()
    qrels = pd.concat([qrels, qrels.iloc[[6]]])  # q2 d1 judged 1 twice
    integer_qrels, integer_run = frames(integer_ids=True)
    for name, frame in {"qrels": qrels, "run": run, "integer_qrels": integer_qrels, "integer_run": integer_run}.items():
        con.register(f"{name}_frame", frame)
        con.execute(f"CREATE TEMP TABLE {name} AS SELECT * FROM {name}_frame")
    yield con
    con.close()


@pytest.mark.parametrize("arguments", LEAN_RELATION_ARGUMENTS, ids=lambda row: "-".join(map(str, row)))
@pytest.mark.parametrize("ids", ["text", "integer"])
def test_the_lean_relation_gives_rank_queries_rows(relations_con, arguments, ids):
    """rank_queries_lean's rows are rank_queries' under ties := 'trec', unjudged := 'nonrelevant' and
    duplicates := 'error', value for value: every ranking measure reads only these rows."""
    rel_level, max_rank, complete, gain, gain_map, g_max, judged_only = arguments
    qrels, run = ("'integer_qrels'", "'integer_run'") if ids == "integer" else ("'qrels'", "'run'")
    general = relations_con.execute(
        f"SELECT * FROM duckrank.rank_queries({qrels}, {run}, {rel_level}, 'trec', {max_rank}, {complete}, "
        f"'nonrelevant', {gain}, {gain_map}, {g_max}, 'error', {judged_only}) ORDER BY query_id").fetchall()
    flat = relations_con.execute(
        f"SELECT * FROM duckrank.rank_queries_lean({qrels}, {run}, {rel_level}, {max_rank}, {complete}, {gain}, "
        f"{gain_map}, {g_max}, {judged_only}) ORDER BY query_id").fetchall()
    assert len(general) >= 5 and flat == general


@pytest.mark.parametrize("problem", [
    "run_null_doc", "run_nan_score", "run_duplicate_only_in_run", "qrels_conflict_only_in_qrels",
    "qrels_null_query", "qrels_null_grade"])
def test_the_lean_relation_refuses_what_rank_queries_words(relations_con, problem):
    """Each data problem rank_queries words (in a query both hold, or in one only the run or only the
    qrels holds) makes rank_queries_lean raise, saying rank_queries names it."""
    run = "SELECT * FROM run"
    qrels = "SELECT * FROM qrels"
    broken = {
        "run_null_doc": ("run", f"{run} UNION ALL SELECT 'q1', NULL, 0.1"),
        "run_nan_score": ("run", f"{run} UNION ALL SELECT 'q1', 'dn', 'NaN'::DOUBLE"),
        "run_duplicate_only_in_run": ("run", f"{run} UNION ALL SELECT 'q5', 'd1', 0.3"),
        "qrels_conflict_only_in_qrels": ("qrels", f"{qrels} UNION ALL SELECT 'q4', 'd1', 2"),
        "qrels_null_query": ("qrels", f"{qrels} UNION ALL SELECT NULL, 'd1', 1"),
        "qrels_null_grade": ("qrels", f"{qrels} UNION ALL SELECT 'q2', 'dz', NULL"),
    }[problem]
    relations_con.execute(f"CREATE OR REPLACE TEMP VIEW broken AS {broken[1]}")
    qrels_view, run_view = ("'broken'", "'run'") if broken[0] == "qrels" else ("'qrels'", "'broken'")
    with pytest.raises(duckdb.Error) as worded:
        relations_con.execute(f"SELECT count(*) FROM duckrank.rank_queries({qrels_view}, {run_view}, 1, 'trec', NULL, "
                              f"false, 'nonrelevant', 'linear', {EMPTY_GAIN_MAP}, NULL, 'error', true)").fetchall()
    with pytest.raises(duckdb.Error) as flat:
        relations_con.execute(f"SELECT count(*) FROM duckrank.rank_queries_lean({qrels_view}, {run_view}, 1, NULL, "
                              f"false, 'linear', {EMPTY_GAIN_MAP}, NULL, true)").fetchall()
    assert lean.CHECK_FIRED not in str(worded.value) and lean.CHECK_FIRED in str(flat.value), (worded.value, flat.value)


def test_shared_subexpressions_move_only_where_computed_for_every_row():
    """lean.shared_subexpressions computes a subtree once only when one of its places computes it for
    every row: one that only CASE branches compute (a log of zero would raise) stays where it is."""
    import sqlglot

    def shared(*values: str) -> tuple[list[str], list[str]]:
        moved, subtrees = lean.shared_subexpressions([sqlglot.parse_one(value, read="duckdb") for value in values])
        return [tree.sql("duckdb") for tree in moved], [tree.sql("duckdb") for tree in subtrees]

    assert shared("CASE WHEN q.x = 0 THEN 0 ELSE ln(q.x) + ln(q.x) END") == (
        ["CASE WHEN q.x = 0 THEN 0 ELSE LN(q.x) + LN(q.x) END"], [])
    assert shared("coalesce(list_sum(q.docs), 0) / q.n", "CASE WHEN q.n > 0 THEN list_sum(q.docs) END") == (
        ["COALESCE(q.s0, 0) / q.n", "CASE WHEN q.n > 0 THEN q.s0 END"], ["LIST_SUM(q.docs)"])
    # a lambda's body may never run (an empty list): its subtrees move only if computed elsewhere too
    assert shared("list_transform(q.docs, lambda d: ln(q.k) * d)", "ln(q.k) + 1")[1] == ["LN(q.k)"]
    assert shared("list_transform(q.docs, lambda d: ln(q.k) * d)", "q.a OR ln(q.k) > 1")[1] == []
    # a subtree reading a lambda's variable, or another column than q's, stays
    assert shared("list_transform(q.docs, lambda d: ln(d) + ln(d))")[1] == []
    assert shared("ln(r.k) + ln(r.k)")[1] == []
    # largest first: a place inside a subtree already moved goes with it, so ln(q.k) is left with one
    # place of its own and stays; with two of its own it moves too (the larger one keeps its copy)
    assert shared("ln(q.k) * q.a + 1", "ln(q.k) * q.a + 1", "ln(q.k) - 1") == (
        ["q.s0", "q.s0", "LN(q.k) - 1"], ["LN(q.k) * q.a + 1"])
    assert shared("ln(q.k) * q.a + 1", "ln(q.k) * q.a + 1", "ln(q.k) - 1", "ln(q.k) - 2") == (
        ["q.s0", "q.s0", "q.s1 - 1", "q.s1 - 2"], ["LN(q.k) * q.a + 1", "LN(q.k)"])


@pytest.mark.parametrize("setting", ["defaults", "ties=input,empty=skip,unjudged=skip,max_rank=2,duplicates=max",
                                     "ties=pessimistic,empty=nan,max_rank=2,complete=true"])
@pytest.mark.parametrize("rendering", [True, False], ids=["lean", "macros"])
def test_a_run_scored_whole_is_summarised_as_keyed_rows_are(monkeypatch, rendered, setting, rendering):
    """One run scored whole is summarised straight from its passes (run_summary_sql); asked for its
    spread too (std=True), it goes through summary_sql's grouped per-query rows. The means, sums,
    counts and geometric means agree bit for bit, NULL values (empty := 'skip') and unscored
    measures (NaN, 0) included."""
    qrels, run = frames()
    options = SETTINGS[setting]
    # a few measures of each summary rule (mean, sum; count and geometric mean by name), over two passes
    by_rule: dict[str, list[str]] = {}
    for case in cases_for(setting):
        measure = parse_measure(case.measure)
        if "sampled" not in dict(case.options) and measure.metric.value != "text":
            by_rule.setdefault(measure.summary, []).append(case.measure)
    measures = [*(spelling for spellings in by_rule.values() for spelling in dict.fromkeys(spellings[:3])),
                "P(rel=2)@5", "num_q", "gm_map", "gm_bpref"]
    if not rendering:
        monkeypatch.setattr(evaluation, "lean_case", lambda *args: False)
    for qrels_rows in (qrels, qrels[qrels.query_id == "q4"]):  # the second shares no query with the run
        try:
            whole = duckrank.evaluate(qrels_rows, run, measures, **options)
        except duckrank.DuckrankError as error:
            with pytest.raises(type(error), match="no query"):
                duckrank.evaluate(qrels_rows, run, measures, std=True, **options)
            continue
        spread = duckrank.evaluate(qrels_rows, run, measures, std=True, **options)
        keyed = {name: value for name, value in spread.items() if name in whole}
        assert whole.keys() == keyed.keys() and len(whole) > 8
        assert all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(whole.values(), keyed.values()))


@pytest.mark.parametrize("sql, expected", [
    # duckrank.ratio reads its denominator once, as a lambda's argument: a rendering takes the plain body
    ("duckrank.ratio(q.hits, q.num_rel + 1)",
     "CASE WHEN (q.num_rel + 1) IS NULL OR (q.num_rel + 1) = 0 THEN 0.0 ELSE CAST(q.hits AS DOUBLE) / (q.num_rel + 1) END"),
    # a field of the variable is the value's field; a struct key or column of its name is not the variable
    ("list_transform([q.row], lambda v: {'v': v.v + t.v})[1]", "{'v': q.row.v + t.v}"),
    # a variable an inner lambda binds again, a list of two, another index: left as they are
    ("list_transform([q.x], lambda v: list_transform(q.docs, lambda v: v))[1]",
     "LIST_TRANSFORM([q.x], v -> LIST_TRANSFORM(q.docs, v -> v))[1]"),
    ("list_transform([q.x, q.y], lambda v: v + 1)[1]", "LIST_TRANSFORM([q.x, q.y], v -> v + 1)[1]"),
    ("list_transform([q.x], lambda v: v + 1)[2]", "LIST_TRANSFORM([q.x], v -> v + 1)[2]"),
])
def test_a_one_element_lambda_renders_as_its_body(sql, expected):
    """The inliner applies a macro body list_transform([x], lambda v: body)[1], a macro's way to have
    DuckDB bind x once, as body with x for v: a lean statement and Spark compute a repeated value
    once themselves."""
    import sqlglot

    from duckrank._inliner import _applied, inline

    tree = sqlglot.parse_one(sql, read="duckdb")
    rendered = inline(tree) if sql.startswith("duckrank.") else _applied(tree)
    assert rendered.sql("duckdb") == sqlglot.parse_one(expected, read="duckdb").sql("duckdb")
