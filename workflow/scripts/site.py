"""Snakemake script of rule site: the results site under results/site (only changed pages are written)."""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import logged
from kotlin_bench.results.compare import read_comparisons
from kotlin_bench.results.site.build import SiteInputs, build_site
from kotlin_bench.results.stats import read_rates
from kotlin_bench.results.summary import read_summary

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    results = [Path(p) for p in sm.input if Path(p).name == names.RESULT_FILE]
    inputs = SiteInputs(
        root=Path.cwd(),
        results=results,
        summary=read_summary(Path(sm.input.summary)),
        overall=read_rates(Path(sm.input.rates)),
        by_repository=read_rates(Path(sm.input.by_repository)),
        comparisons=read_comparisons(Path(sm.input.comparisons)),
        tasks_dir=Path(sm.params.tasks_dir),
        cutoffs=dict(sm.params.cutoffs),
    )
    report = build_site(inputs)
    print(
        f"{len(report.written)} page(s) written, {report.unchanged} unchanged, {len(report.removed)} removed"
    )
    for page in report.written:
        print(f"wrote {page}")
