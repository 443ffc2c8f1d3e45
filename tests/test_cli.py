"""`kotlin-bench ...`: generate, materialize, validate, status, plan, build-bases and errors."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.engine.engine import EngineSettings, Kind
from kotlin_bench.engine.registry import Registry
from kotlin_bench.tools.cli import main
from kotlin_bench.tools.workspace import copy_checkout

REPO = Path(__file__).resolve().parents[1]
BASE = "0123456789abcdef0123456789abcdef01234567"
EXPECTED = {
    "f2p_tests": ["a.B.c"],
    "p2p_tests": [],
    "s2p_tests": [],
    "n2p_tests": [],
    "test_patch_result": {"passed_tests": [], "failed_tests": ["a.B.c"], "skipped_tests": []},
    "run_result": {"passed_tests": ["a.B.c"], "failed_tests": [], "skipped_tests": []},
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


def spec_dict(digests: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": "tiny",
        "defaults": {
            "verifier_timeout_sec": 60.0,
            "agent_timeout_sec": 60.0,
            "build_timeout_sec": 60.0,
            "cpus": 1,
            "memory_mb": 512,
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
                "extra_apt_packages": [],
            }
        ],
        "tasks": [
            {
                "id": f"acme_widgets-{pr}",
                "repository": "acme/widgets",
                "pr": pr,
                "issues": [1],
                "base_commit": BASE,
                "base_image": "kotlin-bench/acme_widgets:base",
                "test_command": "./gradlew test",
                "flaky_test_excludes": [],
                "flaky_init_script_kind": None,
                "expected_counts": None,
                "published_sha256": digests if pr == 1 else None,
                "fix_files": None,
                "test_files": None,
            }
            for pr in (1, 2)
        ],
    }


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root with a small specification and a fake verifier; the working directory."""
    (tmp_path / "dataset").mkdir()
    (tmp_path / "dataset/tiny.json").write_text(json.dumps(spec_dict()))
    verifier = tmp_path / "verifier"
    verifier.mkdir()
    for name in ("test.sh", "kotlin_logs_collector.sh", "junit_compare.py"):
        (verifier / name).write_text(f"# fake {name}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


GEN = ["generate", "--spec", "dataset/tiny.json", "--out", "tasks", "--verifier-dir", "verifier"]


@pytest.mark.parametrize("command", [["kotlin-bench"], [sys.executable, "-m", "kotlin_bench"]])
def test_command_help_runs(command: list[str]) -> None:
    """The console command and the module."""
    proc = subprocess.run([*command, "--help"], cwd=REPO, capture_output=True, text=True, check=True)
    for sub in ("generate", "materialize", "lint", "validate", "status", "plan", "build-bases", "errors"):
        assert sub in proc.stdout


def test_generate_then_check(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(GEN) == 0
    assert (project / "tasks/acme_widgets-1/task.toml").is_file()
    assert (project / "bases/manifest").read_text().splitlines()[-1] == (
        "acme_widgets base bases/acme_widgets/Dockerfile.base"
    )
    capsys.readouterr()
    assert main([*GEN, "--check"]) == 0
    assert "up to date" in capsys.readouterr().out
    (project / "tasks/acme_widgets-2/tests/task.env").write_text("REPO_DIR=/elsewhere\n")
    assert main([*GEN, "--check"]) == 1
    out = capsys.readouterr()
    assert "differs: tasks/acme_widgets-2/tests/task.env" in out.out
    assert "run `kotlin-bench generate`" in out.err


def test_generate_no_bases_and_errors(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*GEN, "--no-bases"]) == 0
    assert not (project / "bases").exists()
    assert main(["generate", "--spec", "dataset/missing.json"]) == 2
    assert "cannot read the dataset specification" in capsys.readouterr().err


def _published(project: Path) -> tuple[Path, str, dict[str, str]]:
    repo = project / "published"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    digests = {}
    layout = {
        "fix.patch": "solution/fix.patch",
        "test.patch": "tests/test.patch",
        "instruction.md": "instruction.md",
        "expected_tests.json": "tests/expected_tests.json",
    }
    for task_id in ("acme_widgets-1", "acme_widgets-2"):
        for name, rel in layout.items():
            text = (
                json.dumps(EXPECTED) if name == "expected_tests.json" else f"invented {name} of {task_id}\n"
            )
            path = repo / "tasks" / task_id / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if task_id == "acme_widgets-1":
                digests[name] = hashlib.sha256(text.encode()).hexdigest()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "publish")
    return repo, git(repo, "rev-parse", "HEAD"), digests


