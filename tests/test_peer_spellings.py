"""ir_measures' spellings with ir_measures' numbers, where a spelling was missing or meant something
else: the Set* measures (SetP, SetR, SetF, SetAP, SetRelP) and NumRet(rel=N), which counts the
retrieved docs of grade >= N (ir_measures' NumRelRet at that level), not every retrieved doc; and
trec_eval names with options (set_P(rel=2)), as the README promises every measure takes rel=; and
the C/W/L measures of ir_measures' cwl_eval provider (BPM, SDCG, INST, INSQ, NERR8-NERR11).

Oracle: ir_measures itself (its pytrec_eval and cwl_eval providers), on generated data with graded and negative
labels, relevant docs never retrieved, a qrels query the run misses (ir_measures scores it 0:
complete=True) and one the qrels lack."""

from __future__ import annotations

import random
import re

import pytest

import duckrank
from duckrank.errors import MeasureError, OptionError

ir_measures = pytest.importorskip("ir_measures")
from ir_measures import Qrel, ScoredDoc  # noqa: E402

SPELLINGS = ["SetP", "SetR", "SetF", "SetAP", "SetRelP", "SetP(rel=2)", "SetR(rel=2)", "SetP(relative=True)",
             "SetP(relative=True,rel=2)", "NumRet(rel=1)", "NumRet(rel=2)", "NumRet(rel=3)", "NumRet",
             "NumRelRet(rel=2)"]


def generate(seed: int) -> tuple[list, list]:
    rng = random.Random(seed)
    qrels, run = [], []
    for q in range(15):
        docs = rng.sample(range(300), 50)
        if q != 13:  # judged, never retrieved
            run += [ScoredDoc(f"q{q}", f"d{d}", rng.randint(0, 9) / 3) for d in docs[:rng.randint(1, 40)]]
        if q != 14:  # retrieved, never judged
            qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs[15:50]]
    return qrels, run


@pytest.fixture(params=[1, 2, 3])
def data(request):
    return generate(request.param)


def test_set_measures_and_num_ret_with_rel_equal_ir_measures(data):
    qrels, run = data
    # ir_measures prints some spellings in its own form (SetRelP as SetP(relative=True), NumRelRet(rel=2)
    # as NumRet(rel=2)): each spelling's value is that of its parsed measure
    own = {spelling: str(ir_measures.parse_measure(spelling)) for spelling in SPELLINGS}
    expected = {str(m): v for m, v in ir_measures.calc_aggregate(
        [ir_measures.parse_measure(s) for s in SPELLINGS], qrels, run).items()}
    got = duckrank.evaluate(qrels, run, SPELLINGS, complete=True)
    assert got == pytest.approx({spelling: expected[own[spelling]] for spelling in SPELLINGS}, abs=1e-12)
    per_query = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, SPELLINGS, complete=True,
                                                            per_query=True).fetchall()}
    rows = {(row.query_id, str(row.measure)): row.value
            for row in ir_measures.iter_calc([ir_measures.parse_measure(s) for s in SPELLINGS], qrels, run)}
    assert per_query == pytest.approx({(q, spelling): value for (q, measure), value in rows.items()
                                       for spelling in SPELLINGS if own[spelling] == measure}, abs=1e-12)


def test_trec_eval_names_take_rel_like_every_measure(data):
    qrels, run = data
    got = duckrank.evaluate(qrels, run, ["set_P(rel=2)", "set_recall(rel=2)", "SetP(rel=2)", "SetR(rel=2)"])
    assert got["set_P(rel=2)"] == got["SetP(rel=2)"] and got["set_recall(rel=2)"] == got["SetR(rel=2)"]
    assert got["set_P(rel=2)"] != duckrank.evaluate(qrels, run, ["set_P"])["set_P"]


# ir_measures' calc_aggregate refuses a cutoff on a set measure, but its providers read one and ignore
# it (its test_ranx.py asks the ranx provider for SetP(rel=2)@5, replayed in tests/test_conformance.py;
# the ranx provider's SetP and SetR are ranx's precision and recall without a cutoff): the number they give
CUT_SETS = ["SetP(rel=2)@5", "SetR(rel=2)@5", "SetP@5", "SetRelP@5", "SetF@5", "SetAP@5"]


