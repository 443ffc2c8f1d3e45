"""Our outcomes against a published leaderboard row: counts on the leaderboard's task set, Newcombe's interval, attempts, tokens and time."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.record import Status
from kotlin_bench.core.render import Section, percent, plural
from kotlin_bench.dataset import leaderboard
from kotlin_bench.results.reproduce.tasks import listed_names
from kotlin_bench.results.reproduce.verdicts import Verdict
from kotlin_bench.results.stats import newcombe_interval

# --------------------------------------------------------------------------- a leaderboard row


class Call(StrEnum):
    """The verdict against a leaderboard row."""

    REPRODUCED = "REPRODUCED"  # the 95% interval of the difference contains 0
    HIGHER = "HIGHER"  # ... lies above 0
    LOWER = "LOWER"  # ... lies below 0
    NOT_COMPARABLE = "NOT COMPARABLE"  # not the row's task set, or not all of it was run


class Basis(StrEnum):
    ERRORS_UNRESOLVED = "errors as unresolved"
    ERRORS_EXCLUDED = "errors excluded"


class Part(StrEnum):
    ROW = "row"  # the published row
    RATE = "rate"  # our resolved count against the row's, per basis and attempt
    USAGE = "usage"  # tokens, cost, time beside the row's
    TASK = "task"  # a task of the set not run or errored, or a run left out


MEAN = "mean"
MILLION = 1_000_000
LEADERBOARD_SCHEMA: dict[str, str] = {
    "part": "string",
    "basis": "string",
    "attempt": "string",
    "task": "string",
    "measure": "string",
    "ours_resolved": "float64",
    "ours_n": "float64",
    "ours": "float64",
    "reference_resolved": "float64",
    "reference_n": "float64",
    "reference": "float64",
    "difference": "float64",
    "ci95_low": "float64",
    "ci95_high": "float64",
    "call": "string",
    "note": "string",
}
LEADERBOARD_COLUMNS = list(LEADERBOARD_SCHEMA)


@dataclass(frozen=True)
class LeaderboardReference:
    """A published row and the task set it was evaluated on."""

    row: leaderboard.Row
    tasks: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.row.reference


def leaderboard_reference(spec: str, root: Path = Path(".")) -> LeaderboardReference:
    rows = leaderboard.load_rows(root / names.LEADERBOARD_CSV)
    row = leaderboard.find_row(rows, leaderboard.row_name(spec))
    return LeaderboardReference(row, tuple(leaderboard.task_set(root / names.BENCHMARK_SPEC)))


@dataclass(frozen=True)
class _Attempt:
    """One attempt's runs of the set: how many ran, resolved, errored, and which tasks were not run."""

    attempt: int
    runs: int
    resolved: int
    errors: int
    missing: tuple[str, ...]


def _attempts(in_set: pd.DataFrame, wanted: Sequence[str]) -> list[_Attempt]:
    found = []
    for attempt, runs in in_set.groupby("attempt", sort=True):
        status, ran = runs["status"], set(runs["task"])
        missing = tuple(t for t in wanted if t not in ran)
        found.append(
            _Attempt(
                int(attempt),
                len(runs),
                int((status == Status.RESOLVED).sum()),
                int((status == Status.ERROR).sum()),
                missing,
            )
        )
    return found


def _call(low: float, high: float) -> Call:
    if low > 0:
        return Call.HIGHER
    if high < 0:
        return Call.LOWER
    return Call.REPRODUCED


def _rate(
    basis: Basis, attempt: str, resolved: float, n: float, row: leaderboard.Row, problem: str | None
) -> dict[str, Any]:
    """One line of the comparison: resolved of n against the row's, with the interval and call."""
    record: dict[str, Any] = {
        "part": Part.RATE,
        "basis": basis,
        "attempt": attempt,
        "ours_resolved": resolved,
        "ours_n": n,
        "ours": resolved / n if n else math.nan,
        "reference_resolved": row.resolved,
        "reference_n": row.submitted,
        "reference": row.resolved / row.submitted,
        "note": problem,
    }
    record["difference"] = record["ours"] - record["reference"]
    if problem is None and n <= 0:
        problem = record["note"] = "every run errored"
    if problem is None:
        low, high = newcombe_interval(resolved, n, row.resolved, row.submitted)
        record.update(ci95_low=low, ci95_high=high, call=_call(low, high))
    else:
        record["call"] = Call.NOT_COMPARABLE
    return record


def _set_problem(
    row: leaderboard.Row, wanted: Sequence[str], ours: pd.DataFrame, in_set: pd.DataFrame
) -> str | None:
    """Why no attempt can be compared at all (None: each attempt is judged on its own)."""
    if len(wanted) != row.submitted:
        return f"the row evaluated {row.submitted} tasks, the leaderboard's set here has {len(wanted)}"
    if in_set.empty:
        seen = sorted(set(ours["task"]))
        return (
            f"none of the leaderboard's {len(wanted)} tasks was run (the summary has "
            f"{plural(len(seen), 'task')} of this agent: {listed_names(seen) or 'none'})"
        )
    return None


