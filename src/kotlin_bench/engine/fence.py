"""The fence of an allowlist phase's network: its members reach each other (the task container its proxy)
and nothing else, and what they tried past it is counted.

An internal network (Docker's, rootful Podman's) still has a bridge on the host, so its containers reach
the host itself: on Docker through the bridge's gateway address (the host's every address: the stand-in
repository, a user's Maven mirror, a model server, the default bridge's gateway), on Podman through the
bridge's IPv6 link-local address. And the proxy, a router like any container (`ip_forward` is 1 in its
namespace), would forward what the task container addressed to it at the link layer: it is started with
forwarding off (`network.PROXY_SYSCTLS`), and the rules below refuse the network's subnets by any way.
So, with the network:

- **Docker, rootful Podman** (`Kind.FIREWALL`): one nftables table of the host per network,
  `inet kotlin_bench_<bridge>` (its rules carry the comment `kotlin-bench <network>`), hooked before the
  engines' own filters, refuses every packet that arrives at the host from the network's bridge or from
  its subnets by another way (input hook), and every packet leaving the bridge for elsewhere (forward
  hook): TCP with a reset, UDP with port unreachable (a client fails at once, it does not wait for a
  timeout), anything else dropped. Traffic between the bridge's own ports (the container and its proxy)
  is not touched, nor IPv6 neighbour discovery (so that a connection to the host's link-local address
  is refused at once instead of waiting for an answer that never comes). The table counts what it
  refused: TCP and UDP packets, DNS (port 53) apart, and their destinations (address, protocol, port;
  the first `SEEN` of each family). Installing it costs one `nft` call, reading and removing it two
  (`Fence.close`).
- **rootless Podman** (`Kind.CONSTRUCTION`): nothing is installed, and nothing is seen. The internal
  network lives in the user's network namespace, its bridge has no IPv4 address there and the container
  no route but its own subnet's: every other address (the host's, slirp4netns' 10.0.2.2 and 10.0.2.3,
  the internet) fails at once with "network unreachable" inside the container, and a rootless container
  has no NET_RAW to craft frames past its routes (tests/test_network.py checks each, for real). A
  network given a gateway (a later Podman) would route: `install` then refuses.

The firewall needs root: `nft` on the host when this process is root; as an ordinary user on Docker (a
member of the `docker` group, which is root's equal), the host's `nft` run in a helper container that
shares the host's network namespace (`helper`: an image of ours, the host's root mounted read-only). Where
neither can be done (no nftables on the host, rootless Docker) `install` raises `FenceError` with one
line: an allowlist phase never starts unfenced.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.engine.podman import bridge_name

if TYPE_CHECKING:
    from kotlin_bench.engine.engine import Engine

TABLE_PREFIX = "kotlin_bench_"
PRIORITY = -10  # before the engines' filter chains (0): a packet we refuse meets nothing else
SEEN = 64  # destinations kept per address family
NFT_PATH = "/usr/sbin:/sbin:/usr/bin:/bin"
HELPER_ROLE = "fence-helper"
TIMEOUT = 60.0


class FenceError(RuntimeError):
    """A phase network's fence could not be installed, read or removed; the message says why."""


class Kind(StrEnum):
    FIREWALL = "firewall"  # an nftables table on the host
    CONSTRUCTION = "construction"  # rootless Podman: no route leads past the network


@dataclass(frozen=True)
class Refused:
    """What a fence refused: TCP and UDP packets (each a connection attempt: a refused client gives
    up at once), DNS queries apart, and the destinations of the attempts (`tcp 192.168.0.1:443`)."""

    attempts: int
    dns: int
    destinations: tuple[str, ...]


def table_name(network: str) -> str:
    """The fence table of a network: `kotlin_bench_` and the network's bridge name."""
    return TABLE_PREFIX + bridge_name(network)


