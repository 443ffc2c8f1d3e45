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
`kotlin_bench.dataset.predictions.patch_candidates`), each with SWE-bench's appliers in order.
"""

from __future__ import annotations

import base64
import contextlib
import re
import shlex
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.core.record_parts import MAX_LISTED, Capture, CaptureOutcome, LeftOut, PatchApplied, Why
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine import containers

if TYPE_CHECKING:
    from docker.models.containers import Container

MIB = 1 << 20
# Files a crashed or profiled JVM (or the kernel) leaves in its working directory.
DEBRIS = ("hs_err_pid*.log", "replay_pid*.log", "*.hprof", "core", "core.[0-9]*")
CAP = names.CONTAINER_CAPTURE_DIR
PRISTINE_DIR = f"{CAP}/pristine"
MAX_RECORD_BYTES = 4 * MIB  # the left-out list and git's errors, read back from the container
MAX_MESSAGE = 2000
APPLY_TIMEOUT = 300.0


@cache
def script() -> str:
    """handoff.sh, run as `bash -c <script> handoff.sh <capture dir> <command> ...`."""
    return names.HANDOFF_SCRIPT.read_text(encoding="utf-8")


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
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"capture: unknown keys {unknown}")
        if "exclude" in values:
            values["exclude"] = tuple(str(g) for g in values["exclude"])
        limits = cls(**values)
        for key in ("max_file_bytes", "max_diff_bytes", "timeout_sec"):
            if not getattr(limits, key) > 0:
                raise ValueError(f"capture.{key} must be positive, not {getattr(limits, key)!r}")
        return limits


# --------------------------------------------------------------------------- the capture's outcomes

# The capture's record is `kotlin_bench.core.record_parts.Capture` (the work record's `capture`).
# handoff.sh capture's exit codes, what they mean for the run, and why.
EXIT_NO_BASE, EXIT_TOO_LARGE, EXIT_NO_WORK_TREE, EXIT_NO_GIT, EXIT_SETUP_FAILED = 10, 11, 12, 13, 20
OUTCOMES = {
    0: CaptureOutcome.CAPTURED,
    EXIT_TOO_LARGE: CaptureOutcome.TOO_LARGE,
    EXIT_NO_WORK_TREE: CaptureOutcome.WORK_TREE_GONE,
}
EXIT_TEXT = {
    EXIT_NO_BASE: "not even the task image's objects give the base tree",
    EXIT_TOO_LARGE: "the diff exceeds capture.max_diff_bytes = {limits.max_diff_bytes}",
    EXIT_NO_WORK_TREE: "{repo} is not a directory any more",
    EXIT_NO_GIT: "no usable git in the agent container, nor the task image's",
}
GIT_PATHS = ("/usr/bin/git", "/usr/local/bin/git")  # where task images have git


def _left_out(data: bytes, repos: Sequence[LeftOut] = ()) -> list[LeftOut]:
    """The records of CAP/out/left-out and the embedded repositories git add refused; files inside an
    embedded repository are covered by its entry."""
    fields = data.split(b"\0")
    found = list(repos)
    for i in range(0, len(fields) - 2, 3):
        why, size, path = (f.decode("utf-8", errors="surrogateescape") for f in fields[i : i + 3])
        found.append(LeftOut(path, Why(why), int(size) if size else None))
    repos = tuple(f"{x.path}/" for x in found if x.why is Why.EMBEDDED_REPOSITORY)
    return [x for x in found if x.why is Why.EMBEDDED_REPOSITORY or not x.path.startswith(repos)]


# git add's word for a new directory whose own .git has no commit: an embedded repository too.
_NO_COMMIT = re.compile(r"^error: '(?P<path>.*)/' does not have a commit checked out$")


def _errors(data: bytes) -> tuple[list[str], list[LeftOut]]:
    """git add's errors (paths it could not add), and the embedded repositories among them."""
    text = data.decode("utf-8", errors="surrogateescape")
    errors, repos = [], []
    for line in text.splitlines():
        found = _NO_COMMIT.match(line)
        if found:
            repos.append(LeftOut(found["path"], Why.EMBEDDED_REPOSITORY))
        elif line.startswith(("error:", "fatal:")):
            errors.append(line)
    return errors[:MAX_LISTED], repos


