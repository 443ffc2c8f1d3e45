"""Snakemake script of rule task_image: build one task's image (and push it, with `registry:`), write its sentinel."""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import check_disk, job_settings, logged
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.engine.images import build_task_image

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.TASK_IMAGE, settings)
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    base_sentinel = Path(sm.input[0])  # the first input is the base image's sentinel (kotlin_bench.dag.plan)
    registry = settings.registry
    log = Path(sm.log[0]).with_suffix(".build.log")
    build_task_image(
        task,
        log,
        Path(sm.output[0]),
        base_sentinel=base_sentinel,
        registry=registry,
        settings=settings.engine,
    )
    # a build from the rule supersedes an image a job built again after a release (engine.retention)
    Path(names.task_image_rebuilt(task.id)).unlink(missing_ok=True)
    print(f"built {task.image}" + (f", pushed to {registry.url}" if registry else ""))
