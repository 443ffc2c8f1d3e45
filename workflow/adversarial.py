"""The integrity suite: attacks on the verifier, injected faults and bad inputs, run against the real
harness (Snakemake, Docker, kotlinc, JUnit) on the example tasks and reported as one table.

    python3 -m workflow.adversarial                       # everything: about six minutes on two cores
    python3 -m workflow.adversarial --only attacks,sealed # attacks | faults | bad-input | sealed

Every part works in a throw-away copy of the repository (a `Workspace`, like tests/test_workflow_e2e.py),
never in the developer's own results/. The example images must exist (`snakemake --cores 2` builds them).
tests/test_integrity.py, test_faults.py, test_bad_input.py and test_sealed_history.py call the same
functions and assert that every row passed. The attacks are scripts and patches in examples/adversarial/
(see its README): each must score 0 and the result must say why (its status, reason or flags), except the
one documented as a known limit, which must be flagged; the gold patch must still score 1.

One fault restarts the Docker daemon (SIGTERM to the pid in /var/run/docker.pid, then
scripts/setup_docker.sh); it is skipped when containers that are not this suite's run on the engine,
unless KOTLIN_BENCH_ALLOW_ENGINE_RESTART=1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
ADVERSARIAL = Path("examples/adversarial")
TASK = "examples_calc-4"
SECTIONS = ("attacks", "faults", "bad-input", "sealed")
RUN_LABEL = "kotlin-bench.run"
WORKDIR_LABEL = "kotlin-bench.workdir"


@dataclass
class Row:
    section: str
    name: str
    outcome: str
    why: str
    ok: bool
    note: str = ""


# --------------------------------------------------------------------------- workspace


@dataclass
class Workspace:
    """A copy of the repository (tracked and new files, no results) to run the workflow in."""

    root: Path

    @classmethod
    def create(cls, dest: Path, source: Path = REPO) -> Workspace:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=source,
            capture_output=True,
            check=True,
        ).stdout.split(b"\0")
        dest.mkdir(parents=True, exist_ok=True)
        for rel in filter(None, (name.decode() for name in listed)):
            path = source / rel
            if path.is_file():
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest / rel)
        return cls(dest.resolve())

    def configure(self, tasks: list[str], agents: list[dict[str, Any]], retries: int = 0) -> None:
        config = yaml.safe_load((self.root / "config.yaml").read_text(encoding="utf-8"))
        config.pop("reproduce", None)
        config.update(tasks=tasks, agents=agents, retries=retries, attempts=1)
        (self.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def edit_task(self, task: str, table: str, key: str, value: str) -> None:
        """Set `key = value` (TOML text) in `[table]` of the task's task.toml."""
        path = self.root / "examples/tasks" / task / "task.toml"
        text = path.read_text(encoding="utf-8")
        section = re.search(rf"^\[{re.escape(table)}\]\n(?:(?!\[).*\n?)*", text, re.MULTILINE)
        assert section, f"{path}: no [{table}]"
        body, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", section[0], count=1, flags=re.MULTILINE)
        assert n == 1, f"{path}: no {key} in [{table}]"
        path.write_text(text[: section.start()] + body + text[section.end() :], encoding="utf-8")

    def write(self, rel: str, text: str, mode: int = 0o644) -> str:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(mode)
        return rel

    def snakemake(self, *args: str, timeout: float = 1200) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
        return subprocess.run(cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout)

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """Snakemake in its own process group (as a terminal starts it), output to snakemake.out."""
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
        out = (self.root / "snakemake.out").open("ab")
        return subprocess.Popen(cmd, cwd=self.root, stdout=out, stderr=out, start_new_session=True)

    def prepare(self, *tasks: str) -> subprocess.CompletedProcess[str]:
        """Build what runs need (images, upstream mirrors, materialized task files), but no run."""
        targets = [f"results/images/task/{t}.json" for t in tasks]
        targets += [f"examples/tasks/{t}/.materialized.json" for t in tasks]
        return self.snakemake(*targets)

    def planned_runs(self, *targets: str) -> int:
        out = self.snakemake("--dry-run", *targets)
        text = out.stdout + out.stderr
        found = re.search(r"^run\s+(\d+)$", text, re.MULTILINE)
        return int(found[1]) if found else 0

    @staticmethod
    def target(agent: str, task: str = TASK, attempt: int = 1) -> str:
        return f"results/runs/{agent}/{task}/attempt-{attempt}/result.json"

    def run_dir(self, agent: str, task: str = TASK, attempt: int = 1) -> Path:
        return self.root / self.target(agent, task, attempt).rsplit("/", 1)[0]

    def result(self, agent: str, task: str = TASK, attempt: int = 1) -> dict[str, Any] | None:
        path = self.root / self.target(agent, task, attempt)
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data

    def tries(self, agent: str, task: str = TASK, attempt: int = 1) -> str:
        path = self.root / f"results/logs/runs/{agent}/{task}/attempt-{attempt}.log.tries"
        return path.read_text(encoding="utf-8") if path.is_file() else ""

    def tag(self) -> str:
        from workflow.runner import workdir_tag

        return workdir_tag(self.root)

    def containers(self, running_only: bool = False) -> list[Any]:
        """This workspace's containers (task containers and egress proxies): their run key ends in its tag."""
        from workflow.images import docker_client

        client = docker_client()
        found = client.containers.list(all=not running_only, filters={"label": RUN_LABEL})
        return [c for c in found if c.labels.get(RUN_LABEL, "").endswith(f".{self.tag()}")]


