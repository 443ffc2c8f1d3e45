"""Limits on every container: the engine settings and the kernel's counters (no engine), and fork bombs on
the real engines (Docker, then rootful Podman; tests/forkbombs.py says what a bomb's run must show).

On Docker the two bomb agents run in one workflow invocation in a copy of the session's finished run of
the examples (its images, no build); on Podman they ran in the one rootful run of the session
(conftest `podman_examples`), beside the examples' oracle and nop. Either way the workspace's containers
are gone afterwards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.engine import cgroups, containers
from kotlin_bench.engine.engine import EngineError, EngineSettings, Kind
from tests import forkbombs
from tests.conftest import WatchedRun, without_runs

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


def test_an_engine_is_asked_about_itself_once_per_process_and_again_when_it_stops_answering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Podman answers /version and /info in about a second, and a job connects several times."""
    from kotlin_bench.engine import engine as module

    class Client:
        answers = True

        def ping(self) -> None:
            if not self.answers:
                raise ConnectionError("gone")

    asked: list[Any] = []

    def ask(settings: EngineSettings, timeout: int) -> Any:
        asked.append(settings)
        return module.Engine(Client(), settings, True, False, (), "4.3.1")  # type: ignore[arg-type]

    monkeypatch.setattr(module, "_connect", ask)
    monkeypatch.setattr(module, "_CONNECTED", {})
    settings = EngineSettings(Kind.PODMAN, socket="/run/x.sock")
    first = module.connect(settings)
    assert module.connect(settings) is first and len(asked) == 1
    assert module.connect(EngineSettings(Kind.PODMAN, socket="/run/y.sock")) is not first  # another address
    first.client.answers = False
    assert module.connect(settings) is not first and len(asked) == 3  # asked again


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


def test_a_containers_sockets_are_read_from_the_host_only_when_the_process_is_its_own(tmp_path: Path) -> None:
    """The proxy's readiness (`network._wait_listening`) reads its sockets without starting a process in it."""
    cid = "6eb63eac3304d48b8b1c08352e93ae6e147f82d7317e13003927ba092c2c6936"
    proc = tmp_path / "proc"
    _cgroup_tree(tmp_path / "sys", proc, [f"8:pids:/docker/{cid}"], {})
    (proc / "42/net").mkdir()
    (proc / "42/net/tcp").write_text("  0: 00000000:0C38 00000000:0000 0A\n")
    (proc / "42/net/tcp6").write_text("")
    assert ":0C38 00000000:0000 0A" in (cgroups.sockets(42, cid, proc) or "")
    assert cgroups.sockets(42, "0" * 64, proc) is None  # pid 42 is another container's (or none's)
    assert cgroups.sockets(43, cid, proc) is None  # no such process: a remote engine's pid


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


@pytest.fixture(scope="module")
def bombs(
    tmp_path_factory: pytest.TempPathFactory, engine: EngineSettings, request: pytest.FixtureRequest
) -> WatchedRun:
    if engine.kind is Kind.PODMAN:
        podman: WatchedRun = request.getfixturevalue("podman_examples")
        return podman
    ws = without_runs(request.getfixturevalue("finished_examples"), tmp_path_factory.mktemp("bombs") / "ws")
    ws.use_engine(EngineSettings(engine.kind, engine.socket, pids_limit=forkbombs.PIDS))
    ws.configure([forkbombs.TASK], forkbombs.agents(ws))
    watched = forkbombs.run_watched(ws, [ws.target(agent, forkbombs.TASK) for agent in forkbombs.PHASES])
    return WatchedRun(ws, watched)


@pytest.mark.docker
@pytest.mark.parametrize("agent", list(forkbombs.PHASES), ids=["agent-phase", "verifier-phase"])
def test_a_fork_bomb_is_the_agents_outcome_and_the_host_stays_responsive(
    bombs: WatchedRun, agent: str
) -> None:
    forkbombs.check_bomb(bombs.ws, bombs.watched, agent)
    assert bombs.ws.containers() == []
