"""Which results were not made from the task directory and verifier that are there now.

The summary step must not mix results of another task or verifier version silently: `stale_results`
names each with what differs (`kotlin_bench.core.record.digest_problems`).
"""

from __future__ import annotations

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import RecordError, RunResult, Status, WorkRecord, digest_problems
from kotlin_bench.dataset.task import TaskError, load_task


def stale_results(result_paths: list[Path], tasks_dir: Path) -> list[str]:
    """One line per result that does not belong to its task directory and verifier as they are now."""
    lines = []
    for path in result_paths:
        try:
            result = RunResult.read(Path(path))
        except RecordError as exc:
            lines.append(str(exc))
            continue
        if result.status is Status.ERROR:
            continue  # an error result has no verdict to mix in
        try:
            task = load_task(tasks_dir / result.task, require_materialized=False)
        except TaskError as exc:
            lines.append(f"{path}: {exc}")
            continue
        lines += [f"{path}: {problem}" for problem in digest_problems(result, task.id, task.path)]
        lines += [f"{path}: {problem}" for problem in _changed_since_solved(Path(path).parent, task.path)]
    return lines


def _changed_since_solved(run_dir: Path, task_dir: Path) -> list[str]:
    """Materialized files the agent read that have changed since (materialization redoes no work by
    itself: the user decides, by deleting the work record)."""
    try:
        work = WorkRecord.read(run_dir / names.WORK_DIR / names.WORK_FILE)
    except RecordError:
        return []
    changed = []
    for rel, digest in work.inputs.items():
        path = task_dir / rel
        if path.is_file() and file_sha256(path) != digest:
            changed.append(
                f"solved from a {rel} that has changed since; delete "
                f"{run_dir / names.WORK_DIR / names.WORK_FILE} to solve it again"
            )
    return changed
