"""The order of artifact versions as Maven and Gradle see it, and the versions neither can place (stdlib only).

Copied, with `retrieval.py`, into the recording egress proxy's container (`kotlin_bench.engine.egress`), so
it imports nothing but the standard library. Written from the published rules, not from either tool's code:

- **Maven** (`maven_compare`): the POM reference's "Version Order Specification"
  (https://maven.apache.org/pom.html#version-order-specification) as Maven's `ComparableVersion` documents it
  (https://maven.apache.org/ref/current/maven-artifact/apidocs/org/apache/maven/artifact/versioning/
  ComparableVersion.html). A version is split into tokens at `.`, `-` and at changes between digits and other
  characters (a change counts as `-`); empty tokens are 0. A qualifier after a dot counts as after a hyphen
  (`1.0.RC2 < 1.0-RC3 < 1.0.1`, MNG-7644). A hyphen opens a group; each group drops its trailing zeros
  (`1.0.0-foo.0.0` = `1-foo`), and a group left empty goes unless a number follows it. Tokens compare in
  turn, the shorter version padded with 0 after a dot and the empty qualifier after a hyphen: two numbers
  by value, two qualifiers by `alpha` (`a` before a digit) < `beta` (`b`) < `milestone` (`m`) < `rc` = `cr`
  < `snapshot` < `` = `ga` = `final` = `release` < `sp` < any other (those alphabetically, ignoring case);
  otherwise `.qualifier` < `-qualifier` < `-number` < `.number`.
- **Gradle** (`gradle_compare`): the user guide's "Version ordering" (https://docs.gradle.org/current/
  userguide/dependency_versions.html#sec:version-ordering). Parts are split at `.`, `-`, `_`, `+` and at
  changes between digits and letters; two numbers compare by value, a number is higher than a string,
  strings compare case-sensitively, except that `dev` is lower than any other string and `rc` < `snapshot`
  < `final` < `ga` < `release` < `sp` are higher than any other (case-insensitively); past the common parts
  an extra numeric part is higher and an extra non-numeric part lower (`1.1 < 1.1.0`, `1.1.a < 1.1`).

`unplaced` says why a version string names no one version either order can place: the newest (`LATEST`,
`RELEASE`, `latest.release`), a range (`[1.0,)`, `1.+`), not starting with a digit (`main-SNAPSHOT`), a
qualifier neither tool knows. `development` says whether it is a build that is published again and again
(`-SNAPSHOT`, a timestamped snapshot, `-dev`).
"""

from __future__ import annotations

import re
from functools import lru_cache

# Maven: qualifier ranks (`sp` after the release, anything unknown after `sp`)
_MAVEN_RANK = {"alpha": 0, "beta": 1, "milestone": 2, "rc": 3, "cr": 3, "snapshot": 4}
_MAVEN_RANK |= {"": 5, "ga": 5, "final": 5, "release": 5, "sp": 6}
_MAVEN_UNKNOWN = 7
_MAVEN_SHORT = {"a": "alpha", "b": "beta", "m": "milestone"}  # only directly before a digit
# Gradle: strings with a meaning of their own (the others rank 0, then compare as text)
_GRADLE_SPECIAL = {"dev": -1, "rc": 1, "snapshot": 2, "final": 3, "ga": 4, "release": 5, "sp": 6}
_GRADLE_PART = re.compile(r"[0-9]+|[^0-9.\-_+]+")

# Qualifiers one of the two orders knows (Maven's a, b, m only directly before a digit)
KNOWN_QUALIFIERS = frozenset(_MAVEN_RANK) | frozenset(_GRADLE_SPECIAL) - {""}
NEWEST = frozenset({"latest", "release", "[release]", "[latest]", "latest.release", "latest.integration"})
_RANGE = re.compile(r"[\[\]()*,+${}]")
_TIMESTAMP = re.compile(r"\d{8}\.\d{6}-\d+$")  # a unique snapshot: 1.0-20260101.101010-1
_WORD = re.compile(r"[a-z]+(?=([0-9]?))")

Token = tuple[str, int | str]  # (prefix "." or "-", a number or a qualifier)


# --- Maven --------------------------------------------------------------------------------------------


def _maven_tokens(version: str) -> list[Token]:
    text = version.lower()
    tokens: list[Token] = []
    prefix, start, kind = ".", 0, ""  # kind of the token being read: "d" digits, "c" other characters

    def push(end: int) -> None:
        raw = text[start:end]
        if kind == "d":
            tokens.append((prefix, int(raw)))
        elif not raw:
            tokens.append((prefix, 0))  # an empty token is 0
        else:
            if raw in _MAVEN_SHORT and end < len(text) and text[end].isascii() and text[end].isdigit():
                raw = _MAVEN_SHORT[raw]
            tokens.append(("-" if tokens else prefix, "rc" if raw == "cr" else raw))  # .X counts as -X

    for i, char in enumerate(text):
        if char in ".-":
            push(i)
            prefix, start, kind = char, i + 1, ""
            continue
        digit = "d" if char.isascii() and char.isdigit() else "c"
        if kind and digit != kind:  # a change between digits and characters counts as a hyphen
            push(i)
            prefix, start = "-", i
        kind = digit
    if start < len(text) or (text and text[-1] in ".-"):
        push(len(text))
    return tokens


