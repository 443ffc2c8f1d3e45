"""The parts of summary.md and report.html: the headline, rate tables for people (with the Wilson interval,
tokens, cost and agent time), paired comparisons of the agents, why runs were not resolved (each reason
word with its text), and the errors with the command that reruns them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.record import Status
from kotlin_bench.core.render import Section, agent_label, percent, plural
from kotlin_bench.engine.disk import human
from kotlin_bench.engine.retention import ImageRow, ImageState
from kotlin_bench.results.compare import Comparison, display_comparisons
from kotlin_bench.results.cutoff import CutoffGap, cutoff_section
from kotlin_bench.scoring.reasons import REASON_TEXT, Reason

RERUN = "kotlin-bench errors --delete && snakemake --cores all"  # redoes exactly the failed steps


def headline(row: pd.Series) -> str:
    """`oracle: 4/4 resolved (100.0%), 0 errors`."""
    label = agent_label(row["agent"], row["model"])
    text = f"{label}: {row['resolved']}/{row['total']} resolved ({percent(row['resolve_rate'])})"
    return f"{text}, {plural(int(row['errors']), 'error')}"


def retrieval_note(summary: pd.DataFrame) -> str | None:
    """`N of M recorded runs flagged as retrieval (the egress record): resolved X%, Y% counting them as
    unresolved`, or None when no run's egress was recorded (docs/threat-model.md)."""
    if "retrieval" not in summary or summary["retrieval"].isna().all():
        return None
    recorded = summary[summary["retrieval"].notna()]
    flagged = recorded["retrieval"].astype(bool)
    resolved = summary["status"] == Status.RESOLVED
    total = len(summary)
    without = int((resolved & ~summary["retrieval"].fillna(False).astype(bool)).sum())
    return (
        f"{int(flagged.sum())} of {len(recorded)} recorded runs flagged as retrieval (the egress record): "
        f"resolved {percent(int(resolved.sum()) / total)}, {percent(without / total)} "
        "counting them as unresolved"
    )


def retrieval_headlines(summary: pd.DataFrame) -> list[str]:
    """A line for each agent with retrieval-flagged runs (its rate with and without them); one line for
    all when none is flagged; none when no run's egress was recorded."""
    if "retrieval" not in summary or summary["retrieval"].isna().all():
        return []
    flagged = summary["retrieval"].fillna(False).astype(bool)
    if not flagged.any():
        recorded = int(summary["retrieval"].notna().sum())
        return [f"retrieval: none of {plural(recorded, 'recorded run')} flagged (the egress record)"]
    agents = sorted(set(summary.loc[flagged, "agent"]))
    return [f"{agent}: {retrieval_note(summary[summary['agent'] == agent])}" for agent in agents]


def error_runs(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["status"] == Status.ERROR]


def error_note(errors: pd.DataFrame) -> str:
    """`N runs errored and are counted as unresolved in the rate; rerun them with ...`."""
    n = len(errors)
    verb, them = ("errored and is", "it") if n == 1 else ("errored and are", "them")
    return f"{plural(n, 'run')} {verb} counted as unresolved in the rate; rerun {them} with `{RERUN}`"


def display_rates(table: pd.DataFrame) -> pd.DataFrame:
    """The rates table for people: `3/4`, percentages, the interval, pass@k."""
    import pandas as pd

    shown = pd.DataFrame({"agent": table["agent"], "model": table["model"].replace("", "-")})
    if "repository" in table:
        shown["repository"] = table["repository"]
    shown["resolved / total"] = [f"{r}/{t}" for r, t in zip(table["resolved"], table["total"], strict=True)]
    shown["unresolved"] = table["unresolved"]
    shown["errors"] = table["errors"]
    shown["rate (errors = unresolved)"] = table["resolve_rate"].map(percent)
    shown["rate excl. errors"] = table["resolve_rate_excl_errors"].map(percent)
    if "resolve_rate_without_retrieval" in table:
        shown["rate without retrieval-flagged runs"] = table["resolve_rate_without_retrieval"].map(percent)
    shown[WILSON_HEADER] = [
        f"{percent(lo)} - {percent(hi)}"
        for lo, hi in zip(table["wilson_low"], table["wilson_high"], strict=True)
    ]
    for col in (c for c in table.columns if c.startswith("pass@")):
        shown[col] = table[col].map(percent)
    runs = table["total"].astype(float)
    shown["tokens in / out (per run)"] = [
        tokens_pair(i / n, o / n)
        for i, o, n in zip(table["input_tokens_total"], table["output_tokens_total"], runs, strict=True)
    ]
    shown["cost (USD, total)"] = table["cost_usd_total"].map(money)
    shown["agent time (per run)"] = table["agent_sec_mean"].map(duration)
    return shown


WILSON_HEADER = "95% CI (Wilson score, n = tasks)"


def tokens(value: float) -> str:
    import pandas as pd

    if pd.isna(value):
        return "-"
    for scale, unit in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"


def tokens_pair(input_tokens: float, output_tokens: float) -> str:
    import pandas as pd

    if pd.isna(input_tokens) and pd.isna(output_tokens):
        return "-"
    return f"{tokens(input_tokens)} / {tokens(output_tokens)}"


def money(value: float) -> str:
    import pandas as pd

    return "-" if pd.isna(value) else f"${value:,.2f}"


def duration(seconds: float) -> str:
    """`0.1 s`, `12.3 s`, `4m 05s`, `2h 03m`."""
    import pandas as pd

    if pd.isna(seconds):
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {sec:02d}s"


