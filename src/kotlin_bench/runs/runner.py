"""The two steps of a run (task, agent, attempt) as jobs run them, and the records of steps that failed.

- `solve_step`: the agent kind solves the run (`kotlin_bench.runs.solve`); the work record is written.
- `verify_step`: a verdict on the work record (`kotlin_bench.runs.verify`), once or several times
  (`verify: {repeats: N}`, each repeat in a directory of its own).

An unresolved task is a result. A failure of the harness or the engine raises; the caller retries or,
after the last try, records it: a solve step that failed for good leaves a work record with status
`error` (its verify step then records the run as an error of step `solve`, without a container); a
verify step that failed for good leaves an error result of step `verify`, the work untouched.

Only one process works on a directory at a time (a lock beside it: a job orphaned by a killed Snakemake
finishes before a new try clears it), and each step's containers carry a key that names the workflow
directory, so two checkouts never reap each other's containers.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.checkout import running_code
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import AgentWork, RunKey, RunResult, WorkRecord, WorkStatus
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine.egress import EgressPolicy
from kotlin_bench.engine.engine import Engine, EngineSettings, connect
from kotlin_bench.engine.images import ImageRef, image_id
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents import Agent, kind_of
from kotlin_bench.runs.solve import SolveContext, clear
from kotlin_bench.runs.verdict import error_result
from kotlin_bench.runs.verify import VerifierOptions, VerifyContext, clear_verification, stamp_of, verify
from kotlin_bench.scoring.reasons import Reason

SOLVE, VERIFY = "solve", "verify"  # a result's `failed_step`


class RunError(RuntimeError):
    """The harness or the engine failed; the step has no valid record."""


@contextlib.contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Hold the directory's lock: a job orphaned by a killed Snakemake finishes before a new try clears it."""
    directory.parent.mkdir(parents=True, exist_ok=True)
    with names.dir_lock(directory).open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"kotlin-bench: another process is working on {directory}; waiting for it", flush=True)
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _present(image: ImageRef | None, settings: EngineSettings | None) -> tuple[Engine, str]:
    """The engine (config `engine:`; Docker by default) and the id of the task image the job runs
    (`use_image` found it by its sentinel, by id: another checkout or a Harbor build may have moved the
    name)."""
    if image is None:
        raise RunError("no task image was given for a step that runs in one")
    engine = connect(settings)
    if image_id(engine.client, image.id) is None:
        raise RunError(f"the image built as {image.name} ({image.id[:19]}) is no longer in the engine")
    return engine, image.id


def solve_step(
    task: Task,
    agent: Agent,
    attempt: int,
    work_dir: Path,
    *,
    image: ImageRef | None = None,
    limits: handoff.Limits | None = None,
    root: Path | None = None,
    engine: EngineSettings | None = None,
    egress: EgressPolicy | None = None,
    facts: Facts | None = None,
) -> WorkRecord:
    """Solve one (task, agent, attempt) on `engine` (config `engine:`), its allowlist phase recorded as
    `egress` says (config `egress:`) with the task's `facts` for the retrieval rule; returns the work
    record written to `work_dir/work.json`."""
    if not task.has_expected_tests:
        raise RunError(
            f"task {task.id} has no {names.EXPECTED_TESTS}; it cannot be scored, so it is not solved"
        )
    kind = kind_of(agent)
    with exclusive(work_dir):
        connected, found = _present(image, engine) if kind.needs_image else (None, None)
        ctx = SolveContext(
            engine=connected,
            task=task,
            agent=agent,
            attempt=attempt,
            work_dir=work_dir,
            image_id=found,
            limits=limits or handoff.Limits(),
            key=names.run_key(agent.name, task.id, attempt),
            root=root or Path.cwd(),
            read=read_files(kind.inputs(agent, task.path), task.path),
            image_name=image.name if image is not None and kind.needs_image else None,
            egress=egress or EgressPolicy(),
            facts=facts or Facts(),
        )
        return kind.solve(ctx)


def read_files(inputs: list[Path], task_dir: Path) -> tuple[str, ...]:
    """The materialized task files a solve step reads: the instruction, and those of the kind's inputs."""
    kind_reads = [p.relative_to(task_dir).as_posix() for p in inputs if p.is_relative_to(task_dir)]
    return (names.INSTRUCTION, *(rel for rel in kind_reads if rel in names.MATERIALIZED))


