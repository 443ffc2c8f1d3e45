"""Thin helpers over the Docker SDK for one run's container: start, exec under a deadline, copy in and out.

Every container carries the label `kotlin-bench.run=<run key>` and is removed by `reap` or `remove`.
A container that stops under a phase without our watchdog stopping it (killed from outside, its init
killed for memory, the engine restarted) raises `ContainerError`: that phase has no result.

Limits: a container may use its task's CPUs and memory (swap bounded to the same figure, so none) and
start at most `pids` processes and threads. Where the engine cannot enforce a process limit (rootless
Podman on a cgroup v1 host), the container is labelled `kotlin-bench.nproc=<pids>` and every command run
in it starts under `ulimit -u <pids>` (RLIMIT_NPROC, which root in a rootless container cannot raise; it
counts the processes of every container of that user, see the README).
"""

from __future__ import annotations

import contextlib
import io
import os
import tarfile
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from kotlin_bench.core import names
from kotlin_bench.engine import cgroups

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

    from kotlin_bench.engine.engine import Engine

MAX_LOG_BYTES = 64 * 1024 * 1024
WATCH_INTERVAL = 1.0  # how often the watchdog of `run` looks at the container's process limit
KEEPALIVE = ["/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"]


class ContainerError(RuntimeError):
    """The container stopped while a phase ran in it; nothing it left can be taken as a result."""


@dataclass(frozen=True)
class ExecResult:
    """A command run in a container: its exit code (None when the container was killed under it),
    whether it ran past its deadline, and whether it filled the container's process limit (then the
    container was killed at once: nothing more could run in it)."""

    exit_code: int | None
    timed_out: bool
    seconds: float
    process_limit: bool = False


def gone(exc: Exception) -> bool:
    """Whether an engine error says the container no longer exists: Docker answers 404, Podman's
    Docker-compatible API 500 with "no such container" for one removed a moment before."""
    import docker

    if isinstance(exc, docker.errors.NotFound):
        return True
    return isinstance(exc, docker.errors.APIError) and "no such container" in str(exc).lower()


def listed(client: docker.DockerClient, filters: dict[str, Any], everything: bool = True) -> list[Container]:
    """The containers matching `filters` (stopped ones too unless `everything` is False), each inspected;
    one removed between the listing and its inspection (a run ending meanwhile) is left out."""
    found = []
    for sparse in client.containers.list(all=everything, filters=filters, sparse=True):
        try:
            found.append(client.containers.get(sparse.id))
        except Exception as exc:
            if not gone(exc):
                raise
    return found


def reap(client: docker.DockerClient, run_key: str) -> int:
    """Remove containers left behind by an earlier, interrupted attempt at the same run."""
    stale = listed(client, {"label": f"{names.LABEL_RUN}={run_key}"})
    for container in stale:
        remove(container)
    return len(stale)


def start(
    engine: Engine,
    image: str,
    run_key: str,
    labels: dict[str, str],
    *,
    cpus: float,
    memory_mb: int,
    pids: int,
    hostname: str | None = None,
    extra_hosts: dict[str, str] | None = None,
) -> Container:
    """Start a container that idles until told what to do; `hostname` None: the engine's random one;
    `extra_hosts` lines in its /etc/hosts (name -> address, `Engine.extra_hosts`). A
    container the engine created but could not start is removed before the error goes up (it would
    otherwise stay behind, `Created`, after the step's next try succeeds), and so is one whose creation
    was interrupted (Ctrl-C, SIGTERM) after the engine had made it, found by the run's key."""
    host_cpus = os.cpu_count() or 1
    labels = {names.LABEL_RUN: run_key, **labels}
    if "pids" in engine.unlimited:
        labels[names.LABEL_NPROC] = str(pids)
    try:
        container = engine.client.containers.create(
            image,
            entrypoint=KEEPALIVE,
            labels=labels,
            nano_cpus=int(min(cpus, host_cpus) * 1e9),
            mem_limit=f"{memory_mb}m",
            memswap_limit=f"{memory_mb}m",
            pids_limit=pids,
            hostname=hostname,
            extra_hosts=extra_hosts or None,
        )
    except BaseException:
        # the engine may have made it before the interruption: its handle never came back
        with contextlib.suppress(Exception):
            reap(engine.client, run_key)
        raise
    try:
        container.start()
        container.reload()
    except BaseException:
        remove(container)
        raise
    return container


def bounded(container: Container, argv: list[str]) -> list[str]:
    """`argv` under the container's RLIMIT_NPROC bound, where its engine enforces no process limit."""
    nproc = (container.labels or {}).get(names.LABEL_NPROC)
    if not nproc or not nproc.isdigit():
        return argv
    return ["bash", "-c", f'ulimit -u {nproc} && exec "$@"', "bash", *argv]


