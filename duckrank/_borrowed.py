"""A connection the caller owns (con=), borrowed for one call and given back as it was found."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Self

import duckdb

from duckrank._library import has_library_schema, holds_library
from duckrank._sql import quote_identifier

class BorrowedConnection:
    """On a connection the caller owns (con=), leave the database as it was found: the engine
    settings the call changed restored, the call's views and tables dropped (but the tables a
    returned relation reads), and the macro library removed again: the whole schema when the call
    made it, else just the macros and views it added to the caller's own schema `duckrank` (so each
    such call loads it: pass a duckrank.connect() connection to load it once)."""

    SETTINGS = ("threads", "memory_limit", "temp_directory")

    def __init__(self, con: duckdb.DuckDBPyConnection | None) -> None:
        self.con = con
        self.kept: set[str] = set()

    @classmethod
    def of(cls, con: duckdb.DuckDBPyConnection | None) -> BorrowedConnection:
        """The guard for a call given `con`: a no-op for none (duckrank's own connection) and for
        a connection that holds the library (duckrank.connect()'s, the caller's to manage)."""
        return cls(con if con is not None and not holds_library(con) else None)

    def keep(self, *names: str | None) -> None:
        self.kept.update(name for name in names if name)

    def __enter__(self) -> Self:
        if self.con is not None:
            self.settings = {name: self._setting(name) for name in self.SETTINGS}
            self.had_library = has_library_schema(self.con)
            self.before = self._objects()
            self.library_before = self._library_objects()
        return self

    def _objects(self) -> set[tuple[str, str]]:
        return set(self.con.execute(
            "SELECT 'VIEW', view_name FROM duckdb_views() WHERE view_name LIKE 'duckrank\\_%' ESCAPE '\\' "
            "UNION ALL SELECT 'TABLE', table_name FROM duckdb_tables() "
            "WHERE table_name LIKE 'duckrank\\_%' ESCAPE '\\'").fetchall())

    def _library_objects(self) -> set[tuple[str, str]]:
        """(DROP keyword, name) of every macro and view in schema duckrank of the current database."""
        return set(self.con.execute(
            "SELECT CASE function_type WHEN 'table_macro' THEN 'MACRO TABLE' ELSE 'MACRO' END, function_name "
            "FROM duckdb_functions() WHERE schema_name = 'duckrank' AND database_name = current_database() "
            "AND function_type IN ('macro', 'table_macro') "
            "UNION ALL SELECT 'VIEW', view_name FROM duckdb_views() "
            "WHERE schema_name = 'duckrank' AND database_name = current_database()").fetchall())

    def _setting(self, name: str) -> Any:
        return self.con.execute(f"SELECT current_setting('{name}')").fetchall()[0][0]

    def __exit__(self, *exc: object) -> None:
        if self.con is None:
            return
        # views first: they read the tables
        for kind, name in sorted(self._objects() - self.before, key=lambda item: item[0] == "TABLE"):
            if name not in self.kept:
                self.con.execute(f"DROP {kind} IF EXISTS {quote_identifier(name)}").fetchall()
        for name, value in self.settings.items():
            if self._setting(name) != value:  # only a setting the call changed: the others stay exact
                self._restore(name, value)
        if not self.had_library:  # the tables kept are materialised: they read no macro
            self.con.execute("DROP SCHEMA IF EXISTS duckrank CASCADE").fetchall()
            return
        # views first: they may call the macros
        for kind, name in sorted(self._library_objects() - self.library_before, key=lambda item: item[0] != "VIEW"):
            self.con.execute(f"DROP {kind} IF EXISTS duckrank.{quote_identifier(name)}").fetchall()

    def _restore(self, name: str, shown: str) -> None:
        """Set `name` back to the value that read back as `shown`. DuckDB shows a size truncated to a
        tenth of its unit (counted in whole 1/1024ths of it) and exposes no exact value, so setting
        the text back drifts down a tenth each call ('2.7GiB' reads 2.6 GiB, which set reads 2.5
        GiB). So: the default when it reads the same, else the fewest bytes that read as `shown`,
        which read the same however often they are restored."""
        self.con.execute(f"RESET {name}").fetchall()
        if self._setting(name) == shown:
            return
        size = re.fullmatch(r"(\d+(?:\.\d+)?) ([KMGTP])iB", shown) if name == "memory_limit" else None
        if size:
            sub_unit = 1024 ** "KMGTP".index(size[2])
            shown = f"{math.ceil(Fraction(size[1]) * 1024) * sub_unit}B"
        self.con.execute(f"SET {name} = ?", [shown]).fetchall()
