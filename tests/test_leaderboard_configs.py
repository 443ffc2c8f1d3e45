"""The generated configurations for the leaderboard's rows (config/leaderboard/): they match the module
that generates them, load through the config schema and the DAG's plan, stage a task for Harbor, and have
the agent's own web search off, as Harbor's own option model reads the `harbor run` arguments.
No model is called and no container started."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from snakemake.utils import validate

from kotlin_bench.dag.plan import Plan
from kotlin_bench.dataset import leaderboard
from kotlin_bench.results.reproduce.plan import ReproducePlan
from kotlin_bench.runs.agents.harbor import PROVIDER_HOSTS, command, stage_task, trial_hosts
from kotlin_bench.tools.workspace import job_counts
from tests.conftest import REPO, copy_repo, snakemake

HARBOR = Path(os.environ.get("KOTLIN_BENCH_HARBOR", REPO / ".harbor"))
SCHEMA = REPO / "workflow/schemas/config.schema.yaml"
ROWS = leaderboard.load_rows(REPO / "reference/leaderboard.csv")
RUNNABLE = [(row, setup) for row in ROWS if (setup := leaderboard.harbor_setup(row)) is not None]
CONFIGS = {setup.slug: REPO / setup.config_path for _row, setup in RUNNABLE}


def load(path: Path) -> dict[str, Any]:
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    validate(config, str(SCHEMA))  # as rules/common.smk does (fills the schema's defaults)
    return config


def test_configurations_match_their_generator() -> None:
    assert leaderboard.write_configs(ROWS, REPO, check=True) == []
    assert sorted(p.stem for p in (REPO / "config/leaderboard").glob("*.yaml")) == sorted(CONFIGS)


def test_every_row_is_runnable_or_says_why_not() -> None:
    assert len(RUNNABLE) == 13
    not_runnable = [row.setup for row in ROWS if leaderboard.harbor_setup(row) is None]
    assert not_runnable == list(leaderboard.NOT_RUNNABLE)
    assert all(setup.startswith(("Junie", "JetBrains Junie")) for setup in not_runnable)
    index = (REPO / "config/leaderboard/README.md").read_text(encoding="utf-8")
    for setup in not_runnable:
        assert f"- {setup}: Harbor 0.25's junie agent cannot turn off Junie's own web tools" in index


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Each configuration loaded, planned on the 106-task checkout and one task staged: its command."""
    commands = {}
    for slug, path in CONFIGS.items():
        config = load(path)
        plan = Plan.from_config(config, REPO)
        assert len(plan.tasks) == 105 and "linreal_cascade-editor-16" not in plan.tasks
        assert list(plan.agents) == [slug] and plan.attempts == 1
        reproduce = ReproducePlan.from_config(config["reproduce"], list(plan.agents), REPO)
        row = next(row for row, setup in RUNNABLE if setup.slug == slug)
        assert reproduce.references == {slug: row.reference}
        agent = plan.agents[slug]
        task = plan.tasks[sorted(plan.tasks)[0]]
        stage = stage_task(task, tmp_path_factory.mktemp(slug), token="t0")
        toml = (stage / "task.toml").read_text(encoding="utf-8")
        assert f'docker_image = "{task.image}"' in toml and "network_mode" not in toml  # the phase is ours
        assert "[environment.healthcheck]" in toml and "t0" in toml  # its gate and handshake
        assert trial_hosts(agent)[0] in PROVIDER_HOSTS.values()  # its trial runs on the record
        jobs = tmp_path_factory.mktemp(f"{slug}-jobs")
        commands[slug] = command(
            "harbor",
            stage,
            agent.harbor_agent or "",
            model=agent.model,
            jobs_dir=jobs,
            kwargs=dict(agent.kwargs),
            extra_compose=None,
        )
    return commands


