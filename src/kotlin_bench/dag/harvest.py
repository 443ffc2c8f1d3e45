"""The harvest's part of the DAG (`rules/harvest.smk`): the paths between its jobs, and the input functions
that read its checkpoints.

Per repository and window, the checkpoint `harvest_screen` lists and screens the pull requests; per
candidate and base variant (newest first), `harvest_task` generates and materializes it, the checkpoint
`harvest_image` builds its image, `harvest_phase` runs its phases, and the checkpoint `harvest_probe` says
whether it builds there. `harvest_verdict` walks the variants through their probes: the first that builds
gets the test phase and the fix repetitions too, and the candidate's verdict; `harvest_window` writes the
candidates table, the dated specification and the page. A candidate's jobs are its own, not the window's:
a later window that lists the same pull request reuses them, and a rerun with nothing new plans no job.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.dag.resources import JobResources, Sizing
from kotlin_bench.dataset.harvest import tasks as harvest_tasks
from kotlin_bench.dataset.harvest.rules import Verdict
from kotlin_bench.dataset.materialize import MirrorSources
from kotlin_bench.dataset.pulls import task_id_for
from kotlin_bench.dataset.spec import Dataset, load_dataset
from kotlin_bench.dataset.task import load_task
from kotlin_bench.validation.harvest import CandidateVerdict, ImageRecord, Probe, walk
from kotlin_bench.validation.records import PhaseKind, PhaseRecord, ValidationError, phase_labels

MIN_REPEATS = 1  # fix runs beyond the first a candidate gets at least: flaky tests show only so


@dataclass
class HarvestPlan:
    root: Path
    spec: str
    materialize: dict[str, Any] = field(default_factory=dict)
    repeats: int = 0
    sizing: Sizing = field(default_factory=Sizing)

    @classmethod
    def from_config(cls, config: dict[str, Any], root: Path) -> HarvestPlan:
        return cls(
            root,
            str(config["spec"]),
            dict(config.get("materialize") or {}),
            max(int((config.get("validation") or {}).get("repeats", 0)), MIN_REPEATS),
            Sizing.from_config(config.get("resources")),
        )

    @functools.cached_property
    def dataset(self) -> Dataset:
        return load_dataset(self.root / self.spec)

    # ---------------------------------------------------------------- the repository

    def variants(self, owner: str, repo: str) -> list[str]:
        """The repository's base variants (their tags), newest first."""
        return [b.tag for b in harvest_tasks.variants(self.dataset, f"{owner}/{repo}")]

    def _mirror_sources(self) -> MirrorSources | None:
        return MirrorSources.from_config(self.materialize.get("upstream") or {})

    def mirrors(self, owner: str, repo: str) -> dict[str, str]:
        """Where the repository's history is read: its configured mirror, the one the DAG builds, or none
        (its clone URL)."""
        name = f"{owner}/{repo}"
        configured = dict((self.materialize.get("upstream") or {}).get("mirrors") or {})
        if name in configured:
            return {name: configured[name]}
        return {name: names.mirror_dir(owner, repo)} if self._mirror_sources() else {}

    def history_inputs(self, owner: str, repo: str) -> list[str]:
        """The mirror the DAG builds from committed sources (rule upstream_mirror), when it does."""
        configured = (self.materialize.get("upstream") or {}).get("mirrors") or {}
        if self._mirror_sources() and f"{owner}/{repo}" not in configured:
            return [names.mirror_dir(owner, repo)]
        return []

    # ---------------------------------------------------------------- a candidate

    def task_id(self, owner: str, repo: str, pr: int | str) -> str:
        return task_id_for(owner, repo, int(pr))

    def task_dir(self, owner: str, repo: str, pr: int | str, variant: str) -> str:
        stamp = names.harvest_task_stamp(owner, repo, pr, variant, self.task_id(owner, repo, pr))
        return str(Path(stamp).parent)

    def task_inputs(self, owner: str, repo: str, pr: int | str) -> list[str]:
        """Generating and materializing a try reads the candidate's ledger file and the history."""
        return [f"{names.harvest_ledger(owner, repo)}/{pr}.json", *self.history_inputs(owner, repo)]

    def stamp(self, owner: str, repo: str, pr: int | str, variant: str) -> str:
        return names.harvest_task_stamp(owner, repo, pr, variant, self.task_id(owner, repo, pr))

    def image_inputs(self, owner: str, repo: str, pr: int | str, variant: str) -> list[str]:
        base = harvest_tasks.variant(self.dataset, f"{owner}/{repo}", variant)
        return [names.base_sentinel(base.repo_key, base.tag), self.stamp(owner, repo, pr, variant)]

    def phase_inputs(self, owner: str, repo: str, pr: int | str, variant: str) -> list[str]:
        return [names.harvest_image(owner, repo, pr, variant), self.stamp(owner, repo, pr, variant)]

    def probe_inputs(self, owner: str, repo: str, pr: int | str, variant: str, image: Path) -> list[str]:
        """The image record; and, when the image was built, the run and fix phases."""
        inputs = [str(image)]
        if ImageRecord.read(self.root / image).built:
            inputs += [
                names.harvest_phase(owner, repo, pr, variant, str(k)) for k in (PhaseKind.RUN, PhaseKind.FIX)
            ]
        return inputs

    def verdict_inputs(
        self, owner: str, repo: str, pr: int | str, probe_path: Callable[[str], str]
    ) -> dict[str, list[str]]:
        """The probes of the variants tried, in order (`probe_path` reads each variant's checkpoint), and
        every phase of the first that builds."""
        paths: list[str] = []

        def probe_of(variant: str) -> Probe:
            paths.append(probe_path(variant))
            return Probe.read(self.root / paths[-1])

        chosen, tried = walk(self.variants(owner, repo), probe_of)
        phases = []
        if chosen is not None and tried[-1].builds:
            phases = [
                names.harvest_phase(owner, repo, pr, chosen, label) for label in phase_labels(self.repeats)
            ]
        return {"probes": paths, "phases": phases}

    def errored(self, owner: str, repo: str, pr: int | str) -> list[str]:
        """What to make again of a candidate whose verdict is an `error` (the harness failed on every try):
        its verdict, and the image records, phases and probes that recorded the error."""
        verdict = self.root / names.harvest_verdict(owner, repo, pr)
        try:
            if CandidateVerdict.read(verdict).verdict != Verdict.ERROR:
                return []
        except ValidationError:
            return []
        out = [names.harvest_verdict(owner, repo, pr)]
        for variant in self.variants(owner, repo):
            probe = names.harvest_probe(owner, repo, pr, variant)
            image = names.harvest_image(owner, repo, pr, variant)
            failed = [image] if _recorded_error(self.root / image, ImageRecord) else []
            for label in phase_labels(self.repeats):
                phase = names.harvest_phase(owner, repo, pr, variant, label)
                failed += [phase] if _recorded_error(self.root / phase, PhaseRecord) else []
            out += [*failed, probe] if failed else []
        return out

    def resources(self, owner: str, repo: str, pr: int | str, variant: str, image: bool) -> JobResources:
        """A try's image build is sized like a task image's, a phase like a verification."""
        task = load_task(self.root / self.task_dir(owner, repo, pr, variant), require_materialized=False)
        return self.sizing.for_task_image(task) if image else self.sizing.for_verify(task)

    # ---------------------------------------------------------------- a window

    def candidates(self, screened: Path) -> list[int]:
        """The pull requests the screening kept (read from its checkpoint's output)."""
        data = json.loads((self.root / screened).read_text(encoding="utf-8"))
        return [int(s["number"]) for s in data if s.get("verdict") == Verdict.CANDIDATE]

    def window_inputs(self, owner: str, repo: str, screened: Path) -> dict[str, list[str]]:
        verdicts = [names.harvest_verdict(owner, repo, n) for n in self.candidates(screened)]
        return {"screened": [str(screened)], "verdicts": verdicts}


def _recorded_error(path: Path, record: Any) -> bool:
    try:
        return bool(record.read(path).error) if path.is_file() else False
    except ValidationError:
        return False
