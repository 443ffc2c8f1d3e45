"""The closest names to a word that is not one of them: `did you mean ...` in error messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.5


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to `n` of `choices` closest to `word`, best first (difflib's ratio, at least CUTOFF)."""
    return difflib.get_close_matches(str(word), sorted(set(map(str, choices))), n=n, cutoff=CUTOFF)


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """` (did you mean `a`?)`, ` (closest: `a`, `b`)`, or "" when nothing is close."""
    found = closest(word, choices, n)
    if not found:
        return ""
    if len(found) == 1:
        return f" (did you mean `{found[0]}`?)"
    return " (closest: " + ", ".join(f"`{f}`" for f in found) + ")"
