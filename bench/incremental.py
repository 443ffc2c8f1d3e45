"""Section 3: incremental behaviour of the finished DAG (the shared workspace, with the config the sections
before left: oracle, 3 attempts after section 2).

- `finish`: the default target once (summary, aggregates, plots, report, site), to have a finished DAG;
- `noop`: `snakemake --cores 2` when nothing is to be done (checked: "Nothing to be done");
- `rerun_one`: delete one run's result.json (its work record stays), then `snakemake --cores 2`: the dry
  run must plan exactly that run's verify step plus the report jobs downstream of it (no solve step); the
  verify step's own `verify_sec` is recorded next to the wall time.
"""

from __future__ import annotations

from bench.common import EXAMPLE_TASKS, Context, Row, log, read_json, result_path, snakemake
from kotlin_bench.tools.workspace import job_counts

REPORT_JOBS = {"summary": 1, "aggregate": 1, "plots": 1, "site": 1, "all": 1}


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = ctx.workspace
    logs = ctx.out / "logs/incremental.log"
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
    for rep in range(min(3, ctx.reps) if ctx.quick else ctx.reps):
        task = EXAMPLE_TASKS[rep % len(EXAMPLE_TASKS)]
        result = workspace / result_path(task, 1)
        result.unlink()
        dry = snakemake(workspace, "--dry-run", log_path=logs)
        planned = job_counts(dry.stdout + dry.stderr)
        done = snakemake(workspace, log_path=logs)
        ok = done.returncode == 0 and result.is_file() and planned == REPORT_JOBS | {"verify": 1}
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
                    "verify_step_sec",
                    timings.get("verify_sec", float("nan")),
                    ok=ok,
                )
            )
        ctx.recorder.add(*rows)
        log(f"incremental rerun {task}: {done.seconds:.2f}s ok={ok} ({note})")
