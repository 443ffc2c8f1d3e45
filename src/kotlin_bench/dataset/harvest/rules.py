"""The rules a merged pull request must pass to become a candidate task, as the published benchmark
followed Multi-SWE-bench's, and the vocabulary of the harvest's verdicts and reasons.

In order, the first that fails is the reason (`screen`):

1. `malformed`: its record lacks a field the rules read, or has one of the wrong type;
2. `not_merged`: closed without being merged; `other_branch`: merged into a branch that is not the default;
3. `bot`: opened by a bot (`type: Bot`, a `[bot]` login, or a known bot); `dependency_bump`: a dependency
   update (its title, or a `dependencies` label);
4. `no_issue`: no closing keyword (`Fixes #12`, as GitHub reads them) in its body or commit messages that
   names an issue of the repository (the number must be an issue, not a pull request);
5. `no_test_change`: no file matches the repository's `test_paths`; `no_fix_change`: every file does;
6. `too_large`: more changed files or lines (added + deleted, the whole pull request) than the caps.

Then, from the repository's history (`listing`): `base_gone` (its base commit is not in the repository)
and `unsplittable` (the test and fix patches do not apply at it); from validation on the base variants:
`environment` (the build fails on every variant: the variants are named), `flaky` (flaky tests the task
cannot leave out), `invalid` (validation's reasons). An `error` is not a verdict on the pull request: the
harvest failed for it (infrastructure), and the next run tries again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kotlin_bench.dataset.globs import split_paths
from kotlin_bench.dataset.harvest.records import IssueRecord, PullRecord
from kotlin_bench.dataset.pulls import closing_issues
from kotlin_bench.dataset.spec import Repository


class Verdict(StrEnum):
    CANDIDATE = "candidate"  # passed the rules; its validation decides
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    ERROR = "error"  # the harvest failed for it (infrastructure): tried again by the next run


class Reason(StrEnum):
    MALFORMED = "malformed"
    NOT_MERGED = "not_merged"
    OTHER_BRANCH = "other_branch"
    BOT = "bot"
    DEPENDENCY_BUMP = "dependency_bump"
    NO_ISSUE = "no_issue"
    NO_TEST_CHANGE = "no_test_change"
    NO_FIX_CHANGE = "no_fix_change"
    TOO_LARGE = "too_large"
    BASE_GONE = "base_gone"
    UNSPLITTABLE = "unsplittable"
    ENVIRONMENT = "environment"
    FLAKY = "flaky"
    INVALID = "invalid"
    INFRASTRUCTURE = "infrastructure"  # the reason of an `error`


REASON_TEXT: Mapping[Reason, str] = {
    Reason.MALFORMED: "its API record lacks a field the rules read, or has one of the wrong type",
    Reason.NOT_MERGED: "closed without being merged",
    Reason.OTHER_BRANCH: "merged into a branch other than the default branch",
    Reason.BOT: "opened by a bot",
    Reason.DEPENDENCY_BUMP: "a dependency update",
    Reason.NO_ISSUE: "names no issue it resolves (no closing keyword in its body or commits)",
    Reason.NO_TEST_CHANGE: "changes no file of the repository's test_paths",
    Reason.NO_FIX_CHANGE: "changes only files of the repository's test_paths",
    Reason.TOO_LARGE: "more changed files or lines than the caps",
    Reason.BASE_GONE: "its base commit is not in the repository",
    Reason.UNSPLITTABLE: "its diff does not split into a test patch and a fix patch that apply at the base",
    Reason.ENVIRONMENT: "the build fails on every base variant of the repository",
    Reason.FLAKY: "flaky tests that the task cannot leave out",
    Reason.INVALID: "validation: the gold patch does not resolve its tests as a task must",
    Reason.INFRASTRUCTURE: "the harness or the engine failed on every try; the next harvest tries again",
}

KNOWN_BOTS = (
    "dependabot",
    "renovate",
    "github-actions",
    "snyk-bot",
    "greenkeeper",
    "mergify",
    "pre-commit-ci",
)
DEPENDENCY_TITLE = re.compile(
    r"^(?:\[?(?:chore|build|fix|deps)\(deps?(?:-dev)?\)\]?!?:?\s"
    r"|bump\s+\S+.*\s+from\s+\S+\s+to\s+\S+"
    r"|update\s+(?:dependency|dependencies|plugin|module|gradle\s+wrapper)\b"
    r"|update\s+\S+\s+to\s+v?\d)",
    re.IGNORECASE,
)
DEPENDENCY_LABELS = ("dependencies", "dependency", "deps")


@dataclass(frozen=True)
class Caps:
    """The size cap (config `harvest: {max_files, max_lines}`)."""

    max_files: int = 50
    max_lines: int = 2000

    @classmethod
    def from_config(cls, conf: Mapping[str, Any] | None) -> Caps:
        conf = conf or {}
        return cls(int(conf.get("max_files", cls.max_files)), int(conf.get("max_lines", cls.max_lines)))


@dataclass(frozen=True)
class Rejection:
    reason: Reason
    detail: str


def merge_rule(pull: PullRecord, default_branch: str) -> Rejection | None:
    if pull.merged_at is None:
        return Rejection(Reason.NOT_MERGED, f"state {pull.state}, merged_at null")
    if pull.base.ref != default_branch:
        return Rejection(Reason.OTHER_BRANCH, f"merged into {pull.base.ref}, not {default_branch}")
    return None


def author_rule(pull: PullRecord) -> Rejection | None:
    login = pull.user.login
    if pull.user.type.lower() == "bot" or login.endswith("[bot]") or login.lower() in KNOWN_BOTS:
        return Rejection(Reason.BOT, f"opened by {login} ({pull.user.type})")
    labels = [label.name for label in pull.labels if label.name.lower() in DEPENDENCY_LABELS]
    if labels or DEPENDENCY_TITLE.search(pull.title):
        why = f"label {labels[0]!r}" if labels else f"title {pull.title!r}"
        return Rejection(Reason.DEPENDENCY_BUMP, why)
    return None


def resolved_issues(
    pull: PullRecord,
    messages: Callable[[], Sequence[str]],
    repository: Repository,
    issue: Callable[[int], IssueRecord | None],
) -> tuple[list[IssueRecord], Rejection | None]:
    """The issues the pull request closes (its body first; its commit messages, asked for only when the
    body names none), each checked to be an issue of the repository; or why there are none."""
    named = closing_issues(pull.body or "", repository)
    where = "body"
    if not named:
        named = [n for message in messages() for n in closing_issues(message, repository)]
        named = list(dict.fromkeys(named))
        where = "commit messages"
    if not named:
        return [], Rejection(Reason.NO_ISSUE, "no closing keyword (Fixes #N) in its body or commit messages")
    found, not_issues = [], []
    for number in named:
        record = issue(number)
        if record is None or record.pull_request is not None:
            not_issues.append(number)
        else:
            found.append(record)
    if not found:
        listed = ", ".join(f"#{n}" for n in not_issues)
        return [], Rejection(
            Reason.NO_ISSUE, f"its {where} close(s) {listed}: not an issue of {repository.name}"
        )
    return found, None


def change_rule(
    files: Sequence[str], test_paths: Sequence[str]
) -> tuple[list[str], list[str], Rejection | None]:
    """(fix files, test files), or why the change is not a task's."""
    fix, test = split_paths(files, test_paths)
    if not test:
        return (
            fix,
            test,
            Rejection(Reason.NO_TEST_CHANGE, f"none of {len(fix)} file(s) matches {list(test_paths)}"),
        )
    if not fix:
        return fix, test, Rejection(Reason.NO_FIX_CHANGE, f"all {len(test)} file(s) match {list(test_paths)}")
    return fix, test, None


def size_rule(files: int, lines: int, caps: Caps) -> Rejection | None:
    if files > caps.max_files:
        return Rejection(Reason.TOO_LARGE, f"{files} changed files (cap {caps.max_files})")
    if lines > caps.max_lines:
        return Rejection(Reason.TOO_LARGE, f"{lines} changed lines (cap {caps.max_lines})")
    return None
