"""The three front doors agree: for every registered measure and a spread of its options and of
the ranking conventions, the SQL table macro in a DuckDB shell (`duckrank sql | duckdb`),
`duckrank.evaluate` and `duckrank eval` give the same per-query numbers.

One small hostile data set (ties, graded and negative grades, unjudged retrieved docs, a relevant
doc never retrieved, a query without relevant docs, a query only in the qrels, one only in the
run, one whose retrieved docs are all unjudged) is scored under a few convention settings: every
case of the shell door in one duckdb process, one `duckrank eval` call per setting (with many -m)
and one evaluate() call per setting. Values agree to 1e-12, NaN equals NaN, and every door keeps
the same queries. A measure refused under ties := 'average' (not linear in the ranking) must be
refused by every door; evaluate() and the CLI then try it alone.

Measures without per-query rows (num_q, gm_map, gm_bpref) compare the CLI's summary with
evaluate()'s; the log measures (gauc, global_auc) compare the shell's one value with
evaluate(log=..., label="label") and `duckrank eval --log`. The data and the cases are
tests/front_door_cases.py's.
"""

from __future__ import annotations

import csv
import io
import math
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from helpers import duckrank_command, run_shell
from front_door_cases import (
    ALL_SETTINGS,
    AVERAGE_REFUSALS,
    BEYOND,
    CLI_FLAGS,
    DIVERSITY,
    Case,
    LOG,
    LOG_CASES,
    LOG_SETTINGS,
    QRELS,
    RUN,
    SETTINGS,
    SUMMARY_ONLY,
    TREC_ONLY_OPTIONS,
    cases_for,
    option_values,
    spelling,
    text,
)

import duckrank
from duckrank._sql import sql_literal
from duckrank.options import CONVENTIONS, OPTIONS
from duckrank.registry import METRICS

REPO = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------------
# the doors


@dataclass(frozen=True)
class Refused:
    """A door's error: `average` when it is the refusal of ties := 'average' (or --ties average)."""

    message: str
    average: bool

    def __repr__(self) -> str:
        lines = self.message.strip().splitlines() or [""]
        return f"{'refused' if self.average else 'error'}({lines[-1][:200]!r})"


def refused(message: str) -> Refused:
    return Refused(message, any(words in message for words in AVERAGE_REFUSALS))


def shell_arguments(case: Case, conventions: dict[str, Any], log: bool = False) -> str:
    """The macro's named arguments: the case's options, the conventions, a gain convention where
    the measure names no gain, and a per-measure rel over the relevance level."""
    arguments = dict(case.options)
    metric = METRICS[case.macro]
    for name, value in conventions.items():
        if name == "gain":
            if "gain" in metric.options and "gain" not in arguments:
                arguments["gain"] = value
        elif not log or name == "rel_level":
            arguments[name] = value
    if case.rel is not None:
        arguments["rel_level"] = case.rel
    return "".join(f", {name} := {sql_literal(value)}" for name, value in arguments.items())


def shell_script(library: str, data: dict[str, Path], calls: list[tuple[str, Case]]) -> str:
    """One statement per call: its rows tagged with the call's number, then a row with the count.
    The CTE is materialised first, so a refused call prints no row at all. The default setting
    reads the Parquet files by path; the others read tables loaded from them (a third cheaper)."""
    # one thread: the calls are tiny, and the CLI calls run beside the shell
    lines = [library, "SET threads = 1;", ".mode csv", ".headers off"]
    paths = {name: sql_literal(str(data[name])) for name in ("qrels", "run", "log")}
    lines += [f"CREATE TABLE {name} AS FROM {path};" for name, path in paths.items()]
    for index, (setting, case) in enumerate(calls):
        qrels, run, log = (paths[name] if setting == "defaults" else f"'{name}'" for name in ("qrels", "run", "log"))
        if METRICS[case.macro].summary == "log":
            source = f'duckrank."{case.macro}"({log}{shell_arguments(case, ALL_SETTINGS[setting], log=True)})'
            body = f"SELECT '<log>' AS query_id, {case.column} AS value FROM {source}"
        else:
            source = f'duckrank."{case.macro}"({qrels}, {run}{shell_arguments(case, SETTINGS[setting])})'
            body = f"SELECT query_id, {case.column} AS value FROM {source}"
        lines.append(f"WITH r AS MATERIALIZED ({body}) "
                     f"SELECT {index}, query_id, CAST(value AS VARCHAR) FROM r "
                     f"UNION ALL SELECT {index}, '#rows', CAST(count(*) AS VARCHAR) FROM r;")
    return "\n".join(lines) + "\n"