def _missing_note(item: _Attempt, size: int) -> str | None:
    if not item.missing:
        return None
    return (
        f"{len(item.missing)} of the leaderboard's {size} tasks not run in attempt {item.attempt}: "
        f"{listed_names(list(item.missing))}"
    )


def _rate_lines(
    attempts: list[_Attempt], size: int, row: leaderboard.Row, problem: str | None
) -> list[dict[str, Any]]:
    lines = []
    for item in attempts:
        why = problem or _missing_note(item, size)
        n = item.runs if item.missing else size
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, str(item.attempt), item.resolved, n, row, why))
        lines.append(
            _rate(Basis.ERRORS_EXCLUDED, str(item.attempt), item.resolved, n - item.errors, row, why)
        )
    if len(attempts) > 1:
        incomplete = [item for item in attempts if item.missing]
        why = problem or (_missing_note(incomplete[0], size) if incomplete else None)
        resolved = statistics.fmean(item.resolved for item in attempts)
        kept = statistics.fmean(size - item.errors for item in attempts)
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, MEAN, resolved, size, row, why))
        lines.append(_rate(Basis.ERRORS_EXCLUDED, MEAN, resolved, kept, row, why))
    return lines


def _task_lines(in_set: pd.DataFrame, attempts: list[_Attempt], left_out: list[str]) -> list[dict[str, Any]]:
    lines = [
        {"part": Part.TASK, "attempt": str(item.attempt), "task": task, "note": "not run"}
        for item in attempts
        for task in item.missing
    ]
    errored = in_set[in_set["status"] == Status.ERROR].sort_values(["attempt", "task"])
    lines += [
        {
            "part": Part.TASK,
            "attempt": str(run.attempt),
            "task": run.task,
            "note": f"errored ({run.reason_detail if isinstance(run.reason_detail, str) else 'error'})",
        }
        for run in errored.itertuples()
    ]
    lines += [
        {"part": Part.TASK, "task": task, "note": "not in the leaderboard's set: left out"}
        for task in left_out
    ]
    return lines


def _per_attempt(in_set: pd.DataFrame, values: pd.Series) -> tuple[float, int]:
    """The mean over attempts of the per-attempt sum of `values` (NaN where none was reported), and how
    many runs reported one."""
    reported = values.notna()
    if not reported.any():
        return math.nan, 0
    sums = values[reported].groupby(in_set.loc[reported, "attempt"]).sum()
    return float(sums.sum() / in_set["attempt"].nunique()), int(reported.sum())


def _elapsed(runs: pd.DataFrame) -> float:
    """First start to last finish of the runs (seconds); a run's finish is its start plus total_sec."""
    start = pd.to_datetime(runs["started_at"], utc=True, errors="coerce", format="ISO8601")
    finish = start + pd.to_timedelta(runs["total_sec"].fillna(0.0), unit="s")
    if start.isna().all():
        return math.nan
    return float((finish.max() - start.min()).total_seconds())


def _usage_lines(in_set: pd.DataFrame, row: leaderboard.Row, size: int) -> list[dict[str, Any]]:
    if in_set.empty:
        return []
    k = in_set["attempt"].nunique()
    runs = len(in_set)
    inputs, cache, outputs = (
        in_set[c].astype("Float64") for c in ("input_tokens", "cache_tokens", "output_tokens")
    )
    every = (inputs + outputs).astype(float)
    uncached = (inputs - cache.fillna(0) + outputs).astype(float)
    lines = []
    per = "per attempt, mean of the attempts" if k > 1 else "one run of the set"
    for measure, values in (
        ("tokens (M): input (cache reads included) + output", every),
        ("tokens (M): input without cache reads + output", uncached),
    ):
        total, reported = _per_attempt(in_set, values)
        lines.append(
            {
                "measure": measure,
                "ours": total / MILLION,
                "reference": row.tokens_m,
                "note": f"{per}; {reported} of {runs} runs reported tokens; if the row's "
                f"figure is per task: ours is {total / MILLION / size:.3f} M per task",
            }
        )
    cost, reported = _per_attempt(in_set, in_set["cost_usd"])
    lines.append(
        {
            "measure": "cost (USD)",
            "ours": cost,
            "note": f"{per}; {reported} of {runs} runs reported cost; not published",
        }
    )
    agent, reported = _per_attempt(in_set, in_set["agent_sec"])
    lines.append(
        {
            "measure": "wall time (s): sum of the agent phases",
            "ours": agent,
            "reference": row.latency_sec,
            "note": f"{per}, as if one task ran at a time; the row's is the whole run's wall time",
        }
    )
    lines.append(
        {
            "measure": "wall time (s): first start to last finish",
            "ours": _elapsed(in_set),
            "reference": row.latency_sec,
            "note": f"{'all attempts' if k > 1 else 'the runs'} of the set, at the concurrency they ran with",
        }
    )
    return [{"part": Part.USAGE, **line} for line in lines]


