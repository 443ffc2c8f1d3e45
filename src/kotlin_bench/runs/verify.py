"""The verify step of a run: a verdict on the agent's work record, in a fresh container.

From the work record (`kotlin_bench.core.record.WorkRecord`, written by the solve step) to `result.json`
(`RunResult`), in three moves (`verify`):

1. the verifier's container, when the work needs one (`WorkRecord.needs_verifier`: it has a patch, and
   nothing ended the run before): a fresh container from the pristine task image gets only the work's
   patch (a captured diff, `kotlin_bench.runs.handoff.apply_diff`; a predicted patch as given, then
   normalised, `handoff.apply_patch`) and `tests/` at `/tests`; `test.sh` runs under `[verifier]` timeout
   and network mode; `/logs/verifier` is copied out; what it gave is collected (`VerifierOutput`), and the
   host re-scores the copied-out JUnit XML (`kotlin_bench.scoring.rescore`). Work that needs none (its
   `outcome` ended the run; a kind's own trial verified it and its capture failed) starts no container;
   a trial's verifier files are copied beside the result as ours would be (`AgentKind.trial_verifier`);
2. the verdict: one pure function of the work record, that output and the re-scoring
   (`kotlin_bench.runs.verdict.verdict`, with the agent kind's hook `AgentKind.verdict`);
3. `result.json`, written last and atomically.

A container that stops or runs out of memory under the verifier is an infrastructure error
(`VerifyError`), not a score; unless the verifier's tests (the agent's code) hit the container's process
limit: that is the agent's outcome (reward 0, `process_limit`), like an agent phase that hit it. Nothing
of the work directory is changed.

A build that failed because a repository did not answer (`kotlin_bench.scoring.network_faults`: Gradle's
resolution or download failures with a refused, reset or timed-out connection, or an HTTP 5xx/429) is the
network's fault, not a score: `NetworkFault`, a `VerifyError` naming the artifacts and hosts, so the step
is retried and, on its last try, recorded as an `infrastructure` error. Only the hosts of the task's build
at its base commit (read from the verifier container's HEAD before the agent's code runs), of the task's
test patch and of its agent allowlist count: a dead host the agent's patch brought in stays its 0.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.core.checkout import running_code
from kotlin_bench.core.record import PatchKind, RunResult, WorkRecord, digests
from kotlin_bench.core.record_parts import PatchApplied, VerifierReport
from kotlin_bench.dataset.predictions import patch_candidates
from kotlin_bench.engine import containers
from kotlin_bench.engine.phase import Limits, PhaseContainer
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents import kind_named
from kotlin_bench.runs.verdict import Stamp, VerifierOutput, verdict
from kotlin_bench.scoring import network_faults
from kotlin_bench.scoring.reasons import LOG_TAIL_BYTES, build_failed_in
from kotlin_bench.scoring.rescore import verdict_problem

if TYPE_CHECKING:
    from kotlin_bench.dataset.task import Task
    from kotlin_bench.engine.engine import Engine


class VerifyError(RuntimeError):
    """The harness or the engine failed while verifying; the run has no verdict."""


class NetworkFault(VerifyError):
    """The verifier's build could not download a dependency because its repository did not answer: the
    network's fault, retried like any verify-step error and never scored."""


class TestPatchMode(StrEnum):
    """How the hidden test patch meets the agent's work (config `verifier.test_patch`)."""

    RESTORE = "restore"  # the published behaviour: touched paths restored to the committed version first
    STRICT = "strict"  # applied over the agent's work; an agent that edited such a file scores 0


@dataclass(frozen=True)
class VerifierOptions:
    test_patch: TestPatchMode = TestPatchMode.RESTORE

    @classmethod
    def from_config(cls, raw: dict[str, Any] | None) -> VerifierOptions:
        return cls(TestPatchMode((raw or {}).get("test_patch", TestPatchMode.RESTORE)))

    def env(self) -> dict[str, str]:
        """What test.sh reads."""
        return {"KOTLIN_BENCH_TEST_PATCH": self.test_patch.value}


