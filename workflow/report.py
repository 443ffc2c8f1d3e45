"""Results into tables: `results/summary.csv` (one row per run) and the per-agent resolve rates."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

CATEGORIES = ("f2p", "p2p", "s2p", "n2p")
SUMMARY_COLUMNS = [
    "task",
    "repository",
    "agent",
    "kind",
    "model",
    "attempt",
    "reward",
    "status",
    "reason",
    "error",
    *(f"{c}_{k}" for c in CATEGORIES for k in ("expected", "landed")),
    "agent_sec",
    "verifier_sec",
    "total_sec",
    "image_id",
    "harness_version",
    "started_at",
]


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """Flatten one result.json into a summary row."""
    row = {col: result.get(col) for col in SUMMARY_COLUMNS}
    timings = result.get("timings") or {}
    for key in ("agent_sec", "verifier_sec", "total_sec"):
        row[key] = timings.get(key)
    categories = (result.get("verifier") or {}).get("categories") or {}
    for cat in CATEGORIES:
        counts = categories.get(cat) or {}
        row[f"{cat}_expected"] = counts.get("expected")
        row[f"{cat}_landed"] = counts.get("landed")
    return row


def summarize(result_paths: Iterable[Path]) -> pd.DataFrame:
    rows = [summary_row(json.loads(Path(p).read_text(encoding="utf-8"))) for p in result_paths]
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    return frame.sort_values(["agent", "task", "attempt"], ignore_index=True)


def rates(summary: pd.DataFrame) -> pd.DataFrame:
    """Resolve rate per (agent, model): resolved / total, with errors counted apart from unresolved."""
    grouped = summary.assign(model=summary["model"].fillna("-")).groupby(["agent", "model"], sort=True)
    table = grouped["status"].agg(
        runs="size",
        resolved=lambda s: int((s == "resolved").sum()),
        unresolved=lambda s: int((s == "unresolved").sum()),
        errors=lambda s: int((s == "error").sum()),
    )
    table["resolve_rate"] = (table["resolved"] / table["runs"]).round(4)
    return table.reset_index()


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)
