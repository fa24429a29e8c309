"""The catalog cache (issue 22): duckrank's own database attaches a prebuilt DuckDB file of the
macros instead of running the library's script. Each test opens the database a new process would
(in this process: the module's state reset), and one command line checks that another process
attaches the file as it is. Whatever becomes of the cache, the numbers are the script's, bit for
bit, and pytrec_eval's (the independent oracle), and nothing is raised."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from oracles import _pytrec, gen_case

import duckrank
from duckrank import _library, evaluation

REPO = Path(__file__).resolve().parent.parent
# duckrank's spelling -> what pytrec_eval is asked for, and the key it (and `duckrank eval`) reports
MEASURES = {"ndcg_cut.10": ("ndcg_cut.10", "ndcg_cut_10"), "map": ("map", "map"),
            "recip_rank": ("recip_rank", "recip_rank"), "P.5": ("P.5", "P_5")}
FUSION_METHODS = ("rrf", "comb_mnz")


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    """Two runs over one qrels: ties, graded and negative grades, unretrieved relevant docs,
    queries in the run or the qrels only; the second run's scores integers (BIGINT: the input
    macros check that no two are the same DOUBLE); the qrels and the first run also as TSV files."""
    qrels, first = gen_case(random.Random(22))
    _, second = gen_case(random.Random(23), scores=[-1, 0, 1, 1, 2, 3])
    folder = tmp_path_factory.mktemp("case")
    for name, rows, value in (("qrels", qrels, "relevance"), ("run", first, "score")):
        lines = ["query_id\tdoc_id\t" + value, *("\t".join(map(str, row)) for row in rows)]
        (folder / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return {"qrels": qrels, "runs": {"a": first, "b": second}, "folder": folder}


@pytest.fixture(scope="module")
def oracle(case):
    """pytrec_eval's value of each (run, query, spelling)."""
    asked = {measure for measure, _ in MEASURES.values()}
    return {(run, query, spelling): values[key]
            for run, rows in case["runs"].items()
            for query, values in _pytrec(case["qrels"], rows, asked, 1, False).items()
            for spelling, (_, key) in MEASURES.items()}


def _computed(monkeypatch: pytest.MonkeyPatch, case: dict, cache: Path | str, fuse: bool = False) -> dict:
    """What a new process computes with DUCKRANK_CACHE_DIR=cache: the per-query values of MEASURES
    for both runs (and both runs fused by FUSION_METHODS), how its database holds the library, and
    the database. The macros are called every time (a lean statement calls none)."""
    monkeypatch.setattr(evaluation, "lean_case", lambda *args: False)
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(cache))
    monkeypatch.setattr(_library, "_shared", None)
    monkeypatch.setattr(_library, "_fusion_loaded_in", None)
    qrels = pd.DataFrame(case["qrels"], columns=["query_id", "doc_id", "relevance"])
    runs = {name: pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]) for name, rows in case["runs"].items()}
    scores = duckrank.evaluate(qrels, runs, list(MEASURES), per_query=True).fetchall()
    fused = {method: duckrank.fuse(runs, method).fetchall() for method in FUSION_METHODS} if fuse else None
    return {"scores": {(run, query, measure): value for run, query, measure, value in scores},
            "fused": fused, "holds": _holds(_library._shared), "database": _library._shared}


def _holds(con: duckdb.DuckDBPyConnection) -> str:
    """'catalog <digest>' when the cached catalog is attached, 'script' when the script was run."""
    attached = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = 'duckrank'").fetchall()
    schemas = con.execute("SELECT count(*) FROM duckdb_schemas() WHERE schema_name = 'duckrank'").fetchall()[0][0]
    if attached:
        assert attached[0][0] == str(_library.catalog_path()) and schemas == 0, (attached, schemas)
        return f"catalog {con.execute('SELECT duckrank.catalog_digest()').fetchall()[0][0]}"
    assert schemas == 1
    return "script"