@dataclass(frozen=True, kw_only=True)
class VerifyContext:
    """What the verify step of one run works with."""

    engine: Engine
    task: Task
    work_dir: Path
    run_dir: Path  # where result.json, verifier.log and verifier/ go (a repeat's own directory)
    image_id: str
    key: str
    options: VerifierOptions
    repeat: int = 1
    work_sha256: str | None = None


def stamp_of(
    task: Task, *, repeat: int, work_sha256: str | None, image_id: str | None, seconds: float = 0.0
) -> Stamp:
    """What a verification of `task` records of itself, now."""
    task_digest, verifier_digest = digests(task.path)
    return Stamp(
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        code=running_code(),
        task_digest=task_digest,
        verifier_digest=verifier_digest,
        repeat=repeat,
        work_sha256=work_sha256,
        image_id=image_id,
        seconds=seconds,
    )


def clear_verification(run_dir: Path) -> None:
    """Remove an earlier verification of this run (never its work directory)."""
    for name in (names.VERIFIER_OUT,):
        if (run_dir / name).is_dir():
            shutil.rmtree(run_dir / name)
    for name in (names.VERIFIER_LOG, names.RESULT_FILE):
        (run_dir / name).unlink(missing_ok=True)
    run_dir.mkdir(parents=True, exist_ok=True)


def verify(ctx: VerifyContext, work: WorkRecord) -> RunResult:
    """The verdict on `work`; returns the result written to result.json."""
    clear_verification(ctx.run_dir)
    started = time.monotonic()
    begun = stamp_of(ctx.task, repeat=ctx.repeat, work_sha256=ctx.work_sha256, image_id=ctx.image_id)
    kind = kind_named(work.kind)
    output, rescoring = None, None
    if work.needs_verifier():
        output, rescoring = _verify_in_container(ctx, work)
    elif work.outcome is None:
        _keep_trial_verifier(ctx, kind.trial_verifier(work))
    stamp = replace(begun, seconds=time.monotonic() - started)
    result = verdict(work, output, rescoring, kind=kind, stamp=stamp)
    result.write(ctx.run_dir / names.RESULT_FILE)
    return result


def _keep_trial_verifier(ctx: VerifyContext, trial_verifier: str | None) -> None:
    """A trial's own verifier files, beside the result as ours would be."""
    if trial_verifier and (ctx.work_dir / trial_verifier).is_dir():
        shutil.copytree(ctx.work_dir / trial_verifier, ctx.run_dir / names.VERIFIER_OUT)


