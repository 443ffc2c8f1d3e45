"""`kind: nop`: does nothing (the floor: every task must score 0)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.solve import NOTHING, Outcome, SolveContext

if TYPE_CHECKING:
    from docker.models.containers import Container


class Nop(AgentKind):
    name = "nop"
    summary = "does nothing; every task must score 0"

    def act(self, ctx: SolveContext, container: Container, log_path: Path, env: dict[str, str]) -> Outcome:
        log_path.write_text("nop: the agent phase does nothing\n", encoding="utf-8")
        return Outcome(NOTHING)
