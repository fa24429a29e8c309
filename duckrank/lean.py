"""The lean rendering of a ranking pass: duckrank.rank_queries and the measures over it as one
DuckDB statement with no macro call in it, every option a literal and the branches of the other
options' rules folded away.

DuckDB binds a macro call by expanding it, every time: on small inputs binding the composed macro
query (every tie rule's branch included, dropped only after binding) and optimising it cost about
as much as running it (issue 22). Rendered once here with the inliner the Spark engine
uses too (duckrank._inliner: sqlglot, DuckDB dialect out), the statement binds only the branch asked
for and each doc carries only the fields the measures read. The math is still only sql/'s: this
module renders the macros, it writes none. Needs sqlglot (the `spark` extra); without it
available() is False and the DuckDB engine calls the macros.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import tempfile
from collections import Counter
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

# What a data check that fires without naming the row says: duckrank.rank_queries_lean's error ends
# so (sql/20_ranked.sql), and a lean statement of duckrank.rank_queries says it too. The checks'
# wording (the input, the row, the value and the fix, each shown safely) is half of S5K's statement
# and about 40% of its binding time, so a lean statement checks without it; when a check fires, the
# caller runs duckrank.rank_queries' checks on the same data for the message
# (duckrank._duckdb_sql.worded_problem).
CHECK_FIRED = "duckrank.rank_queries names the row"

# Stand-ins for the run and qrels views in a cached statement: each call's views have fresh names,
# written in by pass_sql() (they are duckrank's own identifiers, never user text).
RUN_VIEW, QRELS_VIEW = "duckrank_lean_run_view", "duckrank_lean_qrels_view"


@cache
def available() -> bool:
    """Whether sqlglot is installed: looked up, not imported (importing it is most of a render's cost)."""
    return importlib.util.find_spec("sqlglot") is not None


# Rendering a pass costs far more than binding its macros once (S5K's pass: 0.2 s of CPU to import
# sqlglot, 0.7 s to render, on a busy machine), so a process renders a pass the RENDER_FROM_CALL-th
# time it is asked for, or at once when the run has RENDER_AT_ROWS rows or more, where the lean
# statement's faster execution repays the render (T5M's 5 M run rows as Parquet: the macros
# 7.0-8.6 s, the lean statement 4.7-5.1 s; at 1 M rows the two are even, and a render costs about
# 1 s). A rendered pass is kept in the cache folder (duckrank._library.cache_folder), so that any
# later process, a CLI call too, finds it from its first call.
RENDER_FROM_CALL = 2
RENDER_AT_ROWS = 2_000_000
_asked: Counter[tuple] = Counter()


def pass_sql(relation: str, arguments: dict[str, Any], values: list[str], run_view: str, qrels_view: str,
             rows: int = 0, query_key: str = "q.query_id") -> str | None:
    """SELECT <query_key>, q.num_rel, <value 0> AS v0, ... FROM (<the ranked relation>) q for one
    ranking pass over two views: its relation (duckrank.rank_queries or rank_queries_lean) and that
    macro's arguments after qrels and run (RankingPass), and
    the per-query value of each of its measures as SQL over the ranked row `q`, e.g.
    CAST(duckrank.empty_policy(duckrank.ndcg_of(q, 10, 'qrels'), q.num_rel, 'zero') AS DOUBLE).
    rows: the run's. query_key: the key the rows lead with (q.query_id, or the ranking's key of
    several runs, q.duckrank_key AS query_id). None while the pass is neither stored nor worth
    rendering yet: the caller calls the macros."""
    key = (relation, tuple((name, tuple(sorted(value.items())) if isinstance(value, dict) else value)
                           for name, value in arguments.items()), tuple(values), query_key)
    if len(_asked) > 1000:
        _asked.clear()
    _asked[key] += 1
    template = _stored(key)
    if template is None:
        if _asked[key] < RENDER_FROM_CALL and rows < RENDER_AT_ROWS:
            return None
        template = _pass_template(*key)
        _store(key, template)
    return template.replace(RUN_VIEW, run_view).replace(QRELS_VIEW, qrels_view)


# The modules whose code a rendered pass depends on besides the library: this renderer, the
# inliner, and the literals it writes (measures, options, _sql).
RENDERER_MODULES = ("lean.py", "_inliner.py", "measures.py", "options.py", "_sql.py")


@cache
def _renderer_digest() -> str | None:
    """What a stored pass depends on besides its key: the library, the renderer's code and
    sqlglot's version (read from its _version.py: importlib.metadata costs tens of milliseconds of a
    first call). None when sqlglot has no version file to key a stored pass by."""
    from duckrank._library import library_digest

    spec = importlib.util.find_spec("sqlglot")
    versioned = Path(spec.origin).parent / "_version.py" if spec is not None and spec.origin else None
    if versioned is None or not versioned.is_file():
        return None
    digest = hashlib.sha256(library_digest().encode() + versioned.read_bytes())
    for name in RENDERER_MODULES:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()


def _stored_path(key: tuple) -> Path | None:
    """The file that keeps a rendered pass: in the cache folder, named by a digest of its key and of
    what rendered it. None when passes are not kept."""
    from duckrank._library import cache_folder

    folder, digest = cache_folder(), _renderer_digest()
    if folder is None or digest is None:
        return None
    return folder / f"lean-{hashlib.sha256((digest + repr(key)).encode()).hexdigest()[:32]}.json"


_templates: dict[tuple, str] = {}


def _stored(key: tuple) -> str | None:
    """The pass rendered before, in this process or kept by an earlier one; None if none was. A file
    that does not hold this very key (unreadable, cut short, another key) is not used."""
    if key in _templates:
        return _templates[key]
    try:
        path = _stored_path(key)
        held = json.loads(path.read_text(encoding="utf-8")) if path is not None and path.is_file() else None
    except (OSError, ValueError):
        return None
    if not isinstance(held, dict) or held.get("key") != repr(key) or not isinstance(held.get("sql"), str):
        return None
    return _kept(key, held["sql"])


def _store(key: tuple, template: str) -> None:
    """Keep a rendered pass for this process and, written whole or not at all (a temporary file
    renamed), for later ones; a folder that cannot take it only costs them a render."""
    _kept(key, template)
    try:
        path = _stored_path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".lean-", suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as file:
                json.dump({"key": repr(key), "sql": template}, file)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        _prune(path.parent)
    except OSError:
        pass  # a read-only or full folder: later processes render the pass again


# Stored passes kept at most: a sweep over k or an upgraded duckrank leaves passes no call asks for
# again, and the folder must not grow without end (a pass is 10-20 KB).
MAX_STORED_PASSES = 500


def _prune(folder: Path) -> None:
    """The oldest stored passes removed once the folder holds more than MAX_STORED_PASSES."""
    stored = sorted(folder.glob("lean-*.json"), key=lambda path: path.stat().st_mtime)
    for path in stored[:max(0, len(stored) - MAX_STORED_PASSES)]:
        with contextlib.suppress(OSError):
            path.unlink()


def _kept(key: tuple, template: str) -> str:
    if len(_templates) > 256:
        _templates.clear()
    _templates[key] = template
    return template


def _pass_template(relation: str, arguments: tuple[tuple[str, Any], ...], values: tuple[str, ...],
                   query_key: str) -> str:
    """pass_sql over RUN_VIEW and QRELS_VIEW, a gain map as sorted pairs."""
    from sqlglot import exp

    from duckrank._inliner import constant_columns, narrowed_docs

    ranked = _ranked(relation, arguments)
    constants = constant_columns(ranked)
    expressions, shared = shared_subexpressions([_value(value, constants) for value in values])
    read = {dot.name for expression in (*expressions, *shared) for dot in expression.find_all(exp.Dot)}
    source = _duckdb(narrowed_docs(ranked.copy(), read))
    if shared:
        source = f"SELECT q.*{''.join(f', {_duckdb(tree)} AS s{i}' for i, tree in enumerate(shared))} FROM ({source}) q"
    columns = "".join(f", {_duckdb(expression)} AS v{i}" for i, expression in enumerate(expressions))
    return f"SELECT {query_key}, q.num_rel{columns} FROM ({source}) q"


def shared_subexpressions(values: list[Any]) -> tuple[list[Any], list[Any]]:
    """(values, shared): the values with each subtree that they compute from the ranked row q in two
    or more places replaced by q.s0, q.s1, ..., and those subtrees, largest first. DuckDB binds every
    copy (empty_policy names its value three times, average precision its relevant ranks four), so
    each is computed once, in a projection under the values. Only a subtree that one of its places
    computes for every row moves (one not only in a CASE branch, a later COALESCE argument, the right
    of AND or OR, or a lambda's body), so computing it for every row raises nothing the values would
    not; no subtree with an error() call moves."""
    from sqlglot import exp

    # The places of every subtree met twice or more, in one walk: each node numbered by its kind,
    # its arguments and its children's numbers (so a number names one tree, exactly, in linear time;
    # texts for every subtree, or a walk per subtree moved, made a render of 160 measures take minutes).
    numbers: dict[int, int] = {}
    trees: dict[tuple, int] = {}
    by_tree: dict[int, list[Any]] = {}
    for value in values:
        for node in reversed(list(value.walk())):  # breadth first, reversed: children before parents
            number = numbers[id(node)] = trees.setdefault(_tree_key(node, numbers), len(trees))
            if not _never_moved(node):
                by_tree.setdefault(number, []).append(node)
    places = {nodes[0].sql("duckdb"): nodes for nodes in by_tree.values() if len(nodes) > 1 and _movable(nodes[0])}
    # Largest first (a stable sort: equal lengths in the order first met): a place inside a subtree
    # already moved is gone with it, so what is left of a smaller one is counted again.
    shared: list[Any] = []
    moved: set[int] = set()
    for text in sorted(places, key=len, reverse=True):
        nodes = [node for node in places[text] if not _inside(node, moved)]
        if len(nodes) < 2 or not any(map(_always_computed, nodes)):
            continue
        shared.append(nodes[0].copy())
        for node in nodes:
            column = exp.column(f"s{len(shared) - 1}", table="q")
            values = [column if value is node else value for value in values]
            moved.add(id(node))
            if node.parent is not None:
                node.replace(column)
    return values, shared


def _tree_key(node: Any, numbers: dict[int, int]) -> tuple:
    """A node's kind and arguments, each child by its number in `numbers`."""
    from sqlglot import exp

    parts: list[Any] = [type(node).__name__]
    for name in sorted(node.args):
        value = node.args[name]
        if isinstance(value, exp.Expr):
            parts.append((name, numbers[id(value)]))
        elif isinstance(value, list):
            parts.append((name, tuple(numbers[id(x)] if isinstance(x, exp.Expr) else repr(x) for x in value)))
        else:
            parts.append((name, repr(value)))
    return tuple(parts)


def _inside(node: Any, moved: set[int]) -> bool:
    """Whether `node` or one of its ancestors is a subtree already moved (by id)."""
    while node is not None:
        if id(node) in moved:
            return True
        node = node.parent
    return False


def _never_moved(node: Any) -> bool:
    """Whether a node is of a kind never moved whatever it holds: a column, a literal, a type, a
    lambda, a CASE branch, parentheses, a struct field; a column of the ranked row."""
    from sqlglot import exp

    from duckrank._inliner import ranked_column

    return isinstance(node, (exp.Column, exp.Literal, exp.Identifier, exp.Boolean, exp.Null, exp.DataType, exp.Lambda,
                             exp.If, exp.Paren, exp.PropertyEQ)) or ranked_column(node) is not None


def _movable(node: Any) -> bool:
    """Whether a subtree computes a value from columns of q alone: it reads some, no other column
    and no lambda variable bound outside it, and calls no error()."""
    from sqlglot import exp

    from duckrank._inliner import ranked_column, reads_variable

    if _never_moved(node):
        return False
    columns = list(node.find_all(exp.Column))
    if not columns or any(column.table != "q" and not ranked_column(column.parent) for column in columns):
        return False
    if any(isinstance(call, exp.Anonymous) and call.name.lower() == "error" for call in node.find_all(exp.Anonymous)):
        return False
    bound = {variable.name for function in node.find_all(exp.Lambda) for variable in function.expressions}
    return all(identifier.name in bound for identifier in node.find_all(exp.Identifier) if reads_variable(identifier))


def _always_computed(node: Any) -> bool:
    """Whether a subtree of a value is computed for every row: none of its ancestors makes it
    conditional (a CASE branch or a later WHEN, a later COALESCE argument, the right of AND or OR,
    a lambda's body)."""
    from sqlglot import exp

    child = node
    while child.parent is not None:
        parent, key = child.parent, child.arg_key
        if isinstance(parent, exp.Lambda) or (isinstance(parent, exp.Coalesce) and key == "expressions") \
                or (isinstance(parent, (exp.And, exp.Or)) and key == "expression") \
                or (isinstance(parent, exp.Case) and key == "default"):
            return False
        if isinstance(parent, exp.If) and (key != "this" or not (isinstance(parent.parent, exp.Case)
                                                                 and parent.parent.args["ifs"][0] is parent)):
            return False
        child = parent
    return True


@lru_cache(maxsize=64)
def _ranked(relation: str, arguments: tuple[tuple[str, Any], ...]) -> Any:
    """duckrank.<relation> over RUN_VIEW and QRELS_VIEW with every argument a literal, inlined and
    folded (an AST: the caller copies it before changing it)."""
    import sqlglot
    from sqlglot import exp

    from duckrank.measures import option_literal
    from duckrank.options import EMPTY_GAIN_MAP
    from duckrank._inliner import inline, macro, prune

    values = {name: dict(value) if name == "gain_map" else value for name, value in arguments}
    ranked = macro(relation)
    substitutions = {name: sqlglot.parse_one(EMPTY_GAIN_MAP if name == "gain_map" and not values[name]
                                             else option_literal(values[name]), read="duckdb")
                     for name in ranked.params if name not in ("qrels", "run")}
    # the names the data checks' messages show: duckrank's error translation replaces them by the inputs'
    substitutions["qrels"], substitutions["run"] = exp.Literal.string(QRELS_VIEW), exp.Literal.string(RUN_VIEW)
    views = {"qrels": QRELS_VIEW, "run": RUN_VIEW}

    def table_reads(node: exp.Expression) -> exp.Expression:
        # query_table(CAST(run AS VARCHAR)) reads the input: here the call's view
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Anonymous) and node.this.name == "query_table":
            return exp.to_table(views[node.this.expressions[0].find(exp.Column).name])
        return node
    body = prune(inline(ranked.body.copy().transform(table_reads, copy=False), substitutions))
    for cte in body.find_all(exp.CTE):
        if cte.alias == "problems":  # each check keeps its condition; its message is CHECK_FIRED
            for check in _branches(cte.this):
                check.set("expressions", [exp.alias_(exp.Literal.string(CHECK_FIRED), "problem")])
    return body


