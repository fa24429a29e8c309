"""Compare runs: is B better than A, by how much, and how sure are we?

    import duckrank
    result = duckrank.compare("qrels.txt", ["bm25.txt", "dense.txt"], ["map", "ndcg_cut.10"])
    result.relation.df()      # one row per (measure, run): mean, diff, CIs, p-values, wins/ties/losses
    result.records()          # the same rows as dicts

Python composes; the statistics live in sql/50_compare.sql (duckrank.compare, a table macro over
any per-query table), so the shell computes the same numbers bit for bit:

    SELECT * FROM duckrank.compare('per_query', baseline := 'bm25', seed := 0);

The per-query values come from duckrank.compute (one pass for every run, measure and segment).
Runs are compared on the queries every run answered, unless complete=True scores a missing
query as 0 (trec_eval -c).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from duckrank import _studentized_range
from duckrank._borrowed import BorrowedConnection
from duckrank._library import connect, interruptible
from duckrank._sql import fresh_name, quote_identifier
from duckrank.errors import InputError, MeasureError, OptionError, one_per_line, quoted, quoted_path, subject
from duckrank.evaluation import Results, compute
from duckrank.measures import Measure, parse_measures
from duckrank.registry import (
    COMPARE_CORRECTIONS,
    COMPARE_DEFAULTS,
    COMPARE_MAX_REPLICATES,
    COMPARE_MEASURES,
    COMPARE_SEED_RANGE,
    COMPARE_TESTS,
)

# The result's columns after the segment columns, in order.
COLUMNS = ("metric", "run", "is_baseline", "n", "mean", "mean_ci_low", "mean_ci_high", "diff", "ci_low", "ci_high",
           "relative_change", "t", "df", "p_ttest", "p_randomization", "p_tukey", "p_ttest_adjusted",
           "p_randomization_adjusted", "p_adjusted", "significant", "beats", "wins", "ties", "losses", "effect_size",
           "note")
_RESERVED = {"metric", "metric_order", "run", "query_id", "value", *COLUMNS}
_SHOWN_IDS = 5
# A win/loss chart over more queries than this draws the sorted differences at about this many positions.
DIFF_POINTS = 400
MOVERS = 5
# The segments a figure draws: those with the most queries.
MAX_SEGMENTS = 12


@dataclass
class Comparison:
    """The comparison of every run with the baseline, per measure (and segment), in a temporary table.

    `relation` is a DuckDB relation (.df(), .pl(), .arrow()); `records()` gives dicts; `notes`
    says which queries were left out or scored 0, and why a test did not apply.
    """

    con: duckdb.DuckDBPyConnection
    table: str
    runs: list[str]
    baseline: str
    measures: list[Measure]
    by: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    per_query_table: str | None = None  # compare's input: ([segments,] metric_order, metric, run, query_id, value)

    @property
    def columns(self) -> list[str]:
        return [*self.by, *COLUMNS]

    @property
    def relation(self) -> duckdb.DuckDBPyRelation:
        """One row per ([segment,] measure, run), measures and runs in the order given."""
        shown = ", ".join(quote_identifier(c) for c in self.columns)
        return self.con.sql(f"SELECT {shown} FROM {self.table} ORDER BY row_order")

    def arrow(self) -> Any:
        return self.relation.arrow()

    def df(self) -> Any:
        return self.relation.df()

    def records(self) -> list[dict[str, Any]]:
        """The rows as dicts (the jsonl output's objects)."""
        relation = self.relation
        names = relation.columns
        return [dict(zip(names, row)) for row in relation.fetchall()]

    def plot(self, kind: str = "diff") -> Any:
        """A figure of this comparison (needs duckrank[plot]): diff (each mean difference with its
        interval), per-query (each query's difference, sorted), distribution (per-query values per
        run, or per segment with by=). Curves need the qrels: duckrank.report(...).plot("pr")."""
        from duckrank import plots

        con, table, runs = self.con, self.per_query_table, self.runs
        measures = [m.spelling for m in self.measures]
        if kind == "diff" and not self.by:
            return plots.differences(self.records(), measures, runs, self.baseline, self.settings["confidence"])
        if kind == "per-query" and not self.by:
            return plots.per_query_differences(per_query_differences(con, table, runs, self.baseline,
                                                                     self.records()))
        if kind == "distribution" and len(self.by) <= 1:
            if self.by:
                segments, _, chosen = top_segments(con, table, self.by[0])
                return plots.distributions(distribution_stats(con, chosen, self.by), segments, runs, "segments",
                                           self.by[0])
            return plots.distributions(distribution_stats(con, table), [], runs)
        if kind in ("pr", "cutoff"):
            raise OptionError(f"the {kind} figure needs the qrels and runs: "
                              f"duckrank.report(qrels, runs).plot({kind!r})")
        shown = "diff, per-query (without by=), distribution"
        raise OptionError(f"a comparison draws {shown}; got {kind!r}")

    def as_dict(self) -> dict[Any, Any]:
        """{measure: {run: row}}; with segments {segment: {measure: {run: row}}} (a tuple for several)."""
        nested: dict[Any, Any] = {}
        for row in self.records():
            target = nested
            if self.by:
                segment = tuple(row[b] for b in self.by)
                target = nested.setdefault(segment[0] if len(segment) == 1 else segment, {})
            target.setdefault(row["metric"], {})[row["run"]] = row
        return nested


def run_letters(runs: list[str]) -> dict[str, str]:
    """Each run's label in a Tukey table, as ranx gives them: a, b, c, ... in run order (then aa, ab, ...)."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    labels = [*letters, *(first + second for first in letters for second in letters)]
    if len(runs) > len(labels):
        raise OptionError(f"a Tukey table labels at most {len(labels)} runs with letters; got {len(runs)}")
    return dict(zip(runs, labels))


def beaten_letters(beats: list[str] | None, letters: dict[str, str]) -> str:
    """The labels of the runs a run beats significantly (its `beats`): ranx's superscript, such as
    'bd'; comma-separated once labels have two letters."""
    labels = [letters[run] for run in beats or []]
    return ("," if len(letters) > 26 else "").join(labels)


def _check_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Validate the statistics options; report every bad one at once (the SQL checks them again)."""
    problems = []
    checked = dict(settings)
    for name in ("permutations", "bootstrap", "seed"):
        value = settings[name]
        minimum, maximum = (COMPARE_SEED_RANGE if name == "seed" else (0, COMPARE_MAX_REPLICATES))
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:20]}... ({len(repr(value))} digits)"
            problems.append(subject(name, f" must be a whole number from {minimum} to {maximum}; got {shown}"))
    for name in ("confidence", "alpha"):
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
            problems.append(subject(name, f" must be a number strictly between 0 and 1; got {quoted(value)}"))
        else:
            checked[name] = float(value)
    for name, choices in (("correction", tuple(COMPARE_CORRECTIONS)), ("test", tuple(COMPARE_TESTS))):
        value = settings[name]
        if isinstance(value, str) and value.lower() in choices:
            checked[name] = value.lower()
        elif not (name == "correction" and value is None):
            problems.append(subject(name, f" must be one of {', '.join(choices)}; got {quoted(value)}"))
    if checked["test"] == "tukey" and settings["correction"] is not None:
        problems.append(subject("correction", f" {quoted(settings['correction'])} does not apply to test tukey: "
                                "Tukey's HSD adjusts for every pair of runs itself; leave correction unset (it "
                                "adjusts the t and randomization tests' p-values)"))
    if checked["correction"] is None:
        checked["correction"] = COMPARE_DEFAULTS["correction"]
    if problems:
        raise OptionError(*one_per_line(problems))
    return checked


