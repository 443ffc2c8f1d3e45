"""The Harbor runner's pure parts: staging on a prebuilt image, mapping trial results, redaction.

The real `harbor` CLI on real containers is exercised in tests/test_agents_e2e.py.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml

from kotlin_bench.dataset.task import load_task
from kotlin_bench.runs.agents.harbor import command, map_trial, redact_secrets, stage_task, trial_compose

TRIAL = {
    "verifier_result": {"rewards": {"reward": 1.0}},
    "exception_info": None,
    "agent_result": {"n_input_tokens": 1200, "n_output_tokens": 300, "cost_usd": 0.02, "n_cache_tokens": 5},
    "agent_execution": {
        "started_at": "2026-11-30T00:00:00+00:00",
        "finished_at": "2026-11-30T00:00:42.5+00:00",
    },
    "verifier": {"started_at": "2026-11-30T00:01:00", "finished_at": "2026-11-30T00:01:10"},
}


def test_stage_points_harbor_at_the_prebuilt_image(make_task, tmp_path: Path) -> None:
    task = load_task(make_task())
    staged = stage_task(task, tmp_path / "stage", isolate_network=False)
    config = tomllib.loads((staged / "task.toml").read_text())
    assert config["environment"]["docker_image"] == "kotlin-bench/acme_widgets:pr-7"
    assert config["agent"]["network_mode"] == "allowlist"
    assert (staged / "tests/expected_tests.json").is_file()
    isolated = tomllib.loads(
        (stage_task(task, tmp_path / "iso", isolate_network=True) / "task.toml").read_text()
    )
    assert "network_mode" not in isolated["agent"] and "allowed_hosts" not in isolated["agent"]
    assert "network_mode" not in isolated["environment"]


def test_stage_names_the_built_image_in_the_compose_file_too(make_task, tmp_path: Path) -> None:
    """Harbor merges the task's compose file after its prebuilt one: the image named there is what it runs
    (or pulls), so it must be the workflow's own name, not the published one it never builds."""
    task = load_task(make_task())
    compose = task.path / "environment/docker-compose.yaml"
    compose.parent.mkdir(exist_ok=True)
    compose.write_text(f"services:\n  main:\n    image: {task.image}\n")
    built = "kotlin-bench/acme_widgets:pr-7.ws-0123abcd"
    staged = stage_task(task, tmp_path / "stage", isolate_network=True, image=built)
    assert tomllib.loads((staged / "task.toml").read_text())["environment"]["docker_image"] == built
    assert yaml.safe_load((staged / "environment/docker-compose.yaml").read_text()) == {
        "services": {"main": {"image": built}}
    }
    assert compose.read_text() == f"services:\n  main:\n    image: {task.image}\n"  # the task's own stays


@pytest.mark.parametrize("isolate", [False, True])
def test_our_trials_stop_the_main_service_quickly_and_isolate_when_asked(isolate: bool) -> None:
    """Harbor's `sleep infinity` main service ignores SIGTERM: without a short grace period each trial's
    `docker compose down` waited 10 s. The compose file merged after Harbor's says so for the main service."""
    main = yaml.safe_load(trial_compose(isolate))["services"]["main"]
    assert main == {"stop_grace_period": "1s"} | ({"network_mode": "none"} if isolate else {})
    baseline = yaml.safe_load(trial_compose(isolate, quick_stop=False)) or {}  # the bench's Harbor defaults
    assert "stop_grace_period" not in str(baseline)


def test_command_carries_model_kwargs_and_overlay(tmp_path: Path) -> None:
    cmd = command(
        "harbor",
        tmp_path / "t",
        "claude-code",
        "anthropic/claude-x",
        tmp_path / "j",
        {"b": "2", "a": "1"},
        tmp_path / "o.yaml",
    )
    assert cmd[:4] == ["harbor", "run", "-p", str(tmp_path / "t")]
    assert cmd[cmd.index("-m") + 1] == "anthropic/claude-x"
    assert [cmd[i + 1] for i, x in enumerate(cmd) if x == "--ak"] == ["a=1", "b=2"]
    assert cmd[-2:] == ["--extra-docker-compose", str(tmp_path / "o.yaml")]


@pytest.mark.parametrize(
    ("trial", "expected"),
    [
        (TRIAL, {"reward": 1.0, "status": "resolved", "reason": None}),
        ({**TRIAL, "verifier_result": {"rewards": {"reward": 0}}}, {"reward": 0.0, "status": "unresolved"}),
        (
            {
                **TRIAL,
                "verifier_result": None,
                "exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "slow"},
            },
            {"reward": 0.0, "status": "unresolved", "reason": "agent_timeout"},
        ),
        (
            {
                **TRIAL,
                "verifier_result": None,
                "exception_info": {"exception_type": "DockerError", "exception_message": "boom"},
            },
            {"reward": None, "status": "error", "reason": "DockerError", "error": "boom"},
        ),
        ({**TRIAL, "verifier_result": None}, {"reward": None, "status": "error", "reason": "no_reward"}),
        # Harbor 0.26: schema_version 1, reward_valid, exception_info.policy
        (
            {**TRIAL, "schema_version": 1, "reward_valid": True},
            {"reward": 1.0, "status": "resolved", "reason": None},
        ),
        (
            {
                **TRIAL,
                "schema_version": 1,
                "reward_valid": False,
                "exception_info": {
                    "exception_type": "ApiError",
                    "exception_message": "overloaded",
                    "policy": {"should_retry": True, "should_grade": True, "has_valid_reward": False},
                },
            },
            {"reward": None, "status": "error", "reason": "ApiError"},
        ),
        (
            {
                **TRIAL,
                "schema_version": 1,
                "verifier_result": {"rewards": {"reward": 0.0}},
                "exception_info": {
                    "exception_type": "ApiError",
                    "exception_message": "overloaded",
                    "policy": {"has_valid_reward": False},
                },
            },
            {"reward": None, "status": "error", "reason": "ApiError"},
        ),
        (
            {
                **TRIAL,
                "schema_version": 1,
                "reward_valid": True,
                "verifier_result": {"rewards": {"reward": 0.0}},
                "exception_info": {
                    "exception_type": "NonZeroAgentExitCodeError",
                    "exception_message": "exit 1",
                    "policy": {"should_retry": False, "should_grade": True, "has_valid_reward": True},
                },
            },
            {"reward": 0.0, "status": "unresolved"},
        ),
    ],
)
def test_map_trial(trial: dict, expected: dict) -> None:
    mapped = map_trial(trial)
    assert {k: getattr(mapped, k) for k in expected} == expected


def test_map_trial_tokens_and_timings() -> None:
    mapped = map_trial(TRIAL)
    assert mapped.agent_result == {
        "n_input_tokens": 1200,
        "n_cache_tokens": 5,
        "n_output_tokens": 300,
        "cost_usd": 0.02,
    }
    assert mapped.timings == {"agent_sec": 42.5, "verifier_sec": 10.0}


def test_redact_secrets(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/log.txt").write_text("key=sk-ant-0123456789 and tok ghp_abcdefgh1234 ok")
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    env = {"ANTHROPIC_API_KEY": "sk-ant-0123456789", "GITHUB_TOKEN": "ghp_abcdefgh1234", "HOME": "/root/home"}
    assert redact_secrets(tmp_path, env) == 1
    assert (tmp_path / "a/log.txt").read_text() == "key=[redacted] and tok [redacted] ok"
