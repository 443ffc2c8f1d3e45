"""What an upstream project publishes and every name it goes by, and what a task's base build needs of it:
the facts of the retrieval rule (`kotlin_bench.core.retrieval`), as the dataset specification states them
(see ``kotlin_bench.dataset.spec``). Every fact names its `source` (`<owner>/<repo>:<path>@<sha>`, a tag
`<owner>/<repo>@<tag>`, a page's URL, or the history query that shows it).

Per repository, ``artifacts``:

- ``published_to``: where the project publishes (as stated, e.g. "Maven Central");
- ``coordinates``: the patterns of its own artifacts, ``{"pattern", "source"}``; a pattern is
  ``group`` (that group and every group below it: ``com.pinterest.ktlint`` covers
  ``com.pinterest.ktlint:ktlint-cli`` and ``com.pinterest.ktlint.x:y``, not ``com.pinterest:ktlint``),
  ``group:artifact`` (that one artifact) or ``group:prefix*`` (the artifacts of that group whose name starts
  with ``prefix``); an empty list says the project publishes no library artifact of the code its tasks fix;
- ``former_coordinates`` (optional): coordinates it published under before a relocation,
  ``{"pattern", "until_version", "source"}`` (the last version published there; null: unknown);
- ``plugin_ids`` (optional): its Gradle plugin ids, ``{"id", "source"}`` (a plugin's marker artifact is
  ``<id>:<id>.gradle.plugin``);
- ``marketplace`` (optional): its JetBrains Marketplace plugins, ``{"xml_id", "numeric_id", "source"}``
  (the Marketplace's Maven layout names it ``com.jetbrains.plugins:<xml_id>``);
- ``carriers`` (optional): other projects' artifacts that bundle or shade it, ``{"coordinates" (a pattern),
  "project", "how" (bundles, shades, depends-fat-jar), "source", "carries": [{"carrier_version",
  "carried_version", "source"}]}``.

Per repository, ``github`` (optional, for a project on GitHub): ``{"id": {"value", "source"}, "names":
[{"name": "<owner>/<repo>", "until", "source"}]}``: its numeric id, and every other owner/name GitHub serves
it under (its names before, each until the date it changed; the name it moved to after the spec's ``url``
was written, ``until`` null), redirecting to it.

Any fact may carry a ``note`` (free text for the reader; the rule ignores it).

Per task: ``base_build`` (optional), what the base commit's build resolves of its own project, always
allowed whatever its version: ``[{"coordinate" (a pattern), "version", "what", "source"}]``; and
``fix_also_released_in`` (optional), the releases of other lines the fix shipped in besides
``fix_release`` (a backport): ``[{"version", "source"}]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kotlin_bench.core import retrieval, versions
from kotlin_bench.core.retrieval import coordinate_matches

# A task entry's own facts for the retrieval rule (`spec.TaskSpec.retrieval_facts`; its repository's are in
# `artifacts`): materialization reads none of them, so its rule parameter leaves them out
# (`kotlin_bench.dag.plan`) and editing them reruns only what the retrieval rule decides.
ENTRY_FACT_KEYS = ("base_version", "fix_release", "fix_also_released_in", "base_build")

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_GROUP = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"
PATTERN = re.compile(rf"(?P<group>{_GROUP})(?::(?P<artifact>{_NAME})?(?P<star>\*)?)?")
OWNER_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class Scope(StrEnum):
    """What a coordinate pattern covers."""

    GROUP = "group"  # the group and the groups below it
    ARTIFACT = "artifact"  # one artifact
    PREFIX = "prefix"  # the artifacts of the group whose name starts with the prefix


@dataclass(frozen=True)
class Coordinate:
    group: str
    scope: Scope
    artifact: str = ""  # the artifact (ARTIFACT) or the name prefix (PREFIX); "" for GROUP

    @classmethod
    def parse(cls, text: str) -> Coordinate:
        """`group`, `group:artifact` or `group:prefix*`; anything else is a ValueError saying so."""
        found = PATTERN.fullmatch(text)
        if found is None or (":" in text and not (found["artifact"] or found["star"])):
            raise ValueError(f"{text!r} is not `group`, `group:artifact` or `group:prefix*`")
        if found["star"]:
            return cls(found["group"], Scope.PREFIX, found["artifact"] or "")
        if found["artifact"]:
            return cls(found["group"], Scope.ARTIFACT, found["artifact"])
        return cls(found["group"], Scope.GROUP)

    def covers(self, group: str, artifact: str) -> bool:
        """Whether the artifact `group:artifact` is one of this pattern's (the retrieval classifier's one
        matcher, `kotlin_bench.core.retrieval.coordinate_matches`)."""
        return coordinate_matches(str(self), group, artifact)

    def __str__(self) -> str:
        if self.scope is Scope.GROUP:
            return self.group
        return f"{self.group}:{self.artifact}{'*' if self.scope is Scope.PREFIX else ''}"


class CarrierKind(StrEnum):
    """How another project's artifact carries the project's code."""

    BUNDLES = "bundles"  # the project's classes inside its jar
    SHADES = "shades"  # ... relocated into its own packages
    DEPENDS_FAT_JAR = "depends-fat-jar"  # a fat jar of its own that holds the project


@dataclass(frozen=True)
class StatedCoordinate:
    coordinate: Coordinate
    source: str
    until_version: str | None = None  # former coordinates: the last version published there


@dataclass(frozen=True)
class PluginId:
    id: str
    source: str


@dataclass(frozen=True)
class MarketplacePlugin:
    xml_id: str
    numeric_id: int | None
    source: str


@dataclass(frozen=True)
class Carried:
    carrier_version: str
    carried_version: str
    source: str


@dataclass(frozen=True)
class Carrier:
    coordinate: Coordinate
    project: str
    how: CarrierKind
    carries: tuple[Carried, ...]
    source: str


@dataclass(frozen=True)
class Artifacts:
    """Where a project publishes and every coordinate it goes by (see the module's docstring)."""

    published_to: tuple[str, ...]
    coordinates: tuple[StatedCoordinate, ...]
    former_coordinates: tuple[StatedCoordinate, ...] = ()
    plugin_ids: tuple[PluginId, ...] = ()
    marketplace: tuple[MarketplacePlugin, ...] = ()
    carriers: tuple[Carrier, ...] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Artifacts:
        """The `artifacts` entry (schema-checked); a pattern that does not parse is a ValueError."""
        return cls(
            published_to=tuple(raw["published_to"]),
            coordinates=tuple(
                StatedCoordinate(Coordinate.parse(c["pattern"]), c["source"]) for c in raw["coordinates"]
            ),
            former_coordinates=tuple(
                StatedCoordinate(Coordinate.parse(c["pattern"]), c["source"], c.get("until_version"))
                for c in raw.get("former_coordinates") or ()
            ),
            plugin_ids=tuple(PluginId(p["id"], p["source"]) for p in raw.get("plugin_ids") or ()),
            marketplace=tuple(
                MarketplacePlugin(m["xml_id"], m.get("numeric_id"), m["source"])
                for m in raw.get("marketplace") or ()
            ),
            carriers=tuple(
                Carrier(
                    coordinate=Coordinate.parse(c["coordinates"]),
                    project=c["project"],
                    how=CarrierKind(c["how"]),
                    carries=tuple(
                        Carried(e["carrier_version"], e["carried_version"], e["source"]) for e in c["carries"]
                    ),
                    source=c["source"],
                )
                for c in raw.get("carriers") or ()
            ),
        )

    @property
    def patterns(self) -> tuple[Coordinate, ...]:
        """The project's coordinate patterns, current and former."""
        return tuple(c.coordinate for c in (*self.coordinates, *self.former_coordinates))

    def covers(self, group: str, artifact: str) -> bool:
        return any(c.covers(group, artifact) for c in self.patterns)


@dataclass(frozen=True)
class GithubName:
    name: str  # <owner>/<repo>
    until: str | None  # when it stopped being the repository's name (None: its name now)
    source: str


@dataclass(frozen=True)
class GithubNames:
    """A GitHub repository's numeric id and the other owner/names it is served under."""

    id: int | None
    id_source: str | None
    names: tuple[GithubName, ...] = ()  # every other owner/name it is served under

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> GithubNames:
        found = raw.get("id") or {}
        return cls(
            id=found.get("value"),
            id_source=found.get("source"),
            names=tuple(GithubName(n["name"], n.get("until"), n["source"]) for n in raw.get("names") or ()),
        )


@dataclass(frozen=True)
class Need:
    """What the base commit's build resolves of its own project: an artifact at one version."""

    coordinate: Coordinate
    version: str
    what: str
    source: str


@dataclass(frozen=True)
class Release:
    """A release the fix shipped in, beside the first (`fix_release`)."""

    version: str
    source: str


def parse_needs(raw: Sequence[Mapping[str, Any]], problems: list[str], where: str) -> tuple[Need, ...]:
    """A task's `base_build` entries (schema-checked); a pattern that does not parse is added to
    `problems`, at `where`."""
    needs = []
    for i, need in enumerate(raw):
        try:
            needs.append(
                Need(
                    Coordinate.parse(need["coordinate"]),
                    need["version"],
                    need.get("what", ""),
                    need["source"],
                )
            )
        except ValueError as exc:
            problems.append(f"{where}[{i}].coordinate: {exc}")
    return tuple(needs)


def parse_releases(raw: Sequence[Mapping[str, Any]]) -> tuple[Release, ...]:
    return tuple(Release(r["version"], r["source"]) for r in raw)


def read_artifacts(
    repositories: Mapping[str, Mapping[str, Any]], problems: list[str]
) -> dict[str, Artifacts]:
    """The `artifacts` of the specification's repositories that state them, by repository name; a
    coordinate pattern that does not parse is added to `problems`, naming the repository."""
    out = {}
    for name, repository in repositories.items():
        if "artifacts" in repository:
            try:
                out[name] = Artifacts.parse(repository["artifacts"])
            except ValueError as exc:
                problems.append(f"$.repositories.{name}.artifacts.coordinates: {exc}")
    return out


def need_problems(
    base_build: Sequence[Need], fix_releases: Sequence[str], artifacts: Artifacts | None
) -> list[str]:
    """A base-build need of the project's own artifact at or after a release the fix shipped in (both
    orders): the base would already hold the fix, so the facts disagree."""
    problems = []
    for need in base_build:
        group, artifact = need.coordinate.group, need.coordinate.artifact
        if (
            need.coordinate.scope is not Scope.ARTIFACT
            or artifacts is None
            or not artifacts.covers(group, artifact)
        ):
            continue
        for fix in fix_releases:
            if (
                versions.maven_compare(need.version, fix) >= 0
                and versions.gradle_compare(need.version, fix) >= 0
            ):
                problems.append(
                    f"base_build: {need.coordinate} {need.version} is at or after {fix}, a release the fix "
                    "shipped in (check the need's source and the fix's releases)"
                )
    return problems


def task_facts(
    *,
    artifacts: Artifacts | None,
    github: GithubNames | None,
    upstream: str,
    base_version: str | None,
    fix_releases: tuple[str, ...],
    base_build: Sequence[Need],
) -> retrieval.Facts:
    """What the retrieval rule knows of one task (`kotlin_bench.core.retrieval.Facts`): its repository's
    artifacts, GitHub names and URL, and the task's own releases and base-build needs."""
    return retrieval.Facts(
        coordinates=tuple(str(c) for c in artifacts.patterns) if artifacts else (),
        plugin_ids=tuple(p.id for p in artifacts.plugin_ids) if artifacts else (),
        marketplace=tuple(retrieval.Marketplace(m.xml_id, m.numeric_id) for m in artifacts.marketplace)
        if artifacts
        else (),
        carriers=tuple(
            retrieval.Carrier(
                str(c.coordinate), tuple((e.carrier_version, e.carried_version) for e in c.carries)
            )
            for c in artifacts.carriers
        )
        if artifacts
        else (),
        upstream=upstream,
        other_names=tuple(n.name for n in github.names) if github else (),
        github_id=github.id if github else None,
        base_version=base_version,
        fix_releases=fix_releases,
        base_build=tuple(retrieval.Need(str(n.coordinate), n.version) for n in base_build),
    )
