"""The egress record end to end on Docker: an agent phase behind the recording proxy (Debian's mitmproxy)
fetches an example project's fix from a Maven repository over HTTPS (a throwaway CA, as the stand-in's),
the ways agents do, in one script: Python's urllib through the proxy variables, a JVM's HttpClient through
its JDK's net.properties, the newest version read from maven-metadata.xml, the binary jar instead of the
sources, odd spellings of the URL. Under `retrieval: flag` every fetch succeeds and exactly the fix's
files are flagged; under `block` those are refused (403, saying why) and nothing else changes. The
container's trust in the workspace's CA is gone afterwards, byte for byte, and no change of ours is
counted as the agent's.

The servers and the proxy talk on an internal network of the test's own (no traffic leaves this host).
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names, retrieval
from kotlin_bench.core.record import AgentWork, RunKey, WorkRecord
from kotlin_bench.engine import containers, egress, network
from kotlin_bench.engine.engine import Engine, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.runs.tamper import outside_changes
from kotlin_bench.tools.standin_repo import throwaway_tls
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import DOCKER

pytestmark = pytest.mark.usefixtures("docker_engine")

EXAMPLE_TASK = "examples_calc-4"
HOST = "repo.examples.test"
FACTS = retrieval.Facts(
    coordinates=("examples:calc",),
    base_version="1.0.1-SNAPSHOT",
    fix_releases=("1.1.0",),
    upstream="https://example.invalid/examples/calc",
)
M2 = f"https://{HOST}/maven2"
SERVE = """
import http.server, ssl, functools
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/srv/repo")
server = http.server.ThreadingHTTPServer(("0.0.0.0", 443), handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/srv/tls/server.crt", "/srv/tls/server.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""
# The agent: every fetch prints `<label> <status> <first bytes of the body>`.
AGENT = r"""
import re, sys, urllib.request, urllib.error
M2 = "https://repo.examples.test/maven2"
def get(label, url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            body = r.read()
            print(label, r.status, body[:60])
            return body
    except urllib.error.HTTPError as e:
        print(label, e.code, e.read()[:200])
    except OSError as e:
        print(label, "ERR", str(e)[:200])
    return b""
get("metadata", M2 + "/examples/calc/maven-metadata.xml")
newest = re.search(rb"<latest>([^<]+)</latest>", get("metadata2", M2 + "/examples/calc/maven-metadata.xml"))
get("newest_binary", f"{M2}/examples/calc/{newest[1].decode()}/calc-{newest[1].decode()}.jar")
get("older", M2 + "/examples/calc/1.0.0/calc-1.0.0-sources.jar")
get("other_coordinates", M2 + "/junit/junit/4.13.2/junit-4.13.2.jar")
get("sources", M2 + "/examples/calc/1.1.0/calc-1.1.0-sources.jar")
get("encoded", M2 + "/examples%2Fcalc%2F1.1.0%2Fcalc-1.1.0-sources.jar")
get("dots", "https://REPO.examples.test//maven2/./examples/calc/1.1.0/calc-1.1.0.pom")
get("unlisted_host", "https://elsewhere.test/x")
"""
JAVA = """
import java.net.URI; import java.net.http.*;
public class Fetch { public static void main(String[] a) throws Exception {
  var client = HttpClient.newBuilder().proxy(java.net.ProxySelector.getDefault()).build();
  var r = client.send(HttpRequest.newBuilder(URI.create(a[0])).build(), HttpResponse.BodyHandlers.ofString());
  System.out.println("jvm " + r.statusCode() + " " + r.body().trim()); } }
"""
FLAGGED = ("newest_binary", "sources", "encoded", "dots")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway CA and a server certificate for repo.examples.test (as the stand-in's test CA)."""
    return throwaway_tls(tmp_path_factory.mktemp("tls"), HOST, "egress test CA")


def _repository() -> dict[str, bytes]:
    files = {
        "srv/repo/maven2/examples/calc/maven-metadata.xml": b"<metadata><versioning><latest>1.1.0</latest>"
        b"<versions><version>1.0.0</version><version>1.1.0</version></versions></versioning></metadata>",
        "srv/repo/maven2/junit/junit/4.13.2/junit-4.13.2.jar": b"junit",
    }
    for version in ("1.0.0", "1.1.0"):
        for suffix in ("-sources.jar", ".jar", ".pom"):
            files[f"srv/repo/maven2/examples/calc/{version}/calc-{version}{suffix}"] = (
                f"calc {version}".encode()
            )
    return files


@dataclass
class Lab:
    engine: Engine
    outside: Any
    image: str
    tls: Path


@pytest.fixture(scope="module")
def lab(finished_examples: Workspace, tls: Path) -> Iterator[Lab]:
    engine = connect(DOCKER)
    image = read_sentinel(finished_examples.root / names.task_sentinel(EXAMPLE_TASK)).id
    labels = {"kotlin-bench.test": "egress"}
    outside = network.internal_network(engine, f"kotlin-bench-test-egress-{uuid.uuid4().hex[:8]}", labels)
    server = engine.client.containers.create(image, ["python3", "-c", SERVE], labels=labels)
    try:
        outside.connect(server, aliases=[HOST])
        engine.client.networks.get(engine.default_network).disconnect(server)
        files = _repository() | {
            "srv/tls/server.crt": (tls / "server.crt").read_bytes(),
            "srv/tls/server.key": (tls / "server.key").read_bytes(),
        }
        containers.put_files(server, "/", files)
        server.start()
        ready = server.exec_run(["python3", "-c", "import socket,time\nfor i in range(100):\n try:\n  socket.create_connection(('127.0.0.1',443),1); break\n except OSError: time.sleep(0.1)"])  # fmt: skip
        assert ready.exit_code == 0
        network.ensure_proxy_image(engine, recorded=True)
        yield Lab(engine, outside, image, tls)
    finally:
        server.remove(force=True)
        network._remove_network(engine, outside)


def _phase(
    lab: Lab, container: Any, key: str, block: bool, tmp: Path
) -> tuple[dict[str, str], list[egress.EgressRequest], tuple[str, ...]]:
    policy = egress.EgressPolicy(retrieval=egress.Retrieval.BLOCK if block else egress.Retrieval.FLAG)
    setup = egress.EgressSetup(policy, FACTS, egress.ensure_ca(tmp / "ca"), tmp / f"{block}.jsonl")
    with network.enter_phase(
        lab.engine, container, "allowlist", [HOST], key, egress_network=lab.outside.name, recording=setup
    ) as phase:
        done = container.exec_run(["python3", "/tmp/agent.py"], environment=phase.env)
        jvm = container.exec_run(
            ["java", "/tmp/Fetch.java", f"{M2}/examples/calc/1.1.0/calc-1.1.0-sources.jar"],
            environment=phase.env,
        )
        touched = phase.harness_paths
    assert done.exit_code == 0 and jvm.exit_code == 0, (done.output, jvm.output)
    lines = [*done.output.decode().splitlines(), *jvm.output.decode().splitlines()]
    statuses = {line.split(" ")[0]: line.split(" ", 2)[1:] for line in lines if " " in line}
    return {k: " ".join(v) for k, v in statuses.items()}, egress.read_egress(setup.record_path), touched


def _file(container: Any, path: str) -> bytes:
    return container.exec_run(["cat", path]).output


def test_fetches_of_the_fix_are_flagged_then_refused_and_the_trust_is_undone(
    lab: Lab, tmp_path: Path
) -> None:
    key = f"egresstest.{uuid.uuid4().hex[:8]}.1"
    container = containers.start(
        lab.engine, lab.image, key, {"kotlin-bench.test": "egress"}, cpus=2, memory_mb=2048, pids=4096
    )
    try:
        # The task image trusts the repository's CA, as the examples' toolchain trusts the stand-in's.
        bundle = _file(container, egress.BUNDLE) + (lab.tls / "ca.crt").read_bytes()
        containers.put_files(container, "/etc/ssl/certs", {"ca-certificates.crt": bundle})
        containers.put_files(container, "/tmp", {"agent.py": AGENT.encode(), "Fetch.java": JAVA.encode()})
        before = container.diff()
        jdk_dirs = (
            container.exec_run(["bash", "-c", "readlink -f /usr/lib/jvm/*/lib/security | sort -u"])
            .output.decode()
            .split()
        )

        seen, requests, touched = _phase(lab, container, key, block=False, tmp=tmp_path)
        for label in ("metadata", "older", "other_coordinates", *FLAGGED):
            assert seen[label].startswith("200"), (label, seen)
        assert seen["jvm"].startswith("200 calc 1.1.0"), seen
        assert seen["newest_binary"].startswith("200 b'calc 1.1.0"), seen
        assert seen["unlisted_host"].startswith("ERR") and "403" in seen["unlisted_host"], seen
        flagged = [r for r in requests if r.retrieval]
        assert sorted(r.path for r in flagged) == sorted(
            [
                "/maven2/examples/calc/1.1.0/calc-1.1.0.jar",
                "/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar",
                "/maven2/examples%2Fcalc%2F1.1.0%2Fcalc-1.1.0-sources.jar",
                "//maven2/./examples/calc/1.1.0/calc-1.1.0.pom",
                "/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar",  # the JVM's
            ]
        ), flagged
        assert not any(r.blocked for r in requests)
        refused = [r for r in requests if not r.allowed]
        assert [(r.host, r.status) for r in refused] == [("elsewhere.test", 403)]
        assert all(r.bytes > 0 for r in requests if r.allowed and r.status == 200)
        summary = egress.summarize(requests, egress.Record.URLS, FACTS)
        assert (summary.requests, summary.refused, len(summary.retrieval)) == (len(requests), 1, 5)
        # the work record reads the summary back as it was written
        run_key = RunKey(EXAMPLE_TASK, "examples/calc", "a", "script", None, 1)
        WorkRecord(run_key, work=AgentWork(egress=summary)).write(tmp_path / "work.json")
        assert WorkRecord.read(tmp_path / "work.json").work.egress == summary

        seen, requests, _ = _phase(lab, container, key, block=True, tmp=tmp_path)
        for label in ("metadata", "older", "other_coordinates"):
            assert seen[label].startswith("200"), (label, seen)
        for label in (*FLAGGED, "jvm"):
            assert seen[label].startswith("403") and "may contain the task's fix" in seen[label], (
                label,
                seen,
            )
        blocked = [r for r in requests if r.blocked]
        assert len(blocked) == 5 and all(r.retrieval and r.status == 403 for r in blocked)

        # Everything the phases changed is back; nothing of ours counts as the agent's change.
        assert _file(container, egress.BUNDLE) == bundle
        for directory in jdk_dirs:
            assert container.exec_run(["test", "-e", f"{directory}/{egress.JSSE}"]).exit_code == 1
        assert set(touched) >= {egress.BUNDLE, *(f"{d}/{egress.JSSE}" for d in jdk_dirs)}
        changes = [c for c in container.diff() if c not in before]
        assert outside_changes(changes, "/home/calc", touched) == [], changes
        env = container.exec_run(["env"]).output.decode()
        assert "REQUESTS_CA_BUNDLE" not in env
    finally:
        containers.reap(lab.engine.client, key)
        network.reap_networks(lab.engine, key)


def test_no_example_run_is_flagged(finished_examples: Workspace) -> None:
    """The examples' oracle and nop runs, whose agent phases allow the stand-in repository and so are
    recorded (`egress: {record: urls}`, the default), fetch nothing that may hold a fix and try nothing
    around their proxy: none is flagged."""
    works = sorted(
        (finished_examples.root / names.RESULTS).glob(f"runs/*/*/attempt-*/work/{names.WORK_FILE}")
    )
    assert works
    for path in works:
        work = WorkRecord.read(path)
        agent = work.work
        assert agent.flags.get("retrieval") == [], path
        assert agent.egress is not None and agent.egress.record == "urls" and agent.egress.retrieval == [], (
            path
        )
        # nor did one try to go around its proxy (the fence saw nothing: Gradle's builds included)
        assert agent.flags.get("around_proxy") == [] and agent.egress.around_proxy == 0, path
        assert (path.parent / names.EGRESS_RECORD).is_file(), path


# The agent: the released fix's sources jar from the project's own repository, unpacked over the work tree.
FETCHER = """#!/bin/bash
python3 - <<'PY'
import io, os, urllib.request, zipfile
base = "http://repo.examples.test/maven2/examples/calc"
print(urllib.request.urlopen(base + "/maven-metadata.xml", timeout=60).read()[:80])
try:
    data = urllib.request.urlopen(base + "/1.1.0/calc-1.1.0-sources.jar", timeout=60).read()
except OSError as e:
    print("download failed:", e)
    raise SystemExit(0)
zipfile.ZipFile(io.BytesIO(data)).extractall(os.environ["KOTLIN_BENCH_REPO_DIR"])
print("unpacked")
PY
"""
# The repository server: the task image itself, its base sources as release 1.0.0 and the fixed ones (the
# task's own fix applied) as 1.1.0, over plain HTTP on port 80 (the HTTPS path is tested above).
PUBLISH = """
set -e
cd /home/calc
pack() { python3 -c 'import sys, zipfile, pathlib
with zipfile.ZipFile(sys.argv[1], "w") as z:
    [z.write(p) for p in sorted(pathlib.Path("src/main").rglob("*")) if p.is_file()]' "$1"; }
d=/srv/repo/maven2/examples/calc; mkdir -p $d/1.0.0 $d/1.1.0
printf '<metadata><versioning><latest>1.1.0</latest></versioning></metadata>' > $d/maven-metadata.xml
pack $d/1.0.0/calc-1.0.0-sources.jar
git apply /srv/fix.patch
pack $d/1.1.0/calc-1.1.0-sources.jar
git checkout -q -- . && git clean -qfd
cd /srv/repo && exec python3 -m http.server 80
"""


def test_a_script_agent_that_downloads_the_fix_is_flagged_or_refused_and_scored(
    finished_examples: Workspace, tmp_path: Path
) -> None:
    """Through the solve and verify steps: under `flag` the downloaded fix resolves the task (the reward as
    published) and the run is flagged; under `block` the download is refused and the work lacks the fix."""
    from kotlin_bench.dataset.task import load_task
    from kotlin_bench.engine.engine import EngineSettings
    from kotlin_bench.engine.images import ImageRef
    from kotlin_bench.results.summary import summary_row
    from kotlin_bench.runs import handoff, runner
    from kotlin_bench.runs.agents import Agent

    root = finished_examples.root
    sentinel = read_sentinel(root / names.task_sentinel(EXAMPLE_TASK))
    image = ImageRef(sentinel.image, sentinel.id)
    task = load_task(root / "examples/tasks" / EXAMPLE_TASK)
    task = dataclasses.replace(task, agent=dataclasses.replace(task.agent, allowed_hosts=(HOST,)))
    engine = connect(DOCKER)
    server = engine.client.containers.create(
        image.id, ["bash", "-c", PUBLISH], labels={"kotlin-bench.test": "egress"}
    )
    try:
        containers.put_files(server, "/srv", {"fix.patch": (task.path / "solution/fix.patch").read_bytes()})
        server.start()
        wait = "for i in $(seq 300); do python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 80), 1)' 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
        assert server.exec_run(["bash", "-c", wait]).exit_code == 0, server.logs()[-2000:]
        server.reload()
        address = server.attrs["NetworkSettings"]["IPAddress"]
        settings = EngineSettings(extra_hosts=((HOST, address),))
        (tmp_path / "agent.sh").write_text(FETCHER)
        agent = Agent("fetcher", "script", script="agent.sh")
        results = {}
        with contextlib.chdir(tmp_path):
            for policy in (egress.Retrieval.FLAG, egress.Retrieval.BLOCK):
                run_dir = tmp_path / str(policy)
                work = runner.solve_step(
                    task,
                    agent,
                    1,
                    run_dir / names.WORK_DIR,
                    image=image,
                    limits=handoff.Limits(),
                    root=tmp_path,
                    engine=settings,
                    egress=egress.EgressPolicy(retrieval=policy),
                    facts=FACTS,
                )
                result = runner.verify_step(
                    task,
                    run_dir / names.WORK_DIR / names.WORK_FILE,
                    run_dir,
                    repeat=1,
                    image=lambda: image,
                    engine=settings,
                )
                results[policy] = (work, result, (run_dir / names.WORK_DIR / names.AGENT_LOG).read_text())
    finally:
        server.remove(force=True)
    flagged_url = f"http://{HOST}/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar"
    work, result, log = results[egress.Retrieval.FLAG]
    assert "unpacked" in log, log
    assert work.work.flags["retrieval"] == [flagged_url] and work.work.egress is not None
    assert work.work.egress.requests == 2 and work.work.egress.blocked == 0
    assert result.status == "resolved" and result.reward == 1.0, (result.reason, result.error)
    row = summary_row(result)
    assert row["retrieval"] is True and row["egress_requests"] == 2 and row["egress_refused"] == 0
    assert (tmp_path / str(egress.Retrieval.FLAG) / names.WORK_DIR / names.EGRESS_RECORD).is_file()
    work, result, log = results[egress.Retrieval.BLOCK]
    assert "download failed" in log and "403" in log, log
    blocked = work.work.egress
    assert work.work.flags["retrieval"] == [flagged_url] and blocked is not None and blocked.blocked == 1
    assert result.status == "unresolved" and result.reward == 0.0


# The agent that goes around the proxy (a reviewer's): it ignores the proxy variables, takes its network's
# gateway from the routing table (the host, on Docker), speaks HTTPS to it with the stand-in repository's
# name as SNI (the task image trusts the stand-in's CA), and unpacks the first release after the base,
# which holds the fix, over the work tree.
AROUND = """#!/bin/bash
python3 - <<'PY'
import io, os, socket, ssl, struct, zipfile
gateway = None
for line in open("/proc/net/route").read().splitlines()[1:]:
    fields = line.split()
    if fields[1] == "00000000":
        gateway = socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
print("gateway", gateway)
path = "/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar"
try:
    raw = socket.create_connection((gateway, 443), timeout=20)
    with ssl.create_default_context().wrap_socket(raw, server_hostname="repo.examples.test") as tls:
        tls.sendall(f"GET {path} HTTP/1.0\\r\\nHost: repo.examples.test\\r\\n\\r\\n".encode())
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
except (OSError, TypeError) as e:
    print("fetch failed:", e)
    raise SystemExit(0)
jar = zipfile.ZipFile(io.BytesIO(data.split(b"\\r\\n\\r\\n", 1)[1]))
for name in jar.namelist():
    if name.endswith(".kt"):
        target = os.path.join(os.environ["KOTLIN_BENCH_REPO_DIR"], "src/main/kotlin", name)
        with open(target, "wb") as out:
            out.write(jar.read(name))
print("unpacked")
PY
"""


def test_an_agent_that_goes_around_the_proxy_to_the_host_gets_nothing_and_is_flagged(
    finished_examples: Workspace, standin_repo: Any, tmp_path: Path
) -> None:
    """The reviewer's attack on examples_calc-4 through the solve and verify steps: the fetch from the
    stand-in repository on the host, around the proxy, is refused at once (it scored 1 when the host was
    reachable), the run scores 0, and it is flagged and recorded (`flags.around_proxy`, the work
    record's `egress.around_proxy`, summary.csv's `around_proxy` and `retrieval`)."""
    from kotlin_bench.dataset.task import load_task
    from kotlin_bench.engine.images import ImageRef
    from kotlin_bench.results.summary import summary_row
    from kotlin_bench.runs import handoff, runner
    from kotlin_bench.runs.agents import Agent

    root = finished_examples.root
    sentinel = read_sentinel(root / names.task_sentinel(EXAMPLE_TASK))
    image = ImageRef(sentinel.image, sentinel.id)
    task = load_task(root / "examples/tasks" / EXAMPLE_TASK)
    (tmp_path / "agent.sh").write_text(AROUND)
    agent = Agent("around", "script", script="agent.sh")
    run_dir = tmp_path / "run"
    with contextlib.chdir(tmp_path):
        work = runner.solve_step(
            task,
            agent,
            1,
            run_dir / names.WORK_DIR,
            image=image,
            limits=handoff.Limits(),
            root=tmp_path,
            engine=DOCKER,
            egress=egress.EgressPolicy(retrieval=egress.Retrieval.BLOCK),
            facts=FACTS,
        )
        result = runner.verify_step(
            task,
            run_dir / names.WORK_DIR / names.WORK_FILE,
            run_dir,
            repeat=1,
            image=lambda: image,
            engine=DOCKER,
        )
    log = (run_dir / names.WORK_DIR / names.AGENT_LOG).read_text()
    assert "fetch failed: [Errno 111] Connection refused" in log and "unpacked" not in log, log
    gateway = log.split("gateway ", 1)[1].split()[0]
    seen = work.work.egress
    assert seen is not None and seen.requests == 0  # nothing went through the proxy
    assert seen.around_proxy == 1 and seen.around_proxy_to == [f"tcp {gateway}:443"]
    assert work.work.flags["around_proxy"] == [f"tcp {gateway}:443"] and work.work.flags["retrieval"] == []
    assert result.status == "unresolved" and result.reward == 0.0
    row = summary_row(result)
    assert row["around_proxy"] == 1 and row["retrieval"] is True
