"""`kind: harbor`: a Harbor agent (claude-code, codex, gemini-cli, terminus-2, oracle, nop, or
`module:Class`) on a task image that the workflow built, through the real `harbor` CLI; Harbor's trial
result is parsed into our types here, at its boundary (`map_trial`: its own verdict as a `TrialVerdict`,
timings, the agent's usage), and kept as the file it is (the work record's `trial_result`). The run's
verdict is the trial's (`Harbor.verdict`: the published protocol), ours on the captured work beside it.

Harbor alone builds an image for every trial. Here the task directory is staged with
`[environment].docker_image` set to our image, so Harbor uses it as it is and never builds or pulls.

The trial's agent phase is on the record like every other run's: its network modes are taken out of the
staged task (Harbor's own egress control, a host-level sidecar that sees hosts, never runs), and the
main service gets the task's agent network mode through `kotlin_bench.engine.network.enter_phase`, the
function our own phases use: under `allowlist`, the per-run internal network, the recording proxy with
the task's `allowed_hosts` plus what the Harbor agent needs (`AGENT_NEEDS`: its model API and the hosts
its install fetches from), the workspace's CA trusted and the JDKs pointed at the proxy
(`kotlin_bench.runs.agents.harbor_phase` says how, around Harbor's compose project). So `egress.jsonl`,
`flags.retrieval` and the summary's egress columns are filled, and `egress: {retrieval: block}` refuses
retrieval in Harbor trials too. Harbor's own verifier then runs in the same container without network.
An agent whose needs are not known (`AGENT_NEEDS`) is refused when the config is checked, in one line,
rather than run unrecorded; one whose setup or run fails behind the proxy fails the run with the hosts
the proxy refused.

`isolate_network: true` is the explicit choice of no network at all (the trial's main service gets
`network_mode: none` through the extra compose file): nothing is recorded. Credentials reach Harbor
through the environment only; any secret-looking environment value found in copied logs is redacted.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import yaml

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import Usage, WorkRecord
from kotlin_bench.core.record_parts import (
    CaptureOutcome,
    Flag,
    RunVerdict,
    Status,
    Timings,
    TrialVerdict,
    VerifierReport,
)
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine import egress
from kotlin_bench.runs import handoff
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
from kotlin_bench.runs.agents.harbor_phase import (
    PhasePlan,
    Stage,
    TrialPhase,
    compose_environment,
    gate_toml,
    handshake_toml,
)
from kotlin_bench.runs.budget import solve_budget_sec
from kotlin_bench.runs.model_api import ModelOutage, redact
from kotlin_bench.runs.solve import SolveContext, clear, record_egress
from kotlin_bench.runs.tamper import changed_paths, flag_changes
from kotlin_bench.scoring.reasons import classify, detail_of, raw_reasons

SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)
# Harbor's main service runs `sh -c "sleep infinity"`, which ignores SIGTERM: `docker compose down` at the
# end of each trial waited out the 10 s stop timeout. By then the trial is over and its files copied out.
QUICK_STOP = {"stop_grace_period": "1s"}
POLL_SEC = 0.25  # how often the trial's agent phase is looked at while `harbor run` runs


def trial_compose(isolate_network: bool, quick_stop: bool = True) -> str:
    """The compose file merged after Harbor's for our trials: a quick stop (not for a baseline of Harbor's
    own defaults), and no network if asked; otherwise the main service starts on the default bridge, as
    our own phase containers do (its resolv.conf is the host's: once the agent phase has taken the
    container off every network, a name lookup fails at once, as under `network_mode: none`, where
    Docker's embedded resolver of a compose network would keep each waiting for its timeouts), and
    bash reads the agent phase's environment file (`harbor_phase`)."""
    network = (
        {"network_mode": "none"}
        if isolate_network
        else {"network_mode": "bridge", "environment": compose_environment()}
    )
    main = (QUICK_STOP if quick_stop else {}) | network
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
    *,
    capture: handoff.Limits | None = None,
    image: str | None = None,
    token: str | None = None,
) -> Path:
    """Copy the task directory to `dest/<id>` pointing Harbor at the prebuilt task image (`image`: the name
    the workflow built it as; the published name when not given), without Harbor's network modes (its
    egress control never runs: the agent phase is ours). With `capture`,
    the staged task also captures the agent's work before Harbor's verifier changes the tree: a
    `[[verifier.collect]]` hook (Harbor runs it in the agent's container after the agent, before /tests
    exists, after an agent timeout too) writes the diff into /logs/artifacts/kotlin-bench/, which Harbor
    copies into the trial's `artifacts/logs/artifacts/`. With `token`, the agent phase is ours to set
    (`harbor_phase`): the healthcheck that gates the agent and the handshake hook after the capture."""
    staged = dest / task.id
    if staged.exists():
        shutil.rmtree(staged)
    shutil.copytree(task.path, staged, ignore=shutil.ignore_patterns(names.STAMP))
    toml = (staged / "task.toml").read_text(encoding="utf-8")
    toml = re.sub(r'^network_mode = "[^"]*"\n', "", toml, flags=re.MULTILINE)
    toml = re.sub(r"^allowed_hosts = \[[^\]]*\]\n", "", toml, flags=re.MULTILINE | re.DOTALL)
    toml = _set_in_section(toml, "environment", f'docker_image = "{image or task.image}"')
    if capture is not None:
        command = handoff.hook_command(task, capture, ARTIFACTS)
        toml += (
            f"\n[[verifier.collect]]\ncommand = {json.dumps(command)}\ntimeout_sec = {capture.timeout_sec}\n"
        )
    if token is not None:
        toml += handshake_toml(token) + gate_toml()
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
    *,
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


