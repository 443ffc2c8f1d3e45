"""One run: (task, agent, attempt) in a fresh container from the task image, scored by the verifier.

Phases: start the container; the agent phase under `[agent].timeout_sec` and network mode; the agent's
diff is captured; `tests/` is copied to `/tests` and `/tests/test.sh` runs under `[verifier].timeout_sec`;
`/logs/verifier` is copied out and the reward read from `reward.txt`. The container is removed whatever
happens. The run directory ends with `result.json`, written last and atomically.

An unresolved task is a result. A failure of the harness or the engine raises `RunError`; the caller
decides whether to retry or record it as an `error` result (see `record_error`).

Integrity (see `workflow.integrity` and the README's threat model): only the agent's repository diff
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
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workflow import HARNESS_VERSION, containers, harbor, network
from workflow.agents import Agent, harness_paths, run_agent
from workflow.images import ImageError, docker_client, image_id
from workflow.integrity import changed_paths, flag_changes, outside_changes, verdict_problem
from workflow.tasks import Task

if TYPE_CHECKING:
    from docker.models.containers import Container

VERIFIER_DIR = "/logs/verifier"
# The agent's work as one diff against the base commit: a private index starts from the base tree, so
# commits, index tricks and untracked files are all included; ignored files are not.
DIFF_SCRIPT = (
    'idx=$(mktemp) && GIT_INDEX_FILE="$idx" git read-tree "$BASE" && GIT_INDEX_FILE="$idx" git add -A '
    '>/dev/null 2>&1 && GIT_INDEX_FILE="$idx" git diff --cached --binary "$BASE"; rc=$?; rm -f "$idx"; exit $rc'
)
APPLY_DIFF = "git apply --binary --whitespace=nowarn /tmp/kotlin-bench-agent.diff"
WORKDIR_LABEL = "kotlin-bench.workdir"
DIFF_TIMEOUT = 600.0


class RunError(RuntimeError):
    """The harness or the engine failed; the run has no valid result."""


@dataclass
class Result:
    task: str
    repository: str
    agent: str
    kind: str
    model: str | None
    attempt: int
    reward: float | None = None
    status: str = "error"
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

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            tmp.write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")
            tmp.replace(path)
        except BaseException:
            tmp.unlink(missing_ok=True)  # a full disk leaves no partial file behind
            raise


def _digest(root: Path, paths: list[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def task_digest(task: Task) -> str:
    """sha256 over every file of the task directory (paths and contents)."""
    return _digest(task.path, [p for p in task.path.rglob("*") if p.is_file()])


def verifier_digest(task: Task) -> str:
    """sha256 over the verifier scripts the run used (test.sh, collector, junit_compare)."""
    tests = task.path / "tests"
    return _digest(tests, [p for p in tests.iterdir() if p.is_file() and p.suffix in (".sh", ".py")])


def _digests(task: Task) -> tuple[str | None, str | None]:
    try:
        return task_digest(task), verifier_digest(task)
    except OSError:
        return None, None


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


def _capture_diff(container: Container, task: Task, out: Path) -> bool:
    """Write the agent's diff; False when the repository is too broken to diff against the base."""
    containers.revive(container)  # our watchdog may have killed it at a hard agent timeout
    code, diff = containers.output(
        container, DIFF_SCRIPT, workdir=task.repo_dir, env={"BASE": task.base_commit}, timeout=DIFF_TIMEOUT
    )
    out.write_bytes(diff if code == 0 else b"")
    return code == 0


def _apply_diff(container: Container, task: Task, diff: Path, log: Path) -> bool:
    """Apply the agent's diff in the fresh verifier container."""
    if diff.stat().st_size == 0:
        return True
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(diff, Path(tmp) / "kotlin-bench-agent.diff")
        containers.copy_file_in(container, Path(tmp) / "kotlin-bench-agent.diff", "/tmp")
    result = containers.run(container, APPLY_DIFF, 300, log, workdir=task.repo_dir)
    return result.exit_code == 0


