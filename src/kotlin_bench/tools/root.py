"""Where a command works: the workflow directory it was started in (or under), or `--root`.

Default paths of every command (`tasks`, `results`, `config.yaml`, ...) are relative to that directory, so
a command works from any directory inside the workflow; paths given on the command line are relative to
the working directory, as usual. `status` and `plan` read the config in use (`--config`, default
`<root>/config.yaml`) for the dataset and the task selection when `--spec` / `--tasks-dir` are not given.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core.yamlfile import read_yaml

DEFAULT_CONFIG = "config.yaml"
MARKERS = ("Snakefile", "workflow/schemas/config.schema.yaml")


@dataclass(frozen=True)
class Rooted:
    """A default path relative to the workflow directory (resolved once the root is known; not a str, so
    that argparse leaves it alone)."""

    path: str

    def __str__(self) -> str:
        return self.path


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding a kotlin-bench workflow, else None."""
    for folder in (start, *start.parents):
        if all((folder / marker).exists() for marker in MARKERS):
            return folder
    return None


OUTSIDE = "the working directory is not inside a kotlin-bench workflow: cd into one, or pass --root"


def resolve(args: argparse.Namespace) -> bool:
    """Set `args.root` (given, else found above the working directory, else the working directory) and
    every Rooted default under it; whether a workflow directory was given or found."""
    given = getattr(args, "root", None)
    if given is not None:
        root, found = Path(given), None
        if not root.is_dir():
            raise FileNotFoundError(f"--root {given}: no such directory")
    else:
        here = Path.cwd().resolve()
        found = find_root(here)
        root = Path(os.path.relpath(found, here)) if found else Path(".")
    args.root = root
    for key, value in vars(args).items():
        if isinstance(value, Rooted):
            setattr(args, key, root / value.path)
    return given is not None or found is not None


def read_config(path: Path, required: bool = False) -> dict[str, Any]:
    """A workflow config file (YAML mapping); {} when it does not exist and is not `required` (a file
    named on the command line is)."""
    if not path.is_file() and not required:
        return {}
    data = read_yaml(path) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a YAML mapping")
    return data


def from_config(args: argparse.Namespace, defaults: dict[str, str]) -> dict[str, Any]:
    """`status` and `plan`: fill --spec, --tasks-dir (and --manifest) from the config in use when not given
    on the command line; returns the config (or {} when there is none)."""
    given = args.config is not None and args.config != args.root / DEFAULT_CONFIG
    config = read_config(args.config, required=given) if args.config else {}
    keys = {"spec": "spec", "tasks_dir": "tasks_dir", "manifest": "bases_manifest"}
    for attr, key in keys.items():
        if hasattr(args, attr) and getattr(args, attr) is None:
            value = config.get(key) or defaults[attr]
            setattr(args, attr, args.root / value)
    return config


def selection(config: dict[str, Any], given: list[str], spec: Path) -> list[str] | None:
    """The task ids to show: those given, else the config's `tasks:` less its `exclude:`; None for all."""
    if given:
        return given
    wanted = config.get("tasks", "all")
    excluded = set(config.get("exclude") or [])
    if wanted == "leaderboard":
        from kotlin_bench.dataset import leaderboard

        wanted = leaderboard.task_set(spec)
    if isinstance(wanted, list):
        return [t for t in wanted if t not in excluded]
    if excluded:
        from kotlin_bench.dataset.spec import load_dataset

        return [t.id for t in load_dataset(spec).tasks if t.id not in excluded]
    return None


def add_root(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        default=argparse.SUPPRESS,
        help="the workflow directory (default: the one the working directory is in)",
    )
