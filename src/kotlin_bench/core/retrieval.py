"""Whether one URL fetches a task's fix: the retrieval rule of the egress record (stdlib only).

This module is copied into the recording egress proxy's container (`kotlin_bench.engine.egress`), where it
classifies every request of an agent phase, and imported on the host by `kotlin-bench egress classify`.
So it imports nothing but the standard library.

A task's facts (`Facts`, from the dataset spec): its project's artifact coordinates (`artifacts.
coordinates` of the repository: `group` = that group and every group below it, `group:artifact` = one
artifact, `group:prefix*` = the artifacts whose name starts with prefix), `base_version` (the version its
build declares at the base commit), `fix_release` (the first release that contains the fix, or None) and
the upstream repository's URL.

A request is retrieval when
- it fetches a file of an artifact of those coordinates (jar, sources, javadoc, pom, module, zip, aar,
  checksums, signatures: any file of the version's directory but its `maven-metadata.xml`) at a version that
  is not at or before the base (Maven's version order; a snapshot of the base's own version is after a
  snapshot base) or that is at or after `fix_release`;
- or it names the upstream repository (`owner/repo` after an element naming its host, e.g.
  `github.com/<owner>/<repo>` behind a caching host, jitpack's `com/github/<owner>/<repo>`).
`maven-metadata.xml`, directory listings, other coordinates and the project's own releases at or before
the base are not. Paths are percent-decoded (repeatedly) and normalised (`//`, `/./`, `/../`, backslashes,
the host's case) first, and the query counts too: a value that holds a path or URL
(`?filepath=com/...`) is read like a path, and `g=`/`a=`/`v=` (or `groupId`, `artifactId`, `version`)
name coordinates.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlsplit

METADATA = "maven-metadata"
NEWEST = ("LATEST", "RELEASE")  # what repository managers' redirect services resolve to the newest version
_QUALIFIERS = {"alpha": 0, "a": 0, "beta": 1, "b": 1, "milestone": 2, "m": 2, "rc": 3, "cr": 3}
_QUALIFIERS |= {"snapshot": 4, "": 5, "ga": 5, "final": 5, "release": 5, "sp": 6}
_UNKNOWN = 7
_TOKEN = re.compile(r"\d+|[a-z]+")
_GROUP_KEYS = ("g", "groupid", "group")
_ARTIFACT_KEYS = ("a", "artifactid", "artifact")
_VERSION_KEYS = ("v", "version")


@dataclass(frozen=True)
class Facts:
    """What the rule knows of one task (see the module's docstring)."""

    coordinates: tuple[str, ...] = ()
    base_version: str | None = None
    fix_release: str | None = None
    upstream: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "coordinates": list(self.coordinates),
                "base_version": self.base_version,
                "fix_release": self.fix_release,
                "upstream": self.upstream,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Facts:
        data = json.loads(text)
        return cls(
            tuple(data.get("coordinates") or ()),
            data.get("base_version"),
            data.get("fix_release"),
            data.get("upstream"),
        )


@dataclass(frozen=True)
class Verdict:
    """`retrieval` with the reason, or not (`reason` says why not)."""

    retrieval: bool
    reason: str

    def __str__(self) -> str:
        return f"{'retrieval' if self.retrieval else 'ok'}: {self.reason}"


# --- Maven's version order --------------------------------------------------------------------------


def _items(version: str) -> list[int | tuple[int, str]]:
    """A version as comparable items: numbers, and qualifiers as (rank, name)."""
    text = version.strip().lower()
    items: list[int | tuple[int, str]] = []
    tokens = _TOKEN.findall(text)
    for i, token in enumerate(tokens):
        if token.isdigit():
            items.append(int(token))
            continue
        following_digit = i + 1 < len(tokens) and tokens[i + 1].isdigit()
        if token in ("a", "b", "m") and not following_digit:
            items.append((_UNKNOWN, token))
        elif token in _QUALIFIERS:
            items.append((_QUALIFIERS[token], ""))  # aliases are equal (ga == final == release == "")
        else:
            items.append((_UNKNOWN, token))
    return items


def _compare_item(left: int | tuple[int, str] | None, right: int | tuple[int, str] | None) -> int:
    padding: dict[bool, int | tuple[int, str]] = {True: 0, False: (_QUALIFIERS[""], "")}
    if left is None:
        left = padding[isinstance(right, int)]
    if right is None:
        right = padding[isinstance(left, int)]
    if isinstance(left, int) and isinstance(right, int):
        return (left > right) - (left < right)
    if isinstance(left, int):
        return 1  # a number is newer than a qualifier (1.0.1 > 1.0-rc1)
    if isinstance(right, int):
        return -1
    return (left > right) - (left < right)


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1 as `left` is before, the same as or after `right` in Maven's order (1.0 == 1.0.0;
    alpha < beta < milestone < rc < snapshot < release < sp; a number is after a qualifier)."""
    a, b = _items(left), _items(right)
    for i in range(max(len(a), len(b))):
        result = _compare_item(a[i] if i < len(a) else None, b[i] if i < len(b) else None)
        if result:
            return result
    return 0


def is_snapshot(version: str) -> bool:
    return version.upper().endswith("-SNAPSHOT")


def version_verdict(version: str, facts: Facts) -> Verdict:
    """Whether the project's own artifact at `version` may carry the fix."""
    if version.strip().upper() in NEWEST:
        return Verdict(True, f"version {version} asks for the newest release")
    if facts.fix_release and compare_versions(version, facts.fix_release) >= 0:
        return Verdict(True, f"version {version} is at or after the fix's release {facts.fix_release}")
    base = facts.base_version
    if base:
        order = compare_versions(version, base)
        if order > 0 or (order == 0 and is_snapshot(base)):
            return Verdict(True, f"version {version} is after the base's version {base}")
        return Verdict(False, f"version {version} is at or before the base's version {base}")
    if facts.fix_release:
        return Verdict(False, f"version {version} is before the fix's release {facts.fix_release}")
    return Verdict(False, f"version {version}: the task has neither base_version nor fix_release")


