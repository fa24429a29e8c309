"""Output for the CLI: text formatters and atomic file writing.

Presentation only: values arrive computed (by the SQL library) and leave formatted. Nothing
here imports duckdb, so `duckrank --help` stays fast.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import itertools
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any

#: Every --format value, in the order --help lists them.
FORMATS = ("table", "trec", "tsv", "csv", "json", "jsonl", "parquet", "markdown", "latex")
#: Formats for people: values rounded to 4 decimals, like trec_eval.
HUMAN_FORMATS = ("table", "markdown", "latex")
#: Formats for programs: full double precision.
MACHINE_FORMATS = ("tsv", "csv", "json", "jsonl", "parquet")

#: -o FILE's extension picks the format when --format is not given.
EXTENSION_FORMATS = {
    ".tsv": "tsv",
    ".tab": "tsv",
    ".csv": "csv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".md": "markdown",
    ".markdown": "markdown",
    ".tex": "latex",
}


def format_from_extension(path: str | None) -> str | None:
    if not path or path == "-":
        return None
    return EXTENSION_FORMATS.get(Path(path).suffix.lower())


# ---------------------------------------------------------------------------------------------
# values


def display_value(value: Any, integer: bool = False) -> str:
    """A value as trec_eval prints it: counters as integers, everything else with 4 decimals."""
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if integer:
        return str(int(round(value)))
    if isinstance(value, int | float):
        return f"{value:.4f}"
    return str(value)


def trec_line(measure: str, query_id: str, value: Any, integer: bool = False) -> str:
    """One line in trec_eval's exact layout: "%-22s\\t%s\\t%.4f" (counters "%ld", text "%s")."""
    if isinstance(value, str):
        shown = value
    elif integer:
        shown = str(int(round(value)))
    elif value is None or (isinstance(value, float) and math.isnan(value)):
        shown = "  -nan"  # trec_eval's printf("%6.4f") of its NaNs (0/0 sets the sign bit)
    else:
        shown = f"{value:.4f}"
    return f"{measure:<22}\t{query_id}\t{shown}\n"


def _json_value(value: Any) -> Any:
    # JSON has no NaN or infinity: write null rather than invalid JSON.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# ---------------------------------------------------------------------------------------------
# machine formats: csv, tsv, json, jsonl (parquet goes through DuckDB COPY)


def write_machine(fmt: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], out: IO[str]) -> None:
    """Write records with full precision (floats as their shortest round-trip repr)."""
    if fmt in ("csv", "tsv"):
        writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n")
        writer.writerow(columns)
        for row in rows:
            writer.writerow(row)
    elif fmt == "jsonl":
        for row in rows:
            out.write(json.dumps({c: _json_value(v) for c, v in zip(columns, row)}, ensure_ascii=False))
            out.write("\n")
    elif fmt == "json":
        out.write("[")
        first = True
        for row in rows:
            out.write("\n  " if first else ",\n  ")
            out.write(json.dumps({c: _json_value(v) for c, v in zip(columns, row)}, ensure_ascii=False))
            first = False
        out.write("\n]\n" if not first else "]\n")
    else:  # pragma: no cover - callers pass only the formats above
        raise ValueError(f"not a machine format: {fmt}")


# ---------------------------------------------------------------------------------------------
# human formats: table, markdown, latex


def write_human(
    fmt: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    out: IO[str],
    align: Sequence[str] | None = None,
) -> None:
    """Write already-formatted cells; align holds 'l' or 'r' per column (default left)."""
    align = list(align or ["l"] * len(columns))
    if fmt == "table":
        _write_table(columns, rows, out, align)
    elif fmt == "markdown":
        _write_markdown(columns, rows, out, align)
    elif fmt == "latex":
        _write_latex(columns, rows, out, align)
    else:  # pragma: no cover
        raise ValueError(f"not a human format: {fmt}")


