"""Snakemake script of rule harvest_window: the candidates table, the dated specification of the accepted
tasks (with their lists, task directories and a config that runs them) and the page of one window."""

import sys
from pathlib import Path

from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.harvest.records import Window, read_screened
from kotlin_bench.results.harvest import write_window
from kotlin_bench.validation.harvest import CandidateVerdict

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    repository = f"{sm.wildcards.owner}/{sm.wildcards.repo}"
    verdicts = {}
    for path in sm.input.verdicts:
        verdicts[int(Path(path).parent.name.removeprefix("pr-"))] = CandidateVerdict.read(Path(path))
    outputs = {k: Path(v) for k, v in sm.output.items()}
    table = write_window(
        source_spec=Path(sm.config["spec"]),
        config=dict(sm.config),
        repository=repository,
        window=Window.parse(sm.wildcards.window),
        screened=read_screened(Path(sm.input.screened[0])),
        verdicts=verdicts,
        outputs=outputs,
    )
    counts = table["verdict"].value_counts().to_dict()
    line = f"{repository} {sm.wildcards.window}: {len(table)} pull request(s): " + ", ".join(
        f"{n} {v}" for v, n in sorted(counts.items())
    )
    print(line)
sys.__stdout__.write(f"\nkotlin-bench harvest: {line} -> {outputs['spec']}\n")
