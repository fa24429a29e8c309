"""The registry is the one declaration of every measure: what it generates is up to date, and no
measure lacks what a measure must have (a scalar macro, a golden case, a README row, an oracle)."""

from __future__ import annotations

import re
import string
from pathlib import Path

import pytest

from duckrank import _generate
from duckrank._library import FRONT_DOORS, FUSION_DOORS, GENERATED, connect, library_files, sql_dir
from duckrank.measures import COMMON_OPTIONS, parse_measure, trec_eval_measures
from duckrank.options import CONVENTIONS, OPTIONS, SAMPLED_OPTIONS, SUBTOPIC_OPTIONS
from duckrank.registry import LOG_MACROS, METRICS

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text(encoding="utf-8")
GENERATED_SQL = sql_dir() / FRONT_DOORS
GENERATED_FUSION_SQL = sql_dir() / FUSION_DOORS


@pytest.fixture(scope="module")
def con():
    connection = connect()
    yield connection
    connection.close()


def test_generated_sql_and_readme_are_up_to_date():
    stale = [str(path) for path, text in _generate.targets().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"run `python -m duckrank._generate`: {stale} are out of date"


def test_every_aggregate_names_its_options_and_an_existing_macro(con):
    functions = {name for (name,) in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = 'duckrank'").fetchall()}
    for metric in METRICS.values():
        placeholders = {field for _, field, _, _ in string.Formatter().parse(metric.aggregate) if field}
        allowed = set(metric.options) | ({"log", "rel_level"} if metric.summary == "log" else set())
        if metric.reads == "top_k":  # its table macro over the top lists and inputs, with the empty policy
            allowed |= {"users", "train", "items", "empty"}
        assert placeholders <= allowed, (metric.name, placeholders - allowed)
        # every option reaches the SQL: as a placeholder, through duckrank.ranked (gains, g_max) or
        # duckrank.rank_subtopics (alpha), or through duckrank.sampled_value (a measure with a value at
        # one relevant item's rank)
        sampled = {field for _, field, _, _ in string.Formatter().parse(metric.sampled) if field}
        assert sampled <= set(metric.options), (metric.name, sampled - set(metric.options))
        assert bool(metric.sampled) == (set(SAMPLED_OPTIONS) <= set(metric.options)), metric.name
        assert set(metric.options) <= placeholders | {"gain", "gain_map", "g_max", *SUBTOPIC_OPTIONS} | (
            set(SAMPLED_OPTIONS) if metric.sampled else set()), metric.name
        for macro in re.findall(r"duckrank\.(\w+)\(", metric.sampled):
            assert macro in functions, (metric.name, macro)
        for macro in re.findall(r"duckrank\.(\w+)\(", metric.aggregate):
            assert macro in functions, (metric.name, macro)
        if metric.source:
            assert re.search(rf"MACRO duckrank\.{re.escape(metric.aggregate.split('(')[0].split('.')[-1])}\(",
                             (REPO / metric.source).read_text()) \
                or metric.aggregate.startswith("q."), metric.name


def test_every_option_is_used_and_every_spelling_is_unambiguous():
    used = {option for metric in METRICS.values() for option in metric.options}
    used |= {option for _, _, options in LOG_MACROS.values() for option in options}
    assert used == set(OPTIONS), set(OPTIONS) ^ used
    seen: dict[tuple[str, str], str] = {}
    for metric in METRICS.values():
        for family, spellings in (("trec_eval", metric.trec_eval), ("other", (*metric.ir_measures, *metric.ranx,
                                                                              *metric.recommenders, *metric.aliases))):
            for spelling in spellings:
                key = (family, spelling.name)  # the other families in their own case first (ranx's bpref)
                assert seen.setdefault(key, metric.name) == metric.name, (key, seen[key], metric.name)
                for option, _ in spelling.fixed:
                    assert option in metric.options or option in COMMON_OPTIONS, (metric.name, spelling.name, option)


# lower-case names that spellings of two metrics share, told apart by their case
SHARED_NAMES = {name for name in {s.name.lower() for m in METRICS.values() for s in m.spellings()}
                if len({m.name for m in METRICS.values() for s in m.spellings() if s.name.lower() == name}) > 1}


@pytest.mark.parametrize("name", list(METRICS))
def test_every_spelling_parses_to_its_metric(name):
    metric = METRICS[name]
    for spelling in metric.trec_eval:
        text = spelling.name + {"k": ".5", "mult": ".0.5", "recall": ".0.5"}.get(spelling.parameter, "")
        assert parse_measure(text).metric is metric, text
    for spelling in (*metric.ir_measures, *metric.ranx, *metric.recommenders, *metric.aliases):
        cut = metric.cutoff == "k" and spelling.cutoff or spelling.ignores_cutoff
        text = spelling.name + ("@5" if cut else "")
        assert parse_measure(text).metric is metric, text
        if spelling.name.lower() not in SHARED_NAMES:  # bpref@5 is ranx's, BPREF@5 ir_measures' Bpref
            assert parse_measure(text.upper()).metric is metric, text.upper()


def test_every_command_line_collision_is_in_the_readme_table_and_reaches_its_measure():
    """A name a trec_eval family name shadows on the command line (ranx's recall) has a row in the
    README's collision table naming the spelling that reaches it there, which parses to its measure."""
    shadowed = {s.name: (m, s.command_line) for m in METRICS.values() for s in m.spellings() if s.command_line}
    assert shadowed == {"recall": (METRICS["recall"], "set_recall")}
    for name, (metric, spelling) in shadowed.items():
        row = re.search(rf"^\| `{re.escape(name)}` \|.*$", README, re.M)
        assert row and f"`{spelling}`" in row[0], name
        assert parse_measure(spelling).metric is metric and parse_measure(spelling).params == parse_measure(name).params
        assert trec_eval_measures([name]) != [name]  # the family on the command line


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_has_a_readme_row(name):
    """(Its hand-computed case: tests/test_sql_golden.py's test_every_metric_has_a_golden_case.)"""
    cell = f"`{name}`" if METRICS[name].table_macro else f"{name} (summary only)"
    assert f"\n| {cell} |" in README, f"{name} has no row in the README's measure table"


def test_every_table_macro_of_the_library_is_a_registered_measure_or_documented(con):
    macros = {name for (name,) in con.execute(
        "SELECT DISTINCT function_name FROM duckdb_functions() WHERE schema_name = 'duckrank' "
        "AND function_type = 'table_macro'").fetchall()}
    generated = {match[1] for path in (GENERATED_SQL, GENERATED_FUSION_SQL)
                 for statement in path.read_text(encoding="utf-8").split(";\n")
                 if (match := re.search(r"MACRO duckrank\.(\w+)\(.*\) AS TABLE", statement, re.S))}
    # every public (generated) macro is a measure, a group or a log helper, and documented
    for macro in generated:
        assert f"`{macro}`" in README or f"duckrank.{macro}(" in README, macro
    # the hand-written table macros are the relations the generated ones wrap, compare's (and Tukey's), and the
    # input reshapers (documented in the README's recommender section)
    assert macros - generated == {"rank_queries", "rank_queries_lean", "rank_subtopics", "query_auc_of_log", "gauc_of_log", "global_auc_of_log",
                                  "confusion_of_log", "compare", "p_adjust", "tukey_hsd", "tukey_verdicts", "compared_values", "run_from_lists", "run_excluding", "run_without",
                                  "sampled_estimators",
                                  # beyond accuracy (sql/42_beyond_accuracy.sql): what its table macros read
                                  *(f"{name}_of" for name, metric in METRICS.items() if metric.reads == "top_k"),
                                  "training_pairs", "item_popularity", "recommended", "popularity_bias_of",
                                  "summarised_recommendations", "shared_users", "run_top", "top_of",
                                  # fusion (sql/70_fusion.sql): what the generated duckrank.fuse_<method> call
                                  "fusion_normalized", "fusion_ranked", "fusion_dense", "fusion_training",
                                  "fusion_rank_probabilities", "fusion_comb", "fusion_weighted", "fusion_by_rank",
                                  "fusion_borda", "fusion_condorcet", "fusion_by_position", "fusion_by_segment"}


def test_defaults_live_once():
    """No hand-written SQL file repeats an option's default: the registry's are the generated
    macros' own, and the hand-written macros take every option as an argument."""
    for path in library_files():
        if path.name in GENERATED:
            continue
        for name, signature in re.findall(r"CREATE OR REPLACE MACRO duckrank\.(\w+)\(([^)]*)\)", path.read_text()):
            named = set(re.findall(r"(\w+) :=", signature))
            if path.name == "50_compare.sql":  # compare's correction is of p-values (holm, bh), not a sampled
                named -= {"correction", "alpha"}  # measure's; its alpha a significance level, not a diversity one's
            assert not named & (set(OPTIONS) | set(CONVENTIONS)), (path.name, name, named)
