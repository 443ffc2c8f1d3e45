"""Runs recorded as errors are redone by the next `snakemake`, their failed step only.

An error (status `error`: a network fault in verification, a model outage, an engine that failed on every
try, a run its agent's budget did not start) is not a verdict: it is recorded, so that the summary and
`kotlin-bench errors` can say what failed, and it asks to be tried again, as a failed Snakemake job would be.
While the DAG is built, the failed step's output of such a run is forced (Snakemake's own `--forcerun` of
that file, as `kotlin_bench.dag.stale` forces a stale summary): a failed verification is verified again
without touching the agent's work; a failed solve step is solved again, then verified. A preview (`-n`)
plans the same jobs and changes nothing; any other invocation (`--summary`, a rule script's parse) neither.
`kotlin-bench errors --delete` does the same by deleting those outputs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kotlin_bench.core.record import RecordError, RunResult, Status, failed_step_outputs
from kotlin_bench.dag.stale import Invocation


@dataclass
class ErroredRuns:
    """Forces (once per file) the failed steps of the errored runs one Snakemake invocation meets."""

    workflow: Any
    said: set[str] = field(default_factory=set)

    def redo(self, result: str) -> None:
        """Called from the input function of the step that writes `result` (a run's verdict, or one of its
        repeated verifications): if that file records an error, its failed step is made again."""
        if result in self.said or Invocation.of(self.workflow) is Invocation.OTHER:
            return
        dag = getattr(self.workflow, "dag", None)
        path = Path(result)
        if dag is None or not path.is_file():
            return
        try:
            recorded = RunResult.read(path)
        except RecordError:
            return  # not a record this package reads: Snakemake's own rules decide
        if recorded.status is not Status.ERROR:
            return
        self.said.add(result)
        outputs = failed_step_outputs(path, recorded)
        dag.forcefiles.update(str(p) for p in outputs)
        step = recorded.failed_step or "verify"
        why = recorded.reason_detail or recorded.reason
        print(
            f"kotlin-bench: {result}: recorded as an error ({why}); its {step} step is redone",
            file=sys.stderr,
        )


@dataclass
class ForcedAgain:
    """Forces (once per file) outputs that recorded an error of the harness, so that the next invocation
    makes them again (the harvest's candidates recorded as errors: `kotlin_bench.dag.harvest.errored`)."""

    workflow: Any
    said: set[str] = field(default_factory=set)

    def redo(self, outputs: list[str]) -> None:
        fresh = [o for o in outputs if o not in self.said]
        dag = getattr(self.workflow, "dag", None)
        if not fresh or dag is None or Invocation.of(self.workflow) is Invocation.OTHER:
            return
        self.said.update(fresh)
        dag.forcefiles.update(fresh)
        print(
            f"kotlin-bench: {fresh[0]}: recorded as an error; made again: {', '.join(fresh[1:])}",
            file=sys.stderr,
        )
