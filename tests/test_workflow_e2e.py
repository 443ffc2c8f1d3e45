"""The whole DAG on the example dataset, with real Docker, real kotlinc and real JUnit.

A copy of the repository (tracked and new files, no results) is the workflow's working directory, so the
test never touches the developer's own `results/`. Images are shared with the host's engine and reused.
The first run is the session's (conftest `finished_examples`: it fails there if the workflow fails);
this module works in a clone of it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

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
    assert len(tasks) == 7  # five built by ktest, two by real Gradle (examples_tally-*)
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
    assert (
        f"REPRODUCED: {len(tasks)}/{len(tasks)} tasks agree"
        in (workspace / "results/reproduce/nop.md").read_text()
    )
    # the charts and the site show the rates and comparisons the aggregate wrote again
    assert planned_jobs(workspace, "--configfile", "wrong.yaml") == {"plots": 1, "site": 1, "all": 1}


def test_the_tasks_dates_and_an_agents_cutoff_reach_every_report(
    workspace: Path, first_run: pd.DataFrame, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """summary.csv has each task's merge time (from its task.toml); the site shows the chart by merge
    quarter; a cutoff added to an agent redoes no run, and summary.md, the site and `kotlin-bench
    reproduce` say that the examples are too few to tell (all five dated examples merged after it)."""
    oracle = first_run[first_run.agent == "oracle"].set_index("task")
    assert oracle.loc["examples_calc-6", "merged_at"] == "2024-01-01T06:00:00Z"
    assert pd.isna(oracle.loc["examples_calc-4", "merged_at"])  # never merged in its upstream history
    assert 'rate_by_merge_quarter.png"' in (workspace / "results/site/index.html").read_text()
    agents = "agents:\n  - {name: oracle, kind: oracle, cutoff: 2023-12-31}\n  - {name: nop, kind: nop}\n"
    (workspace / "cutoff.yaml").write_text(agents)
    planned = planned_jobs(workspace, "--configfile", "cutoff.yaml")
    assert not {"solve", "verify", "summary"} & planned.keys(), planned
    out = snakemake(workspace, "--configfile", "cutoff.yaml")
    assert out.returncode == 0, out.stderr[-3000:]
    too_few = "too few tasks merged before or after the cutoff to tell (before 0, after 5;"
    summary_md = (workspace / "results/summary.md").read_text()
    assert f"**oracle** (cutoff 2023-12-31): {too_few}" in summary_md
    assert "2 tasks without merged_at (never merged, or not known) counted on neither side" in summary_md
    assert "**nop**" not in summary_md.split("## Before and after the training cutoff")[1].split("##")[0]
    index = (workspace / "results/site/index.html").read_text()
    assert 'id="cutoff-table"' in index and too_few in index
    from kotlin_bench.tools.cli import main

    args = ["reproduce", "--agent", "oracle", "--reference", "oracle", "--out", str(tmp_path)]
    assert main([*args, "--root", str(workspace), "--cutoff", "2023-12-31"]) == 0
    assert f"oracle (cutoff 2023-12-31): {too_few}" in capsys.readouterr().out
    assert too_few in (tmp_path / "oracle.md").read_text()
