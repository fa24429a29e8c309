"""The command line: every command, every output format, every error path, trec_eval conformance.

Most tests go through helpers.run (click's CliRunner: fast, in-process); the `subprocess` tests run
the installed console script and `python -m duckrank`, which is what users and scripts actually call.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import duckrank
from duckrank._library import install_sql
from duckrank.cli import main
from duckrank.cli.common import Progress

from helpers import duckdb_shell, run

DUCKRANK = Path(sys.executable).parent / "duckrank"


# ---------------------------------------------------------------------------------------------
# helpers and data



def assert_error(result, code: int, *fragments: str) -> str:
    """Exit `code`, an "Error:" line on stderr naming every fragment, no traceback, nothing on stdout."""
    assert result.exit_code == code, (result.exit_code, result.output)
    stderr = result.stderr
    assert re.search(r"^Error: ", stderr, re.M), stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in stderr, (fragment, stderr)
    assert result.stdout == ""
    return stderr


QRELS_ROWS = [  # query_id, doc_id, relevance
    ("q1", "d1", 2), ("q1", "d2", 1), ("q1", "d3", 0), ("q1", "d4", 1),
    ("q2", "d1", 0), ("q2", "d5", 1),
    ("q3", "d9", 1),  # a qrels query the run misses (counts under -c)
]
RUN_ROWS = [  # query_id, doc_id, score
    ("q1", "d1", 0.9), ("q1", "d2", 0.8), ("q1", "d3", 0.7), ("q1", "d5", 0.6),
    ("q2", "d5", 0.5), ("q2", "d1", 0.4), ("q2", "d6", 0.3),
    ("q4", "d1", 1.0),  # a run query the qrels do not know (never scored)
]
RUN_B_ROWS = [("q1", "d4", 0.9), ("q1", "d1", 0.5), ("q2", "d6", 0.9), ("q2", "d5", 0.1)]


def write_csv(path: Path, header: list[str], rows) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    """The same small qrels and runs in every input format (read-only: tests write elsewhere)."""
    tmp_path = tmp_path_factory.mktemp("inputs")
    files = {
        "qrels.csv": write_csv(tmp_path / "qrels.csv", ["query_id", "doc_id", "relevance"], QRELS_ROWS),
        "run.csv": write_csv(tmp_path / "run.csv", ["query_id", "doc_id", "score"], RUN_ROWS),
        "run_b.csv": write_csv(tmp_path / "run_b.csv", ["query_id", "doc_id", "score"], RUN_B_ROWS),
    }
    (tmp_path / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS_ROWS))
    (tmp_path / "run.txt").write_text(
        "".join(f"{q} Q0 {d} {i} {s} myrun\n" for i, (q, d, s) in enumerate(RUN_ROWS, 1)))
    files["qrels.txt"], files["run.txt"] = tmp_path / "qrels.txt", tmp_path / "run.txt"
    con = duckdb.connect()
    for name in ("qrels", "run"):
        source = str(files[f"{name}.csv"])
        for ext, options in (("parquet", "FORMAT parquet"), ("jsonl", "FORMAT json")):
            target = tmp_path / f"{name}.{ext}"
            con.execute(f"COPY (SELECT * FROM read_csv(?, header := true)) TO '{target}' ({options})",
                        [source]).fetchall()
            files[f"{name}.{ext}"] = target
    con.close()
    return files


def api_summary(qrels, run_path, measures, **options) -> dict[str, float]:
    """The Python API's numbers: the CLI must print exactly these (cached: each call costs a connection)."""
    return dict(_api_summary(str(qrels), str(run_path), tuple(measures), tuple(sorted(options.items()))))


@functools.cache
def _api_summary(qrels, run_path, measures, options):
    return tuple(duckrank.evaluate(qrels, run_path, list(measures), **dict(options)).items())


# ---------------------------------------------------------------------------------------------
# the group, help, version


def test_help_lists_every_command():
    for flag in ("-h", "--help"):
        result = run(flag)
        assert result.exit_code == 0
        for command in ("eval", "compare", "metrics", "sql", "convert", "fuse"):
            assert command in result.stdout


@pytest.mark.parametrize("command", ["eval", "compare", "metrics", "sql", "convert", "fuse"])
def test_command_help(command):
    result = run(command, "-h")
    assert result.exit_code == 0
    assert "Usage: " in result.stdout


def test_eval_help_documents_trec_eval_flags_and_formats():
    text = run("eval", "--help").stdout
    for flag in ("-m,", "-q ", "-c ", "-l N", "-M N", "-n ", "--ties", "--gain", "--empty", "--query-col",
                 "--doc-col", "--score-col", "--relevance-col", "--log", "--label", "--run-format",
                 "--qrels-format", "--format", "--output", "--quiet", "--threads", "--memory-limit", "--temp-dir"):
        assert flag in text, flag
    for fmt in ("table", "trec", "tsv", "csv", "json", "jsonl", "parquet", "markdown", "latex"):
        assert fmt in text


def test_version():
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"duckrank {duckrank.__version__}"


def test_unknown_command_is_a_usage_error():
    result = run("evaluate")
    assert result.exit_code == 2
    assert "Error:" in result.stderr


# ---------------------------------------------------------------------------------------------
# sql


def test_sql_prints_the_whole_library():
    result = run("sql")
    assert result.exit_code == 0
    assert result.stdout.strip() == install_sql().strip()


