"""Section 11 (issue 37): the harvest's API reads and its validation of candidates.

- `listing`: 1,000 pull requests (10 pages of 100) listed through the client from the stand-in GitHub API
  (in this process, on loopback; `kotlin_bench.tools.github_api`, a synthetic repository), into a fresh
  on-disk cache (`first`), then again with the same cache and nothing new (`again`): every page is a
  conditional request answered 304 (counted), which GitHub does not count against the rate limit. The
  ratio is again / first of the wall times, per repetition (the order is fixed: the second needs the
  first's cache).
- `validation`: the harvest of the example repository semver in January 2026 (three candidates: one
  valid, one with a flaky test, one whose build fails on its only base variant), its screening done once;
  then, interleaved, its candidates' validation (images, phases, verdicts: every `pr-*` directory deleted
  before each) with `--cores 1` (one job at a time) and `--cores 2`. The ratio is cores 1 / cores 2.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.common import Context, Row, log, snakemake
from kotlin_bench.core import names
from kotlin_bench.dataset.github import Client, GitHubSettings
from kotlin_bench.results.harvest import read_table
from kotlin_bench.tools.github_api import GitHubApi, Running, example_repositories
from kotlin_bench.tools.github_records import synthetic

PULLS = 1000
WINDOW = "2026-01-01_2026-02-01"
TARGET = names.harvest_spec("examples", "semver", WINDOW)
CANDIDATES = 3


def list_all(client: Client) -> int:
    page: int | None = 1
    found = 0
    while page:
        listed = client.closed_pulls("acme", "many", page)
        found += len(listed.items)
        page = listed.next
    return found


def listing(ctx: Context) -> None:
    """Per repetition a fresh stand-in (its answers made anew, as GitHub makes them) and a fresh cache."""
    for rep in range(1, ctx.reps + 1):
        running = Running(GitHubApi([synthetic("acme", "many", PULLS)]))
        cache = Path(tempfile.mkdtemp(prefix="harvest-cache-", dir=ctx.tmp))
        try:
            for variant in ("first", "again"):
                client = Client(GitHubSettings(api_url=running.url, cache_dir=cache), progress=lambda _: None)
                started = time.monotonic()
                found = list_all(client)
                seconds = time.monotonic() - started
                stats = client.stats
                ok = found == PULLS and (variant == "first" or stats.not_modified == stats.requests)
                note = f"{stats.requests} requests, {stats.not_modified} answered 304"
                ctx.recorder.add(
                    Row("harvest", "listing", variant, "acme/many", rep, "wall_sec", seconds, ok=ok, note=note),
                    Row("harvest", "listing", variant, "acme/many", rep, "not_modified", stats.not_modified, "requests", ok),
                    Row("harvest", "listing", variant, "acme/many", rep, "requests", stats.requests, "requests", ok),
                )  # fmt: skip
                log(f"harvest listing rep {rep} {variant}: {seconds:.2f}s, {note}")
        finally:
            running.stop()
            shutil.rmtree(cache, ignore_errors=True)


def validation(ctx: Context) -> None:
    workspace = ctx.workspace
    assert workspace is not None
    served = example_repositories(workspace, workspace / "config.yaml", ctx.tmp / "harvest-served")
    running = Running(GitHubApi(served))
    env = {"GITHUB_API_URL": running.url, "KOTLIN_BENCH_CACHE": str(ctx.tmp / "harvest-cache")}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        first = snakemake(workspace, TARGET, log_path=ctx.out / "logs/harvest/screen.log")  # screening, once
        log(f"harvest: first harvest of semver: exit {first.returncode}, {first.seconds:.0f}s")
        for rep in range(1, ctx.rounds + 1):
            order = ("1", "2") if rep % 2 else ("2", "1")
            for cores in order:
                for path in (workspace / names.harvest_repo("examples", "semver")).glob("pr-*"):
                    shutil.rmtree(path)
                shutil.rmtree(
                    workspace / names.harvest_window("examples", "semver", WINDOW) / names.HARVEST_TASKS,
                    ignore_errors=True,
                )
                (workspace / TARGET).unlink(missing_ok=True)
                done = snakemake(
                    workspace,
                    TARGET,
                    cores=int(cores),
                    log_path=ctx.out / f"logs/harvest/cores-{cores}-{rep}.log",
                )
                table = (
                    read_table(workspace / Path(TARGET).with_name(names.HARVEST_TABLE))
                    if done.returncode == 0
                    else None
                )
                ok = table is not None and set(table["verdict"]) == {"accepted", "rejected"}
                note = f"{CANDIDATES} candidates validated" if ok else f"exit {done.returncode}"
                ctx.recorder.add(
                    Row(
                        "harvest",
                        "validation",
                        f"cores_{cores}",
                        "examples/semver",
                        rep,
                        "wall_sec",
                        done.seconds,
                        ok=ok,
                        note=note,
                    )
                )
                log(f"harvest validation rep {rep} --cores {cores}: {done.seconds:.0f}s ({note})")
    finally:
        running.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run(ctx: Context) -> None:
    listing(ctx)
    validation(ctx)