# --- coordinates ----------------------------------------------------------------------------------


def coordinate_matches(pattern: str, group: str, artifact: str) -> bool:
    """Whether `group:artifact` is named by one coordinates pattern."""
    pattern = pattern.strip().lower()
    group, artifact = group.lower(), artifact.lower()
    if ":" not in pattern:
        return group == pattern or group.startswith(pattern + ".")
    want_group, want_artifact = pattern.split(":", 1)
    if group != want_group:
        return False
    if want_artifact.endswith("*"):
        return artifact.startswith(want_artifact[:-1])
    return artifact == want_artifact


def _named(facts: Facts, group: str, artifact: str) -> str | None:
    return next((p for p in facts.coordinates if coordinate_matches(p, group, artifact)), None)


# --- paths ----------------------------------------------------------------------------------------


def decode(text: str) -> str:
    """Percent-decoded until nothing changes (at most 4 rounds), backslashes as slashes."""
    for _ in range(4):
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text.replace("\\", "/")


def normalise_path(path: str) -> str:
    """A decoded path with `//`, `/./` and `/../` resolved (never above the root)."""
    path = decode(path)
    normal = posixpath.normpath("/" + path.lstrip("/"))
    normal = "/" + normal.lstrip("/")
    return normal + ("/" if path.endswith("/") and normal != "/" else "")


def _segments(path: str) -> list[str]:
    return [s for s in normalise_path(path).split("/") if s]


