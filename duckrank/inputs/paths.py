"""Where an input's bytes come from: paths, globs, standard input and pipes, gzip or zstd
compression, and the format a file's name or first line tells."""

from __future__ import annotations

import atexit
import glob
import gzip
import os
import re
import shutil
import stat
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from duckrank._sql import fresh_name
from duckrank.errors import InputError, quoted_path

FORMATS = ("parquet", "csv", "tsv", "jsonl", "trec_run", "trec_qrels")
_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".parq": "parquet", ".csv": "csv", ".tsv": "tsv",
             ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl"}


@dataclass(frozen=True)
class Source:
    """An input path, decided once where it is first read: every later step reads these fields,
    none parses the path (or a message's name for it) again."""

    given: str  # as the user gave it ('-': standard input)
    shown: str  # as messages name it: 'data/run.parquet', or '-' (standard input)
    path: str  # where its bytes are: the file, folder or glob, or standard input's or a pipe's copy
    stdin: bool
    is_glob: bool  # read as a glob (is_glob): DuckDB expands it
    is_file: bool  # one file, neither a folder nor a glob
    # gzip, zstd or None: a file's by its bytes, a glob's by its name (compression_of)
    compression: str | None
    duckdb_path: str  # the name DuckDB reads: the glob, else exactly this file or folder (exact_path)


def source_of(given: str | os.PathLike, kind: str, literal: bool | None, stdin: StandardInput) -> Source:
    """The input path `given` (not a table name), decided: standard input (into `stdin`'s copy) and
    pipes copied once (their bytes can be read once), the glob decision (is_glob), the compression;
    an InputError when nothing is there."""
    text, from_stdin = str(given), is_stdin(given)
    shown = "'-' (standard input)" if from_stdin else quoted_path(text)
    if from_stdin:
        text = stdin.path(kind)
    elif is_pipe(text):
        text = pipe_copy(text)
    elif not exists(text, literal):
        read_as = (" (read literally: no file has that very name; without --literal / literal=True a "
                   "glob is expanded)" if literal and GLOB_CHARACTERS.search(text) else "")
        raise InputError(f"{kind} file {shown} not found (looked from {os.getcwd()}){read_as}; check the "
                         f"path, or give '-' to read standard input")
    glob_read = is_glob(text, literal)
    return Source(str(given), shown, text, from_stdin, glob_read, os.path.isfile(text) and not glob_read,
                  compression_of(text), text if glob_read else exact_path(text))


def detect_format(path: str | os.PathLike, kind: str = "run", *, shown: str | None = None) -> str:
    """The format of a file from its name (less any .gz/.zst), or for TREC text from its first line
    that holds fields and is no comment (decompressed, if the file is gzip or zstd). `shown` names
    the file in the message, if not its path (standard input's temporary copy)."""
    text = str(path)
    return _format_by_name(text) or format_of(text, compression_of(text), kind, shown)


def _format_by_name(path: str) -> str | None:
    if os.path.isdir(path):
        return "parquet"
    name = _strip_compression(path.lower())
    return next((fmt for suffix, fmt in _SUFFIXES.items() if name.endswith(suffix)), None)


def format_of(path: str, compression: str | None, kind: str, shown: str | None = None) -> str:
    """detect_format, for a path whose compression is decided (a Source's)."""
    by_name = _format_by_name(path)
    if by_name is not None:
        return by_name
    fields = len(first_data_line(head_of(path, compression, kind, shown)).split())
    if fields >= 6:  # trec_eval ignores anything after the sixth field
        return "trec_run"
    if fields == 4:
        return "trec_qrels"
    expected = "run (query_id Q0 doc_id rank score run_id)" if kind == "run" else "qrels (query_id 0 doc_id relevance)"
    raise InputError(
        f"cannot tell the format of {kind} file {shown or quoted_path(path)}: its name has no known extension "
        f"(.parquet, .csv, .tsv, .jsonl, each optionally .gz or .zst) and its first line is not a TREC {expected}; "
        + (f"name the format with --{kind}-format / {kind}_format=" if kind in ("run", "qrels", "log")
           else "give the file one of those extensions"))


def exists(path: str, literal: bool | None = None) -> bool:
    if literal:
        return os.path.exists(path)
    return os.path.exists(path) or bool(glob.glob(path, recursive=True))


GLOB_CHARACTERS = re.compile(r"[*?\[]")


def is_glob(path: str, literal: bool | None = None) -> bool:
    """Whether `path` is read as a glob. By default (literal None) when it has glob characters and
    no file has that very name (a path that exists is read literally, however many other files it
    would match); literal=True reads every path literally, literal=False expands every path with
    glob characters (--literal, --glob)."""
    if literal is None:
        return bool(GLOB_CHARACTERS.search(path)) and not os.path.exists(path)
    return not literal and bool(GLOB_CHARACTERS.search(path))


def files_of(path: str, literal: bool | None = None) -> list[str]:
    """Every file an input path reads: the file itself, each file a glob matches, each file in a
    (hive-partitioned) folder. For -o's check that no input is overwritten."""
    if path == "-":
        return []
    if os.path.isdir(path):
        return [os.path.join(root, name) for root, _, names in os.walk(path) for name in names]
    if is_glob(path, literal):
        return [found for found in glob.glob(path, recursive=True) if os.path.isfile(found)]
    return [path]


def exact_path(path: str) -> str:
    """A name DuckDB reads as exactly this file or folder: a path with glob characters that exists
    is reached through a link of a plain name (keeping its extensions) in the scratch folder."""
    if not GLOB_CHARACTERS.search(path) or not os.path.exists(path):
        return path
    from duckrank import _scratch

    name = os.path.basename(os.path.normpath(path))
    suffixes = "".join(s for s in Path(name).suffixes if not GLOB_CHARACTERS.search(s))
    link = _scratch.path(f"{fresh_name('literal')}{suffixes}")
    os.symlink(os.path.abspath(path), link)
    return link


