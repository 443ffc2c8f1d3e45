"""One run: (task, agent, attempt) in a fresh container from the task image, scored by the verifier.

Phases: start the container; the agent phase under `[agent].timeout_sec` and network mode; the agent's
diff is captured (`kotlin_bench.handoff`) and applied in a fresh verifier container; `tests/` is copied
to `/tests` and `/tests/test.sh` runs under `[verifier].timeout_sec`;
`/logs/verifier` is copied out and the reward read from `reward.txt`. The container is removed whatever
happens. The run directory ends with `result.json` (`kotlin_bench.record`), written last and atomically.

An unresolved task is a result. A failure of the harness or the engine raises `RunError`; the caller
decides whether to retry or record it as an `error` result (see `record_error`).

Integrity (see `kotlin_bench.integrity` and the README's threat model): only the agent's repository diff
reaches the verifier; what the agent changed elsewhere is listed in `flags.outside_repo`; a reward of 1
stands only if the host's own re-scoring of the copied-out JUnit XML agrees. A container that stops, or
runs out of memory, under the verifier is an error, not a score. Only one process works on a run
directory at a time (a lock beside it), and the containers of a run carry its key, which names the
workflow directory too, so two checkouts never reap each other's containers.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench import containers, handoff, harbor, names, network
from kotlin_bench.agents import Agent, harness_paths, run_agent
from kotlin_bench.images import ImageError, docker_client, image_id
from kotlin_bench.integrity import changed_paths, flag_changes, outside_changes, verdict_problem
from kotlin_bench.record import Reason, RunResult, Status, digests
from kotlin_bench.tasks import Task

if TYPE_CHECKING:
    from docker.models.containers import Container

CAPTURE_REASONS = {
    handoff.Outcome.TOO_LARGE: Reason.DIFF_TOO_LARGE,
    handoff.Outcome.WORK_TREE_GONE: Reason.WORK_TREE_GONE,
    handoff.Outcome.UNAVAILABLE: Reason.DIFF_UNAVAILABLE,
}


class RunError(RuntimeError):
    """The harness or the engine failed; the run has no valid result."""


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


def workdir_tag(workdir: Path | None = None) -> str:
    """8 hex digits naming the workflow directory (part of every run key)."""
    return hashlib.sha256(str((workdir or Path.cwd()).resolve()).encode()).hexdigest()[:8]


def run_key(task: Task, agent: Agent, attempt: int) -> str:
    return f"{agent.name}.{task.id}.{attempt}.{workdir_tag()}"


def wait_for_engine(seconds: float) -> bool:
    """Wait until the Docker engine answers (e.g. while it restarts); False if it does not in time."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            docker_client(timeout=10)
            return True
        except ImageError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(2)


@contextlib.contextmanager
def _exclusive(run_dir: Path) -> Iterator[None]:
    """Hold the run's lock: a run orphaned by a killed Snakemake finishes before a new try clears it."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with (run_dir.parent / f".{run_dir.name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"kotlin-bench: another process is working on {run_dir}; waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _read_reward(run_dir: Path) -> float:
    reward_file = run_dir / names.VERIFIER_OUT / names.REWARD_TXT
    try:
        text = reward_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(f"the verifier left no readable {names.REWARD_TXT}: {exc}") from None
    if text not in ("0", "1"):
        raise RunError(f"{names.REWARD_TXT} holds {text[:40]!r}; expected 0 or 1")
    return float(text)


def _read_report(run_dir: Path) -> dict[str, Any]:
    try:
        report = json.loads((run_dir / names.VERIFIER_OUT / names.REPORT_JSON).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


def _clear(run_dir: Path) -> None:
    """Remove what an earlier attempt at this run left, so nothing stale is taken as this run's output."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)


def _first_reason(report: dict[str, Any]) -> str:
    reasons = report.get("reasons") or ["unresolved"]
    return str(reasons[0]).split(":", 1)[0]