def _artifact_file(segments: list[str], facts: Facts) -> Verdict | None:
    """A file of one of the task's artifacts, if the path names one: `.../group/artifact/version/file`."""
    for i in range(len(segments) - 2):
        artifact, version, file = segments[i], segments[i + 1], segments[i + 2]
        if not (version[:1].isdigit() and file.lower().startswith(artifact.lower() + "-")):
            continue  # `<artifact>/<version>/<artifact>-...`: a file of that version, never a listing
        for j in range(i):
            group = ".".join(segments[j:i])
            pattern = _named(facts, group, artifact)
            if pattern is None:
                continue
            verdict = version_verdict(version, facts)
            what = f"{group}:{artifact}:{version} ({file}; coordinates {pattern})"
            return Verdict(verdict.retrieval, f"{what}: {verdict.reason}")
    return None


def _upstream(elements: list[str], facts: Facts) -> Verdict | None:
    """The upstream repository named as `owner/repo` after an element that names its host."""
    if not facts.upstream:
        return None
    parts = urlsplit(facts.upstream)
    host = (parts.hostname or "").lower()
    names = [s.lower() for s in parts.path.split("/") if s]
    if len(names) < 2 or not host:
        return None
    owner, repo = names[0], names[1].removesuffix(".git")
    host_labels = {host.split(".")[-2] if host.count(".") else host}
    if host == "github.com":
        host_labels |= {"githubusercontent"}
    lowered = [e.lower() for e in elements]
    for i in range(1, len(lowered) - 1):
        if lowered[i] != owner or lowered[i + 1].removesuffix(".git") != repo:
            continue
        before = lowered[:i]
        if any(host_labels & set(e.split(".")) for e in before) or any(e == "repos" for e in before):
            return Verdict(True, f"names the upstream repository {host}/{owner}/{repo}")
    return None


def _path_verdict(host: str, path: str, facts: Facts) -> Verdict | None:
    segments = _segments(path)
    return _artifact_file(segments, facts) or _upstream([host, *segments], facts)


def _query_verdicts(query: str, facts: Facts) -> Verdict | None:
    pairs = [(k.lower(), decode(v)) for k, v in parse_qsl(query, keep_blank_values=True)]
    values = dict(pairs)
    group = next((values[k] for k in _GROUP_KEYS if values.get(k)), None)
    artifact = next((values[k] for k in _ARTIFACT_KEYS if values.get(k)), None)
    version = next((values[k] for k in _VERSION_KEYS if values.get(k)), None)
    if group and artifact and version:
        pattern = _named(facts, group, artifact)
        if pattern is not None:
            verdict = version_verdict(version, facts)
            what = f"{group}:{artifact}:{version} in the query (coordinates {pattern})"
            return Verdict(verdict.retrieval, f"{what}: {verdict.reason}")
    for _, value in pairs:
        if "/" not in value:
            continue
        inner = urlsplit(value) if "://" in value else None
        host = (inner.hostname or "") if inner else ""
        verdict = _path_verdict(host, inner.path if inner else value, facts)
        if verdict is None and inner and inner.query:
            verdict = _query_verdicts(inner.query, facts)
        if verdict is not None:
            return verdict
    return None


def classify_request(host: str, path: str, facts: Facts) -> Verdict:
    """One request (its host, and its path as sent, with the query) for one task."""
    host = host.lower().rstrip(".")
    raw_path, _, query = path.partition("?")
    found = [_path_verdict(host, raw_path, facts), _query_verdicts(query, facts) if query else None]
    flagged = next((v for v in found if v is not None and v.retrieval), None)
    if flagged is not None:
        return flagged
    known = next((v for v in found if v is not None), None)
    if known is not None:
        return known
    if any(s.lower().startswith(METADATA) for s in _segments(raw_path)):
        return Verdict(False, "metadata (maven-metadata.xml)")
    return Verdict(False, "names none of the task's artifacts nor its upstream repository")


def classify(url: str, facts: Facts) -> Verdict:
    """One URL (`scheme://host[:port]/path?query`) for one task."""
    if "://" not in url:
        url = "https://" + url.lstrip("/")
    parts = urlsplit(url)
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return classify_request(parts.hostname or "", path, facts)
