"""The stand-in Maven repository on this host (docs/standin-repo.md): Debian's nginx serving
`https://repo.examples.test/maven2/` with the committed test CA's certificate, from its own config and
state directory (`names.STANDIN_STATE_DIR`; never the system's nginx site).

    python3 -m kotlin_bench.tools.standin_repo start | stop | status | fault 503 | fault off [--root R]

(`scripts/standin_repo.sh` installs nginx and the Debian Java packages when missing, then runs this.)

- `start` (idempotent): builds the content when this checkout's inputs have none yet
  (`standin_content`, kept under `content/<digest>/`; `www` links to the one served), writes the config,
  adds `127.0.0.1 repo.examples.test` to /etc/hosts, starts nginx or reloads it when its config or
  content changed, and waits until it answers.
- `stop` (idempotent): stops it and waits until it is gone.
- `status`: exit 0 when it answers the base URL, 3 when it is not running, 1 when it runs but does not
  answer (the line printed says which).
- `fault 503` / `fault off`: every request under /maven2/ answers 503 (a repository outage) until turned
  off: an included config file switched and nginx reloaded; returns once the server answers so.

One server per machine listens on port 443 of every address; `StandinRepo(state_dir, port)` makes
another instance (the tests' faults and restarts use one on another port, serving the same content).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.tools import standin_content

NGINX = "/usr/sbin/nginx"
HOSTS = Path("/etc/hosts")
READY_TIMEOUT = 20.0
KEEP_CONTENTS = 4  # content directories kept (newest first): other checkouts' inputs are served again
FAULT_OFF = "# no fault: requests are served\n"
CONFIG = """\
# kotlin-bench's stand-in Maven repository (written by kotlin_bench.tools.standin_repo; do not edit)
daemon on;
worker_processes 1;
pid {state}/nginx.pid;
error_log {state}/logs/error.log;
{user}
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {state}/logs/access.log;
    client_body_temp_path {state}/tmp/body;
    proxy_temp_path {state}/tmp/proxy;
    fastcgi_temp_path {state}/tmp/fastcgi;
    uwsgi_temp_path {state}/tmp/uwsgi;
    scgi_temp_path {state}/tmp/scgi;
    sendfile on;
    keepalive_timeout 65;
    server {{
        listen {port} ssl;
        server_name {host};
        ssl_certificate {state}/tls/server.crt;
        ssl_certificate_key {state}/tls/server.key;
        root {content};
        location {path} {{
            include {state}/fault.conf;
            autoindex on;
        }}
    }}
}}
"""


class StandinError(RuntimeError):
    """The stand-in repository could not be started, stopped or switched; the message says what to do."""


class Status(IntEnum):
    """`status`'s exit codes (LSB init-script style)."""

    ANSWERS = 0
    NOT_ANSWERING = 1
    STOPPED = 3


def throwaway_tls(directory: Path, host: str, name: str) -> Path:
    """A CA of two days (`ca.crt`, `ca.key`) and a certificate it signed for `host` (`server.crt`,
    `server.key`) in `directory`, for a server of a test or a bench section that must not be the
    stand-in's (whose test CA is committed)."""
    directory.mkdir(parents=True, exist_ok=True)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    ca, server = (directory / "ca", directory / "server")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{ca}.key", "-out", f"{ca}.crt",
            "-days", "2", "-subj", f"/CN={name}",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{server}.key", "-out", f"{server}.csr",
            "-subj", f"/CN={host}")  # fmt: skip
    (directory / "ext").write_text(f"subjectAltName=DNS:{host}\n")
    openssl("x509", "-req", "-in", f"{server}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{server}.crt", "-days", "2", "-extfile", str(directory / "ext"))  # fmt: skip
    return directory


