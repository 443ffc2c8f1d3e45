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

from bench import attempts, disk, engines, incremental, overhead, prepare, scale, site
from bench.common import HARBOR_BIN, REPO, Context, Recorder, log, now_stamp, read_rows, section_timer
from bench.report import summarize

SECTIONS: dict[str, Callable[[Context], None]] = {
    "overhead": overhead.run,
    "attempts": attempts.run,
    "incremental": incremental.run,
    "scale": scale.run,
    "disk": disk.run,
    "engines": engines.run,
    "site": site.run,
}
NEEDS_WORKSPACE = {"overhead", "attempts", "incremental", "engines"}


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


def header(
    args: argparse.Namespace, reps: int, started: str, seconds: float, sections: list[str]
) -> list[str]:
    mode = "quick" if args.quick else "full"
    return [
        f"# kotlin-bench performance suite, {started}",
        "",
        f"- mode: {mode} (repetitions of single runs: {reps}); sections: {', '.join(sections)}; "
        f"suite wall time {seconds / 60:.1f} min",
        f"- machine: {machine()}",
        "- every ratio is of measurements taken side by side in this run (interleaved); "
        "cells are median [min, max] over repetitions",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer repetitions (3 instead of 5, one Harbor round)"
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "bench/results", help="results root (default: bench/results)"
    )
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}"
    )
    parser.add_argument("--reps", type=int, help="override the number of repetitions")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspaces")
    parser.add_argument(
        "--summarize", type=Path, metavar="DIR", help="only rewrite DIR/summary.md from DIR/results.csv"
    )
    args = parser.parse_args(argv)

    if args.summarize:
        rows = read_rows(args.summarize / "results.csv")
        text = summarize(
            rows, [f"# kotlin-bench performance suite ({args.summarize.name}, re-summarized)", ""]
        )
        (args.summarize / "summary.md").write_text(text, encoding="utf-8")
        print(text)
        return 0

    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections {sorted(unknown)}")
    reps = args.reps or (3 if args.quick else 5)
    started = now_stamp()
    out = args.out / started
    (out / "logs").mkdir(parents=True)
    tmp = Path(tempfile.mkdtemp(prefix="kotlin-bench-bench-"))
    ctx = Context(out=out, tmp=tmp, quick=args.quick, reps=reps, recorder=Recorder(out / "results.csv"))
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
        text = summarize(ctx.recorder.rows, header(args, reps, started, seconds, sections))
        (out / "summary.md").write_text(text, encoding="utf-8")
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(text)
    log(f"wrote {out / 'results.csv'} and {out / 'summary.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
