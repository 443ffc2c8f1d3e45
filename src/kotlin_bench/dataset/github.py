"""The GitHub REST API, read through githubkit with an on-disk HTTP cache (hishel): every read of a pull
request, an issue or a page of a list, for `kotlin-bench harvest` and for add-task and materialization.

- **Conditional requests.** Each answer is kept in `<cache_dir>/http.sqlite` with its `ETag`; the next
  request for the same URL carries `If-None-Match`, and a 304 (which GitHub does not count against the rate
  limit) is answered from the cache. `Client.stats` counts the requests that went out and the 304s.
- **A token from the environment** (`GITHUB_TOKEN`), never from a file; none: unauthenticated (60 an hour).
- **Rate limits honoured by waiting.** A primary limit (403/429 with `X-RateLimit-Remaining: 0`) waits until
  its reset, a secondary one its `Retry-After`, each saying so on the progress line; a wait longer than
  `max_wait_sec`, or more than `rate_limit_waits` of them for one request, ends with `GitHubError`.
- **Server errors and lost connections** are tried `retries` more times, waiting `backoff_sec`, doubled.
  After that, `GitHubError` names what was read (the page) and why, in one line; what was read before
  stays in the cache, so the next run goes on from there.

Settings (`GitHubSettings.from_config`): config `github: {api_url, cache_dir, retries, backoff_sec,
max_wait_sec}`; `GITHUB_API_URL` in the environment names another API (GitHub Enterprise, the stand-in).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

DEFAULT_API = "https://api.github.com"
PER_PAGE = 100
MAX_PAGES = 1000  # a list longer than 100,000 records is not a repository's pull requests


class GitHubError(RuntimeError):
    """A read of the GitHub API failed for good; the message names what was read and says what to do."""


class NotFound(GitHubError):
    """The API answered 404: no such repository, pull request or issue."""


@dataclass(frozen=True)
class GitHubSettings:
    api_url: str = DEFAULT_API
    token: str | None = None
    cache_dir: Path | None = None  # None: <KOTLIN_BENCH_CACHE or ~/.cache/kotlin-bench>/github
    retries: int = 5  # after a server error or a lost connection
    backoff_sec: float = 2.0  # the first wait after one; doubled each time
    max_wait_sec: float = 3600.0  # the longest wait for a rate limit; longer ends the run
    rate_limit_waits: int = 3  # waits for rate limits one request may do

    @classmethod
    def from_config(
        cls, conf: Mapping[str, Any] | None, env: Mapping[str, str] | None = None
    ) -> GitHubSettings:
        """Config `github:` (every key optional) and the environment (`GITHUB_TOKEN`, `GITHUB_API_URL`)."""
        conf, env = dict(conf or {}), os.environ if env is None else env
        known = {"api_url", "cache_dir", "retries", "backoff_sec", "max_wait_sec", "rate_limit_waits"}
        unknown = sorted(set(conf) - known)
        if unknown:
            raise ValueError(f"github: unknown key(s) {unknown}; known: {sorted(known)}")
        cache = conf.get("cache_dir")
        return cls(
            api_url=str(env.get("GITHUB_API_URL") or conf.get("api_url") or DEFAULT_API),
            token=env.get("GITHUB_TOKEN") or None,
            cache_dir=Path(cache) if cache else None,
            retries=int(conf.get("retries", cls.retries)),
            backoff_sec=float(conf.get("backoff_sec", cls.backoff_sec)),
            max_wait_sec=float(conf.get("max_wait_sec", cls.max_wait_sec)),
            rate_limit_waits=int(conf.get("rate_limit_waits", cls.rate_limit_waits)),
        )

    def cache_path(self) -> Path:
        if self.cache_dir is not None:
            return self.cache_dir
        env = os.environ.get("KOTLIN_BENCH_CACHE")
        return (Path(env) if env else Path.home() / ".cache" / "kotlin-bench") / "github"


@dataclass
class Stats:
    """What went over the wire: requests sent, and how they were answered."""

    requests: int = 0
    not_modified: int = 0  # 304: answered from the cache
    rate_limited: int = 0
    server_errors: int = 0
    waited_sec: float = 0.0
    by_status: dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Page:
    """One page of a list: its records, the next page's number (None: the last), and whether the API
    answered it from our cache (304)."""

    items: list[Any]
    number: int
    next: int | None
    last: int | None
    not_modified: bool


class _Counting(httpx.BaseTransport):
    """Below the cache: counts what really goes out, and the 304s."""

    def __init__(self, inner: httpx.BaseTransport, stats: Stats) -> None:
        self.inner, self.stats = inner, stats

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        self.stats.requests += 1
        self.stats.by_status[response.status_code] = self.stats.by_status.get(response.status_code, 0) + 1
        if response.status_code == 304:
            self.stats.not_modified += 1
        return response

    def close(self) -> None:
        self.inner.close()


def _disk_cache(path: Path) -> Any:
    """githubkit's cache strategy with hishel's SQLite storage in `path` (githubkit keeps it in memory)."""
    from githubkit.cache import MemCacheStrategy
    from hishel import SyncSqliteStorage

    class DiskCache(MemCacheStrategy):
        def get_hishel_storage(self) -> Any:
            path.parent.mkdir(parents=True, exist_ok=True)
            return SyncSqliteStorage(database_path=path)

    return DiskCache()


def _progress(line: str) -> None:
    print(f"kotlin-bench: {line}", file=sys.stderr, flush=True)


class Client:
    """One connection to the GitHub REST API (see the module's docstring)."""

    def __init__(self, settings: GitHubSettings, progress: Callable[[str], None] = _progress) -> None:
        from githubkit import GitHub, UnauthAuthStrategy

        self.settings, self.progress, self.stats = settings, progress, Stats()
        transport = _Counting(httpx.HTTPTransport(retries=0), self.stats)
        self.github = GitHub(
            settings.token or UnauthAuthStrategy(),
            base_url=settings.api_url,
            user_agent="kotlin-bench",
            timeout=30.0,
            transport=transport,
            http_cache=True,
            cache_strategy=_disk_cache(settings.cache_path() / "http.sqlite"),
            auto_retry=False,  # ours, below: it waits saying why, and names the page when it gives up
        )

    # ---------------------------------------------------------------- requests

    def get(self, path: str, *, what: str, params: Mapping[str, Any] | None = None) -> httpx.Response:
        """GET `path` (relative to the API); `what` names it in progress lines and errors."""
        from githubkit.exception import RateLimitExceeded, RequestError, RequestFailed

        url = path if not params else f"{path}?{httpx.QueryParams(dict(params))}"
        failures, waits = 0, 0
        while True:
            try:
                return self.github.request("GET", path, params=dict(params or {})).raw_response
            except RateLimitExceeded as exc:
                self.stats.rate_limited += 1
                waits += 1
                kind = type(exc).__name__.removesuffix("RateLimitExceeded").lower() or "a"
                wait = max(exc.retry_after.total_seconds(), 1.0)
                if waits > self.settings.rate_limit_waits or wait > self.settings.max_wait_sec:
                    raise GitHubError(
                        f"{what}: GET {url}: the {kind} rate limit holds for {wait:.0f} s more (after "
                        f"{waits - 1} wait(s)); run again later: what was read is kept"
                    ) from None
                until = datetime.fromtimestamp(time.time() + wait, UTC).strftime("%H:%M:%S UTC")
                self.progress(f"{what}: waiting {wait:.0f} s for GitHub's {kind} rate limit (until {until})")
                self._sleep(wait)
            except RequestFailed as exc:
                status = exc.response.status_code
                if status == 404:
                    raise NotFound(f"{what}: GET {url}: 404 Not Found") from None
                if status < 500:
                    raise GitHubError(f"{what}: GET {url}: {status} {_message(exc.response)}") from None
                self.stats.server_errors += 1
                failures += 1
                self._retry(what, url, f"{status} {exc.response.reason_phrase}", failures)
            except RequestError as exc:
                failures += 1
                self._retry(what, url, f"{type(exc.error).__name__}: {exc.error}", failures)

    def _retry(self, what: str, url: str, cause: str, failures: int) -> None:
        if failures > self.settings.retries:
            raise GitHubError(
                f"{what}: GET {url}: {cause}, {failures} tries; the API is out of reach: run again later, "
                "it goes on from there (what was read is kept)"
            ) from None
        wait = self.settings.backoff_sec * 2 ** (failures - 1)
        self.progress(f"{what}: {cause}; trying again in {wait:.0f} s ({failures}/{self.settings.retries})")
        self._sleep(wait)

    def _sleep(self, seconds: float) -> None:
        self.stats.waited_sec += seconds
        time.sleep(seconds)

    def json(self, path: str, *, what: str, params: Mapping[str, Any] | None = None) -> Any:
        response = self.get(path, what=what, params=params)
        try:
            return response.json()
        except ValueError as exc:
            raise GitHubError(f"{what}: GET {path}: the answer is not JSON ({exc})") from None

    def page(self, path: str, number: int, *, what: str, params: Mapping[str, Any] | None = None) -> Page:
        """Page `number` of a list (`per_page` 100 unless given), with its `Link` header read."""
        query = {"per_page": PER_PAGE, **dict(params or {}), "page": number}
        response = self.get(path, what=f"{what}, page {number}", params=query)
        try:
            items = response.json()
        except ValueError as exc:
            raise GitHubError(f"{what}, page {number}: GET {path}: the answer is not JSON ({exc})") from None
        if not isinstance(items, list):
            raise GitHubError(
                f"{what}, page {number}: GET {path}: expected a list, got {type(items).__name__}"
            )
        links = {rel: int(url.params.get("page", 0)) for rel, url in _links(response).items()}
        revalidated = bool(response.extensions.get("hishel_revalidated"))
        return Page(items, number, links.get("next"), links.get("last"), revalidated)

    def all_pages(self, path: str, *, what: str) -> list[Any]:
        out: list[Any] = []
        number: int | None = 1
        while number is not None and number <= MAX_PAGES:
            page = self.page(path, number, what=what)
            out += page.items
            number = page.next
        return out

    # ---------------------------------------------------------------- GitHub's objects

    def repository(self, owner: str, repo: str) -> dict[str, Any]:
        return _object(self.json(f"/repos/{owner}/{repo}", what=f"{owner}/{repo}"), f"{owner}/{repo}")

    def pull(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        what = f"{owner}/{repo} pull request #{number}"
        return _object(self.json(f"/repos/{owner}/{repo}/pulls/{number}", what=what), what)

    def issue(self, owner: str, repo: str, number: int) -> dict[str, Any]:
        what = f"{owner}/{repo} issue #{number}"
        return _object(self.json(f"/repos/{owner}/{repo}/issues/{number}", what=what), what)

    def pull_files(self, owner: str, repo: str, number: int) -> list[Any]:
        what = f"{owner}/{repo} pull request #{number}: files"
        return self.all_pages(f"/repos/{owner}/{repo}/pulls/{number}/files", what=what)

    def pull_commits(self, owner: str, repo: str, number: int) -> list[Any]:
        what = f"{owner}/{repo} pull request #{number}: commits"
        return self.all_pages(f"/repos/{owner}/{repo}/pulls/{number}/commits", what=what)

    def closed_pulls(self, owner: str, repo: str, number: int) -> Page:
        """Page `number` of the repository's closed pull requests, the last updated first."""
        params = {"state": "closed", "sort": "updated", "direction": "desc"}
        return self.page(
            f"/repos/{owner}/{repo}/pulls", number, what=f"{owner}/{repo} pull requests", params=params
        )

    def close(self) -> None:
        pass


def _links(response: httpx.Response) -> dict[str, httpx.URL]:
    return {str(link.get("rel")): httpx.URL(link["url"]) for link in response.links.values() if "url" in link}


def _object(data: Any, what: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise GitHubError(f"{what}: expected a JSON object from the API, got {type(data).__name__}")
    return data


def _message(response: Any) -> str:
    try:
        return str(response.json().get("message") or response.reason_phrase)
    except (ValueError, AttributeError):
        return str(response.reason_phrase)
