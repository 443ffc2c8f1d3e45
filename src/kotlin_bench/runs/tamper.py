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
  reward (the reward is then 0 and the reason `verifier_tampered`; see `kotlin_bench.scoring.rescore`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatch
from typing import Any

from kotlin_bench.core.record_parts import Flag, Flags

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


def flag_changes(paths: list[str], diff: str | Iterable[str] | None = None) -> Flags:
    """The changed paths that touch test infrastructure or test sources (and, given the diff text,
    the suspicious added lines)."""
    flags = {
        Flag.INFRASTRUCTURE: [p for p in paths if _matches(p, INFRASTRUCTURE)],
        Flag.TESTS: [p for p in paths if _matches(p, TESTS)],
    }
    if diff is not None:
        flags[Flag.SUSPICIOUS] = suspicious_lines(diff)
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