@dataclass
class TrialOutcome:
    """What a Harbor trial says about our run: the verdict, timings and the agent's usage (its
    `agent_result`, in our names)."""

    status: Status
    reward: float | None
    reason: str | None = None
    error: str | None = None
    timings: Timings = field(default_factory=Timings)
    usage: Usage = field(default_factory=Usage)
    verifier: VerifierReport = field(default_factory=VerifierReport)
    trial_result: str | None = None
    trajectory: str | None = None  # the agent's ATIF trajectory.json, relative to the work directory
    phase: TrialPhase | None = None  # the trial's agent phase (None: isolate_network)

    def apply_to(self, record: WorkRecord) -> None:
        """Harbor's verdict into the work record (`trial_verdict`), with its timings and the agent's usage."""
        raw = raw_reasons(self.reason, self.verifier.reasons)
        reason = None if self.status is Status.RESOLVED else str(classify(raw))
        record.trial_verdict = TrialVerdict(
            reward=self.reward,
            status=self.status,
            reason=reason,
            detail=None if reason is None else detail_of(raw),
            error=self.error,
            verifier=self.verifier,
        )
        work = record.work
        work.timings = work.timings.merged(self.timings)
        work.usage = replace(self.usage, trajectory=self.trajectory)
        work.trial_result = self.trial_result
        work.agent_timed_out = self.reason == "agent_timeout"


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
    timings = Timings(
        environment_sec=_seconds(trial.get("environment_setup")),
        agent_setup_sec=_seconds(trial.get("agent_setup")),
        agent_sec=_seconds(trial.get("agent_execution")),
        verifier_sec=_seconds(trial.get("verifier")),
    )
    outcome = TrialOutcome(
        status=Status.ERROR, reward=None, timings=timings, usage=Usage.of_trial(trial.get("agent_result"))
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
    work_dir: Path,
    root: Path,
    *,
    model: str | None = None,
    kwargs: dict[str, str] | None = None,
    capture: handoff.Limits | None = None,
    image: str | None = None,
    engine_env: dict[str, str] | None = None,
    phase: PhasePlan | None = None,
) -> TrialOutcome:
    """Run one Harbor trial on the prebuilt task image; returns its outcome, Harbor's files kept under
    `work_dir/harbor`. `engine_env` points Harbor's Docker CLI at our engine (`Engine.cli_env`: on Podman,
    its Docker API socket and the classic builder). `phase`: the agent phase to set around the trial's
    container (`harbor_phase`); without it the trial has no network (`isolate_network`)."""
    harbor_bin, docker_config = default_paths(root)
    work = work_dir / names.HARBOR_DIR
    token = secrets.token_hex(16) if phase is not None else None
    staged = stage_task(task, work / "task", capture=capture, image=image, token=token)
    extra = work / "extra.compose.yaml"
    extra.write_text(trial_compose(isolate_network=phase is None), encoding="utf-8")
    env = dict(os.environ) | (engine_env or {})
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of LiteLLM's remote price list
    if docker_config:
        env["DOCKER_CONFIG"] = docker_config
    cmd = command(
        harbor_bin,
        staged,
        harbor_agent,
        model=model,
        jobs_dir=work / "jobs",
        kwargs=kwargs or {},
        extra_compose=extra,
    )
    budget = solve_budget_sec(task, verifies_in_trial=True)
    trial_phase = None
    if phase is not None and token is not None:
        trial_phase = TrialPhase(phase, (staged / "environment").resolve(), token)
    with (work / "harbor.log").open("w", encoding="utf-8") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        returncode = _run_harbor(cmd, log, env, budget, trial_phase)
    try:
        trial_path = find_trial_result(work / "jobs")
    except HarborError as exc:
        cause = f"; {trial_phase.error}" if trial_phase and trial_phase.error else ""
        raise HarborError(f"{exc} (harbor exit {returncode}; see {work / 'harbor.log'}){cause}") from None
    trial = json.loads(trial_path.read_text(encoding="utf-8"))
    redact_secrets(work_dir, dict(os.environ))
    outcome = map_trial(trial)
    outcome.phase = trial_phase
    report = trial_path.parent / "verifier" / names.REPORT_JSON
    if report.is_file():
        outcome.verifier = VerifierReport.read(report)
        if outcome.status is Status.UNRESOLVED and outcome.reason == "unresolved":
            outcome.reason = None  # the verifier report's reasons say why
    outcome.trial_result = str(trial_path.relative_to(work_dir))
    trajectory = trial_path.parent / "agent" / "trajectory.json"
    if trajectory.is_file():
        outcome.trajectory = str(trajectory.relative_to(work_dir))
    return outcome


