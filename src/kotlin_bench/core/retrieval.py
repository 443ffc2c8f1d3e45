"""Whether one URL fetches a task's fix: the retrieval rule of the egress record (stdlib only).

Copied (with `versions.py` and `urlforms.py`, its `MODULES`) into the recording egress proxy's container
(`kotlin_bench.engine.egress`), where it classifies every request of an agent phase, and imported on the
host by `kotlin-bench egress classify`. So it imports nothing but the standard library.

What it knows of a task (`Facts`, from the dataset spec, `TaskSpec.retrieval_facts`): every name of the
project (its coordinate patterns, former coordinates, Gradle plugin ids, JetBrains Marketplace ids, its
GitHub repository under the spec's owner/name and its other ones, former or moved to, and its numeric
id), the carriers (other artifacts that bundle it, with the version each carrier version carries), the
base's version, every release the fix shipped in, and the base build's own needs (coordinate and version).

The rule. A request is retrieval when it names
- an artifact of the project (any of its coordinates, a plugin marker `<id>:<id>.gradle.plugin`, the
  Marketplace's `com.jetbrains.plugins:<xml id>`) at a version that is not *known* to be at or before the
  base (`versions.at_or_before`: both Maven's and Gradle's order say so), unless that coordinate and version
  is a need of the base's own build (always `ok`). Never known: a version that names no one version
  (`LATEST`, `RELEASE`, `[RELEASE]`, ranges, `+`, `latest.release`, not starting with a digit, a qualifier
  neither tool knows), a snapshot or `-dev` build, any version when the task has no base version, a
  version at or after a release the fix shipped in (either order);
- an artifact of a carrier at a carrier version whose carried version is not known to be at or before the
  base and is not a version the base's own build uses (a carrier version the facts do not map is judged by
  the next mapped one above it; above every mapped one it is retrieval); an artifact that is both the
  project's and a carrier (a compiler plugin numbered `<kotlin>-<project>`) is judged as a carrier;
- the project's GitHub repository under any of its names (`github.com`, `codeload`, `raw.githubusercontent`,
  `api.github.com/repos/...`, git's smart HTTP, jsDelivr's `gh/`, jitpack's `com/github/<owner>/<repo>`
  and `io/github/<owner>/<repo>` whatever the version (jitpack builds the upstream's refs), any of them
  behind another host), by numeric id (`api.github.com/repositories/<id>`, release assets on
  `objects.githubusercontent.com`): a numeric id is retrieval when it is the project's, or when the facts
  do not know the project's id and the project is on GitHub (fail closed; an id the facts know to be
  another repository's is not);
- the project's plugin on the JetBrains Marketplace in a download whose version is not shown to be at or
  before the base (`plugin/download?pluginId=&version=`, `?updateId=`, `pluginManager?action=download`,
  `/files/<numeric id>/...`);
- coordinates of the project in a query without a version (a repository manager's endpoint that picks the
  newest: Nexus 3's `search/assets/download`, Artifactory's `latestVersion`), a version in the query of a
  path that lists the project's artifact (`.../detekt-cli?version=LATEST`), or a download by keyword search
  (`.../download?q=detekt-cli`) naming the project.
Every place a URL can carry a name is read (`urlforms`): the path and every query value alike (a value
that is a URL is classified as one; coordinates as keys and a file path in a value are both judged), matrix
parameters (`;k=v`, cut from their segment), the fragment; after repeated percent-decoding (a decoded `?`
or `#` starts a query or fragment), `+` read both as itself and as a space, backslashes as slashes, `//`,
`/./` and `/../` resolved. `maven-metadata.xml`, directory listings, pages
naming no version, other projects' artifacts and the project's own artifacts known to be at or before the
base are not retrieval.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from functools import cached_property, cmp_to_key
from typing import Any
from urllib.parse import urlsplit

try:
    from kotlin_bench.core import urlforms, versions
except ImportError:  # in the recording proxy's container, where they sit beside this file
    import urlforms  # type: ignore[no-redef]
    import versions  # type: ignore[no-redef]

MODULES = (urlforms, versions)  # what this module needs beside it wherever it is copied

METADATA = "maven-metadata"
RELEASE_ASSET_HOSTS = ("github-releases.githubusercontent.com",)
_GITHUB_MARKS = frozenset(
    {"github", "githubusercontent", "repos", "gh"}
)  # elements after which owner/repo follows
_GROUP_KEYS = ("g", "groupid", "group", "maven.groupid")
_ARTIFACT_KEYS = ("a", "artifactid", "artifact", "maven.artifactid", "name")
_VERSION_KEYS = ("v", "version", "maven.baseversion", "maven.version", "baseversion")
_PLUGIN_KEYS = ("pluginid", "id", "xmlid", "pluginxmlid")
_SEARCH_KEYS = ("q", "keyword", "search", "query", "text")
_GAV = re.compile(r"([A-Za-z0-9_][A-Za-z0-9_.\-]*):([A-Za-z0-9_][A-Za-z0-9_.\-]*)(?::([^:@\s/]+))?")
_WORDS = re.compile(r"[\s+:,]+")


@dataclass(frozen=True)
class Need:
    """A need of the base's own build: an artifact (coordinate pattern) at one version."""

    coordinate: str
    version: str


