"""The one reader of KEY=VALUE lists: --label-map purchase=3,click=1, trec_eval's ndcg.1=3,2=9 and a
measure's gain_map={1:3,2:9}."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from duckrank.errors import quoted


def parse_pairs(text: str, form: str, read_key: Callable[[str], Any] = str) -> dict[Any, str]:
    """The pairs of a comma-separated list written as `form` (VALUE=GRADE, grade:gain: its one
    character that is no letter separates), each side stripped, keyed by read_key(KEY). A ValueError
    says what is wrong, as words that follow the list's name: a pair that is not `form`, or a key
    given twice (as read_key reads it: grades 1 and 1.0 are one), which would silently keep one."""
    separator = next(character for character in form if not character.isalpha())
    values: dict[Any, str] = {}
    written: dict[Any, str] = {}
    for pair in text.split(","):
        key, found, value = pair.partition(separator)
        if not found or not key.strip():
            raise ValueError(f"has {quoted(pair.strip())}, which is not {form}")
        read = read_key(key.strip())
        if read in values:
            raise ValueError(f"gives {quoted(written[read])} twice")
        values[read], written[read] = value.strip(), key.strip()
    return values