def _verify(
    container: Container, task: Task, run_dir: Path, result: RunResult, key: str, options: VerifierOptions
) -> None:
    containers.copy_dir_in(container, task.path / "tests", names.CONTAINER_TESTS)
    phase = task.verifier
    since = time.time()
    with network.enter_phase(container, phase.network_mode, phase.allowed_hosts, key) as net:
        verifier = containers.run(
            container,
            f"bash {names.CONTAINER_TESTS}/test.sh",
            phase.timeout_sec,
            run_dir / names.VERIFIER_LOG,
            workdir=task.repo_dir,
            env={**net.env, **options.env()},
        )
    result.timings["verifier_sec"] = round(verifier.seconds, 2)
    if not containers.copy_dir_out(container, names.CONTAINER_VERIFIER_LOGS, run_dir):
        raise RunError(f"the verifier left no {names.CONTAINER_VERIFIER_LOGS} (see {names.VERIFIER_LOG})")
    if containers.oom_kills(container, since):
        raise RunError(
            f"out of memory: the kernel killed a process of the verifier container "
            f"(memory_mb = {task.environment.memory_mb})"
        )
    if verifier.timed_out:
        result.score(0.0, Reason.VERIFIER_TIMEOUT)
        return
    if verifier.exit_code != 0:
        raise RunError(f"test.sh exited with {verifier.exit_code}: it was killed before it finished")
    reward = _read_reward(run_dir)
    result.verifier = _read_report(run_dir)
    problem = verdict_problem(task, run_dir / names.VERIFIER_OUT, reward)
    if problem:
        reward = 0.0
        result.flags["verifier"] = [problem]
        result.verifier["reasons"] = [
            f"{Reason.VERIFIER_TAMPERED}: {problem}",
            *result.verifier.get("reasons", []),
        ]
    result.score(reward, _first_reason(result.verifier))


def run(
    task: Task,
    agent: Agent,
    attempt: int,
    run_dir: Path,
    expected_image_id: str | None = None,
    options: VerifierOptions | None = None,
    limits: handoff.Limits | None = None,
) -> RunResult:
    """Evaluate one (task, agent, attempt); returns the result that has been written to result.json.
    `limits` bound the capture of the agent's work (config.yaml `capture:`; defaults otherwise)."""
    with _exclusive(run_dir):
        return _run(
            task,
            agent,
            attempt,
            run_dir,
            expected_image_id,
            options or VerifierOptions(),
            limits or handoff.Limits(),
        )


def new_result(task: Task, agent: Agent, attempt: int) -> RunResult:
    """A run record naming the task, agent and attempt, with the task's digests (status error until scored)."""
    result = RunResult(
        task.id, _repository(task), agent.name, agent.kind, agent.model, attempt, image=task.image
    )
    result.task_digest, result.verifier_digest = digests(task.path)
    return result


