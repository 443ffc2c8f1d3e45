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
from kotlin_bench.engine import containers, jvmproxy, network
from kotlin_bench.engine.engine import Engine, EngineSettings, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import DOCKER_ONLY

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
    rules = [line for line in network.filter_rules(entries).splitlines() if not line.startswith("#")]
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
        network.normalize_host(entry)


def test_normalization_and_filter_file() -> None:
    assert network.normalize_host(" Repo1.Maven.ORG. ") == "repo1.maven.org"
    rules = network.filter_rules(["repo1.maven.org", "REPO1.maven.org", "*.gradle.org"])
    lines = [line for line in rules.splitlines() if not line.startswith("#")]
    assert lines == [r"^repo1\.maven\.org$", r"^([a-z0-9_-]+\.)+gradle\.org$"]
    assert [line for line in network.filter_rules([]).splitlines() if not line.startswith("#")] == []
    with pytest.raises(TypeError):
        network.filter_rules("repo1.maven.org")


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
    container = containers.start(lab.engine, TEST_IMAGE, key, {"kotlin-bench.test": "network"}, 1, 256, 256)
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
    container = containers.start(lab.engine, example_image, key, labels, 2, 2048, 4096)
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