@dataclass(frozen=True)
class StandinRepo:
    """One instance: its state directory and port (the machine's: `names.STANDIN_STATE_DIR`, 443). The
    content cache is the machine's (`content_root`), whichever instance builds it."""

    state_dir: Path = names.STANDIN_STATE_DIR
    port: int = 443
    content_root: Path = names.STANDIN_STATE_DIR / "content"

    @property
    def base_url(self) -> str:
        port = "" if self.port == 443 else f":{self.port}"
        return f"https://{names.STANDIN_HOST}{port}{names.STANDIN_PATH}"

    @property
    def www(self) -> Path:
        return self.state_dir / "www"

    @property
    def root(self) -> Path:
        """The served Maven layout (`maven2/` of the content in use)."""
        return self.www / names.STANDIN_PATH.strip("/")

    @property
    def config(self) -> Path:
        return self.state_dir / "nginx.conf"

    @property
    def pid_file(self) -> Path:
        return self.state_dir / "nginx.pid"

    # --- content ----------------------------------------------------------------------------------

    def ensure_content(self, checkout: Path) -> Path:
        """The content directory of `checkout`'s inputs, built when missing (under a lock: once)."""
        digest = standin_content.input_digest(checkout)
        done = self.content_root / digest
        if (done / names.STANDIN_PATH.strip("/")).is_dir():
            return done
        with _locked(self.content_root / ".lock"):
            if done.is_dir():
                return done
            tmp = Path(tempfile.mkdtemp(prefix=f".{digest}-", dir=self.content_root))
            try:
                shutil.rmtree(tmp)
                started = time.monotonic()
                log = standin_content.build(checkout, tmp, self.content_root / "cache")
                (tmp / "build.log").write_text("\n".join(log) + "\n", encoding="utf-8")
                for path in [tmp, *tmp.rglob("*")]:
                    path.chmod(0o755 if path.is_dir() else 0o644)
                tmp.rename(done)
                print(
                    f"standin-repo: content {digest} built in {time.monotonic() - started:.0f}s", flush=True
                )
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            self._prune(keep=done)
        return done

    def _prune(self, keep: Path) -> None:
        found = [p for p in self.content_root.iterdir() if p.is_dir() and len(p.name) == 16 and p != keep]
        found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        for old in found[KEEP_CONTENTS - 1 :]:
            shutil.rmtree(old, ignore_errors=True)

    # --- the server -------------------------------------------------------------------------------

    def pid(self) -> int | None:
        """nginx's master process, when it runs."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return pid
        cmdline = Path(f"/proc/{pid}/cmdline")
        with contextlib.suppress(OSError):
            if b"nginx" not in cmdline.read_bytes():
                return None  # a stale pid file and a reused number
        return pid

    def start(self, checkout: Path) -> None:
        """Serve `checkout`'s content (see the module's docstring); idempotent."""
        if not Path(NGINX).is_file():
            raise StandinError(f"{NGINX} is missing: run scripts/standin_repo.sh start (it installs nginx)")
        with _locked(self.state_dir / ".lock"):
            content = self.ensure_content(checkout)
            changed = self._write_config(checkout, content)
            if self.www.resolve() != content.resolve():
                tmp_link = self.state_dir / ".www.new"
                tmp_link.unlink(missing_ok=True)
                tmp_link.symlink_to(content)
                tmp_link.replace(self.www)
                os.utime(content)  # newest first in _prune
            add_hosts_line()
            if self.pid() is None:
                self._nginx()
            elif changed:
                self._reload()
        self.wait_for(200)

    def stop(self) -> None:
        """Stop the server (idempotent); returns once its master process is gone."""
        with _locked(self.state_dir / ".lock"):
            pid = self.pid()
            if pid is None:
                return
            os.kill(pid, signal.SIGQUIT)  # graceful: workers finish their requests
            deadline = time.monotonic() + READY_TIMEOUT
            while self.pid() is not None:
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGTERM)
                    deadline += READY_TIMEOUT
                time.sleep(0.05)

    def status(self) -> tuple[Status, str]:
        if self.pid() is None:
            return Status.STOPPED, f"stopped (no nginx of {self.state_dir})"
        code = self.answer()
        if code is None:
            return Status.NOT_ANSWERING, f"nginx runs (pid {self.pid()}) but {self.base_url} does not answer"
        return (
            Status.ANSWERS,
            f"{self.base_url} answers {code} (pid {self.pid()}, content {self.www.resolve().name})",
        )

    def fault(self, code: int | None) -> None:
        """Every request under the base path answers `code` (None: served again); returns when it does."""
        if code is not None and not 500 <= code <= 599:
            raise StandinError(f"fault {code}: expected a 5xx status or off")
        with _locked(self.state_dir / ".lock"):
            text = FAULT_OFF if code is None else f"return {code};\n"
            write_atomic(self.state_dir / "fault.conf", text)
            if self.pid() is not None:
                self._reload()
        if self.pid() is not None:
            self.wait_for(code or 200)

    def answer(self, path: str = "", timeout: float = 5.0) -> int | None:
        """The status of a GET of the base URL (+ `path`) from this host (through /etc/hosts, never a
        proxy), the server verified by the committed CA's certificate (None: no answer)."""
        context = ssl.create_default_context(cafile=str(self.state_dir / "tls" / "ca.crt"))
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
        try:
            with opener.open(self.base_url + path, timeout=timeout) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code
        except (OSError, ssl.SSLError):
            return None

    def wait_for(self, code: int) -> None:
        """Wait until the base URL answers `code` (after a start or a reload)."""
        deadline = time.monotonic() + READY_TIMEOUT
        while (seen := self.answer()) != code:
            if time.monotonic() > deadline:
                raise StandinError(
                    f"{self.base_url} answers {seen} instead of {code} after {READY_TIMEOUT:.0f}s; "
                    f"see {self.state_dir}/logs/error.log"
                )
            time.sleep(0.05)

    def _write_config(self, checkout: Path, content: Path) -> bool:
        """The config (serving `content`), TLS files and fault switch (off: `start` serves) in the state
        directory; whether nginx must reload."""
        for sub in ("logs", "tmp", "tls"):
            (self.state_dir / sub).mkdir(parents=True, exist_ok=True)
        tls = checkout / names.STANDIN_TLS_DIR
        changed = False
        for source, name in (
            (tls / "server.crt", "server.crt"),
            (tls / "server.key", "server.key"),
            (checkout / names.STANDIN_CA, "ca.crt"),
        ):
            target = self.state_dir / "tls" / name
            data = source.read_bytes()
            if not target.is_file() or target.read_bytes() != data:
                write_atomic(target, data)
                target.chmod(0o600 if name.endswith(".key") else 0o644)
                changed = True
        fault = self.state_dir / "fault.conf"
        if not fault.is_file() or fault.read_text(encoding="utf-8") != FAULT_OFF:
            write_atomic(fault, FAULT_OFF)
            changed = True
        user = "user www-data;" if os.geteuid() == 0 else ""
        text = CONFIG.format(
            state=self.state_dir,
            content=content.resolve(),
            port=self.port,
            host=names.STANDIN_HOST,
            path=names.STANDIN_PATH,
            user=user,
        )
        if not self.config.is_file() or self.config.read_text(encoding="utf-8") != text:
            write_atomic(self.config, text)
            changed = True
        return changed

    def _reload(self) -> None:
        """Reload the config and wait until every worker of the old one has left (until then an old
        worker may still accept a connection and answer as before)."""
        pid = self.pid()
        old = _children(pid) if pid else set()
        self._nginx("-s", "reload")
        deadline = time.monotonic() + READY_TIMEOUT
        while old & _children(pid or 0) or not _children(pid or 0) - old:
            if time.monotonic() > deadline:
                raise StandinError(
                    f"nginx (pid {pid}) did not replace its workers after a reload within {READY_TIMEOUT:.0f}s"
                )
            time.sleep(0.05)

    def _nginx(self, *args: str) -> None:
        command = [
            NGINX,
            "-p",
            f"{self.state_dir}/",
            "-e",
            f"{self.state_dir}/logs/error.log",
            "-c",
            str(self.config),
        ]
        result = subprocess.run([*command, *args], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise StandinError(f"{' '.join([*command, *args])}: {result.stderr.strip()[-500:]}")


def add_hosts_line(hosts: Path = HOSTS) -> bool:
    """`127.0.0.1 repo.examples.test` in /etc/hosts unless the name is there; whether it was added."""
    text = hosts.read_text(encoding="utf-8") if hosts.is_file() else ""
    if any(names.STANDIN_HOST in line.split("#", 1)[0].split()[1:] for line in text.splitlines()):
        return False
    with hosts.open("a", encoding="utf-8") as handle:  # in place: /etc/hosts may be a mount
        handle.write(("" if text.endswith("\n") or not text else "\n") + f"127.0.0.1\t{names.STANDIN_HOST}\n")
    return True


def _children(pid: int) -> set[int]:
    """The processes whose parent is `pid` (nginx's workers)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                found.add(int(stat.parent.name))
    return found


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="standin_repo", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["start", "stop", "status", "fault"])
    parser.add_argument("code", nargs="?", help="fault: a 5xx status, or off")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="the checkout whose content to serve")
    args = parser.parse_args(argv)
    repo = StandinRepo()
    try:
        if args.command == "start":
            repo.start(args.root.resolve())
        elif args.command == "stop":
            repo.stop()
        elif args.command == "fault":
            if args.code is None or not (args.code == "off" or args.code.isdigit()):
                parser.error("fault needs a 5xx status or off")
            repo.fault(None if args.code == "off" else int(args.code))
    except (StandinError, standin_content.ContentError, OSError) as exc:
        print(f"standin-repo: error: {exc}", file=sys.stderr)
        return 1
    status, line = repo.status()
    print(f"standin-repo: {line}")
    if args.command == "stop":
        return 0 if status is Status.STOPPED else 1
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