def compare_leaderboard(ours: pd.DataFrame, reference: LeaderboardReference) -> pd.DataFrame:
    """One agent's summary rows against a leaderboard row, on the row's task set (LEADERBOARD_SCHEMA)."""
    row, wanted = reference.row, reference.tasks
    in_set = ours[ours["task"].isin(set(wanted))]
    left_out = sorted(set(ours["task"]) - set(wanted))
    attempts = _attempts(in_set, wanted)
    problem = _set_problem(row, wanted, ours, in_set)
    published = {
        "part": Part.ROW,
        "measure": row.setup,
        "reference_resolved": row.resolved,
        "reference_n": row.submitted,
        "reference": row.resolved / row.submitted,
        "ours_n": len(wanted),
        "note": f"evaluated {row.date}; {row.source}",
    }
    lines = [published, *_rate_lines(attempts, len(wanted), row, problem)]
    if problem is not None and not attempts:
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, "", 0, 0, row, problem))
    lines += _usage_lines(in_set, row, len(wanted)) + _task_lines(in_set, attempts, left_out)
    frame = pd.DataFrame(lines).reindex(columns=LEADERBOARD_COLUMNS)
    return frame.astype(LEADERBOARD_SCHEMA)


def read_leaderboard_comparison(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=LEADERBOARD_SCHEMA, keep_default_na=False, na_values=[""])


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _fraction(resolved: float, n: float) -> str:
    return f"{_count(resolved)}/{_count(n)}"


def _pts(value: float) -> str:
    return f"{100 * value:+.1f}"


def _judged(line: pd.Series) -> str:
    """`REPRODUCED: 88/105 resolved against the published 90/105 (-1.9 pts, 95% CI -11.8 to +8.0)`."""
    if line["call"] == Call.NOT_COMPARABLE:
        return f"{Call.NOT_COMPARABLE}: {line['note']}"
    return (
        f"{line['call']}: {_fraction(line['ours_resolved'], line['ours_n'])} resolved against the published "
        f"{_fraction(line['reference_resolved'], line['reference_n'])} ({_pts(line['difference'])} pts, "
        f"95% CI {_pts(line['ci95_low'])} to {_pts(line['ci95_high'])})"
    )


def _primary(rates: pd.DataFrame, basis: Basis) -> pd.Series:
    lines = rates[rates["basis"] == basis]
    mean = lines[lines["attempt"] == MEAN]
    return (mean if len(mean) else lines).iloc[0]


def _spread(rates: pd.DataFrame) -> list[float]:
    lines = rates[(rates["basis"] == Basis.ERRORS_UNRESOLVED) & (rates["attempt"] != MEAN)]
    return [float(v) for v in lines["ours_resolved"]] if len(lines) > 1 else []


def leaderboard_verdict(comparison: pd.DataFrame) -> str:
    """The verdict line: the primary call (errors as unresolved; the mean with several attempts), then
    the call with errors excluded when errors changed n, and the spread across attempts."""
    rates = comparison[comparison["part"] == Part.RATE]
    first = _primary(rates, Basis.ERRORS_UNRESOLVED)
    text = _judged(first)
    if first["call"] == Call.NOT_COMPARABLE:
        return text
    spread = _spread(rates)
    if first["attempt"] == MEAN:
        text = text.replace(": ", f": mean of {len(spread)} attempts, ", 1)
    excluded = _primary(rates, Basis.ERRORS_EXCLUDED)
    if excluded["ours_n"] != first["ours_n"]:
        text += (
            f"; with errored runs excluded: {excluded['call']}, "
            f"{_fraction(excluded['ours_resolved'], excluded['ours_n'])} ({_pts(excluded['difference'])} pts, "
            f"95% CI {_pts(excluded['ci95_low'])} to {_pts(excluded['ci95_high'])})"
        )
    if spread:
        text += (
            f"; resolved per attempt {min(spread):.0f}-{max(spread):.0f} (sd {statistics.stdev(spread):.1f})"
        )
    return text