def check_comparable(measures: list[Measure]) -> None:
    """Refuse a measure that is not a mean of per-query values: there is nothing per query to test."""
    bad = []
    for measure in measures:
        if measure.summary != "mean" or not measure.metric.per_query:
            how = {"sum": "a sum over queries", "count": "a count of queries", "gmean": "a geometric mean",
                   "log": "one value for a whole log"}.get(measure.summary, "not a mean of per-query values")
            bad.append(f"measure {measure.spelling!r} is {how}; compare tests means of per-query values "
                       "(e.g. map, ndcg_cut.10, P.10, recip_rank)")
    if bad:
        raise MeasureError("\n".join(bad))


def resolve_baseline(baseline: Any, runs: list[str]) -> str:
    """The baseline run: None (the first), an index, a run's name, or a unique file name or stem."""
    if baseline is None:
        return runs[0]
    if isinstance(baseline, int) and not isinstance(baseline, bool):
        if -len(runs) <= baseline < len(runs):
            return runs[baseline]
        raise OptionError(*subject("baseline", f" index {baseline} is out of range for {len(runs)} runs"))
    text = str(baseline)
    if text in runs:
        return text
    matches = [run for run in runs if text in (os.path.basename(run), Path(run).stem)]
    if len(matches) == 1:
        return matches[0]
    listed = ", ".join(repr(run) for run in runs)
    if matches:
        raise OptionError(*subject("baseline", f" {quoted_path(text)} matches several runs "
                                               f"({', '.join(map(quoted_path, matches))}); "
                                               f"give the full name (one of {listed})"))
    raise OptionError(*subject("baseline", f" {quoted_path(text)} is not one of the runs ({listed})"))


