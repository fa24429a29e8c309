"""Measure strings -> the SQL that computes them.

One parser serves three spelling families, case-insensitively:
  duckrank / ir_measures: nDCG@10, nDCG(gain=exp)@10, P(rel=2)@5, AP(denominator=min)@10, RR, ERR@20, AUC
  trec_eval:              map, P.5, ndcg_cut.10, recip_rank, success.10, map_cut.100, set_F, Rprec, bpref
                          (and the printed forms P_5, ndcg_cut_10, iprec_at_recall_0.10, ...)
  ranx:                   precision@10, recall@100, mrr, hits@5, f1@10, ndcg_burges@10, rbp.95 (= rbp@95),
                          and ranx's relevance-level suffix: ndcg@10-l2
The names, options and defaults are the registry's (duckrank.registry, duckrank.options,
duckrank.spellings); a parsed measure keeps only the options its spelling wrote, and the defaults
are merged when it is rendered.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from duckrank._pairs import parse_pairs
from duckrank._sql import sql_literal
from duckrank.errors import MeasureError, OptionError
from duckrank.options import OPTIONS, RANKED_OPTIONS
from duckrank.registry import METRICS, Metric
from duckrank.spellings import ALL_TREC, TREC_ORDER, TREC_SETS, TREC_UNREAD_SETS, Spelling

# Spellings -> (metric, spelling). trec_eval's names are matched exactly (in another case only
# when no other family has the name, or with a trec_eval parameter: p.5); the others in their own
# case first (ranx's bpref@5, ir_measures' Bpref), then in any case, the first family listed winning
# (ir_measures, ranx, Microsoft Recommenders, duckrank's own).
TREC_NAMES: dict[str, tuple[Metric, Spelling]] = {
    s.name: (m, s) for m in METRICS.values() for s in m.trec_eval}
_OTHER_SPELLINGS = [(m, s) for family in ("ir_measures", "ranx", "recommenders", "aliases") for m in METRICS.values()
                    for s in getattr(m, family) if s.parameter != "persistence"]
EXACT_NAMES: dict[str, tuple[Metric, Spelling]] = {s.name: (m, s) for m, s in reversed(_OTHER_SPELLINGS)}
NAMES: dict[str, tuple[Metric, Spelling]] = {s.name.lower(): (m, s) for m, s in reversed(_OTHER_SPELLINGS)}
# ranx's names, which take its -lN suffix; and its rbp, written with its persistence (rbp.95)
RANX_NAMES = {s.name.lower() for m in METRICS.values() for s in m.ranx}
PERSISTENCE: dict[str, tuple[Metric, Spelling]] = {
    s.name: (m, s) for m in METRICS.values() for s in m.ranx if s.parameter == "persistence"}
_PERSISTENCE_PATTERN = re.compile(r"^(?P<name>[A-Za-z_]+)(?P<mark>[.@])(?P<digits>\d+)$")
_RANX_LEVEL = re.compile(r"^(?P<base>.+)-l(?P<level>\d+)$", re.IGNORECASE)
# ranx's -lN with a gain measure also drops the grades below N from the gains (its qrels filter)
_RELEVANT_GAINS = {"linear": "linear_relevant", "exp": "exp_relevant"}
_TREC_LOWER = {name.lower(): name for name in TREC_NAMES}
# The other families' names that a trec_eval family name shadows on duckrank eval's command line
# (ranx's recall: -m recall is trec_eval's recall.5 ... recall.1000), with the spelling that reaches
# them there
COMMAND_LINE_SPELLINGS = {s.name: s.command_line for m in METRICS.values() for s in m.spellings() if s.command_line}
# Options every metric accepts in a measure string: the relevance level, ir_measures' `rel`,
# `complete` (trec_eval -c for this measure alone: Microsoft Recommenders' ndcg_at_k scores a user
# its predictions miss as 0, its precision_at_k leaves the user out) and ir_measures' `judged_only`
# (trec_eval -J for this measure alone: true skips the unjudged docs, false counts them non-relevant).
COMMON_OPTIONS = {"rel": "rel_level", "complete": "complete", "judged_only": "unjudged"}


@dataclass(frozen=True)
class Measure:
    """A parsed measure string: which metric, the options its spelling wrote, how to print it."""

    spelling: str  # as the user wrote it
    metric: Metric
    given: tuple[tuple[str, Any], ...] = ()  # the options the spelling wrote or fixed; the rest are defaults
    rel_level: float | None = None  # a per-measure relevance level (P(rel=2)@5), else the convention
    printed_name: str = ""  # trec_eval's printed name for trec_eval spellings, else the spelling
    complete: bool | None = None  # a per-measure complete (nDCG(complete=true)@10), else the convention
    unjudged: str | None = None  # a per-measure unjudged rule (nDCG(judged_only=true)@10: skip), else the convention

    @property
    def params(self) -> dict[str, Any]:
        """Every option of the metric: the registry's defaults, then what the spelling wrote."""
        return {**self.metric.defaults(), **dict(self.given)}

    @property
    def summary(self) -> str:
        return self.metric.summary

    def with_default(self, name: str, value: Any) -> Measure:
        """This measure with another default for an option its spelling did not write (the gain
        convention: nDCG(gain=linear)@10 keeps linear gains whatever the convention says)."""
        if name not in self.metric.options or name in dict(self.given):
            return self
        return Measure(self.spelling, self.metric, (*self.given, (name, value)), self.rel_level, self.printed_name,
                       self.complete, self.unjudged)

    @property
    def ranked(self) -> bool:
        """Whether a duckrank.rank_queries pass scores it: not a log measure (it reads a whole log),
        a beyond-accuracy one (it reads the top lists) nor a diversity one (duckrank.rank_subtopics)."""
        return self.summary != "log" and self.metric.reads not in ("top_k", "subtopics")

    def level(self, rel_level: float) -> float:
        """Its relevance level: its own (P(rel=2)@5), else the convention's `rel_level`."""
        return self.rel_level if self.rel_level is not None else rel_level

    @property
    def depth(self) -> int | None:
        """Its k when it reads only the docs ranked <= k (and the qrels' counts), so that a run cut to
        each query's top k gives its value; None when it reads more of the ranking (no k, the run's
        own ideal ranking, each query's count of sampled negatives)."""
        if not self.metric.cut or self.catalog is not None or self.params.get("ideal", "qrels") != "qrels":
            return None
        return self.params.get("k")

    def relation_key(self, rel_level: float, complete: bool, unjudged: str) -> tuple:
        """Measures with equal keys share one duckrank.ranked pass: its relevance level, whether it
        scores the queries the run misses, its unjudged rule, and the measure options that change the
        relation (gains, ERR's top grade), defaults filled in."""
        params = {name: OPTIONS[name].default for name in RANKED_OPTIONS} | {
            name: value for name, value in self.params.items() if name in RANKED_OPTIONS}
        return (self.level(rel_level),
                self.complete if self.complete is not None else complete,
                self.unjudged or unjudged,
                *(tuple(sorted(value.items())) if isinstance(value, dict) else value
                  for value in (params[name] for name in RANKED_OPTIONS)))

    def aggregate_sql(self) -> str:
        """The SQL expression over one row `q` of duckrank.ranked that computes this measure."""
        return self.metric.aggregate.format(**{name: option_literal(value) for name, value in self.params.items()})

    @property
    def catalog(self) -> int | None:
        """The catalog size N its lists were sampled from (sampled=), None for full rankings."""
        return self.params.get("sampled")

    @property
    def corrected(self) -> bool:
        """Whether it reports a corrected estimate of the full-catalog value (sampled lists,
        correction bias or bv) rather than its plain value."""
        return self.catalog is not None and self.params.get("correction") != "none"

    def metric_values_sql(self) -> str:
        """f(R) for R = 1..N, its value for one relevant item at each full-catalog rank, as the list
        duckrank.sampled_estimators reads."""
        value = self.metric.sampled.format(**{name: option_literal(value) for name, value in self.params.items()})
        return f"list_transform(range(1, {option_literal(self.catalog)} + 1), lambda rank: {value})"

    def sampled_sql(self, estimates: str | None) -> str:
        """Its value on a sampled list: the plain aggregate, or (corrected) the mean estimate over the
        query's relevant items, `estimates` being SQL for the MAP from m to f~ (None: no query has one)."""
        return (f"duckrank.sampled_value(q, {self.aggregate_sql()}, "
                f"{estimates or 'CAST(NULL AS MAP(BIGINT, DOUBLE[]))'}, {option_literal(self.catalog)}, "
                f"{option_literal(self.params['correction'])})")

    def top_k_sql(self, tables: dict[str, str | None], empty: str) -> str:
        """The table macro call of a top_k measure (beyond accuracy) over the named tables: `users`
        (the run's top lists, duckrank.recommended's columns, at least this measure's k deep), train
        and items; `empty` is the empty policy."""
        return self.metric.aggregate.format(**{name: sql_literal(table) for name, table in tables.items()},
                                            empty=option_literal(empty),
                                            **{name: option_literal(value) for name, value in self.params.items()})


