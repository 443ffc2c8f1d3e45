"""Snakemake script of rule release_task_image: remove one task image once the jobs of one purpose that
needed it are done (config `images: {keep: bases}`), and record it."""

from kotlin_bench.dag.smk import job_settings, logged
from kotlin_bench.engine.engine import connect
from kotlin_bench.engine.retention import Purpose, release

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    done = release(connect(job_settings(sm).engine), sm.wildcards.task, Purpose(sm.wildcards.purpose))
    size = f", {done.size / 2**30:.2f} GiB" if done.size else ""
    print(
        f"{done.image} ({done.id[:19]}{size}): {done.outcome}" + (f" ({done.detail})" if done.detail else "")
    )
