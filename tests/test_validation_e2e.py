"""Validation and add-task end to end, with real Docker, real kotlinc and real JUnit, in copies of the
repository (the developer's own results/ are never touched).

- add-task adds the fifth example task (calc #6) back to a copy where it was taken out, validates it in the
  workflow and writes exactly what is committed (spec entry, task directory, expected list);
- `snakemake results/validation/summary.csv` then validates three example tasks: valid, derived lists equal
  to the committed ones id for id, and calc #6's deliberately flaky test found by the fix repetition and
  left out; a second invocation has nothing to do. One repetition here (`validation: {repeats: 1}`, where
  config.yaml has 3): it tells the flaky test apart as well (examples/README.md), and each repetition
  costs a container per task;
- bad input: a pull request that does not exist, one without test files, a base that does not build, a
  test command that writes no report, a test patch that does not apply: each fails naming task and phase.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.tools.workspace import Workspace, checkout_files
from kotlin_bench.validation.derive import derive
from kotlin_bench.validation.phase import run_phase
from kotlin_bench.validation.records import TaskValidation, phase_labels
from tests.conftest import REPO, without_runs

pytestmark = pytest.mark.usefixtures("docker_engine")
NEW = "examples_calc-6"
FLAKY = "calc.HostNameTest.passes on some hosts only()"
SPEC = "examples/dataset.json"
REPEATS = 1  # fix runs beyond the first
VALIDATED = ["examples_calc-4", "examples_slug-8", NEW]
ADD = [sys.executable, "-m", "kotlin_bench", "add-task", "--spec", SPEC, "--tasks-dir", "examples/tasks"]


def spec_block(text: str, task_id: str) -> tuple[int, int]:
    """Where a task's entry is in the spec's text, with the comma before it."""
    start = text.index(f',\n    {{\n      "id": "{task_id}"')
    following = text.find(',\n    {\n      "id": ', start + 1)
    return start, following if following >= 0 else text.rindex("\n  ]\n}")


def take_out(root: Path, task_id: str) -> None:
    """Remove a task from a copy: its spec entry, its task directory and its expected list."""
    spec = root / SPEC
    text = spec.read_text()
    start, end = spec_block(text, task_id)
    spec.write_text(text[:start] + text[end:])
    assert task_id not in spec.read_text()
    shutil.rmtree(root / "examples/tasks" / task_id)
    (root / "examples/expected" / f"{task_id}.json").unlink()


def appended_last(text: str, task_id: str) -> str:
    """The spec's text with a task's entry moved to the end, where add-task appends it."""
    start, end = spec_block(text, task_id)
    rest, tail = text[:start] + text[end:], text.rindex("\n  ]\n}") - (end - start)
    return rest[:tail] + text[start:end] + rest[tail:]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Workspace:
    """A copy of the session's finished run of the examples (its images and materialized tasks), without
    its runs."""
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("validation") / "ws")
    config = ws.config()
    config["validation"]["repeats"] = REPEATS
    # Three kotlinc examples: the one add-task adds (its flaky test), and two more (each task costs four
    # containers here); every example's lists are checked against its runs in every workflow run (oracle
    # 1, nop 0) and were derived by this validation when committed (examples/README.md).
    config["tasks"] = VALIDATED
    ws.write("config.yaml", yaml.safe_dump(config, sort_keys=False))
    return ws


@pytest.fixture(scope="module")
def added(ws: Workspace) -> subprocess.CompletedProcess[str]:
    take_out(ws.root, NEW)
    config = ws.config()
    tasks = config["tasks"]
    ws.write(
        "config.yaml", yaml.safe_dump(config | {"tasks": [t for t in tasks if t != NEW]}, sort_keys=False)
    )
    try:
        return add(ws)
    finally:  # back in the selection, for the validation of every example task
        ws.write("config.yaml", yaml.safe_dump(config | {"tasks": tasks}, sort_keys=False))


def add(ws: Workspace) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ADD, "examples/calc#6", "--base-version", "1.0.0", "--fix-release", "1.2.0", "--write-expected"],
        cwd=ws.root,
        capture_output=True,
        text=True,
        timeout=5400,
    )


def test_add_task_reproduces_the_committed_fifth_task(
    ws: Workspace, added: subprocess.CompletedProcess[str]
) -> None:
    assert added.returncode == 0, added.stdout[-4000:] + added.stderr[-4000:]
    assert f"{NEW}: valid (f2p 4, p2p 12, s2p 0, n2p 0; 1 flaky test(s) left out: {FLAKY})" in added.stdout
    assert (ws.root / SPEC).read_text() == appended_last((REPO / SPEC).read_text(), NEW)
    committed = [
        f for f in checkout_files(REPO) if f.startswith((f"examples/tasks/{NEW}/", "examples/expected/"))
    ]
    assert f"examples/expected/{NEW}.json" in committed
    for rel in committed:
        assert (ws.root / rel).read_bytes() == (REPO / rel).read_bytes(), rel
    # ... and materialized: the expected list is in the task directory, so its runs can be scored.
    assert load_task(ws.root / "examples/tasks" / NEW).has_expected_tests


@pytest.fixture(scope="module")
def summary(ws: Workspace, added: subprocess.CompletedProcess[str]) -> pd.DataFrame:
    out = ws.snakemake(names.VALIDATION_SUMMARY_CSV, timeout=7200)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    return pd.read_csv(ws.root / names.VALIDATION_SUMMARY_CSV).set_index("task")


def test_the_example_tasks_validate_with_the_committed_lists(summary: pd.DataFrame) -> None:
    assert sorted(summary.index) == sorted(VALIDATED)
    assert summary["valid"].all(), summary[["valid", "reasons"]]
    assert (summary["expected"] == "equal").all(), summary[
        ["expected", "only_in_derived", "only_in_expected"]
    ]
    assert summary["only_in_derived"].isna().all() and summary["only_in_expected"].isna().all()
    assert (summary["fix_runs"] == 1 + REPEATS).all()
    assert summary["oracle_resolved"].all() and not summary["nop_resolved"].any()


def test_the_flaky_test_is_found_and_left_out(ws: Workspace, summary: pd.DataFrame) -> None:
    assert summary.loc[NEW, "flaky"] == 1 and summary.loc[NEW, "flaky_tests"] == FLAKY
    assert (summary.drop(index=NEW)["flaky"] == 0).all()
    verdict = TaskValidation.read(ws.root / names.validation_verdict(NEW))
    # Every validation container is named after its phase; the test passes where that name ends in an
    # even character code: fix ('x'), not fix-1.
    assert verdict.flaky == {FLAKY: {"fix": "PASS", "fix-1": "FAIL"}}
    derived = json.loads((ws.root / names.derived_expected(NEW)).read_text())
    assert FLAKY not in json.dumps(derived)


def test_validation_reruns_like_runs(ws: Workspace, summary: pd.DataFrame) -> None:
    assert ws.planned(names.VALIDATION_SUMMARY_CSV) == {}
    (ws.root / names.validation_phase("examples_slug-8", "fix-1")).unlink()
    assert ws.planned(names.VALIDATION_SUMMARY_CSV) == {
        "validation_phase": 1,
        "validation_task": 1,
        "validation_summary": 1,
    }
    out = ws.snakemake(names.VALIDATION_SUMMARY_CSV)
    assert out.returncode == 0, out.stderr[-3000:]
    assert ws.planned(names.VALIDATION_SUMMARY_CSV) == {}


# --------------------------------------------------------------------------------------------------
# Bad input


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """Another copy, for pull requests that fail before any image is built."""
    return Workspace.create(tmp_path_factory.mktemp("bad-pulls"), REPO)


def test_a_pull_request_that_does_not_exist(bare: Workspace) -> None:
    before = (bare.root / SPEC).read_text()
    out = subprocess.run(
        [*ADD, "examples/calc#99"], cwd=bare.root, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 1
    assert "error: examples_calc-99: source: pull request #99 does not exist: refs/pull/99/head" in out.stderr
    assert (bare.root / SPEC).read_text() == before
    assert not (bare.root / "examples/tasks/examples_calc-99").exists()


def test_a_pull_request_without_test_files(bare: Workspace) -> None:
    # Numbered below the committed pull requests: the main branch of the upstream repository stays the
    # last of those, which the later merges of `merges` apply to (make-upstream-repo.sh).
    bare.write("examples/bases/calc/upstream/pulls/2.patch", _readme_patch())
    bare.write(
        "examples/issues/examples/calc/pulls/2.json",
        json.dumps({"number": 2, "title": "Docs", "body": "Fixes #3"}),
    )
    before = (bare.root / SPEC).read_text()
    out = subprocess.run(
        [*ADD, "examples/calc#2"], cwd=bare.root, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 1, out.stdout[-2000:]
    assert "error: examples_calc-2: source: the diff" in out.stderr
    assert "has no test file: none of ['README.md'] matches the test_paths ['**/src/test/**']" in out.stderr
    assert (bare.root / SPEC).read_text() == before


def _readme_patch() -> str:
    """A pull request of calc that changes its README only."""
    tree = REPO / "examples/bases/calc/upstream/tree"
    lines = (tree / "README.md").read_text().splitlines()
    at = lines.index("Run the tests with `ktest .`.")
    context = lines[at - 3 : at]
    hunk = [f" {line}" for line in context] + ["-" + lines[at], "+Run all tests with `ktest .`."]
    header = f"@@ -{at - 2},4 +{at - 2},4 @@"
    return (
        "\n".join(["diff --git a/README.md b/README.md", "--- a/README.md", "+++ b/README.md", header, *hunk])
        + "\n"
    )


def broken_copy(
    ws: Workspace, name: str, test_command: str | None = None, test_patch: str | None = None
) -> Path:
    """A copy of the materialized calc #3 task under another id, its test command or test patch replaced."""
    source = ws.root / "examples/tasks/examples_calc-4"
    dest = ws.root / "broken" / name
    shutil.copytree(source, dest)
    if test_command is not None:
        (dest / "tests/task.env").write_text(
            f"REPO_DIR=/home/calc\nTEST_COMMAND={shlex.quote(test_command)}\n"
        )
    if test_patch is not None:
        (dest / "tests/test.patch").write_text(test_patch)
    return dest


