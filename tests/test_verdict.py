"""The verdict of a run as one pure function (`kotlin_bench.runs.verdict.verdict`): work records x verifier
outputs x the host's re-scoring, without Docker. An explicit table of what each combination that decides
something gives, then every combination for what must always hold."""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kotlin_bench.core.record import WorkRecord
from kotlin_bench.core.record_parts import (
    CategoryReport,
    EngineInfo,
    Flag,
    PatchApplied,
    Status,
    Verdict,
    VerdictError,
    VerifierReport,
)
from kotlin_bench.runs.agents import kind_named
from kotlin_bench.runs.verdict import Stamp, VerifierOutput, verdict

WORKS = Path(__file__).parent / "golden/records/works"
STAMP = Stamp(
    started_at="2026-12-07T03:00:00+00:00",
    code="c0de",
    task_digest="t" * 64,
    verifier_digest="v" * 64,
    repeat=2,
    work_sha256="w" * 64,
    image_id="sha256:" + "1" * 64,
    seconds=20.123,
)
ENGINE = EngineInfo(engine="docker 20.10.24+dfsg1", unenforced_limits=[])
OK = VerifierReport(resolved=True, valid=True, reasons=[], categories={"f2p": CategoryReport(1, 1, [])})
F2P = VerifierReport(resolved=False, valid=True, reasons=["expected_missing: f2p 1 of 1"])
NO_RESULTS = VerifierReport(resolved=False, valid=False, reasons=["no_test_results"])
TAMPERED = "reward.txt says 1 but the host's re-scoring of junit.xml says 0 (f2p a.B.c() did not pass)"

# what the verifier's container gave (None: no container ran)
OUTPUTS: dict[str, VerifierOutput | None] = {
    "none": None,
    "not-applied": VerifierOutput(ENGINE, applied=False),
    "prediction-not-applied": VerifierOutput(ENGINE, applied=False, prediction=PatchApplied(None, (), "error: patch failed")),
    "process-limit": VerifierOutput(ENGINE, seconds=3.0, process_limit=4096),
    "timed-out": VerifierOutput(ENGINE, seconds=630.0, timed_out=True),
    "resolved": VerifierOutput(ENGINE, seconds=12.5, reward=1.0, report=OK),
    "predicted-resolved": VerifierOutput(ENGINE, prediction=PatchApplied("git apply --verbose", ("crlf",)), seconds=12.5, reward=1.0, report=OK),
    "f2p-failed": VerifierOutput(ENGINE, seconds=12.5, reward=0.0, report=F2P),
    "no-results": VerifierOutput(ENGINE, seconds=2.0, reward=0.0, report=NO_RESULTS),
    "build-failed": VerifierOutput(ENGINE, seconds=2.0, reward=0.0, report=NO_RESULTS, build_failed=True),
}  # fmt: skip
# the work records a verdict is made on (a solve step that failed for good gets an error result instead)
WORK_NAMES = sorted(p.stem for p in WORKS.glob("*.json") if WorkRecord.read(p).status == "done")


def work(name: str) -> WorkRecord:
    return WorkRecord.read(WORKS / f"{name}.json")


def decide(name: str, output: str, rescoring: str | None = None):
    record = work(name)
    return verdict(record, OUTPUTS[output], rescoring, kind=kind_named(record.kind), stamp=STAMP)


@dataclass
class Row:
    work: str
    output: str
    rescoring: str | None
    reward: float | None
    reason: str | None
    detail: str | None = None
    error: str | None = None
    fresh: Verdict | None = None
    flags: tuple[Flag, ...] = ()


