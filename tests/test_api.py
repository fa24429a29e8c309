"""duckrank.evaluate / compute: every input kind, every spelling family, and every error path."""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import pytrec_eval

import duckrank
from duckrank.measures import ALL_TREC

DATA = Path(__file__).resolve().parent.parent / "data"
QRELS, RUN, LOG = DATA / "qrels.parquet", DATA / "run.parquet", DATA / "log.parquet"


def _trec_dicts():
    qrels, run = pq.read_table(QRELS).to_pylist(), pq.read_table(RUN).to_pylist()
    qrels_dict, run_dict = {}, {}
    for row in qrels:
        qrels_dict.setdefault(row["query_id"], {})[row["doc_id"]] = int(row["relevance"])
    for row in run:
        run_dict.setdefault(row["query_id"], {})[row["doc_id"]] = float(row["score"])
    return qrels_dict, run_dict


# trec_eval measure (as pytrec_eval names it) -> duckrank spelling, through the Python layer.
PYTREC = {"map": "map", "P_5": "P.5", "P_10": "P@10", "recall_100": "recall@100", "ndcg": "ndcg",
          "ndcg_cut_10": "ndcg_cut.10", "recip_rank": "mrr", "Rprec": "Rprec", "bpref": "bpref",
          "success_10": "success.10", "set_F": "set_F", "map_cut_20": "map_cut.20", "num_rel_ret": "num_rel_ret"}
# iprec_at_recall is left out here: pytrec_eval-terrier bundles an older trec_eval whose recall
# cutoff is floor(r*R + 0.9); trec_eval 10 rounds r*R, as the conformance tests show.


def test_evaluate_matches_pytrec_eval_on_the_sample_data():
    qrels, run = _trec_dicts()
    names = {"map", "P", "recall", "ndcg", "ndcg_cut", "recip_rank", "Rprec", "bpref", "success", "set_F",
             "map_cut", "num_rel_ret"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, names).evaluate(run)
    ours = duckrank.evaluate(QRELS, RUN, list(PYTREC.values()))
    for trec_name, spelling in PYTREC.items():
        values = [scores[trec_name] for scores in per_query.values()]
        expected = sum(values) if trec_name.startswith("num_") else sum(values) / len(values)
        assert ours[spelling] == pytest.approx(expected, abs=1e-9), spelling


def test_per_query_matches_pytrec_eval_and_converts():
    qrels, run = _trec_dicts()
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut"}).evaluate(run)
    relation = duckrank.evaluate(QRELS, RUN, ["ndcg@10"], per_query=True)
    table = relation.arrow()
    table = table.read_all() if hasattr(table, "read_all") else table
    assert table.column_names == ["query_id", "measure", "value"]
    for row in table.to_pylist():
        assert row["value"] == pytest.approx(expected[row["query_id"]]["ndcg_cut_10"], abs=1e-9)
    frame = duckrank.evaluate(QRELS, RUN, ["ndcg@10"], per_query=True).df()
    assert len(frame) == len(expected)
    assert len(duckrank.evaluate(QRELS, RUN, ["ndcg@10"], per_query=True).pl()) == len(expected)


@pytest.mark.parametrize("spellings", [
    ["P.5", "P_5", "P@5", "precision@5", "p@5"],
    ["map", "AP", "MAP", "average_precision"],
    ["ndcg_cut.10", "nDCG@10", "ndcg@10", "NDCG@10"],
    ["recip_rank", "RR", "mrr", "MRR"],
    ["success.10", "Success@10", "hit_rate@10", "Hit@10"],
    ["Rprec", "R-prec", "r-precision", "Rprec_mult.1.0"],
    ["set_F", "F", "f1", "F(beta=1)"],
    ["nDCG(gain=exp)@10", "ndcg_burges@10"],
    ["rbp", "RBP(p=0.9)", "rbp.p=0.9"],  # trec_eval's rbp has p = 0.9
    ["RBP", "RBP(p=0.8)"],  # ir_measures' RBP has p = 0.8
    # ranx's rbp.9 (= rbp@9) is p = 0.9, a relevant doc weighing its grade unscaled; RBP@9 is a cutoff
    ["rbp.9", "rbp@9", "RBP(p=0.9,scaled=false)"],
    ["RBP@9", "RBP(p=0.8)@9", "Rbp@9"],
    ["P.5", "p.5", "P@5", "p@5"],
    ["relative_P.10", "R(cap=true)@10"],
])
def test_spelling_families_agree(spellings):
    values = duckrank.evaluate(QRELS, RUN, spellings)
    first = values[spellings[0]]
    assert all(values[s] == pytest.approx(first, abs=1e-12) for s in spellings), values


