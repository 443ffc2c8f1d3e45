"""The sanity sweep (`snakemake sanity`): the published benchmark's health check of a task set, as one table.

For every selected task:

- `oracle` resolves it (reward 1) and `nop` does not (reward 0): the runs `results/runs/oracle/<task>/
  attempt-1` and `results/runs/nop/<task>/attempt-1`, the same targets as configured agents of those names;
- inside the task's agent phase, a host on its allowlist answers and GitHub does not: a container from the
  task image enters the `[agent]` network policy exactly as the runner does (`kotlin_bench.network`), and
  `probes/network_probe.sh` (bash only) asks for a connection to port 443 of the first exact host of
  `allowed_hosts` and of `github.com`, through the egress proxy when the phase has one.

What a probe found (`Probe`):

- `answered`: the proxy opened a tunnel (its answer to CONNECT was 200), or a direct connection opened;
- `blocked`: blocked by the policy: the proxy refused the host (403), or the phase has no network at all;
- `unreachable`: the policy let it through but nothing answered: the proxy could not connect (5xx, as on a
  machine without internet, where an allowlisted public host cannot answer), or, in a `public` phase,
  the direct connection failed;
- `none`: nothing to probe (the allowlist is empty, so the phase has no network; or wildcards only);
- `error`: the probe itself failed (the proxy did not accept connections, the probe did not finish).

A task is `ok` when oracle scored 1, nop 0, GitHub was blocked and the allowlisted host answered (or there
was none); `unverified` when everything else held but the allowlisted host was unreachable; `FAIL`
otherwise, with the reasons. The check covers kotlin-bench's own network policy; Harbor runs (`harbor`
agents) use Harbor's egress sidecar instead.

`results/sanity/network/<task>.json` holds one task's probe (`NetworkCheck`, written and read only here);
`results/sanity/summary.csv` and `summary.md` the table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import pandas as pd

from kotlin_bench import containers, names, network
from kotlin_bench.fsutil import write_atomic
from kotlin_bench.images import docker_client
from kotlin_bench.record import RunResult, Status
from kotlin_bench.render import Section, plural, render_markdown
from kotlin_bench.runner import workdir_tag
from kotlin_bench.tasks import Task

PROBES_DIR = Path(__file__).resolve().parent / "probes"
PROBE = "network_probe.sh"
BLOCKED_HOST = "github.com"  # must never answer inside an agent phase
PROBE_TIMEOUT = 120.0


class Probe(StrEnum):
    ANSWERED = "answered"
    BLOCKED = "blocked"
    UNREACHABLE = "unreachable"
    NONE = "none"
    ERROR = "error"


class Health(StrEnum):
    OK = "ok"
    UNVERIFIED = "unverified"
    FAIL = "FAIL"


@dataclass(frozen=True)
class ProbeResult:
    host: str | None
    outcome: Probe
    detail: str

    @property
    def text(self) -> str:
        return f"{self.outcome} ({self.detail})" if self.host is None else f"{self.host}: {self.outcome}"


@dataclass(frozen=True)
class NetworkCheck:
    """What the probes found in one task's agent phase."""

    task: str
    mode: str  # the phase's effective network mode (an empty allowlist is no-network)
    allowed: ProbeResult
    blocked: ProbeResult
    checked_at: str

    def write(self, path: Path) -> None:
        write_atomic(path, json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def read(cls, path: Path) -> NetworkCheck:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls(
                data["task"],
                data["mode"],
                _probe(data["allowed"]),
                _probe(data["blocked"]),
                data["checked_at"],
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}: not a network check ({exc}); delete it to redo the check") from None


def _probe(data: dict[str, str | None]) -> ProbeResult:
    return ProbeResult(data["host"], Probe(str(data["outcome"])), str(data["detail"]))


# --------------------------------------------------------------------------- the probe


def allowed_probe_host(task: Task) -> str | None:
    """The first exact host of the agent phase's allowlist (wildcards name no host to ask)."""
    if task.agent.network_mode != "allowlist":
        return None
    return next((h for h in task.agent.allowed_hosts if not h.startswith("*.")), None)


def classify(line: str, mode: str) -> ProbeResult:
    """One line of the probe's output (`<host> proxy <status line>` or `<host> direct <outcome>`)."""
    host, how, answer = [*line.split(" ", 2), "", ""][:3]
    if how == "proxy":
        status = answer.split()[1] if len(answer.split()) > 1 else ""
        if answer == "unreachable":
            return ProbeResult(host, Probe.ERROR, "the egress proxy accepted no connection")
        if answer == "none":
            return ProbeResult(
                host, Probe.UNREACHABLE, "admitted by the allowlist; the proxy gave no answer in time"
            )
        if status == "200":
            return ProbeResult(host, Probe.ANSWERED, f"the proxy opened a tunnel to {host}:443 ({answer})")
        if status == "403":
            return ProbeResult(
                host, Probe.BLOCKED, f"refused by the allowlist (the proxy answered {answer!r})"
            )
        return ProbeResult(
            host, Probe.UNREACHABLE, f"admitted by the allowlist, but the proxy answered {answer!r}"
        )
    if how == "direct" and answer == "connected":
        return ProbeResult(host, Probe.ANSWERED, f"a connection to {host}:443 opened")
    if how == "direct" and mode == "no-network":
        return ProbeResult(host, Probe.BLOCKED, f"the phase has no network ({answer})")
    if how == "direct":
        return ProbeResult(host, Probe.UNREACHABLE, f"no policy stops it, but it did not answer ({answer})")
    return ProbeResult(host or None, Probe.ERROR, f"unexpected probe output {line!r}")


def _probe_lines(output: str, hosts: Sequence[str]) -> dict[str, str]:
    found = {line.split(" ", 1)[0]: line for line in output.splitlines() if line.strip()}
    return {host: found.get(host, f"{host} missing") for host in hosts}


def check_network(task: Task, image: str) -> NetworkCheck:
    """Probe the allowlisted host and GitHub inside `task`'s agent phase, in a container from `image`."""
    client = docker_client()
    key = f"sanity.{task.id}.1.{workdir_tag()}"
    containers.reap(client, key)
    network.reap_networks(client, key)
    allowed = allowed_probe_host(task)
    hosts = [h for h in (allowed, BLOCKED_HOST) if h]
    mode = network.effective_mode(task.agent.network_mode, task.agent.allowed_hosts)
    labels = {names.LABEL_TASK: task.id, names.LABEL_PHASE: "agent", names.LABEL_WORKDIR: str(Path.cwd())}
    container = containers.start(
        client, image, key, labels, task.environment.cpus, task.environment.memory_mb
    )
    try:
        containers.copy_dir_in(container, PROBES_DIR, names.CONTAINER_PROBE_DIR)
        phase = task.agent
        with network.enter_phase(container, phase.network_mode, phase.allowed_hosts, key) as net:
            command = " ".join(["bash", f"{names.CONTAINER_PROBE_DIR}/{PROBE}", *hosts])
            code, output = containers.output(container, command, env=net.env, timeout=PROBE_TIMEOUT)
            print(f"{command} (mode {mode}) exited {code}:\n{output.decode('utf-8', 'replace')}")
            print(f"egress proxy log:\n{net.proxy_log()}")
    finally:
        containers.remove(container)
        network.reap_networks(client, key)
    lines = _probe_lines(output.decode("utf-8", "replace"), hosts)
    if allowed is None:
        why = {
            "no-network": "the allowlist is empty: the phase has no network",
            "public": "the phase is public: it has no allowlist",
        }.get(mode, "the allowlist has wildcard entries only")
        found_allowed = ProbeResult(None, Probe.NONE, why)
    else:
        found_allowed = classify(lines[allowed], mode)
    return NetworkCheck(
        task.id,
        mode,
        found_allowed,
        classify(lines[BLOCKED_HOST], mode),
        datetime.now(UTC).isoformat(timespec="seconds"),
    )


# --------------------------------------------------------------------------- the table


SANITY_COLUMNS = [
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


def judge_task(oracle: RunResult | None, nop: RunResult | None, check: NetworkCheck) -> dict[str, str]:
    """One row of the table: what was found, and the task's verdict with its reasons."""
    problems: list[str] = []
    unverified: list[str] = []
    oracle_shown, problem = _reward(oracle, 1.0)
    problems += [f"oracle {problem}"] if problem else []
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


def sanity_table(results: Sequence[RunResult], checks: Sequence[NetworkCheck]) -> pd.DataFrame:
    """One row per task of `checks`, with its oracle and nop runs (attempt 1) from `results`."""
    runs = {(r.agent, r.task): r for r in results if r.attempt == 1}
    rows = [judge_task(runs.get(("oracle", c.task)), runs.get(("nop", c.task)), c) for c in checks]
    return pd.DataFrame(rows, columns=SANITY_COLUMNS).sort_values("task", ignore_index=True)


def headline(table: pd.DataFrame) -> str:
    counts = table["verdict"].value_counts()
    failed = list(table.loc[table["verdict"] == Health.FAIL, "task"])
    if failed:
        return f"sanity: FAILED on {len(failed)} of {plural(len(table), 'task')}: {', '.join(failed)}"
    unverified = int(counts.get(Health.UNVERIFIED, 0))
    text = f"sanity: {int(counts.get(Health.OK, 0))} of {plural(len(table), 'task')} ok"
    if unverified:
        text += f", {unverified} unverified (the allowlisted host did not answer: is there internet here?)"
    return text


def render_sanity(table: pd.DataFrame) -> str:
    details = [
        "oracle must score 1 and nop 0 (attempt 1); in the agent phase (the task's `[agent]` network policy, "
        f"as the runner enters it) the first exact host of the allowlist must answer on port 443 and "
        f"{BLOCKED_HOST} must be blocked. `blocked`: refused by the egress proxy (403) or no network in the "
        "phase; `unreachable`: the policy let it through but nothing answered (no internet here, or the host "
        "is down); `none`: no host to probe.",
    ]
    sections = [Section("Headline", [headline(table)]), Section("Per task", details, table=table)]
    return render_markdown(sections, "kotlin-bench sanity sweep")


def write_sanity(results: Sequence[RunResult], checks: Sequence[NetworkCheck], csv: Path, md: Path) -> str:
    """Write the table as CSV and markdown; returns the markdown."""
    table = sanity_table(results, checks)
    write_atomic(csv, table.to_csv(index=False))
    text = render_sanity(table)
    write_atomic(md, text)
    return text
