"""Snakemake script of rule validation_summary: results/validation/summary.csv and summary.md."""

import sys
from pathlib import Path

from kotlin_bench import validation_report
from kotlin_bench.smk import logged

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    frame = validation_report.write_summary(sm.input, Path(sm.output.csv), Path(sm.output.markdown))
    line = validation_report.headline(frame)
    print(line)
sys.__stdout__.write(f"\nkotlin-bench validation: {line} -> {sm.output.csv}\n")
