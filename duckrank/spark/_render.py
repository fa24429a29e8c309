"""Render duckrank's macros (sql/00..41) as Spark SQL: parse them with a pinned sqlglot, inline every
duckrank.* macro call (duckrank._inliner, shared with duckrank.lean), then rewrite the few DuckDB constructs sqlglot would otherwise render wrongly
or not at all (ANONYMOUS_REWRITES and _to_spark). The math is never written twice: this module
holds no metric. What the macros may use is listed in sql/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Any

import sqlglot
from sqlglot import exp

from duckrank._inliner import bottom_up, drop_unused_ctes, fold_options, inline, macro, operand, prune
from duckrank.errors import OptionError


# --- DuckDB -> Spark: what sqlglot does not translate, or translates into something else ---------

def _function(name: str, *args: exp.Expression) -> exp.Expression:
    return exp.Anonymous(this=name, expressions=list(args))


def _lambda(variables: list[str], body: exp.Expression) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(v) for v in variables])


def _ident(name: str) -> exp.Expression:
    return exp.to_identifier(name)


def _fused_sum(array: exp.Expression) -> exp.Expression | None:
    """list_sum(list_transform(list_filter(xs, p), f)) (either step may be missing) in one pass over
    xs: Spark interprets each lambda element by element, so every pass saved counts. The same
    additions in the same order, NULL values skipped, NULL for none: what the three passes give."""
    value, predicate, variable, source = None, None, None, array
    if isinstance(source, exp.Transform) and len(source.expression.expressions) == 1:
        variable, value = source.expression.expressions[0].name, source.expression.this
        source = source.this
    if isinstance(source, exp.ArrayFilter) and len(source.expression.expressions) == 1 \
            and source.expression.this.find(exp.Lambda) is None:
        name, predicate = source.expression.expressions[0].name, source.expression.this.copy()
        if variable is None:
            variable, value = name, _ident(name)
        elif name != variable:  # the filter's element as the transform's variable
            predicate = predicate.transform(
                lambda n: _ident(variable) if isinstance(n, exp.Identifier) and n.name == name
                and not (isinstance(n.parent, exp.Dot) and n.arg_key == "expression") else n, copy=False)
        source = source.this
    if variable is None:
        return None
    added = _function("coalesce", exp.Add(this=_function("coalesce", _ident("duckrank_sum"), exp.Literal.number(0)),
                                          expression=operand(value)), _ident("duckrank_sum"))
    if predicate is not None:
        added = exp.Case(ifs=[exp.If(this=predicate, true=added)], default=_ident("duckrank_sum"))
    return _function("aggregate", source, exp.Cast(this=exp.Null(), to=exp.DataType.build("DOUBLE")),
                     _lambda(["duckrank_sum", variable], added))


def _sum_of(array: exp.Expression, average: bool = False) -> exp.Expression:
    """list_sum / list_avg: the non-NULL elements summed in order; NULL for none, as DuckDB."""
    fused = None if average else _fused_sum(array)
    if fused is not None:
        return fused
    kept = _function("filter", array, _lambda(["x"], exp.Not(this=exp.Is(this=_ident("x"), expression=exp.Null()))))
    total = _function("aggregate", kept, exp.Cast(this=exp.Null(), to=exp.DataType.build("DOUBLE")),
                      _lambda(["acc", "x"], exp.Add(this=_function("coalesce", _ident("acc"), exp.Literal.number(0)),
                                                    expression=_ident("x"))))
    if not average:
        return total
    return exp.Div(this=total, expression=_function("nullif", _function("size", kept.copy()), exp.Literal.number(0)))


def _one_based(node: exp.Expression) -> exp.Expression:
    """list_transform / list_filter with an index: DuckDB counts from 1, Spark from 0."""
    lam = node.expression if isinstance(node.expression, exp.Lambda) else None
    if lam is None or len(lam.expressions) != 2:
        return node
    index = lam.expressions[1].name
    body = lam.this.transform(lambda n: exp.Paren(this=exp.Add(this=_ident(index), expression=exp.Literal.number(1)))
                              if isinstance(n, exp.Identifier) and n.name == index and not isinstance(n.parent, exp.Dot)
                              and not isinstance(n.parent, exp.Lambda) else n)
    lam.set("this", body)
    return node


def _bracket(node: exp.Bracket) -> exp.Expression:
    """x[i] is 1-based in DuckDB and NULL out of range: try_element_at in Spark (element_at and
    x[i] fail under ANSI mode); x[a:b] is slice(x, a, b - a + 1)."""
    (index,) = node.expressions
    if isinstance(index, exp.Slice):
        start, end = index.this, index.expression
        length = exp.Add(this=exp.Sub(this=end.copy(), expression=start.copy()), expression=exp.Literal.number(1))
        return _function("slice", node.this, start, _function("greatest", length, exp.Literal.number(0)))
    if isinstance(index, exp.Literal) and not index.is_string:
        # sqlglot stores a literal index 0-based (DuckDB's x[1] parses as 0)
        index = exp.Literal.number(int(index.this) + 1)
    return _function("try_element_at", node.this, index)


def _sorted_list(node: exp.ArrayAgg) -> exp.Expression:
    """list(x ORDER BY k DESC, ...): Spark's collect_list has no order, so the keys travel with x in
    a struct, the structs are sorted and x is taken back out."""
    order = node.this
    keys = order.expressions
    descending = {bool(key.args.get("desc")) for key in keys}
    if len(descending) != 1:
        raise ValueError("list(... ORDER BY ...) needs one direction for every key on Spark")
    fields = [exp.PropertyEQ(this=_ident(f"k{i}"), expression=key.this) for i, key in enumerate(keys)]
    fields.append(exp.PropertyEQ(this=_ident("v"), expression=order.this))
    collected = exp.ArrayAgg(this=exp.Struct(expressions=fields))
    sorted_ = _function("sort_array", collected, exp.Boolean(this=not descending.pop()))
    result = exp.Transform(this=sorted_, expression=_lambda(["x"], exp.Dot(this=_ident("x"), expression=_ident("v"))))
    result.meta["collected"] = collected  # an aggregate FILTER (WHERE ...) belongs on collect_list
    return result


def _isfinite(node: exp.Anonymous) -> exp.Expression:
    (x,) = node.expressions
    return exp.Paren(this=exp.And(
        this=exp.Not(this=_function("isnan", x.copy())),
        expression=exp.NEQ(this=_function("abs", x.copy()),
                           expression=exp.Cast(this=exp.Literal.string("Infinity"), to=exp.DataType.build("DOUBLE")))))


def _reduce(node: exp.Anonymous) -> exp.Expression:
    array, merge, start = node.expressions
    return _function("aggregate", array, start, merge)


# DuckDB functions by name -> their Spark rendering. Each entry is exercised by the parity tests
# (tests/test_spark.py); the snapshot test shows what a change of sqlglot does to the output.
ANONYMOUS_REWRITES: dict[str, Callable[[exp.Anonymous], exp.Expression]] = {
    "list_sum": lambda n: _sum_of(n.expressions[0]),
    "list_avg": lambda n: _sum_of(n.expressions[0], average=True),
    "list_reverse": lambda n: _function("reverse", *n.expressions),
    "list_reduce": _reduce,
    "list_unique": lambda n: _function("size", _function("array_distinct", _function(
        "filter", n.expressions[0], _lambda(["x"], exp.Not(this=exp.Is(this=_ident("x"), expression=exp.Null())))))),
    "list_bool_or": lambda n: _function("exists", n.expressions[0], _lambda(["x"], _ident("x"))),
    "cardinality": lambda n: _function("size", *n.expressions),
    "hash": lambda n: _function("xxhash64", *n.expressions),
    "error": lambda n: _function("raise_error", *n.expressions),
    "isfinite": _isfinite,
}


def _to_spark(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Anonymous) and node.name.lower() in ANONYMOUS_REWRITES:
        return ANONYMOUS_REWRITES[node.name.lower()](node)
    if isinstance(node, exp.Literal) and not node.is_string and re.search(r"[.eE]", node.this):
        # a decimal literal is a DECIMAL in Spark (and DuckDB); the math is in doubles
        return exp.Cast(this=node.copy(), to=exp.DataType.build("DOUBLE"))
    if isinstance(node, (exp.Transform, exp.ArrayFilter)):
        return _one_based(node)
    if isinstance(node, exp.Bracket):
        return _bracket(node)
    if isinstance(node, exp.IgnoreNulls) and isinstance(node.this, exp.AnyValue):
        # DuckDB's any_value skips NULLs; Spark's does when asked (its IGNORE NULLS clashes with FILTER)
        return _function("any_value", node.this.this, exp.Boolean(this=True))
    if isinstance(node, exp.Length) and not (isinstance(node.this, exp.Cast)
                                             and node.this.to.is_type(*exp.DataType.TEXT_TYPES)):
        return _function("size", node.this)  # len() of a list; length(CAST(x AS VARCHAR)) is a text's
    if isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
        return _sorted_list(node)
    if isinstance(node, exp.Filter) and "collected" in node.this.meta:
        collected = node.this.meta.pop("collected")
        collected.replace(exp.Filter(this=collected.copy(), expression=node.expression))
        return node.this
    if isinstance(node, exp.WithinGroup) and isinstance(node.this, exp.PercentileCont):
        # sqlglot renders percentile_cont as percentile_approx: the exact one is percentile
        return _function("percentile", node.expression.expressions[0].this, node.this.this)
    if isinstance(node, exp.Window) and isinstance(node.this, exp.RowNumber) and not node.args.get("order"):
        # the input order: only ties := 'input' reads it, and Spark refuses that rule (no input order)
        return exp.Cast(this=exp.Literal.number(0), to=exp.DataType.build("BIGINT"))
    return node


def to_spark(expression: exp.Expression) -> exp.Expression:
    """An inlined DuckDB expression or query as its Spark equivalent (still an AST)."""
    return bottom_up(expression.copy(), _to_spark)


def spark_sql(expression: exp.Expression, pretty: bool = False) -> str:
    """A Spark AST (measure_expression, ranked_query) as Spark SQL text."""
    return expression.sql("spark", pretty=pretty)


# --- the ranked relation -------------------------------------------------------------------------

def spark_literal(value: Any) -> exp.Expression:
    """An option value as a Spark literal (numbers as DOUBLE where DuckDB would infer DECIMAL)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(value)
    if isinstance(value, float):
        return exp.Cast(this=exp.Literal.string(repr(value)), to=exp.DataType.build("DOUBLE"))
    if isinstance(value, dict):
        keys = exp.Array(expressions=[spark_literal(float(k)) for k in value])
        values = exp.Array(expressions=[spark_literal(float(v)) for v in value.values()])
        return exp.Cast(this=_function("map_from_arrays", keys, values), to=exp.DataType.build("MAP<DOUBLE, DOUBLE>"))
    return exp.Literal.string(str(value))


