"""What a run's result must say about the integrity of the verdict, and the checks behind it.

The verifier runs in a fresh container with only the agent's repository diff applied, so nothing the
agent did outside the repository survives. Inside the repository an agent may legitimately change the
build (to fix it), which could also exclude or fake tests; such changes are flagged in the result
(`flags`), never silently accepted:

- `infrastructure`: changed paths that are build logic, test runners or test reports;
- `tests`: changed test sources (the hidden test patch may touch them);
- `suspicious`: added lines in any changed file that name the verifier's files or spawn processes
  (`/logs/verifier`, `reward.txt`, `test-results`, `ProcessBuilder`, ...): code that could tamper with
  the verdict while the tests execute it (a heuristic; see the README's threat model);
- `outside_repo`: what the agent changed outside the repository during the agent phase (discarded
  before verification), e.g. a planted reward file or a replaced test runner;
- `verifier`: the host's own re-scoring of the copied-out JUnit XML disagreed with the container's
  reward (the reward is then 0 and the reason `verifier_tampered`).

`stale_results` tells which result.json files were not produced from the task directory and verifier
that are there now (the summary step must not mix results of another task or verifier version).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from kotlin_bench import names
from kotlin_bench.record import RecordError, RunResult, Status, digest_problems
from kotlin_bench.tasks import Task, TaskError, load_task

# Build logic, test runners, test configuration and test reports: changing these can change which
# tests run and how they report.
INFRASTRUCTURE = (
    "gradlew",
    "gradlew.bat",
    "gradle/wrapper/*",
    "*.gradle",
    "*.gradle.kts",
    "gradle.properties",
    "*/gradle.properties",
    "buildSrc/*",
    "build-logic/*",
    "gradle/*.toml",
    "pom.xml",
    "mvnw",
    ".mvn/*",
    "*/build/test-results/*",
    "build/test-results/*",
    "TEST-*.xml",
    "ktest",
    "junit-platform.properties",
    "*/META-INF/services/org.junit.*",
)
# Test sources (the hidden test patch may touch them; editing them is suspicious, not forbidden).
TESTS = ("*/src/test/*", "src/test/*", "*/src/*Test/*", "src/*Test/*", "*/test/*", "test/*")
# Added lines naming the verifier's files or starting processes: code that, executed by the tests,
# could tamper with the verdict. A heuristic for review (obfuscated code evades it).
SUSPICIOUS_TOKENS = (
    "/logs/verifier",
    "reward.txt",
    "reward.json",
    "test-results",
    "TEST-",
    "junit.xml",
    "/tests/",
    "junit_compare",
    "expected_tests",
    "kotlin_logs_collector",
    "addShutdownHook",
    "ProcessBuilder",
    "Runtime.getRuntime().exec",
)
MAX_FLAGGED = 50
# Outside the repository, changes under these paths are expected noise of builds and tools.
OUTSIDE_QUIET = (
    "/tmp",
    "/tmp/*",
    "/var/tmp/*",
    "/root",
    "/root/.gradle*",
    "/root/.m2*",
    "/root/.kotlin*",
    "/root/.konan*",
    "/root/.cache*",
    "/root/.java*",
    "/root/.npm*",
    "/root/.config*",
    "/root/.local*",
    "/root/.android*",
    "/home/*/.gradle*",
    "/home/*/.m2*",
    "/home/*/.cache*",
    "/var/cache/*",
    "/var/log/*",
    "/run/*",
    "/dev/*",
    "/proc/*",
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/hostname",
)


def _matches(path: str, patterns: Iterable[str]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(path, p) or fnmatch(name, p) for p in patterns)


def _lines(diff: str | Iterable[str]) -> Iterable[str]:
    """A diff's lines, from its text or from an open file (read line by line)."""
    return diff.splitlines() if isinstance(diff, str) else (line.rstrip("\n") for line in diff)


def changed_paths(diff: str | Iterable[str]) -> list[str]:
    """Paths a git diff touches (both sides of renames), in order of appearance."""
    seen: dict[str, None] = {}
    for line in _lines(diff):
        if line.startswith("diff --git "):
            parts = line[len("diff --git ") :].split(" b/", 1)
            for part in (parts[0].removeprefix("a/"), parts[-1]):
                seen.setdefault(part.strip('"'), None)
    return list(seen)


def suspicious_lines(diff: str | Iterable[str]) -> list[str]:
    """`<path>: <token>` for each changed file whose added lines name a SUSPICIOUS_TOKENS entry."""
    found: dict[str, None] = {}
    path = ""
    for line in _lines(diff):
        if line.startswith("+++ "):
            path = line[4:].strip().strip('"').removeprefix("b/")
        elif line.startswith("+") and path:
            for token in SUSPICIOUS_TOKENS:
                if token in line:
                    found.setdefault(f"{path}: {token}", None)
    return list(found)[:MAX_FLAGGED]