def ruleset(network: str, bridge: str, subnets: Sequence[str]) -> str:
    """The nft script that (re)places the fence of `network` (bridge `bridge`, `subnets`) in one
    transaction."""
    table = table_name(network)
    sources = []
    for family, selector in ((4, "ip saddr"), (6, "ip6 saddr")):
        nets = [s for s in subnets if ipaddress.ip_network(s, strict=False).version == family]
        if nets:
            sources.append(f"{selector} {{ {', '.join(nets)} }}")
    note = f'comment "kotlin-bench {network}"'
    into = [f'iifname "{bridge}" goto fence {note}', *(f"{s} goto fence {note}" for s in sources)]
    through = [f'iifname "{bridge}" oifname != "{bridge}" goto fence {note}']
    through += [f'{s} oifname != "{bridge}" goto fence {note}' for s in sources]
    seen = "type {}_addr . inet_proto . inet_service; size {}; flags dynamic;"
    return "\n".join(
        [
            f"table inet {table} {{}}",
            f"delete table inet {table}",
            f"table inet {table} {{",
            "  counter refused {}",
            "  counter dns {}",
            f"  set seen4 {{ {seen.format('ipv4', SEEN)} }}",
            f"  set seen6 {{ {seen.format('ipv6', SEEN)} }}",
            f"  chain input {{ type filter hook input priority {PRIORITY}; policy accept;",
            *(f"    {rule}" for rule in into),
            "  }",
            f"  chain forward {{ type filter hook forward priority {PRIORITY}; policy accept;",
            *(f"    {rule}" for rule in through),
            "  }",
            "  chain fence {",
            # finding the host's address on the link: without it a connection waits instead of failing
            "    icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept",
            '    meta l4proto { tcp, udp } th dport 53 counter name "dns" goto refuse',
            "    meta l4proto { tcp, udp } add @seen4 { ip daddr . meta l4proto . th dport }",
            "    meta l4proto { tcp, udp } add @seen6 { ip6 daddr . meta l4proto . th dport }",
            '    meta l4proto { tcp, udp } counter name "refused"',
            "    goto refuse",
            "  }",
            "  chain refuse {",
            "    meta l4proto tcp reject with tcp reset",
            "    meta l4proto udp reject with icmpx port-unreachable",
            "    drop",
            "  }",
            "}",
            "",
        ]
    )


def removal(network: str) -> str:
    """The nft script that removes the fence of `network`, if there is one."""
    table = table_name(network)
    return f"table inet {table} {{}}\ndelete table inet {table}\n"


def parse_refused(listing: str) -> Refused:
    """What `nft -j list table` of a fence says it refused."""
    counters: dict[str, int] = {}
    destinations: list[str] = []
    for item in json.loads(listing).get("nftables", []):
        if "counter" in item:
            counters[item["counter"]["name"]] = int(item["counter"].get("packets", 0))
        elif "set" in item:
            for element in item["set"].get("elem", []):
                value = element.get("elem", {}).get("val", element) if isinstance(element, dict) else None
                parts = value.get("concat") if isinstance(value, dict) else None
                if parts and len(parts) == 3:
                    address, protocol, port = parts
                    host = f"[{address}]" if ":" in str(address) else address
                    destinations.append(f"{protocol} {host}:{port}")
    return Refused(counters.get("refused", 0), counters.get("dns", 0), tuple(sorted(destinations)))


# --- running nft --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Nft:
    """How nft is run: the host's binary (`path`), directly when this process is root, else (Docker)
    in a helper container of `image` that shares the host's network namespace."""

    path: str
    engine: Engine | None = None
    image: str | None = None

    def run(self, script: str = "", *args: str) -> tuple[int, str]:
        """`nft -f -` with `script`, or `nft ARGS`; the exit code and the output (stderr on failure)."""
        argv = [self.path, *(args or ("-f", "-"))]
        if self.image is None:
            done = subprocess.run(argv, input=script, capture_output=True, text=True, timeout=TIMEOUT)
            return done.returncode, done.stdout if done.returncode == 0 else done.stderr.strip()
        return self._in_helper(script, argv)

    def _in_helper(self, script: str, argv: list[str]) -> tuple[int, str]:
        import docker

        assert self.engine is not None and self.image is not None
        command = ["sh", "-c", 'script=$1; shift; printf "%s" "$script" | chroot /host "$@"', "sh", script]
        try:
            output = self.engine.client.containers.run(
                self.image,
                [*command, *argv],
                entrypoint=[],
                remove=True,
                network_mode="host",
                cap_drop=["ALL"],
                cap_add=["NET_ADMIN", "SYS_CHROOT"],
                user="0",
                volumes={"/": {"bind": "/host", "mode": "ro"}},
                labels={names.LABEL_ROLE: HELPER_ROLE},
                stdout=True,
                stderr=True,
            )
        except docker.errors.ContainerError as exc:
            return exc.exit_status or 1, (exc.stderr or b"").decode("utf-8", "replace").strip()
        return 0, output.decode("utf-8", "replace")


