"""The cases the front-door parity tests run (tests/test_front_doors.py, and the Spark engine's in
tests/test_spark.py): one small hostile data set, the convention settings, and for every registered
measure a spread of its options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from duckrank.options import OPTIONS, SAMPLED_OPTIONS
from duckrank.registry import METRICS, Metric

# ---------------------------------------------------------------------------------------------
# the data

QRELS = [
    # q1: graded, a negative grade, d9 relevant and never retrieved, unjudged d7 and d8, and a tie
    # d2 d3 d4 whose order decides what a max rank of 2 keeps (trec puts the relevant d4 first)
    ("q1", "d1", 2), ("q1", "d2", -1), ("q1", "d3", 0), ("q1", "d4", 1), ("q1", "d5", 3), ("q1", "d9", 1),
    # q2: ties across grades; dx retrieved and unjudged
    ("q2", "d1", 1), ("q2", "d2", 0), ("q2", "d3", 2), ("q2", "d4", 1), ("q2", "d6", 0),
    # q3: no relevant doc (R = 0), a negative grade
    ("q3", "d1", 0), ("q3", "d2", -2),
    # q4: only in the qrels
    ("q4", "d1", 1), ("q4", "d2", 2),
    # q6: unjudged docs at the top, a tie of three at the relevant ranks
    ("q6", "d1", 0), ("q6", "d2", 0), ("q6", "d3", 1), ("q6", "d4", 0), ("q6", "d5", 4),
    # q7: judged, but every retrieved doc is unjudged
    ("q7", "d1", 1), ("q7", "d2", 0),
]
RUN = [
    ("q1", "d1", 3.0), ("q1", "d2", 2.5), ("q1", "d3", 2.5), ("q1", "d4", 2.5), ("q1", "d7", 2.0),
    ("q1", "d5", 1.0), ("q1", "d8", 0.5),
    ("q2", "d1", 1.0), ("q2", "d2", 1.0), ("q2", "d3", 1.0), ("q2", "d6", 0.2), ("q2", "d4", 0.2),
    ("q2", "dx", 0.1),
    ("q3", "d1", 0.9), ("q3", "d2", 0.8), ("q3", "d3", 0.7),
    # q5: only in the run
    ("q5", "d1", 1.0), ("q5", "d2", 0.5),
    ("q6", "d9", 5.0), ("q6", "d1", 4.0), ("q6", "d2", 4.0), ("q6", "d3", 3.0), ("q6", "d4", 3.0),
    ("q6", "d5", 3.0), ("q6", "d8", -1.0),
    ("q7", "da", 2.0), ("q7", "db", 1.0),
]
LOG = [
    # query, doc, score, label: ties across labels, a negative label, a query of positives only,
    # one of negatives only, one that is a single tie
    ("l1", "a", 0.9, 2), ("l1", "b", 0.9, 0), ("l1", "c", 0.5, 1), ("l1", "d", 0.1, 0), ("l1", "e", 0.5, -1),
    ("l2", "a", 0.4, 1), ("l2", "b", 0.3, 2),
    ("l3", "a", 0.8, 0), ("l3", "b", 0.7, 0),
    ("l4", "a", 0.3, 0), ("l4", "b", 0.3, 1), ("l4", "c", 0.3, 2),
    ("l5", "a", 0.1, 2), ("l5", "b", 0.2, 1), ("l5", "c", 0.6, 0), ("l5", "d", 0.6, 2),
]

# ---------------------------------------------------------------------------------------------
# the cases

# A non-default valid value of each numeric option; a boolean option takes the other value, a
# text option each of its other choices.
NUMBER_VALUES: dict[str, float] = {"k": 3, "beta": 2.0, "mult": 0.5, "recall": 0.3, "g_max": 2.0, "p": 0.5,
                                   "threshold": 0.7, "retrieved_relevant": 2.0, "retrieved_nonrelevant": -0.5,
                                   "missed_relevant": -1.0, "missed_nonrelevant": 0.25, "collection_size": 50,
                                   "sampled": 50, "head": 0.5, "t": 2.0, "phi": 0.5, "min_rel": -1, "max_rel": 3,
                                   "persistence": 0.5, "alpha": 0.3, "patience": 0.9, "recall_weight": 0.3}


def option_values(name: str) -> list[Any]:
    param = OPTIONS[name]
    if param.type == "boolean":
        return [not param.default]
    if param.choices:
        return [choice for choice in param.choices if choice != param.default]
    if name not in NUMBER_VALUES:
        raise AssertionError(f"option {name!r} is new: give it a non-default value in NUMBER_VALUES")
    return [NUMBER_VALUES[name]]


# gain_map has no ir_measures syntax: trec_eval's ndcg.1=3,2=9 sets it (and only for ndcg).
GAIN_MAP = {1.0: 3.0, 2.0: 9.0}
GAIN_MAP_SPELLING = "ndcg.1=3,2=9"
# Nor have recall_levels: trec_eval's 11pt_avg.0.2,0.5,0.8 sets them.
RECALL_LEVELS = (0.2, 0.5, 0.8)
RECALL_LEVELS_SPELLING = "11pt_avg.0.2,0.5,0.8"
# The options only trec_eval's parameter syntax sets, each met by its case above.
TREC_ONLY_OPTIONS = ("gain_map", "recall_levels")


def text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# The convention settings. Each shell call costs some 50 ms of binding, so the convention values
# are combined: one setting per tie rule, each met by every metric. The option cases meet the
# default conventions; the gain metrics' cases the gain convention (a gain the measure names must
# win over it); every option non-default at once meets the settings of input, pessimistic and
# optimistic ties, and each metric's defaults the average (which the metrics not linear in the
# ranking refuse). A tie rule with a max rank makes the tie order count for the counters and AUC.
def setting_id(conventions: dict[str, Any]) -> str:
    return ",".join(f"{name}={text(value)}" for name, value in conventions.items()) or "defaults"


SETTINGS: dict[str, dict[str, Any]] = {setting_id(conventions): conventions for conventions in [
    {},
    {"gain": "exp"},
    {"ties": "input", "empty": "skip", "unjudged": "skip", "max_rank": 2, "duplicates": "max"},
    {"ties": "pessimistic", "empty": "nan", "max_rank": 2, "complete": True},
    {"ties": "optimistic", "complete": True, "unjudged": "mean", "rel_level": 2},
    {"ties": "average", "unjudged": "median", "max_rank": 4, "empty": "nan", "rel_level": 2},
    {"ties": "doc_ascending", "max_rank": 3},
]}
GAIN_SETTING = "gain=exp"
CLI_FLAGS = {"rel_level": "-l", "ties": "--ties", "max_rank": "-M", "empty": "--empty", "unjudged": "--unjudged",
             "duplicates": "--duplicates", "gain": "--gain"}
# How the SQL library and the CLI word the refusal of ties := 'average'.
AVERAGE_REFUSALS = ("ties := 'average' is defined for metrics linear", "--ties average is defined for metrics linear")


# trec_eval's family names: on duckrank eval's command line, -m P means P.5,10,...,1000 as for trec_eval
FAMILIES = {s.name for m in METRICS.values() for s in m.trec_eval if s.family}


def spelling(metric: Metric) -> str:
    """The metric's first non-trec_eval spelling that fixes no option and is no trec_eval family
    name; trec_eval's when it has only those (num_nonrel_judged_ret, gm_map, gm_bpref)."""
    for candidate in (*metric.ir_measures, *metric.ranx, *metric.aliases, *metric.trec_eval):
        if (not candidate.fixed and candidate.parameter is None and candidate.name not in FAMILIES
                and candidate.cutoff and not candidate.ignores_cutoff  # (ir_measures' SetP takes no @k)
                and not candidate.rel_variant):  # (RBP(rel=2) is cwl_eval's binary RBP)
            return candidate.name
    raise AssertionError(f"{metric.name} has no plain spelling")


