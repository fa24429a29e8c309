"""The report's figures, drawn with matplotlib (the optional extra `duckrank[plot]`).

Every figure is drawn from numbers the SQL already aggregated (duckrank.report gathers them):
curves at a bounded number of points, quantiles instead of raw per-query values, so a figure's size
does not grow with the number of queries. matplotlib renders SVG, PNG and PDF offline, without a
browser or a script; the SVG keeps its text as text (small, sharp in print, searchable).

Importing this module imports matplotlib; `import duckrank` never does.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import Any

from duckrank.errors import OptionError
from duckrank.registry import FIGURE_FORMATS, PLOT_EXTRA_HINT

try:
    import matplotlib
    from matplotlib.figure import Figure as _MplFigure
    from matplotlib.patches import Patch
    from matplotlib.ticker import FuncFormatter
except ImportError as error:  # pragma: no cover - exercised by the CLI's check
    raise ImportError(PLOT_EXTRA_HINT) from error

# tab10, grey last: one colour per run, the same in every figure (an 11th run repeats the first).
_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22", "#17becf",
            "#7f7f7f")
_WIN, _LOSS = "#2a9d4b", "#c8453b"
_BARS_UP_TO = 100  # queries in a win/loss chart drawn as one bar each; more are drawn as an area
_STYLE = {"font.size": 8.5, "axes.titlesize": 9, "axes.labelsize": 8.5, "legend.fontsize": 8,
          "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
          "axes.grid": True, "grid.color": "#e4e4e4", "grid.linewidth": 0.6, "svg.fonttype": "none",
          "font.family": "sans-serif", "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"]}


# Longest run name or segment value a figure shows whole; a longer one keeps its start and end.
LABEL_CHARS = 40


def label(value: Any, limit: int = LABEL_CHARS) -> str:
    """A name as a figure's text, never markup: shortened with an ellipsis past `limit` characters,
    every $ escaped (matplotlib reads $...$ as mathtext, a crash or italics), and a leading _
    kept visible (matplotlib leaves a legend entry out when its label starts with one)."""
    text = str(value)
    if len(text) > limit:
        head = (limit - 1) // 2
        text = f"{text[:head]}\u2026{text[len(text) - (limit - 1 - head):]}"
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def colour(index: int) -> str:
    return _COLOURS[index % len(_COLOURS)]


class Figure:
    """One figure: shown inline by a notebook (_repr_svg_), saved as SVG, PNG or PDF (save)."""

    def __init__(self, figure: _MplFigure, name: str) -> None:
        self.figure = figure
        self.name = name

    def render(self, fmt: str = "svg") -> bytes:
        if fmt not in FIGURE_FORMATS:
            raise OptionError(f"a figure is written as {', '.join(FIGURE_FORMATS)}; got {fmt!r}")
        buffer = io.BytesIO()
        # a salt per figure keeps the ids of two inline SVGs apart, and the output reproducible
        with matplotlib.rc_context({**_STYLE, "svg.hashsalt": f"duckrank-{self.name}"}):
            metadata = {"Date": None} if fmt in ("svg", "pdf") else {}
            self.figure.savefig(buffer, format=fmt, metadata=metadata, dpi=150 if fmt == "png" else "figure")
        return buffer.getvalue()

    def svg(self) -> str:
        text = self.render("svg").decode("utf-8")
        return text[text.index("<svg"):]  # inline in HTML: no XML prolog or doctype

    def save(self, path: str, fmt: str | None = None) -> None:
        """Write the figure to `path` (atomically) as `fmt`, or as its extension says."""
        from pathlib import Path

        from duckrank._output import atomic_path

        fmt = fmt or Path(path).suffix.lower().lstrip(".")
        data = self.render(fmt)
        with atomic_path(path) as tmp, open(tmp, "wb") as stream:
            stream.write(data)

    def _repr_svg_(self) -> str:
        return self.svg()

    def _repr_html_(self) -> str:
        return f'<div class="duckrank-figure">{self.svg()}</div>'


def _new(name: str, panels: int, columns: int, width: float = 10.0, height: float = 3.0) -> tuple[Figure, list]:
    columns = max(1, min(columns, panels))
    rows = math.ceil(panels / columns)
    with matplotlib.rc_context(_STYLE):
        figure = _MplFigure(figsize=(width, height * rows), layout="constrained")
        axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return Figure(figure, name), axes[:panels]


def _styled(function):
    """Draw under the house style (fonts, grid, spines), whatever the caller's rcParams."""
    def wrapper(*args, **kwargs):
        with matplotlib.rc_context(_STYLE):
            return function(*args, **kwargs)
    wrapper.__name__, wrapper.__doc__ = function.__name__, function.__doc__
    return wrapper


