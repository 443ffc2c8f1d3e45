"""The dataset specification: its model, its reading and checking, and edits of one task entry.

A dataset specification is one JSON file (``dataset/kotlin-bench.json`` for the 106 tasks,
``examples/dataset.json`` for the examples), validated by ``src/kotlin_bench/dataset/schemas/dataset.schema.json``::

    {
      "name": "kotlin-bench",
      "defaults": {"verifier_timeout_sec": 900.0, "agent_timeout_sec": 1800.0, "build_timeout_sec": 1800.0,
                   "cpus": 4, "memory_mb": 10240, "agent_allowed_hosts": ["repo1.maven.org", "..."],
                   "agent_network_mode": "allowlist"},
      "repositories": {
        "pinterest/ktlint": {"license": "MIT", "url": "https://github.com/pinterest/ktlint",
                             "clone_url": "https://github.com/pinterest/ktlint.git", "repo_dir": "/home/ktlint",
                             "test_paths": ["**/src/test/**", "ktlint-test/**"],
                             "artifacts": {"published_to": ["Maven Central"],
                                           "coordinates": ["com.pinterest.ktlint", "com.pinterest:ktlint"]}}
      },
      "bases": [{"repo_key": "pinterest_ktlint", "tag": "base", "repository": "pinterest/ktlint", "jdk": 21,
                 "jdk_image": "eclipse-temurin:21-jdk", "android_sdk_packages": ["platform-tools"],
                 "extra_apt_packages": []}],
      "tasks": [
        {"id": "pinterest_ktlint-1234", "repository": "pinterest/ktlint", "pr": 1234, "issues": [1200],
         "base_commit": "<40 hex>", "base_version": "1.0.1-SNAPSHOT", "fix_release": "1.0.1",
         "base_image": "kotlin-bench/pinterest_ktlint:base",
         "test_command": "./gradlew clean test --continue",
         "flaky_test_excludes": [], "flaky_init_script_kind": null,
         "expected_counts": {"f2p": 1, "p2p": 10, "s2p": 0, "n2p": 0},
         "published_sha256": {"fix.patch": "<64 hex>", "test.patch": "...", "instruction.md": "...",
                              "expected_tests.json": "..."},
         "fix_files": ["..."], "test_files": ["..."]}
      ]
    }

Fields:

- ``defaults``: the run limits of every task. ``agent_network_mode`` is optional (default ``allowlist``).
  A task may override any of these keys by giving it at its top level.
- ``repositories``: keyed ``<owner>/<name>``. ``repo_dir`` is where the clone lives in the images (the
  tasks and bases of a repository share it). ``test_paths`` are globs over repository-relative paths that
  decide which files a pull request's diff puts in ``test.patch`` (the rest go to ``fix.patch``;
  their syntax: ``kotlin_bench.dataset.globs``).
  ``artifacts`` and ``github`` (optional): where the project publishes and every name it goes by
  (coordinates, former coordinates, plugin ids, Marketplace ids, carriers; GitHub id and former names),
  each fact with its source (``kotlin_bench.dataset.artifacts``).
- ``bases``: the base image variants ``kotlin-bench/<repo_key>:<tag>``; their recipes
  ``bases/<repo_key>/Dockerfile.<tag>`` are rendered from ``src/kotlin_bench/dataset/templates/base.Dockerfile``. A base
  may instead name a hand-written ``recipe`` (a Dockerfile path relative to the repository root, or
  ``debootstrap:<suite>``); it is then listed in the manifest as is, and ``repository``, ``jdk``,
  ``jdk_image`` and the package lists become optional.
- ``tasks``: ``base_image`` must name one of ``bases``. ``flaky_init_script_kind`` (``groovy``/``kts``)
  is set exactly when ``flaky_test_excludes`` is non-empty, and then ``test_command`` must pass
  ``--init-script /home/exclude-flaky-tests.gradle[.kts]``. ``expected_counts``, ``published_sha256``,
  ``fix_files`` and ``test_files`` may be null (unknown); ``fix_files`` and ``test_files`` are null together.
  ``validation`` (optional; ``pending``, ``valid`` or ``invalid``) is set by ``kotlin-bench add-task``:
  a task it added is ``valid`` only once its three-phase validation passed (``kotlin_bench.validation.derive``);
  a task without the field was curated elsewhere (the published 106).
  ``base_version`` (optional): the project version the build declares at ``base_commit`` (null: no
  release precedes the base); ``fix_release`` (optional): the version of the first release that contains
  the fix (null: none); ``fix_also_released_in`` and ``base_build`` (optional): the fix's releases on other
  lines, and what the base's own build resolves of its project (``kotlin_bench.dataset.artifacts``).
  All are facts read from the upstream repository (docs/dataset.md).
  ``merged_at``, ``issue_opened_at`` (optional): the task's dates, each with its source
  (``kotlin_bench.dataset.dates``); their values in task.toml's ``[metadata.kotlin_bench]``.

Derived, not stored: ``pr_url`` = ``<url>/pull/<pr>``; ``issue_url`` = ``<url>/issues/<issues[0]>``, or
the pull request URL when ``issues`` is empty, unless the task stores an ``issue_url`` override; the task
image ``kotlin-bench/<repo_key>:pr-<pr>``.

The generation of task directories and base recipes from a specification is `kotlin_bench.dataset.generate`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.names import image_parts
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.core.suggest import did_you_mean
from kotlin_bench.dataset import artifacts as stated
from kotlin_bench.dataset.dates import DATE_KEYS, Dated, date_problems

SCHEMA_PATH = names.DATASET_SCHEMA

LIMIT_KEYS = (
    "verifier_timeout_sec",
    "agent_timeout_sec",
    "build_timeout_sec",
    "cpus",
    "memory_mb",
    "agent_network_mode",
    "agent_allowed_hosts",
)
PUBLISHED_FILES = ("fix.patch", "test.patch", "instruction.md", "expected_tests.json")
INIT_SCRIPTS = {"groovy": "exclude-flaky-tests.gradle", "kts": "exclude-flaky-tests.gradle.kts"}
WARMUP_PATCH_NAME = names.WARMUP_PATCH.rsplit("/", 1)[-1]


class ValidationMark(StrEnum):
    """A task's `validation` field: where `kotlin-bench add-task` left it."""

    PENDING = "pending"
    VALID = "valid"
    INVALID = "invalid"


