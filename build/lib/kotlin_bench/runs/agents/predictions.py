"""`kind: predictions`: patches produced elsewhere, from a predictions file (`predictions: file.jsonl`).

The task's patch is applied in the agent container as given, then normalised, each with SWE-bench's
appliers in order (`kotlin_bench.runs.handoff.apply_patch`). An empty patch, or one that does not apply,
is a result (reward 0, reason `empty_patch` / `patch_not_applied`, the last applier's message kept): the
verifier is skipped for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.dataset.predictions import PredictionsError, load_predictions, patch_candidates
from kotlin_bench.engine import containers
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
from kotlin_bench.runs.solve import NOTHING, Outcome, SolveContext
from kotlin_bench.scoring.reasons import Reason

if TYPE_CHECKING:
    from docker.models.containers import Container


class Predictions(AgentKind):
    name = "predictions"
    summary = "patches produced elsewhere (SWE-bench or Multi-SWE-bench JSON Lines)"
    required = (("predictions", "a predictions file (JSON Lines), relative to the workflow directory"),)

    def check(self, agent: Agent, root: Path) -> None:
        assert agent.predictions is not None
        if not (root / agent.predictions).is_file():
            raise AgentConfigError(f"agent {agent.name!r}: predictions: {agent.predictions!r} is not a file")

    def act(self, ctx: SolveContext, container: Container, log_path: Path, env: dict[str, str]) -> Outcome:
        agent, task = ctx.agent, ctx.task
        assert agent.predictions is not None
        try:
            prediction = load_predictions(ctx.root / agent.predictions).get(task.id)
        except PredictionsError as exc:
            raise AgentConfigError(str(exc)) from None
        model = agent.model or (prediction.model if prediction else None)
        if prediction is None or not prediction.patch.strip():
            log_path.write_text(f"predictions: no patch for {task.id}\n", encoding="utf-8")
            return Outcome(NOTHING, skip_reason=Reason.EMPTY_PATCH, model=model)
        done, applied = handoff.apply_patch(
            container, task, patch_candidates(prediction.patch), log_path, task.agent.timeout_sec
        )
        result = containers.ExecResult(done.exit_code, done.timed_out, done.seconds)
        if applied.applier:
            return Outcome(result, model=model, prediction=applied)
        return Outcome(
            result, Reason.PATCH_NOT_APPLIED, applied.message or None, model=model, prediction=applied
        )