@contextlib.contextmanager
def workspace(base: Path | None, name: str) -> Iterator[Workspace]:
    """A fresh workspace under `base` (kept) or a temporary directory (removed, with its containers)."""
    if base is not None:
        yield Workspace.create(base / name)
        return
    with tempfile.TemporaryDirectory(prefix=f"kotlin-bench-{name}.") as tmp:
        ws = Workspace.create(Path(tmp) / "ws")
        try:
            yield ws
        finally:
            with contextlib.suppress(Exception):
                for container in ws.containers():
                    container.remove(force=True)


def _wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.3) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False


def _phase_container(ws: Workspace, phase: str, task: str | None = None) -> Any | None:
    for container in ws.containers(running_only=True):
        labels = container.labels
        if labels.get("kotlin-bench.phase") == phase and (
            task is None or labels.get("kotlin-bench.task") == task
        ):
            return container
    return None


def _no_containers(ws: Workspace) -> tuple[bool, str]:
    left = ws.containers()
    return not left, ", ".join(c.name for c in left) or "none"


# --------------------------------------------------------------------------- attacks


@dataclass(frozen=True)
class Attack:
    name: str
    defence: str
    script: str | None = None  # examples/adversarial/attacks/<script>
    patch: str | None = None  # examples/adversarial/patches/<patch>, as a predictions agent
    reward: float = 0.0
    reasons: tuple[str, ...] = ()  # the result's reason must be one of these (empty: any)
    flags: dict[str, str] = field(default_factory=dict)  # flag -> text one entry must contain ("": any)
    leftover: bool = False  # verifier/leftover_processes.txt must name a killed process
    known_limit: bool = False  # not prevented: must be flagged, the reward may be 1
    control: bool = False  # not an attack: must score 1 and raise no flag


ATTACKS: tuple[Attack, ...] = (
    Attack(
        "plant-verdict",
        "fresh verifier container; /tests from the host; /logs/verifier reset",
        script="plant-verdict.sh",
        flags={"outside_repo": "/logs/verifier/reward.txt"},
    ),
    Attack(
        "replace-ktest",
        "fresh container (the image's ktest); repository files are not on PATH",
        script="replace-ktest.sh",
        flags={"infrastructure": "ktest", "outside_repo": "/usr/local/bin/ktest"},
    ),
    Attack(
        "fake-xml",
        "stale TEST*.xml deleted; only reports newer than the start marker count",
        script="fake-xml.sh",
        flags={"infrastructure": "build/test-results/"},
    ),
    Attack(
        "edit-tests",
        "the hidden test patch is applied over the diff",
        script="edit-tests.sh",
        reasons=("test_patch_failed",),
        flags={"tests": "CalculatorTest.kt"},
    ),
    Attack(
        "disable-tests",
        "skipped is not passed: every expected test must pass",
        script="disable-tests.sh",
        flags={"tests": "LexerTest.kt"},
    ),
    Attack(
        "delete-tests",
        "every expected p2p test must run and pass",
        script="delete-tests.sh",
        flags={"tests": "LexerTest.kt"},
    ),
    Attack(
        "background-tamper",
        "fresh verifier container: agent processes never reach it",
        script="background-tamper.sh",
        flags={"outside_repo": "/tests/test.sh"},
    ),
    Attack(
        "deep-after-verdict",
        "test.sh kills leftovers before collecting; reward read after it exits",
        script="deep-after-verdict.sh",
        flags={"suspicious": "/logs/verifier"},
        leftover=True,
    ),
    Attack(
        "deep-verifier-files",
        "the host re-scores junit.xml with its own scorer and list",
        script="deep-verifier-files.sh",
        reasons=("verifier_tampered",),
        flags={"verifier": "host", "suspicious": "/tests/"},
    ),
    Attack(
        "forge-diff",
        "git apply refuses paths outside the work tree and in .git",
        script="forge-diff.sh",
        reasons=("agent_diff_not_applied",),
        flags={"outside_repo": "/usr/bin/git"},
    ),
    Attack(
        "escape-patch",
        "git apply refuses ../, absolute and beyond-symlink paths",
        patch="escape.patch",
        reasons=("patch_not_applied",),
    ),
    Attack(
        "forge-reports-at-test-time",
        "none inside the container (threat model): flagged for review",
        script="forge-reports-at-test-time.sh",
        flags={"suspicious": "addShutdownHook"},
        known_limit=True,
    ),
    Attack("oracle", "the gold patch, every defence on", reward=1.0, control=True),
)
REVIEW_FLAGS = ("infrastructure", "tests", "suspicious", "outside_repo", "verifier")