def _run_harbor(
    cmd: list[str], log: IO[str], env: dict[str, str], budget: float, phase: TrialPhase | None
) -> int:
    """`harbor run` to its end (killed after `budget` seconds), its trial's agent phase kept in step."""
    try:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    except FileNotFoundError:
        raise HarborError(f"{cmd[0]} not found; run scripts/setup_harbor.sh") from None
    deadline = time.monotonic() + budget
    try:
        while True:
            try:
                return process.wait(timeout=POLL_SEC)
            except subprocess.TimeoutExpired:
                pass
            if time.monotonic() > deadline:
                raise HarborError(f"harbor did not finish within {budget:.0f}s")
            if phase is not None:
                phase.step()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if phase is not None:
            phase.finish()


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
    programs = ("harbor",)
    logs = (("harbor", f"{names.HARBOR_DIR}/harbor.log"),)
    trajectories = (f"{names.HARBOR_DIR}/jobs/*/*/agent/trajectory.json",)

    def check(self, agent: Agent, root: Path) -> None:
        if not agent.isolate_network:
            trial_hosts(agent)

    def solve(self, ctx: SolveContext) -> WorkRecord:
        agent = ctx.agent
        assert agent.harbor_agent is not None and ctx.engine is not None
        clear(ctx.work_dir)
        record = ctx.new_record()
        plan = None if agent.isolate_network else phase_plan(ctx)
        trial = run_trial(
            ctx.task, agent.harbor_agent, ctx.work_dir, ctx.root, model=agent.model,
            kwargs=model_kwargs(agent), capture=ctx.limits, image=ctx.image_name,
            engine_env=ctx.engine.cli_env(), phase=plan,
        )  # fmt: skip
        redact(ctx.work_dir, agent.passed_env().values())
        phase = trial.phase
        if phase is not None and phase.error:
            raise HarborError(f"harbor trial of {agent.harbor_agent}: {phase.error}")
        if trial.status is Status.ERROR and trial.reason in MODEL_OUTAGES:
            raise ModelOutage(f"harbor trial: {trial.reason}: {trial.error}")
        if trial.status is Status.ERROR:
            raise HarborError(_failure(agent, trial, ctx.work_dir / names.EGRESS_RECORD))
        trial.apply_to(record)
        if trial.trial_result:
            _take_the_capture(ctx, record, ctx.work_dir / Path(trial.trial_result).parent)
        if phase is not None and plan is not None:
            fenced = phase.phase_network.around_proxy if phase.phase_network is not None else None
            record_egress(
                record.work, plan.recording, recorded=phase.recorded, proxied=phase.proxied, fenced=fenced
            )
            record.work.timings.agent_network_sec = phase.entered_sec  # the gate held the agent meanwhile
        record.write(ctx.work_dir / names.WORK_FILE)
        return record

    def verdict(self, work: WorkRecord, ours: RunVerdict | None) -> RunVerdict:
        """The trial's own verdict (its verifier ran in the agent's container: the published protocol);
        ours, on the captured work in a fresh container, beside it (`fresh`), its report and flags, and a
        disagreement flagged. Without a capture the trial's verdict and report stand alone."""
        trial = work.trial_verdict
        if trial is None or work.outcome:
            return super().verdict(work, ours)
        theirs = RunVerdict.scored(
            float(trial.reward or 0.0), trial.reason, trial.detail, error=trial.error, report=trial.verifier
        )
        if ours is None:
            return theirs
        flags = dict(ours.flags)
        if ours.reward != theirs.reward:
            flags[Flag.VERDICTS] = [
                f"the trial's verifier says {theirs.reward:g}, a fresh container says {ours.reward:g}"
                f" ({ours.reason or 'resolved'})"
            ]
        return replace(
            theirs, error=trial.error or ours.error, report=ours.report, flags=flags, fresh=ours.as_verdict()
        )

    def trial_verifier(self, work: WorkRecord) -> str | None:
        """The trial's verifier directory, beside its result.json."""
        trial = work.work.trial_result
        return (Path(trial).parent / "verifier").as_posix() if trial else None


