"""Each checkout runs its own code: two clones at different commits on one machine (where
`scripts/setup.sh` installed one checkout's package, editable) each run their own package, in the rules,
in the rule scripts and in the `kotlin-bench` command, and say so in their job logs and records; a
checkout that cannot run its own package refuses with a message saying why."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.checkout import CODE_PATHS, foreign_package, running_code, running_package
from tests.conftest import REPO, copy_repo, snakemake

TASK = "examples_calc-4"
OTHER_VERSION = "9.9.9"


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=kb", "-c", "user.email=kb@example.invalid", "-C", str(root), *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def clone(dest: Path) -> Path:
    root = copy_repo(dest)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a checkout")
    return root


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two checkouts; the second one commit later, where the package says another version."""
    base = tmp_path_factory.mktemp("clones")
    first, second = clone(base / "first"), clone(base / "second")
    init = second / "src/kotlin_bench/__init__.py"
    init.write_text(init.read_text().replace(f'"{HARNESS_VERSION}"', f'"{OTHER_VERSION}"'))
    git(second, "commit", "-q", "-am", "another version")
    return first, second


def header(root: Path) -> str:
    """The first line of the materialize job's log: the code the job ran."""
    return (root / names.log("materialize", TASK)).read_text(encoding="utf-8").splitlines()[0]


def test_each_clone_runs_its_own_package_in_the_rules_and_their_scripts(clones: tuple[Path, Path]) -> None:
    """Another checkout's package first on PYTHONPATH (as a second editable install would put it) makes no
    difference: the workflow runs its own, and its job log names the commit and the package."""
    first, second = clones
    for root, version, other in ((first, HARNESS_VERSION, second), (second, OTHER_VERSION, first)):
        env = {"PYTHONPATH": str(other / "src")}
        done = snakemake(root, names.stamp("examples/tasks", TASK), env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        assert (
            header(root)
            == f"kotlin-bench {version} ({git(root, 'rev-parse', 'HEAD')}), {root / 'src/kotlin_bench'}"
        )


def test_the_command_runs_the_package_of_the_checkout_it_works_in(clones: tuple[Path, Path]) -> None:
    """`python -m kotlin_bench` (what the `kotlin-bench` command runs) of the package under test, started
    inside a checkout or with --root: the checkout's package answers."""
    first, second = clones
    installed = {**os.environ, "PYTHONPATH": str(REPO / "src")}  # the package under test, as if installed
    for root, version in ((first, HARNESS_VERSION), (second, OTHER_VERSION)):
        for where, extra in ((root / "examples", []), (first.parent, ["--root", str(root)])):
            done = subprocess.run(
                [sys.executable, "-m", "kotlin_bench", *extra, "--version"],
                cwd=where,
                capture_output=True,
                text=True,
                timeout=120,
                env=installed,
            )
            assert done.stdout.startswith(f"kotlin-bench {version} ("), (
                where,
                extra,
                done.stdout,
                done.stderr,
            )


def test_a_checkout_that_cannot_run_its_own_package_refuses(tmp_path: Path) -> None:
    """A checkout without the package, and one whose dependencies this Python lacks: a one-line message
    saying why and what to do, before any job."""
    bare = clone(tmp_path / "bare")
    git(bare, "rm", "-rq", "src/kotlin_bench")
    installed = {"PYTHONPATH": str(REPO / "src")}  # the package under test, as if installed
    done = snakemake(bare, "-n", timeout=300, env=installed)
    assert done.returncode == 1 and f"{bare} has no src/kotlin_bench/" in done.stderr, done.stderr[-2000:]

    needy = clone(tmp_path / "needy")
    pyproject = needy / "pyproject.toml"
    pyproject.write_text(
        re.sub(
            r"dependencies = \[\n",
            'dependencies = [\n    "kotlin-bench-absent-dependency>=1",\n',
            pyproject.read_text(),
        )
    )
    done = snakemake(needy, "-n", timeout=300)
    assert done.returncode == 1, done.stderr[-2000:]
    assert (
        "kotlin-bench-absent-dependency (not installed)" in done.stderr and "scripts/setup.sh" in done.stderr
    )


def test_records_say_which_code_made_them() -> None:
    """The commit of the running package, `+dirty` while its code differs from it (None outside git)."""
    root = running_package().parents[1]
    if not (root / ".git").exists():
        assert running_code() is None
        return
    head = git(root, "rev-parse", "HEAD")
    dirty = git(root, "status", "--porcelain", "--", *CODE_PATHS)
    assert running_code() == (f"{head}+dirty" if dirty else head)
    assert foreign_package(root) is None  # the tests, too, run this checkout's package
