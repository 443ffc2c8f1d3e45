"""kotlin_bench.engine.network: allowlist semantics (pure) and the per-phase network policy on the real
engines (Docker, then rootful Podman: the `engine` fixture).

The engine tests never send traffic past this host: the test servers (`allowed.test`, `api.allowed.test`,
`blocked.test`, each serving HTTP on 8000 and 8443) sit on an INTERNAL egress network created here (with
the engine's DNS serving the aliases), which the proxy uses as its way out, and every name the tests
resolve is one of those aliases or the proxy's. Direct connections that bypass the proxy use `--resolve`
or the server's address, never the engine's DNS forwarding to the host's resolver.
"""

from __future__ import annotations

import contextlib
import io
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.engine import allowlist, containers, jvmproxy, network
from kotlin_bench.engine.engine import Engine, EngineSettings, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import DOCKER_ONLY, on_engines

OS_IMAGE = "kotlin-bench/os:bookworm"
TEST_IMAGE = "kotlin-bench/network-test:py3-curl"
TEST_DOCKERFILE = f"""\
FROM {OS_IMAGE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3 curl iproute2 \\
 && apt-get clean && rm -rf /var/lib/apt/lists/*
"""
SERVER_ALIASES = ["allowed.test", "api.allowed.test", "blocked.test"]
SERVE = "python3 -m http.server 8000 & python3 -m http.server 8443 & wait"
TEST_CONNECT_PORTS = (443, 8443)


# --- allowed_hosts semantics (no engine) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "entries", "expected"),
    [
        ("repo1.maven.org", ["repo1.maven.org"], True),
        ("REPO1.Maven.org", ["repo1.maven.org"], True),
        ("repo1.maven.org.evil.test", ["repo1.maven.org"], False),
        ("xrepo1.maven.org", ["repo1.maven.org"], False),
        ("repo1xmaven.org", ["repo1.maven.org"], False),
        ("services.gradle.org", ["*.gradle.org"], True),
        ("a.b.gradle.org", ["*.gradle.org"], True),
        ("gradle.org", ["*.gradle.org"], False),
        ("gradle.org", ["*.gradle.org", "gradle.org"], True),
        ("evilgradle.org", ["*.gradle.org"], False),
        ("x.gradle.org.evil.test", ["*.gradle.org"], False),
        ("evil.test@x.gradle.org", ["*.gradle.org"], False),
        ("10.1.2.3", ["10.1.2.3"], True),
        ("10.1.2.30", ["10.1.2.3"], False),
        ("anything.test", [], False),
    ],
)
def test_filter_rules_admit(host: str, entries: list[str], expected: bool) -> None:
    """The proxy's filter file (tinyproxy matches each rule case-insensitively) admits exactly these."""
    rules = [line for line in allowlist.filter_rules(entries).splitlines() if not line.startswith("#")]
    assert any(re.match(rule, host, re.IGNORECASE) for rule in rules) is expected


@pytest.mark.parametrize(
    "entry",
    [
        "",
        "  ",
        "https://repo1.maven.org",
        "repo1.maven.org:443",
        "10.0.0.0/8",
        "::1",
        "a.*.org",
        "*.10.1.2.3",
        "bad_label.org",
        "-x.org",
        "*.",
    ],
)
def test_invalid_entries_are_refused(entry: str) -> None:
    with pytest.raises(ValueError):
        allowlist.normalize_host(entry)


def test_normalization_and_filter_file() -> None:
    assert allowlist.normalize_host(" Repo1.Maven.ORG. ") == "repo1.maven.org"
    rules = allowlist.filter_rules(["repo1.maven.org", "REPO1.maven.org", "*.gradle.org"])
    lines = [line for line in rules.splitlines() if not line.startswith("#")]
    assert lines == [r"^repo1\.maven\.org$", r"^([a-z0-9_-]+\.)+gradle\.org$"]
    assert [line for line in allowlist.filter_rules([]).splitlines() if not line.startswith("#")] == []
    with pytest.raises(TypeError):
        allowlist.filter_rules("repo1.maven.org")


def test_names_and_environment() -> None:
    assert network.network_name("oracle.acme_widgets-7.1") == "kotlin-bench-int-oracle.acme_widgets-7.1"
    assert network.network_name("a/b c:1") == "kotlin-bench-int-a-b-c-1"
    long = network.network_name("x" * 300)
    assert len(long) < 120 and long != network.network_name("x" * 299)
    env = network.proxy_env()
    assert env["http_proxy"] == env["HTTPS_PROXY"] == "http://egress-proxy:3128"
    assert env["no_proxy"] == "localhost,127.0.0.1"
    # Nothing a JVM announces on stderr ("Picked up ..."): JVMs get the proxy from net.properties.
    assert not {"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS"} & set(env)
    assert jvmproxy.proxy_lines("egress-proxy", 3128).splitlines()[2:] == [
        "http.proxyHost=egress-proxy",
        "http.proxyPort=3128",
        "https.proxyHost=egress-proxy",
        "https.proxyPort=3128",
    ]
    assert re.fullmatch(r"kotlin-bench/egress-proxy:tp-[0-9a-f]{12}", network.proxy_image_tag())
    assert network.proxy_image_tag() == network.proxy_image_tag()


def test_arguments_are_checked_before_touching_the_container() -> None:
    nothing: Any = object()  # any use of the container would fail
    with pytest.raises(ValueError, match="network_mode"):
        network.enter_phase(nothing, nothing, "open", [], "k")
    with pytest.raises(ValueError, match="allowed_hosts"):
        network.enter_phase(nothing, nothing, "public", ["repo1.maven.org"], "k")
    with pytest.raises(ValueError, match="CIDR"):
        network.enter_phase(nothing, nothing, "allowlist", ["10.0.0.0/8"], "k")
    with pytest.raises(ValueError, match="connect_ports"):
        network.enter_phase(nothing, nothing, "allowlist", [], "k", connect_ports=[])


# --- the real engine --------------------------------------------------------------------------------


@dataclass
class Lab:
    engine: Engine
    egress: Any  # the internal "outside" network of the test servers and the proxy
    server_ip: str

    @property
    def client(self) -> Any:
        return self.engine.client


