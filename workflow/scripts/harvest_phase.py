"""Snakemake script of rule harvest_phase: one validation phase of a candidate on one base variant, in a
fresh container from its image (as rule validation_phase runs a task's). An infrastructure error fails the
job so that Snakemake retries it; on the last try it is recorded in the phase's record."""

from pathlib import Path

from kotlin_bench.dag.smk import Tries, check_disk, job_settings, logged, stop_on_sigterm
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.validation import phase as validation_phase
from kotlin_bench.validation.harvest import ImageRecord

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.RUN, settings)
    label = sm.wildcards.phase
    out_dir = Path(sm.output[0]).parent
    tries = Tries.of_job(sm, settings)
    task_id = Path(sm.params.task_dir).name
    try:
        task = load_task(Path(sm.params.task_dir), require_materialized=False)
        image = ImageRecord.read(Path(sm.input[0]))
        record = validation_phase.run_phase(task, label, out_dir, str(image.id), settings.engine)
    except Exception as exc:
        if not tries.failed(exc, retryable=not isinstance(exc, TaskError)):
            raise
        record = validation_phase.record_error(task_id, label, out_dir, exc, tries.history())
    print(
        f"{task_id} {label}: {record.error or record.problem or f'test command exit code {record.exit_code}'}"
    )
