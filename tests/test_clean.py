"""`kotlin-bench clean`: what one workspace left on the engine is listed and removed, and nothing of another
workspace or of a user; removing is refused while the workspace runs; `--all-images` releases task images
with a record and leaves their sentinels, so nothing reruns.

Real Docker, on clones of the session's finished example workspace (its images, nothing built from nothing).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adversarial.common import wait_for
from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine import retention
from kotlin_bench.engine.engine import connect
from kotlin_bench.engine.fence import table_name
from kotlin_bench.engine.images import ImageError, build_task_image, image_id, read_sentinel, stream_build
from kotlin_bench.engine.leftovers import Findings, Kind, Owner, find
from kotlin_bench.engine.network import unfence
from kotlin_bench.runs.activity import LockState, Role, scan
from kotlin_bench.tools.cli import main
from kotlin_bench.tools.workspace import EXAMPLE_TASKS, Workspace

pytestmark = pytest.mark.usefixtures("docker_engine")
TASK = "examples_calc-4"
SLEEPER = "#!/usr/bin/env bash\n# stays in its agent phase until the test is done with it\nsleep 600\n"
STATE_TIMEOUT = 240  # seconds to wait for a state the test brings about (a loaded machine is slow)


def clean(root: Path, *flags: str) -> tuple[int, str, str]:
    """`kotlin-bench clean` in the workspace at `root`: exit status, stdout, stderr."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(["clean", "--root", str(root), *flags])
    return code, stdout.getvalue(), stderr.getvalue()


def findings(root: Path, all_images: bool = False) -> Findings:
    return find(connect().client, Owner.of(root), scan(root).live(), all_images=all_images)


def ids(found: Findings, *kinds: Kind) -> set[str]:
    return {item.id for item in found.leftovers if item.kind in kinds}


def run_containers(ws: Workspace, running_only: bool = False) -> list[dict[str, Any]]:
    """The workspace's containers as the engine lists them, found by their run keys (which end in its tag);
    read from the list alone (another session's container may go between a list and an inspect)."""
    found = connect().client.api.containers(all=not running_only, filters={"label": names.LABEL_RUN})
    return [c for c in found if c["Labels"][names.LABEL_RUN].endswith(f".{ws.tag()}")]


def run_objects(ws: Workspace) -> dict[str, str]:
    """The workspace's containers and networks, found by their run keys: id -> name."""
    networks = connect().client.api.networks(filters={"label": names.LABEL_RUN})
    return {
        **{c["Id"]: c["Names"][0].lstrip("/") for c in run_containers(ws)},
        **{n["Id"]: n["Name"] for n in networks if n["Labels"][names.LABEL_RUN].endswith(f".{ws.tag()}")},
    }


def fences(ws: Workspace) -> set[str]:
    """The nftables tables of the workspace's networks (their fences) on the host."""
    tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True).stdout
    return {n for n in run_objects(ws).values() if f"table inet {table_name(n)}" in tables.splitlines()}


def scrub(root: Path) -> None:
    """Remove whatever of the workspace at `root` is still on the engine (its label), images last."""
    client = connect().client
    label = {"label": f"{names.LABEL_WORKDIR}={root}"}
    for container in client.containers.list(all=True, filters=label):
        with contextlib.suppress(Exception):
            container.remove(force=True)
    for network in client.networks.list(filters=label):
        with contextlib.suppress(Exception):
            network.remove()
            unfence(connect(), network.name)
    for _ in range(5):  # children before parents
        for image in client.api.images(all=True, filters=label):
            with contextlib.suppress(Exception):
                client.api.remove_image(image["Id"], noprune=True)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)


def sleeper_run(ws: Workspace) -> str:
    script = ws.write("clean-input/sleeper.sh", SLEEPER, 0o755)
    agents = [{"name": "oracle", "kind": "oracle"}, {"name": "sleeper", "kind": "script", "script": script}]
    ws.configure([TASK], agents)
    ws.edit_task(TASK, "agent", "allowed_hosts", '["repo1.maven.org"]')  # an egress proxy, a network
    return ws.target("sleeper", TASK)


