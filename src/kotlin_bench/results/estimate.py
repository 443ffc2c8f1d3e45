"""Costs before they happen: per agent, the runs still to do and, from the runs it finished in this
workspace, the tokens and dollars they are expected to take (`kotlin-bench plan`), and what it has spent
against its `budget_usd`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.record import RecordError, RunResult


@dataclass(frozen=True)
class AgentEstimate:
    agent: str
    runs: int  # runs the config asks for
    to_do: int  # of those, without a verdict yet
    measured: int  # finished runs that reported usage
    spent_usd: float | None  # what the finished runs cost (None: none reported a cost)
    tokens_per_run: float | None
    usd_per_run: float | None
    budget_usd: float | None

    @property
    def expected_tokens(self) -> float | None:
        return None if self.tokens_per_run is None else self.tokens_per_run * self.to_do

    @property
    def expected_usd(self) -> float | None:
        return None if self.usd_per_run is None else self.usd_per_run * self.to_do

    def line(self) -> str:
        text = f"  {self.agent}: {self.to_do} of {self.runs} run(s) to do"
        if self.measured == 0:
            return text + "; no finished run reported usage, so no estimate"
        text += f"; from {self.measured} finished run(s): ~{self.expected_tokens or 0:,.0f} tokens"
        if self.expected_usd is not None:
            text += f", ~${self.expected_usd:,.2f} (${self.usd_per_run:,.4f} a run; ${self.spent_usd or 0:,.2f} spent)"
        if self.budget_usd is not None:
            text += f"; budget ${self.budget_usd:,.2f}"
        return text


def estimate(results: Path, agent: dict[str, Any], tasks: list[str], attempts: int) -> AgentEstimate:
    """The estimate of one configured agent (`agent`: its config entry) over `tasks` x `attempts`, from the
    verdicts under `results` (the results directory)."""
    name = str(agent["name"])
    paths = [
        results / Path(names.verify_result(name, t, a)).relative_to(names.RESULTS)
        for t in tasks
        for a in range(1, attempts + 1)
    ]
    finished = []
    for path in paths:
        try:
            finished.append(RunResult.read(path))
        except RecordError:
            continue
    used = [r.work.usage for r in finished if r.work.usage.reported()]
    tokens = [(u.input_tokens or 0) + (u.output_tokens or 0) for u in used]
    costs = [u.cost_usd for u in used if u.cost_usd is not None]
    return AgentEstimate(
        agent=name,
        runs=len(paths),
        to_do=len(paths) - len(finished),
        measured=len(used),
        spent_usd=sum(costs) if costs else None,
        tokens_per_run=sum(tokens) / len(tokens) if tokens else None,
        usd_per_run=sum(costs) / len(costs) if costs else None,
        budget_usd=agent.get("budget_usd"),
    )
