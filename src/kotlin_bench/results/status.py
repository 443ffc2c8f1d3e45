"""Runs per agent as the results directory holds them now (`kotlin-bench status`): done, resolved,
unresolved, errors and still to do, for the agents, tasks and attempts of the config in use. Read from
the run records themselves (result.json), so it answers during a run too, before any summary exists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import Status, read_status


@dataclass(frozen=True)
class AgentRuns:
    agent: str
    planned: int
    resolved: int
    unresolved: int
    errors: int

    @property
    def done(self) -> int:
        return self.resolved + self.unresolved + self.errors

    @property
    def to_do(self) -> int:
        return self.planned - self.done

    def row(self) -> tuple[str, ...]:
        return (
            self.agent,
            f"{self.done}/{self.planned}",
            str(self.resolved),
            str(self.unresolved),
            str(self.errors),
            str(self.to_do),
        )


HEADER = ("agent", "done", "resolved", "unresolved", "errors", "to do")
LEGEND = (
    "done: runs with a verdict (result.json); to do: runs the next `snakemake` does; errors: runs that failed "
    "on every retry, counted as unresolved (`kotlin-bench errors` lists them)"
)


def agent_runs(root: Path, agents: Sequence[str], tasks: Sequence[str], attempts: int) -> list[AgentRuns]:
    """One row per configured agent over the selected tasks and attempts."""
    rows = []
    for agent in agents:
        statuses = [
            read_status(root / names.verify_result(agent, task, attempt))
            for task in tasks
            for attempt in range(1, attempts + 1)
        ]
        rows.append(
            AgentRuns(
                agent,
                len(statuses),
                statuses.count(Status.RESOLVED),
                statuses.count(Status.UNRESOLVED),
                statuses.count(Status.ERROR),
            )
        )
    return rows
