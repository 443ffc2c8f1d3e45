"""Snakemake script of rules verify and verify_repeat: a verdict on one run's work record, in a fresh
container, written to result.json (repeat 1 in the run directory, repeat r in `repeats/<r>/`).

An infrastructure error fails the job so that Snakemake retries it (after the engine answers again); on
the last try it is recorded as an error result of step `verify`. The work record is never touched. Too
little free disk space (see kotlin_bench.engine.disk) refuses the job before anything starts, on every
try, and is never recorded.
"""

from functools import partial
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import Tries, check_disk, job_settings, logged, stop_on_sigterm, task_image
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.results.site.build import live_update
from kotlin_bench.runs import runner

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.RUN, settings)
    repeat = int(sm.wildcards.get("repeat", 1))
    verify_dir = Path(sm.output[0]).parent
    work_path = Path(sm.input.work)
    try:
        task = load_task(Path(sm.params.task_dir))
    except TaskError as exc:
        print(f"invalid task: {exc}")
        result = runner.record_unverifiable(work_path, verify_dir, repeat, exc)
    else:
        tries = Tries.of_job(sm, settings)
        try:
            image = partial(task_image, settings, task)
            result = runner.verify_step(
                task,
                work_path,
                verify_dir,
                repeat=repeat,
                image=image,
                options=settings.verifier,
                engine=settings.engine,
            )
        except Exception as exc:
            if not tries.failed(exc):
                raise
            result = runner.record_verify_error(
                task, work_path, verify_dir, repeat=repeat, error=exc, tries=tries.history()
            )
    print(
        f"{result.task} {result.agent} attempt {result.attempt} verification {repeat}: {result.status} "
        f"reward={result.reward} {result.reason or ''}"
    )
    if repeat == 1 and Path(sm.output[0]).as_posix().startswith(names.runs_root() + "/"):
        try:  # the site follows the run: this run's page and the page of runs in progress
            live_update(Path.cwd(), Path(sm.output[0]), Path(sm.params.task_dir).parent)
        except Exception as exc:  # a page is never worth a verdict: the site rule rebuilds it at the end
            print(f"the site's live pages were not updated: {exc.__class__.__name__}: {exc}")
