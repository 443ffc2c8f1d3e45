"""What the stand-in GitHub API serves (`kotlin_bench.tools.github_api`): pull requests and issues of the
example repositories, as GitHub's REST API shapes them, made from two sources:

- the repository's history (`make-upstream-repo.sh` builds it from `examples/bases/<repo>/upstream`): every
  `refs/pull/<N>/head` is a pull request; its head, the commit it forked from, its commits and changed files,
  and whether and where it was merged: a merge commit whose second parent is the head (`merged_at` is the
  merge's date, `base.ref` the branch it is on), or a head on `main`'s history (merged by fast-forward);
- a committed record per pull request and issue (`<records>/<owner>/<repo>/pulls/<N>.json`,
  `<records>/<owner>/<repo>/<N>.json`: our own titles, bodies, authors and dates; the same files
  materialization reads offline), whose fields win over those the history gives (a record may name another
  `base.sha`, or be malformed on purpose).

`synthetic(owner, repo, count)` makes a repository of `count` merged pull requests without history (the
bench's 1,000). Lists are in the order GitHub's `sort=updated&direction=desc` gives.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

BOT_SUFFIX = "[bot]"
PULL_FIELDS_OF_LIST = ("additions", "deletions", "changed_files", "commits", "mergeable", "merged")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RecordsError(f"git {' '.join(args)} in {repo}: {done.stderr.strip()[-300:]}")
    return done.stdout


class RecordsError(RuntimeError):
    """The stand-in cannot read a repository's history or records; the message names the file."""


