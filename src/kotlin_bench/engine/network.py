"""Per-phase network policy of a run's container: `public`, `no-network`, or `allowlist` behind an egress proxy.

The run's container starts on the default bridge; before each phase `enter_phase` switches the RUNNING
container to the phase's `network_mode` (task.toml `[agent]` / `[verifier]`):

- `public`: attached to the egress network only (`bridge` unless told otherwise);
- `no-network`: detached from every network, so only `lo` is left;
- `allowlist`: detached from everything and attached to a per-run INTERNAL network
  `kotlin-bench-int-<run key>` (no route out), on which an egress proxy container (image
  `kotlin-bench/egress-proxy:<tag>`, tinyproxy from Debian, recipe in `src/kotlin_bench/engine/proxy/`) answers under the
  alias `egress-proxy`. The proxy is also attached to the egress network (with config `extra_hosts:` in its
  /etc/hosts, `Engine.extra_hosts`, so that it reaches the stand-ins on this host that the task container,
  without them, cannot name); it forwards plain HTTP requests
  and CONNECT tunnels (ports `connect_ports`, 443 by default) to allowed hosts and answers 403 to the rest.
  The phase's processes get `http_proxy`/`https_proxy` (both cases) and `no_proxy` in `PhaseNetwork.env`,
  to be passed to the phase's exec; JVMs, which ignore those variables, are pointed at the proxy by the
  `net.properties` of every JDK in the container (`kotlin_bench.engine.jvmproxy`), restored when the
  phase ends, so that no JVM prints a `Picked up JAVA_TOOL_OPTIONS` banner.

`allowed_hosts` entries (normalized like Harbor: trimmed, lower-cased, a trailing dot dropped):
- `repo1.maven.org`: that host exactly;
- `*.gradle.org`: any host strictly below `gradle.org` (`services.gradle.org`, `a.b.gradle.org`) but NOT the
  bare `gradle.org` (list both to allow both). This is Harbor's own reading of `*.` (its docker egress
  sidecar matches `*.example.com` as a glob, which needs the `.example.com` suffix);
- an IPv4 address: requests that name that address literally. CIDR ranges and IPv6 literals are refused
  (`ValueError`): a hostname filter cannot enforce them.
Hosts are matched by the name in the request, case-insensitively; the proxy resolves it itself. An empty
list admits nothing.

Name resolution: inside the internal network the container resolves only Docker's names of that network,
i.e. the proxy (`egress-proxy`); other names fail (Docker's embedded DNS forwards them from the container's
namespace, which has no way out). Entering `allowlist` pins /etc/resolv.conf to the embedded resolver and
leaving it restores the file, so a later `public` phase on the default bridge resolves names as the
container did at start (on a user-defined egress network, `public` points it at the embedded resolver).
On Podman the internal network has no DNS server at all (`kotlin_bench.engine.podman`): the proxy's
address is pinned in /etc/hosts instead, and leaving takes that line out again; resolv.conf is Podman's.

With `recording` (an agent phase under config `egress: {record: urls}`, `kotlin_bench.engine.egress`) the
proxy is the recording one instead: mitmproxy with the same allowlist, which terminates HTTPS with the
workspace's CA (trusted by the container for the phase, undone on leaving), records every request and
flags or refuses retrieval; its record is copied out when the phase ends. `PhaseNetwork.harness_paths`
names the container's files a phase changed and restored (not the agent's changes).

Leaving an `allowlist` phase (the `PhaseNetwork` context exits) detaches the container and removes the
proxy, the fence and the per-run network, whatever happened. The proxy and the network carry the labels
`kotlin-bench.run=<run key>`, `kotlin-bench.workdir=<workflow directory>` and `kotlin-bench.role`:
`containers.reap` and `reap_networks` remove what a killed run left (its fence too), and `kotlin-bench
clean` tells a workspace's leftovers apart exactly.

The per-run network is fenced before anything joins it (`fenced_network`, `kotlin_bench.engine.fence`):
an internal network alone still leads to the host (Docker routes to the host's every address through the
bridge's gateway; Podman's bridge has an IPv6 link-local address), so the host's firewall refuses what
the network's members send anywhere but to each other, at once (TCP reset, UDP port unreachable), and
counts it: `PhaseNetwork.around_proxy`, the work record's `egress.around_proxy` and `flags.around_proxy`.
Rootless Podman needs no rule (nothing routes out of its internal network) and sees nothing; where the
fence cannot be installed the phase does not start. The proxy routes nothing (`PROXY_SYSCTLS`).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import re
import string
import tarfile
import tempfile
import time
import types
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import cgroups, containers, egress, fence, jvmproxy, podman
from kotlin_bench.engine.allowlist import filter_rules
from kotlin_bench.engine.images import ImageError, image_id, stream_build, workdir_label

if TYPE_CHECKING:
    from docker.models.containers import Container
    from docker.models.networks import Network

    from kotlin_bench.engine.engine import Engine

MODES = ("public", "no-network", "allowlist")
PROXY_DIR = names.PROXY_DIR
PROXY_REPOSITORY = f"{names.IMAGE_NAMESPACE}/egress-proxy"
PROXY_ALIAS = "egress-proxy"
PROXY_PORT = 3128
PROXY_CONF_DIR = "/etc/kotlin-bench-proxy"
CONNECT_PORTS: tuple[int, ...] = (443,)
NETWORK_PREFIX = "kotlin-bench-int-"
PROXY_ROLE = "egress-proxy"
NETWORK_ROLE = "internal-network"
PROXY_BUILD_TIMEOUT = 900.0
PROXY_READY_TIMEOUT = 20.0
PROXY_PIDS = 512
PROXY_MEMORY = "256m"
RECORDING_PROXY_MEMORY = "512m"  # mitmproxy's Python; responses are streamed, never held whole
# The proxy routes nothing: a container that addresses a frame to it cannot use it as a gateway.
PROXY_SYSCTLS = {"net.ipv4.ip_forward": "0"}
EMBEDDED_DNS = "nameserver 127.0.0.11\noptions ndots:0\n"
RESOLV_CONF = "/etc/resolv.conf"
HOSTS = "/etc/hosts"
NO_PROXY = "localhost,127.0.0.1"

_UNSAFE_NAME_RE = re.compile(r"[^A-Za-z0-9_.-]")


class NetworkError(RuntimeError):
    """A phase's network could not be set up or torn down; the message says which step and why."""