def in_agent_phase(ws: Workspace) -> bool:
    """The run's agent container and its egress proxy both run (the allowlist phase is set up)."""
    running = run_containers(ws, running_only=True)
    phases = {c["Labels"].get(names.LABEL_PHASE) for c in running}
    roles = {c["Labels"].get(names.LABEL_ROLE) for c in running}
    return "agent" in phases and "egress-proxy" in roles


@pytest.fixture
def two_running(
    tmp_path: Path, finished_examples: Workspace
) -> Iterator[tuple[Workspace, Workspace, subprocess.Popen[bytes]]]:
    """Workspaces A and B side by side, each in the agent phase of a run (its container and egress proxy
    running); Snakemake of A, in its own process group, is given to the test."""
    a = finished_examples.clone(tmp_path / "a")
    b = finished_examples.clone(tmp_path / "b")
    procs = [ws.popen(sleeper_run(ws)) for ws in (a, b)]
    try:
        for ws, proc in zip((a, b), procs, strict=True):
            started = wait_for(lambda w=ws, p=proc: in_agent_phase(w) or p.poll() is not None, STATE_TIMEOUT)
            log = (ws.root / "snakemake.out").read_text(encoding="utf-8", errors="replace")
            assert started and proc.poll() is None, (
                f"{ws.root.name} never reached its agent phase:\n{log[-3000:]}"
            )
        yield a, b, procs[0]
    finally:
        for proc in procs:
            stop(proc)
        for ws in (a, b):
            scrub(ws.root)


def test_clean_lists_and_removes_exactly_what_a_killed_workspace_left(
    two_running: tuple[Workspace, Workspace, subprocess.Popen[bytes]],
) -> None:
    a, b, snakemake_a = two_running
    snakemake_a.kill()  # kill -9 of Snakemake alone: its job, orphaned, still runs the agent phase
    snakemake_a.wait(timeout=60)
    orphans = scan(a.root).processes
    assert orphans and all(p.role is Role.JOB for p in orphans), orphans
    code, _, refused = clean(a.root, "--remove")
    assert code == 1 and f"job (pid {orphans[0].pid})" in refused
    os.killpg(snakemake_a.pid, signal.SIGKILL)  # then the orphan too (its process group outlives Snakemake)
    assert wait_for(lambda: not scan(a.root).busy, 60), scan(a.root).reasons()

    client = connect().client
    image = read_sentinel(a.root / names.task_sentinel(TASK)).id
    users = client.containers.create(image, ["true"], name=f"users-own-{a.tag()}")  # no labels
    try:
        left, theirs = run_objects(a), run_objects(b)
        found = findings(a.root)
        kinds = {item.kind for item in found.leftovers}
        assert {Kind.CONTAINER, Kind.PROXY, Kind.NETWORK} <= kinds, found
        assert ids(found, Kind.CONTAINER, Kind.PROXY, Kind.NETWORK) == set(left)
        assert not ids(found, Kind.IMAGE, Kind.BUILD_CACHE), "the clone built nothing"
        assert users.id not in ids(found, *Kind)
        fenced_a, fenced_b = fences(a), fences(b)  # each agent phase's network, with its fence
        assert len(fenced_a) == 1 and len(fenced_b) == 1, (fenced_a, fenced_b)

        code, listed, _ = clean(a.root)
        assert code == 0
        for name in left.values():
            assert name in listed
        for key, name in (*theirs.items(), (users.id, users.name)):
            assert name not in listed and key[:12] not in listed
        assert scan(a.root).lock_state is LockState.STALE
        assert "snakemake --unlock" in listed  # the stale lock does not stop clean, and is said

        code, _, refused = clean(b.root, "--remove")  # B runs: nothing of it may go
        assert code == 1 and "refusing to remove" in refused and "snakemake" in refused

        code, removed, _ = clean(a.root, "--remove")
        assert code == 0, removed
        assert not run_objects(a)
        assert set(run_objects(b)) == set(theirs), "B's containers, proxy and network are untouched"
        tables = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True).stdout
        assert f"table inet {table_name(next(iter(fenced_a)))}" not in tables.splitlines()  # A's fence went
        assert fences(b) == fenced_b  # B's stays with its network
        assert in_agent_phase(b)
        client.containers.get(users.id)  # the user's container stays
        code, listed, _ = clean(a.root)
        assert code == 0 and "nothing of this workspace is left" in listed
    finally:
        users.remove(force=True)


