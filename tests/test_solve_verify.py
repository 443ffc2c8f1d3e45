"""Solving and verifying are separate steps: the agent's work is kept, and whatever only verification reads
(tests/, expected lists, the verifier's configuration) is re-verified without redoing it; verifications can
be repeated (verdict-flaky runs are flagged), regraded with a preview, and results of 0.2 migrated."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.engine.engine import connect
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import EXAMPLES, REPO, snakemake
from tests.test_workflow_e2e import REPORT_JOBS, planned_jobs

pytestmark = pytest.mark.usefixtures("docker_engine")
TASK = "examples_calc-4"
GOLD = (REPO / "examples/adversarial/attacks/gold-script.sh").read_text(encoding="utf-8")


def _work_files(ws: Path, agent: str, task: str = TASK) -> dict[str, tuple[bytes, int]]:
    """Every file of a run's work directory: its bytes and mtime."""
    work = ws / names.work_dir(agent, task, 1)
    return {
        str(p.relative_to(work)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in work.rglob("*")
        if p.is_file()
    }


def _verdict(ws: Path, agent: str, task: str = TASK) -> tuple[float, str | None, dict]:
    data = json.loads((ws / names.verify_result(agent, task, 1)).read_text(encoding="utf-8"))
    return data["reward"], data["reason"], data["verifier"].get("categories")


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Path:
    return finished_examples.clone(tmp_path_factory.mktemp("solve-verify") / "ws").root


def test_what_only_verification_reads_is_reverified_without_redoing_the_agents_work(ws: Path) -> None:
    tests = ws / "examples/tasks" / TASK / "tests"
    before = {agent: (_work_files(ws, agent), _verdict(ws, agent)) for agent in ("oracle", "nop")}
    _append(tests / "junit_compare.py", "# a comment, as a new user would add\n")
    _append(tests / "test.sh", "# a comment\n")
    assert planned_jobs(ws) == REPORT_JOBS | {"verify": 2}
    out = snakemake(ws)
    assert out.returncode == 0, out.stderr[-3000:]
    for agent, (files, verdict) in before.items():
        assert _work_files(ws, agent) == files, agent  # byte-identical, mtimes too
        assert _verdict(ws, agent) == verdict, agent
    assert planned_jobs(ws) == {}

    # The same for every file of tests/, the verifier's phase of task.toml and the verifier's config.
    _append(tests / "task.env", "# a comment\n")
    assert planned_jobs(ws) == REPORT_JOBS | {"verify": 2}
    _append(tests / "kotlin_logs_collector.sh", "# a comment\n")
    assert planned_jobs(ws) == REPORT_JOBS | {"verify": 2}
    Workspace(ws).edit_task(TASK, "verifier", "timeout_sec", "301.0")
    assert planned_jobs(ws) == REPORT_JOBS | {"verify": 2}
    (ws / "strict.yaml").write_text(yaml.safe_dump({"verifier": {"test_patch": "strict"}}))
    assert planned_jobs(ws, "--configfile", "strict.yaml") == REPORT_JOBS | {"verify": 2 * len(EXAMPLES)}
    # What the agent reads redoes its work: its phase of task.toml, the oracle's gold patch.
    Workspace(ws).edit_task(TASK, "agent", "timeout_sec", "301.0")
    assert planned_jobs(ws) == REPORT_JOBS | {"solve": 2, "verify": 2}


def test_a_corrected_expected_list_is_reverified_like_a_run_from_scratch(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    ws = finished_examples.clone(tmp_path / "ws").root
    expected_path = ws / "examples/tasks" / TASK / names.EXPECTED_TESTS
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    moved = expected["f2p_tests"][0]  # the correction: one f2p test listed as p2p
    expected["f2p_tests"].remove(moved)
    expected["p2p_tests"].append(moved)
    expected_path.write_text(json.dumps(expected, indent=2), encoding="utf-8")
    work = _work_files(ws, "oracle")
    assert planned_jobs(ws) == REPORT_JOBS | {"verify": 2}
    out = snakemake(ws)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _work_files(ws, "oracle") == work
    reverified = _verdict(ws, "oracle")
    assert reverified[:2] == (0.0, "expected_missing") and moved in reverified[2]["p2p"]["missing"]
    shutil.rmtree(ws / names.run_dir("oracle", TASK, 1))  # the same run from scratch
    out = snakemake(ws)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _verdict(ws, "oracle") == reverified


# --------------------------------------------------------------------------- repeated verification


class Coin(http.server.BaseHTTPRequestHandler):
    """Answers heads, tails, heads, ...: the chance a flaky fix depends on, on this host only."""

    tosses = 0
    lock = threading.Lock()

    def do_GET(self) -> None:
        with Coin.lock:
            side = "heads" if Coin.tosses % 2 == 0 else "tails"
            Coin.tosses += 1
        body = side.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def coin() -> Iterator[str]:
    """A coin on the engine's bridge gateway (the verifier phase of the examples is public): its URL."""
    gateway = connect().client.networks.get("bridge").attrs["IPAM"]["Config"][0]["Gateway"]
    server = http.server.ThreadingHTTPServer((gateway, 0), Coin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{gateway}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def flaky_gold(coin_url: str) -> str:
    """The real fix of calc #3, except that unary minus works only when a coin tossed once per test JVM
    (at verification time) shows heads."""
    coin = (
        "cat > src/main/kotlin/calc/Coin.kt <<'KT'\npackage calc\n\nobject Coin {\n"
        f'    val heads: Boolean by lazy {{ java.net.URL("{coin_url}").readText().trim() == "heads" }}\n'
        "}\nKT\n"
    )
    return GOLD.replace(r"\1    -factor()", r"\1    if (Coin.heads) -factor() else factor()") + coin


def test_a_fix_that_holds_on_some_verifications_is_verdict_flaky(
    tmp_path: Path, finished_examples: Workspace, coin: str
) -> None:
    ws = finished_examples.clone(tmp_path / "ws")
    script = ws.write("agents/flaky-gold.sh", flaky_gold(coin), 0o755)
    agents = [{"name": n, "kind": n} for n in ("oracle", "nop")]
    agents.append({"name": "flaky", "kind": "script", "script": script})
    ws.configure([TASK], agents, verify={"repeats": 3})
    out = ws.snakemake()
    assert out.returncode == 0, out.stderr[-3000:]
    summary = pd.read_csv(ws.root / names.SUMMARY_CSV).set_index("agent")
    assert summary.loc["oracle", "repeat_rewards"] == "1,1,1" and not summary.loc["oracle", "verdict_flaky"]
    assert summary.loc["nop", "repeat_rewards"] == "0,0,0" and not summary.loc["nop", "verdict_flaky"]
    assert summary.loc["flaky", "verdict_flaky"]
    assert sorted(summary.loc["flaky", "repeat_rewards"].split(",")) == ["0", "1", "1"]
    assert "NegativeNumbers.negates a leading number()" in summary.loc["flaky", "flipped_tests"]
    assert "1 run(s) verdict-flaky" in out.stdout + out.stderr
    assert Coin.tosses == 3  # one verification, one JVM, one toss each; the agent phase tossed none
    assert ws.work("flaky", TASK).status == "done"


# --------------------------------------------------------------------------- regrade and migration


def test_a_regrade_shows_what_changes_before_it_applies_it_and_keeps_the_previous_verdict(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    ws = finished_examples.clone(tmp_path / "ws").root
    (ws / "one.yaml").write_text(yaml.safe_dump({"tasks": [TASK]}))
    expected_path = ws / "examples/tasks" / TASK / names.EXPECTED_TESTS
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    expected["p2p_tests"].append(expected["f2p_tests"].pop())
    expected_path.write_text(json.dumps(expected, indent=2), encoding="utf-8")
    runs = {p: p.read_bytes() for p in (ws / "results/runs").rglob("*") if p.is_file()}

    preview = subprocess.run(
        ["kotlin-bench", "regrade", "--configfile", "one.yaml"], cwd=ws, capture_output=True, text=True
    )
    assert preview.returncode == 0, preview.stdout[-2000:] + preview.stderr[-3000:]
    assert "regrade: 1 run 1 -> 0, 1 unchanged; nothing was changed" in preview.stdout
    # the terminal ends on the per-agent headline, not on Snakemake's job output or changes.md
    assert preview.stdout.splitlines()[-4:] == [
        "nop: 0/1 resolved now, 0/1 after the regrade (1 unchanged)",
        "oracle: 1/1 resolved now, 0/1 after the regrade (1 run 1 -> 0, 0 unchanged)",
        "details: results/regrade/changes.md",
        "regrade: 1 run 1 -> 0, 1 unchanged; nothing was changed (apply with `kotlin-bench regrade --apply`)",
    ], preview.stdout
    assert "Finished job" not in preview.stdout + preview.stderr
    assert {p: p.read_bytes() for p in (ws / "results/runs").rglob("*") if p.is_file()} == runs

    applied = subprocess.run(
        ["kotlin-bench", "regrade", "--apply", "--configfile", "one.yaml"],
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert "1 run(s) keep their previous verdict" in applied.stdout
    run = ws / names.run_dir("oracle", TASK, 1)
    assert json.loads((run / "result.json").read_text())["reward"] == 0.0
    assert json.loads((run / "previous/1/result.json").read_text())["reward"] == 1.0
    assert (run / "previous/1/verifier/junit.xml").is_file() and (run / "verifier/junit.xml").is_file()
    assert _work_files(ws, "oracle") == {
        str(p.relative_to(run / "work")): (runs[p], p.stat().st_mtime_ns)
        for p in (run / "work").rglob("*")
        if p.is_file()
    }
    assert planned_jobs(ws, "--configfile", "one.yaml") == REPORT_JOBS  # nothing to solve or verify


def _as_written_by_0_2(run: Path) -> None:
    """Put a finished run directory back into the 0.2 layout: the agent's files beside result.json, no
    work record, the result's reason a raw code."""
    for item in (run / "work").iterdir():
        if item.name != names.WORK_FILE:
            shutil.move(str(item), str(run / item.name))
    shutil.rmtree(run / "work")
    data = json.loads((run / "result.json").read_text())
    for key in ("reason_detail", "failed_step", "repeat", "work_sha256", "fresh_verdict"):
        data.pop(key, None)
    if data["status"] == "unresolved":
        data["reason"] = data["verifier"]["reasons"][0].split(":")[0]
    (run / "result.json").write_text(json.dumps(data))


def test_results_of_0_2_are_refused_then_migrated_without_solving_again(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    ws = finished_examples.clone(tmp_path / "ws").root
    for agent in ("oracle", "nop"):
        _as_written_by_0_2(ws / names.run_dir(agent, TASK, 1))
    refused = snakemake(ws, "--dry-run")
    assert refused.returncode != 0
    assert re.search(
        r"2 run\(s\) have results layout 1, where one step solved and scored.*run `kotlin-bench migrate` once",
        refused.stdout + refused.stderr,
    )
    done = subprocess.run(["kotlin-bench", "migrate"], cwd=ws, capture_output=True, text=True)
    assert done.returncode == 0 and "2 run(s) migrated from results layout 1 to 2" in done.stdout, (
        done.stdout + done.stderr
    )
    nop = json.loads((ws / names.verify_result("nop", TASK, 1)).read_text())
    assert (nop["reason"], nop["reason_detail"].split(";")[0]) == ("no_fixed_test", "no_fixed_test")
    assert (ws / names.work_record("oracle", TASK, 1)).is_file()
    assert (ws / names.work_dir("oracle", TASK, 1) / names.AGENT_DIFF).read_text().startswith("diff --git")
    planned = planned_jobs(ws)
    assert "solve" not in planned  # no agent runs again
    out = snakemake(ws)
    assert out.returncode == 0, out.stderr[-3000:]
    assert _verdict(ws, "oracle")[0] == 1.0 and _verdict(ws, "nop")[0] == 0.0
