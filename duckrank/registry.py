"""The registry: one declaration per measure, per option and per convention.

Everything else is derived from it:
  - the option checks and the public table macros, generated into sql/55_option_checks.sql and
    sql/60_measures.sql (`python -m duckrank._generate` rewrites them; a test fails when they are out
    of date);
  - parsing and rendering measure strings (duckrank.measures);
  - the CLI's convention options, their choices and help, and `duckrank metrics`;
  - the README's measure and convention tables (between their markers, also generated);
  - the measures the oracle, golden and front-door tests must cover.

The math itself stays in sql/: a measure names its scalar macro over one row `q` of
duckrank.ranked (a query and its ranking), e.g. duckrank.ndcg_of(q, k, ideal).

Adding a measure: write its scalar macro in sql/3x_*.sql, add one Metric to METRICS below (its
spellings and its oracle), run `python -m duckrank._generate`, and add its oracle to
tests/oracles.py if that oracle is new (the README's "Adding a measure" walks through it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from duckrank._sql import literal

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

    @property
    def default_sql(self) -> str:
        if self.type == "gain_map":
            return EMPTY_GAIN_MAP
        return literal(self.default)

    @property
    def condition(self) -> str | None:
        if self.valid is not None:
            return self.valid
        if self.choices:
            return f"{self.name} IN ({', '.join(literal(c) for c in self.choices)})"
        return None

    @property
    def requirement(self) -> str:
        return self.must or f"be one of {', '.join(self.choices)}"

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
          "/ (max_rel - min_rel)", valid="isfinite(max_rel) AND max_rel > min_rel", must="be a finite number above min_rel"),
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

# compare's tests (the one whose p marks significance) and multiple-testing corrections, each with
# the name legends give it. Tukey's HSD compares every pair of runs at once and so adjusts for the
# family itself: it takes no correction.
COMPARE_TESTS = {"t": "paired t-test", "randomization": "paired randomization test", "tukey": "Tukey's HSD"}
COMPARE_CORRECTIONS = {"holm": "Holm-Bonferroni", "bh": "Benjamini-Hochberg"}
# compare's statistics settings (duckrank.compare's keywords, the CLI's options) and their defaults.
COMPARE_DEFAULTS: dict[str, Any] = {"permutations": 10_000, "bootstrap": 10_000, "seed": 0, "confidence": 0.95,
                                    "alpha": 0.05, "correction": "holm", "test": "t"}
# Replicates of the bootstrap and the randomization test: a million resolves p to 1e-6; more only
# costs memory and time (2e9 filled 20 GB before it failed).
COMPARE_MAX_REPLICATES = 1_000_000
# A seed is a BIGINT in the SQL library (duckrank.replicate_key hashes it).
COMPARE_SEED_RANGE = (-2 ** 63, 2 ** 63 - 1)
# The measures compare and report show when none are given (duckrank.compare, duckrank.report, -m).
COMPARE_MEASURES = ("map", "ndcg_cut.10", "P.10", "recip_rank")

# The report's figures (Report.plot, `duckrank plot KIND`), the files a figure is written as, and
# what to install when matplotlib, which draws them, is missing.
REPORT_FIGURES = ("pr", "cutoff", "per-query", "diff", "distribution", "segments")
FIGURE_FORMATS = ("svg", "png", "pdf")
PLOT_EXTRA_HINT = "plots need matplotlib, an optional extra: pip install 'duckrank[plot]'"

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


@dataclass(frozen=True)
class Spelling:
    """A name a measure answers to, with the options it fixes (ranx's ndcg_burges is nDCG with exp
    gains) and, for trec_eval names, what its parameter sets and the values trec_eval prints for
    the bare name on its command line (-m P is P.5,10,...,1000). The parameter: an option a number
    sets (P.5 sets k), gain_map (ndcg.1=3,2=9), named (rbp.p=0.95), beta^2 (trec_eval's set_F.x is
    beta squared), or options set by position (utility.1,-1,0,0); for ranx's rbp, persistence: its
    digits after a dot or @ are p's decimals (rbp.95 and rbp@95 are p = 0.95)."""

    name: str
    fixed: tuple[tuple[str, Any], ...] = ()
    parameter: str | None = None
    family: tuple[str, ...] = ()
    cutoff: bool = True  # whether it takes @k where its metric has a cutoff (ir_measures' SetP does not)
    option_names: tuple[tuple[str, str], ...] = ()  # its own names of options: ir_measures' NERR10(p=) is phi
    # its own options that stand for duckrank's: (option, value, the options that value sets), e.g.
    # ir_measures' nDCG(dcg='exp-log2') is nDCG(gain=exp); a value not listed is refused. Among the
    # options set, `metric` names another metric the value means (SetP(relative=True) is SetRelP)
    option_values: tuple[tuple[str, str, tuple[tuple[str, Any], ...]], ...] = ()
    ignores_cutoff: bool = False  # reads @k and ignores it, as ranx reads r-precision@5 and bpref@5
    # the metric it means when it sets rel= (ir_measures: NumRet(rel=N) counts the retrieved docs of
    # grade >= N, its NumRelRet at that level; RBP(rel=N) is cwl_eval's binary RBP)
    rel_variant: str = ""
    # the spelling that means this one on duckrank eval's command line, where trec_eval's family of
    # the same name wins (-m recall is recall.5 ... recall.1000 there, as for trec_eval): the README's
    # collision table
    command_line: str = ""


def spell(name: str, parameter: str | None = None, family: tuple[str, ...] = (), **fixed: Any) -> Spelling:
    return Spelling(name, tuple(fixed.items()), parameter, family)


def set_spell(name: str, option_values: tuple = (), **fixed: Any) -> Spelling:
    """An ir_measures Set* name: the measure over the whole retrieved set. It takes no @k, but reads
    one and ignores it, as every ir_measures provider computes it (its test_ranx.py's SetP(rel=2)@5
    is SetP(rel=2); ir_measures' own calc_aggregate refuses the cutoff)."""
    return Spelling(name, tuple(fixed.items()), cutoff=False, option_values=option_values, ignores_cutoff=True)


# ir_measures' SetP(relative=True), as it prints SetRelP: trec_eval's set_relative_P (recall's cap)
_SET_RELATIVE = (("relative", True, (("metric", "recall"), ("cap", True))), ("relative", False, ()))


# trec_eval 10's default parameters of its measure families (m_P.c, m_success.c, m_iprec_at_recall.c,
# m_Rprec_mult.c, ...): what `-m P` or `-m all_trec` prints.
CUTOFFS = ("5", "10", "15", "20", "30", "100", "200", "500", "1000")
RECALL_LEVELS = tuple(f"{level / 10:.2f}" for level in range(11))
RPREC_MULTS = tuple(f"{m / 10:.2f}" for m in range(2, 21, 2))


