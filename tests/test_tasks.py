"""The task model: valid directories load; each kind of bad input names its file and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kotlin_bench.core.names import image_parts
from kotlin_bench.dataset.task import TaskError, discover, load_task
from tests.conftest import TASK_TOML


def test_valid_task_loads(make_task) -> None:
    task = load_task(make_task())
    assert task.id == "acme_widgets-7"
    assert task.image == "kotlin-bench/acme_widgets:pr-7"
    assert task.repo_key == "acme_widgets"
    assert task.agent.network_mode == "allowlist"
    assert task.agent.allowed_hosts == ("repo1.maven.org",)
    assert task.environment.memory_mb == 512
    assert task.source.license == "MIT"


@pytest.mark.parametrize(
    ("old", "new", "field", "expected"),
    [
        (
            'base_commit = "0123456789abcdef0123456789abcdef01234567"',
            'base_commit = "abc"',
            "base_commit",
            "match",
        ),
        ("cpus = 1", "cpus = -2", "environment.cpus", "positive number"),
        ("memory_mb = 512", 'memory_mb = "lots"', "environment.memory_mb", "positive integer"),
        ('network_mode = "allowlist"', 'network_mode = "open"', "agent.network_mode", "one of"),
        ("code_change_id = 7", "", "metadata.source.code_change_id", "positive integer"),
        ('repo_dir = "/home/widgets"', 'repo_dir = "home"', "repo_dir", "match"),
        (
            'base_image = "kotlin-bench/acme_widgets:base"',
            'base_image = "ubuntu"',
            "base_image",
            "kotlin-bench/",
        ),
        ("[verifier]\ntimeout_sec = 60.0", "[verifier]", "verifier.timeout_sec", "positive number"),
    ],
)
def test_bad_field_is_named(make_task, old: str, new: str, field: str, expected: str) -> None:
    assert old in TASK_TOML
    path = make_task(toml=TASK_TOML.replace(old, new))
    with pytest.raises(TaskError) as err:
        load_task(path)
    assert str(path / "task.toml") in str(err.value)
    assert field in str(err.value)
    assert expected in str(err.value)


def test_allowed_hosts_need_allowlist(make_task) -> None:
    path = make_task(toml=TASK_TOML.replace('network_mode = "allowlist"', 'network_mode = "public"'))
    with pytest.raises(TaskError, match=r"agent\.allowed_hosts: only valid with network_mode"):
        load_task(path)


def test_missing_section(make_task) -> None:
    section = '[verifier]\ntimeout_sec = 60.0\nnetwork_mode = "public"\n'
    assert section in TASK_TOML
    path = make_task(toml=TASK_TOML.replace(section, ""))
    with pytest.raises(TaskError, match="verifier: missing table"):
        load_task(path)


def test_not_toml(make_task) -> None:
    path = make_task(toml="version = [unclosed\n")
    with pytest.raises(TaskError, match="not valid TOML"):
        load_task(path)


@pytest.mark.parametrize("missing", ["environment/Dockerfile", "solution/solve.sh", "tests/test.sh"])
def test_missing_file(make_task, missing: str) -> None:
    path = make_task(skip=(missing,))
    with pytest.raises(TaskError, match=f"{missing}: missing file"):
        load_task(path)


def test_unmaterialized_task_loads_without_upstream_files(make_task) -> None:
    path = make_task(skip=("instruction.md", "tests/expected_tests.json"))
    task = load_task(path, require_materialized=False)
    assert not task.has_expected_tests
    with pytest.raises(TaskError, match=r"instruction\.md: missing file"):
        load_task(path)


def test_marker_explains_missing_expected_tests(make_task) -> None:
    path = make_task(skip=("tests/expected_tests.json",))
    (path / "tests/.expected_tests_missing").write_text("upstream\n")
    with pytest.raises(TaskError, match="no expected test lists"):
        load_task(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "expected valid JSON"),
        ("[]", "expected_invalid: top level must be an object"),
        (json.dumps({"f2p_tests": "x"}), "expected_invalid: f2p_tests must be a list of strings"),
    ],
)
def test_invalid_expected_tests(make_task, content: str, message: str) -> None:
    path = make_task()
    (path / "tests/expected_tests.json").write_text(content)
    with pytest.raises(TaskError, match=message):
        load_task(path)


def test_image_parts_and_discover(make_task, tmp_path: Path) -> None:
    assert image_parts("kotlin-bench/pinterest_ktlint:base-JDK-17") == ("pinterest_ktlint", "base-JDK-17")
    with pytest.raises(ValueError):
        image_parts("docker.io/library/debian:12")
    make_task("b-1")
    make_task("a-2")
    assert [p.name for p in discover(tmp_path / "tasks")] == ["a-2", "b-1"]
