"""duckrank's exceptions. Every message names what is wrong (file, column, value) and what to do."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    """An option a message names, kept as such so that each front door spells it its own way:
    Python as the keyword (label_map=, what str(error) says), the command line as its flag
    (--label-map: DuckrankError.spelled)."""

    name: str
    subject: bool = False  # the sentence's subject: Python names it bare (ties must be ...), not ties=

    def __str__(self) -> str:
        return self.name if self.subject else f"{self.name}="


# A problem with a value given, as a message's parts: (Option("ties", subject=True), " must be ...").
Problem = tuple["str | Option", ...]


def subject(name: str, rest: str) -> Problem:
    """A problem whose sentence starts with the option at fault: "<name> must be ..."."""
    return (Option(name, subject=True), rest)


def one_per_line(problems: Iterable[Problem]) -> list[str | Option]:
    """Several problems as the parts of one message, a line each."""
    parts: list[str | Option] = []
    for problem in problems:
        parts += ["\n", *problem] if parts else [*problem]
    return parts


def listed(names: Iterable[str]) -> list[str | Option]:
    """Options as a message lists them: a=, b=, c= (--a, --b, --c)."""
    parts: list[str | Option] = []
    for name in names:
        parts += [", ", Option(name)] if parts else [Option(name)]
    return parts


class DuckrankError(Exception):
    """Base class of every error duckrank raises on purpose. The message comes in parts, text and
    the Options it names: str(error) joins them as Python spells them."""

    def __init__(self, *parts: str | Option) -> None:
        super().__init__("".join(map(str, parts)))
        self.parts = parts

    def spelled(self, spell: Callable[[Option], str]) -> str:
        """The message with each Option it names as `spell` (an Option -> its spelling) says it."""
        return "".join(spell(part) if isinstance(part, Option) else str(part) for part in self.parts)


class InputError(DuckrankError):
    """An input file or table is missing, unreadable, or holds data duckrank cannot score."""


class MeasureError(DuckrankError, ValueError):
    """A measure string is unknown or malformed."""


class OptionError(DuckrankError, ValueError):
    """A convention or option has a value duckrank does not accept."""


QUOTED_LIMIT = 80  # characters of user data a message shows: an id of 100,000 makes no 100 KB line
PATH_LIMIT = 400  # a path is shown longer: it names a folder, then the file


def quoted(value: object, limit: int = QUOTED_LIMIT, *, lookalikes: bool = True) -> str:
    """User data (an id, a value, a line) as every message quotes it: repr-style, cut after about
    `limit` characters as shown (escapes count) with how many more, so that no message grows with
    the data. With `lookalikes`, a text not in Unicode NFC has its non-ASCII characters escaped, so
    that ids the eye cannot tell apart differ on screen: 'é' (U+00E9) against 'e\\u0301' (e +
    U+0301); repr already escapes control and invisible characters. A number is shown as it is."""
    import unicodedata

    if isinstance(value, bytes):
        show, unit = repr, "bytes"
    elif isinstance(value, str):
        show = ascii if lookalikes and not unicodedata.is_normalized("NFC", value) else repr
        unit = "characters"
    else:
        value, show, unit = repr(value), str, "characters"
    quotes = len(show(value[:0]))
    kept = width = 0
    while kept < len(value) and width + len(show(value[kept:kept + 1])) - quotes <= limit:
        width += len(show(value[kept:kept + 1])) - quotes
        kept += 1
    shown = show(value[:kept]).removeprefix("b")
    more = len(value) - kept
    return shown + (f"…({more:,} more {unit})" if more else "")


def quoted_path(path: str) -> str:
    """A path (or a run named by one) as messages quote it: longer than an id, and as written
    (macOS writes file names decomposed, NFD: escaping them would only hide the name)."""
    return quoted(path, PATH_LIMIT, lookalikes=False)
