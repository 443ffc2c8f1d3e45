"""The shared workspace: a copy of the repository in which the example DAG is materialized and its images
recorded, so that the measured invocations find everything up to their run jobs already done."""

from __future__ import annotations

import json
import os
from pathlib import Path

import docker

from bench.common import (
    EXAMPLE_TASKS,
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


def current_image_ids() -> dict[str, str]:
    client = docker.from_env()
    return {image_tag: image.id for image in client.images.list() for image_tag in image.tags}


def sync_sentinels(workspace: Path) -> list[str]:
    """Point the workspace's task-image sentinels at the images their tags name now; return the tasks changed.

    Task image tags are global on the engine while sentinels belong to a workspace: a workflow in another
    directory whose task files differ rebuilds the tag, and our runs would then fail their image-id check.
    The sentinel's mtime is kept, so this triggers no rerun by itself."""
    images = current_image_ids()
    changed = []
    for task in EXAMPLE_TASKS:
        path = workspace / names.task_sentinel(task)
        data = read_json(path)
        now = images.get(data["image"])
        if now and now != data["id"]:
            stat = path.stat()
            data["id"] = now
            path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
            os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
            changed.append(task)
    if changed:
        log(f"task images retagged since the workspace recorded them: {', '.join(changed)}")
    return changed


def prepare(ctx: Context) -> None:
    """Copy the repository, then let the DAG materialize the tasks and build (from the layer cache) the
    base and task images: the sentinels then hold the ids of the images that already exist."""
    workspace = make_workspace(ctx.tmp / "workspace")
    write_config(workspace, attempts=1)
    targets = [t for task in EXAMPLE_TASKS for t in (names.task_sentinel(task), stamp(task))]
    log(f"workspace {workspace}: materialize + image jobs (layer cache)")
    done = snakemake(workspace, *targets, log_path=ctx.out / "logs/prepare.log")
    ok = done.returncode == 0
    if not ok:
        raise RuntimeError(f"preparing the workspace failed (see {ctx.out / 'logs/prepare.log'})")
    images = current_image_ids()
    notes = []
    for task in EXAMPLE_TASKS:
        sentinel = read_json(workspace / names.task_sentinel(task))
        if images.get(sentinel["image"]) != sentinel["id"]:
            notes.append(f"{task}: image id changed")
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
            ok=ok,
            note="; ".join(notes) or "images taken from the layer cache",
        )
    )
    ctx.workspace = workspace
