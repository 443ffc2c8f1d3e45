"""Reproduction verdicts: one per agent, computed once (`results/reproduce/verdicts.json`), read by the report."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.results.reproduce.plan import ReferenceKind


@dataclass(frozen=True)
class Verdict:
    """One agent's reproduction verdict, computed once by the aggregate step and read by the report."""

    agent: str
    reference: str
    text: str
    comparison: str  # the comparison CSV it was computed from
    kind: str = ReferenceKind.TASKS  # how that CSV reads (ReferenceKind)

    @property
    def line(self) -> str:
        return f"{self.agent} vs {self.reference}: {self.text}"


def write_verdicts(verdicts: Sequence[Verdict], path: Path) -> None:
    write_atomic(path, json.dumps([asdict(v) for v in verdicts], indent=2) + "\n")


def read_verdicts(path: Path) -> list[Verdict]:
    return [Verdict(**entry) for entry in json.loads(Path(path).read_text(encoding="utf-8"))]


def merge_verdicts(verdicts: Sequence[Verdict], path: Path) -> list[Verdict]:
    """Write `verdicts` into an existing verdicts file, replacing the entries of the same agents."""
    kept = (
        [v for v in read_verdicts(path) if v.agent not in {n.agent for n in verdicts}]
        if path.is_file()
        else []
    )
    merged = [*kept, *verdicts]
    write_verdicts(merged, path)
    return merged