ROWS = [
    # our agent container's work, our verifier
    Row("oracle-captured", "resolved", None, 1.0, None),
    Row("oracle-captured", "resolved", TAMPERED, 0.0, "verifier_tampered", f"verifier_tampered: {TAMPERED}", flags=(Flag.VERIFIER,)),
    Row("nop-captured", "f2p-failed", None, 0.0, "f2p_failed", "expected_missing: f2p 1 of 1"),
    Row("nop-captured", "no-results", None, 0.0, "no_test_results", "no_test_results"),
    Row("nop-captured", "build-failed", None, 0.0, "build_failed", "no_test_results"),
    Row("nop-captured", "not-applied", None, 0.0, "agent_diff_not_applied", "agent_diff_not_applied"),
    Row("nop-captured", "process-limit", None, 0.0, "process_limit", "process_limit: in the verifier's tests (pids_limit = 4096)"),
    Row("nop-captured", "timed-out", None, 0.0, "verifier_timeout", "verifier_timeout"),
    # a predicted patch
    Row("gold-predicted", "predicted-resolved", None, 1.0, None),
    Row("gold-predicted", "prediction-not-applied", None, 0.0, "patch_not_applied", "patch_not_applied", error="error: patch failed"),
    # work that ended the run before verification: whatever a verifier would say is not asked
    Row("bad-empty-patch", "none", None, 0.0, "empty_patch", "empty_patch"),
    Row("bad-no-prediction", "none", None, 0.0, "no_prediction", "no_prediction"),
    # the agent phase ended the run: its reason first, unless the work resolved the task all the same
    Row("script-timed-out", "f2p-failed", None, 0.0, "agent_timeout", "agent_timeout; expected_missing: f2p 1 of 1"),
    Row("script-timed-out", "resolved", None, 1.0, None),
    Row("script-process-limit", "f2p-failed", None, 0.0, "process_limit", "process_limit: in the agent phase; expected_missing: f2p 1 of 1"),
    Row("script-process-limit", "timed-out", None, 0.0, "process_limit", "process_limit: in the agent phase; verifier_timeout"),
    # a Harbor trial: its verdict is the run's, ours beside it
    Row("harbor-oracle", "resolved", None, 1.0, None, fresh=Verdict(1.0)),
    Row("harbor-oracle", "f2p-failed", None, 1.0, None, fresh=Verdict(0.0, "f2p_failed", "expected_missing: f2p 1 of 1"), flags=(Flag.VERDICTS,)),
    Row("harbor-oracle", "resolved", TAMPERED, 1.0, None, fresh=Verdict(0.0, "verifier_tampered", f"verifier_tampered: {TAMPERED}"), flags=(Flag.VERIFIER, Flag.VERDICTS)),
    Row("harbor-nop", "f2p-failed", None, 0.0, "no_fixed_test", "no_fixed_test; expected_missing: f2p 3 of 3", fresh=Verdict(0.0, "f2p_failed", "expected_missing: f2p 1 of 1")),
    Row("harbor-nop", "resolved", None, 0.0, "no_fixed_test", "no_fixed_test; expected_missing: f2p 3 of 3", fresh=Verdict(1.0), flags=(Flag.VERDICTS,)),
    Row("harbor-no-capture", "none", None, 1.0, None),
    Row("harbor-timed-out", "f2p-failed", None, 0.0, "agent_timeout", "agent_timeout; agent_timeout", error="Agent execution timed out after 60.0 seconds", fresh=Verdict(0.0, "f2p_failed", "expected_missing: f2p 1 of 1")),
]  # fmt: skip


@pytest.mark.parametrize(
    "row", ROWS, ids=lambda r: f"{r.work}+{r.output}" + ("+rescored" if r.rescoring else "")
)
def test_the_verdict_of_each_deciding_combination(row: Row) -> None:
    result = decide(row.work, row.output, row.rescoring)
    expected_status = Status.RESOLVED if row.reward == 1.0 else Status.UNRESOLVED
    assert (result.reward, result.status, result.reason, result.reason_detail) == (
        row.reward,
        expected_status,
        row.reason,
        row.detail,
    )
    assert result.error == row.error
    assert result.fresh_verdict == row.fresh
    assert tuple(result.verify_flags) == row.flags


