"""Snakemake script of checkpoint harvest_image: a candidate's task image on one base variant. A build that
fails (its steps, e.g. a warm-up that aborts) is the variant's: recorded, not raised; a failure of the engine
is retried, and recorded as an error after the last try (the candidate is then an error, not rejected)."""

from pathlib import Path

from kotlin_bench.dag.smk import (
    Tries,
    check_disk,
    job_settings,
    logged,
    stop_on_sigterm,
)
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.engine.images import ImageError, build_task_image, read_sentinel
from kotlin_bench.validation.harvest import ImageRecord

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.TASK_IMAGE, settings)
    out = Path(sm.output[0])
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    tries = Tries.of_job(sm, settings)
    record = ImageRecord(task.id, task.base_image, built=False)
    try:
        sentinel = out.with_name("sentinel.json")
        log = Path(sm.log[0]).with_suffix(".build.log")
        build_task_image(
            task,
            log,
            sentinel,
            base_sentinel=Path(sm.input[0]),
            registry=settings.registry,
            settings=settings.engine,
        )
        built = read_sentinel(sentinel)
        record.built, record.image, record.id = True, built.image, built.id
    except ImageError as exc:
        if "failed:" not in str(exc) and "build timeout" not in str(exc):
            if not tries.failed(exc):
                raise
            record.error = str(exc)
        else:
            record.why = str(exc)
    except Exception as exc:
        if not tries.failed(exc):
            raise
        record.error = f"{type(exc).__name__}: {exc}"
    record.tries = tries.history()
    record.write(out)
    print(
        f"{task.id} on {task.base_image}: "
        + ("built" if record.built else (record.why or record.error or ""))
    )
