"""One run's page: the page that answers "why", built from a list of sections.

Each section is a function of the run (`RunContext`) that returns a `PageSection` (or None when it has
nothing to show) and names its template under `templates/sections/`. The page is the sections of
`RUN_SECTIONS` in order: to add one (egress requests, a trajectory, ...), write the function and its
template and list it here. The outcome (status, reason in words, its class, the error), the tests, the
agent's diff or the predicted patch (as given and as normalised, which applier applied it or why none
did, the appliers' messages), the capture and flags as tables, the logs, every file of the run, the
instruction.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.codec import to_json
from kotlin_bench.core.record import PatchKind, RecordError, RunResult, WorkRecord
from kotlin_bench.core.record_parts import TestCounts
from kotlin_bench.dataset.predictions import patch_candidates
from kotlin_bench.engine.egress import read_egress
from kotlin_bench.results.outcomes import COLOURS, LABELS, TEXT, outcome_of
from kotlin_bench.results.report import reason_text
from kotlin_bench.results.site.pages import (
    DIFF_BYTES,
    EGRESS_ROWS,
    INSTRUCTION_BYTES,
    Category,
    DiffLine,
    Log,
    categories,
    diff_lines,
    href,
    read_text,
    run_logs,
    trajectory_steps,
    usage_rows,
)
from kotlin_bench.runs.agents import kind_named

MAX_FILES = 400
APPLIER_LINES = 15
NORMALISATION_TEXT = {
    "code_fence": "the diff taken out of markdown code fences (or <patch>/<diff> tags)",
    "leading_prose": "prose before the diff dropped",
    "crlf": "CRLF line ends made LF",
    "final_newline": "a missing final newline added",
}


@dataclass
class PageSection:
    """One section of a page: its anchor, its title, its template (under templates/sections/), its data."""

    id: str
    title: str
    template: str
    data: Any = None


@dataclass
class RunContext:
    """What the sections of a run's page read: the records, the run's directory, the page's path."""

    root: Path  # the workflow directory
    result_path: Path  # result.json, relative to root
    result: RunResult
    work: WorkRecord | None
    page: str  # the page, relative to root
    tasks_dir: Path

    @property
    def run_dir(self) -> Path:
        return (self.root / self.result_path).parent

    @property
    def work_dir(self) -> Path:
        return self.run_dir / names.WORK_DIR

    def link(self, path: Path) -> str:
        """A link from the page to a file under root (relative: a copy of results/ keeps it working)."""
        return href(path.relative_to(self.root) if path.is_absolute() else path, self.page)


RunSection = Callable[[RunContext], PageSection | None]


# --------------------------------------------------------------------------- the sections


@dataclass
class Outcome:
    outcome: str
    colour: str
    label: str
    class_text: str
    reason_text: str | None
    facts: list[tuple[str, str]]


def outcome_section(ctx: RunContext) -> PageSection:
    r = ctx.result
    work = r.work
    outcome = outcome_of(r.status, r.reason)
    agent = f"{r.agent} (kind {r.kind}" + (f", model {r.model}" if r.model else "") + ")"
    facts = [
        ("repository", r.repository),
        ("agent", agent),
        ("reward", "-" if r.reward is None else f"{r.reward:g}"),
        ("started", r.started_at),
        ("image", " ".join(x for x in (work.image, work.image_id) if x) or "-"),
        ("harness version", r.harness_version),
    ]
    if work.agent_timed_out:
        facts.append(("agent timed out", "yes"))
    facts += usage_rows(work.usage, work.solve_tries)
    facts += [(k, f"{v:g} s" if isinstance(v, int | float) else str(v)) for k, v in r.timings.items()]
    facts += [("failed try", t) for t in r.tries]
    data = Outcome(
        outcome,
        COLOURS[outcome],
        LABELS[outcome],
        TEXT[outcome],
        reason_text(r.reason) if r.reason else None,
        facts,
    )
    return PageSection("outcome", "Outcome", "outcome.html.j2", data)


@dataclass
class Tests:
    counts: TestCounts | None
    categories: list[Category]


