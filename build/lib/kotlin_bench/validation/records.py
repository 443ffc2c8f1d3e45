"""The records of a task's validation: one per phase (`phase.json`, `PhaseRecord`) and the task's verdict
(`validation.json`, `TaskValidation`); their only reader and writer. The phases' vocabulary: `PhaseKind`,
`Problem`, the labels (`run`, `test`, `fix`, `fix-<k>`)."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core.fsutil import write_atomic

PHASE_LABEL = r"run|test|fix|fix-[1-9][0-9]*"  # a phase's label: its directory, hostname and wildcard


class PhaseKind(StrEnum):
    RUN = "run"
    TEST = "test"
    FIX = "fix"


class Problem(StrEnum):
    """Why a phase, or the task, failed validation (besides the verifier's own codes, `junit_compare`)."""

    TASK_ENV_INVALID = "task_env_invalid"
    REPO_DIR_MISSING = "repo_dir_missing"
    TEST_PATCH_FAILED = "test_patch_failed"
    FIX_PATCH_FAILED = "fix_patch_failed"
    TIMEOUT = "timeout"
    XML_REJECTED = "xml_rejected"
    ERROR = "error"
    NO_REPORTS = "no_reports"
    BUILD_FAILED = "build_failed"
    ORACLE_UNRESOLVED = "oracle_unresolved"
    NOP_RESOLVED = "nop_resolved"


class ValidationError(ValueError):
    """A phase record or verdict that cannot be read; the message names the file."""


def phase_labels(repeats: int) -> list[str]:
    """`run`, `test`, `fix`, then `fix-1` ... `fix-<repeats>`."""
    return [str(k) for k in PhaseKind] + [f"{PhaseKind.FIX}-{k}" for k in range(1, repeats + 1)]


def phase_kind(label: str) -> PhaseKind:
    """The kind of a phase label (`fix-2` is a fix run); anything else is a ValueError."""
    if not re.fullmatch(PHASE_LABEL, label):
        raise ValueError(f"phase {label!r}: expected run, test, fix or fix-<k> (k >= 1)")
    return PhaseKind(label.partition("-")[0])


# --------------------------------------------------------------------------- the records


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValidationError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(data, dict):
        raise ValidationError(f"{path}: expected a JSON object")
    return data


@dataclass
class PhaseRecord:
    """One phase of one task: `phase.json`. A phase that ran to the end has neither `problem` nor
    `error`; its statuses are in the junit.xml beside it."""

    task: str
    label: str
    problem: str | None = None  # `<code>: <detail>`: the phase stopped before its reports were collected
    error: str | None = None  # the harness or the engine failed on every try
    exit_code: int | None = None  # of the test command
    seconds: float | None = None
    hostname: str | None = None
    image_id: str | None = None
    task_digest: str | None = None
    tries: list[str] = field(default_factory=list)
    started_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    harness_version: str = HARNESS_VERSION

    @property
    def kind(self) -> PhaseKind:
        return phase_kind(self.label)

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> PhaseRecord:
        data = _read_json(path)
        missing = [k for k in ("task", "label") if k not in data]
        if missing:
            raise ValidationError(f"{path}: fields {missing} are missing")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class TaskValidation:
    """A task's verdict: `validation.json`. The derived lists are in `expected_tests.json` beside it."""

    task: str
    valid: bool
    reasons: list[str] = field(default_factory=list)  # `<phase>: <code>: <detail>`
    counts: dict[str, int] = field(default_factory=dict)  # f2p, p2p, s2p, n2p
    flaky: dict[str, dict[str, str]] = field(default_factory=dict)  # test id -> fix run -> status
    fix_runs: int = 0
    oracle_resolved: bool | None = None  # the fix runs score 1 against the derived lists
    nop_resolved: bool | None = None  # the test run scores 1 against them
    expected: str = "missing"  # equal | differs | missing | unreadable | not derived
    differences: dict[str, dict[str, list[str]]] = field(
        default_factory=dict
    )  # list -> only_derived/only_expected
    phases: dict[str, dict[str, Any]] = field(default_factory=dict)  # label -> counts, exit code, seconds
    notes: list[str] = field(default_factory=list)
    harness_version: str = HARNESS_VERSION

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n")

    @classmethod
    def read(cls, path: Path) -> TaskValidation:
        data = _read_json(path)
        if "task" not in data or "valid" not in data:
            raise ValidationError(f"{path}: fields task and valid are required")
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
