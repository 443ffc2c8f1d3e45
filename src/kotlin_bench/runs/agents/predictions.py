"""`kind: predictions`: patches produced elsewhere, from a predictions file (`predictions: file.jsonl`).

A predictions file is work already: the solve step writes the task's patch into the work directory
(`prediction.patch`) and its work record, without a container. The verify step applies it in the fresh
verifier container as given, then normalised, each with SWE-bench's appliers in order
(`kotlin_bench.runs.handoff.apply_patch`). So a predictions file scored again after a scorer change costs
only verification. A task the file has no line for is a run of the agent too (reward 0, reason
`no_prediction`), an empty patch one with reason `empty_patch`; one that does not apply too (`patch_not_applied`, the last applier's message kept).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import PatchKind, WorkRecord
from kotlin_bench.dataset.predictions import PredictionsError, file_model, load_predictions
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
from kotlin_bench.runs.solve import SolveContext, clear
from kotlin_bench.runs.tamper import changed_paths, flag_changes
from kotlin_bench.scoring.reasons import Reason

PATCH_FILE = "prediction.patch"


class Predictions(AgentKind):
    name = "predictions"
    summary = "patches produced elsewhere (SWE-bench or Multi-SWE-bench JSON Lines)"
    required = (("predictions", "a predictions file (JSON Lines), relative to the workflow directory"),)
    needs_image = False

    def check(self, agent: Agent, root: Path) -> None:
        assert agent.predictions is not None
        if not (root / agent.predictions).is_file():
            raise AgentConfigError(f"agent {agent.name!r}: predictions: {agent.predictions!r} is not a file")

    def solve(self, ctx: SolveContext) -> WorkRecord:
        agent, task = ctx.agent, ctx.task
        assert agent.predictions is not None
        clear(ctx.work_dir)
        record = ctx.new_record()
        try:
            predictions = load_predictions(ctx.root / agent.predictions)
        except PredictionsError as exc:
            raise AgentConfigError(str(exc)) from None
        prediction = predictions.get(task.id)
        # the agent's identity is the config's (or the whole file's), the same for every task
        record.key = replace(record.key, model=agent.model or file_model(predictions))
        log = ctx.work_dir / names.AGENT_LOG
        if prediction is None:
            log.write_text(f"predictions: {agent.predictions} has no line for {task.id}\n", encoding="utf-8")
            record.outcome = Reason.NO_PREDICTION
        elif not prediction.patch.strip():
            log.write_text(f"predictions: no patch for {task.id} in {agent.predictions}\n", encoding="utf-8")
            record.outcome = Reason.EMPTY_PATCH
        else:
            patch = ctx.work_dir / PATCH_FILE
            patch.write_bytes(prediction.patch.encode("utf-8", errors="surrogateescape"))
            log.write_text(
                f"predictions: the patch of {task.id} from {agent.predictions} (line {prediction.line})\n",
                encoding="utf-8",
            )
            record.diff, record.diff_sha256, record.patch = (
                patch.name,
                file_sha256(patch),
                PatchKind.PREDICTED,
            )
            record.work.changed_files = changed_paths(prediction.patch)
            record.work.flags = flag_changes(record.work.changed_files, prediction.patch)
        record.write(ctx.work_dir / names.WORK_FILE)
        return record
