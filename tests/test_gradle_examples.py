"""The Gradle example (`tally`, examples/README.md) on real Gradle and a real stand-in repository.

The session's run of the examples (conftest `finished_examples`) already ran oracle and nop on both
Gradle tasks (tests/test_workflow_e2e.py checks 1 and 0); this module works in one clone of it, where the
verifier containers reach a stand-in of their own: Debian's nginx (the host's binary) in a container of
the toolchain image, serving the machine's stand-in content with its certificate, so that stopping it or
making it answer 503 touches nobody else's runs. In one workspace, with as few Gradle builds as it takes:

- the oracle run of examples_tally-4 (its test patch adds commons-lang3, which the warm cache lacks)
  verified while the stand-in answers 503 (two tries), then while it refuses connections: an `error`
  (`infrastructure`) naming the host and the artifact, never a 0, listed by `kotlin-bench errors`;
  started again, the next `snakemake` redoes that verify step only, and it scores 1;
- agents on examples_tally-2, in one invocation: a careless fix (p2p_regressed), a compile error, a
  dependency that does not exist, a repository on a host that does not answer: all 0.
"""

from __future__ import annotations

import contextlib
import http.client
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, Status
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.results.healthcheck import judge_task
from kotlin_bench.runs.network_probe import NetworkCheck, Probe, ProbeResult
from kotlin_bench.tools.standin_repo import NGINX, StandinRepo
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO
from tests.test_workflow_e2e import planned_jobs

pytestmark = pytest.mark.usefixtures("docker_engine")
FIXED, FLAKY = "examples_tally-2", "examples_tally-4"
LANG3 = "org.apache.commons:commons-lang3:3.12.0"
READY_SEC = 30.0
CONFIG = """\
daemon on;
worker_processes 1;
pid /tmp/nginx.pid;
error_log /tmp/error.log;
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
    access_log off;
    client_body_temp_path /tmp/body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;
    server {
        listen 443 ssl;
        server_name repo.examples.test;
        ssl_certificate /tls/server.crt;
        ssl_certificate_key /tls/server.key;
        root /content;
        location /maven2/ {
            include /state/fault.conf;
        }
    }
}
"""


@dataclass
class OwnStandin:
    """nginx in a container of its own (keep-alive PID 1; nginx started, stopped and reloaded by exec)."""

    container: str
    state: Path
    address: str = ""

    def _exec(self, *argv: str) -> None:
        subprocess.run(["docker", "exec", self.container, *argv], check=True, capture_output=True)

    def answer(self) -> int | None:
        """The status of a request for junit's pom, or None when nothing answers."""
        context = ssl.create_default_context(cafile=str(REPO / names.STANDIN_CA))
        context.check_hostname = False  # asked by address; the certificate names repo.examples.test
        conn = http.client.HTTPSConnection(self.address, 443, timeout=5, context=context)
        try:
            conn.request("GET", f"{names.STANDIN_PATH}junit/junit/4.13.2/junit-4.13.2.pom")
            return conn.getresponse().status
        except OSError:
            return None
        finally:
            conn.close()

    def _until(self, wanted: int | None) -> None:
        deadline = time.monotonic() + READY_SEC
        while self.answer() != wanted:
            assert time.monotonic() < deadline, f"the test's stand-in never answered {wanted}"
            time.sleep(0.2)

    def fault(self, code: int | None) -> None:
        (self.state / "fault.conf").write_text(f"return {code};\n" if code else "# served\n")
        self._exec("nginx", "-c", "/state/nginx.conf", "-s", "reload")
        self._until(code or 200)

    def start(self) -> None:
        (self.state / "fault.conf").write_text("# served\n")
        self._exec("nginx", "-c", "/state/nginx.conf")
        self._until(200)

    def stop(self) -> None:
        self._exec("nginx", "-c", "/state/nginx.conf", "-s", "stop")
        self._until(None)


