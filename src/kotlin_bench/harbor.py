"""Run a Harbor agent (claude-code, codex, openhands, terminus-2, oracle, nop, or `module:Class`) on a
task image that the workflow built, through the real `harbor` CLI, and map Harbor's trial result into ours.

Harbor alone builds an image for every trial. Here the task directory is staged with
`[environment].docker_image` set to our image, so Harbor uses it as it is and never builds or pulls.
With `isolate_network` (for hosts without a registry, where Harbor's own allowlist images cannot be had)
the staged task's network modes are reset to public and the trial's main service is given
`network_mode: none` through an extra compose file. Credentials reach Harbor through the environment
only; any secret-looking environment value found in copied logs is redacted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kotlin_bench import names
from kotlin_bench.record import RunResult, Status
from kotlin_bench.tasks import Task

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
ISOLATE_COMPOSE = "services:\n  main:\n    network_mode: none\n"
TIMEOUT_REASONS = {"AgentTimeoutError": "agent_timeout", "VerifierTimeoutError": "verifier_timeout"}


class HarborError(RuntimeError):
    """Harbor could not be run or left no usable trial result."""


def default_paths(root: Path) -> tuple[str, str | None]:
    """The harbor binary and DOCKER_CONFIG installed by scripts/setup_harbor.sh (into `$KOTLIN_BENCH_HARBOR`,
    else `<root>/.harbor`), else `harbor` on PATH with the user's own Docker configuration."""
    prefix = Path(os.environ.get("KOTLIN_BENCH_HARBOR") or root / ".harbor")
    local = prefix / "venv/bin/harbor"
    config = prefix / "docker-config"
    return (str(local) if local.exists() else "harbor", str(config) if config.is_dir() else None)


def _set_in_section(toml: str, section: str, line: str) -> str:
    """Insert `line` at the start of `[section]` (task.toml is ours: flat sections, one header each)."""
    header = f"[{section}]\n"
    if header not in toml:
        return f"{toml.rstrip()}\n\n{header}{line}\n"
    return toml.replace(header, f"{header}{line}\n", 1)


def stage_task(task: Task, dest: Path, isolate_network: bool) -> Path:
    """Copy the task directory to `dest/<id>` pointing Harbor at the prebuilt task image."""
    staged = dest / task.id
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(task.path, staged, ignore=shutil.ignore_patterns(names.STAMP))
    toml = (staged / "task.toml").read_text(encoding="utf-8")
    if isolate_network:
        toml = re.sub(r'^network_mode = "[^"]*"\n', "", toml, flags=re.MULTILINE)
        toml = re.sub(r"^allowed_hosts = \[[^\]]*\]\n", "", toml, flags=re.MULTILINE | re.DOTALL)
    toml = _set_in_section(toml, "environment", f'docker_image = "{task.image}"')
    (staged / "task.toml").write_text(toml, encoding="utf-8")
    return staged


def command(
    harbor_bin: str,
    staged: Path,
    agent: str,
    model: str | None,
    jobs_dir: Path,
    kwargs: dict[str, str],
    extra_compose: Path | None,
) -> list[str]:
    cmd = [harbor_bin, "run", "-p", str(staged), "-a", agent, "-o", str(jobs_dir), "--job-name", "job"]
    cmd += ["-n", "1", "-y", "-q", "--no-force-build"]
    if model:
        cmd += ["-m", model]
    for key, value in sorted(kwargs.items()):
        cmd += ["--ak", f"{key}={value}"]
    if extra_compose:
        cmd += ["--extra-docker-compose", str(extra_compose)]
    return cmd


def find_trial_result(jobs_dir: Path) -> Path:
    found = sorted(jobs_dir.glob("job/*/result.json"))
    if len(found) != 1:
        raise HarborError(f"expected one trial result under {jobs_dir / 'job'}, found {len(found)}")
    return found[0]


def _seconds(timing: dict[str, Any] | None) -> float | None:
    if not timing or not timing.get("started_at") or not timing.get("finished_at"):
        return None
    start = datetime.fromisoformat(timing["started_at"])
    end = datetime.fromisoformat(timing["finished_at"])
    return round((end - start).total_seconds(), 2)


USAGE_FIELDS = ("n_input_tokens", "n_cache_tokens", "n_output_tokens", "cost_usd")


@dataclass
class TrialOutcome:
    """What a Harbor trial says about our run: the verdict, timings and the agent's usage."""

    status: Status
    reward: float | None
    reason: str | None = None
    error: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    agent_result: dict[str, Any] = field(default_factory=dict)
    verifier: dict[str, Any] = field(default_factory=dict)
    trial_result: str | None = None

    def apply_to(self, result: RunResult) -> None:
        result.status, result.reward, result.reason, result.error = (
            self.status,
            self.reward,
            self.reason,
            self.error,
        )
        result.timings.update(self.timings)
        result.agent_result = dict(self.agent_result)
        result.verifier = dict(self.verifier)
        result.trial_result = self.trial_result


