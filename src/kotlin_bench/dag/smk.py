"""Helpers for the scripts that Snakemake rules call (`workflow/scripts/*.py`)."""

from __future__ import annotations

import contextlib
import signal
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.checkout import running_code, running_package
from kotlin_bench.dag.settings import Settings
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine.disk import DiskSpaceError, Job, check_job
from kotlin_bench.engine.engine import EngineSettings, connect, wait_until_up
from kotlin_bench.engine.images import ImageRef
from kotlin_bench.engine.retention import ensure_task_image
from kotlin_bench.runs.model_api import ModelOutage, backoff_sec


@contextlib.contextmanager
def logged(log_path: str | Path) -> Iterator[None]:
    """Send the script's stdout and stderr to the rule's log; an exception is logged, then re-raised."""
    path = Path(log_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with (
        path.open("a", encoding="utf-8") as log,
        contextlib.redirect_stdout(log),
        contextlib.redirect_stderr(log),
    ):
        print(
            f"kotlin-bench {HARNESS_VERSION} ({running_code() or 'not a git checkout'}), {running_package()}"
        )
        try:
            yield
        except BaseException:
            traceback.print_exc(file=log)
            raise


def stop_on_sigterm() -> None:
    """End the script on SIGTERM (Snakemake or a CI runner stopping the job) as Ctrl-C does, so that
    `finally` blocks remove the job's containers. The second SIGTERM or Ctrl-C (a runner's SIGTERM after
    its SIGINT, a second Ctrl-C) is said in the log and does not cut the removal short, which would leave
    containers behind; a third interrupts it too (what is left is reaped when the run starts again)."""
    stopping: list[int] = []

    def interrupted(signum: int, _frame: object) -> None:
        stopping.append(signum)
        if len(stopping) == 2:
            print(f"kotlin-bench: signal {signum} again; still removing this job's containers", flush=True)
            return
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where SIGINT is ignored
        signal.signal(signal.SIGINT, interrupted)


def workflow_root(script: Any) -> Path:
    """The workflow's root directory, from a rule script's `snakemake` object (scripts live in
    <root>/workflow/scripts). Not a rule parameter: the checkout's location changes no result, so moving
    it must rerun nothing."""
    return Path(script.scriptdir).parents[1]


def job_settings(script: Any) -> Settings:
    """The config's settings of a rule script's job (`kotlin_bench.dag.settings.Settings`), made once per job
    from `snakemake.config`, which the workflow validated (and filled with the schema's defaults)."""
    return Settings.of(script.config)


def task_image(settings: Settings, task: Task) -> ImageRef:
    """The task image a job runs (runs, validation phases, network probes) on the configured engine, named
    as its records say (`kotlin_bench.engine.retention.ensure_task_image`): brought back when the engine
    no longer has it (pulled by its recorded digest with `registry:`, else built again). With a registry,
    a tag moved elsewhere is refused."""
    log = Path(names.log("images", "task", task.id)).with_suffix(".rebuild.log")
    return ensure_task_image(connect(settings.engine), task, settings.registry, log)


def job_label(script: Any) -> str:
    """A rule script's job as its messages name it: `rule solve (agent=nop, task=..., attempt=1)`."""
    wildcards = ", ".join(f"{key}={value}" for key, value in script.wildcards.items())
    return f"rule {script.rule}" + (f" ({wildcards})" if wildcards else "")


def check_disk(script: Any, job: Job, settings: Settings, uses_engine: bool = True) -> None:
    """Before a job starts anything: refuse it (`DiskSpaceError`) when the engine's data root or the
    filesystem of a directory it writes (its outputs and its log) has less free space than `disk:` asks
    for. A refusal is never recorded (see `Tries.failed`): the job fails, and once space is freed the next
    invocation runs it. `uses_engine`: the job builds an image or starts a container."""
    writes = [Path(path).parent for path in (*script.output, *script.log)]
    check_job(job_label(script), job, settings.disk, writes, uses_engine=uses_engine, engine=settings.engine)


def backoff_after_outage(settings: Settings, agent: str, exc: BaseException, try_number: int) -> None:
    """Before a try that follows a model outage (`ModelOutage`): wait the agent's `outage_backoff_sec`
    (config; 60 s by default), doubled on each further try, so that a provider's rate limit has time to
    lift. Read from the config, not a rule parameter: how long a retry waits changes no result."""
    if isinstance(exc, ModelOutage):
        wait = backoff_sec(settings.agent(agent).outage_backoff_sec, try_number)
        print(f"kotlin-bench: the model API failed; the next try starts in {wait:.0f}s", flush=True)
        time.sleep(wait)


ENGINE_GRACE_SEC = 120.0  # how long a retry waits for an engine that restarts


class Tries:
    """The failed tries of one job, one line each, in a file of its own (Snakemake clears a job's log
    before it retries the job). The first try starts the file afresh."""

    def __init__(self, path: Path, number: int, retries: int, engine: EngineSettings | None = None) -> None:
        self.path, self.number, self.retries = Path(path), number, retries
        self.engine = engine
        if number == 1:
            self.path.unlink(missing_ok=True)

    @classmethod
    def of_job(cls, script: Any, settings: Settings) -> Tries:
        """The tries of a rule script's job, beside its log (`resources.tries` is the try number,
        `retries:` the config's)."""
        path = Path(names.tries_log(str(script.log[0])))
        return cls(path, int(script.resources.tries), settings.retries, settings.engine)

    def failed(self, exc: BaseException, retryable: bool = True) -> bool:
        """Record this try's failure; True when it is the last (the caller records an error), False when
        the job is to raise and be retried (after the engine answers again, if it went away). A refusal
        for want of disk space is neither recorded nor an error record on any try: the job raises, and
        runs once space is freed."""
        if isinstance(exc, DiskSpaceError):
            return False
        line = f"try {self.number} of {self.retries + 1} failed: {type(exc).__name__}: {exc}"
        print(line)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as record:
            record.write(line + "\n")
        if retryable and self.number <= self.retries:
            wait_until_up(ENGINE_GRACE_SEC, self.engine)
            return False
        return True

    def history(self) -> list[str]:
        """Every failed try so far, oldest first."""
        try:
            return self.path.read_text(encoding="utf-8").splitlines()
        except OSError:
            return []