@interruptible
def compare(qrels: Any, runs: Any, measures: list[str] | str = COMPARE_MEASURES, *, baseline: Any = None,
            permutations: int = 10_000, bootstrap: int = 10_000, seed: int = 0, confidence: float = 0.95,
            alpha: float = 0.05, correction: str | None = None, test: str = "t", complete: bool = False,
            by: list[str] | str | None = None, run_names: list[str] | None = None,
            con: duckdb.DuckDBPyConnection | None = None, results: Results | None = None,
            **options: Any) -> Comparison:
    """Compare every run with the baseline (the first run unless `baseline=` names one).

    For each measure (and segment, `by=`) and run: the mean over the queries every run answered
    with its percentile bootstrap interval (`bootstrap` replicates, level `confidence`); the
    difference from the baseline with its interval; the relative change; a paired t-test and a
    paired randomization (sign-flip) test with `permutations` replicates, both two-sided; their
    p-values adjusted across all (run, measure) comparisons by `correction` (holm, the default, or
    bh) and the adjusted p of `test` (t or randomization) compared with `alpha`; wins, ties and
    losses over queries; and the effect size (mean difference / sd of the differences). `seed`
    makes every random draw reproducible. `complete=True` scores a query a run did not answer as 0 instead of
    leaving it out. Other options (conventions, column names, formats, engine settings) are
    duckrank.compute's. `results` (on `con`) skips that evaluation: duckrank.compute's results
    for these measures, then num_ret, then any others, with the same options (duckrank.report
    evaluates its curves in the same pass).

    test="tukey" runs Tukey's HSD over all runs instead, as ranx does (it takes no correction):
    p_tukey, each run's p against the baseline, marks significance, and `beats` lists the runs each
    run beats significantly (a higher mean, p < alpha), which the markdown and LaTeX tables mark
    with ranx's letters. Other tests leave both columns NULL.
    """
    settings = _check_settings({"permutations": permutations, "bootstrap": bootstrap, "seed": seed,
                                "confidence": confidence, "alpha": alpha, "correction": correction,
                                "test": test})
    if options.get("log") is not None:
        raise OptionError("compare needs qrels and two or more runs, not a single log")
    parsed = parse_measures(list(measures) if not isinstance(measures, str) else measures)
    check_comparable(parsed)
    segments = [by] if isinstance(by, str) else list(by or [])
    clashes = [name for name in segments if name in _RESERVED]
    if clashes:
        raise OptionError(f"cannot segment by {', '.join(map(quoted, clashes))}: the comparison uses that "
                          "column name itself; rename the column")
    # on a connection the caller owns, leave it as found but for the tables the comparison reads
    with BorrowedConnection.of(con) as guest:
        con = con if con is not None else connect()
        spellings = [m.spelling for m in parsed]
        presence = len(spellings)  # a hidden num_ret tells which queries each run answered
        if results is None:
            results = compute(qrels, runs, [*spellings, "num_ret"], run_names=run_names, complete=complete,
                              by=segments, con=con, **options)
        elif [m.spelling for m in results.measures[:presence + 1]] != [*spellings, "num_ret"] or results.by != segments:
            raise OptionError("results= must hold the compared measures, then num_ret, segmented the same way")
        names = list(results.runs)
        if len(names) < 2:
            raise OptionError(f"compare needs at least two runs; got one ({quoted_path(names[0])}). Pass two or more "
                              "run files, or one file whose run_id column holds several runs")
        base = resolve_baseline(baseline, names)
        _check_scored(con, results.table, presence, names)
        per_query = _per_query_table(con, results.table, presence, segments, complete)
        notes = _query_notes(con, results.table, presence, names, segments, complete)
        table = fresh_name("comparison")
        shown = ", ".join([*(quote_identifier(b) for b in segments), *COLUMNS])
        order = ", ".join([*(f"{quote_identifier(b)} NULLS LAST" for b in segments), "metric_order",
                           "list_position($runs, run)"])
        tukey = settings["test"] == "tukey"
        # the SQL tests t and randomization; with tukey its t-test verdict is replaced by Tukey's
        sql_test = "'t'" if tukey else "$test"
        rows = ("duckrank.compare($table, runs := $runs, baseline := $baseline, permutations := $permutations, "
                "bootstrap := $bootstrap, seed := $seed, confidence := $confidence, correction := $correction, "
                f"test := {sql_test}, alpha := $alpha)")
        try:
            if tukey:
                verdicts = _tukey_verdicts(con, per_query, names, base, settings["alpha"])
                same = " AND ".join([*(f"v.{quote_identifier(b)} IS NOT DISTINCT FROM c.{quote_identifier(b)}"
                                       for b in segments), "v.metric_order = c.metric_order", "v.run = c.run"])
                rows = (f"(SELECT c.* REPLACE (v.p_tukey AS p_adjusted, v.significant AS significant), v.p_tukey, "
                        f"v.beats FROM {rows} c LEFT JOIN {verdicts} v ON {same})")
            else:
                rows = (f"(SELECT *, CAST(NULL AS DOUBLE) AS p_tukey, CAST(NULL AS VARCHAR[]) AS beats "
                        f"FROM {rows})")
            con.execute(
                f"CREATE TEMP TABLE {table} AS SELECT row_number() OVER (ORDER BY {order}) AS row_order, {shown} "
                f"FROM {rows}",
                {"table": per_query, "runs": names, "baseline": base,
                 **{name: value for name, value in settings.items() if not (tukey and name == "test")}}).fetchall()
            if tukey:
                con.execute(f"DROP TABLE {verdicts}")
        except duckdb.Error as error:
            message = str(error)
            if "duckrank: " in message:
                raise InputError(message.split("duckrank: ", 1)[1].strip()) from None
            raise
        comparison = Comparison(con, table, names, base, parsed, segments, notes, {**settings, "complete": complete},
                                per_query)
        _check_testable(comparison)
        comparison.notes.extend(_row_notes(comparison))
        guest.keep(table, per_query)
        return comparison


