"""mitmdump addon of the recording egress proxy (runs inside the proxy container: stdlib and mitmproxy only).

Reads `policy.json` beside it (written by kotlin_bench.engine.egress): the allowed hosts as anchored
regular expressions, the ports CONNECT may reach, whether retrieval is blocked, the task's facts for the
retrieval classifier (`retrieval.py`, copied beside it) and the record's path. Every request is one JSON
line of the record, written when it ends (refused hosts too, as attempts with status 403); responses are
streamed, their bytes counted as they pass.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

from mitmproxy import http

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import retrieval  # noqa: E402  (copied beside this file)

POLICY = json.loads((HERE / "policy.json").read_text(encoding="utf-8"))
HOSTS = [re.compile(rule) for rule in POLICY["hosts"]]
PORTS = set(POLICY["connect_ports"])
BLOCK = bool(POLICY["block"])
FACTS = retrieval.Facts.from_json(json.dumps(POLICY["facts"]))
RECORD = open(POLICY["record"], "a", encoding="utf-8", buffering=1)  # noqa: SIM115  (one line at a time)


def allowed(host: str) -> bool:
    host = host.lower().rstrip(".")
    return any(rule.match(host) for rule in HOSTS)


def write(flow: http.HTTPFlow, status: int | None, allowed_: bool, blocked: bool, why: str | None) -> None:
    request = flow.request
    entry = {
        "time": round(request.timestamp_start or time.time(), 3),
        "method": request.method,
        "scheme": request.scheme or "https",  # a refused CONNECT: the tunnel it asked for
        "host": request.host.lower(),
        "port": request.port,
        "path": request.path if request.method != "CONNECT" else "",
        "status": status,
        "bytes": flow.metadata.get("kb_bytes", 0),
        "allowed": allowed_,
        "blocked": blocked,
        "retrieval": why,
    }
    RECORD.write(json.dumps(entry, sort_keys=True) + "\n")


def refuse(flow: http.HTTPFlow, message: str, **record: object) -> None:
    body = f"kotlin-bench egress proxy: {message}\n".encode()
    flow.response = http.Response.make(403, body, {"Content-Type": "text/plain; charset=utf-8"})
    flow.metadata["kb_bytes"] = len(body)
    flow.metadata["kb_done"] = True
    write(flow, 403, **record)  # type: ignore[arg-type]


def http_connect(flow: http.HTTPFlow) -> None:
    host, port = flow.request.host, flow.request.port
    if not allowed(host) or port not in PORTS:
        what = "host" if not allowed(host) else "port"
        refuse(
            flow, f"{host}:{port}: {what} not allowed in this phase", allowed_=False, blocked=False, why=None
        )


def request(flow: http.HTTPFlow) -> None:
    if flow.response is not None:
        return
    host = flow.request.host
    if not allowed(host):
        refuse(flow, f"{host}: host not allowed in this phase", allowed_=False, blocked=False, why=None)
        return
    try:
        verdict = retrieval.classify_request(host, flow.request.path, FACTS)
    except Exception as exc:  # a URL the classifier cannot read: flagged, and refused under block
        verdict = retrieval.Verdict(True, f"unclassifiable ({type(exc).__name__}: {exc})")
    if verdict.retrieval:
        flow.metadata["kb_retrieval"] = verdict.reason
        if BLOCK:
            refuse(
                flow,
                f"refused: this download may contain the task's fix ({verdict.reason})",
                allowed_=True,
                blocked=True,
                why=verdict.reason,
            )


def responseheaders(flow: http.HTTPFlow) -> None:
    if flow.response is None or flow.metadata.get("kb_done"):
        return
    flow.metadata["kb_bytes"] = 0

    def count(chunk: bytes) -> bytes:
        flow.metadata["kb_bytes"] += len(chunk)
        return chunk

    flow.response.stream = count


def response(flow: http.HTTPFlow) -> None:
    if flow.metadata.get("kb_done"):
        return
    flow.metadata["kb_done"] = True
    status = flow.response.status_code if flow.response is not None else None
    write(flow, status, True, False, flow.metadata.get("kb_retrieval"))


def error(flow: http.HTTPFlow) -> None:
    if flow.metadata.get("kb_done") or flow.request is None:
        return
    flow.metadata["kb_done"] = True
    status = flow.response.status_code if flow.response is not None else None
    write(flow, status, allowed(flow.request.host), False, flow.metadata.get("kb_retrieval"))
