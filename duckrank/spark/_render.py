"""Render duckrank's macros (sql/00..41) as Spark SQL: parse them with a pinned sqlglot, inline every
duckrank.* macro call, then rewrite the few DuckDB constructs sqlglot would otherwise render wrongly
or not at all (ANONYMOUS_REWRITES and _to_spark). The math is never written twice: this module
holds no metric. What the macros may use is listed in sql/README.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import sqlglot
from sqlglot import exp

from duckrank._library import GENERATED, library_files
from duckrank.errors import OptionError

_MACRO = re.compile(r"CREATE OR REPLACE MACRO duckrank\.(\w+)\((.*?)\) AS( TABLE)?\s*(.*?);\s*\nCOMMENT ON MACRO",
                    re.DOTALL)


@dataclass(frozen=True)
class Macro:
    name: str
    params: tuple[str, ...]
    body: exp.Expression
    table: bool


@cache
def _macro_texts() -> dict[str, tuple[str, str, str]]:
    """(parameters, ' TABLE' or '', body) of each hand-written macro of sql/ by name (the generated
    files only check options and wrap them)."""
    found = {}
    for path in library_files():
        if path.name in GENERATED:
            continue
        for name, params, table, body in _MACRO.findall(path.read_text(encoding="utf-8")):
            found[name] = (params, table, body)
    return found


@cache
def macro(name: str) -> Macro:
    """A hand-written macro of sql/, parsed when first inlined: a statement reads a few dozen of the
    library's hundred-odd macros, and parsing them all costs seconds."""
    params, table, body = _macro_texts()[name]
    return Macro(name, tuple(p.strip() for p in params.split(",") if p.strip()),
                 sqlglot.parse_one(body, read="duckdb"), bool(table))


def _macro_call(node: exp.Expression) -> tuple[str, list[exp.Expression]] | None:
    """(name, arguments) when node calls duckrank.<name>(...)."""
    if (isinstance(node, exp.Dot) and isinstance(node.this, exp.Identifier) and node.this.name == "duckrank"
            and isinstance(node.expression, exp.Anonymous)):
        return node.expression.name, list(node.expression.expressions)
    return None


# Nodes that read as one operand wherever they are put; anything else is parenthesised when it
# replaces a macro parameter or call (sqlglot prints a tree as it is: `a / (b + c)` needs the Paren).
_ATOMIC = (exp.Column, exp.Literal, exp.Null, exp.Boolean, exp.Paren, exp.Dot, exp.Func, exp.Struct, exp.Array,
           exp.Bracket, exp.Identifier)


def _operand(node: exp.Expression) -> exp.Expression:
    return node if isinstance(node, _ATOMIC) else exp.Paren(this=node)


def _substitute(body: exp.Expression, values: dict[str, exp.Expression]) -> exp.Expression:
    """A macro body with its parameters replaced: `p` by its argument, `p.field` by argument.field.
    Lambda variables are identifiers, not columns, so a lambda never has its variable replaced."""
    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            parts = [part.name for part in node.parts]
            if parts[0] in values:
                result = _operand(values[parts[0]].copy())
                for field in parts[1:]:
                    result = exp.Dot(this=result, expression=exp.to_identifier(field))
                return result
        return node
    return body.copy().transform(replace, copy=False)


def inline(expression: exp.Expression, values: dict[str, exp.Expression] | None = None) -> exp.Expression:
    """expression with every duckrank.* scalar macro call replaced by its body, recursively."""
    def expand(node: exp.Expression) -> exp.Expression:
        call = _macro_call(node)
        if call is None:
            return node
        name, arguments = call
        called = macro(name)
        if len(arguments) != len(called.params):
            raise ValueError(f"duckrank.{name} takes {len(called.params)} arguments, got {len(arguments)}")
        return _operand(inline(_substitute(called.body, dict(zip(called.params, arguments)))))
    if values:
        expression = _substitute(expression, values)
    return expression.transform(expand, copy=False)  # every caller passes a tree of its own


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
                                          expression=_operand(value)), _ident("duckrank_sum"))
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