def _run(
    task: Task,
    agent: Agent,
    attempt: int,
    run_dir: Path,
    expected_image_id: str | None,
    options: VerifierOptions,
    limits: handoff.Limits,
) -> RunResult:
    if not task.has_expected_tests:
        raise RunError(f"task {task.id} has no {names.EXPECTED_TESTS}; it cannot be scored")
    client = docker_client()
    # Containers start from the image the workflow built (its id), not from the tag, which another
    # checkout of the workflow may have moved to an image of its own.
    found = expected_image_id if expected_image_id else image_id(client, task.image)
    if found is None or image_id(client, found) is None:
        raise RunError(
            f"the image built for {task.image} ({(found or 'no id')[:19]}) is no longer in the engine; "
            f"delete its sentinel {names.task_sentinel(task.id)} to rebuild it"
        )
    _clear(run_dir)
    result = new_result(task, agent, attempt)
    result.image_id = found
    if agent.kind == "harbor":
        return _run_harbor(task, agent, run_dir, result)
    key = run_key(task, agent, attempt)
    containers.reap(client, key)
    network.reap_networks(client, key)
    started = time.monotonic()
    labels = {names.LABEL_TASK: task.id, names.LABEL_AGENT: agent.name, names.LABEL_WORKDIR: str(Path.cwd())}
    env = task.environment
    container = containers.start(
        client, found, key, labels | {names.LABEL_PHASE: "agent"}, env.cpus, env.memory_mb
    )
    try:
        phase = task.agent
        with network.enter_phase(
            container, phase.network_mode, phase.allowed_hosts, key, log_path=run_dir / names.PROXY_LOG
        ) as net:
            outcome = run_agent(agent, task, container, run_dir / names.AGENT_LOG, env=net.env)
        capture = handoff.capture(
            container,
            task,
            limits,
            run_dir / names.AGENT_DIFF,
            run_dir / names.CAPTURE_LOG,
            found,
            labels | {names.LABEL_RUN: key, names.LABEL_PHASE: "pristine"},
        )
        outside = outside_changes(container.diff() or [], task.repo_dir, harness_paths(agent))
    finally:
        containers.remove(container)
        network.reap_networks(client, key)
    result.model = outcome.model or result.model
    result.timings["agent_sec"] = round(outcome.exec.seconds, 2)
    result.timings["capture_sec"] = round(capture.seconds, 2)
    result.capture = capture.to_record()
    if outcome.prediction:
        result.capture["prediction"] = outcome.prediction.to_record()
    diff = run_dir / names.AGENT_DIFF
    with diff.open(encoding="utf-8", errors="replace") as lines:  # line by line: it may be large
        result.changed_files = changed_paths(lines)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        result.flags = flag_changes(result.changed_files, lines)
    result.flags |= {"outside_repo": outside, "left_out": capture.review()}
    if capture.outcome is not handoff.Outcome.CAPTURED:
        result.score(0.0, CAPTURE_REASONS[capture.outcome])
        result.error = capture.message or None
    elif outcome.skip_verifier_reason:
        result.score(0.0, outcome.skip_verifier_reason)
        if outcome.prediction and outcome.prediction.message:
            result.error = outcome.prediction.message
    else:
        # A fresh container from the pristine image, with only the agent's repository diff applied.
        container = containers.start(
            client, found, key, labels | {names.LABEL_PHASE: "verifier"}, env.cpus, env.memory_mb
        )
        try:
            if handoff.apply_diff(container, task, diff, run_dir / names.VERIFIER_LOG):
                _verify(container, task, run_dir, result, key, options)
            else:
                result.score(0.0, Reason.AGENT_DIFF_NOT_APPLIED)
        finally:
            containers.remove(container)
            network.reap_networks(client, key)
    if outcome.exec.timed_out:
        result.agent_timed_out = True
        if result.status is not Status.RESOLVED:
            result.reason = Reason.AGENT_TIMEOUT
    result.timings["total_sec"] = round(time.monotonic() - started, 2)
    result.write(run_dir / names.RESULT_FILE)
    return result


def _run_harbor(task: Task, agent: Agent, run_dir: Path, result: RunResult) -> RunResult:
    """Delegate the whole trial to the harbor CLI on our image; keep its files, map its result."""
    assert agent.harbor_agent is not None
    started = time.monotonic()
    try:
        trial = harbor.run_trial(
            task,
            agent.harbor_agent,
            agent.model,
            run_dir,
            Path.cwd(),
            dict(agent.kwargs),
            agent.isolate_network,
        )
    except harbor.HarborError as exc:
        raise RunError(str(exc)) from None
    if trial.status is Status.ERROR:
        raise RunError(f"harbor trial failed: {trial.reason}: {trial.error}")
    trial.apply_to(result)
    result.timings["total_sec"] = round(time.monotonic() - started, 2)
    result.write(run_dir / names.RESULT_FILE)
    return result


def _repository(task: Task) -> str:
    return f"{task.source.owner}/{task.source.name}"


def record_error(
    task: Task, agent: Agent, attempt: int, run_dir: Path, error: BaseException, history: str = ""
) -> RunResult:
    """Record a run that failed for good as an `error` result, so it is visible and can be rerun.

    `history` holds the failures of the earlier tries, one line each; it is kept in the result."""
    result = RunResult.for_error(new_result(task, agent, attempt), error, tries=history.splitlines())
    result.write(run_dir / names.RESULT_FILE)
    return result


def record_invalid_task(
    task_id: str, agent: Agent, attempt: int, run_dir: Path, error: Exception
) -> RunResult:
    """Record a run whose task directory is unusable (`kotlin_bench.tasks.TaskError`) as an `error` result."""
    base = RunResult(task_id, "", agent.name, agent.kind, agent.model, attempt)
    result = RunResult.for_error(base, error, reason=Reason.TASK_INVALID)
    _clear(run_dir)
    result.write(run_dir / names.RESULT_FILE)
    return result