def option_literal(value: Any) -> str:
    """An option value as a SQL literal; a text value must be a plain word (a name like 'exp')."""
    if isinstance(value, str) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise MeasureError(f"option value {value!r} is not a plain word or number")
    return sql_literal(value)


def _number(text: str, spelling: str) -> float | int:
    try:
        number = float(text)
    except ValueError:
        raise MeasureError(f"measure {spelling!r}: {text!r} is not a number") from None
    return int(number) if number.is_integer() and re.fullmatch(r"[+-]?\d+", text.strip()) else number


def _option_value(text: str, spelling: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":  # ir_measures quotes text: dcg='exp-log2'
        return text[1:-1]
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return _number(text, spelling)
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        return text
    raise MeasureError(f"measure {spelling!r}: option value {text!r} is not a number or a word")


_TYPES = {"integer": (int,), "number": (int, float), "text": (str,), "boolean": (bool,), "gain_map": (dict,),
          "numbers": (tuple,)}
_TYPE_WORDS = {"integer": "a whole number", "number": "a number", "text": "a word", "boolean": "true or false",
               "gain_map": "grade=gain pairs", "numbers": "numbers, as trec_eval lists them (11pt_avg.0.2,0.5,0.8)"}


def _build(spelling: str, metric: Metric, fixed: tuple[tuple[str, Any], ...], given: dict[str, Any],
           printed_name: str, rel_variant: str = "") -> Measure:
    """A Measure from what a spelling fixes and writes; each option's type is checked here, its
    value by the SQL library's generated checks (duckrank.option_problems), which word the message."""
    options: dict[str, Any] = {}
    rel_level = complete = unjudged = None
    for name, value in {**dict(fixed), **given}.items():
        if name in ("complete", "judged_only") and not isinstance(value, bool):
            raise MeasureError(f"measure {spelling!r}: {name} must be true or false, got {value!r}")
        if name == "complete":
            complete = value
        elif name == "judged_only":
            unjudged = "skip" if value else "nonrelevant"
        elif name in COMMON_OPTIONS:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise MeasureError(f"measure {spelling!r}: rel must be a number, got {value!r}")
            rel_level = value
        elif name in metric.options:
            kind = OPTIONS[name].type
            if not isinstance(value, _TYPES[kind]) or (isinstance(value, bool) and kind != "boolean"):
                if name == metric.cutoff == "k":
                    raise MeasureError(f"measure {spelling!r}: the cutoff must be a positive integer, got {value!r}")
                raise MeasureError(f"measure {spelling!r}: {name} must be {_TYPE_WORDS[kind]}, got {value!r}")
            options[name] = value
        else:
            allowed = ", ".join(sorted([*metric.options, *COMMON_OPTIONS])) or "none"
            raise MeasureError(f"measure {spelling!r}: {metric.name} has no option {name!r} (options: {allowed})")
    if "beta" in options and "recall_weight" in options:  # one weight, said once
        raise MeasureError(f"measure {spelling!r}: give beta or recall_weight (beta^2), not both")
    k = options.get("k")
    if k is not None and k < 1:
        raise MeasureError(f"measure {spelling!r}: the cutoff must be a positive integer, got {k!r}")
    if rel_level is not None and rel_variant:  # NumRet(rel=2) is ir_measures' count of grade >= 2
        metric = METRICS[rel_variant]
    return Measure(spelling, metric, tuple(options.items()), rel_level, printed_name or spelling, complete, unjudged)


# a name starts with a letter, or alpha (ir_measures' α_nDCG, upper-cased Α_NDCG)
_DUCK_PATTERN = re.compile(r"^(?P<name>[A-Za-zαΑ][A-Za-z0-9_\-]*)(?:\((?P<options>[^)]*)\))?(?:@(?P<cutoff>[^@]+))?$")
_TREC_PRINTED = re.compile(r"^(?P<name>[A-Za-z0-9_]+?)_(?P<param>\d+(?:\.\d+)?)$")


def _parse_trec(spelling: str) -> Measure | None:
    text = spelling.strip()
    name, _, param = text.partition(".")
    canonical = _trec_family(name, bool(param))
    if canonical is None:
        printed = _TREC_PRINTED.match(text)
        if not printed or printed["name"].lower() not in _TREC_LOWER:
            return None
        canonical, param = _TREC_LOWER[printed["name"].lower()], printed["param"]
    metric, spelled = TREC_NAMES[canonical]
    param_option = spelled.parameter
    given: dict[str, Any] = {}
    printed_name = canonical
    if param:
        if param_option is None:
            raise MeasureError(f"measure {spelling!r}: trec_eval's {canonical} takes no parameter")
        printed_name = f"{canonical}_{param}"  # as trec_eval prints a parameter it does not reformat
        if param_option == "gain_map":
            given["gain_map"] = _gain_map(param, spelling)
        elif param_option == "named":  # rbp.p=0.95
            for pair in param.split(","):
                key, sep, value = pair.partition("=")
                if not sep:
                    raise MeasureError(f"measure {spelling!r}: trec_eval's {canonical} takes name=value, e.g. "
                                       f"{canonical}.p=0.95")
                given[key.strip()] = _number(value, spelling)
        elif param_option == "recall_levels":  # 11pt_avg.0.2,0.5,0.8, printed as written
            levels = tuple(float(_number(level, spelling)) for level in param.split(","))
            if list(levels) != sorted(levels):
                ascending = ",".join(sorted(param.split(","), key=lambda level: float(_number(level, spelling))))
                raise MeasureError(f"measure {spelling!r}: list the recall levels in ascending order, e.g. "
                                   f"{canonical}.{ascending}: trec_eval's 11pt_avg walks them from the last one, and "
                                   f"out of that order averages other precisions than the levels name")
            given["recall_levels"] = levels
        elif param_option == "beta^2":  # trec_eval's set_F.x computes (x + 1) P R / (x P + R)
            given["recall_weight"] = float(_number(param, spelling))
        elif "," in param_option:  # options by position: utility.1,-1,0,0
            names, values = param_option.split(","), param.split(",")
            if len(values) != len(names):
                raise MeasureError(f"measure {spelling!r}: trec_eval's {canonical} takes {len(names)} numbers "
                                   f"({', '.join(names)})")
            given.update((name, float(_number(value, spelling))) for name, value in zip(names, values))
        else:
            value = _number(param, spelling)
            if param_option == "k":
                value = int(value)  # trec_eval truncates a fractional cutoff (ndcg_cut.23.4 -> 23)
                printed_name = f"{canonical}_{value}"
            else:
                printed_name = f"{canonical}_{float(value):.2f}"
            given[param_option] = value
        if "stand_in" in metric.options:  # trec_eval -c resets the stand-in's value by the bare name only
            given["stand_in"] = True
    return _build(spelling, metric, spelled.fixed, given, printed_name, spelled.rel_variant)


GAIN_MAP_EXAMPLE = "nDCG(gain_map={1:3,2:9})@10 (trec_eval: ndcg.1=3,2=9)"
_BRACED = f"a gain map is written {{grade:gain,...}} in braces, e.g. {GAIN_MAP_EXAMPLE}"


def _gain_map(text: str, spelling: str, form: str = "grade=gain",
              how: str = "gains are written grade=gain, e.g. ndcg.1=3,2=9") -> dict[float, float]:
    """A gain map as trec_eval writes it (ndcg.1=3,2=9) or, in form grade:gain, inside a measure
    string's braces (_braced_gain_map): each grade once."""
    try:
        gains = parse_pairs(text, form, lambda grade: float(_number(grade, spelling)))
    except MeasureError:
        raise  # a grade that is not a number, as _number says it
    except ValueError as error:
        raise MeasureError(f"measure {spelling!r}: the gain map {error}; {how}") from None
    return {grade: float(_number(gain, spelling)) for grade, gain in gains.items()}


def _braced_gain_map(text: str, spelling: str) -> dict[float, float]:
    """A gain map in a measure string's options: {grade:gain,...}."""
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise MeasureError(f"measure {spelling!r}: {_BRACED}; got {text!r}")
    return _gain_map(text[1:-1], spelling, "grade:gain", _BRACED)


def _ir_measures_gains(text: str, spelling: str) -> dict[float, float]:
    """ir_measures' gains={grade:gain,...}: it rewrites those grades of the qrels to their gains before
    nDCG, which is duckrank's gain map where both are at least 0 (a negative grade or gain is
    "pooled but unjudged" to it, and gains nothing)."""
    gains = _braced_gain_map(text, spelling)
    if any(grade < 0 or gain < 0 for grade, gain in gains.items()):
        raise MeasureError(f"measure {spelling!r}: ir_measures' gains= takes grades and gains of at least 0 (it "
                           f"reads a negative one as unjudged); for negative gains write gain_map= instead")
    return gains


def _parse_duck(spelling: str) -> Measure | None:
    text = spelling.strip()
    match = _DUCK_PATTERN.match(text)
    if not match:
        return None
    if match["name"] in EXACT_NAMES:
        metric, spelled = EXACT_NAMES[match["name"]]
    elif match["name"].lower() in NAMES:
        metric, spelled = NAMES[match["name"].lower()]
    elif (match["options"] and (family := _trec_family(match["name"], True)) is not None
          and not TREC_NAMES[family][1].family):  # set_P(rel=2); not P_cut's list of cutoffs
        metric, spelled = TREC_NAMES[family]
    else:
        return None
    given: dict[str, Any] = {}
    if match["options"]:
        # commas inside braces belong to a gain map: nDCG(gain_map={1:3,2:9},ideal=run)@10
        for item in re.split(r",(?![^{]*})", match["options"]):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise MeasureError(f"measure {spelling!r}: options are written name=value, e.g. nDCG(gain=exp)@10")
            key = key.strip().lower()
            key = dict(spelled.option_names).get(key, key)  # NERR10(p=...) is ir_measures' phi
            values = {value: sets for option, value, sets in spelled.option_values if option == key}
            if values:  # nDCG(dcg='exp-log2') is nDCG(gain=exp)
                word = _option_value(value, spelling)
                if word not in values:
                    raise MeasureError(f"measure {spelling!r}: {spelled.name}'s {key} is one of "
                                       f"{', '.join(repr(v) for v in values)}, got {word!r}")
                sets = dict(values[word])
                metric = METRICS[sets.pop("metric", metric.name)]  # SetP(relative=True) is SetRelP
                given.update(sets)
            elif key == "gains":
                given["gain_map"] = _ir_measures_gains(value, spelling)
            else:
                given[key] = _braced_gain_map(value, spelling) if key == "gain_map" else _option_value(value, spelling)
    if match["cutoff"] is not None and spelled.ignores_cutoff:  # ranx's r-precision@5: int(k), then unused
        if not re.fullmatch(r"\d+", match["cutoff"].strip()):
            raise MeasureError(f"measure {spelling!r}: the cutoff must be a whole number, got {match['cutoff']!r}")
    elif match["cutoff"] is not None:
        if metric.cutoff is None or not spelled.cutoff:
            raise MeasureError(f"measure {spelling!r}: {match['name']} takes no @cutoff")
        given[metric.cutoff] = _number(match["cutoff"], spelling)
    return _build(spelling, metric, spelled.fixed, given, spelling, spelled.rel_variant)


def _parse_persistence(text: str, spelling: str) -> Measure | None:
    """ranx's rbp.95 and rbp@95: RBP with p = 0.95. The @ form only as ranx writes it, in lower case:
    ir_measures' RBP@10 is a cutoff."""
    match = _PERSISTENCE_PATTERN.match(text.strip())
    if not match or match["name"].lower() not in PERSISTENCE or (match["mark"] == "@" and match["name"] not in PERSISTENCE):
        return None
    metric, spelled = PERSISTENCE[match["name"].lower()]
    return _build(spelling, metric, spelled.fixed, {"p": float("0." + match["digits"])}, spelling)


def _at_ranx_level(measure: Measure, base: str, level: int, spelling: str, persistence: bool) -> Measure:
    """A ranx spelling with its -lN suffix: relevant means grade >= N, and (as ranx drops the judgments
    below N) a gain measure gains nothing below N."""
    head = re.split(r"[@(.]", base.strip(), maxsplit=1)[0].lower()
    if head not in RANX_NAMES or "(" in base or (head in PERSISTENCE and not persistence):
        raise MeasureError(f"measure {spelling!r}: -l{level} is ranx's relevance level, a suffix of ranx's names "
                           f"({', '.join(sorted(RANX_NAMES))}; rbp as rbp.NN); elsewhere write rel={level}, "
                           f"e.g. P(rel={level})@5")
    given = dict(measure.given)
    if "gain" in measure.metric.options:  # ranx's names have linear or exp gains (dcg, dcg_burges)
        given["gain"] = _RELEVANT_GAINS[measure.params["gain"]]
    return Measure(spelling, measure.metric, tuple(given.items()), level, spelling, measure.complete,
                   measure.unjudged)


def with_gain_map(measures: list[Measure], gain_map: Any) -> list[Measure]:
    """The measures with a gain map for every gain measure that names none (evaluate(gain_map=...),
    as gain= sets the gain rule); its gains are checked finite by the SQL library's option checks."""
    from collections.abc import Mapping

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if not isinstance(gain_map, Mapping) or not gain_map or not all(
            number(grade) and number(gain) for grade, gain in gain_map.items()):
        raise OptionError(f"gain_map must be a dict of grade to gain, e.g. gain_map={{1: 3, 2: 9}} (in a measure "
                          f"string: {GAIN_MAP_EXAMPLE}); got {gain_map!r}")
    gains = {float(grade): float(gain) for grade, gain in gain_map.items()}
    return [m.with_default("gain_map", gains) for m in measures]


def known_spellings() -> list[str]:
    """Example spellings of every family, for suggestions and `duckrank metrics`."""
    return sorted({*NAMES, *(name for name in TREC_NAMES), *ALL_TREC})


def parse_measure(spelling: str) -> Measure:
    """Parse one measure string; raise MeasureError naming it and the closest valid names."""
    if not isinstance(spelling, str) or not spelling.strip():
        raise MeasureError(f"measure {spelling!r} is empty; try e.g. 'nDCG@10', 'map' or 'P.5'")
    suffix = _RANX_LEVEL.match(spelling.strip())
    base = suffix["base"] if suffix else spelling
    persistence = _parse_persistence(base, spelling)
    # then trec_eval spellings: 'map', 'P.5', 'ndcg' mean exactly trec_eval's measures; with ranx's -lN
    # suffix ranx's names come first (bpref-l2 is ranx's bpref)
    if suffix:
        measure = persistence or _parse_duck(base) or _parse_trec(base)
    else:
        measure = persistence or _parse_trec(base) or _parse_duck(base)
    if measure is not None and suffix:
        return _at_ranx_level(measure, base, int(suffix["level"]), spelling, persistence is not None)
    if measure is None and spelling.strip() in TREC_UNREAD_SETS:
        raise MeasureError(f"{spelling.strip()!r} is trec_eval's measure set over {TREC_UNREAD_SETS[spelling.strip()]}, "
                           f"which duckrank does not read; its sets over qrels are {', '.join(TREC_SETS)}")
    if measure is None:
        head = re.split(r"[@(.]", spelling.strip(), maxsplit=1)[0]
        lowered = {name.lower(): name for name in known_spellings()}
        close = difflib.get_close_matches(head.lower(), list(lowered), n=4, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(lowered[c]) for c in close)}?" if close else ""
        raise MeasureError(f"unknown measure {spelling!r}{hint} (`duckrank metrics` lists them all)")
    return measure