@pytest.mark.parametrize("spelling, metric, options, printed", [
    ("rbp.p=0.95", "rbp", {"p": 0.95}, "rbp_p=0.95"),  # trec_eval's name=value parameters
    ("rbp_resid.p=0.5", "rbp_residual", {"p": 0.5}, "rbp_resid_p=0.5"),
    ("set_F.0.25", "f_measure", {"recall_weight": 0.25}, "set_F_0.25"),  # trec_eval's x is beta squared
    ("utility.2,-1,0.5,0", "utility", {"retrieved_relevant": 2.0, "retrieved_nonrelevant": -1.0,
                                       "missed_relevant": 0.5, "missed_nonrelevant": 0.0}, "utility_2,-1,0.5,0"),
    ("G.1=3,2=9", "normalized_gain", {"gain_map": {1.0: 3.0, 2.0: 9.0}}, "G_1=3,2=9"),
    ("Rprec_mult.0.5", "r_precision", {"mult": 0.5}, "Rprec_mult_0.50"),
    ("11pt_avg..2,0.5,8e-1", "eleven_point_average", {"recall_levels": (0.2, 0.5, 0.8)}, "11pt_avg_.2,0.5,8e-1"),
    ("relstring.3", "relevance_string", {"k": 3, "stand_in": True}, "relstring_3"),  # stand_in: issue 26
])
def test_trec_eval_parameter_syntaxes(spelling, metric, options, printed):
    """Each parameter syntax trec_eval 10 accepts means what it means there, printed as it prints it."""
    measure = duckrank.parse_measure(spelling)
    assert (measure.metric.name, measure.printed_name) == (metric, printed)
    assert {name: measure.params[name] for name in options} == options


def test_a_positional_parameter_list_is_one_measure():
    from duckrank.measures import expand_measures, trec_eval_measures
    assert expand_measures(["utility.1,1,0,0", "P.5,10"]) == ["utility.1,1,0,0", "P.5", "P.10"]
    assert trec_eval_measures(["P.10,5", "utility.1,1,0,0"], trec_order=True) == ["P.5", "P.10", "utility.1,1,0,0"]
    with pytest.raises(duckrank.MeasureError, match="takes 4 numbers"):
        duckrank.parse_measure("utility.1,1")
    assert expand_measures(["11pt_avg.0.2,0.5,0.8"]) == ["11pt_avg.0.2,0.5,0.8"]


def test_11pt_avg_levels_out_of_order_are_refused_with_the_ordered_spelling():
    """trec_eval's m_11pt_avg.c walks the levels from the last: out of order, it averages other
    precisions than the levels name (tests/test_trec_eval_binary.py compares ordered lists)."""
    with pytest.raises(duckrank.MeasureError, match=r"in ascending order, e\.g\. 11pt_avg\.0\.5,1:"):
        duckrank.parse_measure("11pt_avg.1,0.5")


def test_all_trec_measures_parse_and_evaluate():
    values = duckrank.evaluate(QRELS, RUN, "all_trec")
    # relstring is text, per query only: a summary leaves it out, as trec_eval without -q does
    assert set(values) == set(ALL_TREC) - {"relstring"}
    assert values["num_q"] == 50
    assert all(math.isfinite(v) for v in values.values())


def _sample_frames():
    return pq.read_table(QRELS), pq.read_table(RUN)


@pytest.mark.parametrize("kind", ["arrow", "pandas", "polars", "relation", "table_name", "csv", "tsv", "jsonl",
                                  "trec", "glob", "hive"])
