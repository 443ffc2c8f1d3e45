"""The solve step of a run: the agent phase, and the agent's work taken from its container.

An agent kind (`kotlin_bench.runs.agents`) either acts in a container from the task image, which this
module starts and ends (`solve_in_container`), or runs its own trial (Harbor). Either way the step ends
with a work record (`kotlin_bench.core.record.WorkRecord`) in the run's work directory:

1. a container from the task image, labelled with the run's key, the agent phase under `[agent]` timeout
   and network mode (the kind's `act`); an agent phase that hit the container's process limit (a fork
   bomb) is recorded (`agent_process_limit`), and its container's processes are ended, as after a
   timed-out phase, so that the harness can start its own;
2. the agent's work captured as one diff against the base commit (`kotlin_bench.runs.handoff.capture`)
   into `work/agent.diff`; what it changed outside the repository, and what in the diff touches test
   infrastructure, is flagged (`kotlin_bench.runs.tamper`); the container is removed;
3. `work/work.json`, written last.

Around a model-driven agent (`kotlin_bench.runs.model_api`): the agent's `env:` reaches the phase from the
host's environment and its values are redacted from every file of the work directory; an allowlist phase
lets the agent's model hosts through its proxy; the agent's usage is the record's `usage`; a model outage
the harness saw raises `ModelOutage` (retried, never scored).

An unresolvable outcome of the agent (an empty prediction, a capture that failed because of what the
agent did) is part of the record (`outcome`), for the verify step to score. A failure of the harness or
the engine raises: the step has no record.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.core.checkout import running_code
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import AgentWork, EgressSummary, RunKey, Usage, WorkRecord
from kotlin_bench.core.record_parts import CaptureOutcome, Flag, ModelOutageClaim, Timings
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.engine import containers, egress
from kotlin_bench.engine.images import workdir_label
from kotlin_bench.engine.phase import Limits, PhaseContainer
from kotlin_bench.runs import handoff
from kotlin_bench.runs.model_api import ModelOutage, confirm_outage, redact
from kotlin_bench.runs.tamper import changed_paths, flag_changes, outside_changes
from kotlin_bench.scoring.reasons import Reason

if TYPE_CHECKING:
    from docker.models.containers import Container

    from kotlin_bench.dataset.task import Task
    from kotlin_bench.engine.engine import Engine
    from kotlin_bench.engine.fence import Refused
    from kotlin_bench.runs.agents.config import Agent

CAPTURE_REASONS = {
    CaptureOutcome.TOO_LARGE: Reason.DIFF_TOO_LARGE,
    CaptureOutcome.WORK_TREE_GONE: Reason.WORK_TREE_GONE,
    CaptureOutcome.UNAVAILABLE: Reason.DIFF_UNAVAILABLE,
}


@dataclass(frozen=True, kw_only=True)
class SolveContext:
    """What the solve step of one (task, agent, attempt) works with."""

    engine: Engine | None  # None for kinds that need no image (`AgentKind.needs_image`)
    task: Task
    agent: Agent
    attempt: int
    work_dir: Path
    image_id: str | None
    limits: handoff.Limits
    key: str
    root: Path  # the workflow directory
    read: tuple[str, ...] = (names.INSTRUCTION,)  # materialized task files the agent phase reads
    image_name: str | None = None  # the task image's name as built (`names.built_task_image`)
    egress: egress.EgressPolicy = field(default_factory=egress.EgressPolicy)  # config `egress:`
    facts: Facts = field(
        default_factory=Facts
    )  # the task's facts for the retrieval rule (`kotlin_bench.core.retrieval`)

    def recording(self) -> egress.EgressSetup:
        """The agent phase's egress record: the workspace's CA, the record in the work directory."""
        urls = self.egress.record is egress.Record.URLS
        ca = egress.ensure_ca(self.root / names.EGRESS_CA_DIR) if urls else self.root
        return egress.EgressSetup(self.egress, self.facts, ca, self.work_dir / names.EGRESS_RECORD)

    def new_record(self) -> WorkRecord:
        task, agent = self.task, self.agent
        return WorkRecord(
            RunKey(task.id, task.repository, agent.name, agent.kind, agent.model, self.attempt),
            work=AgentWork(image=self.image_name or task.image, image_id=self.image_id),
            code=running_code(),
            inputs={rel: file_sha256(task.path / rel) for rel in self.read if (task.path / rel).is_file()},
        )


@dataclass(frozen=True)
class Outcome:
    """What an agent phase in our container did: its exec result, a vocabulary reason when it ends the
    run before verification (with a message), the model seen, its usage and an outage it claimed."""

    exec: containers.ExecResult
    skip_reason: str | None = None
    message: str | None = None
    model: str | None = None
    usage: Usage = field(default_factory=Usage)
    outage_claim: str | None = None  # what the agent said of its model API's failure (a script's file)


NOTHING = containers.ExecResult(exit_code=0, timed_out=False, seconds=0.0)
Act = Callable[["Container", Path, dict[str, str]], Outcome]


def clear(work_dir: Path) -> None:
    """Remove what an earlier try left, so nothing stale is taken as this try's work."""
    if work_dir.exists():
        shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True)


