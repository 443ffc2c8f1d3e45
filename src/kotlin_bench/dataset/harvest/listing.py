"""A window's pull requests, listed through the GitHub API and screened by the rules (`rules`) and against
the repository's history.

`screen_window` reads the repository's closed pull requests, the last updated first (`GET
/repos/{o}/{r}/pulls?state=closed&sort=updated&direction=desc`, 100 a page), until one was last updated
before the window: every pull request merged in the window (and every one closed in it without a merge)
gets a `Screened` record. A pull request whose ledger file (`<ledger>/<N>.json`) was written for the same
`updated_at` and the same rules is not read again; the others are read in full (the record, its files, its
commits when its body names no issue, the issues it names), and those the rules keep are checked against
the history: the base commit (`base.sha`) must be there, and the diff must split into a test patch and a
fix patch that apply at it. Every record read is kept under `records` as materialization reads issues
(`<records>/<owner>/<repo>/<N>.json`, `.../pulls/<N>.json`).

An API failure that outlasts the client's retries (`GitHubError`) ends the listing; what was read stays in
the HTTP cache and the ledger, so the next run goes on from the page that failed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kotlin_bench.core.fsutil import write_if_changed
from kotlin_bench.dataset.dates import utc
from kotlin_bench.dataset.github import Client, NotFound
from kotlin_bench.dataset.harvest.records import IssueRecord, PullRecord, Screened, Window, malformed
from kotlin_bench.dataset.harvest.rules import (
    Caps,
    Reason,
    Rejection,
    Verdict,
    author_rule,
    change_rule,
    merge_rule,
    resolved_issues,
    size_rule,
)
from kotlin_bench.dataset.materialize import (
    MaterializeError,
    UpstreamSource,
    open_repository,
    pull_request_head,
)
from kotlin_bench.dataset.pulls import Unsplittable, commit, messages_of, split_at_base, task_id_for
from kotlin_bench.dataset.spec import Repository

RULES_VERSION = 1  # a change of the rules' code: every ledger file is screened again


@dataclass(frozen=True, kw_only=True)
class Harvest:
    """One repository's harvest of one window: where its ledger and the records it read go."""

    repository: Repository
    window: Window
    caps: Caps
    ledger: Path  # <N>.json per pull request screened
    records: Path  # the API's records, as materialization reads issues
    source: UpstreamSource  # where the repository's history is read (its mirror or clone URL)

    def rules_digest(self, default_branch: str) -> str:
        facts = {
            "version": RULES_VERSION,
            "caps": [self.caps.max_files, self.caps.max_lines],
            "default_branch": default_branch,
            "test_paths": list(self.repository.test_paths),
        }
        return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def _keep(path: Path, data: Any) -> None:
    write_if_changed(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


class _Screening:
    """The screening of one window (state: the client, the default branch, the rules' digest)."""

    def __init__(self, client: Client, harvest: Harvest, progress: Callable[[str], None]) -> None:
        self.client, self.harvest, self.progress = client, harvest, progress
        repo = harvest.repository
        self.owner, self.name = repo.owner, repo.repo
        self.default_branch = str(client.repository(self.owner, self.name).get("default_branch") or "main")
        self.digest = harvest.rules_digest(self.default_branch)
        self.reused = 0

    def listed(self, raw: Any, where: str) -> tuple[Screened | None, bool]:
        """The screening of one listed record, or None (outside the window); True: older than the window
        (the list goes on no further)."""
        number = raw.get("number") if isinstance(raw, dict) else None
        try:
            pull = PullRecord.model_validate(raw)
        except ValidationError as exc:
            if not _may_be_in(raw, self.harvest.window):
                return None, False
            shown = number if isinstance(number, int) else 0
            return self._rejected(
                shown, Rejection(Reason.MALFORMED, f"{where}: {malformed(exc)}"), raw
            ), False
        window = self.harvest.window
        if pull.updated_at < window.start:
            return None, True
        if not (window.holds(pull.merged_at) or (pull.merged_at is None and window.holds(pull.closed_at))):
            return None, False
        ledger = self.harvest.ledger / f"{pull.number}.json"
        known = Screened.read(ledger)
        if known is not None and known.updated_at == utc(pull.updated_at) and known.rules == self.digest:
            self.reused += 1
            return known, False
        screened = self.screen(pull)
        screened.write(ledger)
        return screened, False

    def _rejected(self, number: int, rejection: Rejection, raw: Any, **facts: Any) -> Screened:
        title = raw.get("title") if isinstance(raw, dict) and isinstance(raw.get("title"), str) else ""
        url = f"{self.harvest.repository.url}/pull/{number}"
        return Screened(
            self.harvest.repository.name,
            number,
            str(Verdict.REJECTED),
            reason=str(rejection.reason),
            detail=rejection.detail,
            title=title,
            url=url,
            rules=self.digest,
            **facts,
        )

    def screen(self, listed: PullRecord) -> Screened:
        """The rules, then the history, for one pull request of the window."""
        facts: dict[str, Any] = {
            "author": listed.user.login,
            "updated_at": utc(listed.updated_at),
            "created_at": utc(listed.created_at),
            "merged_at": utc(listed.merged_at) if listed.merged_at else None,
        }
        raw = listed.model_dump(mode="json")
        rejection = merge_rule(listed, self.default_branch) or author_rule(listed)
        if rejection:
            return self._rejected(listed.number, rejection, raw, **facts)
        try:
            full = self.client.pull(self.owner, self.name, listed.number)
            pull = PullRecord.model_validate(full)
        except NotFound as exc:
            return self._rejected(
                listed.number, Rejection(Reason.MALFORMED, f"listed, but {exc}"), raw, **facts
            )
        except ValidationError as exc:
            return self._rejected(listed.number, Rejection(Reason.MALFORMED, malformed(exc)), raw, **facts)
        _keep(self.harvest.records / self.owner / self.name / "pulls" / f"{pull.number}.json", full)
        issues, rejection = resolved_issues(
            pull, lambda: self._messages(pull.number), self.harvest.repository, self._issue
        )
        if rejection:
            return self._rejected(pull.number, rejection, raw, **facts)
        facts |= {"issues": [i.number for i in issues], "issue_opened_at": utc(issues[0].created_at)}
        files = self._files(pull.number)
        if isinstance(files, Rejection):
            return self._rejected(pull.number, files, raw, **facts)
        fix, test, rejection = change_rule(list(files), self.harvest.repository.test_paths)
        lines = (
            (pull.additions or 0) + (pull.deletions or 0)
            if pull.additions is not None
            else sum(files.values())
        )
        facts |= {"fix_files": fix, "test_files": test, "changed_lines": lines}
        rejection = rejection or size_rule(pull.changed_files or len(files), lines, self.harvest.caps)
        if rejection:
            return self._rejected(pull.number, rejection, raw, **facts)
        return self._history(pull, raw, facts)

    def _messages(self, number: int) -> list[str]:
        return messages_of(self.client.pull_commits(self.owner, self.name, number))

    def _issue(self, number: int) -> IssueRecord | None:
        try:
            data = self.client.issue(self.owner, self.name, number)
            record = IssueRecord.model_validate(data)
        except (NotFound, ValidationError):
            return None
        if record.pull_request is None:
            _keep(self.harvest.records / self.owner / self.name / f"{number}.json", data)
        return record

    def _files(self, number: int) -> dict[str, int] | Rejection:
        """The changed files (path -> changed lines) from `/pulls/{n}/files`."""
        out = {}
        for entry in self.client.pull_files(self.owner, self.name, number):
            name = entry.get("filename") if isinstance(entry, dict) else None
            if not isinstance(name, str):
                return Rejection(
                    Reason.MALFORMED, f"/pulls/{number}/files: an entry without a filename: {entry!r:.80}"
                )
            out[name] = int(entry.get("changes") or 0)
        return out

    def _history(self, pull: PullRecord, raw: dict[str, Any], facts: dict[str, Any]) -> Screened:
        """The base commit and the split, from the repository's history."""
        repository = self.harvest.repository
        task_id = task_id_for(self.owner, self.name, pull.number)
        base_sha = pull.base.sha or ""
        try:
            repo = open_repository(
                task_id, repository, pull.number, self.harvest.source, [base_sha] if base_sha else []
            )
        except MaterializeError as exc:
            why = str(exc).removeprefix(f"{task_id}: ")
            return self._rejected(
                pull.number, Rejection(Reason.UNSPLITTABLE, f"no diff: {why}"), raw, **facts
            )
        head = pull_request_head(repo, pull.number)
        base = commit(repo, base_sha) if base_sha else None
        if base is None:
            detail = f"base.sha {base_sha or '(none)'} is not a commit of {repository.name}"
            return self._rejected(pull.number, Rejection(Reason.BASE_GONE, detail), raw, **facts)
        facts |= {"base": base, "head": head}
        try:
            split = split_at_base(repo, base, head, repository.test_paths)
        except Unsplittable as exc:
            return self._rejected(pull.number, Rejection(Reason.UNSPLITTABLE, str(exc)), raw, **facts)
        facts |= {"fix_files": list(split.fix_files), "test_files": list(split.test_files)}
        url = f"{repository.url}/pull/{pull.number}"
        return Screened(
            repository.name,
            pull.number,
            str(Verdict.CANDIDATE),
            reason=None,
            detail="",
            title=pull.title,
            url=url,
            rules=self.digest,
            **facts,
        )


def _date(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def _may_be_in(raw: Any, window: Window) -> bool:
    """Whether a malformed record belongs to the window as far as its dates tell: merged (or, unmerged,
    closed) in it; a record whose dates cannot be read is reported in every window that lists it."""
    if not isinstance(raw, dict):
        return True
    merged, closed = _date(raw.get("merged_at")), _date(raw.get("closed_at"))
    if merged is not None:
        return window.holds(merged)
    if raw.get("merged_at") is None and closed is not None:
        return window.holds(closed)
    return True


def screen_window(client: Client, harvest: Harvest, progress: Callable[[str], None]) -> list[Screened]:
    """Every pull request of the window, screened (see the module's docstring), in the list's order."""
    screening = _Screening(client, harvest, progress)
    name = harvest.repository.name
    found: list[Screened] = []
    number: int | None = 1
    while number is not None:
        page = screening.client.closed_pulls(screening.owner, screening.name, number)
        older = False
        for index, raw in enumerate(page.items, 1):
            screened, before = screening.listed(raw, f"page {number}, item {index}")
            older = older or before
            if screened is not None and not before:
                found.append(screened)
        how = "not modified (304): from the cache" if page.not_modified else "read"
        of = f" of {page.last}" if page.last else ""
        progress(
            f"{name}: page {number}{of} {how}; {len(found)} pull request(s) of {harvest.window.name} so far"
        )
        number = None if older else page.next
    kept = sum(1 for s in found if s.verdict == Verdict.CANDIDATE)
    progress(
        f"{name}: {len(found)} pull request(s) of {harvest.window.name}, {kept} candidate(s); "
        f"{screening.reused} unchanged since the last harvest (not read again)"
    )
    return found