def workflow_dir(root: Path) -> Path:
    """An empty workflow directory (what `--root` accepts), with nothing of it on the engine."""
    for marker in ("Snakefile", "workflow/schemas/config.schema.yaml"):
        (root / marker).parent.mkdir(parents=True, exist_ok=True)
        (root / marker).touch()
    return root


def test_removing_is_refused_while_snakemake_runs_and_not_for_a_stale_lock(tmp_path: Path) -> None:
    root = workflow_dir(tmp_path / "ws")
    (root / names.SNAKEMAKE_LOCKS).mkdir(parents=True)
    (root / names.SNAKEMAKE_LOCKS / "0.input.lock").touch()
    fake = tmp_path / "bin" / "snakemake"  # its command line is Snakemake's: `python .../snakemake`
    fake.parent.mkdir()
    fake.write_text("import time\ntime.sleep(600)\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(fake)], cwd=root)  # running once Popen returns
    try:
        assert scan(root).lock_state is LockState.LIVE
        code, _, refused = clean(root, "--remove")
        assert code == 1
        assert "refusing to remove" in refused and f"snakemake (pid {proc.pid})" in refused
    finally:
        proc.kill()
        proc.wait()
    assert scan(root).lock_state is LockState.STALE  # what kill -9 of Snakemake leaves
    code, said, _ = clean(root, "--remove")
    assert code == 0 and "is stale" in said and "snakemake --unlock" in said


def test_removing_is_refused_while_a_job_holds_a_run_lock(tmp_path: Path) -> None:
    import fcntl

    root = workflow_dir(tmp_path / "ws")
    lock = root / names.dir_lock(Path(names.run_dir("sleeper", TASK, 1)))
    lock.parent.mkdir(parents=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as `runner.exclusive` holds it
        code, _, refused = clean(root, "--remove")
        assert code == 1 and f"pid {os.getpid()} holds {lock.relative_to(root)}" in refused
    assert clean(root, "--remove")[0] == 0


# --------------------------------------------------------------------------- images


def build(client: Any, root: Path, dockerfile: str, tag: str, ours: bool = True) -> str:
    """Build `dockerfile` (its context holds nothing else) as the workflow does in `root` (its label, the
    build ledger), or as a user would (`ours` False); the image's id."""
    context = root / "clean-input" / tag.replace("/", "_").replace(":", "_")
    context.mkdir(parents=True)
    (context / "Dockerfile").write_text(dockerfile, encoding="utf-8")
    if ours:
        engine = connect()  # the workspaces here run on the default engine, Docker
        return stream_build(
            engine,
            context,
            "Dockerfile",
            tag,
            timeout=120,
            log=io.StringIO(),
            ledger=Path(names.BUILD_LEDGER),
        )
    for _ in client.api.build(path=str(context), tag=tag, rm=True, decode=True):
        pass
    found = image_id(client, tag)
    assert found is not None
    return found


def children(client: Any, parent: str) -> set[str]:
    return {i["Id"] for i in client.api.images(all=True) if i.get("ParentId") == parent}


def test_images_no_record_names_and_the_build_cache_go_and_all_images_releases_keeping_sentinels(
    tmp_path: Path, finished_examples: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = finished_examples.clone(tmp_path / "ws")
    client = connect().client
    sentinel = ws.root / names.task_sentinel(TASK)
    others = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in sentinel.parent.glob("*.json") if p != sentinel
    }
    made = sentinel.stat().st_mtime_ns
    monkeypatch.chdir(ws.root)  # the workflow's own code, as a job of this workspace runs it
    user_tag = f"users-own/image:{ws.tag()}"
    try:
        # This workspace's own task image (from the build cache: only its label step is new), its sentinel
        # as old as before, so the results made on it stay up to date.
        task = load_task(ws.root / EXAMPLE_TASKS / TASK, require_materialized=False)
        repo_key, tag = names.image_parts(task.base_image)
        base = ws.root / names.base_sentinel(repo_key, tag)  # FROM the base recorded, as the rule builds
        built = build_task_image(task, tmp_path / "build.log", sentinel, base_sentinel=base).id
        os.utime(sentinel, ns=(made, made))
        name = names.built_task_image(task.image)
        replaced = names.built_task_image("kotlin-bench/examples_calc:pr-999")  # a task image no record names
        leftover = build(client, ws.root, f"FROM {name}\nRUN echo left > /left\n", replaced)
        layer = client.images.get(leftover).attrs["Parent"]  # the RUN step's layer, untagged
        with pytest.raises(ImageError):  # a failed build leaves the layer of its first step
            build(
                client, ws.root, f"FROM {name}\nRUN echo cache > /cache\nRUN exit 3\n", f"{replaced}-failed"
            )
        (cache,) = children(client, built) - {layer}
        users = build(client, ws.root, f"FROM {name}\nLABEL users.own=yes\n", user_tag, ours=False)
        assert client.images.get(users).labels[names.LABEL_WORKDIR] == str(ws.root)  # inherited

        found = findings(ws.root)
        assert ids(found, Kind.IMAGE) == {leftover}
        assert ids(found, Kind.BUILD_CACHE) == {layer, cache}
        assert not ids(found, Kind.CONTAINER, Kind.PROXY, Kind.NETWORK, Kind.RECORD)

        # --all-images: the task image is ours, but a user's image is built on it: it stays, and says why.
        found = findings(ws.root, all_images=True)
        assert built not in ids(found, *Kind) and users not in ids(found, *Kind)
        assert any(k.id == built and user_tag in k.why for k in found.kept), found.kept
        elsewhere = [k for k in found.kept if "built by another workspace" in k.why]
        assert len(elsewhere) == len(others)  # the clone's other task images are the finished workspace's

        client.images.remove(users)
        code, said, problems = clean(ws.root, "--remove", "--all-images")
        assert code == 0, said + problems
        assert "sentinels (results/images/task/) stay, so no run is redone" in said
        for gone in (built, leftover, layer, cache):
            assert image_id(client, gone) is None, gone
        assert read_sentinel(sentinel).id == built and sentinel.stat().st_mtime_ns == made
        assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in others} == others
        record = ws.root / names.task_image_release(TASK, retention.CLEAN)
        assert json.loads(record.read_text(encoding="utf-8"))["id"] == built
        assert json.loads(record.read_text(encoding="utf-8"))["outcome"] == "removed"
        assert [p.relative_to(ws.root) for p in (ws.root / names.IMAGES / "released").rglob("*.json")] == [
            record.relative_to(ws.root)
        ]
        assert retention.image_state(TASK, str(ws.root / names.RESULTS)) is retention.ImageState.RELEASED
        for path in others:  # the finished workspace's images, which the clone uses, stay
            assert image_id(client, read_sentinel(path).id) is not None

        assert ws.planned(names.verify_result("oracle", TASK, 1)) == {}, "releasing reruns nothing"
        # The next job that needs the image builds it again (from the cache) and the records say present.
        again = retention.ensure_task_image(connect(), task, None, tmp_path / "again.log")
        assert image_id(client, again.id) == again.id
        assert retention.image_state(TASK, str(ws.root / names.RESULTS)) is retention.ImageState.PRESENT
    finally:
        with contextlib.suppress(Exception):
            client.images.remove(user_tag)
        scrub(ws.root)
