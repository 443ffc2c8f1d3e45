"""Snakemake script of rule healthcheck: the health check's table (results/healthcheck/summary.csv and .md), printed."""

import sys
from pathlib import Path

from kotlin_bench.core.record import RunResult
from kotlin_bench.dag.smk import logged
from kotlin_bench.results.healthcheck import write_healthcheck
from kotlin_bench.runs.network_probe import NetworkCheck

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    runs = [RunResult.read(Path(p)) for p in sm.input.runs]
    checks = [NetworkCheck.read(Path(p)) for p in sm.input.checks]
    repeats = [RunResult.read(Path(p)) for p in sm.input.repeats]
    text = write_healthcheck(runs, checks, Path(sm.output.csv), Path(sm.output.markdown), repeats)
    print(text)
sys.__stdout__.write(f"\n{text}\n")
sys.__stdout__.flush()
