"""Network faults in a verifier's test output: a dependency the build could not download because a
repository did not answer, which is the network's fault, not the agent's.

The verifier phase runs with a public network, as published, so Gradle resolves what the task image's warm
cache lacks. When a repository is down, refuses, times out or answers 5xx/429, the build fails and the run
would score 0 for the network's fault. `faults_in` reads Gradle's own words in the test output (Gradle 4's
and Gradle 8's: they share them), one `Fault` per URL that failed, with the artifact it belonged to::

    > Could not resolve org.apache.commons:commons-lang3:3.12.0.
       > Could not get resource 'https://repo.examples.test/maven2/org/.../commons-lang3-3.12.0.pom'.
          > Could not GET 'https://repo.examples.test/maven2/...pom'. Received status code 503 from server: ...
    > Could not HEAD 'https://.../junit-4.13.2.pom'.
       > Connect to repo.examples.test:443 [repo.examples.test/172.17.0.1] failed: Connection refused
    Exception in thread "main" java.io.IOException: Downloading from https://services.gradle.org/... failed: timeout

What stays the agent's (never a fault): a compile or test failure; an artifact that does not exist (a 4xx
status other than 429, Gradle's `Could not find g:a:v`: the agent may have added a dependency that does
not exist); and a failure of a host that is not the network's to keep: only the repositories the task's
build uses at its base commit (`build_hosts`: the URLs and Gradle's repository shorthands of its build
files at HEAD, plus what the task's own test patch adds) and the hosts of its agent allowlist count.
Otherwise an agent could turn its 0 into an error by pointing Gradle at a dead host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

# A URL Gradle failed on: `Could not HEAD|GET|get resource '<url>'` (Gradle 4 to 8), the wrapper's
# `Downloading from <url> failed: ...`, `Server returned HTTP response code: 503 for URL: <url>`.
_URL_LINE = re.compile(
    r"Could not (?:HEAD|GET|get resource|download) '(?P<url>https?://[^']+)'"
    r"|Downloading from (?P<wrapper>https?://\S+) failed"
    r"|Server returned HTTP response code: (?P<code>\d{3}) for URL: (?P<plain>https?://\S+)"
)
# The artifact a failure belongs to: `Could not resolve g:a:v.`, `Could not download x.jar (g:a:v)`.
_ARTIFACT = re.compile(
    r"Could not (?:resolve|download) (?:\S+ \()?(?P<gav>[\w.\-]+:[\w.\-]+:[\w.\-+]+?)\)?\.?\s*$"
)
_STATUS = re.compile(r"Received status code (?P<code>\d{3})")
# Causes that say the host did not answer (Java's and Apache HttpClient's words, as Gradle prints them).
_NO_ANSWER = (
    "Connection refused",
    "Connect timed out",
    "connect timed out",
    "Read timed out",
    "timed out",
    "failed: timeout",
    "Connection reset",
    "Remote host terminated the handshake",
    "Remote host closed connection",
    "failed to respond",
    "No route to host",
    "Network is unreachable",
    "Name or service not known",
    "Temporary failure in name resolution",
    "UnknownHostException",
    "SocketTimeoutException",
    "Premature end of",
)
# How many lines after a failed URL Gradle prints its cause (the nested `> ...` lines).
CAUSE_LINES = 3
# Gradle's repository shorthands and the hosts they stand for.
SHORTHANDS = {
    "mavenCentral()": ("repo.maven.apache.org", "repo1.maven.org"),
    "google()": ("dl.google.com", "maven.google.com"),
    "gradlePluginPortal()": ("plugins.gradle.org", "plugins-artifacts.gradle.org"),
    "jcenter()": ("jcenter.bintray.com",),
}
# The build files whose URLs are the base build's repositories (git pathspecs).
BUILD_FILES = ("*.gradle", "*.gradle.kts", "*.properties", "*.toml")
_HOST_IN_TEXT = re.compile(r"https?://([A-Za-z0-9.\-]+(?::\d+)?)")


@dataclass(frozen=True)
class Fault:
    """One URL the build could not download because its host did not answer (or answered 5xx/429)."""

    artifact: str  # `group:artifact:version`, or the file when Gradle named none
    url: str
    host: str  # `host` or `host:port` when the URL names a port
    cause: str

    def describe(self) -> str:
        return f"{self.host} ({self.cause}) for {self.artifact}"


def host_of(url: str) -> str:
    """`host` or `host:port` of a URL (no default port), lower-case."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return f"{host}:{parts.port}" if parts.port not in (None, 80, 443) else host


def _cause(lines: list[str], start: int, code: str | None) -> str | None:
    """Why the URL on line `start` failed, when it was the network's doing; None otherwise (a 404, ...)."""
    if code is None:
        for line in lines[start : start + CAUSE_LINES + 1]:
            found = _STATUS.search(line)
            if found:
                code = found.group("code")
                break
    if code is not None:
        return f"HTTP {code}" if code.startswith("5") or code == "429" else None
    for line in lines[start : start + CAUSE_LINES + 1]:
        for words in _NO_ANSWER:
            if words in line:
                return words
    return None


def faults_in(text: str) -> list[Fault]:
    """The network faults Gradle reports in `text`, one per URL, in order of appearance."""
    lines = text.splitlines()
    found: dict[str, Fault] = {}
    artifact = ""
    for i, line in enumerate(lines):
        named = _ARTIFACT.search(line)
        if named:
            artifact = named.group("gav")
        hit = _URL_LINE.search(line)
        if not hit:
            continue
        url = hit.group("url") or hit.group("wrapper") or hit.group("plain")
        url = url.rstrip(".,")
        cause = _cause(lines, i, hit.group("code"))
        if cause and url not in found:
            what = artifact or ("Gradle distribution" if hit.group("wrapper") else url.rsplit("/", 1)[-1])
            found[url] = Fault(what, url, host_of(url), cause)
    return list(found.values())


def hosts_in(text: str) -> set[str]:
    """The hosts a build file's text names: its URLs' hosts and those of Gradle's repository shorthands.
    A URL's default port is dropped (`https://h:443/` is `h`)."""
    hosts = set()
    for match in _HOST_IN_TEXT.finditer(text):
        host, _, port = match.group(1).lower().partition(":")
        hosts.add(host if port in ("", "443", "80") else f"{host}:{port}")
    for shorthand, names in SHORTHANDS.items():
        if shorthand in text:
            hosts.update(names)
    return hosts


def added_lines(patch: str) -> str:
    """The lines a unified diff adds (`+` lines, not the `+++` headers), joined."""
    return "\n".join(
        line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")
    )


def the_networks(faults: Iterable[Fault], trusted: Iterable[str]) -> list[Fault]:
    """The faults on hosts that are the network's to keep (`trusted`: the base build's repositories and
    the allowlist); the rest (a host the agent brought in) stay the agent's."""
    keep = {h.lower() for h in trusted}
    return [f for f in faults if f.host in keep]


def describe(faults: list[Fault]) -> str:
    """One line for an error record: the first faults, each naming its host and artifact."""
    shown = "; ".join(f.describe() for f in faults[:3])
    more = f"; and {len(faults) - 3} more" if len(faults) > 3 else ""
    return f"network fault: {shown}{more}"
