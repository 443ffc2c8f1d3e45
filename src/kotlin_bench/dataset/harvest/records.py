"""The GitHub API's records as the harvest reads them, the window it harvests, and the screening of one pull
request (`Screened`: its ledger file, which a later harvest reuses while the pull request is unchanged).

A record is validated on its own (pydantic): one that lacks a field the rules need, or has one of the
wrong type, is a `malformed` rejection of that pull request, with the fields named, never the harvest's end.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from kotlin_bench.core.fsutil import write_atomic, write_if_changed


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


class User(_Record):
    login: str
    type: str = "User"


class Label(_Record):
    name: str


class Ref(_Record):
    ref: str
    sha: str | None = None


class PullRecord(_Record):
    """What the rules read of `GET /repos/{o}/{r}/pulls` and `/pulls/{n}`."""

    number: int
    title: str
    body: str | None = None
    user: User
    labels: list[Label] = []
    state: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    merged_at: datetime | None = None
    merge_commit_sha: str | None = None
    head: Ref
    base: Ref
    additions: int | None = None  # the single record only
    deletions: int | None = None
    changed_files: int | None = None


class IssueRecord(_Record):
    number: int
    title: str
    body: str | None = None
    created_at: datetime
    pull_request: dict[str, Any] | None = None  # set: the number is a pull request's, not an issue's


def malformed(exc: ValidationError) -> str:
    """A validation error in one line: the fields at fault and what is wrong with each."""
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(p) for p in error["loc"]) or "(record)"
        problems.append(f"{where}: {error['msg'].lower()}")
    more = f" and {len(exc.errors()) - 5} more" if len(exc.errors()) > 5 else ""
    return "; ".join(problems) + more


@dataclass(frozen=True)
class Window:
    """Pull requests merged (or closed) from `since` (inclusive) to `until` (exclusive), UTC days."""

    since: date
    until: date

    @classmethod
    def parse(cls, text: str) -> Window:
        """`2026-01-01_2026-02-01` (the window's directory name)."""
        since, sep, until = text.partition("_")
        if not sep:
            raise ValueError(f"window {text!r}: expected SINCE_UNTIL, e.g. 2026-01-01_2026-02-01")
        return cls.of(since, until)

    @classmethod
    def of(cls, since: str, until: str) -> Window:
        try:
            window = cls(date.fromisoformat(since), date.fromisoformat(until))
        except ValueError as exc:
            raise ValueError(f"window {since}..{until}: {exc} (dates are YYYY-MM-DD)") from None
        if window.until <= window.since:
            raise ValueError(f"window {since}..{until}: --until must come after --since")
        return window

    @property
    def name(self) -> str:
        return f"{self.since.isoformat()}_{self.until.isoformat()}"

    @property
    def start(self) -> datetime:
        return datetime.combine(self.since, time(), UTC)

    @property
    def end(self) -> datetime:
        return datetime.combine(self.until, time(), UTC)

    def holds(self, when: datetime | None) -> bool:
        return when is not None and self.start <= when < self.end


@dataclass
class Screened:
    """One pull request screened: its verdict so far (`candidate`, or `rejected` with a reason) and the
    facts a task is made of. Written to `<harvest>/<owner>/<repo>/pulls/<N>.json` only when it changed, and
    reused by a later harvest while `updated_at` and `rules` (a digest of the rules' settings) are the same."""

    repository: str
    number: int
    verdict: str
    reason: str | None = None
    detail: str = ""
    title: str = ""
    url: str = ""
    author: str = ""
    updated_at: str | None = None
    created_at: str | None = None
    merged_at: str | None = None
    issues: list[int] = field(default_factory=list)
    issue_opened_at: str | None = None
    base: str | None = None
    head: str | None = None
    fix_files: list[str] = field(default_factory=list)
    test_files: list[str] = field(default_factory=list)
    changed_lines: int | None = None
    rules: str = ""

    def write(self, path: Path) -> None:
        """Write the record unless the file holds it already (its time then stays: nothing reruns)."""
        write_if_changed(path, json.dumps(asdict(self), indent=2, ensure_ascii=False) + "\n")

    @classmethod
    def read(cls, path: Path) -> Screened | None:
        """The record at `path`, or None when it is missing or unreadable (then screened again)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(**data)
        except (OSError, ValueError, TypeError):
            return None


def write_screened(path: Path, screened: list[Screened]) -> None:
    """A window's screening (`screened.json`): every pull request of it, in the list's order."""
    write_atomic(path, json.dumps([asdict(s) for s in screened], indent=2, ensure_ascii=False) + "\n")


def read_screened(path: Path) -> list[Screened]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return [Screened(**entry) for entry in data]
    except (OSError, ValueError, TypeError) as exc:
        raise ValueError(f"{path}: not a window's screening: {exc}") from None
