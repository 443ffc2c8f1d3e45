"""`kotlin-bench harvest OWNER/REPO ... | all --since DATE [--until DATE]`: new tasks from the pull requests the
repositories merged in a window, unattended: the workflow's targets `results/harvest/<owner>/<repo>/
<since>_<until>/dataset.json` (rules/harvest.smk) in one `snakemake`, then what each repository gave.

The window runs from `--since` (inclusive) to `--until` (exclusive; default today, UTC). The repositories
and their base images come from the config's dataset specification; the API from the config's `github:`
and the environment (`GITHUB_TOKEN`, `GITHUB_API_URL`). Validation repeats the fix run
`validation.repeats` times, at least once (`kotlin_bench.dag.harvest.MIN_REPEATS`: flaky tests are found
by the repetition).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.render import error_line
from kotlin_bench.core.yamlfile import read_yaml
from kotlin_bench.dataset.harvest.records import Window
from kotlin_bench.dataset.harvest.tasks import variants
from kotlin_bench.dataset.spec import SpecError, load_dataset
from kotlin_bench.results.harvest import read_table
from kotlin_bench.tools.root import Rooted, add_root


def targets(repositories: list[str], window: Window) -> list[str]:
    out = []
    for name in repositories:
        owner, _, repo = name.partition("/")
        if not owner or not repo:
            raise ValueError(f"{name!r}: expected OWNER/REPO, e.g. examples/calc")
        out.append(names.harvest_spec(owner, repo, window.name))
    return out


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path.resolve())


def command(args: argparse.Namespace, window: Window) -> list[str]:
    cmd = [sys.executable, "-m", "snakemake", *targets(args.repositories, window), "--cores", str(args.cores)]
    if Path(args.config).resolve() != (Path(args.root) / "config.yaml").resolve():
        cmd += ["--configfile", _relative(Path(args.config), Path(args.root)), "--replace-workflow-config"]
    if args.dry_run:
        cmd.append("--dry-run")
    return cmd


def report(root: Path, repositories: list[str], window: Window) -> list[str]:
    """One line per repository: what its window gave, and where."""
    lines = []
    for name in repositories:
        owner, _, repo = name.partition("/")
        table_path = root / names.harvest_window(owner, repo, window.name) / names.HARVEST_TABLE
        if not table_path.is_file():
            lines.append(f"{name}: not harvested (see the errors above)")
            continue
        table = read_table(table_path)
        counts = table["verdict"].value_counts().to_dict()
        said = ", ".join(f"{n} {v}" for v, n in sorted(counts.items())) or "no pull request"
        lines.append(f"{name} {window.name}: {said} -> {table_path.parent}/")
    return lines


def cmd_harvest(args: argparse.Namespace) -> int:
    root = Path(args.root)
    until = args.until or datetime.now(UTC).date().isoformat()
    try:
        window = Window.of(args.since, until)
        config = read_yaml(Path(args.config))
        spec = root / str(config["spec"])
        dataset = load_dataset(spec)
        known = dataset.repositories
        if args.repositories == ["all"]:
            args.repositories = sorted(known)
        unknown = [r for r in args.repositories if r not in known]
        if unknown:
            raise ValueError(
                f"{unknown} not in {spec}: add a repository (and a base image for it) to harvest it"
            )
        for name in args.repositories:
            variants(dataset, name)  # a repository without a base image cannot be validated
        cmd = command(args, window)
    except (ValueError, KeyError, OSError, SpecError) as exc:
        print(error_line(str(exc)), file=sys.stderr)
        return 2
    print(
        f"kotlin-bench: harvest {', '.join(args.repositories)} {window.since}..{window.until}: {' '.join(cmd[3:])}",
        flush=True,
    )
    code = subprocess.run(cmd, cwd=root).returncode
    if not args.dry_run:
        for line in report(root, args.repositories, window):
            print(f"kotlin-bench: {line}")
    if code != 0:
        print(
            error_line(f"the harvest's workflow failed (exit {code}); see {names.LOGS}/harvest/"),
            file=sys.stderr,
        )
    return code


def register(sub: Any) -> None:
    p = sub.add_parser("harvest", help="new tasks from the pull requests repositories merged in a window")
    p.add_argument(
        "repositories",
        nargs="+",
        metavar="OWNER/REPO",
        help="repositories of the config's dataset (`all`: every one)",
    )
    p.add_argument("--since", required=True, help="first day of the window (YYYY-MM-DD, UTC)")
    p.add_argument("--until", help="the day after the window (exclusive; default today, UTC)")
    p.add_argument(
        "--config", type=Path, default=Rooted("config.yaml"), help="workflow config (default config.yaml)"
    )
    p.add_argument("--cores", type=int, default=2)
    p.add_argument("--dry-run", action="store_true", help="what the workflow would do")
    add_root(p)
    p.set_defaults(func=cmd_harvest)
