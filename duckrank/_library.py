"""Find and load the SQL macro library (sql/*.sql), the single source of every metric."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable
from functools import cache, wraps
from pathlib import Path
from typing import Any

import duckdb

from duckrank._sql import fresh_name, quote_identifier, sql_literal
from duckrank.errors import Problem, subject


def sql_dir() -> Path:
    """The folder of numbered .sql files: inside the installed wheel, or the repository's sql/."""
    packaged = Path(__file__).parent / "sql"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent / "sql"


# The files `python -m duckrank._generate` writes from duckrank/registry.py: the option checks
# every front door runs, the measures' public table macros (the shell's front doors, which only wrap
# the hand-written macros) and fusion's.
OPTION_CHECKS = "55_option_checks.sql"
FRONT_DOORS = "60_measures.sql"
FUSION_DOORS = "75_fusion_methods.sql"
GENERATED = (OPTION_CHECKS, FRONT_DOORS, FUSION_DOORS)


@cache
def library_files() -> tuple[Path, ...]:
    """The library's files in load order (00_schema.sql first); sql/duckrank.sql is the shell's
    `.read` entry point and is not among them."""
    files = tuple(sorted(sql_dir().glob("[0-9][0-9]_*.sql")))
    if not files:
        raise RuntimeError(f"duckrank's SQL library is missing from {sql_dir()}; reinstall duckrank")
    return files


@cache
def library_sql() -> str:
    """The whole macro library as one SQL script, e.g. for `duckrank sql | duckdb my.db`."""
    return "\n".join(path.read_text(encoding="utf-8") for path in library_files())


# Installing replaces schema duckrank whole: SQL cannot list a schema's macros to drop them one by
# one, and a macro an older library defined but this one does not would otherwise stay behind.
# The schema is the library's; sql/duckrank.sql starts with the same statement.
REPLACE_SCHEMA = "DROP SCHEMA IF EXISTS duckrank CASCADE;\n"


@cache
def install_sql() -> str:
    """The script that installs the library in a database (`duckrank sql | duckdb my.db`, load()):
    schema duckrank dropped with whatever an older library left in it, then every macro."""
    return REPLACE_SCHEMA + library_sql()


# Fusion's macros: loaded into the shared database by the first fuse(), as most processes only
# evaluate and these files would add a third to every first call's library load.
FUSION_FILES = ("70_fusion.sql", FUSION_DOORS)


def _macros_only(paths: list[Path]) -> str:
    """The files' statements without the COMMENTs (they document the catalog that
    `duckrank.connect()` and the shell get)."""
    statements = (statement for path in paths for statement in path.read_text(encoding="utf-8").split(";\n"))
    return ";\n".join(statement for statement in statements
                       if not re.match(r"(\s*--[^\n]*\n)*\s*COMMENT ON\b", statement))


@cache
def evaluation_sql() -> str:
    """The part of the library evaluate() runs: every file but the front doors' table macros
    (evaluate() calls the relations they wrap) and fusion's. Loading it is most of a first call's cost."""
    return _macros_only([path for path in library_files() if path.name not in (FRONT_DOORS, *FUSION_FILES)])


@cache
def fusion_sql() -> str:
    """Fusion's macros, which fusion_cursor() adds to the shared database."""
    return _macros_only([path for path in library_files() if path.name in FUSION_FILES])


@cache
def library_digest() -> str:
    """A fingerprint of the library's text, stored in the database it is loaded into."""
    return hashlib.sha256(library_sql().encode()).hexdigest()[:16]


# The catalog cache (issue 22): parsing the library's script is most of a process's first call, so
# duckrank's own database attaches a DuckDB file holding the same macros instead, written by the
# first process that needs it. Only that database: load() and `duckrank sql` still give the script.
CACHE_FOLDER_VARIABLE = "DUCKRANK_CACHE_DIR"
# The catalog is attached as this database, where a call duckrank.x(...) finds it (its default
# schema) as long as the database holds no schema `duckrank`, which would make the name ambiguous.
CATALOG = "duckrank"
# The catalog holds every macro at the top of its database, so the script's schema is left out
# (were it not, the build would find duckrank.x ambiguous and fail: the script would run instead).
CREATE_SCHEMA = "CREATE SCHEMA IF NOT EXISTS duckrank;\n"