def map_trial(trial: dict[str, Any]) -> TrialOutcome:
    """Harbor's trial result -> our verdict, timings and usage."""
    rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
    reward = rewards.get("reward", next(iter(rewards.values()), None)) if rewards else None
    exception = trial.get("exception_info") or {}
    kind = exception.get("exception_type")
    timings = {
        "environment_sec": _seconds(trial.get("environment_setup")),
        "agent_setup_sec": _seconds(trial.get("agent_setup")),
        "agent_sec": _seconds(trial.get("agent_execution")),
        "verifier_sec": _seconds(trial.get("verifier")),
    }
    usage = trial.get("agent_result") or {}
    outcome = TrialOutcome(
        status=Status.ERROR,
        reward=None,
        timings={k: v for k, v in timings.items() if v is not None},
        agent_result={k: usage.get(k) for k in USAGE_FIELDS},
    )
    if reward is None:
        outcome.reason = TIMEOUT_REASONS.get(kind or "", kind or "no_reward")
        outcome.error = (exception.get("exception_message") or "Harbor's verifier produced no reward")[:2000]
        if kind in TIMEOUT_REASONS:  # a timeout is the agent's outcome, scored 0, not an infrastructure error
            outcome.status, outcome.reward = Status.UNRESOLVED, 0.0
        return outcome
    outcome.reward = float(reward)
    outcome.status = Status.RESOLVED if outcome.reward == 1.0 else Status.UNRESOLVED
    if outcome.status is Status.UNRESOLVED:
        outcome.reason = TIMEOUT_REASONS.get(kind or "", "unresolved")
    return outcome


def redact_secrets(directory: Path, environ: dict[str, str]) -> int:
    """Replace secret-looking environment values in every text file under `directory`; count files changed."""
    secrets = sorted(
        {v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= 8}, key=len, reverse=True
    )
    changed = 0
    for path in (p for p in directory.rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        redacted = text
        for secret in secrets:
            redacted = redacted.replace(secret, "[redacted]")
        if redacted != text:
            path.write_text(redacted, encoding="utf-8")
            changed += 1
    return changed


def run_trial(
    task: Task,
    harbor_agent: str,
    model: str | None,
    run_dir: Path,
    root: Path,
    kwargs: dict[str, str] | None = None,
    isolate_network: bool = False,
) -> TrialOutcome:
    """Run one Harbor trial on the prebuilt task image; returns its outcome, Harbor's files kept."""
    harbor_bin, docker_config = default_paths(root)
    work = run_dir / "harbor"
    staged = stage_task(task, work / "task", isolate_network)
    extra = None
    if isolate_network:
        extra = work / "isolate.compose.yaml"
        extra.write_text(ISOLATE_COMPOSE, encoding="utf-8")
    env = dict(os.environ)
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's remote price list
    if docker_config:
        env["DOCKER_CONFIG"] = docker_config
    cmd = command(harbor_bin, staged, harbor_agent, model, work / "jobs", kwargs or {}, extra)
    budget = task.agent.timeout_sec + task.verifier.timeout_sec + task.environment.build_timeout_sec + 600
    with (work / "harbor.log").open("w", encoding="utf-8") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        try:
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=budget)
        except FileNotFoundError:
            raise HarborError(f"{harbor_bin} not found; run scripts/setup_harbor.sh") from None
        except subprocess.TimeoutExpired:
            raise HarborError(f"harbor did not finish within {budget:.0f}s") from None
    try:
        trial_path = find_trial_result(work / "jobs")
    except HarborError as exc:
        raise HarborError(f"{exc} (harbor exit {done.returncode}; see {work / 'harbor.log'})") from None
    trial = json.loads(trial_path.read_text(encoding="utf-8"))
    verifier_logs = trial_path.parent / "verifier"
    if verifier_logs.is_dir():
        shutil.copytree(verifier_logs, run_dir / names.VERIFIER_OUT, dirs_exist_ok=True)
    redact_secrets(run_dir, dict(os.environ))
    outcome = map_trial(trial)
    report = run_dir / names.VERIFIER_OUT / names.REPORT_JSON
    if report.is_file():
        outcome.verifier = json.loads(report.read_text(encoding="utf-8"))
        if outcome.status is Status.UNRESOLVED and outcome.reason == "unresolved":
            reasons = outcome.verifier.get("reasons") or ["unresolved"]
            outcome.reason = str(reasons[0]).split(":", 1)[0]
    outcome.trial_result = str(trial_path.relative_to(run_dir))
    return outcome
