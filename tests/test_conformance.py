"""The peers' own tests as conformance data (issue 26): every value-checking metric test of ir_measures
and ranx, its inputs and expected values kept in tests/data/conformance/ (its README says where each
fact comes from), replayed through the three front doors: duckrank.evaluate, `duckrank eval` (every
invocation in one Python process) and the SQL table macros (one DuckDB connection).

Each case is spelled as the peer's test spells it; the conventions its test relies on are the data's
`conventions` (per ir_measures provider, per ranx input form). Cases are batched per peer and
convention: their (qrels, run) pairs side by side, a query renamed <pair>|<query>, scored per pair
(by="pair" over a segments table). A case duckrank cannot express, or whose value disagrees, is
listed in the data with the reason; each door must fail exactly those, so the lists shrink as
measures land and never grow unnoticed. No case is skipped.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pytest

import duckrank
from duckrank._library import connect
from duckrank._sql import sql_literal
from duckrank.measures import COMMAND_LINE_SPELLINGS, Measure

DATA = Path(__file__).parent / "data" / "conformance"
PEERS = {name: json.loads((DATA / f"{name}.json").read_text()) for name in ("ir_measures", "ranx")}
# A peer's exact comparison (assertEqual, ==) still meets duckrank's float arithmetic.
FLOOR = 1e-12


def case_id(case: dict) -> str:
    return "::".join(str(case.get(key, "")) for key in ("file", "test", "provider", "measure", "qrels", "run"))


def agrees(case: dict, per_query: dict[str, float], summary: float | None) -> bool:
    tolerance = max(case["tolerance"], FLOOR)
    for query, expected in case.get("per_query", {}).items():
        got = per_query.get(query)
        if got is None or expected is None or abs(got - expected) > tolerance:
            return False
    if case.get("exact_queries") and set(per_query) != set(case["per_query"]):
        return False
    if "aggregate" in case:
        expected = case["aggregate"]
        if expected is None:  # the peer's NaN: a mean over no query
            return summary is None or math.isnan(summary)
        return summary is not None and abs(summary - expected) <= tolerance
    return True


def listed(peer: dict, door: str) -> dict[str, set[str]]:
    """The data's not-expressible cases and the disagreements it lists for this door."""
    return {kind: {entry["case"] for entry in peer[kind] if door in entry.get("doors", (door,))}
            for kind in ("not_expressible", "disagreements")}


ALL_CASES = [(name, case) for name, peer in PEERS.items() for case in peer["cases"]]


def key(name: str, case: dict) -> str:
    return f"{name}::{case_id(case)}"


def expressible(measure: str) -> bool:
    try:
        duckrank.parse_measure(measure)
    except duckrank.DuckrankError:
        return False
    return True


class Batch:
    """The cases of one peer under one set of conventions, on one or several (qrels, run) pairs: a
    query is renamed <pair>|<query> and a segments table maps it to its pair (by="pair"). A pair
    with an empty input, or with a qrels query its run lacks under complete, gets a batch of its own
    without segments (duckrank refuses an empty input; segments drop a query the run lacks)."""

    def __init__(self, name: str, setting: str, cases: list[dict]):
        self.name, self.setting, self.cases = name, setting, cases
        peer = PEERS[name]
        self.conventions = {k: v for k, v in peer["conventions"][setting].items() if k != "why"}
        self.pairs = sorted({(case["qrels"], case["run"]) for case in cases})
        self.segmented = len(self.pairs) > 1
        self.measures = sorted({case["measure"] for case in cases if expressible(case["measure"])})
        qrels, run, segments = [], [], []
        for qrels_name, run_name in self.pairs:
            pair = f"{qrels_name}+{run_name}"
            rename = (lambda q: f"{pair}|{q}") if self.segmented else str
            # a fourth field is the subtopic (ir_measures' Qrel.iteration, "0" where a test gives none)
            qrels += [(rename(r[0]), str(r[1]), int(r[2]), str(r[3]) if len(r) > 3 else "0")
                      for r in peer["inputs"][qrels_name]]
            run += [(rename(r[0]), str(r[1]), float(r[2])) for r in peer["inputs"][run_name]]
            segments += [(rename(q), pair) for q in {r[0] for r in peer["inputs"][qrels_name]}]
        self.qrels = pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance", "subtopic"])
        if not any(len(r) > 3 for q, _ in self.pairs for r in peer["inputs"][q]):
            self.qrels = self.qrels.drop(columns="subtopic")
        self.run = pd.DataFrame(run, columns=["query_id", "doc_id", "score"])
        self.segments = pd.DataFrame(segments, columns=["query_id", "pair"])

    def pair(self, case: dict) -> str:
        return f"{case['qrels']}+{case['run']}"

    def outcomes(self, values: dict | None) -> dict[str, bool]:
        """{case: agrees}; values: {(pair, measure): (per_query, summary)}, None when the door refused."""
        result = {}
        for case in self.cases:
            got = None if values is None else values.get((self.pair(case), case["measure"]))
            result[key(self.name, case)] = got is not None and agrees(case, *got)
        return result

    def original(self, query: str) -> str:
        return query.split("|", 1)[1] if self.segmented else query


