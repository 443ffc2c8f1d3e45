"""Progress of a workflow run: `runs 5/8 done | resolved 3 | errors 1 | elapsed 2m10s | eta 1m20s`, with
`verifications 3/20 done` when the invocation verifies again (repeats, a regrade), and the headline the
terminal ends on.

The line counts what this invocation will do (`planned`: the outputs of the jobs Snakemake is about to
run), not every run of the config. A run (or verification) is done when its result.json exists (written
last and atomically) and was written since the invocation started. The ETA divides what is still to do by
the pace of what finished since the watcher started.

From the Snakefile:

    onstart:
        stop_progress = start_progress(planned(jobs), interval=60)
    onsuccess:
        stop_progress(); print_headline(...)
    onerror:
        stop_progress()
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kotlin_bench.core.record import Status, read_status

PREFIX = "kotlin-bench:"
RUN_RULES = frozenset({"verify"})  # a run is done when its verdict is written
VERIFICATION_RULES = frozenset({"verify_repeat", "regrade_verify"})  # verifications of runs done already


@dataclass(frozen=True)
class Planned:
    """What an invocation will write: the runs' verdicts and the further verifications (repeats,
    regrade), and the rules of its jobs."""

    runs: list[Path]
    verifications: list[Path]
    rules: frozenset[str]


def planned(jobs: Iterable[tuple[str, Sequence[str]]]) -> Planned:
    """From (rule name, outputs) of the jobs an invocation will run (Snakemake's `needrun_jobs`)."""
    runs: list[Path] = []
    verifications: list[Path] = []
    rules = set()
    for rule, outputs in jobs:
        rules.add(rule)
        if rule in RUN_RULES:
            runs += [Path(p) for p in outputs]
        elif rule in VERIFICATION_RULES:
            verifications += [Path(p) for p in outputs]
    return Planned(sorted(runs), sorted(verifications), frozenset(rules))


def duration(seconds: float) -> str:
    """45s, 2m10s, 1h02m."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


@dataclass(frozen=True)
class Counts:
    expected: int
    done: int
    resolved: int
    errors: int
    verifications: int = 0  # further verifications planned (repeats, regrade)
    verified: int = 0  # of them, done


def _status(path: Path) -> str:
    status = read_status(path)
    return "unreadable" if status is None else status.value


@dataclass
class Progress:
    """Counts the finished runs among `expected` (relative paths resolve against `root`)."""

    expected: list[Path]
    root: Path = Path(".")
    started: float = field(default_factory=time.monotonic)
    baseline: int | None = None  # units done when counting began (None: set by the first count)
    verifications: list[Path] = field(default_factory=list)
    since_ns: int = 0  # a result.json older than this (epoch ns) is a previous invocation's: not done
    _seen: dict[Path, tuple[int, str]] = field(default_factory=dict, repr=False)

    def _status_of(self, path: Path) -> str | None:
        """The status in the run's result.json (re-read when the file changes); None if not done."""
        full = path if path.is_absolute() else self.root / path
        try:
            mtime = full.stat().st_mtime_ns
        except OSError:
            self._seen.pop(path, None)
            return None
        if mtime < self.since_ns:
            return None
        cached = self._seen.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, _status(full))
            self._seen[path] = cached
        return cached[1]

    def counts(self) -> Counts:
        statuses = [self._status_of(p) for p in self.expected]
        checked = [self._status_of(p) for p in self.verifications]
        done = [s for s in statuses if s is not None]
        verified = [s for s in checked if s is not None]
        both = done + verified
        counts = Counts(
            len(self.expected),
            len(done),
            both.count(Status.RESOLVED),
            both.count(Status.ERROR),
            len(self.verifications),
            len(verified),
        )
        if self.baseline is None:
            self.baseline = counts.done + counts.verified
        return counts

    def line(self, now: float | None = None) -> str:
        counts = self.counts()
        elapsed = (time.monotonic() if now is None else now) - self.started
        return format_line(counts, elapsed, counts.done + counts.verified - (self.baseline or 0))


def format_line(counts: Counts, elapsed: float, done_since_start: int) -> str:
    """`runs 5/8 done | verifications 2/4 done | resolved 3 | errors 1 | elapsed 2m10s | eta 1m20s` (each
    count shown when the invocation has some of it)."""
    remaining = counts.expected - counts.done + counts.verifications - counts.verified
    if remaining <= 0:
        eta = "0s"
    elif done_since_start > 0:
        eta = duration(elapsed / done_since_start * remaining)
    else:
        eta = "?"
    parts = []
    if counts.expected or not counts.verifications:
        parts.append(f"runs {counts.done}/{counts.expected} done")
    if counts.verifications:
        parts.append(f"verifications {counts.verified}/{counts.verifications} done")
    parts += [f"resolved {counts.resolved}", f"errors {counts.errors}"]
    return " | ".join([*parts, f"elapsed {duration(elapsed)}", f"eta {eta}"])


def _watch(progress: Progress, interval: float, stop: threading.Event, stream: TextIO) -> None:
    while not stop.wait(interval):
        _say(stream, progress.line())


def _say(stream: TextIO, text: str) -> None:
    try:
        stream.write(f"{PREFIX} {text}\n")
        stream.flush()
    except (OSError, ValueError):
        pass


def start_progress(
    expected_paths: Sequence[str | Path],
    interval: float,
    root: Path = Path("."),
    stream: TextIO | None = None,
    verifications: Sequence[str | Path] = (),
) -> Callable[[], None]:
    """Print the progress line to stderr every `interval` seconds; the returned callable stops the watcher
    (and prints a last line). Calling it again does nothing. Only results written from now on count."""
    if interval <= 0:
        raise ValueError(f"interval must be positive, got {interval}")
    out = sys.stderr if stream is None else stream
    progress = Progress(
        [Path(p) for p in expected_paths],
        root,
        verifications=[Path(p) for p in verifications],
        since_ns=time.time_ns() - 1_000_000_000,  # file systems with coarse timestamps
    )
    progress.counts()  # the runs already done before the start do not count towards the pace
    stop = threading.Event()
    thread = threading.Thread(
        target=_watch, args=(progress, interval, stop, out), name="kotlin-bench-progress", daemon=True
    )
    thread.start()

    def stop_progress() -> None:
        if stop.is_set():
            return
        stop.set()
        thread.join(timeout=5)
        _say(out, progress.line())

    return stop_progress


def headline(root: Path = Path(".")) -> list[str]:
    """The headline of the results under `root` (per agent, the reproduction verdicts), or [] when the
    aggregates are not there."""
    from kotlin_bench.core import names
    from kotlin_bench.results.report import terminal_headline
    from kotlin_bench.results.reproduce.verdicts import read_verdicts
    from kotlin_bench.results.stats import read_rates
    from kotlin_bench.results.summary import read_summary

    try:
        summary, overall = read_summary(root / names.SUMMARY_CSV), read_rates(root / names.RATES_CSV)
        verdicts = read_verdicts(root / names.VERDICTS_JSON) if (root / names.VERDICTS_JSON).is_file() else []
    except (OSError, ValueError):
        return []
    return terminal_headline(summary, overall, [v.line for v in verdicts])


def print_headline(root: Path = Path("."), stream: TextIO | None = None) -> None:
    """The last lines of a run: a blank line, then the headline (each line with the prefix)."""
    out = sys.stdout if stream is None else stream
    lines = headline(root)
    if lines:
        _say(out, "")
        for line in lines:
            _say(out, line)
