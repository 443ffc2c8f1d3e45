"""Section `engines`: one oracle run on Podman against the same run on Docker, rootful and rootless.

Three variants of `snakemake --cores 1 <result.json>` after deleting that run (what a user pays for one
run end to end), interleaved per task and repetition (the order rotates), concurrency 1:

- `docker`: the shared workspace (section `prepare`), `engine: {kind: docker}`;
- `podman`: a copy of it with `engine: {kind: podman}`, rootful (scripts/setup_podman.sh);
- `podman_rootless`: a copy owned by the rootless test user (KOTLIN_BENCH_ROOTLESS_USER, default kbtest),
  run as that user with their Python (KOTLIN_BENCH_ROOTLESS_PYTHON, scripts/setup.sh --tests) on their
  rootless Podman. Skipped, with a note, where that user or their engine is missing.

The task images move from Docker to each Podman once (`docker save | podman load`; the image ids stay,
so the workspace's sentinels hold for every engine). Ratios are podman / docker per (task, repetition).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import EXAMPLE_TASKS, Context, Row, log, read_json, result_path, snakemake
from kotlin_bench.core import names
from kotlin_bench.engine.engine import EngineError, EngineSettings, Kind, connect
from kotlin_bench.engine.images import image_id, read_sentinel
from kotlin_bench.tools.workspace import Workspace

VARIANTS = ("docker", "podman", "podman_rootless")
ROOTLESS_USER = os.environ.get("KOTLIN_BENCH_ROOTLESS_USER", "kbtest")
ROOTLESS_PYTHON = Path(
    os.environ.get("KOTLIN_BENCH_ROOTLESS_PYTHON", "/opt/kotlin-bench/rootless-venv/bin/python")
)


@dataclass(frozen=True)
class Site:
    """Where one variant runs: its workspace, and the user it runs as (None: this process's)."""

    variant: str
    workspace: Path
    user: pwd.struct_passwd | None = None


def move_images(workspace: Path, into: EngineSettings, user: pwd.struct_passwd | None) -> None:
    """The workspace's task images, from Docker into another engine (ids kept); skipped when present."""
    images = [read_sentinel(workspace / names.task_sentinel(t)) for t in EXAMPLE_TASKS]
    client = connect(into).client
    missing = [i.image for i in images if image_id(client, i.id) is None]
    if not missing:
        return
    log(f"engines: docker save | podman load of {len(missing)} image(s) into {into.url()}")
    load = ["podman", "load", "-q"]
    if user is not None:
        load = ["runuser", "-u", user.pw_name, "--", "env", f"XDG_RUNTIME_DIR=/run/user/{user.pw_uid}", *load]
    save = subprocess.Popen(["docker", "save", *missing], stdout=subprocess.PIPE)
    done = subprocess.run(load, stdin=save.stdout, capture_output=True, text=True, check=False)
    if save.wait() != 0 or done.returncode != 0:
        raise RuntimeError(f"moving the images failed: {done.stderr[-1000:]}")
    absent = [i.image for i in images if image_id(client, i.id) is None]
    if absent:
        raise RuntimeError(f"after the move, {into.url()} lacks {absent}")


def rootless_user() -> pwd.struct_passwd | None:
    try:
        user = pwd.getpwnam(ROOTLESS_USER)
    except KeyError:
        return None
    engine = EngineSettings(Kind.PODMAN, socket=f"unix:///run/user/{user.pw_uid}/podman/podman.sock")
    try:
        connect(engine, timeout=20)
    except EngineError:
        return None
    return user if ROOTLESS_PYTHON.is_file() else None


def sites(ctx: Context) -> list[Site]:
    assert ctx.workspace is not None
    found = [Site("docker", ctx.workspace)]
    podman = Workspace(ctx.workspace).clone(ctx.tmp / "engines-podman")
    podman.use_engine(EngineSettings(Kind.PODMAN))
    try:
        move_images(podman.root, EngineSettings(Kind.PODMAN), None)
        found.append(Site("podman", podman.root))
    except (EngineError, RuntimeError) as exc:
        log(f"engines: no rootful Podman ({exc})")
    user = rootless_user()
    if user is None:
        log(f"engines: no rootless Podman for {ROOTLESS_USER} with {ROOTLESS_PYTHON}; variant skipped")
        return found
    shared = Path(tempfile.mkdtemp(prefix="kotlin-bench-bench-rootless-", dir="/tmp"))
    shared.chmod(0o755)
    ctx.extras.setdefault("cleanup", []).append(shared)
    rootless = podman.clone(shared / "ws")
    socket = f"unix:///run/user/{user.pw_uid}/podman/podman.sock"
    move_images(rootless.root, EngineSettings(Kind.PODMAN, socket=socket), user)
    subprocess.run(["chown", "-R", f"{user.pw_uid}:{user.pw_gid}", str(shared)], check=True)
    found.append(Site("podman_rootless", rootless.root, user))
    return found


def measure(ctx: Context, site: Site, task: str, rep: int) -> list[Row]:
    target = site.workspace / result_path(task, 1)
    shutil.rmtree(target.parent, ignore_errors=True)
    log_path = ctx.out / f"logs/engines/{site.variant}-{task}.log"
    if site.user is None:
        done = snakemake(site.workspace, result_path(task, 1), cores=1, log_path=log_path)
        returncode, seconds = done.returncode, done.seconds
    else:
        returncode, seconds = _as_user(site, result_path(task, 1), log_path)
    ok = returncode == 0 and target.is_file() and read_json(target)["status"] == "resolved"
    timings = read_json(target)["timings"] if target.is_file() else {}
    rows = [Row("engines", "single_run", site.variant, task, rep, "wall_sec", seconds, ok=ok)]
    rows += [Row("engines", "single_run", site.variant, task, rep, k, v, ok=ok) for k, v in timings.items()]
    outside = seconds - timings.get("verifier_sec", 0.0) - timings.get("agent_sec", 0.0)
    rows.append(Row("engines", "single_run", site.variant, task, rep, "outside_sec", outside, ok=ok))
    return rows


def _as_user(site: Site, target: str, log_path: Path) -> tuple[int, float]:
    assert site.user is not None
    user, ws = site.user, site.workspace
    env = {
        "HOME": user.pw_dir,
        "USER": user.pw_name,
        "LANG": "C.UTF-8",
        "PATH": f"{ROOTLESS_PYTHON.parent}:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "XDG_RUNTIME_DIR": f"/run/user/{user.pw_uid}",
        "PYTHONPATH": f"{ws / 'src'}:{ws}",
    }
    cmd = ["runuser", "-u", user.pw_name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items())]
    cmd += [str(ROOTLESS_PYTHON), "-m", "snakemake", "--cores", "1", target]
    started = time.monotonic()
    done = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, timeout=7200, check=False)
    seconds = time.monotonic() - started
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("a", encoding="utf-8") as out:
        out.write(
            f"$ {' '.join(cmd)}  (exit {done.returncode}, {seconds:.2f}s)\n{done.stdout[-20000:]}{done.stderr[-20000:]}\n"
        )
    return done.returncode, seconds


def run(ctx: Context) -> None:
    found = sites(ctx)
    try:
        for rep in range(ctx.reps):
            order = EXAMPLE_TASKS[rep % len(EXAMPLE_TASKS) :] + EXAMPLE_TASKS[: rep % len(EXAMPLE_TASKS)]
            for index, task in enumerate(order):
                shift = (rep + index) % len(found)
                for site in found[shift:] + found[:shift]:
                    rows = measure(ctx, site, task, rep)
                    ctx.recorder.add(*rows)
                    log(f"engines rep {rep} {task} {site.variant}: {rows[0].value:.2f}s ok={rows[0].ok}")
    finally:
        for path in ctx.extras.get("cleanup", []):
            shutil.rmtree(path, ignore_errors=True)