def _expand_star_replace(query: exp.Expression) -> exp.Expression:
    """SELECT * REPLACE (e AS c) FROM cte: Spark has no REPLACE, so the star is spelled out from the
    CTE's own columns."""
    ctes = {cte.alias: cte.this for cte in query.find_all(exp.CTE)}

    def columns_of(select: exp.Expression) -> list[str]:
        if isinstance(select, exp.SetOperation):
            return columns_of(select.this)
        names = []
        for projection in select.expressions:
            if isinstance(projection, exp.Star):
                names.extend(columns_of(ctes[select.args["from_"].this.name] if "from_" in select.args
                                        else ctes[select.args["from"].this.name]))
            else:
                names.append(projection.alias_or_name)
        return names

    def expand(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Select) and len(node.expressions) == 1 and isinstance(node.expressions[0], exp.Star) \
                and node.expressions[0].args.get("replace"):
            star = node.expressions[0]
            replaced = {e.alias: e for e in star.args["replace"]}
            source = node.args.get("from_") or node.args.get("from")
            names = columns_of(ctes[source.this.name])
            node.set("expressions", [replaced[n].copy() if n in replaced else exp.column(n) for n in names])
        return node
    return query.transform(expand)


def _plain_ctes(query: exp.Expression) -> exp.Expression:
    """Spark has no (NOT) MATERIALIZED hints, and no UNION ALL BY NAME: the tie rules' branches of
    sorted_docs list their columns in one order, so a positional UNION ALL is the same."""
    for cte in query.find_all(exp.CTE):
        cte.set("materialized", None)
    for union in query.find_all(exp.Union):
        union.set("by_name", None)
    return query