class SpecError(ValueError):
    """A dataset specification is invalid; the message names the file, the place and the problem."""


# --------------------------------------------------------------------------------------------------
# The records


@dataclass(frozen=True)
class Limits:
    verifier_timeout_sec: float
    agent_timeout_sec: float
    build_timeout_sec: float
    cpus: int | float
    memory_mb: int
    agent_allowed_hosts: tuple[str, ...]
    agent_network_mode: str = "allowlist"


class OnFailure(StrEnum):
    """What a failing warm-up step does to the image build."""

    ABORT = "abort"
    IGNORE = "ignore"


class AfterWarmup(StrEnum):
    """What preparing a task image does to the tree after the warm-up (the published task's choice)."""

    KEEP = "keep"  # the tree as the warm-up left it: build outputs, test results, changed files
    RESET = "reset"  # tracked files reset to the base commit, untracked files that are not ignored removed


@dataclass(frozen=True)
class Apply:
    """A warm-up step that applies a patch shipped in the task's environment/ (reverted afterwards)."""

    file: str


@dataclass(frozen=True)
class Warmup:
    """How a task image warms the build cache: commands and patch applications, in order."""

    steps: tuple[str | Apply, ...]
    on_failure: OnFailure
    after: AfterWarmup = AfterWarmup.KEEP

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Warmup:
        steps = tuple(Apply(s["apply"]) if isinstance(s, Mapping) else str(s) for s in raw["steps"])
        return cls(steps, OnFailure(raw["on_failure"]), AfterWarmup(raw.get("after", AfterWarmup.KEEP)))

    @property
    def patches(self) -> tuple[str, ...]:
        return tuple(s.file for s in self.steps if isinstance(s, Apply))


@dataclass(frozen=True)
class WarmupPatch:
    """A patch a warm-up applies: the published file, or the listed paths of the task's test patch."""

    published_file: str
    test_patch_paths: tuple[str, ...]


@dataclass(frozen=True)
class Conventions:
    """What every task and base shares: ENV of every base, git settings made while preparing a task."""

    base_env: Mapping[str, str] = field(default_factory=dict)
    git_config: Mapping[str, str] = field(default_factory=dict)
    git_info_exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class IntendedDifference:
    """A difference from the published benchmark that is deliberate (`kotlin-bench fidelity`)."""

    key: str
    reason: str
    tasks: tuple[str, ...] = ()  # empty: every task

    def covers(self, key: str, task_id: str | None) -> bool:
        return key == self.key and (not self.tasks or task_id is None or task_id in self.tasks)


