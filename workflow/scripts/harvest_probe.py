"""Snakemake script of checkpoint harvest_probe: whether a candidate builds on one base variant (its image,
and test results in its run and fix phases)."""

from pathlib import Path

from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.task import load_task
from kotlin_bench.validation.harvest import ImageRecord, probe

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    image = ImageRecord.read(Path(sm.input[0]))
    phases = {Path(p).parent.name: Path(p).parent for p in sm.input[1:]}
    suffixes = load_task(Path(sm.params.task_dir), require_materialized=False).strip_test_name_suffixes
    found = probe(image, phases if image.built else None, suffixes)
    found.write(Path(sm.output[0]))
    print(f"{found.task} on {found.said()}: {'builds' if found.builds else 'does not build'}")