def _tukey_verdicts(con: duckdb.DuckDBPyConnection, per_query: str, runs: list[str], baseline: str,
                    alpha: float) -> str:
    """A table of duckrank.tukey_verdicts: the SQL computes each pair's studentized range statistic,
    Python its p-value (DuckDB has no normal CDF to integrate), the SQL the verdicts."""
    pairs, p_values, verdicts = fresh_name("tukey_pairs"), fresh_name("tukey_p"), fresh_name("tukey_verdicts")
    con.execute(f"CREATE TEMP TABLE {pairs} AS SELECT * FROM duckrank.tukey_hsd($table, runs := $runs)",
                {"table": per_query, "runs": runs}).fetchall()
    con.execute(f"CREATE TEMP TABLE {p_values} (q DOUBLE, k BIGINT, df BIGINT, p DOUBLE)")
    found = con.execute(f"SELECT DISTINCT q, k, df FROM {pairs} WHERE q IS NOT NULL").fetchall()
    if found:
        con.executemany(f"INSERT INTO {p_values} VALUES (?, ?, ?, ?)",
                        [(q, k, df, _studentized_range.sf(q, k, df)) for q, k, df in found])
    tested = fresh_name("tukey_tested")
    con.execute(f"CREATE TEMP TABLE {tested} AS SELECT t.*, v.p FROM {pairs} t LEFT JOIN {p_values} v "
                "ON v.q = t.q AND v.k = t.k AND v.df = t.df").fetchall()
    con.execute(f"CREATE TEMP TABLE {verdicts} AS SELECT * FROM duckrank.tukey_verdicts($tested, $runs, $baseline, "
                "alpha := $alpha)", {"tested": tested, "runs": runs, "baseline": baseline, "alpha": alpha}).fetchall()
    for name in (pairs, p_values, tested):
        con.execute(f"DROP TABLE {name}")
    return verdicts


