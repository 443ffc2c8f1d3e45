"""A pull request as a task's source, read from its upstream repository: the issues it closes, its base
commit, and its diff split into test and fix files that apply at that base. Shared by `kotlin-bench
add-task` (one pull request) and `kotlin-bench harvest` (a window of them).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.dataset.globs import split_paths
from kotlin_bench.dataset.materialize import changed_files, git, upstream_diff
from kotlin_bench.dataset.spec import Repository

# GitHub's closing keywords: "Fixes #12", "closes owner/repo#12", "Resolved: #12".
CLOSING_RE = re.compile(
    r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\b:?\s+(?:(?P<repo>[\w.-]+/[\w.-]+))?#(?P<number>[0-9]+)\b",
    re.IGNORECASE,
)
GITLINK = "160000"  # a submodule's mode in a tree


def task_id_for(owner: str, repo: str, pr: int) -> str:
    """The task id, as the published benchmark names its tasks: `<owner>_<repo>-<pr>`."""
    return f"{owner}_{repo}-{pr}"


def closing_issues(body: str, repository: Repository) -> list[int]:
    """The issues of `repository` a pull request body (or commit message) closes, in order of mention."""
    found: list[int] = []
    for match in CLOSING_RE.finditer(body or ""):
        other = match["repo"]
        if other and other.lower() != repository.name.lower():
            continue
        number = int(match["number"])
        if number not in found:
            found.append(number)
    return found


def commit(repo: Path, rev: str) -> str | None:
    """The commit `rev` names in `repo`, or None."""
    proc = git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], cwd=repo, check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def base_commit(repo: Path, head: str, record: Mapping[str, Any]) -> str | None:
    """The record's `base.sha` when the repository has it; else the merge base of the head with the
    default branch (HEAD), or the head's first parent when the head is on that branch already."""
    recorded = (record.get("base") or {}).get("sha")
    if isinstance(recorded, str) and recorded and commit(repo, recorded):
        return commit(repo, recorded)
    default = commit(repo, "HEAD")
    if default is None:
        return None
    proc = git(["merge-base", head, default], cwd=repo, check=False)
    merge_base = proc.stdout.decode().strip() if proc.returncode == 0 else None
    if merge_base and merge_base != head:
        return merge_base
    return commit(repo, f"{head}^1")


class Unsplittable(ValueError):
    """The diff cannot be made into a test patch and a fix patch that apply at the base commit."""


@dataclass(frozen=True)
class Split:
    fix_files: tuple[str, ...]
    test_files: tuple[str, ...]


def _gitlinks(repo: Path, base: str, head: str) -> list[str]:
    """Paths the diff turns into or changes as submodules (a patch cannot carry their content)."""
    raw = git(["diff", "--no-renames", "--raw", "-z", f"{base}...{head}"], cwd=repo).stdout.decode()
    fields = raw.split("\0")
    return [
        fields[i + 1]
        for i in range(0, len(fields) - 1, 2)
        if fields[i].startswith(":") and GITLINK in fields[i].split()[:2]
    ]


def split_at_base(repo: Path, base: str, head: str, test_paths: Sequence[str]) -> Split:
    """The files of `base...head` split by `test_paths`, after checking that the split is a task: the
    test patch applies at `base` alone, and the fix patch on top of it (an index of its own, no work tree).
    Raises `Unsplittable` naming what does not apply; a diff without test or fix files is not checked
    here (the harvest's rules and add-task name those)."""
    fix, test = split_paths(changed_files(repo, base, head), test_paths)
    submodules = _gitlinks(repo, base, head)
    if submodules:
        raise Unsplittable(f"the diff changes submodules {submodules}: a patch cannot carry them")
    span = f"{base}...{head}"
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-split-") as tmp:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        subprocess.run(["git", "read-tree", base], cwd=repo, env=env, check=True, capture_output=True)
        for what, paths in (("test.patch", test), ("fix.patch", fix)):
            if not paths:
                continue
            patch = Path(tmp) / what
            patch.write_bytes(upstream_diff(repo, span, paths))
            done = subprocess.run(
                ["git", "apply", "--cached", "--binary", str(patch)], cwd=repo, env=env, capture_output=True
            )
            if done.returncode != 0:
                why = done.stderr.decode(errors="replace").strip().splitlines()
                after = " after the test patch" if what == "fix.patch" else ""
                raise Unsplittable(
                    f"{what} does not apply at the base commit {base[:12]}{after}: {'; '.join(why[:3])}"
                )
    return Split(tuple(fix), tuple(test))


def messages_of(commits: Iterable[Mapping[str, Any]]) -> list[str]:
    """The messages of a pull request's commits as `/pulls/{n}/commits` gives them."""
    out = []
    for entry in commits:
        message = (entry.get("commit") or {}).get("message") if isinstance(entry, Mapping) else None
        if isinstance(message, str):
            out.append(message)
    return out
