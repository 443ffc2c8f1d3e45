"""Bad input is rejected with an error that names it, and one bad task never stops the others."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from adversarial.bad_input import apply_patch, init_repo, run_bad_inputs, run_bad_task_keep_going
from adversarial.common import TASK, Row, render
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO, without_runs


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    found = run_bad_inputs(tmp_path_factory.mktemp("bad"))
    print(render(found, {}))
    return {row.name: row for row in found}


BAD_INPUTS = [
    "malformed task.toml",
    "task.toml field of the wrong type",
    "missing task file (tests/test.sh)",
    "invalid expected_tests.json",
    "invalid expected_tests.json (verifier)",
    "config attempts = 0",
    "config agent name with a space",
    "config unknown agent kind",
    "config script agent without script",
    "config misspelt key (attemps)",
    "config Harbor agent as kind",
    "unknown agent kind (Agent)",
    "script agent with a missing file",
    "malformed predictions",
    "predictions: a JSON array",
    "predictions: patch key misspelt",
    "JUnit XML: non-UTF-8",
    "JUnit XML: truncated",
    "JUnit XML: huge (over the cap)",
    "JUnit XML: entity bomb",
    "JUnit XML: external entity",
    "JUnit reports flood (collector cap)",
    "patch: ../ path",
    "patch: absolute path",
    "patch: into .git",
    "patch: beyond a symlink",
    "patch: corrupt binary hunk",
]


def test_every_bad_input_is_tried(rows: dict[str, Row]) -> None:
    assert sorted(rows) == sorted(BAD_INPUTS)


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_is_rejected_clearly(rows: dict[str, Row], name: str) -> None:
    row = rows[name]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"


def test_a_binary_hunk_inside_the_repository_applies(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    (repo / "b.bin").write_bytes(bytes(range(256)))
    subprocess.run(["git", "add", "b.bin"], cwd=repo, check=True)
    diff = subprocess.run(
        ["git", "diff", "--cached", "--binary"], cwd=repo, capture_output=True, check=True
    ).stdout
    subprocess.run(["git", "rm", "-q", "--cached", "b.bin"], cwd=repo, check=True)
    (repo / "b.bin").unlink()
    refused, why = apply_patch(repo, diff.decode())
    assert not refused, why
    assert (repo / "b.bin").read_bytes() == bytes(range(256))


@pytest.mark.usefixtures("docker_engine")
def test_one_bad_task_does_not_stop_the_others(
    tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace
) -> None:
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("badtask") / "ws")
    try:
        planning, running = run_bad_task_keep_going(ws)
    finally:
        for container in ws.containers():
            container.remove(force=True)
    assert running.ok, f"{running.outcome}: {running.why}"
    assert planning.ok, f"{planning.outcome}: {planning.why}"  # the error names the bad task.toml


def test_a_malformed_task_toml_does_not_stop_planning_the_others(tmp_path: Path) -> None:
    ws = Workspace.create(tmp_path / "ws", REPO)
    ws.configure(["examples_calc-4"], [{"name": "nop", "kind": "nop"}])
    toml = ws.root / "examples/tasks/examples_slug-8/task.toml"
    toml.write_text(toml.read_text() + "garbage = = =\n")
    out = ws.snakemake("--dry-run", ws.target("nop", TASK))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "examples_slug-8" in out.stderr  # reported