def cache_folder() -> Path | None:
    """Where the catalog file is kept: DUCKRANK_CACHE_DIR, else $XDG_CACHE_HOME/duckrank, else
    ~/.cache/duckrank. None (no cache) when DUCKRANK_CACHE_DIR is set but empty, or there is no home."""
    given = os.environ.get(CACHE_FOLDER_VARIABLE)
    if given is not None:
        return Path(given) if given else None
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec: a relative or empty value is ignored
        return Path(xdg) / "duckrank"
    try:
        return Path.home() / ".cache" / "duckrank"
    except RuntimeError:
        return None


@cache
def catalog_digest() -> str:
    """A fingerprint of what a catalog file holds: the library's text and this module, which turns it
    into the catalog (a file's name and content carry it, so no file of another library is ever used)."""
    return hashlib.sha256(library_sql().encode() + Path(__file__).read_bytes()).hexdigest()[:16]


def catalog_path() -> Path | None:
    """The catalog file of this library and this DuckDB; None when caching is off. Other libraries'
    files stay: installs of other versions may share the folder, and would each delete the others'."""
    folder = cache_folder()
    return folder / f"catalog-{catalog_digest()}-duckdb-{duckdb.__version__}.duckdb" if folder else None


def catalog_sql() -> str:
    """The script that fills an attached catalog: evaluation's and fusion's macros, and the digest."""
    return (evaluation_sql().replace(CREATE_SCHEMA, "", 1) + ";\n" + fusion_sql()
            + f";\nCREATE MACRO {CATALOG}.catalog_digest() AS '{catalog_digest()}';\n")


def _write_catalog(path: Path) -> None:
    """The catalog file: catalog_sql() run on it, attached as CATALOG."""
    _write_database(path, catalog_sql(), CATALOG)


def _write_database(path: Path, script: str, name: str, use: bool = False) -> None:
    """Build a DuckDB file by running `script` on it, attached as `name` (and the default database
    while it runs, with `use`), in one transaction (a commit per macro would write and sync the
    file's log a thousand times), in a fresh folder beside `path`, then move it into place: a
    concurrent process (a pytest-xdist worker, a parallel CLI call) sees the old file or the new
    one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    building = tempfile.mkdtemp(prefix=".building-", dir=path.parent)
    try:
        built = os.path.join(building, path.name)
        con = duckdb.connect()
        try:
            con.execute(f"ATTACH {sql_literal(built)} AS {name}").fetchall()
            if use:
                con.execute(f"USE {name}").fetchall()
            con.execute(f"BEGIN;\n{script}\nCOMMIT;").fetchall()
            if use:
                con.execute("USE memory").fetchall()
            con.execute(f"DETACH {name}").fetchall()  # checkpointed and closed: complete before it moves
        finally:
            con.close()
        os.replace(built, path)
    finally:
        shutil.rmtree(building, ignore_errors=True)


def _attach_catalog(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Attach the catalog file read-only (any number of processes may) if it is this library's."""
    return path.is_file() and _attach_checked(con, path, CATALOG, f"{CATALOG}.catalog_digest()", catalog_digest())


def _attach_checked(con: duckdb.DuckDBPyConnection, path: Path, name: str, digest_call: str, digest: str) -> bool:
    """Attach the DuckDB file at `path` read-only as `name` if its `digest_call` answers `digest`;
    else leave nothing attached and answer False (a corrupt, truncated or foreign file)."""
    try:
        con.execute(f"ATTACH {sql_literal(str(path))} AS {name} (READ_ONLY)").fetchall()
    except duckdb.Error:
        return False  # corrupt, truncated or no DuckDB file
    try:
        if con.execute(f"SELECT {digest_call}").fetchall()[0][0] == digest:
            return True
    except duckdb.Error:
        pass  # a foreign DuckDB file
    con.execute(f"DETACH {name}").fetchall()
    return False


def _attached_library(con: duckdb.DuckDBPyConnection) -> bool:
    """Attach the cached catalog to `con`, writing it first when it is missing or unusable (a
    corrupt or foreign file is replaced); False when caching is off or impossible (an unwritable
    folder, a full disk): the caller runs the script, as the cache is only ever a shortcut."""
    try:
        path = catalog_path()
        if path is None:
            return False
        if _attach_catalog(con, path):
            return True
        _write_catalog(path)
        return _attach_catalog(con, path)
    except (OSError, duckdb.Error):
        return False


