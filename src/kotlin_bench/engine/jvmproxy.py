"""How the JVMs of an allowlist phase reach its egress proxy without changing what they print.

A JVM takes its proxy (`http.proxyHost`, `http.proxyPort`, `https.proxyHost`, `https.proxyPort`) from its
system properties or, where none is given, from its JDK's `net.properties` (`conf/net.properties`; JDK 8:
`jre/lib/net.properties`). Passing the properties in `JAVA_TOOL_OPTIONS` (or `_JAVA_OPTIONS`,
`JDK_JAVA_OPTIONS`) would make every JVM print `Picked up JAVA_TOOL_OPTIONS: ...` on stderr, which the
published runner (a transparent proxy outside the container) never causes, and which tests comparing a
process's output (ktlint's CLI tests) would see. So `configure` appends the proxy lines to the
`net.properties` of every JDK in the container, and `restore` writes each file back as it was.

Every JDK: each `net.properties` beside a `security/java.security` (the layout of JDK 8, 9 and later, and
of a Debian JDK whose `conf/` links into `/etc/java-N-openjdk/`), anywhere on the container's root file
system but in `/proc`, `/sys`, `/dev`, git directories, Gradle's and Maven's caches and `node_modules`;
a link is followed and each real file is edited once. Gradle's provisioned toolchains (`~/.gradle/jdks`)
are included. A JDK installed during the phase is not.

Every JVM the phase starts on those JDKs (the Gradle wrapper and daemon, Kotlin daemons, test workers and
their children, `java` itself) then connects through the proxy, and prints what it prints anyway;
`System.getProperty("http.proxyHost")` stays null, as the file's values are not system properties, and a
`-Dhttp.proxyHost` given on a command line still wins over the file.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from kotlin_bench.engine import containers

if TYPE_CHECKING:
    from docker.models.containers import Container

# Prints the real path of every JDK's net.properties, one per line (bash and findutils only).
FIND_JDKS = r"""
find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -name .git -o -path '*/.gradle/caches' \
    -o -path '*/.m2/repository' -o -name node_modules \) -prune -o -name net.properties -print 2>/dev/null \
| while IFS= read -r file; do
    [ -f "${file%/*}/security/java.security" ] || continue
    real=$(readlink -f -- "$file") && [ -f "$real" ] && printf '%s\n' "$real"
done | sort -u
"""
# Appends $1 to every file named after it.
APPEND = 'block=$1; shift; for file; do printf "%s" "$block" >>"$file" || exit 1; done'
MARK = "# kotlin-bench: the allowlist phase's egress proxy (removed when the phase ends)"


class JvmProxyError(RuntimeError):
    """The JDKs' proxy configuration could not be written or restored; the message says which file."""


@dataclass(frozen=True)
class Saved:
    """One net.properties as it was before the phase: its path, its tar entry (mode, owner) and bytes."""

    path: str
    info: tarfile.TarInfo
    content: bytes


def proxy_lines(host: str, port: int) -> str:
    """The lines appended to each net.properties."""
    lines = [
        f"{scheme}.{key}={value}"
        for scheme in ("http", "https")
        for key, value in (("proxyHost", host), ("proxyPort", port))
    ]
    return "\n" + MARK + "\n" + "\n".join(lines) + "\n"


def jdk_net_properties(container: Container) -> list[str]:
    """The real paths of the net.properties of every JDK in the running container."""
    result = containers.root_exec(container, ["bash", "-c", FIND_JDKS])
    output = result.output.decode("utf-8", "replace")
    if result.exit_code != 0:
        raise JvmProxyError(f"finding the JDKs failed (exit {result.exit_code}): {output[-300:]}")
    return [line for line in output.splitlines() if line.startswith("/")]


def _read(container: Container, path: str, mtime: int) -> Saved:
    found = containers.read_member(container, path)
    if found is None:
        raise JvmProxyError(f"{path} is not a regular file")
    info, content = found
    info.mtime = mtime
    return Saved(path, info, content)


def _mtimes(container: Container, paths: list[str]) -> dict[str, int]:
    """The files' modification times in whole seconds, as `stat` truncates them. An archive's header is
    no substitute: Podman's rounds to the nearest second, so a restore from it could move a file's time."""
    result = containers.root_exec(container, ["stat", "-c", "%Y %n", "--", *paths])
    output = result.output.decode("utf-8", "replace")
    if result.exit_code != 0:
        raise JvmProxyError(f"reading the JDKs' net.properties times failed: {output[-300:]}")
    pairs = (line.split(" ", 1) for line in output.splitlines() if " " in line)
    return {path: int(seconds) for seconds, path in pairs}


def configure(container: Container, host: str, port: int) -> list[Saved]:
    """Point every JDK of the container at the proxy `host:port`; returns the files as they were."""
    paths = jdk_net_properties(container)
    mtimes = _mtimes(container, paths) if paths else {}
    saved = [_read(container, path, mtimes[path]) for path in paths]
    if saved:
        command = ["bash", "-c", APPEND, "append", proxy_lines(host, port), *(s.path for s in saved)]
        result = containers.root_exec(container, command)
        if result.exit_code != 0:
            restore(container, saved)
            raise JvmProxyError(f"writing the JDKs' net.properties failed: {result.output[-300:]!r}")
    return saved


def restore(container: Container, saved: list[Saved]) -> None:
    """Write every saved net.properties back, byte for byte, with its mode and owner."""
    for item in saved:
        path = PurePosixPath(item.path)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo(path.name)
            info.size, info.mode, info.uid, info.gid = (
                len(item.content),
                item.info.mode,
                item.info.uid,
                item.info.gid,
            )
            info.mtime = item.info.mtime
            tar.addfile(info, io.BytesIO(item.content))
        if not container.put_archive(str(path.parent), buffer.getvalue()):
            raise JvmProxyError(f"restoring {item.path} failed")
