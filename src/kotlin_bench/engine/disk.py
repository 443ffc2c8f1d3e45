"""Free disk space, checked before a job starts: the engine's data root and the results directory.

Disk is what SWE-style harnesses run out of first. Before a base image build, a task image build and
every run step (solve, verify, a validation phase), the job's needs are compared with the free space on

- the engine's data root (Docker's `DockerRootDir`, Podman's graph root), where images and container
  layers go: a base build needs `disk.base_image`, a task build `disk.task_image`, a run step
  `disk.run`; for images, the sizes that the sentinels of this workspace record raise the need to what
  an image of that kind really took here;
- the filesystem of each directory the job writes under `results/` (its output and its log):
  `disk.results`.

A job that would not fit is refused before it starts anything (`DiskSpaceError`, naming the place, the
free and the needed bytes, the job and what to do). Nothing is recorded for it, neither a result nor a
work record: the job fails, and freeing space and running again completes it. A need of 0 turns that
check off. An engine that is not on a local unix socket, or whose data root is not visible on this
host, is not checked (the job's log says so once).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.images import ImageError, read_sentinel

if TYPE_CHECKING:
    import docker

KiB, MiB, GiB, TiB = 1024, 1024**2, 1024**3, 1024**4
UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "tb": 1000**4,
    "kib": KiB,
    "mib": MiB,
    "gib": GiB,
    "tib": TiB,
}
# The schema's pattern for sizes says the same (workflow/schemas/config.schema.yaml, $defs.size).
_SIZE_RE = re.compile(r"^ *(?P<number>[0-9]+(?:[.][0-9]+)?) *(?P<unit>(?:[kmgt]i?)?b)? *$", re.IGNORECASE)
CONFIG_KEY = "disk"
LOCAL_SOCKET = "http+docker://localhost"  # the Docker SDK's base URL for an engine on a unix socket
PREFIX = "kotlin-bench: disk:"
ENGINE_TIMEOUT_SEC = 60  # asking the engine for its data root


class Job(StrEnum):
    """What a job is, as far as disk goes; the value is the `disk:` key of its need on the engine."""

    BASE_IMAGE = "base_image"
    TASK_IMAGE = "task_image"
    RUN = "run"  # a solve step, a verify step, a validation phase


RESULTS_KEY = "results"  # the `disk:` key of the need under results/, the same for every job


class Place(StrEnum):
    """Where a job needs the space."""

    ENGINE = "the engine's data root"
    RESULTS = "the results directory"


def parse_size(value: object, key: str = "size") -> int:
    """Bytes from a config value: an integer of bytes, or a number with a unit (`"20 GiB"`, `"500 MB"`;
    B, kB, MB, GB, TB are powers of 1000, KiB, MiB, GiB, TiB of 1024). 0 and false are 0: no check."""
    if value is False:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    match = _SIZE_RE.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(
            f"{key}: {value!r} is not a size: write bytes (an integer) or a number with a unit, "
            '"20 GiB" or "500 MB" (0 or false turns the check off)'
        )
    unit = UNITS[(match["unit"] or "b").lower()]
    return int(float(match["number"]) * unit)


def human(count: int) -> str:
    """Bytes in binary units with one decimal: `512 B`, `3.2 MiB`, `20.0 GiB`."""
    for unit, size in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if count >= size:
            return f"{count / size:.1f} {unit}"
    return f"{count} B"


def exact(count: int) -> str:
    """`3.2 MiB (3,355,443 bytes)`."""
    return f"{human(count)} ({count:,} bytes)"


@dataclass(frozen=True)
class DiskNeeds:
    """The config's `disk:` section, in bytes (0 turns that check off). The schema lists the same
    defaults; docs/operations.md says how they were estimated."""

    base_image: int = 20 * GiB
    task_image: int = 8 * GiB
    run: int = 2 * GiB
    results: int = 512 * MiB

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> DiskNeeds:
        values = dict(section or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"{CONFIG_KEY}: unknown keys {unknown}; the keys are {sorted(known)}")
        return cls(**{key: parse_size(value, f"{CONFIG_KEY}.{key}") for key, value in values.items()})

    def on_engine(self, job: Job) -> int:
        return int(getattr(self, job.value))


# --------------------------------------------------------------------------- what images took here


@dataclass(frozen=True)
class Measured:
    """The most an image of one kind took in this workspace, as its sentinel records it."""

    size: int
    image: str
    what: str  # how the figure was made, for the message


def recorded_sizes(directory: Path) -> dict[str, int]:
    """Image -> size in bytes, from the sentinels under `directory` that record one (`Sentinel.size`,
    the engine's size of the image, shared layers included). Sentinels without it, and unreadable
    ones, are left out."""
    sizes: dict[str, int] = {}
    for path in sorted(Path(directory).rglob("*.json")) if Path(directory).is_dir() else []:
        try:
            sentinel = read_sentinel(path)
        except ImageError:
            continue
        size = getattr(sentinel, "size", None)
        if isinstance(size, int) and not isinstance(size, bool) and size > 0:
            sizes[sentinel.image] = size
    return sizes


def largest_base(bases: Mapping[str, int]) -> Measured | None:
    """The largest base image recorded: what a base built from nothing may take (a base FROM another
    base shares its layers, so this is an upper bound)."""
    if not bases:
        return None
    image = max(sorted(bases), key=lambda name: bases[name])
    return Measured(bases[image], image, "the largest base image built here")


def largest_task_layers(tasks: Mapping[str, int], bases: Mapping[str, int]) -> Measured | None:
    """The most a task image added to its base: its size less that of the largest recorded base of the
    same repository key not larger than it (a task image is `kotlin-bench/<repo_key of its base>:pr-N`).
    Task images without a recorded base are left out."""
    found: Measured | None = None
    for image, size in sorted(tasks.items()):
        key = _repo_key(image)
        below = [s for base, s in bases.items() if _repo_key(base) == key and s <= size]
        if key is None or not below:
            continue
        added = size - max(below)
        if found is None or added > found.size:
            found = Measured(added, image, "the most a task image built here added to its base")
    return found


def _repo_key(image: str) -> str | None:
    try:
        return names.image_parts(image)[0]
    except ValueError:
        return None


def measured(job: Job, results: Path) -> Measured | None:
    """What an image of this job's kind took here, from the sentinels under `results` (None: nothing
    recorded, or the job builds no image)."""
    if job is Job.RUN:
        return None
    bases = recorded_sizes(Path(names.base_sentinels(str(results))))
    if job is Job.BASE_IMAGE:
        return largest_base(bases)
    tasks = recorded_sizes(Path(names.task_sentinels(str(results))))
    return largest_task_layers(tasks, bases)


# --------------------------------------------------------------------------- the requirement and the check


@dataclass(frozen=True)
class Requirement:
    """Free space one job needs at one place, and where the figure comes from."""

    job: str  # the job, as its log names it
    place: Place
    path: Path  # a directory on the filesystem that must have the space
    needed: int  # bytes
    key: str  # the `disk:` key that sets it
    configured: int  # bytes, as the config says
    measured: Measured | None = None  # when images built here took more than configured
    mount: Path | None = None  # the mount point of `path`'s filesystem, once checked

    def place_text(self) -> str:
        """`the results directory <path> (on the filesystem mounted at <mount>)`."""
        on = f" (on the filesystem mounted at {self.mount})" if self.mount and self.mount != self.path else ""
        return f"{self.place} {self.path}{on}"

    def basis(self) -> str:
        config = f"`{CONFIG_KEY}.{self.key}`"
        if self.measured is None or self.measured.size <= self.configured:
            return f"{config} in the config"
        return (
            f"{self.measured.what}, {self.measured.image}; {config} in the config asks for "
            f"{human(self.configured)}"
        )

    def advice(self) -> str:
        remedy = (
            "free space there (e.g. `kotlin-bench clean`, or delete images and results you no longer need)"
        )
        if self.measured is not None and self.measured.size > self.configured:
            return f"{remedy} and run again, or set `{CONFIG_KEY}.{self.key}: 0` to turn this check off"
        return (
            f"{remedy} and run again, or lower `{CONFIG_KEY}.{self.key}` in the config "
            "(0 turns this check off)"
        )


class DiskSpaceError(RuntimeError):
    """A job refused before it started: too little free space for it. Never recorded as a result: the
    job fails, and freeing space and running again completes it."""

    def __init__(self, requirement: Requirement, free: int) -> None:
        self.requirement, self.free = requirement, free
        super().__init__(refusal(requirement, free))


def refusal(req: Requirement, free: int) -> str:
    """The message of a refused job: the place and its path, the free and the needed bytes, the job,
    and what to do."""
    return (
        f"not enough free disk space for {req.job}: {req.place_text()} has {exact(free)} free, "
        f"the job needs {exact(req.needed)} ({req.basis()}); {req.advice()}. "
        "Nothing was recorded for this job."
    )


def nearest(path: Path) -> Path:
    """The nearest existing directory at or above `path` (a job's directories may not exist yet)."""
    here = Path(path).absolute()
    while not here.exists() and here != here.parent:
        here = here.parent
    return here


def free_space(path: Path) -> tuple[Path, int]:
    """The nearest existing directory at or above `path`, and the bytes free to this user on its
    filesystem."""
    here = nearest(path)
    return here, shutil.disk_usage(here).free


def mount_point(path: Path) -> Path:
    """The directory at which the filesystem holding `path` (an existing directory) is mounted."""
    here = Path(path).resolve()
    device = here.stat().st_dev
    while here != here.parent and here.parent.stat().st_dev == device:
        here = here.parent
    return here


def check(requirements: Iterable[Requirement]) -> list[tuple[Requirement, int]]:
    """Each requirement with the free bytes found; DiskSpaceError for the first that does not fit. A
    place that cannot be measured is left out, and the log says so: the check refuses a job for want of
    space only (the job meets any other trouble itself, and records it)."""
    found = []
    for req in requirements:
        try:
            where, free = free_space(req.path)
            req = replace(req, path=where, mount=mount_point(where))
        except OSError as exc:
            print(f"{PREFIX} not checking {req.place} {req.path}: {exc}", flush=True)
            continue
        if free < req.needed:
            raise DiskSpaceError(req, free)
        found.append((req, free))
    return found


# --------------------------------------------------------------------------- the engine's data root


@dataclass(frozen=True)
class EngineRoot:
    """The engine's data root on this host, or why it cannot be checked from here."""

    path: Path | None
    why_not: str = ""


def data_root(info: Mapping[str, Any]) -> str | None:
    """Where the engine keeps images and containers, from its info: Docker's `DockerRootDir` (Podman's
    Docker-compatible API answers it too), or the graph root of Podman's own API (`store.graphRoot`,
    `Store.GraphRoot`)."""
    if info.get("DockerRootDir"):
        return str(info["DockerRootDir"])
    for store_key in ("store", "Store"):
        store = info.get(store_key)
        if isinstance(store, Mapping):
            for root_key in ("graphRoot", "GraphRoot"):
                if store.get(root_key):
                    return str(store[root_key])
    return None


def engine_root(client: docker.DockerClient) -> EngineRoot:
    """The data root of the engine `client` talks to, when it is on this host."""
    base_url = str(client.api.base_url)
    if base_url != LOCAL_SOCKET:
        return EngineRoot(
            None, f"the engine ({base_url}) is not on a local unix socket: its data root is not on this host"
        )
    root = data_root(client.info())
    if root is None:
        return EngineRoot(None, "the engine's info names no data root")
    try:
        visible = os.path.isdir(root) and os.access(root, os.X_OK)
    except OSError:
        visible = False
    if not visible:
        return EngineRoot(None, f"the engine's data root {root} is not visible on this host")
    return EngineRoot(Path(root))


def asked_engine_root(settings: EngineSettings | None = None) -> EngineRoot:
    """The data root of the configured engine. An engine that does not answer is not checked here: the
    job meets it itself, and retries or records it as any engine failure."""
    try:
        return engine_root(connect(settings, timeout=ENGINE_TIMEOUT_SEC).client)
    except Exception as exc:  # the engine's failures are the job's to retry and record, not a refusal
        return EngineRoot(
            None, f"the engine did not say where its data root is ({type(exc).__name__}: {exc})"
        )


# --------------------------------------------------------------------------- one job


def results_requirements(label: str, needs: DiskNeeds, writes: Sequence[Path]) -> list[Requirement]:
    """One requirement per filesystem among the directories the job writes under results/."""
    if needs.results <= 0:
        return []
    found: dict[int | Path, Requirement] = {}
    for path in writes:
        try:
            device: int | Path = nearest(path).stat().st_dev
        except OSError:
            device = path  # measured (or reported) on its own by `check`
        found.setdefault(
            device, Requirement(label, Place.RESULTS, path, needs.results, RESULTS_KEY, needs.results)
        )
    return list(found.values())


def engine_requirement(
    label: str, job: Job, needs: DiskNeeds, root: EngineRoot, results: Path
) -> Requirement | None:
    """The job's need on the engine's data root: the configured figure, or what an image of its kind
    took here when that is more."""
    configured = needs.on_engine(job)
    if configured <= 0 or root.path is None:
        return None
    seen = measured(job, results)
    needed = max(configured, seen.size if seen else 0)
    return Requirement(label, Place.ENGINE, root.path, needed, job.value, configured, seen)


def check_job(
    label: str,
    job: Job,
    needs: DiskNeeds,
    writes: Sequence[Path],
    *,
    uses_engine: bool = True,
    results: Path = Path(names.RESULTS),
    engine: EngineSettings | None = None,
) -> None:
    """Refuse the job (DiskSpaceError) when a place it needs has too little free space; else say in its
    log what was found. `writes`: the directories it writes under results/; `uses_engine`: whether it
    builds an image or starts a container (on `engine`, config `engine:`)."""
    requirements = results_requirements(label, needs, writes)
    if uses_engine and needs.on_engine(job) > 0:
        root = asked_engine_root(engine)
        if root.path is None:
            print(f"{PREFIX} not checking the engine's free space: {root.why_not}", flush=True)
        wanted = engine_requirement(label, job, needs, root, results)
        requirements += [wanted] if wanted else []
    found = check(requirements)
    if found:
        print(
            f"{PREFIX} "
            + "; ".join(
                f"{r.place_text()}: {human(free)} free, {human(r.needed)} needed" for r, free in found
            ),
            flush=True,
        )
