"""The task model: load and validate one Harbor task directory.

A task directory holds `task.toml`, `instruction.md`, `environment/Dockerfile`, `solution/solve.sh`,
`tests/test.sh` and `tests/expected_tests.json` (see docs/design.md). `load_task` reads it into a
`Task`; anything missing or malformed raises `TaskError` naming the file, the field and what was expected.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.names import image_parts
from kotlin_bench.dataset.dates import day_of
from kotlin_bench.scoring.expected import ExpectedError, read_expected

NETWORK_MODES = ("public", "no-network", "allowlist")
REQUIRED_FILES = (
    "instruction.md",
    "environment/Dockerfile",
    names.SOLVE_SCRIPT,
    "tests/test.sh",
    names.EXPECTED_TESTS,
)
_SHA_RE = re.compile(r"^[0-9a-f]{40}$")


class TaskError(ValueError):
    """A task directory is invalid; the message names the file, the field and the expectation."""

    def __init__(self, path: Path, field: str | None, expected: str) -> None:
        where = f"{path}: {field}" if field else str(path)
        super().__init__(f"{where}: {expected}")
        self.path = path
        self.field = field
        self.expected = expected


@dataclass(frozen=True)
class Source:
    owner: str
    name: str
    url: str
    license: str
    change_id: int
    change_url: str
    issue_url: str


@dataclass(frozen=True)
class Phase:
    timeout_sec: float
    network_mode: str
    allowed_hosts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Environment:
    build_timeout_sec: float
    cpus: float
    memory_mb: int
    network_mode: str


@dataclass(frozen=True)
class Task:
    id: str
    path: Path
    source: Source
    base_commit: str
    base_image: str
    repo_dir: str
    test_command: str
    verifier: Phase
    agent: Phase
    environment: Environment
    strip_test_name_suffixes: tuple[str, ...] = ()  # the scorer's --strip-name-suffix options
    warmup_patch: str | None = None  # a materialized file the image build needs (environment/warmup.patch)
    merged_at: str | None = None  # when the fix was merged (UTC); None: never merged, or not known
    never_merged: bool = False  # the specification says the pull request was never merged (`merged = false`)

    @property
    def scorer_args(self) -> list[str]:
        """Options of the task's junit_compare.py (the same test.sh passes from tests/task.env)."""
        return [arg for suffix in self.strip_test_name_suffixes for arg in ("--strip-name-suffix", suffix)]

    @property
    def repository(self) -> str:
        """`<owner>/<name>` of the upstream repository."""
        return f"{self.source.owner}/{self.source.name}"

    @property
    def repo_key(self) -> str:
        return image_parts(self.base_image)[0]

    @property
    def image(self) -> str:
        """The task image: derived from the base image's repository and the pull request number."""
        return names.task_image(self.repo_key, self.source.change_id)

    @property
    def has_expected_tests(self) -> bool:
        """Whether the task can be scored: its expected lists were materialized (not the placeholder that
        materialization writes, beside its marker, when there are none)."""
        missing = (self.path / names.MISSING_EXPECTED_MARKER).exists()
        return not missing and (self.path / names.EXPECTED_TESTS).is_file()