def batches() -> list[Batch]:
    grouped: dict[tuple[str, str, tuple | None], list[dict]] = {}
    for name, case in ALL_CASES:
        peer = PEERS[name]
        setting = case.get("provider") or case["inputs"]
        qrels, run = peer["inputs"][case["qrels"]], peer["inputs"][case["run"]]
        alone = (not qrels or not run or (peer["conventions"][setting].get("complete")
                                           and {r[0] for r in qrels} - {r[0] for r in run}))
        grouped.setdefault((name, setting, (case["qrels"], case["run"]) if alone else None), []).append(case)
    return [Batch(name, setting, cases) for (name, setting, _), cases in grouped.items()]


BATCHES = batches()


@pytest.fixture(scope="module")
def python_door() -> dict[str, bool]:
    outcome = {}
    for batch in BATCHES:
        values = None
        if batch.measures:
            by = {"by": ["pair"], "segments": batch.segments} if batch.segmented else {}
            try:
                summary = duckrank.evaluate(batch.qrels, batch.run, batch.measures, **by, **batch.conventions)
                rows = duckrank.evaluate(batch.qrels, batch.run, batch.measures, per_query=True, **by,
                                         **batch.conventions).fetchall()
            except duckrank.DuckrankError:
                pass
            else:
                values = {}
                pairs = summary if batch.segmented else {batch.pair(batch.cases[0]): summary}
                for pair, means in pairs.items():
                    for measure, mean in means.items():
                        values[(pair, measure)] = ({}, mean)
                for row in rows:
                    pair, query, measure, value = row if batch.segmented else (batch.pair(batch.cases[0]), *row)
                    values.setdefault((pair, measure), ({}, None))[0][batch.original(query)] = value
        outcome.update(batch.outcomes(values))
    return outcome


CLI_SCRIPT = r"""
import json, sys
from click import ClickException
from duckrank.cli import main
outcomes = []
for arguments in json.load(sys.stdin):
    try:
        main(arguments, standalone_mode=False)
        outcomes.append(0)
    except SystemExit as stop:
        outcomes.append(stop.code or 0)
    except ClickException as error:  # what standalone click prints as "Error: ..." with this exit code
        outcomes.append(error.exit_code)
    except Exception as error:
        outcomes.append(repr(error))
print(json.dumps(outcomes))
"""


def cli_flags(settings: dict) -> list[str]:
    flags = []
    for name, value in settings.items():
        flags += (["-c"] if value else []) if name == "complete" else [f"--{name}", str(value)]
    return flags


