"""Snakemake script of rule summary: one row per run into results/summary.csv."""

import sys
from pathlib import Path

from kotlin_bench.core.retrieval import Facts
from kotlin_bench.dag.smk import logged
from kotlin_bench.results.provenance import stale_results
from kotlin_bench.results.summary import STATUSES, summarize, write_table

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    summary = summarize(
        [Path(p) for p in sm.input.results],
        [Path(p) for p in sm.input.repeats],
        tasks_dir=Path(sm.params.tasks_dir),
        facts={task: Facts.from_dict(facts) for task, facts in sm.params.retrieval.items()},
    )
    write_table(summary, Path(sm.output[0]))
    counts = summary["status"].value_counts()
    line = ", ".join(f"{int(counts.get(s, 0))} {s}" for s in STATUSES)
    print(f"{len(summary)} runs ({line}) -> {sm.output[0]}")
    flaky = summary[summary["verdict_flaky"].fillna(False)]
    for row in flaky.itertuples():
        print(f"VERDICT-FLAKY: {row.agent} {row.task} attempt {row.attempt}: rewards {row.repeat_rewards}")
    stale = stale_results([Path(p) for p in sm.input.results], Path(sm.params.tasks_dir))
    for problem in stale:
        print(f"STALE: {problem}")
sys.__stdout__.write(f"\nkotlin-bench: {len(summary)} runs ({line}) -> {sm.output[0]}\n")
if len(flaky):
    sys.__stdout__.write(
        f"kotlin-bench: {len(flaky)} run(s) verdict-flaky: their verifications disagree (see {sm.log[0]})\n"
    )
if stale:
    sys.__stdout__.write(
        f"kotlin-bench: WARNING: {len(stale)} result(s) do not match their task directory or verifier as they "
        f"are now (see {sm.log[0]}); delete them to rerun those runs\n"
    )
