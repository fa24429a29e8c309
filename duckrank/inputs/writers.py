"""Writing a standard-column view to a file: Parquet, CSV, TSV, JSONL, or TREC text in trec_eval's
layouts (refusing rows that TREC text would read back as different data)."""

from __future__ import annotations

import duckdb

from duckrank._sql import sql_literal
from duckrank._sql import quote_identifier
from duckrank.errors import InputError, OptionError, quoted
from duckrank.inputs.paths import FORMATS


def _check_trec_writable(con: duckdb.DuckDBPyConnection, relation: str, kind: str) -> None:
    """TREC text cannot hold an id with whitespace (it would split into other fields) and trec_eval
    reads a grade as an integer (0.5 would come back as 0): refuse those rows rather than write a
    file that reads back as different data."""
    grade = ("relevance IS NULL OR relevance <> trunc(relevance)" if kind == "qrels" else "false")
    row = con.execute(
        f"SELECT query_id, doc_id, {'relevance' if kind == 'qrels' else 'NULL'} FROM {relation} "
        f"WHERE regexp_matches(CAST(query_id AS VARCHAR), '[ \\t\\n\\r\\v\\f]') "
        f"OR regexp_matches(CAST(doc_id AS VARCHAR), '[ \\t\\n\\r\\v\\f]') "
        f"OR coalesce(CAST(query_id AS VARCHAR), '') = '' OR coalesce(CAST(doc_id AS VARCHAR), '') = '' "
        f"OR {grade} LIMIT 1").fetchall()
    if not row:
        return
    query_id, doc_id, relevance = row[0]
    if query_id in (None, "") or doc_id in (None, ""):  # the line would lose a field
        raise InputError(f"cannot write TREC text: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} is "
                         f"empty, which TREC "
                         "text cannot hold (the line would lose a field); fill in the id or write Parquet, CSV "
                         "or JSONL")
    if any(ch in str(value) for value in (query_id, doc_id) for ch in " \t\n\r\v\f"):
        raise InputError(f"cannot write TREC text: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} holds "
                         "whitespace, which TREC text reads as a field separator; write Parquet, CSV or JSONL")
    raise InputError(f"cannot write TREC qrels: query_id {quoted(query_id)}, doc_id {quoted(doc_id)} has relevance "
                     f"{quoted(relevance)}, and trec_eval reads grades as integers (it would read "
                     f"{int(relevance) if relevance is not None and relevance == relevance else 'nothing'}); "
                     "round the grades or write Parquet, CSV or JSONL")


def write_table(con: duckdb.DuckDBPyConnection, view: str, path: str, fmt: str) -> None:
    """Write a standard-column view to `path` in `fmt` (TREC text in trec_eval's layouts)."""
    target = sql_literal(path)
    relation = quote_identifier(view)
    if fmt == "parquet":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT parquet)").fetchall()
    elif fmt in ("csv", "tsv"):
        sep = "\t" if fmt == "tsv" else ","
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT csv, HEADER, DELIMITER '{sep}')").fetchall()
    elif fmt == "jsonl":
        con.execute(f"COPY (SELECT * FROM {relation}) TO {target} (FORMAT json)").fetchall()
    elif fmt == "trec_run":
        _check_trec_writable(con, relation, "run")
        columns = [c for (c, *_rest) in con.execute(f"DESCRIBE {relation}").fetchall()]
        run_id = "run_id" if "run_id" in columns else "'duckrank'"
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 'Q0', doc_id, "
            f"row_number() OVER (PARTITION BY query_id ORDER BY score DESC, doc_id DESC), score, {run_id}) "
            f"FROM {relation} ORDER BY query_id, score DESC, doc_id DESC) TO {target} "
            f"(FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    elif fmt == "trec_qrels":
        _check_trec_writable(con, relation, "qrels")
        con.execute(
            f"COPY (SELECT concat_ws(' ', query_id, 0, doc_id, CASE WHEN relevance = round(relevance) "
            f"THEN CAST(CAST(relevance AS BIGINT) AS VARCHAR) ELSE CAST(relevance AS VARCHAR) END) FROM {relation} "
            f"ORDER BY query_id, doc_id) TO {target} (FORMAT csv, HEADER false, QUOTE '', DELIMITER '\x01')").fetchall()
    else:
        raise OptionError(f"output format must be one of {', '.join(FORMATS)}; got {quoted(fmt)}")