def _verify_in_container(ctx: VerifyContext, work: WorkRecord) -> tuple[VerifierOutput, str | None]:
    """The work's patch and the task's tests in a fresh container: what the verifier gave, and why the
    host's re-scoring does not confirm its reward (None: it does, or there is none to confirm)."""
    task, run_dir = ctx.task, ctx.run_dir
    assert work.diff is not None
    diff = ctx.work_dir / work.diff
    labels = {names.LABEL_TASK: task.id, names.LABEL_AGENT: work.agent, names.LABEL_PHASE: "verifier"}
    limits = Limits.of(task, ctx.engine.settings)
    engine = ctx.engine.describe()
    with PhaseContainer(ctx.engine, ctx.image_id, ctx.key, labels, limits, phase=task.verifier) as box:
        applied, prediction = _apply(box, task, work, diff, run_dir / names.VERIFIER_LOG)
        if not applied:
            return VerifierOutput(engine, applied=False, prediction=prediction), None
        box.copy_in(task.path / "tests", names.CONTAINER_TESTS)
        trusted = _network_hosts(box, task)
        with box.network(task.verifier) as net:
            done = box.run(
                f"bash {names.CONTAINER_TESTS}/test.sh",
                task.verifier.timeout_sec,
                run_dir / names.VERIFIER_LOG,
                workdir=task.repo_dir,
                env={**net.env, **ctx.options.env()},
            )
        ran = VerifierOutput(engine, prediction=prediction, seconds=round(done.seconds, 2))
        copied = box.copy_out(names.CONTAINER_VERIFIER_LOGS, run_dir)
        if done.process_limit or box.hit_process_limit():
            # The tests ran the agent's code, and it filled the process table: its outcome, whatever
            # else went wrong with the verifier because of it.
            if not done.process_limit:  # the tests ended before the watchdog looked: say it all the same
                with (run_dir / names.VERIFIER_LOG).open("a", encoding="utf-8") as log:
                    log.write(
                        "\n[kotlin-bench: the container's process limit refused a fork (seen after the tests)]\n"
                    )
            return replace(ran, process_limit=limits.pids), None
        if not copied:
            raise VerifyError(
                f"the verifier left no {names.CONTAINER_VERIFIER_LOGS} (see {names.VERIFIER_LOG})"
            )
        if box.out_of_memory():
            raise VerifyError(
                f"out of memory: the kernel killed a process of the verifier container "
                f"(memory_mb = {task.environment.memory_mb})"
            )
    if done.timed_out:
        return replace(ran, timed_out=True), None
    if done.exit_code != 0:
        raise VerifyError(f"test.sh exited with {done.exit_code}: it was killed before it finished")
    out = run_dir / names.VERIFIER_OUT
    reward = _read_reward(out)
    rescoring = verdict_problem(task.path, out, reward, task.strip_test_name_suffixes)
    log = out / names.TEST_OUTPUT_LOG
    output = replace(ran, reward=reward, report=VerifierReport.read(out / names.REPORT_JSON))
    if reward != 1.0 and not rescoring:
        faults = network_faults.the_networks(network_faults.faults_in(_tail(log)), trusted)
        if faults:
            raise NetworkFault(
                f"{network_faults.describe(faults)}: the build could not download it; not a score"
            )
    if reward != 1.0 or rescoring:
        output = replace(output, build_failed=build_failed_in(log))
    return output, rescoring


def _network_hosts(box: PhaseContainer, task: Task) -> set[str]:
    """The hosts whose faults are the network's: those the build files name at HEAD (the base commit: the
    agent's work is only in the work tree), those the task's test patch adds, and the agent allowlist's.
    Read before the agent's code runs in the container."""
    pathspecs = " ".join(f"'{spec}'" for spec in network_faults.BUILD_FILES)
    _code, found = containers.output(
        box.container, f"git grep -I -h -e :// -e '()' HEAD -- {pathspecs}", workdir=task.repo_dir, timeout=60
    )
    test_patch = (task.path / names.TEST_PATCH).read_text(encoding="utf-8", errors="replace")
    text = found.decode("utf-8", errors="replace") + "\n" + network_faults.added_lines(test_patch)
    return network_faults.hosts_in(text) | set(task.agent.allowed_hosts)


def _tail(log: Path) -> str:
    try:
        with log.open("rb") as stream:
            stream.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
            return stream.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def _apply(
    box: PhaseContainer, task: Task, work: WorkRecord, patch: Path, log: Path
) -> tuple[bool, PatchApplied | None]:
    """Apply the work's patch in the verifier container: whether it applied, and how a predicted patch was
    applied. A captured diff is applied as is; a predicted patch as given, then normalised, each with
    SWE-bench's appliers (the applier and the normalisations are recorded)."""
    if work.patch is PatchKind.CAPTURED:
        if not handoff.apply_diff(box.container, task, patch, log):
            return False, None
        if work.committed:  # the published verifier restores the test patch's paths from this HEAD
            handoff.commit_head(box.container, task, patch.with_name(work.committed), log)
        return True, None
    text = patch.read_bytes().decode("utf-8", errors="surrogateescape")
    _done, applied = handoff.apply_patch(
        box.container, task, patch_candidates(text), log, handoff.APPLY_TIMEOUT
    )
    return bool(applied.applier), applied


def _read_reward(out: Path) -> float:
    try:
        text = (out / names.REWARD_TXT).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise VerifyError(f"the verifier left no readable {names.REWARD_TXT}: {exc}") from None
    if text not in ("0", "1"):
        raise VerifyError(f"{names.REWARD_TXT} holds {text[:40]!r}; expected 0 or 1")
    return float(text)
