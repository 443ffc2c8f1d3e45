"""Progress of a workflow run: `runs 5/8 done | resolved 3 | errors 1 | elapsed 2m10s | eta 1m20s`.

A run is done when its result.json exists (written last and atomically by the runner). The ETA divides the
runs still to do by the pace of the runs finished since the watcher started (runs already done when it
started, e.g. kept from an earlier invocation, do not speed it up).

From the Snakefile:

    onstart:
        stop_progress = start_progress(PLAN.results(), interval=60)
    onsuccess:
        stop_progress()
    onerror:
        stop_progress()
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kotlin_bench.core.record import Status, read_status

PREFIX = "kotlin-bench:"


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


def _status(path: Path) -> str:
    status = read_status(path)
    return "unreadable" if status is None else status.value


@dataclass
class Progress:
    """Counts the finished runs among `expected` (relative paths resolve against `root`)."""

    expected: list[Path]
    root: Path = Path(".")
    started: float = field(default_factory=time.monotonic)
    baseline: int | None = None  # runs done when counting began (None: set by the first count)
    _seen: dict[Path, tuple[int, str]] = field(default_factory=dict, repr=False)

    def _status_of(self, path: Path) -> str | None:
        """The status in the run's result.json (re-read when the file changes); None if not done."""
        full = path if path.is_absolute() else self.root / path
        try:
            mtime = full.stat().st_mtime_ns
        except OSError:
            self._seen.pop(path, None)
            return None
        cached = self._seen.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, _status(full))
            self._seen[path] = cached
        return cached[1]

    def counts(self) -> Counts:
        statuses = [self._status_of(p) for p in self.expected]
        done = [s for s in statuses if s is not None]
        counts = Counts(len(self.expected), len(done), done.count(Status.RESOLVED), done.count(Status.ERROR))
        if self.baseline is None:
            self.baseline = counts.done
        return counts

    def line(self, now: float | None = None) -> str:
        counts = self.counts()
        elapsed = (time.monotonic() if now is None else now) - self.started
        return format_line(counts, elapsed, counts.done - (self.baseline or 0))


def format_line(counts: Counts, elapsed: float, done_since_start: int) -> str:
    remaining = counts.expected - counts.done
    if remaining <= 0:
        eta = "0s"
    elif done_since_start > 0:
        eta = duration(elapsed / done_since_start * remaining)
    else:
        eta = "?"
    return (
        f"runs {counts.done}/{counts.expected} done | resolved {counts.resolved} | errors {counts.errors}"
        f" | elapsed {duration(elapsed)} | eta {eta}"
    )


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
) -> Callable[[], None]:
    """Print the progress line to stderr every `interval` seconds; the returned callable stops the watcher
    (and prints a last line). Calling it again does nothing."""
    if interval <= 0:
        raise ValueError(f"interval must be positive, got {interval}")
    out = sys.stderr if stream is None else stream
    progress = Progress([Path(p) for p in expected_paths], root)
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