def _rates_table(rates: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "basis": rates["basis"],
            "attempt": rates["attempt"],
            "ours": [
                f"{_fraction(r, n)} ({percent(o)})" if n else "-"
                for r, n, o in zip(rates["ours_resolved"], rates["ours_n"], rates["ours"], strict=True)
            ],
            "published": [
                f"{_fraction(r, n)} ({percent(v)})"
                for r, n, v in zip(
                    rates["reference_resolved"], rates["reference_n"], rates["reference"], strict=True
                )
            ],
            "difference": [("" if pd.isna(d) else f"{_pts(d)} pts") for d in rates["difference"]],
            "95% CI (Newcombe)": [
                "" if pd.isna(lo) else f"{_pts(lo)} to {_pts(hi)} pts"
                for lo, hi in zip(rates["ci95_low"], rates["ci95_high"], strict=True)
            ],
            "verdict": rates["call"],
        }
    )


def _usage_value(measure: str, value: float) -> str:
    if pd.isna(value):
        return "-"
    if measure.startswith("tokens"):
        return f"{value:.2f} M ({round(value * MILLION):,} tokens)"
    if measure.startswith("wall time"):
        return leaderboard.format_duration(value)
    return f"{value:.2f}"


def _usage_table(usage: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "measure": usage["measure"],
            "ours": [_usage_value(m, v) for m, v in zip(usage["measure"], usage["ours"], strict=True)],
            "published": [
                _usage_value(m, v) for m, v in zip(usage["measure"], usage["reference"], strict=True)
            ],
            "ours / published": [
                "" if pd.isna(o) or pd.isna(r) or not r else f"{o / r:.2f}"
                for o, r in zip(usage["ours"], usage["reference"], strict=True)
            ],
            "note": usage["note"],
        }
    )


def _task_set_lines(comparison: pd.DataFrame) -> list[str]:
    row = comparison[comparison["part"] == Part.ROW].iloc[0]
    tasks = comparison[comparison["part"] == Part.TASK]
    size = int(row["ours_n"])
    excluded = ", ".join(f"`{t}`" for t in leaderboard.EXCLUDED)
    lines = [
        f"The comparison uses exactly the leaderboard's {size} tasks: the benchmark's tasks without "
        f"{excluded} (an inference: every row submitted {size} tasks, and the benchmark had those "
        f"{size} before that task was added)."
    ]
    for note, what in (("not run", "not run"), ("not in the leaderboard's set: left out", "left out")):
        chosen = tasks[tasks["note"] == note]
        if len(chosen):
            label = (
                f"{plural(len(chosen), 'run')} {what}"
                if what == "left out"
                else f"{plural(len(chosen), 'task')} {what}"
            )
            lines.append(f"{label}: {listed_names([_with_attempt(r) for r in chosen.itertuples()])}")
    errored = tasks[tasks["note"].str.startswith("errored", na=False)]
    if len(errored):
        lines.append(
            f"{plural(len(errored), 'run')} errored (counted both ways above): "
            f"{listed_names([f'{_with_attempt(r)} {r.note}' for r in errored.itertuples()])}"
        )
    return lines


def _with_attempt(line: Any) -> str:
    return line.task if pd.isna(line.attempt) or not line.attempt else f"{line.task} (attempt {line.attempt})"


def leaderboard_sections(verdict_: Verdict, comparison: pd.DataFrame) -> list[Section]:
    row = comparison[comparison["part"] == Part.ROW].iloc[0]
    rates = comparison[comparison["part"] == Part.RATE]
    usage = comparison[comparison["part"] == Part.USAGE]
    published = _fraction(row["reference_resolved"], row["reference_n"])
    lines = [
        verdict_.text,
        f"agent `{verdict_.agent}` against the leaderboard row `{row['measure']}` (published: {published} "
        f"resolved, {percent(row['reference'])}; {row['note']}).",
        "Method: our resolved count and the row's as two independent proportions; 95% interval of the "
        "difference by Newcombe's hybrid score method; REPRODUCED when it contains 0, HIGHER or LOWER when "
        "it lies above or below 0. Errored runs are counted as unresolved (the verdict) and excluded (n shrinks).",
    ]
    sections = [
        Section("Verdict", lines),
        Section("Resolved on the leaderboard's tasks", table=_rates_table(rates)),
    ]
    spread = _spread(rates)
    if spread:
        sections.append(
            Section(
                "Attempts",
                [
                    f"Resolved per attempt (errors as unresolved): {', '.join(_count(v) for v in spread)}; "
                    f"min {_count(min(spread))}, max {_count(max(spread))}, mean {statistics.fmean(spread):.1f}, "
                    f"sd {statistics.stdev(spread):.1f}; published: {_count(row['reference_resolved'])} "
                    "(a single number)."
                ],
            )
        )
    if len(usage):
        sections.append(
            Section(
                "Tokens and time",
                [f"The row's tokens are {leaderboard.TOKENS_UNIT}; its wall time is the whole run's."],
                _usage_table(usage),
            )
        )
    sections.append(Section("Task set", _task_set_lines(comparison)))
    return sections


