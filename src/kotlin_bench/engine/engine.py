"""The container engine: the one connection every part of the package asks for, and what differs between
engines.

Two engines are supported, both through the Docker API and its Python SDK (config `engine:`):

- `docker` (the default): the Docker engine at `DOCKER_HOST` or its default socket;
- `podman`: Podman's Docker-compatible API service (`podman system service`), rootful at
  `/run/podman/podman.sock` or rootless at `$XDG_RUNTIME_DIR/podman/podman.sock` (`CONTAINER_HOST` or
  `engine.socket` name another). Every operation of the harness has a working form in that API; the few
  places where Podman answers differently are decided here (`Engine`) and in `engine/podman.py` (the
  calls only Podman's own API has). docs/design.md "Podman" says why the API service and not the CLI.

`connect(settings)` returns an `Engine`: the SDK client plus what the server says about itself (Podman
or Docker, rootless or not, whether the kernel enforces memory, CPU and process limits for its
containers), asked once per process and address: later calls only ping it (Podman answers `/version`
and `/info` in about a second, and a job connects several times). Nothing else reads `DOCKER_HOST` or
opens a socket. Scripts read `engine:` from the config
(`kotlin_bench.dag.settings.Settings`), not from a rule parameter: which engine runs the containers
changes no result, so changing it reruns nothing.
"""

from __future__ import annotations

import ipaddress
import json
import math
import os
import re
import socket
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kotlin_bench.core.record_parts import EngineInfo

if TYPE_CHECKING:
    import docker

DOCKER_SETUP = "scripts/setup_docker.sh"
PODMAN_SETUP = "scripts/setup_podman.sh"
ROOTFUL_PODMAN_SOCKET = "/run/podman/podman.sock"
LIBPOD_API = "/v4.0.0/libpod"  # Podman's own API (any v4 prefix is served by every Podman 4)
# The Docker API version spoken to Podman, which serves 1.41 from Podman 4 on: named, not negotiated
# (negotiating asks /version, which Podman answers in about a third of a second, and we ask it anyway).
PODMAN_DOCKER_API = "1.41"
# What a container may start (threads count: a JVM's are processes to the kernel). A Gradle build with its
# daemon (~150 threads), a Kotlin daemon (~100) and a test worker per CPU (~50 each, plus the tests' own
# pools) stays under 1,000; the default leaves four times that, and more per CPU on big tasks.
PIDS_PER_CPU = 1024
MIN_PIDS = 4096
LIMITED = ("memory", "cpu", "pids")
# An `extra_hosts` value standing for this host as containers see it (Docker's own word; on Podman the
# engine translates it, `Engine.extra_hosts`).
HOST_GATEWAY = "host-gateway"


class EngineError(RuntimeError):
    """The container engine cannot be reached or cannot do what a run needs; the message says what to do."""


class Kind(StrEnum):
    DOCKER = "docker"
    PODMAN = "podman"


@dataclass(frozen=True)
class EngineSettings:
    """Config `engine:` (each key optional): which engine, where its API listens, the process limit of
    every container (default: sized from the task's CPUs, `pids_for`), and whether to refuse an engine
    that cannot enforce memory, CPU and process limits (rootless Podman on a cgroup v1 host)."""

    kind: Kind = Kind.DOCKER
    socket: str | None = None
    pids_limit: int | None = None
    require_limits: bool = False
    # config `extra_hosts:` (top level), as sorted (name, address or host-gateway) pairs
    extra_hosts: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of_config(cls, config: dict[str, Any] | None) -> EngineSettings:
        """The settings a whole config gives: its `engine:` section and its top-level `extra_hosts:`."""
        config = config or {}
        return cls.from_config(config.get("engine"), config.get("extra_hosts"))

    @classmethod
    def from_config(
        cls, section: dict[str, Any] | None, extra_hosts: dict[str, str] | None = None
    ) -> EngineSettings:
        values = dict(section or {})
        unknown = sorted(set(values) - set(cls.__dataclass_fields__))
        if unknown:
            raise EngineError(f"config engine: unknown keys {unknown}")
        try:
            kind = Kind(values.get("kind", Kind.DOCKER))
        except ValueError:
            raise EngineError(
                f"config engine.kind: expected docker or podman, not {values['kind']!r}"
            ) from None
        pids = values.get("pids_limit")
        if pids is not None and (not isinstance(pids, int) or pids < 64):
            raise EngineError(f"config engine.pids_limit: expected an integer >= 64, not {pids!r}")
        return cls(
            kind,
            values.get("socket"),
            pids,
            bool(values.get("require_limits", False)),
            _checked_hosts(extra_hosts or {}),
        )

    def url(self) -> str | None:
        """The API's address; None: the Docker SDK's own default (`DOCKER_HOST`, else its socket)."""
        if self.socket:
            return self.socket if "://" in self.socket else f"unix://{self.socket}"
        if self.kind is Kind.DOCKER:
            return None
        if os.environ.get("CONTAINER_HOST"):
            return os.environ["CONTAINER_HOST"]
        if os.geteuid() == 0:
            return f"unix://{ROOTFUL_PODMAN_SOCKET}"
        runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
        return f"unix://{runtime}/podman/podman.sock"

    def pids_for(self, cpus: float) -> int:
        """The process limit of a container of a task with `cpus` CPUs."""
        return self.pids_limit or max(MIN_PIDS, PIDS_PER_CPU * math.ceil(cpus))

    def to_config(self) -> dict[str, Any]:
        """The `engine:` section that gives these settings (for a workspace's config.yaml)."""
        values: dict[str, Any] = {"kind": str(self.kind)}
        if self.socket:
            values["socket"] = self.socket
        if self.pids_limit:
            values["pids_limit"] = self.pids_limit
        if self.require_limits:
            values["require_limits"] = True
        return values