@dataclass(frozen=True)
class Repository:
    name: str  # "<owner>/<repo>"
    license: str
    url: str
    clone_url: str
    repo_dir: str
    test_paths: tuple[str, ...]
    test_env: Mapping[str, str] = field(default_factory=dict)  # exported for the test command and warm-up
    warmup: Warmup | None = None  # None: run the task's test command, failures ignored
    artifacts: stated.Artifacts | None = None  # None: not stated
    github: stated.GithubNames | None = None  # None: not stated (or not on GitHub)

    @property
    def owner(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def repo(self) -> str:
        return self.name.split("/", 1)[1]


@dataclass(frozen=True)
class Base:
    repo_key: str
    tag: str
    repository: Repository | None
    jdk: int | None
    jdk_image: str | None
    android_sdk_packages: tuple[str, ...] = ()
    # The build of Android's command-line tools (sdkmanager) installed with the SDK packages, run on the
    # image's own JDK: set exactly when there are SDK packages.
    android_cmdline_tools: str | None = None
    extra_apt_packages: tuple[str, ...] = ()
    recipe: str | None = None  # hand-written recipe; None: rendered from the template
    env: Mapping[str, str] = field(default_factory=dict)  # ENV of the image, over conventions.base_env

    @property
    def image(self) -> str:
        return names.image(self.repo_key, self.tag)

    @property
    def generated_recipe(self) -> str:
        """The recipe file name under the bases directory, for rendered recipes."""
        return f"{self.repo_key}/Dockerfile.{self.tag}"


@dataclass(frozen=True)
class TaskSpec:
    id: str
    repository: Repository
    pr: int
    issues: tuple[int, ...]
    base_commit: str
    base_image: str
    test_command: str
    flaky_test_excludes: tuple[str, ...]
    flaky_init_script_kind: str | None
    expected_counts: Mapping[str, int] | None
    published_sha256: Mapping[str, str] | None
    fix_files: tuple[str, ...] | None
    test_files: tuple[str, ...] | None
    limits: Limits
    issue_url_override: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)  # limit keys the task sets itself
    shallow: bool = False  # the task image keeps only the base commit (no ancestors)
    warmup_override: Warmup | None = None
    warmup_patch: WarmupPatch | None = None
    strip_name_suffixes: tuple[str, ...] = ()  # test-name suffixes the scorer removes ([desktop], [jvm])
    validation: ValidationMark | None = None  # None: not added by `kotlin-bench add-task`
    base_version: str | None = None  # the version the build declares at base_commit
    fix_release: str | None = None  # the first release that contains the fix
    fix_also_released_in: tuple[stated.Release, ...] = ()  # releases of other lines that contain the fix
    base_build: tuple[stated.Need, ...] = ()  # what the base's own build resolves of its project
    merged: Dated | None = None  # when the pull request was merged (value None: never); None: not known
    issue_opened: Dated | None = None  # when its (first) issue was opened; None: not known

    @property
    def merged_at(self) -> str | None:
        return self.merged.value if self.merged else None

    @property
    def issue_opened_at(self) -> str | None:
        return self.issue_opened.value if self.issue_opened else None

    @property
    def fix_releases(self) -> tuple[str, ...]:
        """Every release the fix shipped in: the first, then the other lines'."""
        first = (self.fix_release,) if self.fix_release else ()
        return first + tuple(r.version for r in self.fix_also_released_in)

    def retrieval_facts(self) -> Facts:
        """What the egress record's retrieval rule knows of the task (`kotlin_bench.core.retrieval`)."""
        repository = self.repository
        return stated.task_facts(
            artifacts=repository.artifacts,
            github=repository.github,
            upstream=repository.url,
            base_version=self.base_version,
            fix_releases=self.fix_releases,
            base_build=self.base_build,
        )

    @property
    def warmup(self) -> Warmup:
        """The task's warm-up: its own, its repository's, or its test command with failures ignored."""
        return (
            self.warmup_override or self.repository.warmup or Warmup((self.test_command,), OnFailure.IGNORE)
        )

    @property
    def test_env(self) -> Mapping[str, str]:
        return self.repository.test_env

    @property
    def owner(self) -> str:
        return self.repository.owner

    @property
    def repo(self) -> str:
        return self.repository.repo

    @property
    def license(self) -> str:
        return self.repository.license

    @property
    def repo_dir(self) -> str:
        return self.repository.repo_dir

    @property
    def pr_url(self) -> str:
        return f"{self.repository.url}/pull/{self.pr}"

    @property
    def issue_url(self) -> str:
        if self.issue_url_override:
            return self.issue_url_override
        if self.issues:
            return f"{self.repository.url}/issues/{self.issues[0]}"
        return self.pr_url

    @property
    def repo_key(self) -> str:
        return image_parts(self.base_image)[0]

    @property
    def image(self) -> str:
        """The task image, derived: the base image's repository key and the pull request number."""
        return names.task_image(self.repo_key, self.pr)

    @property
    def init_script(self) -> str | None:
        """The file name of the flaky-test init script, if the task has one."""
        return INIT_SCRIPTS[self.flaky_init_script_kind] if self.flaky_init_script_kind else None


