"""The records of one run: the agent's work (`work.json`) and the verdict (`result.json`), their digests,
and every read of them.

A run `(agent, task, attempt)` is solved once: its work record `results/runs/<agent>/<task>/attempt-<k>/
work/work.json` (`WorkRecord`) says what the agent did and where its captured diff is. It is verified
from that record: `results/runs/<agent>/<task>/attempt-<k>/result.json` (`RunResult`), written last and
atomically. This module owns that file: the `RunResult` model, the `Status`
enum, the digests that tie a result to the task directory and verifier it was made with, the error
record, and the query for errored runs. Nothing else reads or writes result.json. A result's `reason`
is a word of the vocabulary `kotlin_bench.scoring.reasons.Reason`, classified when the run was scored;
`reason_detail` keeps the raw codes it came from. Nothing else reads or writes work.json.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic

MAX_ERROR = 2000


class Status(StrEnum):
    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    ERROR = "error"


class RecordError(ValueError):
    """A result.json that cannot be read as a run record; the message names the file."""


# --------------------------------------------------------------------------- the agent's usage


@dataclass
class Usage:
    """What an agent's model calls cost, for every kind (None: not reported): tokens read (`input_tokens`,
    cache reads included), of those read from a prompt cache (`cache_tokens`), written (`output_tokens`),
    dollars (`cost_usd`), the number of model calls, and the agent's trajectory (ATIF JSON) relative to
    the run's work directory. Each kind fills it from its own sources (Harbor's trial result, a script's
    `$KOTLIN_BENCH_USAGE` file); the summary and the site read only this."""

    input_tokens: int | None = None
    cache_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model_calls: int | None = None
    trajectory: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def reported(self) -> bool:
        return any(v is not None for v in (self.input_tokens, self.output_tokens, self.cost_usd))


# --------------------------------------------------------------------------- the record


@dataclass
class RunResult:
    """One run's result.json: the verdict, and what the work record said of the agent's work."""

    task: str
    repository: str
    agent: str
    kind: str
    model: str | None
    attempt: int
    reward: float | None = None
    status: Status = Status.ERROR
    reason: str | None = None
    reason_detail: str | None = None
    error: str | None = None
    image: str | None = None
    image_id: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    harness_version: str = HARNESS_VERSION
    code: str | None = None  # the commit of the code that wrote the record (kotlin_bench.core.checkout)
    agent_timed_out: bool = False
    task_digest: str | None = None
    verifier_digest: str | None = None
    verifier: dict[str, Any] = field(default_factory=dict)
    agent_result: dict[str, Any] = field(default_factory=dict)  # a Harbor trial's own `agent_result`
    usage: Usage = field(default_factory=Usage)
    tries: list[str] = field(default_factory=list)
    solve_tries: int = 1  # how many times the solve step ran the agent (a model outage or a harness failure)
    changed_files: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)
    trial_result: str | None = None
    capture: dict[str, Any] = field(default_factory=dict)
    failed_step: str | None = None  # of an error: `solve` (the agent's work) or `verify` (the verdict)
    repeat: int = 1  # which verification of the run's work (`verify: {repeats: N}`)
    work_sha256: str | None = None  # the work record the verdict was made on
    # the task image the verdict was made in: `image_id` (the one the agent worked in) unless the image
    # was built again since (kotlin_bench.engine.retention)
    verify_image_id: str | None = None
    # A kind whose trial verifies in the agent's container (Harbor): the verdict above is the trial's
    # (the published protocol); ours, on the captured work in a fresh container, is kept here.
    fresh_verdict: dict[str, Any] | None = None
    engine: dict[str, Any] = field(default_factory=dict)  # the verifier's engine, and what it did not limit
    # the agent phase's egress record as the work record summarises it (`EgressSummary`); None: no proxy
    egress: dict[str, Any] | None = None

    def score(self, reward: float, reason: str | None = None, detail: str | None = None) -> None:
        """Set a verdict: reward 1 is resolved, anything else unresolved with `reason` (a vocabulary
        word) and `detail` (the raw codes)."""
        self.reward = reward
        self.status = Status.RESOLVED if reward == 1.0 else Status.UNRESOLVED
        resolved = self.status is Status.RESOLVED
        self.reason = None if resolved else reason
        self.reason_detail = None if resolved else detail

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        return data

    def write(self, path: Path) -> None:
        """Write result.json atomically (a full disk leaves no partial file behind)."""
        _write_json(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<result>") -> RunResult:
        try:
            status = Status(data.get("status"))
        except ValueError:
            raise RecordError(
                f"{source}: status {data.get('status')!r} is not one of {', '.join(s.value for s in Status)}"
            ) from None
        known = {f.name for f in fields(cls)}
        missing = [k for k in ("task", "agent", "kind", "attempt") if k not in data]
        if missing:
            raise RecordError(f"{source}: fields {missing} are missing")
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("repository", "")
        values.setdefault("model", None)
        values["usage"] = Usage.from_dict(values.get("usage"))
        return cls(**(values | {"status": status}))

    @classmethod
    def read(cls, path: Path) -> RunResult:
        return cls.from_dict(_read_json(path, "run record"), str(path))

    @classmethod
    def for_error(
        cls,
        base: RunResult,
        error: BaseException | str,
        reason: str,
        tries: Iterable[str] = (),
    ) -> RunResult:
        """The error record of a run that failed for good: `base` with status error, `reason` (a
        vocabulary word), the error's type as the detail, its message, and every earlier try's failure."""
        base.status, base.reward = Status.ERROR, None
        base.reason = reason
        base.reason_detail = type(error).__name__ if isinstance(error, BaseException) else None
        base.error = str(error)[:MAX_ERROR]
        base.tries = [line for line in tries if line.strip()]
        return base


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: cannot read the {what}: {exc}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


# --------------------------------------------------------------------------- the work record


class PatchKind(StrEnum):
    """What the work's patch file holds, and so how the verifier applies it."""

    CAPTURED = "captured"  # a diff taken from the agent's container by the hand-off: applied as is
    PREDICTED = "predicted"  # a patch from a predictions file: applied as given, then normalised


