"""Section 1: the wall time of one oracle run, kotlin-bench against the bare `docker run` of the same work.

Three variants, interleaved (the order rotates with the repetition and the task), concurrency 1:

- `bare`: one `docker run --rm` of the task image (same CPU and memory limits, no network) that applies
  solution/fix.patch and tests/test.patch and runs the test command: the physical limit;
- `runner`: the run's two steps called in this process on the loaded task, as the rule scripts call them
  (`kotlin_bench.runs.runner.solve_step`, then `verify_step` on its work record, each after
  `kotlin_bench.dag.smk.task_image` found the image): the harness's own work for a run (agent container
  with the agent phase's allowlist network and proxy, diff capture, a fresh verifier container, test.sh
  with JUnit collection and comparison, copies in and out, records);
- `snakemake`: `snakemake --cores 1 <result.json>` in the workspace after deleting that run (work record
  and verdict): what a user pays for one run end to end (Snakemake start-up, DAG, the solve and verify
  jobs' script processes, then the two steps).

The task image is the workspace's (named and identified by its sentinel), never the published name.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.common import (
    AGENT,
    EXAMPLE_TASKS,
    GRADLE_TASKS,
    Context,
    Row,
    log,
    read_json,
    result_path,
    run_timed,
    snakemake,
    task_image,
)
from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult
from kotlin_bench.dag import smk
from kotlin_bench.dag.settings import Settings
from kotlin_bench.dataset.task import Task, load_task
from kotlin_bench.runs import handoff, runner
from kotlin_bench.runs.agents import Agent
from kotlin_bench.runs.verify import VerifierOptions

VARIANTS = ("bare", "runner", "snakemake")


def bare_command(task: Task, image: str, name: str) -> list[str]:
    memory = f"{task.environment.memory_mb}m"
    script = f"git apply /kb/fix.patch && git apply /kb/test.patch && {task.test_command}"
    return [
        "docker",
        "run",
        "--rm",
        "--name",
        name,
        "--network",
        "none",
        "--cpus",
        str(task.environment.cpus),
        "--memory",
        memory,
        "--memory-swap",
        memory,
        "-v",
        f"{task.path / 'solution/fix.patch'}:/kb/fix.patch:ro",
        "-v",
        f"{task.path / 'tests/test.patch'}:/kb/test.patch:ro",
        "-w",
        task.repo_dir,
        image,
        "bash",
        "-c",
        script,
    ]


def measure_bare(ctx: Context, task: Task, image: str, rep: int) -> Row:
    done = run_timed(
        bare_command(task, image, f"kotlin-bench-bench-bare-{task.id}-{rep}"),
        log_path=ctx.out / f"logs/overhead/bare-{task.id}.log",
    )
    return Row(
        "overhead", "single_run", "bare", task.id, rep, "wall_sec", done.seconds, ok=done.returncode == 0
    )


def measure_container(ctx: Context, task: Task, image: str, rep: int) -> Row:
    """`docker run --rm` of `true` in the task image: what starting and removing a container costs."""
    cmd = ["docker", "run", "--rm", "--network", "none", image, "true"]
    done = run_timed(cmd, log_path=ctx.out / "logs/overhead/container.log")
    return Row(
        "overhead",
        "container",
        "container_true",
        task.id,
        rep,
        "wall_sec",
        done.seconds,
        ok=done.returncode == 0,
    )


def both_steps(task: Task, attempt: int, run_dir: Path, config: dict[str, Any]) -> RunResult:
    """What the jobs of one run do, in this process: find the image, solve; find the image, verify."""
    work_dir = run_dir / names.WORK_DIR
    limits = handoff.Limits.from_config(config.get("capture", {}))
    engine = Settings.of(config).engine
    image = smk.task_image(Settings.of(config), task)
    runner.solve_step(
        task,
        Agent(AGENT, "oracle"),
        attempt,
        work_dir,
        image=image,
        limits=limits,
        root=Path.cwd(),
        engine=engine,
    )
    options = VerifierOptions.from_config(config.get("verifier", {}))
    # As workflow/scripts/verify.py: the verify step asks for the image only when the work needs a verdict.
    image_of = functools.partial(smk.task_image, Settings.of(config), task)
    return runner.verify_step(
        task, work_dir / names.WORK_FILE, run_dir, repeat=1, image=image_of, options=options, engine=engine
    )


def measure_runner(ctx: Context, task: Task, rep: int) -> list[Row]:
    assert ctx.workspace is not None
    run_dir = ctx.tmp / "overhead-runs" / task.id / f"rep-{rep}"
    config = yaml.safe_load((ctx.workspace / "config.yaml").read_text(encoding="utf-8"))
    # Runs are labelled with the working directory, and a workflow starting there reaps that directory's
    # containers; the records (sentinels) are relative to it: run from the workspace, never from the
    # repository where others may start workflows.
    with contextlib.chdir(ctx.workspace):
        started = time.monotonic()
        result = both_steps(task, rep + 1, run_dir, config)
        seconds = time.monotonic() - started
    ok = result.status == "resolved"
    note = "" if ok else f"{result.status}: {result.reason} {result.error or ''}".strip()
    rows = [Row("overhead", "single_run", "runner", task.id, rep, "wall_sec", seconds, ok=ok, note=note)]
    rows += [
        Row("overhead", "single_run", "runner", task.id, rep, key, value, ok=ok)
        for key, value in result.timings.items()
    ]
    outside = seconds - result.timings.get("verifier_sec", 0.0) - result.timings.get("agent_sec", 0.0)
    rows.append(Row("overhead", "single_run", "runner", task.id, rep, "outside_sec", outside, ok=ok))
    shutil.rmtree(run_dir, ignore_errors=True)
    return rows


def measure_snakemake(ctx: Context, workspace: Path, task: Task, rep: int) -> list[Row]:
    target = workspace / result_path(task.id, 1)
    shutil.rmtree(workspace / names.run_dir(AGENT, task.id, 1), ignore_errors=True)  # work and verdict
    done = snakemake(
        workspace,
        result_path(task.id, 1),
        cores=1,
        log_path=ctx.out / f"logs/overhead/snakemake-{task.id}.log",
    )
    ok = done.returncode == 0 and target.is_file()
    timings = read_json(target)["timings"] if target.is_file() else {}
    ok = ok and read_json(target)["status"] == "resolved"
    note = "" if ok else f"exit {done.returncode}; see logs/overhead/snakemake-{task.id}.log"
    rows = [
        Row("overhead", "single_run", "snakemake", task.id, rep, "wall_sec", done.seconds, ok=ok, note=note)
    ]
    rows += [
        Row("overhead", "single_run", "snakemake", task.id, rep, key, value, ok=ok)
        for key, value in timings.items()
    ]
    outside = done.seconds - timings.get("verifier_sec", 0.0) - timings.get("agent_sec", 0.0)
    rows.append(Row("overhead", "single_run", "snakemake", task.id, rep, "outside_sec", outside, ok=ok))
    return rows


def run(ctx: Context, task_ids: Sequence[str] = (*EXAMPLE_TASKS, *GRADLE_TASKS)) -> None:
    """`ctx.reps` repetitions of the three variants on each of `task_ids` (tests/test_bench.py runs one
    repetition on one task of a finished workspace, so that a change to the steps cannot break it unseen).
    The Gradle example's row stands beside the kotlinc examples': its daemon's start-up is in the bare run
    too (a fresh container each time), so it is the task's, not the harness's."""
    assert ctx.workspace is not None
    workspace = ctx.workspace
    tasks = [load_task((workspace / "examples/tasks" / t).resolve()) for t in task_ids]
    images = {t.id: task_image(workspace, t.id).id for t in tasks}
    for rep in range(ctx.reps):
        order = tasks[rep % len(tasks) :] + tasks[: rep % len(tasks)]
        for index, task in enumerate(order):
            shift = (rep + index) % len(VARIANTS)
            variants = VARIANTS[shift:] + VARIANTS[:shift]
            for variant in variants:
                if variant == "bare":
                    rows = [measure_bare(ctx, task, images[task.id], rep)]
                elif variant == "runner":
                    rows = measure_runner(ctx, task, rep)
                else:
                    rows = measure_snakemake(ctx, workspace, task, rep)
                ctx.recorder.add(*rows)
                log(f"overhead rep {rep} {task.id} {variant}: {rows[0].value:.2f}s ok={rows[0].ok}")
            ctx.recorder.add(measure_container(ctx, task, images[task.id], rep))