def _loaded(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con` holds this very library, as load() left it."""
    try:
        return con.execute("SELECT duckrank.library_digest()").fetchall()[0][0] == library_digest()
    except duckdb.Error:
        return False  # not loaded, or an older library


def load(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Install the library in `con` as `duckrank sql` and `.read sql/duckrank.sql` do: schema
    `duckrank` replaced whole (an older library's macros go, and so would anything else kept in it),
    then every macro. Harmless to repeat, and free when this very library is loaded already."""
    if not _loaded(con) and not _copied_library(con):
        con.execute(install_sql() + _digest_sql()).fetchall()  # one script: a fraction of a call per file
    return con


def _digest_sql() -> str:
    """The macro that tells a loaded library (_loaded): its digest."""
    return f";\nCREATE OR REPLACE MACRO duckrank.library_digest() AS '{library_digest()}';\n"


# The library file (load(), duckrank.connect()): running the script parses a thousand statements,
# 0.4-0.6 s a connection; a DuckDB file holding schema duckrank as the script leaves it (every macro
# and comment, and the digest) copies in with COPY FROM DATABASE in about a tenth of that. Kept in
# the cache folder beside the catalog, written by the first load that finds it missing.
def library_path() -> Path | None:
    """The library file of this library and this DuckDB; None when caching is off."""
    folder = cache_folder()
    return folder / f"library-{catalog_digest()}-duckdb-{duckdb.__version__}.duckdb" if folder else None


def _copied_library(con: duckdb.DuckDBPyConnection) -> bool:
    """Schema duckrank replaced by the library file's copy in `con`'s current database, the file
    written first when it is missing or cannot serve (corrupt, or another database under its name);
    False when caching is off or impossible (an unwritable folder, a connection that cannot attach
    it): the caller runs the script, which drops whatever a failed copy left."""
    try:
        path = library_path()
        if path is None:
            return False
        if path.is_file() and _copy_library_file(con, path):
            return True
        _write_database(path, install_sql() + _digest_sql(), "duckrank_library", use=True)
        return _copy_library_file(con, path)
    except (OSError, duckdb.Error):
        return False


def _copy_library_file(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Copy the library file's schema duckrank into `con`, replacing the one there; False when the
    file is no library file of this library."""
    source = fresh_name("library")
    if not _attach_checked(con, path, source, f"{source}.duckrank.library_digest()", library_digest()):
        return False
    try:
        target = con.execute("SELECT current_database()").fetchall()[0][0]
        con.execute(f"{REPLACE_SCHEMA}COPY FROM DATABASE {source} TO {quote_identifier(target)}").fetchall()
        return True
    finally:
        con.execute(f"DETACH {source}").fetchall()


def load_as_guest(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Every macro in the caller's `con` (evaluate(con=)), dropping nothing: a schema `duckrank` the
    caller made stays with what is in it, and _borrowed.BorrowedConnection removes what the call added. The
    digest is left as it was, so that a later load() still replaces an older library's leftovers.
    A database without that schema gets the library file's copy (load()'s), which the borrowed call
    drops whole afterwards."""
    if not _loaded(con) and (has_library_schema(con) or not _copied_library(con)):
        con.execute(library_sql()).fetchall()
    return con


def has_library_schema(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con`'s current database has a schema duckrank (the library's, or the caller's own)."""
    return bool(con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'duckrank' "
                            "AND database_name = current_database()").fetchall()[0][0])


# What reading inputs calls (sql/10_checks.sql, 15_inputs.sql), after the schema they go in.
INPUT_FILES = ("00_schema.sql", "10_checks.sql", "15_inputs.sql")


def load_input_macros(con: duckdb.DuckDBPyConnection) -> None:
    """The input macros and checks on a connection that may not hold the library (duckrank convert's).
    duckrank's own database has them, also when they are its attached catalog's, in no schema `duckrank`."""
    if holds_library(con):
        return
    found = con.execute("SELECT count(*) FROM duckdb_functions() WHERE schema_name = 'duckrank' "
                        "AND function_name = 'run_from_lists'").fetchall()[0][0]
    if not found:
        for name in INPUT_FILES:
            con.execute((sql_dir() / name).read_text(encoding="utf-8")).fetchall()


def connect(database: str = ":memory:", **kwargs) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with duckrank's macros loaded. DuckDB's progress bar is off: a library
    must not write to the caller's terminal (the CLI turns it on for an interactive stderr)."""
    con = duckdb.connect(database, **kwargs)
    _opened.add(con)
    private_settings(con)
    return load(con)


def private_settings(con: duckdb.DuckDBPyConnection) -> None:
    """Settings of a database duckrank opens itself: no progress bar, and spill files in duckrank's
    private scratch folder (removed at exit), not DuckDB's default ./.tmp in the caller's folder."""
    from duckrank import _scratch

    con.execute("SET enable_progress_bar = false").fetchall()
    con.execute("SET temp_directory = ?", [_scratch.path("spill")]).fetchall()