def bottom_up(tree: exp.Expression, rewrite: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """`rewrite` applied to every node of `tree` (in place), children first, so a rewritten node's
    parts are rewritten too (sqlglot's transform skips a replaced node's children)."""
    for key, value in list(tree.args.items()):
        if isinstance(value, exp.Expression):
            tree.set(key, bottom_up(value, rewrite))
        elif isinstance(value, list):
            tree.set(key, [bottom_up(v, rewrite) if isinstance(v, exp.Expression) else v for v in value])
    return rewrite(tree)


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
    return _drop_unused_ctes(query)


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
    return _hashed_judgments(_planned_once(_prune(to_spark(_plain_ctes(_expand_star_replace(body))))))


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


def _is_false(where: exp.Expression | None) -> bool:
    return where is not None and isinstance(where.this, exp.Boolean) and not where.this.this


def _prune(query: exp.Expression) -> exp.Expression:
    """With every option a literal, the branches of the other options' rules (WHERE ties = 'input'
    under ties := 'trec') are empty: fold the constants (fold_options) and drop those branches, so
    Spark neither plans nor runs them (it keeps no CTE, so each branch would read the inputs again)."""
    query = fold_options(query)
    for select in query.find_all(exp.Select):
        if select.args.get("where") is not None and select.args["where"].this == exp.true():
            select.set("where", None)
    ctes = {cte.alias: cte for cte in query.find_all(exp.CTE)}
    empty: set[str] = set()

    def is_empty(select: exp.Expression) -> bool:
        if isinstance(select, exp.Subquery):
            return is_empty(select.this)
        if isinstance(select, exp.Union):
            return is_empty(select.this) and is_empty(select.expression)
        if not isinstance(select, exp.Select):
            return False
        grouped = select.args.get("group") is not None
        aggregate = any(projection.find(exp.AggFunc) for projection in select.expressions)
        if _is_false(select.args.get("where")) and (grouped or not aggregate):
            return True
        if any(join.side not in ("", "LEFT") for join in select.args.get("joins") or []):
            return False
        source = select.args.get("from_") or select.args.get("from")
        inner = source.this if source else None
        emptied = (isinstance(inner, exp.Table) and inner.name in empty) or (
            isinstance(inner, exp.Subquery) and is_empty(inner))
        return emptied and (grouped or not aggregate)

    for name, cte in ctes.items():
        if is_empty(cte.this):
            empty.add(name)

    def drop(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Union) and not node.args.get("distinct"):
            if is_empty(node.expression):
                return node.this
            if is_empty(node.this):
                return _named_like(node.expression, node.this)
        return node
    while True:  # a dropped branch may leave a union whose other branch is empty too
        unions = len(list(query.find_all(exp.Union)))
        query = query.transform(drop, copy=False)
        if len(list(query.find_all(exp.Union))) == unions:
            break
    return _drop_unused_ctes(query)


def _named_like(kept: exp.Expression, dropped: exp.Expression) -> exp.Expression:
    """A union's second branch, left alone: its columns take the names the first branch gave them."""
    if not (isinstance(kept, exp.Select) and isinstance(dropped, exp.Select)) \
            or any(isinstance(p, exp.Star) for p in (*kept.expressions, *dropped.expressions)):
        return kept
    names = [p.alias_or_name for p in dropped.expressions]
    kept.set("expressions", [p if p.alias_or_name == name else exp.alias_(p.unalias(), name)
                             for p, name in zip(kept.expressions, names)])
    return kept


def _drop_unused_ctes(query: exp.Expression) -> exp.Expression:
    with_ = query.args.get("with_") or query.args.get("with")
    while with_ is not None:
        read = {table.name for table in query.find_all(exp.Table)}
        unused = [cte for cte in with_.expressions if cte.alias not in read]
        if not unused:
            break
        for cte in unused:
            cte.pop()
    return query


def narrowed_docs(query: exp.Expression, read: set[str]) -> exp.Expression:
    """A ranked query (ranked_query) whose docs carry only the fields in `read` (those the measures
    name, e.g. d.rank): Spark builds every field of every doc, interpreted, and unread ones cost
    alike (a gain map lookup, two powers for ERR). Each step of the docs' construction keeps what
    the next one reads; the relation and the values read are unchanged."""
    for alias in query.find_all(exp.Alias):
        if alias.alias != "docs" or not isinstance(alias.this, exp.Transform):
            continue
        wanted, step = set(read), alias.this
        while isinstance(step, exp.Transform) and isinstance(step.expression, exp.Lambda) \
                and isinstance(step.expression.this, exp.Struct):
            struct, variable = step.expression.this, step.expression.expressions[0].name
            kept = [field for field in struct.expressions if field.alias_or_name in wanted] or struct.expressions[:1]
            struct.set("expressions", kept)
            wanted = {dot.name for field in kept for dot in field.find_all(exp.Dot)
                      if isinstance(dot.this, exp.Identifier) and dot.this.name == variable}
            step = step.this
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


def fold_options(tree: exp.Expression) -> exp.Expression:
    """The option branches folded bottom up (what sqlglot's simplify does for them, in a fraction of
    its time, and what it leaves): a comparison or IN of literals, IS NULL of a literal, NOT, AND and
    OR of constants, COALESCE of a literal (what a NULL option leaves, coalesce(NULL, x)), the
    cardinality of the empty gain map, a CASE whose conditions are now constants. Nothing else
    changes: no arithmetic is folded, so every number is DuckDB's."""
    # a replacement goes through _operand: it keeps its operator's precedence
    def literal(node: exp.Expression) -> bool:
        return isinstance(node, (exp.Literal, exp.Boolean))

    def is_null(node: exp.Expression) -> bool:
        return isinstance(node, exp.Null) or (isinstance(node, exp.Cast) and isinstance(node.this, exp.Null))

    def fold(node: exp.Expression) -> exp.Expression:
        if isinstance(node, (exp.EQ, exp.NEQ)) and isinstance(node.this, exp.Literal) \
                and isinstance(node.expression, exp.Literal) and node.this.is_string and node.expression.is_string:
            return exp.Boolean(this=(node.this.this == node.expression.this) == isinstance(node, exp.EQ))
        if isinstance(node, exp.In) and isinstance(node.this, exp.Literal) and node.expressions \
                and all(isinstance(e, exp.Literal) for e in node.expressions):
            return exp.Boolean(this=node.this.this in {e.this for e in node.expressions})
        if isinstance(node, exp.Coalesce):
            arguments = [a for a in [node.this, *node.expressions] if not is_null(a)]
            if arguments and (literal(arguments[0]) or len(arguments) == 1):
                return _operand(arguments[0])
        if isinstance(node, exp.GT) and isinstance(node.this, exp.Anonymous) \
                and node.this.name.lower() == "cardinality" \
                and _is_empty_map(node.this.expressions[0]) and node.expression == exp.Literal.number(0):
            return exp.false()
        if isinstance(node, exp.Case):
            ifs = [branch for branch in node.args["ifs"] if branch.this != exp.false()]
            if ifs and ifs[0].this == exp.true():
                return _operand(ifs[0].args["true"])
            if not ifs:
                return _operand(node.args.get("default") or exp.Null())
            node.set("ifs", ifs)
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) \
                and (literal(node.this) or is_null(node.this)):
            return exp.Boolean(this=is_null(node.this))
        if isinstance(node, exp.Paren) and isinstance(node.this, exp.Boolean):
            return node.this
        if isinstance(node, exp.Not) and isinstance(node.this, exp.Boolean):
            return exp.Boolean(this=not node.this.this)
        if isinstance(node, (exp.And, exp.Or)):
            deciding = isinstance(node, exp.Or)  # the operand value that decides: TRUE for OR, FALSE for AND
            operands = [node.this, node.expression]
            if any(isinstance(o, exp.Boolean) and o.this == deciding for o in operands):
                return exp.Boolean(this=deciding)
            kept = [o for o in operands if not isinstance(o, exp.Boolean)]
            return _operand(kept[0]) if len(kept) == 1 else exp.Boolean(this=not deciding) if not kept else node
        return node

    return bottom_up(tree, fold)


def _is_empty_map(node: exp.Expression) -> bool:
    from duckrank.registry import EMPTY_GAIN_MAP

    return node == _parsed(EMPTY_GAIN_MAP) or (isinstance(node, exp.Paren) and node.this == _parsed(EMPTY_GAIN_MAP))


@cache
def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="duckdb")
