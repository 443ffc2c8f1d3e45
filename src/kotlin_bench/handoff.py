"""The hand-off: how an agent's work crosses from its container into the fresh verifier container.

The agent's work is one binary git diff against the base commit, taken in the agent container and
applied in a fresh container of the pristine task image. Both ends run `handoff.sh` (beside this module,
the one source of the hermetic git they share) under `env -i`, with a private git directory, its own
configuration and attributes, and a private index, so nothing the agent did to git (configuration,
attributes, hooks, aliases, environment, its index, HEAD or rebase/merge state) changes what is taken
or applied; the agent's object store is only read for the base tree, and when it cannot give it (.git
deleted or corrupted) a pristine copy of the task image's objects is streamed in.

Limits (`capture:` in config.yaml, `Limits`): work-tree files over `max_file_bytes` and untracked debris
(`exclude`: heap dumps, JVM crash logs, core dumps) are left out of the diff and listed in the result;
so are embedded git repositories. The diff streams to the run directory, bounded by `max_diff_bytes`
(more is `diff_too_large`, a result), and the capture has `timeout_sec`.

Predicted patches are applied by the same script: the patch as given and then normalised (see
`kotlin_bench.predictions.patch_candidates`), each with SWE-bench's appliers in order.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench import containers, names
from kotlin_bench.tasks import Task

if TYPE_CHECKING:
    from docker.models.containers import Container

MIB = 1 << 20
# Files a crashed or profiled JVM (or the kernel) leaves in its working directory.
DEBRIS = ("hs_err_pid*.log", "replay_pid*.log", "*.hprof", "core", "core.[0-9]*")
CAP = names.CONTAINER_CAPTURE_DIR
PRISTINE_DIR = f"{CAP}/pristine"
MAX_RECORD_BYTES = 4 * MIB  # the left-out list and git's errors, read back from the container
MAX_LISTED = 200
MAX_MESSAGE = 2000
APPLY_TIMEOUT = 300.0


@cache
def script() -> str:
    """handoff.sh, run as `bash -c <script> handoff.sh <capture dir> <command> ...`."""
    return Path(__file__).with_name("handoff.sh").read_text(encoding="utf-8")


def _argv(command: str, *args: str) -> list[str]:
    return ["bash", "-c", script(), "handoff.sh", CAP, command, *args]


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    """The capture's limits: config.yaml `capture:` (each key optional)."""

    max_file_bytes: int = 10 * MIB
    max_diff_bytes: int = 100 * MIB
    exclude: tuple[str, ...] = DEBRIS
    timeout_sec: float = 120.0

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None) -> Limits:
        values = dict(section or {})
        unknown = sorted(set(values) - {f for f in cls.__dataclass_fields__})
        if unknown:
            raise ValueError(f"capture: unknown keys {unknown}")
        if "exclude" in values:
            values["exclude"] = tuple(str(g) for g in values["exclude"])
        limits = cls(**values)
        for key in ("max_file_bytes", "max_diff_bytes", "timeout_sec"):
            if not getattr(limits, key) > 0:
                raise ValueError(f"capture.{key} must be positive, not {getattr(limits, key)!r}")
        return limits

    def to_config(self) -> dict[str, Any]:
        return asdict(self) | {"exclude": list(self.exclude)}


# --------------------------------------------------------------------------- the capture's record


class Outcome(StrEnum):
    CAPTURED = "captured"
    TOO_LARGE = "too_large"  # the diff exceeds max_diff_bytes
    WORK_TREE_GONE = "work_tree_gone"  # the repository directory itself is gone
    UNAVAILABLE = "unavailable"  # no usable git, git failed, or the capture ran out of time


class Why(StrEnum):
    SIZE = "size"
    DEBRIS = "debris"
    EMBEDDED_REPOSITORY = "embedded_repository"


WHY_TEXT = {
    Why.SIZE: "over capture.max_file_bytes",
    Why.DEBRIS: "matches capture.exclude",
    Why.EMBEDDED_REPOSITORY: "an embedded git repository",
}

# handoff.sh capture's exit codes.
EXIT_NO_BASE, EXIT_TOO_LARGE, EXIT_NO_WORK_TREE = 10, 11, 12


