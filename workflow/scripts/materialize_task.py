"""Snakemake script of rule materialize: write one task's upstream-authored files and its stamp."""

from pathlib import Path

from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.materialize import MaterializeError, materialize, source_from_config
from kotlin_bench.dataset.spec import load_dataset

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    conf = dict(sm.params.materialize)
    conf["upstream"] = {**(conf.get("upstream") or {}), "mirrors": sm.params.mirrors}
    conf["upstream"].pop("mirror_sources", None)
    source = source_from_config(conf, conf.get("source", "published"))
    [result] = materialize(
        load_dataset(Path(sm.params.spec)), Path(sm.output.stamp).parents[1], source, only=[sm.wildcards.task]
    )
    for line in result.notes:
        print(f"note: {line}")
    if not result.ok:
        raise MaterializeError("; ".join(result.problems) or f"{result.task_id}: materialization failed")
    if not result.expected_tests:
        print(f"{result.task_id}: materialized without expected tests; its runs will be refused")
    print(f"{result.task_id}: materialized from {result.source} (verified: {result.verified})")