@pytest.fixture(scope="module")
def lab(engine: EngineSettings) -> Iterator[Lab]:
    from kotlin_bench.engine.images import image_id

    connected = connect(engine)
    client = connected.client
    # On Podman the test image came from Docker with the OS image (conftest `podman_images`); Podman has
    # no cache of Docker's builds, so building it again there would reinstall its packages.
    if not connected.podman or image_id(client, TEST_IMAGE) is None:
        if image_id(client, OS_IMAGE) is None:
            pytest.skip(f"{OS_IMAGE} is not present (build the manifest's OS image first)")
        client.images.build(
            fileobj=io.BytesIO(TEST_DOCKERFILE.encode()), tag=connected.local_name(TEST_IMAGE), rm=True
        )
    network.ensure_proxy_image(connected)
    suffix = uuid.uuid4().hex[:8]
    labels = {"kotlin-bench.test": "network"}
    egress = network.internal_network(connected, f"kotlin-bench-test-egress-{suffix}", labels, dns=True)
    server = None
    try:
        server = client.containers.create(TEST_IMAGE, ["sh", "-c", SERVE], labels=labels)
        egress.connect(server, aliases=SERVER_ALIASES)
        client.networks.get(connected.default_network).disconnect(server)
        server.start()
        server.reload()
        ip = server.attrs["NetworkSettings"]["Networks"][egress.name]["IPAddress"]
        ready = server.exec_run(
            [
                "sh",
                "-c",
                "for i in $(seq 50); do curl -sf -o /dev/null localhost:8443 && exit 0; sleep 0.1; done; exit 1",
            ]
        )
        assert ready.exit_code == 0, "the test server did not start"
        yield Lab(connected, egress, ip)
    finally:
        if server is not None:
            server.remove(force=True)
        network._remove_network(connected, egress)


@pytest.fixture
def task(lab: Lab) -> Iterator[tuple[Any, str]]:
    """A task-like container started like the runner's (default network, run label), and its run key."""
    key = f"nettest.{uuid.uuid4().hex[:8]}.1"
    container = containers.start(
        lab.engine, TEST_IMAGE, key, {"kotlin-bench.test": "network"}, cpus=1, memory_mb=256, pids=256
    )
    try:
        yield container, key
    finally:
        containers.reap(lab.client, key)
        network.reap_networks(lab.engine, key)


def sh(container: Any, script: str, env: dict[str, str] | None = None) -> dict[str, str]:
    """Run a bash script that prints `key=value` lines; return them."""
    result = container.exec_run(["bash", "-c", script], environment=env or {})
    text = result.output.decode("utf-8", "replace")
    assert result.exit_code == 0, text
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def attached(container: Any) -> set[str]:
    container.reload()
    return set(container.attrs["NetworkSettings"]["Networks"] or {})


def leftovers(lab: Lab, key: str) -> tuple[list[Any], list[Any]]:
    proxies = lab.client.containers.list(
        all=True, filters={"label": [f"kotlin-bench.run={key}", "kotlin-bench.role=egress-proxy"]}
    )
    return proxies, lab.client.networks.list(names=[network.network_name(key)])


CODE = "code() { curl -s -o /dev/null -w '%{http_code}' \"$@\"; }; tunnel() { curl -s -o /dev/null -w '%{http_connect}' -p \"$@\"; }\n"
# Bypass attempts run in parallel (each waits for its connect timeout); `--resolve` pins the name to the
# server's address so that no query goes to Docker's DNS forwarding.
BYPASS = """
( curl -s --noproxy '*' --connect-timeout 2 --resolve allowed.test:8000:{ip} http://allowed.test:8000/ >/dev/null; echo "direct_name=$?" ) > /tmp/a &
( curl -s --noproxy '*' --connect-timeout 2 http://{ip}:8000/ >/dev/null; echo "direct_ip=$?" ) > /tmp/b &
wait; cat /tmp/a /tmp/b
"""


def test_allowlist_admits_only_allowed_hosts(lab: Lab, task: tuple[Any, str], tmp_path: Path) -> None:
    container, key = task
    before = container.exec_run(["cat", "/etc/resolv.conf"]).output
    hosts = container.exec_run(["cat", "/etc/hosts"]).output
    log = tmp_path / "proxy.log"
    with network.enter_phase(
        lab.engine,
        container,
        "allowlist",
        ["allowed.test"],
        key,
        egress_network=lab.egress.name,
        connect_ports=TEST_CONNECT_PORTS,
        log_path=log,
    ) as phase:
        assert phase.env["https_proxy"] == "http://egress-proxy:3128"
        assert attached(container) == {network.network_name(key)}
        internal = lab.client.networks.get(network.network_name(key))
        assert internal.attrs["Internal"] is True
        assert internal.attrs["Labels"]["kotlin-bench.run"] == key
        assert phase.proxy is not None and phase.proxy.labels["kotlin-bench.run"] == key
        seen = sh(
            container,
            CODE
            + f"""
echo "allowed=$(code http://allowed.test:8000/)"
echo "blocked=$(code http://blocked.test:8000/)"
echo "by_address=$(code http://{lab.server_ip}:8000/)"
echo "subdomain=$(code http://api.allowed.test:8000/)"
echo "tunnel_allowed=$(tunnel http://allowed.test:8443/) $(code -p http://allowed.test:8443/)"
echo "tunnel_blocked=$(tunnel http://blocked.test:8443/)"
echo "tunnel_port=$(tunnel http://allowed.test:8000/)"
echo "proxy_resolves=$(getent hosts egress-proxy | cut -d' ' -f1)"
echo "interfaces=$(ls /sys/class/net | sort | tr '\\n' ' ')"
"""
            + BYPASS.format(ip=lab.server_ip),
            phase.env,
        )
        assert seen["allowed"] == "200"
        assert seen["blocked"] == "403"
        assert seen["by_address"] == "403"
        assert seen["subdomain"] == "403"  # an exact entry admits no subdomain
        assert seen["tunnel_allowed"] == "200 200"  # CONNECT established, then HTTP through the tunnel
        assert seen["tunnel_blocked"] == "403"
        assert seen["tunnel_port"] == "403"  # 8000 is not a CONNECT port
        phase.proxy.reload()
        proxy_ip = phase.proxy.attrs["NetworkSettings"]["Networks"][internal.name]["IPAddress"]
        assert seen["proxy_resolves"] == proxy_ip
        assert seen["direct_name"] not in ("", "0") and seen["direct_ip"] not in ("", "0")
        assert len(seen["interfaces"].split()) == 2  # lo and the internal network's interface
        assert 'refused on filtered domain "blocked.test"' in phase.proxy_log()
    assert leftovers(lab, key) == ([], [])
    assert attached(container) == set()
    assert container.exec_run(["cat", "/etc/resolv.conf"]).output == before
    assert b"egress-proxy" not in container.exec_run(["cat", "/etc/hosts"]).output
    if lab.engine.podman:  # the proxy was named in /etc/hosts only for the phase
        assert container.exec_run(["cat", "/etc/hosts"]).output.splitlines()[:3] == hosts.splitlines()[:3]
    assert 'refused on filtered domain "blocked.test"' in log.read_text(encoding="utf-8")


