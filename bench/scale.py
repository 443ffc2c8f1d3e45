"""Section 4: DAG construction at scale: dry-run time and peak memory of the orchestrator.

A synthetic dataset specification repeats the 4 example tasks under new ids and pull request numbers
(`examples_calc-1000`, ...; every task FROM an example base image), written in the format of
examples/dataset.json; the real generator (`python -m kotlin_bench generate --no-bases`) writes the task
directories. Materialization is already satisfied: each task gets its template's materialized files, a
`.materialized.json` stamp written after task.toml, and the config says `materialize.source: published`
(no mirror inputs), so no materialize job is planned. Agents: oracle, nop and a predictions agent (the
gold patch of every task in a predictions file), 5 attempts: 106 tasks -> 1,590 runs, 1,000 -> 15,000.

Each dry run (`snakemake --cores 2 --dry-run`, the default target) runs under `/usr/bin/time -v` (peak
RSS of the largest single process) while this process polls the RSS of the whole process tree (summed,
every 50 ms). DOCKER_HOST points at a socket that does not exist, so a dry run that touched Docker fails.
One extra dry run per case is profiled with cProfile (profile-<runs>.txt).
"""

from __future__ import annotations

import json
import pstats
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from bench.common import (
    EXAMPLE_TASKS,
    REPO,
    Context,
    PeakRss,
    Row,
    docker_env_without_engine,
    log,
    make_workspace,
    run_timed,
)
from kotlin_bench.tools.workspace import job_counts

MATERIALIZED = ("instruction.md", "solution/fix.patch", "tests/test.patch", "tests/expected_tests.json")
AGENTS = [
    {"name": "oracle", "kind": "oracle"},
    {"name": "nop", "kind": "nop"},
    {"name": "gold", "kind": "predictions", "predictions": "synth/predictions.jsonl"},
]
ATTEMPTS = 5


def synthetic_spec(n: int) -> dict[str, object]:
    spec = json.loads((REPO / "examples/dataset.json").read_text(encoding="utf-8"))
    templates = spec["tasks"]
    tasks = []
    for i in range(n):
        task = dict(templates[i % len(templates)])
        repo_key = task["base_image"].split("/", 1)[1].split(":", 1)[0]
        task["pr"] = 1000 + i
        task["id"] = f"{repo_key}-{task['pr']}"
        tasks.append(task)
    spec["name"] = f"synthetic-{n}"
    spec["tasks"] = tasks
    return spec


def materialized_template(task: str, candidates: list[Path]) -> Path:
    for root in candidates:
        folder = root / "examples/tasks" / task
        if all((folder / rel).is_file() for rel in MATERIALIZED):
            return folder
    raise RuntimeError(f"no materialized copy of {task} (run the workspace preparation first)")