# --- a phase's environment -----------------------------------------------------------------------


def proxy_env() -> dict[str, str]:
    """What an allowlist phase adds to its processes' environment: the proxy variables of non-JVM clients
    (curl, git, pip, npm). JVMs get the proxy from their JDK's net.properties (`jvmproxy`), not from
    here: nothing that makes a JVM print a banner."""
    url = f"http://{PROXY_ALIAS}:{PROXY_PORT}"
    return {
        "http_proxy": url,
        "https_proxy": url,
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "no_proxy": NO_PROXY,
        "NO_PROXY": NO_PROXY,
    }


def phase_env(mode: str, allowed_hosts: Sequence[str], recorded: bool = True) -> dict[str, str]:
    """What entering a phase in `mode` adds to its processes' environment (`kotlin-bench fidelity` compares
    it with the published runner's: nothing); `recorded`: with the recording proxy (`egress: {record:
    urls}`, the default), whose CA the clients with bundles of their own are pointed at."""
    if effective_mode(mode, allowed_hosts) != "allowlist":
        return {}
    return proxy_env() | (egress.ca_env() if recorded else {})


# --- names and leftovers --------------------------------------------------------------------------


def network_name(run_key: str) -> str:
    """`kotlin-bench-int-<run key>`, with characters Docker refuses replaced and long keys shortened."""
    safe = _UNSAFE_NAME_RE.sub("-", run_key)
    if len(safe) > 100:
        safe = f"{safe[:80]}-{hashlib.sha256(run_key.encode()).hexdigest()[:12]}"
    return NETWORK_PREFIX + safe


def reap_networks(engine: Engine, run_key: str) -> int:
    """Remove what an interrupted run's allowlist phase left: its proxy containers and per-run network.

    Returns the number of networks removed. The task container itself is left alone (see
    `kotlin_bench.engine.containers.reap`, which removes every container of the run, proxies included).
    """
    import docker

    client = engine.client
    proxies = containers.listed(
        client, {"label": [f"{names.LABEL_RUN}={run_key}", f"{names.LABEL_ROLE}={PROXY_ROLE}"]}
    )
    for proxy in proxies:
        try:
            proxy.remove(force=True)
        except docker.errors.APIError as exc:
            if not containers.gone(exc):
                raise
    name = network_name(run_key)
    removed = 0
    # `names` matches substrings; only this run's network, by exact name, is ever removed.
    for network in client.networks.list(names=[name]):
        if network.name != name:
            continue
        with contextlib.suppress(docker.errors.NotFound):
            _remove_network(engine, network)
            removed += 1
    if removed:
        unfence(engine, name)  # a fence is removed before its network: none is left without one
    elif engine.podman:
        podman.drop_forward_rule(engine, name)
    return removed


