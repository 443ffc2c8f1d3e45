"""The egress record of allowlist phases: config `egress:`, the recording proxy's files, the workspace's CA
and the task container's trust in it, and the record itself (`work/egress.jsonl`).

`egress: {record: urls | hosts, retrieval: flag | block}` (defaults urls, flag):
- `record: hosts`: the host-only tinyproxy of `kotlin_bench.engine.network`, as before (no record, no flags);
- `record: urls`: the allowlist phase's proxy is Debian's mitmproxy (recipe and addon in
  `src/kotlin_bench/engine/mitm/`) with the same host allowlist; it terminates HTTPS with a CA made once per
  workspace (`results/egress-ca/`, `ensure_ca`), records every request (`EgressRequest`, one JSON line each),
  and classifies each with the task's facts (`kotlin_bench.core.retrieval`, copied into the proxy);
- `retrieval: block` (only with `urls`): a request the rule names as retrieval is answered 403 with a body
  saying why, without reaching the server.

While the phase runs the task container trusts the CA (`Trust`): it is appended to the system bundle
(`/etc/ssl/certs/ca-certificates.crt`), every JDK gets a `lib/security/jssecacerts` (its cacerts plus the
CA: the JDK reads it before cacerts; built once per distinct cacerts on the host with keytool, kept beside
the CA), and the processes get `REQUESTS_CA_BUNDLE`, `SSL_CERT_FILE` and `NODE_EXTRA_CA_CERTS` naming the
bundle. Leaving the phase writes the bundle back byte for byte (mode, owner, time) and removes the
jssecacerts files, before the work is captured; the paths touched are harness paths, not the agent's
changes. The proxy trusts upstream exactly what the container trusted before (its bundle, copied out at
phase start), so a test CA of the task image works without a special case.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import shutil
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names, retrieval
from kotlin_bench.core.record import EgressSummary
from kotlin_bench.engine import containers

if TYPE_CHECKING:
    from docker.models.containers import Container

MITM_DIR = Path(__file__).resolve().parent / "mitm"
CONF_DIR = "/etc/kotlin-bench-proxy"
RECORD_IN_PROXY = f"{CONF_DIR}/egress.jsonl"
BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
JSSE = "jssecacerts"
CA_ALIAS = "kotlin-bench-egress"
STOREPASS = "changeit"  # the JDKs' default cacerts password
CA_ENV = ("REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS")
# Prints `bundle` when the system bundle exists, then `jdk <security dir> <real cacerts> <has jssecacerts>`
# for every JDK (`.../lib/security/cacerts`), bash and findutils only.
FIND_TRUST = r"""
[ -f /etc/ssl/certs/ca-certificates.crt ] && echo bundle
find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -name .git -o -path '*/.gradle/caches' \
    -o -path '*/.m2/repository' -o -name node_modules \) -prune -o -path '*/lib/security/cacerts' -print \
    2>/dev/null \
| while IFS= read -r file; do
    dir=$(readlink -f -- "${file%/*}") && real=$(readlink -f -- "$file") && [ -f "$real" ] || continue
    [ -e "$dir/jssecacerts" ] && has=1 || has=0
    printf 'jdk %s %s %s\n' "$dir" "$real" "$has"
