"""The closest names to a word that is not one of them: `did you mean ...` in error messages."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

CUTOFF = 0.5  # difflib's similarity ratio a name needs to be suggested at all
TIE = 0.05  # names this close to the best one are suggested with it


def closest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """The `choices` closest to `word` (difflib's ratio, at least CUTOFF): the best one, and up to n - 1
    others about as close (ties), best first."""
    scored = sorted(
        ((difflib.SequenceMatcher(None, str(word), c).ratio(), c) for c in sorted(set(map(str, choices)))),
        key=lambda pair: -pair[0],
    )
    if not scored or scored[0][0] < CUTOFF:
        return []
    best = scored[0][0]
    return [c for score, c in scored[:n] if score >= max(CUTOFF, best - TIE)]


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """` (did you mean `a`?)`, ` (closest: `a`, `b`)`, or "" when nothing is close."""
    found = closest(word, choices, n)
    if not found:
        return ""
    if len(found) == 1:
        return f" (did you mean `{found[0]}`?)"
    return " (closest: " + ", ".join(f"`{f}`" for f in found) + ")"
