"""Snakemake script of rule aggregate: rates, per-repository rates, reproduction, and summary.md (printed)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from workflow.report import (
    rates,
    rates_by_repository,
    read_summary,
    render_markdown,
    report_sections,
    write_csv,
    write_text,
)
from workflow.reproduce import (
    ReproducePlan,
    compare,
    load_reference,
    reference_label,
    render_reproduction,
    verdict,
)
from workflow.smk import logged

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = read_summary(Path(sm.input.summary))
    overall, by_repository = rates(summary), rates_by_repository(summary)
    write_csv(overall, Path(sm.output.rates))
    write_csv(by_repository, Path(sm.output.by_repository))
    plan = ReproducePlan.from_params(sm.params.reproduce)
    verdicts = []
    outputs = zip(plan.references.items(), sm.output.reproduce_md, sm.output.reproduce_csv, strict=True)
    for (agent, spec), md_path, csv_path in outputs:
        ours = summary[summary["agent"] == agent]
        comparison = compare(ours, load_reference(spec, summary), plan.tolerance)
        write_csv(comparison, Path(csv_path))
        write_text(render_reproduction(agent, reference_label(spec), comparison), Path(md_path))
        verdicts.append(f"{agent} vs {reference_label(spec)}: {verdict(comparison)} (see {md_path})")
    text = render_markdown(report_sections(summary, overall, by_repository, verdicts))
    write_text(text, Path(sm.output.markdown))
    print(text)
sys.__stdout__.write(f"\n{text}\n")
sys.__stdout__.flush()