@dataclass(frozen=True)
class Carrier:
    """Another project's artifact (coordinate pattern) that bundles the project: (carrier version, the
    project version it carries) pairs."""

    coordinate: str
    carries: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Marketplace:
    """The project's plugin on the JetBrains Marketplace: its plugin.xml id and numeric id."""

    xml_id: str
    numeric_id: int | None = None


@dataclass(frozen=True)
class Facts:
    """What the rule knows of one task (see the module's docstring)."""

    coordinates: tuple[str, ...] = ()  # current and former coordinate patterns of the project
    plugin_ids: tuple[str, ...] = ()  # Gradle plugin ids
    marketplace: tuple[Marketplace, ...] = ()
    carriers: tuple[Carrier, ...] = ()
    upstream: str | None = None  # the repository's URL
    other_names: tuple[str, ...] = ()  # other owner/names on the upstream's host (former, or moved to)
    github_id: int | None = None
    base_version: str | None = None
    fix_releases: tuple[str, ...] = ()  # every release the fix shipped in (the first, then other lines)
    base_build: tuple[Need, ...] = ()

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        """The facts as JSON reads them back (lists, not tuples): a rule parameter, compared as written."""
        return json.loads(self.to_json())  # type: ignore[no-any-return]

    def digest(self) -> str:
        """sha256 of the facts (their canonical JSON), 16 hex digits: which facts a record was classified with."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    @classmethod
    def from_json(cls, text: str) -> Facts:
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | Facts) -> Facts:
        """The facts from `to_dict`'s form (a `Facts` is taken as it is)."""
        if isinstance(data, Facts):
            return data
        names = ("coordinates", "plugin_ids", "other_names", "fix_releases")
        return cls(
            **{k: tuple(data.get(k) or ()) for k in names},
            marketplace=tuple(Marketplace(**m) for m in data.get("marketplace") or ()),
            carriers=tuple(
                Carrier(c["coordinate"], tuple((a, b) for a, b in c["carries"]))
                for c in data.get("carriers") or ()
            ),
            upstream=data.get("upstream"),
            github_id=data.get("github_id"),
            base_version=data.get("base_version"),
            base_build=tuple(Need(**n) for n in data.get("base_build") or ()),
        )

    # --- derived once per task (the proxy classifies many requests with one Facts) ---

    @cached_property
    def patterns(self) -> tuple[str, ...]:
        """Every coordinate pattern of the project: its own, its plugin markers, its Marketplace ids."""
        markers = tuple(f"{p}:{p}.gradle.plugin" for p in self.plugin_ids)
        market = tuple(f"com.jetbrains.plugins:{m.xml_id}" for m in self.marketplace)
        return tuple(p.strip().lower() for p in (*self.coordinates, *markers, *market))

    @cached_property
    def hosted(self) -> tuple[str, frozenset[str], tuple[tuple[str, str], ...]]:
        """The upstream's host, the labels of an element that names it, and its (owner, repo) names."""
        parts = urlsplit(self.upstream or "")
        host = (parts.hostname or "").lower()
        path = "/".join(s for s in parts.path.split("/") if s)
        names: list[tuple[str, str]] = []
        for name in (path, *self.other_names) if host else ():
            owner, _, repo = name.lower().partition("/")
            if owner and repo:
                names.append((owner, repo.split("/", 1)[0].removesuffix(".git")))
        if host == "github.com":
            return host, _GITHUB_MARKS, tuple(names)
        return host, frozenset({host.split(".")[-2] if "." in host else host} if host else ()), tuple(names)

    @cached_property
    def own_matchers(self) -> tuple[tuple[str, str, str, bool], ...]:
        """The project's patterns as (pattern, group, artifact or prefix, prefix?) in lower case."""
        return tuple(_matcher(p) for p in self.patterns)

    @cached_property
    def carrier_matchers(self) -> tuple[tuple[tuple[str, str, str, bool], Carrier], ...]:
        return tuple((_matcher(c.coordinate), c) for c in self.carriers)

    @cached_property
    def first_labels(self) -> frozenset[str]:
        """The first labels of the groups of the project's and its carriers' coordinates: a path segment that
        starts no such group starts none of their coordinates (the classifier's shortcut)."""
        patterns = (*self.patterns, *(c.coordinate.lower() for c in self.carriers))
        return frozenset(p.split(":", 1)[0].split(".", 1)[0] for p in patterns)

    @cached_property
    def needed_versions(self) -> frozenset[str]:
        """The project versions the base's own build uses (any of the project's coordinates)."""
        own = (
            n
            for n in self.base_build
            if any(coordinate_matches(p, *_split_coordinate(n.coordinate)) for p in self.patterns)
        )
        return frozenset(n.version.lower() for n in own)

    @cached_property
    def marketplace_ids(self) -> frozenset[str]:
        ids = {m.xml_id.lower() for m in self.marketplace}
        return frozenset(ids | {str(m.numeric_id) for m in self.marketplace if m.numeric_id is not None})


