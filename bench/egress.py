"""Section `egress`: what the recording egress proxy (`egress: {record: urls}`) costs, side by side.

- `downloads`: the same set of files (EGRESS_FILES files, EGRESS_MB in all, like a Gradle cold cache) fetched
  over HTTPS by a Python client in an example's task image, straight from a Maven-layout server (`direct`)
  and through an allowlist phase's recording proxy (`recorded`), and through the host-only tinyproxy
  (`hosts`, a tunnel: the floor); target recorded / direct <= 1.3. The server is a Python TLS server in the
  same image on an internal network of the section's own (a throwaway CA), reached by the name
  repo.examples.test, so nothing leaves this host and nothing depends on the stand-in being started.
- `phase_start`: entering an allowlist phase (proxy up, CA trusted, JDKs pointed at it) with each proxy.
- `single_run`: one oracle run of an example task (solve + verify steps in-process) whose agent phase
  allows the server's host, with `record: hosts` and with `record: urls`; target urls / hosts <= 1.1.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
import uuid
from pathlib import Path
from typing import Any

import yaml

from bench.common import Context, Row, log, task_image
from kotlin_bench.core import names, retrieval
from kotlin_bench.dag import smk
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine import containers, egress, network
from kotlin_bench.engine.engine import connect
from kotlin_bench.runs import handoff, runner
from kotlin_bench.runs.agents import Agent
from kotlin_bench.runs.verify import VerifierOptions
from kotlin_bench.tools.standin_repo import throwaway_tls

TASK = "examples_calc-4"
HOST = "repo.examples.test"
EGRESS_FILES = 500
EGRESS_MB = 200
LABELS = {"kotlin-bench.bench": "egress"}
SERVE = """
import http.server, ssl, functools, os
os.makedirs("/srv/repo/maven2/bench", exist_ok=True)
for i in range({files}):
    d = f"/srv/repo/maven2/bench/a{{i}}/1.0"
    os.makedirs(d, exist_ok=True)
    with open(f"{{d}}/a{{i}}-1.0.jar", "wb") as f:
        f.write(os.urandom({size}))
open("/srv/ready", "w").close()
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory="/srv/repo")
class Quiet(handler.func):
    def log_message(self, *a): pass
server = http.server.ThreadingHTTPServer(("0.0.0.0", 443), functools.partial(Quiet, directory="/srv/repo"))
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain("/srv/tls/server.crt", "/srv/tls/server.key")
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
"""
# Four connections at a time, as a build tool's resolver does.
CLIENT = f"""
import concurrent.futures, urllib.request
def get(i):
    url = f"https://{HOST}/maven2/bench/a{{i}}/1.0/a{{i}}-1.0.jar"
    with urllib.request.urlopen(url, timeout=120) as r:
        return len(r.read())
with concurrent.futures.ThreadPoolExecutor(4) as pool:
    print(sum(pool.map(get, range({EGRESS_FILES}))))
