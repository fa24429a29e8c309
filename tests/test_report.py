"""duckrank report / plot: the page renders offline in a real browser, its numbers are compare's and
the measures' own, and bad input fails cleanly. One report of data/ (with a segment column) is
built once per module; the browser is launched once."""

from __future__ import annotations

import io
import os
import re
import statistics
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest
from helpers import run as cli

import duckrank

pytest.importorskip("matplotlib", reason="the report needs the extra: pip install 'duckrank[plot]'")

from browser import Browser, chromium_or_skip

REPO = Path(__file__).resolve().parent.parent
QRELS = str(REPO / "data" / "qrels.parquet")
MEASURES = ["map", "ndcg_cut.10", "P.10", "recip_rank"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """data/'s two runs with a device column (a segment), as Parquet files named a and b."""
    folder = tmp_path_factory.mktemp("report")
    runs = {}
    for name, source in (("a", "run.parquet"), ("b", "run_b.parquet")):
        path = folder / f"{name}.parquet"
        duckdb.sql(f"COPY (SELECT *, ['desktop', 'mobile', 'tablet'][CAST(substr(query_id, 2) AS INTEGER) % 3 + 1] "
                   f"AS device FROM '{REPO / 'data' / source}') TO '{path}' (FORMAT parquet)")
        runs[name] = str(path)
    return {"folder": str(folder), **runs}


@pytest.fixture(scope="module")
def built(inputs):
    path = os.path.join(inputs["folder"], "report.html")
    report = duckrank.report(QRELS, [inputs["a"], inputs["b"]], path, MEASURES, by="device", bootstrap=2000,
                             permutations=2000, run_names=["a", "b"])
    return report, path


class _Cells(HTMLParser):
    """The summary table's cells that carry data-name/data-value, row by row."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, str]] = []
        self.inside = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table":
            self.inside = attributes.get("id") == "summary-table"
        elif tag == "tr" and self.inside:
            self.rows.append({})
        elif tag == "td" and self.inside and "data-name" in attributes and self.rows:
            row = self.rows[-1]
            for key in ("data-value", "data-low", "data-high"):
                if key in attributes:
                    suffix = "" if key == "data-value" else key[4:]
                    row[f"{attributes['data-name']}{suffix}"] = attributes[key]

    def handle_endtag(self, tag):
        if tag == "table":
            self.inside = False


@pytest.mark.slow
def test_the_page_renders_offline_with_every_figure(built, tmp_path):
    path = built[1]
    page = Path(path).read_text(encoding="utf-8")
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert len(page.encode()) < 2_000_000
    browser = Browser(chromium_or_skip())
    try:
        browser.open(Path(path).as_uri())
        figures = browser.evaluate(
            "[...document.querySelectorAll('figure.plot')].map(f => { const r = f.querySelector('svg')"
            ".getBoundingClientRect(); return [f.dataset.kind, r.x, r.y + window.scrollY, r.width, r.height]; })")
        shot = browser.screenshot()
        requests, errors = browser.requests(), browser.errors()
    finally:
        browser.close()
    screenshot = Path(os.environ.get("DUCKRANK_SCREENSHOT", tmp_path / "report.png"))
    screenshot.write_bytes(shot)  # look at it: DUCKRANK_SCREENSHOT=/tmp/report.png pytest tests/test_report.py
    assert errors == []
    assert requests == [Path(path).as_uri()], "the page asked for something besides itself"
    assert [kind for kind, *_ in figures] == ["diff", "pr", "cutoff", "per-query", "distribution", "segments"]

    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("L")
    for kind, x, y, width, height in figures:
        assert width > 500 and height > 100, kind
        box = image.crop((int(x), int(y), int(x + width), int(y + height)))
        histogram = box.histogram()
        inked = sum(histogram[:200]) / (box.width * box.height)
        assert inked > 0.01, f"figure {kind} looks blank ({inked:.2%} of its pixels drawn)"


def test_the_summary_table_is_compares(built, inputs):
    report, path = built
    parser = _Cells()
    parser.feed(Path(path).read_text(encoding="utf-8"))
    shown = [row for row in parser.rows if row]
    expected = duckrank.compare(QRELS, [inputs["a"], inputs["b"]], MEASURES, bootstrap=2000, permutations=2000,
                                run_names=["a", "b"]).records()
    assert len(shown) == len(expected) == 8
    for cells, row in zip(shown, expected):
        for name in ("n", "mean", "diff", "relative_change", "p_adjusted"):
            assert (float(cells[name]) if name in cells else None) == row[name], name
        assert (float(cells["mean_ci-low"]), float(cells["mean_ci-high"])) == (row["mean_ci_low"], row["mean_ci_high"])
        if row["is_baseline"]:
            assert "ci-low" not in cells
        else:
            assert (float(cells["ci-low"]), float(cells["ci-high"])) == (row["ci_low"], row["ci_high"])
    records = {(p["measure"], p["run"]): p for p in report.data.diffs}
    for row in expected:
        if not row["is_baseline"]:
            panel = records[(row["metric"], row["run"])]
            assert (panel["n"], panel["record"]) == (row["n"], (row["wins"], row["ties"], row["losses"]))


def test_each_curve_point_is_the_measure_itself(built, inputs):
    data = built[0].data
    assert data.runs == ["a", "b"] and data.depth == 100
    assert set(data.curves) == {"P", "recall", "nDCG"}
    for name, run in (("a", inputs["a"]), ("b", inputs["b"])):
        direct = duckrank.evaluate(QRELS, run, ["P@10", "recall@100", "nDCG@5", "iprec_at_recall.0.50",
                                                "IPrec@0.25", "P@1"])
        assert dict(data.curves["P"][name])[10] == direct["P@10"]
        assert dict(data.curves["P"][name])[1] == direct["P@1"]
        assert dict(data.curves["recall"][name])[100] == direct["recall@100"]
        assert dict(data.curves["nDCG"][name])[5] == direct["nDCG@5"]
        assert dict(data.eleven[name])[0.5] == direct["iprec_at_recall.0.50"]
        assert dict(data.full[name])[0.25] == direct["IPrec@0.25"]
        assert [k for k, _ in data.curves["P"][name]] == [1, 2, 3, 5, 10, 20, 30, 50, 100]
        assert len(data.eleven[name]) == 11 and len(data.full[name]) == 21
    for figure in ("pr", "cutoff"):  # one legend entry, one series, per run
        svg = built[0].plot(figure).svg()
        assert [svg.count(f">{run}<") for run in ("a", "b")] == [1, 1]


def test_per_query_differences_and_distributions_from_the_values(built, inputs):
    data = built[0].data
    values = {}
    for name in ("a", "b"):
        rows = duckrank.evaluate(QRELS, inputs[name], ["ndcg_cut.10"], per_query=True).fetchall()
        values[name] = {query: value for query, _, value in rows}
    differences = sorted(((values["b"][q] - values["a"][q], q) for q in values["a"]), key=lambda p: (-p[0], p[1]))
    panel = next(p for p in data.diffs if p["measure"] == "ndcg_cut.10")
    assert not panel["sampled"] and [d for _, d in panel["points"]] == [d for d, _ in differences]
    assert panel["gained"] == [(q, d) for d, q in differences[:5]]
    assert panel["lost"] == [(q, d) for d, q in differences[::-1][:5]]
    stats = data.distributions["ndcg_cut.10"]["b"]
    assert stats["median"] == pytest.approx(statistics.median(values["b"].values()), abs=1e-12)
    assert stats["n"] == len(values["b"])
    segments = data.segment_distributions["ndcg_cut.10"]
    assert sorted(data.segments) == ["desktop", "mobile", "tablet"]
    assert sum(segments[(device, "b")]["n"] for device in data.segments) == len(values["b"])


def test_one_run_and_the_cli(inputs, tmp_path, monkeypatch):
    out = tmp_path / "one.html"
    arguments = ["report", QRELS, inputs["a"], "-o", str(out), "--bootstrap", "0"]
    monkeypatch.setattr(sys, "argv", ["/somewhere/bin/duckrank", *arguments])  # what the page records
    result = cli(*arguments)
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert 'id="summary-table"' in page and 'data-kind="pr"' in page and 'data-kind="per-query"' not in page
    assert f"<code>duckrank report {QRELS} {inputs['a']} -o {out} --bootstrap 0</code>" in page
    assert re.search(r"duckrank \d[^,]*, duckdb \d[^,]*, python \d[^,]*, matplotlib \d", page)

    figure = tmp_path / "diff.png"
    result = cli("plot", "diff", QRELS, inputs["a"], inputs["b"], "-o", str(figure),
                 "--bootstrap", "200", "--permutations", "200", "-m", "P.10")
    assert result.exit_code == 0, result.output
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("arguments, message", [
    (["--baseline", "nope"], "baseline 'nope' is not one of the runs"),
    (["-o", "{folder}/missing/r.html"], "does not exist; create it first"),
    (["-o", "{folder}"], "is a folder"),
    (["-o", "/sys/report.html"], "cannot write in /sys"),
    (["-m", "num_ret"], "compare tests means of per-query values"),
])
def test_bad_input_is_one_clear_error_and_no_file(inputs, arguments, message):
    folder = inputs["folder"]
    out = os.path.join(folder, "bad.html")
    arguments = [a.format(folder=folder) for a in arguments]
    command = ["report", QRELS, inputs["a"], inputs["b"], "--bootstrap", "0", "--permutations", "0"]
    if "-o" not in arguments:
        arguments += ["-o", out]
    result = cli(*command, *arguments)
    assert result.exit_code in (1, 2) and message in result.output, result.output
    assert "Traceback" not in result.output
    assert not os.path.exists(out)
    assert not [name for name in os.listdir(folder) if name.startswith(".bad.html")]


def test_without_the_extra_report_says_how_to_install_it(inputs, monkeypatch, tmp_path):
    import importlib.util

    found = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else found(name, *a))
    out = tmp_path / "r.html"
    result = cli("report", QRELS, inputs["a"], "-o", str(out))
    assert result.exit_code == 2 and not out.exists()
    assert result.output.strip() == "Error: plots need matplotlib, an optional extra: pip install 'duckrank[plot]'"
    code = ("import sys, duckrank; duckrank.evaluate('data/qrels.parquet', 'data/run.parquet', ['map']); "
            "duckrank.compare; assert 'matplotlib' not in sys.modules, 'import duckrank imported matplotlib'")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)


def test_a_comparison_draws_itself(inputs):
    comparison = duckrank.compare(QRELS, [inputs["a"], inputs["b"]], ["P.10"], bootstrap=200, permutations=200)
    for kind in ("diff", "per-query", "distribution"):
        svg = comparison.plot(kind)._repr_svg_()
        assert svg.startswith("<svg") and "P.10" in svg
    with pytest.raises(duckrank.OptionError, match=r"report\(qrels, runs\)\.plot\('pr'\)"):
        comparison.plot("pr")
    assert re.search(r"<svg", duckrank.compare(QRELS, [inputs["a"], inputs["b"]], ["P.10"], bootstrap=0,
                                               permutations=0, by="device").plot("distribution")._repr_html_())
