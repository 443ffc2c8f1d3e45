"""Section 2: k = 3 oracle attempts over the example tasks at concurrency 2, kotlin-bench against Harbor.

Variants (interleaved: the order rotates with the repetition):

- `kotlin_bench`: `snakemake --cores 2 results/summary.csv` in the workspace (config: our oracle agent,
  `attempts: 3`) after deleting every run: 12 run jobs and the summary, on the prebuilt task images;
- `harbor_default`: `harbor run -p <4 task dirs> -a oracle -k 3 -n 2` with Harbor's defaults, i.e. it builds
  the task image from environment/Dockerfile for every trial and deletes it after (`--delete`). The staged
  Dockerfiles get `RUN echo <fresh nonce>` right after FROM, so no build cache from earlier runs applies:
  the first trial of each task builds from scratch, later trials of the same task hit the cache that
  Harbor's own first build left (Harbor serializes builds of one environment);
- `harbor_default_warm` (full suite only): the same without the nonce, so every build may hit the cache of
  earlier Harbor runs on this machine (Harbor used repeatedly on the same tasks);
- `harbor_prebuilt`: the task dirs staged by `kotlin_bench.runs.agents.harbor.stage_task` (`[environment].docker_image` = our
  image), so Harbor builds nothing.

The examples' `environment/docker-compose.yaml` names the task image by its published name
(`kotlin-bench/<repo>:pr-<N>`), and Harbor's compose files apply it after `docker_image`: staged as it
is, Harbor's default build would take that shared name (and `--delete` remove it under anyone using it),
and the prebuilt variant would run whatever image has that name, or try to pull it. So the staged compose
file names `bench_image_name` (a name of this suite run) for the default variants and the workspace's
task image for the prebuilt one.

Every Harbor variant runs with the network isolation of `kotlin_bench.runs.agents.harbor` (network modes dropped from
task.toml, `--extra-docker-compose` giving the main service `network_mode: none`): Harbor's allowlist
sidecar image is not available on a host without a registry. Each job is checked: 12 trial results with
reward 1.0, and no image or container of its trials left behind.

Once per suite, `cold_build`: the four task images built with `nocache` under throw-away tags at
concurrency 2 (the cost kotlin-bench pays once when the task images do not exist yet); removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
import re
import secrets
import shutil
import subprocess
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import yaml

from bench.common import (
    AGENT,
    EXAMPLE_TASKS,
    HARBOR_BIN,
    Context,
    Row,
    harbor_env,
    log,
    read_json,
    result_path,
    run_timed,
    snakemake,
    task_image,
    write_config,
)
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine.images import image_id
from kotlin_bench.runs.agents.harbor import stage_task, trial_compose

K = 3
CONCURRENCY = 2
BENCH_IMAGES = "kotlin-bench-bench/harbor-"  # the names of the default variants' builds


def _seconds(timing: dict[str, Any] | None) -> float | None:
    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return None
    start = datetime.fromisoformat(timing["started_at"])
    return (datetime.fromisoformat(timing["finished_at"]) - start).total_seconds()


def run_kotlin_bench(ctx: Context, workspace: Path, rep: int) -> list[Row]:
    shutil.rmtree(workspace / "results/runs" / AGENT, ignore_errors=True)
    (workspace / "results/summary.csv").unlink(missing_ok=True)
    done = snakemake(
        workspace, "results/summary.csv", cores=CONCURRENCY, log_path=ctx.out / f"logs/attempts/kb-{rep}.log"
    )
    results = [workspace / result_path(t, a) for t in EXAMPLE_TASKS for a in range(1, K + 1)]
    resolved = sum(1 for p in results if p.is_file() and read_json(p)["reward"] == 1.0)
    ok = done.returncode == 0 and resolved == len(results)
    note = f"{resolved} of {len(results)} resolved"
    rows = [
        Row("attempts", "k3", "kotlin_bench", "all", rep, "wall_sec", done.seconds, ok=ok, note=note),
        Row("attempts", "k3", "kotlin_bench", "all", rep, "resolved", resolved, unit="runs", ok=ok),
    ]
    for path in results:
        if path.is_file():
            timings = read_json(path)["timings"]
            total = timings.get("total_sec", float("nan"))
            verifier = timings.get("verifier_sec", float("nan"))
            outside = total - verifier - timings.get("agent_sec", 0.0)
            for metric, value in (("run_sec", total), ("verifier_sec", verifier), ("overhead_sec", outside)):
                rows.append(Row("attempts", "k3", "kotlin_bench", path.parts[-3], rep, metric, value, ok=ok))
    return rows


def set_compose_image(staged: Path, image: str) -> None:
    """Name `image` as the main service's image in the staged task's compose file, if it has one."""
    path = staged / "environment/docker-compose.yaml"
    if not path.is_file():
        return
    compose = yaml.safe_load(path.read_text(encoding="utf-8"))
    compose.setdefault("services", {}).setdefault("main", {})["image"] = image
    path.write_text(yaml.safe_dump(compose, sort_keys=False), encoding="utf-8")


def bench_image_name(task: str, suffix: str) -> str:
    """The image name a default Harbor build of `task` gets here: the suite's, never a shared one."""
    return f"{BENCH_IMAGES}{task.lower()}:{suffix}"


