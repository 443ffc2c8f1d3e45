"""Run src/kotlin_bench/scoring/verifier/test.sh and kotlin_logs_collector.sh on the host against a tiny git repository."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
VERIFIER = REPO / "src" / "kotlin_bench" / "scoring" / "verifier"
VERIFIER_FILES = ("test.sh", "kotlin_logs_collector.sh", "junit_compare.py")

ADDS, FIXED = "demo.CalcTest.adds()", "demo.CalcTest.fixed()"

# The project's "test suite": writes one Gradle-style report. demo.CalcTest.fixed() exists once the
# test patch added tests/new_test.txt, and passes once the "fix" (src/fixed.txt) is present.
RUN_TESTS = """\
set -eu
out=mod/build/test-results/test
mkdir -p "$out"
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<testsuite name="demo.CalcTest" tests="2">'
  echo '  <testcase name="adds()" classname="demo.CalcTest" time="0.1"/>'
  if [ -f tests/new_test.txt ]; then
    if [ -f src/fixed.txt ]; then
      echo '  <testcase name="fixed()" classname="demo.CalcTest"/>'
    else
      echo '  <testcase name="fixed()" classname="demo.CalcTest"><failure message="no"/></testcase>'
    fi
  fi
  echo '</testsuite>'
} >"$out/TEST-demo.CalcTest.xml"
"""

EXPECTED = {
    "f2p_tests": [FIXED],
    "p2p_tests": [ADDS],
    "s2p_tests": [],
    "n2p_tests": [],
    "test_patch_result": {"passed_tests": [ADDS], "failed_tests": [FIXED], "skipped_tests": []},
    "run_result": {"passed_tests": [ADDS], "failed_tests": [], "skipped_tests": []},
}


def git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return proc.stdout


@dataclass
class Task:
    repo: Path
    tests: Path
    logs: Path

    def write_env(self, test_command: str = "bash run_tests.sh", extra: str = "") -> None:
        text = f"REPO_DIR={shlex.quote(str(self.repo))}\nTEST_COMMAND={shlex.quote(test_command)}\n{extra}"
        (self.tests / "task.env").write_text(text)

    def apply_fix(self) -> None:
        (self.repo / "src" / "fixed.txt").write_text("fixed\n")

    def verify(self, **extra_env: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "VERIFIER_LOGS_DIR": str(self.logs), "VERIFIER_TESTS_DIR": str(self.tests)}
        env.update(extra_env)
        proc = subprocess.run(
            ["bash", str(self.tests / "test.sh")],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc

    def reward(self) -> str:
        return (self.logs / "reward.txt").read_text().strip()

    def report(self) -> dict:
        return json.loads((self.logs / "report.json").read_text())


@pytest.fixture
def task(tmp_path: Path) -> Task:
    repo, tests, logs = tmp_path / "repo", tmp_path / "tests", tmp_path / "logs" / "verifier"
    (repo / "src").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "run_tests.sh").write_text(RUN_TESTS)
    (repo / "src" / "calc.txt").write_text("calc\n")
    (repo / "tests" / "old_test.txt").write_text("old\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "tests" / "new_test.txt").write_text("new test\n")
    (repo / "tests" / "old_test.txt").write_text("old, extended\n")
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--binary")
    git(repo, "reset", "-q", "--hard", "HEAD")
    tests.mkdir()
    for name in VERIFIER_FILES:
        shutil.copy2(VERIFIER / name, tests / name)
    (tests / "test.patch").write_text(patch)
    (tests / "expected_tests.json").write_text(json.dumps(EXPECTED))
    result = Task(repo, tests, logs)
    result.write_env()
    return result


def test_resolving_run(task: Task) -> None:
    task.apply_fix()
    proc = task.verify()
    assert task.reward() == "1", proc.stdout
    report = task.report()
    assert report["resolved"] is True and report["reasons"] == []
    assert report["categories"]["f2p"] == {"expected": 1, "landed": 1, "missing": []}
    assert (task.logs / "junit.xml").is_file()
    assert "test command exit code: 0" in (task.logs / "test_output.log").read_text()
    assert "1 report file(s) collected" in proc.stdout
    assert (task.repo / "tests" / "new_test.txt").is_file()


def test_unfixed_run_is_unresolved(task: Task) -> None:
    task.verify()
    assert task.reward() == "0"
    assert task.report()["reasons"] == ["no_fixed_test", "expected_missing: f2p 1 of 1"]


def test_nonzero_exit_code_alone_changes_nothing(task: Task) -> None:
    task.write_env("bash run_tests.sh; exit 3")
    task.apply_fix()
    task.verify()
    assert task.reward() == "1"
    assert "test command exit code: 3" in (task.logs / "test_output.log").read_text()


def _agent_edits_the_test_files(task: Task) -> None:
    """The agent writes the fix and also its own versions of the files the hidden test patch touches:
    it creates the file the patch adds, edits the one it changes, and deletes nothing else."""
    task.apply_fix()
    (task.repo / "tests" / "new_test.txt").write_text("agent's own\n")
    (task.repo / "tests" / "old_test.txt").write_text("old, as the agent extended it\n")
    (task.repo / "tests" / "agent_test.txt").write_text("another test of the agent's\n")


def test_paths_the_test_patch_touches_are_restored_before_it_is_applied(task: Task) -> None:
    """The published behaviour: the agent's versions of those files are discarded, the rest stays."""
    _agent_edits_the_test_files(task)
    proc = task.verify()
    assert task.reward() == "1", proc.stdout
    assert "restored 2 path(s) the test patch touches" in proc.stdout
    assert (task.repo / "tests" / "new_test.txt").read_text() == "new test\n"
    assert (task.repo / "tests" / "old_test.txt").read_text() == "old, extended\n"
    assert (task.repo / "tests" / "agent_test.txt").is_file()  # not touched by the patch: kept


