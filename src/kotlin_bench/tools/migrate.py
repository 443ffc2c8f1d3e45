"""`kotlin-bench migrate`: results written before solving and verifying were separate steps (0.2) into
today's layout, once, without running any agent.

A 0.2 run directory holds result.json beside the agent's files (agent.diff, agent.log, capture.log,
proxy.log, harbor/). Migration moves those into `work/`, writes the work record they make
(`work/work.json`, older than the result so that nothing looks newer than it), and records the result's
reason as a word of today's vocabulary with the raw codes beside it. The DAG refuses to start while a
0.2 run directory is left (`kotlin_bench.core.record.legacy_runs`), so that no agent's work is redone by mistake; after migration
the next `snakemake` verifies those runs again from their kept work (a regrade), and solves nothing.
"""

from __future__ import annotations

import copy
import os
import shutil
from dataclasses import replace
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import (
    LEGACY_FILES,
    RecordError,
    RunResult,
    Status,
    WorkRecord,
    WorkStatus,
    legacy_runs,
)
from kotlin_bench.core.record_parts import Flag, Timings, TrialVerdict
from kotlin_bench.scoring.reasons import Reason, classify, detail_of, raw_reasons

# 0.2 reasons that ended a run before verification: they are the work's outcome now
OUTCOMES = frozenset(
    {
        Reason.EMPTY_PATCH,
        Reason.PATCH_NOT_APPLIED,
        Reason.DIFF_TOO_LARGE,
        Reason.WORK_TREE_GONE,
        Reason.DIFF_UNAVAILABLE,
    }
)


def work_of(result: RunResult, run_dir: Path) -> WorkRecord:
    """The work record a 0.2 result and the agent's files beside it make: the result's key and work (of its
    timings, the agent phase's; of its flags, the agent's; the usage, read from a trial's `agent_result`
    when the result has none)."""
    timings = result.work.timings
    agent = copy.deepcopy(result.work)
    agent.timings = Timings(agent_sec=timings.agent_sec, capture_sec=timings.capture_sec)
    agent.flags = {k: v for k, v in agent.flags.items() if k != Flag.VERIFIER}
    work = WorkRecord(
        result.key,
        work=agent,
        started_at=result.started_at,
        harness_version=result.harness_version,
    )
    if (
        result.work.trial_result
    ):  # a trial that verified in its own container (Harbor): its verdict is the work's
        work.trial_verdict = TrialVerdict(
            reward=result.reward,
            status=result.status,
            reason=result.reason,
            detail=result.reason,
            error=result.error,
            verifier=replace(result.verifier),
        )
    elif result.reason in OUTCOMES:
        work.outcome, work.error = result.reason, result.error
    elif (run_dir / names.WORK_DIR / names.AGENT_DIFF).is_file() and (result.capture or result.prediction):
        work.diff = names.AGENT_DIFF
    elif result.status is Status.ERROR:
        work.status, work.error, work.tries = WorkStatus.ERROR, result.error, list(result.tries)
    return work


def migrate_run(run_dir: Path) -> RunResult:
    """Migrate one 0.2 run directory; returns its result with today's reason words."""
    path = run_dir / names.RESULT_FILE
    result = RunResult.read(path)
    stamp = path.stat().st_mtime_ns
    work_dir = run_dir / names.WORK_DIR
    work_dir.mkdir(exist_ok=True)
    for name in LEGACY_FILES:
        if (run_dir / name).exists():
            shutil.move(str(run_dir / name), str(work_dir / name))
    work = work_of(result, run_dir)
    work.write(work_dir / names.WORK_FILE)
    if result.status is Status.UNRESOLVED and result.reason_detail is None:
        raw = raw_reasons(result.reason, result.verifier.reasons)
        log = run_dir / names.VERIFIER_OUT / names.TEST_OUTPUT_LOG
        result.reason, result.reason_detail = str(classify(raw, log)), detail_of(raw)
    elif result.status is Status.ERROR and result.reason_detail is None:
        result.reason, result.reason_detail = str(Reason.INFRASTRUCTURE), result.reason
    result.write(path)
    for item in [work_dir, *work_dir.rglob("*")]:  # older than the result
        os.utime(item, ns=(stamp - 1_000_000_000, stamp - 1_000_000_000), follow_symlinks=False)
    os.utime(path, ns=(stamp, stamp))
    return result


def migrate(results: Path) -> list[Path]:
    """Migrate every 0.2 run directory under `results`; returns them."""
    found = legacy_runs((results / "runs").glob(names.RESULT_GLOB))
    for run_dir in found:
        try:
            migrate_run(run_dir)
        except RecordError as exc:
            raise RecordError(f"{run_dir}: not migrated: {exc}") from None
    return found
