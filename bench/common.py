"""Shared pieces of the suite: results rows, workspaces, timed commands, peak-memory polling, statistics."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import psutil
import yaml

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import atomic_path
from kotlin_bench.engine.images import ImageRef
from kotlin_bench.engine.retention import current
from kotlin_bench.tools.workspace import EXAMPLE_TASKS as EXAMPLE_DIR
from kotlin_bench.tools.workspace import copy_checkout

REPO = Path(__file__).resolve().parents[1]
HARBOR_BIN = REPO / ".harbor/venv/bin/harbor"
HARBOR_DOCKER_CONFIG = REPO / ".harbor/docker-config"
# Our runs use their own agent name: the run key (`<agent>.<task>.<attempt>`) labels containers, and a run
# reaps containers with its key, so a name shared with a concurrent workspace would reap its containers.
AGENT = "bench-oracle"
# The tasks the sections run (the config's `tasks:`): the first four example tasks, one per example repository,
# as the results in bench/README.md were measured; examples_calc-6 (a second calc task) is left out.
EXAMPLE_TASKS = ("examples_calc-4", "examples_semver-6", "examples_slug-8", "examples_units-12")
# The Gradle example (real Gradle 4.4, a daemon per container; its warm cache has every dependency, so its
# bare run needs no network): measured beside the kotlinc examples in the overhead section only.
GRADLE_TASKS = ("examples_tally-2",)
CSV_FIELDS = ("section", "case", "variant", "task", "rep", "metric", "value", "unit", "ok", "note")


def log(message: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


@dataclass
class Row:
    section: str
    case: str
    variant: str
    task: str
    rep: int
    metric: str
    value: float
    unit: str = "s"
    ok: bool = True
    note: str = ""


@dataclass
class Recorder:
    """Rows of one suite run; the CSV is rewritten after every row, so an interrupted run keeps its data."""

    path: Path
    rows: list[Row] = field(default_factory=list)

    def add(self, *rows: Row) -> None:
        self.rows.extend(rows)
        with atomic_path(self.path) as tmp, tmp.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=CSV_FIELDS)
            writer.writeheader()
            for row in self.rows:
                writer.writerow(asdict(row))


def read_rows(path: Path) -> list[Row]:
    types = {f.name: f.type for f in fields(Row)}
    rows = []
    with path.open(encoding="utf-8") as source:
        for raw in csv.DictReader(source):
            values: dict[str, Any] = dict(raw)
            values["rep"] = int(raw["rep"])
            values["value"] = float(raw["value"])
            values["ok"] = raw["ok"] == "True"
            rows.append(Row(**{k: values[k] for k in types}))
    return rows


@dataclass
class Context:
    """What every section gets: where to write, how often to repeat, the shared workspace."""

    out: Path
    tmp: Path
    quick: bool
    reps: int  # repetitions of single runs (section overhead) and of short invocations
    recorder: Recorder
    rounds: int = 1  # repetitions of the sections whose one repetition is a whole run of the examples
    workspace: Path | None = None
    extras: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------------
# statistics


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float
    n: int

    def text(self, digits: int = 2) -> str:
        if self.n == 0:
            return "n/a"
        if self.n == 1:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def spread(values: Sequence[float]) -> Spread:
    if not values:
        return Spread(float("nan"), float("nan"), float("nan"), 0)
    return Spread(statistics.median(values), min(values), max(values), len(values))


# --------------------------------------------------------------------------------------------------
# commands


@dataclass(frozen=True)
class Timed:
    returncode: int
    seconds: float
    stdout: str
    stderr: str


def run_timed(
    cmd: Sequence[str],
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 3600,
    log_path: Path | None = None,
) -> Timed:
    """Run a command, time it with a monotonic clock; output captured (and appended to `log_path`)."""
    started = time.monotonic()
    done = subprocess.run(
        list(cmd), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    seconds = time.monotonic() - started
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with log_path.open("a", encoding="utf-8") as out:
            out.write(f"$ {' '.join(cmd)}  (cwd {cwd}, exit {done.returncode}, {seconds:.2f}s)\n")
            out.write(done.stdout[-20000:] + done.stderr[-20000:] + "\n")
    return Timed(done.returncode, seconds, done.stdout, done.stderr)


def snakemake(workspace: Path, *args: str, cores: int = 2, log_path: Path | None = None) -> Timed:
    """One `python -m snakemake --cores N ...` invocation in a workspace (its profile applies)."""
    return run_timed(
        [sys.executable, "-m", "snakemake", "--cores", str(cores), *args],
        cwd=workspace,
        timeout=7200,
        log_path=log_path,
    )


class PeakRss:
    """Poll the resident set size of a process tree (the process and all its descendants, summed)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _sample(self) -> int:
        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        total = 0
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                total += proc.memory_info().rss
        return total

    def _poll(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.interval)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --------------------------------------------------------------------------------------------------
