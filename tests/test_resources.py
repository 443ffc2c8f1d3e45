"""Each job's request (threads, mem_mb, runtime, disk_mb) comes from its task and the config.

The sizing rule is checked on task directories, and through real Snakemake dry runs: the 106-task
configuration (its tasks are not materialized here, and the DAG still plans) and an example task edited
in a workspace copy.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from kotlin_bench.dag.resources import ImageSizing, JobResources, RunOverride, Sizing
from kotlin_bench.dataset.task import load_task
from kotlin_bench.runs.budget import solve_budget_sec
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO, TASK_TOML

BUILD_MIN = 15  # the examples' [environment].build_timeout_sec

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
JOB_RE = re.compile(
    r"^rule (?P<rule>solve|verify|task_image|base_image):\n(?P<body>(?:    .*\n)+)", re.MULTILINE
)


def dry_run_jobs(ws: Workspace, *args: str) -> list[dict[str, str]]:
    """Every run/image job of a dry run: its wildcards, threads and resources, as printed by Snakemake."""
    out = ws.snakemake("--dry-run", *args, cores=64)
    assert out.returncode == 0, out.stderr[-3000:]
    jobs = []
    for match in JOB_RE.finditer(out.stdout + "\n"):
        body = match["body"]
        job = {"rule": match["rule"], "threads": "1"}
        for line in body.splitlines():
            key, _, value = line.strip().partition(": ")
            if key == "wildcards":
                job.update(dict(pair.split("=", 1) for pair in value.split(", ")))
            elif key == "threads":
                job["threads"] = value
            elif key == "resources":
                job.update(dict(pair.split("=", 1) for pair in value.split(", ")))
        jobs.append(job)
    return jobs


def expected_step(task_toml: Path, sizing: Sizing, step: str, harbor: bool = False) -> dict[str, str]:
    """The rule, computed here from the task.toml text (not through the package): solve is the agent phase,
    the environment's build or start (and the verifier phase for a Harbor trial, which verifies in it),
    verify the verifier phase; each with the harness's 10 minutes (README)."""
    data = tomllib.loads(task_toml.read_text(encoding="utf-8"))
    agent, verifier = data["agent"]["timeout_sec"], data["verifier"]["timeout_sec"]
    build = data["environment"]["build_timeout_sec"]
    seconds = (agent + build + (verifier if harbor else 0) if step == "solve" else verifier) + 600
    return {
        "threads": str(math.ceil(data["environment"]["cpus"])),
        "mem_mb": str(data["environment"]["memory_mb"] + sizing.harness_mem_mb),
        "runtime": str(math.ceil(seconds / 60) + sizing.margin_min),
        "disk_mb": str(sizing.run_disk_mb),
    }


def test_a_run_asks_for_its_tasks_cpus_memory_and_timeouts(make_task) -> None:
    toml = (
        TASK_TOML.replace("cpus = 1", "cpus = 2.5")
        .replace("memory_mb = 512", "memory_mb = 6000")
        .replace(
            'timeout_sec = 60.0\nnetwork_mode = "public"', 'timeout_sec = 630.0\nnetwork_mode = "public"'
        )
    )
    task = load_task(make_task(toml=toml), require_materialized=False)
    assert task.verifier.timeout_sec == 630.0 and task.agent.timeout_sec == 60.0
    sizing = Sizing()
    # ceil(2.5) cores; memory + the harness; solve: ceil((60 + 600 + 600) / 60) = 21 minutes + the margin,
    # a Harbor trial's solve (which verifies): ceil((60 + 630 + 600 + 600) / 60) = 32; verify:
    # ceil((630 + 600) / 60) = 21
    assert sizing.for_solve(task) == JobResources(3, 6000 + 512, 21 + 15, 1024)
    assert sizing.for_solve(task, verifies_in_trial=True) == JobResources(3, 6512, 32 + 15, 1024)
    assert sizing.for_verify(task) == JobResources(3, 6512, 21 + 15, 1024)
    assert sizing.for_task_image(task) == JobResources(3, 6512, 10 + 15, 20480)  # build_timeout_sec 600
    assert sizing.for_base_image(3600) == JobResources(2, 4096, 60 + 15, 20480)


def test_the_schedulers_runtime_covers_a_harbor_trials_budget(make_task) -> None:
    """Harbor is stopped after its solve budget (the harbor kind passes `solve_budget_sec(task, True)` as
    the trial's timeout); the job must outlive it to record what happened."""
    task = load_task(make_task(), require_materialized=False)
    trial = solve_budget_sec(task, verifies_in_trial=True)
    for sizing in (Sizing(), Sizing(margin_min=0)):
        assert sizing.for_solve(task, verifies_in_trial=True).runtime * 60 >= trial
    assert trial >= task.agent.timeout_sec + task.verifier.timeout_sec + task.environment.build_timeout_sec