def stage_default(workspace: Path, dest: Path, nonce: str | None) -> Path:
    """The task dirs as Harbor's default builds them: network modes dropped (as `stage_task` does)."""
    for task in EXAMPLE_TASKS:
        staged = stage_task(load_task(workspace / "examples/tasks" / task), dest)
        set_compose_image(staged, bench_image_name(task, nonce or "warm"))
        toml = (staged / "task.toml").read_text(encoding="utf-8")
        toml = re.sub(r'^docker_image = "[^"]*"\n', "", toml, flags=re.MULTILINE)
        (staged / "task.toml").write_text(toml, encoding="utf-8")
        if nonce:
            # A RUN right after FROM: BuildKit keys its cache on commands and file contents (a LABEL would
            # not do), so every later step misses the cache left by earlier Harbor runs.
            dockerfile = staged / "environment/Dockerfile"
            text = re.sub(
                r"^(FROM .*)$",
                rf"\1\nRUN echo kotlin-bench-bench-nonce-{nonce} >/dev/null",
                dockerfile.read_text(encoding="utf-8"),
                count=1,
                flags=re.MULTILINE,
            )
            dockerfile.write_text(text, encoding="utf-8")
    return dest


def stage_prebuilt(workspace: Path, dest: Path) -> Path:
    """The task dirs pointing Harbor at the workspace's task images (the names their sentinels record)."""
    for task in EXAMPLE_TASKS:
        image = task_image(workspace, task).name
        staged = stage_task(load_task(workspace / "examples/tasks" / task), dest, image=image)
        set_compose_image(staged, image)
    return dest


def _leftovers(trial_names: list[str]) -> tuple[list[str], list[str]]:
    prefixes = (*(name.lower() for name in trial_names), BENCH_IMAGES)
    images = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    containers = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, check=True
    ).stdout.split()
    return [i for i in images if i.startswith(prefixes)], [c for c in containers if c.startswith(prefixes)]


def run_harbor(ctx: Context, workspace: Path, variant: str, rep: int) -> list[Row]:
    work = ctx.tmp / "harbor" / f"{variant}-{rep}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if variant == "harbor_prebuilt":
        tasks_dir = stage_prebuilt(workspace, work / "tasks")
    else:
        nonce = secrets.token_hex(6) if variant == "harbor_default" else None
        tasks_dir = stage_default(workspace, work / "tasks", nonce)
    compose = work / "isolate.compose.yaml"
    compose.write_text(
        trial_compose(isolate_network=True, quick_stop=False), encoding="utf-8"
    )  # Harbor's stop
    cmd = [
        str(HARBOR_BIN),
        "run",
        "-p",
        str(tasks_dir),
        "-a",
        "oracle",
        "-o",
        str(work / "jobs"),
        "--job-name",
        "job",
        "-k",
        str(K),
        "-n",
        str(CONCURRENCY),
        "-y",
        "-q",
        "--extra-docker-compose",
        str(compose),
    ]
    done = run_timed(cmd, env=harbor_env(), log_path=ctx.out / f"logs/attempts/{variant}-{rep}.log")
    trials = sorted((work / "jobs/job").glob("*/result.json"))
    rows = []
    resolved = 0
    names = []
    for path in trials:
        trial = json.loads(path.read_text(encoding="utf-8"))
        names.append(path.parent.name)
        reward = ((trial.get("verifier_result") or {}).get("rewards") or {}).get("reward")
        resolved += reward == 1.0
        task = trial.get("task_name") or path.parent.name.split("__")[0]
        measured = {
            "trial_sec": _seconds(trial),
            "env_setup_sec": _seconds(trial.get("environment_setup")),
            "verifier_sec": _seconds(trial.get("verifier")),
            "agent_sec": _seconds(trial.get("agent_execution")),
            "teardown_sec": _seconds(
                {
                    "started_at": (trial.get("verifier") or {}).get("finished_at"),
                    "finished_at": trial.get("finished_at"),
                }
            ),
        }
        if None not in (measured["trial_sec"], measured["verifier_sec"], measured["agent_sec"]):
            measured["overhead_sec"] = (
                measured["trial_sec"] - measured["verifier_sec"] - measured["agent_sec"]
            )  # type: ignore[operator]
        for metric, seconds in measured.items():
            if seconds is not None:
                rows.append(Row("attempts", "k3", variant, task, rep, metric, seconds, ok=reward == 1.0))
    images, containers = _leftovers(names)
    if images or containers:
        log(f"{variant}: Harbor left {images + containers}; removing them")
        for image in images:
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True, check=False)
        for container in containers:
            subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    ok = done.returncode == 0 and resolved == K * len(EXAMPLE_TASKS) and not images and not containers
    note = f"{len(trials)} trials, {resolved} reward 1.0; left images {len(images)}, containers {len(containers)}"
    rows = [
        Row("attempts", "k3", variant, "all", rep, "wall_sec", done.seconds, ok=ok, note=note),
        Row("attempts", "k3", variant, "all", rep, "resolved", resolved, unit="trials", ok=ok),
        Row("attempts", "k3", variant, "all", rep, "images_left", len(images), unit="images", ok=not images),
        *rows,
    ]
    if variant == "harbor_prebuilt":
        client = docker.from_env()
        if any(image_id(client, task_image(workspace, t).id) is None for t in EXAMPLE_TASKS):
            rows[0].ok = False
            rows[0].note += "; a prebuilt task image disappeared"
    shutil.rmtree(work / "tasks", ignore_errors=True)
    return rows