# workspaces


def make_workspace(dest: Path, root: Path = REPO) -> Path:
    """A copy of the repository without results, materialized files, caches or this suite."""
    return copy_checkout(root, dest, skip=("bench/",))


def write_config(
    workspace: Path,
    attempts: int,
    agents: list[dict[str, str]] | None = None,
    keep: str | None = None,
    tasks: list[str] | str | None = None,
) -> None:
    """The workspace's config.yaml: the example dataset's `tasks` (default EXAMPLE_TASKS), our agent name,
    `attempts` attempts, and with `keep` the images policy (`images: {keep: all | bases}`; else all)."""
    base = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    base["tasks"] = list(EXAMPLE_TASKS) if tasks is None else tasks
    base["agents"] = agents or [{"name": AGENT, "kind": "oracle"}]
    base["attempts"] = attempts
    base.pop("reproduce", None)  # its references name the default agents
    if keep is not None:
        base["images"] = {"keep": keep}
    (workspace / "config.yaml").write_text(yaml.safe_dump(base, sort_keys=False), encoding="utf-8")


def task_image(workspace: Path, task: str) -> ImageRef:
    """The task image a workspace's records name (its rebuild's, else its sentinel's): the workflow builds
    task images under per-workspace names (`names.built_task_image`), never the published `Task.image`."""
    _, record = current(task, str(workspace / names.RESULTS))
    return ImageRef(record.image, record.id)


def remove_task_images(workspace: Path) -> list[str]:
    """Remove the task images a workspace built (labelled with its directory, named with its tag); base
    images keep their shared names and stay. Returns the names removed."""
    client = docker.from_env()
    ours = f".ws-{names.workdir_tag(workspace)}"
    label = f"{names.LABEL_WORKDIR}={workspace.resolve()}"
    removed = []
    for image in client.images.list(filters={"label": label}):
        tags = image.tags
        if tags and all(tag.endswith(ours) for tag in tags):
            with contextlib.suppress(docker.errors.ImageNotFound, docker.errors.APIError):
                client.images.remove(image.id, force=True)  # every name it has is ours
                removed += tags
    return removed


def all_example_tasks() -> list[str]:
    """Every task of the example dataset (examples/dataset.json)."""
    spec = json.loads((REPO / "examples/dataset.json").read_text(encoding="utf-8"))
    return [str(task["id"]) for task in spec["tasks"]]


def stamp(task: str) -> str:
    return names.stamp(EXAMPLE_DIR, task)


def result_path(task: str, attempt: int, agent: str = AGENT) -> str:
    return names.verify_result(agent, task, attempt)


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def docker_env_without_engine() -> dict[str, str]:
    """An environment in which any Docker call fails (proves a dry run does not touch the engine)."""
    return dict(os.environ) | {"DOCKER_HOST": "unix:///nonexistent/kotlin-bench-bench.sock"}


def harbor_env() -> dict[str, str]:
    env = dict(os.environ)
    env["DOCKER_CONFIG"] = str(HARBOR_DOCKER_CONFIG)
    # Offline host: LiteLLM (imported by Harbor) would otherwise try to fetch its price list at start-up.
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return env


def now_stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")


@contextlib.contextmanager
def section_timer(name: str) -> Iterator[None]:
    started = time.monotonic()
    log(f"== {name}")
    try:
        yield
    finally:
        log(f"== {name} done in {time.monotonic() - started:.0f}s")
