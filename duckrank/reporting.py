"""A self-contained HTML report comparing runs: "where, and for whom?" after compare's "is it real?".

    import duckrank
    report = duckrank.report("qrels.parquet", ["bm25.parquet", "dense.parquet"], "report.html")
    report.plot("pr")        # one figure, shown inline by a notebook

Every number comes from the SQL library: the summary table is duckrank.compare's, the curves are
measures (P@k, recall@k, nDCG@k, iprec_at_recall) computed by one duckrank.compute pass, and the
per-query charts read quantiles and a bounded sample of sorted differences aggregated in SQL, so
the HTML stays small however many queries there are. The figures need the optional extra
duckrank[plot] (matplotlib); this module imports it only when a figure is drawn.
"""

from __future__ import annotations

import datetime
import html
import math
import os
import platform
import re
from dataclasses import dataclass, field
from typing import Any

import duckdb

from duckrank import __version__
from duckrank._duckdb_sql import tagged_names
from duckrank._library import connect, interruptible
from duckrank._sql import fresh_name, quote_identifier, sql_literal
from duckrank.comparison import (
    Comparison,
    beaten_letters,
    check_comparable,
    compare,
    distribution_stats,
    per_query_differences,
    resolve_baseline,
    run_letters,
    top_segments,
)
from duckrank.errors import OptionError
from duckrank.evaluation import Results, compute
from duckrank.inputs import StandardInput, read_table
from duckrank.measures import parse_measures
from duckrank.options import CONVENTIONS
from duckrank.peer_inputs import runs_and_names
from duckrank.registry import COMPARE_CORRECTIONS, COMPARE_DEFAULTS, COMPARE_MEASURES, COMPARE_TESTS, REPORT_FIGURES
from duckrank.spellings import RECALL_LEVELS

# k on a 1-2-3-5 grid (a log axis); points beyond the deepest ranking are dropped.
CUTOFFS = (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 300, 500, 1000, 2000, 3000, 5000, 10000)
CURVE_FAMILIES = {"P": "P@{k}", "recall": "recall@{k}", "nDCG": "nDCG@{k}"}
ELEVEN_POINTS = tuple(f"iprec_at_recall.{level}" for level in RECALL_LEVELS)
# The full curve: every 0.05 of recall (each level is one more measure in the pass); trec_eval's 11
# levels are among them (same spelling, computed once).
FULL_LEVELS = tuple(i / 20 for i in range(21))
SHAPE_MEASURES = ("num_ret", "num_rel", "num_rel_ret", "unj.10")


# What a run file's name ends with, left out of the run's short name.
_FILE_SUFFIXES = (".gz", ".zst", ".parquet", ".csv", ".tsv", ".jsonl", ".json", ".txt", ".trec", ".run")


def short_names(paths: list[str]) -> list[str] | None:
    """Each run file's shortest unique name: its file stem (bm25 for runs/bm25.parquet), with as
    many parent folders as tell it apart from the others (2024/bm25, 2025/bm25); None when one
    path's parts all end another's."""
    if len(set(paths)) != len(paths):
        return None
    split = []
    for path in paths:
        parts = [part for part in re.split("[" + re.escape(os.sep + (os.altsep or "")) + "]+", path)
                 if part not in ("", ".")]
        stem = parts[-1] if parts else path
        while stem.lower().endswith(_FILE_SUFFIXES) and "." in stem[1:]:
            stem = stem[:stem.rindex(".")]
        split.append([*parts[:-1], stem or path])
    names = []
    for index, parts in enumerate(split):
        others = [other for i, other in enumerate(split) if i != index]
        # the fewest trailing parts that no other run ends with (a different depth never collides:
        # it has another number of /)
        depth = next((d for d in range(1, len(parts) + 1) if all(other[-d:] != parts[-d:] for other in others)), None)
        if depth is None:  # its whole path is another's tail (runs/a and a): paths, as given
            return None
        names.append("/".join(parts[-depth:]))
    return names


