"""The verify step of a run: a verdict on the agent's work record, in a fresh container.

From the work record (`kotlin_bench.core.record.WorkRecord`, written by the solve step) to `result.json`
(`RunResult`):

- work that ended the run before verification (`outcome`: an empty or unappliable prediction, a capture
  that failed because of what the agent did) scores 0 with that reason, no container started;
- a Harbor trial's work keeps Harbor's own verdict (the published protocol) when no diff was captured;
- otherwise a fresh container from the pristine task image gets only the captured diff
  (`kotlin_bench.runs.handoff.apply_diff`) and `tests/` at `/tests`; `test.sh` runs under `[verifier]`
  timeout and network mode; `/logs/verifier` is copied out; the host re-scores the copied-out JUnit XML
  (`kotlin_bench.scoring.rescore`): a 1 it does not confirm becomes 0 (`verifier_tampered`).

The reason of an unresolved run is classified here, once (`kotlin_bench.scoring.reasons.classify`), and
recorded with its raw codes. A container that stops or runs out of memory under the verifier is an
infrastructure error (`VerifyError`), not a score; unless the verifier's tests (the agent's code) hit the
container's process limit: that is the agent's outcome (reward 0, `process_limit`), like an agent phase
that hit it. Nothing of the work directory is changed.

A build that failed because a repository did not answer (`kotlin_bench.scoring.network_faults`: Gradle's
resolution or download failures with a refused, reset or timed-out connection, or an HTTP 5xx/429) is the
network's fault, not a score: `NetworkFault`, a `VerifyError` naming the artifacts and hosts, so the step
is retried and, on its last try, recorded as an `infrastructure` error. Only the hosts of the task's build
at its base commit (read from the verifier container's HEAD before the agent's code runs), of the task's
test patch and of its agent allowlist count: a dead host the agent's patch brought in stays its 0.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.core.checkout import running_code
from kotlin_bench.core.record import PatchKind, RunResult, WorkRecord, digests
from kotlin_bench.dataset.predictions import patch_candidates
from kotlin_bench.engine import containers
from kotlin_bench.engine.phase import Limits, PhaseContainer
from kotlin_bench.runs import handoff
from kotlin_bench.scoring import network_faults
from kotlin_bench.scoring.reasons import LOG_TAIL_BYTES, Reason, classify, detail_of, raw_reasons
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


@dataclass(frozen=True)
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


def result_of(work: WorkRecord, task: Task) -> RunResult:
    """A run record carrying what the work record says of the agent's work (status error until scored)."""
    result = RunResult(work.task, work.repository, work.agent, work.kind, work.model, work.attempt)
    result.image, result.image_id = work.image, work.image_id
    result.code = running_code()
    result.timings = dict(work.timings)
    result.agent_timed_out = work.agent_timed_out
    result.agent_result = dict(work.agent_result)
    result.usage, result.solve_tries = replace(work.usage), work.solve_tries
    result.changed_files = list(work.changed_files)
    result.flags = {k: list(v) for k, v in work.flags.items()}
    result.egress = asdict(work.egress) if work.egress is not None else None
    result.capture = dict(work.capture)
    result.trial_result = f"{names.WORK_DIR}/{work.trial_result}" if work.trial_result else None
    result.task_digest, result.verifier_digest = digests(task.path)
    return result


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
    result = result_of(work, ctx.task)
    result.repeat, result.work_sha256 = ctx.repeat, ctx.work_sha256
    result.verify_image_id = ctx.image_id
    if work.outcome:
        result.score(0.0, work.outcome, work.outcome)
        result.error = work.error
    elif work.harbor is not None and work.diff is None:
        _harbor_verdict(ctx, result, work)
    else:
        _verify_in_container(ctx, work, result)
        if work.harbor is not None:
            _beside_the_trials_verdict(result, work.harbor)
    if work.agent_process_limit and result.reward != 1.0:
        _agent_outcome(result, f"{Reason.PROCESS_LIMIT}: in the agent phase")
    elif work.agent_timed_out and result.reward != 1.0:
        _agent_outcome(result, Reason.AGENT_TIMEOUT)
    result.timings["verify_sec"] = round(time.monotonic() - started, 2)
    result.timings["total_sec"] = round(
        sum(result.timings.get(k, 0.0) for k in ("solve_sec", "verify_sec")), 2
    )
    result.write(ctx.run_dir / names.RESULT_FILE)
    return result


def _agent_outcome(result: RunResult, code: str) -> None:
    """An unresolved run whose agent phase ended it: that is its reason, the verifier's codes follow."""
    result.reason = code.split(":", 1)[0]
    result.reason_detail = detail_of([code, *filter(None, (result.reason_detail or "").split("; "))])


def _harbor_verdict(ctx: VerifyContext, result: RunResult, work: WorkRecord) -> None:
    """Harbor's own verdict (its verifier ran in the agent's container); its verifier files are copied
    beside the result as ours would be."""
    harbor = work.harbor or {}
    if work.trial_result:
        trial_verifier = ctx.work_dir / Path(work.trial_result).parent / "verifier"
        if trial_verifier.is_dir():
            shutil.copytree(trial_verifier, ctx.run_dir / names.VERIFIER_OUT)
    result.verifier = dict(harbor.get("verifier") or {})
    result.score(float(harbor.get("reward") or 0.0), harbor.get("reason"), harbor.get("detail"))
    result.error = harbor.get("error")


