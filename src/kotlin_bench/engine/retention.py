"""Which task images stay on the engine (config `images: {keep: all | bases}`), and bringing back one
that went.

With `keep: bases`, a task image is removed once the jobs of one purpose that need it in this invocation
are done: rule `release_task_image` (one job per task and `Purpose`) runs after them and writes a
`Release` record under results/images/released/<purpose>/. The image's sentinel stays as it is, so the
runs made on it keep their inputs and nothing reruns; the records say the image is gone (`image_state`).

A job that needs a task image later (`ensure_task_image`) gets it back: with `registry:`, pulled by its
recorded digest (the same image, the same id: its record stays as it is); without, built again from the
task's environment/ (a new id), recorded in results/images/rebuilt/<task>.json with the id it replaces. Runs made on the
previous id keep their verdicts and records (each result names the image id its step ran on); only the
jobs that run from then on use the new one. One job per task does this at a time (a lock on the task's
sentinel); the others wait for it and use what it made.

`kotlin-bench clean --all-images` releases task images the same way, outside the workflow: it writes its
records under results/images/released/clean/ (`CLEAN`), which no rule makes or reads, so that clean
changes no job's inputs and reruns nothing (`record_release`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine import containers
from kotlin_bench.engine.images import (
    ImageError,
    ImageRef,
    Sentinel,
    build_task_image,
    image_id,
    read_sentinel,
    use_image,
    workdir_label,
)
from kotlin_bench.engine.registry import Registry

if TYPE_CHECKING:
    from kotlin_bench.engine.engine import Engine


class Keep(StrEnum):
    ALL = "all"  # every image stays (as before 0.3)
    BASES = "bases"  # base images stay; a task image goes once this invocation's jobs that need it are done


class Purpose(StrEnum):
    """The jobs a release waits for: each aggregate target has its own (a release of one purpose may
    come while jobs of another still need the image: they bring it back)."""

    RUNS = "runs"  # the runs' solve and verify steps (and repeated verifications): results/summary.csv
    HEALTHCHECK = "healthcheck"  # the health check's oracle and nop runs and its network probe
    VALIDATION = "validation"  # the three-phase validation's phases
    REGRADE = "regrade"  # a regrade's verifications


# Who released an image besides the purposes' rules: `kotlin-bench clean --all-images` (no job waits for it).
CLEAN = "clean"
RELEASERS: tuple[str, ...] = (*Purpose, CLEAN)


class Outcome(StrEnum):
    REMOVED = "removed"  # the image is gone from the engine
    GONE = "gone"  # it was not there any more
    UNTAGGED = "untagged"  # it has other names: only the workflow's was removed, its layers stay
    KEPT = "kept"  # a container uses it, or another workspace built it: it stays (the detail says which)


class ImageState(StrEnum):
    PRESENT = "present"
    RELEASED = "released"


@dataclass(frozen=True)
class Release:
    """One release of a task image: which, when, what came of it, how many bytes it was."""

    image: str
    id: str
    released_at: str
    outcome: Outcome
    detail: str = ""
    size: int | None = None

    @property
    def freed(self) -> bool:
        return self.outcome in (Outcome.REMOVED, Outcome.GONE)

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self) | {"outcome": str(self.outcome)}, indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> Release:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**(data | {"outcome": Outcome(data["outcome"])}))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ImageError(f"release record {path} is unreadable ({exc}); delete it") from None


def current(task_id: str, results: str = names.RESULTS) -> tuple[Path, Sentinel]:
    """The record of a task's current image: a rebuild's, when there is one, else its sentinel's."""
    rebuilt = Path(names.task_image_rebuilt(task_id, results))
    path = rebuilt if rebuilt.is_file() else Path(names.task_sentinel(task_id, results))
    return path, read_sentinel(path)


def image_state(task_id: str, results: str = names.RESULTS) -> ImageState:
    """Whether the records say the task's current image is on the engine: released when a release that
    freed it is later than the record that made it (the sentinel, or a rebuild)."""
    path, record = current(task_id, results)
    made = path.stat().st_mtime_ns
    for purpose in RELEASERS:
        release = Path(names.task_image_release(task_id, purpose, results))
        if not release.is_file() or release.stat().st_mtime_ns < made:
            continue
        record_of = Release.read(release)
        if record_of.id == record.id and record_of.freed:
            return ImageState.RELEASED
    return ImageState.PRESENT


@contextlib.contextmanager
def _locked(task_id: str, results: str = names.RESULTS) -> Iterator[None]:
    """One job per task releases or brings back its image at a time (a lock on the task's sentinel)."""
    with open(names.task_sentinel(task_id, results), "rb") as sentinel:
        fcntl.flock(sentinel, fcntl.LOCK_EX)
        yield