def ranked_query(qrels_table: tuple[str, ...], run_table: tuple[str, ...], qrels_label: str, run_label: str,
                 values: dict[str, Any], checked: bool = True) -> exp.Expression:
    """duckrank.rank_queries over two Spark tables (each a name's identifiers), every option a
    literal: a Spark query (AST).
    checked=False leaves out the checks of the data (its guard), for a second pass over inputs a
    first one checks: they read only the ids, scores and grades, never the relation's options."""
    frozen = tuple((name, tuple(sorted(v.items())) if isinstance(v, dict) else v) for name, v in values.items())
    query = _ranked_query(qrels_table, run_table, qrels_label, run_label, frozen).copy()
    if checked:
        return query
    from sqlglot.optimizer.simplify import simplify

    def unguarded(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.EQ) and any(t.name == "guard" for t in node.find_all(exp.Table)):
            return exp.true()
        return node
    query.set("where", simplify(query.args["where"].transform(unguarded, copy=False)))
    if isinstance(query.args["where"].this, exp.Boolean):
        query.set("where", None)
    return drop_unused_ctes(query)


@cache
def _ranked_query(qrels_table: tuple[str, ...], run_table: tuple[str, ...], qrels_label: str, run_label: str,
                  frozen: tuple) -> exp.Expression:
    values = {name: dict(v) if name == "gain_map" else v for name, v in frozen}
    ranked = macro("rank_queries")
    if values["ties"] == "input":
        raise OptionError("ties := 'input' needs the order of the input rows, which Spark does not keep; "
                          "use ties := 'trec' (or pessimistic, optimistic, average) with --engine spark")
    substitutions = {name: spark_literal(values[name]) for name in ranked.params if name not in ("qrels", "run")}
    substitutions["qrels"], substitutions["run"] = exp.Literal.string(qrels_label), exp.Literal.string(run_label)
    tables = {"qrels": qrels_table, "run": run_table}

    def table_reads(node: exp.Expression) -> exp.Expression:
        # query_table(CAST(run AS VARCHAR)) reads the input: here a Spark table or view
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) and node.this.name == "query_table":
            column = node.this.expressions[0].find(exp.Column)
            return table(tables[column.name])
        return node
    body = ranked.body.copy().transform(table_reads, copy=False)
    body = inline(body, substitutions)
    return _hashed_judgments(_planned_once(prune(to_spark(_plain_ctes(_expand_star_replace(body))))))


