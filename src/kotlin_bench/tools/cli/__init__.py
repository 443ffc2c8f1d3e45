"""`kotlin-bench ...`: the dataset, the results and the engine's leftovers of kotlin-bench (runs themselves
are `snakemake --cores N` in the workflow directory).

Subcommands:

- ``generate``: write task directories (and base recipes + manifest) from a dataset specification;
  ``--check`` writes nothing and exits 1 listing every file that differs from what would be written.
- ``materialize``: put the upstream-authored files into task directories (``--source published|upstream``).
- ``lint`` (``validate`` before 0.3): the specification, every task directory, counts and licenses per
  repository, and the manifest (every task's FROM names an entry, every entry has a recipe) are
  well-formed. (Whether a task's tests behave as its expected lists say is the task validation, a
  Snakemake target: ``snakemake results/validation/summary.csv``.)
- ``status``: per task, whether it is materialized and whether its files match the published digests; then
  the runs per agent (done, to do, errors).
- ``plan``: what would be built, in order: base images, then task images.
- ``fidelity``: compare the task directories and base recipes with the published benchmark, by meaning;
  exit 1 on a behaviour-changing difference the specification does not list as intended.
- ``build-bases``: build the manifest's base images (``scripts/build_bases.sh``).
- ``add-task``: add a pull request as a task, valid only once its validation passes (``kotlin_bench.tools.add_task``).
- ``harvest``: new tasks from the pull requests repositories merged in a window (``kotlin_bench.tools.harvest``;
  the workflow's targets ``results/harvest/<owner>/<repo>/<since>_<until>/dataset.json``).
- ``github-api``: a stand-in GitHub REST API serving the example repositories' pull requests and issues
  (``kotlin_bench.tools.github_api``; tests, the examples' harvest).
- ``reproduce``: compare one agent of a finished ``summary.csv`` with a reference (``leaderboard:<row>``,
  ``oracle``, ``nop`` or a CSV), without Docker; prints the verdict and writes what the DAG writes.
- ``leaderboard``: the published leaderboard's rows and their Harbor configurations (``--write`` generates
  ``config/leaderboard/``, ``--check`` lists drift).
- ``errors``: the runs recorded as errors (``--delete`` lets the next ``snakemake`` redo them).
- ``compare``: the paired comparison of two agents of a finished ``summary.csv``.
- ``model-server``: a stand-in OpenAI-compatible model server playing scripted conversations, with faults
  on demand (``kotlin_bench.tools.model_server``; tests and the examples' model-driven agents).
- ``egress classify --task <id> <url>...``: whether a URL would fetch the task's fix (the egress record's
  retrieval rule, ``kotlin_bench.core.retrieval``): ``retrieval`` or ``ok`` with the reason.
- ``clean``: what this workspace left on the container engine (containers, proxies, networks, images,
  build cache), listed; ``--remove`` removes it, ``--all-images`` adds its task images
  (``kotlin_bench.tools.cli.clean``).

Every command works from any directory inside the workflow (or with ``--root``): default paths are
relative to the workflow directory, paths given on the command line to the working directory
(``kotlin_bench.tools.root``). A command whose answer would be wrong (a missing input) exits non-zero.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from kotlin_bench import HARNESS_VERSION, RESULTS_LAYOUT
from kotlin_bench.dataset.materialize import MaterializeError
from kotlin_bench.dataset.spec import SpecError
from kotlin_bench.tools import add_task, github_api, harvest, model_server
from kotlin_bench.tools.cli import clean, dataset, egress, results
from kotlin_bench.tools.cli.text import report_error
from kotlin_bench.tools.root import OUTSIDE, resolve

DEPRECATED = ("validate",)  # old names kept for one release, not listed
# The modules that add commands, by what their commands work on (`kotlin-bench --help` lists them so).
GROUPS = (
    ("dataset", dataset.register),
    ("dataset", add_task.register),
    ("dataset", harvest.register),
    ("results", results.register),
    ("engine", clean.register),
    ("engine", egress.register),
    ("agents", model_server.register),
    ("dataset", github_api.register),
)


def epilog(groups: dict[str, list[str]]) -> str:
    return "\n".join(
        [
            "commands:",
            *(f"  {group:<9}{', '.join(commands)}" for group, commands in groups.items()),
            "",
            "runs: `snakemake --cores N` in the workflow directory (`kotlin-bench status` shows them per agent);",
            "`kotlin-bench COMMAND --help` for one command.",
        ]
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kotlin-bench",
        description=__doc__.split("\n\n")[0].replace("\n", " "),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"kotlin-bench {HARNESS_VERSION} (results layout {RESULTS_LAYOUT})",
    )
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="the workflow directory (default: the one the working directory is in)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    groups: dict[str, list[str]] = {}
    for group, register in GROUPS:
        before = set(sub.choices)
        register(sub)
        groups.setdefault(group, []).extend(c for c in sub.choices if c not in before and c not in DEPRECATED)
    parser.epilog = epilog(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    inside = True
    try:
        inside = resolve(args)
        return int(args.func(args))
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        sys.stderr.close()
        return 0
    except (SpecError, MaterializeError, OSError, KeyError, ValueError) as exc:
        hint = "" if inside else f" ({OUTSIDE})"
        report_error(f"{one_line(exc)}{hint}")
        return 2


def one_line(exc: BaseException) -> str:
    """The message of an error the commands report: a file error names the file and what is wrong in words
    (never `[Errno 2]`)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError) and exc.filename is not None:
        what = (
            "no such file or directory" if isinstance(exc, FileNotFoundError) else (exc.strerror or str(exc))
        )
        return f"{exc.filename}: {what.lower()}"
    return str(exc)