def unfence(engine: Engine, name: str) -> None:
    """Remove what the host holds for one of our networks besides the network itself: its fence
    (`kotlin_bench.engine.fence`) and, on rootful Podman, its forwarding rule (none is fine)."""
    tags = () if os.geteuid() == 0 else (proxy_image_tag(), egress.image_tag())
    fence.drop(engine, name, next((tag for tag in tags if image_id(engine.client, tag)), None))
    if engine.podman:
        podman.drop_forward_rule(engine, name)


def _remove_network(engine: Engine, network: Network) -> None:
    """Remove a network of ours, after its endpoints (Podman removes a network with members and leaks
    its bridge)."""
    import docker

    network.reload()
    for endpoint in network.attrs.get("Containers") or {}:
        with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
            network.disconnect(endpoint, force=True)
    if engine.podman:
        podman.drop_network(engine, network.name)
    else:
        network.remove()


# --- the proxy image ------------------------------------------------------------------------------


def proxy_image_tag() -> str:
    """`kotlin-bench/egress-proxy:tp-<hash of the Dockerfile>`: a changed recipe makes a new image."""
    digest = hashlib.sha256((PROXY_DIR / "Dockerfile").read_bytes()).hexdigest()[:12]
    return f"{PROXY_REPOSITORY}:tp-{digest}"


def ensure_proxy_image(engine: Engine, recorded: bool = False) -> str:
    """Build the proxy image when absent (once, even with concurrent runs); returns its tag. `recorded`:
    the recording proxy's (mitmproxy, `kotlin_bench.engine.egress`), else tinyproxy's."""
    tag = egress.image_tag() if recorded else proxy_image_tag()
    directory = egress.MITM_DIR if recorded else PROXY_DIR
    if image_id(engine.client, tag):
        return tag
    # one lock per user: another user's lock file in /tmp cannot be opened for writing (rootless Podman)
    lock = Path(tempfile.gettempdir()) / f"kotlin-bench-egress-proxy-{os.getuid()}.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if image_id(engine.client, tag):
            return tag
        log = io.StringIO()
        try:
            stream_build(engine, directory, "Dockerfile", tag, timeout=PROXY_BUILD_TIMEOUT, log=log)
        except ImageError as exc:
            raise NetworkError(f"{exc}; build log tail:\n{log.getvalue()[-2000:]}") from None
    return tag


# --- phases ---------------------------------------------------------------------------------------


