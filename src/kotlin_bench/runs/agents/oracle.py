"""`kind: oracle`: the task's gold patch (`solution/solve.sh` applies `solution/fix.patch`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import containers
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent
from kotlin_bench.runs.solve import Outcome, SolveContext

if TYPE_CHECKING:
    from docker.models.containers import Container


class Oracle(AgentKind):
    name = "oracle"
    summary = "the task's gold patch (solution/solve.sh); every task must score 1"
    harness_paths = (names.CONTAINER_SOLUTION,)

    def inputs(self, agent: Agent, task_dir: Path) -> list[Path]:
        return [task_dir / names.SOLVE_SCRIPT, task_dir / names.FIX_PATCH]

    def act(self, ctx: SolveContext, container: Container, log_path: Path, env: dict[str, str]) -> Outcome:
        task = ctx.task
        containers.copy_dir_in(container, task.path / "solution", names.CONTAINER_SOLUTION)
        script = f"bash {names.CONTAINER_SOLUTION}/solve.sh"
        return Outcome(
            containers.run(
                container, script, task.agent.timeout_sec, log_path, workdir=task.repo_dir, env=env
            )
        )
