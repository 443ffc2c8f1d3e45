"""The stand-in model server on loopback (real aiohttp server, real HTTP), and the harness's reading of
model APIs: usage files, outage claims against the egress record, prices, model hosts, secrets."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from kotlin_bench.runs.agents.config import Agent
from kotlin_bench.runs.agents.harbor import map_trial, model_kwargs
from kotlin_bench.runs.model_api import backoff_sec, confirm_outage, read_usage, redact
from kotlin_bench.tools.model_server import Fault, ModelServer, Running, read_conversations
from tests.conftest import REPO, copy_repo, snakemake

FIRST = {"role": "user", "content": "Task: Negative numbers are rejected (`3 - -2`)"}


@pytest.fixture
def server() -> Iterator[Running]:
    running = Running(ModelServer(read_conversations(REPO / "examples/models")))
    yield running
    running.stop()


def post(server: Running, body: dict) -> tuple[int, bytes]:
    request = urllib.request.Request(
        server.url() + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_turns_replies_and_usage(server: Running) -> None:
    status, body = post(server, {"model": "x", "messages": [FIRST]})
    first = json.loads(body)
    assert status == 200 and json.loads(first["choices"][0]["message"]["content"])["commands"]
    assert first["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    reply = first["choices"][0]["message"]["content"]
    history = [FIRST, {"role": "assistant", "content": reply}, {"role": "user", "content": "out put"}]
    second = json.loads(post(server, {"messages": history})[1])
    assert "MINUS" in second["choices"][0]["message"]["content"]
    usage = second["usage"]
    assert usage["prompt_tokens"] > usage["prompt_tokens_details"]["cached_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    status, _ = post(server, {"messages": [{"role": "user", "content": "some other task"}]})
    assert status == 400
    # a conversation that names its model answers that model only (terminus-2 retrieving the fix)
    retriever = json.loads(post(server, {"model": "standin-retriever", "messages": [FIRST]})[1])
    assert "calc-1.1.0-sources.jar" in retriever["choices"][0]["message"]["content"]
    assert "sources.jar" not in first["choices"][0]["message"]["content"]


def test_streaming_sends_the_reply_in_chunks_with_usage_last(server: Running) -> None:
    status, body = post(server, {"messages": [FIRST], "stream": True})
    events = [line[6:] for line in body.decode().splitlines() if line.startswith("data: ")]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert json.loads(text)["task_complete"] is False and chunks[-1]["usage"]["completion_tokens"] > 0


def test_faults_from_a_turn_on_and_recovery(server: Running) -> None:
    assert Fault.parse("429@3") == Fault("429", 3)
    with pytest.raises(ValueError, match="KIND"):
        Fault.parse("418@1")
    server.set_fault("429@2")
    assert post(server, {"messages": [FIRST]})[0] == 200  # turn 1 is before the fault
    later = [FIRST, {"role": "assistant", "content": "{}"}, {"role": "user", "content": "x"}]
    status, body = post(server, {"messages": later})
    assert status == 429 and json.loads(body)["error"]["type"] == "rate_limit_error"
    server.set_fault("500")
    assert post(server, {"messages": [FIRST]})[0] == 500
    server.set_fault("cut")
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("POST", "/v1/chat/completions", json.dumps({"messages": [FIRST], "stream": True}))
    response = connection.getresponse()
    with pytest.raises(http.client.IncompleteRead):
        response.read()
    server.set_fault(None)
    assert post(server, {"messages": later})[0] == 200
    assert [s.status for s in server.server.seen] == [200, 429, 500, 200, 200]


def test_a_script_claim_counts_only_where_the_proxy_saw_the_failure(tmp_path: Path) -> None:
    egress = tmp_path / "egress.jsonl"
    shape = {"scheme": "http", "bytes": 10, "allowed": True, "blocked": False, "retrieval": None}
    lines = [
        {"time": 1, "method": "POST", "host": "models.examples.test", "port": 80, "path": "/v1/chat/completions", "status": 200},
        {"time": 2, "method": "GET", "host": "repo.examples.test", "port": 443, "path": "/x", "status": 503},
        {"time": 3, "method": "POST", "host": "models.examples.test", "port": 80, "path": "/v1/x", "status": 403, "allowed": False},
    ]  # fmt: skip
    lines = [shape | line for line in lines]
    egress.write_text("".join(json.dumps(line) + "\n" for line in lines))
    hosts = ["models.examples.test"]
    assert confirm_outage("HTTP 429", tmp_path / "missing.jsonl", hosts) is None
    assert confirm_outage("HTTP 429", egress, hosts) is None  # the model host answered 200 only
    with egress.open("a") as out:
        out.write(json.dumps({**lines[0], "status": 429}) + "\n")
    seen = confirm_outage("HTTP 429: slow down", egress, hosts)
    assert seen is not None and "answered 429 to POST models.examples.test/v1/chat/completions" in seen
    assert "slow down" in seen
    assert [backoff_sec(30, n) for n in (1, 2, 3)] == [30, 60, 120]


def test_usage_file_prices_hosts_and_options() -> None:
    usage = read_usage(
        '{"input_tokens": 1000, "cache_tokens": 400, "output_tokens": 50, "cost_usd": -1, "x": 2}'
    )
    assert (usage.input_tokens, usage.cache_tokens, usage.output_tokens, usage.cost_usd) == (
        1000,
        400,
        50,
        None,
    )
    assert read_usage("not json").reported() is False
    agent = Agent.from_entry({
        "name": "m", "kind": "script", "script": "a.sh", "base_url": "http://Models.examples.test:8808/v1",
        "model_hosts": ["other.test"], "env": ["MY_API_KEY"],
        "price": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5, "cache_read_input_token_cost": 1e-7},
    })  # fmt: skip
    assert agent.cost_of(1000, 400, 50) == pytest.approx(600e-6 + 400e-7 + 50e-5)
    assert agent.all_model_hosts() == ("other.test", "models.examples.test")
    assert agent.passed_env({"MY_API_KEY": "k", "OTHER": "o"}) == {"MY_API_KEY": "k"}
    assert Agent.from_params(agent.params()) == agent
    assert "env" not in Agent("plain", "nop").params()  # unset: no new rule parameter for old workspaces
    options = model_kwargs(replace(agent, kind="harbor", harbor_agent="terminus-2"))
    assert options["api_base"] == "http://Models.examples.test:8808/v1"
    assert json.loads(options["model_info"])["output_cost_per_token"] == 1e-5


def test_harbor_model_outages_are_errors_whatever_was_graded() -> None:
    trial = {
        "verifier_result": {"rewards": {"reward": 0.0}},
        "exception_info": {"exception_type": "RateLimitError", "exception_message": "429 slow down"},
        "agent_result": {"n_input_tokens": 10, "n_output_tokens": 2, "cost_usd": 0.1},
    }
    outcome = map_trial(trial)
    assert (str(outcome.status), outcome.reason) == ("error", "RateLimitError")
    assert "429 slow down" in (outcome.error or "")


def test_redact(tmp_path: Path) -> None:
    (tmp_path / "log").write_text("key=sk-standin-1 ok")
    assert redact(tmp_path, ["sk-standin-1"]) == 1 and (tmp_path / "log").read_text() == "key=[redacted] ok"


def test_a_model_endpoint_is_a_snakemake_resource_limited_by_the_config(tmp_path: Path) -> None:
    work = copy_repo(tmp_path / "w")
    agent = {
        "name": "m",
        "kind": "script",
        "script": "examples/agents/model-agent.sh",
        "model_api": "standin",
    }
    config = {
        "tasks": ["examples_calc-4", "examples_slug-8"],
        "agents": [agent, {"name": "nop", "kind": "nop"}],
    }
    (work / "m.yaml").write_text(yaml.safe_dump(config | {"model_apis": {"standin": 1}}))
    out = snakemake(work, "--dry-run", "--cores", "8", "--configfile", "m.yaml")
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout + out.stderr
    jobs = text.split("rule solve:")[1:]
    assert sum("wildcards: agent=m," in j and "model_api_standin=1" in j for j in jobs) == 2
    assert sum("wildcards: agent=nop," in j and "model_api_standin=0" in j for j in jobs) == 2
    # the limit itself is the global resource the Snakefile registers (seen in the e2e run's log)
