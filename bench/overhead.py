"""Section 1: the wall time of one oracle run, kotlin-bench against the bare `docker run` of the same work.

Three variants, interleaved (the order rotates with the repetition and the task), concurrency 1:

- `bare`: one `docker run --rm` of the task image (same CPU and memory limits, no network) that applies
  solution/fix.patch and tests/test.patch and runs the test command: the physical limit;
- `runner`: `kotlin_bench.runs.runner.run` called in this process on the loaded task: the harness's own work for a
  run (agent container, diff capture, fresh verifier container, test.sh with JUnit collection and
  comparison, copies in and out, the agent phase's allowlist network and proxy);
- `snakemake`: `snakemake --cores 1 <result.json>` in the workspace after deleting that run: what a user
  pays for one run end to end (Snakemake start-up, DAG, the job's script process, then `runner.run`).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

from bench.common import AGENT, EXAMPLE_TASKS, Context, Row, log, read_json, result_path, run_timed, snakemake
from bench.prepare import sync_sentinels
from kotlin_bench.dataset.task import Task, load_task
from kotlin_bench.runs import runner
from kotlin_bench.runs.agents import Agent

VARIANTS = ("bare", "runner", "snakemake")


def bare_command(task: Task, name: str) -> list[str]:
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
        task.image,
        "bash",
        "-c",
        script,
    ]


def measure_bare(ctx: Context, task: Task, rep: int) -> Row:
    done = run_timed(
        bare_command(task, f"kotlin-bench-bench-bare-{task.id}-{rep}"),
        log_path=ctx.out / f"logs/overhead/bare-{task.id}.log",
    )
    return Row(
        "overhead", "single_run", "bare", task.id, rep, "wall_sec", done.seconds, ok=done.returncode == 0
    )


def measure_container(ctx: Context, task: Task, rep: int) -> Row:
    """`docker run --rm` of `true` in the task image: what starting and removing a container costs."""
    cmd = ["docker", "run", "--rm", "--network", "none", task.image, "true"]
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


def measure_runner(ctx: Context, task: Task, rep: int) -> list[Row]:
    run_dir = ctx.tmp / "overhead-runs" / task.id / f"rep-{rep}"
    assert ctx.workspace is not None
    # Runs are labelled with the working directory, and a workflow starting there reaps that directory's
    # containers: run from the workspace, never from the repository where others may start workflows.
    with contextlib.chdir(ctx.workspace):
        started = time.monotonic()
        result = runner.run(task, Agent(AGENT, "oracle"), rep + 1, run_dir)
        seconds = time.monotonic() - started
    ok = result.status == "resolved"
    rows = [Row("overhead", "single_run", "runner", task.id, rep, "wall_sec", seconds, ok=ok)]
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
    shutil.rmtree(target.parent, ignore_errors=True)
    retagged = sync_sentinels(workspace)
    done = snakemake(
        workspace,
        result_path(task.id, 1),
        cores=1,
        log_path=ctx.out / f"logs/overhead/snakemake-{task.id}.log",
    )
    ok = done.returncode == 0 and target.is_file()
    timings = read_json(target)["timings"] if target.is_file() else {}
    ok = ok and read_json(target)["status"] == "resolved"
    note = f"sentinels synced to retagged images: {', '.join(retagged)}" if retagged else ""
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


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = ctx.workspace
    tasks = [load_task((workspace / "examples/tasks" / t).resolve()) for t in EXAMPLE_TASKS]
    for rep in range(ctx.reps):
        order = tasks[rep % len(tasks) :] + tasks[: rep % len(tasks)]
        for index, task in enumerate(order):
            shift = (rep + index) % len(VARIANTS)
            variants = VARIANTS[shift:] + VARIANTS[:shift]
            for variant in variants:
                if variant == "bare":
                    rows = [measure_bare(ctx, task, rep)]
                elif variant == "runner":
                    rows = measure_runner(ctx, task, rep)
                else:
                    rows = measure_snakemake(ctx, workspace, task, rep)
                ctx.recorder.add(*rows)
                log(f"overhead rep {rep} {task.id} {variant}: {rows[0].value:.2f}s ok={rows[0].ok}")
            ctx.recorder.add(measure_container(ctx, task, rep))