def remove(container: Container) -> None:
    """Remove the container, stopping it first; one already gone is fine."""
    try:
        container.remove(force=True)
    except Exception as exc:
        if not gone(exc):
            raise


def run(
    container: Container,
    script: str,
    timeout: float,
    log_path: Path,
    *,
    workdir: str | None = None,
    env: dict[str, str] | None = None,
) -> ExecResult:
    """Run a bash script in the container, its output appended to `log_path` as it comes (a log that can
    be followed while the script runs), stopped past `timeout`.

    The script runs under coreutils `timeout` (KILL 10 s after TERM); a host-side watchdog kills the
    whole container if even that does not return, so a run can never hang the workflow. The watchdog
    also kills the container within a second or two of a fork refused at its process limit (a fork
    bomb: it would spin until the deadline), where the host can read that (`cgroups.refused_forks`).
    """
    api = container.client.api
    cmd = bounded(container, ["timeout", "-k", "10", str(int(timeout)), "bash", "-c", script])
    events = cgroups.pids_events(init_pid(container), container.id)
    refused_before = cgroups.counter(events, "max") if events else None
    exec_id = api.exec_create(container.id, cmd, workdir=workdir, environment=env or {})["Id"]
    started = time.monotonic()
    killed, limited = threading.Event(), threading.Event()

    def watchdog() -> None:
        deadline = started + timeout + 60
        while not done.wait(WATCH_INTERVAL):
            hit = events is not None and (cgroups.counter(events, "max") or 0) > (refused_before or 0)
            if hit or time.monotonic() > deadline:
                (limited if hit else killed).set()
                with contextlib.suppress(Exception):
                    container.kill()
                return

    done = threading.Event()
    threading.Thread(target=watchdog, daemon=True).start()
    written = 0
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        try:
            for chunk in api.exec_start(exec_id, stream=True):
                if written < MAX_LOG_BYTES:
                    log.write(chunk)
                    log.flush()  # the log is watched while the agent runs (issue 31: a live view)
                    written += len(chunk)
        finally:
            done.set()
        if written >= MAX_LOG_BYTES:
            log.write(b"\n[kotlin-bench: log truncated]\n")
    seconds = time.monotonic() - started
    if limited.is_set():
        with log_path.open("ab") as log:
            log.write(
                b"\n[kotlin-bench: the container's process limit refused a fork; the container was stopped]\n"
            )
        return ExecResult(exit_code=None, timed_out=False, seconds=seconds, process_limit=True)
    if killed.is_set():
        return ExecResult(exit_code=None, timed_out=True, seconds=seconds)
    exit_code = api.exec_inspect(exec_id)["ExitCode"]
    # 124: `timeout` stopped it with TERM; 137 after the deadline: with KILL. A 137 before the deadline
    # is a process killed by someone else (the OOM killer, another process), not a timeout.
    timed_out = exit_code == 124 or (exit_code == 137 and seconds >= timeout)
    check_running(container, settle=5.0 if exit_code == 137 and not timed_out else 0.0)
    return ExecResult(exit_code=exit_code, timed_out=timed_out, seconds=seconds)


def check_running(container: Container, settle: float = 0.0) -> None:
    """Raise ContainerError when the container is no longer running. With `settle`, wait that long for
    a container that is being killed to say so (its exec can end before its state changes)."""
    deadline = time.monotonic() + settle
    container.reload()
    while container.status == "running" and time.monotonic() < deadline:
        time.sleep(0.25)
        container.reload()
    if container.status != "running":
        state = container.attrs.get("State", {})
        raise ContainerError(
            f"container {container.short_id} stopped during the phase (status {container.status}, exit code "
            f"{state.get('ExitCode')}, OOMKilled={state.get('OOMKilled')}): killed from outside, out of "
            "memory, or the engine restarted"
        )


def revive(container: Container) -> None:
    """Start a stopped container again (its processes are gone, its filesystem is kept)."""
    container.reload()
    if container.status != "running":
        container.start()


def restart(container: Container) -> None:
    """End every process of the container (its init is killed) and start it again; its filesystem is
    kept. For a container whose processes may fill its process limit (a fork bomb): nothing else could
    start in it."""
    import docker

    with contextlib.suppress(docker.errors.APIError):
        container.kill()
    container.wait(timeout=60)
    container.start()


