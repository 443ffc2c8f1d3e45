"""`results/summary.csv`: one tidy row per run, typed by `SUMMARY_SCHEMA`, and reading it back.

Each row is a function of one run record (`kotlin_bench.core.record.RunResult`) alone: a row that is not
resolved has the `reason` the run was classified with when it was scored (a word of
`kotlin_bench.scoring.reasons.Reason`) and its raw codes in `reason_detail`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from kotlin_bench.core.fsutil import atomic_path
from kotlin_bench.core.record import RunResult, Status
from kotlin_bench.scoring.expected import CATEGORIES

STATUSES = tuple(s.value for s in Status)

SUMMARY_SCHEMA: dict[str, str] = {
    "task": "string",
    "repository": "string",
    "agent": "string",
    "kind": "string",
    "model": "string",
    "attempt": "int64",
    "reward": "float64",
    "status": "string",
    "reason": "string",
    "reason_detail": "string",
    "error": "string",
    **{f"{c}_{k}": "Int64" for c in CATEGORIES for k in ("expected", "landed", "missing")},
    "agent_sec": "float64",
    "verifier_sec": "float64",
    "total_sec": "float64",
    "input_tokens": "Int64",
    "cache_tokens": "Int64",
    "output_tokens": "Int64",
    "cost_usd": "float64",
    "agent_timed_out": "boolean",
    "harness_version": "string",
    "image_id": "string",
    "task_digest": "string",
    "verifier_digest": "string",
    "started_at": "string",
}
SUMMARY_COLUMNS = list(SUMMARY_SCHEMA)


def _category_counts(verifier: dict[str, Any]) -> dict[str, int | None]:
    categories = verifier.get("categories") or {}
    row: dict[str, int | None] = {}
    for cat in CATEGORIES:
        counts = categories.get(cat) or {}
        expected, landed = counts.get("expected"), counts.get("landed")
        row[f"{cat}_expected"] = expected
        row[f"{cat}_landed"] = landed
        row[f"{cat}_missing"] = expected - landed if expected is not None and landed is not None else None
    return row


def summary_row(result: RunResult) -> dict[str, Any]:
    """Flatten one run record into a summary row."""
    timings = result.timings
    usage = result.agent_result
    record = result.to_dict()
    row = {col: record.get(col) for col in SUMMARY_COLUMNS}
    row.update(_category_counts(result.verifier))
    row.update({key: timings.get(key) for key in ("agent_sec", "verifier_sec", "total_sec")})
    if row["total_sec"] is None and timings:  # Harbor's trials time their phases only
        row["total_sec"] = round(sum(float(v) for v in timings.values() if v is not None), 2)
    row.update(
        input_tokens=usage.get("n_input_tokens"),
        cache_tokens=usage.get("n_cache_tokens"),
        output_tokens=usage.get("n_output_tokens"),
        cost_usd=usage.get("cost_usd"),
    )
    return row


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(SUMMARY_SCHEMA)


def summarize(result_paths: Iterable[Path]) -> pd.DataFrame:
    """One row per run, typed by SUMMARY_SCHEMA, sorted by agent, task, attempt."""
    rows = [summary_row(RunResult.read(Path(p))) for p in result_paths]
    frame = _typed(pd.DataFrame(rows, columns=SUMMARY_COLUMNS))
    return frame.sort_values(["agent", "task", "attempt"], ignore_index=True)


def read_summary(path: Path) -> pd.DataFrame:
    """Read summary.csv back with its schema (an empty cell is missing, whatever the column)."""
    frame = pd.read_csv(path, dtype=SUMMARY_SCHEMA, keep_default_na=False, na_values=[""])
    missing = [c for c in SUMMARY_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} are missing; rerun rule summary")
    return frame[SUMMARY_COLUMNS]


# --------------------------------------------------------------------------- rates


def write_table(frame: pd.DataFrame, path: Path) -> None:
    """Write a table as CSV, atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
