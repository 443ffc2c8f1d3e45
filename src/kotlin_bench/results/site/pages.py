"""What each page of the results site shows, gathered from the run records, the summary and the files of
the run directories (the templates under `templates/` only lay it out)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, Usage
from kotlin_bench.core.record_parts import VerifierReport
from kotlin_bench.results.compare import Comparison, interval, p_text, points
from kotlin_bench.results.cutoff import CUTOFF_NOTE, CutoffGap, cutoff_table
from kotlin_bench.results.outcomes import LegendRow, legend, outcome_of, reason_of
from kotlin_bench.results.report import WILSON_HEADER, display_rates, duration, money, reason_text, tokens
from kotlin_bench.runs.agents import kind_named
from kotlin_bench.scoring.expected import CATEGORIES

TAIL_LINES = 40
TAIL_BYTES = 16 << 10
DIFF_BYTES = 512 << 10
INSTRUCTION_BYTES = 64 << 10
TRAJECTORY_STEPS = 300
STEP_CHARS = 1200

EGRESS_ROWS = 500  # the run page lists the first requests; egress.jsonl has them all


def href(target: str | Path, page: str | Path) -> str:
    """`target` relative to the directory of `page` (both relative to the same root), as a URL path."""
    return Path(os.path.relpath(target, Path(page).parent)).as_posix()


def outcome_class(status: str, reason: Any) -> str:
    """The CSS class of a run's outcome (`k-resolved`, `k-tests`, ...: one colour vocabulary)."""
    return f"k-{outcome_of(status, reason)}"


def outcome_word(status: str, reason: Any) -> str:
    """`resolved`, or the reason word of an unresolved or errored run (an error: `infrastructure`)."""
    word = reason_of(status, reason)
    return "resolved" if word is None else word.value


def read_text(path: Path, limit: int) -> tuple[str, bool]:
    """The first `limit` bytes of a file as text, and whether it was cut."""
    with path.open("rb") as stream:
        data = stream.read(limit + 1)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit


def tail(path: Path, lines: int = TAIL_LINES, limit: int = TAIL_BYTES) -> str:
    """The last lines of a log (at most `limit` bytes are read)."""
    with path.open("rb") as stream:
        size = path.stat().st_size
        stream.seek(max(0, size - limit))
        text = stream.read().decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


# --------------------------------------------------------------------------- one run


@dataclass
class Log:
    label: str
    href: str
    tail: str
    bytes: int


@dataclass
class DiffLine:
    kind: str  # add, del, hunk, meta, ctx
    text: str


def diff_lines(text: str) -> list[DiffLine]:
    found = []
    for line in text.splitlines():
        if line.startswith(
            ("diff --git", "index ", "--- ", "+++ ", "new file", "deleted file", "similarity")
        ):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        found.append(DiffLine(kind, line))
    return found


@dataclass
class Category:
    name: str
    expected: Any
    landed: Any
    missing: list[str]


def categories(verifier: VerifierReport) -> list[Category]:
    """Expected against landed tests per category, with the names of those that did not pass."""
    rows = []
    for name in CATEGORIES:
        counts = verifier.category(name)
        expected = "-" if counts.expected is None else counts.expected
        landed = "-" if counts.landed is None else counts.landed
        rows.append(Category(name, expected, landed, list(counts.missing or [])))
    return rows


def _step_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= STEP_CHARS else text[:STEP_CHARS] + " [...]"