def test_set_names_read_a_cutoff_and_ignore_it_as_ir_measures_providers_do(data):
    qrels, run = data  # (a set measure reads no order: the ties do not matter)
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, CUT_SETS, complete=True, per_query=True).fetchall()}
    parsed = [ir_measures.parse_measure(s) for s in CUT_SETS]
    want = {(row.query_id, CUT_SETS[parsed.index(row.measure)]): row.value
            for row in ir_measures.pytrec_eval.iter_calc(parsed, qrels, run)}
    assert got == pytest.approx(want, abs=1e-12) and len(want) == 14 * len(CUT_SETS)  # every qrels query
    with pytest.raises(MeasureError, match="SetP's relative is one of True, False, got 2"):
        duckrank.parse_measure("SetP(relative=2)")


def test_doc_ascending_ties_equal_ir_measures_msmarco_and_judged_providers():
    # ir_measures' msmarco provider (its MRR@10) and judged provider (Judged@k) break a tie by doc_id
    # ascending, where trec_eval (and its pytrec_eval provider) break it by doc_id descending
    rng = random.Random(7)
    qrels, run = [], []
    for q in range(30):
        docs = rng.sample(range(100), 40)
        run += [ScoredDoc(f"q{q}", f"d{d}", float(rng.randint(0, 3))) for d in docs[:25]]  # many ties
        # no negative grade: ir_measures' Judged counts one as a judgment, duckrank as "pooled, unjudged"
        qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([0, 0, 1, 2])) for d in docs[5:30]]
    rr = ir_measures.msmarco.calc_aggregate([ir_measures.RR @ 10], qrels, run)[ir_measures.RR @ 10]
    judged = ir_measures.judged.calc_aggregate([ir_measures.Judged @ 10], qrels, run)[ir_measures.Judged @ 10]
    got = duckrank.evaluate(qrels, run, ["RR@10", "Judged@10"], ties="doc_ascending")
    assert got == pytest.approx({"RR@10": rr, "Judged@10": judged}, abs=1e-12)
    trec = duckrank.evaluate(qrels, run, ["RR@10", "Judged@10"])
    assert trec["RR@10"] != pytest.approx(rr, abs=1e-9)  # the data do tie where the rules differ


def test_iprec_cuts_recall_as_ir_measures_does(data):
    # ir_measures' IPrec@r (pytrec_eval: trec_eval 9) needs floor(r R + 0.9) relevant docs where
    # trec_eval 10's iprec_at_recall needs round(r R)
    qrels, run = data
    levels = [0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1.0]
    measures = [ir_measures.IPrec @ r for r in levels]
    expected = {(row.query_id, f"IPrec@{row.measure.params['recall']}"): row.value
                for row in ir_measures.iter_calc(measures, qrels, run)}
    spellings = [f"IPrec@{r}" for r in levels]
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    # trec_eval's spelling keeps trec_eval 10's cutoff, which IPrec takes as an option; the data hit
    # levels where the two cutoffs differ
    trec = [f"iprec_at_recall.{r:.2f}" for r in levels]
    rounded = [f"IPrec(recall_cutoff=round)@{r}" for r in levels]
    values = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, [*trec, *rounded], complete=True,
                                                         per_query=True).fetchall()}
    queries = {q for q, _ in values}
    assert all(values[(q, a)] == values[(q, b)] for q in queries for a, b in zip(trec, rounded))
    assert any(values[(q, a)] != got[(q, b)] for q in queries for a, b in zip(trec, spellings))


def test_num_q_per_query_equals_ir_measures(data):
    # ir_measures' NumQ is 1 for each query the run holds and 0 for a qrels query it misses (q13),
    # summed; trec_eval's num_q counts every scored query (under -c the missed one too), summary only
    qrels, run = data
    rows = {(row.query_id, "NumQ"): row.value for row in ir_measures.iter_calc([ir_measures.NumQ], qrels, run)}
    assert rows[("q13", "NumQ")] == 0.0
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, ["NumQ", "num_q"], complete=True,
                                                      per_query=True).fetchall()}
    assert got == rows
    summary = duckrank.evaluate(qrels, run, ["NumQ", "num_q"], complete=True)
    assert summary == {"NumQ": ir_measures.calc_aggregate([ir_measures.NumQ], qrels, run)[ir_measures.NumQ],
                       "num_q": 14.0}


