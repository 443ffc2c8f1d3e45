"""Snakemake script of rule validation_task: a task's verdict and derived lists from its phases."""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.task import load_task
from kotlin_bench.validation import derive as validation

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    verdict_path = Path(sm.output[0])
    phases = {Path(p).parent.name: Path(p).parent for p in sm.input.phases}
    task = load_task(Path(sm.params.task_dir), require_materialized=False)
    verdict, derived = validation.derive(
        task.id, phases, task.path / names.EXPECTED_TESTS, task.strip_test_name_suffixes
    )
    validation.write_derivation(
        verdict, derived, verdict_path, verdict_path.with_name(names.DERIVED_EXPECTED)
    )
    counts = ", ".join(f"{cat} {n}" for cat, n in verdict.counts.items())
    print(
        f"{verdict.task}: {'valid' if verdict.valid else 'INVALID'} ({counts}); expected lists: {verdict.expected}"
    )
    for line in verdict.reasons + verdict.notes:
        print(f"  {line}")