class PhaseNetwork:
    """One phase's network; a context manager whose exit tears down what the phase set up."""

    def __init__(
        self, engine: Engine, container: Container, mode: str, env: dict[str, str] | None = None
    ) -> None:
        self.engine = engine
        self.container = container
        self.mode = mode
        self.env: dict[str, str] = env or {}
        self.network: Network | None = None
        self.fence: fence.Fence | None = None  # the network's fence (`kotlin_bench.engine.fence`)
        self.proxy: Container | None = None
        self.log_path: Path | None = None
        self.egress: egress.EgressSetup | None = None  # a recorded phase (`egress: {record: urls}`)
        self._trust: egress.Trust | None = None  # what the container's trust in the CA changed
        self._resolv_conf: bytes | None = None  # Docker: resolv.conf before the phase pinned it
        self._hosts_pinned = False  # Podman: /etc/hosts names the proxy
        self._jdks: list[jvmproxy.Saved] = []  # the JDKs' net.properties before the phase
        self._closed = False

    def __enter__(self) -> PhaseNetwork:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        try:
            self.close()
        except NetworkError:
            if exc_type is None:
                raise
            # An error is already on its way out; a leftover is reaped by reap_networks/containers.reap.

    @property
    def harness_paths(self) -> tuple[str, ...]:
        """The task container's files the phase changed and restores (not the agent's changes: a
        restored file still shows in the engine's change list)."""
        jdks = [saved.path for saved in self._jdks]
        return (*jdks, *(self._trust.paths if self._trust else ()))

    @property
    def around_proxy(self) -> fence.Refused | None:
        """What the fence refused during the phase, once it is closed (None: nothing could be seen)."""
        return self.fence.refused if self.fence is not None else None

    def proxy_log(self) -> str:
        """What the proxy logged so far (requests and refusals); empty when there is no proxy."""
        import docker

        if self.proxy is None:
            return ""
        try:
            return self.proxy.logs(stdout=True, stderr=True).decode("utf-8", "replace")
        except docker.errors.NotFound:
            return ""

    def close(self) -> None:
        """Detach the container from the per-run network, remove the proxy and the network (idempotent)."""
        import docker

        if self._closed:
            return
        self._closed = True
        problems: list[str] = []

        def step(what: str, action: Callable[[], object]) -> None:
            try:
                action()
            except docker.errors.NotFound:
                pass
            except Exception as exc:
                problems.append(f"{what}: {exc}")

        network, proxy = self.network, self.proxy
        if network is not None:
            step("detaching the task container", lambda: _detach(self.container, network))
        with ThreadPoolExecutor(max_workers=1) as pool:
            # the proxy's record and log saved and the proxy removed while the container's files are restored
            if proxy is not None:
                pool.submit(self._remove_proxy, proxy, step)
            self._restore(step)
        wall = self.fence
        if network is not None and wall is not None:
            step("removing the fence and the network", lambda: close_fenced(self.engine, network, wall))
        elif network is not None:
            step("removing the network", lambda: _remove_network(self.engine, network))
        if problems:
            raise NetworkError("tearing down the allowlist network failed: " + "; ".join(problems))

    def _restore(self, step: Callable[[str, Callable[[], object]], None]) -> None:
        """Undo what the phase changed in the task container's files: the proxy's pin, the JDKs'
        net.properties, the trust stores (a container the watchdog killed keeps its files: only a
        running one can be written)."""
        pinned = self.network is not None and (self._resolv_conf is not None or self._hosts_pinned)
        trust = self._trust
        if not (pinned or self._jdks or trust is not None) or not _running(self.container):
            return
        if pinned:
            step("unpinning the proxy", self._unpin)
        if self._jdks:
            step("restoring the JDKs' net.properties", lambda: jvmproxy.restore(self.container, self._jdks))
        if trust is not None:
            step("restoring the container's trust stores", lambda: egress.restore(self.container, trust))

    def _remove_proxy(self, proxy: Container, step: Callable[[str, Callable[[], object]], None]) -> None:
        """Save the proxy's record (a recorded phase) and log, then remove it."""
        setup = self.egress
        if setup is not None:
            step("saving the egress record", lambda: egress.copy_record(proxy, setup.record_path))
        if self.log_path is not None:
            step("saving the proxy log", self._save_log)
        step("removing the proxy", lambda: proxy.remove(force=True))

    def _unpin(self) -> None:
        if self._resolv_conf is not None:
            _write_file(self.container, RESOLV_CONF, self._resolv_conf)
        if self._hosts_pinned:
            _write_file(self.container, HOSTS, _without_proxy(_read_file(self.container, HOSTS) or b""))

    def _save_log(self) -> None:
        assert self.log_path is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text(self.proxy_log(), encoding="utf-8")


def effective_mode(mode: str, allowed_hosts: Sequence[str]) -> str:
    """The mode a phase is entered in: an empty allowlist admits nothing, so it has no network (no proxy
    is needed to say so)."""
    return "no-network" if mode == "allowlist" and not allowed_hosts else mode


