"""What every part of the integrity suite shares: the result row, the workspace it runs in, waiting,
finding a phase's container, and the table."""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
ADVERSARIAL = Path("examples/adversarial")
TASK = "examples_calc-4"
SECTIONS = ("attacks", "faults", "bad-input", "sealed")


@dataclass
class Row:
    section: str
    name: str
    outcome: str
    why: str
    ok: bool
    note: str = ""


def record(ws: Workspace, agent: str, task: str = TASK, attempt: int = 1) -> dict[str, Any]:
    """The run's result.json as a mapping ({} when the run has none)."""
    result = ws.result(agent, task, attempt)
    return result.to_dict() if result else {}


def planned_steps(ws: Workspace, *targets: str) -> dict[str, int]:
    """How many solve and verify jobs a dry run plans."""
    planned = ws.planned(*targets)
    return {step: planned.get(step, 0) for step in ("solve", "verify")}


@contextlib.contextmanager
def workspace(base: Path | None, name: str) -> Iterator[Workspace]:
    """A fresh workspace under `base` (kept) or a temporary directory (removed, with its containers)."""
    if base is not None:
        yield Workspace.create(base / name, REPO)
        return
    with tempfile.TemporaryDirectory(prefix=f"kotlin-bench-{name}.") as tmp:
        ws = Workspace.create(Path(tmp) / "ws", REPO)
        try:
            yield ws
        finally:
            with contextlib.suppress(Exception):
                for container in ws.containers():
                    container.remove(force=True)


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def phase_container(ws: Workspace, phase: str, task: str | None = None) -> Any | None:
    for container in ws.containers(running_only=True):
        labels = container.labels
        if labels.get(names.LABEL_PHASE) == phase and (task is None or labels.get(names.LABEL_TASK) == task):
            return container
    return None


def no_containers(ws: Workspace) -> tuple[bool, str]:
    left = ws.containers()
    return not left, ", ".join(c.name for c in left) or "none"


def render(rows: list[Row], seconds: dict[str, float]) -> str:
    titles = {
        "attacks": f"ATTACKS on {TASK} (each must score 0 and say why; gold must score 1)",
        "faults": "FAULTS (each must end in a recorded result or error, or a clean resume)",
        "bad-input": "BAD INPUT (each must be rejected with an error naming it)",
        "sealed": "SEALED HISTORY of the example task images",
    }
    lines: list[str] = []
    for section in SECTIONS:
        part = [r for r in rows if r.section == section]
        if not part:
            continue
        took = f" [{seconds[section]:.0f} s]" if section in seconds else ""
        lines += ["", titles[section] + took]
        width = max(len(r.name) for r in part)
        outw = min(max(len(r.outcome) for r in part), 48)
        for r in part:
            mark = "ok  " if r.ok else "FAIL"
            extra = f"  [{r.note}]" if r.note else ""
            lines.append(f"  {mark} {r.name:<{width}}  {r.outcome:<{outw}}  {r.why}{extra}")
    failed = [r for r in rows if not r.ok]
    lines += [
        "",
        f"{len(rows) - len(failed)} of {len(rows)} checks passed"
        + (f"; FAILED: {', '.join(r.name for r in failed)}" if failed else ""),
    ]
    return "\n".join(lines)