def _once(case: dict, cache: Path | str) -> dict:
    """_computed(cache, fuse=True) for a module-scoped fixture."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        computed = _computed(monkeypatch, case, cache, fuse=True)
        computed["path"] = _library.catalog_path()
    computed.pop("database").close()
    return computed


@pytest.fixture(scope="module")
def by_script(case, oracle):
    """The script's numbers (DUCKRANK_CACHE_DIR set empty: no cache), which pytrec_eval's agree with."""
    script = _once(case, "")
    assert script["holds"] == "script"
    assert script["scores"] == pytest.approx(oracle, abs=1e-9)
    return script


@pytest.fixture(scope="module")
def cold(case, tmp_path_factory):
    """A first process, whose cache folder is empty: it writes the catalog file (the other tests copy it)."""
    return _once(case, tmp_path_factory.mktemp("cold"))


@pytest.fixture
def fresh(monkeypatch, case):
    """fresh(cache) -> _computed(cache) in this test, its databases closed after it."""
    opened = []

    def compute(cache: Path | str, fuse: bool = False) -> dict:
        opened.append(_computed(monkeypatch, case, cache, fuse))
        return opened[-1]

    yield compute
    for computed in opened:
        computed["database"].close()


def test_a_cold_process_writes_the_catalog_and_a_warm_one_attaches_it(case, cold, fresh, by_script):
    path = cold["path"]
    assert cold["holds"] == f"catalog {_library.catalog_digest()}"
    assert os.listdir(path.parent) == [path.name]  # nothing half-built left beside it
    written = path.stat()
    warm = fresh(path.parent, fuse=True)
    assert warm["holds"] == cold["holds"] and path.stat().st_ino == written.st_ino  # attached, not rewritten
    assert cold["scores"] == warm["scores"] == by_script["scores"]
    assert cold["fused"] == warm["fused"] == by_script["fused"]

    # another process: the command line attaches the same file and prints the same numbers
    command = [sys.executable, "-m", "duckrank", "eval", "qrels.tsv", "run.tsv", "-q", "--format", "jsonl",
               *(f"-m{spelling}" for spelling in MEASURES)]
    done = subprocess.run(command, cwd=case["folder"], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(REPO), "DUCKRANK_CACHE_DIR": str(path.parent)})
    assert done.returncode == 0, done.stderr
    spelling_of = {key: spelling for spelling, (_, key) in MEASURES.items()}
    printed = {("a", row["query_id"], spelling_of[row["metric"]]): row["value"]
               for row in map(json.loads, done.stdout.splitlines()) if row["query_id"] != "all"}
    assert printed == {key: value for key, value in by_script["scores"].items() if key[0] == "a"}
    assert path.stat().st_ino == written.st_ino and os.listdir(path.parent) == [path.name]


def _flipped(path: Path) -> None:
    """Bytes zeroed in the middle, as a failing disk might: DuckDB's checksums refuse the file."""
    data = bytearray(path.read_bytes())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    """Another DuckDB database under the name: a user's, or (by its digest macro) another library's."""
    other = path.with_suffix(".other")
    with duckdb.connect(str(other)) as con:
        con.execute("CREATE MACRO catalog_digest() AS 'another library'; CREATE TABLE t AS SELECT 1 AS x")
    os.replace(other, path)  # DuckDB opens no file that a database of this process has attached


@pytest.mark.parametrize("spoil", [_flipped, _foreign])
def test_a_spoilt_catalog_is_replaced(cold, fresh, by_script, tmp_path, spoil):
    path = tmp_path / cold["path"].name
    path.write_bytes(cold["path"].read_bytes())
    spoil(path)
    again = fresh(tmp_path)
    assert again["holds"] == f"catalog {_library.catalog_digest()}"
    assert again["scores"] == by_script["scores"]
    assert os.listdir(tmp_path) == [path.name]


def _under_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "file").write_text("")
    return tmp_path / "file" / "cache"  # no folder can be made there


def _taken_by_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cache" / _library.catalog_path().name).mkdir(parents=True)  # os.replace cannot overwrite it
    return tmp_path / "cache"


def _failing_duckdb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """DuckDB failing as it writes the catalog, as on a full disk."""
    monkeypatch.setattr(_library, "catalog_sql", lambda: "SELECT error('No space left on device')")
    return tmp_path