# ---------------------------------------------------------------------------------------------
# compressed files and standard input

_COMPRESSION_SUFFIXES = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"))


def _strip_compression(name: str) -> str:
    root, suffix = os.path.splitext(name)
    return root if suffix.lower() in _COMPRESSION_SUFFIXES else name


def compression_of(path: str) -> str | None:
    """'gzip' or 'zstd' from a file's magic bytes, None for a file that is neither: the bytes decide,
    not the name (a run.txt.gz that is plain text is read as it is; gzip data named run.txt is
    decompressed). A glob, which has no bytes of its own, goes by its name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except OSError:
        return None if os.path.exists(path) else _COMPRESSION_SUFFIXES.get(os.path.splitext(path.lower())[1])
    return next((codec for magic, codec in _MAGIC if head.startswith(magic)), None)


def open_bytes(path: str, compression: str | None) -> BinaryIO:
    if compression == "gzip":
        return gzip.open(path, "rb")  # reads concatenated gzip members too, as gzip -dc does
    if compression == "zstd":
        import pyarrow as pa  # a dependency of duckrank, imported only when needed: its import costs

        return pa.input_stream(path, compression="zstd")
    return open(path, "rb")


READ_ERRORS = (OSError, EOFError, ValueError, zlib.error)  # what a corrupt gzip or zstd stream raises


def head_of(path: str, compression: str | None, kind: str = "run", shown: str | None = None,
            size: int = 1 << 16) -> bytes:
    """The first `size` bytes of the file, decompressed: b'' if it cannot be opened (the caller's
    own checks name that), an InputError if it is compressed and cannot be decompressed."""
    try:
        with open_bytes(path, compression) as stream:
            return stream.read(size)
    except READ_ERRORS as error:
        if compression is None:
            return b""
        raise InputError(f"cannot decompress {kind} file {shown or quoted_path(path)} as {compression}: "
                         f"{error_line(error)}; "
                         f"check the file") from None


def is_stdin(source: Any) -> bool:
    """Whether an input names standard input: the text '-' (Path('-') is a file named '-')."""
    return isinstance(source, str) and not isinstance(source, Path) and source == "-"


def stdin_problem(named: list[tuple[str, Any]]) -> str | None:
    """What is wrong when more than one input is '-', or None: standard input can be read once.
    `named` pairs each input with its name as the caller spells it (QRELS, RUN 1; qrels, runs[0]),
    so that the message is found before any input is read, whatever the first one would say."""
    given = [name for name, source in named if is_stdin(source)]
    if len(given) < 2:
        return None
    return (f"{', '.join(given[:-1])} and {given[-1]} are {'both' if len(given) == 2 else 'all'} '-', but "
            f"standard input can be read once; give all but one of them as files")


class StandardInput:
    """Standard input, read once into a temporary file for one command or evaluation, which owns this
    object and hands it to each read: the readers take paths, and every read of '-' in that call
    (duckrank convert tries qrels, then run; a report evaluates more than once) must see the same bytes."""

    def __init__(self) -> None:
        self._path: str | None = None
        self._kinds: set[str] = set()  # what the copy was read as (qrels, run)

    def path(self, kind: str) -> str:
        """The copy's path, made at the first read; an InputError if it was read as another kind."""
        if self._path is not None:
            other = sorted(self._kinds - {kind})
            if other:
                raise InputError(f"standard input ('-') was read as the {other[0]} already; only one of the "
                                 f"qrels and the runs can be '-': give the {kind} as a file")
            return self._path
        stream = sys.stdin
        if stream is None:
            raise InputError(f"the {kind} is '-' but there is no standard input; give the {kind} file's path")
        if getattr(stream, "isatty", lambda: False)():
            raise InputError(f"the {kind} is '-' (standard input), but standard input is a terminal: pipe the "
                             f"{kind} in (e.g. zcat run.gz | duckrank eval qrels.txt -) or give its path")
        descriptor, path = tempfile.mkstemp(prefix="duckrank-stdin-")
        atexit.register(_remove_quietly, path)
        with os.fdopen(descriptor, "wb") as target:
            buffer = getattr(stream, "buffer", None)
            if buffer is not None:
                shutil.copyfileobj(buffer, target, 1 << 20)
            else:  # a text stream without bytes beneath (io.StringIO in a notebook, say)
                for block in iter(lambda: stream.read(1 << 20), ""):
                    target.write(block.encode("utf-8"))
        self._path = path
        return path

    def read_as(self, kind: str) -> None:
        """Record that the copy was read as the `kind` (qrels, run): a later read of '-' as another
        kind is refused."""
        self._kinds.add(kind)


def is_pipe(path: str) -> bool:
    """A FIFO or character device (`<(zcat run.gz)` is /dev/fd/63): bytes that can be read once."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def pipe_copy(path: str) -> str:
    """A pipe's bytes in a scratch file, read once: telling the format reads its head, which a
    second read of the pipe would have lost."""
    from duckrank import _scratch

    copy = _scratch.path(fresh_name("pipe"))
    with open(path, "rb") as source, open(copy, "wb") as target:
        shutil.copyfileobj(source, target, 1 << 20)
    return copy


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def first_data_line(head: bytes) -> bytes:
    """The first line of `head` that holds a field and is no comment."""
    for line in head.split(b"\n"):
        fields = line.split()  # bytes.split() splits on exactly C's isspace() characters
        if fields and not fields[0].startswith(b"#"):
            return line
    return b""


def error_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0]