def _per_query_table(con: duckdb.DuckDBPyConnection, results: str, presence: int, by: list[str],
                     complete: bool) -> str:
    """(segments, metric_order, metric, run, query_id, value): the table duckrank.compare reads.
    With complete, a (segment, query) that some run answered and another did not scores 0 for the
    other (compute's complete already zero-fills whole queries when there are no segments)."""
    table = fresh_name("compare_input")
    keys = "".join(f"r.{quote_identifier(b)}, " for b in by)
    source = (f"SELECT {keys}r.measure_index AS metric_order, m.measure AS metric, r.run, r.query_id, r.value "
              f"FROM {results} r JOIN {results}_measures m USING (measure_index) "
              f"WHERE r.measure_index < {presence} AND r.query_id IS NOT NULL")
    if complete and by:
        key_list = "".join(f"{quote_identifier(b)}, " for b in by)
        joined = " AND ".join([*(f"v.{quote_identifier(b)} IS NOT DISTINCT FROM k.{quote_identifier(b)}" for b in by),
                               "v.metric_order = k.metric_order", "v.query_id = k.query_id", "v.run = runs.run"])
        source = (f"WITH v AS ({source}), k AS (SELECT DISTINCT {key_list}metric_order, metric, query_id FROM v), "
                  f"runs AS (SELECT run FROM {results}_runs) "
                  f"SELECT {''.join(f'k.{quote_identifier(b)}, ' for b in by)}k.metric_order, k.metric, runs.run, "
                  f"k.query_id, coalesce(v.value, 0.0) AS value FROM k CROSS JOIN runs LEFT JOIN v ON {joined}")
    columns = "".join(f"{quote_identifier(b)}, " for b in by)
    con.execute(f"CREATE TEMP TABLE {table} AS SELECT {columns}metric_order, metric, run, query_id, value "
                f"FROM ({source})").fetchall()
    return table


