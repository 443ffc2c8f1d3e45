"""The typed values the run records hold (`kotlin_bench.core.record`): a run's status, its timings and
flags, the verifier's report, the capture of the agent's work (with what it left out and how a predicted
patch was applied), the engine that ran a phase, verdicts (a trial's own, ours beside it) and a model
outage an agent claimed.

Each is a dataclass written by `kotlin_bench.core.codec` as the JSON object it has always been; what a
file holds beyond the fields below (an older or a newer writer's keys) is kept in `extra` and written
back. Values that may be empty (`{}` in the file: a run verified by no container has no engine, an
unverified one no report) are `SPARSE`: their fields are None when absent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar

from kotlin_bench.core.codec import EXTRA, OMITTED_WHEN_NONE, UNWRITTEN, from_json

MAX_LISTED = 200  # paths of a capture's review (flags.left_out)


class Status(StrEnum):
    """A run's status (result.json `status`)."""

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"
    ERROR = "error"


# --------------------------------------------------------------------------- timings


@dataclass
class Timings:
    """Seconds of a run's phases (None: not timed). A Harbor trial times its environment, its agent's
    setup, its agent and its verifier, and we the setting of its agent phase's network while Harbor's
    healthcheck held the agent back (`agent_network_sec`); our agent phase its agent and the capture, the
    solve step in all; the verify step its verifier and itself; `total_sec` is solve and verify."""

    SPARSE: ClassVar[bool] = True
    environment_sec: float | None = None
    agent_network_sec: float | None = None
    agent_setup_sec: float | None = None
    agent_sec: float | None = None
    capture_sec: float | None = None
    solve_sec: float | None = None
    verifier_sec: float | None = None
    verify_sec: float | None = None
    total_sec: float | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)

    def items(self) -> list[tuple[str, Any]]:
        """The phases timed, in order (a file's own keys last)."""
        known = [(f.name, getattr(self, f.name)) for f in fields(self) if f.name != "extra"]
        return [(k, v) for k, v in known if v is not None] + list(self.extra.items())

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.items()).get(name, default)

    def __getitem__(self, name: str) -> Any:
        """A phase's seconds by name; KeyError when it was not timed."""
        return dict(self.items())[name]

    def merged(self, other: Timings) -> Timings:
        """These timings with `other`'s where it has them."""
        given = {f.name: getattr(other, f.name) for f in fields(other) if f.name != "extra"}
        return replace(
            self, **{k: v for k, v in given.items() if v is not None}, extra=self.extra | other.extra
        )


# --------------------------------------------------------------------------- flags


class Flag(StrEnum):
    """What a run's `flags` name: paths and lines for a reviewer, never a verdict by themselves."""

    INFRASTRUCTURE = "infrastructure"  # changed paths of the build or test infrastructure
    TESTS = "tests"  # changed test sources
    SUSPICIOUS = "suspicious"  # added lines that look like gaming the verifier
    OUTSIDE_REPO = "outside_repo"  # changes outside the repository
    LEFT_OUT = "left_out"  # paths the capture left out (`Capture.review`)
    RETRIEVAL = "retrieval"  # requests the retrieval rule flagged (the egress record's)
    AROUND_PROXY = "around_proxy"  # connection attempts around the proxy the phase network's fence refused
    VERIFIER = "verifier"  # the host's re-scoring overruled the container's reward
    VERDICTS = "verdicts"  # a trial's verdict and ours on the same work disagree


# A run's flags, in the order they were raised; a name outside `Flag` (an older or newer writer's) is kept
# as it was read.
Flags = dict[Flag, list[str]]


# --------------------------------------------------------------------------- the verifier's report


@dataclass
class CategoryReport:
    """One category of expected tests (f2p, p2p, s2p, n2p) in the verifier's report."""

    SPARSE: ClassVar[bool] = True
    expected: int | None = None
    landed: int | None = None
    missing: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)

    def missed(self) -> int | None:
        return None if self.expected is None or self.landed is None else self.expected - self.landed


@dataclass
class TestCounts:
    """The fix run's tests by outcome, as the verifier counted them."""

    SPARSE: ClassVar[bool] = True
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


@dataclass
class VerifierReport:
    """The verifier's report.json (`kotlin_bench.scoring.verifier.junit_compare`): resolved, valid, its
    reasons, the expected tests per category and the counts; empty (`{}`) when there is none."""

    SPARSE: ClassVar[bool] = True
    resolved: bool | None = None
    valid: bool | None = None
    reasons: list[str] | None = None
    categories: dict[str, CategoryReport] | None = None
    counts: TestCounts | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)

    def category(self, name: str) -> CategoryReport:
        return (self.categories or {}).get(name) or CategoryReport()

    @classmethod
    def read(cls, path: Path) -> VerifierReport:
        """A verifier's report.json; empty when there is none or it is not of the verifier's shape (the
        tests run the agent's code, which may have written it)."""
        try:
            report: VerifierReport = from_json(cls, json.loads(path.read_text(encoding="utf-8")), str(path))
        except (OSError, ValueError):
            return cls()
        return report


# --------------------------------------------------------------------------- the capture


class CaptureOutcome(StrEnum):
    """What the capture of the agent's work came to (`kotlin_bench.runs.handoff`)."""

    CAPTURED = "captured"
    TOO_LARGE = "too_large"  # the diff exceeds max_diff_bytes
    WORK_TREE_GONE = "work_tree_gone"  # the repository directory itself is gone
    UNAVAILABLE = "unavailable"  # no usable git, git failed, or the capture ran out of time


