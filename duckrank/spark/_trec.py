"""TREC text on Spark: trec_eval's run and qrels files read by Spark's line reader under the DuckDB
engine's rules (duckrank/inputs/trec.py: fields split at runs of C's isspace(), comments,
blank lines, atof's and atol's values read in full or refused), so that both engines score the same
rows. Spark's CSV reader takes one delimiter, where a TREC line's fields are separated by runs of
spaces and tabs (trec_eval's own runs pad their scores): the lines are read whole (split at '\\n'
only, as trec_eval splits them) and split here.

One Spark job checks every line before anything is scored, grouped by input split so that a bad
line is named by its number: a row's place in its split (monotonically_increasing_id counts a
partition's rows in order) plus the lines of the splits before it. A bad local file is then read by
the DuckDB engine's reader, whose message names the file, the line and the fix; a remote one gets a
message from here naming the same line. A UTF-8 byte-order mark, which Hadoop's line reader drops
(trec_eval keeps it, DuckDB refuses it), is looked for in the file's first bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from duckrank.errors import InputError, quoted
from duckrank.inputs.trec import DECIMAL, GRADE, HEX, INTEGER, LAYOUTS, SHAPES

_SPACE = "[ \\t\\n\\x0B\\f\\r]"  # C's isspace(), as a Java regex (Java's own \s is the same six)
_BOM_BYTES = b"\xef\xbb\xbf"
# The codecs Hadoop's text reader picks by a file's name; DuckDB picks by the bytes (gzip, zstd).
_SPARK_CODECS = {".gz": "gzip", ".zst": "zstd", ".bz2": "bzip2", ".deflate": "deflate", ".lz4": "lz4",
                 ".snappy": "snappy"}


def _full(pattern: str) -> str:
    """A Java regex matching the whole field: \\z, not $, which also matches before a final line
    terminator (U+2028, U+0085, which are parts of a field for trec_eval)."""
    return f"\\A(?:{pattern})\\z"


def _compression_problem(path: str, kind: str, shown: str) -> str | None:
    """Why Spark would read a local file's bytes otherwise than DuckDB: Spark decompresses by the
    name (.gz), DuckDB by the bytes (gzip data named run.txt, plain text named run.txt.gz)."""
    from duckrank.inputs.paths import compression_of

    by_bytes = compression_of(path)
    suffix = os.path.splitext(path)[1]  # Hadoop's match is case-sensitive: run.GZ is read as it is
    by_name = _SPARK_CODECS.get(suffix)
    if by_bytes == by_name:
        return None
    if by_bytes is None:
        return (f"{kind} file {shown} is named {suffix} but is not {by_name}-compressed, and the Spark engine "
                f"decompresses by the name; rename it without {suffix}")
    wanted = {"gzip": ".gz", "zstd": ".zst"}[by_bytes]
    return (f"{kind} file {shown} is {by_bytes}-compressed but not named {wanted}, and the Spark engine decompresses "
            f"by the name; rename it to end in {wanted}, or decompress it")


def _lines(spark: Any, paths: list[str]) -> Any:
    """The files' lines as trec_eval splits them (at '\\n' only: a '\\r' stays, as whitespace)."""
    return spark.read.option("lineSep", "\n").text(paths)


