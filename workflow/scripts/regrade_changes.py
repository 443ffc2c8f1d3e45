"""Snakemake script of rule regrade_changes: each run's new verdict against its current one
(results/regrade/changes.csv and .md), printed; results/runs/ is left as it is."""

from pathlib import Path

from kotlin_bench.dag.smk import logged
from kotlin_bench.results.regrade import compare, write_changes

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    changes = compare([Path(p) for p in sm.params.current], [Path(p) for p in sm.input.results])
    text = write_changes(changes, Path(sm.output.csv), Path(sm.output.markdown))
    print(text)  # into the log; `kotlin-bench regrade` ends on the per-agent headline
