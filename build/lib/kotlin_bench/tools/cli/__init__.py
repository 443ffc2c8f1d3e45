"""`kotlin-bench ...`: generate, materialize and check the dataset; build the base images.

Subcommands:

- ``generate``: write task directories (and base recipes + manifest) from a dataset specification;
  ``--check`` writes nothing and exits 1 listing every file that differs from what would be written.
- ``materialize``: put the upstream-authored files into task directories (``--source published|upstream``).
- ``lint`` (``validate`` before 0.3): the specification, every task directory, counts and licenses per
  repository, and the manifest (every task's FROM names an entry, every entry has a recipe) are
  well-formed. (Whether a task's tests behave as its expected lists say is the task validation, a
  Snakemake target: ``snakemake results/validation/summary.csv``.)
- ``status``: per task, whether it is materialized and whether its files match the published digests.
- ``plan``: what would be built, in order: base images, then task images.
- ``fidelity``: compare the task directories and base recipes with the published benchmark, by meaning;
  exit 1 on a behaviour-changing difference the specification does not list as intended.
- ``build-bases``: build the manifest's base images (``scripts/build_bases.sh``).
- ``add-task``: add a pull request as a task, valid only once its validation passes (``kotlin_bench.tools.add_task``).
- ``reproduce``: compare one agent of a finished ``summary.csv`` with a reference (``leaderboard:<row>``,
  ``oracle``, ``nop`` or a CSV), without Docker; prints the verdict and writes what the DAG writes.
- ``leaderboard``: the published leaderboard's rows and their Harbor configurations (``--write`` generates
  ``config/leaderboard/``, ``--check`` lists drift).

Paths are relative to the working directory, which is expected to be the repository root.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kotlin_bench.dataset.materialize import MaterializeError
from kotlin_bench.dataset.spec import SpecError
from kotlin_bench.tools import add_task
from kotlin_bench.tools.cli import dataset, results
from kotlin_bench.tools.cli.text import err


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kotlin-bench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dataset.register(sub)
    results.register(sub)
    add_task.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        sys.stderr.close()
        return 0
    except (SpecError, MaterializeError, FileNotFoundError, FileExistsError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        err(f"error: {message}")
        return 2