def _branches(query: Any) -> list[Any]:
    """The SELECTs a UNION of (parenthesised) SELECTs is made of."""
    from sqlglot import exp

    if isinstance(query, exp.Subquery):
        return _branches(query.this)
    if isinstance(query, exp.Union):
        return _branches(query.this) + _branches(query.expression)
    return [query]


def _value(sql: str, constants: dict[str, Any]) -> Any:
    """A measure's per-query value over `q`, inlined, with q's constant columns as literals, folded."""
    from duckrank._inliner import with_constant_columns

    return with_constant_columns(_inlined(sql).copy(), constants)


@lru_cache(maxsize=256)
def _inlined(sql: str) -> Any:
    """A per-query value inlined (the caller copies it before changing it): the same under every
    convention, so a pass of other options renders it again for a copy's cost. A tree is about
    90 KB: 256 hold all_trec's 96 values and more, in at most about 24 MB."""
    import sqlglot

    from duckrank._inliner import inline

    return inline(sqlglot.parse_one(sql, read="duckdb"))


def _duckdb(tree: Any) -> str:
    """A tree as DuckDB SQL, without the macros' comments. log2(x) stays log2: sqlglot spells it
    log(2, x), whose last bit differs. The tree is changed, not copied (every caller passes its own:
    sqlglot's copy before generating was 8% of a render)."""
    from sqlglot import exp

    def log2(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Log) and node.expression is not None and node.this == exp.Literal.number(2):
            return exp.Anonymous(this="log2", expressions=[node.expression])
        return node
    return tree.transform(log2, copy=False).sql("duckdb", copy=False, comments=False)