def build_workspace(ctx: Context, n: int) -> tuple[Path, float]:
    workspace = make_workspace(ctx.tmp / f"scale-{n}")
    synth = workspace / "synth"
    synth.mkdir(exist_ok=True)
    spec = synthetic_spec(n)
    (synth / "spec.json").write_text(json.dumps(spec, indent=2), encoding="utf-8")
    generated = run_timed(
        [
            sys.executable,
            "-m",
            "kotlin_bench",
            "generate",
            "--spec",
            "synth/spec.json",
            "--out",
            "synth/tasks",
            "--no-bases",
        ],
        cwd=workspace,
        log_path=ctx.out / f"logs/scale/generate-{n}.log",
    )
    if generated.returncode != 0:
        raise RuntimeError(f"generate failed: {generated.stderr[-2000:]}")
    candidates = [p for p in (ctx.workspace, REPO) if p is not None]
    templates = {t: materialized_template(t, candidates) for t in EXAMPLE_TASKS}
    by_repo = {t.split("-")[0]: t for t in EXAMPLE_TASKS}
    predictions = []
    time.sleep(0.01)  # the stamps must be newer than task.toml
    for task in spec["tasks"]:  # type: ignore[attr-defined]
        folder = synth / "tasks" / task["id"]
        template = templates[by_repo[task["id"].rsplit("-", 1)[0]]]
        for rel in MATERIALIZED:
            shutil.copy(template / rel, folder / rel)
        stamp = json.loads((template / ".materialized.json").read_text(encoding="utf-8"))
        stamp |= {
            "task": task["id"],
            "source": "published",
            "origin": "bench/scale (copied from the examples)",
        }
        (folder / ".materialized.json").write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
        patch = (folder / "solution/fix.patch").read_text(encoding="utf-8")
        predictions.append(
            json.dumps({"instance_id": task["id"], "model_name_or_path": "gold", "model_patch": patch})
        )
    (synth / "predictions.jsonl").write_text("\n".join(predictions) + "\n", encoding="utf-8")
    config = {
        "spec": "synth/spec.json",
        "tasks_dir": "synth/tasks",
        "bases_manifest": "examples/bases/manifest",
        "tasks": "all",
        "agents": AGENTS,
        "attempts": ATTEMPTS,
        "retries": 1,
        "materialize": {"source": "published"},
    }
    (workspace / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return workspace, generated.seconds


def max_rss_kb(time_output: Path) -> float:
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", time_output.read_text(encoding="utf-8"))
    return float(match[1]) if match else float("nan")


def cpu_sec(time_output: Path) -> float:
    """User + system CPU seconds of the dry run (its children included): unlike the wall time, hardly
    changed by other work on a shared machine."""
    text = time_output.read_text(encoding="utf-8")
    found = [re.search(rf"{kind} time \(seconds\): ([\d.]+)", text) for kind in ("User", "System")]
    return sum(float(m[1]) for m in found if m) if all(found) else float("nan")


def dry_run(ctx: Context, workspace: Path, runs: int, rep: int) -> list[Row]:
    out_path = workspace / f"dry-run-{rep}.out"
    time_path = workspace / f"dry-run-{rep}.time"
    cmd = [
        "/usr/bin/time",
        "-v",
        "-o",
        str(time_path),
        sys.executable,
        "-m",
        "snakemake",
        "--cores",
        "2",
        "--dry-run",
    ]
    with out_path.open("w", encoding="utf-8") as out:
        started = time.monotonic()
        proc = subprocess.Popen(
            cmd, cwd=workspace, stdout=out, stderr=subprocess.STDOUT, env=docker_env_without_engine()
        )
        with PeakRss(proc.pid) as peak:
            code = proc.wait(timeout=7200)
        seconds = time.monotonic() - started
    text = out_path.read_text(encoding="utf-8")
    jobs = job_counts(text)
    # a run is two jobs: its solve step and its verify step
    ok = code == 0 and jobs.get("solve") == runs and jobs.get("verify") == runs and "materialize" not in jobs
    note = ", ".join(f"{k}={v}" for k, v in sorted(jobs.items()))
    case = str(runs)
    rows = [
        Row("scale", case, "dry_run", "all", rep, "wall_sec", seconds, ok=ok, note=note),
        Row("scale", case, "dry_run", "all", rep, "cpu_sec", cpu_sec(time_path), ok=ok),
        Row("scale", case, "dry_run", "all", rep, "peak_rss_tree_mb", peak.peak / 2**20, unit="MB", ok=ok),
        Row(
            "scale", case, "dry_run", "all", rep, "max_rss_mb", max_rss_kb(time_path) / 1024, unit="MB", ok=ok
        ),
        Row(
            "scale",
            case,
            "dry_run",
            "all",
            rep,
            "solve_jobs",
            float(jobs.get("solve", 0)),
            unit="jobs",
            ok=ok,
        ),
        Row(
            "scale",
            case,
            "dry_run",
            "all",
            rep,
            "verify_jobs",
            float(jobs.get("verify", 0)),
            unit="jobs",
            ok=ok,
        ),
        Row(
            "scale", case, "dry_run", "all", rep, "total_jobs", float(sum(jobs.values())), unit="jobs", ok=ok
        ),
    ]
    # The dry run lists every job (tens of MB at 15,000 runs): keep its head, job stats and tail only.
    lines = text.splitlines()
    kept = [*lines[:40], "[...]", *lines[-60:]] if len(lines) > 100 else lines
    (ctx.out / f"logs/scale/dry-run-{runs}-{rep}.out").write_text("\n".join(kept) + "\n", encoding="utf-8")
    return rows


def profile(ctx: Context, workspace: Path, runs: int) -> list[Row]:
    """One dry run under cProfile: where the time goes (total, our code, Snakemake)."""
    prof = workspace / "dry-run.prof"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "snakemake", "--cores", "2", "--dry-run"]
    done = run_timed(cmd, cwd=workspace, env=docker_env_without_engine())
    stats = pstats.Stats(str(prof))
    report = ctx.out / f"profile-{runs}.txt"
    with report.open("w", encoding="utf-8") as out:
        stats.stream = out  # type: ignore[attr-defined]
        out.write(f"cProfile of `snakemake --cores 2 --dry-run` for {runs} runs (exit {done.returncode})\n\n")
        stats.sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)
    raw = stats.stats  # type: ignore[attr-defined]
    total = max(entry[3] for entry in raw.values())

    def cumulative(pattern: str) -> float:
        found = re.compile(pattern)
        return sum(e[3] for (file, _line, name), e in raw.items() if found.search(f"{file}:{name}"))

    case = str(runs)
    ok = done.returncode == 0
    measured = {
        # input functions and params lambdas of the rules (they do not call one another)
        "rule_functions_cum_sec": cumulative(r"/rules/[^/]+\.smk:(?!<module>)"),
        "step_inputs_cum_sec": cumulative(r"/rules/common\.smk:(solve|verify)_inputs$"),
        "plan_from_config_cum_sec": cumulative(r"/kotlin_bench/dag/plan\.py:from_config$"),
        "dryrun_printjob_cum_sec": cumulative(r"/snakemake/executors/dryrun\.py:printjob$"),
    }
    rows = [Row("scale", case, "profile", "all", 0, "profiled_total_sec", total, ok=ok)]
    rows += [Row("scale", case, "profile", "all", 0, key, value, ok=ok) for key, value in measured.items()]
    return rows


def cases(quick: bool) -> list[tuple[int, int]]:
    """(tasks, repetitions of the dry run after the first) of each case."""
    return [(106, 1 if quick else 3), (1000, 1 if quick else 2)]


def run(ctx: Context) -> None:
    for n, reps in cases(ctx.quick):
        runs = n * len(AGENTS) * ATTEMPTS
        workspace, generate_sec = build_workspace(ctx, n)
        ctx.recorder.add(Row("scale", str(runs), "generate", "all", 0, "wall_sec", generate_sec))
        for rep in range(reps + 1):  # the first dry run warms the page cache and creates .snakemake/
            rows = dry_run(ctx, workspace, runs, rep)
            if rep == 0:
                for row in rows:
                    row.variant = "dry_run_first"
            ctx.recorder.add(*rows)
            log(
                f"scale {runs} runs dry run {rep}: {rows[0].value:.1f}s ({rows[1].value:.1f} s CPU), "
                f"tree peak {rows[2].value:.0f} MB, "
                f"ok={rows[0].ok} ({rows[0].note})"
            )
        rows = profile(ctx, workspace, runs)
        ctx.recorder.add(*rows)
        log(f"scale {runs} runs profiled: " + ", ".join(f"{r.metric} {r.value:.1f}" for r in rows))
        shutil.rmtree(workspace, ignore_errors=True)
