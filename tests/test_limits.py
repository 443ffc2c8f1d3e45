"""Limits on every container: the engine settings and the kernel's counters (no engine), and fork bombs on
the real engines (Docker, then rootful Podman).

A fork bomb in the agent phase, and one in the verifier's tests (a test the agent wrote), must each end
as the agent's outcome: reward 0 with the reason `process_limit`, never `error`. While a bomb runs, the
container's process count stays at its limit, the limit is reached within seconds, and the host forks and
the engine answers as usual. The bombs run with `engine.pids_limit = 512` and short phase timeouts, so the
test is bounded; the workspace's containers are gone afterwards.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import WorkRecord
from kotlin_bench.engine import cgroups, containers
from kotlin_bench.engine.engine import EngineError, EngineSettings, Kind, connect
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

TASK = "examples_calc-4"
PIDS = 512
TIMEOUT = 300  # the phases' deadline: a bomb must end its phase long before it
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


# --------------------------------------------------------------------------- no engine


def test_engine_settings_from_the_config() -> None:
    assert EngineSettings.from_config(None) == EngineSettings(Kind.DOCKER)
    podman = EngineSettings.from_config({"kind": "podman", "socket": "/run/x.sock", "pids_limit": 900})
    assert podman.url() == "unix:///run/x.sock" and podman.pids_for(64) == 900
    assert EngineSettings.from_config({"socket": "tcp://h:2375"}).url() == "tcp://h:2375"
    assert EngineSettings().url() is None  # the SDK's own default: DOCKER_HOST, else its socket
    # a Gradle build gets ample room; big tasks more, per CPU
    assert [EngineSettings().pids_for(c) for c in (0.5, 1, 4, 8)] == [4096, 4096, 4096, 8192]
    assert (
        EngineSettings.from_config(EngineSettings(Kind.PODMAN, pids_limit=128).to_config()).pids_limit == 128
    )
    for bad, message in (
        ({"kind": "lxc"}, "engine.kind"),
        ({"pids_limit": 10}, "engine.pids_limit"),
        ({"pids": 10}, "unknown keys"),
    ):
        with pytest.raises(EngineError, match=message):
            EngineSettings.from_config(bad)


def test_the_podman_socket_follows_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CONTAINER_HOST", raising=False)
    monkeypatch.setattr("os.geteuid", lambda: 0)
    assert EngineSettings(Kind.PODMAN).url() == "unix:///run/podman/podman.sock"
    monkeypatch.setattr("os.geteuid", lambda: 1001)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1001")
    assert EngineSettings(Kind.PODMAN).url() == "unix:///run/user/1001/podman/podman.sock"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert EngineSettings(Kind.PODMAN).url() == "unix:///run/user/1001/podman/podman.sock"
    monkeypatch.setenv("CONTAINER_HOST", "unix:///elsewhere.sock")
    assert EngineSettings(Kind.PODMAN).url() == "unix:///elsewhere.sock"


def _cgroup_tree(root: Path, proc: Path, lines: list[str], files: dict[str, str]) -> None:
    (proc / "42").mkdir(parents=True)
    (proc / "42/cgroup").write_text("".join(f"{line}\n" for line in lines))
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_kernels_counters_of_a_container_v1(tmp_path: Path) -> None:
    cid = "6eb63eac3304d48b8b1c08352e93ae6e147f82d7317e13003927ba092c2c6936"
    path = f"/libpod_parent/libpod-{cid}"
    root, proc = tmp_path / "sys", tmp_path / "proc"
    _cgroup_tree(
        root,
        proc,
        [f"8:pids:{path}", f"4:memory:{path}", f"0::{path}"],
        {
            f"pids{path}/pids.events": "max 7\n",
            f"pids{path}/pids.current": "512\n",
            f"memory{path}/memory.oom_control": "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
        },
    )
    assert cgroups.refused_forks(42, cid, root, proc) == 7
    assert cgroups.task_count(42, cid, root, proc) == 512
    assert cgroups.oom_kills(42, cid, root, proc) == 2
    assert cgroups.oom_kills(43, cid, root, proc) is None  # no such process


def test_the_kernels_counters_of_a_container_v2_and_rootless_v1(tmp_path: Path) -> None:
    cid = "051d28f6aebed5fa2b130285ced7812aab71f3dca9871b5d9e9269e1aa23be6a"
    path = f"/system.slice/docker-{cid}.scope"
    root, proc = tmp_path / "sys", tmp_path / "proc"
    _cgroup_tree(
        root,
        proc,
        [f"0::{path}"],
        {"cgroup.controllers": "memory pids\n", f"{path[1:]}/memory.events": "oom 1\noom_kill 1\n"},
    )
    assert cgroups.oom_kills(42, cid, root, proc) == 1
    assert cgroups.refused_forks(42, cid, root, proc) is None  # no pids.events there
    # A rootless container on cgroup v1 sits in its caller's cgroups: nothing there is the container's.
    other = tmp_path / "rootless"
    _cgroup_tree(other / "sys", other / "proc", ["8:pids:/user.slice", "4:memory:/user.slice"], {})
    assert cgroups.refused_forks(42, cid, other / "sys", other / "proc") is None


def test_commands_are_bounded_by_rlimit_nproc_where_no_pids_limit_holds() -> None:
    box: Any = type("Box", (), {})()
    box.labels = {names.LABEL_NPROC: "512"}
    assert containers.bounded(box, ["timeout", "9", "x"]) == [
        "bash",
        "-c",
        'ulimit -u 512 && exec "$@"',
        "bash",
        "timeout",
        "9",
        "x",
    ]
    box.labels = {}
    assert containers.bounded(box, ["x"]) == ["x"]


# --------------------------------------------------------------------------- fork bombs


def host_fork_seconds(count: int = 5) -> float:
    """The median time the host takes to start and end a process."""
    times = []
    for _ in range(count):
        started = time.monotonic()
        subprocess.run(["true"], check=True)
        times.append(time.monotonic() - started)
    return statistics.median(times)


def watch(ws: Workspace, run: subprocess.Popen[bytes], phase: str) -> dict[str, float]:
    """While the run goes on: the most processes and threads its `phase` container had, and the slowest
    fork of the host and answer of the engine."""
    engine = connect(ws.engine())
    seen = {"tasks": 0.0, "host_fork": 0.0, "engine_answer": 0.0}
    while run.poll() is None:
        for box in ws.containers(running_only=True):
            if box.labels.get(names.LABEL_PHASE) == phase:
                tasks = cgroups.task_count(containers.init_pid(box), box.id) or 0
                seen["tasks"] = max(seen["tasks"], tasks)
        seen["host_fork"] = max(seen["host_fork"], host_fork_seconds(1))
        started = time.monotonic()
        engine.client.ping()
        seen["engine_answer"] = max(seen["engine_answer"], time.monotonic() - started)
    return seen


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory, engine: EngineSettings) -> Workspace:
    ws = Workspace.create(tmp_path_factory.mktemp(f"bombs-{engine.kind}"), REPO)
    ws.use_engine(EngineSettings(engine.kind, engine.socket, pids_limit=PIDS))
    ws.edit_task(TASK, "agent", "timeout_sec", f"{TIMEOUT}.0")
    ws.edit_task(TASK, "verifier", "timeout_sec", f"{TIMEOUT}.0")
    prepared = ws.prepare(TASK)
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]
    return ws


@pytest.mark.docker
@pytest.mark.parametrize(
    ("agent", "phase", "script"),
    [("agent-bomb", "agent", AGENT_BOMB), ("test-bomb", "verifier", VERIFIER_BOMB)],
    ids=["agent-phase", "verifier-phase"],
)
def test_a_fork_bomb_is_the_agents_outcome_and_the_host_stays_responsive(
    bombs: Workspace, agent: str, phase: str, script: str
) -> None:
    ws = bombs
    quiet = host_fork_seconds()
    rel = ws.write(f"agents/{agent}.sh", script, 0o755)
    ws.configure([TASK], [{"name": agent, "kind": "script", "script": rel}])
    run = ws.popen(ws.target(agent, TASK))
    try:
        seen = watch(ws, run, phase)
    finally:
        if run.poll() is None:
            run.kill()
    output = (ws.root / "snakemake.out").read_text(errors="replace")
    assert run.returncode == 0, output[-4000:]
    # the limit held the bomb; the host and the engine went on as usual
    assert seen["tasks"] <= PIDS, seen
    assert seen["host_fork"] < max(0.5, 20 * quiet) and seen["engine_answer"] < 10, (seen, quiet)
    # the agent's outcome, with its reason, long before the phase's deadline
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
        names.WORK_DIR + "/" + names.AGENT_LOG if phase == "agent" else names.VERIFIER_LOG
    )
    assert "process limit refused a fork" in log.read_text(errors="replace")
    assert ws.containers() == []
