"""The whole DAG on the example dataset, with real Docker, real kotlinc and real JUnit.

A copy of the repository (tracked and new files, no results) is the workflow's working directory, so the
test never touches the developer's own `results/`. Images are shared with the host's engine and reused.
The first run is the session's (conftest `finished_examples`: it fails there if the workflow fails);
this module works in a clone of it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import snakemake

pytestmark = pytest.mark.usefixtures("docker_engine")
# Jobs downstream of any changed run: the summary, its aggregates, plots and site, and the default target.
REPORT_JOBS = {"summary": 1, "aggregate": 1, "plots": 1, "site": 1, "all": 1}


def planned_jobs(workdir: Path, *args: str) -> dict[str, int]:
    """Rule name -> job count of a dry run ({} when there is nothing to do)."""
    out = snakemake(workdir, "--dry-run", *args)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout + out.stderr
    if "Nothing to be done" in text:
        return {}
    block = text.split("Job stats:", 1)[1]
    return {m[1]: int(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+)$", block, re.MULTILINE) if m[1] != "total"}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Path:
    """A clone of the session's finished default run (conftest), which this module then changes."""
    return finished_examples.clone(tmp_path_factory.mktemp("workspace") / "ws").root


@pytest.fixture(scope="module")
def first_run(workspace: Path) -> pd.DataFrame:
    return pd.read_csv(workspace / "results/summary.csv")


def example_tasks(workspace: Path) -> list[str]:
    return sorted(p.parent.name for p in (workspace / "examples/tasks").glob("*/task.toml"))


def test_oracle_resolves_and_nop_does_not(workspace: Path, first_run: pd.DataFrame) -> None:
    tasks = example_tasks(workspace)
    assert len(tasks) == 5
    assert len(first_run) == 2 * len(tasks)
    oracle = first_run[first_run.agent == "oracle"].set_index("task")
    nop = first_run[first_run.agent == "nop"].set_index("task")
    assert sorted(oracle.index) == tasks == sorted(nop.index)
    assert (oracle.reward == 1.0).all(), oracle[["reward", "status", "reason"]]
    assert (oracle.status == "resolved").all()
    assert (nop.reward == 0.0).all(), nop[["reward", "status", "reason"]]
    assert (nop.status == "unresolved").all()
    assert nop.reason.notna().all()


def test_runs_compiled_kotlin_and_ran_junit(workspace: Path, first_run: pd.DataFrame) -> None:
    for task in example_tasks(workspace):
        run = workspace / "results/runs/oracle" / task / "attempt-1"
        junit = (run / "verifier/junit.xml").read_text(encoding="utf-8")
        assert "<testcase" in junit, task
        assert (run / "work/agent.diff").read_text(encoding="utf-8").startswith("diff --git"), task
        assert (run / "verifier/report.json").is_file()
        nop_diff = workspace / "results/runs/nop" / task / "attempt-1/work/agent.diff"
        assert nop_diff.read_bytes() == b""


def test_second_invocation_has_nothing_to_do(workspace: Path, first_run: pd.DataFrame) -> None:
    assert planned_jobs(workspace) == {}


def test_deleting_one_result_reruns_only_that_run(workspace: Path, first_run: pd.DataFrame) -> None:
    task = example_tasks(workspace)[0]
    result = workspace / "results/runs/nop" / task / "attempt-1/result.json"
    result.unlink()
    assert planned_jobs(workspace) == REPORT_JOBS | {"verify": 1}
    out = snakemake(workspace)
    assert out.returncode == 0, out.stderr[-3000:]
    assert result.is_file()
    assert planned_jobs(workspace) == {}


def test_editing_one_dockerfile_rebuilds_that_image_and_its_runs(
    workspace: Path, first_run: pd.DataFrame
) -> None:
    task = example_tasks(workspace)[-1]
    dockerfile = workspace / "examples/tasks" / task / "environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text(encoding="utf-8") + "# edited by the test\n", encoding="utf-8")
    assert planned_jobs(workspace) == REPORT_JOBS | {"task_image": 1, "solve": 2, "verify": 2}
    out = snakemake(workspace)
    assert out.returncode == 0, out.stderr[-3000:]
    summary = pd.read_csv(workspace / "results/summary.csv")
    rerun = summary[summary.task == task].set_index("agent")
    assert rerun.loc["oracle", "reward"] == 1.0 and rerun.loc["nop", "reward"] == 0.0
    assert planned_jobs(workspace) == {}


