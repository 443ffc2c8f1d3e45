"""The `allowed_hosts` of an allowlist phase: each entry checked and normalised like Harbor's (trimmed,
lower-cased, a trailing dot dropped; `*.domain` admits the hosts strictly below `domain`; an IPv4 address
admits requests that name it literally; URLs, ports, CIDR ranges and IPv6 literals are refused), and the
egress proxy's filter file made from them (one anchored POSIX ERE per distinct entry; none admits nothing).
`kotlin_bench.engine.network` gives the filter to the proxy of each allowlist phase."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

_LABEL_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# What may stand for one label under a `*.` wildcard (underscores occur in real host names).
_SUBLABEL = "[a-z0-9_-]+"


def normalize_host(entry: str) -> str:
    """One allowed_hosts entry, trimmed, lower-cased and without a trailing dot; ValueError if invalid."""
    host = entry.strip().lower().rstrip(".")
    if not host:
        raise ValueError("allowed_hosts entries must be non-empty host names")
    if "/" in host or ":" in host or "[" in host:
        raise ValueError(
            f"allowed_hosts entry {entry!r}: only host names, '*.' wildcards and IPv4 addresses are "
            "supported (no URLs, ports, CIDR ranges or IPv6 addresses)"
        )
    wildcard = host.startswith("*.")
    name = host[2:] if wildcard else host
    if "*" in name:
        raise ValueError(f"allowed_hosts entry {entry!r}: a wildcard must be a leading '*.'")
    if _is_ipv4(name):
        if wildcard:
            raise ValueError(f"allowed_hosts entry {entry!r}: a wildcard must name a domain, not an address")
        return host
    if not all(_LABEL_RE.match(label) for label in name.split(".")):
        raise ValueError(f"allowed_hosts entry {entry!r} is not a valid host name")
    return host


def _is_ipv4(text: str) -> bool:
    try:
        return isinstance(ipaddress.ip_address(text), ipaddress.IPv4Address)
    except ValueError:
        return False


def host_pattern(entry: str) -> str:
    """The anchored extended regular expression (POSIX ERE and Python alike) admitting `entry`."""
    host = normalize_host(entry)
    if host.startswith("*."):
        return f"^({_SUBLABEL}\\.)+{re.escape(host[2:])}$"
    return f"^{re.escape(host)}$"


def filter_rules(allowed_hosts: Sequence[str]) -> str:
    """The proxy's filter file: one anchored rule per distinct entry (none at all: nothing is admitted)."""
    if isinstance(allowed_hosts, str):
        raise TypeError("allowed_hosts must be a sequence of host names, not one string")
    rules = dict.fromkeys(host_pattern(h) for h in allowed_hosts)
    header = "# kotlin-bench egress filter: anchored ERE, one allowed host (or *. wildcard) per rule\n"
    return header + "".join(f"{rule}\n" for rule in rules)