done | sort -u
"""


class EgressError(RuntimeError):
    """The egress record could not be set up; the message says which step and why."""


class Record(StrEnum):
    URLS = "urls"
    HOSTS = "hosts"


class Retrieval(StrEnum):
    FLAG = "flag"
    BLOCK = "block"


@dataclass(frozen=True)
class EgressPolicy:
    """Config `egress:` (see the module's docstring)."""

    record: Record = Record.URLS
    retrieval: Retrieval = Retrieval.FLAG

    @classmethod
    def from_config(cls, section: Mapping[str, Any] | None, source: str = "config") -> EgressPolicy:
        values = dict(section or {})
        unknown = sorted(set(values) - {"record", "retrieval"})
        if unknown:
            raise EgressError(f"{source} egress: unknown keys {unknown}; expected record and retrieval")
        try:
            record = Record(values.get("record", Record.URLS))
        except ValueError:
            raise EgressError(
                f"{source} egress.record: expected urls or hosts, not {values['record']!r}"
            ) from None
        try:
            policy = Retrieval(values.get("retrieval", Retrieval.FLAG))
        except ValueError:
            raise EgressError(
                f"{source} egress.retrieval: expected flag or block, not {values['retrieval']!r}"
            ) from None
        if record is Record.HOSTS and policy is Retrieval.BLOCK:
            raise EgressError(
                f"{source} egress: retrieval: block needs record: urls (a host-only proxy sees no URL to refuse)"
            )
        return cls(record, policy)


@dataclass(frozen=True)
class EgressSetup:
    """What an allowlist phase's recording proxy needs: the policy, the task's facts, the workspace's CA
    directory (`ensure_ca`) and where the record goes when the phase ends."""

    policy: EgressPolicy
    facts: retrieval.Facts
    ca_dir: Path
    record_path: Path


# --- the record -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class EgressRequest:
    """One request through the recording proxy (one line of `egress.jsonl`, written by its addon)."""

    time: float
    method: str
    scheme: str
    host: str
    port: int
    path: str
    status: int | None
    bytes: int
    allowed: bool
    blocked: bool
    retrieval: str | None

    @property
    def url(self) -> str:
        default = {"http": 80, "https": 443}.get(self.scheme)
        port = "" if self.port == default else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}{self.path}"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EgressRequest:
        return cls(**{name: data.get(name) for name in cls.__dataclass_fields__})  # type: ignore[arg-type]


def read_egress(path: Path) -> list[EgressRequest]:
    """The record's requests in order (a line cut short by a killed proxy is left out); none if absent."""
    if not path.is_file():
        return []
    requests = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            requests.append(EgressRequest.from_json(json.loads(line)))
        except (ValueError, TypeError):
            continue
    return requests


def summarize(requests: Sequence[EgressRequest], record: Record, facts: retrieval.Facts) -> EgressSummary:
    """The work record's view of a phase's record, whose requests the proxy classified with `facts`."""
    return EgressSummary(
        record=str(record),
        requests=len(requests),
        bytes=sum(r.bytes or 0 for r in requests),
        refused=sum(1 for r in requests if not r.allowed),
        blocked=sum(1 for r in requests if r.blocked),
        retrieval=[r.url for r in requests if r.retrieval],
        facts=facts.digest(),
    )


def flagged(summary: EgressSummary, record_path: Path, facts: retrieval.Facts) -> list[str]:
    """The URLs the retrieval rule flags in a phase's record with the task's `facts` as they are now: the
    summary's own list when it was classified with these facts, else the kept record (`record_path`,
    `egress.jsonl`) classified again; a request refused as retrieval stays flagged (under `block` a
    change of facts reruns the solve step, so its refusals always follow the facts). Under `flag` this is
    how an edit of the facts reaches summary.csv without running the agent again."""
    if summary.facts == facts.digest() or not record_path.is_file():
        return list(summary.retrieval)
    return [
        r.url
        for r in read_egress(record_path)
        if r.blocked or retrieval.classify_request(r.host, r.path, facts).retrieval
    ]


# --- the workspace's CA ---------------------------------------------------------------------------


def ensure_ca(directory: Path) -> Path:
    """The workspace's interception CA in `directory` (made once with openssl: `mitmproxy-ca.pem` holds the
    key and certificate as mitmproxy reads them, `mitmproxy-ca-cert.pem` the certificate alone)."""
    cert = directory / names.EGRESS_CA_CERT
    if cert.is_file() and (directory / names.EGRESS_CA_KEYPAIR).is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    with (directory / ".lock").open("w") as lock:  # two runs starting at once make one CA
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not cert.is_file():
            _make_ca(directory)
    return directory