def _maven_groups(tokens: list[Token]) -> list[Token]:
    groups: list[list[Token]] = []
    for token in tokens:
        if token[0] == "-" or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    kept: list[list[Token]] = []
    for group in reversed(groups):  # from the end: trailing zeros go, and a group left empty goes ...
        first = group[0]
        while group and group[-1][1] == 0:
            group.pop()
        number_follows = bool(kept) and isinstance(kept[-1][0][1], int)
        if not group and number_follows:
            group = [first]  # ... unless a number follows it (1-0-2 keeps its 0)
        if group:
            kept.append(group)
    return [token for group in reversed(kept) for token in group]


@lru_cache(maxsize=4096)
def _maven(version: str) -> tuple[Token, ...]:
    return tuple(_maven_groups(_maven_tokens(version)))


def _qualifier_key(text: str) -> tuple[int, str]:
    rank = _MAVEN_RANK.get(text)
    return (rank, "") if rank is not None else (_MAVEN_UNKNOWN, text)


def _maven_token_compare(left: Token, right: Token) -> int:
    (lp, lv), (rp, rv) = left, right
    lnum, rnum = isinstance(lv, int), isinstance(rv, int)
    if lp == rp and lnum == rnum:
        if lnum:
            return (lv > rv) - (lv < rv)  # type: ignore[operator]
        a, b = _qualifier_key(lv), _qualifier_key(rv)  # type: ignore[arg-type]
        return (a > b) - (a < b)
    # .qualifier < -qualifier < -number < .number
    a = (1 if lp == "-" else 0) if not lnum else (2 if lp == "-" else 3)
    b = (1 if rp == "-" else 0) if not rnum else (2 if rp == "-" else 3)
    return (a > b) - (a < b)


def maven_compare(left: str, right: str) -> int:
    """-1, 0 or 1 as `left` comes before, with or after `right` in Maven's order."""
    a, b = _maven(left), _maven(right)
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else (b[i][0], 0 if b[i][0] == "." else "")
        y = b[i] if i < len(b) else (a[i][0], 0 if a[i][0] == "." else "")
        if result := _maven_token_compare(x, y):
            return result
    return 0


# --- Gradle -------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _gradle(version: str) -> tuple[str | int, ...]:
    return tuple(int(p) if p.isascii() and p.isdigit() else p for p in _GRADLE_PART.findall(version))


def _gradle_part_compare(left: str | int, right: str | int) -> int:
    lnum, rnum = isinstance(left, int), isinstance(right, int)
    if lnum and rnum:
        return (left > right) - (left < right)  # type: ignore[operator]
    if lnum != rnum:
        return 1 if lnum else -1  # a number is higher than a string
    assert isinstance(left, str) and isinstance(right, str)
    if left == right:
        return 0
    a, b = _GRADLE_SPECIAL.get(left.lower()), _GRADLE_SPECIAL.get(right.lower())
    if a is not None or b is not None:
        a, b = a or 0, b or 0
        return (a > b) - (a < b)
    return (left > right) - (left < right)  # case-sensitive: 1.A < 1.B < 1.a < 1.b


def gradle_compare(left: str, right: str) -> int:
    """-1, 0 or 1 as `left` comes before, with or after `right` in Gradle's order."""
    a, b = _gradle(left), _gradle(right)
    for x, y in zip(a, b, strict=False):
        if result := _gradle_part_compare(x, y):
            return result
    if len(a) == len(b):
        return 0
    longer, sign = (a, 1) if len(a) > len(b) else (b, -1)
    extra = longer[min(len(a), len(b))]
    return sign if isinstance(extra, int) else -sign  # an extra number is higher, an extra string lower


# --- what neither order can place --------------------------------------------------------------------


def unplaced(version: str) -> str | None:
    """Why `version` names no one version that both orders can place (None: it is one)."""
    text = version.strip()
    if asks_newest(text):
        return f"{text!r} asks for the newest version or a range of versions"
    if not (text[:1].isascii() and text[:1].isdigit()):
        return f"{text!r} does not start with a digit"
    for found in _WORD.finditer(text.lower()):
        word, digit_follows = found.group(0), bool(found.group(1))
        if word not in KNOWN_QUALIFIERS and not (word in _MAVEN_SHORT and digit_follows):
            return f"{text!r} has a qualifier neither Maven nor Gradle knows ({word!r})"
    return None


def asks_newest(version: str) -> bool:
    """Whether `version` asks a repository for the newest version or for a range of them."""
    lower = version.strip().lower()
    return lower in NEWEST or lower.startswith("latest.") or bool(_RANGE.search(lower))


def development(version: str) -> bool:
    """Whether `version` is built again and again under one name: a snapshot or a `-dev` version."""
    lower = version.strip().lower()
    return lower.endswith(("-snapshot", ".snapshot", "-dev", ".dev")) or bool(_TIMESTAMP.search(lower))


def at_or_before(version: str, base: str) -> bool:
    """Whether both orders put `version` at or before `base` (strictly before when `base` is a development
    version, whose later builds carry its name too)."""
    strict = development(base)
    for compare in (maven_compare, gradle_compare):
        order = compare(version, base)
        if order > 0 or (strict and order == 0):
            return False
    return True
