"""The peers' vocabularies: how a name a measure answers to (trec_eval's, ir_measures', ranx's,
Microsoft Recommenders', duckrank's own) is declared, and trec_eval's own lists: its families'
default parameters, its measure sets (-m official, set, all_trec) and the order it prints
measures in. duckrank.registry gives each measure its spellings; duckrank.measures parses them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


# trec_eval 10's default parameters of its measure families (m_P.c, m_success.c, m_iprec_at_recall.c,
# m_Rprec_mult.c, ...): what `-m P` or `-m all_trec` prints.
CUTOFFS = ("5", "10", "15", "20", "30", "100", "200", "500", "1000")
RECALL_LEVELS = tuple(f"{level / 10:.2f}" for level in range(11))
RPREC_MULTS = tuple(f"{m / 10:.2f}" for m in range(2, 21, 2))

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