def reason_counts(summary: pd.DataFrame, max_tasks: int = 5) -> pd.DataFrame:
    """Non-resolved runs per (agent, reason), with a few of their tasks and what the reason means."""
    import pandas as pd

    failed = summary[summary["status"] != Status.RESOLVED]
    rows = [
        {
            "agent": agent,
            "reason": reason,
            "runs": len(group),
            "tasks": _some(sorted(set(group["task"])), max_tasks),
            "meaning": reason_text(reason),
        }
        for (agent, reason), group in failed.groupby(["agent", "reason"], sort=True)
    ]
    return pd.DataFrame(rows, columns=["agent", "reason", "runs", "tasks", "meaning"])


def reason_text(reason: str) -> str:
    """The plain-language text of a reason word (the vocabulary of kotlin_bench.scoring.reasons)."""
    try:
        return REASON_TEXT[Reason(reason)]
    except ValueError:
        return "not a word of the reason vocabulary (a result written by an older harness?)"


def _some(items: list[str], limit: int) -> str:
    more = f", ... (+{len(items) - limit})" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def error_table(errors: pd.DataFrame, width: int = 160) -> pd.DataFrame:
    import pandas as pd

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


RATE_NOTE = (
    "The interval is Wilson's score interval of the rate (errors count as unresolved) with n = the number of "
    "tasks, attempts averaged per task; tokens and agent time are means per run, cost the total."
)
COMPARISON_NOTE = (
    "On the tasks both agents ran: the tasks only one solves, the 95% interval of the difference of the "
    "rates (Newcombe's paired score method; over attempts, the paired bootstrap), the paired bootstrap "
    "interval (tasks resampled; it can collapse on uniform samples), and the exact McNemar test (over "
    "attempts, the exact sign test of the per-task rates). `kotlin-bench compare A B` prints one pair."
)


def headlines(summary: pd.DataFrame, overall: pd.DataFrame) -> list[str]:
    lines = [headline(row) for _, row in overall.iterrows()] + retrieval_headlines(summary)
    errors = error_runs(summary)
    return lines + ([error_note(errors)] if len(errors) else [])


def report_sections(
    summary: pd.DataFrame,
    overall: pd.DataFrame,
    by_repository: pd.DataFrame,
    verdicts: Sequence[str] = (),
    comparisons: Sequence[Comparison] = (),
    images: Sequence[ImageRow] = (),
    *,
    cutoffs: Sequence[CutoffGap] = (),
) -> list[Section]:
    """The parts of summary.md and report.html, headline first (the agents' cutoff gaps after the rates)."""
    sections = [
        Section("Headline", headlines(summary, overall)),
        Section("Resolve rate per agent", [RATE_NOTE], table=display_rates(overall)),
        Section("Resolve rate per repository", table=display_rates(by_repository)),
    ]
    gap = cutoff_section(cutoffs)
    if gap is not None:
        sections.append(gap)
    if comparisons:
        sections.append(
            Section(
                "Paired comparison of agents", [COMPARISON_NOTE], table=display_comparisons(list(comparisons))
            )
        )
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
    if images:
        sections.append(image_section(images))
    return sections


def gib(size: float | None) -> str:
    return "?" if size is None else f"{size / 2**30:.2f} GiB"


def _size_text(size: int | None) -> str:
    return "?" if size is None else human(size)


def image_section(images: Sequence[ImageRow]) -> Section:
    """The task images: size (layers shared with the base included), build time, and whether the engine
    still holds each (`images: {keep: bases}` releases them), for planning the disk of a larger run."""
    import pandas as pd

    sizes = [row.size for row in images if row.size is not None]
    own = [row.layers for row in images if row.layers is not None]
    held = [row.layers or 0 for row in images if row.state is ImageState.PRESENT]
    lines = [
        f"{plural(len(images), 'task image')}, largest {_size_text(max(sizes, default=None))} with its base; "
        f"on top of their bases they add {_size_text(sum(own))} in all (largest {_size_text(max(own, default=None))}), "
        f"{_size_text(sum(held))} of it on the engine now. A run of many tasks needs their bases plus, with "
        "`images: {keep: bases}`, about one task image's layers per job running at once."
    ]
    table = pd.DataFrame(
        [
            {
                "task": row.task,
                "image": row.image,
                "size": _size_text(row.size),
                "on its base": _size_text(row.layers),
                "build": duration(row.seconds),
                "now": str(row.state) + (" (built again)" if row.rebuilt else ""),
            }
            for row in images
        ]
    )
    return Section("Task images", lines, table=table)


def reasons_markdown() -> str:
    """The reason vocabulary as the README's table (a test keeps the README's copy equal to it)."""
    rows = [f"| `{reason.value}` | {REASON_TEXT[reason]} |" for reason in Reason]
    return "\n".join(["| reason | what it means |", "| --- | --- |", *rows])


def terminal_headline(summary: pd.DataFrame, overall: pd.DataFrame, verdicts: Sequence[str]) -> list[str]:
    """What a run's terminal ends on: per agent resolved/total, the rate and its interval, the errors; the
    reproduction verdicts; where the details are."""
    lines = []
    for _, row in overall.iterrows():
        label = agent_label(row["agent"], row["model"])
        interval = f"95% CI {percent(row['wilson_low'])} - {percent(row['wilson_high'])}"
        lines.append(
            f"{label}: {row['resolved']}/{row['total']} resolved ({percent(row['resolve_rate'])}, {interval}), "
            f"{plural(int(row['errors']), 'error')}"
        )
    errors = error_runs(summary)
    lines += [*verdicts, *([error_note(errors)] if len(errors) else [])]
    lines.append(f"details: {names.SUMMARY_MD}, {names.REPORT_HTML}, {names.SITE_INDEX}")
    return lines