def _iso(text: str) -> str:
    """A git date (`%cI`, with an offset) as GitHub writes dates: UTC, `Z`."""
    return datetime.fromisoformat(text).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over` on top of `base`, nested objects merged key by key (a record names only what it changes)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RecordsError(f"{path}: not a JSON record: {exc}") from None
    if not isinstance(data, dict):
        raise RecordsError(f"{path}: expected a JSON object")
    return data


@dataclass
class Repository:
    """One repository as the stand-in serves it: its pull requests (full records, by number), its issues,
    and what the single-record endpoints add (files, commits)."""

    owner: str
    name: str
    default_branch: str = "main"
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    files: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    commits: dict[int, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def url(self, api: str, *parts: object) -> str:
        return "/".join([api.rstrip("/"), "repos", self.owner, self.name, *map(str, parts)])

    def record(self) -> dict[str, Any]:
        return {
            "full_name": self.full_name,
            "name": self.name,
            "owner": {"login": self.owner, "type": "Organization"},
            "default_branch": self.default_branch,
            "private": False,
        }

    def listed(self, state: str, sort: str, direction: str) -> list[dict[str, Any]]:
        """The list endpoint's records (without the fields only a single record has), in its order."""
        chosen = [p for p in self.pulls.values() if state == "all" or p.get("state") == state]
        key = "created_at" if sort == "created" else "updated_at"
        chosen.sort(key=lambda p: (str(p.get(key) or ""), _number(p)), reverse=direction != "asc")
        return [{k: v for k, v in p.items() if k not in PULL_FIELDS_OF_LIST} for p in chosen]

    def issue(self, number: int) -> dict[str, Any] | None:
        """An issue, or a pull request as the issues endpoint shows it (with `pull_request`)."""
        if number in self.issues:
            return self.issues[number]
        pull = self.pulls.get(number)
        if pull is None:
            return None
        keys = ("number", "title", "body", "user", "labels", "state", "created_at", "updated_at", "closed_at")
        return {k: pull.get(k) for k in keys} | {"pull_request": {"merged_at": pull.get("merged_at")}}

    def touch(self, number: int, when: datetime) -> None:
        """A change to pull request `number` (an edit): its `updated_at` moves to `when`."""
        self.pulls[number]["updated_at"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _number(record: dict[str, Any]) -> int:
    value = record.get("number")
    return value if isinstance(value, int) else 0


def _branches(repo: Path) -> dict[str, str]:
    """Branch -> tip, except the `pr-<N>` branches make-upstream-repo leaves beside each pull request."""
    out = {}
    for line in _git(
        repo, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads"
    ).splitlines():
        name, sha = line.split()
        if not name.startswith("pr-"):
            out[name] = sha
    return out


def _merges(repo: Path, branches: dict[str, str]) -> dict[str, tuple[str, str, str, str]]:
    """Head -> (merge commit, its first parent, branch, date) for every merge on a branch's first parents."""
    found: dict[str, tuple[str, str, str, str]] = {}
    for branch in branches:
        log = _git(repo, "log", "--first-parent", "--merges", "--format=%H %P|%cI", branch)
        for line in log.splitlines():
            shas, _, date = line.partition("|")
            merge, first, second, *_ = shas.split()
            found.setdefault(second, (merge, first, branch, _iso(date)))
    return found


def _files(repo: Path, fork: str, head: str) -> list[dict[str, Any]]:
    """`/pulls/{n}/files`: each changed file with its status, counts and patch (renames as delete + add)."""
    statuses = {"A": "added", "D": "removed", "M": "modified", "T": "changed"}
    numstat = _git(repo, "diff", "--no-renames", "--numstat", "-z", fork, head).split("\0")
    status = _git(repo, "diff", "--no-renames", "--name-status", "-z", fork, head).split("\0")
    kinds = {status[i + 1]: status[i] for i in range(0, len(status) - 1, 2)}
    out = []
    for entry in filter(None, numstat):
        added, deleted, path = entry.split("\t", 2)
        binary = added == "-"
        diff = "" if binary else _git(repo, "diff", "--no-renames", fork, head, "--", path)
        at = diff.find("\n@@")
        plus, minus = (0, 0) if binary else (int(added), int(deleted))
        out.append({
            "filename": path,
            "status": statuses.get(kinds.get(path, "M")[:1], "modified"),
            "additions": plus,
            "deletions": minus,
            "changes": plus + minus,
            "patch": diff[at + 1 :] if at >= 0 else "",
        })  # fmt: skip
    return out


def _commits(repo: Path, fork: str, head: str) -> list[dict[str, Any]]:
    log = _git(repo, "log", "--reverse", "--format=%H%x00%an%x00%ae%x00%aI%x00%B%x1e", f"{fork}..{head}")
    out = []
    for entry in filter(str.strip, log.split("\x1e")):
        sha, name, email, date, message = entry.strip("\n").split("\0", 4)
        author = {"name": name, "email": email, "date": _iso(date)}
        out.append(
            {"sha": sha, "commit": {"message": message.strip(), "author": author, "committer": author}}
        )
    return out


def from_history(owner: str, name: str, repo: Path, records: Path | None) -> Repository:
    """The repository's pull requests and issues from its history (`repo`, a git repository) and the
    committed records under `records` (`<owner>/<name>/pulls/<N>.json`, `<owner>/<name>/<N>.json`)."""
    out = Repository(owner, name)
    branches = _branches(repo)
    if "main" not in branches:
        raise RecordsError(f"{repo}: no branch main")
    merges = _merges(repo, branches)
    heads = _git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pull").splitlines()
    folder = records / owner / name if records else None
    for line in heads:
        ref, head = line.split()
        number = int(ref.split("/")[2])
        out.pulls[number], fork = _pull(out, repo, number, head, merges=merges, branches=branches)
        out.files[number] = _files(repo, fork, head)
        out.commits[number] = _commits(repo, fork, head)
        files = out.files[number]
        out.pulls[number] |= {
            "additions": sum(f["additions"] for f in files),
            "deletions": sum(f["deletions"] for f in files),
            "changed_files": len(files),
            "commits": len(out.commits[number]),
        }
        record = folder / "pulls" / f"{number}.json" if folder else None
        if record is not None and record.is_file():
            overlay = _read_json(record)
            pull = out.pulls[number] = _merge(out.pulls[number], overlay)
            if "updated_at" not in overlay:  # the last of its events, as GitHub keeps it
                dates = [pull.get(k) for k in ("created_at", "closed_at", "merged_at")]
                pull["updated_at"] = max((d for d in dates if isinstance(d, str)), default=None)
    if folder is not None and folder.is_dir():
        for path in sorted(folder.glob("*.json")):
            if path.stem.isdigit():
                issue = _read_json(path)
                out.issues[int(path.stem)] = {"number": int(path.stem), "state": "open", **issue}
    return out


def _pull(
    repository: Repository,
    repo: Path,
    number: int,
    head: str,
    *,
    merges: dict[str, tuple[str, str, str, str]],
    branches: dict[str, str],
) -> tuple[dict[str, Any], str]:
    """A pull request's record from the history, and the commit it forked from."""
    opened = _iso(_git(repo, "log", "-1", "--format=%aI", head).strip())
    committed = _iso(_git(repo, "log", "-1", "--format=%cI", head).strip())
    merge_sha: str | None
    if head in merges:
        merge_sha, first, into, merged_at = merges[head]
        fork = _git(repo, "merge-base", head, first).strip()
    elif (
        subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", head, "main"]).returncode == 0
    ):
        merge_sha, into, merged_at = head, "main", committed  # on main's history: merged by fast-forward
        fork = _git(repo, "rev-parse", f"{head}^1").strip()
    else:
        merge_sha, into, merged_at = None, "main", None
        fork = _git(repo, "merge-base", head, branches["main"]).strip()
    closed_at = merged_at or committed
    record = {
        "url": repository.url("", "pulls", number),
        "html_url": f"https://example.invalid/{repository.full_name}/pull/{number}",
        "number": number,
        "state": "closed",
        "locked": False,
        "title": f"Pull request #{number}",
        "body": "",
        "user": {"login": "examples", "type": "User"},
        "labels": [],
        "created_at": opened,
        "updated_at": closed_at,
        "closed_at": closed_at,
        "merged_at": merged_at,
        "merge_commit_sha": merge_sha,
        "draft": False,
        "head": {"ref": f"pr-{number}", "sha": head, "label": f"{repository.owner}:pr-{number}"},
        "base": {"ref": into, "sha": fork, "label": f"{repository.owner}:{into}"},
        "author_association": "MEMBER",
        "merged": merged_at is not None,
        "mergeable": None,
    }
    return record, fork


def synthetic(owner: str, name: str, count: int, start: datetime | None = None) -> Repository:
    """`count` merged pull requests without history, one an hour from `start` (the bench's listing)."""
    out = Repository(owner, name)
    start = start or datetime(2026, 1, 1, tzinfo=UTC)
    for number in range(1, count + 1):
        when = (start + timedelta(hours=number)).strftime("%Y-%m-%dT%H:%M:%SZ")
        sha = f"{number:040x}"
        out.pulls[number] = {
            "url": out.url("", "pulls", number),
            "number": number,
            "state": "closed",
            "title": f"Change {number}",
            "body": f"Fixes #{number + count}",
            "user": {"login": "someone", "type": "User"},
            "labels": [],
            "created_at": when,
            "updated_at": when,
            "closed_at": when,
            "merged_at": when,
            "merge_commit_sha": sha,
            "head": {"ref": f"change-{number}", "sha": sha},
            "base": {"ref": "main", "sha": f"{number - 1:040x}"},
            "additions": 2,
            "deletions": 1,
            "changed_files": 2,
            "commits": 1,
            "merged": True,
        }
        out.files[number] = [
            {"filename": "src/main/kotlin/A.kt", "status": "modified", "additions": 1, "deletions": 1, "changes": 2},
            {"filename": "src/test/kotlin/ATest.kt", "status": "modified", "additions": 1, "deletions": 0, "changes": 1},
        ]  # fmt: skip
        out.commits[number] = [{"sha": sha, "commit": {"message": f"Change {number}"}}]
        out.issues[number + count] = {
            "number": number + count,
            "title": f"Issue {number}",
            "created_at": when,
        }
    return out
