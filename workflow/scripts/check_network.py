"""Snakemake script of rule network_check: probe an allowlisted host and GitHub inside one task's agent
phase (see kotlin_bench.runs.healthcheck)."""

from pathlib import Path

from kotlin_bench.dag.smk import job_settings, logged, task_image
from kotlin_bench.dataset.task import load_task
from kotlin_bench.runs.network_probe import check_network

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    check = check_network(task, task_image(settings, task).id, settings.engine)
    check.write(Path(sm.output[0]))
    print(f"{task.id}: allowlisted {check.allowed.text}; github.com {check.blocked.outcome}")
