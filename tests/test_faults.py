"""Faults injected into real runs: timeouts, an out-of-memory verifier, a container killed under the
verifier, a full disk while results are written, Snakemake stopped by SIGINT, SIGTERM and kill -9, and
the Docker daemon restarted mid-run. Each must end in a recorded result or error (retried where
transient) or in a clean resume that runs only what is missing, with no container left behind."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest

from adversarial.common import Row, render
from adversarial.faults import ensure_engine, run_engine_restart, run_faults, run_signals
from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import without_runs

pytestmark = pytest.mark.usefixtures("docker_engine")


def _rows(ws: Workspace, run: object) -> dict[str, Row]:
    try:
        rows = run(ws)  # type: ignore[operator]
    finally:
        for container in ws.containers():
            container.remove(force=True)
    print(render(rows, {}))
    return {row.name: row for row in rows}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> dict[str, Row]:
    if os.geteuid() != 0:
        pytest.skip("the full-disk fault mounts a tmpfs: needs root")
    return _rows(without_runs(finished_examples, tmp_path_factory.mktemp("faults") / "ws"), run_faults)


@pytest.fixture(scope="module")
def signals(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> dict[str, Row]:
    return _rows(without_runs(finished_examples, tmp_path_factory.mktemp("signals") / "ws"), run_signals)


@pytest.mark.parametrize(
    "fault",
    [
        "agent timeout (2 s, agent sleeps)",
        "verifier timeout (4 s)",
        "OOM (memory_mb = 100)",
        "container killed mid-verifier",
        "disk full writing results (8k tmpfs)",
        "containers left (faults batch)",
        "containers left (after resume)",
    ],
)
def test_fault_is_recorded_or_resumed(batch: dict[str, Row], fault: str) -> None:
    row = batch[fault]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"


@pytest.mark.parametrize(
    "fault",
    [
        "Snakemake SIGINT (process group)",
        "Snakemake SIGTERM (process group)",
        "kill -9 Snakemake (its job orphaned)",
    ],
)
def test_interrupted_snakemake_leaves_nothing_and_resumes(signals: dict[str, Row], fault: str) -> None:
    row = signals[fault]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"


def test_docker_daemon_restart_mid_run_is_retried(
    tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace
) -> None:
    if os.geteuid() != 0 or not os.path.exists("/var/run/docker.pid"):
        pytest.skip("restarting dockerd needs root and a local daemon")
    try:
        rows = _rows(
            without_runs(finished_examples, tmp_path_factory.mktemp("engine") / "ws"), run_engine_restart
        )
    finally:
        ensure_engine()  # whatever happened, the engine runs again
    row = rows["Docker daemon restarted mid-run"]
    if row.outcome == "not tried":
        pytest.skip(row.why)
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"


def test_a_run_reaps_only_its_own_directorys_containers(tmp_path: Path) -> None:
    """A run reaps the leftovers of its own key when it starts; the key names the workflow directory,
    so the same (agent, task, attempt) in another checkout is left alone."""
    from kotlin_bench.core.names import workdir_tag
    from kotlin_bench.engine.containers import KEEPALIVE, reap
    from kotlin_bench.engine.engine import connect

    client = connect().client
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    started = [
        client.containers.run(
            "kotlin-bench/os:bookworm",  # the OS image every base is built from
            entrypoint=KEEPALIVE,
            detach=True,
            labels={names.LABEL_RUN: f"nop.examples_calc-4.1.{workdir_tag(where)}"},
        )
        for where in (ours, theirs)
    ]
    try:
        assert reap(client, f"nop.examples_calc-4.1.{workdir_tag(ours)}") == 1
        remaining = {c.id for c in client.containers.list(all=True, filters={"label": names.LABEL_RUN})}
        assert started[0].id not in remaining and started[1].id in remaining
    finally:
        for container in started:
            with contextlib.suppress(Exception):
                container.remove(force=True)
