"""Section 7 (issue 19): re-verifying existing work against re-running the runs, in the shared workspace.

The workspace's config: our oracle agent, `ATTEMPTS` attempts of the 4 example tasks (8 runs), concurrency 2.
Once finished (`snakemake results/summary.csv`), three variants, interleaved (the order rotates with the
round), each checked by the jobs it ran:

- `rerun`: every run deleted (work record and verdict), then `snakemake --cores 2 results/summary.csv`:
  8 solve and 8 verify jobs, what redoing the runs costs;
- `reverify`: only the runs' result.json deleted (the work records stay), then the same invocation: 8
  verify jobs and no solve job, a verdict made again from the work that is kept;
- `regrade`: `kotlin-bench regrade --cores 2` (results/regrade/ deleted first): every run's work verified
  again into results/regrade/ and compared with the current verdicts, nothing in results/runs/ changed.

The ratios `reverify / rerun` and `regrade / rerun` are of the rounds' wall times; the runs' own solve and
verify step times (from their records) say where the difference comes from.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from bench.common import (
    AGENT,
    EXAMPLE_TASKS,
    Context,
    Row,
    log,
    read_json,
    result_path,
    run_timed,
    snakemake,
    write_config,
)
from kotlin_bench.core import names
from kotlin_bench.tools.workspace import job_counts

ATTEMPTS = 2
RUNS = ATTEMPTS * len(EXAMPLE_TASKS)
VARIANTS = ("rerun", "reverify", "regrade")
TARGET = names.SUMMARY_CSV


def results(workspace: Path) -> list[Path]:
    return [workspace / result_path(t, a) for t in EXAMPLE_TASKS for a in range(1, ATTEMPTS + 1)]


def resolved(paths: list[Path]) -> int:
    return sum(1 for p in paths if p.is_file() and read_json(p)["reward"] == 1.0)


def step_rows(paths: list[Path], variant: str, rep: int, ok: bool) -> list[Row]:
    """Each run's solve and verify step times, from its result (a verdict made again from kept work
    carries the solve time of that work)."""
    rows = []
    for path in paths:
        if not path.is_file():
            continue
        timings = read_json(path)["timings"]
        task = path.parts[-3]
        for metric in ("solve_sec", "verify_sec"):
            if metric in timings:
                rows.append(Row("regrade", "runs", variant, task, rep, metric, float(timings[metric]), ok=ok))
    return rows


def snakemake_variant(ctx: Context, workspace: Path, variant: str, rep: int) -> list[Row]:
    """`rerun` (delete the runs) or `reverify` (delete their result.json only), then the summary."""
    if variant == "rerun":
        shutil.rmtree(workspace / names.runs_root() / AGENT, ignore_errors=True)
    else:
        for path in results(workspace):
            path.unlink(missing_ok=True)
    (workspace / TARGET).unlink(missing_ok=True)
    done = snakemake(workspace, TARGET, log_path=ctx.out / f"logs/regrade/{variant}-{rep}.log")
    jobs = job_counts(done.stdout + done.stderr)
    expected_solve = RUNS if variant == "rerun" else 0
    good = resolved(results(workspace))
    ok = (
        done.returncode == 0
        and jobs.get("verify") == RUNS
        and jobs.get("solve", 0) == expected_solve
        and good == RUNS
    )
    note = f"jobs {', '.join(f'{k}={v}' for k, v in sorted(jobs.items()))}; {good} of {RUNS} resolved"
    rows = [Row("regrade", "runs", variant, "all", rep, "wall_sec", done.seconds, ok=ok, note=note)]
    return rows + step_rows(results(workspace), variant, rep, ok)


def regrade_variant(ctx: Context, workspace: Path, rep: int) -> list[Row]:
    """`kotlin-bench regrade` (the workspace's own package: the command switches to it)."""
    shutil.rmtree(workspace / names.REGRADE_DIR, ignore_errors=True)
    done = run_timed(
        [sys.executable, "-m", "kotlin_bench", "regrade", "--cores", "2"],
        cwd=workspace,
        timeout=3600,
        log_path=ctx.out / f"logs/regrade/regrade-{rep}.log",
    )
    verdicts = sorted((workspace / names.REGRADE_DIR).rglob(names.RESULT_FILE))
    good = resolved(verdicts)
    ok = done.returncode == 0 and len(verdicts) == RUNS and good == RUNS
    last = (done.stdout.strip().splitlines() or [""])[-1]
    note = f"{len(verdicts)} verdicts, {good} resolved; {last}"
    rows = [Row("regrade", "runs", "regrade", "all", rep, "wall_sec", done.seconds, ok=ok, note=note)]
    return rows + step_rows(verdicts, "regrade", rep, ok)


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    workspace = ctx.workspace
    write_config(workspace, attempts=ATTEMPTS)
    done = snakemake(workspace, TARGET, log_path=ctx.out / "logs/regrade/finish.log")
    log(f"regrade: the {RUNS} runs finished first in {done.seconds:.1f}s (exit {done.returncode})")
    if done.returncode != 0:
        raise RuntimeError(f"finishing the runs failed (see {ctx.out / 'logs/regrade/finish.log'})")
    for rep in range(ctx.rounds):
        shift = rep % len(VARIANTS)
        for variant in VARIANTS[shift:] + VARIANTS[:shift]:
            if variant == "regrade":
                rows = regrade_variant(ctx, workspace, rep)
            else:
                rows = snakemake_variant(ctx, workspace, variant, rep)
            ctx.recorder.add(*rows)
            log(f"regrade round {rep} {variant}: {rows[0].value:.1f}s ok={rows[0].ok} ({rows[0].note})")