def test_wildcard_default_connect_ports_and_teardown_on_error(lab: Lab, task: tuple[Any, str]) -> None:
    container, key = task
    with (
        pytest.raises(RuntimeError, match="agent crashed"),
        network.enter_phase(
            lab.engine, container, "allowlist", ["*.allowed.test"], key, egress_network=lab.egress.name
        ) as phase,
    ):
        seen = sh(
            container,
            CODE
            + """
echo "subdomain=$(code http://api.allowed.test:8000/)"
echo "bare=$(code http://allowed.test:8000/)"
echo "other=$(code http://blocked.test:8000/)"
echo "tunnel_8443=$(tunnel http://api.allowed.test:8443/)"
""",
            phase.env,
        )
        assert seen == {"subdomain": "200", "bare": "403", "other": "403", "tunnel_8443": "403"}
        raise RuntimeError("agent crashed")
    assert leftovers(lab, key) == ([], [])


def test_no_network_leaves_only_loopback(lab: Lab, task: tuple[Any, str]) -> None:
    container, key = task
    with network.enter_phase(
        lab.engine, container, "no-network", [], key, egress_network=lab.egress.name
    ) as phase:
        assert phase.env == {}
        assert attached(container) == set()
        seen = sh(
            container,
            f"""
echo "interfaces=$(ls /sys/class/net | tr '\\n' ' ')"
echo "links=$(ip -o link | wc -l)"
curl -s --connect-timeout 2 http://{lab.server_ip}:8000/ >/dev/null; echo "direct_ip=$?"
curl -s --connect-timeout 2 http://127.0.0.1:9/ >/dev/null; echo "loopback_port=$?"
""",
        )
    assert seen["interfaces"].split() == ["lo"]
    assert seen["links"] == "1"
    assert seen["direct_ip"] not in ("", "0") and seen["loopback_port"] not in ("", "0")


def test_public_after_allowlist(lab: Lab, task: tuple[Any, str]) -> None:
    """The runner's order: allowlist agent phase, then a public verifier phase on the default network."""
    container, key = task
    engine = lab.engine
    before = container.exec_run(["cat", "/etc/resolv.conf"]).output
    with network.enter_phase(
        engine, container, "allowlist", [], key, egress_network=lab.egress.name
    ) as phase:
        # an empty allowlist admits nothing: the phase has no network at all (and no proxy)
        assert phase.env == {} and attached(container) == set()
    with network.enter_phase(
        engine, container, "allowlist", ["nothing.test"], key, egress_network=lab.egress.name
    ) as phase:
        assert sh(container, CODE + 'echo "any=$(code http://allowed.test:8000/)"', phase.env) == {
            "any": "403"
        }
    with network.enter_phase(engine, container, "public", [], key) as phase:
        assert phase.env == {}
        assert attached(container) == {engine.default_network}
        container.reload()
        address = container.attrs["NetworkSettings"]["Networks"][engine.default_network]["IPAddress"]
        seen = sh(container, "echo \"addresses=$(ip -o -4 addr show scope global | awk '{print $2, $4}')\"")
        name, cidr = seen["addresses"].split()
        assert name.startswith("eth") and cidr.startswith(f"{address}/")
        assert container.exec_run(["cat", "/etc/resolv.conf"]).output == before
    # public on a user-defined egress network: the engine's DNS serves its aliases, the server answers directly.
    with network.enter_phase(engine, container, "public", [], key, egress_network=lab.egress.name):
        assert attached(container) == {lab.egress.name}
        seen = sh(container, CODE + 'echo "direct=$(code --noproxy "*" http://allowed.test:8000/)"')
        assert seen == {"direct": "200"}


def test_leftovers_of_a_killed_run_are_reaped(lab: Lab, task: tuple[Any, str]) -> None:
    container, key = task
    abandoned = network.enter_phase(
        lab.engine, container, "allowlist", ["allowed.test"], key, egress_network=lab.egress.name
    )
    proxies, networks = leftovers(lab, key)
    assert len(proxies) == 1 and len(networks) == 1
    # A retry of the same run sets up afresh over the leftovers ...
    with network.enter_phase(
        lab.engine, container, "allowlist", ["allowed.test"], key, egress_network=lab.egress.name
    ) as phase:
        assert sh(container, CODE + 'echo "allowed=$(code http://allowed.test:8000/)"', phase.env) == {
            "allowed": "200"
        }
        # ... and the reapers remove a run's proxy and network however it ended.
        assert network.reap_networks(lab.engine, key) == 1
        assert leftovers(lab, key) == ([], [])
    with contextlib.suppress(network.NetworkError):
        abandoned.close()
    assert leftovers(lab, key) == ([], [])


