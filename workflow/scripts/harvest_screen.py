"""Snakemake script of checkpoint harvest_screen: one repository's pull requests of one window, listed
through the GitHub API and screened (kotlin_bench.dataset.harvest.listing). The progress goes to the
terminal too; an API failure that outlasts the client's retries ends the job with one line naming the page,
and the next run goes on from there."""

import sys
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.render import error_line
from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.github import Client, GitHubError, GitHubSettings
from kotlin_bench.dataset.harvest.listing import Harvest, screen_window
from kotlin_bench.dataset.harvest.records import Window, write_screened
from kotlin_bench.dataset.harvest.rules import Caps
from kotlin_bench.dataset.materialize import UpstreamSource, default_cache_dir
from kotlin_bench.dataset.spec import load_dataset

sm = snakemake  # noqa: F821


def progress(line: str) -> None:
    print(line, flush=True)
    sys.__stderr__.write(f"kotlin-bench: {line}\n")
    sys.__stderr__.flush()


with logged(sm.log[0]):
    owner, repo = sm.wildcards.owner, sm.wildcards.repo
    repository = load_dataset(Path(sm.config["spec"])).repositories[f"{owner}/{repo}"]
    cache = Path((sm.config.get("materialize") or {}).get("cache_dir") or default_cache_dir())
    harvest = Harvest(
        repository=repository,
        window=Window.parse(sm.wildcards.window),
        caps=Caps.from_config(sm.params.harvest),
        ledger=Path(names.harvest_ledger(owner, repo)),
        records=Path(names.HARVEST_RECORDS),
        source=UpstreamSource(mirrors=dict(sm.params.mirrors), cache_dir=cache),
    )
    try:
        screened = screen_window(
            Client(GitHubSettings.from_config(sm.params.github), progress), harvest, progress
        )
    except GitHubError as exc:
        sys.__stderr__.write(error_line(str(exc)) + "\n")
        raise
    write_screened(Path(sm.output[0]), screened)
