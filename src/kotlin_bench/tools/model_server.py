"""A stand-in model server for tests and the examples: OpenAI-compatible chat completions (aiohttp).

`kotlin-bench model-server --conversations examples/models` serves `POST /v1/chat/completions` (streaming
as server-sent events or not, with `usage` counted from the text), `GET /v1/models` and a control
endpoint. It plays scripted conversations: each file `<name>.json` of the conversations directory is
`{"match": "<text of the task's instruction>", "replies": [<reply>, ...]}`, and may name the one `model`
it answers as (`"model": "standin-retriever"`; the others answer any model); a request belongs to the
conversation whose `match` its first user message contains (one for the requested model first), and
its turn is one more than the number of assistant messages it carries (so a conversation needs no session state, and a retried request gets the
same answer). A reply is an object in terminus-2's JSON keystroke protocol (`analysis`, `plan`,
`commands: [{keystrokes, duration}]`, `task_complete`), sent as the message's text; after the last reply
the last one repeats (terminus-2 asks for task_complete twice).

Faults (`--fault 429@3`, or `POST /control/fault {"fault": "500@2"}`, `{"fault": null}` to recover): from
that turn on, `429` answers 429 with a rate-limit error body and `Retry-After`, `500` answers 500,
`stall` sends nothing for `--stall-sec`, `cut` starts the answer and drops the connection half-way.
`GET /control/state` lists the requests seen (turn, conversation, status).

Usage: prompt tokens are the words and punctuation marks of every message plus four per message,
completion tokens those of the reply; from the second turn on the prompt minus its last message counts as
cached (`prompt_tokens_details.cached_tokens`), as a provider's prompt cache would hold it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MODEL = "standin-coder"  # the model the server answers as (any requested name is accepted)
FAULTS = ("429", "500", "stall", "cut")
TOKEN = re.compile(r"\w+|[^\w\s]")
PER_MESSAGE = 4


class ConversationError(ValueError):
    """A conversations file that cannot be played; the message names the file."""


@dataclass(frozen=True)
class Conversation:
    name: str
    match: str
    replies: tuple[str, ...]
    model: str | None = None  # the one model name it answers as (None: any)

    @classmethod
    def read(cls, path: Path) -> Conversation:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ConversationError(f"{path}: not a conversation: {exc}") from None
        if not isinstance(data, dict) or not data.get("match") or not data.get("replies"):
            raise ConversationError(f"{path}: a conversation needs `match` (text) and `replies` (a list)")
        replies = tuple(r if isinstance(r, str) else json.dumps(r, indent=2) for r in data["replies"])
        model = data.get("model")
        return cls(path.stem, str(data["match"]), replies, str(model) if model else None)

    def reply(self, turn: int) -> str:
        return self.replies[min(turn, len(self.replies)) - 1]


def read_conversations(directory: Path) -> list[Conversation]:
    found = [Conversation.read(p) for p in sorted(Path(directory).glob("*.json"))]
    if not found:
        raise ConversationError(f"{directory}: no conversation files (<name>.json)")
    return found


@dataclass(frozen=True)
class Fault:
    """What the server does from turn `from_turn` on: answer 429 or 500, stall, or cut the answer."""

    kind: str
    from_turn: int = 1

    @classmethod
    def parse(cls, text: str) -> Fault:
        kind, _, turn = text.partition("@")
        if kind not in FAULTS or (turn and not turn.isdigit()):
            raise ValueError(f"fault {text!r}: write KIND[@TURN], KIND one of {', '.join(FAULTS)}")
        return cls(kind, int(turn or 1))


def count_tokens(text: str) -> int:
    return len(TOKEN.findall(text))


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def usage_of(messages: list[dict[str, Any]], reply: str) -> dict[str, Any]:
    sizes = [count_tokens(_text(m)) + PER_MESSAGE for m in messages]
    prompt = sum(sizes)
    cached = prompt - sizes[-1] if len(messages) > 2 else 0
    completion = count_tokens(reply)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


@dataclass
class Seen:
    turn: int
    conversation: str | None
    status: int
    stream: bool
    time: float = field(default_factory=time.time)


class ModelServer:
    """The server's state: its conversations, the current fault, and the requests seen."""

    def __init__(self, conversations: list[Conversation], fault: Fault | None = None, stall_sec: float = 600):
        self.conversations = conversations
        self.fault = fault
        self.stall_sec = stall_sec
        self.seen: list[Seen] = []

    def conversation_of(self, messages: list[dict[str, Any]], model: str = "") -> Conversation | None:
        """The conversation of a request: its `match` in the first user message, one that names the
        requested model (LiteLLM's `openai/<name>` arrives as `<name>`) before one that names none."""
        first = next((_text(m) for m in messages if m.get("role") == "user"), "")
        matching = [c for c in self.conversations if c.match in first and c.model in (None, model)]
        return next((c for c in matching if c.model is not None), next(iter(matching), None))

    def app(self) -> Any:
        from aiohttp import web

        app = web.Application(client_max_size=64 << 20)
        app.router.add_post("/v1/chat/completions", self.completions)
        app.router.add_post("/chat/completions", self.completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_post("/control/fault", self.set_fault)
        app.router.add_get("/control/state", self.state)
        return app

    async def models(self, request: Any) -> Any:
        from aiohttp import web

        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def set_fault(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        try:
            self.fault = Fault.parse(body["fault"]) if body.get("fault") else None
        except ValueError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"fault": None if self.fault is None else self.fault.__dict__})

    async def state(self, request: Any) -> Any:
        from aiohttp import web

        fault = None if self.fault is None else self.fault.__dict__
        return web.json_response({"fault": fault, "requests": [s.__dict__ for s in self.seen]})

    async def completions(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        stream = bool(body.get("stream"))
        turn = 1 + sum(1 for m in messages if m.get("role") == "assistant")
        conversation = self.conversation_of(messages, str(body.get("model") or ""))
        fault = self.fault if self.fault and turn >= self.fault.from_turn else None
        name = conversation.name if conversation else None
        if fault and fault.kind in ("429", "500"):
            status = int(fault.kind)
            self.seen.append(Seen(turn, name, status, stream))
            kind = "rate_limit_error" if status == 429 else "server_error"
            error = {
                "message": f"stand-in model server: fault {fault.kind} from turn {fault.from_turn}",
                "type": kind,
                "code": kind,
            }
            headers = {"Retry-After": "1"} if status == 429 else {}
            return web.json_response({"error": error}, status=status, headers=headers)
        if fault and fault.kind == "stall":
            self.seen.append(Seen(turn, name, 0, stream))
            await asyncio.sleep(self.stall_sec)
        if conversation is None:
            self.seen.append(Seen(turn, None, 400, stream))
            error = {
                "message": "stand-in model server: no conversation matches this task",
                "type": "invalid_request_error",
            }
            return web.json_response({"error": error}, status=400)
        reply = conversation.reply(turn)
        usage = usage_of(messages, reply)
        ident, created = f"chatcmpl-{uuid.uuid4().hex[:24]}", int(time.time())
        model = str(body.get("model") or MODEL)
        self.seen.append(Seen(turn, name, 200, stream))
        if not stream:
            if fault and fault.kind == "cut":
                return await self._cut(
                    request, json.dumps({"id": ident, "choices": [{"message": {"content": reply}}]})
                )
            return web.json_response({
                "id": ident, "object": "chat.completion", "created": created, "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
                "usage": usage,
            })  # fmt: skip
        return await self._stream(request, ident, created, model, reply=reply, usage=usage, cut=bool(fault))

    async def _cut(self, request: Any, text: str) -> Any:
        from aiohttp import web

        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.content_length = len(text.encode())
        await response.prepare(request)
        await response.write(text[: len(text) // 2].encode())
        request.transport.close()
        return response

    async def _stream(self, request: Any, ident: str, created: int, model: str, *, reply: str,
                      usage: dict[str, Any], cut: bool) -> Any:  # fmt: skip
        from aiohttp import web

        response = web.StreamResponse(
            status=200, headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            data = {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}  # fmt: skip
            return f"data: {json.dumps(data)}\n\n".encode()

        await response.write(chunk({"role": "assistant", "content": ""}))
        pieces = [reply[i : i + 64] for i in range(0, len(reply), 64)] or [""]
        for index, piece in enumerate(pieces):
            if cut and index == len(pieces) // 2:
                request.transport.close()  # the connection drops half-way: no finish, no [DONE]
                return response
            await response.write(chunk({"content": piece}))
        await response.write(chunk({}, "stop", usage=usage))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


class Running:
    """A server running in a thread of this process (tests, bench): `url`, `set_fault`, `stop`."""

    def __init__(self, server: ModelServer, host: str = "127.0.0.1", port: int = 0):
        from aiohttp import web

        self.server, self.host = server, host
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(server.app())
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, host, port)
        self._loop.run_until_complete(site.start())
        self.port = self._runner.addresses[0][1]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="model-server")
        self._thread.start()

    def url(self, host: str | None = None) -> str:
        """The OpenAI base URL (`.../v1`), under `host` (a name or address that reaches this server)."""
        return f"http://{host or self.host}:{self.port}/v1"

    def set_fault(self, fault: str | None) -> None:
        self.server.fault = Fault.parse(fault) if fault else None

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


def cmd_model_server(args: argparse.Namespace) -> int:
    from aiohttp import web

    server = ModelServer(
        read_conversations(args.conversations),
        Fault.parse(args.fault) if args.fault else None,
        args.stall_sec,
    )
    print(
        f"model-server: http://{args.host}:{args.port}/v1 ({len(server.conversations)} conversation(s))",
        flush=True,
    )
    web.run_app(server.app(), host=args.host, port=args.port, print=None)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "model-server",
        help="a stand-in OpenAI-compatible model server playing scripted conversations (tests, examples)",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    p.add_argument("--conversations", type=Path, default=Path("examples/models"),
                   help="directory of <name>.json conversations (default: examples/models)")  # fmt: skip
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (0.0.0.0: containers reach it too)"
    )
    p.add_argument("--port", type=int, default=8808)
    p.add_argument("--fault", default=None, help=f"KIND[@TURN], KIND one of {', '.join(FAULTS)}")
    p.add_argument("--stall-sec", type=float, default=600.0, help="how long a `stall` fault holds an answer")
    p.set_defaults(func=cmd_model_server)