def test_reproduction_reports_the_tasks_a_wrong_reference_gets_wrong(
    workspace: Path, first_run: pd.DataFrame
) -> None:
    tasks = example_tasks(workspace)
    wrong = "task,resolved\n" + "".join(f"{t},{0 if t == tasks[0] else 1}\n" for t in tasks)
    (workspace / "wrong.csv").write_text(wrong)
    (workspace / "wrong.yaml").write_text("reproduce:\n  reference: {oracle: wrong.csv, nop: nop}\n")
    out = snakemake(workspace, "results/summary.md", "--configfile", "wrong.yaml")
    assert out.returncode == 0, out.stderr[-3000:]
    oracle = (workspace / "results/reproduce/oracle.md").read_text()
    assert f"NOT REPRODUCED: 1 task differs: {tasks[0]}" in oracle
    assert "REPRODUCED: 5/5 tasks agree" in (workspace / "results/reproduce/nop.md").read_text()
    assert planned_jobs(workspace, "--configfile", "wrong.yaml") == {"plots": 1, "all": 1}


def test_a_run_that_adds_an_agent_can_be_watched_and_ends_on_the_headline(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    """Issue 31, watched as a user would in a second terminal: adding an agent to a finished run keeps the
    previous summary.csv readable (`compare` answers) while the new runs go, the agent is one row (a
    task without a prediction is its run too: `no_prediction`), the progress line counts this
    invocation's runs only, and the terminal ends on the per-agent headline."""
    ws = finished_examples.clone(tmp_path / "ws")
    tasks = example_tasks(ws.root)
    covered = tasks[0]
    diff = (ws.root / names.work_dir("oracle", covered, 1) / names.AGENT_DIFF).read_text()
    line = {"instance_id": covered, "model_name_or_path": "gold", "model_patch": diff}
    ws.write("gold.jsonl", json.dumps(line) + "\n")
    config = ws.config()
    config["agents"] = [
        *config["agents"],
        {"name": "gold", "kind": "predictions", "predictions": "gold.jsonl"},
    ]
    (ws.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    before = (ws.root / names.SUMMARY_CSV).read_bytes()

    process = ws.popen()
    try:
        work = ws.root / names.work_dir("gold", covered, 1) / names.WORK_FILE
        deadline = time.monotonic() + 600
        while not work.is_file() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert work.is_file(), (ws.root / "snakemake.out").read_text()[-3000:]
        # the new agent's verification of a real patch is still going: the summary is the previous one
        assert (ws.root / names.SUMMARY_CSV).read_bytes() == before
        compared = subprocess.run(
            [sys.executable, "-m", "kotlin_bench", "compare", "oracle", "nop"],
            cwd=ws.root, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert compared.returncode == 0 and f"{len(tasks)} tasks both ran" in compared.stdout, compared.stderr
        assert process.wait(timeout=1800) == 0
    finally:
        if process.poll() is None:
            process.kill()
    out = (ws.root / "snakemake.out").read_text()
    summary = pd.read_csv(ws.root / names.SUMMARY_CSV).set_index("task")
    gold = summary[summary["agent"] == "gold"]
    assert len(gold) == len(tasks) and set(gold["model"]) == {"gold"}
    assert gold.loc[covered, "status"] == "resolved"
    assert set(gold.drop(index=covered)["reason"]) == {"no_prediction"}
    progress = [x for x in out.splitlines() if x.startswith("kotlin-bench: runs ")]
    assert progress and progress[-1].startswith(f"kotlin-bench: runs {len(tasks)}/{len(tasks)} done"), (
        progress
    )
    lines = [x for x in out.splitlines() if x.strip()]
    details = max(i for i, x in enumerate(lines) if x.startswith("kotlin-bench: details: results/summary.md"))
    after = lines[details + 1 :]  # only Snakemake's own closing lines (its log, the elapsed time)
    assert len(after) <= 2 and not any("job" in x.lower() or x.startswith("rule ") for x in after), after
    headline = lines[details - 6 : details]
    assert any(x.startswith(f"kotlin-bench: gold: 1/{len(tasks)} resolved") for x in headline), headline
    assert any(x.startswith(f"kotlin-bench: oracle: {len(tasks)}/{len(tasks)} resolved") for x in headline)
