"""The parts of summary.md and report.html: the headline, rate tables for people, why runs were not
resolved, and the errors with the command that reruns them."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.record import Status
from kotlin_bench.core.render import Section, agent_label, percent, plural

RERUN = "kotlin-bench errors --delete && snakemake --cores all"  # redoes exactly the failed steps


def headline(row: pd.Series) -> str:
    """`oracle: 4/4 resolved (100.0%), 0 errors`."""
    label = agent_label(row["agent"], row["model"])
    text = f"{label}: {row['resolved']}/{row['total']} resolved ({percent(row['resolve_rate'])})"
    return f"{text}, {plural(int(row['errors']), 'error')}"


def error_runs(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["status"] == Status.ERROR]


def error_note(errors: pd.DataFrame) -> str:
    """`N runs errored and are counted as unresolved in the rate; rerun them with ...`."""
    n = len(errors)
    verb, them = ("errored and is", "it") if n == 1 else ("errored and are", "them")
    return f"{plural(n, 'run')} {verb} counted as unresolved in the rate; rerun {them} with `{RERUN}`"


def display_rates(table: pd.DataFrame) -> pd.DataFrame:
    """The rates table for people: `3/4`, percentages, the interval, pass@k."""
    shown = pd.DataFrame({"agent": table["agent"], "model": table["model"].replace("", "-")})
    if "repository" in table:
        shown["repository"] = table["repository"]
    shown["resolved / total"] = [f"{r}/{t}" for r, t in zip(table["resolved"], table["total"], strict=True)]
    shown["unresolved"] = table["unresolved"]
    shown["errors"] = table["errors"]
    shown["rate (errors = unresolved)"] = table["resolve_rate"].map(percent)
    shown["rate excl. errors"] = table["resolve_rate_excl_errors"].map(percent)
    shown["95% CI (tasks resampled)"] = [
        f"{percent(lo)} - {percent(hi)}" for lo, hi in zip(table["ci95_low"], table["ci95_high"], strict=True)
    ]
    for col in (c for c in table.columns if c.startswith("pass@")):
        shown[col] = table[col].map(percent)
    return shown


def reason_counts(summary: pd.DataFrame, max_tasks: int = 5) -> pd.DataFrame:
    """Non-resolved runs per (agent, reason), with a few of their tasks."""
    failed = summary[summary["status"] != Status.RESOLVED]
    rows = [
        {
            "agent": agent,
            "reason": reason,
            "runs": len(group),
            "tasks": _some(sorted(set(group["task"])), max_tasks),
        }
        for (agent, reason), group in failed.groupby(["agent", "reason"], sort=True)
    ]
    return pd.DataFrame(rows, columns=["agent", "reason", "runs", "tasks"])


def _some(items: list[str], limit: int) -> str:
    more = f", ... (+{len(items) - limit})" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def error_table(errors: pd.DataFrame, width: int = 160) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "agent": errors["agent"],
            "task": errors["task"],
            "attempt": errors["attempt"],
            "step": errors["failed_step"].fillna("run"),
            "error type": errors["reason_detail"],
            "message": errors["error"].fillna("").str.slice(0, width),
        }
    )


def headlines(summary: pd.DataFrame, overall: pd.DataFrame) -> list[str]:
    lines = [headline(row) for _, row in overall.iterrows()]
    errors = error_runs(summary)
    return lines + ([error_note(errors)] if len(errors) else [])


def report_sections(
    summary: pd.DataFrame,
    overall: pd.DataFrame,
    by_repository: pd.DataFrame,
    verdicts: Sequence[str] = (),
) -> list[Section]:
    """The parts of summary.md and report.html, headline first."""
    sections = [
        Section("Headline", headlines(summary, overall)),
        Section("Resolve rate per agent", table=display_rates(overall)),
        Section("Resolve rate per repository", table=display_rates(by_repository)),
    ]
    if verdicts:
        sections.append(Section("Reproduction", list(verdicts)))
    reasons = reason_counts(summary)
    if len(reasons):
        sections.append(Section("Why runs were not resolved", table=reasons))
    errors = error_runs(summary)
    if len(errors):
        sections.append(
            Section(
                "Errors",
                [
                    "These runs failed on every retry; they count as unresolved. The command below redoes the "
                    "step that failed (a failed verification does not redo the agent's work)."
                ],
                error_table(errors),
                RERUN,
            )
        )
    return sections
