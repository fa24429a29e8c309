"""The macros of sql/ as sqlglot trees, shared by the Spark engine (duckrank.spark._render) and the
lean DuckDB rendering (duckrank.lean): a hand-written macro parsed, every duckrank.* call inlined,
the option branches folded once the options are literals (fold_options) and the emptied branches
pruned (prune). No metric is written here: the math is sql/'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import sqlglot
from sqlglot import exp

from duckrank._library import GENERATED, library_files

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


def operand(node: exp.Expression) -> exp.Expression:
    return node if isinstance(node, _ATOMIC) else exp.Paren(this=node)


def _substitute(body: exp.Expression, values: dict[str, exp.Expression]) -> exp.Expression:
    """A macro body with its parameters replaced: `p` by its argument, `p.field` by argument.field.
    Lambda variables are identifiers, not columns, so a lambda never has its variable replaced."""
    def replace(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Column):
            parts = [part.name for part in node.parts]
            if parts[0] in values:
                result = operand(values[parts[0]].copy())
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
        return operand(_applied(inline(_substitute(called.body, dict(zip(called.params, arguments))))))
    if values:
        expression = _substitute(expression, values)
    return expression.transform(expand, copy=False)  # every caller passes a tree of its own


def _applied(node: exp.Expression) -> exp.Expression:
    """A macro body that is list_transform([x], lambda v: body)[1] (duckrank.ratio: DuckDB binds
    its argument x once so) as body with v replaced by x: a lean statement computes a value used
    twice once anyway (lean.shared_subexpressions), and Spark builds no list per row."""
    if not (isinstance(node, exp.Bracket) and node.expressions == [exp.Literal.number(0)]
            and isinstance(node.this, exp.Transform) and isinstance(node.this.this, exp.Array)
            and len(node.this.this.expressions) == 1 and isinstance(node.this.expression, exp.Lambda)
            and len(node.this.expression.expressions) == 1):
        return node
    value, function = node.this.this.expressions[0], node.this.expression
    variable = function.expressions[0].name
    if any(inner.name == variable for lambda_ in function.this.find_all(exp.Lambda) for inner in lambda_.expressions):
        return node  # shadowed in the body: left as it is

    def put(identifier: exp.Expression) -> exp.Expression:
        if isinstance(identifier, exp.Identifier) and identifier.name == variable and reads_variable(identifier):
            return operand(value.copy())
        return identifier
    return function.this.transform(put, copy=False)


def reads_variable(identifier: exp.Identifier) -> bool:
    """Whether an identifier reads a lambda variable's value: not a column's or a field's name, a
    struct key, a type, or a lambda's own parameter."""
    parent = identifier.parent
    return not isinstance(parent, (exp.Column, exp.Lambda, exp.PropertyEQ, exp.DataType, exp.ColumnDef)) \
        and not (isinstance(parent, exp.Dot) and identifier.arg_key == "expression")


def bottom_up(tree: exp.Expression, rewrite: Callable[[exp.Expression], exp.Expression]) -> exp.Expression:
    """`rewrite` applied to every node of `tree` (in place), children first, so a rewritten node's
    parts are rewritten too (sqlglot's transform skips a replaced node's children)."""
    for key, value in list(tree.args.items()):
        if isinstance(value, exp.Expression):
            tree.set(key, bottom_up(value, rewrite))
        elif isinstance(value, list):
            tree.set(key, [bottom_up(v, rewrite) if isinstance(v, exp.Expression) else v for v in value])
    return rewrite(tree)


def _is_false(where: exp.Expression | None) -> bool:
    return where is not None and isinstance(where.this, exp.Boolean) and not where.this.this


def prune(query: exp.Expression) -> exp.Expression:
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
        if not _is_false(select.args.get("where")):
            if any(join.side not in ("", "LEFT") for join in select.args.get("joins") or []):
                return False
            source = select.args.get("from_") or select.args.get("from")
            inner = source.this if source else None
            if not ((isinstance(inner, exp.Table) and inner.name in empty) or (
                    isinstance(inner, exp.Subquery) and is_empty(inner))):
                return False
        # no row in: no row out, unless an aggregate without GROUP BY makes its one row of NULLs
        return select.args.get("group") is not None or not any(
            projection.find(exp.AggFunc) for projection in select.expressions)

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
    # innermost first, so a union is looked at once, its branches already pruned (a union is empty
    # when both its branches are, so pruning a branch never changes what its parent decides)
    for union in reversed(list(query.find_all(exp.Union))):
        kept = drop(union)
        if kept is union:
            continue
        if union is query:
            query = kept
        else:
            union.replace(kept)
    return drop_unused_ctes(query)


