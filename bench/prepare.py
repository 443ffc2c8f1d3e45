"""The shared workspace: a copy of the repository in which the example DAG is materialized and its images
recorded, so that the measured invocations find everything up to their run jobs already done."""

from __future__ import annotations

import docker

from bench.common import (
    EXAMPLE_TASKS,
    GRADLE_TASKS,
    Context,
    Row,
    log,
    make_workspace,
    read_json,
    snakemake,
    stamp,
    write_config,
)
from kotlin_bench.core import names
from kotlin_bench.engine.images import image_id


def prepare(ctx: Context) -> None:
    """Copy the repository, then let the DAG materialize the tasks and build the base and task images
    (from the layer cache where the engine has the layers). The task images are the workspace's own
    (`kotlin-bench/<repo>:pr-<N>.ws-<workspace tag>`); their sentinels record the names and ids the
    sections run."""
    workspace = make_workspace(ctx.tmp / "workspace")
    tasks = [*EXAMPLE_TASKS, *GRADLE_TASKS]
    write_config(workspace, attempts=1, tasks=tasks)
    targets = [t for task in tasks for t in (names.task_sentinel(task), stamp(task))]
    log(f"workspace {workspace}: materialize + image jobs (layer cache)")
    done = snakemake(workspace, *targets, log_path=ctx.out / "logs/prepare.log")
    if done.returncode != 0:
        raise RuntimeError(f"preparing the workspace failed (see {ctx.out / 'logs/prepare.log'})")
    client = docker.from_env()
    missing = []
    for task in tasks:
        sentinel = read_json(workspace / names.task_sentinel(task))
        if image_id(client, sentinel["id"]) is None:
            missing.append(task)
        ctx.recorder.add(
            Row("setup", "workspace", "task_image_job", task, 0, "build_sec", float(sentinel["seconds"]))
        )
    ctx.recorder.add(
        Row(
            "setup",
            "workspace",
            "materialize_and_images",
            "all",
            0,
            "wall_sec",
            done.seconds,
            ok=not missing,
            note=f"task images missing after the build: {', '.join(missing)}" if missing else "",
        )
    )
    ctx.workspace = workspace
