"""Run a rule's script (workflow/scripts/*.py) as Snakemake would, without Snakemake: its `snakemake`
object is made of named lists."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tests.conftest import REPO

SCRIPTS = REPO / "workflow" / "scripts"


class Files(list):
    """Snakemake's named lists: a list that also has its names as attributes."""

    def __init__(self, **named: Any) -> None:
        super().__init__(
            v for value in named.values() for v in (value if isinstance(value, list) else [value])
        )
        self.__dict__.update(named)


def run_script(name: str, **parts: Any) -> None:
    sm = SimpleNamespace(scriptdir=str(SCRIPTS), **parts)
    runpy.run_path(str(SCRIPTS / name), init_globals={"snakemake": sm})


def aggregate_outputs(out: Path, agents: list[str]) -> Files:
    """Rule aggregate's outputs under `out` (a results directory), with one comparison per agent."""
    return Files(
        rates=str(out / "rates.csv"),
        by_repository=str(out / "rates_by_repository.csv"),
        comparisons=str(out / "comparisons.csv"),
        markdown=str(out / "summary.md"),
        verdicts=str(out / "reproduce/verdicts.json"),
        reproduce_md=[str(out / f"reproduce/{agent}.md") for agent in agents],
        reproduce_csv=[str(out / f"reproduce/{agent}.csv") for agent in agents],
    )