def trajectory_steps(path: Path) -> list[dict[str, str]]:
    """An agent's trajectory (ATIF `trajectory.json`, Harbor's or a script's) as short steps: who, the message, tool calls, results."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    steps = data.get("steps") if isinstance(data, dict) else None
    rows = []
    for step in (steps or [])[:TRAJECTORY_STEPS]:
        if not isinstance(step, dict):
            continue
        calls = [
            f"{c.get('function_name', '?')}({_step_text(c.get('arguments', ''))})"
            for c in step.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        observation = step.get("observation") or {}
        results = observation.get("results") if isinstance(observation, dict) else None
        seen = [_step_text(r.get("content", "")) for r in results or [] if isinstance(r, dict)]
        rows.append(
            {
                "id": str(step.get("step_id", len(rows) + 1)),
                "source": str(step.get("source", "")),
                "message": _step_text(step.get("message") or ""),
                "calls": "\n".join(calls),
                "observation": "\n".join(seen),
            }
        )
    return rows


def run_logs(run_dir: Path, result: RunResult, page: str, root: Path) -> list[Log]:
    """Tails of the run's logs that exist, each with a link to the whole file."""
    work = run_dir / names.WORK_DIR
    candidates = [
        ("verifier", run_dir / names.VERIFIER_LOG),
        ("test output", run_dir / names.VERIFIER_OUT / names.TEST_OUTPUT_LOG),
        ("agent", work / names.AGENT_LOG),
        ("capture", work / names.CAPTURE_LOG),
        ("egress proxy", work / names.PROXY_LOG),
        *((label, work / rel) for label, rel in kind_named(result.kind).logs),
        ("leftover processes", run_dir / names.VERIFIER_OUT / names.LEFTOVER_PROCESSES),
    ]
    solve_log = names.solve_log(result.agent, result.task, result.attempt)
    verify_log = names.verify_log(result.agent, result.task, result.attempt)
    candidates += [
        ("solve job", root / solve_log),
        ("solve job: failed tries", root / names.tries_log(solve_log)),
        ("verify job", root / verify_log),
        ("verify job: failed tries", root / names.tries_log(verify_log)),
    ]
    logs = []
    for label, path in candidates:
        if path.is_file():
            rel = path.relative_to(root)
            logs.append(Log(label, href(rel, page), tail(path), path.stat().st_size))
    return logs


def usage_rows(usage: Usage, solve_tries: int = 1) -> list[tuple[str, str]]:
    """The agent's usage (`kotlin_bench.core.record.Usage`, any kind), as the run page shows it."""
    rows = []
    for value, label in (
        (usage.input_tokens, "input tokens"),
        (usage.cache_tokens, "cache tokens"),
        (usage.output_tokens, "output tokens"),
        (usage.model_calls, "model calls"),
    ):
        if value is not None:
            rows.append((label, f"{int(value):,}"))
    if usage.cost_usd is not None:
        rows.append(("cost", money(float(usage.cost_usd))))
    if solve_tries > 1:
        rows.append(("solve tries", str(solve_tries)))
    return rows


# --------------------------------------------------------------------------- one task


def _number(value: Any) -> str:
    import pandas as pd

    return (
        "-"
        if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value)
        else str(value)
    )


def task_rows(runs: pd.DataFrame, page: str) -> list[dict[str, str]]:
    """One row per run of the task (agent, attempt order), for its page."""
    import pandas as pd

    rows = []
    for run in runs.sort_values(["agent", "attempt"]).itertuples():
        tests = {
            c: f"{_number(getattr(run, f'{c}_landed'))}/{_number(getattr(run, f'{c}_expected'))}"
            for c in CATEGORIES
        }
        rows.append(
            {
                "agent": str(run.agent),
                "attempt": str(run.attempt),
                "href": href(names.site_run_page(run.agent, run.task, run.attempt), page),
                "status": str(run.status),
                "cls": outcome_class(str(run.status), run.reason),
                "reason": "" if pd.isna(run.reason) else str(run.reason),
                "meaning": "" if pd.isna(run.reason) else reason_text(str(run.reason)),
                **tests,
                "agent_time": duration(run.agent_sec),
                "tokens": f"{tokens(run.input_tokens)} / {tokens(run.output_tokens)}",
                "cost": money(run.cost_usd),
            }
        )
    return rows


# --------------------------------------------------------------------------- the index


