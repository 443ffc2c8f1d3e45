"""Model APIs around an agent: outages the harness saw, secrets kept out of the records, a script's usage.

A model outage (the agent stopped because its model API answered 429 or 5xx, or did not answer, after the
agent's own retries) is an error of the infrastructure, never the agent's score: the solve step raises
`ModelOutage`, the job is retried after a backoff (the agent's `outage_backoff_sec`, doubled each try), and a run
still failing on the last try is recorded as `error` / `infrastructure` with the provider's answer.

Only what the harness saw counts. A Harbor agent's outage is Harbor's own exception
(`kotlin_bench.runs.agents.harbor.MODEL_OUTAGES`). A script agent claims one by writing the provider's
answer to `$KOTLIN_BENCH_OUTAGE` and exiting non-zero; the claim is confirmed by the recording proxy's
record of the model hosts' answers (`work/egress.jsonl`: a request to a model host answered 429 or >= 500,
or not answered at all). An unconfirmed claim (no such answer, or no record: a public phase or a proxy
that does not record) is the agent's: the run is scored, the claim kept in the work record.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import RecordError, Usage, WorkRecord, WorkStatus
from kotlin_bench.engine.egress import EgressRequest, read_egress

OUTAGE_STATUSES = (408, 429)  # and every status from 500 on
MAX_DETAIL = 600


class ModelOutage(RuntimeError):
    """The agent's model API failed it (seen by the harness): the run is retried, never scored."""


def failed_answers(egress: Path, hosts: Iterable[str]) -> list[EgressRequest]:
    """The requests of the egress record (`egress.jsonl`) to one of `hosts` that the model API failed:
    answered 408, 429 or >= 500, or not answered (no status: a cut connection, a stall). Refused
    requests (a host the proxy did not let through) are the agent's, not the API's."""
    wanted = {h.lower() for h in hosts}
    return [
        r
        for r in read_egress(egress)
        if r.host.lower() in wanted
        and r.allowed
        and (not r.status or r.status in OUTAGE_STATUSES or r.status >= 500)
    ]


def confirm_outage(claim: str, egress: Path, hosts: Iterable[str]) -> str | None:
    """The outage the harness saw behind a script's claim (its detail), or None when it saw none."""
    failed = failed_answers(egress, hosts)
    if not failed:
        return None
    last = failed[-1]
    where = f"{last.method} {last.host}{last.path}"
    detail = f"the model API answered {last.status or 'nothing'} to {where}"
    return f"{detail} ({len(failed)} failed request(s) in the egress record); the agent said: {claim.strip()[:MAX_DETAIL]}"


def backoff_sec(base: float, try_number: int) -> float:
    """How long to wait before try `try_number + 1` after a model outage on try `try_number`."""
    return base * math.pow(2, max(0, try_number - 1))


def read_usage(text: str) -> Usage:
    """A script's usage file (`$KOTLIN_BENCH_USAGE`): a JSON object with any of input_tokens, cache_tokens,
    output_tokens, cost_usd, model_calls (numbers); anything else is ignored."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return Usage()
    usage = Usage.from_dict(data)
    usage.trajectory = None  # the harness names it
    for key in ("input_tokens", "cache_tokens", "output_tokens", "model_calls"):
        value = getattr(usage, key)
        setattr(usage, key, int(value) if isinstance(value, int | float) and value >= 0 else None)
    cost = usage.cost_usd
    usage.cost_usd = float(cost) if isinstance(cost, int | float) and cost >= 0 else None
    return usage


def redact(directory: Path, secrets: Iterable[str]) -> int:
    """Replace each secret value in every text file under `directory`; the number of files changed."""
    values = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
    if not values or not directory.is_dir():
        return 0
    changed = 0
    for path in (p for p in directory.rglob("*") if p.is_file()):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        redacted = text
        for secret in values:
            redacted = redacted.replace(secret, "[redacted]")
        if redacted != text:
            path.write_text(redacted, encoding="utf-8")
            changed += 1
    return changed


def spent_usd(agent_runs: Path, leave_out: Path | None = None) -> float:
    """What an agent's finished runs cost (`agent_runs`: results/runs/<agent>), from their work records;
    `leave_out`: a work directory not to count (the run about to start)."""
    total = 0.0
    for path in sorted(agent_runs.glob(f"*/attempt-*/{names.WORK_DIR}/{names.WORK_FILE}")):
        if leave_out is not None and path.parent == leave_out:
            continue
        try:
            work = WorkRecord.read(path)
        except RecordError:
            continue
        cost = work.work.usage.cost_usd
        if work.status is WorkStatus.DONE and cost is not None:
            total += cost
    return total


def over_budget(budget_usd: float | None, agent: str, agent_runs: Path, work_dir: Path) -> str | None:
    """Why the run in `work_dir` must not start (its agent's finished runs cost `budget_usd` or more), or
    None when it may."""
    if budget_usd is None:
        return None
    spent = spent_usd(agent_runs, work_dir)
    if spent < budget_usd:
        return None
    return f"not run: agent {agent}'s finished runs cost ${spent:.4f}, its budget_usd is ${budget_usd:.4f}"