def release(engine: Engine, task_id: str, purpose: Purpose) -> Release:
    """Remove the task's current image, and record it (`names.task_image_release`)."""
    with _locked(task_id):
        _, record = current(task_id)
        outcome, detail = _remove(engine, record)
        return _write_release(record, task_id, purpose, outcome, detail, results=names.RESULTS)


def record_release(
    task_id: str, releaser: str, outcome: Outcome, detail: str = "", results: str = names.RESULTS
) -> Release:
    """Record that the task's current image went by other means (`kotlin-bench clean --all-images`
    removes it itself, leaving its parents alone): `releaser` is one of `RELEASERS`."""
    with _locked(task_id, results):
        _, record = current(task_id, results)
        return _write_release(record, task_id, releaser, outcome, detail, results=results)


def _write_release(
    record: Sentinel, task_id: str, releaser: str, outcome: Outcome, detail: str, *, results: str
) -> Release:
    now = datetime.now(UTC).isoformat()
    done = Release(record.image, record.id, now, outcome, detail, record.size)
    done.write(Path(names.task_image_release(task_id, releaser, results)))
    return done


def _remove(engine: Engine, record: Sentinel) -> tuple[Outcome, str]:
    """Remove the image, never its parents: the engine would otherwise also delete an untagged base it was
    built FROM (one whose tag another workspace's build moved), which this workspace's records still name
    and the next rebuild needs. An image another workspace built (this one is a copy of it, results and
    all, and runs on the same image under the same name) stays: it is that workspace's. An image that
    has other names too loses only this workspace's name: removing it by id would take every name of
    the same repository with it."""
    import docker

    client = engine.client
    ours = (record.image, engine.local_name(record.image))
    try:
        image = client.images.get(record.id)
        owner = (image.labels or {}).get(names.LABEL_WORKDIR)
        if owner is not None and owner != workdir_label()[names.LABEL_WORKDIR]:
            return Outcome.KEPT, f"built by another workspace ({owner}): it stays that workspace's"
        others = [t for t in image.tags if t not in ours]
        detail = "also named " + ", ".join(others)
        if not others:
            client.images.remove(record.id, noprune=True)
            return Outcome.REMOVED, ""
    except docker.errors.ImageNotFound:
        return Outcome.GONE, ""
    except docker.errors.APIError as exc:
        users = containers.listed(client, {"ancestor": record.id})
        if users:
            return Outcome.KEPT, "used by container(s) " + ", ".join(c.name for c in users)
        detail = f"not removed ({exc.explanation or exc}): this workspace's name only"
    for name in ours:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(name, noprune=True)
    return Outcome.UNTAGGED, detail


def ensure_task_image(engine: Engine, task: Task, registry: Registry | None, log: Path) -> ImageRef:
    """The task image a job runs: the current one, named as recorded; pulled by digest (`registry:`) or
    built again (into `names.task_image_rebuilt`, build log `log`) when the engine no longer has it."""
    with _locked(task.id):
        path, record = current(task.id)
        if image_id(engine.client, record.id) is None and registry is None:
            path = _build_again(engine, task, record, log)
        return use_image(engine, path, registry)  # with a registry: pulled by the recorded digest


def _build_again(engine: Engine, task: Task, record: Sentinel, log: Path) -> Path:
    rebuilt = Path(names.task_image_rebuilt(task.id))
    repo_key, tag = names.image_parts(task.base_image)
    base = Path(names.base_sentinel(repo_key, tag))
    print(
        f"{record.image} ({record.id[:19]}) is not in the engine: building it again (log {log})", flush=True
    )
    made = build_task_image(
        task, log, rebuilt, base_sentinel=base, settings=engine.settings, replaces=record.id
    )
    print(
        f"{made.image}: built again as {made.id[:19]} in {made.seconds:.0f}s; runs made on "
        f"{record.id[:19]} keep their verdicts, jobs from now on use the new image",
        flush=True,
    )
    return rebuilt


@dataclass(frozen=True)
class ImageRow:
    """A task image in the report: its name, size, how long it took to build, and where it is now."""

    task: str
    image: str
    size: int | None
    layers: int | None  # what it adds to its base
    seconds: float
    state: ImageState
    rebuilt: bool


def image_rows(task_ids: list[str], results: str = names.RESULTS) -> list[ImageRow]:
    """The task images the records know of (tasks without a sentinel are left out)."""
    rows = []
    for task_id in task_ids:
        if not Path(names.task_sentinel(task_id, results)).is_file():
            continue
        path, record = current(task_id, results)
        rebuilt = path == Path(names.task_image_rebuilt(task_id, results))
        state = image_state(task_id, results)
        rows.append(
            ImageRow(task_id, record.image, record.size, record.layers, record.seconds, state, rebuilt)
        )
    return rows