def test_materialize_validate_status(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, commit, digests = _published(project)
    (project / "dataset/tiny.json").write_text(json.dumps(spec_dict(digests)))
    assert main(GEN) == 0
    capsys.readouterr()

    assert main(["status", "--spec", "dataset/tiny.json"]) == 0
    out = capsys.readouterr().out
    assert "acme_widgets-1  no" in out and "not materialized: 2" in out

    args = ["materialize", "--spec", "dataset/tiny.json", "--source", "published"]
    args += ["--published", str(repo), "--published-commit", commit, "--cache-dir", str(project / "cache")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "acme_widgets-1: ok (published, verified)" in out
    assert "acme_widgets-2: ok (published, unverified)" in out
    assert "unverified (no published digests): acme_widgets-2" in out

    assert main(["status", "--spec", "dataset/tiny.json"]) == 0
    rows = {line.split()[0]: line.split()[1:4] for line in capsys.readouterr().out.splitlines()[2:4]}
    assert rows == {
        "acme_widgets-1": ["yes", "match", "published"],
        "acme_widgets-2": ["yes", "none", "published"],
    }

    validate = ["lint", "--spec", "dataset/tiny.json", "--materialized"]
    assert main(validate) == 1  # the fake verifier in tasks differs from the package's verifier: drift
    err = capsys.readouterr().err
    assert "differs from generation" in err

    (project / "tasks/acme_widgets-1/tests/test.patch").write_text("edited\n")
    assert main(["status", "--spec", "dataset/tiny.json", "acme_widgets-1"]) == 0
    assert "differs: test.patch" in capsys.readouterr().out

    assert main([*args[:-4], "--published", str(repo), "--published-commit", "c" * 40]) == 2
    assert "has no commit" in capsys.readouterr().err


def test_materialize_failure_exits_nonzero(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo, commit, digests = _published(project)
    digests["fix.patch"] = "0" * 64
    (project / "dataset/tiny.json").write_text(json.dumps(spec_dict(digests)))
    assert main(GEN) == 0
    args = ["materialize", "--spec", "dataset/tiny.json", "--source", "published", "--published", str(repo)]
    assert main([*args, "--published-commit", commit, "acme_widgets-1"]) == 1
    captured = capsys.readouterr()
    assert "acme_widgets-1: FAILED" in captured.out
    assert "acme_widgets-1: fix.patch: sha256" in captured.err


def test_materialize_upstream_with_config(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = project / "upstream"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    for rel in ("src/main/A.kt", "src/test/ATest.kt"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("base\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD")
    for rel in ("src/main/A.kt", "src/test/ATest.kt"):
        (repo / rel).write_text("changed\n")
    git(repo, "commit", "-qam", "pr")
    git(repo, "update-ref", "refs/pull/1/head", "HEAD")
    spec = spec_dict()
    spec["tasks"] = spec["tasks"][:1]
    spec["tasks"][0]["base_commit"] = base
    (project / "dataset/tiny.json").write_text(json.dumps(spec))
    issues = project / "cache/issues/acme/widgets"
    issues.mkdir(parents=True)
    (issues / "1.json").write_text(json.dumps({"number": 1, "title": "T", "body": "B"}))
    (project / "config.yaml").write_text(
        "materialize:\n  cache_dir: cache\n  upstream:\n    offline: true\n"
        f"    mirrors:\n      acme/widgets: {repo}\n"
    )
    assert main(GEN) == 0
    capsys.readouterr()
    args = ["materialize", "--spec", "dataset/tiny.json", "--source", "upstream", "--config", "config.yaml"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "acme_widgets-1: ok (upstream, unverified, no expected tests)" in out
    assert "lacking expected tests (cannot be run): acme_widgets-1" in out
    assert (project / "tasks/acme_widgets-1/tests/.expected_tests_missing").is_file()
    assert main([*args, "--mirror", "bad"]) == 2


def test_validate_checks_the_manifest(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(GEN) == 0
    # The fake verifier makes generated files differ from a default-verifier generation; regenerate.
    assert main(["generate", "--spec", "dataset/tiny.json", "--out", "tasks"]) == 0
    capsys.readouterr()
    assert main(["lint", "--spec", "dataset/tiny.json"]) == 0
    out = capsys.readouterr().out
    assert "acme/widgets  MIT      2" in out
    assert "licenses: MIT 2" in out
    manifest = project / "bases/manifest"
    manifest.write_text(
        manifest.read_text().replace("acme_widgets base ", "acme_widgets other ") + "x y bases/nope\n"
    )
    assert main(["lint", "--spec", "dataset/tiny.json"]) == 1
    err = capsys.readouterr().err
    assert "recipe bases/nope of kotlin-bench/x:y does not exist" in err
    assert "FROM kotlin-bench/acme_widgets:base is not in bases/manifest" in err
    assert "the specification's base kotlin-bench/acme_widgets:base is not listed" in err
    recipe = project / "bases/acme_widgets/Dockerfile.base"
    recipe.write_text(recipe.read_text().replace("FROM eclipse-temurin:17-jdk", "FROM kotlin-bench/zzz:1"))
    assert main(["lint", "--spec", "dataset/tiny.json"]) == 1
    assert "FROM kotlin-bench/zzz:1 is not in bases/manifest" in capsys.readouterr().err


def test_plan_lists_bases_then_tasks(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(GEN) == 0
    sentinel = project / "results/images/base/acme_widgets/base.json"
    sentinel.parent.mkdir(parents=True)
    sentinel.write_text("{}")
    capsys.readouterr()
    assert main(["plan", "--spec", "dataset/tiny.json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("base images")
    assert "kotlin-bench/acme_widgets:base" in lines[1] and "built" in lines[1] and "(2 tasks)" in lines[1]
    assert lines[2] == "task images:"
    assert "kotlin-bench/acme_widgets:pr-1" in lines[3] and "to build" in lines[3]
    assert "kotlin-bench/acme_widgets:pr-2" in lines[4]


def test_build_bases_calls_the_image_builder(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kotlin_bench.engine.images

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(kotlin_bench.engine.images, "build_manifest_images", lambda **kw: calls.append(kw))
    assert main(["build-bases", "--only", "acme_widgets", "--rebuild", "--logs-dir", "logs"]) == 0
    assert calls == [
        {
            "manifest": Path("bases/manifest"),
            "repo_root": Path("."),
            "logs_dir": Path("logs"),
            "only": ["acme_widgets"],
            "rebuild": True,
            "registry": None,
            "settings": EngineSettings(),
        }
    ]
    calls.clear()
    assert main(["build-bases"]) == 0
    assert calls[0]["only"] is None and calls[0]["rebuild"] is False
    calls.clear()
    assert main(["build-bases", "--registry", "127.0.0.1:5000/team"]) == 0
    assert calls[0]["registry"] == Registry("127.0.0.1:5000/team")
    calls.clear()
    assert main(["build-bases", "--engine", "podman"]) == 0
    assert calls[0]["settings"] == EngineSettings(Kind.PODMAN)


def test_build_bases_script_passes_options_through() -> None:
    proc = subprocess.run(
        ["bash", str(REPO / "scripts/build_bases.sh"), "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=True,
    )
    assert "--rebuild" in proc.stdout and "build-bases" in proc.stdout


def test_the_repository_validates(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["lint"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "dataset/kotlin-bench.json: valid (106 tasks, 13 bases)" in out
    assert "pinterest/ktlint         MIT         43" in out
    assert "licenses: MIT 52, Apache-2.0 48, GPL-3.0 6" in out


def test_materialize_the_bundled_default_builds_its_mirrors_as_the_dag_does(tmp_path: Path) -> None:
    """`--config config.yaml` on the example dataset builds the upstream mirrors from committed sources
    (as rule upstream_mirror does) instead of cloning the examples' placeholder URLs."""
    work = copy_checkout(REPO, tmp_path / "ws", npm_packs=False)
    task = "examples_calc-4"
    for rel in ("instruction.md", "tests/expected_tests.json", "solution/fix.patch", ".materialized.json"):
        (work / "examples/tasks" / task / rel).unlink(missing_ok=True)
    cmd = ["kotlin-bench", "materialize", "--source", "upstream", "--config", "config.yaml"]
    cmd += ["--spec", "examples/dataset.json", "--tasks-dir", "examples/tasks", task]
    done = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{task}: ok (upstream" in done.stdout
    assert (work / "results/upstream/examples/calc/HEAD").is_file() or (
        work / "results/upstream/examples/calc/.git"
    ).is_dir()
    assert (work / "examples/tasks" / task / "solution/fix.patch").stat().st_size > 0


def test_an_old_command_name_still_works_with_a_note(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`validate` is `lint`'s name before 0.3: the same answer, and a note naming the new one."""
    assert main(["generate", "--spec", "dataset/tiny.json", "--out", "tasks"]) == 0
    capsys.readouterr()
    assert (
        main(["validate", "--spec", "dataset/tiny.json"])
        == main(["lint", "--spec", "dataset/tiny.json"])
        == 0
    )
    captured = capsys.readouterr()
    assert "`kotlin-bench validate` is now `kotlin-bench lint`" in captured.err
    assert captured.err.count("is now") == 1


# --------------------------------------------------------------------------- from anywhere, exit statuses


def kb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kotlin_bench", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def workflow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout (the bundled config: the example dataset), never run."""
    return copy_checkout(REPO, tmp_path_factory.mktemp("cli") / "ws", npm_packs=False)


def test_version_is_the_one_results_record() -> None:
    """The package version and the results layout version are two named numbers (issue 31: `--version`
    said 0.2.0 while `migrate` moved "results of kotlin-bench 0.2"), and `migrate` names the layouts."""
    from kotlin_bench import HARNESS_VERSION, LEGACY_LAYOUT, RESULTS_LAYOUT

    done = kb("--version", cwd=REPO)
    assert done.stdout.strip() == f"kotlin-bench {HARNESS_VERSION} (results layout {RESULTS_LAYOUT})"
    helped = kb("migrate", "--help", cwd=REPO).stdout
    assert f"results of layout {LEGACY_LAYOUT}" in helped and f"into layout {RESULTS_LAYOUT}" in helped
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and 'attr = "kotlin_bench.HARNESS_VERSION"' in pyproject


@pytest.mark.parametrize("sub", [".", "examples/tasks/examples_calc-4", "workflow/scripts", "results"])
def test_commands_work_from_any_directory_inside_the_workflow(workflow: Path, sub: str) -> None:
    here = workflow / sub
    here.mkdir(parents=True, exist_ok=True)
    status = kb("status", cwd=here)
    assert status.returncode == 0, status.stderr
    assert "examples_calc-4" in status.stdout and "pinterest" not in status.stdout  # the config in use
    plan = kb("plan", cwd=here)
    assert plan.returncode == 0 and "kotlin-bench/examples_calc:pr-4" in plan.stdout, plan.stderr
    assert kb("leaderboard", cwd=here).returncode == 0
    lint = kb("lint", cwd=here)  # lint checks the dataset of 106 tasks by default, from anywhere
    assert lint.returncode == 0 and "(106 tasks, 13 bases)" in lint.stdout, lint.stderr


def test_root_and_config_options(workflow: Path, tmp_path: Path) -> None:
    assert kb("--root", str(workflow), "status", cwd=tmp_path).returncode == 0
    assert kb("status", "--root", str(workflow), cwd=tmp_path).returncode == 0
    one = tmp_path / "one.yaml"
    one.write_text("spec: examples/dataset.json\ntasks_dir: examples/tasks\ntasks: [examples_slug-8]\n")
    done = kb("status", "--config", str(one), cwd=workflow)
    rows = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("examples_")]
    assert rows == ["examples_slug-8"], done.stdout
    excluded = tmp_path / "exclude.yaml"
    excluded.write_text(
        "spec: examples/dataset.json\ntasks_dir: examples/tasks\nexclude: [examples_slug-8]\n"
    )
    done = kb("status", "--config", str(excluded), cwd=workflow)
    assert "examples_slug-8" not in done.stdout and "examples_calc-4" in done.stdout


def test_wrong_answers_exit_non_zero(workflow: Path, tmp_path: Path) -> None:
    done = kb("errors", "--results", str(tmp_path / "nonexistent"), cwd=workflow)
    assert done.returncode == 2 and "no run records here" in done.stderr
    assert kb("errors", cwd=workflow).returncode == 2  # nothing has run in this copy
    outside = kb("status", cwd=tmp_path)
    assert outside.returncode == 2 and "not inside a kotlin-bench workflow" in outside.stderr
    assert kb("--root", str(tmp_path / "nope"), "status", cwd=tmp_path).returncode == 2
    unknown = kb("status", "examples_calc-5", cwd=workflow)
    assert unknown.returncode == 2 and "(closest: `examples_calc-4`, `examples_calc-6`" in unknown.stderr
    assert kb("compare", "oracle", "nop", cwd=workflow).returncode == 2  # no summary yet


def test_errors_are_one_line_naming_the_file(
    workflow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: `status --config nope.yaml` showed the 106-task dataset (rc 0), `regrade --configfile
    nope.yaml` a Snakemake traceback, a YAML tab no line, `compare --summary nope.csv` `[Errno 2]`."""
    monkeypatch.chdir(workflow)
    tab = workflow / "tab.yaml"
    tab.write_text("spec: examples/dataset.json\nagents:\n\t- name: x\n")
    cases = {
        ("status", "--config", "nope.yaml"): "kotlin-bench: error: nope.yaml: no such file",
        ("regrade", "--configfile", "nope.yaml"): "kotlin-bench: error: nope.yaml: no such file",
        ("status", "--config", "tab.yaml"): "kotlin-bench: error: tab.yaml: line 3, column 1: a tab in the "
        "indentation; YAML indents with spaces only",
        ("compare", "a", "b", "--summary", "nope.csv"): "kotlin-bench: error: nope.csv: no such file; the "
        "summary of a run is results/summary.csv (written by `snakemake`)",
    }
    for argv, line in cases.items():
        assert main(list(argv)) == 2, argv
        captured = capsys.readouterr()
        assert captured.err.splitlines() == [line] and captured.out == "", (argv, captured)


def test_help_lists_every_command_by_group() -> None:
    """Issue 31: `--help` described the tool as dataset commands only."""
    from kotlin_bench.tools.cli import DEPRECATED, build_parser

    parser = build_parser()
    text = parser.format_help()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    listed = [
        line.split(None, 1) for line in text.split("commands:\n", 1)[1].splitlines() if line.startswith("  ")
    ]
    grouped = [c.strip() for _, names in listed for c in names.split(",")]
    assert [group for group, _ in listed] == ["dataset", "results", "engine", "agents"]
    assert sorted(grouped) == sorted(c for c in commands if c not in DEPRECATED)
    assert "snakemake --cores N" in text


def test_status_shows_the_runs_per_agent_with_a_legend(
    workflow: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 31: `status` showed `verified unknown` for every task after oracle resolved them all, and
    nothing of the runs. It shows each configured agent's runs (done, to do, errors) and a legend."""
    from kotlin_bench.core.record import RunResult
    from tests.conftest import EXAMPLES
    from tests.factories import make_result, write_results

    monkeypatch.chdir(workflow)
    tasks = sorted(EXAMPLES)
    results: list[RunResult] = [make_result(t, "oracle") for t in tasks]
    results.append(make_result(tasks[0], "nop", status="error", reason="infrastructure"))
    written = write_results(workflow, results)
    try:
        assert main(["status"]) == 0
    finally:
        for path in written:
            path.unlink()
    text = capsys.readouterr().out
    assert "verified" not in text and "none" in text
    runs = {
        line.split()[0]: line.split()[1:]
        for line in text.splitlines()
        if line.startswith(("oracle ", "nop "))
    }
    n = len(tasks)
    assert runs == {
        "oracle": [f"{n}/{n}", str(n), "0", "0", "0"],
        "nop": [f"1/{n}", "0", "0", "1", str(n - 1)],
    }
    assert text.count("legend: ") == 2 and "to do: runs the next `snakemake` does" in text


def test_compare_names_the_closest_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kotlin_bench.results.summary import summarize, write_table
    from tests.factories import mixed_results, write_results

    write_table(summarize(write_results(tmp_path, mixed_results())), tmp_path / "summary.csv")
    assert main(["compare", "oracle", "agnet", "--summary", str(tmp_path / "summary.csv")]) == 2
    assert "no runs of agent 'agnet' (did you mean `agent`?)" in capsys.readouterr().err
    assert main(["compare", "oracle", "agent", "--summary", str(tmp_path / "summary.csv")]) == 0
    out = capsys.readouterr().out
    assert "oracle vs agent, attempt 1: 4 tasks both ran" in out
    assert "discordant: 3 (3 only oracle, 0 only agent)" in out and "p = 0.25 (exact McNemar)" in out