def attack_agents(ws: Workspace, attacks: tuple[Attack, ...] = ATTACKS) -> list[dict[str, Any]]:
    agents: list[dict[str, Any]] = []
    for attack in attacks:
        if attack.script:
            agents.append(
                {
                    "name": attack.name,
                    "kind": "script",
                    "script": str(ADVERSARIAL / "attacks" / attack.script),
                }
            )
        elif attack.patch:
            patch = (ws.root / ADVERSARIAL / "patches" / attack.patch).read_text(encoding="utf-8")
            line = json.dumps({"instance_id": TASK, "model_name_or_path": attack.name, "model_patch": patch})
            rel = ws.write(f"adversarial-input/{attack.name}.jsonl", line + "\n")
            agents.append({"name": attack.name, "kind": "predictions", "predictions": rel})
        else:
            agents.append({"name": attack.name, "kind": "oracle"})
    return agents


def judge_attack(ws: Workspace, attack: Attack) -> Row:
    result = ws.result(attack.name)
    if result is None:
        return Row("attacks", attack.name, "no result", "", False, attack.defence)
    flags = {k: v for k, v in (result.get("flags") or {}).items() if v}
    leftovers = ws.run_dir(attack.name) / "verifier" / "leftover_processes.txt"
    killed = (
        leftovers.read_text(encoding="utf-8", errors="replace").splitlines() if leftovers.is_file() else []
    )
    why = [f"{result.get('status')}/{result.get('reason') or '-'}"]
    why += [
        f"{k}: {', '.join(str(x) for x in v[:2])}{' ...' if len(v) > 2 else ''}" for k, v in flags.items()
    ]
    if killed:
        shown = next((k for k in killed if "bash" in k), killed[0])
        why.append(f"killed after the tests: {shown[:70]}")
    flag_ok = all(
        any(text in str(entry) for entry in flags.get(name, [])) for name, text in attack.flags.items()
    )
    reward = result.get("reward")
    if attack.control:
        ok = reward == 1.0 and not any(flags.get(k) for k in REVIEW_FLAGS)
    elif attack.known_limit:
        ok = flag_ok
    else:
        ok = (
            reward == attack.reward
            and flag_ok
            and (not attack.reasons or result.get("reason") in attack.reasons)
        )
        ok = ok and (not attack.leftover or bool(killed))
    outcome = f"reward {reward}"
    if attack.known_limit:
        outcome += " NOT PREVENTED, flagged" if flag_ok else " NOT PREVENTED, NOT FLAGGED"
    return Row("attacks", attack.name, outcome, "; ".join(why), ok, attack.defence)


def run_attacks(ws: Workspace, attacks: tuple[Attack, ...] = ATTACKS) -> list[Row]:
    """All attacks (and the gold controls) on one task, in one Snakemake invocation."""
    ws.configure([TASK], attack_agents(ws, attacks), retries=0)
    out = ws.snakemake(*(ws.target(a.name) for a in attacks))
    rows = [judge_attack(ws, attack) for attack in attacks]
    clean, left = _no_containers(ws)
    rows.append(Row("attacks", "containers after the batch", f"left: {left}", "", clean))
    if out.returncode != 0:
        rows.append(Row("attacks", "snakemake", f"exit {out.returncode}", out.stderr[-300:], False))
    return rows


# --------------------------------------------------------------------------- faults

SLEEPER = "#!/usr/bin/env bash\n# never finishes: the agent timeout must stop it\nsleep 600\n"
SLOW_GOLD = (
    "#!/usr/bin/env bash\n# slow but right: four seconds of thought, then the fix of calc #3\nsleep 4\n"
    + (REPO / ADVERSARIAL / "attacks" / "gold-script.sh").read_text(encoding="utf-8").split("\n", 1)[1]
)
FAULT_TASKS = {
    "timeouts": "examples_calc-4",
    "oom": "examples_semver-6",
    "killed": "examples_slug-8",
    "disk": "examples_calc-4",  # its 4 s verifier timeout keeps the resume short
}