class Why(StrEnum):
    """Why the capture left a path out."""

    SIZE = "size"
    DEBRIS = "debris"
    EMBEDDED_REPOSITORY = "embedded_repository"


WHY_TEXT = {
    Why.SIZE: "over capture.max_file_bytes",
    Why.DEBRIS: "matches capture.exclude",
    Why.EMBEDDED_REPOSITORY: "an embedded git repository",
}


@dataclass(frozen=True)
class LeftOut:
    """A path the capture left out of the diff."""

    path: str
    why: Why
    bytes: int | None = None

    def line(self) -> str:
        size = "" if self.bytes is None else f"{self.bytes} bytes, "
        return f"{self.path} ({size}{WHY_TEXT[self.why]})"


@dataclass(frozen=True)
class PatchApplied:
    """How a predicted patch was applied (the result's `capture.prediction`): the applier that applied it
    (None: none did) and the normalisations it took; `message` (the last applier's, when none applied it)
    becomes the result's error, not part of this record."""

    applier: str | None
    normalised: tuple[str, ...] = ()
    message: str = field(default="", metadata=UNWRITTEN)


@dataclass
class Capture:
    """What the capture of the agent's work did (`kotlin_bench.runs.handoff.capture`): its outcome, whose
    objects and git it used, the sizes of its diffs, its time, what it left out and git's errors;
    `message` says why it was not captured (recorded where no error field says it: a Harbor trial's)."""

    outcome: CaptureOutcome
    objects: str = "repository"  # or "pristine": the task image's, the agent's could not give the base
    git: str = "container"  # or "pristine": the task image's binary, the agent's was gone or broken
    diff_bytes: int = 0
    committed_bytes: int = 0  # the diff of the agent's commits (names.COMMITTED_DIFF), when it committed
    seconds: float = 0.0
    left_out: list[LeftOut] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # paths git could not add, with its message
    message: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)

    def recorded(self, *, with_message: bool) -> Capture:
        """The capture as a work record keeps it: seconds to the hundredth, the message only if asked."""
        message = (self.message or None) if with_message else None
        return replace(self, seconds=round(self.seconds, 2), message=message)

    def review(self) -> list[str]:
        """One line per path left out or not added (flags.left_out)."""
        lines = [x.line() for x in self.left_out] + self.errors
        more = [f"... and {len(lines) - MAX_LISTED} more"] if len(lines) > MAX_LISTED else []
        return lines[:MAX_LISTED] + more


# --------------------------------------------------------------------------- engines, verdicts, outages


@dataclass
class EngineInfo:
    """The engine that ran a phase (`Engine.describe`) and the limits it did not enforce; empty (`{}`)
    where no phase of ours ran."""

    SPARSE: ClassVar[bool] = True
    engine: str | None = None
    unenforced_limits: list[str] | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=EXTRA)


@dataclass(frozen=True)
class Verdict:
    """A verdict on a run's work: its reward, the reason of an unresolved one (a word of
    `kotlin_bench.scoring.reasons.Reason`) and the raw codes it came from (result.json `fresh_verdict`:
    ours, beside a trial's own)."""

    reward: float | None
    reason: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class RunVerdict:
    """A run's verdict before it is a result: the reward, the reason of an unresolved run and its raw
    codes, an error message, the verifier's report, the flags its verification raised, and ours when the
    run's verdict is a trial's own (`fresh`)."""

    reward: float
    reason: str | None = None
    detail: str | None = None
    error: str | None = None
    report: VerifierReport = field(default_factory=VerifierReport)
    flags: Flags = field(default_factory=dict)
    fresh: Verdict | None = None

    @classmethod
    def scored(
        cls,
        reward: float,
        reason: str | None = None,
        detail: str | None = None,
        *,
        error: str | None = None,
        report: VerifierReport | None = None,
        flags: Flags | None = None,
    ) -> RunVerdict:
        """Reward 1 is resolved (no reason); anything else unresolved with `reason` and `detail`."""
        resolved = reward == 1.0
        return cls(
            reward,
            None if resolved else reason,
            None if resolved else detail,
            error=error,
            report=report or VerifierReport(),
            flags=flags or {},
        )

    @property
    def status(self) -> Status:
        return Status.RESOLVED if self.reward == 1.0 else Status.UNRESOLVED

    def as_verdict(self) -> Verdict:
        return Verdict(self.reward, self.reason, self.detail)


@dataclass
class TrialVerdict:
    """The verdict of a kind's own trial that verified in the agent's container (a Harbor trial; the work
    record's `harbor`): the trial's reward and status, the reason and raw codes classified in our
    vocabulary, its error, and its verifier's report."""

    reward: float | None
    status: Status
    reason: str | None = None
    detail: str | None = None
    error: str | None = None
    verifier: VerifierReport = field(default_factory=VerifierReport)


@dataclass
class ModelOutageClaim:
    """A model outage an agent claimed (a script's outage file) that the harness did not see: the claim
    (the provider's answer) and whether it was confirmed."""

    claim: str
    confirmed: bool = False


class VerdictError(RuntimeError):
    """A work record no verdict can be made on (neither a patch to verify nor an outcome)."""
