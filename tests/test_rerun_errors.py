"""An infrastructure failure is recorded as an `error` run, stated in the headline, and the documented
rerun command (`kotlin-bench errors --delete`, then `snakemake`) redoes that run and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.conftest import copy_repo, snakemake
from tests.test_workflow_e2e import REPORT_JOBS, planned_jobs

pytestmark = pytest.mark.usefixtures("docker_engine")
TASK = "examples_calc-4"


def test_injected_failure_is_an_error_and_only_it_is_rerun(tmp_path: Path) -> None:
    work = copy_repo(tmp_path / "w")
    (work / "one.yaml").write_text(yaml.safe_dump({"tasks": [TASK], "retries": 1}))
    args = ("--configfile", "one.yaml")
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]

    # Inject: the task image recorded by its sentinel is no longer the one in the engine.
    sentinel = work / f"results/images/task/{TASK}.json"
    original, stat = sentinel.read_bytes(), sentinel.stat()
    sentinel.write_text(json.dumps({**json.loads(original), "id": "sha256:" + "0" * 64}))
    os.utime(sentinel, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    result = work / f"results/runs/oracle/{TASK}/attempt-1/result.json"
    result.unlink()
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    recorded = json.loads(result.read_text())
    assert [t.split(":", 1)[0] for t in recorded["tries"]] == ["try 1 of 2 failed", "try 2 of 2 failed"]
    assert recorded["status"] == "error" and recorded["reward"] is None
    assert "(sha256:000000000000) is no longer in the engine" in recorded["error"]
    summary = pd.read_csv(work / "results/summary.csv").set_index("agent")
    assert summary.loc["oracle", "status"] == "error" and summary.loc["oracle", "reason"] == "infrastructure"
    assert summary.loc["nop", "status"] == "unresolved"
    assert (
        "1 runs errored" in (work / "results/summary.md").read_text()
        or "1 run errored" in (work / "results/summary.md").read_text()
    )

    # Repair, then the documented rerun command.
    sentinel.write_bytes(original)
    os.utime(sentinel, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    listed = subprocess.run(["kotlin-bench", "errors", "--delete"], cwd=work, capture_output=True, text=True)
    assert listed.returncode == 0 and "1 errored run(s) deleted" in listed.stdout, listed.stdout
    assert planned_jobs(work, *args) == REPORT_JOBS | {"run": 1}
    out = snakemake(work, *args)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(result.read_text())["status"] == "resolved"
    assert planned_jobs(work, *args) == {}
