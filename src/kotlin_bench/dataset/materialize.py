"""Materialization: put a task's upstream-authored files into its task directory.

Four files of a task are written by upstream authors or derived from their work and are never committed.
They sit at the same paths in our task directories and in the published ones:
``solution/fix.patch``, ``tests/test.patch``, ``instruction.md`` and ``tests/expected_tests.json``
(``TASK_FILES``; the published benchmark keeps its task directories under ``tasks/``).

They come from one of two sources:

``published``
    A clone of the published benchmark (github.com/Kotlin/kotlin-swe-bench), read at a pinned commit
    (``PUBLISHED_COMMIT``; its task directories are ``tasks/<id>/``). The location is a local git
    repository (read from its objects at the commit, never from its work tree), a plain directory laid
    out the same way (no commit), or a URL, cloned bare into ``<cache>/published/``. Every file is checked
    against the task's ``published_sha256``: a missing file or a mismatch is an error naming the task and
    the file, and nothing of that task is written. Tasks without digests are written and reported
    unverified.

``upstream``
    The upstream repository (a local mirror path per repository, or its clone URL, cloned bare into
    ``<cache>/upstream/<owner>/<repo>.git``). ``git diff <base_commit>...refs/pull/<N>/head`` is split by the
    repository's ``test_paths`` into ``test.patch`` and ``fix.patch`` (restricted to the task's
    ``fix_files``/``test_files`` where the specification knows them). ``instruction.md`` is made from the
    task's issues (GitHub REST API ``GET /repos/{owner}/{repo}/issues/{n}``, token from ``GITHUB_TOKEN``),
    cached as ``<issues cache>/<owner>/<repo>/<n>.json``; a cache hit needs no network (the API is read
    through ``kotlin_bench.dataset.github``; ``GITHUB_API_URL`` names another API). A task without
    issues needs ``<instructions_dir>/<id>.md``. Expected test lists cannot be derived: they are copied
    from ``<expected_tests_dir>/<id>.json`` when present; otherwise the marker
    ``tests/.expected_tests_missing`` is written with a placeholder ``tests/expected_tests.json`` that lists
    no test (so that every file the workflow depends on exists), and the task cannot be run.

A task whose warm-up applies a patch (``warmup_patch`` in the specification) also gets
``environment/warmup.patch``: the published file it names, or, from upstream, the listed paths of the
pull request's diff (the published file is exactly that part of the test patch).

Every file is written atomically, and ``<task>/.materialized.json`` records the source, the commit, each
file's sha256 and whether the published digests were verified. Materializing one task writes only inside
that task's directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256, write_atomic, write_if_changed
from kotlin_bench.dataset.github import Client, GitHubError, GitHubSettings
from kotlin_bench.dataset.globs import split_paths
from kotlin_bench.dataset.spec import PUBLISHED_FILES, Dataset, Repository, TaskSpec

PUBLISHED_URL = "https://github.com/Kotlin/kotlin-swe-bench.git"
PUBLISHED_COMMIT = "039c4512df7bf31a86619a03e4e4fde5b311ccd5"
PUBLISHED_TASKS_SUBDIR = "tasks"
GITHUB_API = "https://api.github.com"

TASK_FILES: Mapping[str, str] = {
    "fix.patch": "solution/fix.patch",
    "test.patch": "tests/test.patch",
    "instruction.md": "instruction.md",
    "expected_tests.json": "tests/expected_tests.json",
    "warmup.patch": names.WARMUP_PATCH,  # tasks whose warm-up applies a patch (TaskSpec.warmup_patch)
}
INSTRUCTION_HEADER = "# Implement the issue(s) in {owner}/{repo}:"


class MaterializeError(RuntimeError):
    """Materialization cannot proceed; the message names the task and the file or issue."""


def default_cache_dir() -> Path:
    env = os.environ.get("KOTLIN_BENCH_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "kotlin-bench"


@dataclass(frozen=True)
class PublishedSource:
    location: str = PUBLISHED_URL  # local path (git repository or plain directory) or URL
    commit: str | None = PUBLISHED_COMMIT  # None: the plain directory as it is
    tasks_subdir: str = PUBLISHED_TASKS_SUBDIR
    cache_dir: Path = field(default_factory=default_cache_dir)


@dataclass(frozen=True)
class UpstreamSource:
    mirrors: Mapping[str, str] = field(default_factory=dict)  # "<owner>/<repo>" -> local path or URL
    cache_dir: Path = field(default_factory=default_cache_dir)
    issues_cache: Path | None = None  # default <cache_dir>/issues
    expected_tests_dir: Path | None = None
    instructions_dir: Path | None = None
    offline: bool = False
    token: str | None = None
    api_url: str = GITHUB_API

    @property
    def issues_dir(self) -> Path:
        return self.issues_cache or self.cache_dir / "issues"


@dataclass(frozen=True)
class MirrorSources:
    """Upstream repositories built locally from committed sources (`materialize.upstream.mirror_sources`):
    `builder` makes a git repository at `dest` from `pattern.format(owner=..., repo=...)`. The DAG builds
    each into `results/upstream/<owner>/<repo>` (rule upstream_mirror); `kotlin-bench materialize`
    builds the same ones the same way."""

    builder: str
    pattern: str

    @classmethod
    def from_config(cls, upstream: Mapping[str, Any]) -> MirrorSources | None:
        raw = upstream.get("mirror_sources")
        return cls(str(raw["builder"]), str(raw["pattern"])) if raw else None

    def source(self, owner: str, repo: str) -> str:
        return self.pattern.format(owner=owner, repo=repo)

    def build(self, owner: str, repo: str, root: Path) -> Path:
        """The mirror of owner/repo under `root`, built when it is not there yet."""
        dest = root / names.mirror_dir(owner, repo)
        if not (dest / "HEAD").is_file() and not (dest / ".git").exists():
            self.build_into(owner, repo, root, dest)
        return dest

    def build_into(self, owner: str, repo: str, root: Path, dest: Path) -> str:
        """Build the repository of owner/repo at `dest` (which must not exist); the builder's output."""
        source = root / self.source(owner, repo)
        if not source.is_dir():
            raise MaterializeError(f"no upstream source for {owner}/{repo} at {source}")
        done = subprocess.run(
            ["bash", str(root / self.builder), str(source), str(dest)], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise MaterializeError(
                f"building the mirror of {owner}/{repo} failed: {(done.stderr or done.stdout).strip()[-500:]}"
            )
        return done.stdout


def build_mirrors(
    source: UpstreamSource, sources: MirrorSources | None, repositories: Iterable[Repository], root: Path
) -> UpstreamSource:
    """`source` with a mirror for each repository that `sources` builds from committed sources (built
    under `root` as the DAG builds it, when it is not there yet); configured mirrors stay."""
    if sources is None:
        return source
    mirrors = dict(source.mirrors)
    for repository in repositories:
        if repository.name not in mirrors:
            mirrors[repository.name] = str(sources.build(repository.owner, repository.repo, root))
    return replace(source, mirrors=mirrors)


@dataclass
class TaskResult:
    task_id: str
    ok: bool = False
    source: str = ""
    verified: bool | None = None  # None: the task has no published digests
    expected_tests: bool = False
    files: dict[str, str] = field(default_factory=dict)  # task-relative path -> sha256
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------------
# Helpers


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git(args: Sequence[str], cwd: Path, *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=false", *args],
        cwd=cwd,
        capture_output=True,
        check=False,
        env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
    )
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip()
        raise MaterializeError(f"git {' '.join(args)} (in {cwd}) failed: {err}")
    return proc


def _is_url(location: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*://", location) is not None or location.startswith("git@")


def _cache_name(url: str) -> str:
    name = re.sub(r"^[a-z][a-z0-9+.-]*://", "", url).removesuffix(".git").strip("/")
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name) + ".git"


def _bare_clone(url: str, dest: Path) -> Path:
    if not (dest / "HEAD").is_file():
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(dest.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        git(["clone", "--quiet", "--bare", url, str(tmp)], cwd=dest.parent)
        tmp.replace(dest)
    return dest


def _has_object(repo: Path, rev: str) -> bool:
    return git(["cat-file", "-e", rev], cwd=repo, check=False).returncode == 0


# --------------------------------------------------------------------------------------------------
# Published


class PublishedReader:
    """Reads published task files from a git repository at a commit, or from a plain directory."""

    def __init__(self, source: PublishedSource) -> None:
        self.source = source
        location = source.location
        if _is_url(location):
            self.root = _bare_clone(location, source.cache_dir / "published" / _cache_name(location))
            self.is_git = True
        else:
            self.root = Path(location)
            if not self.root.is_dir():
                raise MaterializeError(f"the published benchmark {location} is not a directory")
            # A work tree or a bare repository of its own (not a plain directory inside another repository).
            bare = (self.root / "HEAD").is_file() and (self.root / "objects").is_dir()
            self.is_git = (self.root / ".git").exists() or bare
        self.commit: str | None = None
        if self.is_git:
            rev = source.commit or "HEAD"
            if not _has_object(self.root, f"{rev}^{{commit}}") and _is_url(location):
                git(["fetch", "--quiet", "origin", rev], cwd=self.root, check=False)
            proc = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=self.root, check=False)
            if proc.returncode != 0:
                raise MaterializeError(f"the published benchmark {location} has no commit {rev}")
            self.commit = proc.stdout.decode().strip()

    def path_of(self, task_id: str, name: str) -> str:
        return self.task_path(task_id, TASK_FILES[name])

    def task_path(self, task_id: str, rel: str) -> str:
        sub = self.source.tasks_subdir.strip("/")
        return "/".join(p for p in (sub, task_id, rel) if p)

    def read(self, task_id: str, name: str) -> bytes | None:
        return self.read_path(self.path_of(task_id, name))

    def read_path(self, rel: str) -> bytes | None:
        if not self.is_git:
            path = self.root / rel
            return path.read_bytes() if path.is_file() else None
        proc = git(["cat-file", "blob", f"{self.commit}:{rel}"], cwd=self.root, check=False)
        return proc.stdout if proc.returncode == 0 else None


def materialize_published(task: TaskSpec, task_dir: Path, reader: PublishedReader) -> TaskResult:
    result = TaskResult(task.id, source="published")
    where = f"{reader.source.location}" + (f" at {reader.commit}" if reader.commit else "")
    contents: dict[str, bytes] = {}
    for name in PUBLISHED_FILES:
        data = reader.read(task.id, name)
        if data is None:
            result.problems.append(f"{task.id}: {name}: missing ({reader.path_of(task.id, name)} in {where})")
            continue
        digest = sha256_bytes(data)
        expected = (task.published_sha256 or {}).get(name)
        if expected and digest != expected:
            result.problems.append(
                f"{task.id}: {name}: sha256 {digest} does not match the published {expected}"
            )
        contents[name] = data
    if task.warmup_patch is not None:
        rel = reader.task_path(task.id, task.warmup_patch.published_file)
        data = reader.read_path(rel)
        if data is None:
            result.problems.append(f"{task.id}: warmup.patch: missing ({rel} in {where})")
        else:
            contents["warmup.patch"] = data
            result.notes.append(f"{task.id}: warmup.patch from {rel} (no published digest to check)")
    if result.problems:
        return result
    result.verified = True if task.published_sha256 else None
    if result.verified is None:
        result.notes.append(f"{task.id}: unverified (the specification has no published digests)")
    _write_task_files(task_dir, contents, result)
    _write_stamp(task_dir, result, origin=reader.source.location, commit=reader.commit, base=task.base_commit)
    result.ok = True
    return result


# --------------------------------------------------------------------------------------------------
# Upstream


def upstream_location(repository: Repository, source: UpstreamSource) -> str:
    """Where the repository's history is read from: its configured mirror, else its clone URL."""
    return source.mirrors.get(repository.name, repository.clone_url)


def open_repository(
    task_id: str, repository: Repository, pr: int, source: UpstreamSource, commits: Sequence[str] = ()
) -> Path:
    """The git repository holding `repository`'s history with refs/pull/<pr>/head present (a URL is
    cloned bare into the cache, and the ref and `commits` fetched when missing); errors name `task_id`."""
    location = upstream_location(repository, source)
    ref = f"refs/pull/{pr}/head"
    if _is_url(location):
        repo = _bare_clone(
            location, source.cache_dir / "upstream" / repository.owner / f"{repository.repo}.git"
        )
        if not _has_object(repo, ref) or not all(_has_object(repo, c) for c in commits):
            git(["fetch", "--quiet", "origin", f"+{ref}:{ref}", *commits], cwd=repo, check=False)
    else:
        repo = Path(location)
        if not repo.is_dir():
            raise MaterializeError(f"{task_id}: the upstream mirror {location} is not a directory")
    if not _has_object(repo, f"{ref}^{{commit}}"):
        raise MaterializeError(f"{task_id}: {ref} is not in the upstream repository {location}")
    return repo


def open_upstream(task: TaskSpec, source: UpstreamSource) -> Path:
    """The git repository holding `task`'s upstream history, with refs/pull/<N>/head present."""
    repo = open_repository(task.id, task.repository, task.pr, source, [task.base_commit])
    if not _has_object(repo, f"{task.base_commit}^{{commit}}"):
        location = upstream_location(task.repository, source)
        raise MaterializeError(f"{task.id}: the base commit {task.base_commit} is not in {location}")
    return repo


def pull_request_head(repo: Path, pr: int) -> str:
    return git(["rev-parse", f"refs/pull/{pr}/head^{{commit}}"], cwd=repo).stdout.decode().strip()


def changed_files(repo: Path, base: str, head: str) -> list[str]:
    """The files the diff `base...head` (from their merge base to head) touches, renames as delete + add."""
    names = git(["diff", "--no-renames", "--name-only", "-z", f"{base}...{head}"], cwd=repo).stdout.decode()
    return [n for n in names.split("\0") if n]


def upstream_patches(task: TaskSpec, repo: Path) -> tuple[bytes, bytes, str, list[str]]:
    """(fix.patch, test.patch, head commit, notes) from the pull request's diff against the base commit."""
    head = pull_request_head(repo, task.pr)
    span = f"{task.base_commit}...{head}"
    changed = changed_files(repo, task.base_commit, head)
    notes: list[str] = []
    if task.fix_files is not None and task.test_files is not None:
        listed = set(task.fix_files) | set(task.test_files)
        absent = sorted(listed - set(changed))
        if absent:
            raise MaterializeError(f"{task.id}: files of the specification not in the diff {span}: {absent}")
        dropped = [n for n in changed if n not in listed]
        if dropped:
            notes.append(f"{task.id}: left out of the patches (not in fix_files/test_files): {dropped}")
        changed = [n for n in changed if n in listed]
    fix_paths, test_paths = split_paths(changed, task.repository.test_paths)
    if task.test_files is not None and sorted(test_paths) != sorted(task.test_files):
        notes.append(f"{task.id}: the test_paths split differs from the specification's test_files")
    if not test_paths:
        raise MaterializeError(f"{task.id}: test.patch: no file of the diff {span} matches the test_paths")
    if not fix_paths:
        raise MaterializeError(f"{task.id}: fix.patch: every file of the diff {span} matches the test_paths")

    return upstream_diff(repo, span, fix_paths), upstream_diff(repo, span, test_paths), head, notes


def upstream_diff(repo: Path, span: str, paths: Sequence[str]) -> bytes:
    """The pull request's diff restricted to `paths` (literal)."""
    args = ["--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--binary"]
    return git([*args, span, "--", *paths], cwd=repo).stdout


def upstream_warmup_patch(task: TaskSpec, repo: Path) -> bytes:
    """The warm-up patch of a task that has one: its test patch restricted to the listed paths."""
    assert task.warmup_patch is not None
    data = upstream_diff(
        repo, f"{task.base_commit}...refs/pull/{task.pr}/head", task.warmup_patch.test_patch_paths
    )
    if not data.strip():
        raise MaterializeError(
            f"{task.id}: warmup.patch: the pull request changes none of {list(task.warmup_patch.test_patch_paths)}"
        )
    return data


def fetch_issue(task: TaskSpec, number: int, source: UpstreamSource) -> dict[str, Any]:
    """The issue's JSON (title, body, ...), from the cache or the GitHub REST API (then cached)."""
    return fetch_repository_issue(task.id, task.repository, number, source)


def fetch_repository_issue(
    task_id: str, repository: Repository, number: int, source: UpstreamSource
) -> dict[str, Any]:
    """An issue of `repository` as `fetch_issue` reads it, for a task not yet in the specification."""
    owner, repo = repository.owner, repository.repo
    return fetch_github(
        f"{task_id}: issue #{number}",
        f"/repos/{owner}/{repo}/issues/{number}",
        source.issues_dir / owner / repo / f"{number}.json",
        source,
    )


def fetch_pull(task_id: str, repository: Repository, number: int, source: UpstreamSource) -> dict[str, Any]:
    """The pull request's JSON (title, body, base, ...), from the cache
    (`<issues cache>/<owner>/<repo>/pulls/<n>.json`) or the GitHub REST API (then cached)."""
    owner, repo = repository.owner, repository.repo
    return fetch_github(
        f"{task_id}: pull request #{number}",
        f"/repos/{owner}/{repo}/pulls/{number}",
        source.issues_dir / owner / repo / "pulls" / f"{number}.json",
        source,
    )


def fetch_github(what: str, api_path: str, cache: Path, source: UpstreamSource) -> dict[str, Any]:
    """A GitHub REST API object (it must have a title), read from `cache` or through the API client
    (`kotlin_bench.dataset.github`: ETags, rate limits, retries) and cached there; errors start with `what`."""
    if cache.is_file():
        try:
            return json.loads(cache.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise MaterializeError(f"{what}: unreadable cache {cache}: {exc}") from None
    if source.offline:
        raise MaterializeError(f"{what}: not in the cache {cache}, and offline")
    settings = GitHubSettings(
        api_url=source.api_url, token=source.token, cache_dir=source.cache_dir / "github"
    )
    try:
        data = Client(settings).json(api_path, what=what)
    except GitHubError as exc:
        raise MaterializeError(f"{exc} (and it is not in the cache {cache})") from None
    if not isinstance(data, dict) or "title" not in data:
        raise MaterializeError(f"{what}: unexpected answer from {source.api_url}{api_path}")
    write_atomic(cache, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return data


def format_instruction(task: TaskSpec, issues: Sequence[Mapping[str, Any]]) -> str:
    """The published instruction format: a header, then per issue its number, URL, title and body."""
    sections = []
    for issue in issues:
        number = issue["number"]
        body = (issue.get("body") or "").replace("\r\n", "\n").strip()
        url = f"{task.repository.url}/issues/{number}"
        sections.append(f"## Issue #{number} {url}: {issue['title']}\n\n{body}\n\n")
    header = INSTRUCTION_HEADER.format(owner=task.owner, repo=task.repo)
    return header + "\n\n" + "\n\n---\n\n".join(sections)


def materialize_upstream(task: TaskSpec, task_dir: Path, source: UpstreamSource) -> TaskResult:
    result = TaskResult(task.id, source="upstream")
    try:
        repo = open_upstream(task, source)
        fix, test, head, notes = upstream_patches(task, repo)
        result.notes += notes
        contents = {"fix.patch": fix, "test.patch": test}
        if task.warmup_patch is not None:
            contents["warmup.patch"] = upstream_warmup_patch(task, repo)
        override = source.instructions_dir / f"{task.id}.md" if source.instructions_dir else None
        if override is not None and override.is_file():
            contents["instruction.md"] = override.read_bytes()
        elif not task.issues:
            raise MaterializeError(
                f"{task.id}: instruction.md: the task has no issues to make it from; "
                f"supply <instructions_dir>/{task.id}.md"
            )
        else:
            issues = []
            for n in task.issues:
                issue = dict(fetch_issue(task, n, source))
                issue.setdefault("number", n)
                issues.append(issue)
            contents["instruction.md"] = format_instruction(task, issues).encode()
        expected = source.expected_tests_dir / f"{task.id}.json" if source.expected_tests_dir else None
        if expected is not None and expected.is_file():
            data = expected.read_bytes()
            try:
                json.loads(data)
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise MaterializeError(
                    f"{task.id}: expected_tests.json: {expected} is not JSON: {exc}"
                ) from None
            contents["expected_tests.json"] = data
    except MaterializeError as exc:
        result.problems.append(str(exc))
        return result
    digests = task.published_sha256
    if digests:
        result.verified = all(sha256_bytes(contents.get(n, b"")) == digests[n] for n in PUBLISHED_FILES)
        differ = [n for n in PUBLISHED_FILES if n in contents and sha256_bytes(contents[n]) != digests[n]]
        if differ:
            result.notes.append(f"{task.id}: differs from the published files: {', '.join(differ)}")
    if "expected_tests.json" not in contents:
        result.notes.append(
            f"{task.id}: no expected test lists (marker {names.MISSING_EXPECTED_MARKER} written)"
        )
    _write_task_files(task_dir, contents, result)
    _write_stamp(task_dir, result, origin=str(repo), commit=head, base=task.base_commit)
    result.ok = True
    return result


# --------------------------------------------------------------------------------------------------
# Writing, stamps, status


MISSING_EXPECTED_PLACEHOLDER = (
    json.dumps(
        {"missing": f"no expected test lists could be materialized; see {names.MISSING_EXPECTED_MARKER}"},
        indent=2,
    )
    + "\n"
).encode()


def _write_task_files(task_dir: Path, contents: Mapping[str, bytes], result: TaskResult) -> None:
    for name, data in contents.items():
        write_if_changed(task_dir / TASK_FILES[name], data)
        result.files[TASK_FILES[name]] = sha256_bytes(data)
    marker = task_dir / names.MISSING_EXPECTED_MARKER
    if "expected_tests.json" in contents:
        marker.unlink(missing_ok=True)
        result.expected_tests = True
    else:
        # The marker says why; the placeholder (an output of the DAG's materialize rule like the other
        # files) lists no test, so that a verification of it can only score 0, as `task_invalid`.
        write_atomic(marker, b"expected_tests.json could not be materialized from upstream\n")
        write_if_changed(task_dir / TASK_FILES["expected_tests.json"], MISSING_EXPECTED_PLACEHOLDER)
        result.expected_tests = False


def _write_stamp(task_dir: Path, result: TaskResult, *, origin: str, commit: str | None, base: str) -> None:
    stamp = {
        "task": result.task_id,
        "source": result.source,
        "origin": origin,
        "commit": commit,
        "base_commit": base,
        "files": dict(sorted(result.files.items())),
        "verified": result.verified,
        "expected_tests": result.expected_tests,
        "harness_version": HARNESS_VERSION,
    }
    write_if_changed(task_dir / names.STAMP, (json.dumps(stamp, indent=2) + "\n").encode())


def read_stamp(task_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((task_dir / names.STAMP).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class MaterialStatus:
    task_id: str
    materialized: bool
    verified: str  # "yes" | "no" | "unknown"
    expected_tests: bool
    source: str | None
    missing: tuple[str, ...]
    mismatched: tuple[str, ...]


def task_status(task: TaskSpec, task_dir: Path) -> MaterialStatus:
    """Whether the task's files are present, and whether they match the published digests (recomputed)."""
    present = {n: (task_dir / TASK_FILES[n]).is_file() for n in PUBLISHED_FILES}
    marker = (task_dir / names.MISSING_EXPECTED_MARKER).is_file()
    missing = tuple(n for n, ok in present.items() if not ok and not (n == "expected_tests.json" and marker))
    materialized = not missing
    mismatched: tuple[str, ...] = ()
    if not materialized or not task.published_sha256:
        verified = "unknown"
    else:
        mismatched = tuple(
            n
            for n in PUBLISHED_FILES
            if not present[n] or file_sha256(task_dir / TASK_FILES[n]) != task.published_sha256[n]
        )
        verified = "no" if mismatched else "yes"
    stamp = read_stamp(task_dir)
    return MaterialStatus(
        task_id=task.id,
        materialized=materialized,
        verified=verified,
        expected_tests=present["expected_tests.json"] and not marker,
        source=stamp.get("source") if stamp else None,
        missing=missing,
        mismatched=mismatched,
    )


def source_from_config(conf: Mapping[str, Any], source: str) -> PublishedSource | UpstreamSource:
    """A source from a `materialize:` mapping (config.yaml or `--config`); `source` picks which.

    Shape: `{cache_dir, published: {location, commit, tasks_subdir}, upstream: {mirrors, issues_cache,
    expected_tests_dir, instructions_dir, offline}}`; every key is optional. The GitHub token, if any,
    comes from the environment (`GITHUB_TOKEN`), never from a file.
    """
    cache = Path(conf.get("cache_dir") or default_cache_dir())
    if source == "published":
        published = conf.get("published") or {}
        commit = published.get("commit") or PUBLISHED_COMMIT
        return PublishedSource(
            location=str(published.get("location") or PUBLISHED_URL),
            commit=None if commit == "none" else commit,
            tasks_subdir=published.get("tasks_subdir") or PUBLISHED_TASKS_SUBDIR,
            cache_dir=cache,
        )
    if source != "upstream":
        raise MaterializeError(f"materialize source {source!r}: expected 'published' or 'upstream'")
    upstream = conf.get("upstream") or {}

    def path_opt(value: Any) -> Path | None:
        return Path(value) if value else None

    return UpstreamSource(
        mirrors={str(k): str(v) for k, v in (upstream.get("mirrors") or {}).items()},
        cache_dir=cache,
        issues_cache=path_opt(upstream.get("issues_cache")),
        expected_tests_dir=path_opt(upstream.get("expected_tests_dir")),
        instructions_dir=path_opt(upstream.get("instructions_dir")),
        offline=bool(upstream.get("offline", False)),
        token=os.environ.get("GITHUB_TOKEN") or None,
        api_url=os.environ.get("GITHUB_API_URL") or GITHUB_API,
    )


def materialize(
    dataset: Dataset,
    tasks_dir: Path,
    source: PublishedSource | UpstreamSource,
    *,
    only: Sequence[str] | None = None,
) -> list[TaskResult]:
    """Materialize the selected tasks (all by default); one result per task, errors included."""
    tasks = dataset.select(only)
    results: list[TaskResult] = []
    reader: PublishedReader | None = None
    for task in tasks:
        task_dir = tasks_dir / task.id
        if not task_dir.is_dir():
            results.append(
                TaskResult(
                    task.id,
                    source="published" if isinstance(source, PublishedSource) else "upstream",
                    problems=[f"{task.id}: no task directory {task_dir} (run `kotlin-bench generate`)"],
                )
            )
            continue
        if isinstance(source, PublishedSource):
            if reader is None:
                reader = PublishedReader(source)
            results.append(materialize_published(task, task_dir, reader))
        else:
            results.append(materialize_upstream(task, task_dir, source))
    return results
