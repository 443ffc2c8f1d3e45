"""What every agent kind shares: the kind's interface (`AgentKind`).

A kind checks its own configuration (`check`), names the paths outside the repository the harness writes
in its agent phase (`harness_paths`, not counted as the agent's changes) and solves a run (`solve`). Kinds
that act in our agent container implement `act` only; `solve` then runs the container, the network
policy and the capture around it (`kotlin_bench.runs.solve.solve_in_container`). A kind that runs a
trial of its own (Harbor) replaces `solve`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kotlin_bench.runs.agents.config import Agent
from kotlin_bench.runs.solve import Outcome, SolveContext, solve_in_container

if TYPE_CHECKING:
    from docker.models.containers import Container

    from kotlin_bench.core.record import WorkRecord


class AgentKind:
    """One kind of agent (`kind:` in the config)."""

    name: ClassVar[str]
    summary: ClassVar[str]  # one line for errors and help
    required: ClassVar[tuple[tuple[str, str], ...]] = ()  # (config key the kind needs, what it holds)
    harness_paths: ClassVar[tuple[str, ...]] = ()
    needs_image: ClassVar[bool] = True  # the solve step runs in (or on) the task image
    verifies_in_trial: ClassVar[bool] = False  # the kind's own trial runs the verifier too (Harbor)

    def inputs(self, agent: Agent, task_dir: Path) -> list[Path]:
        """Files the solve step reads besides the task image and its instruction (`task_dir` is the task
        directory relative to the workflow directory): editing one redoes the agent's work."""
        return []

    def check(self, agent: Agent, root: Path) -> None:
        """Raise AgentConfigError when the agent cannot run; `required` keys are checked already."""
        return None

    def solve(self, ctx: SolveContext) -> WorkRecord:
        """The solve step: by default, `act` in our agent container, then the capture."""
        return solve_in_container(
            ctx, lambda container, log, env: self.act(ctx, container, log, env), self.harness_paths
        )

    def act(self, ctx: SolveContext, container: Container, log_path: Path, env: dict[str, str]) -> Outcome:
        """The agent phase in `container` (the repository is `ctx.task.repo_dir`), under the task's agent
        timeout, with `env` (the phase's network settings); its output goes to `log_path`."""
        raise NotImplementedError(f"agent kind {self.name} does not act in a container")