def test_every_input_kind_gives_the_same_numbers(kind, tmp_path):
    expected = duckrank.evaluate(QRELS, RUN, ["map", "ndcg@10"])
    qrels, run = _sample_frames()
    options = {}
    if kind == "arrow":
        inputs = (qrels, run)
    elif kind == "pandas":
        inputs = (qrels.to_pandas(), run.to_pandas())
    elif kind == "polars":
        inputs = (pl.from_arrow(qrels), pl.from_arrow(run))
    elif kind == "relation":
        con = duckdb.connect()
        inputs = (con.read_parquet(str(QRELS)), con.read_parquet(str(RUN)))
    elif kind == "table_name":
        con = duckrank.connect()
        con.execute(f"CREATE TABLE judged AS SELECT * FROM read_parquet('{QRELS}')").fetchall()
        con.execute(f"CREATE TABLE ranked_docs AS SELECT * FROM read_parquet('{RUN}')").fetchall()
        inputs, options = ("judged", "ranked_docs"), {"con": con}
    elif kind in ("csv", "tsv", "jsonl"):
        suffix = {"csv": "csv", "tsv": "tsv", "jsonl": "jsonl"}[kind]
        inputs = (tmp_path / f"qrels.{suffix}", tmp_path / f"run.{suffix}")
        writers = {"csv": lambda t, p: t.to_pandas().to_csv(p, index=False),
                   "tsv": lambda t, p: t.to_pandas().to_csv(p, index=False, sep="\t"),
                   "jsonl": lambda t, p: t.to_pandas().to_json(p, orient="records", lines=True)}
        writers[kind](qrels, inputs[0])
        writers[kind](run, inputs[1])
        inputs = tuple(str(p) for p in inputs)
    elif kind == "trec":
        qrels_path, run_path = tmp_path / "qrels.txt", tmp_path / "run.txt"
        qrels_path.write_text("".join(f"{r['query_id']} 0 {r['doc_id']} {r['relevance']}\n" for r in qrels.to_pylist()))
        run_path.write_text("".join(f"{r['query_id']}\tQ0\t{r['doc_id']}\t{i}\t{r['score']}\ttag\n"
                                    for i, r in enumerate(run.to_pylist())))
        inputs = (str(qrels_path), str(run_path))
    elif kind == "glob":
        for half, part in enumerate((run.slice(0, 2500), run.slice(2500))):
            pq.write_table(part, tmp_path / f"run-{half}.parquet")
        inputs = (str(QRELS), str(tmp_path / "run-*.parquet"))
    else:  # a hive-partitioned folder
        pq.write_to_dataset(run.append_column("bucket", pa.array([i % 3 for i in range(run.num_rows)])),
                            tmp_path / "runs", partition_cols=["bucket"])
        inputs = (str(QRELS), str(tmp_path / "runs"))
    values = duckrank.evaluate(*inputs, ["map", "ndcg@10"], **options)
    assert values == pytest.approx(expected, abs=1e-12)


def test_column_mapping(tmp_path):
    qrels, run = _sample_frames()
    qrels = qrels.rename_columns(["topic", "document", "grade"])
    run = run.rename_columns(["topic", "document", "pred"])
    values = duckrank.evaluate(qrels, run, ["map"], query_col="topic", doc_col="document", score_col="pred",
                               relevance_col="grade")
    assert values == pytest.approx(duckrank.evaluate(QRELS, RUN, ["map"]), abs=1e-12)


def test_log_input_with_event_grades():
    log = pq.read_table(LOG).to_pandas()
    grades = {"purchase": 3, "click": 1}
    values = duckrank.evaluate(log=LOG, label="event", label_map=grades, query_col="user_id", doc_col="item_id",
                               measures=["nDCG@10", "GAUC", "AUC_global"])
    # The same log as an explicit run and qrels gives the same nDCG.
    qrels = log.assign(relevance=log["event"].map(grades).fillna(0))[["user_id", "item_id", "relevance"]]
    run = log[["user_id", "item_id", "score"]]
    split = duckrank.evaluate(qrels, run, ["nDCG@10"], query_col="user_id", doc_col="item_id")
    assert values["nDCG@10"] == pytest.approx(split["nDCG@10"], abs=1e-12)
    from sklearn.metrics import roc_auc_score
    assert values["AUC_global"] == pytest.approx(roc_auc_score(log["event"] != "view", log["score"]), abs=1e-9)


def test_several_runs_in_one_pass():
    qrels, run = _sample_frames()
    worse = run.set_column(2, "score", pa.array([-s for s in run.column("score").to_pylist()]))
    both = duckrank.evaluate(QRELS, [run, worse], ["map", "P@5"], run_names=["good", "reversed"])
    assert both["good"] == pytest.approx(duckrank.evaluate(QRELS, run, ["map", "P@5"]), abs=1e-12)
    assert both["reversed"] == pytest.approx(duckrank.evaluate(QRELS, worse, ["map", "P@5"]), abs=1e-12)
    tagged = pa.concat_tables([run.append_column("run_id", pa.array(["good"] * run.num_rows)),
                               worse.append_column("run_id", pa.array(["reversed"] * run.num_rows))])
    from_column = duckrank.evaluate(QRELS, tagged, ["map", "P@5"])
    for name in ("good", "reversed"):
        assert from_column[name] == pytest.approx(both[name], abs=1e-12)
    rows = duckrank.evaluate(QRELS, tagged, ["map"], per_query=True).fetchall()
    assert {row[0] for row in rows} == {"good", "reversed"}


def test_calls_leave_no_view_behind_in_duckranks_shared_database():
    """Each call's views are its cursor's (temporary): a notebook loop of calls does not grow the
    shared database's catalog (relation.create_view's persistent views did, about 20 KB a call)."""
    from duckrank._library import shared_cursor

    qrels, run = _sample_frames()
    as_lists = pa.table({"query_id": ["q001"], "doc_id": [["d1", "d2"]]})
    big_scores = run.set_column(2, "score", pa.array(range(run.num_rows), pa.int64()))
    for current in (run, as_lists, big_scores, RUN):
        duckrank.evaluate(qrels, current, ["map"])
        duckrank.evaluate(qrels, current, ["map"], per_query=True).fetchall()
    cursor = shared_cursor()
    left = cursor.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary "
                          "AND database_name = current_database()").fetchall()
    cursor.close()
    assert left == []