def test_strict_mode_applies_over_the_agents_edits(task: Task) -> None:
    _agent_edits_the_test_files(task)
    proc = task.verify(KOTLIN_BENCH_TEST_PATCH="strict")
    assert task.reward() == "0"
    assert task.report()["reasons"][0].startswith("test_patch_failed")
    assert "strict: applied over the agent's work" in proc.stdout


def test_a_path_the_patch_creates_that_cannot_be_removed_fails_closed(task: Task) -> None:
    task.apply_fix()
    (task.repo / "tests" / "new_test.txt").mkdir()
    (task.repo / "tests" / "new_test.txt" / "x").write_text("x\n")
    task.verify()
    assert task.reward() == "0"
    assert "cannot remove tests/new_test.txt" in task.report()["reasons"][0]


def test_test_env_is_exported_and_scorer_args_reach_the_scorer(task: Task) -> None:
    (task.repo / "run_tests.sh").write_text(
        RUN_TESTS.replace('name="fixed()"', 'name="fixed()[desktop]"').replace(
            "if [ -f src/fixed.txt ]; then", 'if [ -f src/fixed.txt ] && [ "$KB_MARK" = "on it" ]; then'
        )
    )
    task.write_env(extra="export KB_MARK='on it'\nSCORER_ARGS=(--strip-name-suffix '[desktop]')\n")
    task.apply_fix()
    proc = task.verify()
    assert task.reward() == "1", proc.stdout
    task.write_env(extra="export KB_MARK='on it'\n")  # without the option: [desktop] is a parameter
    task.verify()
    assert task.reward() == "0"


