"""What an agent's diff touches that a verifier cannot fully defend: build logic and test sources.

The verifier runs in a fresh container with only the agent's repository diff applied, so nothing the
agent did outside the repository survives. Inside the repository an agent may legitimately change the
build (to fix it), which could also exclude or fake tests; such changes are flagged in the result.
"""

from __future__ import annotations

from fnmatch import fnmatch

# Build logic and test runners: changing these can change which tests run and how they report.
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
    "*/build/test-results/*",
    "build/test-results/*",
    "ktest",
)
# Test sources (the hidden test patch may touch them; editing them is suspicious, not forbidden).
TESTS = ("*/src/test/*", "src/test/*", "*/src/*Test/*", "src/*Test/*", "*/test/*", "test/*")


def _matches(path: str, patterns: tuple[str, ...]) -> bool:
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(path, p) or fnmatch(name, p) for p in patterns)


def changed_paths(diff: str) -> list[str]:
    """Paths a git diff touches (both sides of renames), in order of appearance."""
    seen: dict[str, None] = {}
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            parts = line[len("diff --git ") :].split(" b/", 1)
            for part in (parts[0].removeprefix("a/"), parts[-1]):
                seen.setdefault(part.strip('"'), None)
    return list(seen)


def flag_changes(paths: list[str]) -> dict[str, list[str]]:
    """The changed paths that touch test infrastructure or test sources."""
    return {
        "infrastructure": [p for p in paths if _matches(p, INFRASTRUCTURE)],
        "tests": [p for p in paths if _matches(p, TESTS)],
    }
