"""What of a workspace runs now, read without disturbing it: Snakemake and its jobs, the runner's locks,
and Snakemake's own lock (live, or stale after a `kill -9`).

- Processes (this machine's, from /proc): those whose working directory is the workflow directory (or
  below it) and whose command line is Snakemake's (`snakemake ...`, `python -m snakemake ...`), a job's
  script (`.snakemake/scripts/...`: what a job orphaned by a killed Snakemake still runs), or a program an
  agent kind runs on the host (`AgentKind.programs`: Harbor's CLI).
- The runner's per-directory locks (`names.dir_lock`, held by a solve or verify job while it works, see
  `kotlin_bench.runs.runner.exclusive`): held ones are read from /proc/locks with their holder's pid; a
  lock not held on this machine is tried once without waiting (shared, released at once), which also sees
  a holder on another machine of a shared filesystem.
- Snakemake's lock (`.snakemake/locks/`) is live while a Snakemake process of the workspace runs, and
  stale when none does (what `kill -9` leaves: `snakemake --unlock` clears it).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.engine.leftovers import Live
from kotlin_bench.runs.agents import KINDS

PROC = Path("/proc")


class Role(StrEnum):
    SNAKEMAKE = "snakemake"
    JOB = "job"
    AGENT = "agent"  # a program an agent kind runs on the host (`AgentKind.programs`)


class LockState(StrEnum):
    NONE = "none"
    LIVE = "live"
    STALE = "stale"


@dataclass(frozen=True)
class Process:
    pid: int
    role: Role
    command: str

    def describe(self) -> str:
        return f"{self.role} (pid {self.pid}): {self.command[:120]}"


@dataclass(frozen=True)
class Held:
    """A runner lock that is held: its path, and its holder's pid when it runs on this machine."""

    path: Path
    pid: int | None


@dataclass(frozen=True)
class Activity:
    root: Path
    processes: tuple[Process, ...] = ()
    held: tuple[Held, ...] = ()
    snakemake_locks: tuple[Path, ...] = ()

    @property
    def busy(self) -> bool:
        """Whether something of the workspace runs (nothing may be removed then)."""
        return bool(self.processes or self.held)

    @property
    def lock_state(self) -> LockState:
        if not self.snakemake_locks:
            return LockState.NONE
        alive = any(p.role is Role.SNAKEMAKE for p in self.processes)
        return LockState.LIVE if alive else LockState.STALE

    def live(self) -> Live:
        return Live(tuple((h.path, h.pid) for h in self.held), tuple(p.describe() for p in self.processes))

    def reasons(self) -> list[str]:
        """What runs, one line each."""
        found = [p.describe() for p in self.processes]
        for held in self.held:
            holder = f"pid {held.pid}" if held.pid is not None else "a process not on this machine"
            found.append(f"{holder} holds {held.path.relative_to(self.root)} (a job works on that run)")
        return found


def role_of(argv: Sequence[str]) -> Role | None:
    """Which of the workspace's programs a command line is, if any."""
    scripts = f"/{names.SNAKEMAKE_SCRIPTS}/"
    if any(scripts in arg or arg.startswith(names.SNAKEMAKE_SCRIPTS + "/") for arg in argv):
        return Role.JOB
    programs = [os.path.basename(arg) for arg in argv[:2]]
    module = any(argv[i : i + 2] == ["-m", "snakemake"] for i in range(len(argv) - 1))
    if "snakemake" in programs or module:
        return Role.SNAKEMAKE
    if any(program in programs for kind in KINDS.values() for program in kind.programs):
        return Role.AGENT
    return None


def processes(root: Path, proc: Path = PROC) -> tuple[Process, ...]:
    """The workspace's Snakemake, job and agent-program processes on this machine (this process aside)."""
    found = []
    for entry in proc.iterdir() if proc.is_dir() else ():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
            argv = (entry / "cmdline").read_bytes().decode("utf-8", "replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        role = role_of([a for a in argv if a])
        if role is not None and cwd.is_relative_to(root):
            found.append(Process(int(entry.name), role, " ".join(argv).strip()))
    return tuple(sorted(found, key=lambda p: p.pid))


def parse_proc_locks(text: str) -> dict[tuple[int, int, int], int]:
    """/proc/locks: (device major, minor, inode) -> the pid holding a lock on it (waiters left out)."""
    held = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->":
            continue
        try:
            major, minor, inode = fields[5].split(":")
            held[(int(major, 16), int(minor, 16), int(inode))] = int(fields[4])
        except ValueError:
            continue
    return held


def lock_files(root: Path) -> list[Path]:
    """The runner's lock files of the workspace: each run's verification (`.attempt-<k>.lock`), its
    solve step (`attempt-<k>/.work.lock`) and repeated verifications, under results/runs and the
    regrade's tree."""
    run = Path("*", "*", "attempt-*")
    patterns = [
        names.dir_lock(run),
        names.dir_lock(run / names.WORK_DIR),
        names.dir_lock(run / names.REPEATS_DIR / "*"),
    ]
    bases = [root / names.runs_root(), root / names.REGRADE_DIR / "runs"]
    return sorted(
        p for base in bases if base.is_dir() for pattern in patterns for p in base.glob(str(pattern))
    )


def held_locks(paths: Iterable[Path], proc: Path = PROC) -> tuple[Held, ...]:
    try:
        table = parse_proc_locks((proc / "locks").read_text(encoding="utf-8"))
    except OSError:
        table = {}
    found = []
    for path in paths:
        try:
            stat = path.stat()
        except OSError:
            continue
        pid = table.get((os.major(stat.st_dev), os.minor(stat.st_dev), stat.st_ino))
        if pid is not None or _held_elsewhere(path):
            found.append(Held(path, pid))
    return tuple(found)


def _held_elsewhere(path: Path) -> bool:
    """Try the lock once without waiting (shared, released at once): a holder that /proc/locks does not
    show (another machine of a shared filesystem) makes it fail."""
    try:
        with path.open("rb") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(handle, fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except OSError:
        return False
    return False


def scan(root: Path, proc: Path = PROC) -> Activity:
    """What of the workspace at `root` runs now."""
    root = root.resolve()
    locks_dir = root / names.SNAKEMAKE_LOCKS
    snakemake_locks = tuple(sorted(locks_dir.glob("*.lock"))) if locks_dir.is_dir() else ()
    return Activity(root, processes(root, proc), held_locks(lock_files(root), proc), snakemake_locks)