@dataclass(frozen=True)
class Verdict:
    """`retrieval` with the reason, or not (`reason` says why not)."""

    retrieval: bool
    reason: str

    def __str__(self) -> str:
        return f"{'retrieval' if self.retrieval else 'ok'}: {self.reason}"


# --- coordinates ----------------------------------------------------------------------------------


def coordinate_matches(pattern: str, group: str, artifact: str) -> bool:
    """Whether `group:artifact` is named by one coordinate pattern (`group` = that group and the groups
    below it, `group:artifact`, `group:prefix*`); the Marketplace's group also under a release channel
    (`<channel>.com.jetbrains.plugins`)."""
    return _matches(_matcher(pattern), group.lower(), artifact.lower())


def _matcher(pattern: str) -> tuple[str, str, str, bool]:
    """A pattern ready for `_matches`: (the pattern, its group, its artifact or prefix, whether a prefix)."""
    text = pattern.strip().lower()
    group, _, artifact = text.partition(":")
    return text, group, artifact.removesuffix("*"), artifact.endswith("*")


def _matches(matcher: tuple[str, str, str, bool], group: str, artifact: str) -> bool:
    """`coordinate_matches` on a prepared pattern and a lower-cased group and artifact."""
    _, want_group, want_artifact, prefix = matcher
    if not want_artifact and not prefix:
        return group == want_group or group.startswith(want_group + ".")
    if group != want_group and not (
        want_group == "com.jetbrains.plugins" and group.endswith(".com.jetbrains.plugins")
    ):
        return False
    return artifact.startswith(want_artifact) if prefix else artifact == want_artifact