@dataclass(frozen=True)
class Metric:
    """A measure's declaration: its scalar macro, its options, how its per-query values are summarised, what it
    reads, its spellings in every family, and the oracle its tests compare it with."""

    name: str  # also the name of its table macro
    aggregate: str  # its scalar macro over `q` with {option} placeholders (log measures: over {log})
    doc: str
    options: tuple[str, ...] = ()
    summary: str = "mean"  # mean | sum | gmean | count | log (one value per log, no per-query rows) | none
    #   | overall (one value over the scored queries' top k, no per-query rows: coverage)
    value: str = "number"  # number, or text: a string per query (relstring), with no summary
    per_query: bool = True  # whether per-query rows are reported (trec_eval hides num_q, gm_map)
    reads: str = "judged"  # judged: the judged docs suffice; all: every retrieved doc; log: a log;
    #   subtopics: the subtopic-ranked relation of duckrank.rank_subtopics (qrels with a subtopic column);
    #   top_k: each query's top k of every retrieved doc: a table macro over {users} (the run ranked
    #   once for all such measures: duckrank.recommended's lists) and the inputs its aggregate names
    #   ({train}, {items}; the empty policy as {empty})
    trec_eval: tuple[Spelling, ...] = ()
    ir_measures: tuple[Spelling, ...] = ()
    ranx: tuple[Spelling, ...] = ()
    recommenders: tuple[Spelling, ...] = ()  # Microsoft Recommenders' python_evaluation, with its semantics
    aliases: tuple[Spelling, ...] = ()
    oracle: str = ""  # the independent implementation its tests compare with (tests/oracles.py)
    table_macro: bool = True  # whether duckrank.<name>(qrels, run, ...) is generated
    also: tuple[tuple[str, str], ...] = ()  # extra table-macro columns: (column, measure)
    source: str = ""  # the sql/ file of its scalar macro
    # Its value f(R) for a query whose one relevant item has the full-catalog rank `rank` among {sampled}
    # items (SQL over `rank` and {option} placeholders): a measure with one can be corrected for
    # sampling (sql/45_sampled.sql); it then takes the SAMPLED_OPTIONS.
    sampled: str = ""
    # With k set, it reads only the docs ranked <= k and the qrels' counts (R, N, the ideal ranking,
    # the top grade), never how many were retrieved beyond k: a run cut to each query's top k gives
    # the same value, so it may be scored from such a cut.
    cut: bool = False

    @property
    def cutoff(self) -> str | None:
        """The option an @N suffix sets: k, or the recall level of interpolated precision."""
        if "k" in self.options:
            return "k"
        return "recall" if "recall" in self.options else None

    @property
    def params(self) -> list[Param]:
        return [OPTIONS[name] for name in self.options]

    def defaults(self) -> dict[str, Any]:
        return {name: OPTIONS[name].default for name in self.options}

    @property
    def inputs(self) -> tuple[str, ...]:
        """The tables beside qrels and run that a top_k measure's macro reads (train, items)."""
        return tuple(name for name in ("train", "items") if f"{{{name}}}" in self.aggregate)

    def per_query_value(self, expression: str, num_rel: str, empty: str) -> str:
        """SQL of the per-query value `expression` under the empty policy `empty` (a query with
        `num_rel` relevant docs): a DOUBLE, or text for a text measure."""
        if self.value == "text":
            return f"duckrank.empty_policy_text({expression}, {num_rel}, {empty})"
        return f"CAST(duckrank.empty_policy({expression}, {num_rel}, {empty}) AS DOUBLE)"

    def spellings(self) -> list[Spelling]:
        return [*self.trec_eval, *self.ir_measures, *self.ranx, *self.recommenders, *self.aliases]

    def shown_spellings(self) -> dict[str, list[str]]:
        """Each family's spellings as a user writes them: trec_eval's with their .N parameter
        (P.N; ndcg's parameter is a gain map), the others with @k when the metric has a cutoff (ranx's
        rbp with its persistence: rbp.NN)."""
        def trec(s: Spelling) -> str:
            return f"{s.name}.N" if s.parameter in ("k", "mult", "recall") else s.name
        def other(s: Spelling) -> str:
            if s.parameter == "persistence":
                return f"{s.name}.NN"
            if s.ignores_cutoff and s.cutoff:  # ranx's bpref@k, read and ignored: its bare name is trec_eval's
                return f"{s.name}@k"
            return f"{s.name}@k" if self.cutoff and s.cutoff else s.name
        return {"trec_eval": [trec(s) for s in self.trec_eval], "ir_measures": [other(s) for s in self.ir_measures],
                "ranx": [other(s) for s in self.ranx], "recommenders": [other(s) for s in self.recommenders],
                "other": [other(s) for s in self.aliases]}


M = Metric
# Microsoft Recommenders' spellings (recommenders.evaluation.python_evaluation 1.2.1) fix its
# semantics: its DEFAULT_K = 10 when no @k is given; ndcg_at_k's binary relevance (score_type
# "binary") over every user of rating_true (a user the predictions miss scores 0: complete), where
# its precision, recall and MAP average over the users in both; map_at_k divides by min(R, k); its
# `map` (AP@k / R) is spelled ms_map, since `map` is trec_eval's full-depth MAP.
MS_K = 10
_SET = "sql/30_set_metrics.sql"
_RANK = "sql/31_rank_metrics.sql"
_GAIN = "sql/32_gain_metrics.sql"
_AUC = "sql/40_auc.sql"
_RATING = "sql/41_rating_metrics.sql"
_BEYOND = "sql/42_beyond_accuracy.sql"
_CWL = "sql/33_cwl_metrics.sql"
_CWL_GAINS = ("min_rel", "max_rel")
_DIVERSITY = "sql/34_diversity_metrics.sql"
# ir_measures' NRBP(beta=) is the patience (duckrank's beta is F's weight of recall)
_NRBP_NAMES = (("beta", "patience"),)

