"""Run the kotlin-bench performance suite: `python3 -m bench [--quick] [--out bench/results]`.

Writes `<out>/<UTC timestamp>/results.csv` (one row per measurement), `summary.md` (targets and one table
per section), `profile-<runs>.txt` (cProfile of the scale dry runs) and `logs/`. See bench/README.md.
`--summarize <dir>` rewrites summary.md from an existing results.csv.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from bench import (
    attempts,
    disk,
    egress,
    engines,
    harvest,
    images,
    incremental,
    overhead,
    prepare,
    regrade,
    scale,
    site,
)
from bench.common import (
    HARBOR_BIN,
    REPO,
    Context,
    Recorder,
    log,
    now_stamp,
    read_rows,
    remove_task_images,
    section_timer,
)
from bench.report import summarize
from kotlin_bench.core.checkout import foreign_package

SECTIONS: dict[str, Callable[[Context], None]] = {
    "overhead": overhead.run,
    "attempts": attempts.run,
    "incremental": incremental.run,
    "scale": scale.run,
    "disk": disk.run,
    "site": site.run,
    "regrade": regrade.run,
    "images": images.run,
    "engines": engines.run,
    "egress": egress.run,
    "fence": egress.run_fence,
    "harvest": harvest.run,
}
# The sections that work in (or copy from) the prepared workspace; scale copies its materialized tasks.
NEEDS_WORKSPACE = {
    "overhead",
    "attempts",
    "incremental",
    "scale",
    "disk",
    "regrade",
    "images",
    "engines",
    "egress",
    "harvest",
}


def _version(cmd: list[str]) -> str:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (
        (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else "?"
    )


def machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    docker = _version(["docker", "version", "--format", "engine {{.Server.Version}}"])
    snakemake = _version([sys.executable, "-m", "snakemake", "--version"])
    harbor = _version([str(HARBOR_BIN), "--version"]) if HARBOR_BIN.exists() else "not installed"
    return (
        f"{platform.platform()}, {os.cpu_count()} CPUs, {memory:.0f} GiB; Docker {docker}; "
        f"Python {platform.python_version()}; Snakemake {snakemake}; Harbor {harbor}"
    )


def header(ctx: Context, started: str, seconds: float, sections: list[str]) -> list[str]:
    mode = "quick" if ctx.quick else "full"
    return [
        f"# kotlin-bench performance suite, {started}",
        "",
        f"- mode: {mode} (repetitions of single runs: {ctx.reps}, rounds of whole runs: {ctx.rounds}); "
        f"sections: {', '.join(sections)}; suite wall time {seconds / 60:.1f} min",
        f"- machine: {machine()}",
        "- every ratio is of measurements taken side by side in this run (interleaved); "
        "cells are median [min, max] over repetitions",
        "",
    ]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python3 -m bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions (3 instead of 5, one round of whole runs)"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench/results", help="results root (default: bench/results)"
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}"
    )
    parser.add_argument(
        "--reps",
        type=positive,
        help="repetitions of single runs and short invocations (default 3 quick, 5 full)",
    )
    parser.add_argument(
        "--rounds",
        type=positive,
        help="rounds of the sections that repeat whole runs: attempts, regrade, images (default 1 quick, 2 full)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary workspaces and their task images"
    )
    parser.add_argument(
        "--summarize", type=Path, metavar="DIR", help="only rewrite DIR/summary.md from DIR/results.csv"
    )
    return parser


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return value


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, checked: `args.sections` becomes the list of known section names to run."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(args.sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)} (known: {', '.join(SECTIONS)})")
    args.reps = args.reps or (3 if args.quick else 5)
    args.rounds = args.rounds or (1 if args.quick else 2)
    return args


def resummarize(folder: Path) -> int:
    rows = read_rows(folder / "results.csv")
    text = summarize(rows, [f"# kotlin-bench performance suite ({folder.name}, re-summarized)", ""])
    (folder / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


def clean_up(tmp: Path) -> None:
    """Remove the workspaces and the task images they built (named after them; bases stay)."""
    for workspace in (p for p in tmp.iterdir() if (p / "Snakefile").is_file()):
        removed = remove_task_images(workspace)
        if removed:
            log(f"removed the task images of {workspace.name}: {', '.join(removed)}")
    shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.summarize:
        return resummarize(args.summarize)
    problem = foreign_package(REPO)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    sections = args.sections
    started = now_stamp()
    out = args.out / started
    (out / "logs").mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="kotlin-bench-bench-"))
    ctx = Context(
        out=out,
        tmp=tmp,
        quick=args.quick,
        reps=args.reps,
        recorder=Recorder(out / "results.csv"),
        rounds=args.rounds,
    )
    log(f"results in {out}; workspaces in {tmp}")
    clock = time.monotonic()
    try:
        if NEEDS_WORKSPACE & set(sections):
            with section_timer("prepare workspace"):
                prepare.prepare(ctx)
        for name in sections:
            with section_timer(name):
                try:
                    SECTIONS[name](ctx)
                except Exception as exc:  # one broken section must not lose the others' results
                    log(f"section {name} failed: {type(exc).__name__}: {exc}")
                    (out / "logs" / f"{name}.error").write_text(traceback.format_exc(), encoding="utf-8")
    finally:
        seconds = time.monotonic() - clock
        text = summarize(ctx.recorder.rows, header(ctx, started, seconds, sections))
        (out / "summary.md").write_text(text, encoding="utf-8")
        if not args.keep:
            clean_up(tmp)
    print(text)
    log(f"wrote {out / 'results.csv'} and {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