@pytest.mark.parametrize("how", ["garbage_patch", "missing_patch"])
def test_test_patch_not_applying(task: Task, how: str) -> None:
    task.apply_fix()
    if how == "garbage_patch":
        (task.tests / "test.patch").write_text("this is not a patch\n")
    else:
        (task.tests / "test.patch").unlink()
    proc = task.verify()
    assert task.reward() == "0"
    report = task.report()
    assert report["resolved"] is False
    assert report["reasons"][0].startswith("test_patch_failed")
    assert report["categories"]["f2p"]["missing"] == [FIXED]
    assert not (task.logs / "test_output.log").exists(), "tests must not run"
    assert "unresolved: test_patch_failed" in proc.stdout


def _passing_report(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        '<?xml version="1.0"?><testsuite><testcase classname="demo.CalcTest" name="adds()"/>'
        '<testcase classname="demo.CalcTest" name="fixed()"/></testsuite>'
    )


def test_stale_reports_are_never_collected(task: Task) -> None:
    stale = [
        task.repo / "mod" / "build" / "test-results" / "test" / "TEST-demo.CalcTest.xml",
        task.repo / "build" / "test-results" / "jvmTest" / "TEST-root.xml",
        task.repo / "a" / "b" / "build" / "test-results" / "test" / "TEST-deep.xml",
    ]
    for path in stale:
        _passing_report(path)
    future = time.time() + 3600
    os.utime(stale[2], (future, future))  # even a report dated after the run is stale
    task.write_env("true")
    task.verify()
    assert task.reward() == "0"
    assert task.report()["reasons"][0] == "no_test_results"
    assert not any(path.exists() for path in stale)


def test_previous_reward_files_are_cleared(task: Task) -> None:
    task.logs.mkdir(parents=True)
    (task.logs / "reward.txt").write_text("1\n")
    (task.logs / "reward.json").write_text('{"reward": 1}')
    (task.logs / "sub").mkdir()
    (task.logs / "sub" / "old.log").write_text("old")
    task.verify()
    assert task.reward() == "0"
    assert not (task.logs / "reward.json").exists()
    assert not (task.logs / "sub").exists()


def test_missing_task_env(task: Task) -> None:
    (task.tests / "task.env").unlink()
    task.verify()
    assert task.reward() == "0"
    assert task.report()["reasons"][0].startswith("task_env_missing")


def test_missing_repo_dir(task: Task) -> None:
    shutil.rmtree(task.repo)
    task.verify()
    assert task.reward() == "0"
    assert task.report()["reasons"][0].startswith("repo_dir_missing")


# --------------------------------------------------------------------------- the collector


def collect(repo: Path, out: Path, marker: Path | None = None) -> subprocess.CompletedProcess[str]:
    args = ["bash", str(VERIFIER / "kotlin_logs_collector.sh"), str(repo), str(out)]
    args += [str(marker)] if marker else []
    proc = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


def _report_file(
    path: Path, classname: str, declaration: str = '<?xml version="1.0" encoding="UTF-8"?>\n'
) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'{declaration}<testsuite name="{classname}"><testcase classname="{classname}" name="t"/></testsuite>\n'
    )


def _classnames(xml: Path) -> list[str]:
    root = ET.parse(xml).getroot()
    assert root.tag == "testsuites"
    return sorted(case.get("classname", "") for case in root.iter("testcase"))