def tests_section(ctx: RunContext) -> PageSection:
    verifier = ctx.result.verifier
    data = Tests(verifier.counts, categories(verifier))
    return PageSection("tests-section", "Tests: expected against landed", "tests.html.j2", data)


@dataclass
class Diff:
    """A diff or patch shown with its size, a link to the whole file, and whether it was cut here."""

    label: str
    lines: list[DiffLine]
    bytes: int
    cut: bool
    href: str
    id: str = "diff"


def read_diff(ctx: RunContext, path: Path, label: str, id: str = "diff") -> Diff:
    text, cut = read_text(path, DIFF_BYTES)
    return Diff(label, diff_lines(text), path.stat().st_size, cut, ctx.link(path), id)


@dataclass
class Candidate:
    steps: list[tuple[str, str]]  # (normalisation, what it does)
    diff: Diff | None


@dataclass
class Predicted:
    given: Diff
    candidates: list[Candidate] = field(default_factory=list)
    applier: str | None = None
    applied_steps: list[str] = field(default_factory=list)
    message: str | None = None
    applier_log: list[str] = field(default_factory=list)
    verified: bool = True  # the verify step reached the applying (an error before it did not)


def applier_messages(log: Path) -> list[str]:
    """The appliers' lines of a verify log: each `>>> candidate k: applier` and what it printed, up to the
    line `kotlin_bench.runs.handoff.apply_patch` ends them with (or a few lines)."""
    if not log.is_file():
        return []
    lines = read_text(log, 1 << 20)[0].splitlines()
    found: list[str] = []
    taking = 0
    for line in lines:
        if line.startswith(">>> candidate "):
            taking = APPLIER_LINES
            found.append(line)
        elif line.startswith(("kotlin-bench: the patch does not apply", "kotlin-bench: the patch applied")):
            found.append(line)
            taking = 0
        elif taking:
            found.append(line)
            taking -= 1
    return found


def _work_file(ctx: RunContext) -> Path | None:
    """The agent's work as a file: the work record's `diff` (agent.diff or prediction.patch)."""
    name = ctx.work.diff if ctx.work is not None and ctx.work.diff else names.AGENT_DIFF
    path = ctx.work_dir / name
    return path if path.is_file() else None


def work_section(ctx: RunContext) -> PageSection:
    """The agent's diff, or the predicted patch as given and as normalised and how it was applied."""
    path = _work_file(ctx)
    outcome = ctx.work.outcome if ctx.work is not None else None
    predicted_patch = ctx.work is not None and ctx.work.patch is PatchKind.PREDICTED
    if not predicted_patch or path is None:
        if path is None:
            data: Any = {"missing": outcome or "no diff was captured"}
        else:
            data = read_diff(ctx, path, "the agent's diff")
        return PageSection("work", "The agent's diff", "diff.html.j2", data)
    given = read_diff(ctx, path, "the patch as given", "patch-given")
    predicted = Predicted(given)
    text = path.read_bytes().decode("utf-8", errors="surrogateescape")
    candidates = patch_candidates(text)
    for k, (steps, candidate) in enumerate(candidates[1:], start=1):
        shown = None
        if k == len(candidates) - 1:  # the last is the fully normalised patch
            cut = len(candidate) > DIFF_BYTES
            lines = diff_lines(candidate[:DIFF_BYTES])
            shown = Diff("as normalised", lines, len(candidate.encode()), cut, "", "patch-normalised")
        predicted.candidates.append(Candidate([(s, NORMALISATION_TEXT.get(s, s)) for s in steps], shown))
    prediction = ctx.result.prediction
    predicted.applier = prediction.applier if prediction else None
    predicted.applied_steps = list(prediction.normalised) if prediction else []
    predicted.verified = prediction is not None
    predicted.message = ctx.result.error if not predicted.applier else None
    predicted.applier_log = applier_messages(ctx.run_dir / names.VERIFIER_LOG)
    return PageSection("work", "The predicted patch", "predicted.html.j2", predicted)


