"""The report and plots with hostile names (issue 25, "Report and plots").

Labels are text, never markup ($...$ is not mathtext, a leading _ keeps its legend entry); runs
are labelled by their shortest unique file stem, with the paths once in the data table; long names
are shortened with an ellipsis, without a matplotlib warning; --empty nan / skip and a run given
twice get true messages that say what the command-line user can do. Budget: about 40 s.
"""

from __future__ import annotations

import re
import shutil
import warnings
from pathlib import Path

import duckdb
import pytest
from helpers import run as cli

import duckrank

pytest.importorskip("matplotlib", reason="the report needs the extra: pip install 'duckrank[plot]'")

from duckrank import plots  # noqa: E402
from duckrank.reporting import short_names  # noqa: E402

DATA = Path(__file__).resolve().parent.parent / "data"
FAST = ["--permutations", "200", "--bootstrap", "200"]


def texts(svg: str) -> list[str]:
    """The text of an inline SVG (svg.fonttype none keeps text as <text> elements)."""
    import html

    return [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    names = {"frac": "$\\frac{1}{0}$.parquet", "caret": "$x^$.parquet", "italic": "a$b$c.parquet",
             "under": "_under.parquet"}
    paths = {key: tmp_path / name for key, name in names.items()}
    for index, path in enumerate(paths.values()):
        shutil.copy(DATA / ("run.parquet" if index % 2 == 0 else "run_b.parquet"), path)
    return paths


@pytest.mark.parametrize("kind", ["pr", "cutoff", "per-query", "diff", "distribution"])
def test_names_with_dollars_and_underscores_are_text(hostile, tmp_path, kind):
    out = tmp_path / f"{kind}.svg"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = cli("plot", kind, DATA / "qrels.parquet", *hostile.values(), "-o", out, "-m", "map", *FAST)
    assert result.exit_code == 0, result.output
    shown = " ".join(texts(out.read_text()))
    for stem in ("$\\frac{1}{0}$", "$x^$", "a$b$c"):
        if kind != "per-query" or stem != "$\\frac{1}{0}$":  # the baseline is in every title, the others in one each
            assert stem in shown, (stem, shown)
    if kind in ("pr", "cutoff", "distribution"):  # a legend or a tick per run: _under is there too
        assert "_under" in shown


def test_report_with_dollar_names_writes_the_page(hostile, tmp_path):
    out = tmp_path / "report.html"
    result = cli("report", DATA / "qrels.parquet", *hostile.values(), "-o", out, "-m", "map", *FAST)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "$\\frac{1}{0}$" in page and "_under" in page


def test_runs_are_labelled_by_their_shortest_unique_stem(tmp_path):
    folder = tmp_path / "experiments" / "runs"
    folder.mkdir(parents=True)
    (tmp_path / "old").mkdir()
    shutil.copy(DATA / "run.parquet", folder / "bm25.parquet")
    shutil.copy(DATA / "run_b.parquet", folder / "dense.parquet")
    shutil.copy(DATA / "run_b.parquet", tmp_path / "old" / "dense.parquet")
    runs = [folder / "bm25.parquet", folder / "dense.parquet", tmp_path / "old" / "dense.parquet"]
    out = tmp_path / "report.html"
    result = cli("report", DATA / "qrels.parquet", *runs, "--baseline", runs[1], "-o", out, "-m", "map", *FAST)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert "map: bm25 minus runs/dense" in page and "map: old/dense minus runs/dense" in page
    assert "baseline runs/dense;" in page
    data = page[page.index('<section id="data">'):page.index("</section>")]
    for name, path in zip(["bm25", "runs/dense", "old/dense"], runs):
        assert f'<th scope="row">{name}</th><td class="run"><code>{path}</code></td>' in data
    assert page.count(str(folder / "bm25.parquet")) == 1 + page.count("<code>duckrank report")  # once, and the command


@pytest.mark.parametrize("paths, names", [
    (["a/b/bm25.parquet", "c/bm25.txt.gz", "x"], ["b/bm25", "c/bm25", "x"]),
    (["x/runs/bm25.parquet", "x/runs/dense.parquet", "y/dense.parquet"], ["bm25", "runs/dense", "y/dense"]),
    (["run.1.txt", "run.2.txt"], ["run.1", "run.2"]),
    (["r.parquet", "r.parquet"], None),
    (["runs/a.txt", "a.txt"], None),
    (["$\\frac{1}{0}$.parquet", "r.parquet"], ["$\\frac{1}{0}$", "r"]),
])
def test_short_names(paths, names):
    assert short_names(paths) == names


def test_long_names_are_shortened_without_a_warning(tmp_path):
    long_run = tmp_path / ("r" * 240 + ".parquet")
    segment = "s" * 5000
    duckdb.sql(f"COPY (SELECT *, CASE WHEN query_id < 'q020' THEN '{segment}' ELSE 'short' END AS device "
               f"FROM '{DATA / 'run.parquet'}') TO '{long_run}'")
    other = tmp_path / "b.parquet"
    duckdb.sql(f"COPY (SELECT *, 'short' AS device FROM '{DATA / 'run_b.parquet'}') TO '{other}'")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        report = duckrank.report(str(DATA / "qrels.parquet"), [str(long_run), str(other)], measures=["map"],
                                 by="device", permutations=200, bootstrap=200)
        for kind in ("pr", "cutoff", "per-query", "diff", "distribution", "segments"):
            shown = texts(report.plot(kind).svg())
            assert all(len(text) < 200 for text in shown), (kind, max(shown, key=len))
            if kind == "segments":
                assert any("\u2026" in text and text.startswith("device=sss") for text in shown)
    assert plots.label("r" * 240) == "r" * 19 + "\u2026" + "r" * 20


def test_label_is_text():
    assert plots.label("$x^$") == r"\$x^\$"
    assert plots.label("_under") == "\u200b_under"
    assert plots.label("a\\$b") == "a\\\\$b"


def test_report_empty_nan_without_relevant_docs_is_a_clear_error(tmp_path):
    qrels = tmp_path / "norel.parquet"
    duckdb.sql(f"COPY (SELECT query_id, doc_id, 0 AS relevance FROM '{DATA / 'qrels.parquet'}') TO '{qrels}'")
    result = cli("report", qrels, DATA / "run.parquet", DATA / "run_b.parquet", "--empty", "nan", "-o",
                 tmp_path / "r.html", *FAST)
    assert result.exit_code == 1, result.output
    assert "This is a bug" not in result.output and "NaN to integer" not in result.output
    assert "use --empty skip or 'zero'" in result.stderr
    one = cli("report", qrels, DATA / "run.parquet", "--empty", "nan", "-o", tmp_path / "one.html")
    assert one.exit_code == 0, one.output


def test_empty_skip_with_every_query_skipped_says_so(tmp_path):
    qrels = tmp_path / "norel.parquet"
    duckdb.sql(f"COPY (SELECT query_id, doc_id, 0 AS relevance FROM '{DATA / 'qrels.parquet'}') TO '{qrels}'")
    for command in (["report", "-o", tmp_path / "r.html"], ["eval"]):
        result = cli(command[0], qrels, DATA / "run.parquet", DATA / "run_b.parquet", "--empty", "skip",
                     *command[1:])
        assert result.exit_code == 1, result.output
        assert "no query_id in common" not in result.stderr
        assert "share 50 queries, but none has a relevant doc, and --empty skip leaves such queries out; use " \
               "--empty zero or --empty nan to score them" in result.stderr


@pytest.mark.parametrize("command", ["report", "plot", "compare"])
def test_the_same_run_twice_says_what_the_cli_can_do(tmp_path, command):
    extra = {"report": ["-o", tmp_path / "r.html"], "plot": ["-o", tmp_path / "p.svg"], "compare": []}[command]
    result = cli(*([command, "pr"] if command == "plot" else [command]), DATA / "qrels.parquet", DATA / "run.parquet", DATA / "run.parquet", *extra)
    assert result.exit_code == 1, result.output
    assert "run_names=" not in result.stderr
    assert "give each run file once (to compare a run with itself, give a copy or a link to it under another " \
           "name)" in result.stderr


def test_trec_runs_are_labelled_by_their_tags(tmp_path):
    paths = []
    for name, source, tag in (("a", "run.parquet", "bm25"), ("b", "run_b.parquet", "dense")):
        path = tmp_path / f"{name}.txt"
        duckdb.sql(f"COPY (SELECT query_id, 'Q0', doc_id, row_number() OVER (PARTITION BY query_id ORDER BY score DESC), "
                   f"score, '{tag}' FROM '{DATA / source}') TO '{path}' (FORMAT csv, DELIMITER ' ', HEADER false)")
        paths.append(path)
    out = tmp_path / "report.html"
    result = cli("report", DATA / "qrels.parquet", *paths, "--baseline", "dense", "-o", out, "-m", "map", *FAST)
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert f'<th scope="row">bm25</th><td class="run"><code>{paths[0]}</code></td>' in page
    assert "map: bm25 minus dense" in page and "baseline dense;" in page
