"""The reason vocabulary of unresolved runs, and how a run's raw codes are classified into it.

One vocabulary (`Reason`), one plain-language text per word (`REASON_TEXT`, also in the README), and one
classification (`classify`), applied when a run is scored: `result.json` records the word (`reason`)
and the raw codes it came from (`reason_detail`), so that every table and page reads the same word and
a summary row is a function of result.json alone. Raw codes are the runner's own (`agent_timeout`, ...)
and the verifier report's (`expected_missing: f2p 1 of 2`, `xml_rejected: ...`, see
`kotlin_bench.scoring.verifier.junit_compare`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

BUILD_FAILURE_MARKERS = ("BUILD FAILED", "COMPILATION FAILED", "Compilation error", "compilation failed")
LOG_TAIL_BYTES = 1 << 20
MAX_DETAIL = 400


class Reason(StrEnum):
    """Why a run was not resolved: the stable vocabulary of summary.csv, in order of precedence (the first
    that applies names the row)."""

    NO_PREDICTION = "no_prediction"
    EMPTY_PATCH = "empty_patch"
    PATCH_NOT_APPLIED = "patch_not_applied"
    PROCESS_LIMIT = "process_limit"
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
    NOT_RUN = "not_run"
    OTHER = "other"

    @property
    def text(self) -> str:
        return REASON_TEXT[self]


REASON_TEXT: dict[Reason, str] = {
    Reason.NO_PREDICTION: "the predictions file has no line for this task: a run of that agent, scored 0; the verifier was skipped",
    Reason.EMPTY_PATCH: "the agent (or its prediction) changed nothing; the verifier was skipped",
    Reason.PATCH_NOT_APPLIED: "the predicted patch did not apply to the repository; the verifier was skipped",
    Reason.PROCESS_LIMIT: "the agent's processes hit the container's process limit (engine.pids_limit), in the agent phase or in the verifier's tests: a fork bomb or a runaway process count",
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
    Reason.NOT_RUN: "status error: the run was not started because its agent's finished runs had cost its budget_usd (see error); not the agent's score",
    Reason.OTHER: "unresolved for a reason this vocabulary does not know (see reason_detail)",
}


class ReasonClass(StrEnum):
    """What a reason says about the run, for colours and legends: the agent's outcomes (its work did not
    pass the tests, could not be applied, was not there, hit a limit, tampered) apart from infrastructure
    (the task or the harness failed: not the agent's outcome)."""

    TESTS = "tests"
    NOT_APPLIED = "not_applied"
    NO_WORK = "no_work"
    LIMIT = "limit"
    TAMPERED = "tampered"
    INFRASTRUCTURE = "infrastructure"


CLASS_TEXT: dict[ReasonClass, str] = {
    ReasonClass.TESTS: "the agent's work ran, and the expected tests did not pass",
    ReasonClass.NOT_APPLIED: "the agent's work could not be captured or applied",
    ReasonClass.NO_WORK: "there was no work to verify",
    ReasonClass.LIMIT: "a time or process limit was hit",
    ReasonClass.TAMPERED: "the verifier's verdict was forged",
    ReasonClass.INFRASTRUCTURE: "the task or the harness failed: not the agent's outcome",
}

REASON_CLASS: dict[Reason, ReasonClass] = {
    Reason.NO_PREDICTION: ReasonClass.NO_WORK,
    Reason.EMPTY_PATCH: ReasonClass.NO_WORK,
    Reason.PATCH_NOT_APPLIED: ReasonClass.NOT_APPLIED,
    Reason.PROCESS_LIMIT: ReasonClass.LIMIT,
    Reason.AGENT_TIMEOUT: ReasonClass.LIMIT,
    Reason.VERIFIER_TIMEOUT: ReasonClass.LIMIT,
    Reason.DIFF_UNAVAILABLE: ReasonClass.NOT_APPLIED,
    Reason.DIFF_TOO_LARGE: ReasonClass.NOT_APPLIED,
    Reason.WORK_TREE_GONE: ReasonClass.NOT_APPLIED,
    Reason.AGENT_DIFF_NOT_APPLIED: ReasonClass.NOT_APPLIED,
    Reason.VERIFIER_TAMPERED: ReasonClass.TAMPERED,
    Reason.TEST_PATCH_FAILED: ReasonClass.TESTS,
    Reason.TASK_INVALID: ReasonClass.INFRASTRUCTURE,
    Reason.VERIFIER_FAILED: ReasonClass.INFRASTRUCTURE,
    Reason.BUILD_FAILED: ReasonClass.TESTS,
    Reason.NO_TEST_RESULTS: ReasonClass.TESTS,
    Reason.P2P_REGRESSED: ReasonClass.TESTS,
    Reason.NO_FIXED_TEST: ReasonClass.TESTS,
    Reason.F2P_FAILED: ReasonClass.TESTS,
    Reason.EXPECTED_MISSING: ReasonClass.TESTS,
    Reason.INFRASTRUCTURE: ReasonClass.INFRASTRUCTURE,
    Reason.NOT_RUN: ReasonClass.INFRASTRUCTURE,
    Reason.OTHER: ReasonClass.TESTS,
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
        Reason.NO_PREDICTION,
        Reason.EMPTY_PATCH,
        Reason.PATCH_NOT_APPLIED,
        Reason.PROCESS_LIMIT,
        Reason.AGENT_TIMEOUT,
        Reason.VERIFIER_TIMEOUT,
        Reason.DIFF_UNAVAILABLE,
        Reason.DIFF_TOO_LARGE,
        Reason.WORK_TREE_GONE,
        Reason.AGENT_DIFF_NOT_APPLIED,
        Reason.VERIFIER_TAMPERED,
    }
)