METRICS: dict[str, Metric] = {m.name: m for m in [
    M("precision", "duckrank.precision_of(q, {k})", "P@k = relevant docs in the top k / k (k NULL: / retrieved)",
      ("k", *SAMPLED_OPTIONS), trec_eval=(spell("P", "k", CUTOFFS), spell("set_P")), ir_measures=(spell("P"), set_spell("SetP", _SET_RELATIVE)),
      ranx=(spell("precision"),), recommenders=(spell("precision_at_k", k=MS_K),), cut=True, oracle="pytrec_eval", source=_SET,
      sampled="duckrank.precision_at_rank(rank, {k}, {sampled})"),
    M("recall", "duckrank.recall_of(q, {k}, {cap})", "R@k = relevant docs in the top k / R (cap: / min(R, k))",
      ("k", "cap", *SAMPLED_OPTIONS), trec_eval=(spell("recall", "k", CUTOFFS), spell("relative_P", "k", CUTOFFS, cap=True), spell("set_recall"),
                 spell("set_relative_P", cap=True)),
      ir_measures=(spell("R"), set_spell("SetR"), set_spell("SetRelP", cap=True)),
      ranx=(Spelling("recall", command_line="set_recall"),),
      recommenders=(spell("recall_at_k", k=MS_K),),
      cut=True, oracle="pytrec_eval", source=_SET, sampled="duckrank.hit_at_rank(rank, {k})"),
    M("f_measure", "duckrank.f_measure_of(q, {k}, {beta}, {recall_weight})", "F_beta@k = (1 + b^2) P R / (b^2 P + R)",
      ("k", "beta", "recall_weight"), trec_eval=(spell("set_F", "beta^2"),), ir_measures=(Spelling("SetF", cutoff=False, ignores_cutoff=True, option_names=(("beta", "recall_weight"),)),), ranx=(spell("f1", beta=1.0),), aliases=(spell("F"), spell("f_measure")),
      cut=True, oracle="pytrec_eval", source=_SET),
    M("hit_rate", "duckrank.hit_rate_of(q, {k})", "hit@k = 1 if a relevant doc is in the top k, else 0",
      ("k", *SAMPLED_OPTIONS), trec_eval=(spell("success", "k", ("1", "5", "10")),), ir_measures=(spell("Success"),),
      ranx=(spell("hit_rate"),), aliases=(spell("hit"), spell("hits_at")), cut=True, oracle="pytrec_eval", source=_SET,
      sampled="duckrank.hit_at_rank(rank, {k})"),
    M("hits", "duckrank.hits_of(q, {k})", "hits@k = relevant docs in the top k (mean over queries; num_rel_ret sums "
      "them)", ("k",), ranx=(spell("hits"),), cut=True, oracle="ranx", source=_SET),
    M("reciprocal_rank", "duckrank.reciprocal_rank_of(q, {k})", "RR@k = 1 / rank of the first relevant doc in the "
      "top k, else 0 (mean: MRR)", ("k", *SAMPLED_OPTIONS), trec_eval=(spell("recip_rank"),), ir_measures=(spell("RR"),),
      ranx=(spell("mrr"),), aliases=(spell("reciprocal_rank"),), cut=True, oracle="pytrec_eval", source=_RANK,
      sampled="duckrank.reciprocal_at_rank(rank, {k})"),
    M("average_precision", "duckrank.average_precision_of(q, {k}, {denominator})",
      "AP@k = sum of P@i over the relevant ranks i <= k, / R (or min(R, k), or the hits) (mean: MAP)",
      ("k", "denominator", *SAMPLED_OPTIONS), trec_eval=(spell("map"), spell("map_cut", "k", CUTOFFS)),
      ir_measures=(spell("AP"),), ranx=(spell("map"),),
      recommenders=(spell("map_at_k", k=MS_K, denominator="min"), spell("ms_map", k=MS_K)),
      aliases=(spell("average_precision"),), cut=True, oracle="pytrec_eval", source=_RANK,
      sampled="duckrank.reciprocal_at_rank(rank, {k})"),
    M("r_precision", "duckrank.r_precision_of(q, {mult})", "R-precision = P@R (mult: P@floor(mult R + 0.9))",
      ("mult",), trec_eval=(spell("Rprec"), spell("Rprec_mult", "mult", RPREC_MULTS)), ir_measures=(spell("Rprec"),),
      ranx=(Spelling("r-precision", ignores_cutoff=True),), aliases=(spell("r-prec"), spell("r_precision")),
      oracle="pytrec_eval",
      source=_SET),
    M("recommenders_r_precision", "duckrank.recommenders_r_precision_of(q, {k})", "Microsoft Recommenders' "
      "R-precision@k = relevant docs in the top min(R, k) / R; a query with none there has no value (MS's mean "
      "leaves it out)", ("k",), recommenders=(spell("r_precision_at_k", k=MS_K),),
      aliases=(spell("recommenders_r_precision"),), cut=True, oracle="recommenders", source=_SET),
    M("bpref", "duckrank.bpref_of(q)", "bpref = (1/R) sum over relevant retrieved r of 1 - min(n_r, R) / min(N, R)",
      trec_eval=(spell("bpref"),), ir_measures=(spell("Bpref"),), oracle="pytrec_eval", source=_RANK),
    # ranx's bpref (ranx/metrics/bpref.py): its `bpref` alone is trec_eval's (the README's collision
    # table); ranx's own forms bpref@k (k ignored, as ranx ignores it) and bpref-lN are this one
    M("ranx_bpref", "duckrank.ranx_bpref_of(q)", "ranx's bpref: trec_eval's, but a negative grade is judged "
      "non-relevant, and with no judged non-relevant doc a relevant doc retrieved makes it NaN (ranx's 0 / 0)",
      ranx=(Spelling("bpref", ignores_cutoff=True),), aliases=(spell("ranx_bpref"),), oracle="ranx", source=_RANK),
    M("interpolated_precision", "duckrank.interpolated_precision_of(q, {recall}, {recall_cutoff})",
      "iP@r = the best precision where recall reaches r (round(r R) relevant docs)", ("recall", "recall_cutoff"),
      trec_eval=(spell("iprec_at_recall", "recall", RECALL_LEVELS),),
      ir_measures=(spell("IPrec", recall_cutoff="trec_eval9"),),
      aliases=(spell("interpolated_precision"),), oracle="pytrec_eval", source=_RANK),
    M("eleven_point_average", "duckrank.eleven_point_average_of(q, {recall_levels})",
      "mean interpolated precision at the recall levels (0, 0.1, ..., 1)", ("recall_levels",),
      trec_eval=(spell("11pt_avg", "recall_levels"),),
      aliases=(spell("eleven_point_average"),), oracle="pytrec_eval", source=_RANK),
    M("cg", "duckrank.cg_of(q, {k})", "CG@k = sum of the gains in the top k", ("k", "gain", "gain_map"),
      aliases=(spell("cg"),), cut=True, oracle="formula", source=_GAIN),
    M("dcg", "duckrank.dcg_of(q, {k})", "DCG@k = sum of g(i) / log2(i + 1) over the top k", ("k", "gain", "gain_map"),
      ranx=(spell("dcg"), spell("dcg_burges", gain="exp")), cut=True, oracle="ranx", source=_GAIN),
    M("idcg", "duckrank.idcg_of(q, {k}, {ideal})", "IDCG@k = DCG@k of the ideal ordering",
      ("k", "gain", "gain_map", "ideal"), aliases=(spell("idcg"),), cut=True, oracle="formula", source=_GAIN),
    M("ndcg", "duckrank.ndcg_of(q, {k}, {ideal})", "nDCG@k = DCG@k / IDCG@k, 0 if IDCG = 0",
      ("k", "gain", "gain_map", "ideal", *SAMPLED_OPTIONS),
      trec_eval=(spell("ndcg", "gain_map"), spell("ndcg_cut", "k", CUTOFFS)),
      ir_measures=(Spelling("nDCG", option_values=(("dcg", "log2", (("gain", "linear"),)),
                                                   ("dcg", "exp-log2", (("gain", "exp"),)))),),
      ranx=(spell("ndcg"), spell("ndcg_burges", gain="exp")),
      recommenders=(spell("ndcg_at_k", k=MS_K, gain="binary", complete=True),), cut=True, oracle="pytrec_eval", source=_GAIN,
      sampled="duckrank.discount_at_rank(rank, {k})"),
    M("err", "duckrank.err_of(q, {k})", "ERR@k = sum over r <= k of (1/r) R_r prod_{i<r} (1 - R_i), "
      "R = (2^g - 1) / 2^g_max", ("k", "g_max"), ir_measures=(spell("ERR", g_max=4),),
      # `err` in lower case is METRICS.md's ERR (g_max: the qrels' top grade); ir_measures' `ERR` is gdeval's
      aliases=(spell("err"), spell("expected_reciprocal_rank")), cut=True, oracle="formula", source=_GAIN),
    M("rbp", "duckrank.rbp_of(q, {k}, {p}, {graded}, {scaled})", "RBP(p)@k = (1 - p) sum over i <= k of w(i) "
      "p^(i-1), w = grade / max(1, the query's top grade) (graded, scaled), the grade of a relevant doc (graded) or "
      "rel(i)", ("k", "p", "graded", "scaled"),
      trec_eval=(spell("rbp", "named", p=0.9),), ir_measures=(Spelling("RBP", rel_variant="cwl_rbp"),),
      ranx=(Spelling("rbp", (("scaled", False),), "persistence", cutoff=False),),
      aliases=(spell("rank_biased_precision"),), cut=True, oracle="ranx",
      also=(("residual", "rbp_residual"),), source=_GAIN),
    M("rbp_residual", "duckrank.rbp_residual_of(q, {k}, {p}, {stand_in})", "RBP's residual: the weight of the "
      "unjudged docs in the top k and of the ranks beyond", ("k", "p", "stand_in"), trec_eval=(spell("rbp_resid", "named", p=0.9),),
      aliases=(spell("rbp_residual"),), oracle="formula", source=_GAIN),
    M("judged", "duckrank.judged_of(q, {k})", "Judged@k = the share of the top k (or of the retrieved, if fewer) that "
      "is judged", ("k",), ir_measures=(spell("Judged"),), cut=True, oracle="ir_measures", source=_SET),
    # the C/W/L family of ir_measures' cwl_eval provider: expected rates of gain over ranks 1..1000
    M("bpm", "duckrank.bpm_of(q, {k}, {t}, {min_rel}, {max_rel})", "BPM(T)@K = the mean gain of ranks 1..m, m = "
      "min(K, the rank where the gain so far reaches T)", ("k", "t", *_CWL_GAINS), ir_measures=(spell("BPM"),),
      cut=True, oracle="ir_measures", source=_CWL),
    M("sdcg", "duckrank.sdcg_of(q, {k}, {min_rel}, {max_rel})", "SDCG@k = DCG@k / the DCG@k of k docs of gain 1",
      ("k", *_CWL_GAINS), ir_measures=(Spelling("SDCG", option_values=(("dcg", "log2", ()),)),), cut=True,
      oracle="ir_measures", source=_CWL),
    M("inst", "duckrank.inst_of(q, {t}, {min_rel}, {max_rel})", "INST(T): C/W/L rate of gain, C(i) = ((i + 2T - "
      "gain so far - 1) / (i + 2T - gain so far))^2", ("t", *_CWL_GAINS), ir_measures=(spell("INST"),),
      oracle="ir_measures", source=_CWL),
    M("insq", "duckrank.insq_of(q, {t}, {min_rel}, {max_rel})", "INSQ(T): C/W/L rate of gain, C(i) = ((i + 2T - 1) "
      "/ (i + 2T))^2", ("t", *_CWL_GAINS), ir_measures=(spell("INSQ"),), oracle="ir_measures", source=_CWL),
    M("cwl_rbp", "duckrank.cwl_rbp_of(q, {p})", "cwl_eval's RBP(p), ir_measures' RBP(rel=N): (1 - p) sum over "
      "ranks i <= 1000 of rel(i) p^(i-1), / (1 - p^1000)", ("p",), aliases=(spell("cwl_rbp"),),
      oracle="ir_measures", source=_CWL),
    M("nerr8", "duckrank.nerr8_of(q, {k}, {min_rel}, {max_rel})", "NERR8@k: C/W/L rate of gain, C(i) = 1 - g(i) "
      "before rank k", ("k", *_CWL_GAINS), ir_measures=(spell("NERR8"),), cut=True, oracle="ir_measures", source=_CWL),
    M("nerr9", "duckrank.nerr9_of(q, {k}, {min_rel}, {max_rel})", "NERR9@k: C/W/L rate of gain, C(i) = i / (i + 1) "
      "(1 - g(i)) before rank k", ("k", *_CWL_GAINS), ir_measures=(spell("NERR9"),), cut=True, oracle="ir_measures",
      source=_CWL),
    M("nerr10", "duckrank.nerr10_of(q, {phi}, {min_rel}, {max_rel})", "NERR10(phi): C/W/L rate of gain, C(i) = phi (1 "
      "- g(i)) (ir_measures' p)", ("phi", *_CWL_GAINS), ir_measures=(Spelling("NERR10", option_names=(("p", "phi"),)),),
      oracle="ir_measures", source=_CWL),
    M("nerr11", "duckrank.nerr11_of(q, {t}, {min_rel}, {max_rel})", "NERR11(T): C/W/L rate of gain, C(i) = ((i + "
      "2T - 1) / (i + 2T))^2 (1 - g(i))", ("t", *_CWL_GAINS), ir_measures=(spell("NERR11"),), oracle="ir_measures",
      source=_CWL),
    M("compat", "duckrank.compat_of(q, {persistence}, {normalize})", "Compat = the rank-biased overlap (persistence "
      "p) of the ranking with the ideal ranking, / the ideal's own (normalize)", ("persistence", "normalize"),
      ir_measures=(Spelling("Compat", option_names=(("p", "persistence"),)),), oracle="ir_measures", source=_RANK),
    # the diversity family of ir_measures' pyndeval provider (ndeval), over subtopic qrels
    M("alpha_ndcg", "duckrank.alpha_ndcg_of(q, {k})", "alpha-nDCG@k = alpha-DCG@k / that of ndeval's greedy "
      "ideal ranking", ("k", "alpha"), reads="subtopics", ir_measures=(spell("alpha_nDCG"), spell("α_nDCG")), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    M("alpha_dcg", "duckrank.alpha_dcg_of(q, {k})", "alpha-DCG@k = sum over i <= k of g(i) / log2(i + 1), "
      "/ the same sum for k docs relevant to every subtopic (ndeval's collection-independent normalisation)",
      ("k", "alpha"), reads="subtopics", ir_measures=(spell("alpha_DCG"), spell("α_DCG")), cut=True, oracle="pyndeval",
      source=_DIVERSITY),
    M("err_ia", "duckrank.err_ia_of(q, {k})", "ERR-IA@k = sum over i <= k of g(i) / i, / the same sum for k docs "
      "relevant to every subtopic (alpha 0.5)", ("k",), reads="subtopics", ir_measures=(spell("ERR_IA"),), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    M("nerr_ia", "duckrank.nerr_ia_of(q, {k})", "nERR-IA@k = ERR-IA@k / that of ndeval's greedy ideal ranking",
      ("k",), reads="subtopics", ir_measures=(spell("nERR_IA"),), cut=True, oracle="pyndeval", source=_DIVERSITY),
    M("nrbp", "duckrank.nrbp_of(q, {patience})", "NRBP = (1 - (1 - alpha) patience) / S sum over i of g(i) "
      "patience^(i-1)", ("alpha", "patience"), reads="subtopics",
      ir_measures=(Spelling("NRBP", option_names=_NRBP_NAMES),), oracle="pyndeval", source=_DIVERSITY),
    M("nnrbp", "duckrank.nnrbp_of(q, {patience})", "nNRBP = NRBP / that of ndeval's greedy ideal ranking "
      "(NaN without a relevant subtopic)", ("alpha", "patience"), reads="subtopics",
      ir_measures=(Spelling("nNRBP", option_names=_NRBP_NAMES),), oracle="pyndeval", source=_DIVERSITY),
    M("ap_ia", "duckrank.ap_ia_of(q)", "AP-IA = the mean over the subtopics of AP counting that subtopic's relevant "
      "docs", reads="subtopics", ir_measures=(spell("AP_IA"), spell("MAP_IA")), oracle="pyndeval",
      source=_DIVERSITY),
    M("p_ia", "duckrank.p_ia_of(q, {k})", "P-IA@k = the (doc, subtopic) relevances in the top k / (k S)", ("k",),
      reads="subtopics", ir_measures=(spell("P_IA"),), cut=True, oracle="pyndeval", source=_DIVERSITY),
    M("subtopic_recall", "duckrank.subtopic_recall_of(q, {k})", "StRecall@k = the subtopics the top k cover / S",
      ("k",), reads="subtopics", ir_measures=(spell("StRecall"),), aliases=(spell("subtopic_recall"),), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    M("auc", "duckrank.auc_of(q)", "AUC of a query's retrieved docs by rank sums, ties averaged (NULL without both "
      "classes; ir_measures' Accuracy)", SAMPLED_OPTIONS, reads="all", ir_measures=(spell("Accuracy"),),
      aliases=(spell("auc"),), oracle="formula", source=_AUC,
      sampled="duckrank.auc_at_rank(rank, {sampled})"),
    M("gauc", "duckrank.gauc_of_log({log}, {weight}, {rel_level})", "GAUC: per-query AUC averaged with weights "
      "impressions or positives", ("weight",), summary="log", reads="log", aliases=(spell("gauc"),),
      oracle="formula", source=_AUC),
    M("global_auc", "duckrank.global_auc_of_log({log}, {rel_level})", "AUC over every row of a log, ignoring the "
      "query (scikit-learn roc_auc_score)", summary="log", reads="log",
      aliases=(spell("global_auc"), spell("auc_global")), oracle="sklearn", source=_AUC),
    M("mae", "duckrank.mae_of(q)", "MAE = mean |score - grade| over the judged retrieved docs",
      aliases=(spell("mae"),), oracle="sklearn", source=_RATING),
    M("rmse", "duckrank.rmse_of(q)", "RMSE = sqrt(mean (score - grade)^2) over the judged retrieved docs",
      aliases=(spell("rmse"),), oracle="sklearn", source=_RATING),
    # beyond accuracy: Microsoft Recommenders' definitions (its python_evaluation), popularity bias
    M("catalog_coverage", "duckrank.catalog_coverage_of({users}, {train}, {k}, {empty})",
      "summary only: distinct items in the scored queries' top k / distinct items in train (MS catalog_coverage)", ("k",),
      summary="overall", per_query=False, reads="top_k", aliases=(spell("catalog_coverage"),),
      oracle="recommenders", source=_BEYOND),
    M("distributional_coverage", "duckrank.distributional_coverage_of({users}, {k}, {empty})",
      "summary only: entropy -sum p(i) log2 p(i) of each item's share of the top-k recommendations "
      "(MS distributional_coverage)",
      ("k",), summary="overall", per_query=False, reads="top_k", aliases=(spell("distributional_coverage"),),
      oracle="recommenders", source=_BEYOND),
    M("novelty", "duckrank.novelty_of({users}, {train}, {k}, {empty})",
      "mean over the top k of -log2(n(i) / N), n(i) = users who trained on i, N = training pairs (MS novelty)",
      ("k",), reads="top_k", aliases=(spell("novelty"),), oracle="recommenders", source=_BEYOND),
    M("diversity", "duckrank.diversity_of({users}, {train}, {items}, {k}, {similarity}, {empty})",
      "1 - mean similarity of the pairs of items in the top k (MS user_diversity)", ("k", "similarity"),
      reads="top_k", aliases=(spell("diversity"),), oracle="recommenders", source=_BEYOND),
    M("serendipity", "duckrank.serendipity_of({users}, {train}, {items}, {k}, {similarity}, {empty})",
      "mean over the top k of (1 - mean similarity to the user's training items) * rel(i) (MS user_serendipity)",
      ("k", "similarity"), reads="top_k", aliases=(spell("serendipity"),), oracle="recommenders", source=_BEYOND),
    M("arp", "duckrank.arp_of({users}, {train}, {k}, {head}, {empty})",
      "ARP@k = mean over the top k of n(i), the item's training interactions", ("k", "head"), reads="top_k",
      aliases=(spell("arp"),), oracle="formula", source=_BEYOND),
    M("aplt", "duckrank.aplt_of({users}, {train}, {k}, {head}, {empty})",
      "APLT@k = share of the top k outside the short head", ("k", "head"), reads="top_k",
      aliases=(spell("aplt"),), oracle="formula", source=_BEYOND),
    M("aclt", "duckrank.aclt_of({users}, {train}, {k}, {head}, {empty})",
      "ACLT@k = items of the top k outside the short head", ("k", "head"), reads="top_k",
      aliases=(spell("aclt"),), oracle="formula", source=_BEYOND),
    M("num_q", "1", "the number of queries scored", summary="count", per_query=False,
      trec_eval=(spell("num_q"),), oracle="pytrec_eval", table_macro=False),
    M("num_run_queries", "duckrank.run_query_of(q)", "queries the run holds: 1 for each, 0 for a qrels query it "
      "misses (complete)", summary="sum", ir_measures=(spell("NumQ"),),
      aliases=(spell("num_run_queries"),), oracle="ir_measures", source=_SET),
    M("num_ret", "q.num_ret", "documents retrieved", summary="sum", trec_eval=(spell("num_ret"),),
      ir_measures=(Spelling("NumRet", rel_variant="num_rel_ret"),), oracle="pytrec_eval", source="sql/20_ranked.sql"),
    M("num_rel", "q.num_rel", "relevant documents (R)", summary="sum", trec_eval=(spell("num_rel"),),
      ir_measures=(spell("NumRel"),), oracle="pytrec_eval", source="sql/20_ranked.sql"),
    M("num_rel_ret", "duckrank.num_rel_ret_of(q)", "relevant documents retrieved", summary="sum",
      trec_eval=(spell("num_rel_ret"),), ir_measures=(spell("NumRelRet"),), oracle="pytrec_eval", source=_SET),
    M("num_nonrel_judged_ret", "duckrank.num_nonrel_judged_ret_of(q)", "judged non-relevant documents retrieved",
      summary="sum", trec_eval=(spell("num_nonrel_judged_ret"),), oracle="pytrec_eval", source=_SET),
    M("gm_map", "duckrank.average_precision_of(q, NULL, 'R')", "geometric mean over queries of AP (floored at "
      "1e-5)", summary="gmean", per_query=False, trec_eval=(spell("gm_map"),), oracle="pytrec_eval",
      table_macro=False, source=_RANK),
    M("gm_bpref", "duckrank.bpref_of(q)", "geometric mean over queries of bpref (floored at 1e-5)",
      summary="gmean", per_query=False, trec_eval=(spell("gm_bpref"),), oracle="pytrec_eval", table_macro=False,
      source=_RANK),
    # trec_eval 10's other all_trec measures, compared with the binary itself (tests/oracles.py)
    M("set_average_precision", "duckrank.set_average_precision_of(q)", "set_map = num_rel_ret^2 / (num_ret R): "
      "set precision times set recall", trec_eval=(spell("set_map"),), ir_measures=(set_spell("SetAP"),),
      aliases=(spell("set_average_precision"),),
      oracle="trec_eval", source=_SET),
    M("unjudged_fraction", "duckrank.unjudged_fraction_of(q, {k})", "unj@k = unjudged docs (not in the qrels, or "
      "a negative grade) in the top k / k (k NULL: / retrieved)", ("k",),
      trec_eval=(spell("unj", "k", ("5", "10", "20")),), aliases=(spell("unjudged_fraction"),), oracle="trec_eval",
      source=_SET),
    M("utility", "duckrank.utility_of(q, {retrieved_relevant}, {retrieved_nonrelevant}, {missed_relevant}, "
      "{missed_nonrelevant}, {collection_size}, {stand_in})", "utility = p1 relevant retrieved + p2 non-relevant retrieved + "
      "p3 relevant missed + p4 non-relevant missed (1, -1, 0, 0)",
      ("retrieved_relevant", "retrieved_nonrelevant", "missed_relevant", "missed_nonrelevant", "collection_size",
       "stand_in"),
      trec_eval=(spell("utility", "retrieved_relevant,retrieved_nonrelevant,missed_relevant,missed_nonrelevant"),), aliases=(spell("utility"),), oracle="trec_eval", source=_SET),
    M("binary_normalized_gain", "duckrank.binary_normalized_gain_of(q)", "binG = (1/R) sum over relevant "
      "retrieved docs of 1 / log2(2 + the non-relevant docs above)", trec_eval=(spell("binG"),),
      aliases=(spell("binary_normalized_gain"),), oracle="trec_eval", source=_RANK),
    M("inferred_average_precision", "duckrank.inferred_average_precision_of(q)", "infAP: AP estimated from a "
      "sampled pool (negative grade: pooled, not sampled; not in the qrels: unpooled)",
      trec_eval=(spell("infAP"),), aliases=(spell("inferred_average_precision"), spell("infAP")),
      oracle="trec_eval", source=_RANK),
    M("normalized_gain", "duckrank.normalized_gain_of(q)", "G = sum of g(i) / log2(2 + ideal cost(i) - gain so "
      "far(i)), / the ideal's total gain", ("gain", "gain_map"), trec_eval=(spell("G", "gain_map"),),
      aliases=(spell("normalized_gain"),), oracle="trec_eval", source=_GAIN),
    M("ndcg_rel", "duckrank.ndcg_rel_of(q)", "nDCG averaged over the positive-gain judged docs, at each one's "
      "rank (full depth if not retrieved)", ("gain", "gain_map"), trec_eval=(spell("ndcg_rel", "gain_map"),),
      aliases=(spell("ndcg_rel"),), oracle="trec_eval", source=_GAIN),
    M("r_ndcg", "duckrank.r_ndcg_of(q)", "Rndcg = nDCG averaged at the ranks where the ideal gain changes "
      "(and at full depth)", ("gain", "gain_map"), trec_eval=(spell("Rndcg", "gain_map"),),
      aliases=(spell("r_ndcg"),), oracle="trec_eval", source=_GAIN),
    M("relevance_string", "duckrank.relevance_string_of(q, {k}, {stand_in})", "the top k docs' judgments as text: the "
      "grade 0-9, > above 9, - not in the qrels, . a negative grade", ("k", "stand_in"),
      summary="none", value="text", reads="all", trec_eval=(spell("relstring", "k", k=10),),
      aliases=(spell("relevance_string"),), oracle="trec_eval", source=_RANK),
]}

# Table macros over several measures at once: trec_eval's counters side by side.
GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "counts": ("trec_eval's counters per query (sum them for the summary)",
               ("num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret")),
}

# The log helpers beside the log measures: their hand-written implementation and options.
LOG_MACROS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "log_auc": ("duckrank.query_auc_of_log({log}, {rel_level})",
                "AUC per query of a log(query_id, score, label), with impressions and positives", ()),
    "classification": ("duckrank.confusion_of_log({log}, {threshold}, {rel_level})",
                       "TP, FP, TN, FN, accuracy, precision, recall, F1 of a log(score, label) at a score threshold",
                       ("threshold",)),
}

# `-m all_trec`: every trec_eval measure duckrank supports, in trec_eval's own order (measures.c's
# te_trec_measures, restricted to its trec_names). relstring is text, printed for each query only.
# (dcg and ideal_dcg are trec_eval measures, but not all_trec's.)
ALL_TREC: list[str] = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    *[f"iprec_at_recall.{level}" for level in RECALL_LEVELS],
    *[f"P.{k}" for k in CUTOFFS], "relstring",
    *[f"recall.{k}" for k in CUTOFFS],
    "infAP", "gm_bpref",
    *[f"Rprec_mult.{m}" for m in RPREC_MULTS],
    "utility", "11pt_avg", "binG", "G", "ndcg", "ndcg_rel", "Rndcg",
    *[f"ndcg_cut.{k}" for k in CUTOFFS],
    *[f"map_cut.{k}" for k in CUTOFFS],
    *[f"relative_P.{k}" for k in CUTOFFS],
    *[f"success.{k}" for k in ("1", "5", "10")],
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid",
    *[f"unj.{k}" for k in ("5", "10", "20")],
]