def test_proxy_leaves_by_the_default_bridge(lab: Lab, task: tuple[Any, str]) -> None:
    """Production layout (no traffic sent): the proxy's default route is the bridge's, not the internal one."""
    container, key = task
    default = lab.engine.default_network
    with network.enter_phase(lab.engine, container, "allowlist", ["repo1.maven.org"], key) as phase:
        assert phase.proxy is not None
        phase.proxy.reload()
        endpoints = phase.proxy.attrs["NetworkSettings"]["Networks"]
        assert set(endpoints) == {default, network.network_name(key)}
        routes = phase.proxy.exec_run(["cat", "/proc/net/route"]).output.decode().splitlines()[1:]
        defaults = [r.split() for r in routes if r.split()[1] == "00000000"]
        assert len(defaults) == 1
        gateway = ".".join(str(b) for b in reversed(bytes.fromhex(defaults[0][2])))
        assert gateway == endpoints[default]["Gateway"]
        container.stop(timeout=1)  # as after the watchdog killed it: teardown still succeeds
    assert leftovers(lab, key) == ([], [])


# --- config extra_hosts: names of this host in public phases and the proxy, never in allowlist phases ---

EXTRA_HOSTS = {"repo.examples.test": "host-gateway", "fixed.examples.test": "192.0.2.7"}


def _hosts_lines(container: Any, name: str) -> list[str]:
    """The addresses /etc/hosts gives `name`, first (the one a lookup takes) first; no resolver is
    asked. (Podman copies the host's own lines after ours: 127.0.0.1 for the stand-in, say.)"""
    result = container.exec_run(["sh", "-c", f"grep -w '{name}' /etc/hosts | cut -f1 | cut -d' ' -f1"])
    return result.output.decode().split()


def test_extra_hosts_name_this_host_in_public_phases_and_the_proxy_only(lab: Lab) -> None:
    from dataclasses import replace

    from kotlin_bench.dataset.task import Phase
    from kotlin_bench.engine.phase import Limits, PhaseContainer

    settings = replace(lab.engine.settings, extra_hosts=tuple(sorted(EXTRA_HOSTS.items())))
    engine = replace(lab.engine, settings=settings)
    labels = {"kotlin-bench.test": "network"}
    limits = Limits(1, 256, 256)
    public = Phase(60, "public")
    with PhaseContainer(
        engine, TEST_IMAGE, f"nettest.{uuid.uuid4().hex[:8]}.1", labels, limits, phase=public
    ) as box:
        box.container.reload()
        gateway = box.container.attrs["NetworkSettings"]["Networks"][engine.default_network]["Gateway"]
        this_host = gateway if not engine.podman else engine.host_address()
        assert engine.extra_hosts()["repo.examples.test"] == (
            "host-gateway" if not engine.podman else this_host
        )
        assert _hosts_lines(box.container, "repo.examples.test")[0] == this_host
        assert _hosts_lines(box.container, "fixed.examples.test")[0] == "192.0.2.7"
    allowlist = Phase(60, "allowlist", ("repo.examples.test",))
    key = f"nettest.{uuid.uuid4().hex[:8]}.1"
    with PhaseContainer(engine, TEST_IMAGE, key, labels, limits, phase=allowlist) as box:
        assert this_host not in _hosts_lines(box.container, "repo.examples.test")
        with box.network(allowlist) as net:
            assert net.proxy is not None
            assert _hosts_lines(net.proxy, "repo.examples.test")[0] == this_host
            assert this_host not in _hosts_lines(box.container, "repo.examples.test")
            assert _hosts_lines(box.container, "fixed.examples.test") == []
    for mode in ("no-network", "allowlist"):  # an empty allowlist is no network
        with PhaseContainer(engine, TEST_IMAGE, key, labels, limits, phase=Phase(60, mode)) as box:
            assert _hosts_lines(box.container, "fixed.examples.test") == []


# --- JVMs in an allowlist phase: the proxy through every JDK's net.properties, no banner -------------

FAKE_JDKS = r"""
set -e
jdk() { mkdir -p "$1/security"; printf '%s' "$2" >"$1/net.properties"; echo x >"$1/security/java.security"; }
jdk /opt/jdk8/jre/lib 'java.net.useSystemProxies=false
'
jdk /opt/jdk21/conf 'last.line=without.newline'
jdk /etc/java-17-openjdk 'debian=1
'
mkdir -p /usr/lib/jvm/java-17/conf/security
ln -s /etc/java-17-openjdk/net.properties /usr/lib/jvm/java-17/conf/net.properties
ln -s /etc/java-17-openjdk/security/java.security /usr/lib/jvm/java-17/conf/security/java.security
jdk /root/.gradle/jdks/temurin-11/conf 'toolchain=1
'
chmod 600 /root/.gradle/jdks/temurin-11/conf/net.properties
mkdir -p /srv/app/conf && echo 'not.a.jdk=1' >/srv/app/conf/net.properties
jdk /srv/repo/.git/objects/conf 'inside.git=1
'
"""
FAKE_JDK_FILES = [
    "/etc/java-17-openjdk/net.properties",
    "/opt/jdk21/conf/net.properties",
    "/opt/jdk8/jre/lib/net.properties",
    "/root/.gradle/jdks/temurin-11/conf/net.properties",
]
NOT_JDKS = ["/srv/app/conf/net.properties", "/srv/repo/.git/objects/conf/net.properties"]
STATE = 'for f; do printf \'%s %s \' "$f" "$(stat -c %a.%U.%Y "$f")"; sha256sum "$f" | cut -c1-16; done'


def _state(container: Any, paths: list[str]) -> str:
    result = container.exec_run(["bash", "-c", STATE, "state", *paths])
    assert result.exit_code == 0, result.output
    return result.output.decode()