def ak(cmd: list[str]) -> list[str]:
    return [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--ak"]


@pytest.mark.parametrize(("row", "setup"), RUNNABLE, ids=[s.slug for _r, s in RUNNABLE])
def test_configuration_stages_the_row_with_web_search_off(
    staged: dict[str, list[str]], row: leaderboard.Row, setup: leaderboard.HarborSetup
) -> None:
    cmd = staged[setup.slug]
    assert cmd[cmd.index("-a") + 1] == setup.harbor_agent
    assert cmd[cmd.index("-m") + 1] == setup.model
    args = ak(cmd)
    assert "disable_web_search=true" in args
    if setup.harbor_agent == "codex":
        assert "web_search=disabled" in args
    efforts = [a for a in args if a.startswith("reasoning_effort=")]
    assert efforts == ([f"reasoning_effort={setup.effort}"] if setup.effort else [])


def harbor_options(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    python = HARBOR / "venv/bin/python"
    if not python.exists():
        if os.environ.get("CI"):
            pytest.fail(f"harbor is not installed at {HARBOR}: CI must run scripts/setup_harbor.sh")
        pytest.skip(f"harbor is not installed at {HARBOR} (scripts/setup_harbor.sh)")
    done = subprocess.run(
        [str(python), str(REPO / "tests/harbor/agent_options.py")],
        input=json.dumps(entries),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_harbor_reads_every_configuration_with_web_search_off(staged: dict[str, list[str]]) -> None:
    """Harbor's own kwarg parser, preflight and option model read the arguments our command passes."""
    entries = [
        {"agent": cmd[cmd.index("-a") + 1], "model": cmd[cmd.index("-m") + 1], "ak": ak(cmd)}
        for cmd in staged.values()
    ]
    # a control: the same agents without the option, so that the check can tell on from off
    controls = [
        {"agent": "claude-code", "model": "anthropic/claude-opus-4-7", "ak": ["reasoning_effort=xhigh"]},
        {"agent": "codex", "model": "openai/gpt-5.5", "ak": ["reasoning_effort=xhigh"]},
        {"agent": "gemini-cli", "model": "gemini/gemini-3-flash-preview", "ak": []},
    ]
    found = harbor_options(entries + controls)
    for entry, seen in zip(entries, found, strict=False):
        assert seen["native_web_tools"] is True, entry
        assert seen["options"]["disable_web_search"] is True, entry
        if entry["agent"] == "claude-code":
            assert "--disallowedTools WebSearch,WebFetch" in seen["cli_flags"], seen
        elif entry["agent"] == "codex":
            assert seen["options"]["web_search"] == "disabled"
            assert "-c web_search=disabled" in seen["cli_flags"], seen
        else:
            assert seen["settings_tools"] == {"exclude": ["google_web_search", "web_fetch"]}, seen
        effort = next((a.split("=", 1)[1] for a in entry["ak"] if a.startswith("reasoning_effort=")), None)
        assert seen["options"]["reasoning_effort"] == effort
    claude, codex, gemini = found[len(entries) :]
    assert claude["options"]["disallowed_tools"] is None and "WebSearch" not in claude["cli_flags"]
    assert codex["options"]["web_search"] is None and "web_search" not in codex["cli_flags"]
    assert gemini["settings_tools"] is None


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_repo(tmp_path_factory.mktemp("checkout"))


# One Snakemake dry run per Harbor agent (4-5 s each): the configurations of one agent differ only in the
# model and its kwargs, which every configuration's `staged` fixture above plans and stages.
DRY_RUNS = sorted({setup.harbor_agent: setup.slug for _row, setup in reversed(RUNNABLE)}.values())


@pytest.mark.parametrize("slug", DRY_RUNS)
def test_dry_run(checkout: Path, slug: str) -> None:
    """The whole DAG of a configuration, planned by Snakemake in a copy of the checkout."""
    config = f"config/leaderboard/{slug}.yaml"
    out = snakemake(checkout, "--dry-run", "--configfile", config, "--replace-workflow-config")
    assert out.returncode == 0, out.stderr[-3000:]
    jobs = job_counts(out.stdout + out.stderr)
    counted = ("solve", "verify", "task_image", "materialize", "aggregate")
    assert tuple(jobs[rule] for rule in counted) == (105, 105, 105, 105, 1)