def _parsed(lines: Any, fmt: str, keep: tuple[str, ...] = ()) -> Any:
    """Each line (with the `keep` columns) with its fields, whether it is a comment, whether it holds
    data, its value as DuckDB reads it, and what is wrong with it (NULL when nothing is). One select
    per step: Spark does not merge a step into the next when that would compute it twice."""
    from pyspark.sql import functions as F

    run = fmt == "trec_run"
    value, trimmed, text, number, count = (F.col(name) for name in ("value", "trimmed", "text", "number", "count"))
    lines = lines.select(*keep, value, F.regexp_replace(value, f"\\A{_SPACE}+|{_SPACE}+\\z", "").alias("trimmed"))
    comment = (trimmed if run else value).startswith("#")  # a qrels comment starts the line itself
    lines = lines.select(*keep, value, F.split(trimmed, f"{_SPACE}+").alias("fields"), comment.alias("comment"),
                         ((trimmed != "") & ~comment).alias("data"))
    lines = lines.select("*", F.size("fields").alias("count"),
                         F.try_element_at("fields", F.lit(5 if run else 4)).alias("text"))
    if run:  # atof's value when the whole field is a decimal number or a C99 hex float, if finite
        parsed = (F.when(text.rlike(_full(DECIMAL)), text)
                  .when(text.rlike(_full(HEX)), F.when(F.lower(text).contains("p"), text)
                        .otherwise(F.concat(text, F.lit("p0")))).try_cast("double"))
        atof = F.col("atof")
        lines = lines.select("*", parsed.alias("atof"))
        lines = lines.select("*", F.when(~F.isnan(atof) & (F.abs(atof) != float("inf")), atof).alias("number"))
        shape_ok = count >= 6
    else:  # atol's value when the whole field is an integer, or a fraction whose integer part it reads
        whole = F.regexp_extract(text, "^[+-]?[0-9]*", 0)
        parsed = (F.when(text.rlike(_full(INTEGER)), text.try_cast("bigint"))
                  .when(text.rlike(_full(GRADE)), F.when(whole.isin("", "+", "-"), F.lit(0).cast("bigint"))
                        .otherwise(whole.try_cast("bigint")))).cast("double")
        lines = lines.select("*", parsed.alias("number"))
        shape_ok = count == 4
    what = "score" if run else "relevance"
    read_as = "a finite number" if run else "an integer"
    data = F.col("data")
    problem = (F.when(value.contains("\x00"), F.lit("holds a NUL byte, where trec_eval stops reading the file"))
               .when(~F.is_valid_utf8(value), F.lit("is not UTF-8 text"))
               .when(data & ~shape_ok, F.concat(F.lit("has "), count.cast("string"),
                                                F.lit(f" fields, but a TREC {fmt.removeprefix('trec_')} line has "
                                                      f"{SHAPES[fmt]}")))
               .when(data & number.isNull(), F.concat(F.lit(f"has the {what} '"), text,
                                                      F.lit(f"', which is not {read_as} as trec_eval reads it"))))
    return lines.select(*keep, value, "fields", "comment", "data", number, problem.alias("problem"))


def read(spark: Any, path: str, fmt: str, kind: str, shown: str) -> tuple[Any, str | None]:
    """A DataFrame (query_id, doc_id, score or relevance) of the TREC file at `path` (`shown` names
    it in messages), and for a run the tag of its last line (trec_eval's runid); an InputError for a
    line DuckDB's reader refuses, or one Spark cannot read as DuckDB reads it."""
    local = os.path.isfile(path)
    if local:
        problem = _compression_problem(path, kind, shown)
        if problem:
            raise InputError(problem)
    if _starts_with_bom(spark, path):
        _refuse(path, fmt, kind, local, f"{kind} file {shown} starts with a UTF-8 byte-order mark, which trec_eval "
                                        f"reads as part of the first query id; remove it")
    found = list(checked(spark, [path], fmt).values())
    if not found:  # no line at all
        _refuse(path, fmt, kind, local, f"{kind} file {shown} is empty: there is nothing to evaluate")
    if found[0].problem is not None:
        line, text, what = found[0].problem
        shown_text = "" if text is None else f" {quoted(text.removesuffix(chr(13)))}"
        _refuse(path, fmt, kind, local, f"{kind} file {shown}, line {line}{shown_text} {what}; fix the line, or name "
                                        f"the format with --{kind}-format")
    return rows(_lines(spark, [path]), fmt), found[0].tag


def rows(lines: Any, fmt: str, keep: tuple[str, ...] = ()) -> Any:
    """The data lines (with the `keep` columns) as (query_id, doc_id, score or relevance)."""
    _, value, _ = LAYOUTS[fmt]
    return _parsed(lines, fmt, keep).where("data").selectExpr(
        *keep, "try_element_at(fields, 1) AS query_id", "try_element_at(fields, 3) AS doc_id", f"number AS {value}")


@dataclass(frozen=True)
class Checked:
    """What checking a file's lines found: its first bad line (number, text or None, what is wrong)
    or None, and a run's tag of its last line."""

    problem: tuple[int, str | None, str] | None
    tag: str | None