def enter_phase(
    engine: Engine,
    container: Container,
    mode: str,
    allowed_hosts: Sequence[str],
    run_key: str,
    *,
    egress_network: str | None = None,
    connect_ports: Sequence[int] = CONNECT_PORTS,
    log_path: Path | None = None,
    recording: egress.EgressSetup | None = None,
) -> PhaseNetwork:
    """Switch the running `container` to a phase's network mode; use the result as a context manager.

    `egress_network` is the network that leads out (default: the engine's default network): `public`
    phases join it, and so does the proxy of an `allowlist` phase. `connect_ports` are the ports CONNECT
    tunnels may reach. `log_path`, when given, receives the proxy's log (its requests and refusals) when
    the phase ends. `recording`, when given with `record: urls`, makes the proxy of an `allowlist` phase
    the recording one (`kotlin_bench.engine.egress`), its record copied to `recording.record_path`.
    """
    if mode not in MODES:
        raise ValueError(f"network_mode {mode!r}: expected one of {MODES}")
    if mode != "allowlist" and allowed_hosts:
        raise ValueError("allowed_hosts is only valid with network_mode = 'allowlist'")
    mode = effective_mode(mode, allowed_hosts)
    rules = filter_rules(allowed_hosts) if mode == "allowlist" else ""
    ports = sorted({int(p) for p in connect_ports})
    if not ports or not all(0 < p < 65536 for p in ports):
        raise ValueError(f"connect_ports {list(connect_ports)!r}: expected ports between 1 and 65535")
    egress_network = egress_network or engine.default_network
    try:
        if mode == "public":
            _attach_only(engine, container, egress_network)
        else:
            _detach_all(container)
        if mode != "allowlist":
            return PhaseNetwork(engine, container, mode)
    except Exception as exc:
        raise NetworkError(f"switching the container to {mode}: {exc}") from exc
    phase = PhaseNetwork(engine, container, mode)
    phase.log_path = log_path
    if recording is not None and recording.policy.record is egress.Record.URLS:
        phase.egress = recording
    try:
        _enter_allowlist(phase, rules, run_key, egress_network, ports)
    except BaseException as exc:
        with contextlib.suppress(NetworkError):
            phase.close()
        if isinstance(exc, (NetworkError, KeyboardInterrupt, SystemExit)):
            raise
        raise NetworkError(f"setting up the allowlist network of {run_key}: {exc}") from exc
    return phase


def _enter_allowlist(
    phase: PhaseNetwork, rules: str, run_key: str, egress_network: str, ports: list[int]
) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        # The JDKs' net.properties pointed at the proxy and the container's trust in the recording proxy's
        # CA installed (a `find /` and a few execs each) need only the container, and none of the phase's
        # processes starts before this returns: they overlap the network, its fence and the proxy's start.
        jdks = pool.submit(jvmproxy.configure, phase.container, PROXY_ALIAS, PROXY_PORT)
        trust = pool.submit(egress.install, phase.container, phase.egress.ca_dir) if phase.egress else None
        try:
            _start_proxy(phase, rules, run_key, egress_network, ports=ports, trust=trust)
        except BaseException:
            # what they changed, `close` restores (an install that failed restored its own changes)
            with contextlib.suppress(Exception):
                phase._jdks = jdks.result()
            with contextlib.suppress(Exception):
                phase._trust = trust.result() if trust is not None else None
            raise
        phase._jdks = jdks.result()
    if phase.egress is not None:  # mitmproxy's start-up (a second of imports) overlaps everything above
        _wait_listening(phase.proxy)
    phase.env = proxy_env() | (egress.ca_env() if phase.egress is not None else {})


def _start_proxy(
    phase: PhaseNetwork,
    rules: str,
    run_key: str,
    egress_network: str,
    *,
    ports: list[int],
    trust: Future[egress.Trust] | None = None,
) -> None:
    """The per-run network and its proxy, the task container joined to it; `trust`: the container's trust
    in the CA, being installed meanwhile. The recording proxy starts first (it listens on every interface)
    so that its start-up (a second of imports) overlaps the network, its fence and the joins; tinyproxy's
    configuration needs the network's subnets."""
    engine = phase.engine
    recorded = phase.egress is not None
    image = ensure_proxy_image(engine, recorded)
    container = phase.container
    labels = {names.LABEL_RUN: run_key, **workdir_label()}
    reap_networks(engine, run_key)
    if phase.egress is not None:
        # the upstream trust (the container's bundle) follows: mitmproxy reads it at its first connection
        files = egress.proxy_files(phase.egress, _rules(rules), ports, PROXY_PORT, b"")
        _create_proxy(phase, image, labels, egress_network, files).start()
    phase.network, phase.fence = fenced_network(
        engine, network_name(run_key), {**labels, names.LABEL_ROLE: NETWORK_ROLE}, helper=image
    )
    if phase.proxy is None:
        subnets, _ = fence.addresses_of(phase.network.attrs)
        _create_proxy(phase, image, labels, egress_network, _proxy_files(rules, subnets, ports))
    assert phase.proxy is not None
    phase.network.connect(phase.proxy, aliases=[PROXY_ALIAS])
    if trust is not None:
        phase._trust = trust.result()
        egress.put_upstream(phase.proxy, phase._trust.upstream)
    else:
        phase.proxy.start()
        _wait_listening(phase.proxy)
    if not engine.podman:
        phase._resolv_conf = _read_file(container, RESOLV_CONF)
    phase.network.connect(container)
    _pin_proxy(phase)


