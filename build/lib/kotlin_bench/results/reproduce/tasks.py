"""Our outcomes against a reference table, task by task or repository by repository, and the verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from kotlin_bench.core.record import Status
from kotlin_bench.core.render import Section, percent, plural
from kotlin_bench.results.reproduce.plan import BUILTIN, DEFAULT_TOLERANCE, ReproduceError, reference_label
from kotlin_bench.results.reproduce.verdicts import Verdict
from kotlin_bench.results.stats import bootstrap_interval

TRUE = frozenset({"1", "1.0", "true", "yes", "resolved"})
FALSE = frozenset({"0", "0.0", "false", "no", "unresolved"})
MAX_LISTED = 20

COMPARISON_SCHEMA: dict[str, str] = {
    "level": "string",
    "task": "string",
    "repository": "string",
    "ours_resolved": "Int64",
    "ours_runs": "Int64",
    "ours": "float64",
    "reference": "float64",
    "delta": "float64",
    "ci95_low": "float64",
    "ci95_high": "float64",
    "agree": "boolean",
    "note": "string",
}
COMPARISON_COLUMNS = list(COMPARISON_SCHEMA)

# --------------------------------------------------------------------------- references


@dataclass(frozen=True)
class Reference:
    """Per-task outcomes (`task`, `resolved`, `repository`) or per-repository rates (`repository`, `rate`)."""

    label: str
    tasks: pd.DataFrame | None = None
    repositories: pd.DataFrame | None = None


def builtin_reference(name: str, ours: pd.DataFrame) -> Reference:
    """`oracle` resolves every task of our summary, `nop` none."""
    tasks = ours[["task", "repository"]].drop_duplicates("task").reset_index(drop=True)
    return Reference(name, tasks.assign(resolved=name == "oracle"))


def _truth(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise ReproduceError(f"{where}: resolved {value!r} is not one of 1/0, true/false, yes/no")


def _task_table(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    duplicated = sorted(set(frame.loc[frame["task"].duplicated(), "task"]))
    if duplicated:
        raise ReproduceError(f"{path}: tasks listed twice: {duplicated[:MAX_LISTED]}")
    resolved = [_truth(v, f"{path} task {t}") for t, v in zip(frame["task"], frame["resolved"], strict=True)]
    repository = frame.get("repository", pd.NA)
    return pd.DataFrame({"task": frame["task"], "repository": repository, "resolved": resolved})


def _rate_table(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    try:
        rate = frame["rate"].astype(float)
    except ValueError as exc:
        raise ReproduceError(f"{path}: rate is not a number ({exc})") from None
    if not rate.between(0.0, 1.0).all():
        raise ReproduceError(f"{path}: a rate is outside [0, 1] (write 0.75, not 75)")
    if frame["repository"].duplicated().any():
        raise ReproduceError(f"{path}: a repository is listed twice")
    return pd.DataFrame({"repository": frame["repository"], "rate": rate})


def read_reference(path: Path) -> Reference:
    """A reference CSV: `task,resolved[,repository]` or `repository,rate`."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    frame = frame.apply(lambda col: col.str.strip())
    if {"task", "resolved"} <= set(frame.columns):
        return Reference(path.name, tasks=_task_table(frame, path))
    if {"repository", "rate"} <= set(frame.columns):
        return Reference(path.name, repositories=_rate_table(frame, path))
    raise ReproduceError(
        f"{path}: expected columns task,resolved or repository,rate; found {list(frame.columns)}"
    )


def load_reference(spec: str, ours: pd.DataFrame) -> Reference:
    return builtin_reference(spec, ours) if spec in BUILTIN else read_reference(Path(spec))


# --------------------------------------------------------------------------- comparison


def our_tasks(ours: pd.DataFrame) -> pd.DataFrame:
    """Per task of one agent: repository, runs, resolved and errored attempts."""
    status = ours["status"]
    frame = ours.assign(is_resolved=status == Status.RESOLVED, is_error=status == Status.ERROR)
    return (
        frame.groupby("task", sort=True)
        .agg(
            repository=("repository", "first"),
            runs=("status", "size"),
            resolved=("is_resolved", "sum"),
            errors=("is_error", "sum"),
        )
        .reset_index()
    )