@pytest.mark.parametrize("cache", [_under_a_file, _taken_by_a_folder, _failing_duckdb])
def test_a_cache_that_cannot_be_written_falls_back_to_the_script(fresh, by_script, tmp_path, monkeypatch, cache):
    folder = cache(tmp_path, monkeypatch)
    before = sorted(tmp_path.rglob("*"))
    got = fresh(folder)
    assert got["holds"] == "script" and got["scores"] == by_script["scores"]
    assert sorted(tmp_path.rglob("*")) == before  # a half-written file goes with its folder


def test_another_library_uses_another_file(cold, fresh, tmp_path, monkeypatch):
    this = tmp_path / cold["path"].name
    this.write_bytes(cold["path"].read_bytes())
    monkeypatch.setattr(_library, "catalog_digest", lambda: "0123456789abcdef")
    other = fresh(tmp_path)
    assert other["holds"] == "catalog 0123456789abcdef"
    assert sorted(os.listdir(tmp_path)) == sorted([this.name, _library.catalog_path().name])
    assert _library.catalog_path() != this


@pytest.mark.parametrize("environment, folder", [
    ({"DUCKRANK_CACHE_DIR": "/c", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/c"),
    ({"DUCKRANK_CACHE_DIR": "", "XDG_CACHE_HOME": "/x", "HOME": "/h"}, None),
    ({"XDG_CACHE_HOME": "/x", "HOME": "/h"}, "/x/duckrank"),
    ({"XDG_CACHE_HOME": "relative", "HOME": "/h"}, "/h/.cache/duckrank"),
    ({"HOME": "/h"}, "/h/.cache/duckrank"),
])
def test_the_cache_folder(monkeypatch, environment, folder):
    for name in ("DUCKRANK_CACHE_DIR", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert _library.cache_folder() == (Path(folder) if folder else None)


# The library file: load() and duckrank.connect() copy schema duckrank from it (COPY FROM DATABASE)
# instead of running the script. What a connection then holds is listed as the script leaves it:
# each macro's kind, parameters, definition and comment, and the views. An EXCLUDE list is a set,
# which DuckDB prints in no fixed order: its names are sorted here.
FUNCTIONS = ("SELECT function_name, function_type, parameters::VARCHAR, macro_definition, comment, return_type "
             "FROM duckdb_functions() WHERE schema_name = 'duckrank' AND database_name = current_database()")
VIEWS = "SELECT view_name, sql FROM duckdb_views() WHERE schema_name = 'duckrank' AND database_name = current_database()"


def _listing(con: duckdb.DuckDBPyConnection) -> list:
    def sorted_excludes(text):
        return re.sub(r"EXCLUDE \(([^)]*)\)", lambda m: f"EXCLUDE ({', '.join(sorted(m[1].split(', ')))})", text or "")
    functions = [(*row[:3], sorted_excludes(row[3]), *row[4:]) for row in con.execute(FUNCTIONS).fetchall()]
    return sorted(functions, key=repr) + sorted(con.execute(VIEWS).fetchall())


@pytest.fixture(scope="module")
def script_listing():
    with duckdb.connect() as con:
        con.execute(_library.install_sql() + _library._digest_sql())
        listing = _listing(con)
    assert len(listing) > 300
    return listing


@pytest.fixture
def copies(monkeypatch):
    """What each _copied_library call answered (True: copied from the library file)."""
    answers, copy = [], _library._copied_library
    monkeypatch.setattr(_library, "_copied_library", lambda con: answers.append(copy(con)) or answers[-1])
    return answers


def _per_query(case: dict, con: duckdb.DuckDBPyConnection) -> dict:
    qrels = pd.DataFrame(case["qrels"], columns=["query_id", "doc_id", "relevance"])
    runs = {name: pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]) for name, rows in case["runs"].items()}
    rows = duckrank.evaluate(qrels, runs, list(MEASURES), per_query=True, con=con).fetchall()
    return {(run, query, measure): value for run, query, measure, value in rows}


def test_connect_copies_the_library_file_which_holds_what_the_script_installs(
        case, oracle, script_listing, copies, tmp_path, monkeypatch):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path))
    first = duckrank.connect()  # writes the file, then copies it
    written = _library.library_path().stat()
    second = duckrank.connect()
    assert copies == [True, True] and os.listdir(tmp_path) == [_library.library_path().name]
    assert _library.library_path().stat().st_ino == written.st_ino  # read, not written again
    assert _listing(first) == script_listing == _listing(second)
    assert first.execute("SELECT database_name FROM duckdb_databases() WHERE NOT internal").fetchall() == [("memory",)]
    assert _per_query(case, second) == pytest.approx(oracle, abs=1e-9)
    duckrank.load(second)  # loaded already: nothing to do
    assert copies == [True, True]
    first.close()
    second.close()


