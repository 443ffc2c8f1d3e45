"""Charts (PNG, matplotlib's Agg canvas, no pyplot state).

- `rate_chart`: overall resolve rate per agent, with its 95% bootstrap interval and counts;
- `repository_chart`: resolve rate per repository, one bar per agent, `resolved/total` on each bar;
- `outcome_chart`: a task x run grid coloured by outcome: resolved, the class of the agent's unresolved
  outcome, infrastructure, not run (the one colour vocabulary of `kotlin_bench.results.outcomes`);
- `quarter_chart`: resolve rate by the quarter the tasks' fixes were merged, one line per agent, its training
  cutoff marked (`kotlin_bench.results.cutoff.quarter_rates`).

The HTML report that embeds them is `kotlin_bench.core.render.render_html`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import PercentFormatter

from kotlin_bench.core.fsutil import atomic_path
from kotlin_bench.core.render import agent_label, plural
from kotlin_bench.dataset.dates import quarter_of, quarters_between
from kotlin_bench.results.outcomes import COLOURS, LABELS, NOT_RUN, ORDER, is_agent_outcome, outcome_of

OUTCOMES = ORDER
BAR_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
DPI = 110


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=DPI, bbox_inches="tight")


def _labels(table: pd.DataFrame) -> list[str]:
    return [agent_label(a, m) for a, m in zip(table["agent"], table["model"], strict=True)]


def _count_text(resolved: int, total: int, errors: int) -> str:
    return f"{resolved}/{total}" + (f"\n{errors} err" if errors else "")


# --------------------------------------------------------------------------- charts


def rate_chart(overall: pd.DataFrame, path: Path) -> None:
    """Horizontal bars: resolve rate per agent, whiskers at the 95% Wilson score interval."""
    labels = _labels(overall)
    figure = Figure(figsize=(7.0, 1.2 + 0.5 * max(1, len(labels))))
    ax = figure.add_subplot()
    y = np.arange(len(labels))
    rate = overall["resolve_rate"].to_numpy(dtype=float)
    low = np.clip(rate - overall["wilson_low"].to_numpy(dtype=float), 0, None)
    high = np.clip(overall["wilson_high"].to_numpy(dtype=float) - rate, 0, None)
    ax.barh(y, rate, xerr=[low, high], color=BAR_COLOURS[0], capsize=4, height=0.6)
    for i, row in enumerate(overall.itertuples()):
        text = f"{row.resolved}/{row.total} ({100 * row.resolve_rate:.1f}%)"
        text += f", {plural(row.errors, 'error')}" if row.errors else ""
        ax.text(1.02, i, text, va="center", fontsize=9)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.0)
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("resolve rate (errors count as unresolved); whiskers: 95% Wilson score interval")
    ax.set_title("Resolve rate per agent")
    _save(figure, path)


def repository_chart(by_repository: pd.DataFrame, path: Path) -> None:
    """Grouped bars: resolve rate per repository, one bar per agent, counts annotated."""
    table = by_repository.assign(label=_labels(by_repository))
    repositories = sorted(table["repository"].unique())
    labels = list(dict.fromkeys(table["label"]))
    width = 0.8 / max(1, len(labels))
    figure = Figure(figsize=(max(6.0, 1.0 + len(repositories) * (0.45 * len(labels) + 0.5)), 4.8))
    ax = figure.add_subplot()
    x = np.arange(len(repositories))
    for i, label in enumerate(labels):
        rows = table[table["label"] == label].set_index("repository").reindex(repositories)
        offset = x - 0.4 + width * (i + 0.5)
        heights = rows["resolve_rate"].fillna(0).to_numpy(dtype=float)
        colour = BAR_COLOURS[i % len(BAR_COLOURS)]
        ax.bar(offset, heights, width * 0.92, label=label, color=colour)
        for xi, (_, row) in zip(offset, rows.iterrows(), strict=True):
            if not pd.isna(row["total"]):
                text = _count_text(int(row["resolved"]), int(row["total"]), int(row["errors"]))
                ax.text(xi, row["resolve_rate"] + 0.02, text, ha="center", va="bottom", fontsize=8)
    rotate = len(repositories) > 4
    ax.set_xticks(x, repositories, rotation=30 if rotate else 0, ha="right" if rotate else "center")
    ax.set_ylim(0, 1.18)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("resolve rate (errors count as unresolved)")
    ax.set_title("Resolve rate per repository (resolved/total on each bar)")
    ax.legend(title="agent", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    _save(figure, path)


def outcome_matrix(summary: pd.DataFrame) -> pd.DataFrame:
    """Rows: tasks (by repository, then id); columns: agents (`agent #k` per attempt when k > 1)."""
    attempts = summary.groupby("agent")["attempt"].max()
    column = [
        agent if attempts[agent] == 1 else f"{agent} #{attempt}"
        for agent, attempt in zip(summary["agent"], summary["attempt"], strict=True)
    ]
    outcomes = [outcome_of(s, r) for s, r in zip(summary["status"], summary["reason"], strict=True)]
    frame = summary.assign(column=column, outcome=outcomes)
    order = frame[["repository", "task"]].drop_duplicates("task").sort_values(["repository", "task"])["task"]
    columns = list(dict.fromkeys(frame.sort_values(["agent", "attempt"])["column"]))
    grid = frame.pivot(index="task", columns="column", values="outcome").astype(object)
    return grid.reindex(index=list(order), columns=columns).fillna(NOT_RUN)


def outcome_chart(summary: pd.DataFrame, path: Path) -> None:
    """The task x run grid with a legend of the outcome colours."""
    grid = outcome_matrix(summary)
    codes = grid.apply(lambda col: col.map(OUTCOMES.index)).to_numpy(dtype=float)
    longest = max((len(t) for t in grid.index), default=10)
    size = (2.0 + 0.075 * longest + 0.75 * grid.shape[1], 1.6 + 0.26 * grid.shape[0])
    figure = Figure(figsize=size)
    ax = figure.add_subplot()
    cmap = ListedColormap([COLOURS[o] for o in OUTCOMES])
    ax.imshow(codes, cmap=cmap, vmin=-0.5, vmax=len(OUTCOMES) - 0.5, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(grid.shape[1]), list(grid.columns), rotation=30, ha="left")
    ax.set_yticks(range(grid.shape[0]), list(grid.index), fontsize=8)
    ax.xaxis.tick_top()
    ax.set_xticks(np.arange(-0.5, grid.shape[1]), minor=True)
    ax.set_yticks(np.arange(-0.5, grid.shape[0]), minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="minor", length=0)
    present = set(grid.to_numpy().ravel())
    handles = [
        Patch(
            facecolor=COLOURS[o],
            edgecolor="#999999",
            label=LABELS[o] + ("" if o in ("resolved", NOT_RUN) or not is_agent_outcome(o) else " (agent)"),
        )
        for o in OUTCOMES
        if o in present
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False, title="outcome")
    ax.set_title("Outcome per task and run", pad=28)
    _save(figure, path)


def _quarter_position(day: date, quarters: list[str]) -> float | None:
    """Where a day falls on the quarter axis (quarter k spans k - 0.5 .. k + 0.5); None: off the axis."""
    quarter = quarter_of(day)
    if quarter not in quarters:
        return None
    start = date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    return quarters.index(quarter) - 0.5 + min(1.0, (day - start).days / 91.0)


def quarter_chart(quarters: pd.DataFrame, cutoffs: Mapping[str, str], path: Path) -> None:
    """Lines: resolve rate per merge quarter of the tasks, one line per agent (first attempts; the number
    of tasks on each point), each agent's training cutoff a dashed line of its colour."""
    present = sorted(set(quarters["quarter"]))
    axis = quarters_between(present[0], present[-1]) if present else []  # quarters without tasks too
    agents = sorted(set(quarters["agent"]))
    figure = Figure(figsize=(max(6.0, 1.5 + 0.55 * len(axis)), 4.4))
    ax = figure.add_subplot()
    for i, agent in enumerate(agents):
        colour = BAR_COLOURS[i % len(BAR_COLOURS)]
        rows = quarters[quarters["agent"] == agent]
        x = [axis.index(q) for q in rows["quarter"]]
        ax.plot(x, rows["rate"], marker="o", color=colour, label=agent)
        for xi, rate, tasks in zip(x, rows["rate"], rows["tasks"], strict=True):
            ax.annotate(
                str(tasks), (xi, rate), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7
            )
        position = _quarter_position(date.fromisoformat(cutoffs[agent]), axis) if agent in cutoffs else None
        if position is not None:
            ax.axvline(position, color=colour, linestyle="--", linewidth=1.2)
            ax.text(
                position, 1.12, f"{agent} cutoff", color=colour, rotation=90, va="top", ha="right", fontsize=7
            )
    if not axis:
        ax.text(
            0.5, 0.5, "no run of a task with a merge date", ha="center", va="center", transform=ax.transAxes
        )
    rotate = len(axis) > 8
    ax.set_xticks(range(len(axis)), axis, rotation=45 if rotate else 0, ha="right" if rotate else "center")
    ax.set_ylim(-0.02, 1.15)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("quarter the task's fix was merged (UTC)")
    ax.set_ylabel("resolve rate (first attempts)")
    ax.set_title("Resolve rate by merge quarter (tasks on each point; dashed: training cutoff)")
    if agents:
        ax.legend(title="agent", loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    _save(figure, path)