def cold_build(ctx: Context, workspace: Path) -> list[Row]:
    """Build the 4 task images without cache, 2 at a time, under throw-away tags; then remove them."""
    client = docker.from_env(timeout=1800)
    tasks = [load_task(workspace / "examples/tasks" / t) for t in EXAMPLE_TASKS]
    seconds: dict[str, float] = {}
    errors: list[str] = []
    lock = threading.Lock()

    def build(task_index: int) -> None:
        task = tasks[task_index]
        tag = f"kotlin-bench-bench/{task.repo_key}:cold-{task.source.change_id}"
        started = time.monotonic()
        try:
            for chunk in client.api.build(
                path=str(task.path / "environment"), tag=tag, nocache=True, rm=True, forcerm=True, decode=True
            ):
                if "error" in chunk:
                    raise RuntimeError(chunk["error"])
        except Exception as exc:
            with lock:
                errors.append(f"{task.id}: {exc}")
        with lock:
            seconds[task.id] = time.monotonic() - started

    started = time.monotonic()
    pending = list(range(len(tasks)))
    workers = []

    def worker() -> None:
        while True:
            with lock:
                if not pending:
                    return
                index = pending.pop(0)
            build(index)

    for _ in range(CONCURRENCY):
        workers.append(threading.Thread(target=worker))
        workers[-1].start()
    for thread in workers:
        thread.join()
    wall = time.monotonic() - started
    for task in tasks:
        tag = f"kotlin-bench-bench/{task.repo_key}:cold-{task.source.change_id}"
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(tag, force=True)
    ok = not errors
    rows = [
        Row("attempts", "cold_build", "cold_build", "all", 0, "wall_sec", wall, ok=ok, note="; ".join(errors))
    ]
    rows += [
        Row("attempts", "cold_build", "cold_build", t, 0, "build_sec", s, ok=ok) for t, s in seconds.items()
    ]
    return rows


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = ctx.workspace
    write_config(workspace, attempts=K)
    variants = ["kotlin_bench", "harbor_default", "harbor_prebuilt"]
    if not ctx.quick:
        variants.append("harbor_default_warm")
    if not HARBOR_BIN.exists():
        log(f"{HARBOR_BIN} is missing (scripts/setup_harbor.sh installs it): kotlin_bench alone, no Harbor")
        variants = ["kotlin_bench"]
    rows = cold_build(ctx, workspace)
    ctx.recorder.add(*rows)
    log(f"attempts cold build of 4 task images: {rows[0].value:.1f}s ok={rows[0].ok}")
    for rep in range(ctx.rounds):
        order = variants if rep % 2 == 0 else list(reversed(variants))
        for variant in order:
            if variant == "kotlin_bench":
                rows = run_kotlin_bench(ctx, workspace, rep)
            else:
                rows = run_harbor(ctx, workspace, variant, rep)
            ctx.recorder.add(*rows)
            log(f"attempts rep {rep} {variant}: {rows[0].value:.1f}s ok={rows[0].ok} {rows[0].note}")
