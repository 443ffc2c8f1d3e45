"""Model-driven agents end to end, offline, against the stand-in model server
(`kotlin_bench.tools.model_server`) on the docker bridge: the example script agent
(examples/agents/model-agent.sh) through the allowlist proxy of examples_calc-4's agent phase, and
Harbor's terminus-2 through the real `harbor` CLI, its agent phase on the record like the script's. Each
resolves the task: tokens and cost reach summary.csv, the trajectory the run page (headless Chromium),
and the API key passed with `env:` reaches the agent and no file under results/. A terminus-2 whose
scripted conversation (`model: standin-retriever`) fetches the released fix from the stand-in Maven
repository inside the container is flagged under `retrieval: flag` (and resolves, as published) and
refused under `block` (the trial scores 0). With the server answering 429 from the third turn on, the script
agent's run is error/infrastructure (its claim confirmed by the recording proxy's record of the model
host's answers); once the server recovers, the next `snakemake` redoes its solve step by itself and
scores it. (Harbor's exception types are mapped in test_model_server.)"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.results.summary import read_summary
from kotlin_bench.tools.model_server import ModelServer, Running, read_conversations
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO, snakemake
from tests.test_agents_e2e import HARBOR  # KOTLIN_BENCH_HARBOR, else this checkout's .harbor

pytestmark = pytest.mark.usefixtures("docker_engine")
TASK = "examples_calc-4"
FIX_URL = "https://repo.examples.test/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar"  # calc-4's fix
MODEL_HOST = "models.examples.test"  # the stand-in server's name for the egress proxy (`extra_hosts:`)
KEY = "sk-standin-4f1c9a7e2b"  # a made-up key: it must reach the agent and no file of the results
PRICE = {
    "input_cost_per_token": 3e-06,
    "output_cost_per_token": 1.5e-05,
    "cache_read_input_token_cost": 3e-07,
}
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def bridge_gateway() -> str:
    """The host's address on Docker's default bridge (what the egress proxy reaches the host by)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True)
    return out.stdout.split("inet ")[1].split("/")[0] if "inet " in out.stdout else "172.17.0.1"


@pytest.fixture(scope="module")
def model_server() -> Iterator[Running]:
    running = Running(ModelServer(read_conversations(REPO / "examples/models")), host=bridge_gateway())
    yield running
    running.stop()


def agents(url: str) -> list[dict]:
    script = {
        "name": "model-agent",
        "kind": "script",
        "script": "examples/agents/model-agent.sh",
        "model": "standin-coder",
        "base_url": url,
        "env": ["MY_API_KEY"],
        "price": PRICE,
    }
    terminus = {
        "name": "terminus",
        "kind": "harbor",
        "harbor_agent": "terminus-2",
        "model": "openai/standin-coder",
        "base_url": url,  # called from the host (LiteLLM in harbor): not in the container's allowlist
        "price": PRICE,
        "model_api": "standin",
    }
    retriever = {**terminus, "name": "retriever", "model": "openai/standin-retriever", "model_api": None}
    return [script, terminus, {k: v for k, v in retriever.items() if v is not None}]


def run(work: Path, config: dict) -> subprocess.CompletedProcess[str]:
    (work / "models.yaml").write_text(yaml.safe_dump(config))
    env = {"MY_API_KEY": KEY, "OPENAI_API_KEY": KEY, "KOTLIN_BENCH_HARBOR": str(HARBOR)}
    return snakemake(work, "--configfile", "models.yaml", env=env)


@pytest.fixture(scope="module")
def solved(
    tmp_path_factory: pytest.TempPathFactory,
    finished_examples: Workspace,
    model_server: Running,
    standin_repo: object,
) -> Path:
    """One run of each agent on examples_calc-4 (terminus-2 only where Harbor is installed), under the
    default `retrieval: flag`."""
    work = finished_examples.clone(tmp_path_factory.mktemp("models") / "ws").root
    wanted = agents(model_server.url())
    if not (HARBOR / "venv/bin/harbor").exists():
        if os.environ.get("CI"):
            pytest.fail(f"harbor is not installed at {HARBOR}: CI must run scripts/setup_harbor.sh")
        wanted = wanted[:1]
    config = {"tasks": [TASK], "agents": wanted, "retries": 0, "model_apis": {"standin": 1}}
    out = run(work, config)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    assert 'model_api_standin=Resource("model_api_standin", 1)' in out.stderr  # config model_apis
    return work