def test_every_jdk_is_pointed_at_the_proxy_and_restored_byte_for_byte(task: tuple[Any, str]) -> None:
    """JDK 8 and 9+ layouts, a Debian JDK linking into /etc, a Gradle toolchain, a file without a final
    newline; a net.properties that is no JDK's, or inside a git directory, is left alone."""
    container, _ = task
    assert container.exec_run(["bash", "-c", FAKE_JDKS]).exit_code == 0
    before, others = _state(container, FAKE_JDK_FILES), _state(container, NOT_JDKS)
    saved = jvmproxy.configure(container, "egress-proxy", 3128)
    assert sorted(s.path for s in saved) == FAKE_JDK_FILES
    for path in FAKE_JDK_FILES:
        text = container.exec_run(["cat", path]).output.decode()
        assert text.endswith(jvmproxy.proxy_lines("egress-proxy", 3128)), text
        assert "\nhttps.proxyPort=3128\n" in text
    # A last line without a newline keeps its value: the proxy lines start on a line of their own.
    tail = container.exec_run(["cat", "/opt/jdk21/conf/net.properties"]).output.decode()
    assert tail.startswith("last.line=without.newline\n# kotlin-bench"), tail
    assert _state(container, NOT_JDKS) == others
    jvmproxy.restore(container, saved)
    assert _state(container, FAKE_JDK_FILES) == before  # content, mode, owner and mtime


FETCH_JAVA = """
import java.io.*;
import java.net.*;
import java.net.http.*;
import java.nio.charset.StandardCharsets;

public class Fetch {
    static String open(String url) {
        try {
            HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
            c.setConnectTimeout(5000);
            c.setReadTimeout(5000);
            return String.valueOf(c.getResponseCode());
        } catch (IOException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    static String client(String url) {
        try {
            HttpRequest request = HttpRequest.newBuilder(URI.create(url)).build();
            return String.valueOf(HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.discarding()).statusCode());
        } catch (Exception e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    public static void main(String[] args) throws Exception {
        String who = args.length > 0 ? args[0] : "parent";
        for (String url : new String[] {"http://allowed.test:8000/", "http://blocked.test:8000/", "https://github.com/", "https://allowed.test:8443/"}) {
            System.out.println(who + " url " + url + " " + open(url));
        }
        if (!who.equals("parent")) return;
        System.out.println("client http://allowed.test:8000/ " + client("http://allowed.test:8000/"));
        System.out.println("client http://blocked.test:8000/ " + client("http://blocked.test:8000/"));
        String java = System.getProperty("java.home") + "/bin/java";
        Process child = new ProcessBuilder(java, "/tmp/Fetch.java", "child").start();
        System.out.print(new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        System.out.println("child stderr [" + new String(child.getErrorStream().readAllBytes(), StandardCharsets.UTF_8) + "]");
        System.out.println("property " + System.getProperty("https.proxyHost"));
    }
}
"""
JAVA_VERSION = 'java -version 2>&1; echo "java_tool_options=${JAVA_TOOL_OPTIONS-unset}"'


@pytest.fixture(scope="module")
def example_image(finished_examples: Workspace) -> str:
    """The task image of an example (OpenJDK 17 from Debian, whose conf/ links into /etc), as the session's
    finished run of the examples built it."""
    return read_sentinel(finished_examples.root / names.task_sentinel(EXAMPLE_TASK)).id


EXAMPLE_TASK = "examples_calc-4"


# On Docker only: the example's task image is Docker's (the JDK files are written the same way on Podman,
# as the test above shows, and the allowlist's name pinning on Podman is tested with curl above).
@DOCKER_ONLY
def test_jvms_of_an_example_agent_phase_print_what_they_print_bare_and_keep_to_the_allowlist(
    lab: Lab, example_image: str, tmp_path: Path
) -> None:
    key = f"nettest.{uuid.uuid4().hex[:8]}.1"
    labels = {"kotlin-bench.test": "network"}
    container = containers.start(lab.engine, example_image, key, labels, cpus=2, memory_mb=2048, pids=4096)
    try:
        bare = container.exec_run(["bash", "-c", JAVA_VERSION]).output
        jdks = jvmproxy.jdk_net_properties(container)
        assert jdks, "the example image has a JDK"
        before = _state(container, jdks)
        containers.copy_file_in(container, _write(tmp_path / "Fetch.java", FETCH_JAVA), "/tmp")
        with network.enter_phase(
            lab.engine,
            container,
            "allowlist",
            ["allowed.test"],
            key,
            egress_network=lab.egress.name,
            connect_ports=TEST_CONNECT_PORTS,
        ) as phase:
            assert container.exec_run(["bash", "-c", JAVA_VERSION], environment=phase.env).output == bare
            done = container.exec_run(["java", "/tmp/Fetch.java"], environment=phase.env, demux=True)
            out, err = (part.decode() if part else "" for part in done.output)
            log = phase.proxy_log()
        assert done.exit_code == 0 and err == "", (out, err)  # nothing on stderr: no banner
        lines = out.splitlines()
        for who in ("parent", "child"):
            assert f"{who} url http://allowed.test:8000/ 200" in lines, out
            assert f"{who} url http://blocked.test:8000/ 403" in lines, out
            github = next(x for x in lines if x.startswith(f"{who} url https://github.com/ "))
            assert "Unable to tunnel through proxy" in github and "403" in github, github
            tunnel = next(x for x in lines if x.startswith(f"{who} url https://allowed.test:8443/ "))
            assert "Unable to tunnel" not in tunnel, tunnel  # admitted: the TLS handshake meets plain HTTP
        assert (
            "client http://allowed.test:8000/ 200" in lines
            and "client http://blocked.test:8000/ 403" in lines
        )
        assert "child stderr []" in lines and "property null" in lines, out
        assert (
            log.count("CONNECT allowed.test:8443") >= 2 and 'refused on filtered domain "github.com"' in log
        )
        # The phase is over: every JDK as it was, and java prints what it printed before.
        assert _state(container, jdks) == before
        assert container.exec_run(["bash", "-c", JAVA_VERSION]).output == bare
    finally:
        containers.reap(lab.client, key)
        network.reap_networks(lab.engine, key)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_builds_get_extra_hosts_in_the_form_their_engine_reads() -> None:
    """Docker's build endpoint reads `host:address` values, Podman's one JSON array of them (a plain value
    is a 400 there: found when the recording proxy's image was first built on Podman)."""
    hosts = (("repo.examples.test", "10.88.0.1"),)
    docker = Engine(None, EngineSettings(extra_hosts=hosts), False, False, (), "28")  # type: ignore[arg-type]
    podman = Engine(None, EngineSettings(extra_hosts=hosts), True, False, (), "4.3")  # type: ignore[arg-type]
    assert docker.build_extra_hosts() == ["repo.examples.test:10.88.0.1"]
    assert podman.build_extra_hosts() == ['["repo.examples.test:10.88.0.1"]']
    assert Engine(None, EngineSettings(), True, False, (), "4.3").build_extra_hosts() is None  # type: ignore[arg-type]


