"""The integrity suite: attacks on the verifier, injected faults and bad inputs, run against the real
harness (Snakemake, Docker, kotlinc, JUnit) on the example tasks and reported as one table.

    python3 -m adversarial                        # everything: about six minutes on two cores
    python3 -m adversarial --only attacks,sealed  # attacks | faults | bad-input | sealed

Every part works in a throw-away copy of the repository (`kotlin_bench.tools.workspace.Workspace`), never in
the developer's own results/. The example images must exist (`snakemake --cores 2` builds them).
tests/test_integrity.py, test_faults.py, test_bad_input.py and test_sealed_history.py call the same
functions and assert that every row passed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from adversarial.attacks import run_attacks
from adversarial.bad_input import run_bad_inputs, run_bad_task_keep_going
from adversarial.common import REPO, SECTIONS, Row, render, workspace
from adversarial.faults import run_engine_restart, run_faults, run_signals
from adversarial.sealed import run_sealed


def run_all(only: tuple[str, ...] = SECTIONS, keep: Path | None = None) -> tuple[list[Row], dict[str, float]]:
    rows: list[Row] = []
    seconds: dict[str, float] = {}
    for section in only:
        started = time.monotonic()
        if section == "attacks":
            with workspace(keep, "attacks") as ws:
                rows += run_attacks(ws)
        elif section == "faults":
            with workspace(keep, "faults") as ws:
                rows += run_faults(ws)
            with workspace(keep, "signals") as ws:
                rows += run_signals(ws)
            with workspace(keep, "engine") as ws:
                rows += run_engine_restart(ws)
        elif section == "bad-input":
            with tempfile.TemporaryDirectory(prefix="kotlin-bench-bad.") as tmp:
                rows += run_bad_inputs(Path(tmp))
            with workspace(keep, "bad-task") as ws:
                rows += run_bad_task_keep_going(ws)
        elif section == "sealed":
            rows += run_sealed()
        seconds[section] = time.monotonic() - started
    return rows, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated parts of {SECTIONS}")
    parser.add_argument("--keep", type=Path, help="keep the workspaces under this directory")
    args = parser.parse_args(argv)
    only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {SECTIONS}")
    os.chdir(REPO)
    rows, seconds = run_all(only, args.keep)
    print(render(rows, seconds))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
