"""`results/summary.csv`: one tidy row per run, typed by `SUMMARY_SCHEMA`, and reading it back.

Each row is a function of one run record (`kotlin_bench.core.record.RunResult`) alone, but for the task's
own date, `merged_at` (when its fix was merged, UTC; empty: never merged or not known), read from the task's
task.toml (rendered from the dataset specification): a row that is not
resolved has the `reason` the run was classified with when it was scored (a word of
`kotlin_bench.scoring.reasons.Reason`) and its raw codes in `reason_detail`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import atomic_path
from kotlin_bench.core.record import RunResult, Status
from kotlin_bench.core.record_parts import Flag, VerifierReport
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.scoring.expected import CATEGORIES

STATUSES = tuple(s.value for s in Status)

SUMMARY_SCHEMA: dict[str, str] = {
    "task": "string",
    "repository": "string",
    "merged_at": "string",
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
    "model_calls": "Int64",
    "solve_tries": "Int64",
    "agent_timed_out": "boolean",
    "retrieval": "boolean",
    "egress_requests": "Int64",
    "egress_bytes": "Int64",
    "egress_refused": "Int64",
    "around_proxy": "Int64",
    "failed_step": "string",
    "repeats": "Int64",
    "verdict_flaky": "boolean",
    "repeat_rewards": "string",
    "flipped_tests": "string",
    "fresh_reward": "float64",
    "verdicts_disagree": "boolean",
    "harness_version": "string",
    "image_id": "string",
    "task_digest": "string",
    "verifier_digest": "string",
    "started_at": "string",
}
SUMMARY_COLUMNS = list(SUMMARY_SCHEMA)
MAX_FLIPPED = 400


def _category_counts(verifier: VerifierReport) -> dict[str, int | None]:
    row: dict[str, int | None] = {}
    for cat in CATEGORIES:
        counts = verifier.category(cat)
        row[f"{cat}_expected"] = counts.expected
        row[f"{cat}_landed"] = counts.landed
        row[f"{cat}_missing"] = counts.missed()
    return row


def not_passed(result: RunResult) -> set[str]:
    """The expected tests a verification did not see pass (every category's `missing`)."""
    return {test for cat in CATEGORIES for test in result.verifier.category(cat).missing or []}


def repeat_columns(result: RunResult, repeats: Sequence[RunResult]) -> dict[str, Any]:
    """How the run's verifications agree: the verdict-flaky flag, each verification's reward, and the
    expected tests whose outcome changed between them."""
    verifications = [result, *sorted(repeats, key=lambda r: r.repeat)]
    rewards = [r.reward for r in verifications]
    outcomes = [not_passed(r) for r in verifications]
    flipped = sorted(set.union(*outcomes) - set.intersection(*outcomes))
    shown = ["error" if r is None else f"{r:g}" for r in rewards]
    return {
        "repeats": len(verifications),
        "verdict_flaky": len(set(rewards)) > 1,
        "repeat_rewards": ",".join(shown) if len(verifications) > 1 else None,
        "flipped_tests": "; ".join(flipped)[:MAX_FLIPPED] or None,
    }


def summary_row(
    result: RunResult, repeats: Sequence[RunResult] = (), retrieval: Sequence[str] | None = None
) -> dict[str, Any]:
    """Flatten one run record (its verdict, repeat 1) and its repeated verifications into a summary row:
    a function of those result.json files alone, but for `retrieval`, the URLs the retrieval rule flags
    with the task's facts as they are now (`flagged`; None: as the record says)."""
    timings = result.timings
    usage = result.work.usage
    record = result.to_dict()
    row = {col: record.get(col) for col in SUMMARY_COLUMNS}
    row.update(_category_counts(result.verifier))
    row.update({key: timings.get(key) for key in ("agent_sec", "verifier_sec", "total_sec")})
    phases = [float(v) for _, v in timings.items() if v is not None]
    if row["total_sec"] is None and phases:  # a record of phases only (a trial's, before verify_sec)
        row["total_sec"] = round(sum(phases), 2)
    row.update(
        input_tokens=usage.input_tokens,
        cache_tokens=usage.cache_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        model_calls=usage.model_calls,
        solve_tries=result.work.solve_tries,
        fresh_reward=result.fresh_verdict.reward if result.fresh_verdict else None,
        verdicts_disagree=bool(result.flags.get(Flag.VERDICTS)) if result.fresh_verdict else None,
    )
    row.update(repeat_columns(result, repeats))
    row.update(egress_columns(result, retrieval))
    return row


def egress_columns(result: RunResult, retrieval: Sequence[str] | None = None) -> dict[str, Any]:
    """The agent phase's egress record (`kotlin_bench.engine.egress`): whether the run is flagged (a
    request flagged as retrieval, or a connection attempt around the proxy), its requests, bytes and
    refused requests, empty where nothing was recorded (no allowlist proxy, or `egress: {record:
    hosts}`); and the attempts around the proxy its network's fence refused, empty where none could be
    seen (`kotlin_bench.engine.fence`)."""
    egress = result.work.egress
    around = {"around_proxy": egress.around_proxy if egress is not None else None}
    if egress is None or not egress.recorded_urls():
        return dict.fromkeys(("retrieval", "egress_requests", "egress_bytes", "egress_refused")) | around
    return {
        "retrieval": bool(
            (result.flags.get(Flag.RETRIEVAL) if retrieval is None else retrieval)
            or result.flags.get(Flag.AROUND_PROXY)
        ),
        "egress_requests": egress.requests,
        "egress_bytes": egress.bytes,
        "egress_refused": egress.refused,
    } | around


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(SUMMARY_SCHEMA)


def one_identity(frame: pd.DataFrame) -> pd.DataFrame:
    """Every row of an agent with the agent's one identity: its kind and model (the models its runs name,
    several joined by `,`). An agent's runs are counted as one agent even when a record lacks the model
    (a summary written before predictions runs carried the file's model for tasks without a line)."""
    if frame.empty:
        return frame
    frame = frame.copy()
    for column in ("kind", "model"):
        names = frame.groupby("agent")[column].agg(
            lambda s: ",".join(sorted({str(v) for v in s.dropna() if v}))
        )
        joined = frame["agent"].map(names)
        frame[column] = joined.where(joined != "", None).astype(frame[column].dtype)
    return frame


def merge_dates(tasks_dir: Path, task_ids: Iterable[str]) -> dict[str, str | None]:
    """Each task's `merged_at` from its task.toml (None: never merged, not known, or no task directory)."""
    dates: dict[str, str | None] = {}
    for task_id in sorted(set(task_ids)):
        try:
            dates[task_id] = load_task(tasks_dir / task_id, require_materialized=False).merged_at
        except TaskError:
            dates[task_id] = None
    return dates


def flagged(result: RunResult, result_path: Path, facts: Mapping[str, Facts]) -> list[str] | None:
    """The URLs of a run's egress record the retrieval rule flags with its task's facts as they are now
    (`facts`: the summary rule's parameter, by task), classified again from the record kept in the run's
    work directory when the facts changed since (`kotlin_bench.engine.egress.flagged`); None where no
    URL was recorded or the task's facts are not given."""
    egress = result.work.egress
    if egress is None or not egress.recorded_urls() or result.task not in facts:
        return None
    from kotlin_bench.engine.egress import flagged as flagged_now

    record = result_path.parent / names.WORK_DIR / names.EGRESS_RECORD
    return flagged_now(egress, record, facts[result.task])


def summarize(
    result_paths: Iterable[Path],
    repeat_paths: Iterable[Path] = (),
    *,
    tasks_dir: Path | None = None,
    facts: Mapping[str, Facts] | None = None,
) -> pd.DataFrame:
    """One row per run (its verdict, repeat 1), with what its repeated verifications say, typed by
    SUMMARY_SCHEMA, sorted by agent, task, attempt; `merged_at` from the task directories under
    `tasks_dir` (empty without it); `retrieval` by the tasks' `facts` as they are now (`flagged`;
    without them, as the records say)."""
    import pandas as pd

    repeats: dict[tuple[str, str, int], list[RunResult]] = {}
    for path in repeat_paths:
        result = RunResult.read(Path(path))
        repeats.setdefault((result.agent, result.task, result.attempt), []).append(result)
    paths = [Path(p) for p in result_paths]
    verdicts = [RunResult.read(p) for p in paths]
    rows = [
        summary_row(r, repeats.get((r.agent, r.task, r.attempt), ()), flagged(r, p, facts or {}))
        for r, p in zip(verdicts, paths, strict=True)
    ]
    if tasks_dir is not None:
        dates = merge_dates(tasks_dir, (r.task for r in verdicts))
        for row in rows:
            row["merged_at"] = dates[row["task"]]
    frame = one_identity(_typed(pd.DataFrame(rows, columns=SUMMARY_COLUMNS)))
    return frame.sort_values(["agent", "task", "attempt"], ignore_index=True)


def read_summary(path: Path) -> pd.DataFrame:
    """Read summary.csv back with its schema (an empty cell is missing, whatever the column)."""
    import pandas as pd

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
