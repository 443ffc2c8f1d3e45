"""One run (task, agent, attempt): solved by its agent kind, then verified (`kotlin_bench.runs.solve`,
`kotlin_bench.runs.verify`); and the records of runs that failed for good.

An unresolved task is a result. A failure of the harness or the engine raises; the caller decides
whether to retry or record it as an `error` result (`record_error`).

Only one process works on a run directory at a time (a lock beside it: a run orphaned by a killed
Snakemake finishes before a new try clears it), and the containers of a run carry its key, which names
the workflow directory too, so two checkouts never reap each other's containers.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterator
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.images import image_id
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents import Agent, kind_of
from kotlin_bench.runs.solve import SolveContext
from kotlin_bench.runs.verify import VerifierOptions, VerifyContext, verify
from kotlin_bench.scoring.reasons import Reason


class RunError(RuntimeError):
    """The harness or the engine failed; the run has no valid result."""


@contextlib.contextmanager
def exclusive(run_dir: Path) -> Iterator[None]:
    """Hold the run's lock: a run orphaned by a killed Snakemake finishes before a new try clears it."""
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with (run_dir.parent / f".{run_dir.name}.lock").open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"kotlin-bench: another process is working on {run_dir}; waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run(
    task: Task,
    agent: Agent,
    attempt: int,
    run_dir: Path,
    expected_image_id: str | None = None,
    options: VerifierOptions | None = None,
    limits: handoff.Limits | None = None,
    root: Path | None = None,
    engine: EngineSettings | None = None,
) -> RunResult:
    """Solve and verify one (task, agent, attempt) on `engine` (config `engine:`; Docker by default);
    returns the result written to result.json. `limits` bound the capture of the agent's work
    (config.yaml `capture:`; defaults otherwise)."""
    if not task.has_expected_tests:
        raise RunError(f"task {task.id} has no {names.EXPECTED_TESTS}; it cannot be scored")
    with exclusive(run_dir):
        connected = connect(engine)
        client = connected.client
        # Containers start from the image the workflow built (its id), not from the tag, which another
        # checkout of the workflow may have moved to an image of its own.
        found = expected_image_id if expected_image_id else image_id(client, task.image)
        if found is None or image_id(client, found) is None:
            raise RunError(
                f"the image built for {task.image} ({(found or 'no id')[:19]}) is no longer in the engine; "
                f"delete its sentinel {names.task_sentinel(task.id)} to rebuild it"
            )
        key = names.run_key(agent.name, task.id, attempt)
        work_dir = run_dir / names.WORK_DIR
        ctx = SolveContext(
            connected,
            task,
            agent,
            attempt,
            work_dir,
            found,
            limits or handoff.Limits(),
            key,
            root or Path.cwd(),
        )
        work = kind_of(agent).solve(ctx)
        return verify(
            VerifyContext(connected, task, work_dir, run_dir, found, key, options or VerifierOptions()), work
        )


def new_result(task: Task, agent: Agent, attempt: int) -> RunResult:
    """A run record naming the task, agent and attempt (status error until scored)."""
    return RunResult(task.id, task.repository, agent.name, agent.kind, agent.model, attempt, image=task.image)


def record_error(
    task: Task, agent: Agent, attempt: int, run_dir: Path, error: BaseException, history: str = ""
) -> RunResult:
    """Record a run that failed for good as an `error` result, so it is visible and can be rerun.

    `history` holds the failures of the earlier tries, one line each; it is kept in the result."""
    result = RunResult.for_error(
        new_result(task, agent, attempt), error, Reason.INFRASTRUCTURE, tries=history.splitlines()
    )
    result.write(run_dir / names.RESULT_FILE)
    return result


def record_invalid_task(
    task_id: str, agent: Agent, attempt: int, run_dir: Path, error: Exception
) -> RunResult:
    """Record a run whose task directory is unusable (`kotlin_bench.dataset.task.TaskError`) as an
    `error` result."""
    base = RunResult(task_id, "", agent.name, agent.kind, agent.model, attempt)
    result = RunResult.for_error(base, error, Reason.TASK_INVALID)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    result.write(run_dir / names.RESULT_FILE)
    return result