def test_sql_installs_into_a_fresh_database(tmp_path):
    script = run("sql").stdout
    con = duckdb.connect(str(tmp_path / "my.db"))
    con.execute(script).fetchall()
    names = {row[0] for row in con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE schema_name = 'duckrank'").fetchall()}
    assert {"ndcg", "average_precision", "precision", "ranked"} <= names
    con.close()


def test_sql_pipes_into_the_duckdb_shell(tmp_path, data):
    shell = duckdb_shell()
    database = tmp_path / "shell.db"
    script = subprocess.run([str(DUCKRANK), "sql"], capture_output=True, text=True, check=True).stdout
    subprocess.run([shell, str(database)], input=script, capture_output=True, text=True, check=True)
    query = (f"SELECT round(avg(value), 6) FROM duckrank.average_precision('{data['qrels.parquet']}', "
             f"'{data['run.parquet']}')")
    shown = subprocess.run([shell, str(database), "-csv", "-noheader", "-c", query],
                           capture_output=True, text=True, check=True).stdout.strip()
    expected = api_summary(data["qrels.parquet"], data["run.parquet"], ["map"])["map"]
    assert float(shown) == pytest.approx(expected, abs=1e-6)


def test_sql_to_a_file(tmp_path):
    target = tmp_path / "duckrank.sql"
    result = run("sql", "-o", target)
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text().strip() == install_sql().strip()


# ---------------------------------------------------------------------------------------------
# eval: values and formats


def parse_tsv(text: str, delimiter: str = "\t") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl", "txt"])
def test_every_input_format_gives_the_same_numbers(data, fmt):
    result = run("eval", data[f"qrels.{fmt}"], data[f"run.{fmt}"], "-m", "map", "-m", "nDCG@3", "-m", "P.2",
                 "--format", "tsv")
    assert result.exit_code == 0, result.output
    rows = parse_tsv(result.stdout)
    expected = api_summary(data["qrels.csv"], data["run.csv"], ["map", "nDCG@3", "P.2"])
    assert [(r["query_id"], r["metric"]) for r in rows] == [("all", "map"), ("all", "nDCG@3"), ("all", "P_2")]
    for row, measure in zip(rows, ["map", "nDCG@3", "P.2"]):
        assert float(row["value"]) == expected[measure]  # full double precision, no rounding


def test_machine_formats_keep_full_precision(data):
    expected = api_summary(data["qrels.csv"], data["run.csv"], ["map"])["map"]
    assert len(repr(expected)) > 8  # a value that 4 decimals would round
    text = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--format", "csv").stdout
    assert float(parse_tsv(text, ",")[0]["value"]) == expected
    value = json.loads(run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--format", "json").stdout)
    assert value == [{"query_id": "all", "metric": "map", "value": expected}]


def test_jsonl_per_query_and_metric_names(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "nDCG@3", "-m", "P.2", "-m", "P_3", "-q",
                 "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(set(r) == {"query_id", "metric", "value"} for r in records)
    # the user's spelling, or trec_eval's printed name for trec_eval spellings
    assert [r["metric"] for r in records[:3]] == ["nDCG@3", "P_2", "P_3"]
    assert [r["query_id"] for r in records] == ["q1"] * 3 + ["q2"] * 3 + ["all"] * 3
    per_query = duckrank.evaluate(str(data["qrels.csv"]), str(data["run.csv"]), ["nDCG@3"], per_query=True)
    expected = {q: v for q, _, v in per_query.fetchall()}
    assert {r["query_id"]: r["value"] for r in records if r["metric"] == "nDCG@3" and r["query_id"] != "all"} \
        == expected


def test_several_runs_add_a_run_field(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], data["run_b.csv"], "-m", "map", "-m", "recip_rank",
                 "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["run"], r["metric"]) for r in records] == [
        (str(data["run.csv"]), "map"), (str(data["run.csv"]), "recip_rank"),
        (str(data["run_b.csv"]), "map"), (str(data["run_b.csv"]), "recip_rank")]
    expected_b = api_summary(data["qrels.csv"], data["run_b.csv"], ["map"])["map"]
    assert records[2]["value"] == expected_b


def test_eval_leaves_no_view_behind_in_duckranks_shared_database(data):
    """`duckrank eval` called in-process (a notebook's CliRunner, these tests) formats its output
    through its cursor's temporary views: duckrank's shared database keeps none (two persistent
    views were left, which the Python API's own test of this then found)."""
    from duckrank._library import shared_cursor

    for extra in ([], ["-q"], ["--format", "jsonl"]):
        result = run("eval", data["qrels.csv"], data["run.csv"], data["run_b.csv"], "-m", "map", *extra)
        assert result.exit_code == 0, result.output
    cursor = shared_cursor()
    left = cursor.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary "
                          "AND database_name = current_database()").fetchall()
    cursor.close()
    assert left == []


def test_table_format_is_aligned(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], data["run_b.csv"], "-m", "map", "-m", "num_ret",
                 "--format", "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["metric", str(data["run.csv"]), str(data["run_b.csv"])]
    assert set(lines[1].replace(" ", "")) == {"-"}
    widths = {len(line) for line in lines}
    assert len(widths) == 1  # right-aligned numbers: every line as wide as the header
    assert re.fullmatch(r"map\s+\d\.\d{4}\s+\d\.\d{4}", lines[2])
    assert re.fullmatch(r"num_ret\s+7\s+4", lines[3])  # counters print as integers


def test_table_per_query(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "P.1", "-q", "--format", "table")
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["query_id", "metric", "value"]
    assert [line.split()[0] for line in lines[2:]] == ["q1", "q2", "all"]


def test_trec_format_layout(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "num_q", "-m", "num_ret", "-m", "map",
                 "-m", "P.2", "-q", "--format", "trec")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for line in lines:
        measure, query, value = line.split("\t")
        assert len(measure) == max(22, len(measure.rstrip())) and measure == measure.rstrip().ljust(22)
        assert re.fullmatch(r"-?\d+(\.\d{4})?", value)
    names = [line.split("\t")[0].strip() for line in lines]
    # trec_eval prints num_q only in the summary; counters as integers; P.2 as P_2
    assert names == ["num_ret", "map", "P_2", "num_ret", "map", "P_2", "num_q", "num_ret", "map", "P_2"]
    assert lines[-4] == f"{'num_q':<22}\tall\t2"
    assert lines[-3] == f"{'num_ret':<22}\tall\t7"


def test_trec_format_prints_runid_for_all_trec(data):
    result = run("eval", data["qrels.txt"], data["run.txt"], "-m", "all_trec", "--format", "trec")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"{'runid':<22}\tall\tmyrun"


def test_runid_alone_prints_its_line_in_the_trec_format_only(data):
    """(tests/test_trec_eval_binary.py compares -m runid with the binary.)"""
    result = run("eval", data["qrels.txt"], data["run.txt"], "-m", "runid", "-q", "--format", "trec")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"{'runid':<22}\tall\tmyrun\n"
    assert_error(run("eval", data["qrels.txt"], data["run.txt"], "-m", "runid", "--format", "tsv"), 2,
                 "-m runid prints trec_eval's line naming the run, in --format trec only")


def test_parquet_to_file_and_stdout(data, tmp_path):
    target = tmp_path / "out.parquet"
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-m", "P.2", "-q", "-o", target)
    assert result.exit_code == 0, result.output
    con = duckdb.connect()
    rows = con.execute("SELECT query_id, metric, value FROM read_parquet(?)", [str(target)]).fetchall()
    assert rows[-2:] == [("all", "map", api_summary(data["qrels.csv"], data["run.csv"], ["map"])["map"]),
                         ("all", "P_2", 0.75)]
    piped = run("eval", str(data["qrels.csv"]), str(data["run.csv"]), "-m", "map",
                "--format", "parquet")
    assert piped.exit_code == 0
    assert piped.stdout_bytes[:4] == b"PAR1"
    con.close()


# table, trec, tsv, csv, json, jsonl and parquet have their own tests above; these two are for papers.
@pytest.mark.parametrize("fmt, check", [
    ("markdown", lambda text: text.startswith("| metric | value |\n|:---|---:|\n| map | 0.")
     and "| num_ret | 7 |" in text),
    ("latex", lambda text: text.startswith("\\begin{tabular}{lr}\n\\toprule\nmetric & value \\\\")
     and "num\\_ret & 7 \\\\" in text and text.endswith("\\end{tabular}\n")),
])
def test_paper_formats(data, fmt, check):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-m", "num_ret", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert check(result.stdout), result.stdout


@pytest.mark.parametrize("ext, first_line", [  # (.csv: test_output_is_written_atomically)
    ("jsonl", '{"query_id": "all", "metric": "map", "value": '),
    ("tex", "\\begin{tabular}{lr}"),
])
def test_output_extension_picks_the_format(data, tmp_path, ext, first_line):
    target = tmp_path / f"out.{ext}"
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-o", target)
    assert result.exit_code == 0 and result.stdout == ""
    assert target.read_text().splitlines()[0].startswith(first_line)


def test_default_format_off_a_terminal_is_tsv(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map")
    assert result.stdout.splitlines()[0] == "query_id\tmetric\tvalue"


def test_default_measures_are_trec_eval_defaults(data):
    result = run("eval", data["qrels.txt"], data["run.txt"], "--format", "trec")
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert names[:6] == ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map"]
    assert names[-1] == "P_1000"


# ---------------------------------------------------------------------------------------------
# eval: trec_eval's flags and the conventions


def test_trec_format_prints_in_trec_evals_order_with_its_families(data):
    """--format trec prints as trec_eval 10 does: its own measure order whatever -m's order, a
    family's parameters ascending (P.3,1), a bare family name its default parameters (success:
    1, 5, 10); other spellings after them. A measure named by several -m takes the parameters of the
    first that gives any, as in trec_eval (P.3,1 then P.2: P_1, P_3)."""
    result = run("eval", data["qrels.txt"], data["run.txt"], "-m", "nDCG@3", "-m", "success", "-m", "P.3,1",
                 "-m", "map", "-m", "P.2", "--format", "trec")
    assert result.exit_code == 0, result.output
    names = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert names == ["map", "P_1", "P_3", "success_1", "success_5", "success_10", "nDCG@3"]
    # other formats print every measure named, in the order given, families expanded as well
    result = run("eval", data["qrels.txt"], data["run.txt"], "-m", "success", "-m", "map", "-m", "P.3,1", "-m", "P.2",
                 "--format", "tsv")
    assert [r["metric"] for r in parse_tsv(result.stdout)] == ["success_1", "success_5", "success_10", "map", "P_3",
                                                               "P_1", "P_2"]


def test_trec_format_prints_trec_evals_nan(tmp_path):
    """Under -J a query whose retrieved docs are all unjudged has nothing retrieved: trec_eval 10's
    interpolated precision at cutoff round(r R) = 0 divides 0 by 0 and prints '  -nan' (so do the
    11-point average and the means over queries); a level with a positive cutoff is 0."""
    (tmp_path / "qrels").write_text("q 0 a 1\nr 0 a 1\n")
    (tmp_path / "run").write_text("q Q0 u1 1 3 r\nr Q0 a 1 3 r\n")
    result = run("eval", tmp_path / "qrels", tmp_path / "run", "-J", "-q", "-m", "iprec_at_recall.0.00,0.50",
                 "-m", "11pt_avg", "-m", "P.5", "--format", "trec")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{'iprec_at_recall_0.00':<22}\tq\t  -nan", f"{'iprec_at_recall_0.50':<22}\tq\t0.0000",
        f"{'P_5':<22}\tq\t0.0000", f"{'11pt_avg':<22}\tq\t  -nan",
        f"{'iprec_at_recall_0.00':<22}\tr\t1.0000", f"{'iprec_at_recall_0.50':<22}\tr\t1.0000",
        f"{'P_5':<22}\tr\t0.2000", f"{'11pt_avg':<22}\tr\t1.0000",
        f"{'iprec_at_recall_0.00':<22}\tall\t  -nan", f"{'iprec_at_recall_0.50':<22}\tall\t0.5000",
        f"{'P_5':<22}\tall\t0.1000", f"{'11pt_avg':<22}\tall\t  -nan"]


def test_comma_lists_and_repeated_measures(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "P.1,2,3", "-m", "map", "-m", "map",
                 "--format", "tsv")
    assert [r["metric"] for r in parse_tsv(result.stdout)] == ["P_1", "P_2", "P_3", "map"]


def test_complete_counts_missing_queries(data):
    plain = parse_tsv(run("eval", data["qrels.csv"], data["run.csv"], "-m", "num_q", "-m", "map").stdout)
    complete = parse_tsv(run("eval", data["qrels.csv"], data["run.csv"], "-m", "num_q", "-m", "map", "-c").stdout)
    assert float(plain[0]["value"]) == 2 and float(complete[0]["value"]) == 3
    assert float(complete[1]["value"]) == pytest.approx(float(plain[1]["value"]) * 2 / 3)


def test_rel_level_and_max_rank(data):
    for args, options in ((["-l", "2"], {"rel_level": 2}), (["-M2"], {"max_rank": 2})):
        result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-m", "P.3", *args)
        assert result.exit_code == 0, result.output
        values = [float(r["value"]) for r in parse_tsv(result.stdout)]
        expected = api_summary(data["qrels.csv"], data["run.csv"], ["map", "P.3"], **options)
        assert values == [expected["map"], expected["P.3"]]


def test_no_summary_with_per_query(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-q", "-n")
    assert [r["query_id"] for r in parse_tsv(result.stdout)] == ["q1", "q2"]


@pytest.mark.parametrize("args, api", [
    (["--ties", "average"], {"ties": "average"}),
    (["--gain", "exp"], {"gain": "exp"}),
    (["--empty", "skip"], {"empty": "skip"}),
    (["-J"], {"unjudged": "skip"}),  # trec_eval's judged-only flag
])
def test_conventions_pass_through(data, args, api):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "nDCG@3", "-c", *args)
    assert result.exit_code == 0, result.output
    expected = api_summary(data["qrels.csv"], data["run.csv"], ["nDCG@3"], complete=True, **api)["nDCG@3"]
    assert float(parse_tsv(result.stdout)[0]["value"]) == expected


def test_duplicates_max(tmp_path, data):
    dup = write_csv(tmp_path / "dup.csv", ["query_id", "doc_id", "score"], [*RUN_ROWS, ("q1", "d1", 0.1)])
    result = run("eval", data["qrels.csv"], dup, "-m", "map", "--duplicates", "max")
    assert result.exit_code == 0, result.output


def test_column_mapping(tmp_path, data):
    qrels = write_csv(tmp_path / "judged.csv", ["topic", "item", "grade"], QRELS_ROWS)
    ranked = write_csv(tmp_path / "ranked.csv", ["topic", "item", "pred"], RUN_ROWS)
    result = run("eval", qrels, ranked, "-m", "map", "--query-col", "topic", "--doc-col", "item",
                 "--score-col", "pred", "--relevance-col", "grade")
    assert result.exit_code == 0, result.output
    expected = api_summary(data["qrels.csv"], data["run.csv"], ["map"])["map"]
    assert float(parse_tsv(result.stdout)[0]["value"]) == expected


def test_input_format_override(tmp_path, data):
    disguised_run = tmp_path / "run.data"
    disguised_qrels = tmp_path / "qrels.data"
    shutil.copy(data["run.csv"], disguised_run)
    shutil.copy(data["qrels.parquet"], disguised_qrels)
    result = run("eval", disguised_qrels, disguised_run, "-m", "map", "--run-format", "csv",
                 "--qrels-format", "parquet")
    assert result.exit_code == 0, result.output


def test_log_with_label(tmp_path):
    rows = [("u1", "i1", 0.9, 1), ("u1", "i2", 0.4, 0), ("u1", "i3", 0.3, 1),
            ("u2", "i1", 0.2, 0), ("u2", "i4", 0.8, 1), ("u2", "i5", 0.1, 0)]
    log = write_csv(tmp_path / "log.csv", ["user_id", "item_id", "pred", "clicked"], rows)
    result = run("eval", "--log", log, "--label", "clicked", "--query-col", "user_id", "--doc-col", "item_id",
                 "--score-col", "pred", "-m", "auc", "-m", "nDCG@2", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = {r["metric"]: r["value"] for r in map(json.loads, result.stdout.splitlines())}
    expected = duckrank.evaluate(log=str(log), label="clicked", measures=["auc", "nDCG@2"], query_col="user_id",
                                 doc_col="item_id", score_col="pred")
    assert records == expected


def test_log_with_a_label_map(tmp_path):
    rows = [("u1", "i1", 0.9, "purchase"), ("u1", "i2", 0.4, "view"), ("u1", "i3", 0.3, "click"),
            ("u2", "i1", 0.2, "view"), ("u2", "i4", 0.8, "click"), ("u2", "i5", 0.1, "view")]
    log = write_csv(tmp_path / "events.csv", ["query_id", "doc_id", "score", "event"], rows)
    assert_error(run("eval", "--log", log, "--label", "event", "-m", "nDCG@2"), 1, "events.csv", "--label-map")
    assert_error(run("eval", "--log", log, "--label", "event", "--label-map", "purchase:3", "-m", "nDCG@2"), 2,
                 "--label-map")
    result = run("eval", "--log", log, "--label", "event", "--label-map", "purchase=3,click=1", "-m", "nDCG@2",
                 "--format", "jsonl")
    assert result.exit_code == 0, result.output
    expected = duckrank.evaluate(log=str(log), label="event", label_map={"purchase": 3, "click": 1},
                                 measures=["nDCG@2"])
    assert json.loads(result.stdout)["value"] == expected["nDCG@2"]


def test_an_error_names_the_option_as_each_front_door_spells_it(tmp_path):
    """The library's error keeps the options it names (errors.Option): Python says query_col=, the
    command line the flag; text that only looks like an option (here a file's name) stays as it is."""
    qrels = write_csv(tmp_path / "qrels.csv", ["query_id", "doc_id", "relevance"], [("q1", "d1", 1)])
    run_file = write_csv(tmp_path / "query_col=1.csv", ["qid", "doc_id", "score"], [("q1", "d1", 1.0)])
    with pytest.raises(duckrank.InputError, match=r"query_col=1\.csv'.*; name yours with query_col=$"):
        duckrank.evaluate(str(qrels), str(run_file), ["map"])
    assert_error(run("eval", qrels, run_file, "-m", "map"), 1, "query_col=1.csv' has no column 'query_id'",
                 "; name yours with --query-col\n")


def test_qrels_and_run_given_in_each_others_place_are_said_to_be_swapped(tmp_path):
    """The usual slip, the run first: the message says the qrels come first (trec_eval's order)
    before it offers the column option, at both doors and for TREC text too; a file that merely
    lacks the column gets the column option alone."""
    swapped = "if the qrels and the run are swapped, give the qrels first, then the run (trec_eval's order); else"
    qrels = write_csv(tmp_path / "qrels.csv", ["query_id", "doc_id", "relevance"], [("q1", "d1", 1)])
    run_file = write_csv(tmp_path / "run.csv", ["query_id", "doc_id", "score"], [("q1", "d1", 1.0)])
    with pytest.raises(duckrank.InputError) as caught:
        duckrank.evaluate(str(run_file), str(qrels), ["map"])
    assert str(caught.value).endswith(f"'score', as a run has: {swapped} name yours with relevance_col=")
    assert_error(run("eval", run_file, qrels, "-m", "map"), 1, f"as a run has: {swapped} name yours with --relevance-col")
    assert_error(run("eval", qrels, qrels, "-m", "map"), 1,
                 f"run '{qrels}' has no column 'score'; its columns are 'query_id', 'doc_id', 'relevance', as qrels "
                 f"have: {swapped} name yours with --score-col")
    trec_run, trec_qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    trec_run.write_text("q1 Q0 d1 1 2.0 tag\n")
    trec_qrels.write_text("q1 0 d1 1\n")
    assert_error(run("eval", trec_run, trec_qrels, "-m", "map"), 1, swapped)
    unnamed = write_csv(tmp_path / "grades.csv", ["query_id", "doc_id", "grade"], [("q1", "d1", 1)])
    stderr = assert_error(run("eval", unnamed, run_file, "-m", "map"), 1,
                          "its columns are 'query_id', 'doc_id', 'grade'; name yours with --relevance-col")
    assert "swapped" not in stderr


def test_a_bad_value_names_its_option_as_each_front_door_spells_it(data):
    """A problem with a value given carries the option at fault (errors.Option), not text to be
    parsed back: Python says "ties must ...", the command line its flag, "--ties must ..."; so do
    the engine settings (threads) and compare's statistics (correction)."""
    with pytest.raises(duckrank.OptionError) as caught:
        duckrank.evaluate(str(data["qrels.csv"]), str(data["run.csv"]), ["map"], ties="random", empty="never")
    assert str(caught.value).startswith("ties must be one of trec, "), caught.value
    assert "\nempty must be one of zero, skip, nan; got 'never'" in str(caught.value)
    assert [part.name for part in caught.value.parts if isinstance(part, duckrank.errors.Option)] == ["ties", "empty"]
    assert_error(run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--ties", "random", "--empty", "never"),
                 2, "Error: --ties must be one of trec, ", "Error: --empty must be one of zero, skip, nan; got 'never'")
    with pytest.raises(duckrank.OptionError, match=r"^threads must be a whole number from 1 to \d+; got 0$"):
        duckrank.evaluate(str(data["qrels.csv"]), str(data["run.csv"]), ["map"], threads=0)
    with pytest.raises(duckrank.OptionError, match=r"^correction 'holm' does not apply to test tukey"):
        duckrank.compare(str(data["qrels.csv"]), [str(data["run.csv"]), str(data["run_b.csv"])], test="tukey",
                         correction="holm")
    assert_error(run("compare", data["qrels.csv"], data["run.csv"], data["run_b.csv"], "--test", "tukey",
                     "--correction", "holm"), 2, "Error: --correction 'holm' does not apply to test tukey")


def test_an_option_kept_under_another_name_is_still_spelled_as_its_flag(tmp_path):
    """--label's values go to `labels`: the option the library names (label) is still said as --label."""
    log = write_csv(tmp_path / "events.csv", ["query_id", "doc_id", "score", "clicked", "bought"],
                    [("q1", "d1", 0.5, 1, 2), ("q1", "d2", 0.4, 0, 0)])
    assert_error(run("eval", "--log", log, "--label", "clicked", "--label", "bought", "--label-map",
                     "clicked=1,bought=3", "-m", "nDCG@2"), 1,
                 "event column 'bought' holds 2", "grade its values with one --label and --label-map instead")


def test_segments_with_by(data, tmp_path):
    devices = {"q1": "mobile", "q2": "desktop", "q4": "mobile"}
    segmented = write_csv(tmp_path / "segmented.csv", ["query_id", "doc_id", "score", "device"],
                          [(q, d, s, devices[q]) for q, d, s in RUN_ROWS])
    result = run("eval", data["qrels.csv"], segmented, "--by", "device", "-m", "map", "-q", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["device"], r["query_id"]) for r in records] == [
        ("desktop", "q2"), ("desktop", "all"), ("mobile", "q1"), ("mobile", "all")]
    per_query = {r["query_id"]: r["value"] for r in records if r["query_id"] != "all"}
    assert records[1]["value"] == per_query["q2"] and records[3]["value"] == per_query["q1"]
    table = run("eval", data["qrels.csv"], segmented, "--by", "device", "-m", "map", "--format", "table").stdout
    assert table.splitlines()[0].split() == ["device", "metric", "value"]
    assert_error(run("eval", data["qrels.csv"], segmented, "--by", "device", "--format", "trec"), 2, "--by")
    assert_error(run("eval", data["qrels.csv"], segmented, "--by", "browser", "-m", "map"), 1, "browser")


def test_engine_settings_pass_through(data, tmp_path):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--threads", "1",
                 "--memory-limit", "200MB", "--temp-dir", tmp_path / "spill")
    assert result.exit_code == 0, result.output