# --- the fence: an allowlist phase reaches its proxy and nothing else (kotlin_bench.engine.fence) -------

# Each attempt prints `<kind> <address> <port> <outcome> <seconds>`; the outcome is `connected` or
# `answered` when it got through, else the error's name (ECONNREFUSED: refused on the way, by the fence or
# the container's own loopback; ENETUNREACH: no route left the container). UDP goes as DNS resolvers send
# it: a connected socket, so that a refusal is seen at once.
PROBE = r"""
import errno, json, os, socket, sys, time
IFACE = next(name for name in os.listdir("/sys/class/net") if name != "lo")
QUERY = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01"
for kind, address, port in json.loads(sys.argv[1]):
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    target = (address, port, 0, socket.if_nametoindex(IFACE)) if address.startswith("fe80:") else (address, port)
    s = socket.socket(family, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
    s.settimeout(5)
    started = time.monotonic()
    try:
        s.connect(target)
        if kind == "udp":
            s.send(QUERY)
            s.recv(512)
        outcome = "connected" if kind == "tcp" else "answered"
    except TimeoutError:
        outcome = "timeout"
    except OSError as e:
        outcome = errno.errorcode.get(e.errno or 0, str(e))
    print(kind, address, port, outcome, round(time.monotonic() - started, 2))
"""
GOT_THROUGH = ("connected", "answered")
QUICK = 2.0  # seconds: refused, not left to time out


