"""`kotlin-bench harvest` end to end, once: the example repositories' pull requests of January 2026 from the
stand-in GitHub API, screened, the candidates validated in real containers on their base variants, the
candidates table, the dated specification, and the normal workflow on it (oracle 1, nop 0); a second
harvest with nothing new plans no job; an API outage ends a harvest naming the page, and the next run goes
on. In a copy of the session's finished run of the examples (its base images), one fix repetition."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.dataset.task import load_task
from kotlin_bench.results.harvest import read_table
from kotlin_bench.tools.github_api import Fault, GitHubApi, Running, example_repositories
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import without_runs

pytestmark = pytest.mark.usefixtures("docker_engine")
WINDOW = "2026-01-01_2026-02-01"
REPOSITORIES = ["examples/calc", "examples/semver"]
TARGETS = [names.harvest_spec("examples", r.split("/")[1], WINDOW) for r in REPOSITORIES]
EXPECTED = {  # every pull request of the window: (verdict, reason)
    ("examples/calc", 10): ("rejected", "not_merged"),
    ("examples/calc", 11): ("rejected", "other_branch"),
    ("examples/calc", 12): ("rejected", "no_issue"),
    ("examples/calc", 13): ("rejected", "no_test_change"),
    ("examples/calc", 14): ("rejected", "no_fix_change"),
    ("examples/calc", 15): ("rejected", "bot"),
    ("examples/calc", 16): ("rejected", "too_large"),
    ("examples/calc", 17): ("rejected", "malformed"),
    ("examples/calc", 18): ("rejected", "unsplittable"),
    ("examples/calc", 19): ("rejected", "base_gone"),
    ("examples/semver", 8): ("accepted", ""),
    ("examples/semver", 10): ("rejected", "flaky"),
    ("examples/semver", 12): ("rejected", "environment"),
    ("examples/semver", 13): ("rejected", "no_test_change"),
    ("examples/semver", 14): ("rejected", "no_fix_change"),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Workspace:
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("harvest") / "ws")
    config = ws.config()
    config["validation"]["repeats"] = 1
    config["github"] = {"retries": 1, "backoff_sec": 0.1}
    ws.write("config.yaml", yaml.safe_dump(config, sort_keys=False))
    return ws


@pytest.fixture(scope="module")
def api(ws: Workspace, tmp_path_factory: pytest.TempPathFactory) -> Any:
    served = example_repositories(ws.root, ws.root / "config.yaml", tmp_path_factory.mktemp("served"))
    running = Running(GitHubApi(served))
    yield running
    running.stop()


def harvest(ws: Workspace, api: Any, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GITHUB_API_URL": api.url, "KOTLIN_BENCH_CACHE": str(ws.root / ".cache")}
    env.pop("GITHUB_TOKEN", None)
    cmd = [sys.executable, "-m", "kotlin_bench", "harvest", *args]
    return subprocess.run(cmd, cwd=ws.root, capture_output=True, text=True, timeout=3600, env=env)


@pytest.fixture(scope="module")
def harvested(ws: Workspace, api: Any) -> subprocess.CompletedProcess[str]:
    out = harvest(ws, api, *REPOSITORIES, "--since", "2026-01-01", "--until", "2026-02-01")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    return out


def test_every_pull_request_has_its_verdict_and_reason(ws: Workspace, harvested: Any) -> None:
    tables = [read_table(ws.root / Path(t).with_name(names.HARVEST_TABLE)) for t in TARGETS]
    table = pd.concat(tables)
    found = {(r.repository, r.number): (r.verdict, r.reason) for r in table.itertuples()}
    assert found == EXPECTED
    assert table.loc[table["verdict"] == "rejected", "detail"].str.len().gt(0).all()
    by = table.set_index("number").loc[[12]].query("repository == 'examples/semver'").iloc[0]
    assert by.detail.startswith(
        "the build fails on every base variant: kotlin-bench/examples_semver:base (fix: build_failed"
    )
    assert "kotlin-bench: examples/semver 2026-01-01_2026-02-01: 1 accepted, 4 rejected" in harvested.stdout
    page = (ws.root / names.harvest_window("examples", "semver", WINDOW) / "harvest.md").read_text()
    assert "1 accepted, 4 rejected, 0 error(s)" in page and "| environment | 1 |" in page


def test_the_valid_pull_request_is_a_dated_task(ws: Workspace, harvested: Any) -> None:
    spec = ws.root / TARGETS[1]
    dataset = load_dataset(spec)
    [task] = dataset.tasks
    assert (task.id, task.merged_at, task.issue_opened_at) == (
        "examples_semver-8",
        "2026-01-14T16:05:00Z",
        "2025-12-28T17:04:00Z",
    )
    assert task.expected_counts == {"f2p": 2, "p2p": 11, "s2p": 0, "n2p": 0}
    api = "GitHub REST API GET /repos/examples/semver"
    assert task.merged is not None and task.merged.source == f"{api}/pulls/8: merged_at"
    assert task.issue_opened is not None and task.issue_opened.source.startswith(f"{api}/issues/")
    toml = (spec.parent / "tasks/examples_semver-8/task.toml").read_text()
    assert 'merged_at = "2026-01-14T16:05:00Z"' in toml and 'issue_opened_at = "2025-12-28T17:04:00Z"' in toml
    assert load_dataset(ws.root / TARGETS[0]).tasks == ()


def test_a_second_harvest_with_nothing_new_plans_no_job(ws: Workspace, harvested: Any) -> None:
    assert ws.planned(*TARGETS) == {}


def test_the_normal_workflow_scores_the_harvested_task(ws: Workspace, harvested: Any) -> None:
    config = names.harvest_window("examples", "semver", WINDOW) + "/" + names.HARVEST_CONFIG
    out = ws.snakemake("--configfile", config, "--replace-workflow-config", timeout=3600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    summary = pd.read_csv(ws.root / names.SUMMARY_CSV).set_index("agent")
    assert list(summary["task"]) == ["examples_semver-8"] * 2
    assert summary.loc["oracle", "reward"] == 1 and summary.loc["nop", "reward"] == 0
    assert load_task(
        ws.root / names.harvest_window("examples", "semver", WINDOW) / "tasks/examples_semver-8"
    ).has_expected_tests


def test_an_outage_ends_the_harvest_naming_the_page_and_the_next_run_goes_on(ws: Workspace, api: Any) -> None:
    api.api.set_faults(Fault.parse("503:/pulls?"))
    out = harvest(ws, api, "examples/calc", "--since", "2025-12-01", "--until", "2026-01-01")
    assert out.returncode != 0
    errors = [
        line for line in out.stderr.splitlines() if line.startswith("kotlin-bench: error: examples/calc")
    ]
    assert errors and errors[0].startswith(
        "kotlin-bench: error: examples/calc pull requests, page 1: GET /repos/examples/calc/pulls?"
    )
    assert "503 Service Unavailable, 2 tries" in errors[0]
    api.api.set_faults()
    out = harvest(ws, api, "examples/calc", "--since", "2025-12-01", "--until", "2026-01-01")
    assert out.returncode == 0, out.stderr[-3000:]
    table = read_table(
        ws.root / names.harvest_window("examples", "calc", "2025-12-01_2026-01-01") / names.HARVEST_TABLE
    )
    assert [(r.number, r.reason) for r in table.itertuples()] == [(8, "no_fix_change")]
