"""`kind: harbor`: a Harbor agent (claude-code, codex, openhands, terminus-2, oracle, nop, or
`module:Class`) on a task image that the workflow built, through the real `harbor` CLI; Harbor's trial
result is mapped into the work record (`harbor`: its own verdict, timings, the agent's usage).

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

import yaml

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import Status, Usage, WorkRecord
from kotlin_bench.dataset.task import Task
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent
from kotlin_bench.runs.budget import solve_budget_sec
from kotlin_bench.runs.model_api import ModelOutage, redact
from kotlin_bench.runs.solve import SolveContext, clear
from kotlin_bench.runs.tamper import changed_paths, flag_changes
from kotlin_bench.scoring.reasons import classify, detail_of, raw_reasons

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Harbor's main service runs `sh -c "sleep infinity"`, which ignores SIGTERM: `docker compose down` at the
# end of each trial waited out the 10 s stop timeout. By then the trial is over and its files copied out.
QUICK_STOP = {"stop_grace_period": "1s"}


def trial_compose(isolate_network: bool, quick_stop: bool = True) -> str:
    """The compose file merged after Harbor's for our trials: a quick stop (not for a baseline of Harbor's
    own defaults), and no network if asked."""
    main = (QUICK_STOP if quick_stop else {}) | ({"network_mode": "none"} if isolate_network else {})
    return yaml.safe_dump({"services": {"main": main}}, sort_keys=False)


ARTIFACTS = (
    "/logs/artifacts"  # in the trial's container; Harbor copies it to <trial>/artifacts/logs/artifacts
)
TIMEOUT_REASONS = {"AgentTimeoutError": "agent_timeout", "VerifierTimeoutError": "verifier_timeout"}


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


def stage_task(
    task: Task,
    dest: Path,
    isolate_network: bool,
    capture: handoff.Limits | None = None,
    image: str | None = None,
) -> Path:
    """Copy the task directory to `dest/<id>` pointing Harbor at the prebuilt task image (`image`: the name
    the workflow built it as; the published name when not given). With `capture`,
    the staged task also captures the agent's work before Harbor's verifier changes the tree: a
    `[[verifier.collect]]` hook (Harbor runs it in the agent's container after the agent, before /tests
    exists, after an agent timeout too) writes the diff into /logs/artifacts/kotlin-bench/, which Harbor
    copies into the trial's `artifacts/logs/artifacts/`."""
    staged = dest / task.id
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(task.path, staged, ignore=shutil.ignore_patterns(names.STAMP))
    toml = (staged / "task.toml").read_text(encoding="utf-8")
    if isolate_network:
        toml = re.sub(r'^network_mode = "[^"]*"\n', "", toml, flags=re.MULTILINE)
        toml = re.sub(r"^allowed_hosts = \[[^\]]*\]\n", "", toml, flags=re.MULTILINE | re.DOTALL)
    toml = _set_in_section(toml, "environment", f'docker_image = "{image or task.image}"')
    if capture is not None:
        command = handoff.hook_command(task, capture, ARTIFACTS)
        toml += (
            f"\n[[verifier.collect]]\ncommand = {json.dumps(command)}\ntimeout_sec = {capture.timeout_sec}\n"
        )
    (staged / "task.toml").write_text(toml, encoding="utf-8")
    if image:
        _name_the_image(staged / "environment/docker-compose.yaml", image)
    return staged


def _name_the_image(compose: Path, image: str) -> None:
    """The staged compose file's main service runs `image`: Harbor merges the task's compose file after
    its prebuilt one, so the published name there (`kotlin-bench/<repo>:pr-<N>`, which the workflow does
    not build) would otherwise win and be pulled."""
    if not compose.is_file():
        return
    document = yaml.safe_load(compose.read_text(encoding="utf-8")) or {}
    main = (document.get("services") or {}).get("main")
    if isinstance(main, dict) and "image" in main:
        main["image"] = image
        compose.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


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
# Harbor's exception types (litellm's, through its agents) that say the model's API failed: a run that
# ended with one is an error of the infrastructure (retried), never the agent's score.
MODEL_OUTAGES = (
    "RateLimitError",
    "APIConnectionError",
    "APIError",
    "ApiError",
    "InternalServerError",
    "ServiceUnavailableError",
    "BadGatewayError",
    "Timeout",
    "APITimeoutError",
    "OutageError",
)