def test_frames_evaluate_on_a_callers_database_file(tmp_path):
    """con= a database file, inputs in memory: the input views are the cursor's (temporary), so the
    file never has to store a view of a Python object (a persistent view of one was refused by
    DuckDB, and the call failed), and nothing is left in it."""
    qrels, run = pq.read_table(QRELS).to_pandas(), pq.read_table(RUN).to_pandas()
    con = duckdb.connect(str(tmp_path / "mine.duckdb"))
    assert duckrank.evaluate(qrels, run, ["map", "ndcg@10"], con=con) == duckrank.evaluate(qrels, run, ["map", "ndcg@10"])
    assert con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall() == []
    con.close()


def test_connect_loads_the_macros_for_hand_written_sql():
    con = duckrank.connect()
    value = con.execute(f"SELECT avg(value) FROM duckrank.\"ndcg\"('{QRELS}', '{RUN}', k := 10)").fetchall()[0][0]
    assert value == pytest.approx(duckrank.evaluate(QRELS, RUN, ["ndcg@10"])["ndcg@10"], abs=1e-12)


# ---- errors: each names the input, the column or value, and what to do ---------------------------


def _raises(error_type, *fragments, **call):
    with pytest.raises(error_type) as caught:
        duckrank.evaluate(**call)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)
    return caught.value


def test_missing_file():
    _raises(duckrank.InputError, "run file 'nowhere.parquet' not found", qrels=QRELS, run="nowhere.parquet")


def test_corrupt_file(tmp_path):
    bad = tmp_path / "run.parquet"
    bad.write_bytes(b"this is not parquet")
    _raises(duckrank.InputError, "cannot read run file", str(bad), qrels=QRELS, run=str(bad))


def test_unrecognisable_text_file(tmp_path):
    odd = tmp_path / "run.txt"
    odd.write_text("just some words\n")
    _raises(duckrank.InputError, "cannot tell the format", "--run-format", qrels=QRELS, run=str(odd))


def test_bad_trec_line_is_named(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("1 Q0 d1 1 0.5 tag\n1 Q0 d2 2 notanumber tag\n")
    _raises(duckrank.InputError, "notanumber", qrels=QRELS, run=str(run))


def test_missing_column_lists_what_exists():
    run = pa.table({"qid": ["q001"], "doc_id": ["d"], "score": [1.0]})
    _raises(duckrank.InputError, "no column 'query_id'", "'qid'", "query_col=", qrels=QRELS, run=run)


def test_wrongly_typed_score():
    run = pa.table({"query_id": ["q001"], "doc_id": ["d"], "score": ["high"]})
    _raises(duckrank.InputError, "column 'score' holds VARCHAR", qrels=QRELS, run=run)


def test_id_types_must_agree():
    run = pa.table({"query_id": [1], "doc_id": ["d"], "score": [1.0]})
    _raises(duckrank.InputError, "query_id of type", "make both strings or both integers", qrels=QRELS, run=run)


def test_null_ids():
    run = pa.table({"query_id": ["q001", None], "doc_id": ["d1", "d2"], "score": [1.0, 0.5]})
    _raises(duckrank.InputError, "NULL id", "run (Table)", qrels=QRELS, run=run)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), None])
def test_non_finite_scores(bad):
    run = pa.table({"query_id": ["q001", "q001"], "doc_id": ["d1", "d2"], "score": [1.0, bad]})
    _raises(duckrank.InputError, "NULL, NaN or infinite score", "'d2'", qrels=QRELS, run=run)


def test_duplicate_documents_and_the_option_that_resolves_them(tmp_path):
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.table({"query_id": ["q001", "q001"], "doc_id": ["d1", "d1"], "score": [1.0, 0.5]}), path)
    _raises(duckrank.InputError, f"run '{path}'", "2 rows for query_id 'q001', doc_id 'd1'", "duplicates",
            qrels=QRELS, run=str(path))
    assert duckrank.evaluate(QRELS, str(path), ["P@1"], duplicates="max")["P@1"] == 0.0