def _group_holds(pattern: str, group: str) -> bool:
    """Whether the group `group` (no artifact named) holds artifacts the pattern names."""
    want = pattern.split(":", 1)[0]
    return (
        group == want or group.startswith(want + ".") or (":" not in pattern and want.startswith(group + "."))
    )


def _split_coordinate(pattern: str) -> tuple[str, str]:
    group, _, artifact = pattern.partition(":")
    return group, artifact.rstrip("*") or "*"


def _need(facts: Facts, group: str, artifact: str, version: str) -> Need | None:
    lower = version.strip().lower()
    return next(
        (
            n
            for n in facts.base_build
            if n.version.lower() == lower and coordinate_matches(n.coordinate, group, artifact)
        ),
        None,
    )


def _own(facts: Facts, group: str, artifact: str) -> str | None:
    group, artifact = group.lower(), artifact.lower()
    return next((m[0] for m in facts.own_matchers if _matches(m, group, artifact)), None)


def _carrier(facts: Facts, group: str, artifact: str) -> Carrier | None:
    """The carrier facts of `group:artifact`, merged when several state it (e.g. read from two projects)."""
    group, artifact = group.lower(), artifact.lower()
    found = [c for m, c in facts.carrier_matchers if _matches(m, group, artifact)]
    if len(found) <= 1:
        return found[0] if found else None
    return Carrier(found[0].coordinate, tuple(e for c in found for e in c.carries))


# --- versions -------------------------------------------------------------------------------------


def version_verdict(version: str, facts: Facts) -> Verdict:
    """Whether the project's own artifact at `version` may carry the fix (base-build needs aside)."""
    why = versions.unplaced(version)
    if why:
        return Verdict(True, f"{why}: not known to be at or before the base")
    base = facts.base_version
    if base is None:
        return Verdict(
            True, f"version {version}: the task states no base version, so any release may follow it"
        )
    if versions.development(version):
        return Verdict(True, f"version {version} is a development build, published again after the base")
    for fix in facts.fix_releases:
        if versions.maven_compare(version, fix) >= 0 or versions.gradle_compare(version, fix) >= 0:
            return Verdict(True, f"version {version} is at or after {fix}, a release the fix shipped in")
    if versions.at_or_before(version, base):
        return Verdict(False, f"version {version} is at or before the base's version {base}")
    return Verdict(True, f"version {version} is not known to be at or before the base's version {base}")


def _carried(carrier: Carrier, version: str) -> tuple[str, str] | None:
    """The (carrier version, carried version) that bounds what `version` of the carrier carries: its own
    entry, or the next mapped carrier version above it in both orders (None: none is)."""
    above = [
        e
        for e in carrier.carries
        if versions.maven_compare(e[0], version) >= 0 and versions.gradle_compare(e[0], version) >= 0
    ]
    return min(above, key=cmp_to_key(lambda x, y: versions.maven_compare(x[0], y[0])), default=None)


