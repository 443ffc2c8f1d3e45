"""The dataset specification, generation of task directories and base recipes, and the shared scripts."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.dataset.generate import (
    OWNED_TASK_FILES,
    TEMPLATES_DIR,
    generate,
    render_init_script,
    render_prepare_env,
    render_warmup,
)
from kotlin_bench.dataset.globs import glob_to_regex, matches_any, split_paths
from kotlin_bench.dataset.spec import SpecError, load_dataset, parse_dataset

REPO = Path(__file__).resolve().parents[1]
SPEC = REPO / "dataset" / "kotlin-bench.json"
SHARED = Path(os.environ.get("KOTLIN_BENCH_SHARED", REPO.parent / "shared")) / "dataset"
BASE = "0123456789abcdef0123456789abcdef01234567"


def small_spec() -> dict[str, Any]:
    return {
        "name": "tiny",
        "defaults": {
            "verifier_timeout_sec": 60.0,
            "agent_timeout_sec": 120.0,
            "build_timeout_sec": 600.0,
            "cpus": 2,
            "memory_mb": 2048,
            "agent_allowed_hosts": ["repo1.maven.org"],
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
        "bases": [
            {
                "repo_key": "acme_widgets",
                "tag": "base",
                "repository": "acme/widgets",
                "jdk": 17,
                "jdk_image": "eclipse-temurin:17-jdk",
                "android_sdk_packages": [],
                "extra_apt_packages": ["xvfb"],
            },
            {
                "repo_key": "acme_widgets",
                "tag": "base-android",
                "repository": "acme/widgets",
                "jdk": 11,
                "jdk_image": "eclipse-temurin:11-jdk",
                "android_sdk_packages": ["platform-tools", "platforms;android-34"],
                "android_cmdline_tools": "7302050",
                "extra_apt_packages": [],
            },
        ],
        "tasks": [
            {
                "id": "acme_widgets-7",
                "repository": "acme/widgets",
                "pr": 7,
                "issues": [6, 5],
                "base_commit": BASE,
                "base_image": "kotlin-bench/acme_widgets:base",
                "test_command": "./gradlew test --continue",
                "flaky_test_excludes": [],
                "flaky_init_script_kind": None,
                "expected_counts": {"f2p": 1, "p2p": 2, "s2p": 0, "n2p": 0},
                "published_sha256": None,
                "fix_files": None,
                "test_files": None,
            },
            {
                "id": "acme_widgets-9",
                "repository": "acme/widgets",
                "pr": 9,
                "issues": [],
                "base_commit": BASE,
                "base_image": "kotlin-bench/acme_widgets:base-android",
                "test_command": 'JAVA_OPTS="-Xmx1g" ./gradlew test --init-script /home/exclude-flaky-tests.gradle',
                "flaky_test_excludes": ["*FlakyTest", "*It's$odd"],
                "flaky_init_script_kind": "groovy",
                "expected_counts": None,
                "published_sha256": None,
                "fix_files": ["src/main/A.kt"],
                "test_files": ["src/test/ATest.kt"],
                "agent_timeout_sec": 99.0,
            },
        ],
    }


@pytest.fixture
def verifier_dir(tmp_path: Path) -> Path:
    d = tmp_path / "verifier"
    d.mkdir()
    for name in ("test.sh", "kotlin_logs_collector.sh", "junit_compare.py"):
        (d / name).write_text(f"# fake {name}\n")
    return d


# --------------------------------------------------------------------------------------------------
# The specification of the 106


def test_kotlin_bench_spec_loads() -> None:
    dataset = load_dataset(SPEC)
    assert dataset.name == "kotlin-bench"
    assert len(dataset.tasks) == 106
    assert len(dataset.bases) == 13
    assert len(dataset.repositories) == 9
    assert {t.license for t in dataset.tasks} == {"MIT", "Apache-2.0", "GPL-3.0"}


def _spec_as_shared(dataset_task: Any) -> dict[str, Any]:
    t = dataset_task
    limits = t.limits
    return {
        "id": t.id,
        "owner": t.owner,
        "repo": t.repo,
        "license": t.license,
        "pr": t.pr,
        "pr_url": t.pr_url,
        "issue_url": t.issue_url,
        "issues": list(t.issues),
        "base_commit": t.base_commit,
        "repo_dir": t.repo_dir,
        "base_image": t.base_image,
        "test_command": t.test_command,
        "flaky_test_excludes": list(t.flaky_test_excludes),
        "flaky_init_script_kind": t.flaky_init_script_kind,
        "verifier_timeout_sec": limits.verifier_timeout_sec,
        "agent_timeout_sec": limits.agent_timeout_sec,
        "build_timeout_sec": limits.build_timeout_sec,
        "cpus": limits.cpus,
        "memory_mb": limits.memory_mb,
        "agent_network_mode": limits.agent_network_mode,
        "agent_allowed_hosts": list(limits.agent_allowed_hosts),
        "expected_counts": None if t.expected_counts is None else dict(t.expected_counts),
        "fix_files": None if t.fix_files is None else list(t.fix_files),
        "test_files": None if t.test_files is None else list(t.test_files),
        "published_sha256": None if t.published_sha256 is None else dict(t.published_sha256),
    }


@pytest.mark.skipif(not (SHARED / "tasks.json").is_file(), reason="the shared dataset facts are absent")
def test_spec_reproduces_every_field_of_the_shared_facts() -> None:
    dataset = load_dataset(SPEC)
    tasks = json.loads((SHARED / "tasks.json").read_text())
    assert [t["id"] for t in tasks] == [t.id for t in dataset.tasks]
    for fact in tasks:
        ours = _spec_as_shared(dataset.task(fact["id"]))
        assert set(ours) == set(fact), fact["id"]
        for key, value in fact.items():
            assert ours[key] == value, (fact["id"], key)
    bases = json.loads((SHARED / "bases.json").read_text())
    assert len(bases) == len(dataset.bases)
    # Facts the shared file lacks, read from the published recipe (issue #10's audit).
    published_extra_apt = {
        "kotlin-bench/ankidroid_anki-android:base": ["libncurses6", "libvulkan1", "libpulse0", "libgl1"]
    }
    for fact, base in zip(bases, dataset.bases, strict=True):
        fact = {
            **fact,
            "extra_apt_packages": fact["extra_apt_packages"] + published_extra_apt.get(base.image, []),
        }
        assert base.repository is not None
        ours = {
            "repo_key": base.repo_key,
            "tag": base.tag,
            "image": base.image,
            "jdk": base.jdk,
            "jdk_image": base.jdk_image,
            "android_sdk_packages": list(base.android_sdk_packages),
            "extra_apt_packages": list(base.extra_apt_packages),
            "clone_url": base.repository.clone_url,
            "repo_dir": base.repository.repo_dir,
        }
        assert ours == fact


def test_test_paths_reproduce_every_published_split() -> None:
    dataset = load_dataset(SPEC)
    known = [t for t in dataset.tasks if t.fix_files is not None and t.test_files is not None]
    assert len(known) == 105
    for task in known:
        fix, test = split_paths([*task.fix_files, *task.test_files], task.repository.test_paths)
        assert (sorted(fix), sorted(test)) == (sorted(task.fix_files), sorted(task.test_files)), task.id


def test_repo_dir_and_base_agree_for_the_106() -> None:
    dataset = load_dataset(SPEC)
    for task in dataset.tasks:
        base = dataset.base(task.base_image)
        assert base.repository is task.repository
        assert task.id == f"{task.owner}_{task.repo}-{task.pr}"


# --------------------------------------------------------------------------------------------------
# Globs and derivations


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("**/src/test/**", "src/test/A.kt", True),
        ("**/src/test/**", "core/sub/src/test/x/A.kt", True),
        ("**/src/test/**", "core/src/main/A.kt", False),
        ("**/src/test/**", "core/src/testFixtures/A.kt", False),
        ("test/**", "test/x.kt", True),
        ("test/**", "src/test/x.kt", False),
        ("RELEASE_TESTING.MD", "RELEASE_TESTING.MD", True),
        ("RELEASE_TESTING.MD", "docs/RELEASE_TESTING.MD", False),
        ("**/src/*Test/**", "editor/src/desktopTest/A.kt", True),
        ("**/src/*Test/**", "editor/src/desktopMain/A.kt", False),
        ("*.md", "a/b.md", False),
        ("**/*.md", "a/b.md", True),
        ("src/?/x", "src/a/x", True),
        ("src/[ab]/x", "src/c/x", False),
        ("src/[!ab]/x", "src/c/x", True),
        ("a+b/**", "a+b/c", True),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert bool(glob_to_regex(pattern).match(path)) is expected
    assert matches_any(path, [pattern]) is expected


def test_derived_urls_images_and_overrides() -> None:
    dataset = parse_dataset(small_spec())
    t7, t9 = dataset.tasks
    assert t7.pr_url == "https://example.invalid/acme/widgets/pull/7"
    assert t7.issue_url == "https://example.invalid/acme/widgets/issues/6"
    assert t9.issue_url == t9.pr_url  # no issues: the pull request
    assert t7.image == "kotlin-bench/acme_widgets:pr-7"
    assert t7.repo_dir == "/home/widgets"
    assert t7.limits.agent_timeout_sec == 120.0
    assert t9.limits.agent_timeout_sec == 99.0
    assert t9.limits.agent_network_mode == "allowlist"
    spec = small_spec()
    spec["tasks"][0]["issue_url"] = "https://example.invalid/elsewhere/1"
    assert parse_dataset(spec).tasks[0].issue_url == "https://example.invalid/elsewhere/1"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["tasks"][0].pop("pr"), "'pr' is a required property"),
        (lambda s: s["tasks"][0].update(base_commit="abc"), "$.tasks[0].base_commit"),
        (lambda s: s["tasks"][0].update(unknown=1), "unknown"),
        (lambda s: s["tasks"][0].update(base_image="kotlin-bench/nope:base"), "is not one of the bases"),
        (lambda s: s["tasks"][0].update(repository="acme/other"), "unknown repository"),
        (lambda s: s["tasks"][1].update(id="acme_widgets-7"), "duplicate task id"),
        (lambda s: s["tasks"][1].update(flaky_init_script_kind="kts"), "exclude-flaky-tests.gradle"),
        (lambda s: s["tasks"][0].update(flaky_test_excludes=["x"]), "flaky_init_script_kind is set exactly"),
        (lambda s: s["tasks"][1].update(fix_files=None), "both null or both lists"),
        (lambda s: s["bases"].append(copy.deepcopy(s["bases"][0])), "duplicate base image"),
        (lambda s: s["defaults"].pop("cpus"), "'cpus' is a required property"),
    ],
)
def test_invalid_specifications_are_reported(mutate: Any, message: str) -> None:
    spec = small_spec()
    mutate(spec)
    with pytest.raises(SpecError) as info:
        parse_dataset(spec)
    assert message in str(info.value)


def test_load_dataset_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "spec.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match=r"spec\.json: not valid JSON"):
        load_dataset(bad)


# --------------------------------------------------------------------------------------------------
# Generation


def _generate(tmp_path: Path, verifier_dir: Path, spec: dict[str, Any] | None = None, **kw: Any) -> Any:
    dataset = parse_dataset(spec or small_spec())
    return generate(
        dataset,
        tmp_path / "tasks",
        bases_out=tmp_path / "bases",
        repo_root=tmp_path,
        verifier_dir=verifier_dir,
        **kw,
    )


def test_generation_writes_the_design_layout(tmp_path: Path, verifier_dir: Path) -> None:
    from kotlin_bench.dataset.task import load_task

    _generate(tmp_path, verifier_dir)
    t7 = tmp_path / "tasks" / "acme_widgets-7"
    files = sorted(str(p.relative_to(t7)) for p in t7.rglob("*") if p.is_file())
    assert files == sorted(
        [
            "task.toml",
            "environment/Dockerfile",
            "environment/docker-compose.yaml",
            "environment/prepare.sh",
            "environment/prepare.env",
            "environment/warmup.sh",
            "environment/check_git_changes.sh",
            "environment/seal_git_history.sh",
            "solution/solve.sh",
            "tests/test.sh",
            "tests/kotlin_logs_collector.sh",
            "tests/junit_compare.py",
            "tests/task.env",
        ]
    )
    for script in ("environment/prepare.sh", "environment/warmup.sh", "solution/solve.sh", "tests/test.sh"):
        assert os.access(t7 / script, os.X_OK)
    assert (t7 / "environment/prepare.sh").read_bytes() == (TEMPLATES_DIR / "prepare.sh").read_bytes()
    assert (t7 / "tests/test.sh").read_bytes() == (verifier_dir / "test.sh").read_bytes()

    toml = tomllib.loads((t7 / "task.toml").read_text())
    assert toml["version"] == "1.0"
    assert toml["metadata"]["tags"] == ["kotlin", "widgets"]
    assert toml["metadata"]["source"]["code_change_id"] == 7
    assert toml["metadata"]["source"]["issue_url"] == "https://example.invalid/acme/widgets/issues/6"
    assert toml["metadata"]["kotlin_bench"]["base_image"] == "kotlin-bench/acme_widgets:base"
    assert toml["agent"] == {
        "timeout_sec": 120.0,
        "network_mode": "allowlist",
        "allowed_hosts": ["repo1.maven.org"],
    }
    assert toml["environment"] == {
        "build_timeout_sec": 600.0,
        "cpus": 2,
        "memory_mb": 2048,
        "network_mode": "public",
    }
    task = load_task(t7, require_materialized=False)
    assert task.image == "kotlin-bench/acme_widgets:pr-7"
    assert task.test_command == "./gradlew test --continue"
    compose = (t7 / "environment/docker-compose.yaml").read_text()
    assert compose == "services:\n  main:\n    image: kotlin-bench/acme_widgets:pr-7\n"  # as published

    t9 = tmp_path / "tasks" / "acme_widgets-9"
    assert (t9 / "environment/exclude-flaky-tests.gradle").is_file()
    assert not (t9 / "environment/exclude-flaky-tests.gradle.kts").exists()
    assert tomllib.loads((t9 / "task.toml").read_text())["agent"]["timeout_sec"] == 99.0


def test_dockerfile_and_task_env_quote_the_test_command(tmp_path: Path, verifier_dir: Path) -> None:
    _generate(tmp_path, verifier_dir)
    t9 = tmp_path / "tasks" / "acme_widgets-9"
    command = small_spec()["tasks"][1]["test_command"]
    lines = (t9 / "environment/Dockerfile").read_text().splitlines()
    assert lines[2] == "FROM kotlin-bench/acme_widgets:base-android"
    assert lines[3] == (
        "COPY prepare.sh check_git_changes.sh seal_git_history.sh prepare.env warmup.sh "
        "exclude-flaky-tests.gradle /home/"
    )
    assert lines[4] == "RUN bash /home/prepare.sh /home/prepare.env"
    # No clean-tree check after the warm-up: the image keeps what it left, as published.
    assert lines[5] == f"RUN bash /home/seal_git_history.sh /home/widgets {BASE}"
    assert lines[6] == "WORKDIR /home/widgets"
    out = subprocess.run(
        [
            "bash",
            "-c",
            'set -a; source "$1"; printf "%s\\n%s" "$REPO_DIR" "$TEST_COMMAND"',
            "_",
            t9 / "tests/task.env",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == f"/home/widgets\n{command}"


def test_generation_is_idempotent_and_check_detects_drift(tmp_path: Path, verifier_dir: Path) -> None:
    first = _generate(tmp_path, verifier_dir)
    assert first.written and not first.unchanged
    second = _generate(tmp_path, verifier_dir)
    assert not second.written and not second.removed and second.unchanged
    assert not _generate(tmp_path, verifier_dir, check=True).changed

    toml = tmp_path / "tasks/acme_widgets-7/task.toml"
    toml.write_text(toml.read_text() + "# edited\n")
    (tmp_path / "tasks/acme_widgets-7/solution/solve.sh").chmod(0o644)
    (tmp_path / "bases/manifest").unlink()
    report = _generate(tmp_path, verifier_dir, check=True)
    assert set(report.differing) == {
        toml,
        tmp_path / "tasks/acme_widgets-7/solution/solve.sh",
        tmp_path / "bases/manifest",
    }
    assert "# edited" in toml.read_text()  # --check writes nothing
    _generate(tmp_path, verifier_dir)
    assert not _generate(tmp_path, verifier_dir, check=True).changed


def test_generation_never_touches_materialized_files(tmp_path: Path, verifier_dir: Path) -> None:
    _generate(tmp_path, verifier_dir)
    task = tmp_path / "tasks/acme_widgets-9"
    materialized = {
        "solution/fix.patch": "fix",
        "tests/test.patch": "test",
        "instruction.md": "# hi",
        "tests/expected_tests.json": "{}",
        ".materialized.json": "{}",
        "notes.txt": "mine",
    }
    for rel, text in materialized.items():
        (task / rel).write_text(text)
    spec = small_spec()
    spec["tasks"][1].update(
        flaky_test_excludes=[],
        flaky_init_script_kind=None,
        test_command="./gradlew test",
    )
    report = _generate(tmp_path, verifier_dir, spec)
    assert report.removed == [task / "environment/exclude-flaky-tests.gradle"]
    for rel, text in materialized.items():
        assert (task / rel).read_text() == text
    assert all(not p.endswith((".patch", ".md", "expected_tests.json")) for p in OWNED_TASK_FILES)


def test_generation_reports_strays_and_keeps_them(tmp_path: Path, verifier_dir: Path) -> None:
    stray = tmp_path / "tasks/old-1"
    stray.mkdir(parents=True)
    (stray / "task.toml").write_text("x")
    report = _generate(tmp_path, verifier_dir)
    assert report.strays == [stray]
    assert (stray / "task.toml").read_text() == "x"


def test_generation_requires_the_verifier_scripts(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match=r"verifier scripts test\.sh, kotlin_logs_collector\.sh"):
        _generate(tmp_path, empty)


def test_base_recipes_and_manifest(tmp_path: Path, verifier_dir: Path) -> None:
    _generate(tmp_path, verifier_dir)
    manifest = (tmp_path / "bases/manifest").read_text().splitlines()
    entries = [line for line in manifest if not line.startswith("#")]
    assert entries == [
        "acme_widgets base bases/acme_widgets/Dockerfile.base",
        "acme_widgets base-android bases/acme_widgets/Dockerfile.base-android",
    ]
    plain = (tmp_path / "bases/acme_widgets/Dockerfile.base").read_text()
    assert "FROM eclipse-temurin:17-jdk\n" in plain
    assert "android" not in plain.lower()
    for package in ("git", "python3", "tmux", "curl", "unzip", "xz-utils", "xvfb"):
        assert f"    {package} \\\n" in plain
    assert "git clone https://example.invalid/acme/widgets.git /home/widgets" in plain
    assert plain.rstrip().endswith("WORKDIR /home/widgets")
    android = (tmp_path / "bases/acme_widgets/Dockerfile.base-android").read_text()
    # One stage: sdkmanager (the spec's build, on the PATH) runs on the image's own JDK 11, as published.
    assert [line for line in android.splitlines() if line.startswith("FROM ")] == [
        "FROM eclipse-temurin:11-jdk"
    ]
    assert "/commandlinetools-linux-7302050_latest.zip" in android
    assert "yes | sdkmanager --licenses > /dev/null" in android
    assert "&& sdkmanager platform-tools 'platforms;android-34'\n" in android
    assert "ENV ANDROID_HOME=/opt/android-sdk" in android
    assert "/opt/android-sdk/cmdline-tools/latest/bin" in android


@pytest.mark.parametrize(
    ("packages", "build"), [(["platform-tools"], None), ([], "7302050")], ids=["no build", "no packages"]
)
def test_the_command_line_tools_build_goes_with_sdk_packages(packages: list[str], build: str | None) -> None:
    spec = small_spec()
    spec["bases"][1]["android_sdk_packages"] = packages
    spec["bases"][1].pop("android_cmdline_tools")
    if build:
        spec["bases"][1]["android_cmdline_tools"] = build
    with pytest.raises(SpecError, match="android_cmdline_tools"):
        parse_dataset(spec)


def test_hand_written_recipes_are_listed_and_never_overwritten(tmp_path: Path, verifier_dir: Path) -> None:
    spec = small_spec()
    spec["bases"][1] = {"repo_key": "acme_widgets", "tag": "base-android", "recipe": "debootstrap:bookworm"}
    _generate(tmp_path, verifier_dir, spec)
    assert "acme_widgets base-android debootstrap:bookworm" in (tmp_path / "bases/manifest").read_text()
    assert not (tmp_path / "bases/acme_widgets/Dockerfile.base-android").exists()
    own = tmp_path / "bases/acme_widgets/Dockerfile.base"
    own.write_text("FROM scratch\n")
    with pytest.raises(FileExistsError, match="did not write"):
        _generate(tmp_path, verifier_dir, spec)
    assert own.read_text() == "FROM scratch\n"


def test_init_scripts_escape_patterns() -> None:
    groovy = render_init_script("groovy", ["*A", "it's \\ odd"])
    assert "    '*A',\n    'it\\'s \\\\ odd'\n]" in groovy
    assert "excludeTestsMatching(pattern)" in groovy
    kts = render_init_script("kts", ['*B"x', "$y"])
    assert '    "*B\\"x",\n    "\\$y"\n)' in kts
    assert "withType<Test>()" in kts


def test_repository_generated_files_are_current() -> None:
    """The committed tasks/ and bases/ are what `kotlin-bench generate` writes (drift test)."""
    dataset = load_dataset(SPEC)
    report = generate(dataset, REPO / "tasks", bases_out=REPO / "bases", repo_root=REPO, check=True)
    assert not report.differing, [str(p) for p in report.differing[:10]]
    assert not report.strays


# --------------------------------------------------------------------------------------------------
# The shared scripts, on real git repositories


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path) -> dict[str, Any]:
    """An upstream repository (base, later commits, a tag, a pull ref) and a clone of it."""
    up = tmp_path / "upstream"
    up.mkdir()
    _git(up, "init", "-q", "-b", "main")
    _git(up, "config", "user.email", "t@example.invalid")
    _git(up, "config", "user.name", "t")
    _commit(up, {"README": "r\n", ".gitignore": "build/\n"}, "root")
    base = _commit(up, {"src/A.kt": "a\n"}, "base")
    later = _commit(up, {"src/A.kt": "fixed\n"}, "the fix")
    _git(up, "tag", "v1")
    _git(up, "checkout", "-q", "-b", "feature")
    pr = _commit(up, {"src/B.kt": "b\n"}, "pr")
    _git(up, "update-ref", "refs/pull/3/head", pr)
    _git(up, "checkout", "-q", "main")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(up), str(clone)], check=True)
    _git(clone, "config", "user.email", "t@example.invalid")
    _git(clone, "config", "user.name", "t")
    _git(clone, "fetch", "-q", "origin", "+refs/pull/*/head:refs/pull/*/head")
    return {"upstream": up, "clone": clone, "base": base, "later": later, "pr": pr}


def _script(name: str, *args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        ["bash", str(TEMPLATES_DIR / name), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _prepare_files(
    tmp: Path,
    clone: Path,
    base: str,
    steps: list[Any],
    *,
    on_failure: str = "ignore",
    test_env: dict[str, str] | None = None,
    after: str | None = None,
    **spec: Any,
) -> Path:
    """prepare.env and warmup.sh as generation writes them, for a repository at `clone` on the host."""
    data = small_spec()
    repository = data["repositories"]["acme/widgets"]
    repository["repo_dir"] = str(clone)
    warmup: dict[str, Any] = {"steps": steps, "on_failure": on_failure}
    if after:
        warmup["after"] = after
    if any(isinstance(step, dict) for step in steps):  # a warm-up patch is the task's own
        data["tasks"][0].update(
            warmup=warmup, warmup_patch={"published_file": "w.patch", "test_patch_paths": ["src/A.kt"]}
        )
    else:
        repository["warmup"] = warmup
    if test_env:
        repository["test_env"] = test_env
    data.update(spec)
    data["tasks"][0]["base_commit"] = base
    dataset = parse_dataset(data)
    task = dataset.tasks[0]
    env = render_prepare_env(dataset, task).replace("WARMUP=/home/warmup.sh", f"WARMUP={tmp / 'warmup.sh'}")
    (tmp / "prepare.env").write_text(env)
    (tmp / "warmup.sh").write_text(render_warmup(dataset, task))
    return tmp / "prepare.env"


WARMUP_LEFTOVERS = (
    "mkdir -p build/test-results/test sub/build/test-results/test build/cache && "
    "touch build/test-results/test/TEST-a.xml sub/build/test-results/test/TEST-b.xml build/cache/warm && "
    "echo dirty > src/A.kt && touch untracked.txt && exit 3"
)


def test_prepare_checks_out_warms_and_keeps_what_the_warmup_left(
    history: dict[str, Any], tmp_path: Path
) -> None:
    """As published: after the warm-up the tree stays as it left it (test results, changed and new files)."""
    clone, base = history["clone"], history["base"]
    conventions = {
        "git_config": {"core.autocrlf": "input", "core.filemode": "false"},
        "git_info_exclude": [".gitattributes"],
    }
    env = _prepare_files(tmp_path, clone, base, [WARMUP_LEFTOVERS], conventions=conventions)
    data = env.read_text()
    assert "AFTER_WARMUP=keep" in data
    proc = _script("prepare.sh", env)
    assert proc.returncode == 0, proc.stderr
    assert "warmup: exited with 3 (ignored)" in proc.stderr
    assert _git(clone, "rev-parse", "HEAD") == base
    assert (clone / "build/test-results/test/TEST-a.xml").exists()
    assert (clone / "sub/build/test-results/test/TEST-b.xml").exists()
    assert (clone / "build/cache/warm").exists()
    assert (clone / "untracked.txt").exists()
    assert (clone / "src/A.kt").read_text() == "dirty\n"
    assert _script("check_git_changes.sh", clone).returncode == 1
    assert (
        _git(clone, "config", "core.autocrlf") == "input"
        and _git(clone, "config", "core.filemode") == "false"
    )
    assert ".gitattributes" in (clone / ".git/info/exclude").read_text()
    assert "GIT_CONFIG=(core.autocrlf input core.filemode false)" in data


def test_prepare_resets_after_the_warmup_when_told(history: dict[str, Any], tmp_path: Path) -> None:
    """`after: reset` (cascade-editor-16's published prepare.sh): tracked files back at the base commit, new
    files that are not ignored removed, ignored outputs and test results kept, and the tree clean."""
    clone, base = history["clone"], history["base"]
    env = _prepare_files(tmp_path, clone, base, [WARMUP_LEFTOVERS], after="reset")
    assert "AFTER_WARMUP=reset" in env.read_text()
    proc = _script("prepare.sh", env)
    assert proc.returncode == 0, proc.stderr
    assert _git(clone, "rev-parse", "HEAD") == base
    assert (clone / "src/A.kt").read_text() == "a\n"
    assert not (clone / "untracked.txt").exists()
    assert (clone / "build/test-results/test/TEST-a.xml").exists() and (clone / "build/cache/warm").exists()
    assert _script("check_git_changes.sh", clone).returncode == 0


def test_prepare_exports_the_test_env_and_aborts_as_published(
    history: dict[str, Any], tmp_path: Path
) -> None:
    clone, base = history["clone"], history["base"]
    command = 'mkdir -p build && echo "$CLI_TEST_MAX_DURATION_IN_SECONDS" > build/seen && exit 4'
    env = _prepare_files(
        tmp_path,
        clone,
        base,
        [command],
        on_failure="abort",
        test_env={"CLI_TEST_MAX_DURATION_IN_SECONDS": "60"},
    )
    proc = _script("prepare.sh", env)
    assert proc.returncode == 4, proc.stderr  # a failing warm-up stops the image build
    assert (clone / "build/seen").read_text() == "60\n"  # the test env reached the warm-up


@pytest.mark.parametrize("after", ["reset", "keep"])
def test_prepare_applies_a_warmup_patch(history: dict[str, Any], tmp_path: Path, after: str) -> None:
    clone, base, later = history["clone"], history["base"], history["later"]
    (tmp_path / "warmup.patch").write_text(_git(clone, "diff", base, later) + "\n")
    steps = [
        "test ! -s src/A.kt || grep -q '^a$' src/A.kt",
        {"apply": "warmup.patch"},
        "grep -q fixed src/A.kt",
    ]
    env = _prepare_files(tmp_path, clone, base, steps, on_failure="abort", after=after)
    warmup = (
        (tmp_path / "warmup.sh").read_text().replace("/home/warmup.patch", str(tmp_path / "warmup.patch"))
    )
    (tmp_path / "warmup.sh").write_text(warmup)
    proc = _script("prepare.sh", env)
    assert proc.returncode == 0, proc.stderr
    if after == "reset":
        assert (clone / "src/A.kt").read_text() == "a\n"  # reverted after the warm-up
        assert _script("check_git_changes.sh", clone).returncode == 0
    else:
        assert "fixed" in (clone / "src/A.kt").read_text()  # the patched file stays, as the warm-up left it


def test_prepare_fetches_a_missing_commit(history: dict[str, Any], tmp_path: Path) -> None:
    up = history["upstream"]
    _git(up, "checkout", "-q", "-b", "hidden", history["base"])
    hidden = _commit(up, {"src/C.kt": "c\n"}, "hidden")
    _git(up, "checkout", "-q", "main")
    clone = history["clone"]
    assert subprocess.run(["git", "cat-file", "-e", hidden], cwd=clone).returncode != 0
    proc = _script("prepare.sh", _prepare_files(tmp_path, clone, hidden, ["true"]))
    assert proc.returncode == 0, proc.stderr
    assert _git(clone, "rev-parse", "HEAD") == hidden


def test_prepare_fails_on_an_unknown_commit(history: dict[str, Any], tmp_path: Path) -> None:
    proc = _script("prepare.sh", _prepare_files(tmp_path, history["clone"], "f" * 40, ["true"]))
    assert proc.returncode != 0


def test_check_git_changes_lists_offenders(history: dict[str, Any]) -> None:
    clone = history["clone"]
    assert _script("check_git_changes.sh", clone).returncode == 0
    (clone / "src/A.kt").write_text("changed\n")
    (clone / "new.txt").write_text("new\n")
    proc = _script("check_git_changes.sh", cwd=clone)
    assert proc.returncode == 1
    assert "src/A.kt" in proc.stderr and "new.txt" in proc.stderr


@pytest.mark.parametrize("shallow", [False, True])
def test_seal_keeps_the_ancestry_and_drops_everything_later(history: dict[str, Any], shallow: bool) -> None:
    clone, base, later, pr = history["clone"], history["base"], history["later"], history["pr"]
    root = _git(clone, "rev-parse", f"{base}^")
    _git(clone, "checkout", "-q", "--detach", base)
    (clone / "stashed.txt").write_text("x\n")
    _git(clone, "stash", "push", "-q", "-u")
    _git(clone, "notes", "add", "-m", "note", later)
    _git(clone, "branch", "-q", "local", later)
    proc = _script("seal_git_history.sh", clone, base, *(["--shallow"] if shallow else []))
    assert proc.returncode == 0, proc.stderr

    assert _git(clone, "rev-parse", "HEAD") == base
    assert _git(clone, "symbolic-ref", "HEAD") == "refs/heads/task-base"
    assert _git(clone, "for-each-ref", "--format=%(refname)") == "refs/heads/task-base"
    if shallow:
        assert _git(clone, "rev-list", "--all", "--count") == "1"
    else:  # the published seal: `git log` and `git blame` see the base's ancestors
        assert _git(clone, "rev-list", "--all") == f"{base}\n{root}"
        assert _git(clone, "log", "--format=%s") == "base\nroot"
    for gone in (later, pr):
        assert subprocess.run(["git", "cat-file", "-e", gone], cwd=clone, capture_output=True).returncode != 0
    assert _git(clone, "remote") == ""
    assert _git(clone, "tag") == ""
    assert _git(clone, "stash", "list") == ""
    assert _git(clone, "reflog", "--all") == ""
    counts = dict(line.split(": ") for line in _git(clone, "count-objects", "-v").splitlines())
    assert counts["count"] == "0" and counts["garbage"] == "0" and counts["size-garbage"] == "0"
    fsck = subprocess.run(
        ["git", "fsck", "--unreachable", "--no-progress"], cwd=clone, capture_output=True, text=True
    )
    assert fsck.returncode == 0 and fsck.stdout.strip() == ""
    assert not (clone / ".git/FETCH_HEAD").exists() and not (clone / ".git/ORIG_HEAD").exists()
    assert "branch." not in (clone / ".git/config").read_text()
    assert _git(clone, "status", "--porcelain") == ""
    assert (clone / "src/A.kt").read_text() == "a\n"


def test_seal_refuses_when_head_is_not_the_base(history: dict[str, Any]) -> None:
    proc = _script("seal_git_history.sh", history["clone"], history["base"])
    assert proc.returncode == 1
    assert "expected the base commit" in proc.stderr


def test_solve_applies_the_fix_and_fails_loudly(history: dict[str, Any], tmp_path: Path) -> None:
    clone, base, later = history["clone"], history["base"], history["later"]
    _git(clone, "checkout", "-q", "--detach", base)
    solution = tmp_path / "solution"
    solution.mkdir()
    (solution / "fix.patch").write_text(_git(clone, "diff", base, later) + "\n")
    (clone / "src").mkdir(exist_ok=True)
    proc = _script("solve.sh", cwd=clone / "src", env={"SOLUTION_DIR": str(solution)})
    assert proc.returncode == 0, proc.stderr
    assert (clone / "src/A.kt").read_text() == "fixed\n"
    proc = _script("solve.sh", cwd=clone, env={"SOLUTION_DIR": str(solution)})  # applied already
    assert proc.returncode == 1
    assert "does not apply" in proc.stderr
    (solution / "fix.patch").unlink()
    proc = _script("solve.sh", cwd=clone, env={"SOLUTION_DIR": str(solution)})
    assert proc.returncode == 1 and "missing or empty" in proc.stderr


def test_generation_carries_the_published_facts(tmp_path: Path, verifier_dir: Path) -> None:
    """Conventions, base ENV, the repository's test env and warm-up, a shallow history, the warm-up patch
    and the scorer's suffixes land where the image build, the verifier and the host scorer read them."""
    spec = small_spec()
    spec["conventions"] = {"base_env": {"TZ": "Etc/UTC"}, "git_config": {"core.filemode": "false"}}
    spec["bases"][0]["env"] = {"LANG": "C.UTF-8"}
    spec["repositories"]["acme/widgets"]["test_env"] = {"CI": "true"}
    spec["repositories"]["acme/widgets"]["warmup"] = {
        "steps": ["./gradlew clean test"],
        "on_failure": "abort",
    }
    spec["tasks"][0].update(
        history="shallow",
        warmup={
            "steps": ["./gradlew build", {"apply": "warmup.patch"}, "./gradlew test"],
            "on_failure": "abort",
        },
        warmup_patch={"published_file": "environment/w.patch", "test_patch_paths": ["build.gradle.kts"]},
        scorer={"strip_name_suffixes": ["[jvm]"]},
    )
    _generate(tmp_path, verifier_dir, spec)
    t7, t9 = tmp_path / "tasks/acme_widgets-7", tmp_path / "tasks/acme_widgets-9"
    dockerfile = (t7 / "environment/Dockerfile").read_text()
    assert (
        "COPY prepare.sh check_git_changes.sh seal_git_history.sh prepare.env warmup.sh warmup.patch /home/"
        in dockerfile
    )
    assert f"RUN bash /home/seal_git_history.sh /home/widgets {BASE} --shallow" in dockerfile
    assert "--shallow" not in (t9 / "environment/Dockerfile").read_text()
    warmup7 = (t7 / "environment/warmup.sh").read_text()
    assert "set -euo pipefail" in warmup7 and "export CI=true\n" in warmup7
    assert "./gradlew build\ngit apply --whitespace=nowarn /home/warmup.patch\n./gradlew test" in warmup7
    assert (t9 / "environment/warmup.sh").read_text().endswith("./gradlew clean test\n")  # the repository's
    env7 = (t7 / "tests/task.env").read_text()
    assert "export CI=true\n" in env7 and "SCORER_ARGS=(--strip-name-suffix '[jvm]')" in env7
    assert tomllib.loads((t7 / "task.toml").read_text())["metadata"]["kotlin_bench"][
        "strip_test_name_suffixes"
    ] == ["[jvm]"]
    from kotlin_bench.dataset.task import load_task

    assert load_task(t7, require_materialized=False).scorer_args == ["--strip-name-suffix", "[jvm]"]
    assert "GIT_CONFIG=(core.filemode false)" in (t7 / "environment/prepare.env").read_text()
    recipe = (tmp_path / "bases/acme_widgets/Dockerfile.base").read_text()
    assert "ENV TZ=Etc/UTC\nENV LANG=C.UTF-8\n" in recipe
    assert "ENV LANG" not in (tmp_path / "bases/acme_widgets/Dockerfile.base-android").read_text()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: t.update(warmup={"steps": [{"apply": "warmup.patch"}], "on_failure": "abort"}),
            "the task needs warmup_patch",
        ),
        (
            lambda t: t.update(warmup_patch={"published_file": "p", "test_patch_paths": ["x"]}),
            "no warm-up step applies warmup.patch",
        ),
        (lambda t: t.update(history="deep"), "history"),
        (lambda t: t.update(scorer={"strip_name_suffixes": ["jvm"]}), "strip_name_suffixes"),
    ],
)
def test_bad_warmup_and_scorer_facts_are_named(change: Any, message: str) -> None:
    spec = small_spec()
    change(spec["tasks"][0])
    with pytest.raises(SpecError, match=message):
        parse_dataset(spec)