def init_pid(container: Container) -> int:
    """The host's pid of the container's init (0 when it is not running, or gone)."""
    try:
        container.reload()
    except Exception as exc:
        if gone(exc):
            return 0
        raise
    return int((container.attrs.get("State") or {}).get("Pid") or 0)


def oom_kills(container: Container, since: float, events: bool = True) -> int:
    """How many times the kernel's OOM killer struck in the container since `since` (a time.time()).

    The kernel's counter of the container's memory cgroup (`kotlin_bench.engine.cgroups`) where the
    host can read it, else the engine's events (`events`: Docker has them; Podman 4.3 emits none); both
    are the host's view, which nothing inside the container can fake.
    """
    counted = cgroups.oom_kills(init_pid(container), container.id)
    if counted is not None or not events:
        return counted or 0
    found = container.client.events(
        since=since, until=time.time(), filters={"container": container.id, "event": "oom"}, decode=True
    )
    return sum(1 for _ in found)


def refused_forks(container: Container) -> int | None:
    """How often a fork was refused at the container's process limit; None when that cannot be read."""
    return cgroups.refused_forks(init_pid(container), container.id)


KEEPALIVE_TASKS = 2  # KEEPALIVE's shell and its sleep


def leftover_tasks(container: Container) -> int | None:
    """How many processes and threads run in the container besides its keep-alive (None: unknown)."""
    count = cgroups.task_count(init_pid(container), container.id)
    return None if count is None else max(0, count - KEEPALIVE_TASKS)


@dataclass(frozen=True)
class StreamResult:
    """A command streamed out of a container: its exit code (None when it was killed), whether it ran
    past its deadline, whether its stdout exceeded the bound, how long it took."""

    exit_code: int | None
    timed_out: bool
    overflowed: bool
    seconds: float


def stream(
    container: Container,
    argv: list[str],
    out: BinaryIO,
    err: BinaryIO,
    *,
    timeout: float,
    max_out: int,
    workdir: str | None = None,
    env: dict[str, str] | None = None,
    grace: float = 30.0,
) -> StreamResult:
    """Run `argv` in the container; its stdout is written to `out` chunk by chunk, at most `max_out`
    bytes, and its stderr to `err` (at most MAX_LOG_BYTES); nothing is held in memory.

    The command runs under coreutils `timeout`; past `timeout` + `grace`, or when stdout exceeds
    `max_out`, the container is killed (a caller that streams from a container must be done with it).
    """
    api = container.client.api
    cmd = bounded(container, ["timeout", "-k", "5", str(max(1, int(timeout))), *argv])
    exec_id = api.exec_create(
        container.id, cmd, workdir=workdir, stdout=True, stderr=True, environment=env or {}
    )["Id"]
    done, killed = threading.Event(), threading.Event()

    def kill() -> None:
        killed.set()
        with contextlib.suppress(Exception):
            container.kill()

    def watchdog() -> None:
        if not done.wait(timeout + grace):
            kill()

    threading.Thread(target=watchdog, daemon=True).start()
    started = time.monotonic()
    written = logged = 0
    overflowed = False
    try:
        for stdout, stderr in api.exec_start(exec_id, stream=True, demux=True):
            if stdout:
                if written + len(stdout) > max_out:
                    overflowed = True
                    kill()
                    break
                out.write(stdout)
                written += len(stdout)
            if stderr and logged < MAX_LOG_BYTES:
                err.write(stderr)
                logged += len(stderr)
    except Exception:
        if not killed.is_set():
            raise
    finally:
        done.set()
    seconds = time.monotonic() - started
    if killed.is_set():
        return StreamResult(None, timed_out=not overflowed, overflowed=overflowed, seconds=seconds)
    code = api.exec_inspect(exec_id)["ExitCode"]
    # as in `run`: 124 is `timeout`'s TERM, 137 past the deadline its KILL
    timed_out = code == 124 or (code == 137 and seconds >= timeout)
    return StreamResult(code, timed_out=timed_out, overflowed=False, seconds=seconds)


def output(
    container: Container,
    script: str,
    *,
    workdir: str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    max_bytes: int = MAX_LOG_BYTES,
) -> tuple[int, bytes]:
    """Run a short bash script and return its exit code and stdout (-1 and b"" when it did not finish).

    Past `timeout` the container is killed: whatever an agent left in it (a hanging `git`, say) cannot
    hang the workflow.
    """
    stdout = io.BytesIO()
    done = stream(
        container,
        ["bash", "-c", script],
        stdout,
        io.BytesIO(),
        timeout=timeout,
        max_out=max_bytes,
        workdir=workdir,
        env=env,
        grace=0.0,
    )
    if done.exit_code is None or done.timed_out:
        return -1, b""
    return done.exit_code, stdout.getvalue()


