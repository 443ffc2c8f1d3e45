"""The Harbor runner's pure parts: staging on a prebuilt image (with the gate and handshake of the trial's
agent phase), what each Harbor agent is let reach, mapping trial results, redaction.

The real `harbor` CLI on real containers is exercised in tests/test_agents_e2e.py (oracle and nop) and
tests/test_model_agents_e2e.py (terminus-2 on the record: honest, flagged, refused).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.core.record import Usage
from kotlin_bench.dataset.task import load_task
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents import Agent
from kotlin_bench.runs.agents.config import AgentConfigError
from kotlin_bench.runs.agents.harbor import (
    APT_MIRRORS,
    _failure,
    command,
    map_trial,
    redact_secrets,
    stage_task,
    trial_compose,
    trial_hosts,
)
from kotlin_bench.runs.agents.harbor_phase import env_file

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


def test_stage_points_harbor_at_the_prebuilt_image_and_gates_the_agent(make_task, tmp_path: Path) -> None:
    """Harbor's own network modes are gone (its egress control never runs); with a token the agent waits
    for its phase (the healthcheck) and the collect hooks end with the handshake, after the capture."""
    task = load_task(make_task())
    isolated = tomllib.loads((stage_task(task, tmp_path / "iso") / "task.toml").read_text())
    assert isolated["environment"]["docker_image"] == "kotlin-bench/acme_widgets:pr-7"
    assert "network_mode" not in isolated["agent"] and "allowed_hosts" not in isolated["agent"]
    assert "network_mode" not in isolated["environment"] and "healthcheck" not in isolated["environment"]
    staged = stage_task(task, tmp_path / "stage", capture=handoff.Limits(), token="t0k3n")
    config = tomllib.loads((staged / "task.toml").read_text())
    assert (staged / "tests/expected_tests.json").is_file()
    assert "network_mode" not in config["agent"] and "network_mode" not in config["verifier"]
    gate = config["environment"]["healthcheck"]
    assert f"{names.CONTAINER_TRIAL_DIR}/ready" in gate["command"] and gate["retries"] == 1
    capture, handshake = config["verifier"]["collect"]
    assert "handoff.sh" in capture["command"] and "t0k3n" not in capture["command"]
    assert (
        handshake["command"].count("t0k3n") == 2
        and f"{names.CONTAINER_TRIAL_DIR}/switched" in handshake["command"]
    )


def test_stage_names_the_built_image_in_the_compose_file_too(make_task, tmp_path: Path) -> None:
    """Harbor merges the task's compose file after its prebuilt one: the image named there is what it runs
    (or pulls), so it must be the workflow's own name, not the published one it never builds."""
    task = load_task(make_task())
    compose = task.path / "environment/docker-compose.yaml"
    compose.parent.mkdir(exist_ok=True)
    compose.write_text(f"services:\n  main:\n    image: {task.image}\n")
    built = "kotlin-bench/acme_widgets:pr-7.ws-0123abcd"
    staged = stage_task(task, tmp_path / "stage", image=built)
    assert tomllib.loads((staged / "task.toml").read_text())["environment"]["docker_image"] == built
    assert yaml.safe_load((staged / "environment/docker-compose.yaml").read_text()) == {
        "services": {"main": {"image": built}}
    }
    assert compose.read_text() == f"services:\n  main:\n    image: {task.image}\n"  # the task's own stays


@pytest.mark.parametrize("isolate", [False, True])
def test_our_trials_stop_the_main_service_quickly_and_isolate_when_asked(isolate: bool) -> None:
    """Harbor's `sleep infinity` main service ignores SIGTERM: without a short grace period each trial's
    `docker compose down` waited 10 s. The compose file merged after Harbor's says so for the main service,
    and either takes its network away or has bash read the agent phase's environment."""
    main = yaml.safe_load(trial_compose(isolate))["services"]["main"]
    phase = {"network_mode": "bridge", "environment": {"BASH_ENV": f"{names.CONTAINER_TRIAL_DIR}/phase.env"}}
    assert main == {"stop_grace_period": "1s"} | ({"network_mode": "none"} if isolate else phase)
    baseline = yaml.safe_load(trial_compose(isolate, quick_stop=False)) or {}  # the bench's Harbor defaults
    assert "stop_grace_period" not in str(baseline)