def solve_in_container(ctx: SolveContext, act: Act, harness_paths: tuple[str, ...]) -> WorkRecord:
    """The agent phase in a container from the task image (`act(container, log_path, env)`), then the
    capture of its work; returns the record written to work.json."""
    task, work_dir = ctx.task, ctx.work_dir
    assert ctx.engine is not None and ctx.image_id is not None, "an agent that acts needs the task image"
    clear(work_dir)
    record = ctx.new_record()
    work = record.work
    started = time.monotonic()
    labels = {names.LABEL_TASK: task.id, names.LABEL_AGENT: ctx.agent.name}
    diff = work_dir / names.AGENT_DIFF
    limits = Limits.of(task, ctx.engine.settings)
    phase, hosts = task.agent, ctx.agent.all_model_hosts()
    if phase.network_mode == "allowlist" and hosts:
        phase = replace(phase, allowed_hosts=(*phase.allowed_hosts, *hosts))
    passed = ctx.agent.passed_env()
    with PhaseContainer(
        ctx.engine, ctx.image_id, ctx.key, labels | {names.LABEL_PHASE: "agent"}, limits, phase=phase
    ) as box:
        recording = ctx.recording()
        with box.network(phase, log_path=work_dir / names.PROXY_LOG, recording=recording) as net:
            outcome = act(box.container, work_dir / names.AGENT_LOG, {**net.env, **passed})
            record.agent_process_limit = _settle(box, outcome, work_dir / names.AGENT_LOG)
            touched, recorded, proxied = net.harness_paths, net.egress is not None, net.proxy is not None
        fenced = net.around_proxy  # read when the phase's network was removed
        with ThreadPoolExecutor(max_workers=1) as pool:
            # the engine's list of changed files (a walk of the container's layer) is made while the work
            # is captured: the capture writes under /tmp only, which the list leaves out
            changes = pool.submit(box.changes)
            capture = handoff.capture(
                box.container,
                task,
                ctx.limits,
                diff,
                work_dir / names.CAPTURE_LOG,
                image=ctx.image_id,
                labels=labels | workdir_label() | {names.LABEL_RUN: ctx.key, names.LABEL_PHASE: "pristine"},
            )
            outside = outside_changes(changes.result(), task.repo_dir, (*harness_paths, *touched))
    redact(work_dir, passed.values())
    record.key = replace(record.key, model=outcome.model or record.model)
    work.usage = outcome.usage
    if outcome.outage_claim is not None:
        seen = confirm_outage(outcome.outage_claim, work_dir / names.EGRESS_RECORD, hosts)
        if seen is not None:
            raise ModelOutage(seen)
        record.model_outage = ModelOutageClaim(outcome.outage_claim[:600], confirmed=False)
    record.agent_exit_code = outcome.exec.exit_code
    work.agent_timed_out = outcome.exec.timed_out
    record.engine = ctx.engine.describe()
    work.timings = Timings(agent_sec=round(outcome.exec.seconds, 2), capture_sec=round(capture.seconds, 2))
    work.capture = capture.recorded(with_message=False)
    with diff.open(encoding="utf-8", errors="replace") as lines:  # line by line: it may be large
        work.changed_files = changed_paths(lines)
    with diff.open(encoding="utf-8", errors="replace") as lines:
        work.flags = flag_changes(work.changed_files, lines)
    work.flags |= {Flag.OUTSIDE_REPO: outside, Flag.LEFT_OUT: capture.review()}
    record_egress(work, recording, recorded=recorded, proxied=proxied, fenced=fenced)
    if capture.outcome is not CaptureOutcome.CAPTURED:
        record.outcome, record.error = CAPTURE_REASONS[capture.outcome], capture.message or None
    elif outcome.skip_reason:
        record.outcome, record.error = outcome.skip_reason, outcome.message or None
    else:
        record.diff, record.diff_sha256 = diff.name, file_sha256(diff)
        if capture.committed_bytes:
            record.committed = names.COMMITTED_DIFF
    work.timings.solve_sec = round(time.monotonic() - started, 2)
    record.write(work_dir / names.WORK_FILE)
    return record