def read_member(
    container: Container, path: str, max_bytes: int = 1 << 30
) -> tuple[tarfile.TarInfo, bytes] | None:
    """One regular file of the container with its archive header (mode, owner, mtime): None when it is
    missing or not a regular file. Read from the engine's archive: no program of the container runs."""
    import docker

    try:
        chunks, _stat = container.get_archive(path)
    except docker.errors.NotFound:
        return None
    with tempfile.TemporaryFile() as spool:
        for chunk in chunks:
            spool.write(chunk)
            if spool.tell() > max_bytes + 64 * 1024:
                raise OSError(f"{path} in the container exceeds {max_bytes} bytes")
        spool.seek(0)
        with tarfile.open(fileobj=spool) as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return None
            data = tar.extractfile(member)
            return (member, data.read()) if data else None


def read_file(container: Container, path: str, max_bytes: int) -> bytes | None:
    """The content of one regular file of the container (None when it is missing or not a regular
    file), read from the engine's archive: no program of the container runs."""
    found = read_member(container, path, max_bytes)
    return found[1] if found is not None else None


def copy_from_image(
    container: Container, image: str, source: str, dest_dir: str, labels: dict[str, str]
) -> None:
    """Copy the directory `source` of a pristine container of `image` into `dest_dir` (which must
    exist) of `container`, streamed from engine to engine. The pristine container is created, never
    started, carries `labels` (so `reap` finds it) and is removed."""
    pristine = container.client.containers.create(image, entrypoint=KEEPALIVE, labels=labels)
    try:
        chunks, _stat = pristine.get_archive(source, chunk_size=1 << 20)
        if not container.put_archive(dest_dir, chunks):
            raise ContainerError(f"could not copy {source} of {image} into {dest_dir}")
    finally:
        remove(pristine)


def copy_dir_in(container: Container, source: Path, dest: str) -> None:
    """Copy the directory `source` to the absolute path `dest` in the container (modes kept)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(source), arcname=dest.strip("/"))
    container.put_archive("/", buffer.getvalue())


def root_exec(container: Container, argv: list[str]) -> Any:
    """Run a command of the harness's own as root in `/` of a task container (never in its working
    directory, which the agent may have removed); docker's ExecResult (`exit_code`, `output`)."""
    return container.exec_run(argv, user="root", workdir="/")


def put_files(container: Container, dest_dir: str, files: dict[str, bytes]) -> None:
    """Write files (relative name -> content, mode 0644, root's) under the existing container directory
    `dest_dir`."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    if not container.put_archive(dest_dir, buffer.getvalue()):
        raise ContainerError(f"could not write {', '.join(files)} into {dest_dir}")


def copy_file_in(container: Container, source: Path, dest_dir: str) -> None:
    """Copy one file into the existing container directory `dest_dir`, streamed from a spooled tar."""
    with tempfile.TemporaryFile() as spool:
        with tarfile.open(fileobj=spool, mode="w") as tar:
            tar.add(str(source), arcname=source.name)
        spool.seek(0)
        container.put_archive(dest_dir, spool)


def copy_dir_out(container: Container, source: str, dest: Path, max_bytes: int = 512 * 1024 * 1024) -> bool:
    """Copy the container directory `source` into `dest`; False when it does not exist."""
    import docker

    try:
        stream, _stat = container.get_archive(source)
    except docker.errors.NotFound:
        return False
    buffer = io.BytesIO()
    for chunk in stream:
        buffer.write(chunk)
        if buffer.tell() > max_bytes:
            raise OSError(f"{source} in the container exceeds {max_bytes} bytes")
    buffer.seek(0)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=buffer) as tar:
        # Only regular files and directories; the member's top folder is `source`'s basename.
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        extract(tar, dest, members)
    return True


def extract(tar: tarfile.TarFile, dest: Path, members: list[tarfile.TarInfo]) -> None:
    """Extract `members` (regular files and directories) below `dest` only, owners not kept: tarfile's
    `data` filter where this Python has it (3.11.4 and later), else the same checks here (Debian 12's
    Python is 3.11.2)."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, members=members, filter="data")
        return
    root = dest.resolve()
    for member in members:
        target = (root / member.name).resolve()
        if member.name.startswith("/") or (target != root and root not in target.parents):
            raise OSError(f"{member.name!r} in the archive points outside {dest}")
        member.uid = member.gid = os.getuid()
        member.uname = member.gname = ""
        member.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0o600)
    tar.extractall(dest, members=members, numeric_owner=True)
