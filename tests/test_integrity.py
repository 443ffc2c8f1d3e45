"""Integrity: the flags a result carries, the host's re-scoring, result provenance, and the adversarial
suite (examples/adversarial/) against the real harness on examples_calc-4 (one Snakemake invocation)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from adversarial.attacks import ATTACKS, run_attacks
from adversarial.common import Row, render
from kotlin_bench.core.record import RunKey, RunResult, digest_problems, task_digest, verifier_digest
from kotlin_bench.dataset.task import load_task
from kotlin_bench.results.provenance import stale_results
from kotlin_bench.runs import tamper as integrity
from kotlin_bench.scoring.rescore import rescore, verdict_problem
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO, without_runs

CALC = REPO / "examples/tasks/examples_calc-4"


# --------------------------------------------------------------------------- flags (no containers)


def test_outside_changes_lists_deepest_paths_without_noise_or_the_repository() -> None:
    entries = [
        {"Path": "/", "Kind": 0},
        {"Path": "/home", "Kind": 0},
        {"Path": "/home/calc", "Kind": 0},
        {"Path": "/home/calc/src/x.kt", "Kind": 0},
        {"Path": "/logs", "Kind": 1},
        {"Path": "/logs/verifier", "Kind": 1},
        {"Path": "/logs/verifier/reward.txt", "Kind": 1},
        {"Path": "/usr/local/bin/ktest", "Kind": 0},
        {"Path": "/etc/passwd", "Kind": 2},
        {"Path": "/tmp/kotlin-bench-agent-script/agent.sh", "Kind": 1},
        {"Path": "/root/.gradle/caches/x.jar", "Kind": 1},
        {"Path": "/solution/fix.patch", "Kind": 1},
    ]
    found = integrity.outside_changes(entries, "/home/calc")
    assert found == [
        "-/etc/passwd",
        "+/logs/verifier/reward.txt",
        "+/solution/fix.patch",
        "~/usr/local/bin/ktest",
    ]
    assert "+/solution/fix.patch" not in integrity.outside_changes(entries, "/home/calc", ("/solution",))


def test_outside_changes_are_capped() -> None:
    entries = [{"Path": f"/opt/x/{i:03d}", "Kind": 1} for i in range(80)]
    found = integrity.outside_changes(entries, "/home/calc")
    assert len(found) == integrity.MAX_FLAGGED + 1 and found[-1] == "... and 30 more"


def test_suspicious_lines_name_the_file_and_the_token() -> None:
    diff = (
        "diff --git a/src/main/kotlin/T.kt b/src/main/kotlin/T.kt\n--- /dev/null\n+++ b/src/main/kotlin/T.kt\n"
        '@@ -0,0 +1,2 @@\n+val p = ProcessBuilder("bash")\n+File("/logs/verifier/reward.txt")\n'
        "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-/logs/verifier\n+ok\n"
    )
    assert integrity.suspicious_lines(diff) == [
        "src/main/kotlin/T.kt: ProcessBuilder",
        "src/main/kotlin/T.kt: /logs/verifier",
        "src/main/kotlin/T.kt: reward.txt",
    ]
    flags = integrity.flag_changes(
        ["ktest", "a/build/test-results/test/TEST-x.xml", "src/test/kotlin/A.kt"], diff
    )
    assert flags["infrastructure"] == ["ktest", "a/build/test-results/test/TEST-x.xml"]
    assert "src/test/kotlin/A.kt" in flags["tests"]
    assert flags["suspicious"]


def test_a_kotlin_package_named_build_is_not_infrastructure() -> None:
    flags = integrity.flag_changes(["src/main/kotlin/com/acme/build/Tool.kt", "junit-platform.properties"])
    assert flags["infrastructure"] == ["junit-platform.properties"]


# --------------------------------------------------------------------------- re-scoring and provenance


def _verifier_out(tmp_path: Path, passing: bool) -> Path:
    expected = json.loads((REPO / "examples/expected/examples_calc-4.json").read_text())
    tests = expected["f2p_tests"] + expected["p2p_tests"]
    cases = []
    for test in tests:
        cls, name = test.rsplit(".", 1)
        failed = not passing and test in expected["f2p_tests"]
        body = "<failure message='no'/>" if failed else ""
        cases.append(f'<testcase classname="{cls}" name="{name}">{body}</testcase>')
    out = tmp_path / "verifier"
    out.mkdir(parents=True)
    (out / "junit.xml").write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>")
    return out


@pytest.fixture
def calc_copy(tmp_path: Path) -> Path:
    """A copy of the calc task, completed where nothing is materialized (a fresh clone)."""
    dest = tmp_path / "examples_calc-4"
    shutil.copytree(CALC, dest)
    if not (dest / "tests/expected_tests.json").exists():
        shutil.copy(REPO / "examples/expected/examples_calc-4.json", dest / "tests/expected_tests.json")
    if not (dest / "instruction.md").exists():
        (dest / "instruction.md").write_text("# Implement the issue(s) in examples/calc:\n")
    return dest


def test_host_rescoring_agrees_with_an_honest_verdict_and_catches_a_forged_one(
    tmp_path: Path, calc_copy: Path
) -> None:
    task = load_task(calc_copy)
    assert rescore(task.path, _verifier_out(tmp_path / "a", passing=True))[0] == 1.0
    assert verdict_problem(task.path, tmp_path / "a/verifier", 1.0) is None
    failing = _verifier_out(tmp_path / "b", passing=False)
    problem = verdict_problem(task.path, failing, 1.0)
    assert problem and "host's re-scoring" in problem and "f2p" in problem
    assert verdict_problem(task.path, failing, 0.0) is None
    assert rescore(task.path, tmp_path)[0] == 0.0  # no junit.xml at all


def test_digest_problems_detect_another_task_or_verifier_version(calc_copy: Path) -> None:
    task = load_task(calc_copy)
    result = RunResult(RunKey(task.id, "examples/calc", "oracle", "oracle", None, 1))
    result.task_digest, result.verifier_digest = task_digest(task.path), verifier_digest(task.path)
    assert digest_problems(result, task.id, task.path) == []
    missing = replace(result, task_digest=None)
    assert any("missing" in p for p in digest_problems(missing, task.id, task.path))
    assert any(
        "not 'examples_calc-4'" in p
        for p in digest_problems(replace(result, key=replace(result.key, task="x")), task.id, task.path)
    )
    (calc_copy / "tests/test.sh").write_text((calc_copy / "tests/test.sh").read_text() + "# v2\n")
    problems = digest_problems(result, task.id, task.path)
    assert any(p.startswith("verifier_digest") for p in problems)
    assert any(p.startswith("task_digest") for p in problems)


def test_stale_results_name_the_result_that_no_longer_matches(calc_copy: Path, tmp_path: Path) -> None:
    task = load_task(calc_copy)
    result = RunResult(RunKey(task.id, "examples/calc", "oracle", "oracle", None, 1))
    result.score(1.0)
    result.task_digest, result.verifier_digest = task_digest(task.path), verifier_digest(task.path)
    path = tmp_path / "result.json"
    result.write(path)
    assert stale_results([path], calc_copy.parent) == []
    (calc_copy / "tests/test.sh").write_text((calc_copy / "tests/test.sh").read_text() + "# v2\n")
    [line] = [x for x in stale_results([path], calc_copy.parent) if "verifier_digest" in x]
    assert line.startswith(str(path))


def test_make_task_digest_changes_with_any_file(make_task: Callable[..., Path]) -> None:
    task = load_task(make_task(), require_materialized=False)
    before = task_digest(task.path)
    (task.path / "instruction.md").write_text("changed\n")
    assert task_digest(task.path) != before


# --------------------------------------------------------------------------- the attacks, for real


@pytest.fixture(scope="module")
def attack_rows(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> dict[str, Row]:
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("attacks") / "ws")
    try:
        rows = run_attacks(ws)
    finally:
        for container in ws.containers():
            container.remove(force=True)
    print(render(rows, {}))
    return {row.name: row for row in rows}


@pytest.mark.parametrize("attack", [a.name for a in ATTACKS])
def test_attack_is_defeated_and_the_result_says_why(attack_rows: dict[str, Row], attack: str) -> None:
    row = attack_rows[attack]
    assert row.ok, f"{row.name}: {row.outcome}: {row.why}"


def test_no_container_is_left_after_the_attacks(attack_rows: dict[str, Row]) -> None:
    row = attack_rows["containers after the batch"]
    assert row.ok, row.outcome
    assert "snakemake" not in attack_rows or attack_rows["snakemake"].ok


def test_every_attack_script_is_documented() -> None:
    readme = (REPO / "examples/adversarial/README.md").read_text()
    for path in sorted((REPO / "examples/adversarial/attacks").glob("*.sh")):
        assert path.name in readme, path.name
        assert path.read_text().startswith("#!/usr/bin/env bash\n# "), path.name
