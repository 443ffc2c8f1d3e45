"""Snakemake script of rule validation_summary: results/validation/summary.csv and summary.md."""

import sys
from pathlib import Path

from kotlin_bench.dag.smk import logged
from kotlin_bench.results import validation_summary as validation_report

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    frame = validation_report.write_summary(sm.input.verdicts, Path(sm.output.csv), Path(sm.output.markdown))
    line = validation_report.headline(frame)
    print(line)
sys.__stdout__.write(f"\nkotlin-bench validation: {line} -> {sm.output.csv}\n")