@pytest.fixture(params=[4, 5])
def untied(request):
    rng = random.Random(request.param)
    qrels, run = [], []
    for q in range(15):
        docs = rng.sample(range(300), 50)
        if q != 13:  # judged, never retrieved
            scores = rng.sample(range(10_000), 40)  # distinct: Accuracy orders a tie its own way
            run += [ScoredDoc(f"q{q}", f"d{d}", s / 100) for d, s in zip(docs[:rng.randint(5, 40)], scores)]
        if q != 14:  # retrieved, never judged
            qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([-1, 0, 0, 1, 2, 3])) for d in docs[3:50]]
    return qrels, run


@pytest.mark.parametrize("spellings", [
    # Accuracy: the share of (relevant, non-relevant) pairs of retrieved docs in order: AUC, no value
    # for a query without both (nor for one the run misses). Asked for alone: computed beside another
    # provider's measure, ir_measures fills every qrels query Accuracy has no value for with 0.
    ["Accuracy", "Accuracy(rel=2)"],
    # gains={grade:gain}: nDCG of the qrels with those grades rewritten to their gains (pytrec_eval)
    ["nDCG(gains={2:5})@10", "nDCG(gains={0:1,1:3,3:4})", "nDCG(gains={1:0,2:0})@5"],
])
def test_accuracy_and_gains_equal_ir_measures(untied, spellings):
    qrels, run = untied
    measures = [ir_measures.parse_measure(s) for s in spellings]
    own = {str(measure): spelling for spelling, measure in zip(spellings, measures)}
    expected = {(row.query_id, own[str(row.measure)]): row.value for row in ir_measures.iter_calc(measures, qrels, run)}
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    aggregate = ir_measures.calc_aggregate(measures, qrels, run)
    summary = duckrank.evaluate(qrels, run, spellings, complete=True)
    assert summary == pytest.approx({s: aggregate[m] for s, m in zip(spellings, measures)}, abs=1e-12)
    if spellings[0].startswith("nDCG"):  # the gains change the numbers
        plain = duckrank.evaluate(qrels, run, ["nDCG@10", "nDCG", "nDCG@5"], complete=True)
        assert all(summary[gains] != pytest.approx(plain[name], abs=1e-9) for gains, name in zip(spellings, plain))


def test_gains_refuse_what_ir_measures_reads_otherwise():
    with pytest.raises(MeasureError, match="gains= takes grades and gains of at least 0"):
        duckrank.parse_measure("nDCG(gains={1:-1})@10")


def test_judged_only_equals_ir_measures(data):
    # judged_only=True is trec_eval -J for that measure alone (pytrec_eval's judged_docs_only_flag):
    # the unjudged docs leave the ranking before it is cut
    qrels, run = data
    spellings = ["P(judged_only=True)@5", "nDCG(judged_only=True)@10", "AP(judged_only=True)", "RR(judged_only=True)",
                 "Rprec(judged_only=True)", "P(judged_only=False)@5", "P@5"]
    measures = [ir_measures.parse_measure(s) for s in spellings]
    # ir_measures prints P(judged_only=False)@5 as P@5: each spelling takes its parsed measure's rows
    expected = {(row.query_id, spelling): row.value for row in ir_measures.iter_calc(measures, qrels, run)
                for spelling, measure in zip(spellings, measures) if str(measure) == str(row.measure)}
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, spellings, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    summary = duckrank.evaluate(qrels, run, spellings, complete=True)
    assert summary["P(judged_only=True)@5"] != summary["P@5"] == summary["P(judged_only=False)@5"]
    # per measure: under -J (unjudged='skip') judged_only=False still counts the unjudged docs
    skipped = duckrank.evaluate(qrels, run, ["P(judged_only=False)@5", "P@5"], complete=True, unjudged="skip")
    assert skipped == {"P(judged_only=False)@5": summary["P@5"], "P@5": summary["P(judged_only=True)@5"]}