# trec_eval's default measure set ("official"), which `duckrank eval` prints without -m.
OFFICIAL: list[str] = [
    "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall.0.00,0.10,0.20,0.30,0.40,0.50,0.60,0.70,0.80,0.90,1.00",
    "P.5,10,15,20,30,100,200,500,1000",
]

# trec_eval's measure sets (measures.c's te_trec_measure_nicknames): -m names one as a measure. Each
# also prints trec_eval's runid line, as -m runid does. "set": the measures of the unranked set.
TREC_SETS: dict[str, list[str]] = {
    "official": OFFICIAL,
    "set": ["num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P",
            "set_map", "set_F"],
    "all_trec": ALL_TREC,
}
# trec_eval's other measure sets, over judgments duckrank does not read: what they need.
TREC_UNREAD_SETS: dict[str, str] = {
    "all_prefs": "preference judgments (trec_eval -R prefs or qrels_prefs)",
    "prefs": "preference judgments (trec_eval -R prefs or qrels_prefs)",
    "qrels_jg": "judgment groups (trec_eval -R qrels_jg)",
}

# The order trec_eval 10 prints its measures in, whatever order -m names them (its te_trec_measures
# table, measures.c); a family's parameters print in ascending order.
TREC_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "num_nonjudged_ret",
    "rbp", "rbp_resid", "unj",
)


