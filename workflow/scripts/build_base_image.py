"""Snakemake script of rule base_image: build one manifest image (and push it, with `registry:`), write its sentinel."""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import check_disk, job_settings, logged, workflow_root
from kotlin_bench.engine.disk import Job
from kotlin_bench.engine.images import build_base, parse_manifest

sm = snakemake  # noqa: F821
root = workflow_root(sm)
with logged(sm.log[0]):
    settings = job_settings(sm)
    check_disk(sm, Job.BASE_IMAGE, settings)
    image = names.image(sm.wildcards.repo_key, sm.wildcards.tag)
    entry = next(e for e in parse_manifest(root / sm.params.manifest) if e.image == image)
    parents = [Path(p) for p in sm.input if names.is_image_sentinel(str(p))]
    registry = settings.registry
    log = Path(sm.log[0]).with_suffix(".build.log")
    engine = settings.engine
    build_base(
        entry,
        root,
        log,
        Path(sm.output[0]),
        timeout=sm.params.timeout,
        parents=parents,
        registry=registry,
        settings=engine,
    )
    print(f"built {image}" + (f", pushed to {registry.url}" if registry else ""))
