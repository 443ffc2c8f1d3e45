"""A run's wall-time budget: one rule for the scheduler (a job's `runtime`) and for a Harbor trial.

A run is its agent phase, its verifier phase and what the harness does around them: starting containers,
the capture, copies, an image pull, and for a Harbor trial its environment setup (which may build).
`run_budget_sec` is the time a run may take at most; the scheduler asks for it plus its margin, so a
job is never killed before the harness has recorded what happened.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kotlin_bench.dataset.task import Task

HARNESS_SEC = 600.0  # container starts, capture, copies, an image pull, a Harbor trial's own setup


def run_budget_sec(task: Task) -> float:
    """The most a run of `task` may take: both phases, the environment's build or start, the harness."""
    return (
        task.agent.timeout_sec + task.verifier.timeout_sec + task.environment.build_timeout_sec + HARNESS_SEC
    )


def run_minutes(task: Task, margin_min: int) -> int:
    """The scheduler's runtime for a run of `task`, in minutes: the budget and a margin."""
    return math.ceil(run_budget_sec(task) / 60) + margin_min