def _raw_code(raw: str) -> Reason:
    """`expected_missing: f2p 1 of 2` -> f2p_failed; other codes through RAW_CODES (unknown: other)."""
    code, _, rest = str(raw).partition(":")
    code = code.strip()
    if code == Reason.EXPECTED_MISSING:
        return Reason.F2P_FAILED if rest.split()[:1] == ["f2p"] else Reason.EXPECTED_MISSING
    return RAW_CODES.get(code, Reason.OTHER)


def build_failed_in(log: Path) -> bool:
    """Whether the tail of a test command's output reports a failed build or compilation."""
    try:
        with log.open("rb") as stream:
            stream.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
            tail = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in tail for marker in BUILD_FAILURE_MARKERS)


def raw_reasons(own: str | None, report_reasons: Sequence[object] | None) -> list[str]:
    """The run's own code (when it is run-level or the verifier gave none), then the verifier's."""
    listed = [str(r) for r in report_reasons] if isinstance(report_reasons, list | tuple) else []
    if own and (own.split(":", 1)[0].strip() in RUN_LEVEL or not listed):
        listed.insert(0, str(own))
    return listed


def detail_of(raw: Sequence[str]) -> str | None:
    """The raw codes as one bounded line (a result's `reason_detail`)."""
    return "; ".join(raw)[:MAX_DETAIL] or None


def classify(raw: Sequence[str], test_log: Path | None = None, *, build_failed: bool = False) -> Reason:
    """The vocabulary word of an unresolved run from its raw codes: the first in `Reason`'s order of
    precedence; `no_test_results` becomes `build_failed` when the test output reports a failed build
    (`build_failed`, or read from `test_log`)."""
    codes = [_raw_code(r) for r in raw] or [Reason.OTHER]
    order = list(Reason)
    reason = min(codes, key=order.index)
    if reason is not Reason.NO_TEST_RESULTS:
        return reason
    if build_failed or (test_log is not None and build_failed_in(test_log)):
        return Reason.BUILD_FAILED
    return reason
