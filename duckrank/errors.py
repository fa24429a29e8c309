"""duckrank's exceptions. Every message names what is wrong (file, column, value) and what to do."""

from __future__ import annotations


class DuckrankError(Exception):
    """Base class of every error duckrank raises on purpose."""


class InputError(DuckrankError):
    """An input file or table is missing, unreadable, or holds data duckrank cannot score."""


class MeasureError(DuckrankError, ValueError):
    """A measure string is unknown or malformed."""


class OptionError(DuckrankError, ValueError):
    """A convention or option has a value duckrank does not accept."""