def _legend(figure: Figure, axes: list, runs: Sequence[str]) -> None:
    handles, labels = axes[0].get_legend_handles_labels()
    if handles:
        figure.figure.legend(handles, labels, loc="outside lower center", ncols=min(len(runs), 4), frameon=False)


@_styled
def precision_recall(eleven: dict[str, list[tuple[float, float]]], full: dict[str, list[tuple[float, float]]],
                     runs: Sequence[str]) -> Figure:
    """Interpolated precision at trec_eval's 11 recall levels, and at every 0.05 of recall."""
    figure, (left, right) = _new("pr", 2, 2, height=3.4)
    for index, run in enumerate(runs):
        if run in eleven:
            x, y = zip(*eleven[run])
            left.plot(x, y, marker="o", markersize=3, linewidth=1.4, color=colour(index), label=label(run))
        if run in full:
            x, y = zip(*full[run])
            right.plot(x, y, linewidth=1.4, color=colour(index), label=label(run))
    left.set_title("interpolated precision, 11 points (iprec_at_recall)")
    right.set_title("interpolated precision, every 0.05 of recall")
    for axis in (left, right):
        axis.set_xlabel("recall")
        axis.set_ylabel("precision")
        axis.set_xlim(0, 1)
        axis.set_ylim(0, 1.02)
    _legend(figure, [left], runs)
    return figure


@_styled
def cutoffs(curves: dict[str, dict[str, list[tuple[int, float]]]], runs: Sequence[str], depth: int) -> Figure:
    """measure@k against k (log axis, up to the run depth), one panel per measure family."""
    figure, axes = _new("cutoff", len(curves), 3, height=3.0)
    for axis, (family, by_run) in zip(axes, curves.items()):
        for index, run in enumerate(runs):
            if by_run.get(run):
                x, y = zip(*by_run[run])
                axis.plot(x, y, marker="o", markersize=2.5, linewidth=1.4, color=colour(index), label=label(run))
        axis.set_xscale("log")
        axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.set_title(f"{label(family)} against k (depth {depth})")
        axis.set_xlabel("k (log scale)")
        axis.set_ylim(bottom=0)
    _legend(figure, axes, runs)
    return figure


@_styled
def per_query_differences(panels: list[dict[str, Any]]) -> Figure:
    """The win/loss chart: each query's difference from the baseline, sorted, one panel per
    (measure, run): one bar per query up to 100 queries, above that the sorted curve as an area
    (at the bounded number of positions the SQL picked), green above zero and red below."""
    figure, axes = _new("per-query", len(panels), 2, height=2.6)
    for axis, panel in zip(axes, panels):
        points, n = panel["points"], panel["n"]
        if not points:
            axis.set_title(f"{label(panel['measure'])}: {label(panel['run'])} has no query in common with the baseline")
            continue
        x = [(position - 0.5) / n for position, _ in points]
        y = [value for _, value in points]
        if n <= _BARS_UP_TO:
            axis.bar(x, y, width=0.9 / n, color=[_WIN if v > 0 else _LOSS for v in y], linewidth=0)
        else:  # one polygon per sign: a few bytes per point, where bars would take a hundred
            for colour_, side in ((_WIN, [(a, b) for a, b in zip(x, y) if b > 0]),
                                  (_LOSS, [(a, b) for a, b in zip(x, y) if b < 0])):
                if side:
                    axis.fill([side[0][0], *(a for a, _ in side), side[-1][0]], [0, *(b for _, b in side), 0],
                              color=colour_, linewidth=0)
        axis.axhline(0, color="#444", linewidth=0.7)
        axis.set_xlim(0, 1)
        axis.set_xticks([])
        axis.grid(axis="x", visible=False)
        record = panel.get("record")
        wtl = f"  W/T/L {record[0]}/{record[1]}/{record[2]}" if record else ""
        axis.set_title(f"{label(panel['measure'])}: {label(panel['run'])} minus {label(panel['baseline'])}{wtl}")
        axis.set_xlabel(f"{n} queries, sorted by difference")
    return figure