def test_the_script_agent_resolves_the_task_with_its_usage_in_the_summary(solved: Path) -> None:
    summary = read_summary(solved / names.SUMMARY_CSV).set_index("agent")
    row = summary.loc["model-agent"]
    assert row["status"] == "resolved", row.to_dict()
    usage = json.loads((solved / names.work_dir("model-agent", TASK, 1) / names.WORK_FILE).read_text())[
        "usage"
    ]
    assert usage["model_calls"] == 3 and usage["input_tokens"] > usage["cache_tokens"] > 0
    assert (row["input_tokens"], row["cache_tokens"], row["output_tokens"]) == (
        usage["input_tokens"], usage["cache_tokens"], usage["output_tokens"],
    )  # fmt: skip
    expected = (
        (usage["input_tokens"] - usage["cache_tokens"]) * PRICE["input_cost_per_token"]
        + usage["cache_tokens"] * PRICE["cache_read_input_token_cost"]
        + usage["output_tokens"] * PRICE["output_cost_per_token"]
    )
    assert row["cost_usd"] == pytest.approx(expected) and row["solve_tries"] == 1


def test_the_key_reaches_the_agent_and_no_file_of_the_results(solved: Path) -> None:
    log = (solved / names.work_dir("model-agent", TASK, 1) / names.AGENT_LOG).read_text()
    assert "API key set" in log
    leaked = [p for p in (solved / "results").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_the_trajectory_is_readable_on_the_run_page(solved: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium missing (scripts/setup.sh --tests)")
    page = solved / names.site_run_page("model-agent", TASK, 1)
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    ).stdout  # fmt: skip
    assert 'id="trajectory"' in dom
    assert "TokenType.MINUS -&gt; { next(); -factor() }" in dom  # the command the model sent, as a step
    assert "MINUS -&gt;" in dom.split('id="trajectory"')[1]
    assert "input tokens" in dom and "cost" in dom


def test_terminus_2_resolves_the_task_with_its_usage_and_trajectory(solved: Path) -> None:
    if not (HARBOR / "venv/bin/harbor").exists():
        pytest.skip(f"harbor is not installed at {HARBOR} (scripts/setup_harbor.sh)")
    row = read_summary(solved / names.SUMMARY_CSV).set_index("agent").loc["terminus"]
    assert row["status"] == "resolved", row.to_dict()
    assert row["input_tokens"] > row["cache_tokens"] > 0 and row["output_tokens"] > 0
    expected = (
        (row["input_tokens"] - row["cache_tokens"]) * PRICE["input_cost_per_token"]
        + row["cache_tokens"] * PRICE["cache_read_input_token_cost"]
        + row["output_tokens"] * PRICE["output_cost_per_token"]
    )
    assert row["cost_usd"] == pytest.approx(expected, rel=0.01)  # LiteLLM priced it at our price table
    page = (solved / names.site_run_page("terminus", TASK, 1)).read_text()
    assert 'id="trajectory"' in page and "TokenType.MINUS" in page.split('id="trajectory"')[1]
    leaked = [p for p in (solved / "results").rglob("*") if p.is_file() and KEY.encode() in p.read_bytes()]
    assert leaked == []


def test_terminus_2_is_on_the_record_and_retrieving_the_fix_is_flagged(solved: Path) -> None:
    """The honest trial's requests are recorded (terminus-2's attempt to apt-install asciinema is refused)
    and nothing is flagged; the retriever's download of the released fix is flagged, and, under `flag`,
    scores as published (the record changes no score)."""
    if not (HARBOR / "venv/bin/harbor").exists():
        pytest.skip(f"harbor is not installed at {HARBOR} (scripts/setup_harbor.sh)")
    summary = read_summary(solved / names.SUMMARY_CSV).set_index("agent")
    honest, retriever = summary.loc["terminus"], summary.loc["retriever"]
    assert not pd.isna(honest["retrieval"]) and not honest["retrieval"], honest.to_dict()
    assert not pd.isna(honest["egress_requests"])
    work = json.loads((solved / names.work_dir("terminus", TASK, 1) / names.WORK_FILE).read_text())
    assert work["egress"]["record"] == "urls" and work["flags"]["retrieval"] == []
    assert (solved / names.work_dir("terminus", TASK, 1) / names.EGRESS_RECORD).is_file()
    assert retriever["retrieval"] and retriever["status"] == "resolved", retriever.to_dict()
    work = json.loads((solved / names.work_dir("retriever", TASK, 1) / names.WORK_FILE).read_text())
    assert work["flags"]["retrieval"] == [FIX_URL] and work["egress"]["blocked"] == 0


def test_terminus_2_retrieving_the_fix_is_refused_under_block(
    solved: Path, model_server: Running, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same retriever under `retrieval: block` (the solve step in-process, as the rule calls it): the
    proxy answers 403, the trial's own verdict (its score) is 0, and the refusal is on the record."""
    if not (HARBOR / "venv/bin/harbor").exists():
        pytest.skip(f"harbor is not installed at {HARBOR} (scripts/setup_harbor.sh)")
    from kotlin_bench.dag import smk
    from kotlin_bench.dag.settings import Settings
    from kotlin_bench.dataset.spec import load_dataset
    from kotlin_bench.dataset.task import load_task
    from kotlin_bench.engine.egress import EgressPolicy, Retrieval
    from kotlin_bench.runs import handoff, runner
    from kotlin_bench.runs.agents import Agent

    monkeypatch.setenv("KOTLIN_BENCH_HARBOR", str(HARBOR))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    config = yaml.safe_load((solved / "config.yaml").read_text())
    agent = Agent.from_entry(agents(model_server.url())[2] | {"name": "retriever-block"})
    with contextlib.chdir(solved):
        task = load_task(solved / "examples/tasks" / TASK)
        policy = EgressPolicy(retrieval=Retrieval.BLOCK)
        facts = load_dataset(Path(config["spec"])).task(TASK).retrieval_facts()
        work = runner.solve_step(
            task,
            agent,
            1,
            tmp_path / "work",
            image=smk.task_image(Settings.of(config), task),
            limits=handoff.Limits(),
            root=solved,
            engine=Settings.of(config).engine,
            egress=policy,
            facts=facts,
        )
    assert work.trial_verdict is not None and work.trial_verdict.reward == 0.0, work.trial_verdict
    egress = work.work.egress
    assert work.work.flags["retrieval"] == [FIX_URL] and egress is not None and egress.blocked == 1
    assert "retrieval" in (tmp_path / "work" / names.EGRESS_RECORD).read_text()


def test_a_model_outage_is_an_error_redone_once_the_model_answers_and_a_budget_stops_runs(
    solved: Path, model_server: Running
) -> None:
    """The script agent's outage claim is confirmed by the recording proxy's 429s to the model host: an
    error, not a 0. The next snakemake redoes it by itself, in the same invocation as an
    agent whose budget_usd is half a run's cost (its second run is not started). The plan before it
    estimates the cost of a run still to do."""
    script = agents(model_server.url(MODEL_HOST))[0]
    outage = {**script, "name": "outage", "outage_backoff_sec": 0}
    config = {"tasks": [TASK], "agents": [outage], "retries": 0, "extra_hosts": {MODEL_HOST: "host-gateway"}}
    model_server.set_fault("429@3")
    try:
        out = run(solved, config)
    finally:
        model_server.set_fault(None)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    row = read_summary(solved / names.SUMMARY_CSV).set_index("agent").loc["outage"]
    assert (row["status"], row["reason"], row["failed_step"]) == ("error", "infrastructure", "solve"), (
        row.to_dict()
    )
    assert "ModelOutage: the model API answered 429" in row["error"] and "HTTP 429" in row["error"]

    cost = json.loads((solved / names.verify_result("model-agent", TASK, 1)).read_text())["usage"]["cost_usd"]
    whole = yaml.safe_load((solved / "config.yaml").read_text())
    (solved / "plan.yaml").write_text(
        yaml.safe_dump(whole | {"tasks": [TASK], "agents": [script], "attempts": 2})
    )
    plan = kotlin_bench(solved, "plan", "--config", "plan.yaml")
    assert "model-agent: 1 of 2 run(s) to do; from 1 finished run(s)" in plan.stdout, (
        plan.stdout + plan.stderr
    )
    assert f"~${cost:,.2f} (${cost:,.4f} a run" in plan.stdout

    budgeted = {**script, "name": "budgeted", "budget_usd": cost / 2, "model_api": "standin"}
    out = run(solved, config | {"agents": [outage, budgeted], "attempts": 2, "model_apis": {"standin": 1}})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    summary = read_summary(solved / names.SUMMARY_CSV)
    redone = summary.query("agent == 'outage' and attempt == 1").iloc[0]
    assert redone["status"] == "resolved", redone.to_dict()
    rows = summary.query("agent == 'budgeted'").sort_values("status")
    assert list(rows["status"]) == ["error", "resolved"], rows.to_dict("records")
    not_run = rows.iloc[0]
    assert not_run["reason"] == "not_run" and "budget_usd" in not_run["error"]
    assert pd.isna(not_run["cost_usd"])


def kotlin_bench(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kotlin_bench", *args], cwd=work, capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )  # fmt: skip
