"""The site's page of runs in progress (`results/site/live.html`): the runs a job works on now (the
runner's locks held, `kotlin_bench.runs.activity`) and the runs finished, newest first. Written by each
verify job when its run is finished (with that run's page), and by the site at the end, so that a long
run can be watched from the site while it goes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import RecordError, RunResult
from kotlin_bench.results.site.pages import href, outcome_class, outcome_word
from kotlin_bench.runs.activity import held_locks, lock_files

SHOWN = 200


@dataclass
class Going:
    agent: str
    task: str
    attempt: str
    step: str


@dataclass
class Finished:
    when: str
    agent: str
    task: str
    attempt: int
    word: str
    cls: str
    href: str | None


def running(root: Path) -> list[Going]:
    """The runs whose runner lock a job holds now: `.attempt-<k>.lock` (verify) or `.work.lock` (solve)."""
    found = []
    for held in held_locks(lock_files(root)):
        path = held.path.relative_to(root)
        if held.path.name == f".{names.WORK_DIR}.lock":  # attempt-<k>/.work.lock
            agent, task, attempt = path.parts[-4:-1]
            step = "solving"
        else:  # .attempt-<k>.lock beside the run directory (repeats: repeats/.<r>.lock)
            parts = path.parts
            if names.REPEATS_DIR in parts:
                i = parts.index(names.REPEATS_DIR)
                agent, task, attempt = parts[i - 3 : i]
                step = f"verifying again ({held.path.name.strip('.').removesuffix('.lock')})"
            else:
                agent, task = parts[-3:-1]
                attempt = held.path.name.strip(".").removesuffix(".lock")
                step = "verifying"
        found.append(Going(agent, task, attempt.removeprefix("attempt-"), step))
    return sorted(found, key=lambda g: (g.agent, g.task, g.attempt))


def finished(root: Path, page: str, limit: int = SHOWN) -> tuple[list[Finished], int]:
    """The newest `limit` verdicts under results/runs, and how many there are."""
    paths = sorted(
        (root / names.runs_root()).glob(names.RESULT_GLOB), key=lambda p: p.stat().st_mtime, reverse=True
    )
    rows = []
    for path in paths[:limit]:
        try:
            r = RunResult.read(path)
        except RecordError:
            continue
        stamp = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        run_page = names.site_run_page(r.agent, r.task, r.attempt)
        link = href(run_page, page) if (root / run_page).is_file() else None
        word = outcome_word(str(r.status), r.reason)
        rows.append(
            Finished(stamp, r.agent, r.task, r.attempt, word, outcome_class(str(r.status), r.reason), link)
        )
    return rows, len(paths)