# --------------------------------------------------------------------------- capture


def capture(
    container: Container,
    task: Task,
    limits: Limits,
    diff_path: Path,
    log_path: Path,
    *,
    image: str,
    labels: dict[str, str],
) -> Capture:
    """Write the agent's work as a diff to `diff_path` (empty unless captured), git's messages to
    `log_path`. What the agent container lacks is taken from a pristine container of `image` (created
    with `labels`, never started): the objects when the agent's cannot give the base tree, the git
    binary when the agent's is gone or broken.

    Raises `containers.ContainerError` (and the engine's errors) on infrastructure failures only."""
    started = time.monotonic()
    deadline = started + limits.timeout_sec
    containers.revive(container)  # our watchdog may have killed it at a hard agent timeout
    diff_path.write_bytes(b"")
    problem = _prepare(container)
    if problem:  # e.g. the agent removed bash: its outcome, not the harness's
        return Capture(CaptureOutcome.UNAVAILABLE, seconds=time.monotonic() - started, message=problem)
    objects, git = "repository", "container"
    while True:
        store = f"{task.repo_dir}/.git/objects" if objects == "repository" else f"{PRISTINE_DIR}/objects"
        code, record = _capture_once(
            container, task, limits, diff_path, log_path, objects=store, deadline=deadline
        )
        if code == EXIT_NO_BASE and objects == "repository":
            containers.copy_from_image(
                container, image, f"{task.repo_dir}/.git/objects", PRISTINE_DIR, labels
            )
            objects = "pristine"
        elif code == EXIT_NO_GIT and git == "container" and _copy_git(container, image, labels):
            git = "pristine"
        else:
            break
    record.objects, record.git = objects, git
    record.seconds = time.monotonic() - started
    committed = diff_path.with_name(names.COMMITTED_DIFF)
    committed.unlink(missing_ok=True)
    if record.outcome is not CaptureOutcome.CAPTURED:
        diff_path.write_bytes(b"")
    else:
        data = containers.read_file(container, f"{CAP}/out/{names.COMMITTED_DIFF}", limits.max_diff_bytes)
        if data:
            committed.write_bytes(data)
            record.committed_bytes = len(data)
    record.diff_bytes = diff_path.stat().st_size
    return record


def _copy_git(container: Container, image: str, labels: dict[str, str]) -> bool:
    """The task image's git binary into CAP/pristine/bin (handoff.sh puts it first on PATH)."""
    import docker

    for path in GIT_PATHS:
        with contextlib.suppress(docker.errors.NotFound):
            containers.copy_from_image(container, image, path, f"{PRISTINE_DIR}/bin", labels)
            return True
    return False


def _capture_once(
    container: Container,
    task: Task,
    limits: Limits,
    diff_path: Path,
    log_path: Path,
    *,
    objects: str,
    deadline: float,
) -> tuple[int | None, Capture]:
    """One try of handoff.sh capture with the given object store: its exit code and record."""
    argv = _argv(
        "capture",
        task.repo_dir,
        task.base_commit,
        objects,
        str(limits.max_file_bytes),
        str(limits.max_diff_bytes),
        *limits.exclude,
    )
    left = max(1.0, deadline - time.monotonic())
    with diff_path.open("wb") as out, log_path.open("ab") as err:
        err.write(f"kotlin-bench: capture with objects {objects}\n".encode())
        done = containers.stream(
            container, argv, out, err, timeout=left, max_out=limits.max_diff_bytes, workdir="/"
        )
    if done.overflowed:
        return None, Capture(
            CaptureOutcome.TOO_LARGE, message=f"the diff exceeds {limits.max_diff_bytes} bytes"
        )
    if done.timed_out or done.exit_code is None:
        message = f"the capture took longer than capture.timeout_sec = {limits.timeout_sec:g} s"
        return None, Capture(CaptureOutcome.UNAVAILABLE, message=message)
    record = Capture(OUTCOMES.get(done.exit_code, CaptureOutcome.UNAVAILABLE))
    try:
        record.errors, repos = _errors(
            containers.read_file(container, f"{CAP}/out/errors", MAX_RECORD_BYTES) or b""
        )
        record.left_out = _left_out(
            containers.read_file(container, f"{CAP}/out/left-out", MAX_RECORD_BYTES) or b"", repos
        )
    except OSError as exc:  # more than MAX_RECORD_BYTES of paths: they are left out all the same
        record.errors.append(f"the list of paths left out is incomplete: {exc}")
    if record.outcome is not CaptureOutcome.CAPTURED:
        why = EXIT_TEXT.get(done.exit_code, f"handoff.sh capture exited with {done.exit_code}")
        record.message = f"{why} (see {log_path.name})".format(repo=task.repo_dir, limits=limits)
    return done.exit_code, record