class WorkStatus(StrEnum):
    DONE = "done"  # the agent phase ran and its work was taken (or it says why there is none)
    ERROR = "error"  # the harness or the engine failed on every try: there is no work to verify


@dataclass
class EgressSummary:
    """The agent phase's egress record in the work record (kotlin_bench.engine.egress): how it was recorded
    (`urls`: every request; `hosts`: the host-only proxy, no record), its requests, bytes, refused
    requests (hosts not allowed), requests refused as retrieval (`blocked`), and the URLs the retrieval
    rule flagged (`flags.retrieval` lists the same)."""

    record: str
    requests: int = 0
    bytes: int = 0
    refused: int = 0
    blocked: int = 0
    retrieval: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EgressSummary:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class WorkRecord:
    """One solve step's work.json: what the agent did, and where its work is.

    `outcome` is None when the captured diff (`diff`, beside work.json) is to be verified; otherwise it is
    the vocabulary word that ends the run without a verifier (`empty_patch`, `patch_not_applied`,
    `diff_too_large`, `work_tree_gone`, `diff_unavailable`), with `error` saying what happened.
    `harbor` holds a Harbor trial's own verdict (`reward`, `reason`, `detail`, `error`, `verifier`)."""

    task: str
    repository: str
    agent: str
    kind: str
    model: str | None
    attempt: int
    status: WorkStatus = WorkStatus.DONE
    outcome: str | None = None
    error: str | None = None
    tries: list[str] = field(default_factory=list)
    image: str | None = None
    image_id: str | None = None
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    harness_version: str = HARNESS_VERSION
    code: str | None = None  # the commit of the code that wrote the record (kotlin_bench.core.checkout)
    agent_exit_code: int | None = None
    agent_timed_out: bool = False
    agent_process_limit: bool = False  # a fork was refused at the container's process limit
    engine: dict[str, Any] = field(
        default_factory=dict
    )  # the agent phase's engine, and what it did not limit
    timings: dict[str, float] = field(default_factory=dict)
    agent_result: dict[str, Any] = field(default_factory=dict)  # a Harbor trial's own `agent_result`
    usage: Usage = field(default_factory=Usage)
    solve_tries: int = 1
    # a model outage the agent claimed (a script's outage file) and whether the harness saw it
    model_outage: dict[str, Any] | None = None
    capture: dict[str, Any] = field(default_factory=dict)
    changed_files: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)
    diff: str | None = None  # the patch's file name (beside work.json); None: nothing to verify
    diff_sha256: str | None = None
    # the diff of the agent's commits (beside work.json; names.COMMITTED_DIFF), when its HEAD moved
    committed: str | None = None
    patch: PatchKind = PatchKind.CAPTURED
    trial_result: str | None = None  # a Harbor trial's result.json, relative to the work directory
    harbor: dict[str, Any] | None = None
    # sha256 of each materialized task file the agent phase read (instruction.md; the oracle's
    # fix.patch): materialization never redoes work by itself, so what changed since is named instead
    inputs: dict[str, str] = field(default_factory=dict)
    egress: EgressSummary | None = None  # None: the agent phase had no proxy (no allowlist, or no image)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"], data["patch"] = str(self.status), str(self.patch)
        return data

    def write(self, path: Path) -> None:
        """Write work.json atomically, last of the work directory's files."""
        _write_json(path, self.to_dict())

    @classmethod
    def read(cls, path: Path) -> WorkRecord:
        data = _read_json(path, "work record")
        try:
            status = WorkStatus(data.get("status"))
        except ValueError:
            raise RecordError(f"{path}: status {data.get('status')!r} is not done or error") from None
        missing = [k for k in ("task", "agent", "kind", "attempt") if k not in data]
        if missing:
            raise RecordError(f"{path}: fields {missing} are missing")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        values.setdefault("repository", "")
        values.setdefault("model", None)
        values["usage"] = Usage.from_dict(values.get("usage"))
        try:
            patch = PatchKind(values.pop("patch", PatchKind.CAPTURED))
        except ValueError:
            raise RecordError(f"{path}: patch {data.get('patch')!r} is not captured or predicted") from None
        egress = values.pop("egress", None)
        summary = EgressSummary.from_dict(egress) if isinstance(egress, dict) else None
        return cls(**(values | {"status": status, "patch": patch, "egress": summary}))


