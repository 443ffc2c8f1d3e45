"""The `reproduce:` section of the config: which agent is compared with which reference."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.dataset import leaderboard

BUILTIN = ("oracle", "nop")
DEFAULT_TOLERANCE = 0.05


class ReproduceError(ValueError):
    """A reference table or the `reproduce` config is unusable; the message names the file or key."""


# --------------------------------------------------------------------------- config


class ReferenceKind(StrEnum):
    TASKS = "tasks"  # per-task outcomes or per-repository rates: oracle, nop, a CSV
    LEADERBOARD = "leaderboard"  # a published leaderboard row: counts only


def reference_kind(spec: str) -> ReferenceKind:
    return ReferenceKind.LEADERBOARD if leaderboard.is_reference(spec) else ReferenceKind.TASKS


def reference_label(spec: str) -> str:
    return spec if spec in BUILTIN or leaderboard.is_reference(spec) else Path(spec).name


@dataclass(frozen=True)
class ReproducePlan:
    """Which agent is compared with which reference (`oracle`, `nop`, a CSV path or `leaderboard:<row>`);
    `root` is the checkout whose reference/leaderboard.csv and dataset specification a row is read with."""

    references: dict[str, str] = field(default_factory=dict)
    tolerance: float = DEFAULT_TOLERANCE
    root: str = "."

    @classmethod
    def from_config(cls, raw: Any, agents: Sequence[str], root: Path) -> ReproducePlan:
        if not raw:
            return cls()
        if not isinstance(raw, dict) or "reference" not in raw:
            raise ReproduceError(
                "config reproduce: expected {reference: oracle | nop | <csv> | {agent: ...}}"
            )
        wanted = _wanted(raw, agents)
        unknown = sorted(set(wanted) - set(agents))
        if unknown:
            # A config for other agents may keep the bundled references: those agents are not run here.
            warnings.warn(
                f"config reproduce: no agent named {', '.join(unknown)} is configured (configured: "
                f"{', '.join(agents)}); their references are left out",
                stacklevel=2,
            )
            wanted = {agent: spec for agent, spec in wanted.items() if agent in agents}
        tolerance = float(raw.get("tolerance", DEFAULT_TOLERANCE))
        if not 0.0 <= tolerance <= 1.0:
            raise ReproduceError(f"config reproduce.tolerance: {tolerance} is not in [0, 1]")
        references = {agent: _resolve(spec, root) for agent, spec in wanted.items()}
        return cls(references, tolerance, str(root))

    @classmethod
    def from_params(cls, params: dict[str, Any], root: Path) -> ReproducePlan:
        return cls(
            dict(params.get("references") or {}), float(params.get("tolerance", DEFAULT_TOLERANCE)), str(root)
        )

    def to_params(self) -> dict[str, Any]:
        """The rule parameters: without the checkout's location (moving it must rerun nothing); reference
        CSVs inside the checkout are relative to it."""
        return {"references": dict(self.references), "tolerance": self.tolerance}

    def reference_files(self) -> list[str]:
        """The files the verdicts are computed from (rule inputs): CSVs; for a leaderboard row, the table
        and the specification that defines its task set."""
        files = {spec for spec in self.references.values() if reference_kind(spec) is ReferenceKind.TASKS}
        if any(leaderboard.is_reference(spec) for spec in self.references.values()):
            files |= {names.LEADERBOARD_CSV, names.BENCHMARK_SPEC}  # relative to the checkout, as rule inputs
        return sorted(files - set(BUILTIN))

    def outputs(self, suffix: str) -> list[str]:
        return [names.reproduce_output(agent, suffix) for agent in self.references]


def _wanted(raw: dict[str, Any], agents: Sequence[str]) -> dict[str, str]:
    reference = raw["reference"]
    if isinstance(reference, dict):
        return {str(agent): str(spec) for agent, spec in reference.items()}
    if not isinstance(reference, str) or not reference:
        raise ReproduceError(
            "config reproduce.reference: expected oracle, nop, a CSV path, leaderboard:<row> or a mapping"
        )
    return {agent: reference for agent in raw.get("agents") or agents}


def _resolve(spec: str, root: Path) -> str:
    if spec in BUILTIN:
        return spec
    if leaderboard.is_reference(spec):
        # checked now: an unknown row fails the configuration, listing the known rows
        row = leaderboard.find_row(
            leaderboard.load_rows(root / names.LEADERBOARD_CSV), leaderboard.row_name(spec)
        )
        return row.reference
    path = reference_path(spec, root)
    if not path.is_file():
        raise ReproduceError(f"config reproduce.reference: {path} is not a file (nor oracle / nop)")
    return spec  # relative to the checkout when relative (reproduce_agent reads it there)


def reference_path(spec: str, root: Path) -> Path:
    """A reference CSV's path: `spec` as given, relative to the checkout `root` (an absolute one stays)."""
    return root / spec