# Fusion (sql/70_fusion.sql): ranx 0.3.21's methods and normalisations, under ranx's own names.
# Each method's public table macro duckrank.fuse_<name>(runs, ...) is generated into
# sql/75_fusion_methods.sql; duckrank.fusion.fuse, `duckrank fuse` and the README's method table read
# the same declarations.

FUSION_NORMS = ("min-max", "min-max-inverted", "max", "sum", "zmuv", "rank", "borda", "none")
# ranx's other spellings of a normalisation
FUSION_NORM_ALIASES = {"min_max": "min-max", "min_max_inverted": "min-max-inverted"}


def _finite_list(name: str) -> str:
    return f"{name} IS NOT NULL AND list_bool_and(list_transform({name}, lambda v: coalesce(isfinite(v), false)))"


# A method's parameters. ranx gives some no default (gamma, phi, weights, n_segments, w): duckrank
# neither; optimize_fusion chooses them. `run_count` is the number of runs, for the weights' check.
FUSION_PARAMS: dict[str, Param] = {p.name: p for p in [
    Param("norm", "text", "min-max", "how each run's scores are normalised per query before fusing",
          choices=FUSION_NORMS),
    Param("weights", "list", None, "one weight per run, in the runs' order",
          valid=f"{_finite_list('weights')} AND len(weights) = run_count",
          must="be one finite number per run"),
    Param("k", "number", 60, "RRF's constant: a doc at rank r scores 1 / (k + r)",
          valid="isfinite(k) AND k >= 0", must="be a number >= 0"),
    Param("gamma", "number", None, "CombGMNZ's exponent of the number of runs that retrieved the doc",
          valid="isfinite(gamma)", must="be a finite number (ranx has no default: give one, or optimise it)"),
    Param("sigma", "number", 0.01, "LogN_ISR's offset: the sum times ln(runs that retrieved the doc + sigma)",
          valid="sigma >= 0 AND sigma <= 1", must="be between 0 and 1"),
    Param("phi", "number", None, "RBC's persistence: a doc at rank r scores (1 - phi) phi^(r - 1)",
          valid="phi >= 0 AND phi <= 1", must="be between 0 and 1 (ranx has no default: give one, or optimise it)"),
    Param("n_segments", "integer", None, "ProbFuse's number of segments per list",
          valid="n_segments >= 1 AND n_segments = floor(n_segments)",
          must="be a whole number >= 1 (ranx has no default: give one, or optimise it)"),
    Param("w", "integer", None, "SlideFuse's window: ranks r - w to r + w",
          valid="w >= 0 AND w = floor(w)", must="be a whole number >= 0 (ranx has no default: give one, or optimise it)"),
    Param("map_scores", "list", None, "MAPFuse's MAP of each run on the training qrels (learnt from qrels)",
          valid=f"{_finite_list('map_scores')} AND len(map_scores) = run_count",
          must="be one finite number per run"),
]}