def table(parts: tuple[str, ...]) -> exp.Table:
    """A table name's identifiers (duckrank.spark.table_parts) as a Spark table, each identifier
    quoted: the name is never parsed as SQL. A plain identifier that is no keyword stays bare."""
    keywords = _spark_keywords()
    identifiers = [exp.to_identifier(part, quoted=not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part)
                                     or part.upper() in keywords) for part in parts]
    return exp.Table(this=identifiers[-1], db=identifiers[-2] if len(parts) > 1 else None,
                     catalog=identifiers[-3] if len(parts) > 2 else None)


@cache
def _spark_keywords() -> frozenset[str]:
    from sqlglot.dialects.spark import Spark

    return frozenset(word.upper() for word in Spark.Tokenizer.KEYWORDS)


def _hashed_judgments(query: exp.Expression) -> exp.Expression:
    """Spark joins two large inputs by sorting both (sort-merge). Each run row only looks up its
    judgment, so the join with the qrels builds a hash table of the qrels side instead (W10M: that
    stage took 14 s instead of 24 s). Adaptive execution keeps each task's share of the qrels near
    its target partition size, so the table stays small however large the qrels."""
    for select in query.find_all(exp.Select):
        judged = [join.this for join in select.args.get("joins") or []
                  if join.side == "LEFT" and isinstance(join.this, exp.Table) and join.this.name == "qrels_docs"]
        if judged:
            select.set("hint", exp.Hint(expressions=[exp.JoinHint(
                this="SHUFFLE_HASH", expressions=[exp.to_table(table.alias_or_name) for table in judged])]))
    return query