@dataclass(frozen=True)
class LeftOut:
    path: str
    why: Why
    bytes: int | None = None

    def line(self) -> str:
        size = "" if self.bytes is None else f"{self.bytes} bytes, "
        return f"{self.path} ({size}{WHY_TEXT[self.why]})"


@dataclass
class Capture:
    """What the capture did: result.json `capture` (`to_record`)."""

    outcome: Outcome
    objects: str = "repository"  # or "pristine": the task image's, the agent's could not give the base
    diff_bytes: int = 0
    seconds: float = 0.0
    left_out: list[LeftOut] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # paths git could not add, with its message
    message: str = ""  # why it was not captured (result.error)

    def to_record(self) -> dict[str, Any]:
        return {
            "outcome": str(self.outcome),
            "objects": self.objects,
            "diff_bytes": self.diff_bytes,
            "seconds": round(self.seconds, 2),
            "left_out": [{"path": x.path, "why": str(x.why), "bytes": x.bytes} for x in self.left_out],
            "errors": self.errors,
        }

    def review(self) -> list[str]:
        """One line per path left out or not added (flags.left_out)."""
        lines = [x.line() for x in self.left_out] + self.errors
        return lines[:MAX_LISTED] + ([f"... and {len(lines) - MAX_LISTED} more"] if len(lines) > MAX_LISTED else [])


def _left_out(data: bytes) -> list[LeftOut]:
    fields = data.split(b"\0")
    found = []
    for i in range(0, len(fields) - 2, 3):
        why, size, path = (f.decode("utf-8", errors="surrogateescape") for f in fields[i : i + 3])
        found.append(LeftOut(path, Why(why), int(size) if size else None))
    return found


def _errors(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if line.startswith(("error:", "fatal:"))][:MAX_LISTED]


# --------------------------------------------------------------------------- capture


def capture(
    container: Container,
    task: Task,
    limits: Limits,
    diff_path: Path,
    log_path: Path,
    image: str,
    labels: dict[str, str],
) -> Capture:
    """Write the agent's work as a diff to `diff_path` (empty unless captured), git's messages to
    `log_path`; `image` and `labels` make the pristine container the objects come from when needed.

    Raises `containers.ContainerError` (and the engine's errors) on infrastructure failures only."""
    started = time.monotonic()
    containers.revive(container)  # our watchdog may have killed it at a hard agent timeout
    _prepare(container)
    record = _capture_once(container, task, limits, diff_path, log_path, f"{task.repo_dir}/.git/objects")
    if record is None:  # the agent's objects cannot give the base tree: the task image's can
        containers.copy_from_image(container, image, f"{task.repo_dir}/.git/objects", PRISTINE_DIR, labels)
        record = _capture_once(container, task, limits, diff_path, log_path, f"{PRISTINE_DIR}/objects")
        if record is None:
            record = Capture(Outcome.UNAVAILABLE, message="not even the pristine objects give the base tree")
        record.objects = "pristine"
    record.seconds = time.monotonic() - started
    if record.outcome is not Outcome.CAPTURED:
        diff_path.write_bytes(b"")
    record.diff_bytes = diff_path.stat().st_size
    return record


