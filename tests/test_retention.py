"""`images: {keep: bases}`: task images leave the engine once their jobs are done, and come back when a job
needs one again; nothing reruns because of it, and the verdicts are those of keep-all."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.engine.retention import ImageState, Outcome, Purpose, Release, image_state
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import without_runs
from tests.test_workflow_e2e import planned_jobs

pytestmark = pytest.mark.usefixtures("docker_engine")
TASKS = ["examples_calc-4", "examples_slug-8"]
# A task whose image only this workspace has (a label of its own in the Dockerfile): removing it really
# frees it, and bringing it back really builds it. The other task's image is the session's finished
# workspace's (this workspace is a copy of it, and runs on that image): releasing it leaves it there.
OWN = "examples_calc-4"
VERDICT = ["agent", "task", "status", "reward", "reason"]


def _our_names(ws: Workspace) -> dict[str, str]:
    return {
        t: names.built_task_image(load_task(ws.root / "examples/tasks" / t).image, ws.root) for t in TASKS
    }


def _named(image: str) -> bool:
    from kotlin_bench.engine.engine import connect
    from kotlin_bench.engine.images import image_id

    return image_id(connect().client, image) is not None


def _verdicts(root: Path) -> pd.DataFrame:
    summary = pd.read_csv(root / names.SUMMARY_CSV)
    rows = summary[summary["task"].isin(TASKS)][VERDICT]
    return rows.sort_values(["agent", "task"]).reset_index(drop=True)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Workspace:
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("retention") / "ws")
    agents = [{"name": "oracle", "kind": "oracle"}, {"name": "nop", "kind": "nop"}]
    ws.configure(TASKS, agents, images={"keep": "bases"})
    dockerfile = ws.root / "examples/tasks" / OWN / "environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f"LABEL kotlin-bench.test=retention-{uuid.uuid4().hex}\n")
    out = ws.snakemake(timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    return ws


def test_bases_only_ends_with_no_task_image_and_the_verdicts_of_keep_all(
    ws: Workspace, finished_examples: Workspace
) -> None:
    assert not _named(_our_names(ws)[OWN])
    for task in TASKS:
        release = Release.read(ws.root / names.task_image_release(task, Purpose.RUNS))
        state = image_state(task, str(ws.root / names.RESULTS))
        if task == OWN:
            assert (release.outcome, state) == (Outcome.REMOVED, ImageState.RELEASED), release
        else:  # the finished workspace's image: it stays, under its name
            theirs = read_sentinel(finished_examples.root / names.task_sentinel(task))
            assert (release.outcome, state) == (Outcome.KEPT, ImageState.PRESENT), release
            assert f"built by another workspace ({finished_examples.root})" in release.detail
            assert theirs.id == release.id and _named(theirs.image), "the other workspace keeps its image"
    pd.testing.assert_frame_equal(_verdicts(ws.root), _verdicts(finished_examples.root))
    report = (ws.root / names.SUMMARY_MD).read_text()
    assert "## Task images" in report and report.count("| released |") == 1
    assert planned_jobs(ws.root) == {}  # a second invocation has nothing to do


def test_a_deleted_result_reruns_with_its_image_brought_back_and_released_again(ws: Workspace) -> None:
    sentinel = json.loads((ws.root / names.task_sentinel(OWN)).read_text())
    work = ws.root / names.work_record("oracle", OWN, 1)
    kept = work.stat().st_mtime_ns
    (ws.root / names.verify_result("oracle", OWN, 1)).unlink()
    assert planned_jobs(ws.root) == {
        "verify": 1,
        "release_task_image": 1,
        "summary": 1,
        "aggregate": 1,
        "plots": 1,
        "site": 1,
        "all": 1,
    }
    out = ws.snakemake(timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    result = json.loads((ws.root / names.verify_result("oracle", OWN, 1)).read_text())
    assert result["status"] == "resolved"
    rebuilt = json.loads((ws.root / names.task_image_rebuilt(OWN)).read_text())
    assert rebuilt["replaces"] == sentinel["id"] and rebuilt["image"] == sentinel["image"]
    assert result["verify_image_id"] == rebuilt["id"]  # the result names the image it ran on
    assert work.stat().st_mtime_ns == kept  # the agent's work is untouched
    assert not _named(sentinel["image"])  # released again
    assert planned_jobs(ws.root) == {}