@pytest.fixture(scope="module")
def host_service() -> Iterator[int]:
    """A service on this host on every address, IPv4 and IPv6 (as the stand-in repository, a user's Maven
    mirror or a model server listen): its port. It answers any GET with 200."""
    import http.server
    import socket
    import threading

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"the host")

        def log_message(self, *args: Any) -> None:
            pass

    class DualStack(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6

        def server_bind(self) -> None:
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            super().server_bind()

    server = DualStack(("::", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def host_addresses() -> list[tuple[str, str]]:
    """This host's addresses (interface, address), loopback apart: its own, the bridges' (the default
    one's gateway, the phase network's own on Docker) and the IPv6 link-local ones."""
    import json
    import subprocess

    shown = subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True, check=True).stdout
    return [
        (link["ifname"], info["local"])
        for link in json.loads(shown)
        for info in link.get("addr_info", [])
        if link["ifname"] != "lo"
    ]


def main_address() -> str:
    """The address this host's default route leaves from: where the proxy finds `host_service`."""
    import json
    import subprocess

    route = subprocess.run(["ip", "-j", "route", "get", "192.0.2.200"], capture_output=True, text=True)
    return json.loads(route.stdout)[0]["prefsrc"]


def fence_attempts(
    engine: Engine, key: str, port: int, others: list[tuple[str, int]]
) -> list[tuple[str, str, int]]:
    """What an allowlist phase tries around its proxy: `port` (the host's service) and 443 (the stand-in's)
    on every address of the host (the phase network's gateway, the default bridge's, the host's other
    interfaces' and bridges', the phase bridge's IPv6 link-local; IPv4-mapped too where the container has
    IPv6; slirp4netns' address of the host), the container's own loopback (`127.0.0.1`, `0.0.0.0`),
    `others` (other containers, on other networks), DNS queries to outside resolvers, and an address on
    the internet."""
    bridge = podman_bridge(key)
    addresses = [a for name, a in host_addresses() if not a.startswith("fe80:") or name == bridge]
    tries = [("tcp", a, p) for a in addresses for p in (port, 443)]
    tries += [("tcp", f"::ffff:{a}", port) for a in addresses if "." in a and engine.podman]
    tries += [("tcp", a, port) for a in ("127.0.0.1", "0.0.0.0")] + [("tcp", a, p) for a, p in others]
    tries += [("tcp", "10.0.2.2", port), ("udp", "10.0.2.3", 53)]  # slirp4netns' host and resolver
    return [*tries, ("udp", "8.8.8.8", 53), ("tcp", "1.1.1.1", 443)]


def podman_bridge(key: str) -> str:
    from kotlin_bench.engine.podman import bridge_name

    return bridge_name(network.network_name(key))


Seen = dict[tuple[str, str, int], tuple[str, float]]


def probe(container: Any, tries: list[tuple[str, str, int]]) -> Seen:
    import json

    done = container.exec_run(["python3", "-c", PROBE, json.dumps(tries)])
    assert done.exit_code == 0, done.output.decode()
    seen = {}
    for line in done.output.decode().splitlines():
        kind, address, port, outcome, seconds = line.split()
        seen[(kind, address, int(port))] = (outcome, float(seconds))
    return seen


def recording(tmp_path: Path, policy: str) -> Any:
    from kotlin_bench.core import retrieval
    from kotlin_bench.engine import egress

    facts = retrieval.Facts(
        coordinates=("examples:calc",), base_version="1.0.1-SNAPSHOT", fix_releases=("1.1.0",)
    )
    return egress.EgressSetup(
        egress.EgressPolicy(retrieval=egress.Retrieval(policy)),
        facts,
        egress.ensure_ca(tmp_path / "ca"),
        tmp_path / "egress.jsonl",
    )


@dataclass
class Fenced:
    """What an allowlist phase met around its proxy and through it."""

    seen: Seen  # each attempt around the proxy: its outcome and seconds
    proxied: str  # the host's service through the proxy: its HTTP status
    forwarding: str  # the proxy's net.ipv4.ip_forward
    refused: Any  # what the fence refused (`fence.Refused`; None: nothing could be seen)
    tables: str  # the host's nftables tables during the phase


def fenced_phase(
    engine: Engine, container: Any, key: str, *, port: int, others: list[tuple[str, int]], setup: Any
) -> Fenced:
    """An allowlist phase (recorded by `setup`) that allows this host's main address, and what it met:
    `others` and the proxy's own address on the default network are tried besides the host's."""
    host = main_address()
    with network.enter_phase(engine, container, "allowlist", [host], key, recording=setup) as phase:
        assert phase.proxy is not None
        phase.proxy.reload()
        outside = phase.proxy.attrs["NetworkSettings"]["Networks"][engine.default_network]["IPAddress"]
        seen = probe(container, fence_attempts(engine, key, port, [*others, (outside, network.PROXY_PORT)]))
        proxied = sh(container, CODE + f'echo "status=$(code http://{host}:{port}/)"', phase.env)["status"]
        forwarding = phase.proxy.exec_run(["cat", "/proc/sys/net/ipv4/ip_forward"]).output.decode().strip()
        tables = _nft_tables()
    assert attached(container) == set()
    return Fenced(seen, proxied, forwarding, phase.around_proxy, tables)


def _nft_tables() -> str:
    import subprocess

    return subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True).stdout


def assert_fenced(fenced: Fenced) -> list[tuple[str, str, int]]:
    """Nothing got around the proxy, nothing waited; every refusal the fence made is in its count and
    among its destinations (a refused attempt to the container's own loopback is the container's, not
    the fence's). Returns the attempts the fence refused."""
    seen, refused = fenced.seen, fenced.refused
    through = {t: o for t, o in seen.items() if o[0] in GOT_THROUGH}
    slow = {t: o for t, o in seen.items() if o[1] > QUICK}
    assert not through and not slow, (through, slow)
    assert fenced.proxied == "200" and fenced.forwarding == "0", fenced
    own = {"127.0.0.1", "0.0.0.0"}
    refusals = [t for t, o in seen.items() if o[0] == "ECONNREFUSED" and t[1] not in own]
    if refused is None:  # rootless Podman: nothing left the container to be refused on the way
        assert refusals == [], refusals
        return refusals
    dns = [t for t in refusals if t[2] == 53]
    shown = {f"{kind} {f'[{a}]' if ':' in a else a}:{port}" for kind, a, port in refusals if port != 53}
    assert refused.attempts >= len(refusals) - len(dns) and refused.dns >= len(dns), (refused, refusals)
    assert shown <= set(refused.destinations), (shown, refused)
    return refusals


@pytest.mark.parametrize(
    ("engine", "policy"), on_engines(docker=["flag", "block"], podman=["block"]), indirect=["engine"]
)
def test_an_allowlist_phase_reaches_its_proxy_and_nothing_else(
    lab: Lab, task: tuple[Any, str], host_service: int, tmp_path: Path, policy: str
) -> None:
    """Around the recording proxy, under `retrieval: flag` and `block` alike: the host's every address
    (a service listening on all of them; the stand-in's port), the container's own loopback, other
    containers on other networks (the test server; the proxy's own address on the default network), DNS
    queries to outside resolvers, the internet: refused at once, counted with their destinations. The
    allowed host answers through the proxy, which routes nothing."""
    container, key = task
    table = f"table inet {network.fence.table_name(network.network_name(key))}"
    fenced = fenced_phase(
        lab.engine,
        container,
        key,
        port=host_service,
        others=[(lab.server_ip, 8000)],
        setup=recording(tmp_path, policy),
    )
    refusals = assert_fenced(fenced)
    assert table in fenced.tables and table not in _nft_tables()
    assert fenced.refused is not None
    host = {t for t in fenced.seen if t[2] == host_service and t[1][0].isdigit() and t[1] != "0.0.0.0"}
    host -= {("tcp", "127.0.0.1", host_service)}
    if not lab.engine.podman:  # Docker routes the container to every address of the host: all refused
        assert fenced.refused.attempts > 0 and host and host <= set(refusals), fenced.seen
        assert ("tcp", "1.1.1.1", 443) in refusals and fenced.refused.dns >= 1, fenced
    elif any(t[1].startswith("fe80:") for t in refusals):
        # Podman's bridge leads to the host by IPv6 link-local alone (where the host gives the bridge
        # one and the container has a route to it): refused, and counted
        assert fenced.refused.attempts > 0, fenced
        assert any(d.startswith("tcp [fe80:") for d in fenced.refused.destinations), fenced
    else:  # no route to the host at all (a link-local address tried fails in the container: ENETUNREACH)
        assert refusals == [] and fenced.refused.attempts == 0, fenced
    assert leftovers(lab, key) == ([], [])


@pytest.mark.podman
def test_rootless_podman_leaves_no_way_around_the_proxy(
    rootless: Any, rootless_examples: Workspace, host_service: int, tmp_path: Path
) -> None:
    """Rootless, no firewall can be installed, and none is needed: the internal network, in the user's
    network namespace, routes nothing but its own subnet (every address of the host, slirp4netns' 10.0.2.2
    and 10.0.2.3, the internet fail at once with ENETUNREACH inside the container), and the container has
    no NET_RAW to send frames past its routes. The allowed host (this host, reached by the proxy through
    slirp4netns) answers through the proxy; the fence saw nothing (`around_proxy` None)."""
    engine = connect(rootless.engine)
    assert engine.podman and engine.rootless
    key = f"nettest.{uuid.uuid4().hex[:8]}.1"
    container = containers.start(
        engine, TEST_IMAGE, key, {"kotlin-bench.test": "network"}, cpus=1, memory_mb=256, pids=256
    )
    try:
        capabilities = sh(container, "echo caps=$(grep CapEff /proc/self/status | cut -f2)")["caps"]
        assert not int(capabilities, 16) & (1 << 13), capabilities  # CAP_NET_RAW
        fenced = fenced_phase(
            engine, container, key, port=host_service, others=[], setup=recording(tmp_path, "block")
        )
        assert assert_fenced(fenced) == [] and fenced.refused is None
        away = {t: o for t, o in fenced.seen.items() if t[1] not in ("127.0.0.1", "0.0.0.0")}
        assert {o for o, _ in away.values()} <= {"ENETUNREACH", "EADDRNOTAVAIL"}, away
    finally:
        containers.reap(engine.client, key)
        network.reap_networks(engine, key)


NFT_LISTING = """{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
 {"table": {"family": "inet", "name": "kotlin_bench_kb0", "handle": 9}},
 {"counter": {"family": "inet", "name": "refused", "table": "kotlin_bench_kb0", "packets": 5, "bytes": 300}},
 {"counter": {"family": "inet", "name": "dns", "table": "kotlin_bench_kb0", "packets": 2, "bytes": 114}},
 {"set": {"family": "inet", "name": "seen4", "table": "kotlin_bench_kb0", "size": 64,
   "elem": [{"concat": ["192.168.0.1", "tcp", 443]}, {"concat": ["1.1.1.1", "udp", 123]}]}},
 {"set": {"family": "inet", "name": "seen6", "table": "kotlin_bench_kb0", "size": 64,
   "elem": [{"elem": {"val": {"concat": ["fe80::1", "tcp", 8080]}, "timeout": 0}}]}}]}"""


def test_the_fence_is_read_from_nfts_listing_and_written_for_both_families() -> None:
    """What `nft -j list table` says (nft 1.0.6's form, an element with attributes too), and the
    script: both address families of the network's subnets, the bridge, TCP reset and UDP unreachable."""
    from kotlin_bench.engine import fence

    refused = fence.parse_refused(NFT_LISTING)
    assert refused == fence.Refused(5, 2, ("tcp 192.168.0.1:443", "tcp [fe80::1]:8080", "udp 1.1.1.1:123"))
    script = fence.ruleset("kotlin-bench-int-k", "kbabc", ["10.89.0.0/24", "fd00:1::/64"])
    table = fence.table_name("kotlin-bench-int-k")
    assert script.startswith(f"table inet {table} {{}}\ndelete table inet {table}\n")  # replaces a leftover
    for line in (
        'iifname "kbabc" goto fence comment "kotlin-bench kotlin-bench-int-k"',
        "ip saddr { 10.89.0.0/24 } goto fence",
        "ip6 saddr { fd00:1::/64 } goto fence",
        'iifname "kbabc" oifname != "kbabc" goto fence',
        "meta l4proto tcp reject with tcp reset",
        "meta l4proto udp reject with icmpx port-unreachable",
    ):
        assert line in script, line
    assert fence.removal("kotlin-bench-int-k") == f"table inet {table} {{}}\ndelete table inet {table}\n"


def test_the_fence_fails_closed_where_it_cannot_be_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No nftables, no root (but on Docker, whose helper container does it), rootless Docker, a rootless
    Podman network with a gateway, a network without subnet: a one-line refusal, never an unfenced phase.
    Rootless Podman's gateway-less network is fenced by construction, and nothing is seen."""
    from kotlin_bench.engine import fence

    def engine(podman: bool, rootless: bool) -> Engine:
        return Engine(None, EngineSettings(), podman, rootless, (), "4.3")  # type: ignore[arg-type]

    attrs = {"IPAM": {"Config": [{"Subnet": "10.89.0.0/24", "Gateway": "<nil>"}]}}
    with_gateway = {"IPAM": {"Config": [{"Subnet": "10.89.0.0/24", "Gateway": "10.89.0.1"}]}}
    wall = fence.install(engine(True, True), "n", attrs)
    assert wall.kind is fence.Kind.CONSTRUCTION and wall.close() is None
    with pytest.raises(fence.FenceError, match="gave the allowlist network n a gateway"):
        fence.install(engine(True, True), "n", with_gateway)
    with pytest.raises(fence.FenceError, match="RootlessKit"):
        fence.install(engine(False, True), "n", attrs)
    with pytest.raises(fence.FenceError, match="no subnet"):
        fence.install(engine(False, False), "n", {"IPAM": {"Config": []}})
    monkeypatch.setattr(fence.os, "geteuid", lambda: 1000)
    with pytest.raises(fence.FenceError, match="needs root"):
        fence.install(engine(True, False), "n", attrs)
    with pytest.raises(fence.FenceError, match="needs root"):
        fence.install(engine(False, False), "n", attrs)  # Docker, but no helper image named
    assert fence.nft_for(engine(False, False), "helper:tag").image == "helper:tag"
    monkeypatch.setattr(fence.shutil, "which", lambda *a, **k: None)
    with pytest.raises(fence.FenceError, match="needs nftables on this host"):
        fence.install(engine(False, False), "n", attrs)


@DOCKER_ONLY
def test_a_network_that_cannot_be_fenced_is_not_left_and_a_user_fences_through_a_helper(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fence that fails takes its new network with it. An ordinary user of Docker (the docker group)
    fences through a helper container that runs the host's nft in the host's network namespace: the same
    table, read and removed the same way."""
    from kotlin_bench.engine import fence

    name = f"kotlin-bench-int-nettest-{uuid.uuid4().hex[:8]}"
    labels = {"kotlin-bench.test": "network"}

    def refuse(*args: Any) -> Any:
        raise fence.FenceError("no firewall here")

    with monkeypatch.context() as patched:
        patched.setattr(fence, "nft_for", refuse)
        with pytest.raises(fence.FenceError, match="no firewall here"):
            network.fenced_network(lab.engine, name, labels)
    assert lab.client.networks.list(names=[name]) == []
    helper = network.proxy_image_tag()
    monkeypatch.setattr(fence.os, "geteuid", lambda: 1000)
    made, wall = network.fenced_network(lab.engine, name, labels, helper=helper)
    try:
        assert wall.nft is not None and wall.nft.image == helper
        assert f"table inet {fence.table_name(name)}" in _nft_tables()
        assert wall.read() == fence.Refused(0, 0, ())
    finally:
        refused = network.close_fenced(lab.engine, made, wall)
    assert refused == fence.Refused(0, 0, ())
    assert f"table inet {fence.table_name(name)}" not in _nft_tables()
    assert lab.client.networks.list(names=[name]) == []
    helpers = {"label": [f"{names.LABEL_ROLE}={fence.HELPER_ROLE}"]}
    assert lab.client.containers.list(all=True, filters=helpers) == []