def _create_proxy(
    phase: PhaseNetwork, image: str, labels: dict[str, str], egress_network: str, files: bytes
) -> Container:
    """The phase's proxy (`phase.proxy`), created on the egress network with its files, not started."""
    recorded = phase.egress is not None
    memory = RECORDING_PROXY_MEMORY if recorded else PROXY_MEMORY
    phase.proxy = phase.engine.client.containers.create(
        image,
        detach=True,
        labels={**labels, names.LABEL_ROLE: PROXY_ROLE},
        network=egress_network,
        cap_drop=["ALL"],
        cap_add=[] if recorded else ["SETUID", "SETGID"],
        security_opt=["no-new-privileges"],
        mem_limit=memory,
        memswap_limit=memory,
        pids_limit=PROXY_PIDS,
        sysctls=PROXY_SYSCTLS,
        extra_hosts=phase.engine.extra_hosts()
        or None,  # config extra_hosts: the stand-ins the phase may reach
    )
    phase.proxy.put_archive("/", files)
    return phase.proxy


def _rules(filter_text: str) -> list[str]:
    """The anchored host rules of a filter file (`filter_rules`), one per line."""
    return [line for line in filter_text.splitlines() if line and not line.startswith("#")]


def fenced_network(
    engine: Engine, name: str, labels: dict[str, str], *, helper: str | None = None
) -> tuple[Network, fence.Fence]:
    """A new internal network for an allowlist phase, fenced before anything joins it: its members reach
    each other and nothing else (`kotlin_bench.engine.fence`; `helper`: an image of ours for the fence's
    helper container, used when this process is not root). Leaving: `close_fenced`. `fence.FenceError`
    (one line) where the network cannot be fenced: the phase does not start unfenced."""
    network = internal_network(engine, name, labels)
    try:
        network.reload()
        return network, fence.install(engine, name, network.attrs, helper=helper)
    except BaseException:
        with contextlib.suppress(Exception):
            _remove_network(engine, network)
        raise


def close_fenced(engine: Engine, network: Network, wall: fence.Fence) -> fence.Refused | None:
    """Read and remove a `fenced_network`'s fence, then remove the network (nothing may be attached);
    returns what the fence refused (None: nothing could be seen)."""
    refused = wall.close()
    _remove_network(engine, network)
    return refused


def internal_network(engine: Engine, name: str, labels: dict[str, str], dns: bool = False) -> Network:
    """A new internal network (no route out) whose members reach each other, on a bridge of ours
    (`podman.bridge_name`). On Docker its embedded DNS always serves the network's names; on Podman only
    with `dns` (see `kotlin_bench.engine.podman`). Not fenced: see `fenced_network`."""
    if engine.podman:
        return podman.internal_network(engine, name, labels, dns=dns)
    options = {"com.docker.network.bridge.name": podman.bridge_name(name)}
    return engine.client.networks.create(
        name, driver="bridge", internal=True, check_duplicate=True, labels=labels, options=options
    )


def _pin_proxy(phase: PhaseNetwork) -> None:
    """Make `egress-proxy` name the proxy in the task container, whatever it did to its files before.
    Docker points resolv.conf at its embedded DNS on joining a user-defined network, unless the file was
    edited (as leaving an earlier allowlist phase does): it is pinned there (leaving restores the file).
    Podman's internal network has no DNS: the proxy's address goes into /etc/hosts (leaving removes it;
    Podman itself keeps the container's own entries of that file)."""
    container = phase.container
    if not phase.engine.podman:
        _write_file(container, RESOLV_CONF, EMBEDDED_DNS.encode())
        return
    assert phase.proxy is not None and phase.network is not None
    phase.proxy.reload()
    address = phase.proxy.attrs["NetworkSettings"]["Networks"][phase.network.name]["IPAddress"]
    hosts = _read_file(container, HOSTS)
    if hosts is None:
        raise NetworkError(f"cannot read {HOSTS} of the task container")
    phase._hosts_pinned = True
    _write_file(container, HOSTS, _without_proxy(hosts) + f"{address}\t{PROXY_ALIAS}\n".encode())