def usage_of(agent_result: dict[str, Any], trajectory: str | None = None) -> Usage:
    """Harbor's `agent_result` as the typed usage every kind reports."""
    return Usage(
        input_tokens=agent_result.get("n_input_tokens"),
        cache_tokens=agent_result.get("n_cache_tokens"),
        output_tokens=agent_result.get("n_output_tokens"),
        cost_usd=agent_result.get("cost_usd"),
        trajectory=trajectory,
    )


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
    trajectory: str | None = None  # the agent's ATIF trajectory.json, relative to the work directory

    def apply_to(self, record: WorkRecord) -> None:
        """Harbor's verdict into the work record (`harbor`), with its timings and the agent's usage."""
        raw = raw_reasons(self.reason, self.verifier.get("reasons"))
        reason = None if self.status is Status.RESOLVED else str(classify(raw))
        record.harbor = {
            "reward": self.reward,
            "status": str(self.status),
            "reason": reason,
            "detail": None if reason is None else detail_of(raw),
            "error": self.error,
            "verifier": dict(self.verifier),
        }
        record.timings.update(self.timings)
        record.agent_result = dict(self.agent_result)
        record.usage = usage_of(self.agent_result, self.trajectory)
        record.trial_result = self.trial_result
        record.agent_timed_out = self.reason == "agent_timeout"


def reward_is_valid(trial: dict[str, Any]) -> bool:
    """Whether Harbor counts the trial's reward. Harbor 0.26 grades after most agent exceptions and says
    so in `reward_valid` (and `exception_info.policy.has_valid_reward`): an `ApiError` can leave a reward
    that is not the agent's outcome. Harbor 0.25 writes neither; its rewards are always valid."""
    if trial.get("reward_valid") is False:
        return False
    policy = (trial.get("exception_info") or {}).get("policy") or {}
    return policy.get("has_valid_reward") is not False


def map_trial(trial: dict[str, Any]) -> TrialOutcome:
    """Harbor's trial result (0.25 or 0.26) -> our verdict, timings and usage. A reward Harbor says is not
    valid (0.26's `reward_valid: false`) is no verdict: the run is an error, retried like any other."""
    rewards = (trial.get("verifier_result") or {}).get("rewards") or {}
    reward = rewards.get("reward", next(iter(rewards.values()), None)) if rewards else None
    exception = trial.get("exception_info") or {}
    kind = exception.get("exception_type")
    if kind in MODEL_OUTAGES:  # the model's API failed the agent: whatever was graded is not its outcome
        reward = None
        exception = {**exception, "exception_message": f"the model API failed ({kind}): "
                     + str(exception.get("exception_message") or "")}  # fmt: skip
    elif reward is not None and not reward_is_valid(trial):
        reward = None
        exception = {
            **exception,
            "exception_message": f"Harbor marked the reward invalid ({kind or 'no exception'}): "
            + str(exception.get("exception_message") or ""),
        }
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
    return redact(directory, [v for k, v in environ.items() if SECRET_NAME.search(k) and len(v) >= 8])


def run_trial(
    task: Task,
    harbor_agent: str,
    model: str | None,
    work_dir: Path,
    root: Path,
    kwargs: dict[str, str] | None = None,
    isolate_network: bool = False,
    capture: handoff.Limits | None = None,
    image: str | None = None,
    engine_env: dict[str, str] | None = None,
) -> TrialOutcome:
    """Run one Harbor trial on the prebuilt task image; returns its outcome, Harbor's files kept under
    `work_dir/harbor`. `engine_env` points Harbor's Docker CLI at our engine (`Engine.cli_env`: on Podman,
    its Docker API socket and the classic builder)."""
    harbor_bin, docker_config = default_paths(root)
    work = work_dir / names.HARBOR_DIR
    staged = stage_task(task, work / "task", isolate_network, capture, image)
    extra = work / "extra.compose.yaml"
    extra.write_text(trial_compose(isolate_network), encoding="utf-8")
    env = dict(os.environ) | (engine_env or {})
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's remote price list
    if docker_config:
        env["DOCKER_CONFIG"] = docker_config
    cmd = command(harbor_bin, staged, harbor_agent, model, work / "jobs", kwargs or {}, extra)
    budget = solve_budget_sec(task, verifies_in_trial=True)
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
    redact_secrets(work_dir, dict(os.environ))
    outcome = map_trial(trial)
    report = trial_path.parent / "verifier" / names.REPORT_JSON
    if report.is_file():
        outcome.verifier = json.loads(report.read_text(encoding="utf-8"))
        if outcome.status is Status.UNRESOLVED and outcome.reason == "unresolved":
            outcome.reason = None  # the verifier report's reasons say why
    outcome.trial_result = str(trial_path.relative_to(work_dir))
    trajectory = trial_path.parent / "agent" / "trajectory.json"
    if trajectory.is_file():
        outcome.trajectory = str(trajectory.relative_to(work_dir))
    return outcome


