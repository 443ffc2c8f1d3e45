"""Shared fixtures: a minimal valid task directory, and the real Docker engine when present."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from kotlin_bench.tools.workspace import Workspace, copy_checkout

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KOTLIN_BENCH_SHARED", REPO.parent / "shared"))

TASK_TOML = """\
version = "1.0"

[metadata]
author_name = "kotlin-bench"

[metadata.source]
repository_owner = "acme"
repository_name = "widgets"
repository_url = "https://example.invalid/acme/widgets"
license = "MIT"
code_change_type = "pull_request"
code_change_id = 7
code_change_url = "https://example.invalid/acme/widgets/pull/7"
issue_url = "https://example.invalid/acme/widgets/issues/6"

[metadata.kotlin_bench]
base_commit = "0123456789abcdef0123456789abcdef01234567"
base_image = "kotlin-bench/acme_widgets:base"
repo_dir = "/home/widgets"
test_command = "ktest ."

[verifier]
timeout_sec = 60.0
network_mode = "public"

[agent]
timeout_sec = 60.0
network_mode = "allowlist"
allowed_hosts = ["repo1.maven.org"]

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 512
network_mode = "public"
"""

EXPECTED = {
    "f2p_tests": ["a.B.c()"],
    "p2p_tests": [],
    "s2p_tests": [],
    "n2p_tests": [],
    "test_patch_result": {"passed_tests": [], "failed_tests": ["a.B.c()"], "skipped_tests": []},
    "run_result": {"passed_tests": [], "failed_tests": [], "skipped_tests": []},
}


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """Write a minimal valid task directory; `toml` replaces task.toml, `skip` omits files."""

    def make(name: str = "acme_widgets-7", toml: str = TASK_TOML, skip: tuple[str, ...] = ()) -> Path:
        root = tmp_path / "tasks" / name
        files = {
            "task.toml": toml,
            "instruction.md": "# Implement the issue(s) in acme/widgets:\n",
            "environment/Dockerfile": "FROM kotlin-bench/acme_widgets:base\n",
            "solution/solve.sh": "#!/bin/bash\n",
            "tests/test.sh": "#!/bin/bash\n",
            "tests/expected_tests.json": json.dumps(EXPECTED),
        }
        for rel, text in files.items():
            if rel in skip:
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        return root

    return make


def copy_repo(dest: Path) -> Path:
    """A copy of the repository (tracked and new files, nothing ignored: no results, nothing materialized)."""
    return copy_checkout(REPO, dest)


def snakemake(
    workdir: Path, *args: str, timeout: int = 1800, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the workflow in `workdir` as a user would (the workflow profile applies)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=environ)


def docker_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Integration tests use the real engine; CI starts it (scripts/setup_docker.sh), so absence fails."""
    if not docker_available():
        if os.environ.get("CI"):
            pytest.fail("no Docker engine: CI must start one (scripts/setup_docker.sh)")
        pytest.skip("no Docker engine (run scripts/setup_docker.sh)")


@pytest.fixture(scope="session")
def finished_examples(tmp_path_factory: pytest.TempPathFactory, docker_engine: None) -> Workspace:
    """A copy of the repository in which the default workflow ran to the end once (the example dataset,
    oracle and nop): tests that start from a finished run take a `clone` of it instead of running it again."""
    ws = Workspace.create(tmp_path_factory.mktemp("finished-examples"), REPO)
    out = ws.snakemake(timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    return ws


REGISTRY = os.environ.get("KOTLIN_BENCH_REGISTRY", "127.0.0.1:5000")


def _service_missing(what: str, setup: str) -> None:
    """Skip where a service is absent; under CI, .ci/run was to set it up, so its absence fails."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must set it up ({setup}, called by .ci/run)")
    pytest.skip(f"{what} (run {setup})")


@pytest.fixture(scope="session")
def registry_service(docker_engine: None) -> str:
    """A container registry on loopback (`KOTLIN_BENCH_REGISTRY`, default 127.0.0.1:5000): its host:port."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=5) as answer:
            ok = answer.status == 200
    except OSError:
        ok = False
    if not ok:
        _service_missing(f"no container registry answers on {REGISTRY}", "scripts/setup_registry.sh")
    return REGISTRY


@pytest.fixture(scope="session")
def slurm_cluster(docker_engine: None) -> None:
    """A Slurm cluster whose accounting answers (the executor's status source), and the executor plugin."""
    try:
        idle = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
        accounting = subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, timeout=20)
        ready = idle.returncode == 0 and idle.stdout.strip() != "" and accounting.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ready = False
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        ready = False
    if not ready:
        _service_missing(
            "no Slurm cluster with accounting and snakemake-executor-plugin-slurm", "scripts/setup_slurm.sh"
        )
