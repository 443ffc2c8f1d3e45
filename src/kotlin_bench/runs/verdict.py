"""The verdict of a run: one pure function of its work record, the verifier's output and the host's
re-scoring, that returns the finished result (`verdict`). The verify step (`kotlin_bench.runs.verify`)
runs the verifier's container, collects what it gave (`VerifierOutput`), calls this and writes the result;
nothing here reads a file or starts a container.

`verdict`, top to bottom:

1. `our_verdict`: what a verifier of ours says of the work. Work that ended the run before verification
   (its `outcome`: an empty or unappliable prediction, a capture that failed because of what the agent
   did) scores 0 with that reason. Otherwise the verifier's output: a patch that did not apply; tests that
   filled the container's process table (the agent's code did: `process_limit`) or ran out of time; the
   reward, unless the host's re-scoring of the JUnit XML does not confirm a 1 (then 0, `verifier_tampered`,
   flagged). The reason of an unresolved run is classified here, once
   (`kotlin_bench.scoring.reasons.classify`), and kept with its raw codes. None when no verifier of ours
   looked at the work (a trial that verified in the agent's container, whose capture failed).
2. `kind.verdict(work, ours)`: the run's verdict, by its agent kind (`AgentKind.verdict`): ours; a kind
   whose own trial verified in the agent's container (Harbor) keeps the trial's verdict as the run's (the
   published protocol) and ours beside it (`fresh_verdict`, flagged when they disagree).
3. `ended_by_the_agent`: an unresolved run whose agent phase hit the container's process limit or timed
   out has that as its reason, the verifier's codes after it.
4. The result: the work record's key and work as they are, the verdict, what the verification adds (the
   verifier's time, its flags, how a predicted patch was applied) and the verification's own stamp
   (`Stamp`: when, by which code, on which image, which repeat of which work record, how long).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kotlin_bench.core.record import PatchKind, RunResult, WorkRecord
from kotlin_bench.core.record_parts import (
    EngineInfo,
    Flag,
    PatchApplied,
    RunVerdict,
    Timings,
    VerifierReport,
)
from kotlin_bench.scoring.reasons import Reason, classify, detail_of, raw_reasons

if TYPE_CHECKING:
    from kotlin_bench.runs.agents.base import AgentKind


@dataclass(frozen=True)
class VerifierOutput:
    """What the verifier's container gave for the work (`kotlin_bench.runs.verify` collects it): the
    engine it ran on, whether the work's patch applied (and how a predicted one was applied), the tests'
    seconds (None: they did not run), the container's process limit when the tests filled it, whether they
    timed out, the reward (reward.txt), the report (report.json) and whether the test output reports a
    failed build."""

    engine: EngineInfo
    applied: bool = True
    prediction: PatchApplied | None = None
    seconds: float | None = None
    process_limit: int | None = None
    timed_out: bool = False
    reward: float | None = None
    report: VerifierReport = field(default_factory=VerifierReport)
    build_failed: bool = False


@dataclass(frozen=True, kw_only=True)
class Stamp:
    """What a verification records of itself: when it started, the commit of the code that made it, the
    task directory's and the verifier's digests, which verification of the work it is, of which work record
    (its sha256), in which task image, and how long the verify step took."""

    started_at: str
    code: str | None
    task_digest: str | None
    verifier_digest: str | None
    repeat: int = 1
    work_sha256: str | None = None
    image_id: str | None = None
    seconds: float = 0.0


def verdict(
    work: WorkRecord,
    output: VerifierOutput | None,
    rescoring: str | None = None,
    *,
    kind: AgentKind,
    stamp: Stamp,
) -> RunResult:
    """The result of verifying `work`: `output` is what the verifier's container gave (None: no container
    ran), `rescoring` why the host's re-scoring does not confirm a reward of 1 (None: it does, or there
    was none to confirm), `kind` the work's agent kind."""
    ours = our_verdict(work, output, rescoring)
    decided = ended_by_the_agent(work, kind.verdict(work, ours))
    ran = output is not None
    timings = Timings(
        verifier_sec=output.seconds if ran else None,
        verify_sec=round(stamp.seconds, 2),
    )
    timings.total_sec = round((work.work.timings.solve_sec or 0.0) + (timings.verify_sec or 0.0), 2)
    return _on_the_work(
        work,
        stamp,
        reward=decided.reward,
        status=decided.status,
        reason=decided.reason,
        reason_detail=decided.detail,
        error=decided.error,
        verifier=decided.report,
        fresh_verdict=decided.fresh,
        engine=output.engine if ran else EngineInfo(),
        verify_timings=timings,
        verify_flags=dict(decided.flags),
        prediction=output.prediction if ran else None,
    )


