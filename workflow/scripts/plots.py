"""Snakemake script of rule plots: the PNG charts and results/report.html (charts and tables embedded)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from workflow.plots import outcome_chart, rate_chart, render_html, repository_chart
from workflow.report import read_rates, read_summary, report_sections, write_text
from workflow.reproduce import ReproducePlan, read_comparison, reference_label, reproduction_sections, verdict
from workflow.smk import logged

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = read_summary(Path(sm.input.summary))
    overall, by_repository = read_rates(Path(sm.input.rates)), read_rates(Path(sm.input.by_repository))
    rate_chart(overall, Path(sm.output.rates))
    repository_chart(by_repository, Path(sm.output.by_repository))
    outcome_chart(summary, Path(sm.output.outcomes))
    plan = ReproducePlan.from_params(sm.params.reproduce)
    verdicts, reproduction = [], []
    for (agent, spec), csv_path in zip(plan.references.items(), sm.input.reproduce, strict=True):
        comparison, label = read_comparison(Path(csv_path)), reference_label(spec)
        verdicts.append(f"{agent} vs {label}: {verdict(comparison)}")
        for section in reproduction_sections(agent, label, comparison):
            section.title = f"Reproduction {agent} vs {label}: {section.title}"
            reproduction.append(section)
    sections = report_sections(summary, overall, by_repository, verdicts) + reproduction
    images = [
        ("Resolve rate per agent", Path(sm.output.rates)),
        ("Resolve rate per repository", Path(sm.output.by_repository)),
        ("Outcome per task and run", Path(sm.output.outcomes)),
    ]
    write_text(render_html(sections, images), Path(sm.output.html))
    print(f"charts and {sm.output.html} written")
