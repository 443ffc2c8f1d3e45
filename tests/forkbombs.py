"""Fork bombs as agents, and what a run of them must show (tests/test_limits.py on Docker; on Podman they run
in the one rootful workspace run of tests/conftest.py `podman_examples`, beside the examples' oracle and nop).

A fork bomb in the agent phase (`agent-bomb`), and one in the verifier's tests (`test-bomb`, a test the agent
wrote), must each end as the agent's outcome: reward 0 with the reason `process_limit`, never `error`. While
they run, a container's process count stays at its limit, and the host forks and the engine answers as
usual. They run with `engine.pids_limit = PIDS`; examples_calc-4's phases time out after TIMEOUT seconds, and
a bomb must end its phase long before that.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.record import WorkRecord
from kotlin_bench.engine import cgroups, containers
from kotlin_bench.engine.engine import connect
from kotlin_bench.tools.workspace import Workspace

TASK = "examples_calc-4"
PIDS = 512
TIMEOUT = 300  # examples_calc-4's [agent] and [verifier] timeout_sec
BOMB = ":(){ :|:& };:"
# A fork bomb in the agent phase; the agent then waits (a builtin read on a FIFO, which needs no fork).
AGENT_BOMB = f"""#!/usr/bin/env bash
fifo=$(mktemp -u) && mkfifo "$fifo"
{BOMB}
read -r -t {TIMEOUT} <>"$fifo"
"""
# A test of the agent's that starts a fork bomb: it runs in the verifier phase, under the task's tests.
VERIFIER_BOMB = f"""#!/usr/bin/env bash
mkdir -p src/test/kotlin/bomb
cat > src/test/kotlin/bomb/BombTest.kt <<'EOF'
package bomb

import org.junit.jupiter.api.Test

class BombTest {{
    @Test
    fun bomb() {{
        ProcessBuilder("bash", "-c", "{BOMB}").start()
        Thread.sleep(20_000)
    }}
}}
EOF
"""
PHASES = {"agent-bomb": "agent", "test-bomb": "verifier"}  # agent -> the phase its bomb goes off in
SCRIPTS = {"agent-bomb": AGENT_BOMB, "test-bomb": VERIFIER_BOMB}


def agents(ws: Workspace) -> list[dict[str, Any]]:
    """The two bomb agents (kind script), their scripts written into `ws`."""
    return [
        {"name": name, "kind": "script", "script": ws.write(f"agents/{name}.sh", script, 0o755)}
        for name, script in SCRIPTS.items()
    ]


def host_fork_seconds(count: int = 5) -> float:
    """The median time the host takes to start and end a process."""
    times = []
    for _ in range(count):
        started = time.monotonic()
        subprocess.run(["true"], check=True)
        times.append(time.monotonic() - started)
    return statistics.median(times)


@dataclass
class Watched:
    """A workflow invocation watched while it ran: its exit status and output, the most processes and
    threads a bomb agent's container had in each phase, the slowest fork of the host and answer of the
    engine, and the host's fork time before it started."""

    returncode: int
    output: str
    quiet: float
    seen: dict[str, float] = field(default_factory=dict)


def run_watched(ws: Workspace, targets: list[str], timeout: float = 1800) -> Watched:
    """Run the workflow for `targets` in `ws`, watching the bomb agents' containers until it ends."""
    engine = connect(ws.engine())
    quiet = host_fork_seconds()
    seen = {"agent": 0.0, "verifier": 0.0, "host_fork": 0.0, "engine_answer": 0.0}
    deadline = time.monotonic() + timeout
    run = ws.popen(*targets)
    try:
        while run.poll() is None:
            assert time.monotonic() < deadline, f"the workflow ran longer than {timeout} s"
            for box in ws.containers(running_only=True):
                phase = box.labels.get(names.LABEL_PHASE, "")
                if box.labels.get(names.LABEL_AGENT) in PHASES and phase in seen:
                    tasks = cgroups.task_count(containers.init_pid(box), box.id) or 0
                    seen[phase] = max(seen[phase], tasks)
            seen["host_fork"] = max(seen["host_fork"], host_fork_seconds(1))
            started = time.monotonic()
            engine.client.ping()
            seen["engine_answer"] = max(seen["engine_answer"], time.monotonic() - started)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    output = (ws.root / "snakemake.out").read_text(errors="replace")
    return Watched(run.returncode, output, quiet, seen)


def check_bomb(ws: Workspace, watched: Watched, agent: str) -> None:
    """The bomb of `agent` was held at the limit and was the agent's outcome, with its reason, long before
    the phase's deadline; the host and the engine went on as usual."""
    phase = PHASES[agent]
    assert watched.returncode == 0, watched.output[-4000:]
    assert watched.seen[phase] <= PIDS, watched.seen
    assert watched.seen["host_fork"] < max(0.5, 20 * watched.quiet), watched
    assert watched.seen["engine_answer"] < 10, watched
    result = ws.result(agent, TASK)
    assert result is not None
    assert (result.status, result.reward, result.reason) == ("unresolved", 0.0, "process_limit"), (
        result.to_dict()
    )
    assert phase in (result.reason_detail or "")
    work = WorkRecord.read(ws.run_dir(agent, TASK) / names.WORK_DIR / names.WORK_FILE)
    assert work.agent_process_limit is (phase == "agent")
    took = result.timings["agent_sec" if phase == "agent" else "verifier_sec"]
    assert took < TIMEOUT / 2, result.timings
    log = ws.run_dir(agent, TASK) / (
        f"{names.WORK_DIR}/{names.AGENT_LOG}" if phase == "agent" else names.VERIFIER_LOG
    )
    assert "process limit refused a fork" in log.read_text(errors="replace")
