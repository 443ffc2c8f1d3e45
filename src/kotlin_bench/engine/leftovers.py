"""What a workspace (one workflow directory) left on the container engine, found by its labels and removed.

`find` reads the engine and lists, as `Leftover` records, what belongs to this workspace and is no longer
wanted; `remove` removes exactly those records. Ownership is decided from labels alone, never from names:

- containers (task containers, pristine copies, egress proxies) and per-run networks carry
  `kotlin-bench.workdir=<workflow directory>`: ours when it equals this directory (resolved). Objects
  made before that label existed are ours when their run key (`kotlin-bench.run`) ends in this
  directory's tag (`names.workdir_tag`). Anything with neither label is not ours;
- a Harbor trial's containers are started by `docker compose`, whose project directory
  (`com.docker.compose.project.working_dir`) is the staged task in the run's work directory: ours when it
  lies under this workspace's `results/`. A compose network is ours when its project is the project of
  such a container (and of no container elsewhere);
- images: see `kotlin_bench.engine.leftover_images` (our builds that no record of ours names, the layers
  our builds committed that nothing uses any more, and with `all_images` our task images, released
  with a record while their sentinels stay).

Whether a live job may be using a leftover comes from `Live` (what `kotlin_bench.runs.activity` found
running in the workspace): a runner lock held under the run's directory says yes; a running container in a
workspace where some job runs says maybe. `kotlin-bench clean` refuses to remove while anything runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import leftover_images, retention
from kotlin_bench.engine.leftover_images import ImageFacts, ImagePlan, TaskRelease
from kotlin_bench.engine.network import PROXY_ROLE, unfence

if TYPE_CHECKING:
    import docker

    from kotlin_bench.engine.engine import Engine


class Kind(StrEnum):
    CONTAINER = "container"
    PROXY = "proxy"
    NETWORK = "network"
    IMAGE = "image"
    BUILD_CACHE = "build cache"
    RECORD = "release record"  # --all-images: a task's image already gone; only the record is written


@dataclass(frozen=True)
class Owner:
    """The workspace whose leftovers are looked for: its workflow directory, resolved."""

    root: Path

    @classmethod
    def of(cls, root: Path) -> Owner:
        return cls(root.resolve())

    @property
    def tag(self) -> str:
        return names.workdir_tag(self.root)

    @property
    def results(self) -> Path:
        return self.root / names.RESULTS

    def is_dir(self, value: str) -> bool:
        """Whether a label's directory is this workspace's."""
        return value == str(self.root) or Path(value).resolve() == self.root


@dataclass(frozen=True)
class Leftover:
    """One thing this workspace left on the engine: what it is, why it is ours, whether a live job may use
    it (`in_use`: empty when nothing of the workspace runs that could), its size in bytes where known (an
    image: what it adds to its parent), and for `--all-images` the task whose release record is written
    with it (its sentinel stays)."""

    kind: Kind
    id: str
    name: str
    why: str
    in_use: str = ""
    size: int | None = None
    release: TaskRelease | None = None


@dataclass(frozen=True)
class Kept:
    """An image of ours that stays, and why (a container uses it, an image that stays is built on it, a
    name others may use points at it)."""

    id: str
    name: str
    why: str


@dataclass(frozen=True)
class Findings:
    leftovers: tuple[Leftover, ...] = ()
    kept: tuple[Kept, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Removal:
    leftover: Leftover
    error: str | None = None  # None: removed
    also: tuple[str, ...] = ()  # what went with it (a release record written)


@dataclass(frozen=True)
class Live:
    """What runs in the workspace now (`kotlin_bench.runs.activity`): the runner's locks that are held
    (absolute path, and the holder's pid where this machine knows it) and its live processes."""

    held: tuple[tuple[Path, int | None], ...] = ()
    processes: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.held or self.processes)


# --------------------------------------------------------------------------- facts and decisions


@dataclass(frozen=True)
class ContainerFacts:
    id: str
    name: str
    labels: Mapping[str, str]
    running: bool
    image: str = ""


@dataclass(frozen=True)
class NetworkFacts:
    id: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


def labelled_owner(labels: Mapping[str, str], owner: Owner) -> str | None:
    """Why an object with these kotlin-bench labels is ours, or None: the workdir label decides when
    present; else the run key's workdir tag."""
    workdir = labels.get(names.LABEL_WORKDIR)
    if workdir is not None:
        return f"{names.LABEL_WORKDIR} is this workspace" if owner.is_dir(workdir) else None
    key = labels.get(names.LABEL_RUN)
    if key is not None and key.endswith(f".{owner.tag}"):
        return f"its run key ends in this workspace's tag ({owner.tag})"
    return None


def harbor_dir(labels: Mapping[str, str], owner: Owner) -> Path | None:
    """The compose project directory of a Harbor trial's container, when it lies in our results."""
    value = labels.get(names.LABEL_COMPOSE_WORKING_DIR)
    if not value:
        return None
    path = Path(value)
    return path if path.is_absolute() and path.is_relative_to(owner.results) else None


