"""The record of one run: `result.json`, its statuses and reasons, its digests, and every read of it.

A run `(agent, task, attempt)` ends with `results/runs/<agent>/<task>/attempt-<k>/result.json`, written
last and atomically by the runner. This module owns that file: the `RunResult` model, the `Status`
enum, the reason vocabulary (`Reason`) and how a result's raw codes map onto it (`classify`), the
digests that tie a result to the task directory and verifier it was made with, the error record, and
the query for errored runs. Nothing else reads or writes result.json.
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

from kotlin_bench import HARNESS_VERSION, names
from kotlin_bench.fsutil import write_atomic

MAX_ERROR = 2000


class Status(StrEnum):
    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    ERROR = "error"


class RecordError(ValueError):
    """A result.json that cannot be read as a run record; the message names the file."""


class Reason(StrEnum):
    """Why a run was not resolved: the stable vocabulary of summary.csv, in order of precedence (the first
    that applies names the row)."""

    EMPTY_PATCH = "empty_patch"
    PATCH_NOT_APPLIED = "patch_not_applied"
    AGENT_TIMEOUT = "agent_timeout"
    VERIFIER_TIMEOUT = "verifier_timeout"
    DIFF_UNAVAILABLE = "diff_unavailable"
    DIFF_TOO_LARGE = "diff_too_large"
    WORK_TREE_GONE = "work_tree_gone"
    AGENT_DIFF_NOT_APPLIED = "agent_diff_not_applied"
    VERIFIER_TAMPERED = "verifier_tampered"
    TEST_PATCH_FAILED = "test_patch_failed"
    TASK_INVALID = "task_invalid"
    VERIFIER_FAILED = "verifier_failed"
    BUILD_FAILED = "build_failed"
    NO_TEST_RESULTS = "no_test_results"
    P2P_REGRESSED = "p2p_regressed"
    NO_FIXED_TEST = "no_fixed_test"
    F2P_FAILED = "f2p_failed"
    EXPECTED_MISSING = "expected_missing"
    INFRASTRUCTURE = "infrastructure"
    OTHER = "other"

    @property
    def text(self) -> str:
        return REASON_TEXT[self]


REASON_TEXT: dict[Reason, str] = {
    Reason.EMPTY_PATCH: "the agent (or its prediction) changed nothing; the verifier was skipped",
    Reason.PATCH_NOT_APPLIED: "the predicted patch did not apply to the repository; the verifier was skipped",
    Reason.AGENT_TIMEOUT: "the agent phase hit [agent].timeout_sec (the verifier still scored what it left)",
    Reason.VERIFIER_TIMEOUT: "the verifier phase hit [verifier].timeout_sec",
    Reason.DIFF_UNAVAILABLE: "the agent's work could not be captured: no usable git in its container, git failed, or capture.timeout_sec passed (see error)",
    Reason.DIFF_TOO_LARGE: "the agent's diff exceeded capture.max_diff_bytes even after leaving out large files",
    Reason.WORK_TREE_GONE: "the agent removed or replaced the repository directory itself: no work tree to verify",
    Reason.AGENT_DIFF_NOT_APPLIED: "the agent's diff did not apply in the fresh verifier container (e.g. paths outside the repository)",
    Reason.VERIFIER_TAMPERED: "the verifier's reward disagreed with the host's re-scoring of the copied-out JUnit XML",
    Reason.TEST_PATCH_FAILED: "the task's test.patch did not apply over the agent's changes; no test ran",
    Reason.TASK_INVALID: "the task's own files are unusable (expected_tests.json or task.env invalid, repo dir missing)",
    Reason.VERIFIER_FAILED: "the verifier could not read its inputs (JUnit XML rejected or unreadable, internal error)",
    Reason.BUILD_FAILED: "no JUnit results, and the test output reports a failed build or compilation",
    Reason.NO_TEST_RESULTS: "the test command produced no JUnit results (no build failure recognized in its output)",
    Reason.P2P_REGRESSED: "a test that passed before the fix fails after it",
    Reason.NO_FIXED_TEST: "no test went from failing (or absent) to passing",
    Reason.F2P_FAILED: "an expected fail-to-pass test did not pass",
    Reason.EXPECTED_MISSING: "every f2p test passed, but an expected p2p/s2p/n2p test did not pass or did not run",
    Reason.INFRASTRUCTURE: "status error: the harness or the engine failed on every retry (see reason_detail, error)",
    Reason.OTHER: "unresolved for a reason this vocabulary does not know (see reason_detail)",
}

# Raw codes (a result's `reason`, the verifier report's `reasons` up to the first ':') -> vocabulary.
RAW_CODES: dict[str, Reason] = {
    **{reason.value: reason for reason in Reason},
    "expected_invalid": Reason.TASK_INVALID,
    "expected_empty": Reason.TASK_INVALID,
    "task_env_missing": Reason.TASK_INVALID,
    "task_env_invalid": Reason.TASK_INVALID,
    "repo_dir_missing": Reason.TASK_INVALID,
    "xml_rejected": Reason.VERIFIER_FAILED,
    "xml_unreadable": Reason.VERIFIER_FAILED,
    "internal_error": Reason.VERIFIER_FAILED,
    "marker_failed": Reason.VERIFIER_FAILED,
    "leftover_processes": Reason.VERIFIER_FAILED,
    "skip_or_none_regressed": Reason.P2P_REGRESSED,
}
# Reasons the runner records for the whole run: they win over the verifier report's reasons.
RUN_LEVEL = frozenset(
    {
        Reason.EMPTY_PATCH,
        Reason.PATCH_NOT_APPLIED,
        Reason.AGENT_TIMEOUT,
        Reason.VERIFIER_TIMEOUT,
        Reason.DIFF_UNAVAILABLE,
        Reason.DIFF_TOO_LARGE,
        Reason.WORK_TREE_GONE,
        Reason.AGENT_DIFF_NOT_APPLIED,
        Reason.VERIFIER_TAMPERED,
    }
)
BUILD_FAILURE_MARKERS = ("BUILD FAILED", "COMPILATION FAILED", "Compilation error", "compilation failed")
LOG_TAIL_BYTES = 1 << 20
MAX_DETAIL = 400


# --------------------------------------------------------------------------- the record


@dataclass
class RunResult:
    """One run's result.json. `reason` is the raw code the runner recorded (classify() maps it)."""

    task: str
    repository: str
    agent: str
    kind: str
    model: str | None
    attempt: int
    reward: float | None = None
    status: Status = Status.ERROR
    reason: str | None = None
    error: str | None = None
    image: str | None = None
    image_id: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    harness_version: str = HARNESS_VERSION
    agent_timed_out: bool = False
    task_digest: str | None = None
    verifier_digest: str | None = None
    verifier: dict[str, Any] = field(default_factory=dict)
    agent_result: dict[str, Any] = field(default_factory=dict)
    tries: list[str] = field(default_factory=list)
    changed_files: list[str] = field(default_factory=list)
    flags: dict[str, list[str]] = field(default_factory=dict)
    trial_result: str | None = None
    capture: dict[str, Any] = field(default_factory=dict)

    def score(self, reward: float, reason: str | None = None) -> None:
        """Set a verdict: reward 1 is resolved, anything else unresolved with `reason`."""
        self.reward = reward
        self.status = Status.RESOLVED if reward == 1.0 else Status.UNRESOLVED
        self.reason = None if self.status is Status.RESOLVED else reason

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = str(self.status)
        return data

    def write(self, path: Path) -> None:
        """Write result.json atomically (a full disk leaves no partial file behind)."""
        write_atomic(path, json.dumps(self.to_dict(), indent=2) + "\n")

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
        return cls(**(values | {"status": status}))

    @classmethod
    def read(cls, path: Path) -> RunResult:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RecordError(f"{path}: cannot read the run record: {exc}") from None
        if not isinstance(data, dict):
            raise RecordError(f"{path}: expected a JSON object")
        return cls.from_dict(data, str(path))

    @classmethod
    def for_error(
        cls,
        base: RunResult,
        error: BaseException | str,
        reason: str | None = None,
        tries: Iterable[str] = (),
    ) -> RunResult:
        """The error record of a run that failed for good: `base` with status error, the error's type as
        its reason (unless given), its message, and every earlier try's failure."""
        base.status, base.reward = Status.ERROR, None
        base.reason = reason or (type(error).__name__ if isinstance(error, BaseException) else "error")
        base.error = str(error)[:MAX_ERROR]
        base.tries = [line for line in tries if line.strip()]
        return base


