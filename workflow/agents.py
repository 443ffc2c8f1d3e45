"""Agents: what runs in a task container during the agent phase.

An agent is configured in config.yaml as `{name, kind, model?}`; `name` labels its results. Kinds:
- `oracle`: copies the task's `solution/` to `/solution` and runs `solve.sh` (the gold patch);
- `nop`: does nothing (the floor: every task must score 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workflow import containers
from workflow.tasks import Task

if TYPE_CHECKING:
    from docker.models.containers import Container

KINDS = ("oracle", "nop")


@dataclass(frozen=True)
class Agent:
    name: str
    kind: str
    model: str | None = None

    @classmethod
    def from_config(cls, entry: dict[str, Any]) -> Agent:
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"agent {entry.get('name')!r}: unknown kind {kind!r}; expected one of {KINDS}")
        return cls(name=entry["name"], kind=kind, model=entry.get("model"))


def run_agent(agent: Agent, task: Task, container: Container, log_path: Path) -> containers.ExecResult:
    """Run the agent phase under the task's agent timeout."""
    timeout = task.agent.timeout_sec
    if agent.kind == "oracle":
        containers.copy_dir_in(container, task.path / "solution", "/solution")
        return containers.run(container, "bash /solution/solve.sh", timeout, log_path, workdir=task.repo_dir)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text("nop: the agent phase does nothing\n", encoding="utf-8")
    return containers.ExecResult(exit_code=0, timed_out=False, seconds=0.0)