def test_command_carries_model_kwargs_and_overlay(tmp_path: Path) -> None:
    cmd = command(
        "harbor",
        tmp_path / "t",
        "claude-code",
        model="anthropic/claude-x",
        jobs_dir=tmp_path / "j",
        kwargs={"b": "2", "a": "1"},
        extra_compose=tmp_path / "o.yaml",
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
    mapped = map_trial(TRIAL)  # Harbor's `agent_result`, parsed into our usage at Harbor's boundary
    assert mapped.usage == Usage(input_tokens=1200, cache_tokens=5, output_tokens=300, cost_usd=0.02)
    assert mapped.timings.items() == [("agent_sec", 42.5), ("verifier_sec", 10.0)]


def test_redact_secrets(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a/log.txt").write_text("key=sk-ant-0123456789 and tok ghp_abcdefgh1234 ok")
    (tmp_path / "bin").write_bytes(b"\xff\xfe")
    env = {"ANTHROPIC_API_KEY": "sk-ant-0123456789", "GITHUB_TOKEN": "ghp_abcdefgh1234", "HOME": "/root/home"}
    assert redact_secrets(tmp_path, env) == 1
    assert (tmp_path / "a/log.txt").read_text() == "key=[redacted] and tok [redacted] ok"


def test_each_harbor_agent_reaches_its_model_and_install_hosts_only() -> None:
    """terminus-2 calls its model from the host: its container needs nothing (not even the base_url's
    host); an installed agent reaches its provider's API (or the configured one) and its install's hosts;
    an agent whose needs are not known is refused in one line unless model_hosts says what it needs."""
    url = "http://172.17.0.1:8808/v1"
    assert trial_hosts(Agent("t", "harbor", model="openai/x", harbor_agent="terminus-2", base_url=url)) == ()
    assert trial_hosts(Agent("o", "harbor", harbor_agent="oracle")) == ()
    claude = trial_hosts(Agent("c", "harbor", model="anthropic/claude-opus-4-7", harbor_agent="claude-code"))
    assert claude[0] == "api.anthropic.com" and set(APT_MIRRORS) <= set(claude)
    assert "downloads.claude.ai" in claude and "registry.npmjs.org" not in claude
    codex = trial_hosts(Agent("x", "harbor", model="openai/gpt-5.5", harbor_agent="codex", base_url=url))
    assert codex[0] == "172.17.0.1" and "api.openai.com" not in codex and "registry.npmjs.org" in codex
    with pytest.raises(AgentConfigError) as refused:
        trial_hosts(Agent("oh", "harbor", model="openai/x", harbor_agent="openhands"))
    assert "\n" not in str(refused.value) and "isolate_network: true" in str(refused.value)
    custom = Agent("m", "harbor", harbor_agent="mine:Agent", model_hosts=("llm.example.test",))
    assert trial_hosts(custom) == ("llm.example.test",)
    with pytest.raises(AgentConfigError, match="model API host"):
        trial_hosts(Agent("c", "harbor", model="mistral/large", harbor_agent="claude-code"))


def test_a_trial_that_fails_behind_the_proxy_names_what_it_refused(tmp_path: Path) -> None:
    failed = map_trial({**TRIAL, "verifier_result": None, "exception_info": {
        "exception_type": "RuntimeError", "exception_message": "Agent setup failed: npm ERR! 403"}})  # fmt: skip
    agent = Agent("c", "harbor", model="anthropic/x", harbor_agent="claude-code")
    record = tmp_path / names.EGRESS_RECORD
    assert _failure(agent, failed, record).startswith("harbor trial failed: RuntimeError: Agent setup failed")
    lines = [
        {"host": "registry.npmjs.org", "allowed": False, "status": 403},
        {"host": "api.anthropic.com", "allowed": True, "status": 200},
    ]
    record.write_text("".join(json.dumps(line) + "\n" for line in lines))
    message = _failure(agent, failed, record)
    assert message.startswith("harbor agent claude-code failed behind the egress proxy, which refused "
                              "registry.npmjs.org (")  # fmt: skip
    assert "api.anthropic.com" not in message and "npm ERR! 403" in message


def test_the_phase_environment_is_read_by_bash_as_it_is() -> None:
    text = env_file({"https_proxy": "http://egress-proxy:3128", "ODD": "it's $HOME"}).decode()
    assert text == "export ODD='it'\"'\"'s $HOME'\nexport https_proxy=http://egress-proxy:3128\n"
