"""Snakemake script of rule summary: one row per run into results/summary.csv, rates printed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821

from workflow.report import rates, summarize, write_csv
from workflow.smk import logged

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = summarize(Path(p) for p in sm.input)
    write_csv(summary, Path(sm.output[0]))
    table = rates(summary).to_string(index=False)
    print(table)
sys.__stdout__.write(f"\nkotlin-bench: {len(summary)} runs -> {sm.output[0]}\n{table}\n")