@contextlib.contextmanager
def own_standin(state: Path, image: str) -> Iterator[OwnStandin]:
    content = StandinRepo().ensure_content(REPO)
    state.mkdir(parents=True)
    (state / "nginx.conf").write_text(CONFIG)
    name = f"kotlin-bench-test-standin-{state.parent.name}"
    mounts = {
        NGINX: NGINX,
        "/etc/nginx/mime.types": "/etc/nginx/mime.types",
        str(content): "/content",
        str(REPO / names.STANDIN_TLS_DIR): "/tls",
    }
    volumes = [arg for src, dst in mounts.items() for arg in ("-v", f"{src}:{dst}:ro")]
    subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--name",
            name,
            *volumes,
            "-v",
            f"{state}:/state",
            image,
            "sleep",
            "infinity",
        ],
        check=True,
        capture_output=True,
    )
    try:
        address = subprocess.run(
            ["docker", "inspect", "-f", "{{.NetworkSettings.IPAddress}}", name],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        server = OwnStandin(name, state, address)
        server.start()
        yield server
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def kotlin_bench(work: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kotlin_bench", *args],
        cwd=work,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(work / "src"), "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


AGENTS = {
    "careless": "git apply /dev/stdin <<'PATCH'\n{careless}PATCH\n",
    "compile-error": "echo 'class Broken {' >> core/src/main/java/tally/Amount.java\n",
    "missing-dependency": (
        "sed -i \"s|testCompile 'junit:junit:4.13.2'|&\\n    testCompile 'org.apache.commons:commons-nothere:1.0'|\""
        " tests.gradle\n"
    ),
    # the build's repository moved to a host that does not answer (nothing listens on port 9): the network's
    # fault, but the agent's doing (Gradle 4.4 passes over a repository that refuses when another one
    # follows, so the patch moves the only one)
    "dead-host": "sed -i 's|https://repo.examples.test/maven2/|https://127.0.0.1:9/maven2/|' build.gradle\n",
}


def test_network_faults_are_errors_and_the_agents_faults_are_zeros(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    ws = finished_examples.clone(tmp_path / "ws")
    careless = (REPO / "examples/patches" / FIXED / "careless.patch").read_text()
    agents = [{"name": "oracle", "kind": "oracle"}, {"name": "nop", "kind": "nop"}]
    for name, body in AGENTS.items():
        script = "#!/usr/bin/env bash\nset -eu\n" + body.replace("{careless}", careless)
        agents.append({"name": name, "kind": "script", "script": ws.write(f"{name}.sh", script, 0o755)})
    toolchain = read_sentinel(ws.root / names.base_sentinel("examples_toolchain", "jdk17")).id
    with own_standin(tmp_path / "standin", toolchain) as server:
        ws.configure([FIXED, FLAKY], agents, extra_hosts={names.STANDIN_HOST: server.address}, retries=1)
        run = ws.run_dir("oracle", FLAKY)
        kept = {p: p.stat().st_mtime_ns for p in (run / names.WORK_DIR).iterdir()}
        oracle = ws.target("oracle", FLAKY)

        # The stand-in answers 503: both tries fail with Gradle's resolution error; recorded as an error.
        server.fault(503)
        (ws.root / oracle).unlink()
        out = ws.snakemake(oracle)
        assert out.returncode == 0, out.stderr[-3000:]
        found = ws.result("oracle", FLAKY)
        assert found is not None and found.status is Status.ERROR and found.reward is None
        assert (found.reason, found.reason_detail, found.failed_step) == (
            "infrastructure",
            "NetworkFault",
            "verify",
        )
        assert f"network fault: repo.examples.test (HTTP 503) for {LANG3}" in (found.error or "")
        assert [t.split(":", 1)[0] for t in found.tries] == ["try 1 of 2 failed", "try 2 of 2 failed"]
        listed = kotlin_bench(ws.root, "errors")
        assert (
            f"step verify failed: NetworkFault: network fault: repo.examples.test (HTTP 503) for {LANG3}"
            in listed
        )
        nop = RunResult.read(ws.root / ws.target("nop", FLAKY))
        answered, blocked = ProbeResult("h", Probe.ANSWERED, ""), ProbeResult("g", Probe.BLOCKED, "")
        probes = NetworkCheck(FLAKY, "allowlist", answered, blocked, "now")
        health = judge_task(found, nop, probes)
        assert (
            health["verdict"] == "FAIL"
            and "errored: infrastructure: network fault: repo.examples.test" in health["reasons"]
        )

        # Refused connections, one try: the same error, another cause.
        server.stop()
        ws.configure([FIXED, FLAKY], agents, extra_hosts={names.STANDIN_HOST: server.address}, retries=0)
        assert "1 errored run(s) deleted" in kotlin_bench(ws.root, "errors", "--delete")
        out = ws.snakemake(oracle)
        assert out.returncode == 0, out.stderr[-3000:]
        found = ws.result("oracle", FLAKY)
        assert found is not None and found.status is Status.ERROR
        assert f"network fault: repo.examples.test (Connection refused) for {LANG3}" in (found.error or "")

        # Started again: only that verify step is redone, and it scores 1; the agent's work is untouched.
        server.start()
        assert planned_jobs(ws.root, oracle) == {"verify": 1}  # by itself: no `errors --delete`
        out = ws.snakemake(oracle)
        assert out.returncode == 0, out.stderr[-3000:]
        found = ws.result("oracle", FLAKY)
        assert found is not None and (found.status, found.reward) == (Status.RESOLVED, 1.0)
        assert {p: p.stat().st_mtime_ns for p in (run / names.WORK_DIR).iterdir()} == kept
        assert (
            "Download https://repo.examples.test/maven2/org/apache/commons/commons-lang3"
            in (run / names.VERIFIER_OUT / names.TEST_OUTPUT_LOG).read_text()
        )

        # The agents' own faults, in one invocation: all 0.
        out = ws.snakemake(*(ws.target(name, FIXED) for name in AGENTS))
        assert out.returncode == 0, out.stderr[-3000:]
    results = {name: ws.result(name, FIXED) for name in AGENTS}
    assert all(r is not None and r.status is Status.UNRESOLVED and r.reward == 0.0 for r in results.values())
    reasons = {name: r.reason for name, r in results.items() if r is not None}
    assert reasons == {
        "careless": "p2p_regressed",
        "compile-error": "build_failed",
        "missing-dependency": "build_failed",
        "dead-host": "build_failed",
    }
    logs = {
        name: (ws.run_dir(name, FIXED) / names.VERIFIER_OUT / names.TEST_OUTPUT_LOG).read_text()
        for name in AGENTS
    }
    assert "Could not find org.apache.commons:commons-nothere:1.0" in logs["missing-dependency"]
    assert "127.0.0.1:9" in logs["dead-host"] and "Connection refused" in logs["dead-host"]
    assert "error:" in logs["compile-error"]
    careless_run = results["careless"]
    assert careless_run is not None
    regressed = careless_run.verifier.category("p2p").missing or []
    assert "tally.AmountTest.rejectsACommaAsDecimalSeparator" in regressed