def test_quiet_keeps_stderr_empty(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--quiet")
    assert result.exit_code == 0 and result.stderr == ""


def test_progress_indicator_draws_on_a_terminal(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    con = duckdb.connect()
    with Progress(con, "scoring", enabled=True, delay=0):
        con.execute("SELECT count(DISTINCT range % 1000003) FROM range(12000000)").fetchall()
        time.sleep(0.25)  # at least one redraw however fast the query was
    con.close()
    text = stream.getvalue()
    assert "duckrank: scoring" in text and text.endswith("\r\033[K")
    assert "%" in text or re.search(r"scoring [|/\\-]", text)


def test_no_progress_when_disabled(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stream)
    con = duckdb.connect()
    with Progress(con, "scoring", enabled=False):
        con.execute("SELECT 1").fetchall()
    assert stream.getvalue() == ""


# ---------------------------------------------------------------------------------------------
# -o: atomic, never over an input, never partial


def test_output_is_written_atomically(data, tmp_path, monkeypatch):
    target = tmp_path / "out.csv"
    target.write_text("old contents\n")
    renames = []
    real_replace = os.replace

    def spy(src, dst):
        renames.append((Path(src), Path(dst)))
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    assert run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-o", target).exit_code == 0
    assert len(renames) == 1 and renames[0][1] == target and renames[0][0].parent == tmp_path
    assert target.read_text().startswith("query_id,metric,value\n")


def test_failure_leaves_no_partial_output(data, tmp_path):
    target = tmp_path / "out.csv"
    bad = write_csv(tmp_path / "bad.csv", ["query_id", "doc_id", "score"], [*RUN_ROWS, ("q1", "d1", 0.3)])
    before = set(tmp_path.iterdir())
    result = run("eval", data["qrels.csv"], bad, "-m", "map", "-o", target)
    assert_error(result, 1)
    assert set(tmp_path.iterdir()) == before  # no output, no temporary file left behind
    target.write_text("keep me\n")
    assert_error(run("eval", data["qrels.csv"], bad, "-m", "map", "-o", target), 1)
    assert target.read_text() == "keep me\n"


@pytest.mark.parametrize("which", ["qrels", "run"])
def test_output_equal_to_an_input_is_refused(data, which):
    victim = data[f"{which}.csv"]
    before = victim.read_bytes()
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "-o", victim)
    assert_error(result, 2, str(victim), "is also an input")
    assert victim.read_bytes() == before


def test_output_equal_to_an_input_through_another_path(data, monkeypatch):
    monkeypatch.chdir(data["run.csv"].parent)
    result = run("eval", data["qrels.csv"], "./run.csv", "-m", "map", "-o", str(data["run.csv"]))
    assert_error(result, 2, "is also an input")


# ---------------------------------------------------------------------------------------------
# errors: exit 1 for data, 2 for usage; every message starts with "Error:"


def test_missing_file(data, tmp_path):
    missing = tmp_path / "nope.parquet"
    assert_error(run("eval", data["qrels.csv"], missing, "-m", "map"), 1, str(missing), "not found")
    assert_error(run("eval", missing, data["run.csv"], "-m", "map"), 1, str(missing))


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file(data):
    os.chmod(data["run.csv"], 0)
    try:
        assert_error(run("eval", data["qrels.csv"], data["run.csv"], "-m", "map"), 1, str(data["run.csv"]))
    finally:
        os.chmod(data["run.csv"], 0o644)


def test_unreadable_folder_as_file(data, tmp_path):
    folder = tmp_path / "folder.csv"
    folder.mkdir()
    assert_error(run("eval", data["qrels.csv"], folder, "-m", "map"), 1, str(folder))


def test_corrupt_file(data, tmp_path):
    corrupt = tmp_path / "corrupt.parquet"
    corrupt.write_bytes(b"PAR1 this is not parquet at all")
    assert_error(run("eval", data["qrels.csv"], corrupt, "-m", "map"), 1, str(corrupt))
    garbage = tmp_path / "garbage"
    garbage.write_text("just one line of prose\n")
    assert_error(run("eval", data["qrels.csv"], garbage, "-m", "map"), 1, str(garbage), "--run-format")


def test_wrong_columns(data, tmp_path):
    wrong = write_csv(tmp_path / "wrong.csv", ["query_id", "doc_id", "pred"], RUN_ROWS)
    stderr = assert_error(run("eval", data["qrels.csv"], wrong, "-m", "map"), 1, "wrong.csv", "'score'",
                          "--score-col")
    assert "pred" in stderr  # names the columns the file does have


def test_bad_measure(data):
    stderr = assert_error(run("eval", data["qrels.csv"], data["run.csv"], "-m", "ndgc@10"), 2, "ndgc@10")
    assert "ndcg" in stderr.lower()  # a suggestion


def test_every_bad_measure_and_option_is_reported_at_once(data):
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "bogus1", "-m", "map", "-m", "bogus2",
                 "--ties", "random", "--gain", "cubic", "--empty", "maybe", "--unjudged", "x", "--duplicates", "y",
                 "-l", "high", "-M", "none", "--threads", "none", "--memory-limit", "lots", "--format", "xml",
                 "--run-format", "docx")
    stderr = assert_error(result, 2, "bogus1", "bogus2", "--ties", "--gain", "--empty", "--unjudged",
                          "--duplicates", "-l ", "-M ", "--threads", "--memory-limit", "--format", "--run-format")
    assert len(re.findall(r"^Error: ", stderr, re.M)) == 13