def flag_changes(paths: list[str], diff: str | Iterable[str] | None = None) -> dict[str, list[str]]:
    """The changed paths that touch test infrastructure or test sources (and, given the diff text,
    the suspicious added lines)."""
    flags = {
        "infrastructure": [p for p in paths if _matches(p, INFRASTRUCTURE)],
        "tests": [p for p in paths if _matches(p, TESTS)],
    }
    if diff is not None:
        flags["suspicious"] = suspicious_lines(diff)
    return flags


def outside_changes(
    entries: Iterable[Mapping[str, Any]], repo_dir: str, harness: Iterable[str] = ()
) -> list[str]:
    """Paths changed outside the repository, from the engine's view of a container's filesystem
    (`docker diff`: {"Path", "Kind"}), without build noise and what the harness itself put there.

    Only the deepest changed paths are listed (a planted /tests/test.sh, not also /tests), at most
    MAX_FLAGGED, each with its kind: `+` added, `-` deleted, `~` changed.
    """
    repo = repo_dir.rstrip("/")
    quiet = (*OUTSIDE_QUIET, *harness, *(f"{h}/*" for h in harness))
    kinds = {0: "~", 1: "+", 2: "-"}
    changed: dict[str, str] = {}
    for entry in entries:
        path = str(entry.get("Path", ""))
        inside = path == repo or path.startswith(repo + "/") or repo.startswith(path.rstrip("/") + "/")
        if not path or inside or _in(path, quiet):
            continue
        changed[path] = kinds.get(int(entry.get("Kind", 0)), "~")
    leaves = [p for p in sorted(changed) if not any(q.startswith(p + "/") for q in changed)]
    listed = [f"{changed[p]}{p}" for p in leaves[:MAX_FLAGGED]]
    if len(leaves) > MAX_FLAGGED:
        listed.append(f"... and {len(leaves) - MAX_FLAGGED} more")
    return listed


def _in(path: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch(path, p) for p in patterns)


# --------------------------------------------------------------------------- re-scoring on the host


def rescore(task: Task, verifier_out: Path) -> tuple[float, list[str]]:
    """Score the copied-out `junit.xml` again on the host, with the task's own junit_compare.py and
    expected_tests.json (never the container's copies, which the tests' code could have changed)."""
    xml = verifier_out / names.JUNIT_XML
    if not xml.is_file():
        return 0.0, ["no junit.xml was copied out"]
    tests = task.path / "tests"
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-rescore.") as tmp:
        reward, report = Path(tmp) / "reward.txt", Path(tmp) / "report.json"
        cmd = [sys.executable, str(tests / "junit_compare.py"), "--xml", str(xml), *task.scorer_args]
        cmd += [
            "--expected",
            str(tests / "expected_tests.json"),
            "--reward",
            str(reward),
            "--report",
            str(report),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        try:
            value = reward.read_text(encoding="utf-8").strip()
            reasons = json.loads(report.read_text(encoding="utf-8")).get("reasons") or []
        except (OSError, ValueError) as exc:
            return 0.0, [f"host re-scoring failed ({exc}): {done.stderr[-300:]}"]
    return (1.0 if value == "1" else 0.0), [str(r) for r in reasons]


def verdict_problem(task: Task, verifier_out: Path, container_reward: float) -> str | None:
    """Why the container's reward cannot stand (host re-scoring disagrees), or None."""
    if container_reward != 1.0:
        return None
    host, reasons = rescore(task, verifier_out)
    if host == 1.0:
        return None
    detail = "; ".join(reasons[:3]) or "unresolved"
    return f"reward.txt says 1 but the host's re-scoring of junit.xml says 0 ({detail})"


# --------------------------------------------------------------------------- result provenance


def stale_results(result_paths: list[Path], tasks_dir: Path) -> list[str]:
    """One line per result that does not belong to its task directory and verifier as they are now."""
    lines = []
    for path in result_paths:
        try:
            result = RunResult.read(Path(path))
        except RecordError as exc:
            lines.append(str(exc))
            continue
        if result.status is Status.ERROR:
            continue  # an error result has no verdict to mix in
        try:
            task = load_task(tasks_dir / result.task, require_materialized=False)
        except TaskError as exc:
            lines.append(f"{path}: {exc}")
            continue
        lines += [f"{path}: {problem}" for problem in digest_problems(result, task.id, task.path)]
    return lines