def _read_reward(run_dir: Path) -> float:
    reward_file = run_dir / "verifier" / "reward.txt"
    try:
        text = reward_file.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise RunError(f"the verifier left no readable reward.txt: {exc}") from None
    if text not in ("0", "1"):
        raise RunError(f"reward.txt holds {text[:40]!r}; expected 0 or 1")
    return float(text)


def _read_report(run_dir: Path) -> dict[str, Any]:
    try:
        return json.loads((run_dir / "verifier" / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _clear(run_dir: Path) -> None:
    """Remove what an earlier attempt at this run left, so nothing stale is taken as this run's output."""
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)


def _verify(container: Container, task: Task, run_dir: Path, result: Result, key: str) -> None:
    containers.copy_dir_in(container, task.path / "tests", "/tests")
    phase = task.verifier
    since = time.time()
    with network.enter_phase(container, phase.network_mode, phase.allowed_hosts, key) as net:
        verifier = containers.run(
            container,
            "bash /tests/test.sh",
            phase.timeout_sec,
            run_dir / "verifier.log",
            workdir=task.repo_dir,
            env=net.env,
        )
    result.timings["verifier_sec"] = round(verifier.seconds, 2)
    if not containers.copy_dir_out(container, VERIFIER_DIR, run_dir):
        raise RunError(f"the verifier left no {VERIFIER_DIR} (see verifier.log)")
    if containers.oom_kills(container, since):
        raise RunError(
            f"out of memory: the kernel killed a process of the verifier container "
            f"(memory_mb = {task.environment.memory_mb})"
        )
    if verifier.timed_out:
        result.reward, result.status, result.reason = 0.0, "unresolved", "verifier_timeout"
        return
    if verifier.exit_code != 0:
        raise RunError(f"test.sh exited with {verifier.exit_code}: it was killed before it finished")
    result.reward = _read_reward(run_dir)
    result.verifier = _read_report(run_dir)
    problem = verdict_problem(task, run_dir / "verifier", result.reward)
    if problem:
        result.reward = 0.0
        result.flags["verifier"] = [problem]
        result.verifier["reasons"] = [f"verifier_tampered: {problem}", *result.verifier.get("reasons", [])]
    result.status = "resolved" if result.reward == 1.0 else "unresolved"
    if result.status == "unresolved":
        reasons = result.verifier.get("reasons") or ["unresolved"]
        result.reason = str(reasons[0]).split(":", 1)[0]


def run(
    task: Task, agent: Agent, attempt: int, run_dir: Path, expected_image_id: str | None = None
) -> Result:
    """Evaluate one (task, agent, attempt); returns the result that has been written to result.json."""
    with _exclusive(run_dir):
        return _run(task, agent, attempt, run_dir, expected_image_id)


def _run(task: Task, agent: Agent, attempt: int, run_dir: Path, expected_image_id: str | None) -> Result:
    if not task.has_expected_tests:
        raise RunError(f"task {task.id} has no tests/expected_tests.json; it cannot be scored")
    client = docker_client()
    # Containers start from the image the workflow built (its id), not from the tag, which another
    # checkout of the workflow may have moved to an image of its own.
    found = expected_image_id if expected_image_id else image_id(client, task.image)
    if found is None or image_id(client, found) is None:
        raise RunError(
            f"the image built for {task.image} ({(found or 'no id')[:19]}) is no longer in the engine; "
            "delete its sentinel under results/images/task/ to rebuild it"
        )
    _clear(run_dir)
    result = Result(
        task.id,
        _repository(task),
        agent.name,
        agent.kind,
        agent.model,
        attempt,
        image=task.image,
        image_id=found,
    )
    result.task_digest, result.verifier_digest = _digests(task)
    if agent.kind == "harbor":
        return _run_harbor(task, agent, run_dir, result)
    key = run_key(task, agent, attempt)
    containers.reap(client, key)
    network.reap_networks(client, key)
    started = time.monotonic()
    labels = {"kotlin-bench.task": task.id, "kotlin-bench.agent": agent.name, WORKDIR_LABEL: str(Path.cwd())}
    env = task.environment
    container = containers.start(
        client, found, key, labels | {"kotlin-bench.phase": "agent"}, env.cpus, env.memory_mb
    )
    try:
        phase = task.agent
        with network.enter_phase(
            container, phase.network_mode, phase.allowed_hosts, key, log_path=run_dir / "proxy.log"
        ) as net:
            outcome = run_agent(agent, task, container, run_dir / "agent.log", env=net.env)
        diffable = _capture_diff(container, task, run_dir / "agent.diff")
        outside = outside_changes(container.diff() or [], task.repo_dir, harness_paths(agent))
    finally:
        containers.remove(container)
        network.reap_networks(client, key)
    result.model = outcome.model or result.model
    result.timings["agent_sec"] = round(outcome.exec.seconds, 2)
    diff_text = (run_dir / "agent.diff").read_text(encoding="utf-8", errors="replace")
    result.changed_files = changed_paths(diff_text)
    result.flags = flag_changes(result.changed_files, diff_text) | {"outside_repo": outside}
    if not diffable:
        result.reward, result.status, result.reason = 0.0, "unresolved", "diff_unavailable"
    elif outcome.skip_verifier_reason:
        result.reward, result.status, result.reason = 0.0, "unresolved", outcome.skip_verifier_reason
    else:
        # A fresh container from the pristine image, with only the agent's repository diff applied.
        container = containers.start(
            client, found, key, labels | {"kotlin-bench.phase": "verifier"}, env.cpus, env.memory_mb
        )
        try:
            if _apply_diff(container, task, run_dir / "agent.diff", run_dir / "verifier.log"):
                _verify(container, task, run_dir, result, key)
            else:
                result.reward, result.status, result.reason = 0.0, "unresolved", "agent_diff_not_applied"
        finally:
            containers.remove(container)
            network.reap_networks(client, key)
    if outcome.exec.timed_out:
        result.agent_timed_out = True
        if result.status != "resolved":
            result.reason = "agent_timeout"
    result.timings["total_sec"] = round(time.monotonic() - started, 2)
    result.write(run_dir / "result.json")
    return result


def _run_harbor(task: Task, agent: Agent, run_dir: Path, result: Result) -> Result:
    """Delegate the whole trial to the harbor CLI on our image; keep its files, map its result."""
    assert agent.harbor_agent is not None
    started = time.monotonic()
    try:
        fields = harbor.run_trial(
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
    if fields["status"] == "error":
        raise RunError(f"harbor trial failed: {fields['reason']}: {fields['error']}")
    for key, value in fields.items():
        setattr(result, key, value)
    result.timings["total_sec"] = round(time.monotonic() - started, 2)
    result.write(run_dir / "result.json")
    return result


def _repository(task: Task) -> str:
    return f"{task.source.owner}/{task.source.name}"


def record_error(
    task: Task, agent: Agent, attempt: int, run_dir: Path, error: BaseException, history: str = ""
) -> Result:
    """Record a run that failed for good as an `error` result, so it is visible and can be rerun.

    `history` holds the failures of the earlier tries, one line each; it is kept in the result."""
    result = Result(task.id, _repository(task), agent.name, agent.kind, agent.model, attempt, status="error")
    result.image = task.image
    result.task_digest, result.verifier_digest = _digests(task)
    result.reason = type(error).__name__
    result.error = str(error)[:2000]
    result.tries = [line for line in history.splitlines() if line.strip()]
    result.write(run_dir / "result.json")
    return result


def record_invalid_task(task_id: str, agent: Agent, attempt: int, run_dir: Path, error: Exception) -> Result:
    """Record a run whose task directory is unusable (`workflow.tasks.TaskError`) as an `error` result."""
    result = Result(task_id, "", agent.name, agent.kind, agent.model, attempt, status="error")
    result.reason, result.error = "task_invalid", str(error)[:2000]
    _clear(run_dir)
    result.write(run_dir / "result.json")
    return result


def errored_results(results: Path) -> list[tuple[Path, str]]:
    """The result.json files under `results/runs` whose status is `error`, with their reason."""
    found = []
    for path in sorted((results / "runs").glob("*/*/attempt-*/result.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if data.get("status") == "error":
            found.append((path, f"{data.get('reason')}: {data.get('error')}"))
    return found