def _full_spelling(level: float) -> str:
    trec = f"iprec_at_recall.{level:.2f}"
    return trec if trec in ELEVEN_POINTS else f"IPrec@{level:.2f}"


def _cutoff_family(spelling: str, given: dict[str, Any]) -> str | None:
    """A spelling that writes a cutoff k, as a template over k (ndcg_cut.10 -> ndcg_cut.{k})."""
    match = re.fullmatch(r"(.*[@.])(\d+)", spelling)
    if match and isinstance(given.get("k"), int) and int(match.group(2)) == given["k"]:
        return match.group(1).replace("{", "{{").replace("}", "}}") + "{k}"
    return None


@dataclass
class ReportData:
    """What the report shows, aggregated: small Python structures, no per-query rows."""

    runs: list[str]
    baseline: str | None
    measures: list[str]
    means: dict[str, dict[str, float]]
    eleven: dict[str, list[tuple[float, float]]]
    full: dict[str, list[tuple[float, float]]]
    curves: dict[str, dict[str, list[tuple[int, float]]]]
    depth: int
    distributions: dict[str, dict[Any, dict[str, float]]]
    diffs: list[dict[str, Any]]
    shape: dict[str, Any]
    comparison_rows: list[dict[str, Any]] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    by: list[str] = field(default_factory=list)
    segments: list[Any] = field(default_factory=list)
    segment_distributions: dict[str, dict[Any, dict[str, float]]] = field(default_factory=dict)
    segments_left_out: int = 0
    command: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)  # a run's file, when its name is shorter


# ---------------------------------------------------------------------------------------------
# data, aggregated in SQL


def _layout(con: duckdb.DuckDBPyConnection, results: Results, spellings: list[str]) -> str:
    """compute's results as compare's per-query layout ([segments,] metric_order, metric, run,
    query_id, value), for the measures named."""
    view = fresh_name("report_values")
    keys = "".join(f"r.{quote_identifier(b)}, " for b in results.by)
    wanted = ", ".join(sql_literal(s) for s in spellings)
    con.execute(f"CREATE TEMP VIEW {view} AS SELECT {keys}r.measure_index AS metric_order, m.measure AS metric, "
                f"r.run, r.query_id, r.value FROM {results.table} r JOIN {results.table}_measures m "
                f"USING (measure_index) WHERE r.query_id IS NOT NULL AND m.measure IN ({wanted})").fetchall()
    return view