def _beside_the_trials_verdict(result: RunResult, harbor: dict[str, Any]) -> None:
    """A trial that verified in the agent's container (Harbor) keeps its verdict (the published protocol);
    ours, on the captured work in a fresh container, goes beside it, and a disagreement is flagged."""
    fresh = {"reward": result.reward, "reason": result.reason, "detail": result.reason_detail}
    result.fresh_verdict = fresh
    result.score(float(harbor.get("reward") or 0.0), harbor.get("reason"), harbor.get("detail"))
    result.error = harbor.get("error") or result.error
    if fresh["reward"] != result.reward:
        result.flags["verdicts"] = [
            f"the trial's verifier says {result.reward:g}, a fresh container says {fresh['reward']:g}"
            f" ({fresh['reason'] or 'resolved'})"
        ]


def _verify_in_container(ctx: VerifyContext, work: WorkRecord, result: RunResult) -> None:
    task, run_dir = ctx.task, ctx.run_dir
    assert work.diff is not None
    diff = ctx.work_dir / work.diff
    labels = {names.LABEL_TASK: task.id, names.LABEL_AGENT: work.agent, names.LABEL_PHASE: "verifier"}
    limits = Limits.of(task, ctx.engine.settings)
    result.engine = ctx.engine.describe()
    with PhaseContainer(ctx.engine, ctx.image_id, ctx.key, labels, limits, phase=task.verifier) as box:
        if not _apply(box, task, work, diff, result, run_dir / names.VERIFIER_LOG):
            return
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
        result.timings["verifier_sec"] = round(done.seconds, 2)
        copied = box.copy_out(names.CONTAINER_VERIFIER_LOGS, run_dir)
        if done.process_limit or box.hit_process_limit():
            # The tests ran the agent's code, and it filled the process table: its outcome, whatever
            # else went wrong with the verifier because of it.
            if not done.process_limit:  # the tests ended before the watchdog looked: say it all the same
                with (run_dir / names.VERIFIER_LOG).open("a", encoding="utf-8") as log:
                    log.write(
                        "\n[kotlin-bench: the container's process limit refused a fork (seen after the tests)]\n"
                    )
            detail = f"{Reason.PROCESS_LIMIT}: in the verifier's tests (pids_limit = {limits.pids})"
            result.score(0.0, Reason.PROCESS_LIMIT, detail)
            return
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
        result.score(0.0, Reason.VERIFIER_TIMEOUT, Reason.VERIFIER_TIMEOUT)
        return
    if done.exit_code != 0:
        raise VerifyError(f"test.sh exited with {done.exit_code}: it was killed before it finished")
    out = run_dir / names.VERIFIER_OUT
    reward = _read_reward(out)
    result.verifier = _read_report(out)
    problem = verdict_problem(task.path, out, reward, task.strip_test_name_suffixes)
    own = None
    if problem:
        reward, own = 0.0, f"{Reason.VERIFIER_TAMPERED}: {problem}"
        result.flags["verifier"] = [problem]
    raw = raw_reasons(own, result.verifier.get("reasons"))
    if reward == 1.0:
        result.score(1.0)
        return
    if not problem:
        faults = network_faults.the_networks(
            network_faults.faults_in(_tail(out / names.TEST_OUTPUT_LOG)), trusted
        )
        if faults:
            raise NetworkFault(
                f"{network_faults.describe(faults)}: the build could not download it; not a score"
            )
    result.score(0.0, classify(raw, out / names.TEST_OUTPUT_LOG), detail_of(raw))


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
    box: PhaseContainer, task: Task, work: WorkRecord, patch: Path, result: RunResult, log: Path
) -> bool:
    """Apply the work's patch in the verifier container; False (and the result scored) when it does not
    apply. A captured diff is applied as is; a predicted patch as given, then normalised, each with
    SWE-bench's appliers (the applier and the normalisations are recorded)."""
    if work.patch is PatchKind.CAPTURED:
        if handoff.apply_diff(box.container, task, patch, log):
            if work.committed:  # the published verifier restores the test patch's paths from this HEAD
                handoff.commit_head(box.container, task, patch.with_name(work.committed), log)
            return True
        result.score(0.0, Reason.AGENT_DIFF_NOT_APPLIED, Reason.AGENT_DIFF_NOT_APPLIED)
        return False
    text = patch.read_bytes().decode("utf-8", errors="surrogateescape")
    _done, applied = handoff.apply_patch(
        box.container, task, patch_candidates(text), log, handoff.APPLY_TIMEOUT
    )
    result.capture = {**result.capture, "prediction": applied.to_record()}
    if applied.applier:
        return True
    result.score(0.0, Reason.PATCH_NOT_APPLIED, Reason.PATCH_NOT_APPLIED)
    result.error = applied.message or None
    return False


def _read_reward(out: Path) -> float:
    try:
        text = (out / names.REWARD_TXT).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise VerifyError(f"the verifier left no readable {names.REWARD_TXT}: {exc}") from None
    if text not in ("0", "1"):
        raise VerifyError(f"{names.REWARD_TXT} holds {text[:40]!r}; expected 0 or 1")
    return float(text)


def _read_report(out: Path) -> dict[str, Any]:
    try:
        report = json.loads((out / names.REPORT_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}