# --------------------------------------------------------------------------- capture by a hook


HOOK_DIR = "kotlin-bench"  # under the directory a hook writes into (Harbor: /logs/artifacts)
HOOK_SCRIPT = "/tmp/kotlin-bench-handoff.sh"


def hook_command(task: Task, limits: Limits, out_dir: str) -> str:
    """A shell command that captures the agent's work inside its own container, for a runner that runs
    commands there after the agent (a Harbor trial's `[[verifier.collect]]` hook, before its verifier):
    the same handoff.sh capture, its diff, git's messages, the exit code and the left-out records
    written into `out_dir/kotlin-bench/` (`read_hook`). POSIX sh; the script travels as base64."""
    encoded = base64.b64encode(script().encode()).decode()
    out = f"{out_dir}/{HOOK_DIR}"
    argv = _argv(
        "capture",
        task.repo_dir,
        task.base_commit,
        f"{task.repo_dir}/.git/objects",
        str(limits.max_file_bytes),
        str(limits.max_diff_bytes),
        *limits.exclude,
    )[3:]  # after `bash -c <script>`: "handoff.sh", CAP, "capture", ...
    args = " ".join(shlex.quote(a) for a in argv)
    prepare = " ".join(shlex.quote(a) for a in _argv("prepare")[3:])
    run = f'bash -c "$(cat {HOOK_SCRIPT})"'
    return (
        f"mkdir -p {out} && echo {encoded} | base64 -d > {HOOK_SCRIPT} && {run} {prepare} && "
        f"{{ {run} {args} > {out}/{names.AGENT_DIFF} 2> {out}/{names.CAPTURE_LOG}; echo $? > {out}/exit_code; }}; "
        f"cp {CAP}/out/left-out {CAP}/out/errors {out}/ 2>/dev/null; true"
    )