@pytest.fixture(scope="module")
def cli_door(tmp_path_factory) -> dict[str, bool]:
    """Every batch through `duckrank eval` in one Python process: the CLI's own parsing, reading and
    writing, one invocation per batch (--segments, --by pair), its rows written as CSV."""
    folder = tmp_path_factory.mktemp("conformance")
    calls, outputs = [], []
    for index, batch in enumerate(BATCHES):
        paths = {}
        for kind in ("qrels", "run", "segments"):
            paths[kind] = folder / f"{index}-{kind}.csv"
            getattr(batch, kind).to_csv(paths[kind], index=False)
        outputs.append(folder / f"{index}-out.csv")
        by = ["--segments", str(paths["segments"]), "--by", "pair"] if batch.segmented else []
        # a spelling a trec_eval family name shadows on the command line (ranx's recall) as the registry
        # says it is reached there (the README's collision table)
        calls.append(["eval", str(paths["qrels"]), str(paths["run"]),
                      *(f"-m{COMMAND_LINE_SPELLINGS.get(m, m)}" for m in batch.measures), "-q",
                      "--quiet", "-f", "csv", "-o", str(outputs[-1]), *by, *cli_flags(batch.conventions)])
    done = subprocess.run([sys.executable, "-c", CLI_SCRIPT], input=json.dumps(calls), capture_output=True,
                          text=True, timeout=600, check=True)
    codes = json.loads(done.stdout.splitlines()[-1])
    outcome = {}
    for batch, code, output in zip(BATCHES, codes, outputs):
        values = None
        if batch.measures:
            assert code in (0, 1), f"{batch.name} {batch.setting}: the CLI raised {code}"
        if batch.measures and code == 0:
            by_printed = {duckrank.parse_measure(COMMAND_LINE_SPELLINGS.get(m, m)).printed_name: m
                          for m in batch.measures}
            values = {}
            for row in pd.read_csv(output, dtype=str, keep_default_na=False).itertuples():
                pair = row.pair if batch.segmented else batch.pair(batch.cases[0])
                per_query, _ = values.setdefault((pair, by_printed[row.metric]), ({}, None))
                value = float(row.value) if row.value != "" else math.nan
                if row.query_id == "all":
                    values[(pair, by_printed[row.metric])] = (per_query, value)
                else:
                    per_query[batch.original(row.query_id)] = value
        outcome.update(batch.outcomes(values))
    return outcome


# The SQL library's summaries of per-query values, by the registry's summary rule (the table macros
# give per-query rows; evaluate() and the CLI compose the summary the same way).
SQL_SUMMARY = {"mean": "avg(value)", "sum": "sum(value)", "count": "count(*)"}


def macro_call(measure: Measure, conventions: dict, qrels: str, run: str) -> str | None:
    """duckrank.<metric>(qrels, run, options, conventions) for a measure with a table macro."""
    if not measure.metric.table_macro:
        return None
    arguments = dict(measure.given)
    for name, value in conventions.items():
        if name == "gain":
            if "gain" in measure.metric.options and "gain" not in arguments:
                arguments["gain"] = value
        else:
            arguments[name] = value
    if measure.rel_level is not None:
        arguments["rel_level"] = measure.rel_level
    if measure.complete is not None:
        arguments["complete"] = measure.complete
    if measure.unjudged is not None:
        arguments["unjudged"] = measure.unjudged
    options = "".join(f", {name} := {sql_literal(value)}" for name, value in arguments.items())
    return f'duckrank."{measure.metric.name}"({sql_literal(qrels)}, {sql_literal(run)}{options})'