# ir_measures' C/W/L measures (its cwl_eval provider): its spellings, its parameters (T must be a
# float there, min_rel and max_rel integers, max_rel required), each with the value cwl_eval gives.
CWL_SPELLINGS = ["BPM(T=1.0,max_rel=3)@10", "BPM(T=2.5,min_rel=1,max_rel=3)@5", "BPM(max_rel=1)@20",
                 "SDCG(max_rel=3)@10", "SDCG(min_rel=1,max_rel=2)@3",
                 "INST(max_rel=3)", "INST(T=2.0,max_rel=3)", "INST(T=0.4,max_rel=2)",
                 "INSQ(max_rel=3)", "INSQ(T=3.0,min_rel=1,max_rel=3)",
                 "NERR8(max_rel=3)@10", "NERR8(max_rel=1)@1", "NERR9(max_rel=3)@10", "NERR9(min_rel=1,max_rel=3)@20",
                 "NERR10(max_rel=3)", "NERR10(p=0.5,max_rel=3)", "NERR11(max_rel=3)", "NERR11(T=2.0,max_rel=2)"]


@pytest.fixture(params=[4, 5])
def cwl_data(request):
    """Tie-free runs: ir_measures keeps the run's order within a tie, duckrank's default breaks it by
    doc_id. Graded and negative labels, relevant docs never retrieved, a query with no relevant doc
    (q0), one the run misses (q13) and one the qrels miss (q14), runs past cwl_eval's depth of 1000
    (q1, q2) and of one doc (q3)."""
    rng = random.Random(request.param)
    qrels, run = [], []
    for q in range(15):
        docs = rng.sample(range(3000), 1500)
        depth = {1: 1200, 2: 1001, 3: 1}.get(q, rng.randint(2, 60))
        if q != 13:
            run += [ScoredDoc(f"q{q}", f"d{d}", score / 7)
                    for d, score in zip(docs[:depth], rng.sample(range(10 ** 6), depth))]
        if q != 14:
            grades = [-1, 0] if q == 0 else [-1, 0, 0, 1, 2, 3]
            judged = docs[1000:1100] if q in (1, 2) else docs[:80]
            qrels += [Qrel(f"q{q}", f"d{d}", rng.choice(grades)) for d in judged + docs[1400:1410]]
    return qrels, run


def cwl_expected(qrels, run, spellings):
    measures = {spelling: ir_measures.parse_measure(spelling) for spelling in spellings}
    rows = list(ir_measures.cwl_eval.iter_calc(list(measures.values()), qrels, run))
    return {(row.query_id, spelling): row.value for row in rows
            for spelling, measure in measures.items() if row.measure == measure}


def test_cwl_measures_equal_ir_measures_cwl_eval_per_query(cwl_data):
    qrels, run = cwl_data
    expected = cwl_expected(qrels, run, CWL_SPELLINGS)
    assert {q for q, _ in expected} == {f"q{q}" for q in range(14)}
    assert any(value > 0 for value in expected.values())
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, CWL_SPELLINGS, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    means = duckrank.evaluate(qrels, run, CWL_SPELLINGS, complete=True)
    aggregates = {str(m): v for m, v in ir_measures.cwl_eval.calc_aggregate(
        [ir_measures.parse_measure(s) for s in CWL_SPELLINGS], qrels, run).items()}
    assert means == pytest.approx({s: aggregates[str(ir_measures.parse_measure(s))] for s in CWL_SPELLINGS},
                                  abs=1e-12)


