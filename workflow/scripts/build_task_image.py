"""Snakemake script of rule task_image: build one task's image and write its sentinel."""

from pathlib import Path

from kotlin_bench.images import build_task_image
from kotlin_bench.smk import logged
from kotlin_bench.tasks import load_task

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    base_sentinel = Path(sm.input[0])  # the first input is the base image's sentinel (kotlin_bench.dag)
    build_task_image(task, Path(sm.log[0]).with_suffix(".build.log"), Path(sm.output[0]), base_sentinel)
    print(f"built {task.image}")
