"""The network probe of a task's agent phase (part of the health check, `snakemake healthcheck`).

A container from the task image enters the `[agent]` network policy exactly as a run's agent phase does
(`kotlin_bench.engine.phase`), and `probes/network_probe.sh` (bash only) asks for a connection to port
443 of the first exact host of `allowed_hosts` and of `github.com`, through the egress proxy when the
phase has one. What a probe found (`Probe`):

- `answered`: the proxy opened a tunnel (its answer to CONNECT was 200), or a direct connection opened;
- `blocked`: blocked by the policy: the proxy refused the host (403), or the phase has no network at all;
- `unreachable`: the policy let it through but nothing answered: the proxy could not connect (5xx, as on a
  machine without internet, where an allowlisted public host cannot answer), or, in a `public` phase,
  the direct connection failed;
- `none`: nothing to probe (the allowlist is empty, so the phase has no network; or wildcards only);
- `error`: the probe itself failed (the proxy did not accept connections, the probe did not finish).

`results/healthcheck/network/<task>.json` holds one task's probe (`NetworkCheck`, written and read only
here). The check covers kotlin-bench's own network policy; Harbor runs use Harbor's egress sidecar.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine import containers, network
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.phase import Limits, PhaseContainer

PROBES_DIR = names.PROBES_DIR
PROBE = "network_probe.sh"
BLOCKED_HOST = "github.com"  # must never answer inside an agent phase
PROBE_TIMEOUT = 120.0


class Probe(StrEnum):
    ANSWERED = "answered"
    BLOCKED = "blocked"
    UNREACHABLE = "unreachable"
    NONE = "none"
    ERROR = "error"


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


def check_network(task: Task, image: str, engine: EngineSettings | None = None) -> NetworkCheck:
    """Probe the allowlisted host and GitHub inside `task`'s agent phase, in a container from `image` on
    `engine` (config `engine:`)."""
    allowed = allowed_probe_host(task)
    hosts = [h for h in (allowed, BLOCKED_HOST) if h]
    mode = network.effective_mode(task.agent.network_mode, task.agent.allowed_hosts)
    labels = {names.LABEL_TASK: task.id, names.LABEL_PHASE: "agent"}
    key = names.probe_key(task.id)
    with PhaseContainer(
        connect(engine), image, key, labels, Limits.of(task, engine), phase=task.agent
    ) as box:
        box.copy_in(PROBES_DIR, names.CONTAINER_PROBE_DIR)
        with box.network(task.agent) as net:
            command = " ".join(["bash", f"{names.CONTAINER_PROBE_DIR}/{PROBE}", *hosts])
            code, output = containers.output(box.container, command, env=net.env, timeout=PROBE_TIMEOUT)
            print(f"{command} (mode {mode}) exited {code}:\n{output.decode('utf-8', 'replace')}")
            print(f"egress proxy log:\n{net.proxy_log()}")
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