def container_owner(facts: ContainerFacts, owner: Owner) -> str | None:
    """Why a container is ours, or None."""
    if names.LABEL_WORKDIR in facts.labels or names.LABEL_RUN in facts.labels:
        return labelled_owner(facts.labels, owner)
    trial = harbor_dir(facts.labels, owner)
    if trial is not None:
        project = facts.labels.get(names.LABEL_COMPOSE_PROJECT, "?")
        return f"Harbor trial (compose project {project}) staged in {trial.relative_to(owner.root)}"
    return None


def network_owner(facts: NetworkFacts, owner: Owner, projects: frozenset[str]) -> str | None:
    """Why a network is ours, or None: our labels, or the compose project of one of our Harbor trials."""
    if names.LABEL_WORKDIR in facts.labels or names.LABEL_RUN in facts.labels:
        return labelled_owner(facts.labels, owner)
    project = facts.labels.get(names.LABEL_COMPOSE_PROJECT)
    if project is not None and project in projects:
        return f"network of our Harbor trial's compose project {project}"
    return None


def harbor_projects(containers: Iterable[ContainerFacts], owner: Owner) -> frozenset[str]:
    """The compose projects whose containers are all our Harbor trials' (a project that also has a
    container elsewhere is not ours alone, so its networks are left)."""
    ours: set[str] = set()
    elsewhere: set[str] = set()
    for facts in containers:
        project = facts.labels.get(names.LABEL_COMPOSE_PROJECT)
        if project is not None:
            (ours if harbor_dir(facts.labels, owner) is not None else elsewhere).add(project)
    return frozenset(ours - elsewhere)


def run_areas(labels: Mapping[str, str], owner: Owner) -> tuple[Path, ...]:
    """The directories whose runner locks a job holds while it uses an object with these labels: the
    run's folder (all its attempts) under results/runs and results/regrade/runs."""
    agent, task = labels.get(names.LABEL_AGENT), labels.get(names.LABEL_TASK)
    if agent and task:
        return (
            owner.root / names.runs_root() / agent / task,
            owner.root / names.REGRADE_DIR / "runs" / agent / task,
        )
    trial = harbor_dir(labels, owner)
    if trial is not None:
        parts = trial.relative_to(owner.root).parts
        return (owner.root.joinpath(*parts[:4]),)  # results/runs/<agent>/<task>
    return ()


def use_of(areas: Sequence[Path], running: bool, live: Live) -> str:
    """Whether a live job may be using an object: `yes: ...` when a lock under its run's directory is
    held, `maybe: ...` when it runs and some job of the workspace does, else ""."""
    for lock, pid in live.held:
        if any(lock.is_relative_to(area) for area in areas):
            holder = f"pid {pid}" if pid is not None else "a process on another machine"
            return f"yes: {holder} holds {lock.name} in {lock.parent.name}"
    if running and live.any:
        return "maybe: a job of this workspace runs"
    return ""


def container_kind(facts: ContainerFacts) -> Kind:
    return Kind.PROXY if facts.labels.get(names.LABEL_ROLE) == PROXY_ROLE else Kind.CONTAINER


def plan_containers(
    containers: Sequence[ContainerFacts], owner: Owner, live: Live
) -> tuple[list[Leftover], dict[str, tuple[Path, ...]]]:
    """Our containers as leftovers (running ones first), and each run key's directories (for proxies and
    networks, whose labels name only the run key)."""
    found: list[Leftover] = []
    key_areas: dict[str, tuple[Path, ...]] = {}
    for facts in containers:
        if container_owner(facts, owner) is None:
            continue
        areas = run_areas(facts.labels, owner)
        key = facts.labels.get(names.LABEL_RUN)
        if key and areas:
            key_areas[key] = areas
    for facts in sorted(containers, key=lambda c: (not c.running, c.name)):
        why = container_owner(facts, owner)
        if why is None:
            continue
        areas = run_areas(facts.labels, owner) or key_areas.get(facts.labels.get(names.LABEL_RUN, ""), ())
        state = "running" if facts.running else "stopped"
        found.append(
            Leftover(
                container_kind(facts),
                facts.id,
                facts.name,
                f"{why}; {state}",
                use_of(areas, facts.running, live),
            )
        )
    return found, key_areas


def plan_networks(
    networks: Sequence[NetworkFacts],
    owner: Owner,
    projects: frozenset[str],
    key_areas: Mapping[str, tuple[Path, ...]],
    live: Live,
) -> list[Leftover]:
    found = []
    for facts in sorted(networks, key=lambda n: n.name):
        why = network_owner(facts, owner, projects)
        if why is None:
            continue
        areas = key_areas.get(facts.labels.get(names.LABEL_RUN, ""), ())
        found.append(Leftover(Kind.NETWORK, facts.id, facts.name, why, use_of(areas, True, live)))
    return found


