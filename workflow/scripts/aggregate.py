"""Snakemake script of rule aggregate: rates, per-repository rates, paired comparisons of the agents and
reproduction verdicts (computed here, once), and summary.md (printed into its log)."""

from pathlib import Path

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.render import render_markdown
from kotlin_bench.dag.smk import logged, workflow_root
from kotlin_bench.engine.retention import image_rows
from kotlin_bench.results.compare import all_pairs, write_comparisons
from kotlin_bench.results.cutoff import cutoff_gaps
from kotlin_bench.results.report import report_sections
from kotlin_bench.results.reproduce.agent import reproduce_agent
from kotlin_bench.results.reproduce.plan import ReproducePlan
from kotlin_bench.results.reproduce.verdicts import write_verdicts
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import read_summary, write_table

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = read_summary(Path(sm.input.summary))
    overall, by_repository = rates(summary), rates_by_repository(summary)
    write_table(overall, Path(sm.output.rates))
    write_table(by_repository, Path(sm.output.by_repository))
    comparisons = all_pairs(summary)
    write_comparisons(comparisons, Path(sm.output.comparisons))
    plan = ReproducePlan.from_params(sm.params.reproduce, workflow_root(sm))
    gaps = {gap.agent: gap for gap in cutoff_gaps(summary, sm.params.cutoffs)}
    verdicts = []
    outputs = zip(plan.references.items(), sm.output.reproduce_md, sm.output.reproduce_csv, strict=True)
    for (agent, spec), md_path, csv_path in outputs:
        verdicts.append(
            reproduce_agent(
                agent,
                spec,
                summary,
                Path(csv_path),
                Path(md_path),
                plan.tolerance,
                Path(plan.root),
                cutoff=gaps.get(agent),
            )
        )
    write_verdicts(verdicts, Path(sm.output.verdicts))
    lines = [f"{v.line} (see {md})" for v, md in zip(verdicts, sm.output.reproduce_md, strict=True)]
    images = image_rows(sorted({Path(p).stem for p in sm.input.images}))
    sections = report_sections(
        summary, overall, by_repository, lines, comparisons, images, cutoffs=list(gaps.values())
    )
    text = render_markdown(sections)
    write_atomic(Path(sm.output.markdown), text)
    print(text)  # into the log; the terminal ends on the headline (kotlin_bench.dag.progress.print_headline)