def test_cwl_measures_through_the_cli(cwl_data, tmp_path):
    import json

    from helpers import run as cli

    qrels, run = cwl_data
    (tmp_path / "qrels.txt").write_text("".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels))
    (tmp_path / "run.txt").write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score!r} x\n" for r in run))
    measures = [argument for spelling in CWL_SPELLINGS for argument in ("-m", spelling)]
    result = cli("eval", tmp_path / "qrels.txt", tmp_path / "run.txt", *measures, "-c", "-q", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    got = {(r["query_id"], r["metric"]): r["value"] for r in map(json.loads, result.stdout.splitlines())
           if r["query_id"] != "all"}
    assert got == pytest.approx(cwl_expected(qrels, run, CWL_SPELLINGS), abs=1e-12)


def test_cwl_unjudged_docs_gain_nothing_whatever_min_rel(cwl_data):
    # with min_rel below 0 a judged grade 0 gains, an unjudged doc never: also where the ranking
    # holds every retrieved doc (AUC asks for them) and not only the judged ones
    qrels, run = cwl_data
    spellings = ["INST(min_rel=-1,max_rel=3)", "BPM(min_rel=-2,max_rel=2)@10"]
    measures = [ir_measures.parse_measure("INST(max_rel=3)")(min_rel=-1),
                ir_measures.parse_measure("BPM(max_rel=2)@10")(min_rel=-2)]
    expected = {(row.query_id, spellings[measures.index(row.measure)]): row.value
                for row in ir_measures.cwl_eval.iter_calc(measures, qrels, run)}
    for together in ([], ["auc"]):
        got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, [*spellings, *together], complete=True,
                                                          per_query=True).fetchall() if m in spellings}
        assert got == pytest.approx(expected, abs=1e-12)


def test_cwl_measures_score_queries_as_duckrank_chooses_them(cwl_data):
    # without complete, the queries in both run and qrels (trec_eval's choice); the qrels query the
    # run misses is left out, not scored 0
    qrels, run = cwl_data
    got = {q for q, _, _ in duckrank.evaluate(qrels, run, ["INST(max_rel=3)"], per_query=True).fetchall()}
    assert got == {f"q{q}" for q in range(13)}


@pytest.mark.parametrize(("spelling", "metric", "options"), [
    ("BPM@10", "bpm", {"k": 10, "t": 1.0, "min_rel": 0, "max_rel": 1}),
    ("bpm(T=2,max_rel=3)@5", "bpm", {"k": 5, "t": 2, "min_rel": 0, "max_rel": 3}),
    ("BPM(t=0.5,min_rel=1,max_rel=4)", "bpm", {"k": None, "t": 0.5, "min_rel": 1, "max_rel": 4}),
    ("SDCG(max_rel=3)@10", "sdcg", {"k": 10, "min_rel": 0, "max_rel": 3}),
    ("INST(T=2.0,max_rel=3)", "inst", {"t": 2.0, "min_rel": 0, "max_rel": 3}),
    ("INSQ", "insq", {"t": 1.0, "min_rel": 0, "max_rel": 1}),
    ("NERR8(max_rel=2)@3", "nerr8", {"k": 3, "min_rel": 0, "max_rel": 2}),
    ("nerr9@20", "nerr9", {"k": 20, "min_rel": 0, "max_rel": 1}),
    ("NERR10", "nerr10", {"phi": 0.9, "min_rel": 0, "max_rel": 1}),
    ("NERR10(p=0.5)", "nerr10", {"phi": 0.5, "min_rel": 0, "max_rel": 1}),
    ("NERR10(phi=0.5)", "nerr10", {"phi": 0.5, "min_rel": 0, "max_rel": 1}),
    ("NERR11(T=3.0)", "nerr11", {"t": 3.0, "min_rel": 0, "max_rel": 1}),
])
def test_cwl_spellings_parse_to_their_options(spelling, metric, options):
    from duckrank.measures import parse_measure

    parsed = parse_measure(spelling)
    assert (parsed.metric.name, parsed.params) == (metric, options)


@pytest.mark.parametrize(("spelling", "message"), [
    ("INST(max_rel=0)", "max_rel must be a finite number above min_rel; got '0'"),
    ("BPM(min_rel=3,max_rel=2)@10", "max_rel must be a finite number above min_rel; got '2'"),
    ("INSQ(T=0)", "t must be positive; got '0'"),
    ("NERR10(p=1.5)", "phi must be above 0 and at most 1; got '1.5'"),
    ("INST@10", "INST takes no @cutoff"),
    ("NERR10(k=3)", "nerr10 has no option 'k'"),
])
def test_cwl_options_are_checked(spelling, message):
    with pytest.raises((MeasureError, OptionError), match=re.escape(message)):
        duckrank.evaluate([Qrel("q", "d", 1)], [ScoredDoc("q", "d", 1.0)], [spelling])