def _without_proxy(hosts: bytes) -> bytes:
    lines = hosts.decode("utf-8", "replace").splitlines()
    return "".join(f"{line}\n" for line in lines if PROXY_ALIAS not in line.split()[1:]).encode()


def _attached(container: Container) -> dict[str, str]:
    """The container's networks: name -> id."""
    container.reload()
    networks = container.attrs["NetworkSettings"]["Networks"] or {}
    return {name: settings.get("NetworkID") or name for name, settings in networks.items()}


def _detach_all(container: Container, keep: str | None = None) -> None:
    import docker

    for name, network_id in _attached(container).items():
        if name == keep:
            continue
        with contextlib.suppress(docker.errors.NotFound):
            container.client.networks.get(network_id).disconnect(container, force=True)


def _running(container: Container) -> bool:
    import docker

    try:
        container.reload()
    except docker.errors.NotFound:
        return False
    return container.status == "running"


def _detach(container: Container, network: Network) -> None:
    # by name: Podman reports a network's name where Docker reports its id
    if network.name in _attached(container):
        network.disconnect(container, force=True)


def _attach_only(engine: Engine, container: Container, network: str) -> None:
    """Leave every network but `network`, and join it unless already there (no needless new interface)."""
    _detach_all(container, keep=network)
    if network in _attached(container):
        return
    target = container.client.networks.get(network)
    target.connect(container)
    if engine.podman:
        return  # Podman writes resolv.conf itself for the networks a container joins
    if (target.attrs.get("Options") or {}).get("com.docker.network.bridge.default_bridge") != "true":
        # Docker rewrites resolv.conf only on the first user-defined network a container joins; after an
        # allowlist phase restored the file, point it at the embedded DNS again (it serves this network).
        _write_file(container, RESOLV_CONF, EMBEDDED_DNS.encode())


def _proxy_files(rules: str, subnets: list[str], ports: list[int]) -> bytes:
    template = string.Template((PROXY_DIR / "tinyproxy.conf.in").read_text(encoding="utf-8"))
    conf = template.substitute(
        port=PROXY_PORT,
        client_subnet="\nAllow ".join(subnets),
        connect_ports="\n".join(f"ConnectPort {p}" for p in ports),
    )
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        directory = tarfile.TarInfo(PROXY_CONF_DIR.strip("/"))
        directory.type, directory.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(directory)
        for name, text in (("tinyproxy.conf", conf), ("filter", rules)):
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{PROXY_CONF_DIR.strip('/')}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _wait_listening(proxy: Container) -> None:
    """Wait until tinyproxy listens (its port in /proc/net/tcp*); fail with its log if it exits."""
    port = f":{PROXY_PORT:04X} "
    deadline = time.monotonic() + PROXY_READY_TIMEOUT
    while True:
        proxy.reload()
        if proxy.status != "running":
            log = proxy.logs().decode("utf-8", "replace")[-2000:]
            raise NetworkError(f"the egress proxy stopped ({proxy.status}): {log}")
        # read from the host where it can be (no process started in the proxy while it starts up)
        table = cgroups.sockets(int(proxy.attrs["State"].get("Pid") or 0), proxy.id)
        if table is None:
            table = proxy.exec_run(["cat", "/proc/net/tcp", "/proc/net/tcp6"]).output.decode(
                "ascii", "replace"
            )
        listening = [line for line in table.splitlines() if port in line and line.split()[3] == "0A"]
        if listening:
            return
        if time.monotonic() > deadline:
            raise NetworkError(
                f"the egress proxy did not listen on port {PROXY_PORT} within {PROXY_READY_TIMEOUT:.0f}s"
            )
        time.sleep(0.1)


def _read_file(container: Container, path: str) -> bytes | None:
    result = containers.root_exec(container, ["cat", path])
    return result.output if result.exit_code == 0 else None


def _write_file(container: Container, path: str, content: bytes | None) -> None:
    """Write a file the engine manages (resolv.conf, hosts) in place: it is a mount, not to be replaced."""
    if content is None:
        return
    script = 'printf "%s" "$1" > "$2"'
    text = content.decode("utf-8", "replace")
    result = containers.root_exec(container, ["sh", "-c", script, "sh", text, path])
    if result.exit_code != 0:
        raise NetworkError(f"writing {path} failed: {result.output.decode('utf-8', 'replace')[-300:]}")
