"""Section 8 (issue 23): bytes of images on the engine, `images: {keep: all}` against `{keep: bases}`.

In a clone of the shared workspace (its own directory, so its own task image names, and its materialized
tasks and base sentinels), the examples run (`snakemake --cores 2 results/summary.csv`: every example
task, 5, an oracle and a nop agent, one attempt) once per policy, interleaved (the order alternates with the
round). Before each, the clone's task images and their records (sentinels, releases, rebuilds) and its
runs are deleted, so both policies start from the base images alone and build the 5 task images.

While Snakemake runs, this process lists the clone's images every `INTERVAL` seconds (images labelled
with its directory and named with its tag: `kotlin-bench/<repo>:pr-<N>.ws-<tag>`) and keeps, per kind:

- base: the base images the clone's base sentinels record (by id; shared with every workspace on the
  engine, never removed): the bytes of their layers, each layer once (a base's own bytes are its size less
  that of the largest other base whose layers are a prefix of its own);
- task: the number of the clone's task images present and their own bytes (size less that of the base
  whose layers are a prefix of theirs), and the sum of their sizes as `docker images` shows them
  (base layers counted again for each: what the sentinels' `size` records).

Peak is the largest sample during the run, final the sample after it. The target of `keep: bases`: the
peak stays within the bases plus as many task images as jobs run at once (`JOBS`: `--cores 2` and the
profile's `docker=2`), i.e. at most `JOBS` task images present at any sample. The bytes are the
workspace's images as the engine accounts them; a layer that another image shares (a cache hit on a
build of another workspace) stays on disk when the image is removed.
"""

from __future__ import annotations

import contextlib
import csv
import shutil
import threading
import time
from dataclasses import astuple, dataclass, field
from pathlib import Path

import docker

from bench.common import (
    Context,
    Row,
    all_example_tasks,
    log,
    read_json,
    remove_task_images,
    result_path,
    snakemake,
    stamp,
    write_config,
)
from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace, job_counts

POLICIES = ("all", "bases")
AGENTS = [{"name": "bench-oracle", "kind": "oracle"}, {"name": "bench-nop", "kind": "nop"}]
JOBS = 2
INTERVAL = 0.5
TARGET = names.SUMMARY_CSV


@dataclass(frozen=True)
class Layers:
    """An image's size as the engine reports it (its layers, shared ones included) and its layers."""

    size: int
    layers: tuple[str, ...]


class Sizes:
    """Sizes and layers of images by id (an image never changes, so each is inspected once)."""

    def __init__(self, client: docker.DockerClient) -> None:
        self.client = client
        self.known: dict[str, Layers] = {}

    def get(self, image_id: str) -> Layers | None:
        if image_id not in self.known:
            try:
                attrs = self.client.images.get(image_id).attrs
            except docker.errors.ImageNotFound:
                return None
            self.known[image_id] = Layers(int(attrs["Size"]), tuple(attrs["RootFS"]["Layers"]))
        return self.known[image_id]

    def own(self, image_id: str, parents: list[str]) -> int:
        """Its size less that of the largest of `parents` whose layers are a proper prefix of its own."""
        image = self.get(image_id)
        if image is None:
            return 0
        below = [0]
        for parent in parents:
            found = self.get(parent)
            if found and parent != image_id and image.layers[: len(found.layers)] == found.layers:
                below.append(found.size)
        return image.size - max(below)


def base_ids(workspace: Path) -> list[str]:
    return sorted(
        {str(read_json(p)["id"]) for p in (workspace / names.RESULTS / "images/base").rglob("*.json")}
    )


@dataclass(frozen=True)
class Sample:
    seconds: float
    task_images: int
    task_bytes: int
    task_listed_bytes: int