def _kill_once(ws: Workspace, task: str, done: threading.Event, killed: list[str]) -> None:
    """Kill the verifier container of `task` once, as soon as it runs."""
    while not done.is_set():
        with contextlib.suppress(Exception):
            container = _phase_container(ws, "verifier", task)
            if container is not None:
                time.sleep(1.5)
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
    ws.configure(sorted({calc, semver, slug, units}), agents, retries=1)
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
        first = ws.snakemake(*targets)
        done.set()
        disk_result = ws.result("diskfull", units)
        partial = [p.name for p in ws.run_dir("diskfull", units).glob("*result*")]
        clean, left = _no_containers(ws)
        disk_tries = ws.tries("diskfull", units)
        resize("64m")
        planned = ws.planned_runs(*targets)
        second = ws.snakemake(*targets)
        after = ws.result("diskfull", units)

    r = ws.result("sleeper", calc) or {}
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
    r = ws.result("nop", calc) or {}
    rows.append(
        Row(
            "faults",
            "verifier timeout (4 s)",
            f"{r.get('status')}/{r.get('reason')}",
            "recorded, reward 0",
            r.get("reason") == "verifier_timeout" and r.get("reward") == 0.0,
        )
    )
    r = ws.result("nop", semver) or {}
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
    r = ws.result("nop", slug) or {}
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
    rows.append(
        Row(
            "faults",
            "disk full writing results (8k tmpfs)",
            f"1st: exit {first.returncode}, result {'present' if disk_result else 'absent'}",
            f"{(disk_tries.strip().splitlines() or ['?'])[-1][:80]}; partial files: {partial or 'none'}; "
            f"resume planned {planned} run(s); then "
            f"{(after or {}).get('status')}/{(after or {}).get('reason')}",
            first.returncode != 0
            and disk_result is None
            and not partial
            and planned == 1
            and second.returncode == 0
            and (after or {}).get("status") in ("unresolved", "resolved"),
            "no partial result; the resume ran only the missing run",
        )
    )
    rows.append(Row("faults", "containers left (faults batch)", left, "", clean))
    clean, left = _no_containers(ws)
    rows.append(Row("faults", "containers left (after resume)", left, "", clean))
    return rows


def _signal_once(
    ws: Workspace, target: str, sig: int, group: bool
) -> tuple[int | None, subprocess.Popen[bytes]]:
    proc = ws.popen(target)
    found = _wait_for(lambda: _phase_container(ws, "agent") is not None or proc.poll() is not None, 120)
    if found and proc.poll() is None:
        time.sleep(1)
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
    try:
        return proc.wait(timeout=120), proc
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return None, proc


