"""The health check: how probe answers are read and tasks judged (pure), and `snakemake healthcheck` on the
example dataset with real containers: oracle and nop runs, and the network probe inside each task's agent
phase under three policies (an allowlist naming a local server, an empty allowlist, a public phase)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult, Status
from kotlin_bench.results.healthcheck import headline, health_table, judge_task
from kotlin_bench.runs.network_probe import NetworkCheck, Probe, ProbeResult, classify
from kotlin_bench.tools.workspace import Workspace
from tests.factories import make_result


@pytest.mark.parametrize(
    ("line", "mode", "outcome"),
    [
        ("repo1.maven.org proxy HTTP/1.0 200 Connection established", "allowlist", Probe.ANSWERED),
        ("github.com proxy HTTP/1.1 403 Filtered", "allowlist", Probe.BLOCKED),
        ("repo1.maven.org proxy HTTP/1.1 500 Unable to connect", "allowlist", Probe.UNREACHABLE),
        ("repo1.maven.org proxy none", "allowlist", Probe.UNREACHABLE),
        ("github.com proxy unreachable", "allowlist", Probe.ERROR),
        ("github.com direct failed: Temporary failure in name resolution", "no-network", Probe.BLOCKED),
        ("github.com direct failed: Name or service not known", "public", Probe.UNREACHABLE),
        ("github.com direct connected", "public", Probe.ANSWERED),
        ("github.com missing", "allowlist", Probe.ERROR),
    ],
)
def test_probe_answers(line: str, mode: str, outcome: Probe) -> None:
    found = classify(line, mode)
    assert found.outcome is outcome
    assert found.host == line.split()[0]


def check(allowed: Probe, blocked: Probe, task: str = "calc-1") -> NetworkCheck:
    return NetworkCheck(
        task,
        "allowlist",
        ProbeResult("repo1.maven.org", allowed, "detail a"),
        ProbeResult("github.com", blocked, "detail b"),
        "2026-12-01T00:00:00+00:00",
    )


def test_judging_a_task() -> None:
    oracle, nop = (
        make_result("calc-1"),
        make_result("calc-1", "nop", status="unresolved", reason="f2p_failed"),
    )
    ok = judge_task(oracle, nop, check(Probe.ANSWERED, Probe.BLOCKED))
    assert (ok["oracle"], ok["nop"], ok["verdict"], ok["reasons"]) == ("1", "0", "ok", "")
    offline = judge_task(oracle, nop, check(Probe.UNREACHABLE, Probe.BLOCKED))
    assert offline["verdict"] == "unverified" and offline["reasons"].startswith("repo1.maven.org unreachable")
    leak = judge_task(oracle, nop, check(Probe.ANSWERED, Probe.ANSWERED))
    assert leak["verdict"] == "FAIL" and leak["reasons"] == "github.com answered: detail b"
    refused = judge_task(oracle, nop, check(Probe.BLOCKED, Probe.BLOCKED))
    assert refused["verdict"] == "FAIL" and refused["reasons"] == "repo1.maven.org blocked: detail a"
    broken = make_result("calc-1", status="error", reason="RunError", error="engine went away")
    bad = judge_task(broken, make_result("calc-1", "nop"), check(Probe.ANSWERED, Probe.BLOCKED))
    assert bad["verdict"] == "FAIL"
    assert bad["reasons"] == "oracle errored: RunError: engine went away; nop scored 1 (resolved)"
    assert judge_task(None, nop, check(Probe.ANSWERED, Probe.BLOCKED))["reasons"] == "oracle no run"


def test_check_records_round_trip(tmp_path: Path) -> None:
    written = check(Probe.NONE, Probe.BLOCKED)
    written.write(tmp_path / "c.json")
    assert NetworkCheck.read(tmp_path / "c.json") == written
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match=r"bad\.json: not a network check"):
        NetworkCheck.read(tmp_path / "bad.json")


def test_headline() -> None:
    rows = [make_result(t) for t in ("a-1", "b-1")] + [
        make_result(t, "nop", status="unresolved") for t in ("a-1", "b-1")
    ]
    table = health_table(
        rows, [check(Probe.ANSWERED, Probe.BLOCKED, "a-1"), check(Probe.UNREACHABLE, Probe.BLOCKED, "b-1")]
    )
    assert headline(table).startswith("health check: 1 of 2 tasks ok, 1 unverified")
    table = health_table(
        rows, [check(Probe.ANSWERED, Probe.ANSWERED, "a-1"), check(Probe.ANSWERED, Probe.BLOCKED, "b-1")]
    )
    assert headline(table) == "health check: FAILED on 1 of 2 tasks: a-1"


# --------------------------------------------------------------------------- the real engine

CALC, SLUG, UNITS = "examples_calc-4", "examples_slug-8", "examples_units-12"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Workspace:
    """A clone of the session's finished default run: the sweep reuses the runs of the tasks it leaves
    unchanged (oracle and nop are the same run targets)."""
    return finished_examples.clone(tmp_path_factory.mktemp("healthcheck") / "ws")


@pytest.fixture(scope="module")
def server(workspace: Workspace) -> Iterator[str]:
    """A local HTTP server on the default bridge, port 443 (the probe asks for a tunnel there): its address."""
    from kotlin_bench.engine.engine import connect

    client = connect().client
    sentinel = json.loads((workspace.root / names.task_sentinel("examples_calc-4")).read_text())
    container = client.containers.run(
        sentinel["id"],
        ["python3", "-m", "http.server", "443"],
        detach=True,
        labels={"kotlin-bench.test": f"sanity-{uuid.uuid4().hex[:8]}"},
    )
    try:
        container.reload()
        yield container.attrs["NetworkSettings"]["Networks"]["bridge"]["IPAddress"]
    finally:
        container.remove(force=True)


@pytest.fixture(scope="module")
def sweep(workspace: Workspace, server: str) -> tuple[pd.DataFrame, str]:
    workspace.configure(
        [CALC, SLUG, UNITS], [{"name": "oracle", "kind": "oracle"}, {"name": "nop", "kind": "nop"}]
    )
    workspace.edit_task(CALC, "agent", "allowed_hosts", f'["{server}"]')  # the allowlist names the server
    workspace.edit_task(SLUG, "agent", "allowed_hosts", "[]")  # an empty allowlist: no network at all
    workspace.edit_task(UNITS, "agent", "allowed_hosts", "[]")
    workspace.edit_task(UNITS, "agent", "network_mode", '"public"')  # a leak: GitHub is not blocked
    out = workspace.snakemake("healthcheck")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    table = pd.read_csv(workspace.root / names.HEALTHCHECK_CSV, keep_default_na=False).set_index("task")
    return table, out.stdout


def test_health_table_on_the_examples(
    workspace: Workspace, server: str, sweep: tuple[pd.DataFrame, str]
) -> None:
    table, printed = sweep
    assert list(table.index) == [CALC, SLUG, UNITS]
    assert list(table["oracle"].astype(str)) == ["1"] * 3 and list(table["nop"].astype(str)) == ["0"] * 3
    calc, slug, units = (table.loc[t] for t in (CALC, SLUG, UNITS))
    assert (calc["agent phase"], calc["allowlisted host"], calc["github.com"], calc["verdict"]) == (
        "allowlist",
        f"{server}: answered",
        "blocked",
        "ok",
    )
    assert (slug["agent phase"], slug["github.com"], slug["verdict"]) == ("no-network", "blocked", "ok")
    assert slug["allowlisted host"] == "none (the allowlist is empty: the phase has no network)"
    assert (units["agent phase"], units["github.com"], units["verdict"]) == ("public", "unreachable", "FAIL")
    assert units["reasons"].startswith("github.com unreachable: no policy stops it")
    assert f"health check: FAILED on 1 of 3 tasks: {UNITS}" in printed
    assert f"| {CALC} | 1 | 0 | allowlist | {server}: answered | blocked | ok |" in printed
    github = NetworkCheck.read(workspace.root / names.network_check(CALC)).blocked
    assert github.outcome is Probe.BLOCKED and "403" in github.detail
    oracle = RunResult.read(workspace.root / names.verify_result("oracle", CALC, 1))
    assert oracle.status is Status.RESOLVED
    assert workspace.containers() == []  # every probe container and proxy is gone