@interruptible
def gather(qrels: Any, runs: Any, measures: list[str] | str = COMPARE_MEASURES, *, baseline: Any = None,
           by: list[str] | str | None = None, run_names: list[str] | None = None, command: str = "",
           con: duckdb.DuckDBPyConnection | None = None, statistics: bool = True, **options: Any) -> ReportData:
    """Compute everything the report shows; `options` are compare's settings and compute's.
    statistics=False skips compare (a figure that shows none of its numbers)."""
    settings = {name: options.pop(name) for name in list(options) if name in COMPARE_DEFAULTS}
    options["stdin"] = StandardInput()  # the report reads its inputs more than once: '-' from one copy
    headline = parse_measures(list(measures) if not isinstance(measures, str) else measures)
    check_comparable(headline)
    spellings = [m.spelling for m in headline]
    segments = [by] if isinstance(by, str) else list(by or [])
    if len(segments) > 1:
        raise OptionError("a report segments by one column (--by COL); got " + ", ".join(segments))
    families = {name: template for name, template in CURVE_FAMILIES.items()}
    seen = {(m.metric.name, m.rel_level, tuple(sorted((n, v) for n, v in m.given if n != "k")))
            for m in parse_measures([t.format(k=10) for t in CURVE_FAMILIES.values()])}
    for measure in headline:
        template = _cutoff_family(measure.spelling, dict(measure.given))
        key = (measure.metric.name, measure.rel_level, tuple(sorted((n, v) for n, v in measure.given if n != "k")))
        if template and key not in seen:
            seen.add(key)
            families[re.sub(r"[@.]\{k\}$", "", template)] = template
    con = con if con is not None else connect()
    full = [_full_spelling(level) for level in FULL_LEVELS]
    tags: list[str | None] = []
    runs, run_names = runs_and_names(runs, run_names)  # read more than once below
    deepest = _deepest(con, runs, options, tags)
    curve_spellings = [template.format(k=k) for template in families.values() for k in CUTOFFS
                       if deepest is None or k <= max(deepest, 1)]
    # compare reads the headline measures and then num_ret from the same results (one pass for all)
    everything = list(dict.fromkeys([*spellings, "num_ret", *SHAPE_MEASURES, *ELEVEN_POINTS, *full,
                                     *curve_spellings]))

    complete = options.pop("complete", False)
    paths: dict[str, str] = {}
    if run_names is None and isinstance(runs, (list, tuple)) and len(runs) > 1 and all(
            isinstance(run, str) and run != "-" for run in runs):
        # runs are named by their TREC tags or shortest unique file stems: the figures' titles and the
        # tables stay short, and the data table gives each run's path once
        shorter = short_names(list(runs))
        shorter = tagged_names(shorter or list(runs), tags) or shorter
        if shorter is not None:
            if baseline is not None and not isinstance(baseline, int):
                try:
                    baseline = list(runs).index(resolve_baseline(baseline, list(runs)))
                except OptionError:
                    pass  # a short name, or no run's: resolved against the short names below
            run_names, paths = shorter, dict(zip(shorter, runs))
    results = compute(qrels, runs, everything, run_names=run_names, complete=complete, con=con, **options)
    names = list(results.runs)
    base = resolve_baseline(baseline, names) if len(names) > 1 or baseline is not None else None
    means: dict[str, dict[str, float]] = {}
    for run, measure, value in results.summary.fetchall():
        means.setdefault(measure, {})[run] = value

    values = _layout(con, results, everything)
    # (empty := 'nan' makes every value of a query without relevant docs NaN, num_ret's too)
    depth = int(con.execute(f"SELECT coalesce(max(value), 0) FROM {values} WHERE metric = 'num_ret' "
                            f"AND NOT isnan(value)").fetchall()[0][0])
    shown_ks = [k for k in CUTOFFS if k <= max(depth, 1)]
    eleven = {run: [(float(s.split(".", 1)[1]), means[s][run]) for s in ELEVEN_POINTS if run in means.get(s, {})]
              for run in names}
    full_curve = {run: [(level, means[s][run]) for level, s in zip(FULL_LEVELS, full) if run in means.get(s, {})]
                  for run in names}
    curves = {name: {run: [(k, means[template.format(k=k)][run]) for k in shown_ks
                           if run in means.get(template.format(k=k), {})] for run in names}
              for name, template in families.items()}

    comparison: Comparison | None = None
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    if statistics and base is not None and len(names) > 1:
        comparison = compare(qrels, runs, spellings, baseline=base, run_names=run_names, complete=complete,
                             con=con, results=results, **settings, **options)
        rows = comparison.records()
        notes = list(comparison.notes)
        per_query = comparison.per_query_table
        settings = comparison.settings
    else:
        per_query = _layout(con, results, spellings)
    diffs = per_query_differences(con, per_query, names, base, rows) if base and len(names) > 1 else []
    distributions = distribution_stats(con, per_query)

    data = ReportData(names, base, spellings, means, eleven, full_curve, curves, depth, distributions, diffs,
                      _shape(con, qrels, values, names, options), rows, settings, notes, segments,
                      command=command, versions=_versions(), paths=paths)
    if segments:
        by_results = compute(qrels, runs, spellings, run_names=run_names, complete=complete, by=segments, con=con,
                             **options)
        by_values = _layout(con, by_results, spellings)
        data.segments, data.segments_left_out, chosen = top_segments(con, by_values, segments[0])
        data.segment_distributions = distribution_stats(con, chosen, segments)
    return data


