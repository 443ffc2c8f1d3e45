"""In every example task image only the base commit is reachable: the pull request's head commit and every
object it adds are absent, and no remote, ref, reflog, stash, loose or unreachable object is left."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from workflow import adversarial
from workflow.tasks import discover

pytestmark = pytest.mark.usefixtures("docker_engine")
TASKS = [p.name for p in discover(REPO / "examples/tasks")]


@pytest.fixture(scope="module")
def sealed() -> dict[str, adversarial.Row]:
    rows = adversarial.run_sealed()
    print(adversarial.render(rows, {}))
    return {row.name: row for row in rows}


def test_every_example_task_is_checked(sealed: dict[str, adversarial.Row]) -> None:
    assert len(sealed) == len(TASKS) == 4


@pytest.mark.parametrize("task", TASKS)
def test_task_image_history_is_sealed(sealed: dict[str, adversarial.Row], task: str) -> None:
    project, number = task.removeprefix("examples_").rsplit("-", 1)
    row = sealed[f"kotlin-bench/examples_{project}:pr-{number}"]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"