def test_bad_measure_option_value(data):
    assert_error(run("eval", data["qrels.csv"], data["run.csv"], "-m", "AP(denominator=median)@5"), 2,
                 "denominator")


@pytest.mark.parametrize("args, fragment", [
    ([], "missing QRELS"),
    (["QRELS"], "missing RUN"),
    (["--label", "clicked", "QRELS", "RUN"], "--label only applies with --log"),
    (["--log", "LOG"], "--log needs --label"),
    (["--log", "LOG", "--label", "c", "QRELS", "RUN"], "not both"),
    (["-n", "QRELS", "RUN"], "add -q"),
])
def test_usage_errors(data, args, fragment):
    args = [str(data["qrels.csv"]) if a == "QRELS" else str(data["run.csv"]) if a in ("RUN", "LOG") else a
            for a in args]
    assert_error(run("eval", *args), 2, fragment)


def test_parquet_needs_a_file_on_a_terminal(data, monkeypatch):
    from duckrank.cli import common

    problems = common.Problems()
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    common.check_output(problems, "parquet", None, [])
    assert problems.messages and "-o FILE" in problems.messages[0]


def test_duplicate_docs(data, tmp_path):
    dup = write_csv(tmp_path / "dup.csv", ["query_id", "doc_id", "score"], [*RUN_ROWS, ("q1", "d1", 0.3)])
    assert_error(run("eval", data["qrels.csv"], dup, "-m", "map"), 1, "dup.csv", "'d1'", "--duplicates max")