def parse_shell(stdout: str, stderr: str, calls: list[tuple[str, Case]]) -> dict[int, Any]:
    """{call: {query_id: value} or Refused}. A call without its count row failed; the shell's
    stderr cannot be matched to calls, so failed calls count as refusals when every error message
    there is one, else each carries the whole stderr."""
    rows: dict[int, dict[str, float]] = {}
    counted: dict[int, int] = {}
    for index, query_id, value in csv.reader(io.StringIO(stdout)):
        if query_id == "#rows":
            counted[int(index)] = int(value)
        elif is_text(calls[int(index)][1].metric):
            rows.setdefault(int(index), {})[query_id] = value
        else:
            rows.setdefault(int(index), {})[query_id] = math.nan if value == "NULL" else float(value)
    failed = [i for i in range(len(calls)) if i not in counted]
    refusals = stderr.count(AVERAGE_REFUSALS[0])
    errors = stderr.count("Error:")
    outcomes: dict[int, Any] = {}
    for index in range(len(calls)):
        if index in failed:
            if refusals == errors == len(failed):
                outcomes[index] = Refused("the shell refused ties := 'average'", True)
            else:
                outcomes[index] = Refused(f"{len(failed)} shell calls failed; stderr:\n{stderr[-3000:]}", False)
        else:
            got = rows.get(index, {})
            assert len(got) == counted[index], f"shell call {index} printed {len(got)} of {counted[index]} rows"
            outcomes[index] = got
    return outcomes


def run_cli(cli: list[str], arguments: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*cli, "eval", *arguments, "-q", "--quiet", "-f", "csv"], check=False, capture_output=True,
                          text=True, cwd=REPO, timeout=600)