_shared: duckdb.DuckDBPyConnection | None = None
_shared_pid: int | None = None  # the process that opened _shared
_shared_lock = threading.Lock()
_shared_cursors: weakref.WeakSet = weakref.WeakSet()
# Every connection and cursor duckrank opened in this process, for interrupt_all().
_opened: weakref.WeakSet = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked child (a multiprocessing fork pool, a DataLoader worker) opens its own database."""
    global _shared, _shared_lock, _shared_cursors
    if _shared is not None:
        import ctypes

        for con in (_shared, *_shared_cursors):
            # a reference nothing releases, not even the interpreter's exit: destroying the inherited
            # database would join threads that are not in this process, which aborts it
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(con))
    _shared, _shared_lock, _shared_cursors = None, threading.Lock(), weakref.WeakSet()
    _opened.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_fusion_loaded_in: duckdb.DuckDBPyConnection | None = None  # the shared database holding fusion_sql()


def _library_database() -> duckdb.DuckDBPyConnection:
    """A new in-memory database with the library: the cached catalog attached (fusion's macros
    included), else evaluation's part of the script."""
    global _fusion_loaded_in
    con = duckdb.connect()
    private_settings(con)
    if _attached_library(con):
        _fusion_loaded_in = con
        return con
    con.close()  # a fresh one: nothing a failed attempt left behind can make duckrank.x ambiguous
    con = duckdb.connect()
    private_settings(con)
    con.execute(evaluation_sql()).fetchall()
    return con


def shared_cursor() -> duckdb.DuckDBPyConnection:
    """A new cursor of duckrank's process-wide in-memory database, whose macros are loaded once
    (_library_database): an evaluation in a notebook loop pays neither a new database nor the
    library load. Each cursor has its own temporary views and registered tables, which go when it
    is closed. One database per process: a forked child opens its own (_after_fork_in_child)."""
    global _shared, _shared_pid
    with _shared_lock:
        if _shared is None or _shared_pid != os.getpid():
            _shared, _shared_pid = _library_database(), os.getpid()
        cursor = _shared.cursor()
        _shared_cursors.add(cursor)
        _opened.add(cursor)
        return cursor


def fusion_cursor() -> duckdb.DuckDBPyConnection:
    """A shared_cursor() whose database also holds fusion's macros (loaded by the first call)."""
    global _fusion_loaded_in
    cursor = shared_cursor()
    with _shared_lock:
        if _fusion_loaded_in is not _shared:
            _shared.execute(fusion_sql()).fetchall()
            _fusion_loaded_in = _shared
    return cursor


def interruptible(function: Callable) -> Callable:
    """Ctrl-C during a query reaches the caller as KeyboardInterrupt, as from any Python code: DuckDB
    runs the signal's handler while it waits for a query, and answers the KeyboardInterrupt that the
    handler raises with its own RuntimeError "Query interrupted" (the CLI tells SIGTERM and SIGHUP
    apart by duckrank._scratch.received)."""

    @wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as error:
            if isinstance(error, getattr(duckdb, "InterruptException", ())) or (
                    isinstance(error, RuntimeError) and str(error) == "Query interrupted"):
                raise KeyboardInterrupt from error
            raise

    return wrapper


def interrupt_all() -> None:
    """Interrupt the query of every connection duckrank opened, from any thread: the command line's
    answer to a signal, which Python itself would only see once DuckDB's current task ends."""
    for con in list(_opened):
        try:
            con.interrupt()
        except Exception:  # noqa: BLE001 - a closed connection runs nothing
            pass