def _planned_once(query: exp.Expression) -> exp.Expression:
    """Spark inlines a deterministic CTE at every read (DuckDB materializes it), so an aggregate read
    twice, directly or through the CTEs that read it, is computed twice: the qrels checks are read
    16 times over, and the run's sorted lists twice (by the measures and by the data checks). A CTE
    whose plan is not deterministic is planned once instead, as a shuffle every read reuses
    (SPARK-36447): each grouped CTE read more than once gets an always-true `rand() >= 0` filter.
    (W10M: 54 s instead of 85 s. Sharing the ranked lists themselves costs more than it saves.)"""
    ctes = {cte.alias: cte for cte in query.find_all(exp.CTE)}
    readers: dict[str, list[str]] = {name: [] for name in ctes}
    for table in query.find_all(exp.Table):
        if table.name in ctes:
            owner = table.find_ancestor(exp.CTE)
            readers[table.name].append(owner.alias if owner is not None else "")

    @cache
    def reads(name: str) -> int:  # "" is the main query, which runs once
        return 1 if name == "" else sum(reads(reader) for reader in readers[name])

    def grouped(select: exp.Expression) -> bool:  # a GROUP BY, or a projection of one
        if not isinstance(select, exp.Select):
            return False
        source = select.args.get("from_") or select.args.get("from")
        return select.args.get("group") is not None or (
            not select.args.get("joins") and source is not None and isinstance(source.this, exp.Subquery)
            and grouped(source.this.this))

    for name, cte in ctes.items():
        if reads(name) > 1 and grouped(cte.this):
            cte.set("this", exp.select(exp.Star()).from_(exp.Subquery(
                this=cte.this, alias=exp.TableAlias(this=exp.to_identifier("once")))).where(
                exp.GTE(this=_function("rand"), expression=exp.Literal.number(0))))
    return query


@cache
def measure_expression(aggregate_sql: str) -> exp.Expression:
    """A registry aggregate (e.g. duckrank.ndcg_of(q, 10, 'qrels')) inlined over the ranked row `q`,
    its constant conditions folded (CASE WHEN 'qrels' = 'run' ... goes) by fold_options, which
    folds no arithmetic (sqlglot's simplify would fold 1 - 0.9 exactly, 0.1, where the math means
    doubles, 0.09999999999999998) and costs a fraction of simplify's time: simplify took half of
    rendering -m all_trec."""
    inlined = inline(sqlglot.parse_one(aggregate_sql, read="duckdb")).transform(_first_k_docs, copy=False)
    return fold_options(to_spark(inlined))


@cache
def summary_sql(rule: str) -> str:
    """A summary rule of duckrank.plan.SUMMARY_SQL (an aggregate of the per-query rows' value and
    query_id) as Spark SQL: the DuckDB engine's rule, rendered, so both engines sum alike."""
    return spark_sql(to_spark(inline(sqlglot.parse_one(rule, read="duckdb"))))


def _first_k_docs(node: exp.Expression) -> exp.Expression:
    """list_filter(q.docs, lambda d: ... d.rank <= coalesce(k, d.rank) ...) reads only q.docs[1:k]:
    ranks start at 1 and rise along the list, so no doc past the k-th has a rank <= k. Spark then
    interprets the filter for k docs, not the whole ranking (W10M: 3.5 s of 50). DuckDB is left
    as it is: there a slice is a copy, which costs more than the filter it spares."""
    if not (isinstance(node, exp.ArrayFilter) and isinstance(node.this, exp.Dot) and node.this.name == "docs"
            and isinstance(node.expression, exp.Lambda) and len(node.expression.expressions) == 1):
        return node
    variable = node.expression.expressions[0].name

    def is_rank(e: exp.Expression) -> bool:
        return isinstance(e, exp.Dot) and e.name == "rank" and isinstance(e.this, exp.Identifier) \
            and e.this.name == variable

    for bound in node.expression.this.flatten() if isinstance(node.expression.this, exp.And) else [node.expression.this]:
        if isinstance(bound, exp.LTE) and is_rank(bound.this) and isinstance(bound.expression, exp.Coalesce) \
                and len(bound.expression.expressions) == 1 and is_rank(bound.expression.expressions[0]):
            k = bound.expression.this
            if not isinstance(k, exp.Null) and not any(i.name == variable for i in k.find_all(exp.Identifier)):
                node.set("this", exp.Bracket(this=node.this, expressions=[
                    exp.Slice(this=exp.Literal.number(1), expression=k.copy())]))
                break
    return node