def phase_plan(ctx: SolveContext) -> PhasePlan:
    """The trial's agent phase: the task's agent network mode, its allowed hosts and what the Harbor agent
    needs (`trial_hosts`), recorded as config `egress:` says."""
    assert ctx.engine is not None
    phase = ctx.task.agent
    hosts = (*phase.allowed_hosts, *trial_hosts(ctx.agent)) if phase.network_mode == "allowlist" else ()
    return PhasePlan(
        engine=ctx.engine,
        mode=phase.network_mode,
        allowed_hosts=tuple(dict.fromkeys(hosts)),
        key=ctx.key,
        log_path=ctx.work_dir / names.PROXY_LOG,
        recording=ctx.recording(),
    )


def _failure(agent: Agent, trial: TrialOutcome, record_path: Path) -> str:
    """A trial that failed, in one line: behind the egress proxy, the hosts it refused come first; a gate
    that never opened because the trial's container was never seen says so."""
    message = f"harbor trial failed: {trial.reason}: {trial.error}"
    phase = trial.phase
    if phase is not None and phase.stage is Stage.UNSEEN:
        return (
            f"the trial's main container (compose project directory {phase.project_dir}) was never seen, "
            f"so its agent phase was not set and Harbor's healthcheck stopped it; {message}"
        )
    refused = sorted({r.host for r in egress.read_egress(record_path) if not r.allowed})
    if not refused:
        return message
    return (
        f"harbor agent {agent.harbor_agent} failed behind the egress proxy, which refused "
        f"{', '.join(refused)} (hosts it needs go in the agent's model_hosts:, or isolate_network: true "
        f"runs it without network, unrecorded); {message}"
    )


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
    work = record.work
    work.capture = capture.recorded(with_message=True)
    work.flags = {Flag.LEFT_OUT: capture.review()}
    if capture.outcome is not CaptureOutcome.CAPTURED:
        return
    diff = ctx.work_dir / names.AGENT_DIFF
    shutil.copyfile(hook_dir / names.AGENT_DIFF, diff)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        work.changed_files = changed_paths(lines)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        work.flags |= flag_changes(work.changed_files, lines)
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

# --- what a Harbor agent needs of the network, from inside the trial's container ------------------------

HARBOR_SOURCE = "harbor 0.26.0 (PyPI), harbor/agents"  # the files named below, in the release scripts/setup_harbor.sh pins
# Package mirrors of the task images: Debian's (the examples) and Ubuntu's (the 106 tasks' eclipse-temurin
# bases), for an agent that apt-installs what it misses (`BaseInstalledAgent.ensure_system_dependencies`).
APT_MIRRORS = ("deb.debian.org", "archive.ubuntu.com", "security.ubuntu.com")
# nvm's installer (git clone of github.com/nvm-sh/nvm.git when git is present, else raw files: nvm-sh/nvm
# install.sh, `nvm_source`), then Node from nodejs.org/dist and the agent from the npm registry.
NODE_INSTALL = ("raw.githubusercontent.com", "github.com", "nodejs.org", "registry.npmjs.org")
# A model's API host by the provider prefix of its name (`anthropic/claude-...`): Harbor's defaults
# (harbor 0.26.0, harbor/agents/agent_auth_resolution.py, `PROVIDERS[...].base_urls`).
PROVIDER_HOSTS = {
    "anthropic": "api.anthropic.com",
    "openai": "api.openai.com",
    "gemini": "generativelanguage.googleapis.com",
}


