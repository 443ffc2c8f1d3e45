"""Snakemake script of rule validation_task: a task's verdict and derived lists from its phases."""

from pathlib import Path

from kotlin_bench import names, validation
from kotlin_bench.smk import logged
from kotlin_bench.tasks import load_task

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