class HarborError(RuntimeError):
    """Harbor could not be run or left no usable trial result."""


class Harbor(AgentKind):
    """Harbor runs the whole trial (agent and verifier, in one container of its own on our image)."""

    name = "harbor"
    summary = (
        "a Harbor agent (harbor_agent: claude-code, codex, openhands, terminus-2, ...) run by the harbor CLI"
    )
    required = (("harbor_agent", "a Harbor agent name (claude-code, codex, ...) or module:Class"),)
    verifies_in_trial = True

    def solve(self, ctx: SolveContext) -> WorkRecord:
        agent = ctx.agent
        assert agent.harbor_agent is not None and ctx.engine is not None
        clear(ctx.work_dir)
        record = ctx.new_record()
        trial = run_trial(
            ctx.task,
            agent.harbor_agent,
            agent.model,
            ctx.work_dir,
            ctx.root,
            model_kwargs(agent),
            agent.isolate_network,
            ctx.limits,
            ctx.image_name,
            ctx.engine.cli_env(),
        )
        redact(ctx.work_dir, agent.passed_env().values())
        if trial.status is Status.ERROR and trial.reason in MODEL_OUTAGES:
            raise ModelOutage(f"harbor trial: {trial.reason}: {trial.error}")
        if trial.status is Status.ERROR:
            raise HarborError(f"harbor trial failed: {trial.reason}: {trial.error}")
        trial.apply_to(record)
        if trial.trial_result:
            _take_the_capture(ctx, record, ctx.work_dir / Path(trial.trial_result).parent)
        record.write(ctx.work_dir / names.WORK_FILE)
        return record


def model_kwargs(agent: Agent) -> dict[str, str]:
    """The agent's Harbor options, with `base_url` as `api_base` and `price` as LiteLLM's `model_info`
    (for terminus-2 and other LiteLLM agents; options written in `kwargs:` win)."""
    found = dict(agent.kwargs)
    if agent.base_url:
        found.setdefault("api_base", agent.base_url)
    if agent.price:
        info = {"max_input_tokens": 128000, "max_output_tokens": 8192, **dict(agent.price)}
        found.setdefault("model_info", json.dumps(info | {"litellm_provider": "openai", "mode": "chat"}))
    return found


def _take_the_capture(ctx: SolveContext, record: WorkRecord, trial_dir: Path) -> None:
    """The agent's work as the collect hook captured it: into the work directory (`agent.diff`), with
    the capture's record and flags, so that it is verified in a fresh container like any other work.
    Without it, the run keeps only the trial's own verdict."""
    hook_dir = trial_dir / "artifacts" / ARTIFACTS.lstrip("/") / handoff.HOOK_DIR
    capture = handoff.read_hook(hook_dir, ctx.limits)
    record.capture = capture.to_record() | ({"message": capture.message} if capture.message else {})
    record.flags = {"left_out": capture.review()}
    if capture.outcome is not handoff.Outcome.CAPTURED:
        return
    diff = ctx.work_dir / names.AGENT_DIFF
    shutil.copyfile(hook_dir / names.AGENT_DIFF, diff)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        record.changed_files = changed_paths(lines)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        record.flags |= flag_changes(record.changed_files, lines)
    record.diff, record.diff_sha256 = diff.name, file_sha256(diff)


# Harbor's own agent names: a `kind:` of one of these is a Harbor agent, not a kind of ours.
HARBOR_AGENTS = (
    "claude-code",
    "codex",
    "gemini-cli",
    "openhands",
    "terminus-2",
    "aider",
    "goose",
    "cursor-cli",
    "opencode",
    "qwen-coder",
    "mini-swe-agent",
)
