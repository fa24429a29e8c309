"""The duckrank command line: `duckrank eval|compare|report|plot|metrics|sql|convert|fuse`, one module per command.

Each command maps onto one facade function (duckrank.evaluation.compute, duckrank.comparison.compare,
duckrank.catalog.catalog, duckrank._library.install_sql, duckrank.inputs.read_table/write_table); the
modules parse options, report every bad one at once, and format what the SQL computed. They hold no
metric math, and what they share (the conventions' options from duckrank.options, errors, output)
is in duckrank.cli.common.

Imports of duckdb and the facade happen inside the commands so `duckrank --help` stays fast.
"""

from __future__ import annotations

import click

from duckrank import __version__
from duckrank.cli import compare, convert, evaluate, fuse, metrics, plot, report, sql
from duckrank.cli.common import CONTEXT_SETTINGS


@click.group(context_settings=CONTEXT_SETTINGS)
@click.version_option(__version__, "--version", prog_name="duckrank", message="%(prog)s %(version)s")
def main() -> None:
    """trec_eval-exact ranking metrics (nDCG, MAP, MRR, P@k, ERR, AUC, ...) at DuckDB speed.

    \b
      duckrank eval qrels.txt run.txt -m ndcg_cut.10 -m map
      duckrank eval qrels.parquet a.parquet b.parquet -m nDCG@10 -q --format csv
      duckrank eval --log clicks.parquet --label clicked -m auc -m gauc
      duckrank report qrels.parquet a.parquet b.parquet -o report.html
      duckrank metrics
      duckrank sql | duckdb my.db
      duckrank convert run.txt run.parquet
      duckrank fuse bm25.parquet dense.parquet --method rrf -o fused.parquet
    """


for command in (evaluate.eval_command, compare.compare_command, report.report_command, plot.plot_command,
                metrics.metrics_command, sql.sql_command, convert.convert_command, fuse.fuse_command):
    main.add_command(command)
