"""An infrastructure failure is recorded as an `error` run that says which step failed, stated in the
headline; the next `snakemake` (or `kotlin-bench errors --delete`, then `snakemake`) redoes that step and
nothing else: a failed verification never redoes the agent's work."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.tools.workspace import Workspace
from tests.conftest import snakemake
from tests.test_workflow_e2e import REPORT_JOBS, planned_jobs

pytestmark = pytest.mark.usefixtures("docker_engine")
TASK = "examples_calc-4"
BASE_SENTINEL = "results/images/base/examples_calc/base.json"


Saved = list[tuple[Path, bytes, os.stat_result]]


def _break_the_image(work: Path) -> Saved:
    """The task image and the base it would be built again from are no longer the ones in the engine
    (their records point to an id the engine lacks, mtimes kept): a step that needs the image fails."""
    saved = []
    for record in (work / f"results/images/task/{TASK}.json", work / BASE_SENTINEL):
        original, stat = record.read_bytes(), record.stat()
        record.write_text(json.dumps({**json.loads(original), "id": "sha256:" + "0" * 64}))
        os.utime(record, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        saved.append((record, original, stat))
    return saved


def _repair(saved: Saved) -> None:
    for record, original, stat in saved:
        record.write_bytes(original)
        os.utime(record, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def _delete_errors(work: Path) -> str:
    listed = subprocess.run(["kotlin-bench", "errors", "--delete"], cwd=work, capture_output=True, text=True)
    assert listed.returncode == 0 and "1 errored run(s) deleted" in listed.stdout, listed.stdout
    return listed.stdout


def test_a_failed_step_is_an_error_and_only_that_step_is_redone(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    work = finished_examples.clone(tmp_path / "w").root
    (work / "one.yaml").write_text(yaml.safe_dump({"tasks": [TASK], "retries": 1}))
    args = ("--configfile", "one.yaml")
    out = snakemake(work, *args)  # the summary of the one task (its runs are done)
    assert out.returncode == 0, out.stderr[-3000:]
    run = work / f"results/runs/oracle/{TASK}/attempt-1"
    result, work_json = run / "result.json", run / "work/work.json"
    kept = {p: p.stat().st_mtime_ns for p in (run / "work").iterdir()}

    # A verification that fails on every try: an error of step verify; the agent's work is untouched.
    saved = _break_the_image(work)
    result.unlink()
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    recorded = json.loads(result.read_text())
    assert [t.split(":", 1)[0] for t in recorded["tries"]] == ["try 1 of 2 failed", "try 2 of 2 failed"]
    assert (recorded["status"], recorded["reward"], recorded["failed_step"]) == ("error", None, "verify")
    assert "sha256:000000000000" in recorded["error"] and "is no longer in the engine" in recorded["error"]
    summary = pd.read_csv(work / "results/summary.csv").set_index("agent")
    assert summary.loc["oracle", "status"] == "error" and summary.loc["oracle", "reason"] == "infrastructure"
    assert summary.loc["oracle", "failed_step"] == "verify"
    assert summary.loc["nop", "status"] == "unresolved"
    assert "1 run errored" in (work / "results/summary.md").read_text()
    _repair(saved)
    listed = subprocess.run(["kotlin-bench", "errors"], cwd=work, capture_output=True, text=True)
    assert "step verify failed" in listed.stdout and "1 errored run(s) found" in listed.stdout, listed.stdout
    # The next snakemake redoes it by itself (the error is kept until then), its verify step only.
    assert planned_jobs(work, *args) == REPORT_JOBS | {"verify": 1}
    assert json.loads(result.read_text())["status"] == "error"
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{result.relative_to(work)}: recorded as an error" in out.stderr
    assert json.loads(result.read_text())["status"] == "resolved"
    assert {p: p.stat().st_mtime_ns for p in (run / "work").iterdir()} == kept  # the agent ran once
    assert planned_jobs(work, *args) == {}

    # A solve step that fails on every try: its verify step records an error of step solve, without a
    # container; `errors --delete` then redoes both.
    saved = _break_the_image(work)
    work_json.unlink()
    result.unlink()
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    recorded = json.loads(result.read_text())
    assert (recorded["status"], recorded["failed_step"]) == ("error", "solve")
    assert json.loads(work_json.read_text())["status"] == "error"
    _repair(saved)
    assert "step solve failed" in _delete_errors(work)
    assert not work_json.exists() and not result.exists()
    assert planned_jobs(work, *args) == REPORT_JOBS | {"solve": 1, "verify": 1}
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(result.read_text())["status"] == "resolved"
