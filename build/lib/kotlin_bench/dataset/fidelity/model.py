"""The findings of a fidelity check: differences, their impact, the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Impact(StrEnum):
    COSMETIC = "cosmetic"
    RESTRUCTURED = "restructured"
    BEHAVIOUR = "behaviour-changing"


@dataclass(frozen=True)
class Difference:
    key: str  # what differs, e.g. "verifier.restore_test_patch_paths"
    impact: Impact
    ours: str
    published: str
    task: str | None = None  # None: a base recipe or the dataset
    intended: str | None = None  # the specification's reason, when it lists the difference


@dataclass
class FidelityReport:
    differences: list[Difference] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)  # file kind -> how many pairs
    missing: list[str] = field(default_factory=list)  # published counterparts that do not exist

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.impact is Impact.BEHAVIOUR and not d.intended]

    def count(self, kind: str) -> None:
        self.compared[kind] = self.compared.get(kind, 0) + 1