def _coordinate_verdict(
    facts: Facts, group: str, artifact: str, version: str | None, where: str
) -> Verdict | None:
    """The verdict on an artifact of the project or of a carrier (None: it is neither); `version` None: the
    request names no version, so the newest is what it gets. An artifact that is both (the project's own
    artifact with a numbering of its own, e.g. a compiler plugin `<kotlin>-<project>`) is judged as a
    carrier: the version it carries decides."""
    carrier = _carrier(facts, group, artifact)
    pattern = _own(facts, group, artifact) if carrier is None else None
    if pattern is None and carrier is None:
        return None
    what = f"{group}:{artifact}:{version or '(no version)'} ({where}"
    if version is None:
        return Verdict(True, f"{what}): names no version, so the newest is served")
    need = _need(facts, group, artifact, version)
    if need is not None:
        return Verdict(False, f"{what}): a need of the base's own build ({need.coordinate} {need.version})")
    if pattern is not None:
        verdict = version_verdict(version, facts)
        return Verdict(verdict.retrieval, f"{what}; coordinates {pattern}): {verdict.reason}")
    assert carrier is not None
    why = versions.unplaced(version) or ("a development build" if versions.development(version) else None)
    if why:
        return Verdict(True, f"{what}; a carrier of the project): {why}")
    bound = _carried(carrier, version)
    if bound is None:
        return Verdict(
            True, f"{what}; a carrier of the project): newer than every carrier version the facts map"
        )
    carried = bound[1]
    via = "" if versions.maven_compare(bound[0], version) == 0 else f", at most as {bound[0]} does"
    what = f"{what}; carries the project at {carried}{via}"
    if carried.lower() in facts.needed_versions:
        return Verdict(False, f"{what}): a version the base's own build uses")
    verdict = version_verdict(carried, facts)
    return Verdict(verdict.retrieval, f"{what}): {verdict.reason}")


# --- the places a name can be in -------------------------------------------------------------------


def _starts(seg: list[str], facts: Facts) -> list[int]:
    """Where a group of the project's or a carrier's coordinates may start in the path: at a segment whose
    first label starts one of those groups (the classifier's shortcut; most paths have none)."""
    labels = facts.first_labels
    return [j for j, s in enumerate(seg) if s.split(".", 1)[0].lower() in labels]


def _group_at(seg: list[str], at: int, starts: list[int], facts: Facts, dotted: bool = True) -> str | None:
    """The group before `seg[at]` that makes it an artifact of the project or of a carrier, if any."""
    for j in starts:
        if j >= at:
            break
        group = ".".join(seg[j:at])
        if not dotted and any("." in s for s in seg[j:at]):
            continue  # a dotted segment: a page or an Ivy path, not the Maven layout
        if _own(facts, group, seg[at]) or _carrier(facts, group, seg[at]):
            return group
    return None


def _maven_layout(request: urlforms.Request, facts: Facts) -> Verdict | None:
    """`.../<group path or dotted group>/<artifact>/<version>[/<one more>]/<artifact>-...` (Maven, Ivy,
    Gradle's cache and plugins-artifacts.gradle.org); metadata and listings of the project's artifacts
    (`ok`, unless a listing's version asks for the newest: `.../<artifact>/LATEST/`)."""
    seg = request.segments
    n = len(seg)
    starts = _starts(seg, facts) if n >= 2 else []
    if not starts:
        return None
    last = seg[-1].lower()
    if not request.directory and last.startswith(METADATA):
        for at in (n - 2, n - 3):
            group = _group_at(seg, at, starts, facts) if at >= 1 else None
            if group is not None:
                return Verdict(False, f"metadata of {group}:{seg[at]} ({seg[-1]})")
        return None
    if not request.directory:
        for k in (2, 3):
            at = n - k - 1
            if at < 1 or not last.startswith(seg[at].lower() + "-"):
                continue
            for j in (j for j in starts if j < at):
                verdict = _coordinate_verdict(facts, ".".join(seg[j:at]), seg[at], seg[n - k], seg[-1])
                if verdict is not None:
                    return verdict
    for at in (n - 2, n - 1):  # <artifact>/<version>/ first, then <artifact>/
        group = _group_at(seg, at, starts, facts, dotted=False) if at >= 1 else None
        if group is None:
            continue
        version = seg[at + 1] if at + 1 < n else None
        if version is not None and versions.asks_newest(version):
            return _coordinate_verdict(facts, group, seg[at], version, "a listing")
        request.named = (group, seg[at]) if version is None else None
        return Verdict(False, f"a listing of {group}:{seg[at]}{'/' + version if version else ''}")
    return None


