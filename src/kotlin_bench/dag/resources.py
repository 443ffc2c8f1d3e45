"""What each job asks the scheduler for: threads, memory, wall time and disk, from the task and the config.

The sizing rule (documented in the README, "Running on a cluster"):

- a run's steps (solve, verify): `threads` = ceil(`[environment].cpus`), `mem_mb` =
  `[environment].memory_mb` + `harness_mem_mb` (the job's own processes: Snakemake's job step and the
  script), `runtime` (minutes) = the step's wall-time budget (`kotlin_bench.runs.budget`: solve is the
  agent phase, the environment's start and the harness's own work, plus the verifier phase for a kind
  whose trial verifies (Harbor), the same budget the trial gets; verify is the verifier phase and the
  harness's work) + `margin_min`, `disk_mb` = `run_disk_mb` (a run's scratch is its logs, diff and JUnit
  XML; the task image is shared and counted once, under its build);
- a task image build (which warms the build cache by running the task's tests once): the run's threads
  and memory, `runtime` = ceil(`[environment].build_timeout_sec` / 60) + `margin_min`, `disk_mb` =
  `image.disk_mb`;
- a base image build: `image.threads`, `image.mem_mb`, `image.disk_mb`, `runtime` =
  ceil(`base_build_timeout_sec` / 60) + `margin_min`.

`resources.run` in the config replaces the task's figures for both steps of every run (e.g. a site's fixed
request).
Snakemake caps `threads` at `--cores`; the containers themselves are limited by the task's cpus and
memory_mb through Docker, whatever the job asked for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from kotlin_bench.dataset.task import Task
from kotlin_bench.runs.budget import minutes, solve_budget_sec, verify_budget_sec


@dataclass(frozen=True)
class JobResources:
    """One job's request: threads (cores), mem_mb, runtime (minutes), disk_mb."""

    threads: int
    mem_mb: int
    runtime: int
    disk_mb: int


@dataclass(frozen=True)
class ImageSizing:
    threads: int = 2
    mem_mb: int = 4096
    disk_mb: int = 20480


@dataclass(frozen=True)
class RunOverride:
    """Fixed figures for every run, replacing those derived from the task (None: derived)."""

    threads: int | None = None
    mem_mb: int | None = None
    runtime: int | None = None
    disk_mb: int | None = None


@dataclass(frozen=True)
class Sizing:
    """The config's `resources:` section, with its defaults (the schema lists the same defaults)."""

    harness_mem_mb: int = 512
    margin_min: int = 15
    run_disk_mb: int = 1024
    image: ImageSizing = ImageSizing()
    run: RunOverride = RunOverride()

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> Sizing:
        section = dict(section or {})
        image = ImageSizing(**(section.pop("image", None) or {}))
        run = RunOverride(**(section.pop("run", None) or {}))
        return cls(**section, image=image, run=run)

    def for_solve(self, task: Task, verifies_in_trial: bool = False) -> JobResources:
        """A solve step (`verifies_in_trial`: the agent kind's trial runs the verifier too)."""
        return self._run_step(task, solve_budget_sec(task, verifies_in_trial))

    def for_verify(self, task: Task) -> JobResources:
        return self._run_step(task, verify_budget_sec(task))

    def _run_step(self, task: Task, budget_sec: float) -> JobResources:
        derived = JobResources(
            threads=_threads(task),
            mem_mb=self._mem_mb(task),
            runtime=minutes(budget_sec, self.margin_min),
            disk_mb=self.run_disk_mb,
        )
        fixed = {f.name: getattr(self.run, f.name) for f in fields(self.run)}
        return replace(derived, **{k: v for k, v in fixed.items() if v is not None})

    def for_task_image(self, task: Task) -> JobResources:
        return JobResources(
            threads=_threads(task),
            mem_mb=self._mem_mb(task),
            runtime=minutes(task.environment.build_timeout_sec, self.margin_min),
            disk_mb=self.image.disk_mb,
        )

    def _mem_mb(self, task: Task) -> int:
        return task.environment.memory_mb + self.harness_mem_mb

    def for_base_image(self, build_timeout_sec: float) -> JobResources:
        return JobResources(
            threads=self.image.threads,
            mem_mb=self.image.mem_mb,
            runtime=minutes(build_timeout_sec, self.margin_min),
            disk_mb=self.image.disk_mb,
        )


def _threads(task: Task) -> int:
    return math.ceil(task.environment.cpus)


# Jobs that run in a task image (and its release) go before the builds of further task images
# (Snakemake's `priority:`): with `images: {keep: bases}`, an image is used and released before the next
# one is built, so that the engine holds about as many task images as jobs run at once.
USES_IMAGE_PRIORITY = 10