@pytest.fixture(scope="module")
def sql_door() -> dict[str, bool]:
    """Every batch's measures through the table macros in one DuckDB connection, its per-query rows
    and their summary (avg, sum or count, the registry's rule) per pair. A measure without a table
    macro (NumQ: a summary only) counts as refused here, and is listed as such in the test below."""
    con = connect()
    outcome = {}
    columns = {"qrels": "query_id VARCHAR, doc_id VARCHAR, relevance INTEGER",
               "run": "query_id VARCHAR, doc_id VARCHAR, score DOUBLE", "segments": "query_id VARCHAR, pair VARCHAR"}
    for index, batch in enumerate(BATCHES):
        tables = {kind: f"b{index}_{kind}" for kind in columns}
        for kind, table in tables.items():
            typed = columns[kind] + (", subtopic VARCHAR" if kind == "qrels" and "subtopic" in batch.qrels else "")
            con.execute(f"CREATE TABLE {table} ({typed})")
            rows = getattr(batch, kind).values.tolist()
            if rows:  # (an empty input stays an empty table)
                con.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(typed.split(',')))})", rows)
        values = {}
        for spelling in batch.measures:
            measure = duckrank.parse_measure(spelling)
            call = macro_call(measure, batch.conventions, tables["qrels"], tables["run"])
            summary = SQL_SUMMARY.get(measure.summary)
            if call is None or summary is None:
                continue
            try:  # one statement: each query's value and its pair's summary
                rows = con.execute(f"WITH m AS MATERIALIZED (SELECT s.pair, m.query_id, m.value FROM {call} m "
                                   f"JOIN {tables['segments']} s USING (query_id)) "
                                   f"SELECT pair, query_id, value, {summary} OVER (PARTITION BY pair) FROM m"
                                   ).fetchall()
            except duckdb.Error:
                continue
            for pair in {batch.pair(case) for case in batch.cases}:
                values[(pair, spelling)] = ({}, None)  # no row: the peer's "no rows", NaN mean
            for pair, query, value, mean in rows:
                values[(pair, spelling)][0][batch.original(query)] = value
                values[(pair, spelling)] = (values[(pair, spelling)][0], mean)
        outcome.update(batch.outcomes(values))
    con.close()
    return outcome


def failing(outcome: dict[str, bool]) -> dict[str, set[str]]:
    return {name: {key.split("::", 1)[1] for key, ok in outcome.items() if not ok and key.startswith(f"{name}::")}
            for name in PEERS}


@pytest.mark.parametrize("name", sorted(PEERS))
def test_python_door_fails_exactly_the_listed_cases(python_door, name):
    lists = listed(PEERS[name], "python")
    assert failing(python_door)[name] == lists["not_expressible"] | lists["disagreements"]


# The cases whose measure has no table macro, or a summary the SQL door does not compose (NumQ is
# a count of queries, the set measures' summaries are means): the SQL door cannot show them.
def sql_unreachable(name: str) -> set[str]:
    unreachable = set()
    for case in PEERS[name]["cases"]:
        if expressible(case["measure"]):
            measure = duckrank.parse_measure(case["measure"])
            if not measure.metric.table_macro or measure.summary not in SQL_SUMMARY:
                unreachable.add(case_id(case))
    return unreachable


@pytest.mark.parametrize("name", sorted(PEERS))
def test_sql_door_fails_exactly_the_listed_cases(sql_door, name):
    lists = listed(PEERS[name], "sql")
    assert failing(sql_door)[name] == lists["not_expressible"] | lists["disagreements"] | sql_unreachable(name)


@pytest.mark.parametrize("name", sorted(PEERS))
def test_cli_door_fails_exactly_the_listed_cases(cli_door, name):
    lists = listed(PEERS[name], "cli")
    assert failing(cli_door)[name] == lists["not_expressible"] | lists["disagreements"]


def test_not_expressible_is_refused_by_name():
    """A not-expressible case is one duckrank refuses to parse: its measure, not its numbers."""
    for name, peer in PEERS.items():
        for entry in peer["not_expressible"]:
            measure = entry["case"].split("::")[3]
            with pytest.raises(duckrank.DuckrankError):
                duckrank.parse_measure(measure)


def test_every_case_names_its_source():
    for name, peer in PEERS.items():
        assert peer["commit"] and peer["repository"]
        ids = [case_id(case) for case in peer["cases"]]
        assert len(ids) == len(set(ids)), f"{name}: two cases share one id"
        for case in peer["cases"]:
            assert case["file"].startswith("tests/") and case["test"], case
            assert case.get("per_query") or "aggregate" in case or case.get("exact_queries"), case
        assert {entry["case"] for kind in ("not_expressible", "disagreements") for entry in peer[kind]} <= set(ids)