def _capture_once(
    container: Container, task: Task, limits: Limits, diff_path: Path, log_path: Path, objects: str
) -> Capture | None:
    """One capture with the given object store; None when it does not hold the base tree."""
    argv = _argv(
        "capture",
        task.repo_dir,
        task.base_commit,
        objects,
        str(limits.max_file_bytes),
        str(limits.max_diff_bytes),
        *limits.exclude,
    )
    with diff_path.open("wb") as out, log_path.open("ab") as err:
        err.write(f"capture: objects {objects}\n".encode())
        done = containers.stream(container, argv, out, err, limits.timeout_sec, limits.max_diff_bytes)
    if done.overflowed:
        return Capture(Outcome.TOO_LARGE, message=f"the diff exceeds {limits.max_diff_bytes} bytes")
    if done.timed_out or done.exit_code is None:
        return Capture(Outcome.UNAVAILABLE, message=f"the capture took longer than {limits.timeout_sec:g} s")
    if done.exit_code == EXIT_NO_BASE:
        return None
    record = Capture(Outcome.CAPTURED)
    try:
        record.left_out = _left_out(
            containers.read_file(container, f"{CAP}/out/left-out", MAX_RECORD_BYTES) or b""
        )
        record.errors = _errors(containers.read_file(container, f"{CAP}/out/errors", MAX_RECORD_BYTES) or b"")
    except OSError as exc:  # more than MAX_RECORD_BYTES of paths: they are left out all the same
        record.errors.append(f"the list of paths left out is incomplete: {exc}")
    if done.exit_code == EXIT_TOO_LARGE:
        record.outcome = Outcome.TOO_LARGE
        record.message = f"the diff exceeds capture.max_diff_bytes = {limits.max_diff_bytes}"
    elif done.exit_code == EXIT_NO_WORK_TREE:
        record.outcome = Outcome.WORK_TREE_GONE
        record.message = f"{task.repo_dir} is not a directory any more"
    elif done.exit_code != 0:
        record.outcome = Outcome.UNAVAILABLE
        record.message = f"handoff.sh capture exited with {done.exit_code} (see {log_path.name})"
    return record


# --------------------------------------------------------------------------- apply


def apply_diff(container: Container, task: Task, diff: Path, log_path: Path) -> bool:
    """Apply the captured diff in the fresh verifier container; False when git refuses it."""
    if diff.stat().st_size == 0:
        return True
    _prepare(container)
    containers.copy_file_in(container, diff, CAP)
    argv = _argv("apply-diff", task.repo_dir, task.base_commit, f"{CAP}/{diff.name}")
    with log_path.open("ab") as log:
        log.write(b"kotlin-bench: applying the agent's diff\n")
        done = containers.stream(container, argv, log, log, APPLY_TIMEOUT, containers.MAX_LOG_BYTES)
    if done.exit_code is None:
        raise containers.ContainerError(f"applying the agent's diff did not finish in {APPLY_TIMEOUT:g} s")
    return done.exit_code == 0


def _prepare(container: Container) -> None:
    """A fresh, real capture directory, whatever the agent left at its path."""
    done = container.exec_run(_argv("prepare"))
    if done.exit_code != 0:
        raise containers.ContainerError(f"cannot create {CAP} in the container: {done.output[-300:]!r}")


@dataclass(frozen=True)
class PatchApplied:
    """How a predicted patch was applied: result.json `capture.prediction`."""

    applier: str | None  # None: no applier applied it
    normalised: tuple[str, ...] = ()
    message: str = ""  # the last applier's message when none applied it (result.error)

    def to_record(self) -> dict[str, Any]:
        return {"applier": self.applier, "normalised": list(self.normalised)}


def apply_patch(
    container: Container,
    task: Task,
    candidates: Sequence[tuple[tuple[str, ...], str]],
    log_path: Path,
    timeout: float,
) -> tuple[containers.StreamResult, PatchApplied]:
    """Apply the first of the candidate patches (normalisations, text) that applies, in the agent
    container; the appliers' output goes to `log_path`."""
    _prepare(container)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, (_steps, text) in enumerate(candidates):
            path = Path(tmp) / f"prediction-{k}.patch"
            path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
            containers.copy_file_in(container, path, CAP)
            paths.append(f"{CAP}/{path.name}")
    argv = _argv("apply-patch", task.repo_dir, task.base_commit, *paths)
    with tempfile.TemporaryFile() as out, log_path.open("ab") as log:
        done = containers.stream(container, argv, out, log, timeout, 1 * MIB)
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    head, _, rest = text.partition("\n")
    parts = head.split("\t")
    if done.exit_code == 0 and parts[0] == "applied" and len(parts) == 3:
        return done, PatchApplied(parts[2], tuple(candidates[int(parts[1])][0]))
    message = rest.strip()[-MAX_MESSAGE:] if parts[0] == "failed" else text.strip()[-MAX_MESSAGE:]
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"kotlin-bench: the patch does not apply: {message}\n")
    return done, PatchApplied(None, message=message or f"the appliers exited with {done.exit_code}")