def measure_string(metric: Metric, options: dict[str, Any], rel: int | None = None) -> str:
    """ir_measures style: name(opt=value,...)@cutoff."""
    written = {name: value for name, value in options.items() if name != metric.cutoff}
    if rel is not None:
        written["rel"] = rel
    inside = ",".join(f"{name}={text(value)}" for name, value in written.items())
    cutoff = options.get(metric.cutoff) if metric.cutoff else None
    return (spelling(metric) + (f"({inside})" if inside else "")
            + (f"@{text(cutoff)}" if cutoff is not None else ""))


@dataclass(frozen=True)
class Case:
    """One measure with written options: `measure` for evaluate and the CLI; the shell calls
    duckrank.<macro>(..., options) and reads its `column`."""

    metric: str
    options: tuple[tuple[str, Any], ...]
    measure: str
    rel: int | None = None
    macro: str = ""
    column: str = "value"
    via: str = ""  # for another macro's column: that macro's case, e.g. RBP(p=0.5)

    @property
    def label(self) -> str:
        return f"{self.measure} [{self.via}: {self.macro}.{self.column}]" if self.via else self.measure


def make_case(metric: Metric, options: dict[str, Any], rel: int | None = None, measure: str | None = None) -> Case:
    return Case(metric.name, tuple(options.items()), measure or measure_string(metric, options, rel), rel,
                metric.name)


