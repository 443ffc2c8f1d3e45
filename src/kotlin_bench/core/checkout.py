"""Which code a workflow runs: the package of its own checkout, and the commit it records.

`scripts/setup.sh` installs the package editable from whichever clone ran it, so a second clone (one per
dataset, as the README suggests) would otherwise import the first clone's package. Instead:

- `rules/common.smk` puts `<checkout>/src` first on `sys.path` and on `PYTHONPATH` (for the rule scripts'
  interpreters) and refuses, with `foreign_package`'s message, when the package still comes from elsewhere;
- the `kotlin-bench` command started in (or with `--root`) another checkout runs again with that
  checkout's package (`checkout_command`);
- records and job logs say which code made them (`running_code`: the commit, `+dirty` when the code
  differs from it).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import kotlin_bench

PACKAGE = "kotlin_bench"
SRC = "src"
SWITCHED = "KOTLIN_BENCH_CHECKOUT"  # set when the command runs again with a checkout's package
CODE_PATHS = ("Snakefile", "rules", "workflow", SRC)  # what "the code" is, for `+dirty`


def running_package() -> Path:
    """The directory of the kotlin_bench package this process imported."""
    return Path(kotlin_bench.__file__).resolve().parent


def checkout_package(root: Path) -> Path:
    """The package directory of the checkout at `root`."""
    return (root / SRC / PACKAGE).resolve()


def foreign_package(root: Path) -> str | None:
    """Why this process does not run the package of the checkout at `root`, or None when it does."""
    own, running = checkout_package(root), running_package()
    if running == own:
        return None
    if not (own / "__init__.py").is_file():
        return f"{root} has no {SRC}/{PACKAGE}/ (is it a kotlin-bench checkout?)"
    return (
        f"the kotlin_bench package imported is {running}, not this checkout's {own}; "
        f"something put it first on the import path (PYTHONPATH={os.environ.get('PYTHONPATH', '')!r})"
    )


def checkout_command(root: Path, argv: list[str], python: str) -> tuple[list[str], dict[str, str]] | None:
    """The command line (and environment) that runs `argv` with the package of the checkout at `root`,
    or None when this process already does (or the checkout has no package, or it was tried once)."""
    if os.environ.get(SWITCHED) or foreign_package(root) is None:
        return None
    if not (checkout_package(root) / "__init__.py").is_file():
        return None
    env = dict(os.environ)
    paths = [str((root / SRC).resolve()), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"], env[SWITCHED] = os.pathsep.join(paths), str(root)
    return [python, "-m", PACKAGE, *argv], env


@functools.cache
def running_code() -> str | None:
    """The commit of the checkout whose package is running, `<sha>+dirty` when its code (Snakefile,
    rules/, workflow/, src/) differs from that commit; None outside a git checkout."""
    root = running_package().parents[1]
    if not (root / ".git").exists():
        return None
    try:
        head = _git(root, "rev-parse", "HEAD")
        changed = _git(root, "status", "--porcelain", "--", *CODE_PATHS)
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}+dirty" if changed else head


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()


def own_package_or_exit(root: Path) -> None:
    """For rules/common.smk (which put `<root>/src` first on `sys.path`): the rule scripts' interpreters
    get it first on PYTHONPATH; a package from elsewhere, or missing dependencies, end the workflow with
    a one-line message (exit status 1)."""
    src = str((root / SRC).resolve())
    os.environ["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [os.environ.get("PYTHONPATH")])])
    problem = foreign_package(root)
    if problem is None:
        problem = missing_dependency(root)
    if problem is not None:
        print(f"kotlin-bench: error: {problem}", file=sys.stderr)
        raise SystemExit(1)


def missing_dependency(root: Path) -> str | None:
    """Which of the dependencies in the checkout's pyproject.toml this interpreter lacks (or has in a
    version outside the range), with what to run; None when all are there."""
    import importlib.metadata
    import tomllib

    from packaging.requirements import Requirement

    try:
        declared = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"][
            "dependencies"
        ]
    except (OSError, ValueError, KeyError):
        return None  # not a checkout with a pyproject.toml: nothing to compare with
    wrong = []
    for line in declared:
        requirement = Requirement(line)
        try:
            found = importlib.metadata.version(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            wrong.append(f"{requirement.name} (not installed)")
            continue
        if not requirement.specifier.contains(found, prereleases=True):
            wrong.append(f"{requirement.name} {found} (needs {requirement.specifier})")
    if not wrong:
        return None
    return (
        f"{sys.executable} lacks what {root / 'pyproject.toml'} needs: {', '.join(wrong)}; "
        f"run scripts/setup.sh in {root}"
    )