def _deepest(con: duckdb.DuckDBPyConnection, runs: Any, options: dict[str, Any],
             tags: list[str | None] | None = None) -> int | None:
    """The most documents any run retrieves for a query (capped by max_rank): the curves stop there.
    None when a run comes from standard input, which can be read only once. `tags` receives each
    run's TREC tag (None for a run that is no TREC text)."""
    run_list = list(runs) if isinstance(runs, (list, tuple)) else [runs]
    if any(isinstance(run, str) and run == "-" for run in run_list):
        return None
    columns = {"query_id": options.get("query_col"), "doc_id": options.get("doc_col"),
               "score": options.get("score_col")}
    deepest = 0
    for run in run_list:
        source = read_table(con, run, "run", fmt=options.get("run_format"), columns=columns,
                            literal=options.get("literal"), stdin=options["stdin"])
        if tags is not None:
            tags.append(source.name)
        keys = "run_id, query_id" if source.has_run_id else "query_id"
        found = con.execute(f"SELECT max(n) FROM (SELECT count(*) AS n FROM {source.view} GROUP BY {keys})"
                            ).fetchall()[0][0]
        deepest = max(deepest, found or 0)
    max_rank = options.get("max_rank")
    return min(deepest, max_rank) if max_rank is not None else deepest


def _shape(con: duckdb.DuckDBPyConnection, qrels: Any, values: str, runs: list[str],
           options: dict[str, Any]) -> dict[str, Any]:
    """The qrels' size and each run's: what the comparison rests on."""
    rel_level = options.get("rel_level", CONVENTIONS["rel_level"].param.default)
    columns = {"query_id": options.get("query_col"), "doc_id": options.get("doc_col"),
               "relevance": options.get("relevance_col")}
    qrels_view = read_table(con, qrels, "qrels", fmt=options.get("qrels_format"), columns=columns,
                            literal=options.get("literal"), stdin=options["stdin"]).view
    queries, judged, relevant = con.execute(
        f"SELECT count(DISTINCT query_id), count(*), count(*) FILTER (WHERE relevance >= $level) "
        f"FROM {qrels_view}", {"level": rel_level}).fetchall()[0]
    per_run = con.execute(
        f"SELECT run, count(DISTINCT query_id) FILTER (WHERE metric = 'num_ret' AND value > 0), "
        f"sum(value) FILTER (WHERE metric = 'num_ret'), max(value) FILTER (WHERE metric = 'num_ret'), "
        f"sum(value) FILTER (WHERE metric = 'num_rel_ret'), avg(value) FILTER (WHERE metric = 'unj.10') "
        f"FROM {values} WHERE NOT isnan(value) GROUP BY run ORDER BY list_position($runs, run)", {"runs": runs}
    ).fetchall()
    return {"qrels": {"queries": queries, "judged": judged, "relevant": relevant, "rel_level": rel_level},
            "runs": [{"run": run, "queries": q or 0, "retrieved": int(r or 0), "depth": int(d or 0),
                      "relevant_retrieved": int(rr or 0), "unjudged_top10": u} for run, q, r, d, rr, u in per_run]}


def _versions() -> dict[str, str]:
    versions = {"duckrank": __version__, "duckdb": duckdb.__version__, "python": platform.python_version()}
    try:
        import matplotlib

        versions["matplotlib"] = matplotlib.__version__
    except ImportError:
        pass
    return versions


# ---------------------------------------------------------------------------------------------
# the report