def read_hook(hook_dir: Path, limits: Limits) -> Capture:
    """What a capture by `hook_command` left in `hook_dir` (the hook's `kotlin-bench/` directory, copied
    out by the runner): the record; `hook_dir/agent.diff` is the diff when it was captured."""
    try:
        code = int((hook_dir / "exit_code").read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return Capture(
            CaptureOutcome.UNAVAILABLE,
            message="the capture hook left no exit code (it did not run, or ran out of time)",
        )
    record = Capture(OUTCOMES.get(code, CaptureOutcome.UNAVAILABLE))
    record.errors, repos = _errors(_read(hook_dir / "errors"))
    record.left_out = _left_out(_read(hook_dir / "left-out"), repos)
    diff = hook_dir / names.AGENT_DIFF
    record.diff_bytes = diff.stat().st_size if diff.is_file() else 0
    if record.outcome is not CaptureOutcome.CAPTURED:
        why = EXIT_TEXT.get(code, f"handoff.sh capture exited with {code}")
        record.message = why.format(repo="the repository", limits=limits)
    return record


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()[:MAX_RECORD_BYTES]
    except OSError:
        return b""


# --------------------------------------------------------------------------- apply


def carries_agent_head() -> bool:
    """Whether the hand-off makes the agent's commits HEAD of the fresh verifier (`commit_head`)."""
    return "commit-head)" in script()


def _apply_step(
    container: Container, task: Task, command: str, patch: Path, log_path: Path, *, what: str
) -> containers.StreamResult:
    """handoff.sh `command` REPO BASE <patch copied in> in the verifier container, its output logged."""
    containers.copy_file_in(container, patch, CAP)
    argv = _argv(command, task.repo_dir, task.base_commit, f"{CAP}/{patch.name}")
    with log_path.open("ab") as log:
        log.write(f"kotlin-bench: {what}\n".encode())
        return containers.stream(
            container, argv, log, log, timeout=APPLY_TIMEOUT, max_out=containers.MAX_LOG_BYTES, workdir="/"
        )


def commit_head(container: Container, task: Task, committed: Path, log_path: Path) -> None:
    """After `apply_diff`: the agent's committed tree (the diff of its commits) becomes HEAD of the fresh
    verifier container, so that the test patch's paths are restored from it as the published verifier,
    running in the agent's container, restores them from the agent's HEAD."""
    done = _apply_step(
        container, task, "commit-head", committed, log_path, what="making the agent's commits HEAD"
    )
    if done.exit_code != 0 or done.timed_out:
        raise containers.ContainerError(
            f"the agent's commits could not be made HEAD in the verifier container (see {log_path.name})"
        )


def apply_diff(container: Container, task: Task, diff: Path, log_path: Path) -> bool:
    """Apply the captured diff in the fresh verifier container, whose tree is first put at the base commit
    (also for an empty diff: what the warm-up left there is the agent's to keep); False when git refuses
    it."""
    _prepared(container)
    done = _apply_step(container, task, "apply-diff", diff, log_path, what="applying the agent's diff")
    if done.exit_code is None or done.timed_out:
        raise containers.ContainerError(f"applying the agent's diff did not finish in {APPLY_TIMEOUT:g} s")
    if done.exit_code == EXIT_SETUP_FAILED:
        raise containers.ContainerError(
            f"handoff.sh could not set up git in the verifier container (see {log_path.name})"
        )
    return done.exit_code == 0


def _prepare(container: Container) -> str | None:
    """A fresh, real capture directory, whatever the agent left at its path; why not, when it fails."""
    done = container.exec_run(_argv("prepare"), workdir="/")
    if done.exit_code == 0:
        return None
    return f"cannot create {CAP} in the container: {done.output.decode(errors='replace')[-300:]}"


def _prepared(container: Container) -> None:
    problem = _prepare(container)
    if problem:
        raise containers.ContainerError(problem)


def apply_patch(
    container: Container,
    task: Task,
    candidates: Sequence[tuple[tuple[str, ...], str]],
    log_path: Path,
    timeout: float,
) -> tuple[containers.StreamResult, PatchApplied]:
    """Apply the first of the candidate patches (normalisations, text) that applies, in the agent
    container; the appliers' output goes to `log_path`."""
    _prepared(container)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for k, (_steps, text) in enumerate(candidates):
            path = Path(tmp) / f"prediction-{k}.patch"
            path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
            containers.copy_file_in(container, path, CAP)
            paths.append(f"{CAP}/{path.name}")
    argv = _argv("apply-patch", task.repo_dir, task.base_commit, *paths)
    with tempfile.TemporaryFile() as out, log_path.open("ab") as log:
        done = containers.stream(container, argv, out, log, timeout=timeout, max_out=1 * MIB, workdir="/")
        out.seek(0)
        text = out.read().decode("utf-8", errors="replace")
    if done.exit_code == EXIT_SETUP_FAILED or (done.exit_code is None and not done.timed_out):
        raise containers.ContainerError(
            f"handoff.sh could not apply the predicted patch (see {log_path.name})"
        )
    head, _, rest = text.partition("\n")
    parts = head.split("\t")
    if done.exit_code == 0 and parts[0] == "applied" and len(parts) == 3:
        with log_path.open("a", encoding="utf-8") as log:  # ends the appliers' messages (the run's page)
            log.write(f"kotlin-bench: the patch applied: candidate {parts[1]}, {parts[2]}\n")
        return done, PatchApplied(parts[2], tuple(candidates[int(parts[1])][0]))
    message = rest.strip()[-MAX_MESSAGE:] if parts[0] == "failed" else text.strip()[-MAX_MESSAGE:]
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"kotlin-bench: the patch does not apply: {message}\n")
    return done, PatchApplied(None, message=message or f"the appliers exited with {done.exit_code}")
