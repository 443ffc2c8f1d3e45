"""`kotlin-bench add-task`: the pull request, its base commit, issues and split, and the specification entry,
on an upstream repository built here with the examples' own builder (git only). The whole command, with its
validation in real containers, runs in tests/test_validation_e2e.py."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kotlin_bench.dataset.materialize import UpstreamSource
from kotlin_bench.dataset.spec import (
    SpecError,
    ValidationMark,
    entry_text,
    load_dataset,
    put_task,
    task_entry,
)
from kotlin_bench.tools.add_task import (
    AddTaskError,
    Releases,
    acceptance_problems,
    closing_issues,
    new_entry,
    parse_ref,
    read_pull_request,
    task_dates,
    task_id_for,
)
from kotlin_bench.validation.records import TaskValidation
from tests.conftest import REPO

BUILDER = REPO / "examples/bases/toolchain/make-upstream-repo.sh"
SPEC = REPO / "examples/dataset.json"
FIX = """\
diff --git a/src/main/kotlin/w/W.kt b/src/main/kotlin/w/W.kt
--- a/src/main/kotlin/w/W.kt
+++ b/src/main/kotlin/w/W.kt
@@ -1 +1 @@
-fun w() = 1
+fun w() = 2
"""
TEST = """\
diff --git a/src/test/kotlin/w/WTest.kt b/src/test/kotlin/w/WTest.kt
--- a/src/test/kotlin/w/WTest.kt
+++ b/src/test/kotlin/w/WTest.kt
@@ -1 +1 @@
-// w() is 1
+// w() is 2
"""
README = """\
diff --git a/README.md b/README.md
--- a/README.md
+++ b/README.md
@@ -1 +1 @@
-w
+w, better
"""


def pull(number: int, body: str, **extra: object) -> dict[str, object]:
    return {"number": number, "title": f"pull {number}", "body": body, **extra}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """examples/calc-like: the base, pull 2 (fix and test), pull 3 (README only), pull 4 (tests only);
    `main` at the last pull request's head, as make-upstream-repo leaves it."""
    root = tmp_path_factory.mktemp("upstream")
    tree = root / "src/tree"
    for rel, text in {
        "README.md": "w\n",
        "src/main/kotlin/w/W.kt": "fun w() = 1\n",
        "src/test/kotlin/w/WTest.kt": "// w() is 1\n",
    }.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    (root / "src/pulls").mkdir()
    (root / "src/pulls/2.patch").write_text(FIX + TEST)
    (root / "src/pulls/3.patch").write_text(README)
    (root / "src/pulls/4.patch").write_text(TEST)
    out = subprocess.run(
        ["bash", str(BUILDER), str(root / "src"), str(root / "mirror")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    base = next(line.split()[1] for line in out.stdout.splitlines() if line.startswith("base "))
    issues = root / "issues/examples/calc/pulls"
    issues.mkdir(parents=True)
    (issues / "2.json").write_text(
        json.dumps(pull(2, "Makes w() two.\n\nFixes #1 and closes examples/calc#7"))
    )
    (issues / "3.json").write_text(json.dumps(pull(3, "Fixes #1")))
    (issues / "4.json").write_text(json.dumps(pull(4, "Resolves: #1")))
    (issues / "5.json").write_text(json.dumps(pull(5, "Fixes #1")))
    source = UpstreamSource(
        mirrors={"examples/calc": str(root / "mirror")}, issues_cache=root / "issues", offline=True
    )
    return {"root": root, "base": base, "source": source}


@pytest.fixture(scope="module")
def calc():  # the examples' calc repository: test_paths **/src/test/**
    return load_dataset(SPEC).repositories["examples/calc"]


def test_refs_and_task_ids() -> None:
    assert parse_ref("examples/calc#6") == ("examples", "calc", 6)
    assert task_id_for("ankidroid", "Anki-Android", 18903) == "ankidroid_Anki-Android-18903"
    for bad in ("examples/calc", "calc#6", "examples/calc#0", "examples/calc#six"):
        with pytest.raises(ValueError, match="expected OWNER/REPO#PR"):
            parse_ref(bad)


def test_closing_keywords_as_github_reads_them(calc) -> None:
    body = "Fixes #5, closes #7; resolved: #8. See #9. Fixes other/repo#10, fixes EXAMPLES/calc#11 and fix #5"
    assert closing_issues(body, calc) == [5, 7, 8, 11]
    assert closing_issues("prefixes #3 and suffixed#4", calc) == []


def test_the_pull_request_its_base_issues_and_split(upstream, calc) -> None:
    found = read_pull_request("examples_calc-2", calc, 2, upstream["source"])
    assert found.base == upstream["base"]  # the head's parent: the pull request is on main's history
    assert found.issues == (1, 7)
    assert found.fix_files == ("src/main/kotlin/w/W.kt",)
    assert found.test_files == ("src/test/kotlin/w/WTest.kt",)
    assert read_pull_request("examples_calc-2", calc, 2, upstream["source"], issues=[3]).issues == (3,)


def test_the_recorded_base_sha_wins(upstream, calc, tmp_path: Path) -> None:
    mirror = Path(upstream["source"].mirrors["examples/calc"])
    head3 = subprocess.run(
        ["git", "-C", str(mirror), "rev-parse", "refs/pull/3/head"], capture_output=True, text=True
    ).stdout.strip()
    issues = tmp_path / "issues/examples/calc/pulls"
    issues.mkdir(parents=True)
    (issues / "2.json").write_text(json.dumps(pull(2, "Fixes #1", base={"sha": head3, "ref": "main"})))
    source = UpstreamSource(
        mirrors=upstream["source"].mirrors, issues_cache=tmp_path / "issues", offline=True
    )
    found = read_pull_request("examples_calc-2", calc, 2, source)
    assert found.base == head3
    # The split is of base...head, i.e. from their merge base: pull 3's README change is not in it.
    assert found.fix_files == ("src/main/kotlin/w/W.kt",)


@pytest.mark.parametrize(
    ("number", "message"),
    [
        (
            9,
            "examples_calc-9: source: pull request #9 does not exist: refs/pull/9/head is not in the upstream repository",
        ),
        (
            3,
            "examples_calc-3: source: the diff .* has no test file: none of \\['README.md'\\] matches the test_paths",
        ),
        (4, "examples_calc-4: source: the diff .* changes test files only"),
    ],
    ids=["no-such-pull-request", "no-test-file", "no-fix"],
)
def test_bad_pull_requests_name_the_task_and_step(upstream, calc, number: int, message: str) -> None:
    with pytest.raises(AddTaskError, match=message):
        read_pull_request(f"examples_calc-{number}", calc, number, upstream["source"])


def test_a_pull_request_without_an_issue_or_record(upstream, calc, tmp_path: Path) -> None:
    issues = tmp_path / "issues/examples/calc/pulls"
    issues.mkdir(parents=True)
    (issues / "2.json").write_text(json.dumps(pull(2, "Makes w() two. See #1.")))
    source = UpstreamSource(
        mirrors=upstream["source"].mirrors, issues_cache=tmp_path / "issues", offline=True
    )
    with pytest.raises(
        AddTaskError, match="examples_calc-2: source: pull request #2 names no issue it resolves"
    ):
        read_pull_request("examples_calc-2", calc, 2, source)
    empty = UpstreamSource(mirrors=upstream["source"].mirrors, issues_cache=tmp_path / "none", offline=True)
    with pytest.raises(
        AddTaskError, match=r"examples_calc-2: source: pull request #2: not in the cache .*, and offline"
    ):
        read_pull_request("examples_calc-2", calc, 2, empty)


def test_the_task_is_dated_from_its_records(upstream, calc, tmp_path: Path) -> None:
    """The pull request's merged_at and its first issue's created_at, in UTC, each with its record as the
    source; a record without the date leaves the key out; an issue without a record is a `source` error."""
    issues = tmp_path / "issues/examples/calc"
    (issues / "pulls").mkdir(parents=True)
    merged = pull(2, "Fixes #1", merged_at="2024-03-01T12:30:00+02:00")
    (issues / "pulls/2.json").write_text(json.dumps(merged))
    source = UpstreamSource(
        mirrors=upstream["source"].mirrors, issues_cache=tmp_path / "issues", offline=True
    )
    found = read_pull_request("examples_calc-2", calc, 2, source)
    with pytest.raises(AddTaskError, match=r"examples_calc-2: source: issue #1: not in the cache"):
        task_dates("examples_calc-2", calc, found, source)
    (issues / "1.json").write_text(
        json.dumps({"number": 1, "title": "w", "created_at": "2024-02-28T08:00:00Z"})
    )
    api = "GitHub REST API GET /repos/examples/calc"
    assert task_dates("examples_calc-2", calc, found, source) == {
        "merged_at": {"value": "2024-03-01T10:30:00Z", "source": f"{api}/pulls/2: merged_at"},
        "issue_opened_at": {"value": "2024-02-28T08:00:00Z", "source": f"{api}/issues/1: created_at"},
    }
    (issues / "pulls/2.json").write_text(json.dumps(pull(2, "Fixes #1", merged_at=None)))
    unmerged = read_pull_request("examples_calc-2", calc, 2, source)
    assert list(task_dates("examples_calc-2", calc, unmerged, source)) == ["issue_opened_at"]


def test_the_writer_of_entries_puts_a_dated_fact_on_one_line_as_the_specification_does() -> None:
    """put_task's text of an entry is the entry, with each date on one line as in the committed spec (so an
    entry add-task writes and one written by hand look alike; examples_calc-6 is compared whole in
    tests/test_validation_e2e.py)."""
    text = SPEC.read_text()
    for entry in json.loads(text)["tasks"]:
        written = entry_text(entry)
        assert json.loads(written) == entry, entry["id"]
        for key in ("merged_at", "issue_opened_at"):
            line = f'"{key}": {json.dumps(entry[key], ensure_ascii=False)}'
            assert line in written and line in text, (entry["id"], key)


def test_the_entry_goes_into_the_specification_pending(upstream, calc, tmp_path: Path) -> None:
    spec = tmp_path / "dataset.json"
    shutil.copy(SPEC, spec)
    before = spec.read_text()
    dataset = load_dataset(spec)
    found = read_pull_request("examples_calc-2", calc, 2, upstream["source"])
    entry = new_entry(
        dataset, "examples_calc-2", calc, found, base_image=None, test_command=None, releases=Releases()
    )
    assert entry["base_image"] == "kotlin-bench/examples_calc:base"  # the repository's only base
    assert entry["test_command"] == "ktest ."  # that of its other tasks
    assert entry["validation"] == "pending" and entry["expected_counts"] is None
    added = put_task(spec, entry)
    assert added.task("examples_calc-2").validation is ValidationMark.PENDING
    text = spec.read_text()
    assert text.startswith(before[: before.rindex("    }\n  ]\n}")])  # the rest is untouched
    put_task(
        spec, entry | {"validation": "valid", "expected_counts": {"f2p": 1, "p2p": 0, "s2p": 0, "n2p": 0}}
    )
    assert task_entry(spec, "examples_calc-2")["validation"] == "valid"  # replaced in place
    assert len(load_dataset(spec).tasks) == len(dataset.tasks) + 1
    with pytest.raises(SpecError, match="validation"):
        put_task(spec, entry | {"validation": "maybe"})
    assert task_entry(spec, "examples_calc-2")["validation"] == "valid"  # nothing written


def test_a_new_task_needs_an_f2p_test() -> None:
    valid = TaskValidation("t-1", valid=True, counts={"f2p": 0, "p2p": 3, "s2p": 0, "n2p": 2})
    assert acceptance_problems(valid) == [
        "validation: no f2p test: a new task needs a test that fails before the fix and passes with it"
    ]
    assert acceptance_problems(TaskValidation("t-1", valid=True, counts={"f2p": 1})) == []
    invalid = TaskValidation("t-1", valid=False, reasons=["fix: no_fixed_test"], counts={"f2p": 0})
    assert acceptance_problems(invalid) == ["fix: no_fixed_test"]


def test_kotlin_bench_says_which_tasks_are_not_valid(
    upstream, calc, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kotlin_bench.tools.cli import main

    spec = tmp_path / "dataset.json"
    shutil.copy(SPEC, spec)
    found = read_pull_request("examples_calc-2", calc, 2, upstream["source"])
    entry = new_entry(
        load_dataset(spec),
        "examples_calc-2",
        calc,
        found,
        base_image=None,
        test_command=None,
        releases=Releases(),
    )
    put_task(spec, entry)
    assert main(["status", "--spec", str(spec), "--tasks-dir", str(tmp_path / "tasks")]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("examples_calc-2") and " pending " in line for line in out.splitlines()), out
    assert "validation pending: 1" in out
    assert main(["lint", "--spec", str(spec), "--tasks-dir", str(tmp_path / "tasks")]) == 1
    err = capsys.readouterr().err
    assert "error: examples_calc-2: validation pending: added by `kotlin-bench add-task`, not valid" in err
