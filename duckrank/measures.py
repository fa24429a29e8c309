"""Measure strings -> the SQL aggregate that computes them.

One registry serves three spelling families, case-insensitively:
  duckrank / ir_measures: nDCG@10, nDCG(gain=exp)@10, P(rel=2)@5, AP(denominator=min)@10, RR, ERR@20, AUC
  trec_eval:              map, P.5, ndcg_cut.10, recip_rank, success.10, map_cut.100, set_F, Rprec, bpref
                          (and the printed forms P_5, ndcg_cut_10, iprec_at_recall_0.10, ...)
  ranx:                   precision@10, recall@100, mrr, hit_rate@5, f1@10, ndcg_burges@10, rbp.95
Every metric's math is a macro in sql/; this module only names, parses and renders calls to them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from duckrank._sql import literal
from duckrank.errors import MeasureError


@dataclass(frozen=True)
class Metric:
    """A metric: its SQL expression over a row of duckrank.ranked, its options with defaults, how it summarises."""

    name: str  # the SQL table macro's name
    aggregate: str  # SQL template over one row `q` of duckrank.ranked; {option} placeholders
    options: dict[str, Any] = field(default_factory=dict)
    summary: str = "mean"  # mean | sum | gmean | count | log (a whole-log value, no per-query rows)
    cutoff: str | None = "k"  # the option an @N suffix sets
    per_query: bool = True  # whether per-query rows are reported (trec_eval hides num_q, gm_map)
    judged_only: bool = True  # reads only judged docs, so duckrank.ranked may leave the others out


# The option defaults here are the SQL macros' defaults; the SQL validates every value. Each
# aggregate is an expression over `q`, one row of duckrank.ranked (a query and its ranking).
METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("precision", "duckrank.precision_of(q, {k})", {"k": None}),
    Metric("recall", "duckrank.recall_of(q, {k}, cap := {cap})", {"k": None, "cap": False}),
    Metric("f_measure", "duckrank.f_measure_of(q, {k}, beta := {beta})", {"k": None, "beta": 1.0}),
    Metric("hit_rate", "duckrank.hit_rate_of(q, {k})", {"k": None}),
    Metric("reciprocal_rank", "duckrank.reciprocal_rank_of(q, {k})", {"k": None}),
    Metric("average_precision", "duckrank.average_precision_of(q, {k}, denominator := {denominator})",
           {"k": None, "denominator": "R"}),
    Metric("r_precision", "duckrank.r_precision_of(q, mult := {mult})", {"mult": 1.0}, cutoff=None),
    Metric("bpref", "duckrank.bpref_of(q)", cutoff=None),
    Metric("interpolated_precision", "duckrank.interpolated_precision_of(q, {recall})", {"recall": 0.0},
           cutoff="recall"),
    Metric("eleven_point_average", "duckrank.eleven_point_average_of(q)", cutoff=None),
    Metric("cg", "duckrank.cg_of(q, {k})", {"k": None, "gain": "linear", "gain_map": None}),
    Metric("dcg", "duckrank.dcg_of(q, {k})", {"k": None, "gain": "linear", "gain_map": None}),
    Metric("idcg", "duckrank.idcg_of(q, {k}, ideal := {ideal})",
           {"k": None, "gain": "linear", "gain_map": None, "ideal": "qrels"}),
    Metric("ndcg", "duckrank.ndcg_of(q, {k}, ideal := {ideal})",
           {"k": None, "gain": "linear", "gain_map": None, "ideal": "qrels"}),
    Metric("err", "duckrank.err_of(q, {k})", {"k": None, "g_max": None}),
    Metric("rbp", "duckrank.rbp_of(q, {k}, p := {p})", {"k": None, "p": 0.8}),
    Metric("rbp_residual", "duckrank.rbp_residual_of(q, {k}, p := {p})", {"k": None, "p": 0.8}),
    Metric("auc", "duckrank.auc_of(q)", cutoff=None, judged_only=False),
    Metric("gauc", "", {"weight": "impressions"}, summary="log", cutoff=None),
    Metric("global_auc", "", summary="log", cutoff=None),
    Metric("mae", "duckrank.mae_of(q)", cutoff=None),
    Metric("rmse", "duckrank.rmse_of(q)", cutoff=None),
    Metric("num_q", "1", summary="count", cutoff=None, per_query=False),
    Metric("num_ret", "q.num_ret", summary="sum", cutoff=None),
    Metric("num_rel", "q.num_rel", summary="sum", cutoff=None),
    Metric("num_rel_ret", "duckrank.num_rel_ret_of(q)", summary="sum", cutoff=None),
    Metric("num_nonrel_judged_ret", "duckrank.num_nonrel_judged_ret_of(q)", summary="sum", cutoff=None),
    Metric("gm_map", "duckrank.average_precision_of(q, NULL)", summary="gmean", cutoff=None, per_query=False),
    Metric("gm_bpref", "duckrank.bpref_of(q)", summary="gmean", cutoff=None, per_query=False),
]}

# Options every metric accepts in a measure string: the relevance level, ir_measures' `rel`.
COMMON_OPTIONS = {"rel": "rel_level"}

# duckrank / ir_measures / ranx names (lower case) -> (metric, fixed options).
NAMES: dict[str, tuple[str, dict[str, Any]]] = {
    "p": ("precision", {}), "precision": ("precision", {}),
    "r": ("recall", {}), "recall": ("recall", {}),
    "f": ("f_measure", {}), "f1": ("f_measure", {"beta": 1.0}), "f_measure": ("f_measure", {}),
    "hit": ("hit_rate", {}), "hits_at": ("hit_rate", {}), "hit_rate": ("hit_rate", {}), "success": ("hit_rate", {}),
    "rr": ("reciprocal_rank", {}), "mrr": ("reciprocal_rank", {}), "reciprocal_rank": ("reciprocal_rank", {}),
    "ap": ("average_precision", {}), "map": ("average_precision", {}),
    "average_precision": ("average_precision", {}),
    "rprec": ("r_precision", {}), "r-prec": ("r_precision", {}), "r-precision": ("r_precision", {}),
    "r_precision": ("r_precision", {}),
    "bpref": ("bpref", {}),
    "iprec": ("interpolated_precision", {}), "interpolated_precision": ("interpolated_precision", {}),
    "11pt_avg": ("eleven_point_average", {}), "eleven_point_average": ("eleven_point_average", {}),
    "cg": ("cg", {}), "dcg": ("dcg", {}), "idcg": ("idcg", {}), "ndcg": ("ndcg", {}),
    "ndcg_burges": ("ndcg", {"gain": "exp"}), "dcg_burges": ("dcg", {"gain": "exp"}),
    "err": ("err", {}), "rbp": ("rbp", {}), "rbp_residual": ("rbp_residual", {}),
    "auc": ("auc", {}), "gauc": ("gauc", {}), "global_auc": ("global_auc", {}), "auc_global": ("global_auc", {}),
    "mae": ("mae", {}), "rmse": ("rmse", {}),
    "numq": ("num_q", {}), "numret": ("num_ret", {}), "numrel": ("num_rel", {}), "numrelret": ("num_rel_ret", {}),
}

# trec_eval names -> (metric, fixed options, the option its .N parameter sets, printed-name format).
TREC_NAMES: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "P": ("precision", {}, "k"),
    "recall": ("recall", {}, "k"),
    "relative_P": ("recall", {"cap": True}, "k"),
    "success": ("hit_rate", {}, "k"),
    "map": ("average_precision", {}, None),
    "map_cut": ("average_precision", {}, "k"),
    "gm_map": ("gm_map", {}, None),
    "recip_rank": ("reciprocal_rank", {}, None),
    "Rprec": ("r_precision", {}, None),
    "Rprec_mult": ("r_precision", {}, "mult"),
    "bpref": ("bpref", {}, None),
    "gm_bpref": ("gm_bpref", {}, None),
    "iprec_at_recall": ("interpolated_precision", {}, "recall"),
    "11pt_avg": ("eleven_point_average", {}, None),
    "ndcg": ("ndcg", {}, "gain_map"),
    "ndcg_cut": ("ndcg", {}, "k"),
    "set_P": ("precision", {}, None),
    "set_recall": ("recall", {}, None),
    "set_F": ("f_measure", {}, None),
    "rbp": ("rbp", {"p": 0.9}, None),  # trec_eval's own default persistence
    "rbp_resid": ("rbp_residual", {"p": 0.9}, None),
    "num_q": ("num_q", {}, None),
    "num_ret": ("num_ret", {}, None),
    "num_rel": ("num_rel", {}, None),
    "num_rel_ret": ("num_rel_ret", {}, None),
    "num_nonrel_judged_ret": ("num_nonrel_judged_ret", {}, None),
}
_TREC_LOWER = {name.lower(): name for name in TREC_NAMES}

_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
# `-m all_trec`: every trec_eval measure duckrank supports, in trec_eval's own order.
ALL_TREC: list[str] = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    *[f"iprec_at_recall.{level / 10:.2f}" for level in range(11)],
    *[f"P.{k}" for k in _CUTOFFS],
    *[f"recall.{k}" for k in _CUTOFFS],
    "gm_bpref",
    *[f"Rprec_mult.{m / 10:.2f}" for m in range(2, 21, 2)],
    "11pt_avg", "ndcg",
    *[f"ndcg_cut.{k}" for k in _CUTOFFS],
    *[f"map_cut.{k}" for k in _CUTOFFS],
    *[f"relative_P.{k}" for k in _CUTOFFS],
    *[f"success.{k}" for k in (1, 5, 10)],
    "set_P", "set_recall", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid",
]


@dataclass(frozen=True)
class Measure:
    """A parsed measure string: which metric, with which options, and how to print it."""

    spelling: str  # as the user wrote it
    metric: Metric
    options: tuple[tuple[str, Any], ...]  # the metric's options, defaults filled in
    rel_level: float | None = None  # a per-measure relevance level (P(rel=2)@5), else the convention
    printed_name: str = ""  # trec_eval's printed name for trec_eval spellings, else the spelling
    named: frozenset[str] = frozenset()  # the options the spelling set (the rest are defaults)

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.options)

    @property
    def summary(self) -> str:
        return self.metric.summary

    def relation_key(self, rel_level: float) -> tuple:
        """Measures with equal keys share one duckrank.ranked pass."""
        params = self.params
        gain_map = params.get("gain_map")
        return (self.rel_level if self.rel_level is not None else rel_level,
                params.get("gain", "linear"),
                tuple(sorted(gain_map.items())) if gain_map else None,
                params.get("g_max"))

    def aggregate_sql(self) -> str:
        """The SQL aggregate over duckrank.ranked that computes this measure per query."""
        return self.metric.aggregate.format(**{name: sql_literal(value) for name, value in self.options})


def sql_literal(value: Any) -> str:
    """An option value as a SQL literal; a text value must be a plain word (a name like 'exp')."""
    if isinstance(value, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise MeasureError(f"option value {value!r} is not a plain word or number")
    return literal(value)


def _number(text: str, spelling: str) -> float | int:
    try:
        number = float(text)
    except ValueError:
        raise MeasureError(f"measure {spelling!r}: {text!r} is not a number") from None
    return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+", text.strip()) else number


def _option_value(text: str, spelling: str) -> Any:
    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return _number(text, spelling)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    raise MeasureError(f"measure {spelling!r}: option value {text!r} is not a number or a word")


def _build(spelling: str, metric_name: str, fixed: dict[str, Any], given: dict[str, Any],
           printed_name: str) -> Measure:
    metric = METRICS[metric_name]
    options = dict(metric.options)
    rel_level = None
    for name, value in {**fixed, **given}.items():
        if name in COMMON_OPTIONS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise MeasureError(f"measure {spelling!r}: rel must be a number, got {value!r}")
            rel_level = value
        elif name in options:
            if isinstance(options[name], bool) and not isinstance(value, bool):
                raise MeasureError(f"measure {spelling!r}: {name} must be true or false, got {value!r}")
            options[name] = value
        else:
            allowed = ", ".join(sorted([*options, *COMMON_OPTIONS])) or "none"
            raise MeasureError(f"measure {spelling!r}: {metric_name} has no option {name!r} (options: {allowed})")
    k = options.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise MeasureError(f"measure {spelling!r}: the cutoff must be a positive integer, got {k!r}")
    return Measure(spelling, metric, tuple(options.items()), rel_level, printed_name or spelling,
                   frozenset(name for name in {**fixed, **given} if name in options))


_DUCK_PATTERN = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_\-]*)(?:\((?P<options>[^)]*)\))?(?:@(?P<cutoff>[^@]+))?$")
_TREC_PRINTED = re.compile(r"^(?P<name>[A-Za-z0-9_]+?)_(?P<param>\d+(?:\.\d+)?)$")


def _parse_trec(spelling: str) -> Measure | None:
    text = spelling.strip()
    name, _, param = text.partition(".")
    canonical = _TREC_LOWER.get(name.lower())
    if canonical is None:
        printed = _TREC_PRINTED.match(text)
        if not printed or printed["name"].lower() not in _TREC_LOWER:
            return None
        canonical, param = _TREC_LOWER[printed["name"].lower()], printed["param"]
    metric_name, fixed, param_option = TREC_NAMES[canonical]
    given: dict[str, Any] = {}
    printed_name = canonical
    if param:
        if param_option is None:
            raise MeasureError(f"measure {spelling!r}: trec_eval's {canonical} takes no parameter")
        if param_option == "gain_map":
            given["gain_map"] = _gain_map(param, spelling)
            printed_name = f"{canonical}_{param}"
        else:
            value = _number(param, spelling)
            if param_option == "k":
                value = int(value)  # trec_eval truncates a fractional cutoff (ndcg_cut.23.4 -> 23)
                printed_name = f"{canonical}_{value}"
            else:
                printed_name = f"{canonical}_{float(value):.2f}"
            given[param_option] = value
    return _build(spelling, metric_name, fixed, given, printed_name)


def _gain_map(text: str, spelling: str) -> dict[float, float]:
    gains = {}
    for pair in text.split(","):
        grade, sep, gain = pair.partition("=")
        if not sep:
            raise MeasureError(f"measure {spelling!r}: gains are written grade=gain, e.g. ndcg.1=3,2=9")
        gains[float(_number(grade, spelling))] = float(_number(gain, spelling))
    return gains


def _parse_duck(spelling: str) -> Measure | None:
    text = spelling.strip()
    match = _DUCK_PATTERN.match(text)
    if not match or match["name"].lower() not in NAMES:
        return None
    metric_name, fixed = NAMES[match["name"].lower()]
    given: dict[str, Any] = {}
    if match["options"]:
        for item in match["options"].split(","):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise MeasureError(f"measure {spelling!r}: options are written name=value, e.g. nDCG(gain=exp)@10")
            given[key.strip().lower()] = _option_value(value, spelling)
    if match["cutoff"] is not None:
        cutoff = METRICS[metric_name].cutoff
        if cutoff is None:
            raise MeasureError(f"measure {spelling!r}: {metric_name} takes no @cutoff")
        given[cutoff] = _number(match["cutoff"], spelling)
    return _build(spelling, metric_name, fixed, given, spelling)


def known_spellings() -> list[str]:
    """Example spellings of every family, for suggestions and `duckrank metrics`."""
    return sorted({*NAMES, *(name for name in TREC_NAMES), *ALL_TREC})


def parse_measure(spelling: str) -> Measure:
    """Parse one measure string; raise MeasureError naming it and the closest valid names."""
    if not isinstance(spelling, str) or not spelling.strip():
        raise MeasureError(f"measure {spelling!r} is empty; try e.g. 'nDCG@10', 'map' or 'P.5'")
    text = spelling.strip()
    if re.fullmatch(r"rbp\.\d+", text, re.IGNORECASE):  # ranx's rbp.95 = RBP(p=0.95)
        return _build(spelling, "rbp", {}, {"p": float("0." + text[4:])}, spelling)
    # trec_eval spellings first: 'map', 'P.5', 'ndcg' mean exactly trec_eval's measures.
    measure = _parse_trec(spelling) or _parse_duck(spelling)
    if measure is None:
        head = re.split(r"[@(.]", spelling.strip(), maxsplit=1)[0]
        lowered = {name.lower(): name for name in known_spellings()}
        close = difflib.get_close_matches(head.lower(), list(lowered), n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(lowered[c]) for c in close)}?" if close else ""
        raise MeasureError(f"unknown measure {spelling!r}{hint} (`duckrank metrics` lists them all)")
    return measure


def expand_measures(arguments: list[str]) -> list[str]:
    """Expand trec_eval's `-m` shorthands: comma lists (P.5,10,20) and all_trec."""
    expanded: list[str] = []
    for argument in arguments:
        if argument.strip().lower() == "all_trec":
            expanded.extend(ALL_TREC)
            continue
        name, dot, params = argument.partition(".")
        parts = params.split(",")
        if dot and len(parts) > 1 and all(re.fullmatch(r"\d*\.?\d+", p.strip()) for p in parts):
            expanded.extend(f"{name}.{p.strip()}" for p in parts)
        else:
            expanded.append(argument)
    return expanded


def parse_measures(spellings: list[str] | str) -> list[Measure]:
    """Parse a measure list (a single string is one measure); duplicates are kept once."""
    if isinstance(spellings, str):
        spellings = [spellings]
    measures: dict[str, Measure] = {}
    for spelling in expand_measures(list(spellings)):
        measures.setdefault(spelling, parse_measure(spelling))
    return list(measures.values())
