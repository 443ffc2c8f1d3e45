"""Before and after an agent's training cutoff: whether its model solves tasks merged before its cutoff
(which it may have seen, fix included) better than tasks merged after it.

For each agent with a `cutoff:` (config `agents:`; `kotlin_bench.runs.agents.config.agent_cutoffs`), the
tasks of its runs are split by the day their fix was merged (summary.csv's `merged_at`): **before** = merged
on or before the cutoff day, **after** = merged later. Each task counts once, by its first attempt (so that
the exact test gets whole counts of independent tasks); a first attempt that ended in an error of the
harness counts on neither side, and neither does a task without `merged_at` (never merged upstream, or
its date not known): both are said. Each side shows resolved/tasks, the rate and its 95% Wilson score
interval; the difference is tested with Fisher's exact test (two-sided, `scipy.stats.fisher_exact`) on the
2x2 table (side x resolved). With fewer than `MIN_TASKS` tasks on a side the section says so instead of
reading anything into the numbers ("too few tasks merged after the cutoff to tell (3)").

`quarter_rates` is the chart's table: per agent and merge quarter, the first attempts' resolved rate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core.record import Status
from kotlin_bench.core.render import Section, percent, plural
from kotlin_bench.dataset.dates import day_of, quarter_of
from kotlin_bench.results.stats import wilson_interval

MIN_TASKS = 10  # fewer tasks than this on either side: too few to tell


def fisher_exact_p(a: int, b: int, c: int, d: int) -> float:
    """Two-sided p-value of Fisher's exact test of the 2x2 table [[a, b], [c, d]]."""
    from scipy.stats import fisher_exact  # here: importing scipy.stats costs 0.5 s

    return float(fisher_exact([[a, b], [c, d]], alternative="two-sided").pvalue)


@dataclass(frozen=True)
class Side:
    """The tasks on one side of the cutoff: how many, how many resolved."""

    tasks: int
    resolved: int

    @property
    def rate(self) -> float:
        return self.resolved / self.tasks if self.tasks else math.nan

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.resolved, self.tasks) if self.tasks else (math.nan, math.nan)

    def text(self) -> str:
        if not self.tasks:
            return "no tasks"
        low, high = self.interval
        return f"{self.resolved}/{self.tasks} ({percent(self.rate)}, 95% CI {percent(low)} - {percent(high)})"


@dataclass(frozen=True)
class CutoffGap:
    """One agent's rates before and after its cutoff, and what can be said of the difference."""

    agent: str
    cutoff: date
    before: Side
    after: Side
    undated: int  # tasks of its first attempts without merged_at (never merged, or not known)
    errors: int  # first attempts that ended in an error of the harness

    @property
    def too_few(self) -> str | None:
        """`too few tasks merged after the cutoff to tell (3; ...)`, or None when both sides have enough."""
        short = [
            (n, s.tasks) for n, s in (("before", self.before), ("after", self.after)) if s.tasks < MIN_TASKS
        ]
        if not short:
            return None
        if len(short) == 1:
            name, count = short[0]
            return f"too few tasks merged {name} the cutoff to tell ({count}; at least {MIN_TASKS} needed)"
        return (
            f"too few tasks merged before or after the cutoff to tell (before {self.before.tasks}, after "
            f"{self.after.tasks}; at least {MIN_TASKS} needed on each side)"
        )

    @property
    def p_value(self) -> float:
        """Fisher's exact test (two-sided) of before against after; NaN when a side has no tasks."""
        if not self.before.tasks or not self.after.tasks:
            return math.nan
        b, a = self.before, self.after
        return fisher_exact_p(b.resolved, b.tasks - b.resolved, a.resolved, a.tasks - a.resolved)

    def difference(self) -> float:
        """Before minus after, in rate (NaN when a side has no tasks)."""
        return self.before.rate - self.after.rate

    def verdict(self) -> str:
        """One line: the difference and its test, or why nothing can be told."""
        if self.too_few:
            return self.too_few
        p, difference = self.p_value, self.difference()
        if difference == 0:
            shift = "the same rate before and after the cutoff"
        else:
            shift = f"{100 * abs(difference):.1f} points {'higher' if difference > 0 else 'lower'} before the cutoff"
        significant = "significant" if p < 0.05 else "not significant"
        return f"{shift}; Fisher's exact test p = {p:.4g} ({significant} at the 5% level)"

    def notes(self) -> str:
        left_out = []
        if self.undated:
            left_out.append(f"{plural(self.undated, 'task')} without merged_at (never merged, or not known)")
        if self.errors:
            left_out.append(f"{plural(self.errors, 'first attempt')} that ended in an error")
        return "; ".join(left_out) + " counted on neither side" if left_out else ""