def read_status(path: Path) -> Status | None:
    """The status of a finished run (None: missing or unreadable), for progress counting."""
    try:
        return RunResult.read(path).status
    except RecordError:
        return None


def errored_results(results: Path) -> list[tuple[Path, RunResult]]:
    """The run records under `<results>/runs` whose status is error."""
    found = []
    for path in sorted((Path(results) / "runs").glob(names.RESULT_GLOB)):
        try:
            result = RunResult.read(path)
        except RecordError:
            continue
        if result.status is Status.ERROR:
            found.append((path, result))
    return found


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


# --------------------------------------------------------------------------- reasons


def _raw_code(raw: str) -> Reason:
    """`expected_missing: f2p 1 of 2` -> f2p_failed; other codes through RAW_CODES (unknown: other)."""
    code, _, rest = str(raw).partition(":")
    code = code.strip()
    if code == Reason.EXPECTED_MISSING:
        return Reason.F2P_FAILED if rest.split()[:1] == ["f2p"] else Reason.EXPECTED_MISSING
    return RAW_CODES.get(code, Reason.OTHER)


def _build_failed(run_dir: Path | None) -> bool:
    """Whether the tail of the verifier's test output reports a failed build or compilation."""
    if run_dir is None:
        return False
    return build_failed_in(run_dir / names.VERIFIER_OUT / names.TEST_OUTPUT_LOG)


def build_failed_in(log: Path) -> bool:
    """Whether the tail of a test command's output reports a failed build or compilation."""
    try:
        with log.open("rb") as stream:
            stream.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
            tail = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in tail for marker in BUILD_FAILURE_MARKERS)


def raw_reasons(result: RunResult) -> list[str]:
    """The run's own reason (when it is run-level or the verifier gave none), then the verifier's."""
    reasons = result.verifier.get("reasons")
    listed = [str(r) for r in reasons] if isinstance(reasons, list) else []
    own = result.reason
    if own and (own in RUN_LEVEL or not listed):
        listed.insert(0, str(own))
    return listed


def classify(result: RunResult, run_dir: Path | None = None) -> tuple[Reason | None, str | None]:
    """(reason, reason_detail) of a run: None for a resolved run; the raw codes go into the detail."""
    if result.status is Status.RESOLVED:
        return None, None
    raw = raw_reasons(result)
    detail = "; ".join(raw)[:MAX_DETAIL] or None
    if result.status is Status.ERROR:
        return Reason.INFRASTRUCTURE, detail
    codes = [_raw_code(r) for r in raw] or [Reason.OTHER]
    order = list(Reason)
    reason = min(codes, key=order.index)
    if reason is Reason.NO_TEST_RESULTS and _build_failed(run_dir):
        reason = Reason.BUILD_FAILED
    return reason, detail