def _dotted(request: urlforms.Request, facts: Facts) -> Verdict | None:
    """`<dotted.group>/<artifact>/<version>` anywhere in a path (search sites' pages, Central's
    `artifact/<g>/<a>/<v>`, Ivy) and `g:a[:v]` in a segment; naming no version, a page is a listing."""
    seg = request.segments
    for i, segment in enumerate(seg):
        if ":" in segment:
            verdict = _gav_text(segment, facts, "in the path")
            if verdict is not None:
                return verdict
        if "." in segment and i + 2 < len(seg):
            verdict = _coordinate_verdict(facts, segment, seg[i + 1], seg[i + 2], "in the path")
            if verdict is not None:
                return verdict
    return None


def _gav_text(text: str, facts: Facts, where: str) -> Verdict | None:
    """`group:artifact[:version]` in a text (a group has a dot)."""
    for found in _GAV.finditer(text):
        group, artifact, version = found.group(1), found.group(2), found.group(3)
        if "." in group:
            verdict = _coordinate_verdict(facts, group, artifact, version, where)
            if verdict is not None:
                return verdict
    return None


def _plugin_portal(request: urlforms.Request, facts: Facts) -> Verdict | None:
    """`/plugin/<id>/<version>` and `/plugin/use/<id>/<version>` of a Gradle plugin id of the project (the
    marker's version); naming no version, a plugin's page is a listing."""
    seg = request.segments
    ids = {p.lower() for p in facts.plugin_ids}
    for i in range(len(seg) - 1):
        if seg[i].lower() != "plugin":
            continue
        at = i + 2 if seg[i + 1].lower() == "use" else i + 1
        if at + 1 < len(seg) and seg[at].lower() in ids:
            plugin = seg[at]
            return _coordinate_verdict(facts, plugin, f"{plugin}.gradle.plugin", seg[at + 1], "plugin portal")
    return None


def _marketplace(request: urlforms.Request, facts: Facts) -> Verdict | None:
    """The JetBrains Marketplace's download forms, for a task whose project is a Marketplace plugin."""
    if not facts.marketplace:
        return None
    seg = [s.lower() for s in request.segments]
    ids = facts.marketplace_ids
    for i in range(len(seg) - 2):
        if seg[i] == "files" and seg[i + 1] in ids:
            return Verdict(
                True, f"a Marketplace file of the plugin {seg[i + 1]} by update id: no version shown"
            )
    values = dict(request.pairs)
    plugin = next((values[k].strip() for k in _PLUGIN_KEYS if values.get(k, "").strip().lower() in ids), None)
    downloads = "download" in seg or "download" in values.get("action", "").lower()
    update = values.get("updateid")
    if plugin is None:
        if downloads and update:
            return Verdict(
                True, f"a Marketplace download by update id {update}: maybe the plugin, no version shown"
            )
        return None
    version = next((values[k].strip() for k in _VERSION_KEYS if values.get(k)), None)
    if version:
        verdict = version_verdict(version, facts)
        return Verdict(verdict.retrieval, f"the Marketplace plugin {plugin} {version}: {verdict.reason}")
    if update:
        return Verdict(True, f"the Marketplace plugin {plugin} by update id {update}: no version shown")
    if downloads:
        return Verdict(
            True, f"a download of the Marketplace plugin {plugin} naming no version: the newest is served"
        )
    return None


def _github_id(number: str, facts: Facts, what: str) -> Verdict | None:
    """A GitHub repository named by numeric id: the project's, or unknown while the project is on GitHub."""
    if not number.isdigit():
        return None
    if facts.github_id is None:
        return Verdict(
            True, f"{what} {number}: the facts do not know the project's id, so it may be the project"
        )
    if int(number) == facts.github_id:
        return Verdict(True, f"{what} {number}: the project's repository")
    return None