@dataclass(frozen=True)
class FusionMethod:
    """A fusion method: ranx's name and the macro of sql/70_fusion.sql that computes it, with
    {parameter} placeholders ({runs}, {qrels}, {norm} and the method's own), its parameters, whether it
    learns from qrels, and ranx's grid for optimize_fusion: (parameter, first, last, step) or weights."""

    name: str
    call: str
    doc: str
    params: tuple[str, ...] = ()  # beside norm; "weights" for the weighted ones
    trained: bool = False  # reads qrels (the training queries' judgments)
    learned: tuple[str, ...] = ()  # parameters learnt from the qrels, not given (MAPFuse's map_scores)
    aliases: tuple[str, ...] = ()
    grid: tuple[Any, ...] = ()  # ranx.optimize_fusion's: ("k", 10, 100, 10), ("weights", step)
    source: str = ""  # the paper

    @property
    def given(self) -> tuple[str, ...]:
        """The parameters a caller gives (all but the learnt ones)."""
        return tuple(p for p in self.params if p not in self.learned)


def _comb(name: str, doc: str, source: str = "Fox & Shaw 1993", params: tuple[str, ...] = (),
          grid: tuple[Any, ...] = ()) -> FusionMethod:
    gamma = "{gamma}" if "gamma" in params else "NULL"
    return FusionMethod(name, f"duckrank.fusion_comb({{runs}}, {{norm}}, '{name}', {gamma})", doc, params,
                        aliases=(f"comb{name}", f"comb_{name}"), grid=grid, source=source)


