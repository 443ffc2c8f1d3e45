"""Injected faults: timeouts, an out-of-memory kill, a killed container, a full disk, signals to
Snakemake, and a restart of the Docker engine; each must end in a recorded result or error, or a clean
resume.

The engine restart stops dockerd (SIGTERM to the pid in /var/run/docker.pid, then
scripts/setup_docker.sh); it is skipped when containers that are not this suite's run on the engine,
unless KOTLIN_BENCH_ALLOW_ENGINE_RESTART=1."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adversarial.common import (
    ADVERSARIAL,
    REPO,
    TASK,
    Row,
    no_containers,
    phase_container,
    planned_steps,
    record,
    wait_for,
)
from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, failed_step_outputs
from kotlin_bench.engine.engine import connect
from kotlin_bench.tools.workspace import Workspace

SLEEPER = "#!/usr/bin/env bash\n# never finishes: the agent timeout must stop it\nsleep 600\n"
GATE = "/tmp/kotlin-bench-gate"  # inside the agent container; the suite opens it (`open_gates`)
AT_GATE = "/tmp/kotlin-bench-at-gate"  # the gated agent's mark: its phase has begun, it waits at the gate
GATED_GOLD = (
    "#!/usr/bin/env bash\n# right, but only once the suite opens the gate: it cannot finish while a signal is due\n"
    f"touch {AT_GATE}\n"
    f"while [ ! -e {GATE} ]; do sleep 0.2; done\n"
    + (REPO / ADVERSARIAL / "attacks" / "gold-script.sh").read_text(encoding="utf-8").split("\n", 1)[1]
)
FAULT_TASKS = {
    "timeouts": "examples_calc-4",
    "oom": "examples_semver-6",
    "killed": "examples_slug-8",
    "disk": "examples_calc-4",  # its 4 s verifier timeout keeps the resume short
}


def running_tests(container: Any) -> bool:
    """Whether the verifier's test.sh is running in `container` (it then has its test command to do)."""
    processes = container.top().get("Processes") or []
    return any("test.sh" in " ".join(map(str, row)) for row in processes)


