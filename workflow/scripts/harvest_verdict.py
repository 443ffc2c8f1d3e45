"""Snakemake script of rule harvest_verdict: a candidate's verdict from the variants tried and, on the first
that builds, its validation (kotlin_bench.validation.harvest); its derived lists beside it."""

import json
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.task import load_task
from kotlin_bench.validation.derive import derive
from kotlin_bench.validation.harvest import Probe, decide

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    out = Path(sm.output[0])
    expected = out.with_name(names.DERIVED_EXPECTED)
    tried = [Probe.read(Path(p)) for p in sm.input.probes]
    validation, derived, command = None, None, ""
    if sm.input.phases:
        phases = {Path(p).parent.name: Path(p).parent for p in sm.input.phases}
        task = load_task(
            Path(sm.input.phases[0]).parents[1] / "tasks" / tried[-1].task, require_materialized=False
        )
        command = task.test_command
        validation, derived = derive(task.id, phases, None, task.strip_test_name_suffixes)
    verdict = decide(tried[-1].task, tried, validation, command)
    if derived is not None and verdict.verdict == "accepted":
        write_atomic(expected, json.dumps(derived, indent=2, ensure_ascii=False) + "\n")
    else:
        expected.unlink(missing_ok=True)
    verdict.write(out)
    print(
        f"{verdict.task}: {verdict.verdict}"
        + (f" ({verdict.reason})" if verdict.reason else "")
        + f": {verdict.detail}"
    )
