"""Snakemake script of rule plots: the PNG charts and results/report.html (charts and tables embedded)."""

from pathlib import Path

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.render import render_html
from kotlin_bench.dag.smk import logged
from kotlin_bench.results.compare import read_comparisons
from kotlin_bench.results.cutoff import cutoff_gaps, quarter_rates
from kotlin_bench.results.plots import outcome_chart, quarter_chart, rate_chart, repository_chart
from kotlin_bench.results.report import report_sections
from kotlin_bench.results.reproduce.agent import sections_of
from kotlin_bench.results.reproduce.verdicts import read_verdicts
from kotlin_bench.results.stats import read_rates
from kotlin_bench.results.summary import read_summary

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = read_summary(Path(sm.input.summary))
    overall, by_repository = read_rates(Path(sm.input.rates)), read_rates(Path(sm.input.by_repository))
    rate_chart(overall, Path(sm.output.rates))
    repository_chart(by_repository, Path(sm.output.by_repository))
    outcome_chart(summary, Path(sm.output.outcomes))
    quarter_chart(quarter_rates(summary), sm.params.cutoffs, Path(sm.output.quarters))
    verdicts = read_verdicts(Path(sm.input.verdicts))
    reproduction = []
    for verdict in verdicts:
        for section in sections_of(verdict):
            section.title = f"Reproduction {verdict.agent} vs {verdict.reference}: {section.title}"
            reproduction.append(section)
    sections = (
        report_sections(
            summary,
            overall,
            by_repository,
            [v.line for v in verdicts],
            read_comparisons(Path(sm.input.comparisons)),
            cutoffs=cutoff_gaps(summary, sm.params.cutoffs),
        )
        + reproduction
    )
    images = [
        ("Resolve rate per agent", Path(sm.output.rates)),
        ("Resolve rate per repository", Path(sm.output.by_repository)),
        ("Outcome per task and run", Path(sm.output.outcomes)),
        ("Resolve rate by merge quarter", Path(sm.output.quarters)),
    ]
    write_atomic(Path(sm.output.html), render_html(sections, images))
    print(f"charts and {sm.output.html} written")