def _write_table(columns, rows, out, align) -> None:
    widths = [len(c) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells):
        parts = [cell.rjust(w) if a == "r" else cell.ljust(w) for cell, w, a in zip(cells, widths, align)]
        return "  ".join(parts).rstrip() + "\n"

    out.write(line(columns))
    out.write("  ".join("-" * w for w in widths) + "\n")
    for row in rows:
        out.write(line(row))


def _markdown_cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _write_markdown(columns, rows, out, align) -> None:
    out.write("| " + " | ".join(_markdown_cell(c) for c in columns) + " |\n")
    out.write("|" + "|".join("---:" if a == "r" else ":---" for a in align) + "|\n")
    for row in rows:
        out.write("| " + " | ".join(_markdown_cell(c) for c in row) + " |\n")


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


class Latex(str):
    """A cell already written in LaTeX (a superscript): the LaTeX writer leaves it unescaped."""


def latex_escape(text: str) -> str:
    if isinstance(text, Latex):
        return text
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _write_latex(columns, rows, out, align) -> None:
    # booktabs rules: \usepackage{booktabs} in the preamble.
    out.write("\\begin{tabular}{" + "".join(align) + "}\n\\toprule\n")
    out.write(" & ".join(latex_escape(c) for c in columns) + " \\\\\n\\midrule\n")
    for row in rows:
        out.write(" & ".join(latex_escape(c) for c in row) + " \\\\\n")
    out.write("\\bottomrule\n\\end{tabular}\n")


# ---------------------------------------------------------------------------------------------
# where output goes


def same_file(a: str, b: str) -> bool:
    """True when paths a and b name the same file (also through links and relative paths)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Descriptors by name: /dev/stdout may lead to a regular file (`> out.txt`), which is still the
# shell's to truncate or append to, not duckrank's to replace.
_DESCRIPTOR = re.compile(r"/dev/(stdout|stderr|fd/\d+)|/proc/(self|\d+)/fd/\d+")


def is_stream(path: str) -> bool:
    """Whether `path` names something to stream to rather than replace: a device (/dev/null), a
    pipe or FIFO, a socket, or a descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N)."""
    if _DESCRIPTOR.fullmatch(os.path.abspath(path)):
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
    """Yield a temporary path; on success its bytes become `path`'s.

    A regular file (or a new one) is replaced atomically: the temporary file sits in the same
    folder and is renamed onto it, so a failure anywhere leaves no partial output and an existing
    file untouched. A symbolic link is written through, to its target (the link stays a link). A
    device, pipe or descriptor (/dev/null, a FIFO, /dev/stdout) is never replaced: the finished
    bytes are copied into it. The temporary name keeps the extension, for writers that look at it.
    """
    if is_stream(path):
        from duckrank import _scratch

        tmp = _scratch.path(f"output-{os.getpid()}-{next(_counter)}{Path(path).suffix}")
        try:
            yield tmp
            with open(tmp, "rb") as source, open(path, "wb") as target:
                shutil.copyfileobj(source, target, 1 << 20)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return
    target = Path(os.path.realpath(path))  # through a link to its target, which stays linked
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=f".tmp{target.suffix}", dir=target.parent)
    os.close(fd)
    try:
        yield tmp
        if target.exists():
            mode = target.stat().st_mode & 0o7777
        else:
            mode = 0o666 & ~_umask()
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError) and error.errno == errno.ENOSPC and not error.filename:
            raise OSError(errno.ENOSPC, error.strerror, str(target.parent)) from None  # name the full folder
        raise


_counter = itertools.count()


@contextlib.contextmanager
def text_output(path: str | None) -> Iterator[IO[str]]:
    """A text stream: stdout when path is None or '-'; a device, pipe or descriptor written as it
    goes; else an atomically written file."""
    if path is None or path == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    if is_stream(path):
        with open(path, "w", encoding="utf-8", newline="") as stream:
            yield stream
        return
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as stream:
        yield stream


def copy_to_stdout(tmp: str) -> None:
    """Stream a finished binary file (parquet) to stdout."""
    sys.stdout.flush()
    out = sys.stdout.buffer
    with open(tmp, "rb") as stream:
        while chunk := stream.read(1 << 20):
            out.write(chunk)
    out.flush()