def _upstream(elements: list[str], facts: Facts) -> Verdict | None:
    """The project's repository named by owner/repo after an element that names its host (the host itself;
    for GitHub `github`, `githubusercontent`, `repos`, jsDelivr's `gh`, jitpack's `com/github`,
    `com.github.<owner>`, `io/github` under jitpack), or on GitHub by numeric id (`repositories/<id>`, a
    release asset's `github-production-release-asset*/<id>`)."""
    host, marks, names = facts.hosted
    lowered = [e.lower() for e in elements]
    joined = "/".join(lowered)
    github = host == "github.com"
    numeric = github and (
        "repositories" in joined or "release-asset" in joined or lowered[0] in RELEASE_ASSET_HOSTS
    )
    if not numeric and not any(owner in joined and repo in joined for owner, repo in names):
        return None  # the shortcut: no name of the project's repository is in the request
    for i, element in enumerate(lowered[:-1]):
        after = lowered[i + 1]
        if github and (
            element.startswith("github-production-release-asset")
            or element in RELEASE_ASSET_HOSTS
            or (element == "repositories" and any("github" in e for e in lowered[:i]))
        ):
            verdict = _github_id(after, facts, "a GitHub repository by numeric id")
            if verdict is not None:
                return verdict
        candidates = []
        if github and element.startswith(("com.github.", "io.github.")):
            candidates.append((element.split(".", 2)[2], after))  # jitpack's dotted group
        elif i + 2 < len(lowered) and (element == host or marks & set(element.split("."))):
            candidates.append((after, lowered[i + 2]))
        jitpack = any("jitpack" in e for e in lowered[:i])
        if (
            element.startswith("io.github.") or (element == "github" and i and lowered[i - 1] == "io")
        ) and not jitpack:
            continue  # io.github.<owner> is Maven Central's group of GitHub users; jitpack's only under jitpack
        for owner, repo in candidates:
            repo = repo.split("@", 1)[0].removesuffix(".git")
            if (owner, repo) in names:
                return Verdict(True, f"names the project's repository {owner}/{repo} ({host})")
    return None


def _query(request: urlforms.Request, facts: Facts, depth: int) -> Verdict | None:
    """Coordinates given as query keys, and every value read as a URL, a path or `g:a:v` text; `+` read both
    as itself and as a space."""
    found: list[Verdict | None] = []
    variants = [request.pairs]
    if any("+" in v for _, v in request.pairs):
        variants.append([(k, v.replace("+", " ")) for k, v in request.pairs])
    for pairs in variants:
        values = dict(pairs)
        if request.named and not any(values.get(k) for k in _GROUP_KEYS):  # .../<artifact>?v=LATEST
            values |= (
                {"g": request.named[0], "a": request.named[1]}
                if any(k in values for k in _VERSION_KEYS)
                else {}
            )
        found.append(_query_coordinates(values, facts))
        found.append(_search_download(request, pairs, facts))
        found.extend(_value(value, request.host, facts, depth) for _, value in pairs)
    return next((v for v in found if v is not None and v.retrieval), next((v for v in found if v), None))


def _search_download(request: urlforms.Request, pairs: list[tuple[str, str]], facts: Facts) -> Verdict | None:
    """A download by keyword search (`.../search/assets/download?q=detekt-cli`: the newest match is served)
    whose words name the project: its group's last label or an artifact (prefix) its patterns name."""
    if "download" not in (s.lower() for s in request.segments):
        return None
    names = {m[1].rsplit(".", 1)[-1] for m in facts.own_matchers if not m[2]} | {
        m[2] for m in facts.own_matchers
    }
    for key, value in pairs:
        words = _WORDS.split(value.lower()) if key in _SEARCH_KEYS else ()
        if any(n and n in word for word in words for n in names):
            return Verdict(
                True, f"a download by search ({key}={value}) naming the project: the newest is served"
            )
    return None


