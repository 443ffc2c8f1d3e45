"""Section 5: disk cost of a task image on top of its base image (layers are shared, not copied).

Per example task: the RootFS layers of the task image and of its base (`docker image inspect`): the base's
layers must be a prefix of the task's (shared), the rest are the task's own; the bytes of the own layers
are the sizes of the task image's newest history entries beyond the base's history (`docker history`);
`docker system df -v` gives the same as the image's "unique size" (bytes no other image shares), reported
next to it as a cross-check, with the base image's full size for scale.

The images are the shared workspace's: the task image its sentinel records (the workflow's per-workspace
name, by id) and the base image its base sentinel records (by id: the base's name is shared by every
workspace on the engine, and another one may have rebuilt it since).
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import docker

from bench.common import EXAMPLE_TASKS, Context, Row, log, read_json, task_image
from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task

UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}


def parse_size(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)\s*([kKMGT]?B)", text.strip())
    return float(match[1]) * UNITS[match[2]] if match else float("nan")


def unique_sizes() -> dict[str, float]:
    """image id -> unique size (bytes) from `docker system df -v`."""
    done = subprocess.run(
        ["docker", "system", "df", "-v", "--format", "{{json .}}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return {}
    data = json.loads(done.stdout.splitlines()[0])
    return {i["ID"]: parse_size(i.get("UniqueSize", "")) for i in data.get("Images", [])}


def base_image_id(workspace: Path, base_image: str) -> str:
    """The id of the base image the workspace's base sentinel records."""
    return str(read_json(workspace / names.base_sentinel(*names.image_parts(base_image)))["id"])


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    root = ctx.workspace
    client = docker.from_env()
    unique = unique_sizes()
    for task_id in EXAMPLE_TASKS:
        task = load_task(root / "examples/tasks" / task_id, require_materialized=False)
        image = client.images.get(task_image(root, task_id).id)
        base = client.images.get(base_image_id(root, task.base_image))
        layers = image.attrs["RootFS"]["Layers"]
        base_layers = base.attrs["RootFS"]["Layers"]
        shared = layers[: len(base_layers)] == base_layers
        history = client.api.history(image.id)
        base_history = client.api.history(base.id)
        own_entries = history[: len(history) - len(base_history)]
        own_bytes = float(sum(entry["Size"] for entry in own_entries))
        rows = [
            Row("disk", "task_image", "own_layers", task_id, 0, "bytes", own_bytes, unit="B", ok=shared),
            Row(
                "disk",
                "task_image",
                "own_layers",
                task_id,
                0,
                "count",
                len(layers) - len(base_layers),
                unit="layers",
                ok=shared,
                note=f"{len(base_layers)} base layers shared",
            ),
            Row(
                "disk",
                "task_image",
                "df_unique",
                task_id,
                0,
                "bytes",
                unique.get(image.id, float("nan")),
                unit="B",
            ),
            Row("disk", "task_image", "base_size", task_id, 0, "bytes", float(base.attrs["Size"]), unit="B"),
        ]
        ctx.recorder.add(*rows)
        log(
            f"disk {task_id}: own {own_bytes / 1e3:.1f} kB in {len(layers) - len(base_layers)} layers, "
            f"base {base.attrs['Size'] / 1e6:.0f} MB, shared prefix {shared}"
        )