def expand_measures(arguments: list[str]) -> list[str]:
    """Expand trec_eval's `-m` shorthands: comma lists (P.5,10,20) and its measure sets (all_trec, set,
    official)."""
    expanded: list[str] = []
    for argument in arguments:
        if argument.strip().lower() in TREC_SETS:
            expanded.extend(expand_measures(TREC_SETS[argument.strip().lower()]))
            continue
        name, dot, params = argument.partition(".")
        family = _trec_family(name, bool(dot))
        parts = _parameters(family, params) if dot and family is not None else [params]
        if len(parts) > 1:
            expanded.extend(f"{name}.{part}" for part in parts)
        else:
            expanded.append(argument)
    return expanded


# trec_eval parameters that are one number, so that P.5,10 lists two measures (utility.1,1,0,0 is one)
_NUMBER_PARAMETERS = ("k", "mult", "recall")


def _trec_family(name: str, has_parameter: bool) -> str | None:
    """The trec_eval measure a name means: trec_eval's names exactly ('rbp' is trec_eval's, with
    p = 0.9); in another case only where no other family has the name ('RBP' is ir_measures',
    p = 0.8) or a trec_eval parameter follows."""
    if name in TREC_NAMES:
        return name
    if has_parameter or name.lower() not in NAMES:
        return _TREC_LOWER.get(name.lower())
    return None