def first_attempts(summary: pd.DataFrame, agent: str) -> pd.DataFrame:
    """The agent's first attempt of each task."""
    runs = summary[summary["agent"] == agent]
    return runs.sort_values("attempt").drop_duplicates("task", keep="first")


def _days(frame: pd.DataFrame) -> list[date | None]:
    if "merged_at" not in frame:
        return [None] * len(frame)
    return [day_of(v) if isinstance(v, str) else None for v in frame["merged_at"]]


def cutoff_gap(summary: pd.DataFrame, agent: str, cutoff: date) -> CutoffGap:
    """The agent's first attempts split at `cutoff` (merged on or before it: before)."""
    runs = first_attempts(summary, agent)
    days = _days(runs)
    status = list(runs["status"])
    sides: dict[bool, list[bool]] = {True: [], False: []}
    undated = errors = 0
    for day, state in zip(days, status, strict=True):
        if day is None:
            undated += 1
        elif state == Status.ERROR:
            errors += 1
        else:
            sides[day <= cutoff].append(state == Status.RESOLVED)
    before, after = (Side(len(sides[k]), sum(sides[k])) for k in (True, False))
    return CutoffGap(agent, cutoff, before, after, undated, errors)


def cutoff_gaps(summary: pd.DataFrame, cutoffs: Mapping[str, str]) -> list[CutoffGap]:
    """One gap per agent with a cutoff and runs in the summary, by agent name."""
    present = set(summary["agent"])
    return [
        cutoff_gap(summary, agent, date.fromisoformat(day))
        for agent, day in sorted(cutoffs.items())
        if agent in present
    ]


CUTOFF_NOTE = (
    "Each task counts once, by its agent's first attempt. Before: tasks whose fix was merged on or before "
    "the agent's training cutoff (its model may have seen the fix); after: merged later. 95% Wilson score "
    f"intervals; the difference is tested with Fisher's exact test (two-sided). With fewer than {MIN_TASKS} "
    "tasks on a side nothing is read into the numbers."
)


def p_cell(gap: CutoffGap) -> str:
    """The test's p-value, or why there is none to read (too few tasks on a side)."""
    return "- (too few tasks)" if gap.too_few else f"{gap.p_value:.4g}"


def cutoff_table(gaps: Sequence[CutoffGap]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(
        {
            "agent": [g.agent for g in gaps],
            "cutoff": [g.cutoff.isoformat() for g in gaps],
            "merged before (on or before the cutoff)": [g.before.text() for g in gaps],
            "merged after": [g.after.text() for g in gaps],
            "Fisher's exact p (two-sided)": [p_cell(g) for g in gaps],
            "not counted": [g.notes() for g in gaps],
        }
    )


def cutoff_section(gaps: Sequence[CutoffGap]) -> Section | None:
    """The section of summary.md and the site (None: no agent with a cutoff has runs)."""
    if not gaps:
        return None
    lines = [CUTOFF_NOTE] + [f"**{g.agent}** (cutoff {g.cutoff.isoformat()}): {g.verdict()}." for g in gaps]
    return Section("Before and after the training cutoff", lines, table=cutoff_table(gaps))


def quarter_rates(summary: pd.DataFrame) -> pd.DataFrame:
    """Per agent and merge quarter (`2024-Q3`): first attempts, resolved, rate (errors count as unresolved
    here, as in the overall rate); tasks without merged_at are left out, and so are quarters without tasks."""
    import pandas as pd

    rows = []
    for agent in sorted(set(summary["agent"])):
        runs = first_attempts(summary, agent)
        frame = runs.assign(quarter=[quarter_of(d) if d else None for d in _days(runs)])
        frame = frame[frame["quarter"].notna()]
        for quarter, group in frame.groupby("quarter", sort=True):
            resolved = int((group["status"] == Status.RESOLVED).sum())
            rows.append(
                {
                    "agent": agent,
                    "quarter": quarter,
                    "tasks": len(group),
                    "resolved": resolved,
                    "rate": resolved / len(group),
                }
            )
    return pd.DataFrame(rows, columns=["agent", "quarter", "tasks", "resolved", "rate"])
