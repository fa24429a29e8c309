"""Writing values and names into the SQL that duckrank composes: quoted, never spliced raw."""

from __future__ import annotations

from typing import Any


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(value: Any) -> str:
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
        return "MAP {" + ", ".join(f"{literal(float(k))}: {literal(float(v))}" for k, v in value.items()) + "}"
    if isinstance(value, tuple):
        return "[" + ", ".join(literal(float(v)) for v in value) + "]"
    return "'" + str(value).replace("'", "''") + "'"