def _trec_values(text: str) -> tuple[str | None, list[str | None]]:
    """(trec_eval measure, its parameters) of one -m argument; (None, []) for another family."""
    name, dot, params = text.partition(".")
    family = _trec_family(name, bool(dot))
    if family is None:
        return None, []
    if not dot:
        return family, list(TREC_NAMES[family][1].family) or [None]
    return family, _parameters(family, params)


def _parameters(family: str, params: str) -> list[str]:
    """A trec_eval measure's parameter text as the parameters it lists: P.5,10 lists two measures,
    utility.1,-1,0,0 and ndcg.1=3,2=9 one each."""
    parts = [part.strip() for part in params.split(",")]
    if len(parts) > 1 and TREC_NAMES[family][1].parameter in _NUMBER_PARAMETERS and all(
            re.fullmatch(r"\d*\.?\d+", part) for part in parts):
        return parts
    return [params]


# trec_eval's runid: no measure, but the summary's line naming the run (m_runid.c)
RUNID = "runid"


def prints_runid(arguments: list[str]) -> bool:
    """Whether trec_eval prints its runid line for these -m arguments: -m runid (with any parameter,
    which it ignores) or a measure set, each of which holds runid."""
    return any(a.strip().partition(".")[0] == RUNID or a.strip().lower() in TREC_SETS for a in arguments)


