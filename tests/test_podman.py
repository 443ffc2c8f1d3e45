"""The example dataset on Podman, with Docker out of reach (conftest `podman_engine`): rootful from nothing
(the OS image by debootstrap and an import, base and task images, oracle and nop, the health check, a
validation, the sealed history), and rootless as an ordinary user who cannot reach any Docker engine. The
verdicts must be those of the Docker run of the same tasks (`finished_examples`), image ids aside (each
engine built its own images).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
import yaml

from adversarial.sealed import run_sealed
from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, WorkRecord
from kotlin_bench.engine.engine import connect
from kotlin_bench.engine.images import image_id, read_sentinel
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import PODMAN, REPO, RootlessUser, verdicts

pytestmark = [pytest.mark.podman]
TASKS = 5


def same_verdicts(ours: Workspace, docker: Workspace) -> None:
    found = verdicts(ours).drop(columns="image_id")
    by_agent = found.groupby("agent").status.value_counts().to_dict()
    assert by_agent == {("oracle", "resolved"): TASKS, ("nop", "unresolved"): TASKS}
    pd.testing.assert_frame_equal(found, verdicts(docker).drop(columns="image_id"))


def results(ws: Workspace) -> list[RunResult]:
    return [
        RunResult.read(p) for p in sorted((ws.root / names.runs_root()).glob("*/*/attempt-*/result.json"))
    ]


def test_the_examples_run_end_to_end_on_rootful_podman(
    finished_examples: Workspace, podman_examples: Workspace
) -> None:
    same_verdicts(podman_examples, finished_examples)
    engine = connect(PODMAN)
    assert engine.podman and not engine.rootless and engine.unlimited == ()
    for result in results(podman_examples):
        assert result.engine["engine"].startswith("podman ") and result.engine["unenforced_limits"] == []
    # every image the workflow built is in Podman under the name it was built as (the OS image came from
    # an import, whose tag Podman's Docker API drops unless it is part of the repository)
    for sentinel in sorted((podman_examples.root / "results/images").rglob("*.json")):
        record = read_sentinel(sentinel)
        assert image_id(engine.client, record.image) == record.id, sentinel
        assert f"localhost/{record.image}" in engine.client.images.get(record.id).tags
    assert podman_examples.containers() == []
    assert podman_examples.planned() == {}  # a second invocation has nothing to do


def test_health_check_validation_and_sealed_history_on_rootful_podman(
    podman_examples: Workspace, tmp_path: Path
) -> None:
    ws = podman_examples.clone(tmp_path / "ws")
    task = "examples_calc-4"
    config = ws.config() | {"validation": {"repeats": 0}}  # the run, test and fix phases
    (ws.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    out = ws.snakemake("healthcheck", names.validation_verdict(task), timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    health = pd.read_csv(ws.root / names.HEALTHCHECK_CSV)
    assert len(health) == TASKS and (health.verdict == "ok").all(), health.to_string()
    assert set(health["agent phase"]) == {"no-network"}  # the examples' empty allowlists
    verdict = json.loads((ws.root / names.validation_verdict(task)).read_text())
    # valid, and the lists derived from its phases are the committed ones
    assert verdict["valid"] is True and verdict["expected"] == "equal", verdict
    rows = run_sealed(engine=PODMAN)
    assert len(rows) == TASKS and all(row.ok for row in rows), [(r.name, r.outcome, r.why) for r in rows]
    assert ws.containers() == []


def test_a_harbor_agent_on_rootful_podman(podman_examples: Workspace, tmp_path: Path) -> None:
    """Harbor's docker environment, pointed at Podman's Docker API (DOCKER_HOST, the classic builder):
    the trial runs on the image the workflow built in Podman."""
    harbor = Path(os.environ.get("KOTLIN_BENCH_HARBOR", REPO / ".harbor"))
    if not (harbor / "venv/bin/harbor").exists():
        pytest.fail(f"harbor is not installed at {harbor}: scripts/setup_harbor.sh")
    ws = podman_examples.clone(tmp_path / "ws")
    agent = {"name": "harbor-oracle", "kind": "harbor", "harbor_agent": "oracle", "isolate_network": True}
    ws.configure(["examples_calc-4"], [agent])
    out = ws.snakemake(
        ws.target("harbor-oracle", "examples_calc-4"), env=os.environ | {"KOTLIN_BENCH_HARBOR": str(harbor)}
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    result = ws.result("harbor-oracle", "examples_calc-4")
    assert result is not None and (result.status, result.reward) == ("resolved", 1.0), (
        result.to_dict() if result else None
    )
    log = (ws.run_dir("harbor-oracle", "examples_calc-4") / "work/harbor/harbor.log").read_text()
    assert "harbor run" in log


def test_the_examples_run_rootless_as_an_ordinary_user(
    finished_examples: Workspace, rootless: RootlessUser, rootless_examples: Workspace
) -> None:
    ws = rootless.clone(rootless_examples)
    # the user has no Docker engine to fall back to
    docker = rootless.run(["docker", "info"], ws.root, timeout=60)
    assert docker.returncode != 0 and "permission denied" in docker.stderr.lower() + docker.stdout.lower()
    out = rootless.snakemake(ws)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    same_verdicts(ws, finished_examples)
    for result in results(ws):
        assert result.engine["engine"].endswith(" rootless")
        # this host's cgroup v1 gives a rootless user no controllers: the limits are named as not enforced
        assert set(result.engine["unenforced_limits"]) <= {"memory", "cpu", "pids"}
    work = WorkRecord.read(ws.run_dir("oracle", "examples_calc-4") / names.WORK_DIR / names.WORK_FILE)
    assert work.engine == results(ws)[0].engine
    # everything the runs wrote, copied-out verifier reports included, is the user's
    owners = {p.stat().st_uid for p in (ws.root / names.runs_root()).rglob("*")}
    assert owners == {rootless.uid}
    assert connect(rootless.engine).client.containers.list(all=True) == []