def _on_the_work(work: WorkRecord, stamp: Stamp, **fields: Any) -> RunResult:
    """A result on the work record's key and work (a copy: the result never shares the work's values),
    with the verification's stamp and `fields`."""
    return RunResult(
        work.key,
        work=copy.deepcopy(work.work),
        started_at=stamp.started_at,
        code=stamp.code,
        task_digest=stamp.task_digest,
        verifier_digest=stamp.verifier_digest,
        repeat=stamp.repeat,
        work_sha256=stamp.work_sha256,
        verify_image_id=stamp.image_id,
        **fields,
    )


def our_verdict(work: WorkRecord, output: VerifierOutput | None, rescoring: str | None) -> RunVerdict | None:
    """What a verifier of ours says of the work (None: none looked at it)."""
    if work.outcome:
        return RunVerdict.scored(0.0, work.outcome, work.outcome, error=work.error)
    if output is None:
        return None
    if not output.applied:
        if work.patch is PatchKind.PREDICTED:
            message = output.prediction.message if output.prediction else ""
            return RunVerdict.scored(
                0.0, Reason.PATCH_NOT_APPLIED, Reason.PATCH_NOT_APPLIED, error=message or None
            )
        return RunVerdict.scored(0.0, Reason.AGENT_DIFF_NOT_APPLIED, Reason.AGENT_DIFF_NOT_APPLIED)
    if output.process_limit is not None:
        detail = f"{Reason.PROCESS_LIMIT}: in the verifier's tests (pids_limit = {output.process_limit})"
        return RunVerdict.scored(0.0, Reason.PROCESS_LIMIT, detail)
    if output.timed_out:
        return RunVerdict.scored(0.0, Reason.VERIFIER_TIMEOUT, Reason.VERIFIER_TIMEOUT)
    reward, own, flags = output.reward, None, {}
    if rescoring:
        reward, own, flags = 0.0, f"{Reason.VERIFIER_TAMPERED}: {rescoring}", {Flag.VERIFIER: [rescoring]}
    raw = raw_reasons(own, output.report.reasons)
    if reward == 1.0:
        return RunVerdict.scored(1.0, report=output.report, flags=flags)
    reason = classify(raw, build_failed=output.build_failed)
    return RunVerdict.scored(0.0, reason, detail_of(raw), report=output.report, flags=flags)


def ended_by_the_agent(work: WorkRecord, decided: RunVerdict) -> RunVerdict:
    """An unresolved run whose agent phase ended it (the process limit, a timeout): that is its reason,
    the verifier's codes follow."""
    if decided.reward == 1.0:
        return decided
    if work.agent_process_limit:
        code = f"{Reason.PROCESS_LIMIT}: in the agent phase"
    elif work.work.agent_timed_out:
        code = str(Reason.AGENT_TIMEOUT)
    else:
        return decided
    earlier = [c for c in (decided.detail or "").split("; ") if c]
    return replace(decided, reason=code.split(":", 1)[0], detail=detail_of([code, *earlier]))


def error_result(
    work: WorkRecord,
    error: BaseException | str,
    *,
    reason: str,
    failed_step: str,
    stamp: Stamp,
    tries: list[str] | tuple[str, ...] = (),
) -> RunResult:
    """The error result of a run whose step failed for good: the work record's key and work, no verdict."""
    result = _on_the_work(work, stamp, failed_step=failed_step)
    return RunResult.for_error(result, error, reason, tries)
