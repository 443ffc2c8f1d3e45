"""A task's dates, each with its source: when its fix was merged (`merged_at`) and when its issue was
opened (`issue_opened_at`), as the dataset specification holds them::

    "merged_at": {"value": "2024-09-26T22:09:24Z", "source": "git log --first-parent main of detekt/detekt: <sha> ..."},
    "issue_opened_at": {"value": "2024-09-20", "source": "https://github.com/detekt/detekt/issues/7660 ..."}

`value` is a time in UTC (`YYYY-MM-DDTHH:MM:SSZ`) or, where only the day is known, a day (`YYYY-MM-DD`);
`merged_at`'s value is null for a pull request that was never merged (its source says how that was
established). A task without the key has no known date of that kind (docs/dataset.md says why).

`task.toml` carries the values (`[metadata.kotlin_bench]`), `summary.csv` the merge day of each run's task;
the cutoff report (`kotlin_bench.results.cutoff`) sorts tasks by it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

DATE_KEYS = ("merged_at", "issue_opened_at")
_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


@dataclass(frozen=True)
class Dated:
    """One date of a task with its source (and a note where the fact needs one)."""

    value: str | None  # a UTC time or a day (see the module's docstring); None: it never happened
    source: str
    note: str | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any] | None) -> Dated | None:
        if raw is None:
            return None
        return cls(raw.get("value"), str(raw["source"]), raw.get("note"))

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, **({"note": self.note} if self.note else {})}

    @property
    def day(self) -> date | None:
        """The day (UTC) of the value; None when it never happened."""
        return day_of(self.value)


def day_of(value: str | None) -> date | None:
    """The UTC day of a time (`...Z`) or a day; None for None or an empty text."""
    if not value:
        return None
    if _DAY.match(value):
        return date.fromisoformat(value)
    if _TIME.match(value):
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).date()
    raise ValueError(f"{value!r} is neither a UTC time (YYYY-MM-DDTHH:MM:SSZ) nor a day (YYYY-MM-DD)")


def quarter_of(day: date) -> str:
    """`2024-Q3`."""
    return f"{day.year}-Q{(day.month - 1) // 3 + 1}"


def quarters_between(first: str, last: str) -> list[str]:
    """Every quarter from `first` to `last` (`2024-Q3`), both included."""
    (year, quarter), (end_year, end_quarter) = (map(int, q.split("-Q")) for q in (first, last))
    out = []
    while (year, quarter) <= (end_year, end_quarter):
        out.append(f"{year}-Q{quarter}")
        year, quarter = (year + 1, 1) if quarter == 4 else (year, quarter + 1)
    return out


def date_problems(merged: Dated | None, issue_opened: Dated | None) -> list[str]:
    """What is wrong with a task's dates taken together: an issue opened after its fix was merged."""
    merged_day = merged.day if merged else None
    opened_day = issue_opened.day if issue_opened else None
    if merged_day and opened_day and opened_day > merged_day:
        return [f"issue_opened_at {issue_opened.value} is after merged_at {merged.value}"]  # type: ignore[union-attr]
    return []


def utc(when: datetime) -> str:
    """A time as the specifications write it: ISO 8601 in UTC, `2026-01-14T16:05:00Z` (naive: UTC)."""
    aware = when if when.tzinfo else when.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_time(text: object) -> str | None:
    """An API record's time (ISO 8601 with its offset) as `utc` writes it; None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return utc(moment) if moment.tzinfo else None


def api_dates(
    repository: str, pr: int, merged_at: str | None, issue: int | None, issue_opened_at: str | None
) -> dict[str, Any]:
    """A new task's dates with their sources, as the GitHub REST API's records of its pull request and of
    the first issue it resolves give them (the harvest and add-task read those): only the dates known."""
    api = f"GitHub REST API GET /repos/{repository}"
    dates: dict[str, Any] = {}
    if merged_at:
        dates["merged_at"] = Dated(merged_at, f"{api}/pulls/{pr}: merged_at").to_json()
    if issue_opened_at and issue is not None:
        dates["issue_opened_at"] = Dated(issue_opened_at, f"{api}/issues/{issue}: created_at").to_json()
    return dates
