"""The registry: one declaration per measure and per fusion method, over the options and conventions
of duckrank.options and the spelling rules of duckrank.spellings; with compare's settings and the
report's figures.

Everything else is derived from the three:
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

from dataclasses import dataclass
from typing import Any

from duckrank.options import OPTIONS, SAMPLED_OPTIONS, Param
from duckrank.spellings import CUTOFFS, RECALL_LEVELS, RPREC_MULTS, Spelling, set_spell, spell

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
# ir_measures' SetP(relative=True), as it prints SetRelP: trec_eval's set_relative_P (recall's cap)
_SET_RELATIVE = (("relative", True, (("metric", "recall"), ("cap", True))), ("relative", False, ()))

METRICS: dict[str, Metric] = {m.name: m for m in [
    Metric("precision", "duckrank.precision_of(q, {k})", "P@k = relevant docs in the top k / k (k NULL: / retrieved)",
      ("k", *SAMPLED_OPTIONS), trec_eval=(spell("P", "k", CUTOFFS), spell("set_P")), ir_measures=(spell("P"), set_spell("SetP", _SET_RELATIVE)),
      ranx=(spell("precision"),), recommenders=(spell("precision_at_k", k=MS_K),), cut=True, oracle="pytrec_eval", source=_SET,
      sampled="duckrank.precision_at_rank(rank, {k}, {sampled})"),
    Metric("recall", "duckrank.recall_of(q, {k}, {cap})", "R@k = relevant docs in the top k / R (cap: / min(R, k))",
      ("k", "cap", *SAMPLED_OPTIONS), trec_eval=(spell("recall", "k", CUTOFFS), spell("relative_P", "k", CUTOFFS, cap=True), spell("set_recall"),
                 spell("set_relative_P", cap=True)),
      ir_measures=(spell("R"), set_spell("SetR"), set_spell("SetRelP", cap=True)),
      ranx=(Spelling("recall", command_line="set_recall"),),
      recommenders=(spell("recall_at_k", k=MS_K),),
      cut=True, oracle="pytrec_eval", source=_SET, sampled="duckrank.hit_at_rank(rank, {k})"),
    Metric("f_measure", "duckrank.f_measure_of(q, {k}, {beta}, {recall_weight})",
      "F_beta@k = (1 + b^2) P R / (b^2 P + R)",
      ("k", "beta", "recall_weight"), trec_eval=(spell("set_F", "beta^2"),), ir_measures=(Spelling("SetF", cutoff=False, ignores_cutoff=True, option_names=(("beta", "recall_weight"),)),), ranx=(spell("f1", beta=1.0),), aliases=(spell("F"), spell("f_measure")),
      cut=True, oracle="pytrec_eval", source=_SET),
    Metric("hit_rate", "duckrank.hit_rate_of(q, {k})", "hit@k = 1 if a relevant doc is in the top k, else 0",
      ("k", *SAMPLED_OPTIONS), trec_eval=(spell("success", "k", ("1", "5", "10")),), ir_measures=(spell("Success"),),
      ranx=(spell("hit_rate"),), aliases=(spell("hit"), spell("hits_at")), cut=True, oracle="pytrec_eval", source=_SET,
      sampled="duckrank.hit_at_rank(rank, {k})"),
    Metric("hits", "duckrank.hits_of(q, {k})",
      "hits@k = relevant docs in the top k (mean over queries; num_rel_ret sums "
      "them)", ("k",), ranx=(spell("hits"),), cut=True, oracle="ranx", source=_SET),
    Metric("reciprocal_rank", "duckrank.reciprocal_rank_of(q, {k})", "RR@k = 1 / rank of the first relevant doc in the "
      "top k, else 0 (mean: MRR)", ("k", *SAMPLED_OPTIONS), trec_eval=(spell("recip_rank"),), ir_measures=(spell("RR"),),
      ranx=(spell("mrr"),), aliases=(spell("reciprocal_rank"),), cut=True, oracle="pytrec_eval", source=_RANK,
      sampled="duckrank.reciprocal_at_rank(rank, {k})"),
    Metric("average_precision", "duckrank.average_precision_of(q, {k}, {denominator})",
      "AP@k = sum of P@i over the relevant ranks i <= k, / R (or min(R, k), or the hits) (mean: MAP)",
      ("k", "denominator", *SAMPLED_OPTIONS), trec_eval=(spell("map"), spell("map_cut", "k", CUTOFFS)),
      ir_measures=(spell("AP"),), ranx=(spell("map"),),
      recommenders=(spell("map_at_k", k=MS_K, denominator="min"), spell("ms_map", k=MS_K)),
      aliases=(spell("average_precision"),), cut=True, oracle="pytrec_eval", source=_RANK,
      sampled="duckrank.reciprocal_at_rank(rank, {k})"),
    Metric("r_precision", "duckrank.r_precision_of(q, {mult})", "R-precision = P@R (mult: P@floor(mult R + 0.9))",
      ("mult",), trec_eval=(spell("Rprec"), spell("Rprec_mult", "mult", RPREC_MULTS)), ir_measures=(spell("Rprec"),),
      ranx=(Spelling("r-precision", ignores_cutoff=True),), aliases=(spell("r-prec"), spell("r_precision")),
      oracle="pytrec_eval",
      source=_SET),
    Metric("recommenders_r_precision", "duckrank.recommenders_r_precision_of(q, {k})", "Microsoft Recommenders' "
      "R-precision@k = relevant docs in the top min(R, k) / R; a query with none there has no value (MS's mean "
      "leaves it out)", ("k",), recommenders=(spell("r_precision_at_k", k=MS_K),),
      aliases=(spell("recommenders_r_precision"),), cut=True, oracle="recommenders", source=_SET),
    Metric("bpref", "duckrank.bpref_of(q)",
      "bpref = (1/R) sum over relevant retrieved r of 1 - min(n_r, R) / min(N, R)",
      trec_eval=(spell("bpref"),), ir_measures=(spell("Bpref"),), oracle="pytrec_eval", source=_RANK),
    # ranx's bpref (ranx/metrics/bpref.py): its `bpref` alone is trec_eval's (the README's collision
    # table); ranx's own forms bpref@k (k ignored, as ranx ignores it) and bpref-lN are this one
    Metric("ranx_bpref", "duckrank.ranx_bpref_of(q)", "ranx's bpref: trec_eval's, but a negative grade is judged "
      "non-relevant, and with no judged non-relevant doc a relevant doc retrieved makes it NaN (ranx's 0 / 0)",
      ranx=(Spelling("bpref", ignores_cutoff=True),), aliases=(spell("ranx_bpref"),), oracle="ranx", source=_RANK),
    Metric("interpolated_precision", "duckrank.interpolated_precision_of(q, {recall}, {recall_cutoff})",
      "iP@r = the best precision where recall reaches r (round(r R) relevant docs)", ("recall", "recall_cutoff"),
      trec_eval=(spell("iprec_at_recall", "recall", RECALL_LEVELS),),
      ir_measures=(spell("IPrec", recall_cutoff="trec_eval9"),),
      aliases=(spell("interpolated_precision"),), oracle="pytrec_eval", source=_RANK),
    Metric("eleven_point_average", "duckrank.eleven_point_average_of(q, {recall_levels})",
      "mean interpolated precision at the recall levels (0, 0.1, ..., 1)", ("recall_levels",),
      trec_eval=(spell("11pt_avg", "recall_levels"),),
      aliases=(spell("eleven_point_average"),), oracle="pytrec_eval", source=_RANK),
    Metric("cg", "duckrank.cg_of(q, {k})", "CG@k = sum of the gains in the top k", ("k", "gain", "gain_map"),
      aliases=(spell("cg"),), cut=True, oracle="formula", source=_GAIN),
    Metric("dcg", "duckrank.dcg_of(q, {k})",
      "DCG@k = sum of g(i) / log2(i + 1) over the top k", ("k", "gain", "gain_map"),
      ranx=(spell("dcg"), spell("dcg_burges", gain="exp")), cut=True, oracle="ranx", source=_GAIN),
    Metric("idcg", "duckrank.idcg_of(q, {k}, {ideal})", "IDCG@k = DCG@k of the ideal ordering",
      ("k", "gain", "gain_map", "ideal"), aliases=(spell("idcg"),), cut=True, oracle="formula", source=_GAIN),
    Metric("ndcg", "duckrank.ndcg_of(q, {k}, {ideal})", "nDCG@k = DCG@k / IDCG@k, 0 if IDCG = 0",
      ("k", "gain", "gain_map", "ideal", *SAMPLED_OPTIONS),
      trec_eval=(spell("ndcg", "gain_map"), spell("ndcg_cut", "k", CUTOFFS)),
      ir_measures=(Spelling("nDCG", option_values=(("dcg", "log2", (("gain", "linear"),)),
                                                   ("dcg", "exp-log2", (("gain", "exp"),)))),),
      ranx=(spell("ndcg"), spell("ndcg_burges", gain="exp")),
      recommenders=(spell("ndcg_at_k", k=MS_K, gain="binary", complete=True),), cut=True, oracle="pytrec_eval", source=_GAIN,
      sampled="duckrank.discount_at_rank(rank, {k})"),
    Metric("err", "duckrank.err_of(q, {k})", "ERR@k = sum over r <= k of (1/r) R_r prod_{i<r} (1 - R_i), "
      "R = (2^g - 1) / 2^g_max", ("k", "g_max"), ir_measures=(spell("ERR", g_max=4),),
      # `err` in lower case is METRICS.md's ERR (g_max: the qrels' top grade); ir_measures' `ERR` is gdeval's
      aliases=(spell("err"), spell("expected_reciprocal_rank")), cut=True, oracle="formula", source=_GAIN),
    Metric("rbp", "duckrank.rbp_of(q, {k}, {p}, {graded}, {scaled})", "RBP(p)@k = (1 - p) sum over i <= k of w(i) "
      "p^(i-1), w = grade / max(1, the query's top grade) (graded, scaled), the grade of a relevant doc (graded) or "
      "rel(i)", ("k", "p", "graded", "scaled"),
      trec_eval=(spell("rbp", "named", p=0.9),), ir_measures=(Spelling("RBP", rel_variant="cwl_rbp"),),
      ranx=(Spelling("rbp", (("scaled", False),), "persistence", cutoff=False),),
      aliases=(spell("rank_biased_precision"),), cut=True, oracle="ranx",
      also=(("residual", "rbp_residual"),), source=_GAIN),
    Metric("rbp_residual", "duckrank.rbp_residual_of(q, {k}, {p}, {stand_in})", "RBP's residual: the weight of the "
      "unjudged docs in the top k and of the ranks beyond", ("k", "p", "stand_in"), trec_eval=(spell("rbp_resid", "named", p=0.9),),
      aliases=(spell("rbp_residual"),), oracle="formula", source=_GAIN),
    Metric("judged", "duckrank.judged_of(q, {k})",
      "Judged@k = the share of the top k (or of the retrieved, if fewer) that "
      "is judged", ("k",), ir_measures=(spell("Judged"),), cut=True, oracle="ir_measures", source=_SET),
    # the C/W/L family of ir_measures' cwl_eval provider: expected rates of gain over ranks 1..1000
    Metric("bpm", "duckrank.bpm_of(q, {k}, {t}, {min_rel}, {max_rel})", "BPM(T)@K = the mean gain of ranks 1..m, m = "
      "min(K, the rank where the gain so far reaches T)", ("k", "t", *_CWL_GAINS), ir_measures=(spell("BPM"),),
      cut=True, oracle="ir_measures", source=_CWL),
    Metric("sdcg", "duckrank.sdcg_of(q, {k}, {min_rel}, {max_rel})", "SDCG@k = DCG@k / the DCG@k of k docs of gain 1",
      ("k", *_CWL_GAINS), ir_measures=(Spelling("SDCG", option_values=(("dcg", "log2", ()),)),), cut=True,
      oracle="ir_measures", source=_CWL),
    Metric("inst", "duckrank.inst_of(q, {t}, {min_rel}, {max_rel})", "INST(T): C/W/L rate of gain, C(i) = ((i + 2T - "
      "gain so far - 1) / (i + 2T - gain so far))^2", ("t", *_CWL_GAINS), ir_measures=(spell("INST"),),
      oracle="ir_measures", source=_CWL),
    Metric("insq", "duckrank.insq_of(q, {t}, {min_rel}, {max_rel})",
      "INSQ(T): C/W/L rate of gain, C(i) = ((i + 2T - 1) "
      "/ (i + 2T))^2", ("t", *_CWL_GAINS), ir_measures=(spell("INSQ"),), oracle="ir_measures", source=_CWL),
    Metric("cwl_rbp", "duckrank.cwl_rbp_of(q, {p})", "cwl_eval's RBP(p), ir_measures' RBP(rel=N): (1 - p) sum over "
      "ranks i <= 1000 of rel(i) p^(i-1), / (1 - p^1000)", ("p",), aliases=(spell("cwl_rbp"),),
      oracle="ir_measures", source=_CWL),
    Metric("nerr8", "duckrank.nerr8_of(q, {k}, {min_rel}, {max_rel})", "NERR8@k: C/W/L rate of gain, C(i) = 1 - g(i) "
      "before rank k", ("k", *_CWL_GAINS), ir_measures=(spell("NERR8"),), cut=True, oracle="ir_measures", source=_CWL),
    Metric("nerr9", "duckrank.nerr9_of(q, {k}, {min_rel}, {max_rel})",
      "NERR9@k: C/W/L rate of gain, C(i) = i / (i + 1) "
      "(1 - g(i)) before rank k", ("k", *_CWL_GAINS), ir_measures=(spell("NERR9"),), cut=True, oracle="ir_measures",
      source=_CWL),
    Metric("nerr10", "duckrank.nerr10_of(q, {phi}, {min_rel}, {max_rel})",
      "NERR10(phi): C/W/L rate of gain, C(i) = phi (1 "
      "- g(i)) (ir_measures' p)", ("phi", *_CWL_GAINS), ir_measures=(Spelling("NERR10", option_names=(("p", "phi"),)),),
      oracle="ir_measures", source=_CWL),
    Metric("nerr11", "duckrank.nerr11_of(q, {t}, {min_rel}, {max_rel})", "NERR11(T): C/W/L rate of gain, C(i) = ((i + "
      "2T - 1) / (i + 2T))^2 (1 - g(i))", ("t", *_CWL_GAINS), ir_measures=(spell("NERR11"),), oracle="ir_measures",
      source=_CWL),
    Metric("compat", "duckrank.compat_of(q, {persistence}, {normalize})",
      "Compat = the rank-biased overlap (persistence "
      "p) of the ranking with the ideal ranking, / the ideal's own (normalize)", ("persistence", "normalize"),
      ir_measures=(Spelling("Compat", option_names=(("p", "persistence"),)),), oracle="ir_measures", source=_RANK),
    # the diversity family of ir_measures' pyndeval provider (ndeval), over subtopic qrels
    Metric("alpha_ndcg", "duckrank.alpha_ndcg_of(q, {k})", "alpha-nDCG@k = alpha-DCG@k / that of ndeval's greedy "
      "ideal ranking", ("k", "alpha"), reads="subtopics", ir_measures=(spell("alpha_nDCG"), spell("α_nDCG")), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    Metric("alpha_dcg", "duckrank.alpha_dcg_of(q, {k})", "alpha-DCG@k = sum over i <= k of g(i) / log2(i + 1), "
      "/ the same sum for k docs relevant to every subtopic (ndeval's collection-independent normalisation)",
      ("k", "alpha"), reads="subtopics", ir_measures=(spell("alpha_DCG"), spell("α_DCG")), cut=True, oracle="pyndeval",
      source=_DIVERSITY),
    Metric("err_ia", "duckrank.err_ia_of(q, {k})", "ERR-IA@k = sum over i <= k of g(i) / i, / the same sum for k docs "
      "relevant to every subtopic (alpha 0.5)", ("k",), reads="subtopics", ir_measures=(spell("ERR_IA"),), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    Metric("nerr_ia", "duckrank.nerr_ia_of(q, {k})", "nERR-IA@k = ERR-IA@k / that of ndeval's greedy ideal ranking",
      ("k",), reads="subtopics", ir_measures=(spell("nERR_IA"),), cut=True, oracle="pyndeval", source=_DIVERSITY),
    Metric("nrbp", "duckrank.nrbp_of(q, {patience})", "NRBP = (1 - (1 - alpha) patience) / S sum over i of g(i) "
      "patience^(i-1)", ("alpha", "patience"), reads="subtopics",
      ir_measures=(Spelling("NRBP", option_names=_NRBP_NAMES),), oracle="pyndeval", source=_DIVERSITY),
    Metric("nnrbp", "duckrank.nnrbp_of(q, {patience})", "nNRBP = NRBP / that of ndeval's greedy ideal ranking "
      "(NaN without a relevant subtopic)", ("alpha", "patience"), reads="subtopics",
      ir_measures=(Spelling("nNRBP", option_names=_NRBP_NAMES),), oracle="pyndeval", source=_DIVERSITY),
    Metric("ap_ia", "duckrank.ap_ia_of(q)",
      "AP-IA = the mean over the subtopics of AP counting that subtopic's relevant "
      "docs", reads="subtopics", ir_measures=(spell("AP_IA"), spell("MAP_IA")), oracle="pyndeval",
      source=_DIVERSITY),
    Metric("p_ia", "duckrank.p_ia_of(q, {k})", "P-IA@k = the (doc, subtopic) relevances in the top k / (k S)", ("k",),
      reads="subtopics", ir_measures=(spell("P_IA"),), cut=True, oracle="pyndeval", source=_DIVERSITY),
    Metric("subtopic_recall", "duckrank.subtopic_recall_of(q, {k})", "StRecall@k = the subtopics the top k cover / S",
      ("k",), reads="subtopics", ir_measures=(spell("StRecall"),), aliases=(spell("subtopic_recall"),), cut=True,
      oracle="pyndeval", source=_DIVERSITY),
    Metric("auc", "duckrank.auc_of(q)",
      "AUC of a query's retrieved docs by rank sums, ties averaged (NULL without both "
      "classes; ir_measures' Accuracy)", SAMPLED_OPTIONS, reads="all", ir_measures=(spell("Accuracy"),),
      aliases=(spell("auc"),), oracle="formula", source=_AUC,
      sampled="duckrank.auc_at_rank(rank, {sampled})"),
    Metric("gauc", "duckrank.gauc_of_log({log}, {weight}, {rel_level})", "GAUC: per-query AUC averaged with weights "
      "impressions or positives", ("weight",), summary="log", reads="log", aliases=(spell("gauc"),),
      oracle="formula", source=_AUC),
    Metric("global_auc", "duckrank.global_auc_of_log({log}, {rel_level})", "AUC over every row of a log, ignoring the "
      "query (scikit-learn roc_auc_score)", summary="log", reads="log",
      aliases=(spell("global_auc"), spell("auc_global")), oracle="sklearn", source=_AUC),
    Metric("mae", "duckrank.mae_of(q)", "MAE = mean |score - grade| over the judged retrieved docs",
      aliases=(spell("mae"),), oracle="sklearn", source=_RATING),
    Metric("rmse", "duckrank.rmse_of(q)", "RMSE = sqrt(mean (score - grade)^2) over the judged retrieved docs",
      aliases=(spell("rmse"),), oracle="sklearn", source=_RATING),
    # beyond accuracy: Microsoft Recommenders' definitions (its python_evaluation), popularity bias
    Metric("catalog_coverage", "duckrank.catalog_coverage_of({users}, {train}, {k}, {empty})",
      "summary only: distinct items in the scored queries' top k / distinct items in train (MS catalog_coverage)", ("k",),
      summary="overall", per_query=False, reads="top_k", aliases=(spell("catalog_coverage"),),
      oracle="recommenders", source=_BEYOND),
    Metric("distributional_coverage", "duckrank.distributional_coverage_of({users}, {k}, {empty})",
      "summary only: entropy -sum p(i) log2 p(i) of each item's share of the top-k recommendations "
      "(MS distributional_coverage)",
      ("k",), summary="overall", per_query=False, reads="top_k", aliases=(spell("distributional_coverage"),),
      oracle="recommenders", source=_BEYOND),
    Metric("novelty", "duckrank.novelty_of({users}, {train}, {k}, {empty})",
      "mean over the top k of -log2(n(i) / N), n(i) = users who trained on i, N = training pairs (MS novelty)",
      ("k",), reads="top_k", aliases=(spell("novelty"),), oracle="recommenders", source=_BEYOND),
    Metric("diversity", "duckrank.diversity_of({users}, {train}, {items}, {k}, {similarity}, {empty})",
      "1 - mean similarity of the pairs of items in the top k (MS user_diversity)", ("k", "similarity"),
      reads="top_k", aliases=(spell("diversity"),), oracle="recommenders", source=_BEYOND),
    Metric("serendipity", "duckrank.serendipity_of({users}, {train}, {items}, {k}, {similarity}, {empty})",
      "mean over the top k of (1 - mean similarity to the user's training items) * rel(i) (MS user_serendipity)",
      ("k", "similarity"), reads="top_k", aliases=(spell("serendipity"),), oracle="recommenders", source=_BEYOND),
    Metric("arp", "duckrank.arp_of({users}, {train}, {k}, {head}, {empty})",
      "ARP@k = mean over the top k of n(i), the item's training interactions", ("k", "head"), reads="top_k",
      aliases=(spell("arp"),), oracle="formula", source=_BEYOND),
    Metric("aplt", "duckrank.aplt_of({users}, {train}, {k}, {head}, {empty})",
      "APLT@k = share of the top k outside the short head", ("k", "head"), reads="top_k",
      aliases=(spell("aplt"),), oracle="formula", source=_BEYOND),
    Metric("aclt", "duckrank.aclt_of({users}, {train}, {k}, {head}, {empty})",
      "ACLT@k = items of the top k outside the short head", ("k", "head"), reads="top_k",
      aliases=(spell("aclt"),), oracle="formula", source=_BEYOND),
    Metric("num_q", "1", "the number of queries scored", summary="count", per_query=False,
      trec_eval=(spell("num_q"),), oracle="pytrec_eval", table_macro=False),
    Metric("num_run_queries", "duckrank.run_query_of(q)", "queries the run holds: 1 for each, 0 for a qrels query it "
      "misses (complete)", summary="sum", ir_measures=(spell("NumQ"),),
      aliases=(spell("num_run_queries"),), oracle="ir_measures", source=_SET),
    Metric("num_ret", "q.num_ret", "documents retrieved", summary="sum", trec_eval=(spell("num_ret"),),
      ir_measures=(Spelling("NumRet", rel_variant="num_rel_ret"),), oracle="pytrec_eval", source="sql/20_ranked.sql"),
    Metric("num_rel", "q.num_rel", "relevant documents (R)", summary="sum", trec_eval=(spell("num_rel"),),
      ir_measures=(spell("NumRel"),), oracle="pytrec_eval", source="sql/20_ranked.sql"),
    Metric("num_rel_ret", "duckrank.num_rel_ret_of(q)", "relevant documents retrieved", summary="sum",
      trec_eval=(spell("num_rel_ret"),), ir_measures=(spell("NumRelRet"),), oracle="pytrec_eval", source=_SET),
    Metric("num_nonrel_judged_ret", "duckrank.num_nonrel_judged_ret_of(q)", "judged non-relevant documents retrieved",
      summary="sum", trec_eval=(spell("num_nonrel_judged_ret"),), oracle="pytrec_eval", source=_SET),
    Metric("gm_map", "duckrank.average_precision_of(q, NULL, 'R')", "geometric mean over queries of AP (floored at "
      "1e-5)", summary="gmean", per_query=False, trec_eval=(spell("gm_map"),), oracle="pytrec_eval",
      table_macro=False, source=_RANK),
    Metric("gm_bpref", "duckrank.bpref_of(q)", "geometric mean over queries of bpref (floored at 1e-5)",
      summary="gmean", per_query=False, trec_eval=(spell("gm_bpref"),), oracle="pytrec_eval", table_macro=False,
      source=_RANK),
    # trec_eval 10's other all_trec measures, compared with the binary itself (tests/oracles.py)
    Metric("set_average_precision", "duckrank.set_average_precision_of(q)", "set_map = num_rel_ret^2 / (num_ret R): "
      "set precision times set recall", trec_eval=(spell("set_map"),), ir_measures=(set_spell("SetAP"),),
      aliases=(spell("set_average_precision"),),
      oracle="trec_eval", source=_SET),
    Metric("unjudged_fraction", "duckrank.unjudged_fraction_of(q, {k})", "unj@k = unjudged docs (not in the qrels, or "
      "a negative grade) in the top k / k (k NULL: / retrieved)", ("k",),
      trec_eval=(spell("unj", "k", ("5", "10", "20")),), aliases=(spell("unjudged_fraction"),), oracle="trec_eval",
      source=_SET),
    Metric("utility", "duckrank.utility_of(q, {retrieved_relevant}, {retrieved_nonrelevant}, {missed_relevant}, "
      "{missed_nonrelevant}, {collection_size}, {stand_in})", "utility = p1 relevant retrieved + p2 non-relevant retrieved + "
      "p3 relevant missed + p4 non-relevant missed (1, -1, 0, 0)",
      ("retrieved_relevant", "retrieved_nonrelevant", "missed_relevant", "missed_nonrelevant", "collection_size",
       "stand_in"),
      trec_eval=(spell("utility", "retrieved_relevant,retrieved_nonrelevant,missed_relevant,missed_nonrelevant"),), aliases=(spell("utility"),), oracle="trec_eval", source=_SET),
    Metric("binary_normalized_gain", "duckrank.binary_normalized_gain_of(q)", "binG = (1/R) sum over relevant "
      "retrieved docs of 1 / log2(2 + the non-relevant docs above)", trec_eval=(spell("binG"),),
      aliases=(spell("binary_normalized_gain"),), oracle="trec_eval", source=_RANK),
    Metric("inferred_average_precision", "duckrank.inferred_average_precision_of(q)", "infAP: AP estimated from a "
      "sampled pool (negative grade: pooled, not sampled; not in the qrels: unpooled)",
      trec_eval=(spell("infAP"),), aliases=(spell("inferred_average_precision"), spell("infAP")),
      oracle="trec_eval", source=_RANK),
    Metric("normalized_gain", "duckrank.normalized_gain_of(q)", "G = sum of g(i) / log2(2 + ideal cost(i) - gain so "
      "far(i)), / the ideal's total gain", ("gain", "gain_map"), trec_eval=(spell("G", "gain_map"),),
      aliases=(spell("normalized_gain"),), oracle="trec_eval", source=_GAIN),
    Metric("ndcg_rel", "duckrank.ndcg_rel_of(q)", "nDCG averaged over the positive-gain judged docs, at each one's "
      "rank (full depth if not retrieved)", ("gain", "gain_map"), trec_eval=(spell("ndcg_rel", "gain_map"),),
      aliases=(spell("ndcg_rel"),), oracle="trec_eval", source=_GAIN),
    Metric("r_ndcg", "duckrank.r_ndcg_of(q)", "Rndcg = nDCG averaged at the ranks where the ideal gain changes "
      "(and at full depth)", ("gain", "gain_map"), trec_eval=(spell("Rndcg", "gain_map"),),
      aliases=(spell("r_ndcg"),), oracle="trec_eval", source=_GAIN),
    Metric("relevance_string", "duckrank.relevance_string_of(q, {k}, {stand_in})",
      "the top k docs' judgments as text: the "
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
