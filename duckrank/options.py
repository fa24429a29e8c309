"""Every option a measure takes and every ranking convention, each declared once: its type, its one
default, what is valid (the SQL predicate sql/55_option_checks.sql is generated from) and its help;
and what duckrank.ranked and duckrank.rank_subtopics read beside them. duckrank.registry's measures
name these options; the CLI's convention flags, `duckrank metrics` and the README's convention table
are derived from them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from duckrank._sql import sql_literal

EMPTY_GAIN_MAP = "MAP(CAST([] AS DOUBLE[]), CAST([] AS DOUBLE[]))"


@dataclass(frozen=True)
class Param:
    """An option: its type, its one default, what is valid (a SQL predicate over the option's
    own name, and the words that say it), and a line of help."""

    name: str
    type: str  # integer | number | text | boolean | gain_map | numbers (a tuple of numbers)
    default: Any
    doc: str
    choices: tuple[str, ...] = ()
    valid: str | None = None  # SQL condition over `name`; from `choices` when absent
    must: str = ""  # "<name> must <must>; got ..." when `valid` fails
    relation: bool = False  # read by duckrank.ranked (it changes the ranking), not by the metric
    also_reads: tuple[str, ...] = ()  # the other options `valid` reads (max_rel > min_rel)

    @property
    def default_sql(self) -> str:
        if self.type == "gain_map":
            return EMPTY_GAIN_MAP
        return sql_literal(self.default)

    @property
    def condition(self) -> str | None:
        if self.valid is not None:
            return self.valid
        if self.choices:
            return f"{self.name} IN ({', '.join(sql_literal(c) for c in self.choices)})"
        return None

    @property
    def requirement(self) -> str:
        return self.must or f"be one of {', '.join(self.choices)}"

    def check_call(self, argument: Callable[[str], str] = str) -> str | None:
        """duckrank.check_<name>(<name>, <what else it reads>), the generated macro of `check`
        (sql/55_option_checks.sql): over the options of those names, or over `argument` of each
        name (a given value, say); None for an option without a check."""
        reads = (self.name, *self.also_reads)
        return f"duckrank.check_{self.name}({', '.join(map(argument, reads))})" if self.check else None

    @property
    def check(self) -> str | None:
        """SQL over the option's own name that says what is wrong with its value, NULL when it is
        valid: the body of its generated check macro (sql/55_option_checks.sql, check_call)."""
        if self.condition is None:
            return None
        message = sql_literal(f"{self.name} must {self.requirement}; got ")
        return (f"CASE WHEN NOT coalesce({self.condition}, false)\n"
                f"             THEN {message} || duckrank.show({self.name}) END")

    def help(self) -> str:
        """The option's line of help: what it does, its values (unless the text names them all) and
        its default."""
        named = all(re.search(rf"\b{re.escape(choice)}\b", self.doc) for choice in self.choices)
        choices = f" ({', '.join(self.choices)})" if self.choices and not named else ""
        default = "none" if self.default is None else default_text(self.default)
        return f"{self.doc}{choices}; default {default}"


def default_text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{}" if not value else ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


def _positive_integer_or_null(name: str) -> str:
    return f"{name} IS NULL OR ({name} >= 1 AND {name} = floor({name}))"


# The per-measure options. One name means one thing, with one default, in every measure.
OPTIONS: dict[str, Param] = {p.name: p for p in [
    Param("k", "integer", None, "cutoff: score the top k only (NULL: full depth)",
          valid=_positive_integer_or_null("k"), must="be a positive integer (or NULL for full depth)"),
    Param("cap", "boolean", False, "divide by min(R, k) instead of R (trec_eval relative_P)", valid="cap IS NOT NULL",
          must="be true or false"),
    Param("beta", "number", 1.0, "weight of recall against precision", valid="beta > 0", must="be positive"),
    # trec_eval's set_F.x: x is beta^2, and sqrt(x)^2 is not always x in doubles (set_F.0.3 would print
    # 0.4062 for trec_eval's 0.4063 with 4 of 6 relevant docs among 11 retrieved)
    Param("recall_weight", "number", None, "F's beta^2 as given, as trec_eval's set_F.x reads it (NULL: beta * beta; "
          "give beta or recall_weight)", valid="recall_weight IS NULL OR recall_weight > 0",
          must="be positive (or NULL for beta * beta)"),
    Param("denominator", "text", "R", "what AP divides by: R (trec_eval), min(R, k), or the hits in the top k",
          choices=("R", "min", "hits")),
    Param("mult", "number", 1.0, "R-precision's cutoff is floor(mult * R + 0.9) (trec_eval Rprec_mult)",
          valid="mult > 0", must="be positive"),
    Param("recall", "number", 0.0, "the recall level", valid="recall >= 0 AND recall <= 1",
          must="be between 0 and 1"),
    Param("recall_levels", "numbers", tuple(level / 10 for level in range(11)), "the recall levels whose "
          "interpolated precision 11pt_avg averages (trec_eval 11pt_avg.L1,L2,...)",
          valid="len(recall_levels) >= 1 AND list_bool_and(list_transform(recall_levels, lambda level: level >= 0 "
                "AND level <= 1)) AND recall_levels = list_sort(recall_levels)",
          must="be recall levels between 0 and 1, in ascending order"),
    Param("recall_cutoff", "text", "round", "the relevant docs recall r needs: round(r R) (trec_eval 10) or "
          "floor(r R + 0.9) (trec_eval9: trec_eval 9, pytrec_eval, ir_measures' IPrec)",
          choices=("round", "trec_eval9")),
    Param("gain", "text", "linear", "gain of a grade: linear (negatives 0), exp (2^g - 1), raw (negatives count), "
          "binary (1 if relevant: grade >= the relevance level, else 0), linear_relevant or exp_relevant (linear or "
          "exp for a relevant grade, else 0: ranx's -lN)",
          choices=("linear", "exp", "raw", "binary", "linear_relevant", "exp_relevant"),
          must="be one of linear, exp, raw, binary, linear_relevant, exp_relevant (or pass gain_map)", relation=True),
    Param("gain_map", "gain_map", {}, "gains of listed grades, e.g. {1: 3, 2: 9} (trec_eval ndcg.1=3,2=9)",
          valid="gain_map IS NOT NULL AND coalesce(list_bool_and(list_transform(map_values(gain_map), "
                "lambda v: isfinite(v) AND abs(v) <= 1e300)), true)",
          must="be a MAP of grade to finite gain of at most 1e300 in size (a query's DCG sums its gains: larger "
               "ones could overflow a double)", relation=True),
    Param("ideal", "text", "qrels", "the ideal ranking: every judged doc (qrels) or the retrieved ones (run)",
          choices=("qrels", "run")),
    Param("g_max", "number", None, "ERR's top grade (NULL: the largest grade in the qrels)",
          valid="g_max IS NULL OR g_max > 0",
          must="be positive (or NULL for the largest grade in the qrels)", relation=True),
    Param("p", "number", 0.8, "RBP's persistence", valid="p > 0 AND p < 1", must="be strictly between 0 and 1"),
    Param("graded", "boolean", True, "RBP weighs a doc by its grade / the query's top grade (trec_eval 10); false: "
          "by rel(i), Moffat & Zobel's binary RBP", valid="graded IS NOT NULL", must="be true or false"),
    Param("scaled", "boolean", True, "graded RBP divides a grade by the query's top grade when that is above 1 "
          "(trec_eval 10); false: weighs a relevant doc by its grade as it is (ranx)", valid="scaled IS NOT NULL",
          must="be true or false"),
    # The C/W/L family (sql/33_cwl_metrics.sql), with ir_measures' names and defaults; ir_measures
    # requires max_rel, duckrank's default 1 reads the grades as cwl_eval reads gains, within [0, 1].
    Param("t", "number", 1.0, "the gain a C/W/L user wants before stopping (T of BPM, INST, INSQ, NERR11)",
          valid="t > 0", must="be positive"),
    Param("phi", "number", 0.9, "NERR10's patience (ir_measures' p, cwl_eval's phi)", valid="phi > 0 AND phi <= 1",
          must="be above 0 and at most 1"),
    Param("min_rel", "number", 0, "C/W/L gains: the grade that gains 0 (lower grades too)",
          valid="isfinite(min_rel)", must="be a finite number"),
    Param("max_rel", "number", 1, "C/W/L gains: the grade that gains 1 (higher grades too); gain = (grade - min_rel) "
          "/ (max_rel - min_rel)", valid="isfinite(max_rel) AND max_rel > min_rel", must="be a finite number above min_rel",
          also_reads=("min_rel",)),
    Param("persistence", "number", 0.95, "Compat's RBO persistence (ir_measures' p)",
          valid="persistence > 0 AND persistence <= 1", must="be above 0 and at most 1"),
    Param("normalize", "boolean", True, "Compat divides by the ideal ranking's own RBO", valid="normalize IS NOT NULL",
          must="be true or false"),
    Param("weight", "text", "impressions", "GAUC weights each query by its impressions or its positives",
          choices=("impressions", "positives")),
    Param("threshold", "number", 0.5, "predicted positive when score >= threshold",
          valid="isfinite(threshold)", must="be a finite number"),
    # trec_eval's utility.p1,p2,p3,p4 (m_utility.c) and its -N
    Param("retrieved_relevant", "number", 1.0, "utility's worth of a relevant retrieved doc (trec_eval utility p1)",
          valid="isfinite(retrieved_relevant)", must="be a finite number"),
    Param("retrieved_nonrelevant", "number", -1.0, "utility's worth of a non-relevant (or unjudged) retrieved doc "
          "(trec_eval utility p2)", valid="isfinite(retrieved_nonrelevant)", must="be a finite number"),
    Param("missed_relevant", "number", 0.0, "utility's worth of a relevant doc not retrieved (trec_eval utility p3)",
          valid="isfinite(missed_relevant)", must="be a finite number"),
    Param("missed_nonrelevant", "number", 0.0, "utility's worth of a non-relevant doc not retrieved (trec_eval "
          "utility p4; needs collection_size)", valid="isfinite(missed_nonrelevant)", must="be a finite number"),
    Param("collection_size", "integer", 0, "documents in the collection, for utility's missed non-relevant docs "
          "(trec_eval -N)", valid="collection_size >= 0 AND collection_size = floor(collection_size)",
          must="be a whole number >= 0"),
    # trec_eval -c scores a query the run misses on a stand-in ranking of one unjudged doc, then resets
    # num_ret, utility, relstring, unj and rbp_resid by their bare names only (trec_eval.c)
    Param("stand_in", "boolean", False, "a qrels query the run misses (complete) is scored on trec_eval -c's stand-in "
          "ranking, one unjudged doc, not an empty one (as trec_eval prints utility, relstring and rbp_resid named "
          "with a parameter)", valid="stand_in IS NOT NULL", must="be true or false"),
    # Sampled metrics (sql/45_sampled.sql): the lists hold each query's relevant items plus negatives
    # sampled uniformly from a catalog of `sampled` items; `correction` picks the estimate reported.
    Param("sampled", "integer", None, "the lists were sampled: each query's relevant items plus negatives drawn "
          "uniformly from a catalog of this many items (NULL: full rankings)",
          valid="sampled IS NULL OR (sampled >= 2 AND sampled = floor(sampled))",
          must="be a whole number >= 2, the catalog size N (or NULL for full rankings)"),
    Param("correction", "text", "bv", "what a sampled measure reports: none (its plain value on the sampled list), "
          "bias (the minimal-bias estimate of its full-catalog value) or bv (the bias-variance trade-off, "
          "Krichene & Rendle 2020)", choices=("none", "bias", "bv")),

    # The diversity family (sql/34_diversity_metrics.sql), with ndeval's names and defaults
    Param("alpha", "number", 0.5, "redundancy intolerance of the diversity measures: a doc's gain for a subtopic "
          "is (1 - alpha)^(docs of that subtopic above it) (ndeval -alpha)", valid="alpha >= 0 AND alpha <= 1",
          must="be between 0 and 1", relation=True),
    Param("patience", "number", 0.5, "NRBP's patience: rank i weighs patience^(i-1) (ndeval -beta, ir_measures' "
          "beta)", valid="patience >= 0 AND patience <= 1", must="be between 0 and 1"),

    Param("head", "number", 0.2, "the short head: the most popular items that together hold this share of the "
          "training interactions", valid="head >= 0 AND head <= 1", must="be between 0 and 1"),
    Param("similarity", "text", "cooccurrence", "item similarity: cooccurrence (cosine of who trained on them) or "
          "features (cosine of the items' feature vectors)", choices=("cooccurrence", "features")),
]}

# The options of a measure that can be corrected for sampling (Metric.sampled).
SAMPLED_OPTIONS = ("sampled", "correction")


@dataclass(frozen=True)
class Convention:
    """A ranking convention: an option of every measure, a keyword of evaluate() and a CLI flag."""

    param: Param
    flags: tuple[str, ...]  # the CLI's spellings, e.g. ("--ties",) or ("-l",)
    metavar: str = ""

    @property
    def name(self) -> str:
        return self.param.name


CONVENTIONS: dict[str, Convention] = {c.name: c for c in [
    Convention(Param("rel_level", "number", 1, "relevance level: grade >= N is relevant (trec_eval -l)",
                     valid="isfinite(rel_level)", must="be a finite number", relation=True), ("-l",), "N"),
    Convention(Param("ties", "text", "trec", "tie rule: trec (doc_id descending), doc_ascending (doc_id "
                     "ascending: ir_measures' msmarco provider), input order, average (the expected value over the "
                     "tie's orders), pessimistic or optimistic",
                     choices=("trec", "doc_ascending", "input", "average", "pessimistic", "optimistic"), relation=True),
               ("--ties",), "RULE"),
    Convention(Param("max_rank", "integer", None, "score only the top N of each query (trec_eval -M; 0 scores "
                     "nothing retrieved)", valid="max_rank IS NULL OR (max_rank >= 0 AND max_rank <= 9223372036854775807 "
                     "AND max_rank = floor(max_rank))",
                     must="be a whole number from 0 to 9223372036854775807 (or NULL for no cap)", relation=True), ("-M",), "N"),
    Convention(Param("complete", "boolean", False, "qrels queries missing from the run score 0 (trec_eval -c)",
                     valid="complete IS NOT NULL", must="be true or false", relation=True), ("-c",)),
    Convention(Param("empty", "text", "zero", "a query with no relevant docs: keeps its value (zero), is "
                     "dropped (skip) or reports NaN (nan)", choices=("zero", "skip", "nan")), ("--empty",), "POLICY"),
    Convention(Param("unjudged", "text", "nonrelevant", "unjudged retrieved docs: non-relevant, skipped (trec_eval "
                     "-J), or given the query's mean or median grade",
                     choices=("nonrelevant", "skip", "mean", "median"), relation=True), ("--unjudged",), "POLICY"),
    Convention(Param("duplicates", "text", "error", "a doc twice in a query (or judged twice with different "
                     "grades): an error, or its highest score and grade", choices=("error", "max"), relation=True),
               ("--duplicates",), "POLICY"),
]}

# What duckrank.ranked reads beside the conventions: the measure options that change the ranking
# relation (gains, ERR's top grade), and whether it may leave out the unjudged docs.
RANKED_OPTIONS = ("gain", "gain_map", "g_max")
# duckrank.rank_queries' arguments after (qrels, run), in order.
RANK_QUERIES_ARGUMENTS = ("rel_level", "ties", "max_rank", "complete", "unjudged", "gain", "gain_map", "g_max",
                          "duplicates", "judged_only")
# What duckrank.rank_subtopics reads beside the conventions: the diversity measures' alpha, whose
# gains it computes once for all the measures that share it (ERR-IA's is ndeval's default).
SUBTOPIC_OPTIONS = ("alpha",)
# The tie rules and unjudged rules it follows (sql/34_diversity_metrics.sql refuses the others).
SUBTOPIC_TIES = ("trec", "doc_ascending")
SUBTOPIC_UNJUDGED = ("nonrelevant", "skip")
JUDGED_ONLY = Param("judged_only", "boolean", True, "keep only the docs a judged-only measure reads (AUC needs all)",
                    valid="judged_only IS NOT NULL", must="be true or false")