def _query_coordinates(values: dict[str, str], facts: Facts) -> Verdict | None:
    """`g=&a=&v=` (and the other keys repository managers use); a group of the project's artifacts without
    an artifact or without a version is the newest."""
    group = next((values[k].strip() for k in _GROUP_KEYS if values.get(k, "").strip()), None)
    if not group:
        return None
    artifact = next((values[k].strip() for k in _ARTIFACT_KEYS if values.get(k, "").strip()), None)
    version = next((values[k].strip() for k in _VERSION_KEYS if values.get(k, "").strip()), None)
    if artifact:
        return _coordinate_verdict(facts, group, artifact, version, "in the query")
    if not any(_group_holds(p, group.lower()) for p in facts.patterns):
        return None
    what = f"{group}:*:{version or '(no version)'} (in the query, a group of the project's artifacts)"
    if version is None:
        return Verdict(True, f"{what}: names no version, so the newest is served")
    verdict = version_verdict(version, facts)
    return Verdict(verdict.retrieval, f"{what}: {verdict.reason}")


def _value(value: str, host: str, facts: Facts, depth: int) -> Verdict | None:
    """One query value or fragment: a URL, a path (with the request's host before it), `g:a:v` text."""
    value = value.strip()
    if "://" in value or value.startswith("//"):
        if depth >= 3:
            return Verdict(True, "URLs nested in URLs too deep to read")
        verdict = classify(value if "://" in value else "https:" + value, facts, depth + 1)
        return verdict if verdict.retrieval else None
    verdict = _gav_text(value, facts, "in the query") if ":" in value else None
    if verdict is not None and verdict.retrieval:
        return verdict
    for word in _WORDS.split(value) if "/" in value else ():
        if "/" in word:
            found = _path(urlforms.read_request(host, word), facts)
            if found is not None and found.retrieval:
                return found
    return verdict


def _path(request: urlforms.Request, facts: Facts) -> Verdict | None:
    if "jitpack" in request.host or any("jitpack" in s.lower() for s in request.segments):
        found = _upstream([request.host, *request.segments], facts)  # jitpack builds the upstream's refs
        if found is not None:
            return found
    for judge in (_maven_layout, _plugin_portal, _marketplace, _dotted):
        verdict = judge(request, facts)
        if verdict is not None:
            return verdict
    return _upstream([request.host, *request.segments], facts)


# --- the rule -------------------------------------------------------------------------------------


def classify_request(host: str, path: str, facts: Facts, depth: int = 0) -> Verdict:
    """One request (its host, and its path as sent, with the query) for one task."""
    request = urlforms.read_request(host, path)
    found = [_path(request, facts)]
    if request.pairs:
        found.append(_query(request, facts, depth))
    for text in request.texts:
        found.append(_value(text, request.host, facts, depth))
    flagged = next((v for v in found if v is not None and v.retrieval), None)
    if flagged is not None:
        return flagged
    known = next((v for v in found if v is not None), None)
    if known is not None:
        return known
    if request.segments and request.segments[-1].lower().startswith(METADATA):
        return Verdict(False, "metadata (maven-metadata.xml)")
    return Verdict(
        False, "names none of the project's artifacts, carriers or repositories at a version after the base"
    )


def classify(url: str, facts: Facts, depth: int = 0) -> Verdict:
    """One URL (`scheme://host[:port]/path?query#fragment`) for one task."""
    url = url.strip()
    if "://" not in url:
        url = "https://" + url.lstrip("/")
    rest = url.partition("://")[2]
    authority, slash, path = rest.partition("/")
    for mark in "?#":
        if mark in authority:  # https://host?query: no path
            authority, _, tail = authority.partition(mark)
            path, slash = mark + tail + slash + path, ""
    host = authority.rsplit("@", 1)[-1]
    host = host[1:].split("]", 1)[0] if host.startswith("[") else host.split(":", 1)[0]
    return classify_request(host, ("/" if slash else "") + path, facts, depth)