def cli_flags(conventions: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for name, value in conventions.items():
        if name == "complete":
            flags += ["-c"] if value else []
        else:
            flags += [CLI_FLAGS[name], text(value)]
    return flags


def parse_cli(done: subprocess.CompletedProcess, measures: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """({measure: {query_id: value} or Refused}, {measure: summary or Refused}) of one call."""
    if done.returncode != 0:
        error = refused(done.stderr or done.stdout)
        return dict.fromkeys(measures, error), dict.fromkeys(measures, error)
    by_printed = {duckrank.parse_measure(m).printed_name: m for m in measures}
    assert len(by_printed) == len(measures), "two measures print under one name"
    per_query: dict[str, Any] = {m: {} for m in measures}
    summary: dict[str, Any] = {}
    for row in csv.DictReader(io.StringIO(done.stdout)):
        measure = by_printed[row["metric"]]
        if is_text(duckrank.parse_measure(measure).metric.name):
            value = row["text"]
        else:
            value = float(row["value"]) if row["value"] != "" else math.nan
        if row["query_id"] == "all":
            summary[measure] = value
        else:
            per_query[measure][row["query_id"]] = value
    return per_query, summary


def cli_door(cli: list[str], data: dict[str, Path], setting: str, accepted: list[str],
             failed: list[str]) -> tuple[dict, dict]:
    """One call with every measure evaluate() accepted, and one per measure it refused, so that
    each refusal is the measure's own; if the first call fails too, one call per measure."""
    inputs = [str(data["qrels"]), str(data["run"])]
    flags = cli_flags(SETTINGS[setting])
    per_query: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    singles = list(failed)
    if accepted:
        per_query, summary = parse_cli(run_cli(cli, [*inputs, *flags, *(f"-m{m}" for m in accepted)]), accepted)
        if isinstance(next(iter(per_query.values())), Refused):
            singles += accepted
    for measure in singles:
        one_query, one_summary = parse_cli(run_cli(cli, [*inputs, *flags, f"-m{measure}"]), [measure])
        per_query.update(one_query)
        summary.update(one_summary)
    return per_query, summary


def evaluate_door(data: dict[str, Path], setting: str, measures: list[str]) -> dict[str, Any]:
    """{measure: {query_id: value} or Refused} from evaluate(per_query=True): one call, or one per
    measure when the call is refused."""
    qrels, run = str(data["qrels"]), str(data["run"])
    try:
        rows = duckrank.evaluate(qrels, run, measures, per_query=True, **SETTINGS[setting]).fetchall()
    except duckrank.DuckrankError as error:
        if len(measures) == 1:
            return {measures[0]: refused(str(error))}
        return {m: outcome for measure in measures for m, outcome in evaluate_door(data, setting, [measure]).items()}
    per_query: dict[str, Any] = {m: {} for m in measures}
    for query_id, measure, value, *text_value in rows:
        if text_value and text_value[0] is not None:
            value = text_value[0]
        per_query[measure][query_id] = math.nan if value is None else value
    return per_query


def evaluate_summaries(data: dict[str, Path], setting: str, measures: list[str]) -> dict[str, Any]:
    """evaluate()'s summary of each measure: one call, or one per measure when it is refused."""
    try:
        means = duckrank.evaluate(str(data["qrels"]), str(data["run"]), measures, **SETTINGS[setting])
    except duckrank.DuckrankError as error:
        if len(measures) == 1:
            return {measures[0]: refused(str(error))}
        return {m: value for measure in measures for m, value in evaluate_summaries(data, setting, [measure]).items()}
    return {measure: means.get(measure, math.nan) for measure in measures}


def log_cli_door(cli: list[str], data: dict[str, Path], setting: str, measures: list[str]) -> dict[str, Any]:
    flags = cli_flags(LOG_SETTINGS[setting])
    done = run_cli(cli, ["--log", str(data["log"]), "--label", "label", *flags, *(f"-m{m}" for m in measures)])
    return parse_cli(done, measures)[1]


@dataclass
class Doors:
    """Every door's outcome for every (setting, measure)."""

    shell: dict[tuple[str, str], Any]  # (setting, case label) -> {query_id: value} | Refused
    python: dict[str, dict[str, Any]]  # setting -> measure -> {query_id: value} | Refused
    python_summary: dict[str, dict[str, Any]]  # setting -> summary-only measure -> value | Refused
    cli: dict[str, tuple[dict, dict]]  # setting -> (per-query, summary) by measure
    log_python: dict[tuple[str, str], Any]  # (setting, measure) -> value
    log_cli: dict[tuple[str, str], Any]
    shell_stderr: str = ""


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("front_doors")
    paths = {name: folder / f"{name}.parquet" for name in ("qrels", "run", "log")}
    con = duckdb.connect()
    con.execute("CREATE TABLE qrels (query_id VARCHAR, doc_id VARCHAR, relevance INTEGER)")
    con.executemany("INSERT INTO qrels VALUES (?, ?, ?)", QRELS)
    con.execute("CREATE TABLE run (query_id VARCHAR, doc_id VARCHAR, score DOUBLE)")
    con.executemany("INSERT INTO run VALUES (?, ?, ?)", RUN)
    con.execute("CREATE TABLE log (query_id VARCHAR, doc_id VARCHAR, score DOUBLE, label INTEGER)")
    con.executemany("INSERT INTO log VALUES (?, ?, ?, ?)", LOG)
    for name, path in paths.items():
        con.execute(f"COPY {name} TO '{path}' (FORMAT parquet)")
    con.close()
    return paths


@pytest.fixture(scope="module")
def doors(data) -> Doors:
    """Every door over every case: the shell (one process) and the CLI calls in the background,
    evaluate() here."""
    cli = duckrank_command()
    calls = [(setting, case) for setting in SETTINGS for case in cases_for(setting)] + LOG_CASES
    with ThreadPoolExecutor(max_workers=3) as pool:
        library = subprocess.run([*cli, "sql"], capture_output=True, text=True, check=True, timeout=120).stdout
        # every case in one shell process: minutes on a busy 2-core machine
        shell_job = pool.submit(run_shell, shell_script(library, data, calls), timeout=1800)
        summary_measures = [spelling(m) for m in SUMMARY_ONLY]
        measures = {setting: list(dict.fromkeys(case.measure for case in cases_for(setting))) for setting in SETTINGS}
        # the CLI calls that need not know what evaluate() refuses start at once
        cli_jobs = {setting: pool.submit(cli_door, cli, data, setting, measures[setting] + summary_measures, [])
                    for setting in SETTINGS if "average" not in SETTINGS[setting].values()}
        python = {setting: evaluate_door(data, setting, measures[setting]) for setting in SETTINGS}
        python_summary = {setting: evaluate_summaries(data, setting, summary_measures) for setting in SETTINGS}
        for setting in SETTINGS:
            if setting in cli_jobs:
                continue
            outcomes = {**python[setting], **python_summary[setting]}
            accepted = [m for m, outcome in outcomes.items() if not isinstance(outcome, Refused)]
            failed = [m for m, outcome in outcomes.items() if isinstance(outcome, Refused)]
            cli_jobs[setting] = pool.submit(cli_door, cli, data, setting, accepted, failed)
        log_measures = {setting: [case.measure for s, case in LOG_CASES if s == setting]
                        for setting in dict.fromkeys(s for s, _ in LOG_CASES)}
        log_jobs = {setting: pool.submit(log_cli_door, cli, data, setting, names)
                    for setting, names in log_measures.items()}
        log_python = {}
        for setting, names in log_measures.items():
            values = duckrank.evaluate(log=str(data["log"]), label="label", measures=names, **LOG_SETTINGS[setting])
            log_python.update({(setting, name): values.get(name, math.nan) for name in names})
        cli_results = {setting: job.result() for setting, job in cli_jobs.items()}
        log_cli = {(setting, name): value for setting, job in log_jobs.items() for name, value in job.result().items()}
        shell_done = shell_job.result()
        outcomes = parse_shell(shell_done.stdout, shell_done.stderr, calls)
        shell = {(setting, case.label): outcomes[index] for index, (setting, case) in enumerate(calls)}
    return Doors(shell, python, python_summary, cli_results, log_python, log_cli, shell_done.stderr)


# ---------------------------------------------------------------------------------------------
# comparing


def is_text(metric: str) -> bool:
    """A measure whose values are text (relstring): compared as strings."""
    return METRICS[metric].value == "text"


def same_value(a: float | str, b: float | str) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def agree(outcomes: dict[str, Any]) -> bool:
    """Every door refused (for the same reason), or every door gave the same queries and values."""
    values = list(outcomes.values())
    if any(isinstance(v, Refused) for v in values):
        return all(isinstance(v, Refused) and v.average for v in values)
    if all(isinstance(v, dict) for v in values):
        first = values[0]
        return all(set(v) == set(first) and all(same_value(v[q], first[q]) for q in first) for v in values[1:])
    return all(same_value(v, values[0]) for v in values[1:])


def show(outcome: Any) -> str:
    if isinstance(outcome, dict):
        return "{" + ", ".join(f"{q}: {v!r}" for q, v in sorted(outcome.items())) + "}"
    return repr(outcome)


def disagreements(rows: list[tuple[str, dict[str, Any]]]) -> str:
    lines = [f"{label}\n" + "\n".join(f"    {door:>8}: {show(value)}" for door, value in outcomes.items())
             for label, outcomes in rows if not agree(outcomes)]
    return f"{len(lines)} of {len(rows)} cases disagree:\n" + "\n".join(lines) if lines else ""


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_per_query_values_agree(doors, setting):
    rows = []
    for case in cases_for(setting):
        outcomes = {}
        shell = doors.shell.get((setting, case.label))
        # another macro's column is out of reach when that macro's own measure is refused
        if not (case.via and isinstance(shell, Refused) and shell.average
                and isinstance(doors.python[setting][case.via], Refused)):
            outcomes["shell"] = shell
        outcomes["evaluate"] = doors.python[setting][case.measure]
        outcomes["cli"] = doors.cli[setting][0][case.measure]
        rows.append((f"[{setting}] {case.label}", outcomes))
    problems = disagreements(rows)
    assert not problems, problems


@pytest.mark.parametrize("setting", list(SETTINGS))
def test_summaries_agree(doors, setting):
    """num_q, gm_map and gm_bpref have no per-query rows (nor a table macro): the CLI's summary
    and evaluate()'s."""
    python, cli = doors.python_summary[setting], doors.cli[setting][1]
    rows = [(f"[{setting}] {measure} (summary)", {"evaluate": python[measure], "cli": cli[measure]})
            for measure in python]
    problems = disagreements(rows)
    assert not problems, problems


def test_log_measures_agree(doors):
    rows = []
    for setting, case in LOG_CASES:
        outcomes = {}
        shell = doors.shell[(setting, case.label)]
        outcomes["shell"] = shell.get("<log>", math.nan) if isinstance(shell, dict) else shell
        outcomes["evaluate"] = doors.log_python[(setting, case.measure)]
        outcomes["cli"] = doors.log_cli[(setting, case.measure)]
        rows.append((f"[{setting}] {case.label}", outcomes))
    problems = disagreements(rows)
    assert not problems, problems


def test_every_metric_option_and_convention_is_covered():
    covered = {case.metric for setting in SETTINGS for case in cases_for(setting)} | {
        case.metric for _, case in LOG_CASES}
    assert covered | {m.name for m in [*SUMMARY_ONLY, *BEYOND, *DIVERSITY]} == set(METRICS)
    for name in set(OPTIONS) - set(TREC_ONLY_OPTIONS):
        values = option_values(name)
        assert values and OPTIONS[name].default not in values, name
    used = {(name, value) for conventions in SETTINGS.values() for name, value in conventions.items()}
    for convention in CONVENTIONS.values():  # every value but the default, of every convention
        values = convention.param.choices or [{"rel_level": 2, "max_rank": 2, "complete": True}[convention.name]]
        assert {(convention.name, v) for v in values if v != convention.param.default} <= used, convention.name


def test_the_shell_door_ran(doors):
    assert doors.shell, doors.shell_stderr