def validate_copy(ws: Workspace, task_dir: Path, monkeypatch: pytest.MonkeyPatch) -> TaskValidation:
    """run, test and fix of the copy in real containers from calc #3's image (built by the summary's
    workflow run), then the derivation."""
    monkeypatch.chdir(ws.root)  # the containers' run keys name this workspace
    image = read_sentinel(ws.root / names.task_sentinel("examples_calc-4")).id
    task = load_task(task_dir)
    phases = {}
    for label in phase_labels(0):
        out = ws.root / "broken-results" / task.id / label
        run_phase(task, label, out, image)
        phases[label] = out
    return derive(task.id, phases)[0]


def test_a_base_that_does_not_build(
    ws: Workspace, summary: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = "printf 'fun broken(' > src/main/kotlin/calc/Broken.kt && ktest ."
    verdict = validate_copy(ws, broken_copy(ws, "nobuild_calc-4", test_command=broken), monkeypatch)
    assert not verdict.valid
    assert [r.split(":")[:2] for r in verdict.reasons] == [["run", " build_failed"], ["fix", " build_failed"]]
    assert verdict.reasons[0].startswith(
        "run: build_failed: the test command's output reports a failed build"
    )


def test_three_runs_without_reports(
    ws: Workspace, summary: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdict = validate_copy(ws, broken_copy(ws, "noreports_calc-4", test_command="true"), monkeypatch)
    assert verdict.reasons == [
        "run: no_reports: the test command (exit 0) wrote no JUnit report",
        "fix: no_reports: the test command (exit 0) wrote no JUnit report",
    ]
    assert verdict.phases["test"]["passed"] == 0


def test_a_test_patch_that_does_not_apply(
    ws: Workspace, summary: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = "diff --git a/NOPE.md b/NOPE.md\n--- a/NOPE.md\n+++ b/NOPE.md\n@@ -1 +1 @@\n-a\n+b\n"
    verdict = validate_copy(ws, broken_copy(ws, "stale_calc-4", test_patch=stale), monkeypatch)
    problem = "test_patch_failed: tests/test.patch does not apply at the base commit"
    assert verdict.reasons == [f"test: {problem}", f"fix: {problem}"]
    assert verdict.phases["run"]["passed"] == 11  # the base itself is fine