def test_a_harbor_agents_solve_asks_for_its_trials_budget(workspace: Workspace) -> None:
    """The DAG sizes a Harbor agent's solve step by the budget its trial gets (one rule for both)."""
    config = workspace.config() | {"agents": [{"name": "h", "kind": "harbor", "harbor_agent": "oracle"}]}
    (workspace.root / "harbor.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    jobs = dry_run_jobs(workspace, "--configfile", "harbor.yaml")
    solves = [j for j in jobs if j["rule"] == "solve"]
    assert solves
    for job in solves:
        toml = workspace.root / "examples/tasks" / job["task"] / "task.toml"
        assert job["runtime"] == expected_step(toml, Sizing(), "solve", harbor=True)["runtime"], job


def test_the_config_changes_the_margins_and_fixes_run_figures(make_task) -> None:
    task = load_task(make_task(), require_materialized=False)
    sizing = Sizing.from_config(
        {
            "harness_mem_mb": 0,
            "margin_min": 1,
            "image": {"mem_mb": 999},
            "run": {"mem_mb": 7777, "runtime": 5},
        }
    )
    assert sizing.image == ImageSizing(mem_mb=999) and sizing.run == RunOverride(mem_mb=7777, runtime=5)
    assert sizing.for_solve(task) == JobResources(threads=1, mem_mb=7777, runtime=5, disk_mb=1024)
    assert sizing.for_verify(task) == JobResources(threads=1, mem_mb=7777, runtime=5, disk_mb=1024)
    assert sizing.for_task_image(task) == JobResources(1, 512, 10 + 1, 20480)  # the override is for runs
    assert sizing.for_base_image(60) == JobResources(2, 999, 2, 20480)


def test_the_schema_lists_the_same_defaults() -> None:
    schema = yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))["properties"]["resources"]["properties"]
    sizing = Sizing()
    for key in ("harness_mem_mb", "margin_min", "run_disk_mb"):
        assert schema[key]["default"] == getattr(sizing, key), key
    for key in ("threads", "mem_mb", "disk_mb"):
        assert schema["image"]["properties"][key]["default"] == getattr(sizing.image, key), key
    assert set(schema["run"]["properties"]) == set(RunOverride.__dataclass_fields__)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace.create(tmp_path_factory.mktemp("resources"), REPO)


def test_the_106_task_dry_run_shows_each_runs_request_from_its_task(workspace: Workspace) -> None:
    config = yaml.safe_load((workspace.root / "config/kotlin-bench.yaml").read_text(encoding="utf-8"))
    jobs = dry_run_jobs(workspace, "--configfile", "config/kotlin-bench.yaml", "--replace-workflow-config")
    tasks = sorted(p.parent.name for p in (workspace.root / "tasks").glob("*/task.toml"))
    assert len(tasks) == 106
    sizing = Sizing()
    for step in ("solve", "verify"):
        runs = [j for j in jobs if j["rule"] == step]
        assert len(runs) == len(tasks) * len(config["agents"]) * config["attempts"]
        for job in runs:
            expected = expected_step(workspace.root / "tasks" / job["task"] / "task.toml", sizing, step)
            assert {k: job[k] for k in expected} == expected, job
    images = [j for j in jobs if j["rule"] == "task_image"]
    assert len(images) == 106 and all(j["mem_mb"] == str(10240 + 512) for j in images)
    bases = [j for j in jobs if j["rule"] == "base_image"]
    assert len(bases) == 13 and all(j["runtime"] == str(60 + 15) for j in bases)


def test_editing_a_task_changes_its_request_and_the_config_overrides_it(workspace: Workspace) -> None:
    workspace.edit_task("examples_calc-4", "environment", "cpus", "3")
    workspace.edit_task("examples_calc-4", "environment", "memory_mb", "3000")
    workspace.edit_task("examples_calc-4", "agent", "timeout_sec", "1200.0")
    runs = {j["task"]: j for j in dry_run_jobs(workspace) if j["rule"] == "solve" and j["agent"] == "oracle"}
    assert (runs["examples_calc-4"]["threads"], runs["examples_calc-4"]["mem_mb"]) == ("3", "3512")
    assert runs["examples_calc-4"]["runtime"] == str(20 + BUILD_MIN + 10 + 15)
    assert (runs["examples_slug-8"]["threads"], runs["examples_slug-8"]["mem_mb"]) == ("1", "2560")

    config = workspace.config()
    config["resources"] = {"margin_min": 0, "run": {"threads": 2}}
    (workspace.root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    runs = {j["task"]: j for j in dry_run_jobs(workspace) if j["rule"] == "solve" and j["agent"] == "oracle"}
    assert {j["threads"] for j in runs.values()} == {"2"}
    assert runs["examples_calc-4"]["runtime"] == str(20 + BUILD_MIN + 10)

    config["resources"] = {"run": {"threads": 0}}
    (workspace.root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out = workspace.snakemake("--dry-run")
    assert out.returncode != 0 and "threads" in out.stdout + out.stderr