def test_a_duplicate_in_one_of_several_runs_names_that_run(data, tmp_path):
    """Several runs are scored through one keyed view: the message still names the run's file and the
    query as given, never the view or its {run, query} key, and -o is not written."""
    dup = write_csv(tmp_path / "dup.csv", ["query_id", "doc_id", "score"], [*RUN_ROWS, ("q1", "d1", 0.3)])
    out = tmp_path / "out.json"
    stderr = assert_error(run("eval", data["qrels.csv"], data["run.csv"], dup, "-m", "map", "-o", str(out)), 1,
                          "'" + str(dup), "query_id 'q1', doc_id 'd1'", "--duplicates max")
    assert "duckrank_" not in stderr and "'run':" not in stderr and not out.exists()


def test_nan_scores(data, tmp_path):
    nan = write_csv(tmp_path / "nan.csv", ["query_id", "doc_id", "score"], [*RUN_ROWS[:3], ("q1", "d5", "nan")])
    assert_error(run("eval", data["qrels.csv"], nan, "-m", "map"), 1, "nan.csv")


def test_an_empty_table_scores_nothing_as_ir_measures_does(data, tmp_path):
    """A run or qrels with columns but no row (a Parquet file, a header-only CSV) is read: nothing is
    scored (per-query rows none, a mean NaN, a count 0), and with -c every qrels query scores 0."""
    blank = tmp_path / "blank.parquet"
    duckdb.sql(f"COPY (SELECT 'q' AS query_id, 'd' AS doc_id, 1.0 AS score LIMIT 0) TO '{blank}' (FORMAT parquet)")
    header = write_csv(tmp_path / "header.csv", ["query_id", "doc_id", "relevance"], [])
    for qrels, run_path, flags, expected in (
            (data["qrels.csv"], blank, [], "all\tmap\tnan\nall\tnum_q\t0.0\n"),
            (header, data["run.csv"], [], "all\tmap\tnan\nall\tnum_q\t0.0\n"),
            (data["qrels.csv"], blank, ["-c"], "all\tmap\t0.0\nall\tnum_q\t3.0\n")):
        result = run("eval", qrels, run_path, "-m", "map", "-m", "num_q", "-f", "tsv", *flags)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "query_id\tmetric\tvalue\n" + expected, result.stdout
    assert "3 of 3 qrels queries are not in run" in run("eval", data["qrels.csv"], blank, "-m", "map").stderr


