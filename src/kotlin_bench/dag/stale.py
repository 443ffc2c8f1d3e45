"""Files made from many others (the summary, a task's validation verdict, ...) that lack some of them.

Snakemake does not rebuild a missing input of a job whose output is up to date (snakemake/snakemake#1978):
with one run's result.json deleted, `snakemake results/summary.csv` would say there is nothing to do. Such
a file is stale, and what happens to it depends on what Snakemake was asked to do (`Invocation`):

- a run (jobs execute, in this process, with nobody else's lock on the directory): the stale file is
  forced while the DAG is built (Snakemake's own `--forcerun` of that file), so that Snakemake runs exactly
  the missing jobs and remakes it; it stays where it is until its job replaces it (a second terminal's
  `kotlin-bench compare` reads the previous summary while a new agent runs);
- a preview (`-n`): nothing changes; the stale file's job gets a parameter naming what is missing, so the
  plan Snakemake prints is the run's plan (a parameter of a file that is complete is left out of
  Snakemake's records, so no finished file ever reruns for it);
- anything else (`--summary`, `--dag`, a rule script's own parse, ...): nothing changes, nothing is said.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

# what a file is made from: its input files, as a list or by name (an input function's value)
Needs = list[str] | dict[str, list[str]]


class Invocation(Enum):
    RUN = "run"
    PREVIEW = "preview"
    OTHER = "other"

    @classmethod
    def of(cls, workflow: Any) -> Invocation:
        """What the Snakemake `workflow` is doing, asked while it builds its DAG (at parse time, nothing is
        known yet: the executor is set only when jobs are to be run or previewed)."""
        if workflow.executor_plugin is None or workflow.exec_mode.name != "DEFAULT":
            return cls.OTHER
        if workflow.dryrun:
            return cls.PREVIEW
        return cls.OTHER if workflow.touch else cls.RUN


class Complete:
    """The `stale` parameter of a file that lacks nothing: not a value Snakemake records (it keeps only
    parameters it can represent), so its records are those of a rule without the parameter."""

    def __repr__(self) -> str:
        return "complete"

    def __reduce__(self) -> tuple[type, tuple[()]]:
        return (Complete, ())


@dataclass
class Staleness:
    """Says (once per file) and settles the stale files of one Snakemake invocation."""

    workflow: Any
    said: set[str] = field(default_factory=set)

    def settle(self, made: str, needs: Needs, what: str) -> Needs:
        """`needs`, after forcing `made` when this is a run and it lacks some of them (an input function
        of the rule that makes `made`): Snakemake then remakes it, and it stays readable until then."""
        missing = _missing(needs)
        if missing and Path(made).exists() and Invocation.of(self.workflow) is Invocation.RUN:
            if self._locked():
                return needs  # another Snakemake works here: this one stops at its lock, changing nothing
            dag = getattr(self.workflow, "dag", None)
            if dag is not None:
                dag.forcefiles.add(made)  # the DAG being built: as `--forcerun made` would
            else:
                Path(made).unlink()
            self._say(
                made,
                f"{len(missing)} {what} missing; {made} is kept until it is made again from all of them",
            )
        return needs

    def parameter(self, made: str, needs: Needs, what: str) -> str | Complete:
        """The `stale` parameter of the rule that makes `made` (see the module's docstring)."""
        missing = _missing(needs)
        if not missing or not Path(made).exists() or Invocation.of(self.workflow) is not Invocation.PREVIEW:
            return Complete()
        self._say(made, f"{len(missing)} {what} missing; a run makes them and {made} again (nothing changed)")
        return f"{len(missing)} {what} missing"

    def _locked(self) -> bool:
        locks = Path(self.workflow.persistence.path) / "locks"
        return locks.is_dir() and any(locks.iterdir())

    def _say(self, made: str, message: str) -> None:
        if made not in self.said:
            self.said.add(made)
            print(f"kotlin-bench: {message}", file=sys.stderr)


def _missing(needs: Needs) -> list[str]:
    paths = [p for group in needs.values() for p in group] if isinstance(needs, dict) else needs
    return [p for p in paths if not Path(p).exists()]