@dataclass
class Grid:
    """The task x agent grid: agents (columns), repositories (filter), the legend of the outcomes present,
    and one row per task (each cell: the attempts' (link, CSS classes)). A square's classes are its
    outcome's colour (`k-<outcome>`) and its word's index in `words` (`w<i>`): a few bytes per run, so
    the index of 15,000 runs stays small; the page's script names a square on hover."""

    agents: list[str]
    repositories: list[str]
    legend: list[LegendRow]
    rows: list[dict[str, Any]]
    attempts: int
    words: list[str]  # `resolved` and the reason words present

    def word_class(self, word: str) -> str:
        return f"w{self.words.index(word)}"


def grid(summary: pd.DataFrame) -> Grid:
    agents = sorted(set(summary["agent"]))
    repositories = sorted(set(summary["repository"].fillna("")))
    repo_index = {r: i for i, r in enumerate(repositories)}
    agent_index = {a: i for i, a in enumerate(agents)}
    cells: dict[str, dict[int, list[tuple[str, str]]]] = {}
    repo_of: dict[str, str] = {}
    present: set[tuple[str, str | None]] = set()
    ordered = summary.sort_values(["task", "agent", "attempt"])
    words = sorted({outcome_word(s, r) for s, r in zip(ordered["status"], ordered["reason"], strict=True)})
    for task, agent, attempt, status, reason, repository in zip(
        ordered["task"], ordered["agent"], ordered["attempt"], ordered["status"], ordered["reason"],
        ordered["repository"].fillna(""), strict=True,
    ):  # fmt: skip
        word = outcome_word(status, reason)
        present.add((outcome_of(status, reason), None if word == "resolved" else word))
        link = f"runs/{agent}/{task}/attempt-{attempt}.html"
        classes = f"{outcome_class(status, reason)} w{words.index(word)}"
        cells.setdefault(task, {}).setdefault(agent_index[agent], []).append((link, classes))
        repo_of[task] = repository
    rows = [
        {
            "task": task,
            "repo": repo_index[repo_of[task]],
            "cells": [cells[task].get(i, []) for i in range(len(agents))],
        }
        for task in sorted(cells)
    ]
    attempts = int(summary["attempt"].max()) if len(summary) else 0
    return Grid(agents, repositories, legend(present), rows, attempts, words)


def rate_table(table: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    shown = display_rates(table)
    return list(shown.columns), [[str(v) for v in row] for row in shown.itertuples(index=False)]


@dataclass
class CutoffView:
    """The index's section on the agents' training cutoffs: the note, one line per agent, the table."""

    note: str
    lines: list[tuple[str, str, str]]  # agent, cutoff, what it says
    table: tuple[list[str], list[list[str]]]


def cutoff_view(gaps: Sequence[CutoffGap]) -> CutoffView | None:
    if not gaps:
        return None
    shown = cutoff_table(gaps)
    rows = [[str(v) for v in row] for row in shown.itertuples(index=False)]
    lines = [(g.agent, g.cutoff.isoformat(), g.verdict()) for g in gaps]
    return CutoffView(CUTOFF_NOTE, lines, (list(shown.columns), rows))


@dataclass
class PairRow:
    comparison: Comparison
    href: str

    @property
    def cells(self) -> list[str]:
        c = self.comparison
        return [
            c.scope,
            str(c.tasks),
            str(c.only_a),
            str(c.only_b),
            points(c.difference),
            f"{interval(c.ci_low, c.ci_high)} ({c.ci_method})",
            interval(c.bootstrap_low, c.bootstrap_high),
            f"{p_text(c.p_value)} ({c.test})",
        ]


PAIR_HEADER = [
    "scope",
    "tasks",
    "only a",
    "only b",
    "difference (a - b)",
    "95% CI",
    "95% CI (paired bootstrap)",
    "p",
]
__all__ = ["PAIR_HEADER", "WILSON_HEADER", "Grid", "PairRow", "grid", "task_rows"]
