"""What an upstream project publishes: where, and the Maven coordinates of its own artifacts, as a
repository entry of the dataset specification states them (``artifacts``; see ``kotlin_bench.dataset.spec``).

A coordinate pattern is one of:

- ``group``: that group and every group below it (``com.pinterest.ktlint`` covers
  ``com.pinterest.ktlint:ktlint-cli`` and ``com.pinterest.ktlint.x:y``, not ``com.pinterest:ktlint``);
- ``group:artifact``: that one artifact;
- ``group:prefix*``: the artifacts of that group whose name starts with ``prefix``
  (``org.jetbrains.kotlinx:dataframe*`` covers ``dataframe`` and ``dataframe-core``).

An empty list says the project publishes no library artifact of the code its tasks fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kotlin_bench.core.retrieval import coordinate_matches

_NAME = r"[A-Za-z0-9_][A-Za-z0-9_.-]*"
_GROUP = r"[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*"
PATTERN = re.compile(rf"(?P<group>{_GROUP})(?::(?P<artifact>{_NAME})?(?P<star>\*)?)?")


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


@dataclass(frozen=True)
class Artifacts:
    """Where a project publishes (as stated, e.g. "Maven Central") and the patterns of its coordinates."""

    published_to: tuple[str, ...]
    coordinates: tuple[Coordinate, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Artifacts:
        """The `artifacts` entry (schema-checked); a pattern that does not parse is a ValueError."""
        return cls(tuple(raw["published_to"]), tuple(Coordinate.parse(c) for c in raw["coordinates"]))

    def covers(self, group: str, artifact: str) -> bool:
        return any(c.covers(group, artifact) for c in self.coordinates)


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