def _task_row(task: str, mine: pd.Series | None, ref: pd.Series | None) -> dict[str, Any]:
    row: dict[str, Any] = {"level": "task", "task": task, "agree": pd.NA, "note": ""}
    if mine is not None:
        runs, resolved, errors = int(mine["runs"]), int(mine["resolved"]), int(mine["errors"])
        row.update(
            repository=mine["repository"], ours_resolved=resolved, ours_runs=runs, ours=resolved / runs
        )
        row["note"] = f"{errors} of {runs} attempts errored" if errors else ""
    if ref is not None:
        row["reference"] = 1.0 if ref["resolved"] else 0.0
        if mine is None:
            row["repository"] = ref["repository"]
    if mine is None:
        row["note"] = "not run"
    elif ref is None:
        row["note"] = "not in the reference"
    elif int(mine["errors"]) == int(mine["runs"]):
        row.update(agree=False, note="all attempts errored")
    else:
        row["agree"] = (row["ours"] >= 0.5) == bool(ref["resolved"])
    row["delta"] = row.get("ours", math.nan) - row.get("reference", math.nan)
    return row


def compare_tasks(mine: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    ours = mine.set_index("task")
    ref = reference.set_index("task")
    tasks = sorted(set(ours.index) | set(ref.index))
    rows = [
        _task_row(t, ours.loc[t] if t in ours.index else None, ref.loc[t] if t in ref.index else None)
        for t in tasks
    ]
    return pd.DataFrame(rows)


def _repository_row(repository: str, mine: pd.DataFrame, reference: float, agree: Any) -> dict[str, Any]:
    resolved, runs = int(mine["resolved"].sum()), int(mine["runs"].sum())
    low, high = bootstrap_interval(mine["resolved"], mine["runs"])
    ours = resolved / runs
    return {
        "level": "repository",
        "repository": repository,
        "ours_resolved": resolved,
        "ours_runs": runs,
        "ours": ours,
        "reference": reference,
        "delta": ours - reference,
        "ci95_low": low,
        "ci95_high": high,
        "agree": agree,
        "note": "",
    }


def repositories_from_tasks(mine: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Per-repository deltas over the tasks judged on both sides."""
    judged = tasks[tasks["agree"].notna()].set_index("task")
    common = mine[mine["task"].isin(judged.index)]
    rows = []
    for repository, group in common.groupby("repository", sort=True):
        rows_of = judged.loc[group["task"]]
        agree = bool(rows_of["agree"].astype(bool).all())
        rows.append(_repository_row(repository, group, float(rows_of["reference"].mean()), agree))
    return pd.DataFrame(rows)


def compare_rates(mine: pd.DataFrame, reference: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    ref = reference.set_index("repository")["rate"]
    rows = []
    for repository in sorted(set(mine["repository"]) | set(ref.index)):
        group = mine[mine["repository"] == repository]
        if repository not in ref.index:
            rows.append(
                {**_repository_row(repository, group, math.nan, pd.NA), "note": "not in the reference"}
            )
        elif group.empty:
            rows.append({"level": "repository", "repository": repository, "reference": ref[repository]})
            rows[-1].update(agree=pd.NA, note="not run")
        else:
            row = _repository_row(repository, group, float(ref[repository]), pd.NA)
            inside = row["ci95_low"] <= row["reference"] <= row["ci95_high"]
            row["agree"] = bool(inside or abs(row["delta"]) <= tolerance + 1e-12)
            rows.append(row)
    return pd.DataFrame(rows)


def compare(ours: pd.DataFrame, reference: Reference, tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """The comparison of one agent's summary rows with a reference (COMPARISON_SCHEMA)."""
    mine = our_tasks(ours)
    if reference.tasks is not None:
        tasks = compare_tasks(mine, reference.tasks)
        frames = [tasks, repositories_from_tasks(mine, tasks)]
    else:
        frames = [compare_rates(mine, reference.repositories, tolerance)]
    filled = [f for f in frames if not f.empty] or [pd.DataFrame(columns=COMPARISON_COLUMNS)]
    frame = pd.concat(filled, ignore_index=True)
    frame = frame.reindex(columns=COMPARISON_COLUMNS).astype(COMPARISON_SCHEMA)
    return frame.assign(note=frame["note"].replace("", pd.NA))


def read_comparison(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=COMPARISON_SCHEMA, keep_default_na=False, na_values=[""])


# --------------------------------------------------------------------------- verdict and report


def _level(comparison: pd.DataFrame) -> str:
    return "task" if (comparison["level"] == "task").any() else "repository"


def _noun(level: str, n: int) -> str:
    return plural(n, "task") if level == "task" else (f"{n} repository" if n == 1 else f"{n} repositories")


def listed_names(keys: Sequence[str]) -> str:
    more = f", ... (+{len(keys) - MAX_LISTED})" if len(keys) > MAX_LISTED else ""
    return ", ".join(keys[:MAX_LISTED]) + more


def verdict(comparison: pd.DataFrame) -> str:
    """`REPRODUCED: 4/4 tasks agree` or `NOT REPRODUCED: 2 tasks differ: a, b`."""
    level = _level(comparison)
    rows = comparison[comparison["level"] == level]
    judged = rows[rows["agree"].notna()]
    if judged.empty:
        return f"NOT REPRODUCED: no {level} in common with the reference"
    key = "task" if level == "task" else "repository"
    differ = judged[~judged["agree"].astype(bool)]
    if differ.empty:
        return f"REPRODUCED: {len(judged)}/{_noun(level, len(judged))} agree"
    verb = "differs" if len(differ) == 1 else "differ"
    return f"NOT REPRODUCED: {_noun(level, len(differ))} {verb}: {listed_names(list(differ[key]))}"


def _outcome(resolved: Any, runs: Any) -> str:
    return "" if pd.isna(runs) else f"{resolved}/{runs} resolved"


def _differing_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    differ = tasks[tasks["agree"].notna() & ~tasks["agree"].fillna(True).astype(bool)]
    return pd.DataFrame(
        {
            "task": differ["task"],
            "repository": differ["repository"],
            "ours": [
                _outcome(r, n) for r, n in zip(differ["ours_resolved"], differ["ours_runs"], strict=True)
            ],
            "reference": differ["reference"].map(lambda v: "resolved" if v == 1.0 else "unresolved"),
            "note": differ["note"],
        }
    )


def _agree_text(value: Any) -> str:
    return "-" if pd.isna(value) else ("yes" if value else "NO")


def _points(value: float) -> str:
    return "" if pd.isna(value) else f"{100 * value:+.1f} pts"


def repository_deltas(repositories: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "repository": repositories["repository"],
            "ours": [
                f"{_outcome(r, n)} ({percent(o)})" if not pd.isna(n) else ""
                for r, n, o in zip(
                    repositories["ours_resolved"],
                    repositories["ours_runs"],
                    repositories["ours"],
                    strict=True,
                )
            ],
            "reference": repositories["reference"].map(percent),
            "delta": repositories["delta"].map(_points),
            "95% CI (ours)": [
                "" if pd.isna(lo) else f"{percent(lo)} - {percent(hi)}"
                for lo, hi in zip(repositories["ci95_low"], repositories["ci95_high"], strict=True)
            ],
            "agree": repositories["agree"].map(_agree_text),
            "note": repositories["note"],
        }
    )


def _not_compared(comparison: pd.DataFrame) -> list[str]:
    level = _level(comparison)
    rows = comparison[(comparison["level"] == level) & comparison["agree"].isna()]
    key = "task" if level == "task" else "repository"
    lines = []
    for note in ("not run", "not in the reference"):
        keys = list(rows.loc[rows["note"] == note, key])
        if keys:
            lines.append(f"{_noun(level, len(keys))} {note}: {listed_names(keys)}")
    return lines


def judge(agent: str, spec: str, comparison: pd.DataFrame, comparison_path: str) -> Verdict:
    return Verdict(agent, reference_label(spec), verdict(comparison), comparison_path)


def reproduction_sections(verdict_: Verdict, comparison: pd.DataFrame) -> list[Section]:
    tasks = comparison[comparison["level"] == "task"]
    repositories = comparison[comparison["level"] == "repository"]
    rule = (
        "per task: ours resolved when at least half of its attempts resolved it"
        if len(tasks)
        else "per repository: the reference rate lies in our 95% interval or within the tolerance"
    )
    lines = [verdict_.text, f"agent `{verdict_.agent}` against reference `{verdict_.reference}`; {rule}."]
    sections = [Section("Verdict", lines)]
    differ = _differing_tasks(tasks)
    if len(differ):
        sections.append(Section("Tasks that differ", table=differ))
    if len(repositories):
        sections.append(Section("Per-repository deltas", table=repository_deltas(repositories)))
    skipped = _not_compared(comparison)
    if skipped:
        sections.append(Section("Not compared", skipped))
    return sections


