"""Which images a workspace built and no longer needs: the image half of `kotlin_bench.engine.leftovers`.

Every image the workflow builds carries `kotlin-bench.workdir=<workflow directory>`, which the classic
builder adds as the build's last step (`LABEL kotlin-bench.workdir=...`). Labels are inherited, so an image
built FROM one of ours (an intermediate layer of any build, a user's own image) carries our label too; an
image is **built here** only when the label is ours AND its newest history step is the one that set it.

- An image built here that no record of ours (a base or task sentinel, a rebuild's record, under
  results/images/) names is a
  leftover (a build that a later one replaced, a task image whose sentinel was deleted) when it has no
  name, or only names of our own task images (`names.is_built_task_image`). One that also carries another
  name (a base's tag, which other checkouts build FROM; a user's tag) is kept, and said so.
- The layers our builds committed (not those taken from the cache) are in the build ledger
  (`names.BUILD_LEDGER`), written as each build streams: an untagged one is build cache of ours, e.g.
  what a failed or killed build left. Layers made by other builds are never ours, even when they carry
  our label (inherited).
- Nothing is removable while a container uses it (unless that container is itself a leftover), or while
  an image that stays is built on it; removal never forces, so the engine's own checks hold too.
- `all_images`: each task's current image (`kotlin_bench.engine.retention.current`) is a leftover too when
  it was built here. Its sentinel STAYS (deleting it would make Snakemake rebuild the image and redo every
  run of the task): a release record (`retention.CLEAN`) says the image is gone, and the next job that
  needs it builds it again or pulls it back (`retention.ensure_task_image`). A current image no longer
  in the engine gets the record alone; one built elsewhere (results copied from another workspace) is
  kept. Base images never are leftovers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import retention
from kotlin_bench.engine.images import ImageError, read_ledger, read_sentinel

if TYPE_CHECKING:
    import docker


@dataclass(frozen=True)
class ImageFacts:
    """One image as the engine lists it (`docker images -a`); `last_step` is the command of its newest
    history entry (read only for images labelled ours)."""

    id: str
    tags: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    parent: str = ""
    size: int = 0
    last_step: str = ""


@dataclass(frozen=True)
class TaskRelease:
    """`--all-images`: the release record written for a task whose current image goes (or went)."""

    task: str
    results: Path

    @property
    def record(self) -> Path:
        return Path(names.task_image_release(self.task, retention.CLEAN, str(self.results)))


@dataclass(frozen=True)
class ImageContext:
    """What decides which images are ours to remove: the workflow directory (resolved); the ids our
    records name (id -> record); with `--all-images`, each task's current image (id -> its release) and
    whether the records already say it is released; the layers our builds committed (short id -> the
    image being built); the images containers that stay use (id -> a container's name)."""

    root: Path
    named: Mapping[str, Path] = field(default_factory=dict)
    task_images: Mapping[str, TaskRelease] = field(default_factory=dict)
    released: frozenset[str] = frozenset()
    ledger: Mapping[str, str] = field(default_factory=dict)
    used: Mapping[str, str] = field(default_factory=dict)
    blind: bool = False  # a sentinel could not be read: no image is removed


@dataclass(frozen=True)
class PlanItem:
    id: str
    name: str
    why: str
    size: int | None
    cache: bool = False
    release: TaskRelease | None = None


@dataclass(frozen=True)
class KeptItem:
    id: str
    name: str
    why: str


@dataclass(frozen=True)
class ImagePlan:
    """Images to remove (children before parents), images of ours kept and why, and `--all-images`'
    sentinels to delete without an image (path, the image id it records, why)."""

    remove: tuple[PlanItem, ...] = ()
    kept: tuple[KeptItem, ...] = ()
    records: tuple[tuple[TaskRelease, str, str], ...] = ()


def context(root: Path, used: Mapping[str, str], all_images: bool) -> tuple[ImageContext, list[str]]:
    """Read our records and the build ledger; an unreadable record makes the plan remove no image (it
    might name any of them) and is reported."""
    images_dir = root / names.IMAGES
    named: dict[str, Path] = {}
    warnings = []
    for pattern in (names.BASE_SENTINEL_GLOB, names.TASK_SENTINEL_GLOB, names.REBUILT_GLOB):
        for path in sorted(images_dir.glob(pattern)):
            try:
                named[read_sentinel(path).id] = path
            except ImageError as exc:
                warnings.append(f"{exc}: no image is removed until it is fixed or deleted")
    tasks: dict[str, TaskRelease] = {}
    released: set[str] = set()
    results = root / names.RESULTS
    for path in sorted(images_dir.glob(names.TASK_SENTINEL_GLOB)) if all_images else ():
        try:
            _, record = retention.current(path.stem, str(results))
            state = retention.image_state(path.stem, str(results))
        except ImageError as exc:
            warnings.append(f"{exc}: no image is removed until it is fixed or deleted")
            continue
        tasks[record.id] = TaskRelease(path.stem, results)
        if state is retention.ImageState.RELEASED:
            released.add(record.id)
    ledger = read_ledger(root / names.BUILD_LEDGER, root)
    blind = bool(warnings)
    return ImageContext(root, named, tasks, frozenset(released), ledger, used, blind), warnings


def sets_label(step: str, workdir: str) -> bool:
    """Whether a history step is the classic builder's `LABEL kotlin-bench.workdir=<workdir>` (the label
    a build of ours adds as its last step)."""
    step = step.strip()
    return any(step.endswith(f"LABEL {names.LABEL_WORKDIR}={v}") for v in (workdir, json.dumps(workdir)))


def built_here(image: ImageFacts, root: Path) -> bool:
    """Whether a build of the workflow directory `root` made this image (not merely inherited the label)."""
    value = image.labels.get(names.LABEL_WORKDIR)
    return value == str(root) and sets_label(image.last_step, value)


def short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def display(image: ImageFacts) -> str:
    return ", ".join(image.tags) or "<none>"


@dataclass(frozen=True)
class _Candidate:
    why: str
    cache: bool = False
    release: TaskRelease | None = None


def foreign_names(image: ImageFacts, root: Path) -> list[str]:
    """The image's names that are not task image names of the workflow directory `root`."""
    return [t for t in image.tags if not names.is_built_task_image(t, root)]


def candidate(image: ImageFacts, ctx: ImageContext) -> _Candidate | KeptItem | None:
    """Whether an image is ours to remove (before what uses it and what is built on it is looked at), one
    of ours to keep with the reason, or not ours (None)."""
    ours = built_here(image, ctx.root)
    foreign = foreign_names(image, ctx.root)
    if image.id in ctx.named:
        task = ctx.task_images.get(image.id)
        if task is None or not ours:
            return None
        if foreign:
            return KeptItem(image.id, display(image), f"--all-images: also named {foreign[0]}; it stays")
        return _Candidate(
            f"--all-images: task {task.task}'s image; its sentinel stays, a release record is written",
            release=task,
        )
    if ours:
        if foreign:
            return KeptItem(
                image.id,
                display(image),
                f"built here, but also named {foreign[0]}: a name other checkouts or users may use",
            )
        return _Candidate(
            "built here (its label and the build step that set it); no sentinel of ours records it"
        )
    made = ctx.ledger.get(short(image.id))
    if made is not None and not image.tags:
        return _Candidate(f"a layer our build of {made} committed ({names.BUILD_LEDGER})", cache=True)
    return None


def plan(images: list[ImageFacts], ctx: ImageContext) -> ImagePlan:
    """Which images to remove, children first; see the module's docstring."""
    by_id = {image.id: image for image in images}
    children: dict[str, list[str]] = defaultdict(list)
    for image in images:
        if image.parent:
            children[image.parent].append(image.id)
    found = {i.id: candidate(i, ctx) for i in images}
    kept = [v for v in found.values() if isinstance(v, KeptItem)]
    wanted = {k: v for k, v in found.items() if isinstance(v, _Candidate)}
    removable: dict[str, bool] = {}

    def can_go(image_id: str) -> bool:
        if image_id not in removable:
            removable[image_id] = False  # (a cycle cannot happen; this only guards the recursion)
            removable[image_id] = (
                image_id in wanted
                and image_id not in ctx.used
                and all(can_go(child) for child in children.get(image_id, ()))
            )
        return removable[image_id]

    items = []
    for image_id, why in wanted.items():
        image = by_id[image_id]
        if ctx.blind:
            continue
        if can_go(image_id):
            parent = by_id.get(image.parent)
            size = max(0, image.size - parent.size) if parent is not None else image.size
            items.append(
                (
                    _depth(image_id, by_id),
                    PlanItem(image_id, display(image), why.why, size, why.cache, why.release),
                )
            )
        elif not why.cache:
            kept.append(KeptItem(image_id, display(image), _blocked(image_id, children, wanted, ctx, by_id)))
    items.sort(key=lambda pair: -pair[0])
    kept += _elsewhere(by_id, ctx)
    return ImagePlan(tuple(item for _, item in items), tuple(kept), _gone(by_id, ctx))


def _blocked(
    image_id: str,
    children: Mapping[str, list[str]],
    wanted: Mapping[str, _Candidate],
    ctx: ImageContext,
    by_id: Mapping[str, ImageFacts],
) -> str:
    if ctx.blind:
        return "a sentinel is unreadable"
    if image_id in ctx.used:
        return f"container {ctx.used[image_id]} uses it"
    staying = [c for c in children.get(image_id, ()) if c not in wanted]
    shown = display(by_id[staying[0]]) if staying else "a layer that stays"
    return f"an image that stays is built on it ({shown})"


def _depth(image_id: str, by_id: Mapping[str, ImageFacts]) -> int:
    depth, seen = 0, set()
    while image_id in by_id and by_id[image_id].parent and image_id not in seen:
        seen.add(image_id)
        image_id = by_id[image_id].parent
        depth += 1
    return depth


def _gone(by_id: Mapping[str, ImageFacts], ctx: ImageContext) -> tuple[tuple[TaskRelease, str, str], ...]:
    """`--all-images`: the tasks whose current image is no longer in the engine though the records say it
    is present: a release record (outcome `gone`) is written alone."""
    return tuple(
        (task, image_id, f"task {task.task}'s image is no longer in the engine; the records say present")
        for image_id, task in sorted(ctx.task_images.items(), key=lambda pair: pair[1].task)
        if image_id not in by_id and image_id not in ctx.released
    )


def _elsewhere(by_id: Mapping[str, ImageFacts], ctx: ImageContext) -> list[KeptItem]:
    """`--all-images`: the tasks whose current image another workspace built (results copied from it)."""
    kept = []
    for image_id, task in sorted(ctx.task_images.items(), key=lambda pair: pair[1].task):
        image = by_id.get(image_id)
        if image is not None and not built_here(image, ctx.root):
            owner = image.labels.get(names.LABEL_WORKDIR) or "no kotlin-bench.workdir label"
            why = f"task {task.task}'s image was built by another workspace ({owner}): it stays"
            kept.append(KeptItem(image_id, display(image), why))
    return kept


def remove_image(client: docker.DockerClient, image_id: str) -> None:
    """Remove one image without force and without its parents (each parent is decided on its own): its
    names first (the last one removes the image), then the image. An image that something came to use
    since it was listed (a container, an image built on it) is refused before any name goes."""
    import docker

    image = client.images.get(image_id)
    users = client.api.containers(all=True, filters={"ancestor": image_id})
    if users:
        raise docker.errors.APIError(f"container {users[0]['Names'][0].lstrip('/')} uses it")
    if any(i.get("ParentId") == image_id for i in client.api.images(all=True)):
        raise docker.errors.APIError("an image is built on it")
    for tag in image.tags:
        client.images.remove(tag, noprune=True)
    try:
        client.images.get(image_id)
    except docker.errors.ImageNotFound:
        return
    client.images.remove(image_id, noprune=True)