def _query_notes(con: duckdb.DuckDBPyConnection, results: str, presence: int, runs: list[str], by: list[str],
                 complete: bool) -> list[str]:
    """Which queries each run did not answer (of those another run answered), and what became of them."""
    keys = "".join(f"{quote_identifier(b)}, " for b in by)
    rows = con.execute(
        f"WITH answered AS (SELECT DISTINCT run, {keys}query_id FROM {results} "
        f"WHERE measure_index = {presence} AND value > 0), "
        f"every AS (SELECT DISTINCT {keys}query_id FROM answered), "
        f"runs AS (SELECT run, run_index FROM {results}_runs) "
        f"SELECT runs.run, count(*) AS missing, (SELECT count(*) FROM every) AS total, "
        f"list(DISTINCT CAST(e.query_id AS VARCHAR) ORDER BY CAST(e.query_id AS VARCHAR)) AS ids "
        f"FROM runs CROSS JOIN every e "
        f"WHERE NOT EXISTS (SELECT 1 FROM answered a WHERE a.run = runs.run AND a.query_id = e.query_id"
        f"{''.join(f' AND a.{quote_identifier(b)} IS NOT DISTINCT FROM e.{quote_identifier(b)}' for b in by)}) "
        f"GROUP BY runs.run, runs.run_index ORDER BY runs.run_index").fetchall()
    notes = []
    for run, missing, total, ids in rows:
        shown = ", ".join(ids[:_SHOWN_IDS]) + (", ..." if len(ids) > _SHOWN_IDS else "")
        where = " (in some segment)" if by else ""
        if complete:
            notes.append(f"run {quoted_path(run)} has no results for {missing} of the {total} queries the runs "
                         f"answer{where} "
                         f"({shown}); they score 0 (complete)")
        else:
            notes.append(f"run {quoted_path(run)} has no results for {missing} of the {total} queries the runs "
                         f"answer{where} "
                         f"({shown}); they are left out of every comparison (pass --complete / complete=True "
                         "to score them 0)")
    return notes


def _check_scored(con: duckdb.DuckDBPyConnection, results: str, presence: int, runs: list[str]) -> None:
    """Every run must score some query, or there is nothing to compare it on."""
    scored = dict(con.execute(f"SELECT run, count(DISTINCT query_id) FROM {results} WHERE measure_index = {presence} "
                              "AND value > 0 GROUP BY run").fetchall())
    empty = [run for run in runs if not scored.get(run)]
    if empty:
        raise InputError(f"run {quoted_path(empty[0])} has no query in common with the qrels: there is nothing "
                         f"to compare "
                         "it on; check that it describes the same queries (query ids are compared as given)")


def _check_testable(comparison: Comparison) -> None:
    """Refuse a comparison with nothing to test: fewer than two queries common to all runs."""
    most = comparison.con.execute(f"SELECT max(n) FROM {comparison.table}").fetchall()[0][0] or 0
    if most >= 2:
        return
    runs = ", ".join(repr(run) for run in comparison.runs)
    found = "no query" if most == 0 else "only 1 query"
    hint = " (pass --complete / complete=True to score missing queries as 0)" if not comparison.settings.get(
        "complete") else ""
    detail = f"; {comparison.notes[0]}" if comparison.notes else ""
    raise InputError(f"the runs {runs} have {found} in common with each other and the qrels; a paired "
                     f"comparison needs at least two{hint}{detail}")


def _row_notes(comparison: Comparison) -> list[str]:
    rows = comparison.con.execute(
        f"SELECT {''.join(f'{quote_identifier(b)}, ' for b in comparison.by)}metric, run, note "
        f"FROM {comparison.table} WHERE note IS NOT NULL ORDER BY row_order").fetchall()
    notes = []
    for row in rows:
        segment = row[:len(comparison.by)]
        metric, run, note = row[len(comparison.by):]
        where = "".join(f"{b}={v}, " for b, v in zip(comparison.by, segment))
        notes.append(f"{where}{metric}, run {quoted_path(run)}: {note}")
    return notes


# ---------------------------------------------------------------------------------------------
# what the figures draw, aggregated in SQL from a table of compare's per-query layout


def top_segments(con: duckdb.DuckDBPyConnection, table: str, column: str) -> tuple[list[Any], int, str]:
    """The MAX_SEGMENTS values of `column` with the most queries (most first), how many more values
    there are, and a view of the table's rows in those segments."""
    name = quote_identifier(column)
    counted = con.execute(f"SELECT {name}, count(DISTINCT query_id) AS n FROM {table} GROUP BY ALL "
                          f"ORDER BY n DESC, {name} NULLS LAST").fetchall()
    view = fresh_name("segments")
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT * FROM {table} WHERE {name} IN "
                f"(SELECT {name} FROM (SELECT {name}, count(DISTINCT query_id) AS n FROM {table} "
                f"GROUP BY ALL ORDER BY n DESC, {name} NULLS LAST LIMIT {MAX_SEGMENTS}))").fetchall()
    return [value for value, _ in counted[:MAX_SEGMENTS]], max(0, len(counted) - MAX_SEGMENTS), view