def _make_ca(directory: Path) -> None:
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        key, crt = Path(tmp) / "key.pem", Path(tmp) / "cert.pem"
        subject = f"/O=kotlin-bench/CN=kotlin-bench egress CA {hashlib.sha256(str(directory).encode()).hexdigest()[:8]}"
        command = [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "3650",
            "-keyout", str(key), "-out", str(crt), "-subj", subject,
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EgressError(f"making the egress CA in {directory} failed: {done.stderr.strip()[-300:]}")
        keypair = Path(tmp) / names.EGRESS_CA_KEYPAIR
        keypair.write_text(key.read_text() + crt.read_text())
        keypair.chmod(0o600)
        keypair.replace(directory / names.EGRESS_CA_KEYPAIR)
        crt.replace(directory / names.EGRESS_CA_CERT)


def jsse_store(ca_dir: Path, cacerts: bytes) -> bytes:
    """A JDK's cacerts plus the CA (a `jssecacerts`), built once per distinct cacerts with the host's
    keytool and kept beside the CA."""
    cached = ca_dir / f"{JSSE}-{hashlib.sha256(cacerts).hexdigest()[:16]}"
    if cached.is_file():
        return cached.read_bytes()
    keytool = shutil.which("keytool")
    if keytool is None:
        raise EgressError(
            "record: urls needs keytool on this host (a JDK) to make the JDKs trust the egress CA"
        )
    with tempfile.TemporaryDirectory(dir=ca_dir) as tmp:
        store = Path(tmp) / JSSE
        store.write_bytes(cacerts)
        command = [
            keytool, "-importcert", "-noprompt", "-alias", CA_ALIAS, "-storepass", STOREPASS,
            "-keystore", str(store), "-file", str(ca_dir / names.EGRESS_CA_CERT),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EgressError(f"adding the egress CA to a JDK truststore failed: {done.stdout[-300:]}")
        store.replace(cached)
    return cached.read_bytes()


# --- the task container's trust -------------------------------------------------------------------


@dataclass
class Trust:
    """What `install` changed in a task container, to be undone by `restore`."""

    bundle: tuple[tarfile.TarInfo, bytes] | None = None
    stores: list[str] = field(default_factory=list)  # jssecacerts files we created
    replaced: list[tuple[str, tarfile.TarInfo, bytes]] = field(default_factory=list)  # ones we extended
    upstream: bytes = b""  # the system bundle as it was: what the proxy trusts upstream

    @property
    def paths(self) -> list[str]:
        """Every path touched (harness paths: not the agent's changes)."""
        touched = [BUNDLE] if self.bundle else []
        return [*touched, *self.stores, *(p for p, _, _ in self.replaced)]


def _get(container: Container, path: str) -> tuple[tarfile.TarInfo, bytes]:
    found = containers.read_member(container, path)
    if found is None:
        raise EgressError(f"{path} of the task container is not a regular file")
    return found


def _put(container: Container, path: str, content: bytes, like: tarfile.TarInfo | None = None) -> None:
    target = PurePosixPath(path)
    info = tarfile.TarInfo(target.name)
    info.size = len(content)
    info.mode = like.mode if like else 0o644
    info.uid, info.gid = (like.uid, like.gid) if like else (0, 0)
    info.mtime = like.mtime if like else int(time.time())
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.addfile(info, io.BytesIO(content))
    if not container.put_archive(str(target.parent), buffer.getvalue()):
        raise EgressError(f"writing {path} into the task container failed")


def install(container: Container, ca_dir: Path) -> Trust:
    """Make the running container trust the CA in `ca_dir` (see the module's docstring)."""
    ca = (ca_dir / names.EGRESS_CA_CERT).read_bytes()
    result = containers.root_exec(container, ["bash", "-c", FIND_TRUST])
    output = result.output.decode("utf-8", "replace")
    if result.exit_code not in (0, 1):
        raise EgressError(f"finding the task container's trust stores failed: {output[-300:]}")
    trust = Trust()
    lines = output.splitlines()
    try:
        if "bundle" in lines:
            info, content = _get(container, BUNDLE)
            trust.upstream = content
            trust.bundle = (info, content)
            _put(container, BUNDLE, content.rstrip(b"\n") + b"\n" + ca, info)
        sources: dict[str, bytes] = {}
        for line in lines:
            parts = line.split(" ")
            if len(parts) != 4 or parts[0] != "jdk":
                continue
            directory, real, has = parts[1], parts[2], parts[3] == "1"
            store = f"{directory}/{JSSE}"
            if has:
                info, content = _get(container, store)
                trust.replaced.append((store, info, content))
                _put(container, store, jsse_store(ca_dir, content), info)
                continue
            if real not in sources:
                sources[real] = _get(container, real)[1]
            trust.stores.append(store)
            _put(container, store, jsse_store(ca_dir, sources[real]))
    except BaseException:
        restore(container, trust)
        raise
    return trust


def restore(container: Container, trust: Trust) -> None:
    """Undo `install`: the bundle and extended stores byte for byte, our jssecacerts files removed."""
    if trust.bundle is not None:
        info, content = trust.bundle
        _put(container, BUNDLE, content, info)
    for path, info, content in trust.replaced:
        _put(container, path, content, info)
    if trust.stores:
        result = containers.root_exec(container, ["rm", "-f", "--", *trust.stores])
        if result.exit_code != 0:
            raise EgressError(f"removing the JDKs' {JSSE} failed: {result.output[-300:]!r}")


def ca_env() -> dict[str, str]:
    """What a recorded phase adds to its processes' environment: clients with bundles of their own
    (Python requests, Node) are pointed at the system bundle, which trusts the CA during the phase."""
    return dict.fromkeys(CA_ENV, BUNDLE)


# --- the proxy's files ----------------------------------------------------------------------------


def proxy_files(
    setup: EgressSetup, host_rules: Sequence[str], ports: Sequence[int], port: int, upstream: bytes
) -> bytes:
    """The recording proxy's files (a tar for `put_archive` at /): its start script, addon, classifier,
    policy, the CA in mitmproxy's confdir and the upstream trust."""
    ca_dir = setup.ca_dir
    policy = {
        "hosts": list(host_rules),
        "connect_ports": list(ports),
        "block": setup.policy.retrieval is Retrieval.BLOCK,
        "facts": json.loads(setup.facts.to_json()),
        "record": RECORD_IN_PROXY,
    }
    start = (
        f"exec python3 {CONF_DIR}/start.py -q --listen-host 0.0.0.0 -p {port} --set confdir={CONF_DIR}/ca "
        f"--set ssl_verify_upstream_trusted_ca={CONF_DIR}/upstream.pem --set connection_strategy=lazy "
        f"--set block_global=false -s {CONF_DIR}/addon.py\n"
    )
    files = {
        "start.sh": start.encode(),
        "start.py": (MITM_DIR / "start.py").read_bytes(),  # mitmdump without the addons it never uses
        "addon.py": (MITM_DIR / "addon.py").read_bytes(),
        **{Path(m.__file__).name: Path(m.__file__).read_bytes() for m in (retrieval, *retrieval.MODULES)},
        "policy.json": json.dumps(policy, indent=1).encode(),
        "upstream.pem": upstream or b"",
        f"ca/{names.EGRESS_CA_KEYPAIR}": (ca_dir / names.EGRESS_CA_KEYPAIR).read_bytes(),
        f"ca/{names.EGRESS_CA_CERT}": (ca_dir / names.EGRESS_CA_CERT).read_bytes(),
        "egress.jsonl": b"",
    }
    buffer = io.BytesIO()
    root = CONF_DIR.strip("/")
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in (root, f"{root}/ca"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{root}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o600 if "ca/" in name else 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def put_upstream(proxy: Container, upstream: bytes) -> None:
    """The proxy's upstream trust (the task container's bundle as it was), written after `proxy_files`
    left it empty and the proxy started: mitmproxy reads it at its first upstream connection, which no
    request of the phase can make before this."""
    _put(proxy, f"{CONF_DIR}/upstream.pem", upstream)


def copy_record(proxy: Container, dest: Path) -> None:
    """The proxy's record, copied to `dest` (what it holds so far, also after a timeout or a kill)."""
    content = containers.read_file(proxy, RECORD_IN_PROXY, 1 << 30)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(content or b"")


def image_tag() -> str:
    """`kotlin-bench/egress-proxy:mitm-<hash of the recipe>`."""
    digest = hashlib.sha256((MITM_DIR / "Dockerfile").read_bytes()).hexdigest()[:12]
    return f"{names.IMAGE_NAMESPACE}/egress-proxy:mitm-{digest}"
