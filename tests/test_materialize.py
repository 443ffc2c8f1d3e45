"""Materialization from a published-style repository and an upstream-style repository, fully offline.

Both repositories are built here with invented content.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core.names import MISSING_EXPECTED_MARKER, STAMP
from kotlin_bench.dataset.materialize import (
    MaterializeError,
    PublishedSource,
    UpstreamSource,
    fetch_issue,
    format_instruction,
    materialize,
    read_stamp,
    task_status,
)
from kotlin_bench.dataset.spec import Dataset, parse_dataset
from kotlin_bench.tools.github_records import Repository

EXPECTED = {
    "f2p_tests": ["acme.WidgetTest.spins"],
    "p2p_tests": ["acme.WidgetTest.exists"],
    "s2p_tests": [],
    "n2p_tests": [],
    "test_patch_result": {
        "passed_tests": ["acme.WidgetTest.exists"],
        "failed_tests": ["acme.WidgetTest.spins"],
        "skipped_tests": [],
    },
    "run_result": {
        "passed_tests": ["acme.WidgetTest.exists", "acme.WidgetTest.spins"],
        "failed_tests": [],
        "skipped_tests": [],
    },
}
PUBLISHED_LAYOUT = {
    "fix.patch": "solution/fix.patch",
    "test.patch": "tests/test.patch",
    "instruction.md": "instruction.md",
    "expected_tests.json": "tests/expected_tests.json",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.invalid")
    git(path, "config", "user.name", "t")
    return path


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for rel, text in files.items():
        target = repo / rel
        if text is None:
            target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def spec(base_commit: str, tasks: list[dict[str, Any]]) -> Dataset:
    return parse_dataset(
        {
            "name": "tiny",
            "defaults": {
                "verifier_timeout_sec": 60.0,
                "agent_timeout_sec": 60.0,
                "build_timeout_sec": 60.0,
                "cpus": 1,
                "memory_mb": 512,
                "agent_allowed_hosts": [],
            },
            "repositories": {
                "acme/widgets": {
                    "license": "MIT",
                    "url": "https://example.invalid/acme/widgets",
                    "clone_url": "https://example.invalid/acme/widgets.git",
                    "repo_dir": "/home/widgets",
                    "test_paths": ["**/src/test/**"],
                }
            },
            "bases": [{"repo_key": "acme_widgets", "tag": "base", "recipe": "debootstrap:bookworm"}],
            "tasks": [
                {
                    "repository": "acme/widgets",
                    "base_commit": base_commit,
                    "base_image": "kotlin-bench/acme_widgets:base",
                    "test_command": "ktest",
                    "flaky_test_excludes": [],
                    "flaky_init_script_kind": None,
                    "expected_counts": None,
                    "fix_files": None,
                    "test_files": None,
                    **t,
                }
                for t in tasks
            ],
        }
    )


def task_dirs(root: Path, *ids: str) -> Path:
    for task_id in ids:
        (root / task_id).mkdir(parents=True)
        (root / task_id / "task.toml").write_text("# generated\n")
    return root


# --------------------------------------------------------------------------------------------------
# Published


def published_files(task_id: str) -> dict[str, str]:
    return {
        "fix.patch": f"--- invented fix for {task_id}\n",
        "test.patch": f"--- invented test for {task_id}\n",
        "instruction.md": f"# Implement the issue(s) in acme/widgets:\n\n## Issue #1 invented {task_id}\n",
        "expected_tests.json": json.dumps(EXPECTED, indent=2) + "\n",
    }


@pytest.fixture
def published(tmp_path: Path) -> dict[str, Any]:
    """A published-style repository: tasks/<id>/{instruction.md,solution/fix.patch,tests/...}."""
    repo = init_repo(tmp_path / "published")
    files: dict[str, str | None] = {"README.md": "invented\n"}
    digests = {}
    for task_id in ("acme_widgets-1", "acme_widgets-2"):
        contents = published_files(task_id)
        digests[task_id] = {name: sha(text.encode()) for name, text in contents.items()}
        files.update({f"tasks/{task_id}/{PUBLISHED_LAYOUT[n]}": text for n, text in contents.items()})
        files[f"tasks/{task_id}/tests/test.sh"] = "#!/bin/bash\n"
    pinned = commit(repo, files, "publish")
    dataset = spec(
        "a" * 40,
        [
            {"id": "acme_widgets-1", "pr": 1, "issues": [1], "published_sha256": digests["acme_widgets-1"]},
            {"id": "acme_widgets-2", "pr": 2, "issues": [1], "published_sha256": None},
        ],
    )
    tasks = task_dirs(tmp_path / "tasks", "acme_widgets-1", "acme_widgets-2")
    return {"repo": repo, "commit": pinned, "dataset": dataset, "tasks": tasks, "cache": tmp_path / "cache"}


def source(p: dict[str, Any], commit_sha: str | None = None) -> PublishedSource:
    return PublishedSource(location=str(p["repo"]), commit=commit_sha or p["commit"], cache_dir=p["cache"])


def test_published_happy_path(published: dict[str, Any]) -> None:
    results = materialize(published["dataset"], published["tasks"], source(published))
    assert [r.ok for r in results] == [True, True]
    verified, unverified = results
    assert verified.verified is True
    assert unverified.verified is None
    assert any("unverified" in n for n in unverified.notes)
    task = published["tasks"] / "acme_widgets-1"
    for name, text in published_files("acme_widgets-1").items():
        assert (task / PUBLISHED_LAYOUT[name]).read_text() == text
    stamp = read_stamp(task)
    assert stamp is not None
    assert stamp["source"] == "published"
    assert stamp["commit"] == published["commit"]
    assert stamp["verified"] is True
    assert stamp["files"]["solution/fix.patch"] == sha(
        published_files("acme_widgets-1")["fix.patch"].encode()
    )
    assert read_stamp(published["tasks"] / "acme_widgets-2")["verified"] is None  # type: ignore[index]
    assert task_status(published["dataset"].task("acme_widgets-1"), task).verified == "yes"
    assert task_status(
        published["dataset"].task("acme_widgets-2"), published["tasks"] / "acme_widgets-2"
    ).verified == ("unknown")


def test_published_reads_the_pinned_commit_not_the_work_tree(published: dict[str, Any]) -> None:
    repo = published["repo"]
    (repo / "tasks/acme_widgets-1/solution/fix.patch").write_text("uncommitted change\n")
    commit(repo, {"tasks/acme_widgets-1/tests/test.patch": "later change\n"}, "later")
    results = materialize(
        published["dataset"], published["tasks"], source(published), only=["acme_widgets-1"]
    )
    assert results[0].ok, results[0].problems


def test_published_digest_mismatch_names_task_and_file(published: dict[str, Any]) -> None:
    tampered = commit(
        published["repo"], {"tasks/acme_widgets-1/tests/test.patch": "--- tampered\n"}, "tamper"
    )
    results = materialize(
        published["dataset"], published["tasks"], source(published, tampered), only=["acme_widgets-1"]
    )
    (result,) = results
    assert not result.ok
    assert len(result.problems) == 1
    assert result.problems[0].startswith("acme_widgets-1: test.patch: sha256 ")
    task = published["tasks"] / "acme_widgets-1"
    assert not (task / "solution/fix.patch").exists()  # nothing of a failing task is written
    assert not (task / STAMP).exists()


def test_published_missing_file_names_task_and_file(published: dict[str, Any]) -> None:
    removed = commit(published["repo"], {"tasks/acme_widgets-2/instruction.md": None}, "remove")
    (result,) = materialize(
        published["dataset"], published["tasks"], source(published, removed), only=["acme_widgets-2"]
    )
    assert not result.ok
    assert result.problems == [
        f"acme_widgets-2: instruction.md: missing (tasks/acme_widgets-2/instruction.md in "
        f"{published['repo']} at {removed})"
    ]


def test_published_touches_only_the_selected_task(published: dict[str, Any]) -> None:
    other = published["tasks"] / "acme_widgets-2"
    before = sorted(p.name for p in other.rglob("*"))
    materialize(published["dataset"], published["tasks"], source(published), only=["acme_widgets-1"])
    assert sorted(p.name for p in other.rglob("*")) == before


def test_published_plain_directory_and_tampered_work_tree(published: dict[str, Any], tmp_path: Path) -> None:
    plain = init_repo(tmp_path / "outer") / "plain"  # a plain directory inside another repository
    subprocess.run(["cp", "-r", str(published["repo"]), str(plain)], check=True)
    subprocess.run(["rm", "-rf", str(plain / ".git")], check=True)
    (plain / "tasks/acme_widgets-1/instruction.md").write_text("tampered\n")
    results = materialize(
        published["dataset"],
        published["tasks"],
        PublishedSource(location=str(plain), commit=None, cache_dir=tmp_path / "cache"),
    )
    assert [r.ok for r in results] == [False, True]
    assert results[0].problems[0].startswith("acme_widgets-1: instruction.md: sha256")


def test_published_unknown_commit_is_an_error(published: dict[str, Any]) -> None:
    with pytest.raises(MaterializeError, match="has no commit"):
        materialize(published["dataset"], published["tasks"], source(published, "b" * 40))


def test_missing_task_directory_is_reported(published: dict[str, Any], tmp_path: Path) -> None:
    (result, _) = materialize(published["dataset"], tmp_path / "nowhere", source(published))
    assert not result.ok
    assert "no task directory" in result.problems[0]


def test_url_source_is_cloned_into_the_cache(published: dict[str, Any]) -> None:
    url = published["repo"].resolve().as_uri()
    src = PublishedSource(location=url, commit=published["commit"], cache_dir=published["cache"])
    results = materialize(published["dataset"], published["tasks"], src)
    assert all(r.ok for r in results)
    assert list((published["cache"] / "published").glob("*.git"))


# --------------------------------------------------------------------------------------------------
# Upstream


ISSUE_4 = {"number": 4, "title": "Widgets do not spin", "body": "They should spin.\r\n\r\nSteps: none.\r\n"}
ISSUE_5 = {"number": 5, "title": "Second", "body": None}


@pytest.fixture
def upstream(tmp_path: Path) -> dict[str, Any]:
    """An upstream-style repository: a base commit, and a pull request on refs/pull/5/head."""
    repo = init_repo(tmp_path / "widgets")
    commit(repo, {"README.md": "widgets\n"}, "root")
    base = commit(
        repo,
        {
            "core/src/main/kotlin/Widget.kt": "class Widget\n",
            "core/src/test/kotlin/WidgetTest.kt": "class WidgetTest\n",
        },
        "base",
    )
    git(repo, "checkout", "-q", "-b", "pr")
    commit(repo, {"core/src/main/kotlin/Widget.kt": "class Widget { fun spin() = 1 }\n"}, "spin")
    head = commit(
        repo,
        {
            "core/src/test/kotlin/WidgetTest.kt": "class WidgetTest { fun spins() = Widget().spin() }\n",
            "docs/CHANGES.md": "spin\n",
        },
        "test",
    )
    git(repo, "update-ref", "refs/pull/5/head", head)
    git(repo, "checkout", "-q", "main")
    commit(repo, {"README.md": "widgets moved on\n"}, "unrelated later work")
    cache = tmp_path / "cache"
    issue_dir = cache / "issues" / "acme" / "widgets"
    issue_dir.mkdir(parents=True)
    (issue_dir / "4.json").write_text(json.dumps(ISSUE_4))
    dataset = spec(base, [{"id": "acme_widgets-5", "pr": 5, "issues": [4], "published_sha256": None}])
    return {
        "repo": repo,
        "base": base,
        "head": head,
        "cache": cache,
        "dataset": dataset,
        "tasks": task_dirs(tmp_path / "tasks", "acme_widgets-5"),
    }


def upstream_source(u: dict[str, Any], **kw: Any) -> UpstreamSource:
    return UpstreamSource(mirrors={"acme/widgets": str(u["repo"])}, cache_dir=u["cache"], offline=True, **kw)


def test_spec_fixture_task_images_are_unique_per_pr() -> None:
    # Two tasks of one pull request would share an image; the specification forbids it.
    with pytest.raises(ValueError, match="task image"):
        spec("a" * 40, [{"id": "x-1", "pr": 1, "issues": [], "published_sha256": None}] * 2)


def test_upstream_splits_the_diff_by_test_paths(upstream: dict[str, Any]) -> None:
    u = upstream
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert result.ok, result.problems
    task = u["tasks"] / "acme_widgets-5"
    fix = (task / "solution/fix.patch").read_text()
    test = (task / "tests/test.patch").read_text()
    assert "diff --git a/core/src/main/kotlin/Widget.kt" in fix
    assert "diff --git a/docs/CHANGES.md" in fix
    assert "WidgetTest" not in fix
    assert "diff --git a/core/src/test/kotlin/WidgetTest.kt" in test
    assert "Widget.kt b/" not in test.replace("WidgetTest.kt", "")
    assert "README.md" not in fix + test  # later work on main is not part of base...head
    # Both patches apply to the base commit.
    work = u["tasks"].parent / "work"
    subprocess.run(["git", "clone", "-q", str(u["repo"]), str(work)], check=True)
    git(work, "checkout", "-q", u["base"])
    git(work, "apply", "--check", str(task / "solution/fix.patch"))
    git(work, "apply", "--check", str(task / "tests/test.patch"))
    stamp = read_stamp(task)
    assert stamp is not None
    assert stamp["source"] == "upstream"
    assert stamp["commit"] == u["head"]
    assert stamp["expected_tests"] is False


def test_upstream_instruction_format(upstream: dict[str, Any]) -> None:
    u = upstream
    materialize(u["dataset"], u["tasks"], upstream_source(u))
    text = (u["tasks"] / "acme_widgets-5/instruction.md").read_text()
    assert text == (
        "# Implement the issue(s) in acme/widgets:\n\n"
        "## Issue #4 https://example.invalid/acme/widgets/issues/4: Widgets do not spin\n\n"
        "They should spin.\n\nSteps: none.\n\n"
    )


def test_instruction_format_with_several_issues(upstream: dict[str, Any]) -> None:
    task = upstream["dataset"].task("acme_widgets-5")
    text = format_instruction(task, [ISSUE_4, ISSUE_5])
    assert text.startswith("# Implement the issue(s) in acme/widgets:\n\n## Issue #4 ")
    assert (
        "Steps: none.\n\n\n\n---\n\n## Issue #5 https://example.invalid/acme/widgets/issues/5: Second\n\n"
        in text
    )
    assert text.endswith("Second\n\n\n\n")


def test_upstream_missing_expected_tests_writes_the_marker(upstream: dict[str, Any]) -> None:
    u = upstream
    task = u["tasks"] / "acme_widgets-5"
    (task / "tests").mkdir()
    (task / "tests/expected_tests.json").write_text("{}")  # stale, from an earlier materialization
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert result.ok and not result.expected_tests
    assert (task / MISSING_EXPECTED_MARKER).is_file()
    # the stale file is replaced by the placeholder (every file the DAG depends on exists), which lists no test
    placeholder = json.loads((task / "tests/expected_tests.json").read_text())
    assert set(placeholder) == {"missing"} and MISSING_EXPECTED_MARKER in placeholder["missing"]
    status = task_status(u["dataset"].task("acme_widgets-5"), task)
    assert status.materialized and not status.expected_tests


def test_upstream_copies_expected_tests_when_given(upstream: dict[str, Any], tmp_path: Path) -> None:
    u = upstream
    expected = tmp_path / "expected"
    expected.mkdir()
    (expected / "acme_widgets-5.json").write_text(json.dumps(EXPECTED))
    task = u["tasks"] / "acme_widgets-5"
    (task / "tests").mkdir()
    (task / MISSING_EXPECTED_MARKER).write_text("old marker\n")
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u, expected_tests_dir=expected))
    assert result.ok and result.expected_tests
    assert json.loads((task / "tests/expected_tests.json").read_text()) == EXPECTED
    assert not (task / MISSING_EXPECTED_MARKER).exists()


def test_upstream_offline_without_cache_names_task_and_issue(upstream: dict[str, Any]) -> None:
    u = upstream
    (u["cache"] / "issues/acme/widgets/4.json").unlink()
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert not result.ok
    assert result.problems[0].startswith("acme_widgets-5: issue #4: not in the cache")
    assert not (u["tasks"] / "acme_widgets-5/solution/fix.patch").exists()


def test_upstream_fetches_and_caches_issues(upstream: dict[str, Any], github_api: Any) -> None:
    """An issue not in the cache is read from the API (the stand-in, through the client), with the token,
    and cached; a cache hit asks nothing; one the API does not have is an error naming the issue."""
    u = upstream
    (u["cache"] / "issues/acme/widgets/4.json").unlink()
    api = github_api([Repository("acme", "widgets", issues={4: ISSUE_4})])
    online = UpstreamSource(
        mirrors={"acme/widgets": str(u["repo"])}, cache_dir=u["cache"], token="t0ken", api_url=api.url
    )
    task = u["dataset"].task("acme_widgets-5")
    assert fetch_issue(task, 4, online)["title"] == ISSUE_4["title"]
    assert api.api.seen == [("/repos/acme/widgets/issues/4", 200)]
    assert api.api.tokens == ["token t0ken"]
    assert json.loads((u["cache"] / "issues/acme/widgets/4.json").read_text()) == ISSUE_4
    assert fetch_issue(task, 4, upstream_source(u))["number"] == 4  # a cache hit: no call
    assert len(api.api.seen) == 1

    with pytest.raises(
        MaterializeError, match=r"acme_widgets-5: issue #9: GET /repos/acme/widgets/issues/9: 404"
    ):
        fetch_issue(task, 9, online)


def test_upstream_restricts_to_the_specified_files(upstream: dict[str, Any], tmp_path: Path) -> None:
    u = upstream
    u["dataset"] = spec(
        u["base"],
        [
            {
                "id": "acme_widgets-5",
                "pr": 5,
                "issues": [],
                "published_sha256": None,
                "fix_files": ["core/src/main/kotlin/Widget.kt"],
                "test_files": ["core/src/test/kotlin/WidgetTest.kt"],
            }
        ],
    )
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert not result.ok
    assert "instruction.md: the task has no issues" in result.problems[0]
    instructions = tmp_path / "instructions"
    instructions.mkdir()
    (instructions / "acme_widgets-5.md").write_text("# Written by hand\n")
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u, instructions_dir=instructions))
    assert result.ok, result.problems
    task = u["tasks"] / "acme_widgets-5"
    assert "docs/CHANGES.md" not in (task / "solution/fix.patch").read_text()
    assert any("docs/CHANGES.md" in n for n in result.notes)
    assert (task / "instruction.md").read_text() == "# Written by hand\n"


def test_upstream_missing_pull_ref_is_an_error(upstream: dict[str, Any]) -> None:
    u = upstream
    git(u["repo"], "update-ref", "-d", "refs/pull/5/head")
    (result,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert not result.ok
    assert "refs/pull/5/head is not in the upstream repository" in result.problems[0]


def test_upstream_compares_with_published_digests(upstream: dict[str, Any]) -> None:
    u = upstream
    (first,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    files = first.files
    digests = {
        "fix.patch": files["solution/fix.patch"],
        "test.patch": files["tests/test.patch"],
        "instruction.md": files["instruction.md"],
        "expected_tests.json": "0" * 64,
    }
    u["dataset"] = spec(
        u["base"], [{"id": "acme_widgets-5", "pr": 5, "issues": [4], "published_sha256": digests}]
    )
    (second,) = materialize(u["dataset"], u["tasks"], upstream_source(u))
    assert second.ok and second.verified is False  # no expected tests: cannot match all four
    assert not any("differs from the published" in n for n in second.notes)


# --------------------------------------------------------------------------------------------------
# A warm-up patch (cascade-editor-16's kind)

WARMUP = {
    "warmup": {"steps": ["ktest", {"apply": "warmup.patch"}, "ktest"], "on_failure": "abort"},
    "warmup_patch": {
        "published_file": "environment/warm-ui.patch",
        "test_patch_paths": ["core/src/test/kotlin/WidgetTest.kt"],
    },
}


def test_published_warmup_patch_is_materialized(published: dict[str, Any], tmp_path: Path) -> None:
    dataset = spec(
        "a" * 40, [{"id": "acme_widgets-2", "pr": 2, "issues": [1], "published_sha256": None, **WARMUP}]
    )
    tasks = task_dirs(tmp_path / "tasks-w", "acme_widgets-2")
    (result,) = materialize(dataset, tasks, source(published))
    assert (
        not result.ok
        and "warmup.patch: missing (tasks/acme_widgets-2/environment/warm-ui.patch" in result.problems[0]
    )
    pinned = commit(
        published["repo"], {"tasks/acme_widgets-2/environment/warm-ui.patch": "--- warm\n"}, "warm"
    )
    (result,) = materialize(dataset, tasks, source(published, pinned))
    assert result.ok, result.problems
    assert (tasks / "acme_widgets-2/environment/warmup.patch").read_text() == "--- warm\n"
    assert "environment/warmup.patch" in read_stamp(tasks / "acme_widgets-2")["files"]  # type: ignore[index]


def test_upstream_warmup_patch_is_the_listed_part_of_the_test_patch(upstream: dict[str, Any]) -> None:
    u = upstream
    dataset = spec(
        u["base"], [{"id": "acme_widgets-5", "pr": 5, "issues": [4], "published_sha256": None, **WARMUP}]
    )
    (result,) = materialize(dataset, u["tasks"], upstream_source(u))
    assert result.ok, result.problems
    task = u["tasks"] / "acme_widgets-5"
    warm = (task / "environment/warmup.patch").read_text()
    assert warm.startswith(
        "diff --git a/core/src/test/kotlin/WidgetTest.kt b/core/src/test/kotlin/WidgetTest.kt"
    )
    assert warm in (task / "tests/test.patch").read_text()
    assert "docs/CHANGES.md" not in warm
