"""Snakemake script of rule validation_phase: one phase (run, test, fix, fix-<k>) of a task's validation.

An infrastructure error fails the job so that Snakemake retries it; on the last try it is recorded in the
phase's record instead, so that the task's verdict names it and the summary of the other tasks is made.
Too little free disk space (see kotlin_bench.engine.disk) refuses the job before anything starts, on
every try, and is never recorded.
"""

from pathlib import Path

from kotlin_bench.dag.smk import Tries, check_disk, job_settings, logged, stop_on_sigterm, task_image
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.validation import phase as validation_phase

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.RUN, settings)
    label, task_id = sm.wildcards.phase, sm.wildcards.task
    out_dir = Path(sm.output[0]).parent
    tries = Tries.of_job(sm, settings)
    try:
        task = load_task(Path(sm.params.task_dir), require_materialized=False)
        image = task_image(settings, task).id
        record = validation_phase.run_phase(task, label, out_dir, image, settings.engine)
    except Exception as exc:
        if not tries.failed(exc, retryable=not isinstance(exc, TaskError)):
            raise
        record = validation_phase.record_error(task_id, label, out_dir, exc, tries.history())
    state = record.error or record.problem or f"test command exit code {record.exit_code}"
    print(f"{task_id} {label}: {state}")
