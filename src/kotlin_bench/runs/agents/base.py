"""What every agent kind shares: the kind's interface (`AgentKind`).

A kind checks its own configuration (`check`), names the paths outside the repository the harness writes
in its agent phase (`harness_paths`, not counted as the agent's changes) and solves a run (`solve`). Kinds
that act in our agent container implement `act` only; `solve` then runs the container, the network
policy and the capture around it (`kotlin_bench.runs.solve.solve_in_container`). A kind that runs a
trial of its own (Harbor) replaces `solve`, and says what its trial's verifier decided: the run's verdict
(`verdict`, called by `kotlin_bench.runs.verdict.verdict`), the trial's verifier files (`trial_verifier`);
its logs, trajectories and the programs it runs on the host are named by the kind too (`logs`,
`trajectories`, `programs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kotlin_bench.core.record_parts import RunVerdict, VerdictError
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
    programs: ClassVar[tuple[str, ...]] = ()  # programs the solve step runs on the host (Harbor's CLI)
    # the kind's own logs, (name, path relative to the work directory), shown on a run's page
    logs: ClassVar[tuple[tuple[str, str], ...]] = ()
    # where the kind's own trial keeps the agent's trajectory (globs relative to the work directory), for
    # records whose usage does not name it
    trajectories: ClassVar[tuple[str, ...]] = ()

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

    def verdict(self, work: WorkRecord, ours: RunVerdict | None) -> RunVerdict:
        """The run's verdict, given what a verifier of ours says of the work (None: no verifier of ours
        looked at it): by default ours."""
        if ours is None:
            raise VerdictError(
                f"the work record of {work.agent} on {work.task} (attempt {work.attempt}) has neither a "
                f"patch to verify nor an outcome: no solve step of kotlin-bench wrote it so"
            )
        return ours

    def trial_verifier(self, work: WorkRecord) -> str | None:
        """Where the kind's own trial left its verifier's files (relative to the work directory), copied
        beside a result that no verifier of ours made; None: the kind has no trial of its own."""
        return None