def _named_like(kept: exp.Expression, dropped: exp.Expression) -> exp.Expression:
    """A union's second branch, left alone: its columns take the names the first branch gave them."""
    if not (isinstance(kept, exp.Select) and isinstance(dropped, exp.Select)) \
            or any(isinstance(p, exp.Star) for p in (*kept.expressions, *dropped.expressions)):
        return kept
    names = [p.alias_or_name for p in dropped.expressions]
    kept.set("expressions", [p if p.alias_or_name == name else exp.alias_(p.unalias(), name)
                             for p, name in zip(kept.expressions, names)])
    return kept


def drop_unused_ctes(query: exp.Expression) -> exp.Expression:
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


def ranked_column(node: exp.Expression) -> str | None:
    """The name of the ranked row's column that node reads, as a value writes it (q.num_rel) or as a
    macro's body inlined over q does (duckrank.ndcg_of(q, ...) reads q.ideal as a field of q); None
    if node reads none."""
    if isinstance(node, exp.Column) and node.table == "q":
        return node.name
    if isinstance(node, exp.Dot) and isinstance(node.this, exp.Column) and not node.this.table \
            and node.this.name == "q":
        return node.expression.name
    return None


def constant_columns(ranked: exp.Expression) -> dict[str, exp.Expression]:
    """The ranked relation's columns that are one literal for every row once the options are
    literals (tie_rule, all_docs), by name."""
    return {projection.alias: projection.this for projection in ranked.expressions
            if isinstance(projection, exp.Alias) and isinstance(projection.this, (exp.Literal, exp.Boolean))}


def with_constant_columns(value: exp.Expression, constants: dict[str, exp.Expression]) -> exp.Expression:
    """A per-query value over the ranked row `q` with its reads of q's constant columns replaced by
    their literals, then folded: a measure's refusal of ties := 'average' (CASE WHEN q.tie_rule =
    'average' THEN error(...)) goes under any other tie rule, and so do the branches of all_docs."""
    def constant(node: exp.Expression) -> exp.Expression:
        name = ranked_column(node)
        return constants[name].copy() if name in constants else node
    return fold_options(value.transform(constant, copy=False))


def fold_options(tree: exp.Expression) -> exp.Expression:
    """The option branches folded bottom up (what sqlglot's simplify does for them, in a fraction of
    its time, and what it leaves): a comparison or IN of literals, IS NULL of a literal, NOT, AND and
    OR of constants, COALESCE of a literal (what a NULL option leaves, coalesce(NULL, x)), the
    cardinality of the empty gain map, a CASE whose conditions are now constants (or a CASE on a
    literal whose WHEN values are literals: CASE 'R' WHEN 'min' ...). Nothing else
    changes: no arithmetic is folded, so every number is DuckDB's."""
    # a replacement goes through operand: it keeps its operator's precedence
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
                return operand(arguments[0])
        if isinstance(node, exp.GT) and isinstance(node.this, exp.Anonymous) \
                and node.this.name.lower() == "cardinality" \
                and _is_empty_map(node.this.expressions[0]) and node.expression == exp.Literal.number(0):
            return exp.false()
        if isinstance(node, exp.Case) and isinstance(node.this, exp.Literal) and node.this.is_string \
                and all(isinstance(branch.this, exp.Literal) and branch.this.is_string for branch in node.args["ifs"]):
            # CASE 'R' WHEN 'min' THEN ... : the branch of the text's value
            chosen = next((branch.args["true"] for branch in node.args["ifs"] if branch.this == node.this),
                          node.args.get("default") or exp.Null())
            return operand(chosen)
        if isinstance(node, exp.Case):
            ifs = [branch for branch in node.args["ifs"] if branch.this != exp.false()]
            if ifs and ifs[0].this == exp.true() and not _raises(ifs[0].args["true"]):
                return operand(ifs[0].args["true"])
            if not ifs:
                return operand(node.args.get("default") or exp.Null())
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
            return operand(kept[0]) if len(kept) == 1 else exp.Boolean(this=not deciding) if not kept else node
        return node

    return bottom_up(tree, fold)


def _raises(node: exp.Expression) -> bool:
    """Whether node is an error() call. A CASE that is sure to raise stays a CASE: error() alone has
    no type, and DuckDB folds error(...) * x to NULL without raising; the CASE has its ELSE's type."""
    return isinstance(node, exp.Anonymous) and node.name.lower() == "error"


def _is_empty_map(node: exp.Expression) -> bool:
    from duckrank.options import EMPTY_GAIN_MAP

    return node == _parsed(EMPTY_GAIN_MAP) or (isinstance(node, exp.Paren) and node.this == _parsed(EMPTY_GAIN_MAP))


@cache
def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="duckdb")
