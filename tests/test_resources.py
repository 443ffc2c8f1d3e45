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
from kotlin_bench.runs.budget import run_budget_sec
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO, TASK_TOML

BUILD_MIN = 15  # the examples' [environment].build_timeout_sec

SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
JOB_RE = re.compile(r"^rule (?P<rule>run|task_image|base_image):\n(?P<body>(?:    .*\n)+)", re.MULTILINE)


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


def expected_run(task_toml: Path, sizing: Sizing) -> dict[str, str]:
    """The rule, computed here from the task.toml text (not through the package)."""
    data = tomllib.loads(task_toml.read_text(encoding="utf-8"))
    # both phases, the environment's build or start, and the harness's 10 minutes (README)
    seconds = (
        data["agent"]["timeout_sec"]
        + data["verifier"]["timeout_sec"]
        + data["environment"]["build_timeout_sec"]
    ) + 600
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
    # ceil(2.5) cores; memory + the harness; ceil((60 + 630 + 600 + 600) / 60) = 32 minutes + the margin
    assert sizing.for_run(task) == JobResources(3, 6000 + 512, 32 + 15, 1024)
    assert sizing.for_task_image(task) == JobResources(3, 6512, 10 + 15, 20480)  # build_timeout_sec 600
    assert sizing.for_base_image(3600) == JobResources(2, 4096, 60 + 15, 20480)


def test_the_schedulers_runtime_covers_a_harbor_trials_budget(make_task) -> None:
    """Harbor is stopped after `run_budget_sec`; the job must outlive it to record what happened."""
    task = load_task(make_task(), require_materialized=False)
    for sizing in (Sizing(), Sizing(margin_min=0)):
        assert sizing.for_run(task).runtime * 60 >= run_budget_sec(task)
    assert run_budget_sec(task) >= task.agent.timeout_sec + task.verifier.timeout_sec + 600


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
    assert sizing.for_run(task) == JobResources(threads=1, mem_mb=7777, runtime=5, disk_mb=1024)
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
    runs = [j for j in jobs if j["rule"] == "run"]
    tasks = sorted(p.parent.name for p in (workspace.root / "tasks").glob("*/task.toml"))
    assert len(tasks) == 106
    assert len(runs) == len(tasks) * len(config["agents"]) * config["attempts"]
    sizing = Sizing()
    for job in runs:
        expected = expected_run(workspace.root / "tasks" / job["task"] / "task.toml", sizing)
        assert {k: job[k] for k in expected} == expected, job
    images = [j for j in jobs if j["rule"] == "task_image"]
    assert len(images) == 106 and all(j["mem_mb"] == str(10240 + 512) for j in images)
    bases = [j for j in jobs if j["rule"] == "base_image"]
    assert len(bases) == 13 and all(j["runtime"] == str(60 + 15) for j in bases)


def test_editing_a_task_changes_its_request_and_the_config_overrides_it(workspace: Workspace) -> None:
    workspace.edit_task("examples_calc-4", "environment", "cpus", "3")
    workspace.edit_task("examples_calc-4", "environment", "memory_mb", "3000")
    workspace.edit_task("examples_calc-4", "agent", "timeout_sec", "1200.0")
    runs = {j["task"]: j for j in dry_run_jobs(workspace) if j["rule"] == "run" and j["agent"] == "oracle"}
    assert (runs["examples_calc-4"]["threads"], runs["examples_calc-4"]["mem_mb"]) == ("3", "3512")
    assert runs["examples_calc-4"]["runtime"] == str(20 + 5 + BUILD_MIN + 10 + 15)
    assert (runs["examples_slug-8"]["threads"], runs["examples_slug-8"]["mem_mb"]) == ("1", "2560")

    config = workspace.config()
    config["resources"] = {"margin_min": 0, "run": {"threads": 2}}
    (workspace.root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    runs = {j["task"]: j for j in dry_run_jobs(workspace) if j["rule"] == "run" and j["agent"] == "oracle"}
    assert {j["threads"] for j in runs.values()} == {"2"}
    assert runs["examples_calc-4"]["runtime"] == str(20 + 5 + BUILD_MIN + 10)

    config["resources"] = {"run": {"threads": 0}}
    (workspace.root / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    out = workspace.snakemake("--dry-run")
    assert out.returncode != 0 and "threads" in out.stdout + out.stderr
