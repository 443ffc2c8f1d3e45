"""The example dataset on Podman, with Docker out of reach (conftest `podman_engine`): rootful, and rootless
as an ordinary user who cannot reach any Docker engine, in the user's own workflow and as the user's
Slurm jobs. Both run the images the Docker run of the session (`finished_examples`) built, moved into
Podman (conftest `podman_images`), so the verdicts must be that run's, image ids included.

The rootful run is the session's one (conftest `podman_examples`: oracle and nop on PODMAN_TASKS, and
the fork bombs of tests/test_limits.py). Building from nothing on Podman, the health check, a validation,
the sealed history and a Harbor agent on Podman were run by hand (docs/engines.md, "What the tests run,
and what was run by hand").
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, WorkRecord
from kotlin_bench.engine.engine import connect
from kotlin_bench.engine.images import image_id, read_sentinel
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import (
    KOTLINC_EXAMPLES,
    PODMAN,
    PODMAN_TASKS,
    ROOTLESS_TASKS,
    RootlessUser,
    WatchedRun,
    run_verdicts,
    verdicts,
)
from tests.test_slurm import SUBMITTED_RE, accounting

pytestmark = [pytest.mark.podman]
SLURM_TASK = "examples_calc-4"


def oracle_and_nop(ws: Workspace, tasks: list[str] = PODMAN_TASKS) -> list[RunResult]:
    found = [ws.result(agent, task) for agent in ("oracle", "nop") for task in tasks]
    assert all(found), found
    return [r for r in found if r is not None]


def test_the_examples_run_end_to_end_on_rootful_podman(
    finished_examples: Workspace, podman_examples: WatchedRun
) -> None:
    ws = podman_examples.ws
    found = run_verdicts(ws)
    by_agent = found.groupby("agent").status.value_counts().to_dict()
    errors = [(r.agent, r.task, r.error, r.tries) for r in oracle_and_nop(ws) if r.status == "error"]
    assert by_agent == {
        ("oracle", "resolved"): len(PODMAN_TASKS),
        ("nop", "unresolved"): len(PODMAN_TASKS),
    }, errors  # what an error was, when one comes (one oracle run did, once in four sessions)
    docker = verdicts(finished_examples, PODMAN_TASKS)
    assert docker.image_id.notna().all()
    pd.testing.assert_frame_equal(found, docker)
    engine = connect(PODMAN)
    assert engine.podman and not engine.rootless and engine.unlimited == ()
    for result in oracle_and_nop(ws):
        assert result.engine.engine.startswith("podman ") and result.engine.unenforced_limits == []
    # the task images are in Podman under the names they were built as, with the ids Docker gave them
    for task in KOTLINC_EXAMPLES:  # the images moved into Podman (the Gradle examples' are not)
        sentinel = ws.root / names.task_sentinel(task)
        record = read_sentinel(sentinel)
        assert image_id(engine.client, record.image) == record.id, sentinel
        assert f"localhost/{record.image}" in engine.client.images.get(record.id).tags
    assert ws.containers() == []


@pytest.mark.slurm
def test_the_examples_run_rootless_as_an_ordinary_user_and_as_their_slurm_jobs(
    finished_examples: Workspace,
    rootless: RootlessUser,
    rootless_examples: Workspace,
    slurm_cluster: None,
    tmp_path: Path,
) -> None:
    """The rootless user's runs of the examples, with no Docker engine to fall back to: the oracle run of
    one example as Slurm jobs (its solve and verify steps) that the user submits and that run as the user
    on the user's Podman, the other three runs of two tasks at the same time in the user's own workflow. One
    run on Slurm: each Slurm job costs seconds of start-up (tests/test_slurm.py sends the runs of two
    examples to Slurm, on Docker)."""
    on_slurm, local = rootless.clone(rootless_examples), rootless.clone(rootless_examples)
    docker = rootless.run(["docker", "info"], local.root, timeout=60)
    said = docker.stderr.lower() + docker.stdout.lower()
    # refused where a Docker daemon runs (its socket is root's), absent where CI stopped it
    assert docker.returncode != 0 and ("permission denied" in said or "cannot connect" in said), said
    slurm_run = ("oracle", SLURM_TASK)
    slurm_log = tmp_path / "slurm.out"
    profile = ["--workflow-profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "5"]
    slurm = rootless.popen(
        on_slurm, slurm_log, *profile, "--seconds-between-status-checks", "2", on_slurm.target(*slurm_run)
    )
    try:
        runs = [(a, t) for a in ("oracle", "nop") for t in ROOTLESS_TASKS if (a, t) != slurm_run]
        out = rootless.snakemake(local, *(local.target(*run) for run in runs))
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
        assert slurm.wait(timeout=1800) == 0, slurm_log.read_text(errors="replace")[-5000:]
    finally:
        if slurm.poll() is None:
            slurm.kill()
    submitted = SUBMITTED_RE.findall(slurm_log.read_text(errors="replace"))
    assert sorted(rule for _, rule in submitted) == ["solve", "verify"], submitted
    jobs = [job for job, _ in submitted]
    records = accounting(jobs)
    assert {tuple(records[job][i] for i in (0, 4, 5)) for job in jobs} == {
        ("COMPLETED", str(on_slurm.root), rootless.name)
    }, records

    # everything the runs wrote, copied-out verifier reports included, is the user's
    for ws in (local, on_slurm):
        assert {p.stat().st_uid for p in (ws.root / names.runs_root()).rglob("*")} == {rootless.uid}
    assert connect(rootless.engine).client.containers.list(all=True) == []

    # the runs of both workspaces, as one summary would have them: those of the Docker run
    shutil.copytree(on_slurm.run_dir(*slurm_run), local.run_dir(*slurm_run))
    found = run_verdicts(local, tasks=ROOTLESS_TASKS)
    by_agent = found.groupby("agent").status.value_counts().to_dict()
    errors = [
        (r.agent, r.task, r.error) for r in oracle_and_nop(local, ROOTLESS_TASKS) if r.status == "error"
    ]
    assert by_agent == {
        ("oracle", "resolved"): len(ROOTLESS_TASKS),
        ("nop", "unresolved"): len(ROOTLESS_TASKS),
    }, errors
    pd.testing.assert_frame_equal(found, verdicts(finished_examples, ROOTLESS_TASKS))
    results = oracle_and_nop(local, ROOTLESS_TASKS)
    for result in results:
        assert result.engine.engine.endswith(" rootless")
        # this host's cgroup v1 gives a rootless user no controllers: the limits are named as not enforced
        assert set(result.engine.unenforced_limits) <= {"memory", "cpu", "pids"}
    work = WorkRecord.read(local.run_dir(*slurm_run) / names.WORK_DIR / names.WORK_FILE)
    assert work.engine == results[0].engine