# ir_measures' Compat (its compat provider): Clarke et al.'s compatibility, RBO against the ideal ranking.
COMPAT_SPELLINGS = ["Compat", "Compat(p=0.8)", "Compat(normalize=False)", "Compat(p=0.5,normalize=False)"]


def compat_expected(qrels, run, spellings):
    measures = {spelling: ir_measures.parse_measure(spelling) for spelling in spellings}
    rows = list(ir_measures.compat.iter_calc(list(measures.values()), qrels, run))
    return {(row.query_id, spelling): row.value for row in rows
            for spelling, measure in measures.items() if row.measure == measure}


def test_compat_equals_ir_measures_per_query(cwl_data, tmp_path):
    # the scores are positive: ir_measures orders a grade of its ideal ranking by run score, an
    # unretrieved doc counting 0
    import json

    from helpers import run as cli

    qrels, run = cwl_data
    expected = compat_expected(qrels, run, COMPAT_SPELLINGS)
    assert {q for q, _ in expected} == {f"q{q}" for q in range(14)}
    assert len({round(v, 9) for v in expected.values()}) > 20
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, COMPAT_SPELLINGS, complete=True,
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)
    (tmp_path / "qrels.txt").write_text("".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels))
    (tmp_path / "run.txt").write_text("".join(f"{r.query_id} Q0 {r.doc_id} 0 {r.score!r} x\n" for r in run))
    measures = [argument for spelling in COMPAT_SPELLINGS for argument in ("-m", spelling)]
    result = cli("eval", tmp_path / "qrels.txt", tmp_path / "run.txt", *measures, "-c", "-q", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    assert {(r["query_id"], r["metric"]): r["value"] for r in map(json.loads, result.stdout.splitlines())
            if r["query_id"] != "all"} == pytest.approx(expected, abs=1e-12)


def test_compat_ties_as_ir_measures_with_doc_ascending():
    # ir_measures ranks a tie by doc_id ascending: duckrank's ties='doc_ascending'. Its ideal ranking
    # orders a grade's docs by run score, then in the qrels' order: here doc_id ascending too, as
    # duckrank's ideal orders them (by rank)
    rng = random.Random(9)
    qrels, run = [], []
    for q in range(20):
        docs = rng.sample(range(60), 30)
        run += [ScoredDoc(f"q{q}", f"d{d}", float(rng.randint(1, 4))) for d in docs[:20]]
        qrels += [Qrel(f"q{q}", f"d{d}", rng.choice([0, 1, 2])) for d in sorted(docs[10:30], key=str)]
    expected = compat_expected(qrels, run, ["Compat"])
    got = {(q, m): v for q, m, v in duckrank.evaluate(qrels, run, ["Compat"], ties="doc_ascending",
                                                      per_query=True).fetchall()}
    assert got == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("spelling", "options"), [
    ("Compat", {"persistence": 0.95, "normalize": True}),
    ("compat(p=0.8)", {"persistence": 0.8, "normalize": True}),
    ("Compat(normalize=False)", {"persistence": 0.95, "normalize": False}),
    ("Compat(persistence=0.5,normalize=false)", {"persistence": 0.5, "normalize": False}),
])
def test_compat_spellings_parse_to_their_options(spelling, options):
    from duckrank.measures import parse_measure

    parsed = parse_measure(spelling)
    assert (parsed.metric.name, parsed.params) == ("compat", options)


def test_compat_options_are_checked():
    with pytest.raises(OptionError, match=re.escape("persistence must be above 0 and at most 1; got '0'")):
        duckrank.evaluate([Qrel("q", "d", 1)], [ScoredDoc("q", "d", 1.0)], ["Compat(p=0)"])
    with pytest.raises(MeasureError, match="Compat takes no @cutoff"):
        duckrank.evaluate([Qrel("q", "d", 1)], [ScoredDoc("q", "d", 1.0)], ["Compat@10"])