def capture_section(ctx: RunContext) -> PageSection:
    r = ctx.result
    capture = to_json(r.capture) if r.capture is not None else {}
    flags = {str(k): list(v or []) for k, v in r.flags.items()}
    return PageSection(
        "capture", "Capture of the agent's work, and flags", "capture.html.j2", (capture, flags)
    )


def trajectory_section(ctx: RunContext) -> PageSection | None:
    """The agent's trajectory (ATIF): the path its usage names (any kind), else where the kind's own trial
    keeps one (`AgentKind.trajectories`: a record older than the usage's `trajectory`)."""
    work = ctx.work_dir
    usage = ctx.result.work.usage
    named = work / usage.trajectory if usage.trajectory else None
    if named is not None and named.resolve().is_relative_to(work.resolve()) and named.is_file():
        steps = trajectory_steps(named)
        if steps:
            return PageSection("trajectory", "Trajectory", "trajectory.html.j2", (steps, ctx.link(named)))
    kind = kind_named(ctx.result.kind)
    for trajectory in [p for pattern in kind.trajectories for p in sorted(work.glob(pattern))][:1]:
        steps = trajectory_steps(trajectory)
        if steps:
            title = f"{kind.name.capitalize()} trajectory"
            return PageSection("trajectory", title, "trajectory.html.j2", (steps, ctx.link(trajectory)))
    return None


def egress_section(ctx: RunContext) -> PageSection | None:
    """The agent phase's requests through the recording proxy, flagged ones marked."""
    egress = ctx.result.work.egress
    if egress is None:
        return None
    record = ctx.work_dir / names.EGRESS_RECORD
    requests = read_egress(record) if record.is_file() else []
    link = ctx.link(record) if record.is_file() else None
    return PageSection(
        "egress", "Egress", "egress.html.j2", (egress, requests[:EGRESS_ROWS], len(requests), link)
    )


def logs_section(ctx: RunContext) -> PageSection:
    logs: list[Log] = run_logs(ctx.run_dir, ctx.result, ctx.page, ctx.root)
    return PageSection("logs", "Logs", "logs.html.j2", logs)


def files_section(ctx: RunContext) -> PageSection:
    """Every file of the run directory, linked (relative), with its size."""
    found = []
    for base, dirs, files in os.walk(ctx.run_dir):
        dirs.sort()
        for name in sorted(files):
            path = Path(base) / name
            if name.endswith(".lock") or len(found) >= MAX_FILES:
                continue
            found.append((path.relative_to(ctx.run_dir).as_posix(), ctx.link(path), path.stat().st_size))
    return PageSection("files", "Files of the run", "files.html.j2", found)


def instruction_section(ctx: RunContext) -> PageSection:
    path = ctx.root / ctx.tasks_dir / ctx.result.task / names.INSTRUCTION
    data = read_text(path, INSTRUCTION_BYTES) if path.is_file() else None
    return PageSection("instruction", "Instruction", "instruction.html.j2", data)


RUN_SECTIONS: list[RunSection] = [
    outcome_section,
    tests_section,
    work_section,
    capture_section,
    trajectory_section,
    egress_section,
    logs_section,
    files_section,
    instruction_section,
]


@dataclass
class RunPage:
    """Everything one run's page shows: its sections, in order."""

    result: RunResult
    page: str
    links: dict[str, str]
    sections: list[PageSection]


def run_page(root: Path, result_path: Path, tasks_dir: Path) -> RunPage:
    """The page of one run (`result_path` relative to `root`, the workflow directory)."""
    result = RunResult.read(root / result_path)
    page = names.site_run_page(result.agent, result.task, result.attempt)
    work_path = (root / result_path).parent / names.WORK_DIR / names.WORK_FILE
    try:
        work = WorkRecord.read(work_path) if work_path.is_file() else None
    except RecordError:
        work = None
    ctx = RunContext(root, result_path, result, work, page, tasks_dir)
    links = {"task": href(names.site_task_page(result.task), page), "index": href(names.SITE_INDEX, page)}
    sections = [s for s in (build(ctx) for build in RUN_SECTIONS) if s is not None]
    return RunPage(result, page, links, sections)