@pytest.mark.parametrize("name", ["zero.csv", "zero.txt"])
def test_an_empty_file_is_refused_as_trec_eval_refuses_it(data, tmp_path, name):
    (tmp_path / name).write_text("")
    assert_error(run("eval", data["qrels.csv"], tmp_path / name, "-m", "map"), 1, name, "is empty (0 bytes)",
                 "query_id,doc_id,score")


def test_no_common_queries(data, tmp_path):
    other = write_csv(tmp_path / "other.csv", ["query_id", "doc_id", "score"],
                      [("x1", "d1", 1.0), ("x2", "d2", 0.5)])
    assert_error(run("eval", data["qrels.csv"], other, "-m", "map"), 1, "no query_id in common")


def test_id_type_mismatch(data, tmp_path):
    numeric = write_csv(tmp_path / "numeric.csv", ["query_id", "doc_id", "score"], [(1, "d1", 1.0)])
    assert_error(run("eval", data["qrels.csv"], numeric, "-m", "map"), 1, "numeric.csv")


def test_an_unexpected_bug_prints_no_traceback(data, monkeypatch):
    import duckrank.evaluation

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(duckrank.evaluation, "compute", broken)
    stderr = assert_error(run("eval", data["qrels.csv"], data["run.csv"], "-m", "map"), 1, "boom", "bug")
    assert "DUCKRANK_DEBUG" in stderr


# ---------------------------------------------------------------------------------------------
# metrics


def test_metrics_lists_the_catalog():
    from duckrank.catalog import catalog
    from duckrank.measures import parse_measure
    from duckrank.registry import METRICS

    entries = catalog()
    assert [e["name"] for e in entries] == list(METRICS)  # every registry measure, in its order
    root = Path(__file__).resolve().parent.parent
    con = duckrank.connect()
    comments = dict(con.execute(
        "SELECT function_name, comment FROM duckdb_functions() WHERE schema_name = 'duckrank' "
        "AND function_type = 'table_macro'").fetchall())
    for entry in entries:
        metric = METRICS[entry["name"]]
        assert entry["definition"] == metric.doc != "", entry
        if metric.table_macro:  # the library's table macro is documented in the same words
            assert comments[metric.name].startswith(metric.doc), entry
        assert entry["options"] == metric.defaults() and entry["summary"] == metric.summary, entry
        assert entry["oracle"] == metric.oracle != "", entry
        # the source is the real file that defines the scalar macro (or the ranked field) the measure reads
        read = re.findall(r"duckrank\.(\w+)\(", metric.aggregate) + re.findall(r"\bq\.(\w+)", metric.aggregate)
        if entry["source"] or read:
            text = (root / entry["source"]).read_text(encoding="utf-8")
            for name in read:
                assert re.search(rf"\b{name}\b", text), (entry, name)
        # every spelling listed parses to this measure
        for spelling in entry["spellings"]:
            example = re.sub(r"\.N$", ".5", spelling).replace("@k", "@5").replace("@recall", "@0.5")
            example = re.sub(r"\.NN$", ".95", example)  # ranx's persistence, rbp.NN
            assert parse_measure(example).metric.name == entry["name"], (entry["name"], spelling)
    result = run("metrics", "--format", "table")
    assert result.exit_code == 0, result.output
    for entry in entries:
        assert re.search(rf"^{re.escape(entry['name'])}$", result.stdout, re.M), entry["name"]
    records = json.loads(run("metrics", "--format", "json").stdout)
    assert records == json.loads(json.dumps(entries))  # JSON has lists where the catalog has tuples


