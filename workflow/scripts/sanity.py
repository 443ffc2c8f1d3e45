"""Snakemake script of rule sanity: the sanity sweep's table (results/sanity/summary.csv and .md), printed."""

import sys
from pathlib import Path

from kotlin_bench.record import RunResult
from kotlin_bench.sanity import NetworkCheck, write_sanity
from kotlin_bench.smk import logged

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    runs = [RunResult.read(Path(p)) for p in sm.input.runs]
    checks = [NetworkCheck.read(Path(p)) for p in sm.input.checks]
    text = write_sanity(runs, checks, Path(sm.output.csv), Path(sm.output.markdown))
    print(text)
sys.__stdout__.write(f"\n{text}\n")
sys.__stdout__.flush()