# --------------------------------------------------------------------------- results of 0.2

# A 0.2 run directory (one step did both solving and scoring) holds the agent's files beside result.json.
LEGACY_FILES = (names.AGENT_DIFF, names.AGENT_LOG, names.CAPTURE_LOG, names.PROXY_LOG, names.HARBOR_DIR)


def is_legacy(run_dir: Path) -> bool:
    """A 0.2 run directory: a result, the agent's files beside it, and no work record."""
    return (
        (run_dir / names.RESULT_FILE).is_file()
        and not (run_dir / names.WORK_DIR / names.WORK_FILE).exists()
        and any((run_dir / name).exists() for name in LEGACY_FILES)
    )


def legacy_runs(result_paths: Iterable[str | Path]) -> list[Path]:
    """The run directories among those of `result_paths` that still have the 0.2 layout."""
    return [Path(p).parent for p in result_paths if is_legacy(Path(p).parent)]


def read_status(path: Path) -> Status | None:
    """The status of a finished run (None: missing or unreadable), for progress counting."""
    try:
        return RunResult.read(path).status
    except RecordError:
        return None


def errored_results(results: Path) -> list[tuple[Path, RunResult]]:
    """The run records (verdicts and repeated verifications) under `<results>/runs` whose status is error."""
    found = []
    runs = Path(results) / "runs"
    for path in sorted([*runs.glob(names.RESULT_GLOB), *runs.glob(names.REPEAT_GLOB)]):
        try:
            result = RunResult.read(path)
        except RecordError:
            continue
        if result.status is Status.ERROR:
            found.append((path, result))
    return found


def failed_step_outputs(path: Path, result: RunResult) -> list[Path]:
    """What to delete so that exactly the failed step of an errored run is redone: the verification's
    result.json for step `verify` (the agent's work is kept), the work record too for step `solve`."""
    if result.failed_step == "solve":
        run_dir = path.parent if result.repeat == 1 else path.parents[2]
        return [run_dir / names.WORK_DIR / names.WORK_FILE, path]
    return [path]


# --------------------------------------------------------------------------- digests


def _digest(root: Path, paths: Iterable[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def task_digest(task_dir: Path) -> str:
    """sha256 over every file of the task directory (paths and contents)."""
    return _digest(task_dir, (p for p in task_dir.rglob("*") if p.is_file()))


def verifier_digest(task_dir: Path) -> str:
    """sha256 over the verifier scripts a run of the task uses (test.sh, collector, junit_compare)."""
    tests = task_dir / "tests"
    return _digest(tests, (p for p in tests.iterdir() if p.is_file() and p.suffix in (".sh", ".py")))


def digests(task_dir: Path) -> tuple[str | None, str | None]:
    """(task digest, verifier digest); (None, None) when the directory cannot be read."""
    try:
        return task_digest(task_dir), verifier_digest(task_dir)
    except OSError:
        return None, None


def digest_problems(result: RunResult, task_id: str, task_dir: Path) -> list[str]:
    """Why `result` is not a result of the task directory as it is now (empty: it is)."""
    problems = []
    if result.task != task_id:
        problems.append(f"result is for task {result.task!r}, not {task_id!r}")
    for key, current in (
        ("task_digest", task_digest(task_dir)),
        ("verifier_digest", verifier_digest(task_dir)),
    ):
        recorded = getattr(result, key)
        if not recorded:
            problems.append(f"{key} is missing (written by an older harness?)")
        elif recorded != current:
            problems.append(f"{key} {str(recorded)[:12]} differs from the task directory's {current[:12]}")
    return problems