def test_metrics_filter_and_formats(tmp_path):
    result = run("metrics", "ndcg_cut.10", "--format", "jsonl")
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["name"] for line in result.stdout.splitlines()] == ["ndcg"]
    (ndcg,) = json.loads(run("metrics", "ndcg", "--format", "json").stdout)
    assert ndcg["spellings"] == ["ndcg", "ndcg_cut.N", "nDCG@k", "ndcg_burges@k", "ndcg_at_k@k"]
    assert ndcg["options"] == {"k": None, "gain": "linear", "gain_map": {}, "ideal": "qrels", "sampled": None,
                               "correction": "bv"}
    assert ndcg["definition"].startswith("nDCG@k = DCG@k / IDCG@k")
    table = run("metrics", "ndcg", "--format", "table").stdout
    assert table.splitlines()[0] == "ndcg"
    assert "  spellings:   ndcg, ndcg_cut.N, nDCG@k, ndcg_burges@k, ndcg_at_k@k\n" in table
    assert "  options:     k=NULL, gain=linear, gain_map={}, ideal=qrels, sampled=NULL, correction=bv\n" in table
    several = run("metrics", "P.5", "MAP", "recall", "--format", "jsonl").stdout
    assert [json.loads(line)["name"] for line in several.splitlines()] == ["precision", "recall",
                                                                           "average_precision"]
    for fmt in ("csv", "tsv", "markdown", "latex"):
        assert run("metrics", "--format", fmt).exit_code == 0
    target = tmp_path / "metrics.parquet"
    assert run("metrics", "-o", target).exit_code == 0
    assert duckdb.sql(f"SELECT count(*) FROM '{target}'").fetchall()[0][0] == len(json.loads(
        run("metrics", "--format", "json").stdout))


def test_metrics_errors():
    assert_error(run("metrics", "nope"), 2, "nope")
    assert_error(run("metrics", "--format", "trec"), 2, "--format")


# ---------------------------------------------------------------------------------------------
# convert


def test_convert_round_trips_through_every_format(data, tmp_path):
    # TREC text -> parquet -> csv -> tsv -> jsonl -> TREC text, for the run and the qrels; the scores
    # at the end of the chain (and at its first stop) are those of the original files.
    expected = run("eval", data["qrels.txt"], data["run.txt"], "-m", "map", "-m", "ndcg", "-q").stdout
    for kind in ("run", "qrels"):
        previous = data[f"{kind}.txt"]
        for ext in ("parquet", "csv", "tsv", "jsonl", "txt"):
            target = tmp_path / f"{kind}_converted.{ext}"
            result = run("convert", previous, target)
            assert result.exit_code == 0, result.output
            assert result.stdout == "" and target.exists()
            previous = target
    assert (tmp_path / "run_converted.txt").read_text().splitlines()[0].split()[-1] == "myrun"
    for ext in ("parquet", "txt"):
        result = run("eval", tmp_path / f"qrels_converted.{ext}", tmp_path / f"run_converted.{ext}", "-m", "map",
                     "-m", "ndcg", "-q")
        assert result.stdout == expected, ext


def test_convert_detects_the_kind_from_columns(data, tmp_path):
    target = tmp_path / "qrels_from_csv.txt"
    assert run("convert", data["qrels.csv"], target).exit_code == 0
    assert target.read_text().splitlines()[0] == "q1 0 d1 2"
    target = tmp_path / "run_from_parquet.txt"
    assert run("convert", data["run.parquet"], target, "--to", "trec").exit_code == 0
    assert target.read_text().splitlines()[0].split()[:4] == ["q1", "Q0", "d1", "1"]


def test_convert_errors(data, tmp_path):
    assert_error(run("convert", data["run.csv"], data["run.csv"]), 2, "is also an input")
    assert_error(run("convert", tmp_path / "missing.csv", tmp_path / "x.parquet"), 1, "missing.csv")
    assert_error(run("convert", data["run.csv"], tmp_path / "x.parquet", "--kind", "log", "--to", "xml"), 2,
                 "--kind", "--to")
    odd = write_csv(tmp_path / "odd.csv", ["a", "b"], [(1, 2)])
    assert_error(run("convert", odd, tmp_path / "x.parquet"), 1, "odd.csv")
    assert not (tmp_path / "x.parquet").exists()


def test_convert_refuses_what_trec_text_would_read_back_differently(tmp_path):
    """trec_eval reads a grade as an integer and splits fields on whitespace: a fractional grade or
    an id with a space is refused by name, and no output file is left behind."""
    graded = write_csv(tmp_path / "graded.csv", ["query_id", "doc_id", "relevance"], [("q1", "d1", 1), ("q1", "d2", 0.5)])
    assert_error(run("convert", graded, tmp_path / "qrels.txt"), 1, "'d2'", "0.5", "integers", "it would read 0")
    spaced = write_csv(tmp_path / "spaced.csv", ["query_id", "doc_id", "score"], [("q1", "d 1", 0.5)])
    assert_error(run("convert", spaced, tmp_path / "run.txt"), 1, "'d 1'", "whitespace")
    assert not (tmp_path / "qrels.txt").exists() and not (tmp_path / "run.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["graded.csv", "spaced.csv"]  # no temporary left


# ---------------------------------------------------------------------------------------------
# trec_eval conformance through the CLI


def trec_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


# trec_eval's own golden files and the command lines that printed them (tests/data/trec_eval/README.md)
CONFORMANCE = {
    "out.test": ("qrels.test", "results.test", []),
    "out.test.a": ("qrels.test", "results.test", ["-m", "all_trec"]),
    "out.test.aq": ("qrels.test", "results.test", ["-m", "all_trec", "-q"]),
    "out.test.aqc": ("qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"]),
    "out.test.aqcM": ("qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c", "-M100"]),
    "out.test.aql": ("qrels.rel_level", "results.test", ["-m", "all_trec", "-mrelstring.20", "-q", "-l2"]),
}


def assert_conforms(printed: str, expected_path: Path) -> None:
    """trec_eval's lines, every one, in its order."""
    assert trec_lines(printed) == trec_lines(expected_path.read_text())