def run_signals(ws: Workspace) -> list[Row]:
    """SIGINT and SIGTERM (to Snakemake's process group, as a terminal or CI sends them) and kill -9 of
    Snakemake alone, each in the agent phase of one run; then the resume."""
    rows: list[Row] = []
    slow = ws.write("adversarial-input/slow-gold.sh", SLOW_GOLD, 0o755)
    ws.configure([TASK], [{"name": "slow-gold", "kind": "script", "script": slow}], retries=0)
    target = ws.target("slow-gold")
    prep = ws.prepare(TASK)
    if prep.returncode != 0:
        return [Row("faults", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    for name, sig, group in (("SIGINT", signal.SIGINT, True), ("SIGTERM", signal.SIGTERM, True)):
        code, _ = _signal_once(ws, target, sig, group)
        gone = _wait_for(lambda: not ws.containers(), 30)
        result = ws.result("slow-gold")
        locked = any((ws.root / ".snakemake/locks").glob("*.lock"))
        rows.append(
            Row(
                "faults",
                f"Snakemake {name} (process group)",
                f"exit {code}, result {'present' if result else 'absent'}",
                f"containers removed: {gone}; lock released: {not locked}",
                code not in (0, None) and result is None and gone and not locked,
            )
        )
    code, _ = _signal_once(ws, target, signal.SIGKILL, False)
    locked = any((ws.root / ".snakemake/locks").glob("*.lock"))
    refused = ws.snakemake(target)
    unlock = ws.snakemake("--unlock")
    resumed = ws.snakemake(target)
    result = ws.result("slow-gold") or {}
    clean, left = _no_containers(ws)
    rows.append(
        Row(
            "faults",
            "kill -9 Snakemake (its job orphaned)",
            f"lock left: {locked}; next run refused: {refused.returncode != 0 and '--unlock' in refused.stderr}",
            f"after --unlock: {result.get('status')}/reward {result.get('reward')}; containers left: {left}",
            locked
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
    from workflow.images import docker_client

    ours = {c.id for c in ws.containers()}
    return [c.name for c in docker_client().containers.list() if c.id not in ours]


def restart_engine(timeout: float = 90) -> None:
    """Stop dockerd (SIGTERM to its pid) and start it again with scripts/setup_docker.sh."""
    pid = int(Path("/var/run/docker.pid").read_text().strip())
    os.kill(pid, signal.SIGTERM)
    _wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout)
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


def run_engine_restart(ws: Workspace) -> list[Row]:
    """dockerd stopped and started again while a run is in its verifier phase: the try fails, the retry
    waits for the engine and scores the run; the stopped containers are reaped."""
    busy = _engine_busy(ws)
    if busy:
        return [busy]
    ws.configure([TASK], [{"name": "oracle", "kind": "oracle"}], retries=1)
    target = ws.target("oracle")
    prep = ws.prepare(TASK)
    if prep.returncode != 0:
        return [Row("faults", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    proc = ws.popen(target)
    try:
        _wait_for(lambda: _phase_container(ws, "verifier") is not None or proc.poll() is not None, 180)
        time.sleep(2)
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
    result = ws.result("oracle") or {}
    tries = ws.tries("oracle")
    clean, left = _no_containers(ws)
    return [
        Row(
            "faults",
            "Docker daemon restarted mid-run",
            f"exit {code}; {result.get('status')}/reward {result.get('reward')}",
            f"{(tries.strip().splitlines() or ['no failed try'])[0][:100]}; containers left: {left}",
            code == 0 and result.get("status") == "resolved" and "failed" in tries and clean,
            "the retry waited for the engine, then scored the run",
        )
    ]


# --------------------------------------------------------------------------- bad input


def _raises(call: Callable[[], Any], *needles: str) -> tuple[bool, str]:
    """Whether `call` raises an exception whose message contains every needle (and that message)."""
    try:
        call()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        return all(n in text for n in needles), " ".join(text.split())[:150]
    return False, "accepted"


def _task_dir(root: Path, name: str) -> Path:
    """A copy of the example task, complete even in a fresh clone (where nothing is materialized yet)."""
    source = REPO / "examples/tasks" / TASK
    dest = root / "tasks" / name
    shutil.copytree(source, dest)
    if not (dest / "tests/expected_tests.json").exists():
        shutil.copy(REPO / "examples/expected" / f"{TASK}.json", dest / "tests/expected_tests.json")
    if not (dest / "instruction.md").exists():
        (dest / "instruction.md").write_text("# Implement the issue(s) in examples/calc:\n", encoding="utf-8")
    return dest


def _apply(repo: Path, patch: str) -> tuple[bool, str]:
    (repo.parent / "in.patch").write_text(patch, encoding="utf-8")
    done = subprocess.run(
        ["git", "apply", "--binary", str(repo.parent / "in.patch")], cwd=repo, capture_output=True, text=True
    )
    return done.returncode != 0, " ".join(done.stderr.split())[:150]


def _init_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=path, check=True, env=env)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
        cwd=path,
        check=True,
        env=env,
    )
    return path


ENTITY_BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{"&lol{};".format("" if i == 1 else i - 1) * 10}">' for i in range(1, 10))
    + ']>\n<testsuite><testcase classname="a" name="&lol9;"/></testsuite>\n'
)
XXE = '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<testsuite><testcase classname="a" name="&x;"/></testsuite>\n'


def run_bad_inputs(tmp: Path) -> list[Row]:
    """Each bad input must be rejected with an error that names it (host only, no containers)."""
    from snakemake.utils import validate

    from workflow.agents import Agent
    from workflow.predictions import load_predictions
    from workflow.tasks import load_task
    from workflow.verifier import junit_compare as jc

    rows: list[Row] = []

    def add(name: str, result: tuple[bool, str]) -> None:
        rows.append(Row("bad-input", name, "rejected" if result[0] else "NOT REJECTED", result[1], result[0]))

    t = _task_dir(tmp, "broken-toml")
    (t / "task.toml").write_text((t / "task.toml").read_text() + "garbage = = =\n")
    add("malformed task.toml", _raises(lambda: load_task(t), str(t / "task.toml"), "not valid TOML"))
    t = _task_dir(tmp, "wrong-type")
    text = (t / "task.toml").read_text().replace("timeout_sec = 300.0", 'timeout_sec = "soon"', 1)
    (t / "task.toml").write_text(text)
    add("task.toml field of the wrong type", _raises(lambda: load_task(t), "task.toml", "timeout_sec"))
    t = _task_dir(tmp, "missing-file")
    (t / "tests/test.sh").unlink()
    add(
        "missing task file (tests/test.sh)",
        _raises(lambda: load_task(t), str(t / "tests/test.sh"), "missing file"),
    )
    t = _task_dir(tmp, "bad-expected")
    (t / "tests/expected_tests.json").write_text('{"f2p_tests": "all of them"}')
    add("invalid expected_tests.json", _raises(lambda: load_task(t), "expected_tests.json", "f2p_tests"))
    report, _ = jc.build_report(None, t / "tests/expected_tests.json", "x")
    add(
        "invalid expected_tests.json (verifier)",
        (any("expected_invalid" in r for r in report["reasons"]), str(report["reasons"][-1])[:150]),
    )

    schema = str(REPO / "workflow/schemas/config.schema.yaml")
    base = yaml.safe_load((REPO / "config.yaml").read_text())
    for label, change, needle in (
        ("config attempts = 0", {"attempts": 0}, "attempts"),
        ("config agent name with a space", {"agents": [{"name": "my agent", "kind": "nop"}]}, "my agent"),
        ("config unknown agent kind", {"agents": [{"name": "x", "kind": "magic"}]}, "magic"),
        ("config script agent without script", {"agents": [{"name": "x", "kind": "script"}]}, "script"),
    ):
        add(label, _raises(lambda change=change: validate({**base, **change}, schema), needle))
    add(
        "unknown agent kind (Agent)",
        _raises(lambda: Agent.from_config({"name": "x", "kind": "magic"}), "'x'", "magic"),
    )
    add(
        "script agent with a missing file",
        _raises(
            lambda: Agent.from_config({"name": "x", "kind": "script", "script": str(tmp / "nope.sh")}),
            "nope.sh",
        ),
    )

    preds = tmp / "predictions.jsonl"
    preds.write_text(
        '{"instance_id": "examples_calc-4", "model_patch": 7}\nnot json\n{"instance_id": "nope"}\n'
    )
    add(
        "malformed predictions",
        _raises(
            lambda: load_predictions(preds, [TASK]), "line 1", "line 2", "line 3", "unknown task id nope"
        ),
    )

    def xml_case(name: str, data: bytes, code: str, max_bytes: int | None = None) -> None:
        path = tmp / f"{name}.xml"
        path.write_bytes(data)
        try:
            if max_bytes is None:
                jc.parse_junit_file(path)
            else:
                jc.parse_junit_file(path, max_bytes=max_bytes)
        except jc.VerifierInputError as exc:
            rows.append(
                Row(
                    "bad-input",
                    f"JUnit XML: {name}",
                    "rejected",
                    exc.reason[:150],
                    exc.reason.startswith(code),
                )
            )
            return
        rows.append(Row("bad-input", f"JUnit XML: {name}", "NOT REJECTED", "", False))

    xml_case(
        "non-UTF-8", b'<testsuite><testcase classname="a" name="\xff\xfe"/></testsuite>', "xml_unreadable"
    )
    xml_case("truncated", b'<testsuite><testcase classname="a" name="b"/><testca', "xml_unreadable")
    xml_case(
        "huge (over the cap)", b"<testsuite>" + b" " * 4096 + b"</testsuite>", "xml_rejected", max_bytes=1024
    )
    xml_case("entity bomb", ENTITY_BOMB.encode(), "xml_rejected")
    xml_case("external entity", XXE.encode(), "xml_rejected")
    rows.extend(_collector_cap(tmp))

    repo = _init_repo(tmp / "patch-repo")
    outside = tmp / "outside.txt"
    for label, patch in (
        ("patch: ../ path", "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n"),
        ("patch: absolute path", f"--- /dev/null\n+++ {outside}\n@@ -0,0 +1 @@\n+x\n"),
        (
            "patch: into .git",
            "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n",
        ),
        ("patch: beyond a symlink", (REPO / ADVERSARIAL / "patches/escape.patch").read_text()),
        (
            "patch: corrupt binary hunk",
            "diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 12\nzcmZ?wbhEHbG%;~yVEXd_\n\nliteral 0\nHcmV?d00001\n\n",
        ),
    ):
        refused, why = _apply(repo, patch)
        escaped = outside.exists() or (repo / ".git/hooks/pre-commit").exists()
        if escaped:
            outcome = "WROTE OUTSIDE THE REPOSITORY"
        elif refused:
            outcome = "refused"
        else:  # `+++ /abs/path` without a git header: -p1 strips the leading component, so it lands inside
            inside = [str(p.relative_to(repo)) for p in repo.rglob("outside.txt")]
            outcome, why = "applied inside the repository", f"as {inside}"
        rows.append(Row("bad-input", label, outcome, why, not escaped))
    return rows


def _collector_cap(tmp: Path) -> list[Row]:
    """The collector refuses a flood of reports (exit 3) instead of merging it."""
    repo = tmp / "flood"
    reports = repo / "build/test-results/test"
    reports.mkdir(parents=True)
    (reports / "TEST-big.xml").write_bytes(b"<testsuite>" + b" " * 10000 + b"</testsuite>")
    out = tmp / "flood-junit.xml"
    done = subprocess.run(
        ["bash", str(REPO / "workflow/verifier/kotlin_logs_collector.sh"), str(repo), str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "KOTLIN_BENCH_MAX_REPORT_BYTES": "4096"},
    )
    ok = done.returncode == 3 and "exceed the cap" in done.stderr and b"<testcase" not in out.read_bytes()
    return [
        Row(
            "bad-input",
            "JUnit reports flood (collector cap)",
            f"exit {done.returncode}",
            done.stderr.strip().splitlines()[0][:150],
            ok,
        )
    ]


def run_bad_task_keep_going(ws: Workspace) -> list[Row]:
    """One bad task among two: the other still gets its result; the bad one is an error naming the file."""
    good, bad = "examples_calc-4", "examples_slug-8"
    ws.edit_task(good, "verifier", "timeout_sec", "3.0")
    ws.configure([good, bad], [{"name": "nop", "kind": "nop"}], retries=1)
    prep = ws.prepare(good, bad)
    if prep.returncode != 0:
        return [Row("bad-input", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    (ws.root / "examples/tasks" / bad / "tests/expected_tests.json").write_text("{not json", encoding="utf-8")
    out = ws.snakemake(ws.target("nop", good), ws.target("nop", bad))
    g, b = ws.result("nop", good) or {}, ws.result("nop", bad) or {}
    # A task directory that cannot even be planned (malformed task.toml of a task not selected).
    toml = ws.root / "examples/tasks/examples_units-12/task.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "garbage = = =\n", encoding="utf-8")
    dry = ws.snakemake("--dry-run", ws.target("nop", good))
    named = "examples_units-12/task.toml" in dry.stdout + dry.stderr
    planned = dry.returncode == 0
    return [
        Row(
            "bad-input",
            "malformed task.toml among several (planning)",
            "the others are still planned" if planned else "planning stops for every task",
            "the error names examples_units-12/task.toml" if named else (dry.stderr[-150:] or "no error"),
            named,
            "" if planned else "GAP: workflow/dag.py must skip and report invalid task dirs (fix proposed)",
        ),
        Row(
            "bad-input",
            "one bad task among several (keep-going)",
            f"good: {g.get('status')}/{g.get('reason')}; bad: {b.get('status')}/{b.get('reason')}",
            (b.get("error") or "")[:150],
            out.returncode == 0
            and g.get("status") == "unresolved"
            and b.get("status") == "error"
            and "expected_tests.json" in (b.get("error") or ""),
        ),
    ]


# --------------------------------------------------------------------------- sealed history


def pr_heads(tasks: list[str], work: Path) -> dict[str, tuple[str, str, list[str]]]:
    """task -> (base sha, PR head sha, the objects the PR adds), from the upstream repositories built
    on the host with the images' own builder (the SHAs depend only on the files)."""
    spec = json.loads((REPO / "examples/dataset.json").read_text(encoding="utf-8"))
    entries = {t["id"]: t for t in spec["tasks"]}
    found: dict[str, tuple[str, str, list[str]]] = {}
    for task in tasks:
        project, number = task.removeprefix("examples_").rsplit("-", 1)
        dest = work / project
        if not dest.exists():
            subprocess.run(
                [
                    "bash",
                    str(REPO / "examples/bases/toolchain/make-upstream-repo.sh"),
                    str(REPO / "examples/bases" / project / "upstream"),
                    str(dest),
                ],
                check=True,
                capture_output=True,
            )
        git = ["git", "-C", str(dest)]
        head = subprocess.run(
            [*git, "rev-parse", f"refs/pull/{number}/head"], capture_output=True, text=True, check=True
        ).stdout.strip()
        base = str(entries.get(task, {}).get("base_commit") or "")
        if not base:
            base = subprocess.run(
                [*git, "rev-parse", f"{head}^"], capture_output=True, text=True, check=True
            ).stdout.strip()
        objects = subprocess.run(
            [*git, "rev-list", "--objects", head, f"^{base}"], capture_output=True, text=True, check=True
        ).stdout
        found[task] = (base, head, [line.split()[0] for line in objects.splitlines() if line.strip()])
    return found


SEAL_CHECK = r"""
set -u
cd "$REPO_DIR"
g=$(git rev-parse --absolute-git-dir)
echo "head=$(git rev-parse HEAD)"
echo "count=$(git rev-list --all --count)"
echo "remotes=$(git remote | wc -l)"
echo "refs=$(git for-each-ref | wc -l)"
echo "stash=$(git stash list 2>/dev/null | wc -l)"
echo "reflogs=$(find "$g/logs" -type f 2>/dev/null | wc -l)"
echo "special=$(ls "$g" | grep -cE '^(FETCH_HEAD|ORIG_HEAD|MERGE_HEAD|packed-refs)$')"
echo "loose=$(git count-objects -v | sed -n 's/^count: //p')"
echo "unreachable=$(git fsck --unreachable --dangling --no-reflogs --no-progress 2>&1 | grep -cE '^(unreachable|dangling)')"
echo "packed=$(for i in "$g"/objects/pack/*.idx; do git show-index <"$i"; done | wc -l)"
echo "reachable=$(git rev-list --objects --all | wc -l)"
present=0
for o in $PR_OBJECTS; do git cat-file -e "$o" 2>/dev/null && present=$((present + 1)); done
echo "pr_present=$present"
"""


def run_sealed(tasks: list[str] | None = None) -> list[Row]:
    """In every example task image only the base commit is reachable and no object of the fix exists."""
    from workflow.images import docker_client, image_id
    from workflow.tasks import discover, load_task

    client = docker_client()
    loaded = [load_task(p, require_materialized=False) for p in discover(REPO / "examples/tasks")]
    selected = [t for t in loaded if tasks is None or t.id in tasks]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-upstream.") as tmp:
        heads = pr_heads([t.id for t in selected], Path(tmp))
    for task in selected:
        base, head, objects = heads[task.id]
        if image_id(client, task.image) is None:
            rows.append(Row("sealed", task.image, "image missing", "build it: snakemake --cores 2", False))
            continue
        env = {"REPO_DIR": task.repo_dir, "PR_OBJECTS": " ".join(objects)}
        out = client.containers.run(
            task.image, ["bash", "-c", SEAL_CHECK], environment=env, remove=True, network_disabled=True
        )
        facts = dict(line.split("=", 1) for line in out.decode().splitlines() if "=" in line)
        ok = (
            facts.get("head") == task.base_commit
            and facts.get("count") == "1"
            and all(
                facts.get(k) == "0"
                for k in (
                    "remotes",
                    "refs",
                    "stash",
                    "reflogs",
                    "special",
                    "loose",
                    "unreachable",
                    "pr_present",
                )
            )
            and facts.get("packed") == facts.get("reachable")
            and base == task.base_commit
        )
        detail = (
            f"HEAD=base, {facts.get('count')} commit, PR head {head[:10]} and its {len(objects)} object(s): "
            f"{facts.get('pr_present')} present; refs/remotes/stash/reflogs/loose/unreachable: "
            f"{'/'.join(facts.get(k, '?') for k in ('refs', 'remotes', 'stash', 'reflogs', 'loose', 'unreachable'))}; "
            f"pack {facts.get('packed')} = reachable {facts.get('reachable')}"
        )
        rows.append(Row("sealed", task.image, "sealed" if ok else "NOT SEALED", detail, ok))
    return rows


# --------------------------------------------------------------------------- the table


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


def run_all(only: tuple[str, ...] = SECTIONS, keep: Path | None = None) -> tuple[list[Row], dict[str, float]]:
    rows: list[Row] = []
    seconds: dict[str, float] = {}
    for section in only:
        started = time.monotonic()
        if section == "attacks":
            with workspace(keep, "attacks") as ws:
                rows += run_attacks(ws)
        elif section == "faults":
            with workspace(keep, "faults") as ws:
                rows += run_faults(ws)
            with workspace(keep, "signals") as ws:
                rows += run_signals(ws)
            with workspace(keep, "engine") as ws:
                rows += run_engine_restart(ws)
        elif section == "bad-input":
            with tempfile.TemporaryDirectory(prefix="kotlin-bench-bad.") as tmp:
                rows += run_bad_inputs(Path(tmp))
            with workspace(keep, "bad-task") as ws:
                rows += run_bad_task_keep_going(ws)
        elif section == "sealed":
            rows += run_sealed()
        seconds[section] = time.monotonic() - started
    return rows, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated parts of {SECTIONS}")
    parser.add_argument("--keep", type=Path, help="keep the workspaces under this directory")
    args = parser.parse_args(argv)
    only = tuple(s.strip() for s in args.only.split(",") if s.strip())
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown parts {unknown}; choose from {SECTIONS}")
    os.chdir(REPO)
    rows, seconds = run_all(only, args.keep)
    print(render(rows, seconds))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
