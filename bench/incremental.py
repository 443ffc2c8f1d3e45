"""Section 3: incremental behaviour of the finished DAG (the workspace of section 2: oracle, 3 attempts).

- `finish`: the default target once (summary, aggregates, plots, report), to have a finished DAG;
- `noop`: `snakemake --cores 2` when nothing is to be done (checked: "Nothing to be done");
- `rerun_one`: delete one run's result.json, then `snakemake --cores 2`: the dry run must plan exactly that
  run plus the report jobs downstream of it; the run's own `total_sec` is recorded next to the wall time.
"""

from __future__ import annotations

from bench.common import EXAMPLE_TASKS, Context, Row, log, read_json, result_path, snakemake
from bench.prepare import sync_sentinels
from kotlin_bench.tools.workspace import job_counts

REPORT_JOBS = {"summary": 1, "aggregate": 1, "plots": 1, "site": 1, "all": 1}


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = ctx.workspace
    logs = ctx.out / "logs/incremental.log"
    sync_sentinels(workspace)
    done = snakemake(workspace, log_path=logs)
    ctx.recorder.add(
        Row(
            "incremental",
            "finish",
            "default_target",
            "all",
            0,
            "wall_sec",
            done.seconds,
            ok=done.returncode == 0,
        )
    )
    for rep in range(max(ctx.reps, 3)):
        done = snakemake(workspace, log_path=logs)
        text = done.stdout + done.stderr
        ok = done.returncode == 0 and "Nothing to be done" in text
        ctx.recorder.add(Row("incremental", "noop", "noop", "all", rep, "wall_sec", done.seconds, ok=ok))
        log(f"incremental no-op {rep}: {done.seconds:.2f}s ok={ok}")
    for rep in range(3 if ctx.quick else ctx.reps):
        task = EXAMPLE_TASKS[rep % len(EXAMPLE_TASKS)]
        result = workspace / result_path(task, 1)
        result.unlink()
        sync_sentinels(workspace)
        dry = snakemake(workspace, "--dry-run", log_path=logs)
        planned = job_counts(dry.stdout + dry.stderr)
        done = snakemake(workspace, log_path=logs)
        ok = done.returncode == 0 and result.is_file() and planned == REPORT_JOBS | {"run": 1}
        note = "planned " + ", ".join(f"{k}={v}" for k, v in sorted(planned.items()))
        rows = [
            Row(
                "incremental", "rerun_one", "rerun_one", task, rep, "wall_sec", done.seconds, ok=ok, note=note
            )
        ]
        if result.is_file():
            timings = read_json(result)["timings"]
            rows.append(
                Row(
                    "incremental",
                    "rerun_one",
                    "rerun_one",
                    task,
                    rep,
                    "run_total_sec",
                    timings.get("total_sec", float("nan")),
                    ok=ok,
                )
            )
        ctx.recorder.add(*rows)
        log(f"incremental rerun {task}: {done.seconds:.2f}s ok={ok} ({note})")