@dataclass(frozen=True)
class Dataset:
    name: str
    path: Path | None
    defaults: Limits
    repositories: Mapping[str, Repository]
    bases: tuple[Base, ...]
    tasks: tuple[TaskSpec, ...]
    conventions: Conventions = field(default_factory=Conventions)
    intended: tuple[IntendedDifference, ...] = ()

    def task(self, task_id: str) -> TaskSpec:
        for task in self.tasks:
            if task.id == task_id:
                return task
        known = [t.id for t in self.tasks]
        raise KeyError(f"no task {task_id!r} in the {self.name} dataset{did_you_mean(task_id, known)}")

    def base(self, image: str) -> Base:
        for base in self.bases:
            if base.image == image:
                return base
        raise KeyError(f"no base image {image!r} in the {self.name} dataset")

    def select(self, ids: Sequence[str] | None) -> list[TaskSpec]:
        """The tasks named by `ids` (all when None); an unknown id is an error."""
        if not ids:
            return list(self.tasks)
        return [self.task(i) for i in ids]


# --------------------------------------------------------------------------------------------------
# Loading


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def load_dataset(path: Path) -> Dataset:
    """Read, validate and resolve the specification at `path`."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"{path}: cannot read the dataset specification: {exc}") from None
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON: {exc}") from None
    return parse_dataset(data, path)


def validate_schema(data: Any, source: str | Path) -> None:
    """Check `data` against the JSON schema; all violations are reported, each with its JSON path."""
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        lines = [f"{source}: {_json_path(e.absolute_path)}: {e.message}" for e in errors[:20]]
        if len(errors) > 20:
            lines.append(f"... and {len(errors) - 20} more")
        raise SpecError("invalid dataset specification:\n" + "\n".join(lines))


def _json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def parse_dataset(data: Any, path: Path | None = None) -> Dataset:
    """Validate a parsed specification and resolve it into records (defaults applied, links checked)."""
    source = path or "<dataset>"
    validate_schema(data, source)
    problems: list[str] = []

    defaults = _limits(data["defaults"], {})
    artifacts = stated.read_artifacts(data["repositories"], problems)
    repositories = {
        name: Repository(
            name=name,
            license=r["license"],
            url=r["url"],
            clone_url=r["clone_url"],
            repo_dir=r["repo_dir"],
            test_paths=tuple(r["test_paths"]),
            test_env=dict(r.get("test_env") or {}),
            warmup=Warmup.parse(r["warmup"]) if "warmup" in r else None,
            artifacts=artifacts.get(name),
            github=stated.GithubNames.parse(r["github"]) if "github" in r else None,
        )
        for name, r in data["repositories"].items()
    }
    raw_conventions = data.get("conventions") or {}
    conventions = Conventions(
        base_env=dict(raw_conventions.get("base_env") or {}),
        git_config=dict(raw_conventions.get("git_config") or {}),
        git_info_exclude=tuple(raw_conventions.get("git_info_exclude") or ()),
    )
    intended = tuple(
        IntendedDifference(i["key"], i["reason"], tuple(i.get("tasks") or ()))
        for i in (data.get("fidelity") or {}).get("intended") or ()
    )

    bases: list[Base] = []
    seen_images: set[str] = set()
    for i, b in enumerate(data["bases"]):
        repo = repositories.get(b.get("repository", ""))
        if "repository" in b and repo is None:
            problems.append(f"$.bases[{i}].repository: unknown repository {b['repository']!r}")
        base = Base(
            repo_key=b["repo_key"],
            tag=b["tag"],
            repository=repo,
            jdk=b.get("jdk"),
            jdk_image=b.get("jdk_image"),
            android_sdk_packages=tuple(b.get("android_sdk_packages", ())),
            android_cmdline_tools=b.get("android_cmdline_tools"),
            extra_apt_packages=tuple(b.get("extra_apt_packages", ())),
            recipe=b.get("recipe"),
            env=dict(b.get("env") or {}),
        )
        if bool(base.android_sdk_packages) != (base.android_cmdline_tools is not None):
            problems.append(
                f"$.bases[{i}]: android_cmdline_tools (the build of sdkmanager) is set exactly when "
                "android_sdk_packages is not empty"
            )
        if base.image in seen_images:
            problems.append(f"$.bases[{i}]: duplicate base image {base.image}")
        seen_images.add(base.image)
        bases.append(base)
    bases_by_image = {b.image: b for b in bases}

    tasks: list[TaskSpec] = []
    seen_ids: set[str] = set()
    task_images: dict[str, str] = {}
    for i, t in enumerate(data["tasks"]):
        where = f"$.tasks[{i}] ({t['id']})"
        repo = repositories.get(t["repository"])
        if repo is None:
            problems.append(f"{where}.repository: unknown repository {t['repository']!r}")
            continue
        base = bases_by_image.get(t["base_image"])
        if base is None:
            problems.append(f"{where}.base_image: {t['base_image']} is not one of the bases")
        elif base.repository is not None and base.repository.name != repo.name:
            problems.append(
                f"{where}.base_image: {t['base_image']} clones {base.repository.name}, not {repo.name}"
            )
        overrides = {k: t[k] for k in LIMIT_KEYS if k in t}
        task = TaskSpec(
            id=t["id"],
            repository=repo,
            pr=t["pr"],
            issues=tuple(t["issues"]),
            base_commit=t["base_commit"],
            base_image=t["base_image"],
            test_command=t["test_command"],
            flaky_test_excludes=tuple(t["flaky_test_excludes"]),
            flaky_init_script_kind=t["flaky_init_script_kind"],
            expected_counts=t["expected_counts"],
            published_sha256=t["published_sha256"],
            fix_files=None if t["fix_files"] is None else tuple(t["fix_files"]),
            test_files=None if t["test_files"] is None else tuple(t["test_files"]),
            limits=_limits(data["defaults"], overrides),
            issue_url_override=t.get("issue_url"),
            overrides=overrides,
            shallow=t.get("history", "full") == "shallow",
            warmup_override=Warmup.parse(t["warmup"]) if "warmup" in t else None,
            warmup_patch=(
                WarmupPatch(t["warmup_patch"]["published_file"], tuple(t["warmup_patch"]["test_patch_paths"]))
                if "warmup_patch" in t
                else None
            ),
            strip_name_suffixes=tuple((t.get("scorer") or {}).get("strip_name_suffixes") or ()),
            validation=ValidationMark(t["validation"]) if "validation" in t else None,
            base_version=t.get("base_version"),
            fix_release=t.get("fix_release"),
            fix_also_released_in=stated.parse_releases(t.get("fix_also_released_in") or ()),
            base_build=stated.parse_needs(t.get("base_build") or (), problems, f"{where}.base_build"),
            merged=Dated.parse(t.get("merged_at")),
            issue_opened=Dated.parse(t.get("issue_opened_at")),
        )
        problems.extend(f"{where}: {p}" for p in _task_problems(task))
        problems.extend(
            f"{where}.{p}" for p in stated.need_problems(task.base_build, task.fix_releases, repo.artifacts)
        )
        if task.id in seen_ids:
            problems.append(f"{where}.id: duplicate task id")
        seen_ids.add(task.id)
        if task.image in task_images:
            problems.append(f"{where}: task image {task.image} is also that of {task_images[task.image]}")
        task_images[task.image] = task.id
        tasks.append(task)

    if problems:
        raise SpecError(f"{source}: invalid dataset specification:\n" + "\n".join(problems))
    return Dataset(
        name=data["name"],
        path=path,
        defaults=defaults,
        repositories=repositories,
        bases=tuple(bases),
        tasks=tuple(tasks),
        conventions=conventions,
        intended=intended,
    )


def _limits(defaults: Mapping[str, Any], overrides: Mapping[str, Any]) -> Limits:
    merged = {**defaults, **overrides}
    return Limits(
        verifier_timeout_sec=float(merged["verifier_timeout_sec"]),
        agent_timeout_sec=float(merged["agent_timeout_sec"]),
        build_timeout_sec=float(merged["build_timeout_sec"]),
        cpus=merged["cpus"],
        memory_mb=merged["memory_mb"],
        agent_allowed_hosts=tuple(merged["agent_allowed_hosts"]),
        agent_network_mode=merged.get("agent_network_mode", "allowlist"),
    )


def _task_problems(task: TaskSpec) -> list[str]:
    problems = []
    kind, excludes = task.flaky_init_script_kind, task.flaky_test_excludes
    if bool(kind) != bool(excludes):
        problems.append("flaky_init_script_kind is set exactly when flaky_test_excludes is non-empty")
    for name in INIT_SCRIPTS.values():
        referenced = re.search(rf"/home/{re.escape(name)}(?![\w.])", task.test_command) is not None
        if referenced != (task.init_script == name):
            problems.append(
                f"test_command {'references' if referenced else 'does not reference'} /home/{name}, "
                f"but flaky_init_script_kind is {kind!r}"
            )
    if (task.fix_files is None) != (task.test_files is None):
        problems.append("fix_files and test_files are both null or both lists")
    if task.limits.agent_network_mode != "allowlist" and task.limits.agent_allowed_hosts:
        problems.append("agent_allowed_hosts is only valid with agent_network_mode 'allowlist'")
    applied = set(task.warmup.patches)
    if applied and (task.warmup_patch is None or applied != {WARMUP_PATCH_NAME}):
        problems.append(
            f"warmup applies {sorted(applied)}; a warm-up may apply only {WARMUP_PATCH_NAME}, "
            "and then the task needs warmup_patch"
        )
    if task.warmup_patch is not None and not applied:
        problems.append(f"warmup_patch is set, but no warm-up step applies {WARMUP_PATCH_NAME}")
    return problems + date_problems(task.merged, task.issue_opened)


# --------------------------------------------------------------------------------------------------
# Editing one task of a specification


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def _task_spans(text: str, source: Path) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) of every element of the top-level `tasks` array in the JSON text, and where the
    array's closing bracket is."""
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    if not text.startswith("{", pos):
        raise SpecError(f"{source}: the top level is not an object")
    pos += 1
    while True:
        pos = _skip_space(text, pos)
        key, pos = decoder.raw_decode(text, pos)
        pos = _skip_space(text, _skip_space(text, pos) + 1)  # past the ':'
        if key == "tasks":
            break
        _, pos = decoder.raw_decode(text, pos)
        pos = _skip_space(text, pos)
        if text.startswith("}", pos):
            raise SpecError(f"{source}: no `tasks` array")
        pos += 1  # past the ','
    spans = []
    pos = _skip_space(text, pos + 1)  # past the '['
    while not text.startswith("]", pos):
        _, end = decoder.raw_decode(text, pos)
        spans.append((pos, end))
        pos = _skip_space(text, end)
        if text.startswith(",", pos):
            pos = _skip_space(text, pos + 1)
    return spans, pos