def nft_for(engine: Engine, helper: str | None) -> Nft:
    """How this process runs nft for `engine`; FenceError (one line) where it cannot."""
    path = shutil.which("nft", path=f"{os.environ.get('PATH', '')}:{NFT_PATH}")
    if path is None:
        raise FenceError(
            "an allowlist phase needs nftables on this host to fence its network (install the nftables "
            "package): without it the phase could reach the host around its proxy, so it does not start"
        )
    if os.geteuid() == 0:
        return Nft(path)
    if engine.podman or engine.rootless or helper is None:
        raise FenceError(
            f"an allowlist phase on {engine.name} needs root to fence its network with nftables; run "
            "as root (Docker: or as a member of the docker group), or use rootless Podman"
        )
    return Nft(path, engine, helper)


# --- the fence ----------------------------------------------------------------------------------------


@dataclass
class Fence:
    """One network's fence; `close` reads what it refused and removes it."""

    network: str
    kind: Kind
    nft: Nft | None = None
    refused: Refused | None = None  # what it refused, once closed (None: not seen)
    closed: bool = False

    def read(self) -> Refused | None:
        """What the fence refused so far (None where nothing can be seen, or the table is gone)."""
        if self.nft is None:
            return None
        code, output = self.nft.run("", "-j", "list", "table", "inet", table_name(self.network))
        return parse_refused(output) if code == 0 else None

    def close(self) -> Refused | None:
        """Read what the fence refused, then remove it (idempotent)."""
        if self.closed:
            return self.refused
        if self.nft is not None:
            self.refused = self.read()
            code, output = self.nft.run(removal(self.network))
            if code != 0:
                raise FenceError(f"removing the fence of {self.network} failed: {output[-300:]}")
        self.closed = True
        return self.refused


def install(engine: Engine, network: str, attrs: dict[str, Any], *, helper: str | None = None) -> Fence:
    """Fence `network` (`attrs`: its inspection; its bridge is `podman.bridge_name`'s) before any
    container joins it; FenceError where that cannot be done. `helper`: see `nft_for`."""
    subnets, gateways = addresses_of(attrs)
    if not subnets:
        raise FenceError(f"network {network} has no subnet to fence")
    if engine.podman and engine.rootless:
        if gateways:
            raise FenceError(
                f"rootless Podman gave the allowlist network {network} a gateway ({', '.join(gateways)}): "
                "it could route past the proxy, and no firewall can be installed rootless"
            )
        return Fence(network, Kind.CONSTRUCTION)
    if engine.rootless:
        raise FenceError(
            f"an allowlist phase cannot fence its network on {engine.name} (its networks live in "
            "RootlessKit's namespace, out of the host's firewall): use rootful Docker or Podman"
        )
    nft = nft_for(engine, helper)
    code, output = nft.run(ruleset(network, bridge_name(network), subnets))
    if code != 0:
        raise FenceError(f"fencing network {network} with nftables failed: {output[-300:]}")
    return Fence(network, Kind.FIREWALL, nft)


def drop(engine: Engine, network: str, helper: str | None = None) -> None:
    """Remove the fence a killed run left for `network`, if any (reaping, `kotlin-bench clean`)."""
    if engine.podman and engine.rootless:
        return  # nothing was installed
    try:
        nft = nft_for(engine, helper)
    except FenceError:
        return  # where this process cannot run nft, it installed no fence either
    code, output = nft.run(removal(network))
    if code != 0:
        raise FenceError(f"removing the fence of {network} failed: {output[-300:]}")


def addresses_of(attrs: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The subnets and gateways a network's inspection names (its IPAM config; Podman's compatible view
    says `<nil>` for no gateway)."""
    config = (attrs.get("IPAM") or {}).get("Config") or []
    subnets = [c["Subnet"] for c in config if c.get("Subnet")]
    gateways = [c["Gateway"] for c in config if _is_address(c.get("Gateway") or "")]
    return subnets, gateways


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