"""


@contextlib.contextmanager
def _server(engine: Any, image: str, tls: Path) -> Any:
    outside = network.internal_network(engine, f"kotlin-bench-bench-egress-{uuid.uuid4().hex[:8]}", LABELS)
    size = EGRESS_MB * 2**20 // EGRESS_FILES
    server = engine.client.containers.create(
        image, ["python3", "-c", SERVE.format(files=EGRESS_FILES, size=size)], labels=LABELS
    )
    try:
        outside.connect(server, aliases=[HOST])
        engine.client.networks.get(engine.default_network).disconnect(server)
        containers.put_files(server, "/", {"srv/tls/server.crt": (tls / "server.crt").read_bytes(),
                           "srv/tls/server.key": (tls / "server.key").read_bytes()})  # fmt: skip
        server.start()
        wait = "for i in $(seq 600); do [ -e /srv/ready ] && exit 0; sleep 0.2; done; exit 1"
        assert server.exec_run(["sh", "-c", wait]).exit_code == 0, "the bench server did not start"
        yield outside
    finally:
        server.remove(force=True)
        network._remove_network(engine, outside)


def _client(engine: Any, image: str, key: str, tls: Path) -> Any:
    container = containers.start(engine, image, key, LABELS, 2, 2048, 4096)
    bundle = container.exec_run(["cat", egress.BUNDLE]).output + (tls / "ca.crt").read_bytes()
    containers.put_files(container, "/etc/ssl/certs", {"ca-certificates.crt": bundle})
    containers.put_files(container, "/tmp", {"client.py": CLIENT.encode()})
    return container


def measure_downloads(ctx: Context, engine: Any, image: str, tls: Path, outside: Any, rep: int) -> list[Row]:
    rows = []
    variants = ["direct", "recorded", "hosts"]
    for variant in variants[rep % 3 :] + variants[: rep % 3]:
        key = f"bench-egress.{uuid.uuid4().hex[:8]}.1"
        container = _client(engine, image, key, tls)
        try:
            started = time.monotonic()
            if variant == "direct":
                network._detach_all(container)
                outside.connect(container)
                done = container.exec_run(["python3", "/tmp/client.py"])
                entered = 0.0
            else:
                setup = egress.EgressSetup(
                    egress.EgressPolicy(
                        record=egress.Record.URLS if variant == "recorded" else egress.Record.HOSTS
                    ),
                    retrieval.Facts(("examples:calc",), "1.0.1-SNAPSHOT", "1.1.0", None),
                    egress.ensure_ca(ctx.tmp / "egress-ca"),
                    ctx.tmp / f"egress-{variant}-{rep}.jsonl",
                )
                with network.enter_phase(
                    engine, container, "allowlist", [HOST], key, egress_network=outside.name,
                    recording=setup if variant == "recorded" else None,
                ) as phase:  # fmt: skip
                    entered = time.monotonic() - started
                    started = time.monotonic()
                    done = container.exec_run(["python3", "/tmp/client.py"], environment=phase.env)
            seconds = time.monotonic() - started
            total = done.output.decode().strip().splitlines()[-1] if done.output else ""
            ok = done.exit_code == 0 and total == str(EGRESS_MB * 2**20 // EGRESS_FILES * EGRESS_FILES)
            note = "" if ok else done.output.decode()[-300:]
            rows.append(Row("egress", "downloads", variant, TASK, rep, "wall_sec", seconds, ok=ok, note=note))
            if variant != "direct":
                rows.append(Row("egress", "phase_start", variant, TASK, rep, "enter_sec", entered, ok=ok))
            log(f"egress downloads rep {rep} {variant}: {seconds:.2f}s (phase start {entered:.2f}s) ok={ok}")
        finally:
            containers.reap(engine.client, key)
            network.reap_networks(engine, key)
    return rows


def measure_run(ctx: Context, rep: int) -> list[Row]:
    """One oracle run whose agent phase allows the server's host (so that it has a proxy), both records."""
    assert ctx.workspace is not None
    config = yaml.safe_load((ctx.workspace / "config.yaml").read_text(encoding="utf-8"))
    rows = []
    records = [egress.Record.HOSTS, egress.Record.URLS]
    for record in records[rep % 2 :] + records[: rep % 2]:
        run_dir = ctx.tmp / "egress-runs" / str(record) / f"rep-{rep}"
        with contextlib.chdir(ctx.workspace):
            task = load_task((ctx.workspace / "examples/tasks" / TASK).resolve())
            task = dataclasses.replace(task, agent=dataclasses.replace(task.agent, allowed_hosts=(HOST,)))
            started = time.monotonic()
            image = smk.task_image(config, task)
            runner.solve_step(
                task, Agent("bench-egress", "oracle"), rep + 1, run_dir / names.WORK_DIR, image,
                handoff.Limits.from_config(config.get("capture", {})), Path.cwd(), None,
                egress.EgressPolicy(record=record), task_facts(),
            )  # fmt: skip
            result = runner.verify_step(
                task, run_dir / names.WORK_DIR / names.WORK_FILE, run_dir, 1,
                functools.partial(smk.task_image, config, task), VerifierOptions.from_config(config.get("verifier", {})),
            )  # fmt: skip
            seconds = time.monotonic() - started
        ok = result.status == "resolved"
        rows.append(Row("egress", "single_run", str(record), TASK, rep, "wall_sec", seconds, ok=ok))
        log(f"egress single run rep {rep} record {record}: {seconds:.2f}s ok={ok}")
    return rows


def task_facts() -> retrieval.Facts:
    return retrieval.Facts(("examples:calc",), "1.0.1-SNAPSHOT", "1.1.0", None)


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    settings = smk.configured_engine(yaml.safe_load((ctx.workspace / "config.yaml").read_text()))
    # the section's own server answers to the stand-in's name: without the config's extra_hosts, which
    # would send the proxies to the machine's stand-in instead
    engine = connect(dataclasses.replace(settings, extra_hosts=()))
    image = task_image(ctx.workspace, TASK).id
    tls = throwaway_tls(ctx.tmp / "egress-tls", HOST, "bench egress CA")
    network.ensure_proxy_image(engine, recorded=True)
    network.ensure_proxy_image(engine)
    with _server(engine, image, tls) as outside:
        for rep in range(ctx.reps):
            ctx.recorder.add(*measure_downloads(ctx, engine, image, tls, outside, rep))
            ctx.recorder.add(*measure_run(ctx, rep))