def record_egress(
    work: AgentWork,
    recording: egress.EgressSetup,
    *,
    recorded: bool,
    proxied: bool,
    fenced: Refused | None,
) -> None:
    """The agent phase's egress into the work (our phases and a Harbor trial's alike): the summary of the
    recording proxy's record (`recorded`), or that a host-only proxy ran (`proxied`), what the fence
    refused, and the flags they raise (retrieval, around the proxy)."""
    if recorded:
        work.egress = egress.summarize(
            egress.read_egress(recording.record_path), recording.policy.record, recording.facts
        )
    elif proxied:
        work.egress = EgressSummary(str(egress.Record.HOSTS))
    if work.egress is None:
        return
    if fenced is not None:
        work.egress.around_proxy, work.egress.dns_refused = fenced.attempts, fenced.dns
        work.egress.around_proxy_to = list(fenced.destinations)
    if work.egress.recorded_urls():
        work.flags[Flag.RETRIEVAL] = list(work.egress.retrieval)
    if work.egress.around_proxy is not None:
        work.flags[Flag.AROUND_PROXY] = around_proxy_flag(work.egress)


def around_proxy_flag(summary: EgressSummary) -> list[str]:
    """`flags.around_proxy`: the destinations of the connection attempts the fence refused, and the count
    where it saw more than it kept (empty: none)."""
    count, seen = summary.around_proxy or 0, summary.around_proxy_to
    more = [f"{count} connection attempts around the proxy refused"] if count > len(seen) else []
    return [*more, *seen]


def _settle(box: PhaseContainer, outcome: Outcome, log_path: Path) -> bool:
    """After the agent phase: whether it hit the container's process limit. Every process the agent left
    running (a build daemon, a fork bomb, anything that would change its work while it is captured) is
    ended, its files kept: the container is restarted unless nothing is left in it (where that cannot be
    known, and after a timeout, always)."""
    hit = outcome.exec.process_limit or bool(box.hit_process_limit())
    left = box.leftover_tasks()
    if hit or outcome.exec.timed_out or left is None or left > 0:
        if hit:
            what = f"filled the container's process limit ({box.limits.pids}); its processes were ended"
        elif left is None:
            what = "may have left processes (this engine's containers cannot be counted); they were ended"
        else:
            what = f"left {left} processes and threads running; they were ended"
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"\nkotlin-bench: the agent phase {what}\n")
        box.restart()
    return hit
