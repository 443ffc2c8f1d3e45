"""A stand-in GitHub REST API for the examples and the tests (aiohttp): the example repositories' pull
requests and issues (`kotlin_bench.tools.github_records`), served the way GitHub serves them, so that
`kotlin-bench harvest` and add-task run end to end offline.

    kotlin-bench github-api [--config config.yaml] [--port 8810] [--synthetic examples/many=1000]

Endpoints: `GET /repos/{owner}/{repo}` (`default_branch`), `/repos/{o}/{r}/pulls?state=&sort=&direction=
&per_page=&page=` (`Link` pagination, `rel` next, last, prev, first), `/pulls/{n}`, `/pulls/{n}/files`,
`/pulls/{n}/commits`, `/issues/{n}` (a pull request there carries `pull_request`), `/rate_limit`.

As GitHub does: every answer has an `ETag` (a weak digest of its body) and `Cache-Control: private,
max-age=60`; a request whose `If-None-Match` names the current one is answered 304 without a body and is
not counted against the rate limit. `X-RateLimit-Limit`, `-Remaining`, `-Used`, `-Reset`, `-Resource` on
every answer; when the limit is spent, 403 (or 429, `--limit-status 429`) with `X-RateLimit-Remaining: 0`
and the reset time until the window ends (`--rate-limit N --rate-window SEC`).

Faults (`--fault KIND[:MATCH][*TIMES]`, or `POST /control/fault {"kind", "match", "times"}`, `{"kind":
null}` to clear): the next TIMES requests (all, without TIMES) whose path and query contain MATCH answer
`500`/`502`/`503`, `secondary` (403 with `Retry-After: 1` and the secondary-limit message), or `primary`
(the rate limit spent now, until the window resets in `--rate-window` seconds). `POST /control/touch
{"repository", "number"}` edits a pull request (its `updated_at` becomes now: its ETags change);
`GET /control/state` counts the requests by status (and the 304s).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import yaml

from kotlin_bench.dataset.materialize import MirrorSources
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.tools.github_records import Repository, from_history, synthetic
from kotlin_bench.tools.root import Rooted, add_root

FAULTS = ("500", "502", "503", "secondary", "primary")
PER_PAGE, MAX_PER_PAGE = 30, 100
SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "(stand-in GitHub API)"
)


@dataclass
class Fault:
    """`kind` for the next `times` requests whose path and query contain `match` (None: every one)."""

    kind: str
    match: str = ""
    times: int | None = None

    @classmethod
    def parse(cls, text: str) -> Fault:
        rest, _, times = text.partition("*")
        kind, _, match = rest.partition(":")
        if kind not in FAULTS or (times and not times.isdigit()):
            raise ValueError(f"fault {text!r}: write KIND[:MATCH][*TIMES], KIND one of {', '.join(FAULTS)}")
        return cls(kind, match, int(times) if times else None)

    def takes(self, target: str) -> bool:
        """Whether this request meets the fault (and one of its times is spent)."""
        if self.match not in target or self.times == 0:
            return False
        if self.times is not None:
            self.times -= 1
        return True


@dataclass
class RateLimit:
    """The primary rate limit of the stand-in's one token: `limit` requests a window of `window_sec`."""

    limit: int = 5000
    window_sec: float = 3600.0
    used: int = 0
    reset_at: float = 0.0  # when the window ends (epoch seconds); 0: a window from now

    def __post_init__(self) -> None:
        self.reset_at = self.reset_at or time.time() + self.window_sec

    def roll(self) -> None:
        now = time.time()
        if now >= self.reset_at:
            self.used, self.reset_at = 0, now + self.window_sec

    @property
    def remaining(self) -> int:
        return max(self.limit - self.used, 0)

    def spend_all(self) -> None:
        self.used, self.reset_at = self.limit, time.time() + self.window_sec

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Used": str(self.used),
            "X-RateLimit-Reset": str(int(self.reset_at + 0.999)),
            "X-RateLimit-Resource": "core",
        }