def _kill_once(ws: Workspace, task: str, done: threading.Event, killed: list[str]) -> None:
    """Kill the verifier container of `task` once, while its test.sh runs."""
    while not done.is_set():
        with contextlib.suppress(Exception):
            container = phase_container(ws, "verifier", task)
            if container is not None and running_tests(container):
                container.kill()
                killed.append(container.name)
                return
        time.sleep(0.3)


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Callable[[str], None]]:
    """A small tmpfs at `path` (a full disk); yields a function that resizes it; unmounted at exit."""
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)

    def resize(new: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={new}", str(path)], check=True)

    try:
        yield resize
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _mtimes(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns for p in directory.rglob("*") if p.is_file()}


def run_faults(ws: Workspace) -> list[Row]:
    """Timeouts, an OOM, a killed container and a full disk, in one invocation; then the resume."""
    rows: list[Row] = []
    calc, semver, slug, units = (FAULT_TASKS[k] for k in ("timeouts", "oom", "killed", "disk"))
    ws.edit_task(calc, "agent", "timeout_sec", "2.0")
    ws.edit_task(calc, "verifier", "timeout_sec", "4.0")
    ws.edit_task(semver, "environment", "memory_mb", "100")
    sleeper = ws.write("adversarial-input/sleeper.sh", SLEEPER, 0o755)
    agents = [
        {"name": "sleeper", "kind": "script", "script": sleeper},
        {"name": "nop", "kind": "nop"},
        {"name": "diskfull", "kind": "nop"},
    ]
    # The disk that fills while a step writes: the check before the job (kotlin_bench.engine.disk) would
    # refuse the run on the 8k tmpfs instead, so its results need is turned off here (tests/test_disk.py
    # has the refusal).
    disk = {**(ws.config().get("disk") or {}), "results": 0}
    ws.configure(sorted({calc, semver, slug, units}), agents, retries=1, disk=disk)
    targets = [
        ws.target("sleeper", calc),
        ws.target("nop", calc),
        ws.target("nop", semver),
        ws.target("nop", slug),
        ws.target("diskfull", units),
    ]
    # Images, mirrors and materialization first, so that the faults hit runs only.
    prep = ws.prepare(*sorted({calc, semver, slug, units}))
    if prep.returncode != 0:
        return [Row("faults", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    done, killed = threading.Event(), []
    killer = threading.Thread(target=_kill_once, args=(ws, slug, done, killed), daemon=True)
    killer.start()
    with _tmpfs(ws.root / "results/runs/diskfull", "8k") as resize:
        ws.snakemake(*targets)
        done.set()
        disk_result = record(ws, "diskfull", units)
        run_dir = ws.run_dir("diskfull", units)
        partial = [p.name for p in run_dir.rglob("*") if p.name.endswith(".tmp")]
        work_before = _mtimes(run_dir / "work")
        clean, left = no_containers(ws)
        disk_tries = ws.tries("diskfull", units)
        resize("64m")
        # what `kotlin-bench errors --delete` does for this run (a failed verification: its result only)
        for output in failed_step_outputs(
            run_dir / names.RESULT_FILE, RunResult.read(run_dir / names.RESULT_FILE)
        ):
            output.unlink()
        # the resume of that run (the OOM run, an error too, would be redone as well: kotlin_bench.dag.redo)
        planned = planned_steps(ws, ws.target("diskfull", units))
        second = ws.snakemake(ws.target("diskfull", units))
        after = record(ws, "diskfull", units)
        work_kept = _mtimes(run_dir / "work") == work_before

    r = record(ws, "sleeper", calc)
    rows.append(
        Row(
            "faults",
            "agent timeout (2 s, agent sleeps)",
            f"{r.get('status')}/{r.get('reason')}",
            f"agent_timed_out={r.get('agent_timed_out')}",
            r.get("status") == "unresolved"
            and r.get("reason") == "agent_timeout"
            and bool(r.get("agent_timed_out")),
        )
    )
    r = record(ws, "nop", calc)
    rows.append(
        Row(
            "faults",
            "verifier timeout (4 s)",
            f"{r.get('status')}/{r.get('reason')}",
            "recorded, reward 0",
            r.get("reason") == "verifier_timeout" and r.get("reward") == 0.0,
        )
    )
    r = record(ws, "nop", semver)
    tries = ws.tries("nop", semver)
    rows.append(
        Row(
            "faults",
            "OOM (memory_mb = 100)",
            f"{r.get('status')}/{r.get('reason')}",
            (r.get("error") or "")[:90],
            r.get("status") == "error"
            and "out of memory" in (r.get("error") or "")
            and tries.count("failed") == 2,
            "retried, then recorded as error",
        )
    )
    r = record(ws, "nop", slug)
    tries = ws.tries("nop", slug)
    rows.append(
        Row(
            "faults",
            "container killed mid-verifier",
            f"{r.get('status')}/{r.get('reason')}",
            (tries.strip().splitlines() or ["no failed try"])[0][:110],
            bool(killed) and r.get("status") == "unresolved" and "try 1 of 2 failed" in tries,
            "transient: retried, the retry scored it",
        )
    )
    step = disk_result.get("failed_step")
    # whichever step the full disk hit is recorded as its error; the resume redoes exactly that step
    redone = {"solve": 1, "verify": 1} if step == "solve" else {"solve": 0, "verify": 1}
    rows.append(
        Row(
            "faults",
            "disk full writing results (8k tmpfs)",
            f"1st: {disk_result.get('status')} of step {step}",
            f"{(disk_tries.strip().splitlines() or ['?'])[-1][:80]}; partial files: {partial or 'none'}; "
            f"after errors --delete planned {planned}; then {after.get('status')}/{after.get('reason')}; "
            f"the agent's work kept: {work_kept}",
            disk_result.get("status") == "error"
            and step in ("solve", "verify")
            and not partial
            and planned == redone
            and second.returncode == 0
            and after.get("status") in ("unresolved", "resolved")
            and (work_kept or step == "solve"),
            "the step it hit is an error, no partial file; the resume redoes that step (the work kept when it was verify)",
        )
    )
    rows.append(Row("faults", "containers left (faults batch)", left, "", clean))
    clean, left = no_containers(ws)
    rows.append(Row("faults", "containers left (after resume)", left, "", clean))
    return rows


# docs/operations.md ("Stopping a run"): an interrupted invocation exits, its containers removed and its
# lock released, within this many seconds of the signal, also on a loaded machine
STOP_BOUND_SEC = 60.0
AGENT_START_SEC = 300.0  # how long the agent phase may take to begin on a loaded machine


@dataclass(frozen=True)
class Stopped:
    """Snakemake after `_signal_once`: its exit code (None: still running at the bound, then killed), and
    why no signal was sent, if none was."""

    code: int | None
    unsent: str = ""
    seconds: float = 0.0  # from the signal to Snakemake's exit (or to the bound)


def _at_gate(ws: Workspace) -> bool:
    """Whether this workspace's gated agent has begun its phase and waits at its gate."""
    with contextlib.suppress(Exception):
        container = phase_container(ws, "agent")
        return container is not None and container.exec_run(["test", "-e", AT_GATE]).exit_code == 0
    return False


def _signal_once(ws: Workspace, target: str, sig: int, group: bool) -> Stopped:
    """Send `sig` in the agent phase, once the agent waits at its closed gate (it cannot finish before the
    signal, however fast or slow the machine; and no container of an earlier invocation is mistaken for
    this one's: there must be none); then wait at most `STOP_BOUND_SEC` for Snakemake to exit."""
    clean, left = no_containers(ws)
    if not clean:
        return Stopped(None, f"containers of an earlier invocation are left: {left}")
    proc = ws.popen(target)
    begun = wait_for(lambda: _at_gate(ws) or proc.poll() is not None, AGENT_START_SEC)
    if not begun or proc.poll() is not None:
        unsent = f"exited {proc.poll()} first" if proc.poll() is not None else "the agent phase did not begin"
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        return Stopped(proc.returncode, f"no signal sent: {unsent} (see snakemake.out)")
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, sig)
    else:
        proc.send_signal(sig)
    try:
        return Stopped(proc.wait(timeout=STOP_BOUND_SEC), seconds=time.monotonic() - sent)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return Stopped(None, seconds=STOP_BOUND_SEC)


@contextlib.contextmanager
def open_gates(ws: Workspace) -> Iterator[None]:
    """While the block runs, open the gate of every agent container of `ws` that appears."""
    done = threading.Event()

    def opener() -> None:
        opened: set[str] = set()
        while not done.is_set():
            with contextlib.suppress(Exception):
                for container in ws.containers(running_only=True):
                    agent = container.labels.get(names.LABEL_PHASE) == "agent"
                    if (
                        agent
                        and container.id not in opened
                        and container.exec_run(["touch", GATE]).exit_code == 0
                    ):
                        opened.add(container.id)
            done.wait(0.3)

    thread = threading.Thread(target=opener, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=10)


def run_signals(ws: Workspace) -> list[Row]:
    """SIGINT and SIGTERM (to Snakemake's process group, as a terminal or CI sends them) and kill -9 of
    Snakemake alone, each in the agent phase of one run; then the resume."""
    rows: list[Row] = []
    gated = ws.write("adversarial-input/gated-gold.sh", GATED_GOLD, 0o755)
    ws.configure([TASK], [{"name": "gated-gold", "kind": "script", "script": gated}], retries=0)
    target = ws.target("gated-gold", TASK)
    prep = ws.prepare(TASK)
    if prep.returncode != 0:
        return [Row("faults", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    for name, sig, group in (("SIGINT", signal.SIGINT, True), ("SIGTERM", signal.SIGTERM, True)):
        stopped = _signal_once(ws, target, sig, group)
        # Snakemake exits after its job, which removes its containers first: nothing to wait for
        gone, left = no_containers(ws)
        result = record(ws, "gated-gold")
        locked = any((ws.root / ".snakemake/locks").glob("*.lock"))
        exited = (
            "still running at the bound"
            if stopped.code is None and not stopped.unsent
            else f"exit {stopped.code}"
        )
        rows.append(
            Row(
                "faults",
                f"Snakemake {name} (process group)",
                f"{exited} {stopped.seconds:.0f} s after it (bound {STOP_BOUND_SEC:.0f} s), "
                f"result {'present' if result else 'absent'}",
                stopped.unsent or f"containers left: {left}; lock released: {not locked}",
                not stopped.unsent and stopped.code not in (0, None) and not result and gone and not locked,
            )
        )
        if not gone or locked:  # the next case starts clean, whatever this one left
            for container in ws.containers():
                container.remove(force=True)
            ws.snakemake("--unlock")
    stopped = _signal_once(ws, target, signal.SIGKILL, False)
    locked = any((ws.root / ".snakemake/locks").glob("*.lock"))
    refused = ws.snakemake(target)
    unlock = ws.snakemake("--unlock")
    with open_gates(ws):  # the orphan, then the resumed run, may finish now
        resumed = ws.snakemake(target)
    result = record(ws, "gated-gold")
    clean, left = no_containers(ws)
    rows.append(
        Row(
            "faults",
            "kill -9 Snakemake (its job orphaned)",
            f"lock left: {locked}; next run refused: {refused.returncode != 0 and '--unlock' in refused.stderr}",
            stopped.unsent
            or f"after --unlock: {result.get('status')}/reward {result.get('reward')}; containers left: {left}",
            not stopped.unsent
            and locked
            and refused.returncode != 0
            and unlock.returncode == 0
            and resumed.returncode == 0
            and result.get("status") == "resolved"
            and clean,
            "the resume waits for the orphan (run lock), then redoes the run",
        )
    )
    return rows


def _foreign_containers(ws: Workspace) -> list[str]:
    """Running containers that are not this workspace's (a restart of the engine would stop them)."""
    ours = {c.id for c in ws.containers()}
    return [c.name for c in connect().client.containers.list() if c.id not in ours]


def restart_engine(timeout: float = 90) -> None:
    """Stop dockerd (SIGTERM to its pid) and start it again with scripts/setup_docker.sh."""
    pid = int(Path("/var/run/docker.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout)
    ensure_engine()


def ensure_engine() -> None:
    subprocess.run(
        ["bash", str(REPO / "scripts/setup_docker.sh"), "--timeout", "90"], check=False, capture_output=True
    )


def _engine_busy(ws: Workspace) -> Row | None:
    """A "not tried" row when a restart of the engine would stop containers that are not ours."""
    foreign = _foreign_containers(ws)
    if not foreign or os.environ.get("KOTLIN_BENCH_ALLOW_ENGINE_RESTART") == "1":
        return None
    note = f"skipped: {len(foreign)} other container(s) run on this engine ({', '.join(foreign[:3])})"
    return Row(
        "faults",
        "Docker daemon restarted mid-run",
        "not tried",
        note,
        True,
        "KOTLIN_BENCH_ALLOW_ENGINE_RESTART=1",
    )


def _verifying(ws: Workspace) -> bool:
    with contextlib.suppress(Exception):
        container = phase_container(ws, "verifier")
        return container is not None and running_tests(container)
    return False


def run_engine_restart(ws: Workspace) -> list[Row]:
    """dockerd stopped and started again while a run is in its verifier phase: the try fails, the retry
    waits for the engine and scores the run; the stopped containers are reaped."""
    busy = _engine_busy(ws)
    if busy:
        return [busy]
    ws.configure([TASK], [{"name": "oracle", "kind": "oracle"}], retries=1)
    target = ws.target("oracle", TASK)
    prep = ws.prepare(TASK)
    if prep.returncode != 0:
        return [Row("faults", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    proc = ws.popen(target)
    try:
        wait_for(lambda: _verifying(ws) or proc.poll() is not None, 180)
        work_before = _mtimes(ws.run_dir("oracle", TASK) / names.WORK_DIR)  # the solve step is done
        busy = _engine_busy(ws)  # again: someone may have started containers meanwhile
        if busy is None:
            restart_engine()
        code = proc.wait(timeout=600)
    finally:
        ensure_engine()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if busy:
        return [busy]
    result = record(ws, "oracle")
    tries = ws.tries("oracle", TASK, step="verify")
    solved_once = ws.tries("oracle", TASK, step="solve") == "" and work_before == _mtimes(
        ws.run_dir("oracle", TASK) / names.WORK_DIR
    )
    clean, left = no_containers(ws)
    return [
        Row(
            "faults",
            "Docker daemon restarted mid-run",
            f"exit {code}; {result.get('status')}/reward {result.get('reward')}",
            f"{(tries.strip().splitlines() or ['no failed try'])[0][:100]}; agent phase ran once: "
            f"{solved_once}; containers left: {left}",
            code == 0 and result.get("status") == "resolved" and "failed" in tries and clean and solved_once,
            "the verify step was retried after the engine came back; the agent's work was kept",
        )
    ]
