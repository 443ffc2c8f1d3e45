"""In every example task image the base commit and its ancestors are reachable on the branch `task-base`
(as in the published benchmark): the pull request's head commit, every object it adds and the upstream
main that moved past the base are absent, and no other ref, remote, reflog, stash, loose or unreachable
object is left."""

from __future__ import annotations

import json

import pytest

from adversarial.common import Row, render
from adversarial.sealed import run_sealed
from kotlin_bench.core import names
from kotlin_bench.dataset.task import discover
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

pytestmark = pytest.mark.usefixtures("docker_engine")
TASKS = [p.name for p in discover(REPO / "examples/tasks")]


@pytest.fixture(scope="module")
def sealed(finished_examples: Workspace) -> dict[str, Row]:
    rows = run_sealed(workspace=finished_examples.root)
    print(render(rows, {}))
    return {row.name: row for row in rows}


def test_every_example_task_is_checked(sealed: dict[str, Row]) -> None:
    # every task image of the dataset (and the spec's tasks are those with a directory)
    assert len(sealed) == len(TASKS) == len(json.loads((REPO / "examples/dataset.json").read_text())["tasks"])


@pytest.mark.parametrize("task", TASKS)
def test_task_image_history_is_sealed(sealed: dict[str, Row], task: str) -> None:
    project, number = task.removeprefix("examples_").rsplit("-", 1)
    row = sealed[names.task_image(f"examples_{project}", int(number))]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"
