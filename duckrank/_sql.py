"""Writing values and names into the SQL that duckrank composes: quoted, never spliced raw."""

from __future__ import annotations

import itertools
import re
from typing import Any

_names = itertools.count()


def fresh_name(what: str) -> str:
    """A name for a view or table duckrank creates, unique in this process: every module takes
    its names from this one counter, so no two can collide on a connection."""
    return f"duckrank_{what}_{next(_names)}"


def fresh_names_in(text: str) -> set[str]:
    """The names fresh_name made that a text holds: an error that names duckrank's own views."""
    return set(re.findall(r"\bduckrank_[a-z_]+_\d+\b", text))


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: Any) -> str:
    """A Python value as a SQL literal: NULL, a boolean, a number, a quoted string, a MAP, or a list
    of numbers (a tuple)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else f"'{value}'::DOUBLE"
    if isinstance(value, dict):
        return "MAP {" + ", ".join(f"{sql_literal(float(k))}: {sql_literal(float(v))}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(sql_literal(float(v)) for v in value) + "]"
    return "'" + str(value).replace("'", "''") + "'"