def trec_eval_measures(arguments: list[str], trec_order: bool = False) -> list[str]:
    """`duckrank eval -m ...` as trec_eval 10 reads its -m: official, set and all_trec name its measure
    sets, a bare family name (P, ndcg_cut, iprec_at_recall, ...) its default parameters, a comma
    list several; runid is left to prints_runid.

    With trec_order (--format trec, the drop-in) the measures are exactly trec_eval's: in its order,
    parameters ascending, each measure's parameters those of its first -m that gives any (-m P.5
    -m P.10 and -m P -m P.10 print only P_5 and P_10), then other spellings (nDCG@10) as given.
    Otherwise every spelling given is printed, in the order given: a dropped measure is never wanted."""
    families: dict[str, list[str | None]] = {}  # every parameter named, in order
    first_given: dict[str, list[str | None]] = {}  # trec_eval: the first -m with parameters sets them
    spelled: list[str] = []
    for argument in arguments:
        text = argument.strip()
        if text.partition(".")[0] == RUNID:
            continue
        named_set = expand_measures([text]) if text.lower() in TREC_SETS else None
        for item in named_set or [text]:
            family, values = _trec_values(item)
            if family is None:
                spelled.append(item)
                continue
            if named_set is None and "." in item:
                first_given.setdefault(family, values)
            known = families.setdefault(family, [])
            for value in values:
                if value not in known:
                    known.append(value)
                    spelled.append(family if value is None else f"{family}.{value}")
    if not trec_order:
        return list(dict.fromkeys(spelled))
    order = {name: position for position, name in enumerate(TREC_ORDER)}
    ordered = []
    for family in sorted(families, key=lambda name: order.get(name, len(order))):
        values = first_given.get(family) or list(TREC_NAMES[family][1].family) or [None]
        if all(v is not None and re.fullmatch(r"\d*\.?\d+", v) for v in values):
            values = sorted(values, key=float)
        ordered.extend(family if value is None else f"{family}.{value}" for value in values)
    trec_spelled = {s for s in spelled if _trec_values(s)[0] is not None}
    return list(dict.fromkeys([*ordered, *(s for s in spelled if s not in trec_spelled)]))


def parse_measures(spellings: list[str] | str) -> list[Measure]:
    """Parse a measure list (a single string is one measure); duplicates are kept once."""
    if isinstance(spellings, str):
        spellings = [spellings]
    measures: dict[str, Measure] = {}
    for spelling in expand_measures(list(spellings)):
        measures.setdefault(spelling, parse_measure(spelling))
    return list(measures.values())
