"""Generate from the registry: sql/55_option_checks.sql (the option checks), sql/60_measures.sql
(every public table macro) and the README's measure and convention tables.

    python -m duckrank._generate          # rewrite what is out of date
    python -m duckrank._generate --check  # exit 1 if anything is out of date (a test runs this check)

The generated macros hold no math: each checks its options, then calls the hand-written relation
(duckrank.rank_queries, or a log macro of sql/40_auc.sql) and the measure's scalar macro, with the
registry's defaults as its own. Shell users call these; duckrank's Python calls the same scalar
macros over the same relation, so the two doors cannot disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path

from duckrank._library import FRONT_DOORS, FUSION_DOORS, OPTION_CHECKS, sql_dir
from duckrank.options import (CONVENTIONS, JUDGED_ONLY, OPTIONS, RANK_QUERIES_ARGUMENTS, RANKED_OPTIONS, Param,
                              default_text)
from duckrank.registry import FUSION_METHODS, FUSION_PARAMS, GROUPS, LOG_MACROS, METRICS, FusionMethod

_INDENT = "        "



def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _check_macro(param: Param) -> str:
    """duckrank.check_<option>(<option>, <what else its check reads>): the problem with a value, NULL
    if it is valid."""
    return (f"CREATE OR REPLACE MACRO {param.check_call()} AS\n"
            f"    {param.check};\n"
            f"COMMENT ON MACRO duckrank.check_{param.name} IS {_quote(f'the problem with the value given as {param.name}, NULL if none')};\n")


def _checks_macro(name: str, params: list[Param], what: str) -> str:
    """duckrank.<name>(p := default, ...): every problem with the given values as text, one per
    line, NULL when all are valid."""
    signature = _wrap(_signature(params))
    calls = ",\n".join(f"        {p.check_call()}" for p in params if p.check_call())
    return (f"CREATE OR REPLACE MACRO duckrank.{name}({signature}) AS\n"
            f"    nullif(concat_ws(chr(10),\n{calls}), '');\n"
            f"COMMENT ON MACRO duckrank.{name} IS {_quote(f'check {what}; returns the problems as text, NULL if none')};\n")


def _signature(params: list[Param]) -> str:
    return ", ".join(f"{p.name} := {p.default_sql}" for p in params)


def _wrap(text: str, width: int = 110) -> str:
    """A long parameter list broken over lines, as the hand-written macros are."""
    lines, line = [], ""
    for part in text.split(", "):
        candidate = f"{line}, {part}" if line else part
        if len(candidate) > width and line:
            lines.append(line + ",")
            line = part
        else:
            line = candidate
    lines.append(line)
    return f"\n{_INDENT}".join(lines)


def _guard(convention_names: list[str], option_names: list[str], sampled: bool = False, run: bool = True) -> str:
    """The guard CTE that raises every problem of the options (and of the run's scores, for a macro
    that ranks a run) before any measure is read."""
    # each of the macro's own options by its own check: duckrank.option_problems would bind the
    # checks of all 40 options, 70 ms of every call
    params = [*(CONVENTIONS[n].param for n in convention_names), *(OPTIONS[n] for n in option_names)]
    calls = [param.check_call() for param in params if param.check_call()]
    if sampled:
        calls.append("duckrank.sampled_problems(sampled, correction, max_rank)")
    if run:
        calls.append("duckrank.score_problems(run)")
    # the problems as a column: see duckrank.raise_problems
    return (f"WITH guard AS (SELECT duckrank.raise_problems(problems) AS fired FROM (SELECT concat_ws(chr(10),\n"
            f"{_INDENT}{f',{chr(10)}{_INDENT}'.join(calls)}) AS problems))")


def _ranked_arguments(given: set[str], judged_only: str) -> str:
    """rank_queries' arguments: the macro's own parameters where it has them, else the defaults."""
    values = []
    for name in RANK_QUERIES_ARGUMENTS:
        if name == "judged_only":
            values.append(judged_only)
        elif name in given:
            values.append(name)
        else:
            values.append((CONVENTIONS[name].param if name in CONVENTIONS else OPTIONS[name]).default_sql)
    return ", ".join(values)


def _ranked_macro() -> str:
    conventions = [c.param for c in CONVENTIONS.values() if c.name != "empty"]
    params = [*conventions, *(OPTIONS[n] for n in RANKED_OPTIONS), JUDGED_ONLY]
    names = {p.name for p in params}
    return (f"CREATE OR REPLACE MACRO duckrank.ranked(qrels, run, {_wrap(_signature(params))}) AS TABLE\n"
            f"{_guard([p.name for p in conventions], list(RANKED_OPTIONS))}\n"
            f"SELECT * FROM duckrank.rank_queries(qrels, run, {_ranked_arguments(names, 'judged_only')})\n"
            f"WHERE (SELECT count(fired) FROM guard) = 0;\n"
            f"COMMENT ON MACRO TABLE duckrank.ranked IS 'the ranked relation every measure reads: one row per query "
            f"with its ranking in rank order (docs), the ideal ranking as grade blocks (ideal), num_ret, num_rel, "
            f"num_nonrel, num_judged (sql/20_ranked.sql)';\n")


def _value(measure_name: str) -> str:
    """A measure's per-query value in a table macro: its scalar macro with the macro's parameters,
    under the empty policy (a text measure's value is text)."""
    aggregate = METRICS[measure_name].aggregate.format(**{name: name for name in OPTIONS})
    return METRICS[measure_name].per_query_value(aggregate, "q.num_rel", "empty")


def _sampled_table_macro(name: str, doc: str, measure: str) -> str:
    """duckrank.<name>(qrels, run, options..., sampled := NULL, correction := 'bv', conventions...) for
    a measure that can be corrected for sampling: the ranking read once for each query's negatives m
    (the systems the correction solves), once for the values."""
    metric = METRICS[measure]
    params = [*metric.params, *(c.param for c in CONVENTIONS.values())]
    names = {p.name for p in params}
    judged_only = "true" if metric.reads == "judged" else "false"
    values = metric.sampled.format(**{n: n for n in OPTIONS})
    plain = metric.aggregate.format(**{n: n for n in OPTIONS})
    value = metric.per_query_value(
        f"duckrank.sampled_value(q, {plain}, estimates.by_negatives, sampled, correction)",
        "q.num_rel", "empty")
    return (f"CREATE OR REPLACE MACRO duckrank.{name}(qrels, run, {_wrap(_signature(params))}) AS TABLE\n"
            f"{_guard(list(CONVENTIONS), list(metric.options), sampled=True)},\n"
            f"ranked AS MATERIALIZED (\n"
            f"    SELECT * FROM duckrank.rank_queries(qrels, run, {_ranked_arguments(names, judged_only)})\n"
            f"    WHERE (SELECT count(fired) FROM guard) = 0),\n"
            f"estimates AS (\n"
            f"    SELECT map_from_entries(list((negatives, estimate))) AS by_negatives\n"
            f"    FROM duckrank.sampled_estimators(list_transform(range(1, coalesce(sampled, 2) + 1), lambda rank: {values}),\n"
            f"        CASE WHEN sampled IS NULL OR correction = 'none' THEN []\n"
            f"             ELSE (SELECT list(DISTINCT duckrank.sampled_negatives(q)) FROM ranked q) END, correction)),\n"
            f"per_query AS (SELECT q.query_id, {value} AS value FROM ranked q CROSS JOIN estimates)\n"
            f"SELECT query_id, value FROM per_query WHERE value IS NOT NULL;\n"
            f"COMMENT ON MACRO TABLE duckrank.{name} IS {_quote(doc)};\n")


def _table_macro(name: str, doc: str, measures: list[str], columns: list[tuple[str, str]]) -> str:
    """duckrank.<name>(qrels, run, options..., conventions...) -> (query_id, columns...)."""
    if len(measures) == 1 and METRICS[measures[0]].sampled:
        return _sampled_table_macro(name, doc, measures[0])
    options = list(dict.fromkeys(option for m in measures for option in METRICS[m].options))
    params = [*(OPTIONS[o] for o in options), *(c.param for c in CONVENTIONS.values())]
    names = {p.name for p in params}
    judged_only = "true" if all(METRICS[m].reads == "judged" for m in measures) else "false"
    selected = ", ".join(f"{_value(measure)} AS {column}" for column, measure in columns)
    return (f"CREATE OR REPLACE MACRO duckrank.{name}(qrels, run, {_wrap(_signature(params))}) AS TABLE\n"
            f"{_guard(list(CONVENTIONS), options)},\n"
            f"per_query AS (\n"
            f"    SELECT q.query_id, {selected}\n"
            f"    FROM duckrank.rank_queries(qrels, run, {_ranked_arguments(names, judged_only)}) q\n"
            f"    WHERE (SELECT count(fired) FROM guard) = 0)\n"
            f"SELECT query_id, {', '.join(c for c, _ in columns)} FROM per_query WHERE {columns[0][0]} IS NOT NULL;\n"
            f"COMMENT ON MACRO TABLE duckrank.{name} IS {_quote(doc)};\n")


def _top_k_macro(metric) -> str:
    """duckrank.<name>(qrels, run, train[, items], options..., conventions...): the run ranked to its
    top k (duckrank.recommended), read by the hand-written duckrank.<name>_of of
    sql/42_beyond_accuracy.sql: per query (query_id, value), or one row (value) for a measure of the
    whole set of queries (coverage)."""
    params = [*metric.params, *(c.param for c in CONVENTIONS.values())]
    tables = [name for name in metric.inputs if name != "items"]
    items = ", items := NULL" if "items" in metric.inputs else ""
    call = metric.aggregate.format(users="users", train="train", items="items", empty="empty",
                                   **{p.name: p.name for p in metric.params})
    ranking = ", ".join(name for name in CONVENTIONS if name != "empty")
    columns = "CAST(value AS DOUBLE) AS value" if metric.summary == "overall" else "query_id, CAST(value AS DOUBLE) AS value"
    return (f"CREATE OR REPLACE MACRO duckrank.{metric.name}(qrels, run, {''.join(f'{t}, ' for t in tables)}"
            f"{_wrap(_signature(params))}{items}) AS TABLE\n"
            f"{_guard(list(CONVENTIONS), list(metric.options))},\n"
            f"users AS MATERIALIZED (\n"
            f"    SELECT * FROM duckrank.recommended(qrels, run, k, {ranking}, {_quote(metric.name)})\n"
            f"    WHERE (SELECT count(fired) FROM guard) = 0)\n"
            f"SELECT {columns} FROM {call}\n"
            f"WHERE value IS NOT NULL;\n"
            f"COMMENT ON MACRO TABLE duckrank.{metric.name} IS "
            f"{_quote(metric.doc + (' (one row)' if metric.summary == 'overall' else ' (per query)'))};\n")


def _subtopic_macro(metric) -> str:
    """duckrank.<name>(qrels, run, options..., conventions...) of a diversity measure: qrels with a
    subtopic column, ranked by duckrank.rank_subtopics (sql/34_diversity_metrics.sql)."""
    params = [*metric.params, *(c.param for c in CONVENTIONS.values())]
    value = _value(metric.name)
    alpha = "alpha" if "alpha" in metric.options else OPTIONS["alpha"].default_sql
    return (f"CREATE OR REPLACE MACRO duckrank.{metric.name}(qrels, run, {_wrap(_signature(params))}) AS TABLE\n"
            f"{_guard(list(CONVENTIONS), list(metric.options))},\n"
            f"per_query AS (\n"
            f"    SELECT q.query_id, {value} AS value\n"
            f"    FROM duckrank.rank_subtopics(qrels, run, rel_level, ties, max_rank, complete, unjudged, duplicates,\n"
            f"        {alpha}) q\n"
            f"    WHERE (SELECT count(fired) FROM guard) = 0)\n"
            f"SELECT query_id, value FROM per_query WHERE value IS NOT NULL;\n"
            f"COMMENT ON MACRO TABLE duckrank.{metric.name} IS "
            f"{_quote(f'{metric.doc} (per query; qrels with a subtopic column)')};\n")


def _log_macro(name: str, implementation: str, doc: str, options: tuple[str, ...]) -> str:
    params = [*(OPTIONS[o] for o in options), CONVENTIONS["rel_level"].param]
    call = implementation.format(log="log", **{p.name: p.name for p in params})
    return (f"CREATE OR REPLACE MACRO duckrank.{name}(log, {_signature(params)}) AS TABLE\n"
            f"{_guard(['rel_level'], list(options), run=False)}\n"
            f"SELECT * FROM {call} WHERE (SELECT count(fired) FROM guard) = 0;\n"
            f"COMMENT ON MACRO TABLE duckrank.{name} IS {_quote(doc)};\n")


_HEADER = "-- GENERATED by `python -m duckrank._generate` from duckrank/registry.py: do not edit by hand.\n"


def option_checks() -> str:
    """sql/55_option_checks.sql: the checks of the ranking conventions and the per-measure options,
    with the registry's messages; every front door runs them."""
    return "\n".join([
        _HEADER + "-- The option checks every front door runs: the table macros of 60_measures.sql, evaluate() and the CLI.\n",
        *(_check_macro(param) for param in [*(c.param for c in CONVENTIONS.values()), *OPTIONS.values()]
          if param.check),
        _checks_macro("convention_problems", [c.param for c in CONVENTIONS.values()], "the ranking conventions"),
        _checks_macro("option_problems", list(OPTIONS.values()), "the per-measure options"),
    ])


def front_doors() -> str:
    """sql/60_measures.sql: every public table macro, each with the registry's defaults."""
    parts = [
        _HEADER + "-- Every public table macro, each with the registry's defaults. The math is in the hand-written\n"
        "-- files: duckrank.rank_queries (20) and the scalar macros (30-41).\n",
        _ranked_macro(),
    ]
    for measure in METRICS.values():
        if measure.summary == "log":
            parts.append(_log_macro(measure.name, measure.aggregate, measure.doc, measure.options))
        elif measure.reads == "top_k":
            parts.append(_top_k_macro(measure))
        elif measure.reads == "subtopics":
            parts.append(_subtopic_macro(measure))
        elif measure.table_macro:
            columns = [("value", measure.name), *measure.also]
            parts.append(_table_macro(measure.name, f"{measure.doc} (per query)", [m for _, m in columns], columns))
    for name, (doc, members) in GROUPS.items():
        parts.append(_table_macro(name, doc, list(members), [(m, m) for m in members]))
    for name, (implementation, doc, options) in LOG_MACROS.items():
        parts.append(_log_macro(name, implementation, doc, options))
    return "\n".join(parts)


def _fusion_problems_macro() -> str:
    """duckrank.fusion_problems(method, run_count, norm := ..., <every parameter> := default): the
    problems with a method's arguments as text, one per line, NULL when all are valid; a parameter is
    checked only for the methods that take it."""
    params = list(FUSION_PARAMS.values())
    cases = []
    for param in params:
        users = [m.name for m in FUSION_METHODS.values() if param.name in m.params]
        applies = "" if param.name == "norm" else f"method IN ({', '.join(_quote(u) for u in users)}) AND "
        cases.append(f"        CASE WHEN {applies}NOT coalesce({param.condition}, false)\n"
                     f"             THEN {_quote(f'{param.name} must {param.requirement}; got ')} "
                     f"|| duckrank.show({param.name}) END")
    return (f"CREATE OR REPLACE MACRO duckrank.fusion_problems(method, run_count, {_wrap(_signature(params))}) AS\n"
            f"    nullif(concat_ws(chr(10),\n{','.join(chr(10) + c for c in cases).lstrip(chr(10))}), '');\n"
            f"COMMENT ON MACRO duckrank.fusion_problems IS 'check a fusion method''s arguments; returns the "
            f"problems as text, NULL if none';\n")


def fusion_signature(method: FusionMethod) -> str:
    """The public macro's parameters: the runs (and qrels), the parameters without a default in order,
    then norm and those with one, named."""
    required = [p for p in method.params if FUSION_PARAMS[p].default is None]
    named = [FUSION_PARAMS["norm"], *(FUSION_PARAMS[p] for p in method.params if p not in required)]
    return ", ".join(["runs", *(["qrels"] if method.trained and not method.learned else []), *required,
                      _signature(named)])


def _fusion_macro(method: FusionMethod) -> str:
    """duckrank.fuse_<name>(runs, ...): the method's arguments checked, then its macro of sql/70_fusion.sql."""
    values = {"runs": "runs", "qrels": "qrels", "norm": "norm",
              **{p: f"CAST({p} AS DOUBLE[])" if FUSION_PARAMS[p].type == "list" else p for p in method.params}}
    checked = ", ".join(f"{p} := {p}" for p in ("norm", *method.params))
    doc = f"{method.name} fusion of the runs (run, query_id, doc_id, score): {method.doc}"
    return (f"CREATE OR REPLACE MACRO duckrank.fuse_{method.name}({fusion_signature(method)}) AS TABLE\n"
            f"WITH guard AS (SELECT duckrank.raise_problems(problems) AS fired FROM (SELECT duckrank.fusion_problems(\n"
            f"{_INDENT}{_quote(method.name)}, (SELECT count(DISTINCT run) FROM query_table(CAST(runs AS VARCHAR))), {checked})"
            f" AS problems))\n"
            f"SELECT query_id, doc_id, score FROM {method.call.format(**values)}\n"
            f"WHERE (SELECT count(fired) FROM guard) = 0;\n"
            f"COMMENT ON MACRO TABLE duckrank.fuse_{method.name} IS {_quote(doc)};\n")


def generate_fusion() -> str:
    parts = ["-- GENERATED by `python -m duckrank._generate` from duckrank/registry.py (FUSION_METHODS): do not edit\n"
             "-- by hand. Each fusion method's public table macro, with the registry's defaults; the math is in\n"
             "-- sql/70_fusion.sql.\n",
             _fusion_problems_macro()]
    parts.extend(_fusion_macro(method) for method in FUSION_METHODS.values())
    return "\n".join(parts)


# The README's generated tables sit between these markers.
README_MARKERS = {"measures": ("<!-- registry:measures -->", "<!-- /registry:measures -->"),
                  "conventions": ("<!-- registry:conventions -->", "<!-- /registry:conventions -->"),
                  "fusion": ("<!-- registry:fusion -->", "<!-- /registry:fusion -->")}


def _code(items: list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items) or "—"


def _options_cell(metric) -> str:
    return ", ".join(f"{p.name} ({default_text(p.default)})" for p in metric.params) or "—"


def _scalar_macro(metric) -> str:
    """The scalar macro as a shell user calls it, e.g. ndcg_of(q, k, ideal)."""
    return metric.aggregate.replace("duckrank.", "").replace("{", "").replace("}", "")


def readme_tables() -> dict[str, str]:
    """The README's measure and convention tables, from the registry."""
    rows = ["| measure | trec_eval | ir_measures | ranx | MS Recommenders | other | definition | options (default) "
            "| scalar macro, file | oracle |", "|---|---|---|---|---|---|---|---|---|---|"]
    for metric in METRICS.values():
        shown = metric.shown_spellings()
        name = f"`{metric.name}`" if metric.table_macro else f"{metric.name} (summary only)"
        summary = {"sum": " Summary: sum.", "gmean": "", "count": "", "log": " One value per log.",
                   "none": " Text, per query only: no summary."}.get(metric.summary, "")
        definition = metric.doc.replace("|", "\\|") + summary
        rows.append(f"| {name} | {_code(shown['trec_eval'])} | {_code(shown['ir_measures'])} | {_code(shown['ranx'])} "
                    f"| {_code(shown['recommenders'])} | {_code(shown['other'])} | {definition} "
                    f"| {_options_cell(metric)} "
                    f"| `{_scalar_macro(metric)}`, {metric.source or '—'} | {metric.oracle} |")
    conventions = ["| convention | Python / SQL | CLI | values | default |", "|---|---|---|---|---|"]
    for convention in CONVENTIONS.values():
        param = convention.param
        values = _code(list(param.choices)) if param.choices else param.type
        conventions.append(f"| {param.doc} | `{param.name}` | {_code(list(convention.flags))} | {values} "
                           f"| `{default_text(param.default)}` |")
    fusion = ["| method | also spelt | a doc's fused score | parameters (default) | learns from qrels | SQL macro | source |",
              "|---|---|---|---|---|---|---|"]
    for method in FUSION_METHODS.values():
        params = ", ".join(f"{p} ({'required' if FUSION_PARAMS[p].default is None else FUSION_PARAMS[p].default})"
                           for p in method.given) or "—"
        fusion.append(f"| `{method.name}` | {_code(list(method.aliases))} | {method.doc} | {params} "
                      f"| {'yes' if method.trained else '—'} | `duckrank.fuse_{method.name}({fusion_signature(method)})` "
                      f"| {method.source} |")
    return {"measures": "\n".join(rows), "conventions": "\n".join(conventions), "fusion": "\n".join(fusion)}


def with_readme_tables(readme: str) -> str:
    """The README text with its generated tables replaced by the registry's."""
    for key, table in readme_tables().items():
        start, end = README_MARKERS[key]
        if start not in readme or end not in readme:
            raise RuntimeError(f"README.md lacks the markers {start} ... {end}")
        head, rest = readme.split(start, 1)
        readme = f"{head}{start}\n{table}\n{end}{rest.split(end, 1)[1]}"
    return readme


def targets() -> dict[Path, str]:
    """Each generated file and the text it should hold: sql/55_option_checks.sql, sql/60_measures.sql,
    sql/75_fusion_methods.sql, and the README's tables when the repository's README is there (an
    installed package has none)."""
    files = {sql_dir() / OPTION_CHECKS: option_checks(), sql_dir() / FRONT_DOORS: front_doors(),
             sql_dir() / FUSION_DOORS: generate_fusion()}
    readme = Path(__file__).resolve().parent.parent / "README.md"
    if readme.exists():
        files[readme] = with_readme_tables(readme.read_text(encoding="utf-8"))
    return files


def main(argv: list[str]) -> int:
    stale = []
    for path, text in targets().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if "--check" in argv:
            stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date: run `python -m duckrank._generate`", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
