"""Which results were not made from the task directory and verifier that are there now.

The summary step must not mix results of another task or verifier version silently: `stale_results`
names each with what differs (`kotlin_bench.core.record.digest_problems`).
"""

from __future__ import annotations

from pathlib import Path

from kotlin_bench.core.record import RecordError, RunResult, Status, digest_problems
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
    return lines