class _Table:
    """A TOML table with typed getters whose errors name the file and the dotted field."""

    def __init__(self, path: Path, prefix: str, data: Any) -> None:
        if not isinstance(data, dict):
            raise TaskError(path, prefix, "expected a table")
        self.path, self.prefix, self.data = path, prefix, data

    def _name(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def table(self, key: str) -> _Table:
        if key not in self.data:
            raise TaskError(self.path, self._name(key), "missing table")
        return _Table(self.path, self._name(key), self.data[key])

    def str(self, key: str, pattern: re.Pattern[str] | None = None) -> str:
        value = self.data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise TaskError(self.path, self._name(key), f"expected a non-empty string, got {value!r}")
        if pattern and not pattern.match(value):
            raise TaskError(self.path, self._name(key), f"expected to match {pattern.pattern}, got {value!r}")
        return value

    def int(self, key: str) -> int:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise TaskError(self.path, self._name(key), f"expected a positive integer, got {value!r}")
        return value

    def number(self, key: str) -> float:
        value = self.data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise TaskError(self.path, self._name(key), f"expected a positive number, got {value!r}")
        return float(value)

    def mode(self, key: str = "network_mode") -> str:
        value = self.data.get(key, "public")
        if value not in NETWORK_MODES:
            raise TaskError(self.path, self._name(key), f"expected one of {NETWORK_MODES}, got {value!r}")
        return value

    def str_list(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise TaskError(
                self.path, self._name(key), f"expected a list of non-empty strings, got {value!r}"
            )
        return tuple(value)


def _phase(table: _Table) -> Phase:
    mode = table.mode()
    hosts = table.str_list("allowed_hosts")
    if hosts and mode != "allowlist":
        raise TaskError(
            table.path, f"{table.prefix}.allowed_hosts", "only valid with network_mode = 'allowlist'"
        )
    return Phase(timeout_sec=table.number("timeout_sec"), network_mode=mode, allowed_hosts=hosts)


def _read_toml(path: Path) -> _Table:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskError(path, None, "missing file (every task needs task.toml)") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskError(path, None, f"not valid TOML: {exc}") from None
    return _Table(path, "", data)


def _source(root: _Table) -> Source:
    src = root.table("metadata").table("source")
    return Source(
        owner=src.str("repository_owner"),
        name=src.str("repository_name"),
        url=src.str("repository_url"),
        license=src.str("license"),
        change_id=src.int("code_change_id"),
        change_url=src.str("code_change_url"),
        issue_url=src.str("issue_url"),
    )


def load_task(path: Path, *, require_materialized: bool = True) -> Task:
    """Read and validate the task directory at `path`.

    With `require_materialized`, the upstream-authored files (instruction, expected tests) must be present
    and valid; without it only the committed part of the directory is checked.
    """
    path = Path(path)
    if not path.is_dir():
        raise TaskError(path, None, "expected a task directory")
    toml_path = path / "task.toml"
    root = _read_toml(toml_path)
    kb = root.table("metadata").table("kotlin_bench")
    base_image = kb.str("base_image")
    try:
        image_parts(base_image)
    except ValueError as exc:
        raise TaskError(toml_path, "metadata.kotlin_bench.base_image", str(exc)) from None
    env = root.table("environment")
    task = Task(
        id=path.name,
        path=path,
        source=_source(root),
        base_commit=kb.str("base_commit", _SHA_RE),
        base_image=base_image,
        repo_dir=kb.str("repo_dir", re.compile(r"^/")),
        test_command=kb.str("test_command"),
        verifier=_phase(root.table("verifier")),
        agent=_phase(root.table("agent")),
        environment=Environment(
            build_timeout_sec=env.number("build_timeout_sec"),
            cpus=env.number("cpus"),
            memory_mb=env.int("memory_mb"),
            network_mode=env.mode(),
        ),
        strip_test_name_suffixes=kb.str_list("strip_test_name_suffixes"),
        warmup_patch=kb.data.get("warmup_patch"),
        merged_at=_merged_at(kb),
        never_merged=kb.data.get("merged") is False,
    )
    _check_files(task, require_materialized)
    return task


def _merged_at(kb: _Table) -> str | None:
    if "merged_at" not in kb.data:
        return None
    value = kb.str("merged_at")
    try:
        day_of(value)
    except ValueError as exc:
        raise TaskError(kb.path, "metadata.kotlin_bench.merged_at", str(exc)) from None
    return value


def _check_files(task: Task, require_materialized: bool) -> None:
    for rel in REQUIRED_FILES:
        upstream_authored = rel in ("instruction.md", names.EXPECTED_TESTS)
        if upstream_authored and not require_materialized:
            continue
        if rel == names.EXPECTED_TESTS and (task.path / names.MISSING_EXPECTED_MARKER).exists():
            raise TaskError(
                task.path / rel,
                None,
                "this task has no expected test lists (materialized from upstream, which cannot produce "
                "them); supply them with materialize's expected_tests_dir or use the published source",
            )
        if not (task.path / rel).is_file():
            raise TaskError(task.path / rel, None, "missing file")
    if require_materialized:
        load_expected(task.path / names.EXPECTED_TESTS)


def load_expected(path: Path) -> dict[str, Any]:
    """Read an expected_tests.json and check it as the verifier does (`kotlin_bench.scoring.expected`)."""
    try:
        return read_expected(path)[0]
    except ExpectedError as exc:
        raise TaskError(path, None, str(exc).removeprefix(f"{path}: ")) from None


def discover(tasks_dir: Path) -> list[Path]:
    """Task directories under `tasks_dir` (those holding a task.toml), sorted by id."""
    return sorted(p.parent for p in Path(tasks_dir).glob("*/task.toml"))