def _by_rank(name: str, doc: str, source: str, params: tuple[str, ...] = (), **kwargs: Any) -> FusionMethod:
    given = {p: f"{{{p}}}" if p in params else "NULL" for p in ("k", "phi", "sigma")}
    scores = "{map_scores}" if "map_scores" in params else "CAST(NULL AS DOUBLE[])"
    return FusionMethod(name, f"duckrank.fusion_by_rank({{runs}}, {{norm}}, '{name}', {given['k']}, {given['phi']}, "
                              f"{given['sigma']}, {scores})", doc, params, source=source, **kwargs)


def _weighted(name: str, doc: str, source: str, call: str | None = None, aliases: tuple[str, ...] = ()) -> FusionMethod:
    return FusionMethod(name, call or f"duckrank.fusion_weighted({{runs}}, {{norm}}, '{name}', {{weights}})", doc,
                        ("weights",), aliases=aliases, grid=("weights", 0.1), source=source)


def _trained(name: str, macro: str, doc: str, source: str, params: tuple[str, ...] = (),
             grid: tuple[Any, ...] = ()) -> FusionMethod:
    argument = f"{{{params[0]}}}" if params else "NULL"
    return FusionMethod(name, f"duckrank.{macro}({{runs}}, {{qrels}}, {{norm}}, '{name}', {argument})", doc, params,
                        trained=True, grid=grid, source=source)