def distribution_stats(con: duckdb.DuckDBPyConnection, table: str, by: list[str] | None = None
                       ) -> dict[str, dict[Any, dict[str, float]]]:
    """{metric: {run (or (segment, run)): mean, 5th, 25th, 50th, 75th, 95th percentile, n}} of the
    per-query values in a table of compare's layout (one segment column at most)."""
    segment = f"{quote_identifier(by[0])}, " if by else ""
    rows = con.execute(
        f"SELECT metric, {segment}run, count(*), avg(value), "
        f"quantile_cont(value, [0.05, 0.25, 0.5, 0.75, 0.95]) FROM {table} "
        f"GROUP BY ALL ORDER BY min(metric_order), {segment}run").fetchall()
    stats: dict[str, dict[Any, dict[str, float]]] = {}
    for row in rows:
        metric, key, (n, mean, q) = row[0], (tuple(row[1:3]) if by else row[1]), row[-3:]
        stats.setdefault(metric, {})[key] = {"n": n, "mean": mean, "p05": q[0], "q1": q[1], "median": q[2],
                                             "q3": q[3], "p95": q[4]}
    return stats


def per_query_differences(con: duckdb.DuckDBPyConnection, table: str, runs: list[str], baseline: str,
                          rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Per (metric, run other than the baseline): the differences from the baseline on the queries
    every run answered (compare's queries), sorted, at most about DIFF_POINTS of them (evenly
    spaced positions, and both ends), and the MOVERS queries that gained and lost most."""
    found = con.execute(
        f"WITH v AS (SELECT metric_order, metric, run, query_id, value FROM {table}), "
        f"common AS (SELECT metric, query_id FROM v GROUP BY metric, query_id "
        f"            HAVING count(DISTINCT run) = $count), "
        f"d AS (SELECT o.metric_order, o.metric, o.run, CAST(o.query_id AS VARCHAR) AS query_id, "
        f"             o.value - b.value AS diff "
        f"      FROM v o JOIN v b ON b.metric = o.metric AND b.query_id = o.query_id AND b.run = $base "
        f"      WHERE o.run <> $base AND EXISTS (SELECT 1 FROM common c "
        f"            WHERE c.metric = o.metric AND c.query_id = o.query_id)), "
        f"ranked AS (SELECT *, row_number() OVER (PARTITION BY metric, run ORDER BY diff DESC, query_id) AS pos, "
        f"           count(*) OVER (PARTITION BY metric, run) AS n FROM d) "
        f"SELECT metric, run, pos, n, query_id, diff FROM ranked "
        f"WHERE n <= $limit OR (pos - 1) % (n // $limit + 1) = 0 OR pos <= $movers OR pos > n - $movers "
        f"ORDER BY metric_order, list_position($runs, run), pos",
        {"count": len(runs), "base": baseline, "limit": DIFF_POINTS, "movers": MOVERS, "runs": runs}).fetchall()
    records = {(row["metric"], row["run"]): (row["wins"], row["ties"], row["losses"]) for row in rows or []}
    panels: dict[tuple[str, str], dict[str, Any]] = {}
    for metric, run, position, n, query_id, diff in found:
        panel = panels.setdefault((metric, run), {
            "measure": metric, "run": run, "baseline": baseline, "n": n, "sampled": n > DIFF_POINTS,
            "points": [], "gained": [], "lost": [], "record": records.get((metric, run))})
        panel["points"].append((position, diff))
        if position <= MOVERS and diff > 0:
            panel["gained"].append((query_id, diff))
        if position > n - MOVERS and diff < 0:
            panel["lost"].insert(0, (query_id, diff))
    return list(panels.values())