@dataclass
class Poller:
    """Lists a workspace's task images every INTERVAL seconds in a thread; keeps every sample."""

    client: docker.DockerClient
    workspace: Path
    sizes: Sizes
    bases: list[str]
    samples: list[Sample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._started = time.monotonic()

    def task_image_ids(self) -> list[str]:
        ours = f".ws-{names.workdir_tag(self.workspace)}"
        label = f"{names.LABEL_WORKDIR}={self.workspace.resolve()}"
        listed = self.client.images.list(filters={"label": label})
        return [i.id for i in listed if any(t.endswith(ours) and ":pr-" in t for t in i.tags)]

    def sample(self) -> Sample:
        ids = self.task_image_ids()
        own = sum(self.sizes.own(i, self.bases) for i in ids)
        listed = sum(found.size for found in map(self.sizes.get, ids) if found)
        result = Sample(round(time.monotonic() - self._started, 2), len(ids), own, listed)
        self.samples.append(result)
        return result

    def _poll(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(docker.errors.APIError):
                self.sample()
            self._stop.wait(INTERVAL)

    def __enter__(self) -> Poller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["seconds", "task_images", "task_bytes", "task_listed_bytes"])
            writer.writerows(astuple(s) for s in self.samples)


def base_bytes(sizes: Sizes, bases: list[str]) -> int:
    """The bytes of the base images' layers, each layer once."""
    return sum(sizes.own(b, bases) for b in bases)


def reset(workspace: Path) -> list[str]:
    """No task image of the workspace, no record of one, no run: both policies start from the bases."""
    removed = remove_task_images(workspace)
    for folder in ("images/task", "images/released", "images/rebuilt", "runs"):
        shutil.rmtree(workspace / names.RESULTS / folder, ignore_errors=True)
    for name in (names.SUMMARY_CSV, names.SUMMARY_MD):
        (workspace / name).unlink(missing_ok=True)
    return removed


def released(workspace: Path) -> list[str]:
    """The outcomes of the runs' releases (one per task with `keep: bases`)."""
    folder = workspace / names.RESULTS / "images/released/runs"
    return [str(read_json(p)["outcome"]) for p in sorted(folder.glob("*.json"))]


def checks(workspace: Path, policy: str, code: int, final: Sample) -> tuple[bool, str]:
    """Whether the run did what its policy says, and a note saying what it did."""
    tasks = all_example_tasks()
    results = [workspace / result_path(t, 1, a["name"]) for t in tasks for a in AGENTS]
    oracle = [workspace / result_path(t, 1, AGENTS[0]["name"]) for t in tasks]
    resolved = sum(1 for p in oracle if p.is_file() and read_json(p)["reward"] == 1.0)
    outcomes = released(workspace)
    rebuilt = len(list((workspace / names.RESULTS / "images/rebuilt").glob("*.json")))
    ok = code == 0 and all(p.is_file() for p in results) and resolved == len(oracle)
    if policy == "bases":
        ok = ok and outcomes == ["removed"] * len(tasks) and final.task_images == 0
    else:
        ok = ok and not outcomes and final.task_images == len(tasks)
    note = (
        f"exit {code}; {sum(p.is_file() for p in results)} results, {resolved} oracle resolved; "
        f"releases {','.join(outcomes) or 'none'}; rebuilt {rebuilt}"
    )
    return ok, note


def run_policy(
    ctx: Context, workspace: Path, policy: str, *, rep: int, sizes: Sizes, bases: list[str]
) -> list[Row]:
    reset(workspace)
    write_config(workspace, attempts=1, agents=AGENTS, keep=policy, tasks="all")
    client = docker.from_env()
    with Poller(client, workspace, sizes, bases) as poller:
        done = snakemake(workspace, TARGET, log_path=ctx.out / f"logs/images/{policy}-{rep}.log")
    final = poller.sample()
    poller.write(ctx.out / f"logs/images/{policy}-{rep}.csv")
    ok, note = checks(workspace, policy, done.returncode, final)
    jobs = job_counts(done.stdout + done.stderr)
    note += f"; jobs {', '.join(f'{k}={v}' for k, v in sorted(jobs.items()))}; {len(poller.samples)} samples"
    base = base_bytes(sizes, bases)
    peak_count = max(s.task_images for s in poller.samples)
    peak_bytes = max(s.task_bytes for s in poller.samples)
    largest = max((sizes.own(i, bases) for i in sizes.known if i not in bases), default=0)

    def row(metric: str, value: float, unit: str, good: bool = ok, text: str = "") -> Row:
        return Row("images", "examples", policy, "all", rep, metric, float(value), unit, good, text)

    within = peak_count <= JOBS if policy == "bases" else True
    return [
        row("wall_sec", done.seconds, "s", text=note),
        row("base_bytes", base, "B"),
        row("task_images_peak", peak_count, "images", ok and within),
        row("task_bytes_peak", peak_bytes, "B"),
        row("task_listed_bytes_peak", max(s.task_listed_bytes for s in poller.samples), "B"),
        row("total_bytes_peak", base + peak_bytes, "B"),
        row("task_images_final", final.task_images, "images"),
        row("task_bytes_final", final.task_bytes, "B"),
        row("total_bytes_final", base + final.task_bytes, "B"),
        row(
            "bound_bytes",
            base + JOBS * largest,
            "B",
            text=f"bases + {JOBS} x the largest task image's own bytes",
        ),
    ]


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = Workspace(ctx.workspace).clone(ctx.tmp / "images").root
    client = docker.from_env()
    sizes = Sizes(client)
    bases = base_ids(workspace)
    try:
        removed = reset(workspace)
        log(f"images: clone {workspace}; {len(bases)} base images; removed {removed or 'no task image'}")
        write_config(workspace, attempts=1, agents=AGENTS, tasks="all")
        stamps = [stamp(t) for t in all_example_tasks()]  # materialized before, so that both runs only run
        done = snakemake(workspace, *stamps, log_path=ctx.out / "logs/images/materialize.log")
        if done.returncode != 0:
            raise RuntimeError(f"materializing the example tasks failed (see {ctx.out / 'logs/images'})")
        for rep in range(ctx.rounds):
            order = POLICIES if rep % 2 == 0 else tuple(reversed(POLICIES))
            for policy in order:
                rows = run_policy(ctx, workspace, policy, rep=rep, sizes=sizes, bases=bases)
                ctx.recorder.add(*rows)
                value = {r.metric: r.value for r in rows}
                log(
                    f"images round {rep} keep {policy}: {value['wall_sec']:.0f}s, peak "
                    f"{int(value['task_images_peak'])} task images ({value['task_bytes_peak'] / 1e6:.1f} MB own), "
                    f"final {int(value['task_images_final'])}; ok={rows[0].ok} ({rows[0].note})"
                )
    finally:
        remove_task_images(workspace)
