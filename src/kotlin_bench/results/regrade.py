"""Regrade: every run's work verified again, shown against the verdicts it would replace, then applied.

After the scorer, the expected lists or the verifier change, `kotlin-bench regrade` verifies each run's
work record again (the DAG's rule `regrade_verify`, into `results/regrade/runs/...`; no agent runs) and
compares each new verdict with the run's current one (`changes.csv`, `changes.md`: per run the old and
new reward and reason, and totals such as "2 runs 0 -> 1, 1 run 1 -> 0, 310 unchanged"). Nothing in
`results/runs/` changes until `kotlin-bench regrade --apply`, which moves every new verdict into place;
a run whose verdict changed keeps its previous one in `previous/<n>/` beside the new.
"""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.record import RecordError, RunResult
from kotlin_bench.core.render import Section, plural, render_markdown
from kotlin_bench.results.summary import write_table

CHANGES_COLUMNS = ["agent", "task", "attempt", "old_reward", "new_reward", "old_reason", "new_reason", "change"]
VERIFICATION_FILES = (names.RESULT_FILE, names.VERIFIER_LOG, names.VERIFIER_OUT)


@dataclass(frozen=True)
class Change:
    """One run's verdict before and after a regrade."""

    agent: str
    task: str
    attempt: int
    old_reward: float | None
    new_reward: float | None
    old_reason: str | None
    new_reason: str | None

    @property
    def change(self) -> str:
        if self.old_reward == self.new_reward:
            return "unchanged"
        return f"{_shown(self.old_reward)} -> {_shown(self.new_reward)}"


def _shown(reward: float | None) -> str:
    return "none" if reward is None else f"{reward:g}"


def _read(path: Path) -> RunResult | None:
    try:
        return RunResult.read(path)
    except RecordError:
        return None


def compare(current: Sequence[Path], staged: Sequence[Path]) -> list[Change]:
    """Pair each staged verdict with the run's current one (same agent, task, attempt)."""
    changes = []
    for now_path, new_path in zip(current, staged, strict=True):
        new = RunResult.read(new_path)
        old = _read(now_path)
        changes.append(
            Change(
                new.agent,
                new.task,
                new.attempt,
                None if old is None else old.reward,
                new.reward,
                None if old is None else old.reason,
                new.reason,
            )
        )
    return changes


def totals(changes: Sequence[Change]) -> str:
    """`2 runs 0 -> 1, 1 run 1 -> 0, 310 unchanged`."""
    counts = Counter(c.change for c in changes)
    moved = [plural(n, "run") + f" {change}" for change, n in sorted(counts.items()) if change != "unchanged"]
    return ", ".join([*moved, f"{counts.get('unchanged', 0)} unchanged"])


def changes_table(changes: Sequence[Change]) -> pd.DataFrame:
    rows = [{**{k: getattr(c, k) for k in CHANGES_COLUMNS if k != "change"}, "change": c.change} for c in changes]
    return pd.DataFrame(rows, columns=CHANGES_COLUMNS).sort_values(["agent", "task", "attempt"], ignore_index=True)


def write_changes(changes: Sequence[Change], csv: Path, md: Path) -> str:
    """Write changes.csv and changes.md; returns the markdown."""
    table = changes_table(changes)
    write_table(table, csv)
    changed = table[table["change"] != "unchanged"]
    lines = [
        f"{totals(changes)}.",
        "Nothing in results/runs/ has changed; `kotlin-bench regrade --apply` moves the new verdicts into "
        "place, and each changed run keeps its previous verdict in previous/<n>/.",
    ]
    sections = [Section("Regrade", lines)]
    if len(changed):
        sections.append(Section("Runs whose verdict changes", table=changed.drop(columns=["change"])))
    text = render_markdown(sections, "kotlin-bench regrade")
    write_atomic(md, text)
    return text


def read_changes(csv: Path) -> list[Change]:
    frame = pd.read_csv(csv, keep_default_na=False, na_values=[""])
    frame = frame.astype(object).where(frame.notna(), None)
    return [
        Change(r["agent"], r["task"], int(r["attempt"]), r["old_reward"], r["new_reward"], r["old_reason"], r["new_reason"])
        for r in frame.to_dict("records")
    ]


def _next_previous(run_dir: Path) -> Path:
    previous = run_dir / names.PREVIOUS_DIR
    taken = [int(p.name) for p in previous.glob("*") if p.name.isdigit()] if previous.is_dir() else []
    return previous / str(max(taken, default=0) + 1)


def _move(names_: Sequence[str], source: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names_:
        if (source / name).exists():
            shutil.move(str(source / name), str(dest / name))


def apply(changes: Sequence[Change], root: Path = Path(".")) -> int:
    """Move every staged verdict into its run directory; the previous verdict of a run that changed goes
    to `previous/<n>/`. Returns how many runs changed."""
    changed = 0
    for c in changes:
        run_dir = root / names.run_dir(c.agent, c.task, c.attempt)
        staged = root / names.regrade_dir(c.agent, c.task, c.attempt)
        if not (staged / names.RESULT_FILE).is_file():
            continue
        if c.change != "unchanged":
            changed += 1
            if (run_dir / names.RESULT_FILE).is_file():
                _move(VERIFICATION_FILES, run_dir, _next_previous(run_dir))
        for name in VERIFICATION_FILES:
            path = run_dir / name
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        # the verdict last: a run directory never holds a result.json without its verifier files
        _move([names.VERIFIER_LOG, names.VERIFIER_OUT], staged, run_dir)
        _move([names.RESULT_FILE], staged, run_dir)
    return changed


def headline(changes: Sequence[Change]) -> list[str]:
    """Per agent: resolved runs now and after the regrade, and how the verdicts move
    (`oracle: 5/5 resolved now, 4/5 after the regrade (1 run 1 -> 0, 4 unchanged)`)."""
    lines = []
    for agent in sorted({c.agent for c in changes}):
        mine = [c for c in changes if c.agent == agent]
        now = sum(1 for c in mine if c.old_reward == 1.0)
        after = sum(1 for c in mine if c.new_reward == 1.0)
        lines.append(
            f"{agent}: {now}/{len(mine)} resolved now, {after}/{len(mine)} after the regrade ({totals(mine)})"
        )
    return lines