def test_collector_merges_any_depth(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    _report_file(repo / "core" / "build" / "test-results" / "test" / "TEST-x.xml", "x")
    _report_file(
        repo / "build" / "test-results" / "jvmTest" / "TEST-y.xml", "y", declaration="<?xml version='1.0'?>\n"
    )
    _report_file(
        repo / "a" / "b" / "c" / "build" / "test-results" / "testDebugUnitTest" / "TEST-z.xml", "z", ""
    )
    _report_file(repo / "core" / "build" / "test-results" / "test" / "other.xml", "not-a-report")
    _report_file(repo / "core" / "build" / "reports" / "TEST-html.xml", "not-a-report")
    out = tmp_path / "logs" / "junit.xml"
    proc = collect(repo, out)
    assert _classnames(out) == ["x", "y", "z"]
    assert "3 report file(s) collected" in proc.stdout


COLLECTED_AS_PUBLISHED = [
    # (report bytes, what the merge holds of it): each line copied as bash's `while IFS= read -r line` does
    (b'<?xml version="1.0"?>\n<a/>\n', b"<a/>\n"),
    (b"<?xml v?>\n<?xml w?>\n<a/>\n<?xml x?>\n", b"<a/>\n<?xml x?>\n"),  # leading declarations only
    (b"<?xml v?><a/>\n<b/>\n", b"<b/>\n"),  # the whole line goes
    (b"<a/>\n<b/>", b"<a/>\n"),  # a last line without a newline is lost
    (b"<a/>", b""),
    (b"<a>x\0y</a>\n\0<?xml v?>\n", b"<a>xy</a>\n<?xml v?>\n"),  # NUL bytes dropped
    (b"\0<?xml v?>\n<a/>\n", b"<a/>\n"),
    (b"\xef\xbb\xbf<?xml v?>\n<a/>\n", b"\xef\xbb\xbf<?xml v?>\n<a/>\n"),  # a BOM line is no declaration
    (b"\n<?xml v?>\n<a/>\n", b"\n<?xml v?>\n<a/>\n"),
    (b" <?xml v?>\r\n<a/>\r\n", b" <?xml v?>\r\n<a/>\r\n"),
    (b"<?xml v?>\r\n<a>\xff</a>\r\n", b"<a>\xff</a>\r\n"),
    (b"<?x\n<a/>\n", b"<?x\n<a/>\n"),
]


@pytest.mark.parametrize(("report", "copied"), COLLECTED_AS_PUBLISHED)
def test_collector_copies_lines_as_the_published_collector(
    tmp_path: Path, report: bytes, copied: bytes
) -> None:
    repo = tmp_path / "repo"
    path = repo / "m/build/test-results/test/TEST-a.xml"
    path.parent.mkdir(parents=True)
    path.write_bytes(report)
    out = tmp_path / "junit.xml"
    collect(repo, out)
    assert (
        out.read_bytes()
        == b'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n' + copied + b"</testsuites>\n"
    )


def test_collector_streams_long_lines(tmp_path: Path) -> None:
    """Lines longer than the collector's read chunk (1 MiB), across its boundaries, NULs dropped."""
    repo = tmp_path / "repo"
    path = repo / "m/build/test-results/test/TEST-a.xml"
    path.parent.mkdir(parents=True)
    long = b"x" * ((1 << 20) + 3)
    path.write_bytes(b"\0" * ((1 << 20) - 2) + b"<?xml v?>\n" + long + b"\n" + long)
    out = tmp_path / "junit.xml"
    collect(repo, out)
    assert out.read_bytes().split(b"\n")[2:-2] == [long]


def test_collector_skips_reports_older_than_marker(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    old = repo / "m" / "build" / "test-results" / "test" / "TEST-old.xml"
    _report_file(old, "old")
    past = time.time() - 60
    os.utime(old, (past, past))
    marker = tmp_path / "marker"
    marker.touch()
    _report_file(repo / "m" / "build" / "test-results" / "test" / "TEST-new.xml", "new")
    out = tmp_path / "junit.xml"
    proc = collect(repo, out, marker)
    assert _classnames(out) == ["new"]
    assert "1 older than the marker skipped" in proc.stdout


@pytest.mark.parametrize("setup", ["no_reports", "missing_repo", "missing_marker"])
def test_collector_writes_empty_testsuites(tmp_path: Path, setup: str) -> None:
    repo = tmp_path / "repo"
    marker = None
    if setup != "missing_repo":
        repo.mkdir()
    if setup == "missing_marker":
        _report_file(repo / "build" / "test-results" / "test" / "TEST-x.xml", "x")
        marker = tmp_path / "no-such-marker"
    out = tmp_path / "junit.xml"
    collect(repo, out, marker)
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites" and len(root) == 0