def verify_step(
    task: Task,
    work_path: Path,
    verify_dir: Path,
    *,
    repeat: int = 1,
    image: Callable[[], ImageRef] | None = None,
    options: VerifierOptions | None = None,
    engine: EngineSettings | None = None,
) -> RunResult:
    """Verify the work record at `work_path` on `engine` (config `engine:`); returns the result written to
    `verify_dir/result.json`. `image` gets the task image, asked only when the work needs a verdict (a
    solve step that failed for good is recorded without one, whatever became of the image)."""
    work = WorkRecord.read(work_path)
    with exclusive(verify_dir):
        if work.status is WorkStatus.ERROR:
            return _solve_failed(task, work, work_path, verify_dir, repeat)
        connected, found = _present(image() if image else None, engine)
        key = names.verify_key(work.agent, task.id, work.attempt, repeat)
        ctx = VerifyContext(
            engine=connected,
            task=task,
            work_dir=work_path.parent,
            run_dir=verify_dir,
            image_id=found,
            key=key,
            options=options or VerifierOptions(),
            repeat=repeat,
            work_sha256=file_sha256(work_path),
        )
        return verify(ctx, work)


def _solve_failed(task: Task, work: WorkRecord, work_path: Path, verify_dir: Path, repeat: int) -> RunResult:
    """The run of a solve step that failed for good: an error result of step `solve`, no container."""
    clear_verification(verify_dir)
    result = error_result(
        work,
        work.error or "the solve step failed",
        reason=work.outcome or Reason.INFRASTRUCTURE,  # task_invalid when the task directory was unusable
        failed_step=SOLVE,
        stamp=stamp_of(task, repeat=repeat, work_sha256=file_sha256(work_path), image_id=None),
        tries=work.tries,
    )
    result.write(verify_dir / names.RESULT_FILE)
    return result


def record_solve_error(
    task: Task, agent: Agent, attempt: int, work_dir: Path, *, error: BaseException, tries: list[str]
) -> WorkRecord:
    """A solve step that failed on every try: a work record with status error, so that the run shows as
    an error (step `solve`) and `kotlin-bench errors --delete` can make it rerun."""
    clear(work_dir)
    work = WorkRecord(
        _key(task.id, task.repository, agent, attempt),
        work=AgentWork(image=task.image),
        status=WorkStatus.ERROR,
        code=running_code(),
        error=f"{type(error).__name__}: {error}"[:2000],
        tries=[line for line in tries if line.strip()],
    )
    work.write(work_dir / names.WORK_FILE)
    return work


def _key(task_id: str, repository: str, agent: Agent, attempt: int) -> RunKey:
    return RunKey(task_id, repository, agent.name, agent.kind, agent.model, attempt)


def record_verify_error(
    task: Task, work_path: Path, verify_dir: Path, *, repeat: int, error: BaseException, tries: list[str]
) -> RunResult:
    """A verify step that failed on every try: an error result of step `verify`; the work is untouched."""
    clear_verification(verify_dir)
    result = error_result(
        WorkRecord.read(work_path),
        error,
        reason=Reason.INFRASTRUCTURE,
        failed_step=VERIFY,
        stamp=stamp_of(task, repeat=repeat, work_sha256=file_sha256(work_path), image_id=None),
        tries=tries,
    )
    result.write(verify_dir / names.RESULT_FILE)
    return result


def record_invalid_task(
    task_id: str, agent: Agent, attempt: int, work_dir: Path, error: Exception
) -> WorkRecord:
    """A solve step whose task directory is unusable (`kotlin_bench.dataset.task.TaskError`): a work
    record with status error and outcome `task_invalid` naming the file; the run's verify step turns it
    into an error result, so that the summary of the other tasks is made."""
    clear(work_dir)
    work = WorkRecord(
        _key(task_id, "", agent, attempt),
        status=WorkStatus.ERROR,
        outcome=Reason.TASK_INVALID,
        error=str(error)[:2000],
        code=running_code(),
    )
    work.write(work_dir / names.WORK_FILE)
    return work


def record_not_run(task: Task, agent: Agent, attempt: int, work_dir: Path, why: str) -> WorkRecord:
    """A run its agent's `budget_usd` did not allow to start: a work record with status error and outcome
    `not_run` saying why; its verify step records it as an error result (not a failure of the agent)."""
    clear(work_dir)
    work = WorkRecord(
        _key(task.id, task.repository, agent, attempt),
        status=WorkStatus.ERROR,
        outcome=Reason.NOT_RUN,
        error=why,
        code=running_code(),
    )
    work.write(work_dir / names.WORK_FILE)
    return work


def record_unverifiable(work_path: Path, verify_dir: Path, repeat: int, error: Exception) -> RunResult:
    """A verify step whose task directory is unusable: an error result (reason `task_invalid`)."""
    clear_verification(verify_dir)
    work = WorkRecord.read(work_path)
    result = RunResult(work.key, code=running_code(), repeat=repeat, failed_step=VERIFY)
    result = RunResult.for_error(result, error, Reason.TASK_INVALID)
    result.write(verify_dir / names.RESULT_FILE)
    return result
