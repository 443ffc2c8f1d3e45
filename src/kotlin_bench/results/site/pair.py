"""A comparison page's discordant tasks: per task only one of two agents solves, both agents' runs (their
outcome, linked) and diffs side by side (the first attempt's work: the captured diff or the predicted
patch)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.record import RecordError, WorkRecord
from kotlin_bench.results.compare import Comparison
from kotlin_bench.results.report import reason_text
from kotlin_bench.results.site.pages import (
    DIFF_BYTES,
    diff_lines,
    href,
    outcome_class,
    outcome_word,
    read_text,
)
from kotlin_bench.results.site.run import Diff

SHOWN_TASKS = 200  # discordant tasks shown with their diffs on one page


@dataclass
class SideRun:
    attempt: int
    word: str
    cls: str
    href: str
    meaning: str


@dataclass
class Side:
    agent: str
    runs: list[SideRun] = field(default_factory=list)
    diff: Diff | None = None


@dataclass
class Discordant:
    task: str
    solver: str
    task_href: str
    sides: list[Side]


def work_diff(root: Path, agent: str, task: str, attempt: int, page: str) -> Diff | None:
    """The run's work as a diff (the work record names the file), linked from `page`."""
    work_dir = root / names.work_dir(agent, task, attempt)
    try:
        work = WorkRecord.read(work_dir / names.WORK_FILE)
    except (RecordError, OSError):
        return None
    path = work_dir / (work.diff or names.AGENT_DIFF)
    if not path.is_file():
        return None
    text, cut = read_text(path, DIFF_BYTES)
    label = "the predicted patch" if work.diff and work.diff != names.AGENT_DIFF else "the agent's diff"
    link = href(path.relative_to(root), page)
    return Diff(label, diff_lines(text), path.stat().st_size, cut, link, f"diff-{agent}-{task}")


def discordant(
    root: Path, summary: pd.DataFrame, comparisons: list[Comparison], a: str, b: str, page: str
) -> list[Discordant]:
    """The tasks only one agent solves (any scope of the comparisons), each with both agents' runs."""
    import pandas as pd

    solver: dict[str, str] = {}
    for c in comparisons:
        for task in c.only_a_tasks:
            solver.setdefault(task, a)
        for task in c.only_b_tasks:
            solver.setdefault(task, b)
    found = []
    for task in list(solver)[:SHOWN_TASKS]:
        sides = []
        for agent in (a, b):
            runs = summary[(summary["agent"] == agent) & (summary["task"] == task)].sort_values("attempt")
            side = Side(agent)
            for run in runs.itertuples():
                word = outcome_word(str(run.status), run.reason)
                side.runs.append(
                    SideRun(
                        int(run.attempt),
                        word,
                        outcome_class(str(run.status), run.reason),
                        href(names.site_run_page(agent, task, int(run.attempt)), page),
                        "" if pd.isna(run.reason) else reason_text(str(run.reason)),
                    )
                )
            if side.runs:
                side.diff = work_diff(root, agent, task, side.runs[0].attempt, page)
            sides.append(side)
        found.append(Discordant(task, solver[task], href(names.site_task_page(task), page), sides))
    return found