def _checked_hosts(mapping: dict[str, str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(mapping, dict):
        raise EngineError(f"config extra_hosts: expected a mapping of host name to address, not {mapping!r}")
    checked = []
    for name, address in sorted(mapping.items()):
        if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9]([a-z0-9.-]*[a-z0-9])?", name):
            raise EngineError(f"config extra_hosts: {name!r} is not a lower-case host name")
        if address != HOST_GATEWAY and not _is_ipv4(str(address)):
            raise EngineError(
                f"config extra_hosts.{name}: expected an IPv4 address or {HOST_GATEWAY}, not {address!r}"
            )
        checked.append((name, str(address)))
    return tuple(checked)


def _is_ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


@dataclass(frozen=True)
class Engine:
    """A connected engine: the SDK client, and what the server said about itself when we connected."""

    client: docker.DockerClient
    settings: EngineSettings
    podman: bool
    rootless: bool
    unlimited: tuple[str, ...]  # of LIMITED: what the kernel does not enforce for this engine's containers
    version: str

    @property
    def name(self) -> str:
        return f"{'podman' if self.podman else 'docker'} {self.version}" + (
            " rootless" if self.rootless else ""
        )

    @property
    def default_network(self) -> str:
        """The network containers join when nothing else is said (Podman lists it as `podman`)."""
        return "podman" if self.podman else "bridge"

    def local_name(self, image: str) -> str:
        """The name an image of ours gets in this engine. Podman qualifies short names: its Docker API
        stores `docker.io/<name>` while images it loads are `localhost/<name>`, and a short name finds
        `localhost/` first; so every name we give is `localhost/<name>`, the one a short name finds."""
        first = image.split("/")[0]
        if self.podman and image.count("/") == 1 and not any(c in first for c in ".:"):
            return f"localhost/{image}"
        return image

    def cli_env(self) -> dict[str, str]:
        """What a Docker CLI started for this engine needs (Harbor's `docker compose`): the engine's
        address, and on Podman the classic builder (compose's BuildKit builder needs an image of its own)."""
        url = self.settings.url()
        env = {"DOCKER_HOST": url} if url else {}
        if self.podman:
            env["DOCKER_BUILDKIT"] = "0"
        return env

    def extra_hosts(self) -> dict[str, str]:
        """Config `extra_hosts:` as this engine's containers and builds take it (`extra_hosts=`): name ->
        IPv4 address. `host-gateway` stays as it is on Docker (its daemon resolves it); on Podman, whose
        4.3 does not know the word, it becomes the host's address as Podman's containers reach it
        (`host_address`)."""
        hosts = dict(self.settings.extra_hosts)
        if self.podman and HOST_GATEWAY in hosts.values():
            address = self.host_address()
            hosts = {name: address if value == HOST_GATEWAY else value for name, value in hosts.items()}
        return hosts

    def build_extra_hosts(self) -> list[str] | None:
        """`extra_hosts()` as this engine's build endpoint takes them (docker-py's `extra_hosts=` of
        `api.build`): Docker reads `host:address` values; Podman's Docker API reads one JSON array of them
        (4.3 answers 400 Bad Request to anything else)."""
        pairs = [f"{name}:{address}" for name, address in self.extra_hosts().items()]
        if not pairs:
            return None
        return [json.dumps(pairs)] if self.podman else pairs

    def host_address(self) -> str:
        """This host's address as seen from a container on the default network: rootful Podman, its default
        network's gateway; rootless Podman (slirp4netns: the gateway is inside its namespace), the
        host's own address on its default route (what Podman writes for host.containers.internal)."""
        if not self.podman:
            return HOST_GATEWAY
        if self.rootless:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect(("192.0.2.1", 9))  # a UDP connect sends nothing: it only picks the route
                return str(probe.getsockname()[0])
        network = self.client.networks.get(self.default_network)
        gateways = [c["Gateway"] for c in network.attrs["IPAM"]["Config"] if _is_ipv4(c.get("Gateway", ""))]
        if not gateways:
            raise EngineError(f"podman network {self.default_network} has no IPv4 gateway for extra_hosts")
        return gateways[0]

    def describe(self) -> EngineInfo:
        """What a run records of the engine it ran on."""
        return EngineInfo(engine=self.name, unenforced_limits=list(self.unlimited))

    def libpod(self, method: str, path: str, **kwargs: Any) -> Any:
        """A call of Podman's own API (`path` below /libpod) over the same connection; its JSON answer."""
        if not self.podman:
            raise EngineError(f"{path}: Podman's own API, asked of {self.name}")
        api = self.client.api
        response = api.request(method, f"{api.base_url}{LIBPOD_API}{path}", timeout=api.timeout, **kwargs)
        if not response.ok:
            raise EngineError(f"podman {method} {path}: {response.status_code} {response.text.strip()[:500]}")
        return response.json() if response.content else None


_CONNECTED: dict[tuple[EngineSettings, int, str], Engine] = {}


def connect(settings: EngineSettings | None = None, timeout: int = 600) -> Engine:
    """The configured engine (default: Docker), checked with a ping. What it said of itself the first time
    this process reached it at this address is kept; an engine that no longer answers is asked again (and
    then raises `EngineError`)."""
    settings = settings or EngineSettings()
    key = (settings, timeout, settings.url() or os.environ.get("DOCKER_HOST", ""))
    known = _CONNECTED.pop(key, None)
    if known is not None:
        try:
            known.client.ping()
        except Exception:  # gone or restarted: connect afresh, which says why when it cannot
            known = None
    engine = known or _connect(settings, timeout)
    _CONNECTED[key] = engine
    return engine


def _connect(settings: EngineSettings, timeout: int) -> Engine:
    import docker

    url = settings.url()
    try:
        if url is None:
            client = docker.from_env(timeout=timeout)
        else:
            api = PODMAN_DOCKER_API if settings.kind is Kind.PODMAN else None
            client = docker.DockerClient(base_url=url, timeout=timeout, version=api)
        client.ping()
        version = client.version()
    except docker.errors.DockerException as exc:
        setup = PODMAN_SETUP if settings.kind is Kind.PODMAN else DOCKER_SETUP
        where = url or os.environ.get("DOCKER_HOST") or "the default socket"
        raise EngineError(
            f"cannot reach the {settings.kind} engine at {where} ({exc}); run {setup}"
        ) from None
    podman = any("podman" in str(c.get("Name", "")).lower() for c in version.get("Components") or [])
    if podman != (settings.kind is Kind.PODMAN):
        raise EngineError(
            f"config engine.kind is {settings.kind}, but {url or 'the Docker socket'} is "
            f"{'Podman' if podman else 'Docker'}; set engine.kind (and engine.socket) to match"
        )
    engine = _describe(client, settings, podman, str(version.get("Version", "")))
    if engine.unlimited and settings.require_limits:
        raise EngineError(
            f"{engine.name} does not enforce {', '.join(engine.unlimited)} limits for its containers "
            "(rootless on a cgroup v1 host, or without delegated controllers), and engine.require_limits "
            "is set; use rootful Podman or Docker, or a cgroup v2 host that delegates memory, cpu and pids"
        )
    return engine


def _describe(client: docker.DockerClient, settings: EngineSettings, podman: bool, version: str) -> Engine:
    """Rootless or not, and which limits the kernel enforces, as the server reports them. Podman's Docker
    API claims every limit; its own API lists the cgroup controllers it may really use."""
    if podman:
        api = client.api
        answer = api.get(f"{api.base_url}{LIBPOD_API}/info", timeout=api.timeout)
        answer.raise_for_status()
        host = answer.json()["host"]
        rootless = bool((host.get("security") or {}).get("rootless"))
        controllers = set(host.get("cgroupControllers") or [])
        unlimited = tuple(c for c in LIMITED if c not in controllers)
    else:
        info = client.info()
        rootless = any("rootless" in str(o) for o in info.get("SecurityOptions") or [])
        flags = {"memory": "MemoryLimit", "cpu": "CpuCfsQuota", "pids": "PidsLimit"}
        unlimited = tuple(c for c in LIMITED if not info.get(flags[c]))
    return Engine(client, settings, podman, rootless, unlimited, version)


def wait_until_up(seconds: float, settings: EngineSettings | None = None) -> bool:
    """Wait until the engine answers (e.g. while it restarts); False if it does not in time."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            connect(settings, timeout=10)
            return True
        except EngineError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(2)
