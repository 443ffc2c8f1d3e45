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
- `harbor_trial`: one terminus-2 trial (the harbor kind's solve step, in-process, against the stand-in
  model server on the docker bridge playing examples/models/examples_calc-4.json) on the record
  (`trial_recorded`: the task's allowlist phase, recording proxy, CA, JVM proxy) and with
  `isolate_network` (`trial_isolated`: no network); target recorded / isolated <= 1.1. Each must resolve
  (Harbor's own verdict); the recorded one must carry its egress record. Skipped without Harbor.

Section `fence` (`run_fence`, no workspace needed: the OS image and the host-only proxy's): entering and
leaving an allowlist phase with its network's fence (`kotlin_bench.engine.fence`: one nft call to install,
two to read and remove) and without it (today's network, `unfenced`), side by side, interleaved; target:
fenced - unfenced <= 0.2 s for entering, paired by repetition.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import ipaddress
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

from bench.common import HARBOR_BIN, REPO, Context, Row, log, task_image
from kotlin_bench.core import names, retrieval
from kotlin_bench.dag import smk
from kotlin_bench.dag.settings import Settings
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine import containers, egress, fence, network
from kotlin_bench.engine.engine import Engine, connect
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
    container = containers.start(engine, image, key, LABELS, cpus=2, memory_mb=2048, pids=4096)
    bundle = container.exec_run(["cat", egress.BUNDLE]).output + (tls / "ca.crt").read_bytes()
    containers.put_files(container, "/etc/ssl/certs", {"ca-certificates.crt": bundle})
    containers.put_files(container, "/tmp", {"client.py": CLIENT.encode()})
    return container


def measure_downloads(
    ctx: Context, engine: Any, image: str, *, tls: Path, outside: Any, rep: int
) -> list[Row]:
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
                    retrieval.Facts(
                        coordinates=("examples:calc",), base_version="1.0.1-SNAPSHOT", fix_releases=("1.1.0",)
                    ),
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
            image = smk.task_image(Settings.of(config), task)
            runner.solve_step(
                task,
                Agent("bench-egress", "oracle"),
                rep + 1,
                run_dir / names.WORK_DIR,
                image=image,
                limits=handoff.Limits.from_config(config.get("capture", {})),
                root=Path.cwd(),
                engine=None,
                egress=egress.EgressPolicy(record=record),
                facts=task_facts(),
            )
            result = runner.verify_step(
                task,
                run_dir / names.WORK_DIR / names.WORK_FILE,
                run_dir,
                repeat=1,
                image=functools.partial(smk.task_image, Settings.of(config), task),
                options=VerifierOptions.from_config(config.get("verifier", {})),
            )
            seconds = time.monotonic() - started
        ok = result.status == "resolved"
        rows.append(Row("egress", "single_run", str(record), TASK, rep, "wall_sec", seconds, ok=ok))
        log(f"egress single run rep {rep} record {record}: {seconds:.2f}s ok={ok}")
    return rows


def measure_trial(ctx: Context, model_url: str, rep: int) -> list[Row]:
    """One terminus-2 trial of TASK on the record and isolated, in the order of the repetition."""
    assert ctx.workspace is not None
    config = yaml.safe_load((ctx.workspace / "config.yaml").read_text(encoding="utf-8"))
    rows = []
    variants = ["trial_recorded", "trial_isolated"]
    for variant in variants[rep % 2 :] + variants[: rep % 2]:
        agent = Agent(
            f"bench-terminus-{variant.split('_')[1]}", "harbor", model="openai/standin-coder",
            harbor_agent="terminus-2", base_url=model_url, isolate_network=variant == "trial_isolated",
        )  # fmt: skip
        work_dir = ctx.tmp / "egress-trials" / variant / f"rep-{rep}" / names.WORK_DIR
        with contextlib.chdir(ctx.workspace):
            task = load_task((ctx.workspace / "examples/tasks" / TASK).resolve())
            image = smk.task_image(Settings.of(config), task)
            policy = egress.EgressPolicy.from_config(config.get("egress"))
            facts = load_dataset(Path(config["spec"])).task(TASK).retrieval_facts()
            started = time.monotonic()
            try:
                work = runner.solve_step(
                    task,
                    agent,
                    rep + 1,
                    work_dir,
                    image=image,
                    limits=handoff.Limits.from_config(config.get("capture", {})),
                    root=Path.cwd(),
                    engine=Settings.of(config).engine,
                    egress=policy,
                    facts=facts,
                )
            except Exception as exc:  # the row says why; the other variant still runs
                rows.append(Row("egress", "harbor_trial", variant, TASK, rep, "wall_sec", time.monotonic() - started,
                                ok=False, note=str(exc)[-300:]))  # fmt: skip
                continue
            seconds = time.monotonic() - started
        recorded = work.work.egress is not None and work.work.egress.recorded_urls()
        resolved = work.trial_verdict is not None and work.trial_verdict.reward == 1.0
        ok = resolved and recorded == (variant == "trial_recorded")
        rows.append(Row("egress", "harbor_trial", variant, TASK, rep, "wall_sec", seconds, ok=ok))
        if work.work.timings.agent_network_sec is not None:
            rows.append(Row("egress", "harbor_trial", variant, TASK, rep, "network_sec",
                            work.work.timings.agent_network_sec, ok=ok))  # fmt: skip
        log(f"egress harbor trial rep {rep} {variant}: {seconds:.2f}s ok={ok}")
    return rows


@contextlib.contextmanager
def _model_server(engine: Any) -> Any:
    """The stand-in model server on the docker bridge's gateway (terminus-2 calls it from the host)."""
    from kotlin_bench.tools.model_server import ModelServer, Running, read_conversations

    ipam = engine.client.networks.get(engine.default_network).attrs["IPAM"]["Config"][0]
    # Docker's default bridge lists no gateway: it is the subnet's first address (docker0's)
    bridge = ipam.get("Gateway") or str(next(ipaddress.ip_network(ipam["Subnet"]).hosts()))
    running = Running(ModelServer(read_conversations(REPO / "examples/models")), host=bridge)
    try:
        yield running.url()
    finally:
        running.stop()


def task_facts() -> retrieval.Facts:
    return retrieval.Facts(
        coordinates=("examples:calc",), base_version="1.0.1-SNAPSHOT", fix_releases=("1.1.0",)
    )


def run(ctx: Context) -> None:
    assert ctx.workspace is not None
    settings = Settings.of(yaml.safe_load((ctx.workspace / "config.yaml").read_text())).engine
    # the section's own server answers to the stand-in's name: without the config's extra_hosts, which
    # would send the proxies to the machine's stand-in instead
    engine = connect(dataclasses.replace(settings, extra_hosts=()))
    image = task_image(ctx.workspace, TASK).id
    tls = throwaway_tls(ctx.tmp / "egress-tls", HOST, "bench egress CA")
    network.ensure_proxy_image(engine, recorded=True)
    network.ensure_proxy_image(engine)
    with _server(engine, image, tls) as outside:
        for rep in range(ctx.reps):
            ctx.recorder.add(*measure_downloads(ctx, engine, image, tls=tls, outside=outside, rep=rep))
            ctx.recorder.add(*measure_run(ctx, rep))
    if not HARBOR_BIN.exists():
        log(f"egress harbor trials skipped: {HARBOR_BIN} missing (scripts/setup_harbor.sh)")
        return
    os.environ.setdefault("KOTLIN_BENCH_HARBOR", str(HARBOR_BIN.parents[2]))
    os.environ.setdefault("OPENAI_API_KEY", "sk-bench-standin")  # LiteLLM wants one; the stand-in ignores it
    with _model_server(engine) as url:
        for rep in range(ctx.reps):
            ctx.recorder.add(*measure_trial(ctx, url, rep))


FENCE_IMAGE = "kotlin-bench/os:bookworm"
FENCE_REPS = 10  # pairs at least: the fence's cost is milliseconds beside a second of proxy start-up


@contextlib.contextmanager
def unfenced() -> Iterator[None]:
    """The allowlist network as it was before the fence, for the comparison: no table is installed, read
    or removed."""
    with (
        mock.patch.object(
            fence, "install", lambda _e, name, _a, **_k: fence.Fence(name, fence.Kind.CONSTRUCTION)
        ),
        mock.patch.object(fence, "drop", lambda *_a, **_k: None),
    ):
        yield


@contextlib.contextmanager
def timed_fence(spent: dict[str, float]) -> Iterator[None]:
    """The fence's own calls timed: installing (`install`) and reading and removing (`close`)."""
    install, close = fence.install, fence.Fence.close

    def timed(what: str, call: Any) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.monotonic()
            try:
                return call(*args, **kwargs)
            finally:
                spent[what] = spent.get(what, 0.0) + time.monotonic() - started

        return run

    with (
        mock.patch.object(fence, "install", timed("install", install)),
        mock.patch.object(fence.Fence, "close", timed("close", close)),
    ):
        yield


def measure_fence(engine: Engine, rep: int) -> list[Row]:
    """Entering and leaving an allowlist phase (the host-only proxy) with the fence and without; and the
    fence's own calls."""
    rows = []
    variants = ["fenced", "unfenced"]
    for variant in variants[rep % 2 :] + variants[: rep % 2]:
        key = f"bench-fence.{uuid.uuid4().hex[:8]}.1"
        container = containers.start(engine, FENCE_IMAGE, key, LABELS, cpus=1, memory_mb=256, pids=256)
        spent: dict[str, float] = {}
        try:
            with unfenced() if variant == "unfenced" else timed_fence(spent):
                started = time.monotonic()
                phase = network.enter_phase(engine, container, "allowlist", [HOST], key)
                entered = time.monotonic() - started
                started = time.monotonic()
                phase.close()
                left = time.monotonic() - started
            ok = (phase.fence is not None) and (phase.fence.kind is fence.Kind.FIREWALL) == (
                variant == "fenced"
            )
            rows.append(Row("egress", "fence", variant, "-", rep, "enter_sec", entered, ok=ok))
            rows.append(Row("egress", "fence", variant, "-", rep, "leave_sec", left, ok=ok))
            for what, seconds in spent.items():
                rows.append(Row("egress", "fence", "calls", "-", rep, f"{what}_sec", seconds, ok=ok))
            log(f"fence rep {rep} {variant}: enter {entered:.3f}s, leave {left:.3f}s {spent}")
        finally:
            containers.reap(engine.client, key)
            network.reap_networks(engine, key)
    return rows


def run_fence(ctx: Context) -> None:
    engine = connect()
    network.ensure_proxy_image(engine)
    for rep in range(max(ctx.reps, FENCE_REPS)):
        ctx.recorder.add(*measure_fence(engine, rep))