class GitHubApi:
    """The server's state: the repositories it serves, its rate limit, the current faults, the counts."""

    def __init__(
        self, repositories: list[Repository], rate: RateLimit | None = None, limit_status: int = 403
    ) -> None:
        self.repositories = {r.full_name.lower(): r for r in repositories}
        self.rate = rate or RateLimit()
        self.limit_status = limit_status
        self.faults: list[Fault] = []
        self.counts: Counter[int] = Counter()
        self.seen: list[tuple[str, int]] = []  # (path and query, status)
        self.tokens: list[str | None] = []  # the Authorization header of each request
        self.lock = threading.RLock()
        self.version = 0  # of the data: an edit (`touch`) makes every answer new
        self._rendered: dict[str, tuple[int, int, str, str, dict[str, str]]] = {}  # path -> version, answer

    # ---------------------------------------------------------------- the app

    def app(self) -> Any:
        from aiohttp import web

        app = web.Application()
        app.router.add_get("/rate_limit", self.rate_limit)
        app.router.add_get("/repos/{owner}/{repo}", self.repository)
        app.router.add_get("/repos/{owner}/{repo}/pulls", self.pulls)
        app.router.add_get("/repos/{owner}/{repo}/pulls/{number:\\d+}", self.pull)
        app.router.add_get("/repos/{owner}/{repo}/pulls/{number:\\d+}/files", self.pull_files)
        app.router.add_get("/repos/{owner}/{repo}/pulls/{number:\\d+}/commits", self.pull_commits)
        app.router.add_get("/repos/{owner}/{repo}/issues/{number:\\d+}", self.issue)
        app.router.add_post("/control/fault", self.set_fault)
        app.router.add_post("/control/touch", self.touch_request)
        app.router.add_get("/control/state", self.state)
        return app

    def _repo(self, request: Any) -> Repository | None:
        return self.repositories.get(f"{request.match_info['owner']}/{request.match_info['repo']}".lower())

    def _fault(self, target: str) -> str | None:
        with self.lock:
            for fault in self.faults:
                if fault.takes(target):
                    return fault.kind
        return None

    def _answer(self, request: Any, make: Callable[[], tuple[int, Any, dict[str, str] | None]]) -> Any:
        """Every answer of the API: faults, the rate limit, ETags and 304s, as GitHub gives them. `make`
        gives the answer's status, body and headers; an answer is made once per version of the data, so
        that a 304 costs what it costs GitHub: a comparison of ETags."""
        from aiohttp import web

        target = request.path_qs
        with self.lock:
            self.rate.roll()
            self.tokens.append(request.headers.get("Authorization"))
        fault = self._fault(target)
        if fault == "primary":
            with self.lock:
                self.rate.spend_all()
        elif fault in ("500", "502", "503"):
            return self._record(target, web.json_response({"message": "Server Error"}, status=int(fault)))
        elif fault == "secondary":
            message = {"message": SECONDARY, "documentation_url": "https://docs.github.com/rest"}
            answer = web.json_response(
                message, status=403, headers={"Retry-After": "1", **self.rate.headers()}
            )
            return self._record(target, answer)
        with self.lock:
            kept = self._rendered.get(target)
        if kept is None or kept[0] != self.version:
            status, body, headers = make()
            text = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
            etag = f'W/"{hashlib.sha256(text.encode()).hexdigest()[:40]}"'
            kept = (self.version, status, text, etag, headers or {})
            with self.lock:
                self._rendered[target] = kept
        _, status, text, etag, headers = kept
        common = {
            "ETag": etag,
            "Cache-Control": "private, max-age=60, s-maxage=60",
            "Vary": "Accept, Authorization, Cookie, X-GitHub-OTP",
            **headers,
        }
        if status == 200 and etag in request.headers.get("If-None-Match", ""):
            return self._record(target, web.Response(status=304, headers={**common, **self.rate.headers()}))
        with self.lock:
            if self.rate.remaining == 0:
                message = {
                    "message": "API rate limit exceeded (stand-in GitHub API).",
                    "documentation_url": "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api",
                }
                limited = web.json_response(message, status=self.limit_status, headers=self.rate.headers())
                return self._record(target, limited)
            self.rate.used += 1
            limits = self.rate.headers()
        answer = web.Response(
            status=status, text=text, content_type="application/json", headers={**common, **limits}
        )
        return self._record(target, answer)

    def _record(self, target: str, answer: Any) -> Any:
        with self.lock:
            self.counts[answer.status] += 1
            self.seen.append((target, answer.status))
        return answer

    def _missing(self, request: Any) -> Any:
        return self._answer(request, lambda: (404, {"message": "Not Found"}, None))

    def _one(self, request: Any, found: Any) -> Any:
        return (
            self._answer(request, lambda: (200, found, None)) if found is not None else self._missing(request)
        )

    def _page(self, request: Any, items: Callable[[], list[Any] | None]) -> Any:
        """One page of a list (None: no such list), with GitHub's `Link` header."""
        return self._answer(request, lambda: self._paged(request, items()))

    def _paged(self, request: Any, items: list[Any] | None) -> tuple[int, Any, dict[str, str] | None]:
        if items is None:
            return 404, {"message": "Not Found"}, None
        query = request.rel_url.query
        try:
            per_page = min(max(int(query.get("per_page", PER_PAGE)), 1), MAX_PER_PAGE)
            page = max(int(query.get("page", 1)), 1)
        except ValueError:
            return 422, {"message": "Validation Failed"}, None
        last = max((len(items) + per_page - 1) // per_page, 1)
        links = []

        def link(number: int, rel: str) -> str:
            params = {**query, "per_page": str(per_page), "page": str(number)}
            return f'<{request.url.with_query(None)}?{urlencode(params)}>; rel="{rel}"'

        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        chunk = items[(page - 1) * per_page : page * per_page]
        return 200, chunk, {"Link": ", ".join(links)} if links else None

    # ---------------------------------------------------------------- endpoints

    async def rate_limit(self, request: Any) -> Any:
        from aiohttp import web

        core = {"limit": self.rate.limit, "remaining": self.rate.remaining, "used": self.rate.used,
                "reset": int(self.rate.reset_at)}  # fmt: skip
        return web.json_response({"resources": {"core": core}, "rate": core}, headers=self.rate.headers())

    async def repository(self, request: Any) -> Any:
        repo = self._repo(request)
        return self._one(request, repo.record() if repo else None)

    async def pulls(self, request: Any) -> Any:
        repo, query = self._repo(request), request.rel_url.query

        def listed() -> list[Any] | None:
            order = (query.get("state", "open"), query.get("sort", "created"), query.get("direction", "desc"))
            return repo.listed(*order) if repo else None

        return self._page(request, listed)

    def _numbered(self, request: Any, table: str) -> Any:
        """The pull request's record (`pulls`), files or commits; None: no such repository or number."""
        repo = self._repo(request)
        found: dict[int, Any] = getattr(repo, table) if repo else {}
        return found.get(int(request.match_info["number"]))

    async def pull(self, request: Any) -> Any:
        return self._one(request, self._numbered(request, "pulls"))

    async def pull_files(self, request: Any) -> Any:
        return self._page(request, lambda: self._numbered(request, "files"))

    async def pull_commits(self, request: Any) -> Any:
        return self._page(request, lambda: self._numbered(request, "commits"))

    async def issue(self, request: Any) -> Any:
        repo = self._repo(request)
        return self._one(request, repo.issue(int(request.match_info["number"])) if repo else None)

    # ---------------------------------------------------------------- control

    def set_faults(self, *faults: Fault) -> None:
        with self.lock:
            self.faults = list(faults)

    async def set_fault(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        if not body.get("kind"):
            self.set_faults()
            return web.json_response({"faults": []})
        try:
            text = f"{body['kind']}:{body.get('match', '')}" + (
                f"*{body['times']}" if body.get("times") else ""
            )
            self.set_faults(Fault.parse(text))
        except ValueError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"faults": [f.__dict__ for f in self.faults]})

    def touch(self, full_name: str, number: int) -> None:
        with self.lock:
            self.repositories[full_name.lower()].touch(number, datetime.now(UTC))
            self.version += 1

    async def touch_request(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json()
        self.touch(str(body["repository"]), int(body["number"]))
        return web.json_response({"touched": body})

    async def state(self, request: Any) -> Any:
        from aiohttp import web

        with self.lock:
            counts = {str(k): v for k, v in sorted(self.counts.items())}
            return web.json_response(
                {"counts": counts, "remaining": self.rate.remaining, "requests": self.seen}
            )


def example_repositories(root: Path, config: Path, build_dir: Path) -> list[Repository]:
    """The repositories of the config's dataset whose history the config builds from committed sources
    (`materialize.upstream.mirror_sources`), with the committed records (`issues_cache`); the config's
    paths are relative to `root`, the workflow directory."""
    conf = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    upstream = (conf.get("materialize") or {}).get("upstream") or {}
    sources = MirrorSources.from_config(upstream)
    if sources is None:
        raise ValueError(f"{config}: materialize.upstream.mirror_sources is not set: no history to serve")
    records = root / upstream["issues_cache"] if upstream.get("issues_cache") else None
    out = []
    for name in load_dataset(root / conf["spec"]).repositories:
        owner, repo = name.split("/", 1)
        dest = build_dir / owner / repo
        if not dest.exists():
            sources.build_into(owner, repo, root, dest)
        out.append(from_history(owner, repo, dest, records))
    return out


class Running:
    """The stand-in running in a thread of this process (tests, bench): `url`, `api`, `stop`."""

    def __init__(self, api: GitHubApi, host: str = "127.0.0.1", port: int = 0) -> None:
        from aiohttp import web

        self.api, self.host = api, host
        self._loop = asyncio.new_event_loop()
        self._runner = web.AppRunner(api.app(), access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        self._loop.run_until_complete(web.TCPSite(self._runner, host, port).start())
        self.port = self._runner.addresses[0][1]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="github-api")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)