# The metrics that also get a per-measure relevance level, P(rel=2)@5 (the convention rel_level
# covers every metric).
REL_CASES = ("precision", "ndcg", "rbp", "auc", "num_rel", "gauc", "global_auc")


def metric_cases(metric: Metric, depth: str) -> list[Case]:
    """By depth: "defaults", the metric's defaults; "options", those and each option at each
    non-default value, trec_eval's gain map, a per-measure rel;
    "combined", every option non-default at once (the defaults for a metric without options);
    "gain", the cases a gain convention meets (the defaults take it; a named gain, the default
    linear too, and a gain map win over it)."""
    settable = [name for name in metric.options if name not in TREC_ONLY_OPTIONS]
    cases = [make_case(metric, {})] if depth != "combined" or not settable else []
    k10 = {"k": 10} if "k" in metric.options else {}
    if depth == "options":
        for name in settable:
            # a correction is of sampled lists
            lists = {"sampled": NUMBER_VALUES["sampled"]} if name == "correction" else {}
            cases.extend(make_case(metric, {**lists, name: value}) for value in option_values(name))
        if metric.name in REL_CASES:
            cases.append(make_case(metric, {}, rel=2))
    if depth == "gain" and "gain" in metric.options:
        cases.append(make_case(metric, {"gain": "linear", **k10}))
        cases.append(make_case(metric, {"gain": "raw"}))
    if depth in ("options", "gain") and metric.name == "ndcg":
        cases.append(make_case(metric, {"gain_map": GAIN_MAP}, measure=GAIN_MAP_SPELLING))
    if depth == "options" and metric.name == "eleven_point_average":
        cases.append(make_case(metric, {"recall_levels": RECALL_LEVELS}, measure=RECALL_LEVELS_SPELLING))
    if settable and depth == "combined":
        # sampled lists refuse -M, which the combined settings set: the options depth covers them
        # recall_weight is F's beta given squared: F takes one or the other
        cases.append(make_case(metric, {name: option_values(name)[0] for name in settable
                                        if name not in (*SAMPLED_OPTIONS, "recall_weight")}))
    # a table macro's extra columns (RBP's residual) against the measure they name, with the
    # options that measure has
    for column, other in metric.also:
        for case in list(cases):
            own = {name: value for name, value in case.options if name in METRICS[other].options}
            cases.append(Case(other, case.options, measure_string(METRICS[other], own, case.rel), case.rel,
                              metric.name, column, case.measure))
    return list({case.label: case for case in cases}.values())


# The beyond-accuracy measures read training interactions too: their three doors are compared in
# tests/test_beyond_accuracy.py, against Microsoft Recommenders. The diversity measures read subtopic
# qrels: tests/test_diversity.py compares their three doors with ir_measures (pyndeval).
BEYOND = [m for m in METRICS.values() if m.reads == "top_k"]
DIVERSITY = [m for m in METRICS.values() if m.reads == "subtopics"]
RANKING = [m for m in METRICS.values()
           if m.summary != "log" and m.table_macro and m not in BEYOND and m not in DIVERSITY]
SUMMARY_ONLY = [m for m in METRICS.values() if not m.per_query and m not in BEYOND]  # num_q, gm_map, gm_bpref
LOGGED = [m for m in METRICS.values() if m.summary == "log"]
GAINED = [m for m in RANKING if "gain" in m.options]


def cases_for(setting: str) -> list[Case]:
    if setting == GAIN_SETTING:
        return [case for metric in GAINED for case in metric_cases(metric, "gain")]
    if "average" in SETTINGS[setting].values():
        depth = "defaults"
    else:
        depth = "options" if setting == "defaults" else "combined"
    return [case for metric in RANKING for case in metric_cases(metric, depth)]


# The log measures take one convention, the relevance level.
LOG_SETTINGS = {"defaults": {}, "rel_level=2": {"rel_level": 2}}
LOG_CASES: list[tuple[str, Case]] = [
    (setting, case) for setting in LOG_SETTINGS for metric in LOGGED
    for case in metric_cases(metric, "options" if setting == "defaults" else "defaults")]
ALL_SETTINGS = {**SETTINGS, **LOG_SETTINGS}