def entry_text(entry: Mapping[str, Any]) -> str:
    """A task's entry as the specification holds it: indented by two, each dated fact on one line."""
    dated = {k: v for k, v in entry.items() if k in DATE_KEYS and isinstance(v, Mapping)}
    body = json.dumps(
        {k: f"\0{k}" if k in dated else v for k, v in entry.items()}, indent=2, ensure_ascii=False
    )
    for key, value in dated.items():
        body = body.replace(json.dumps(f"\0{key}"), json.dumps(value, ensure_ascii=False))
    return body


def put_task(path: Path, entry: Mapping[str, Any]) -> Dataset:
    """Add the task `entry` to the specification at `path`, or replace the task with its id, editing only
    that task's text (the rest of the file keeps its formatting); the result must validate."""
    text = path.read_text(encoding="utf-8")
    data = json.loads(text)
    spans, close = _task_spans(text, path)
    ids = [t.get("id") for t in data["tasks"]]
    line_start = text.rfind("\n", 0, spans[0][0] if spans else close) + 1
    indent = " " * (spans[0][0] - line_start) if spans else "    "
    body = entry_text(entry).replace("\n", "\n" + indent)
    if entry["id"] in ids:
        start, end = spans[ids.index(entry["id"])]
        updated = text[:start] + body + text[end:]
    elif spans:
        end = spans[-1][1]
        updated = text[:end] + ",\n" + indent + body + text[end:]
    else:
        updated = text[:close] + "\n" + indent + body + "\n" + text[close:]
    dataset = parse_dataset(json.loads(updated), path)
    write_atomic(path, updated)
    return dataset


def task_entry(path: Path, task_id: str) -> dict[str, Any] | None:
    """The raw entry of one task in the specification at `path` (None: not there)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return next((t for t in data["tasks"] if t.get("id") == task_id), None)