def image_leftovers(plan: ImagePlan) -> tuple[list[Leftover], list[Kept]]:
    leftovers = [
        Leftover(
            Kind.BUILD_CACHE if item.cache else Kind.IMAGE,
            item.id,
            item.name,
            item.why,
            size=item.size,
            release=item.release,
        )
        for item in plan.remove
    ]
    leftovers += [
        Leftover(Kind.RECORD, image, str(task.record), why, release=task) for task, image, why in plan.records
    ]
    return leftovers, [Kept(k.id, k.name, k.why) for k in plan.kept]


# --------------------------------------------------------------------------- the engine


def _containers(client: docker.DockerClient) -> list[ContainerFacts]:
    found = []
    for container in client.containers.list(all=True, sparse=True):
        attrs = container.attrs
        raw_names = attrs.get("Names") or [container.id[:12]]
        found.append(
            ContainerFacts(
                container.id,
                raw_names[0].lstrip("/"),
                attrs.get("Labels") or {},
                attrs.get("State") == "running",
                attrs.get("ImageID") or "",
            )
        )
    return found


def _networks(client: docker.DockerClient) -> list[NetworkFacts]:
    return [
        NetworkFacts(n.id, n.name, n.attrs.get("Labels") or {}) for n in client.networks.list(greedy=False)
    ]


def _images(client: docker.DockerClient, owner: Owner) -> list[ImageFacts]:
    """Every image, intermediate layers included (the engine's summary list, one request); the newest
    history step of those labelled ours."""
    found = []
    for summary in client.api.images(all=True):
        labels = summary.get("Labels") or {}
        last = ""
        workdir = labels.get(names.LABEL_WORKDIR)
        if workdir and owner.is_dir(workdir):
            with contextlib.suppress(Exception):
                last = (client.api.history(summary["Id"]) or [{}])[0].get("CreatedBy") or ""
        tags = tuple(t for t in summary.get("RepoTags") or () if t != "<none>:<none>")
        parent = summary.get("ParentId") or ""
        found.append(ImageFacts(summary["Id"], tags, labels, parent, int(summary.get("Size") or 0), last))
    return found


def find(client: docker.DockerClient, owner: Owner, live: Live, all_images: bool = False) -> Findings:
    """What this workspace left on the engine (read-only). `all_images`: its task images count as
    leftovers too (released with a record; their sentinels stay)."""
    containers = _containers(client)
    found, key_areas = plan_containers(containers, owner, live)
    projects = harbor_projects(containers, owner)
    found += plan_networks(_networks(client), owner, projects, key_areas, live)
    leaving = {c.id for c in found}
    used = {c.image: c.name for c in containers if c.image and c.id not in leaving}
    context, warnings = leftover_images.context(owner.root, used, all_images)
    images, kept = image_leftovers(leftover_images.plan(_images(client, owner), context))
    return Findings(tuple(found + images), tuple(kept), tuple(warnings))


def remove(engine: Engine, findings: Findings) -> list[Removal]:
    """Remove the leftovers, in their order (containers, networks with what the host holds for them,
    then images children first); what fails is reported, never forced past the engine's own checks (an
    image with a child or a container stays)."""
    import docker

    done = []
    for item in findings.leftovers:
        try:
            also = _remove_one(engine, item)
        except docker.errors.NotFound:
            also = ("it was already gone",)
        except docker.errors.APIError as exc:
            done.append(Removal(item, str(exc.explanation or exc)))
            continue
        except RuntimeError as exc:  # the host's firewall (`network.unfence`)
            done.append(Removal(item, str(exc)))
            continue
        done.append(Removal(item, None, also))
    return done


def _remove_one(engine: Engine, item: Leftover) -> tuple[str, ...]:
    import docker

    client = engine.client
    outcome = retention.Outcome.REMOVED
    if item.kind in (Kind.CONTAINER, Kind.PROXY):
        client.api.remove_container(item.id, force=True)
    elif item.kind is Kind.NETWORK:
        client.api.remove_network(item.id)
        unfence(engine, item.name)  # its fence and firewall rule: nothing when it had none
    elif item.kind in (Kind.IMAGE, Kind.BUILD_CACHE):
        try:
            leftover_images.remove_image(client, item.id)
        except docker.errors.NotFound:  # gone already: its release is still recorded
            outcome = retention.Outcome.GONE
    if item.release is None:
        return ()
    if item.kind is Kind.RECORD:
        outcome = retention.Outcome.GONE
    task = item.release
    retention.record_release(
        task.task, retention.CLEAN, outcome, "kotlin-bench clean --all-images", str(task.results)
    )
    return (f"wrote {task.record.relative_to(task.results.parent)} (the sentinel stays)",)