# `-m "not slow"` keeps trec_eval's default output; the full run adds the other command lines
@pytest.mark.parametrize("expected_file", [name if name == "out.test.aq" else pytest.param(name, marks=pytest.mark.slow)
                                           for name in sorted(CONFORMANCE)])
def test_trec_eval_conformance(trec_data, expected_file):
    qrels, results, flags = CONFORMANCE[expected_file]
    result = run("eval", trec_data / qrels, trec_data / results, *flags, "--format", "trec")
    assert result.exit_code == 0, result.output
    assert_conforms(result.stdout, trec_data / expected_file)


# ---------------------------------------------------------------------------------------------
# the installed console script and python -m duckrank


def test_console_script_conformance(trec_data, tmp_path):
    repo_relative = os.path.relpath(trec_data, Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [str(DUCKRANK), "eval", f"{repo_relative}/qrels.test", f"{repo_relative}/results.test", "-m", "all_trec",
         "-q", "--format", "trec"],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress indicator when stderr is not a terminal
    assert_conforms(done.stdout, trec_data / "out.test.aq")


def test_console_script_exit_codes(trec_data, tmp_path):
    data_error = subprocess.run([str(DUCKRANK), "eval", str(trec_data / "qrels.test"), str(tmp_path / "no.txt")],
                                capture_output=True, text=True)
    assert data_error.returncode == 1
    assert data_error.stderr.startswith("Error: ") and "Traceback" not in data_error.stderr
    usage_error = subprocess.run([str(DUCKRANK), "eval", str(trec_data / "qrels.test"),
                                  str(trec_data / "results.test"), "-m", "nope"], capture_output=True, text=True)
    assert usage_error.returncode == 2
    assert "Error: " in usage_error.stderr and "Traceback" not in usage_error.stderr
    assert usage_error.stdout == ""


def test_console_script_writes_parquet(trec_data, tmp_path):
    target = tmp_path / "scores.parquet"
    done = subprocess.run([str(DUCKRANK), "eval", str(trec_data / "qrels.test"), str(trec_data / "results.test"),
                           "-m", "ndcg_cut.10", "-q", "-o", str(target)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert duckdb.sql(f"SELECT value FROM '{target}' WHERE query_id = 'all'").fetchall()[0][0] \
        == pytest.approx(0.3016, abs=5e-5)


def test_broken_pipe_is_quiet(tmp_path):
    # 4,000 queries print ~300 KB, more than a pipe holds, so `head` leaves while duckrank writes.
    qrels, run_file = tmp_path / "many_qrels.parquet", tmp_path / "many_run.parquet"
    duckdb.sql(f"COPY (SELECT 'q' || range AS query_id, 'd' AS doc_id, 1 AS relevance FROM range(4000)) "
               f"TO '{qrels}' (FORMAT parquet)")
    duckdb.sql(f"COPY (SELECT 'q' || range AS query_id, 'd' AS doc_id, 1.0 AS score FROM range(4000)) "
               f"TO '{run_file}' (FORMAT parquet)")
    shell = f"'{DUCKRANK}' eval '{qrels}' '{run_file}' -m map -m P.1 -q --format trec | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("map")
    assert done.stderr == ""


def test_python_dash_m():
    done = subprocess.run([sys.executable, "-m", "duckrank", "--version"], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"duckrank {duckrank.__version__}"


def test_help_is_lazy():
    # `duckrank --help` must not pay for duckdb, pyarrow, pandas, polars, matplotlib or pyspark (what
    # keeps it fast; speed itself is bench/'s to measure, not a timed test's)
    probe = ("import sys, duckrank.cli; duckrank.cli.main(['--help'], standalone_mode=False); "
             "heavy = [m for m in ('duckdb', 'pyarrow', 'pandas', 'polars', 'matplotlib', 'pyspark') "
             "if m in sys.modules]; print('loaded:', ','.join(heavy))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "loaded: ", done.stdout


@pytest.mark.parametrize("command", ["eval", "compare"])
def test_the_help_lists_exactly_the_values_the_sql_accepts(command):
    """The CLI names the convention values in its help, from the registry; the SQL library decides what
    is valid: it accepts each value the help lists, and its message for a bad one lists the same."""
    from duckrank.options import CONVENTIONS, OPTIONS

    con = duckrank.connect()
    declared = {param.name: param for param in main.commands[command].params}
    shown = " ".join(run(command, "--help").stdout.split())
    worded = [(name, c.param, "convention_problems") for name, c in CONVENTIONS.items() if c.param.choices]
    for name, param, check in [*worded, ("gain", OPTIONS["gain"], "option_problems")]:
        listed = list(param.choices)
        text = " ".join(declared[name].help.split())
        assert all(re.search(rf"\b{re.escape(value)}\b", text) for value in listed), (name, text)
        assert f"; default {param.default}." in text and " ".join(param.help().split())[1:] in shown, name
        for value in listed:
            assert con.execute(f"SELECT duckrank.{check}({name} := ?)", [value]).fetchall()[0][0] is None
        message = con.execute(f"SELECT duckrank.{check}({name} := 'bogus')").fetchall()[0][0]
        assert message.startswith(f"{name} must be one of {', '.join(listed)}"), message
    assert {name for name, _, _ in worded} == {"ties", "empty", "unjudged", "duplicates"}


def test_compare_and_eval_share_the_option_declarations():
    """The conventions, columns and engine settings are declared once: the same flags, metavars and
    help on both commands (compare also spells -c as --complete and says what it changes there)."""
    from duckrank.cli.common import CONVENTIONS

    shared = [c.name for c in CONVENTIONS] + ["query_col", "doc_col", "score_col", "relevance_col", "threads",
                                              "memory_limit", "temp_dir", "output_path", "quiet"]
    evaluate = {p.name: p for p in main.commands["eval"].params}
    compare = {p.name: p for p in main.commands["compare"].params}
    for name in shared:
        assert set(evaluate[name].opts) <= set(compare[name].opts), name
        assert evaluate[name].metavar == compare[name].metavar, name
        assert name == "quiet" or compare[name].help.startswith(evaluate[name].help), name
    assert set(compare["complete"].opts) == {"-c", "--complete"}
    assert [c.flags for c in CONVENTIONS] == [tuple(evaluate[c.name].opts) for c in CONVENTIONS]


def test_engine_settings_stay_with_their_own_evaluation(data):
    """--threads and --memory-limit configure a database of their own: an evaluation run in the
    same process later (a notebook calling the CLI) does not inherit them."""
    from duckrank._library import shared_cursor

    def shared_settings():
        cursor = shared_cursor()
        try:
            return cursor.execute("SELECT current_setting('threads'), current_setting('memory_limit')").fetchall()
        finally:
            cursor.close()

    before = shared_settings()
    result = run("eval", data["qrels.csv"], data["run.csv"], "-m", "map", "--threads", "1", "--memory-limit", "300MB")
    assert result.exit_code == 0, result.output
    assert shared_settings() == before