def test_a_database_file_keeps_the_copied_library(script_listing, copies, tmp_path, monkeypatch):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path / "cache"))
    database = tmp_path / "mine.duckdb"
    with duckrank.connect(str(database)) as con:
        con.execute("CREATE TABLE mine AS SELECT 1 AS x")
    assert copies == [True]
    with duckdb.connect(str(database)) as con:  # plain DuckDB: the library is the file's, as the script leaves it
        assert _listing(con) == script_listing
        assert con.execute("SELECT x FROM mine").fetchall() == [(1,)]


def test_an_older_library_is_replaced_by_the_copy(script_listing, copies, tmp_path, monkeypatch):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path))
    with duckdb.connect() as con:
        con.execute("CREATE SCHEMA duckrank; CREATE MACRO duckrank.gone() AS 1; "
                    "CREATE MACRO duckrank.library_digest() AS 'an older library'")
        duckrank.load(con)
        assert copies == [True] and _listing(con) == script_listing


@pytest.mark.parametrize("spoil", [_flipped, _foreign])
def test_a_spoilt_library_file_is_replaced(script_listing, copies, tmp_path, monkeypatch, spoil):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path))
    duckrank.connect().close()
    spoil(_library.library_path())
    with duckrank.connect() as con:
        assert copies == [True, True] and _listing(con) == script_listing
    assert os.listdir(tmp_path) == [_library.library_path().name]
    with duckrank.connect() as con:  # the file written anew serves the next connection
        assert copies == [True, True, True] and _listing(con) == script_listing


def test_a_folder_that_cannot_take_the_file_leaves_load_to_the_script(script_listing, copies, tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path / "file" / "cache"))
    with duckrank.connect() as con:
        assert copies == [False] and _listing(con) == script_listing


def test_no_cache_folder_no_library_file(script_listing, copies, monkeypatch):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, "")
    with duckrank.connect() as con:
        assert copies == [False] and _listing(con) == script_listing


def test_a_borrowed_connection_gets_the_copy_and_is_given_back_as_it_was(case, oracle, copies, tmp_path, monkeypatch):
    monkeypatch.setenv(_library.CACHE_FOLDER_VARIABLE, str(tmp_path))
    with duckdb.connect() as con:
        con.execute("CREATE TABLE mine AS SELECT 1 AS x")
        state = ("SELECT (SELECT list(database_name ORDER BY database_name) FROM duckdb_databases()), "
                 "(SELECT list(schema_name ORDER BY schema_name) FROM duckdb_schemas()), "
                 "(SELECT list(table_name ORDER BY table_name) FROM duckdb_tables()), "
                 "(SELECT count(*) FROM duckdb_functions() WHERE function_type LIKE '%macro%')")
        before = con.execute(state).fetchall()
        qrels = pd.DataFrame(case["qrels"], columns=["query_id", "doc_id", "relevance"])
        run = pd.DataFrame(case["runs"]["a"], columns=["query_id", "doc_id", "score"])
        assert duckrank.evaluate(qrels, run, ["map"], con=con) == duckrank.evaluate(qrels, run, ["map"])
        assert copies == [True]
        assert con.execute(state).fetchall() == before  # a summary keeps no table: all is as it was
        assert _per_query(case, con) == pytest.approx(oracle, abs=1e-9)
        assert copies == [True, True]
        con.execute("CREATE SCHEMA duckrank; CREATE TABLE duckrank.own AS SELECT 2 AS y")
        assert _per_query(case, con) == pytest.approx(oracle, abs=1e-9)
        assert copies == [True, True]  # the caller's own schema: the script visits it, nothing is copied over it
        assert con.execute("SELECT y FROM duckrank.own").fetchall() == [(2,)]