def test_conflicting_judgments():
    qrels = pa.table({"query_id": ["q", "q"], "doc_id": ["d", "d"], "relevance": [0, 2]})
    run = pa.table({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    _raises(duckrank.InputError, "twice with different grades", qrels=qrels, run=run)


def test_an_empty_run_scores_nothing_or_every_qrels_query_0_with_complete():
    run = pa.table({"query_id": pa.array([], pa.string()), "doc_id": pa.array([], pa.string()),
                    "score": pa.array([], pa.float64())})
    alone = duckrank.evaluate(QRELS, run, ["map", "num_q", "num_ret"])
    assert math.isnan(alone["map"]) and alone["num_q"] == 0.0 and alone["num_ret"] == 0.0
    assert duckrank.evaluate(QRELS, run, ["map"], per_query=True).fetchall() == []
    queries = duckdb.sql(f"SELECT count(DISTINCT query_id) FROM '{QRELS}'").fetchall()[0][0]
    assert duckrank.evaluate(QRELS, run, ["map", "num_q"], complete=True) == {"map": 0.0, "num_q": float(queries)}


def test_no_common_queries():
    run = pa.table({"query_id": ["x1", "x2"], "doc_id": ["d", "d"], "score": [1.0, 0.5]})
    _raises(duckrank.InputError, "no query_id in common", "'x1'", "'q001'", qrels=QRELS, run=run)


def test_unknown_measure_suggests_close_names():
    error = _raises(duckrank.MeasureError, "unknown measure 'nDGC@10'", "'ndcg'", qrels=QRELS, run=RUN,
                    measures=["nDGC@10"])
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("spelling, fragment", [
    ("P@0", "positive integer"), ("P@x", "not a number"), ("Bpref@10", "takes no @cutoff"),
    ("AP(denom=min)", "no option 'denom'"), ("nDCG(gain)@10", "name=value"), ("P.5.5.5", "not a number"),
])
def test_malformed_measures(spelling, fragment):
    _raises(duckrank.MeasureError, fragment, qrels=QRELS, run=RUN, measures=[spelling])


def test_every_bad_option_is_reported_at_once():
    error = _raises(duckrank.OptionError, "ties must be one of", "empty must be one of", "unjudged must be one of",
                    "in measure 'AP(denominator=foo)'", qrels=QRELS, run=RUN, measures=["AP(denominator=foo)"],
                    ties="random", empty="never", unjudged="guess")
    assert isinstance(error, ValueError)


def test_non_numeric_convention():
    _raises(duckrank.OptionError, "rel_level must be a number", qrels=QRELS, run=RUN, rel_level="two")


def test_unsupported_object():
    _raises(duckrank.InputError, "cannot use a", "pyarrow Table", qrels=QRELS, run=object())


def test_sql_library_ships_with_the_package():
    from duckrank._library import library_files
    assert [p.name for p in library_files()][0] == "00_schema.sql"
    assert "CREATE SCHEMA IF NOT EXISTS duckrank" in duckrank.library_sql()


def test_shell_entry_point_reads_every_numbered_file():
    from duckrank._library import library_files, sql_dir
    reads = [line.split()[-1] for line in (sql_dir() / "duckrank.sql").read_text().splitlines()
             if line.startswith(".read")]
    assert [Path(r).name for r in reads] == [p.name for p in library_files()]


def test_evaluate_on_the_readme_sample():
    values = duckrank.evaluate(str(QRELS), str(RUN), ["ndcg@10", "map", "mrr"])
    assert set(values) == {"ndcg@10", "map", "mrr"} and all(0 < v < 1 for v in values.values())


def _with_country():
    run = pq.read_table(RUN)
    countries = ["us" if int(q[1:]) % 2 else "de" for q in run.column("query_id").to_pylist()]
    return run.append_column("country", pa.array(countries))


def test_segments_score_each_value_in_one_pass():
    run = _with_country()
    by_country = duckrank.evaluate(QRELS, run, ["map", "P@5", "GAUC"], by="country")
    assert set(by_country) == {"de", "us"}
    for country in ("de", "us"):
        part = run.filter(pa.compute.equal(run.column("country"), country))
        alone = duckrank.evaluate(QRELS, part.drop_columns(["country"]), ["map", "P@5", "GAUC"])
        assert by_country[country] == pytest.approx(alone, abs=1e-12)
    rows = duckrank.evaluate(QRELS, run, ["map"], by="country", per_query=True).fetchall()
    assert len(rows) == 50 and {row[0] for row in rows} == {"de", "us"}


def test_segments_with_several_runs():
    run = _with_country()
    both = duckrank.evaluate(QRELS, [run, run], ["map"], by=["country"], run_names=["a", "b"])
    assert set(both["a"]) == set(both["b"]) == {"de", "us"}
    for country in ("de", "us"):
        assert both["a"][country] == pytest.approx(both["b"][country], abs=1e-12)


@pytest.mark.parametrize("from_table", [True, False])
def test_segments_with_complete_keep_the_queries_a_run_lacks(from_table):
    """complete=True scores a qrels query the run lacks 0 in its segment: the segments table's (or
    the one another run gives it), NULL where none does; pytrec_eval's values, averaged per segment."""
    qrels, run = _trec_dicts()
    queries = sorted(qrels)
    lacked = set(queries[::4])  # a quarter of the queries: run "a" lacks them
    country = {q: ("us" if i % 3 else "de") for i, q in enumerate(queries) if i % 7}  # i % 7 == 0: none
    rows = pq.read_table(RUN).to_pylist()
    a = [r for r in rows if r["query_id"] not in lacked]
    if from_table:
        segments = pa.Table.from_pylist([{"query_id": q, "country": c} for q, c in country.items()])
        kept = [r for r in rows if r["query_id"] in country]  # run "b": the queries with a country
        got = duckrank.evaluate(QRELS, [pa.Table.from_pylist(a), pa.Table.from_pylist(kept)], ["map", "P@5"],
                                segments=segments, by="country", complete=True, run_names=["a", "b"])
    else:  # the segment is a run column; "b" gives the queries "a" lacks their country
        def with_country(part):
            return pa.Table.from_pylist([{**r, "country": country.get(r["query_id"])} for r in part])
        kept = [r for r in rows if r["query_id"] in country]
        got = duckrank.evaluate(QRELS, [with_country(a), with_country(kept)], ["map", "P@5"], by="country",
                                complete=True, run_names=["a", "b"])
    for name, part in (("a", a), ("b", kept)):
        retrieved = {}
        for r in part:
            retrieved.setdefault(r["query_id"], {})[r["doc_id"]] = float(r["score"])
        scores = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P"}).evaluate(retrieved)
        groups = {}
        for q in queries:  # every qrels query, 0 where the run lacks it
            groups.setdefault(country.get(q), []).append(scores.get(q, {"map": 0.0, "P_5": 0.0}))
        assert set(got[name]) == set(groups), name
        for segment, values in groups.items():
            assert got[name][segment]["map"] == pytest.approx(sum(v["map"] for v in values) / len(values), abs=1e-12)
            assert got[name][segment]["P@5"] == pytest.approx(sum(v["P_5"] for v in values) / len(values), abs=1e-12)


def test_segment_column_must_exist():
    _raises(duckrank.InputError, "no column 'region' to segment by", "'country'", qrels=QRELS, run=_with_country(),
            by="region")


@pytest.mark.parametrize("given, for_duckdb", [
    ("4GB", "3.2GB"), ("512MiB", "409.6MiB"), ("50%", "40%"), (" 1.5 gb ", "1.2gb"), ("lots", "lots"),
])
def test_memory_limit_leaves_headroom_for_the_process(given, for_duckdb):
    """DuckDB's memory_limit bounds its buffer manager only; duckrank's bounds the process."""
    from duckrank._library import duckdb_memory_limit
    assert duckdb_memory_limit(given) == for_duckdb


def test_memory_limit_reaches_duckdb_scaled():
    con = duckrank.connect()
    # compute() sets it on the connection it scores on (evaluate() restores a caller's connection)
    duckrank.compute(str(QRELS), str(RUN), ["map"], con=con, memory_limit="1000MB")
    limit = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    assert limit == "762.9 MiB"  # 800 MB, DuckDB prints MiB
    with pytest.raises(duckrank.OptionError, match=r"^memory_limit must be a size of at least 32MB .*; got 'lots'"):
        duckrank.evaluate(str(QRELS), str(RUN), ["map"], memory_limit="lots")


def test_repeated_evaluation_in_one_process_is_stable_and_releases_the_frames():
    """A notebook loop: evaluate() reuses duckrank's own database, gives the same numbers every
    time, and keeps no reference to the caller's frames once it returns."""
    import gc
    import weakref

    qrels, run = pq.read_table(QRELS).to_pandas(), pq.read_table(RUN).to_pandas()
    measures = ["ndcg@10", "map", "recip_rank", "P@10"]
    first = duckrank.evaluate(qrels, run, measures)
    assert first == duckrank.evaluate(QRELS, RUN, measures)
    for _ in range(3):
        assert duckrank.evaluate(qrels, run, measures) == first
    qrels_ref, run_ref = weakref.ref(qrels), weakref.ref(run)
    del qrels, run
    gc.collect()
    assert qrels_ref() is None and run_ref() is None


def test_evaluation_library_subset_holds_every_measure():
    """The shared database loads only what evaluate() reads (no per-metric table macros, no
    COMMENTs); every measure must still compute there, and give the full library's numbers."""
    from duckrank._library import evaluation_sql, library_sql

    assert "COMMENT ON" not in evaluation_sql() and len(evaluation_sql()) < len(library_sql())
    spellings = ["P@5", "R@10", "F@5", "Hit@3", "RR", "AP@10", "AP(denominator=min)@5", "Rprec", "bpref",
                 "IPrec@0.3", "11pt_avg", "CG@5", "DCG@5", "IDCG@5", "nDCG(ideal=run)@5", "ERR@5", "RBP(p=0.5)@10",
                 "rbp_resid", "AUC", "MAE", "RMSE", "num_q", "num_ret", "num_rel", "num_rel_ret",
                 "num_nonrel_judged_ret", "gm_map", "gm_bpref"]
    shared = duckrank.evaluate(QRELS, RUN, spellings)
    full = duckrank.evaluate(QRELS, RUN, spellings, con=duckrank.connect())
    assert set(shared) == set(spellings)
    for spelling in spellings:
        assert shared[spelling] == pytest.approx(full[spelling], rel=1e-12, abs=1e-15), spelling


def one_top_grade_qrels() -> pd.DataFrame:
    """data/'s qrels with one judgment raised above every other grade: ERR's default top grade (the
    whole qrels' largest) is then a grade that all queries but one lack."""
    qrels = pd.read_parquet(QRELS)
    qrels.loc[qrels.index[0], "relevance"] = qrels["relevance"].max() + 2
    return qrels


# measures of every kind of pass, METRICS.md's err (its top grade the qrels') among them
SPLIT_MEASURES = ["err@10", "map", "ndcg", "bpref", "AUC"]
SPLIT_OPTIONS = [{}, {"ties": "average"}, {"unjudged": "median", "complete": True}]


def split_measures(options: dict) -> list[str]:
    return ["nDCG@10", "P@5"] if options.get("ties") == "average" else SPLIT_MEASURES


@pytest.mark.parametrize("options", SPLIT_OPTIONS)
def test_batches_of_queries_give_the_same_per_query_values(monkeypatch, options):
    """A run too large for the memory limit is scored in batches of queries; every per-query value
    (ERR's default top grade included, which all batches but one lack) is the same as in one pass."""
    from duckrank import evaluation

    qrels, measures = one_top_grade_qrels(), split_measures(options)

    def per_query():
        return sorted(duckrank.evaluate(qrels, RUN, measures, per_query=True, **options).fetchall())

    whole = per_query()
    monkeypatch.setattr(evaluation, "query_batches", lambda con, views: (4, 0))
    assert per_query() == whole
    assert {measure for _, measure, _ in whole} == set(measures)


@pytest.mark.parametrize("several", [False, True])
def test_a_data_error_in_a_batch_names_the_run_not_the_batch(monkeypatch, several):
    from duckrank import evaluation

    frame = pd.read_parquet(RUN)
    repeated = pd.concat([frame, frame.iloc[:1]])
    runs = {"bm25": frame, "dense": repeated} if several else repeated
    monkeypatch.setattr(evaluation, "query_batches", lambda con, views: (4, 0))
    with pytest.raises(duckrank.InputError) as error:
        duckrank.evaluate(QRELS, runs, ["map"])
    shown = "run 'dense' (DataFrame)" if several else "run (DataFrame)"
    row = frame.iloc[0]
    assert str(error.value).startswith(f"{shown} has 2 rows for query_id '{row.query_id}', doc_id '{row.doc_id}'")


@pytest.fixture
def slice_queries(monkeypatch):
    """A function that, from its call on, ranks every run of data/ in slices of its queries (its
    5,000 rows count as many) and returns the slice counts query_slices makes: a test cannot pass
    by comparing one pass with itself."""
    from duckrank import _partitions

    def from_now() -> list[int]:
        counts: list[int] = []
        hash_slices = _partitions.hash_slices
        monkeypatch.setattr(_partitions, "hash_slices", lambda con, views, count: counts.append(count)
                            or hash_slices(con, views, count))
        monkeypatch.setattr(_partitions, "SLICE_ROWS", 10)
        return counts
    return from_now


# the quick run keeps the macro path under the default options (the lean path under each)
@pytest.mark.parametrize("rendering, options", [
    pytest.param(rendering, options, marks=[pytest.mark.slow] if not rendering and options else [])
    for rendering in (False, True) for options in SPLIT_OPTIONS])
def test_slices_of_queries_give_the_same_per_query_values(monkeypatch, slice_queries, rendering, options):
    """A large run of few queries is ranked in slices of them side by side, in one statement; every
    per-query value is the same as in one pass, on the lean rendering and the macros, for one run
    and several, ERR's default top grade included (all slices but one lack it)."""
    from duckrank import evaluation, lean

    if rendering:
        pytest.importorskip("sqlglot")
        monkeypatch.setattr(lean, "RENDER_FROM_CALL", 1)
    else:
        monkeypatch.setattr(evaluation, "lean_case", lambda *args: False)
    qrels, measures = one_top_grade_qrels(), split_measures(options)
    runs = {"bm25": pd.read_parquet(RUN)}
    runs["reversed"] = runs["bm25"].assign(score=-runs["bm25"]["score"])

    def per_query(run):
        return sorted(duckrank.evaluate(qrels, run, measures, per_query=True, threads=4, **options).fetchall())

    whole = {name: per_query(run) for name, run in [*runs.items(), ("both", runs)]}
    counts = slice_queries()
    assert {name: per_query(run) for name, run in [*runs.items(), ("both", runs)]} == whole and counts == [4, 4, 4]


def test_text_inputs_are_not_sliced(slice_queries, tmp_path):
    """A CSV file is parsed again each time a statement reads it, and each slice would read it."""
    run = tmp_path / "run.csv"
    pd.read_parquet(RUN).to_csv(run, index=False)
    counts = slice_queries()
    assert duckrank.evaluate(QRELS, run, ["map"], threads=4) == duckrank.evaluate(QRELS, RUN, ["map"], threads=4)
    assert counts == [4]  # the Parquet run's call alone


def test_a_data_error_in_a_slice_names_the_run(slice_queries):
    counts = slice_queries()
    frame = pd.read_parquet(RUN)
    repeated = pd.concat([frame, frame.iloc[:1]])
    with pytest.raises(duckrank.InputError) as error:
        duckrank.evaluate(QRELS, repeated, ["map"], threads=2)
    row = frame.iloc[0]
    assert counts == [2]
    assert str(error.value).startswith(f"run (DataFrame) has 2 rows for query_id '{row.query_id}', "
                                       f"doc_id '{row.doc_id}'")


@pytest.mark.parametrize("rendering", [False, True])
@pytest.mark.parametrize("options", [{}, {"complete": True}, {"rel_level": 2, "gain": "exp"}])
def test_several_runs_are_judged_by_one_grouping_of_the_qrels(monkeypatch, rendering, options):
    """Several runs are ranked in one pass whose qrels side (judgments grouped by query, ideal
    rankings) is computed once for all of them, not once per run, except under complete := true
    (a query a run lacks needs the run's key): each run's per-query values are those it has alone."""
    from duckrank import _duckdb_sql, evaluation, lean

    if rendering:
        pytest.importorskip("sqlglot")
        monkeypatch.setattr(lean, "RENDER_FROM_CALL", 1)
    else:
        monkeypatch.setattr(evaluation, "lean_case", lambda *args: False)
    passes = []
    ranking_values = _duckdb_sql.ranking_values
    monkeypatch.setattr(evaluation, "ranking_values", lambda *args, **kwargs: passes.append(
        ranking_values(*args, **kwargs)) or passes[-1])
    frame = pd.read_parquet(RUN)
    runs = {"bm25": frame, "reversed": frame.assign(score=-frame["score"]),
            "fewer": frame[frame["query_id"] > frame["query_id"].min()]}  # lacks a query
    measures = ["map", "ndcg@10", "err@10", "bpref", "P@5", "num_ret", "AUC"]
    together = duckrank.evaluate(QRELS, runs, measures, per_query=True, **options).fetchall()
    shared = ["q.duckrank_key AS query_id" in cte for cte in passes.pop().ctes]
    assert shared and all(shared) != bool(options.get("complete")), shared
    for name, run in runs.items():
        alone = duckrank.evaluate(QRELS, run, measures, per_query=True, **options).fetchall()
        assert sorted(row[1:] for row in together if row[0] == name) == sorted(alone), name
    assert {row[0] for row in together} == set(runs)


def test_summaries_are_the_same_bits_whatever_the_threads():
    """Means are summed in query order, so the summary does not depend on DuckDB's parallelism."""
    measures = ["map", "ndcg", "P@10", "gm_map", "bpref"]
    one = duckrank.evaluate(QRELS, RUN, measures, threads=1)
    assert duckrank.evaluate(QRELS, RUN, measures, threads=2) == one
    assert duckrank.evaluate(QRELS, RUN, measures, threads=4) == one


def test_gain_convention_leaves_a_gain_the_measure_names():
    """gain= sets the gain of measures that name none; nDCG(gain=linear)@10 keeps linear gains."""
    linear = duckrank.evaluate(QRELS, RUN, ["nDCG@10"])["nDCG@10"]
    exp = duckrank.evaluate(QRELS, RUN, ["nDCG(gain=exp)@10"])["nDCG(gain=exp)@10"]
    assert linear != exp
    got = duckrank.evaluate(QRELS, RUN, ["nDCG@10", "nDCG(gain=linear)@10", "ndcg_burges@10"], gain="exp")
    assert got == {"nDCG@10": exp, "nDCG(gain=linear)@10": linear, "ndcg_burges@10": exp}
    got = duckrank.evaluate(QRELS, RUN, ["nDCG@10", "nDCG(gain=exp)@10"], gain="linear")
    assert got == {"nDCG@10": linear, "nDCG(gain=exp)@10": exp}
