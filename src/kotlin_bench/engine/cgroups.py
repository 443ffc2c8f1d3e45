"""The kernel's own counters of a container, read from the host: out-of-memory kills and refused forks.

Both engines put a container in cgroups of its own; the kernel counts there how often the OOM killer
struck (`memory.oom_control` `oom_kill N` on cgroup v1, `memory.events` on v2) and how often a fork was
refused at the process limit (`pids.events` `max N`). Nothing inside the container can fake these
counters, and they need no engine events (Podman 4.3 emits no `oom` event at all). They are read through
`/proc/<pid>/cgroup` of the container's init, so only on the host that runs the engine, and only while the
container runs; None means the counter cannot be read (a remote engine, a stopped container, or a rootless
container on a cgroup v1 host, which sits in its caller's cgroups and has no limits of its own).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PROC = Path("/proc")


def cgroup_dir(
    pid: int, controller: str, container_id: str, root: Path = ROOT, proc: Path = PROC
) -> Path | None:
    """The directory of the container's cgroup for `controller` (v1), or its unified cgroup (v2); None
    when it cannot be found or is not the container's own (its path must name the container's id)."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    unified = None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if container_id[:12] not in path:
            continue
        if controller in controllers.split(","):
            found = root / controller / path.lstrip("/")
            return found if found.is_dir() else None
        if controllers == "" and (root / "cgroup.controllers").is_file():
            unified = root / path.lstrip("/")
    return unified if unified is not None and unified.is_dir() else None


def counter(path: Path, key: str) -> int | None:
    """The value of the `key N` line of a cgroup file; None when the file or the line is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def oom_kills(pid: int, container_id: str, root: Path = ROOT, proc: Path = PROC) -> int | None:
    """How often the OOM killer struck in the container's memory cgroup."""
    memory = cgroup_dir(pid, "memory", container_id, root, proc)
    if memory is None:
        return None
    found = counter(memory / "memory.oom_control", "oom_kill")
    return found if found is not None else counter(memory / "memory.events", "oom_kill")


def pids_events(pid: int, container_id: str, root: Path = ROOT, proc: Path = PROC) -> Path | None:
    """The container's `pids.events` (its `max N` line counts the forks refused at its process limit)."""
    pids = cgroup_dir(pid, "pids", container_id, root, proc)
    return None if pids is None or not (pids / "pids.events").is_file() else pids / "pids.events"


def refused_forks(pid: int, container_id: str, root: Path = ROOT, proc: Path = PROC) -> int | None:
    """How often a fork in the container was refused at its process limit."""
    events = pids_events(pid, container_id, root, proc)
    return None if events is None else counter(events, "max")


def task_count(pid: int, container_id: str, root: Path = ROOT, proc: Path = PROC) -> int | None:
    """How many processes and threads the container has now."""
    pids = cgroup_dir(pid, "pids", container_id, root, proc)
    try:
        return None if pids is None else int((pids / "pids.current").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def sockets(pid: int, container_id: str, proc: Path = PROC) -> str | None:
    """The container's TCP sockets as its network namespace lists them (`/proc/<pid>/net/tcp` and `tcp6`
    of its init, read from the host: no process started in it); None when they cannot be read here or
    the process is not the container's (its cgroup must name the container's id)."""
    try:
        cgroup = (proc / str(pid) / "cgroup").read_text(encoding="utf-8")
        if not pid or container_id[:12] not in cgroup:
            return None
        return "".join(
            (proc / str(pid) / "net" / name).read_text(encoding="ascii") for name in ("tcp", "tcp6")
        )
    except OSError:
        return None
