"""One agent's reproduction, against either kind of reference: the comparison CSV, the page, the verdict."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.render import Section, render_markdown
from kotlin_bench.dataset import leaderboard
from kotlin_bench.results.cutoff import CutoffGap, cutoff_section
from kotlin_bench.results.reproduce.leaderboard import (
    compare_leaderboard,
    leaderboard_reference,
    leaderboard_sections,
    leaderboard_verdict,
    read_leaderboard_comparison,
)
from kotlin_bench.results.reproduce.plan import BUILTIN, DEFAULT_TOLERANCE, ReferenceKind, reference_path
from kotlin_bench.results.reproduce.tasks import (
    compare,
    judge,
    load_reference,
    read_comparison,
    reproduction_sections,
)
from kotlin_bench.results.reproduce.verdicts import Verdict
from kotlin_bench.results.report import retrieval_note
from kotlin_bench.results.summary import write_table

# --------------------------------------------------------------------------- one agent, either kind


def reproduce_agent(
    agent: str,
    spec: str,
    summary: pd.DataFrame,
    csv_path: Path,
    md_path: Path,
    tolerance: float = DEFAULT_TOLERANCE,
    root: Path = Path("."),
    *,
    cutoff: CutoffGap | None = None,
) -> Verdict:
    """Compare one agent's runs of `summary` with a reference; write the comparison CSV and page (with its
    rates before and after its training cutoff, when it has one)."""
    ours = summary[summary["agent"] == agent]
    if leaderboard.is_reference(spec):
        reference = leaderboard_reference(spec, root)
        comparison = compare_leaderboard(ours, reference)
        verdict_ = Verdict(
            agent, reference.label, leaderboard_verdict(comparison), str(csv_path), ReferenceKind.LEADERBOARD
        )
    else:
        source = spec if spec in BUILTIN else str(reference_path(spec, root))
        comparison = compare(ours, load_reference(source, summary), tolerance)
        verdict_ = judge(agent, spec, comparison, str(csv_path))
    write_table(comparison, csv_path)
    note = retrieval_note(ours)  # the egress record: the rate with and without retrieval-flagged runs
    page = render_reproduction(verdict_, comparison)
    page += f"\n## Retrieval\n\n{agent}: {note}\n" if note else ""
    section = cutoff_section([cutoff]) if cutoff is not None else None
    if section is not None:
        page += "\n" + render_markdown([section]).split("\n", 2)[2]  # without the page's title
    write_atomic(md_path, page)
    return verdict_


def _title(verdict_: Verdict) -> str:
    return f"Reproduction: {verdict_.agent} vs {verdict_.reference}"


def sections_of(verdict_: Verdict, comparison: pd.DataFrame | None = None) -> list[Section]:
    """The sections of a verdict's page; the comparison is read from its CSV unless given."""
    if verdict_.kind == ReferenceKind.LEADERBOARD:
        frame = (
            comparison if comparison is not None else read_leaderboard_comparison(Path(verdict_.comparison))
        )
        return leaderboard_sections(verdict_, frame)
    frame = comparison if comparison is not None else read_comparison(Path(verdict_.comparison))
    return reproduction_sections(verdict_, frame)


def render_reproduction(verdict_: Verdict, comparison: pd.DataFrame) -> str:
    """The page of a verdict (`results/reproduce/<agent>.md`), either kind of reference."""
    return render_markdown(sections_of(verdict_, comparison), _title(verdict_))