def holds_library(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con` is one of shared_cursor()'s, whose macros are loaded already."""
    return con in _shared_cursors


# DuckDB's memory_limit bounds its buffer manager, not the process: some of its allocations and
# the interpreter (~100 MB) live outside it (W100M at 4GB peaked 0.2-0.7 GB above). duckrank's memory
# limit is meant for the process as far as DuckDB allows, so DuckDB gets this share of it and the
# rest is headroom; the README says by how much the process can still pass it.
DUCKDB_MEMORY_SHARE = 0.8


# A memory size as DuckDB and duckrank's memory_limit spell it: a number and a unit (4GB, 512 MiB,
# DuckDB's own "3.7 GiB") or a share of the machine's memory (50%). DuckDB's KB, MB, ... are powers
# of 10, its KiB, MiB, ... powers of 2.
_MEMORY_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*(%|bytes|[KMGT]iB|[KMGT]?B)\s*", re.IGNORECASE)
_BYTES_PER_UNIT = {"b": 1, "bytes": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
                   "kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40}


def memory_size(text: Any) -> tuple[float, str] | None:
    """A memory size's number and its unit as written ('%' for a share); None when it is no size."""
    match = _MEMORY_SIZE.fullmatch(str(text))
    return (float(match[1]), match[2]) if match else None


def size_bytes(text: Any) -> float | None:
    """A memory size in bytes (4GB = 4e9, 4GiB = 4 * 2^30); None for a share or no size."""
    size = memory_size(text)
    if size is None or size[1] == "%":
        return None
    return size[0] * _BYTES_PER_UNIT[size[1].lower()]


def duckdb_memory_limit(limit: str) -> str:
    """DuckDB's memory_limit for a whole-process limit such as '4GB', '512MiB' or '50%'."""
    size = memory_size(limit)
    if size is None:
        return limit  # DuckDB's own message then names the value
    # DuckDB reads no exponent: 80000000B, not 8e+07B
    return f"{size[0] * DUCKDB_MEMORY_SHARE:.6f}".rstrip("0").rstrip(".") + size[1]


def memory_problem(con: duckdb.DuckDBPyConnection, error: Exception, why: Callable[[], str] = str) -> str | None:
    """What to tell the user when DuckDB ran out of memory or spill space (None for any other error):
    the limit it ran into and what to change, not DuckDB's allocator figures alone; `why()` adds
    what made a computation too large, if the caller can tell."""
    if not isinstance(error, duckdb.OutOfMemoryException) and "No space left on device" not in str(error):
        return None
    detail = str(error).strip().splitlines()[0]
    if "failed to offload" in detail or "No space left on device" in detail:
        # DuckDB words a full spill disk as running out of memory
        folder = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
        return (f"the disk is full: no space left in {folder} for DuckDB's spill files; free some space, point "
                f"--temp-dir / temp_dir= at a disk with room, or raise the memory limit")
    limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    return (f"out of memory: DuckDB's limit of {limit} ({DUCKDB_MEMORY_SHARE:.0%} of --memory-limit / memory_limit=, "
            f"or of the machine's memory) was not enough ({detail}); raise --memory-limit{why()}")


# Sane bounds of the engine settings, checked before any work starts: 100000 threads hang DuckDB,
# and below about 32 MB it cannot hold a single block of a small run.
MAX_THREADS = 1024
MIN_MEMORY_BYTES = 32_000_000  # 32MB, as the messages and the README write it (DuckDB: MB = 10^6 bytes)


def memory_limit_bytes(con: duckdb.DuckDBPyConnection) -> float:
    """DuckDB's memory_limit on `con` in bytes (inf when it states none)."""
    size = size_bytes(con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0])
    return float("inf") if size is None else size


def engine_problems(threads: Any = None, memory_limit: Any = None) -> list[Problem]:
    """What is wrong with engine settings (threads, memory_limit)."""
    problems = []
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                or not 1 <= threads <= MAX_THREADS):
        problems.append(subject("threads", f" must be a whole number from 1 to {MAX_THREADS}; got {threads!r}"))
    if memory_limit is not None:
        size = memory_size(memory_limit)
        if size is not None and size[1] == "%":
            valid = 0 < size[0] <= 100
        else:
            valid = (size_bytes(memory_limit) or 0) >= MIN_MEMORY_BYTES
        if not valid:
            problems.append(subject("memory_limit", f" must be a size of at least {MIN_MEMORY_BYTES // 10 ** 6}MB "
                                    f"(such as 4GB or 512MB) or a share of the memory from 1% to 100%; got "
                                    f"{memory_limit!r}"))
    return problems


def configure(con: duckdb.DuckDBPyConnection, threads: int | None = None, memory_limit: str | None = None,
              temp_dir: str | None = None) -> None:
    """Apply the engine settings (the CLI's --threads, --memory-limit, --temp-dir)."""
    from duckrank.errors import OptionError, one_per_line

    problems = engine_problems(threads, memory_limit)
    if problems:
        raise OptionError(*one_per_line(problems))
    settings = {"threads": threads, "memory_limit": memory_limit and duckdb_memory_limit(memory_limit),
                "temp_directory": temp_dir}
    for name, value in settings.items():
        if value is not None:
            try:
                con.execute(f"SET {name} = ?", [value]).fetchall()
            except duckdb.Error as error:
                given = memory_limit if name == "memory_limit" else value
                raise OptionError(f"cannot set DuckDB's {name} to {given!r}: {str(error).splitlines()[0]}") from None
