"""What only Podman needs: an internal network its containers can really use (made through Podman's own
API, where its Docker API falls short).

An internal network for an allowlist phase (`internal_network`) is made through Podman's own API, with
its DNS server off: Podman's resolver (aardvark-dns) answers names of the outside world even on an
internal network (a way out by DNS queries) and, rootless, answers the network's own names only now and
then; the task container finds the proxy through /etc/hosts instead (`kotlin_bench.engine.network`).
Rootful, the network's bridge gets a name of ours, and the host's firewall a rule that lets the
network's members reach each other: on a host that also runs Docker, its `FORWARD DROP` policy drops
their packets otherwise, since Podman adds no rule for an internal network. The rule carries the
network's name (`kotlin-bench <network>`) and is removed with the network (`drop_forward_rule`).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from typing import TYPE_CHECKING

from kotlin_bench.engine.engine import Engine, EngineError

if TYPE_CHECKING:
    from docker.models.networks import Network

CHAIN = "FORWARD"


def bridge_name(network: str) -> str:
    """The bridge of one of our networks: `kb` and 12 hex of its name (Linux allows 15 characters)."""
    return "kb" + hashlib.sha256(network.encode()).hexdigest()[:12]


def internal_network(engine: Engine, name: str, labels: dict[str, str], dns: bool = False) -> Network:
    """Create an internal network (no route out) whose members reach each other."""
    bridge = bridge_name(name)
    spec = {
        "name": name,
        "driver": "bridge",
        "internal": True,
        "dns_enabled": dns,
        "labels": labels,
        "network_interface": bridge,
    }
    engine.libpod("post", "/networks/create", json=spec)
    try:
        if not engine.rootless:
            _iptables("-I", bridge, name)
        return engine.client.networks.get(name)
    except BaseException:
        drop_network(engine, name)
        raise


def drop_network(engine: Engine, name: str) -> None:
    """Remove the network (nothing may be attached) and its firewall rule."""
    import docker

    try:
        engine.client.networks.get(name).remove()
    except docker.errors.NotFound:
        pass
    finally:
        drop_forward_rule(engine, name)


def drop_forward_rule(engine: Engine, name: str) -> None:
    """Remove the firewall rule of one of our internal networks (every copy; none is fine)."""
    if engine.rootless:
        return
    while _iptables("-D", bridge_name(name), name, check=False):
        pass


def _iptables(action: str, bridge: str, network: str, check: bool = True) -> bool:
    if shutil.which("iptables") is None:
        raise EngineError(
            "rootful Podman's allowlist networks need iptables on the host (apt-get install iptables)"
        )
    rule = [
        "-i",
        bridge,
        "-o",
        bridge,
        "-m",
        "comment",
        "--comment",
        f"kotlin-bench {network}",
        "-j",
        "ACCEPT",
    ]
    done = subprocess.run(["iptables", "-w", action, CHAIN, *rule], capture_output=True, text=True)
    if done.returncode != 0 and check:
        raise EngineError(f"iptables {action} {CHAIN} for {network} failed: {done.stderr.strip()}")
    return done.returncode == 0
