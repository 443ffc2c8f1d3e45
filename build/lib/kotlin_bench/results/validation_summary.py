"""The validation report: `results/validation/summary.csv` and `summary.md`, one row per task, from the
tasks' verdicts (`kotlin_bench.validation.derive.TaskValidation`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from kotlin_bench.core.fsutil import atomic_path, write_atomic
from kotlin_bench.core.render import Section, plural, render_markdown
from kotlin_bench.scoring.expected import CATEGORIES
from kotlin_bench.validation.records import TaskValidation

SUMMARY_SCHEMA: dict[str, str] = {
    "task": "string",
    "valid": "boolean",
    "reasons": "string",
    **{cat: "Int64" for cat in CATEGORIES},
    "flaky": "Int64",
    "flaky_tests": "string",
    "fix_runs": "Int64",
    "oracle_resolved": "boolean",
    "nop_resolved": "boolean",
    "expected": "string",
    "only_in_derived": "string",
    "only_in_expected": "string",
    "notes": "string",
}


def _joined(values: Iterable[str]) -> str | None:
    text = "; ".join(values)
    return text or None


def _side(differences: Mapping[str, Mapping[str, list[str]]], side: str) -> str | None:
    return _joined(f"{name}: {', '.join(d[side])}" for name, d in differences.items() if d[side])


def summary_row(verdict: TaskValidation) -> dict[str, Any]:
    return {
        "task": verdict.task,
        "valid": verdict.valid,
        "reasons": _joined(verdict.reasons),
        **{cat: verdict.counts.get(cat) for cat in CATEGORIES},
        "flaky": len(verdict.flaky),
        "flaky_tests": _joined(verdict.flaky),
        "fix_runs": verdict.fix_runs,
        "oracle_resolved": verdict.oracle_resolved,
        "nop_resolved": verdict.nop_resolved,
        "expected": verdict.expected,
        "only_in_derived": _side(verdict.differences, "only_derived"),
        "only_in_expected": _side(verdict.differences, "only_expected"),
        "notes": _joined(verdict.notes),
    }


def summary_frame(verdicts: Iterable[TaskValidation]) -> pd.DataFrame:
    rows = [summary_row(v) for v in verdicts]
    frame = pd.DataFrame(rows, columns=list(SUMMARY_SCHEMA)).astype(SUMMARY_SCHEMA)
    return frame.sort_values("task", ignore_index=True)


def headline(frame: pd.DataFrame) -> str:
    """`5 tasks: 5 valid, 0 invalid; derived lists equal the expected ones for 5 of 5`."""
    valid = int(frame["valid"].sum())
    compared = frame[frame["expected"].isin(["equal", "differs"])]
    equal = int((compared["expected"] == "equal").sum())
    return (
        f"{plural(len(frame), 'task')}: {valid} valid, {len(frame) - valid} invalid; derived lists equal the "
        f"expected ones for {equal} of {len(compared)} with expected lists"
    )


def _markdown(verdicts: list[TaskValidation], frame: pd.DataFrame) -> str:
    table = frame[["task", "valid", *CATEGORIES, "flaky", "fix_runs", "expected"]].copy()
    table["valid"] = table["valid"].map({True: "yes", False: "NO"})
    sections = [Section("Headline", [headline(frame)]), Section("Tasks", table=table)]
    for verdict in verdicts:
        lines = [f"- {reason}" for reason in verdict.reasons]
        for test_id, runs in verdict.flaky.items():
            lines.append(f"- flaky: `{test_id}`: " + ", ".join(f"{lb} {s}" for lb, s in runs.items()))
        for name, difference in verdict.differences.items():
            for side, ids in difference.items():
                lines += [f"- {name}: {side.replace('_', ' in ')}: `{t}`" for t in ids]
        lines += [f"- note: {note}" for note in verdict.notes]
        if lines:
            state = "valid" if verdict.valid else "INVALID"
            sections.append(Section(f"{verdict.task} ({state})", ["\n".join(lines)]))
    return render_markdown(sections, title="kotlin-bench validation")


def write_summary(verdict_paths: Iterable[Path], csv_path: Path, markdown_path: Path) -> pd.DataFrame:
    """summary.csv and summary.md from the tasks' validation.json files."""
    verdicts = sorted((TaskValidation.read(Path(p)) for p in verdict_paths), key=lambda v: v.task)
    frame = summary_frame(verdicts)
    with atomic_path(csv_path) as tmp:
        frame.to_csv(tmp, index=False)
    write_atomic(markdown_path, _markdown(verdicts, frame))
    return frame