def test_a_verifier_that_did_not_look_leaves_no_engine_nor_report() -> None:
    trial = decide("harbor-no-capture", "none")
    assert trial.engine == EngineInfo() and trial.verify_timings.verifier_sec is None
    assert trial.verifier == work("harbor-no-capture").trial_verdict.verifier  # the trial's report stands
    ours = decide("harbor-oracle", "f2p-failed")
    assert ours.verifier == F2P and ours.engine == ENGINE  # beside a trial, the report is ours


def test_what_the_verification_adds_and_its_stamp() -> None:
    result = decide("gold-predicted", "predicted-resolved")
    assert result.prediction == PatchApplied("git apply --verbose", ("crlf",))
    assert result.to_dict()["capture"] == {
        "prediction": {"applier": "git apply --verbose", "normalised": ["crlf"]}
    }
    assert (result.verify_timings.verifier_sec, result.verify_timings.verify_sec) == (12.5, 20.12)
    solve = work("gold-predicted").work.timings.solve_sec or 0.0
    assert result.verify_timings.total_sec == round(solve + 20.12, 2)
    assert (result.started_at, result.code, result.repeat, result.work_sha256, result.verify_image_id) == (
        STAMP.started_at,
        STAMP.code,
        STAMP.repeat,
        STAMP.work_sha256,
        STAMP.image_id,
    )
    assert (result.task_digest, result.verifier_digest) == (STAMP.task_digest, STAMP.verifier_digest)


def test_work_with_neither_a_patch_nor_an_outcome_has_no_verdict() -> None:
    record = work("oracle-captured")
    record.diff = None
    with pytest.raises(VerdictError, match=r"oracle on examples_calc-4 \(attempt 1\) has neither a patch"):
        verdict(record, None, kind=kind_named(record.kind), stamp=STAMP)


@pytest.mark.parametrize(
    ("name", "output", "rescoring"), itertools.product(WORK_NAMES, OUTPUTS, (None, TAMPERED))
)
def test_every_combination(name: str, output: str, rescoring: str | None) -> None:
    """What holds whatever the work, the verifier's output and the re-scoring: the result is a function of
    them alone (the same twice, its inputs untouched), carries the work record's key and work as they are,
    its status follows its reward, a resolved run has no reason, a trial's verdict is the run's."""
    record = work(name)
    before = copy.deepcopy(record)
    given = OUTPUTS[output] if record.needs_verifier() else None
    kind = kind_named(record.kind)
    if given is None and record.outcome is None and record.trial_verdict is None:  # no one to decide
        with pytest.raises(VerdictError):
            verdict(record, given, rescoring, kind=kind, stamp=STAMP)
        return
    result = verdict(record, given, rescoring, kind=kind, stamp=STAMP)
    assert record == before
    assert result == verdict(record, given, rescoring, kind=kind, stamp=STAMP)
    assert result.key == record.key and result.work == record.work and result.work is not record.work
    assert result.status is (Status.RESOLVED if result.reward == 1.0 else Status.UNRESOLVED)
    if result.status is Status.RESOLVED:
        assert (result.reason, result.reason_detail) == (None, None)
    else:
        assert result.reason
    trial = record.trial_verdict
    if trial is not None and record.outcome is None:
        assert result.reward == (trial.reward or 0.0)
        assert (result.fresh_verdict is not None) == (given is not None)
    else:
        assert result.fresh_verdict is None
    if record.outcome:
        assert result.reason in (record.outcome, "agent_timeout", "process_limit")
    if given is None:
        assert (result.engine, result.prediction, result.verify_timings.verifier_sec) == (
            EngineInfo(),
            None,
            None,
        )
    back = type(result).from_dict(result.to_dict())
    assert back.to_dict() == result.to_dict()


def test_the_stamps_time_is_rounded_as_the_result_writes_it() -> None:
    result = verdict(
        work("oracle-captured"),
        OUTPUTS["resolved"],
        kind=kind_named("oracle"),
        stamp=replace(STAMP, seconds=1.005),
    )
    assert result.to_dict()["timings"]["verify_sec"] == round(1.005, 2)