def checked(spark: Any, paths: list[str], fmt: str) -> dict[str, Checked]:
    """Each file's (by Spark's file URI) lines checked, in one Spark job aggregated per input split
    (a file, a block of it): a line's number is its row's place in its split plus the lines of the
    splits before it. A file without lines is left out."""
    from pyspark.sql import functions as F

    lines = _lines(spark, paths).select("value", F.col("_metadata.file_path").alias("file"),
                                        F.col("_metadata.file_block_start").alias("split"),
                                        F.monotonically_increasing_id().alias("row"))
    aggregates = [F.count(F.lit(1)).alias("lines"), F.min("row").alias("first_row"), F.max("row").alias("last_row"),
                  F.min(F.when(F.col("problem").isNotNull(), F.struct("row", "problem", "value"))).alias("bad")]
    if fmt == "trec_run":
        aggregates.append(F.max(F.when(F.col("data"), F.struct("row", F.try_element_at("fields", F.lit(6)).alias("tag"))))
                          .alias("last"))
    else:  # qrels comments, few, to find two in a row
        aggregates.append(F.collect_list(F.when(F.col("comment"), F.col("row"))).alias("comments"))
    files: dict[str, list] = {}
    for split in _parsed(lines, fmt, ("file", "split", "row")).groupBy("file", "split").agg(*aggregates).collect():
        files.setdefault(split["file"], []).append(split)
    return {file: _checked_file(sorted(splits, key=lambda split: split["split"]), fmt)
            for file, splits in files.items()}


def _checked_file(splits: list, fmt: str) -> Checked:
    """One file's check from its splits' aggregates, in file order."""
    offsets, total = [], 0
    for split in splits:
        offsets.append(total)
        total += split["lines"]

    def line(index: int, row: int) -> int:
        return offsets[index] + row - splits[index]["first_row"] + 1

    problems = [(line(i, split["bad"]["row"]), split["bad"]["value"], split["bad"]["problem"])
                for i, split in enumerate(splits) if split["bad"] is not None]
    if fmt == "trec_qrels":
        comments = [(i, row) for i, split in enumerate(splits) for row in sorted(split["comments"])]
        for (i, previous), (j, row) in zip(comments, comments[1:]):
            if (i == j and row == previous + 1) or (j == i + 1 and previous == splits[i]["last_row"]
                                                    and row == splits[j]["first_row"]):
                problems.append((line(j, row), None, "is a '#' line right after another: trec_eval skips one "
                                                     "comment line, then reads the next line as a judgment"))
                break
    tags = [split["last"]["tag"] for split in splits if fmt == "trec_run" and split["last"] is not None]
    return Checked(min(problems, key=lambda problem: problem[0]) if problems else None, tags[-1] if tags else None)


def _starts_with_bom(spark: Any, path: str) -> bool:
    """Whether the file's first bytes (decompressed as Spark decompresses them) are a UTF-8 byte-order
    mark, which Hadoop's line reader drops and trec_eval keeps. Read through Spark's own file system
    classes, so that a remote file is read where it lives; a Spark Connect session has none to reach,
    and its files go unchecked."""
    try:
        jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
    except Exception:  # noqa: BLE001 - Spark Connect: no JVM in this process
        return False
    file = jvm.org.apache.hadoop.fs.Path(path)
    stream = file.getFileSystem(conf).open(file)
    try:
        codec = jvm.org.apache.hadoop.io.compress.CompressionCodecFactory(conf).getCodec(file)
        head = codec.createInputStream(stream) if codec is not None else stream
        return bytes(head.read() & 0xFF for _ in range(len(_BOM_BYTES))) == _BOM_BYTES
    finally:
        stream.close()


def _refuse(path: str, fmt: str, kind: str, local: bool, message: str) -> None:
    """Raise the DuckDB engine's own message for a bad local file (its reader names the line and
    the fix); `message` for a remote file, or for a line that Spark cannot read as DuckDB does."""
    if local:
        import duckdb

        from duckrank.inputs import read_table

        con = duckdb.connect()
        try:
            read_table(con, path, kind, fmt=fmt)
        finally:
            con.close()
        message += " (the DuckDB engine reads this file: use --engine duckdb)"
    raise InputError(message)