@_styled
def differences(rows: list[dict[str, Any]], measures: Sequence[str], runs: Sequence[str], baseline: str,
                confidence: float) -> Figure:
    """Each run's mean difference from the baseline with its bootstrap interval (from compare)."""
    others = [run for run in runs if run != baseline]
    figure, axes = _new("diff", len(measures), 2, height=0.55 + 0.32 * len(others))
    for axis, measure in zip(axes, measures):
        found = {row["run"]: row for row in rows if row["metric"] == measure}
        for position, run in enumerate(others):
            row = found.get(run)
            if row is None or row["diff"] is None:
                continue
            index = list(runs).index(run)
            low, high = row["ci_low"], row["ci_high"]
            if low is not None and high is not None:
                axis.plot([low, high], [position, position], color=colour(index), linewidth=2, alpha=0.6)
            axis.plot([row["diff"]], [position], marker="D" if row["significant"] else "o", markersize=5,
                      color=colour(index))
        axis.axvline(0, color="#444", linewidth=0.8)
        axis.set_yticks(range(len(others)), [label(run) for run in others])
        axis.set_ylim(-0.6, len(others) - 0.4)
        axis.invert_yaxis()
        axis.set_title(f"{label(measure)}: difference from {label(baseline)}, {confidence * 100:g}% CI")
    return figure


@_styled
def distributions(stats: dict[str, dict[Any, dict[str, float]]], groups: Sequence[Any], runs: Sequence[str],
                  name: str = "distribution", group_label: str | None = None) -> Figure:
    """Box plots of each measure's per-query values: box = quartiles, whiskers = 5th and 95th
    percentiles, white dot = mean; one box per run (per segment and run with `group_label`)."""
    measures = list(stats)
    grouped = group_label is not None
    height = 0.7 + 0.22 * len(runs) * (len(groups) if grouped else 1)
    figure, axes = _new(name, len(measures), 2, height=max(1.8, height))
    for axis, measure in zip(axes, measures):
        boxes, positions, colours, labels, ticks = [], [], [], [], []
        slot = 0
        for group in (groups if grouped else [None]):
            start = slot
            for index, run in enumerate(runs):
                entry = stats[measure].get((group, run) if grouped else run)
                if entry is not None:
                    boxes.append({"med": entry["median"], "q1": entry["q1"], "q3": entry["q3"], "whislo": entry["p05"],
                                  "whishi": entry["p95"], "mean": entry["mean"], "fliers": []})
                    positions.append(slot)
                    colours.append(colour(index))
                    labels.append(label(run))
                slot += 1
            if grouped:
                ticks.append(((start + slot - 1) / 2, label(f"{group_label}={group}")))
                slot += 0.6
        if boxes:
            drawn = axis.bxp(boxes, positions=positions, orientation="horizontal", widths=0.7, showmeans=True,
                             patch_artist=True, meanprops={"marker": "o", "markerfacecolor": "white",
                                                           "markeredgecolor": "#333", "markersize": 3.5},
                             medianprops={"color": "#222", "linewidth": 1.2})
            for patch, fill in zip(drawn["boxes"], colours):
                patch.set_facecolor(fill)
                patch.set_alpha(0.75)
        if grouped:
            axis.set_yticks([t for t, _ in ticks], [text for _, text in ticks])
        else:
            axis.set_yticks(positions, labels)
        axis.invert_yaxis()
        axis.set_title(f"{label(measure)}: per-query values")
    if grouped:
        handles = [Patch(color=colour(i), alpha=0.75, label=label(run)) for i, run in enumerate(runs)]
        figure.figure.legend(handles=handles, loc="outside lower center", ncols=min(len(runs), 4), frameon=False)
    return figure
