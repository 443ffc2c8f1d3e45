"""The health check (`snakemake healthcheck`): the published benchmark's check of a task set, as one table.

For every selected task: `oracle` resolves it (reward 1) and `nop` does not (reward 0), the runs
`results/runs/oracle/<task>/attempt-1` and `results/runs/nop/<task>/attempt-1` (the same targets as
configured agents of those names); and inside the task's agent phase a host on its allowlist answers and
GitHub does not (`kotlin_bench.runs.network_probe`).

A task is `ok` when oracle scored 1, nop 0, GitHub was blocked and the allowlisted host answered (or there
was none); `unverified` when everything else held but the allowlisted host was unreachable; `FAIL`
otherwise, with the reasons. `results/healthcheck/summary.csv` and `summary.md` hold the table.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path

import pandas as pd

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.record import RunResult, Status
from kotlin_bench.core.render import Section, plural, render_markdown
from kotlin_bench.runs.network_probe import BLOCKED_HOST, NetworkCheck, Probe


class Health(StrEnum):
    OK = "ok"
    UNVERIFIED = "unverified"
    FAIL = "FAIL"


HEALTHCHECK_COLUMNS = [
    "task",
    "oracle",
    "nop",
    "agent phase",
    "allowlisted host",
    BLOCKED_HOST,
    "verdict",
    "reasons",
]


def _reward(result: RunResult | None, expected: float) -> tuple[str, str | None]:
    """The run's reward as shown, and a problem when it is not `expected`."""
    if result is None:
        return "not run", "no run"
    if result.status is Status.ERROR:
        return "error", f"errored: {result.reason}: {(result.error or '')[:120]}"
    shown = "n/a" if result.reward is None else f"{result.reward:g}"
    return shown, None if result.reward == expected else f"scored {shown} ({result.reason or result.status})"


def judge_task(
    oracle: RunResult | None,
    nop: RunResult | None,
    check: NetworkCheck,
    oracle_repeats: Sequence[RunResult] = (),
) -> dict[str, str]:
    """One row of the table: what was found, and the task's verdict with its reasons. The oracle's
    repeated verifications (`verify.repeats`) must all score 1 too: a verdict that changes is a flaky
    task, whatever the first verification said."""
    problems: list[str] = []
    unverified: list[str] = []
    oracle_shown, problem = _reward(oracle, 1.0)
    problems += [f"oracle {problem}"] if problem else []
    if oracle is not None and oracle_repeats:
        repeats = sorted(oracle_repeats, key=lambda r: r.repeat)
        rewards = [oracle.reward, *(r.reward for r in repeats)]
        oracle_shown = ",".join("error" if r is None else f"{r:g}" for r in rewards)
        errored = [r for r in repeats if r.status is Status.ERROR]
        for r in errored:  # e.g. a network fault: named (host, artifact), not taken for a flaky verdict
            problems.append(f"oracle verification {r.repeat} errored: {r.reason}: {(r.error or '')[:120]}")
        if any(r.reward != 1.0 for r in repeats if r.status is not Status.ERROR):
            problems.append(f"oracle verdict-flaky over {len(rewards)} verifications ({oracle_shown})")
    nop_shown, problem = _reward(nop, 0.0)
    problems += [f"nop {problem}"] if problem else []
    if check.blocked.outcome is not Probe.BLOCKED:
        problems.append(f"{BLOCKED_HOST} {check.blocked.outcome}: {check.blocked.detail}")
    if check.allowed.outcome is Probe.UNREACHABLE:
        unverified.append(f"{check.allowed.host} {check.allowed.outcome}: {check.allowed.detail}")
    elif check.allowed.outcome in (Probe.BLOCKED, Probe.ERROR):
        problems.append(f"{check.allowed.host} {check.allowed.outcome}: {check.allowed.detail}")
    verdict = Health.FAIL if problems else Health.UNVERIFIED if unverified else Health.OK
    return {
        "task": check.task,
        "oracle": oracle_shown,
        "nop": nop_shown,
        "agent phase": check.mode,
        "allowlisted host": check.allowed.text,
        BLOCKED_HOST: f"{check.blocked.outcome}",
        "verdict": str(verdict),
        "reasons": "; ".join(problems + unverified),
    }


def health_table(
    results: Sequence[RunResult], checks: Sequence[NetworkCheck], repeats: Sequence[RunResult] = ()
) -> pd.DataFrame:
    """One row per task of `checks`, with its oracle and nop runs (attempt 1) from `results` and the
    oracle's repeated verifications from `repeats`."""
    runs = {(r.agent, r.task): r for r in results if r.attempt == 1}
    again: dict[str, list[RunResult]] = {}
    for r in repeats:
        if r.agent == "oracle" and r.attempt == 1:
            again.setdefault(r.task, []).append(r)
    rows = [
        judge_task(runs.get(("oracle", c.task)), runs.get(("nop", c.task)), c, again.get(c.task, ()))
        for c in checks
    ]
    return pd.DataFrame(rows, columns=HEALTHCHECK_COLUMNS).sort_values("task", ignore_index=True)


def headline(table: pd.DataFrame) -> str:
    counts = table["verdict"].value_counts()
    failed = list(table.loc[table["verdict"] == Health.FAIL, "task"])
    if failed:
        return f"health check: FAILED on {len(failed)} of {plural(len(table), 'task')}: {', '.join(failed)}"
    unverified = int(counts.get(Health.UNVERIFIED, 0))
    text = f"health check: {int(counts.get(Health.OK, 0))} of {plural(len(table), 'task')} ok"
    if unverified:
        text += f", {unverified} unverified (the allowlisted host did not answer: is there internet here?)"
    return text


def render_healthcheck(table: pd.DataFrame) -> str:
    details = [
        "oracle must score 1 and nop 0 (attempt 1); in the agent phase (the task's `[agent]` network policy, "
        f"as the runner enters it) the first exact host of the allowlist must answer on port 443 and "
        f"{BLOCKED_HOST} must be blocked. `blocked`: refused by the egress proxy (403) or no network in the "
        "phase; `unreachable`: the policy let it through but nothing answered (no internet here, or the host "
        "is down); `none`: no host to probe.",
    ]
    sections = [Section("Headline", [headline(table)]), Section("Per task", details, table=table)]
    return render_markdown(sections, "kotlin-bench health check")


def write_healthcheck(
    results: Sequence[RunResult],
    checks: Sequence[NetworkCheck],
    csv: Path,
    md: Path,
    repeats: Sequence[RunResult] = (),
) -> str:
    """Write the table as CSV and markdown; returns the markdown."""
    table = health_table(results, checks, repeats)
    write_atomic(csv, table.to_csv(index=False))
    text = render_healthcheck(table)
    write_atomic(md, text)
    return text
