"""Fuse several runs into one, with ranx's methods and normalisations; choose a method's parameters
on qrels as ranx.optimize_fusion does.

    import duckrank
    fused = duckrank.fuse(["bm25.parquet", "dense.parquet"], method="rrf")
    fused.df()                       # query_id, doc_id, score
    duckrank.evaluate("qrels.parquet", fused, ["ndcg@10"])

Python reads the runs, checks the arguments and composes; the math is in sql/70_fusion.sql, behind the
public macros duckrank.fuse_<method> generated from duckrank.registry.FUSION_METHODS, which a DuckDB
shell calls the same way.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import duckdb

from duckrank._checks import check_id_types
from duckrank._library import fusion_cursor, interruptible
from duckrank._sql import fresh_name, quote_identifier, sql_literal
from duckrank.errors import InputError, Option, OptionError, Problem, one_per_line, quoted, subject
from duckrank.evaluation import evaluate
from duckrank.inputs import InputView, StandardInput, read_table
from duckrank.peer_inputs import runs_and_names
from duckrank.registry import FUSION_METHODS, FUSION_NORM_ALIASES, FUSION_NORMS, FUSION_PARAMS, FusionMethod

# Every spelling of a method, lower-case: ranx's name and its aliases (CombSUM's comb_sum, combsum ...).
METHOD_SPELLINGS = {spelling: method for method in FUSION_METHODS.values()
                    for spelling in (method.name, *method.aliases)}

# Where a message sends the caller to have parameters chosen: optimize_fusion (the command line's
# --optimize METRIC --qrels FILE).
OPTIMIZE = Option("optimize_fusion", subject=True)


def fusion_method(name: Any) -> FusionMethod:
    """The method a name spells (ranx's, or a comb* alias; any case)."""
    method = METHOD_SPELLINGS.get(str(name).strip().lower()) if isinstance(name, str) else None
    if method is None:
        raise OptionError(*subject("method", f" must be one of {', '.join(FUSION_METHODS)} (or comb_sum, combmnz, ... "
                                             f"for the Comb methods); got {quoted(name)}"))
    return method


def norm_name(norm: Any) -> str:
    """A normalisation's name as the SQL library takes it: None is 'none', ranx's min_max is min-max."""
    if norm is None:
        return "none"
    if isinstance(norm, str):
        norm = norm.strip().lower()
        return FUSION_NORM_ALIASES.get(norm, norm)
    return norm  # not a name: _problems says so


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _problems(method: FusionMethod, norm: str, weights: Any, qrels: Any, params: dict[str, Any],
              run_count: int, con: duckdb.DuckDBPyConnection) -> list[Problem]:
    """Every problem with the arguments, at once, each naming the options at fault (the command line
    spells them as its flags): unknown or missing parameters here, the values' own rules as
    duckrank.fusion_problems (generated from the registry) words them."""
    problems: list[Problem] = [] if isinstance(norm, str) else [
        subject("norm", f" must be one of {', '.join(FUSION_NORMS)}; got {quoted(norm)}")]
    for name in params:
        if name not in method.given:
            takes = f"takes {', '.join(method.given)}" if method.given else "takes no parameters"
            problems.append((f"method {method.name} {takes} (besides norm); got ", Option(name), quoted(params[name])))
    if "weights" in method.params and weights is None:
        problems.append((f"method {method.name} needs ", Option("weights", subject=True), f": one per run "
                         f"({run_count}), e.g. {','.join(['0.5'] * run_count)}; or let ", OPTIMIZE, " choose them"))
    if weights is not None and "weights" not in method.params:
        problems.append((f"method {method.name} takes no weights (the weighted ones are "
                         f"{', '.join(m.name for m in FUSION_METHODS.values() if 'weights' in m.params)})",))
    if weights is not None and "weights" in method.params:
        if not isinstance(weights, (list, tuple)) or not all(_number(w) for w in weights):
            problems.append(subject("weights", f" must be a list of numbers, one per run; got {quoted(weights)}"))
        elif len(weights) != run_count:
            problems.append(subject("weights", f" must be one per run: {run_count} runs, {len(weights)} weights "
                                               f"given ({', '.join(map(str, weights))})"))
    if method.trained and qrels is None:
        problems.append((f"method {method.name} learns from qrels: pass ", Option("qrels", subject=True),
                         " (the training queries' judgments)"))
    if qrels is not None and not method.trained:
        trained = ", ".join(m.name for m in FUSION_METHODS.values() if m.trained)
        problems.append((f"method {method.name} learns nothing from qrels (those that do: {trained}); drop ",
                         Option("qrels", subject=True)))
    for name in method.given:
        if name != "weights" and params.get(name) is None and FUSION_PARAMS[name].default is None:
            problems.append((f"method {method.name} needs ", Option(name, subject=True), f": "
                             f"{FUSION_PARAMS[name].doc} (ranx has no default; ", OPTIMIZE, " chooses one)"))
    for name, value in params.items():
        if name in method.given and value is not None and not _number(value):
            problems.append(subject(name, f" must be a number; got {quoted(value)}"))
    if problems:
        return problems
    given = {"norm": norm, **({"weights": [float(w) for w in weights]} if weights is not None else {}),
             **{name: value for name, value in params.items() if value is not None}}
    arguments = "".join(f", {name} := {_sql_value(value)}" for name, value in given.items())
    found = con.execute(f"SELECT duckrank.fusion_problems({sql_literal(method.name)}, {run_count}{arguments})"
                        ).fetchall()[0][0]
    # each line is "<parameter> must ..." (sql/75_fusion_methods.sql); the learnt parameters
    # (MAPFuse's map_scores) come from the qrels later: not the caller's to give
    named = [line.split(" ", 1) for line in (found or "").splitlines()]
    return [subject(name, f" {rest}") for name, rest in named if name not in method.learned]


def _sql_value(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(sql_literal(float(v)) for v in value) + "]::DOUBLE[]"
    return sql_literal(value)


def _read_runs(con: duckdb.DuckDBPyConnection, runs: Any, columns: dict[str, str], literal_paths: bool | None,
               stdin: StandardInput) -> tuple[list[InputView], str]:
    """Each run as a view, and one table of them all: (run, query_id, doc_id, score), run numbered from 1
    in the order given."""
    run_list, _names = runs_and_names(runs, None)
    if len(run_list) < 2:
        raise OptionError(f"fusion needs at least two runs; got {len(run_list)}")
    sources = [read_table(con, run, "run", columns=columns or None, literal=literal_paths, stdin=stdin)
               for run in run_list]
    for key in ("query_id", "doc_id"):
        kinds = {source.columns[key].upper().startswith("VARCHAR") for source in sources}
        if len(kinds) > 1:
            shown = "; ".join(f"{source.label}: {source.columns[key]}" for source in sources)
            raise InputError(f"the runs' {key} columns differ in type ({shown}): ids must be all text or all "
                             f"numbers; cast them alike")
    table = fresh_name("fusion_runs")
    union = " UNION ALL ".join(f"SELECT {i} AS run, query_id, doc_id, score FROM {quote_identifier(source.view)}"
                               for i, source in enumerate(sources, start=1))
    con.execute(f"CREATE TEMP TABLE {table} AS {union}").fetchall()
    _check_runs(con, sources, table)
    return sources, table


def _check_runs(con: duckdb.DuckDBPyConnection, sources: list[InputView], table: str) -> None:
    """Refuse what fusion cannot read: an empty run, a doc twice in a run's query, a score that is not
    a finite number."""
    counts = dict(con.execute(f"SELECT run, count(*) FROM {table} GROUP BY run").fetchall())
    for i, source in enumerate(sources, start=1):
        if not counts.get(i):
            raise InputError(f"{source.label} is empty: there is nothing to fuse")
    twice = con.execute(f"SELECT run, query_id, doc_id FROM {table} GROUP BY ALL HAVING count(*) > 1 LIMIT 1"
                        ).fetchall()
    if twice:
        run, query_id, doc_id = twice[0]
        raise InputError(f"{sources[run - 1].label} lists doc_id {quoted(doc_id)} twice for query_id "
                         f"{quoted(query_id)}; a run ranks each doc once: drop the duplicates")
    bad = con.execute(f"SELECT run, query_id, doc_id, score FROM {table} WHERE score IS NULL OR NOT isfinite(score) "
                      f"LIMIT 1").fetchall()
    if bad:
        run, query_id, doc_id, score = bad[0]
        raise InputError(f"{sources[run - 1].label} gives doc_id {quoted(doc_id)} of query_id {quoted(query_id)} "
                         f"the score {score}; scores must be finite numbers")


def _map_scores(con: duckdb.DuckDBPyConnection, table: str, norm: str, qrels_view: str, run_count: int) -> list[float]:
    """MAPFuse's learnt parameter: each normalised run's MAP on the qrels, by duckrank's own map over
    every qrels query (a query the run lacks scores 0, as ranx scores it)."""
    qrels = con.sql(f"SELECT query_id, doc_id, relevance FROM {quote_identifier(qrels_view)}").arrow().read_all()
    scores = []
    for run in range(1, run_count + 1):
        normalized = con.sql(f"SELECT query_id, doc_id, score FROM duckrank.fusion_normalized({sql_literal(table)}, "
                             f"{sql_literal(norm)}) WHERE run = {run}").arrow().read_all()
        scores.append(evaluate(qrels, normalized, ["map"], complete=True)["map"])
    return scores


def _fused_sql(method: FusionMethod, table: str, qrels_view: str | None, norm: str, weights: Any,
               params: dict[str, Any]) -> str:
    """The call of the method's public macro, duckrank.fuse_<name>, with the runs' table."""
    required = [p for p in method.params if FUSION_PARAMS[p].default is None]
    values = {**params, **({"weights": [float(w) for w in weights]} if weights is not None else {})}
    arguments = [sql_literal(table), *([sql_literal(qrels_view)] if method.trained and not method.learned else []),
                 *(_sql_value(values[p]) for p in required), f"norm := {sql_literal(norm)}",
                 *(f"{p} := {_sql_value(values[p])}" for p in method.params if p not in required and p in values)]
    return f"SELECT * FROM duckrank.fuse_{method.name}({', '.join(arguments)})"


@interruptible
def fuse(runs: Any, method: str, norm: str | None = "min-max", weights: list[float] | None = None, qrels: Any = None,
         *, query_col: str | None = None, doc_col: str | None = None, score_col: str | None = None,
         relevance_col: str | None = None, literal: bool | None = None, **params: Any) -> duckdb.DuckDBPyRelation:
    """Fuse `runs` (a list, or a dict {name: run}, of anything duckrank reads; at least two) into one run.

    method: ranx's name (rrf, sum, mnz, max, min, med, anz, gmnz, isr, log_isr, logn_isr, bordafuse,
    condorcet, wsum, wmnz, mixed, w_bordafuse, w_condorcet, rbc, posfuse, probfuse, segfuse, slidefuse,
    bayesfuse, mapfuse; comb_sum, combmnz, ... too). norm: min-max (ranx's default), min-max-inverted,
    max, sum, zmuv, rank, borda, or None. weights: one per run, for the weighted methods. qrels: the
    training judgments of the methods that learn (posfuse, probfuse, segfuse, slidefuse, bayesfuse,
    mapfuse). params: the method's own (k=60 for rrf, gamma, sigma, phi, n_segments, w).

    Returns a DuckDB relation (query_id, doc_id, score), each query's docs by score descending (ties
    doc_id descending), which converts with .df(), .arrow(), .pl() and is a run for evaluate().
    """
    con, fused = fused_table(runs, method, norm, weights, qrels, query_col=query_col, doc_col=doc_col,
                             score_col=score_col, relevance_col=relevance_col, literal=literal, **params)
    return con.sql(f"SELECT query_id, doc_id, score FROM {fused} ORDER BY query_id, score DESC, doc_id DESC")


def fused_table(runs: Any, method: str, norm: str | None = "min-max", weights: list[float] | None = None,
                qrels: Any = None, *, query_col: str | None = None, doc_col: str | None = None,
                score_col: str | None = None, relevance_col: str | None = None, literal: bool | None = None,
                **params: Any) -> tuple[duckdb.DuckDBPyConnection, str]:
    """fuse()'s work: the fused run as a temporary table (query_id, doc_id, score) of a cursor of
    duckrank's connection, which `duckrank fuse` writes out."""
    chosen = fusion_method(method)
    norm = norm_name(norm)
    columns = {key: value for key, value in {"query_id": query_col, "doc_id": doc_col, "score": score_col}.items()
               if value is not None}
    con, stdin = fusion_cursor(), StandardInput()
    sources, table = _read_runs(con, runs, columns, literal, stdin)
    problems = _problems(chosen, norm, weights, qrels, params, len(sources), con)
    if problems:
        raise OptionError(*one_per_line(problems))
    qrels_view = None
    if chosen.trained:
        qrels_columns = {key: value for key, value in {"query_id": query_col, "doc_id": doc_col,
                                                       "relevance": relevance_col}.items() if value is not None}
        judged = read_table(con, qrels, "qrels", columns=qrels_columns or None, literal=literal, stdin=stdin)
        check_id_types(judged, sources)
        qrels_view = judged.view
    if "map_scores" in chosen.learned:
        params = {**params, "map_scores": _map_scores(con, table, norm, qrels_view, len(sources))}
    fused = fresh_name("fused")
    try:
        con.execute(f"CREATE TEMP TABLE {fused} AS {_fused_sql(chosen, table, qrels_view, norm, weights, params)}"
                    ).fetchall()
    except duckdb.Error as error:
        message = str(error)
        raise InputError(message.split("duckrank: ", 1)[1] if "duckrank: " in message
                         else f"DuckDB could not fuse the runs: {message.splitlines()[0]}") from None
    return con, fused


def _grid(method: FusionMethod, run_count: int, grid: dict[str, Any]) -> list[dict[str, Any]]:
    """ranx.optimize_fusion's trials for the method, in ranx's order: weights summing to exactly 1.0
    (as Python sums them) from the values 0, step, ..., 1 rounded as ranx rounds them; or the
    parameter's values first, first + step, ..., last."""
    name = method.grid[0]
    if name == "weights":
        step = grid.get("step", method.grid[1])
        digits = str(step)[::-1].find(".")
        values = [round(i * step, digits) for i in range(math.ceil((1 + step) / step))]
        return [{"weights": list(seq)} for seq in itertools.product(values, repeat=run_count) if sum(seq) == 1.0]
    first = grid.get(f"min_{name}", method.grid[1])
    last = grid.get(f"max_{name}", method.grid[2])
    step = grid.get("step", method.grid[3])
    if FUSION_PARAMS[name].type == "integer" or all(isinstance(v, int) for v in (first, last, step)):
        return [{name: value} for value in range(first, last + 1, step)]
    digits = str(step)[::-1].find(".")
    return [{name: round(first + i * step, digits)} for i in range(math.ceil((last + step - first) / step))]


def optimize_fusion(qrels: Any, runs: Any, method: str, norm: str | None = "min-max", metric: str = "ndcg@10",
                    *, query_col: str | None = None, doc_col: str | None = None, score_col: str | None = None,
                    relevance_col: str | None = None, literal: bool | None = None,
                    **grid: Any) -> dict[str, Any]:
    """The parameters of `method` that score best on `qrels` by `metric` (any duckrank measure, every
    qrels query counted, a missing one as 0, as ranx counts them), searched on ranx.optimize_fusion's
    grid: weights in steps of `step` (0.1) that sum to 1 for the weighted methods; k from 10 to 100 by
    10 (rrf); gamma, sigma, phi from 0.01 to 1 by 0.01 (gmnz, logn_isr, rbc); n_segments and w from 1 to
    100 (probfuse, slidefuse). ranx's bounds min_<name>=, max_<name>=, step= change it. A tie goes to
    the later trial, as in ranx. The methods that only learn from qrels (posfuse, segfuse, bayesfuse,
    mapfuse) have nothing to choose: {} (fuse() learns them from qrels)."""
    chosen = fusion_method(method)
    if not chosen.grid:
        if chosen.trained:
            return {}
        raise OptionError(f"method {chosen.name} has no parameter to optimise (those with one: "
                          f"{', '.join(m.name for m in FUSION_METHODS.values() if m.grid)})")
    name = chosen.grid[0]
    known = {"step"} if name == "weights" else {"step", f"min_{name}", f"max_{name}"}
    unknown = sorted(set(grid) - known)
    if unknown:
        raise OptionError(f"optimize_fusion of {chosen.name} takes {', '.join(sorted(known))}; got "
                          f"{', '.join(unknown)}")
    run_list, _names = runs_and_names(runs, None)
    con, stdin = fusion_cursor(), StandardInput()
    sources, _table = _read_runs(con, run_list, {key: value for key, value in
                                                 {"query_id": query_col, "doc_id": doc_col, "score": score_col}.items()
                                                 if value is not None}, literal, stdin)
    # the runs read once, as tables: every trial fuses these
    tables = [con.sql(f"SELECT query_id, doc_id, score FROM {quote_identifier(source.view)}").arrow().read_all()
              for source in sources]
    qrels_table = read_table(con, qrels, "qrels", columns={key: value for key, value in {
        "query_id": query_col, "doc_id": doc_col, "relevance": relevance_col}.items() if value is not None} or None,
        literal=literal, stdin=stdin)
    qrels_arrow = con.sql(f"SELECT query_id, doc_id, relevance FROM {quote_identifier(qrels_table.view)}"
                          ).arrow().read_all()
    best_score, best = 0.0, {}
    for trial in _grid(chosen, len(tables), grid):
        params = dict(trial)
        weights = params.pop("weights", None)
        fused = fuse(tables, chosen.name, norm, weights, qrels_arrow if chosen.trained else None, **params)
        score = evaluate(qrels_arrow, fused, [metric], complete=True)[metric]
        if score >= best_score:
            best_score, best = score, trial
    return best
