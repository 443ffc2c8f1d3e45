"""Snakemake script of rule task_image: build one task's image and write its sentinel."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from workflow.images import build_task_image
from workflow.smk import logged
from workflow.tasks import load_task

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    build_task_image(task, Path(sm.log[0]).with_suffix(".build.log"), Path(sm.output[0]))
    print(f"built {task.image}")