class Report:
    """The report's data and its figures: html() is the whole self-contained page, save() writes
    it, plot(kind) draws one figure; a notebook shows the report inline (_repr_html_)."""

    def __init__(self, data: ReportData) -> None:
        self.data = data

    def plot(self, kind: str):
        """One figure: pr, cutoff, per-query, diff, distribution or segments."""
        from duckrank import plots

        data = self.data
        if kind == "pr":
            return plots.precision_recall(data.eleven, data.full, data.runs)
        if kind == "cutoff":
            return plots.cutoffs(data.curves, data.runs, data.depth)
        if kind == "distribution":
            return plots.distributions(data.distributions, [], data.runs)
        if kind == "segments":
            if not data.by:
                raise OptionError("the segments figure needs a column to segment by (--by COL / by=)")
            return plots.distributions(data.segment_distributions, data.segments, data.runs, "segments",
                                       data.by[0])
        if kind in ("per-query", "diff"):
            if data.baseline is None or len(data.runs) < 2:
                raise OptionError(f"the {kind} figure compares runs with a baseline; give two or more runs")
            if kind == "per-query":
                return plots.per_query_differences(data.diffs)
            return plots.differences(data.comparison_rows, data.measures, data.runs, data.baseline,
                                     data.settings["confidence"])
        raise OptionError(f"figure kind must be one of {', '.join(REPORT_FIGURES)}; got {kind!r}")

    def html(self) -> str:
        return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                f"<title>{html.escape(self._title())}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
                f"{self._body()}\n</body>\n</html>\n")

    def save(self, path: str) -> None:
        """Write the page to `path` atomically: a failure leaves no partial file."""
        from duckrank._output import text_output

        page = self.html()
        with text_output(path) as stream:
            stream.write(page)

    def _repr_html_(self) -> str:
        return f"<style>{_CSS}</style>{self._body()}"

    def _title(self) -> str:
        runs = self.data.runs
        return f"duckrank report: {' vs '.join(runs[:3])}{' ...' if len(runs) > 3 else ''}"

    def _body(self) -> str:
        data = self.data
        header = (f"<header><h1>{html.escape(self._title())}</h1><p class=\"meta\">{html.escape(_now())} &middot; "
                  f"<code>{html.escape(data.command)}</code></p></header>")
        parts = [header, self._shape_section(), self._summary_section()]
        compared = data.baseline is not None and len(data.runs) > 1
        if compared:
            parts.append(_figure_section("diff", "Differences from the baseline", self.plot("diff"),
                                         f"Mean difference from {data.baseline} with its percentile bootstrap "
                                         "interval (compare's numbers); a diamond marks a significant difference."))
        parts.append(_figure_section("pr", "Precision-recall", self.plot("pr"),
                                     "Interpolated precision, the mean over each run's queries: at trec_eval's 11 "
                                     "recall levels (iprec_at_recall) and at every 0.05 of recall (IPrec@r)."))
        parts.append(_figure_section("cutoff", "Measures at cutoff k", self.plot("cutoff"),
                                     f"Each measure at k = {', '.join(str(k) for k in CUTOFFS if k <= max(data.depth, 1))}"
                                     f" (log axis, up to the deepest ranking, {data.depth}); the mean over each run's "
                                     "queries, as duckrank eval computes it."))
        if compared:
            parts.append(_figure_section("per-query", "Per-query differences", self.plot("per-query"),
                                         "Each query's difference from the baseline on the queries every run "
                                         "answered, sorted: green, the run wins; red, it loses. W/T/L from compare.",
                                         self._movers()))
        parts.append(_figure_section("distribution", "Per-query distributions", self.plot("distribution"),
                                     "Box: quartiles; whiskers: 5th and 95th percentiles; white dot: mean."))
        if data.by:
            left = (f" The {data.segments_left_out} smaller segments are left out." if data.segments_left_out
                    else "")
            parts.append(_figure_section("segments", f"Per segment of {data.by[0]}", self.plot("segments"),
                                         f"The same distributions per value of {data.by[0]}, the "
                                         f"{len(data.segments)} largest segments by queries.{left}"))
        versions = ", ".join(f"{name} {version}" for name, version in data.versions.items())
        parts.append(f"<footer><p>Made by <code>{html.escape(data.command)}</code> with "
                     f"{html.escape(versions)}.</p></footer>")
        return "<main class=\"duckrank-report\">\n" + "\n".join(parts) + "\n</main>"

    def _shape_section(self) -> str:
        shape = self.data.shape
        q = shape["qrels"]
        paths = self.data.paths
        rows = "".join(
            f"<tr><th scope=\"row\">{html.escape(r['run'])}</th>"
            + (f"<td class=\"run\"><code>{html.escape(paths.get(r['run'], ''))}</code></td>" if paths else "")
            + f"{_cell(r['queries'], 'count')}"
            f"{_cell(r['retrieved'], 'count')}{_cell(r['depth'], 'count')}{_cell(r['relevant_retrieved'], 'count')}"
            f"{_cell(r['unjudged_top10'], 'share', warn=(r['unjudged_top10'] or 0) > 0.1)}</tr>"
            for r in shape["runs"])
        return ("<section id=\"data\"><h2>The data</h2>"
                f"<p>Qrels: <b>{q['queries']:,}</b> queries, <b>{q['judged']:,}</b> judgments, <b>{q['relevant']:,}</b> "
                f"relevant (grade &ge; {q['rel_level']:g}).</p>"
                "<div class=\"wide\"><table class=\"numbers\"><thead><tr><th class=\"text\">run</th>"
                + ("<th class=\"text\">file</th>" if self.data.paths else "") + "<th>queries scored</th><th>docs retrieved</th>"
                "<th>depth</th><th>relevant retrieved</th><th>unjudged in top 10</th></tr></thead>"
                f"<tbody>{rows}</tbody></table></div>"
                "<p class=\"note\">Unjudged in top 10: the mean share of each query's top 10 that the qrels do not "
                "judge (trec_eval's unj.10), marked above 10%: there, a difference may rest on holes in the "
                "judgments.</p></section>")

    def _summary_section(self) -> str:
        data = self.data
        if not data.comparison_rows:
            head = "<tr><th class=\"text\">measure</th>" + "".join(f"<th>{html.escape(r)}</th>" for r in data.runs) + "</tr>"
            body = "".join(f"<tr><th scope=\"row\">{html.escape(m)}</th>"
                           + "".join(_cell(data.means.get(m, {}).get(run)) for run in data.runs) + "</tr>"
                           for m in data.measures)
            return ("<section id=\"summary\"><h2>Summary</h2><div class=\"wide\"><table class=\"numbers\" "
                    f"id=\"summary-table\"><thead>{head}</thead><tbody>{body}</tbody></table></div><p class=\"note\">One run: means over its "
                    "queries; the comparison with a baseline needs two or more runs.</p></section>")
        s = data.settings
        tukey = s["test"] == "tukey"
        letters = run_letters(data.runs) if tukey else {}
        level = f"{s['confidence'] * 100:g}%"
        head = ("<tr><th class=\"text\">measure</th>" + ("<th class=\"text\">#</th>" if tukey else "")
                + "<th class=\"text\">run</th><th>n</th><th>mean</th><th>mean " + level + " CI</th><th>diff</th>"
                "<th>diff " + level + " CI</th><th>change</th><th>" + ("p (Tukey)" if tukey else "p adj")
                + "</th><th>W/T/L</th></tr>")
        body = []
        for row in data.comparison_rows:
            run = html.escape(str(row["run"])) + (" <small>(baseline)</small>" if row["is_baseline"] else "")
            record = "" if row["wins"] is None else f"{row['wins']}/{row['ties']}/{row['losses']}"
            significant = " class=\"significant\"" if row["significant"] else ""
            marks = beaten_letters(row["beats"], letters)
            superscript = f"<sup data-name=\"beats\">{marks}</sup>" if marks else ""
            label = f"<td class=\"run\">{letters[row['run']]}</td>" if tukey else ""
            body.append(
                f"<tr{significant}><th scope=\"row\">{html.escape(row['metric'])}</th>{label}"
                f"<td class=\"run\">{run}</td>"
                f"{_cell(row['n'], 'count', 'n')}"
                f"{_cell(row['mean'], name='mean', mark=superscript)}"
                f"{_interval(row['mean_ci_low'], row['mean_ci_high'], 'mean_ci')}"
                f"{_cell(row['diff'], 'signed', 'diff', mark='*' if row['significant'] else '')}"
                f"{_interval(row['ci_low'], row['ci_high'], 'ci', signed=True)}"
                f"{_cell(row['relative_change'], 'percent', 'relative_change')}"
                f"{_cell(row['p_adjusted'], 'p', 'p_adjusted')}<td class=\"wtl\">{record}</td></tr>")
        if tukey:
            verdict = (f"* p &lt; {s['alpha']:g} (Tukey's HSD over all {len(data.runs)} runs); superscripts: the "
                       f"letters (#) of the runs a mean beats at p &lt; {s['alpha']:g} by Tukey's HSD")
        else:
            verdict = (f"* adjusted p &lt; {s['alpha']:g} ({COMPARE_TESTS[s['test']]}, "
                       f"{COMPARE_CORRECTIONS[s['correction']]})")
        legend = (f"{verdict}; baseline "
                  f"{html.escape(data.baseline or '')}; CIs: percentile bootstrap, {s['bootstrap']} replicates; "
                  f"randomization test: {s['permutations']} sign flips; seed {s['seed']}. "
                  "Numbers from duckrank compare, over the queries every run answered.")
        notes = "".join(f"<p class=\"note\">Note: {html.escape(note)}</p>" for note in data.notes)
        return ("<section id=\"summary\"><h2>Summary</h2><div class=\"wide\"><table class=\"numbers\" "
                f"id=\"summary-table\"><thead>{head}</thead><tbody>{''.join(body)}</tbody></table></div><p class=\"note\">{legend}</p>"
                f"{notes}</section>")

    def _movers(self) -> str:
        blocks = []
        for panel in self.data.diffs:
            def listed(pairs):
                return ", ".join(f"<code>{html.escape(q)}</code> ({d:+.4f})" for q, d in pairs) or "none"
            blocks.append(f"<li><b>{html.escape(panel['measure'])}</b>, {html.escape(panel['run'])}: "
                          f"gained most {listed(panel['gained'])}; lost most {listed(panel['lost'])}</li>")
        return "<h3>Queries that moved most</h3><ul class=\"movers\">" + "".join(blocks) + "</ul>"


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _format(value: Any, kind: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if kind == "count":
        return f"{int(value):,}"
    if kind == "signed":
        return f"{value:+.4f}"
    if kind == "percent":
        return f"{value * 100:+.1f}%"
    if kind == "share":
        return f"{value * 100:.1f}%"
    if kind == "p":
        return "&lt;0.0001" if value < 0.0001 else f"{value:.4f}"
    return f"{value:.4f}"


def _cell(value: Any, kind: str = "number", name: str = "", mark: str = "", warn: bool = False) -> str:
    """A number cell; data-value keeps the full value so a reader (or a test) can check it."""
    attributes = f" data-name=\"{name}\"" if name else ""
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        attributes += f" data-value=\"{value!r}\""
    if warn:
        attributes += " class=\"warn\""
    return f"<td{attributes}>{_format(value, kind)}{mark}</td>"


def _interval(low: Any, high: Any, name: str, signed: bool = False) -> str:
    if low is None or high is None:
        return "<td></td>"
    kind = "signed" if signed else "number"
    return (f"<td data-name=\"{name}\" data-low=\"{low!r}\" data-high=\"{high!r}\">"
            f"[{_format(low, kind)}, {_format(high, kind)}]</td>")


def _figure_section(key: str, title: str, figure: Any, caption: str, extra: str = "") -> str:
    return (f"<section id=\"{key}\"><h2>{html.escape(title)}</h2><figure class=\"plot\" data-kind=\"{key}\">"
            f"{figure.svg()}<figcaption>{html.escape(caption)}</figcaption></figure>{extra}</section>")


_CSS = """
.duckrank-report { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1d1d1f;
  max-width: 1080px; margin: 0 auto; padding: 16px 24px 40px; }
.duckrank-report h1 { font-size: 22px; margin: 4px 0; }
.duckrank-report h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 3px; }
.duckrank-report h3 { font-size: 14px; margin: 12px 0 4px; }
.duckrank-report .meta, .duckrank-report .note, .duckrank-report figcaption, .duckrank-report footer
  { color: #555; font-size: 12.5px; }
.duckrank-report code { font: 12px ui-monospace, Menlo, Consolas, monospace; background: #f4f4f4; padding: 0 3px;
  border-radius: 3px; word-break: break-all; }
.duckrank-report table.numbers { border-collapse: collapse; font-variant-numeric: tabular-nums; font-size: 13px; }
.duckrank-report table.numbers th, .duckrank-report table.numbers td { padding: 3px 9px; border-bottom: 1px solid #eee;
  text-align: right; white-space: nowrap; }
.duckrank-report table.numbers th[scope=row], .duckrank-report table.numbers td.run,
.duckrank-report table.numbers thead th.text { text-align: left; }
.duckrank-report table.numbers thead th { border-bottom: 1.5px solid #999; font-weight: 600; }
.duckrank-report tr.significant td[data-name=diff] { font-weight: 700; }
.duckrank-report td.warn { color: #b3261e; font-weight: 600; }
.duckrank-report figure.plot { margin: 8px 0; }
.duckrank-report figure.plot svg { width: 100%; height: auto; display: block; }
.duckrank-report ul.movers { font-size: 13px; padding-left: 20px; }
.duckrank-report ul.movers code { white-space: nowrap; word-break: normal; }
.duckrank-report .wide { overflow-x: auto; }
@media print {
  .duckrank-report { max-width: none; padding: 0; font-size: 11px; }
  .duckrank-report table.numbers { font-size: 9px; }
  .duckrank-report table.numbers th, .duckrank-report table.numbers td { padding: 2px 4px; }
  .duckrank-report .wide { overflow: visible; }
  .duckrank-report .note, .duckrank-report figcaption, .duckrank-report footer { font-size: 9.5px; }
  .duckrank-report section, .duckrank-report figure { break-inside: avoid; }
  .duckrank-report h2 { break-after: avoid; }
}
"""


@interruptible
def report(qrels: Any, runs: Any, path: str | None = None, measures: list[str] | str = COMPARE_MEASURES, *,
           baseline: Any = None, by: list[str] | str | None = None, command: str | None = None,
           **options: Any) -> Report:
    """Compare runs in one self-contained HTML page (written to `path` when given, atomically).

    The summary table is duckrank.compare's (bootstrap intervals, adjusted p-values, W/T/L) for
    `measures`, against `baseline` (default the first run); the figures show interpolated
    precision-recall curves, P, recall, nDCG (and every measure given with a cutoff) at k, each
    query's difference from the baseline, and per-query distributions (per segment with `by=`,
    one column). One run gives the page without the comparison. Other options are compare's
    (permutations, bootstrap, seed, confidence, alpha, correction, test) and compute's
    (conventions, column names, formats, run_names, con). Needs the extra duckrank[plot].
    """
    from duckrank import plots  # noqa: F401 - says how to install the extra before any work

    if command is None:
        shown = ", ".join([repr(qrels), repr(runs), *([repr(path)] if path else []), f"measures={measures!r}",
                           *(f"{k}={v!r}" for k, v in (("baseline", baseline), ("by", by)) if v is not None),
                           *(f"{k}={v!r}" for k, v in options.items() if k != "con")])
        command = f"duckrank.report({shown})"
    result = Report(gather(qrels, runs, measures, baseline=baseline, by=by, command=command, **options))
    if path is not None:
        result.save(path)
    return result