def build_api(args: argparse.Namespace, build_dir: Path) -> GitHubApi:
    repositories = [] if args.no_examples else example_repositories(Path(args.root), args.config, build_dir)
    for spec in args.synthetic:
        name, _, count = spec.partition("=")
        owner, _, repo = name.partition("/")
        repositories.append(synthetic(owner, repo, int(count or 1000)))
    api = GitHubApi(repositories, RateLimit(args.rate_limit, args.rate_window), args.limit_status)
    if args.fault:
        api.set_faults(*(Fault.parse(f) for f in args.fault))
    return api


def cmd_github_api(args: argparse.Namespace) -> int:
    from aiohttp import web

    with tempfile.TemporaryDirectory(prefix="kotlin-bench-github-") as tmp:
        api = build_api(args, Path(tmp))
        served = ", ".join(r.full_name for r in api.repositories.values())
        print(f"github-api: http://{args.host}:{args.port} ({served})", flush=True)
        web.run_app(api.app(), host=args.host, port=args.port, print=None)
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "github-api",
        help="a stand-in GitHub REST API serving the example repositories' pull requests and issues",
        description=__doc__.split("\n\n")[1] if __doc__ else None,
    )
    add_root(p)
    p.add_argument(
        "--config", type=Path, default=Rooted("config.yaml"), help="its config (default: config.yaml)"
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8810)
    p.add_argument("--synthetic", action="append", default=[], metavar="OWNER/REPO=N",
                   help="also serve a repository of N merged pull requests without history")  # fmt: skip
    p.add_argument("--no-examples", action="store_true", help="serve the synthetic repositories only")
    p.add_argument("--rate-limit", type=int, default=5000, help="requests per window (default 5000)")
    p.add_argument("--rate-window", type=float, default=3600.0, help="seconds (default 3600)")
    p.add_argument("--limit-status", type=int, choices=(403, 429), default=403)
    p.add_argument("--fault", action="append", default=[], help="KIND[:MATCH][*TIMES]")
    p.set_defaults(func=cmd_github_api)
