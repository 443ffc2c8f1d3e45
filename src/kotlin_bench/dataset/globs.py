"""A repository's ``test_paths`` globs, which split a pull request's changed paths into the fix and the tests.

Globs are matched case-sensitively against the whole repository-relative path: ``**/`` matches zero or
more directories, ``**`` anything, ``*`` anything within one path segment, ``?`` one character of a
segment, ``[...]`` a class (``[!...]`` negated).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import cache


@cache
def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Compile a test_paths glob (the module docstring) into an anchored regular expression."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches_any(path: str, patterns: Iterable[str]) -> bool:
    return any(glob_to_regex(p).match(path) for p in patterns)


def split_paths(paths: Iterable[str], test_paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split repository paths into (fix paths, test paths) by the test_paths globs, keeping order."""
    fix: list[str] = []
    test: list[str] = []
    for path in paths:
        (test if matches_any(path, test_paths) else fix).append(path)
    return fix, test