NO_WEIGHTS = "CAST(NULL AS DOUBLE[])"
FUSION_METHODS: dict[str, FusionMethod] = {m.name: m for m in [
    _comb("sum", "the sum of the doc's scores over the runs (a run that did not retrieve it adds 0)"),
    _comb("mnz", "the sum times the number of runs that retrieved the doc"),
    _comb("max", "the largest of the doc's scores"),
    _comb("min", "the smallest of the doc's scores (over the runs that retrieved it)"),
    _comb("med", "the median of the doc's scores (over the runs that retrieved it)"),
    _comb("anz", "the sum divided by the number of runs that retrieved the doc"),
    _comb("gmnz", "the sum times (the number of runs that retrieved the doc)^gamma", "Joon Ho Lee 1997",
          ("gamma",), grid=("gamma", 0.01, 1.0, 0.01)),
    _by_rank("isr", "the sum of 1 / rank^2 times the number of runs that retrieved the doc", "Mourão et al. 2015"),
    _by_rank("log_isr", "the sum of 1 / rank^2 times ln(the number of runs that retrieved the doc)",
             "Mourão et al. 2015"),
    _by_rank("logn_isr", "the sum of 1 / rank^2 times ln(the number of runs that retrieved the doc + sigma)",
             "Mourão et al. 2015", ("sigma",), grid=("sigma", 0.01, 1.0, 0.01)),
    _by_rank("rrf", "the sum of 1 / (k + rank)", "Cormack et al. 2009", ("k",), grid=("k", 10, 100, 10)),
    _by_rank("rbc", "the sum of (1 - phi) phi^(rank - 1): rank-biased centroids", "Bailey et al. 2017", ("phi",),
             grid=("phi", 0.01, 1.0, 0.01)),
    FusionMethod("bordafuse", f"duckrank.fusion_borda({{runs}}, {{norm}}, {NO_WEIGHTS})",
                 "the sum of Borda points: C - rank + 1 from a run that retrieved the doc (C: the query's candidates), "
                 "(C - n + 1) / 2 from one that did not (n: its list's length)", source="Aslam & Montague 2001"),
    FusionMethod("condorcet", f"duckrank.fusion_condorcet({{runs}}, {{norm}}, {NO_WEIGHTS})",
                 "C minus the number of docs that more runs rank above the doc than below it (a run ranks the docs it "
                 "did not retrieve below the rest)", source="Montague & Aslam 2002"),
    _weighted("wsum", "the sum of weight x score", "weighted CombSUM", aliases=("weighted_sum",)),
    _weighted("wmnz", "the sum of the scores times the sum of the weights of the runs that retrieved the doc",
              "Wu et al. 2002"),
    _weighted("mixed", "the sum of weight x score times the square root of the number of runs that retrieved the doc",
              "Wu et al. 2002"),
    _weighted("w_bordafuse", "the sum of weight x Borda points", "Aslam & Montague 2001",
              "duckrank.fusion_borda({runs}, {norm}, {weights})", aliases=("weighted_bordafuse",)),
    _weighted("w_condorcet", "Condorcet with each run's vote counted by its weight", "Montague & Aslam 2002",
              "duckrank.fusion_condorcet({runs}, {norm}, {weights})", aliases=("weighted_condorcet",)),
    _trained("posfuse", "fusion_by_position", "the sum of each run's probability that its doc at that rank is "
             "relevant (learnt on the qrels' queries)", "Lillis et al. 2010"),
    _trained("slidefuse", "fusion_by_position", "the sum of each run's mean PosFuse probability over ranks "
             "rank - w to rank + w", "Lillis et al. 2008", ("w",), grid=("w", 1, 100, 1)),
    _trained("probfuse", "fusion_by_segment", "the sum of the probability that a doc of the run's k-th of "
             "n_segments segments is relevant, / k", "Lillis et al. 2006", ("n_segments",),
             grid=("n_segments", 1, 100, 1)),
    _trained("segfuse", "fusion_by_segment", "the sum of the probability that a doc in the run's segment of "
             "ranks 1-5, 6-15, 16-35, ... is relevant, times (score + 1)", "Shokouhi 2007"),
    _trained("bayesfuse", "fusion_by_segment", "the sum of the log odds that a doc in the run's segment of "
             "ranks 1-5, 6-10, ..., 501-1000 is relevant; ln(0.001 / 0.999) from a run that did not retrieve it",
             "Aslam & Montague 2001"),
    FusionMethod("mapfuse", "duckrank.fusion_by_rank({runs}, {norm}, 'mapfuse', NULL, NULL, NULL, {map_scores})",
                 "the sum of the run's MAP on the qrels / rank", ("map_scores",), trained=True,
                 learned=("map_scores",), source="Lillis et al. 2010"),
]}