@dataclass(frozen=True)
class Needs:
    """What a Harbor agent reaches from the trial's container: its model API (by the provider of the
    model's name, `provider`: when the name has none) unless it calls the model from the host, and the
    hosts its install fetches from. `source`: where that is read."""

    model_in_container: bool
    provider: str | None = None
    install: tuple[str, ...] = ()
    source: str = ""


AGENT_NEEDS: dict[str, Needs] = {
    "oracle": Needs(False, source=f"{HARBOR_SOURCE}/oracle.py: runs the task's solution/solve.sh, no model"),
    "nop": Needs(False, source=f"{HARBOR_SOURCE}/nop.py: does nothing"),
    "terminus-2": Needs(
        False,
        source=f"{HARBOR_SOURCE}/terminus_2: calls its model through LiteLLM in the harbor process on the host and "
        "drives tmux in the container (tmux is in every task image: bases/*/Dockerfile.base). Its "
        "tmux_session.py `_install_recording_tools` also apt-installs asciinema, for a screen recording "
        "only: that is not let through (refused and recorded), and the trial runs the same without it",
    ),
    "claude-code": Needs(
        True,
        "anthropic",
        (*APT_MIRRORS, "downloads.claude.ai", "storage.googleapis.com"),
        f"{HARBOR_SOURCE}/installed/claude_code.py `install`: apt (curl, bash, nodejs, npm, procps), then "
        "https://downloads.claude.ai/claude-code-releases/bootstrap.sh, whose releases are on "
        "storage.googleapis.com (the claude-code-dist bucket: mirkolenz/nixos "
        "overlays/packages/claude-code-bin/update.sh); proxy and CA through HTTPS_PROXY and "
        "NODE_EXTRA_CA_CERTS (code.claude.com/docs/en/network-config)",
    ),
    "codex": Needs(
        True,
        "openai",
        (*APT_MIRRORS, *NODE_INSTALL),
        f"{HARBOR_SOURCE}/installed/codex.py `install`: apt (curl, bash, nodejs, npm, ripgrep), nvm v0.40.2 from "
        "raw.githubusercontent.com, Node 22 from nodejs.org/dist, npm install -g @openai/codex",
    ),
    "gemini-cli": Needs(
        True,
        "gemini",
        (*APT_MIRRORS, *NODE_INSTALL),
        f"{HARBOR_SOURCE}/installed/gemini_cli.py `install` and node_install.py `nvm_node_install_snippet`: apt "
        "(curl), nvm, Node, npm install -g @google/gemini-cli",
    ),
}


def trial_hosts(agent: Agent) -> tuple[str, ...]:
    """The hosts a Harbor agent's trial adds to the task's allowlist: the model API (the config's
    `model_hosts` and `base_url`, else the provider's) when the agent calls it from the container, and
    the hosts of its install. An agent whose needs are not known (not in `AGENT_NEEDS`, and no
    `model_hosts:` given) is refused: it would fail unrecorded or be recorded wrongly."""
    name = agent.harbor_agent or ""
    needs = AGENT_NEEDS.get(name)
    if needs is None:
        if agent.model_hosts:
            return agent.all_model_hosts()
        raise AgentConfigError(
            f"agent {agent.name!r}: the hosts Harbor's {name} needs behind the egress proxy are not known "
            "(kotlin_bench.runs.agents.harbor.AGENT_NEEDS); list them in model_hosts:, or set "
            "isolate_network: true to run it without network (unrecorded)"
        )
    if not needs.model_in_container:
        return needs.install
    model = agent.all_model_hosts()
    if not model:
        provider = (agent.model or "").split("/", 1)[0] if "/" in (agent.model or "") else needs.provider
        if provider not in PROVIDER_HOSTS:
            raise AgentConfigError(
                f"agent {agent.name!r}: the model API host of {agent.model!r} is not known (providers: "
                f"{', '.join(PROVIDER_HOSTS)}); give base_url: or model_hosts:"
            )
        model = (PROVIDER_HOSTS[provider],)
    return (*model, *needs.install)
