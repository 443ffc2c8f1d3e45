"""Wall-time budgets of a run's steps: one rule for the scheduler (a job's `runtime`) and for a Harbor trial.

A solve step is its agent phase, the start of the task's environment (which a Harbor trial may build)
and the harness's own work around them (starting containers, the capture, copies, an image pull); a
Harbor trial also verifies in the agent's container, so its budget includes the verifier phase. A verify
step is the verifier phase and the harness's work. The scheduler asks for a step's budget plus its
margin, so a job is never killed before the harness has recorded what happened.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kotlin_bench.dataset.task import Task

HARNESS_SEC = 600.0  # container starts, capture, copies, an image pull, a Harbor trial's own setup


def solve_budget_sec(task: Task, verifies_in_trial: bool = False) -> float:
    """The most a solve step of `task` may take; `verifies_in_trial`: the agent kind's trial runs the
    verifier too (Harbor)."""
    verifier = task.verifier.timeout_sec if verifies_in_trial else 0.0
    return task.agent.timeout_sec + verifier + task.environment.build_timeout_sec + HARNESS_SEC


def verify_budget_sec(task: Task) -> float:
    """The most a verify step of `task` may take."""
    return task.verifier.timeout_sec + HARNESS_SEC


def minutes(seconds: float, margin_min: int) -> int:
    """A budget as the scheduler's runtime, in minutes, with a margin."""
    return math.ceil(seconds / 60) + margin_min
