"""Build the results site, writing only the pages whose inputs changed.

Every page has a key: a run's page the size and modification time of its result.json (written last of
the run's files) and of the task's instruction; a task's page its rows of the summary; a comparison page
its comparisons. The keys of the pages written are kept in `results/site/.pages.json` with a digest of the
templates and of this code, so a rebuild after one changed run writes that run's page, its task's page
and the index (and a comparison page whose numbers moved), and editing a template rebuilds every page.
Pages of runs, tasks or pairs no longer in the results are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, FileSystemLoader

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.record import Status
from kotlin_bench.results.compare import Comparison
from kotlin_bench.results.report import COMPARISON_NOTE, RATE_NOTE, headlines
from kotlin_bench.results.site.pages import (
    INSTRUCTION_BYTES,
    PAIR_HEADER,
    PairRow,
    read_text,
    grid,
    href,
    rate_table,
    run_page,
    task_rows,
)
from kotlin_bench.scoring.expected import CATEGORIES

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"


def environment() -> Environment:
    """Autoescaped HTML; a key an older record lacks renders empty."""
    return Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def code_digest() -> str:
    """The templates, this package's code and the harness version: a change rebuilds every page."""
    sha = hashlib.sha256(HARNESS_VERSION.encode())
    for path in sorted([*TEMPLATES.glob("*.j2"), *HERE.glob("*.py")]):
        sha.update(path.name.encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()[:16]


def _stat_key(path: Path) -> str:
    try:
        stat = path.stat()
    except OSError:
        return "-"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class SiteInputs:
    """What the site is made of (paths relative to `root`, the workflow directory)."""

    root: Path
    results: list[Path]  # the run records (result.json)
    summary: pd.DataFrame
    overall: pd.DataFrame
    by_repository: pd.DataFrame
    comparisons: list[Comparison]
    tasks_dir: Path


@dataclass
class BuildReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)


class Site:
    """The site under `root/results/site`, its page keys, and the writes of one build."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = root / names.SITE
        self.env = environment()
        self.digest = code_digest()
        self.pages_file = self.dir / names.SITE_PAGES
        self.old = self._read_keys()
        self.keys: dict[str, str] = {}
        self.report = BuildReport()

    def _read_keys(self) -> dict[str, str]:
        try:
            data = json.loads(self.pages_file.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return {}
        return data.get("pages", {}) if isinstance(data, dict) and data.get("code") == self.digest else {}

    def page(self, page: str, key: str, render: Callable[[], str]) -> None:
        """Write `page` (relative to root) from `render()` unless its key is unchanged and it exists."""
        self.keys[page] = key
        path = self.root / page
        if self.old.get(page) == key and path.is_file():
            self.report.unchanged += 1
            return
        text = render()
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            self.report.unchanged += 1
            return
        write_atomic(path, text)
        self.report.written.append(page)

    def render(self, template: str, **context: Any) -> str:
        return self.env.get_template(template).render(**context)

    def finish(self) -> BuildReport:
        """Remove pages no longer made, then record the keys (last: an interrupted build redoes its pages)."""
        for page in sorted(set(self.old) - set(self.keys)):
            (self.root / page).unlink(missing_ok=True)
            self.report.removed.append(page)
        write_atomic(self.pages_file, json.dumps({"code": self.digest, "pages": self.keys}) + "\n")
        return self.report


def _instruction(root: Path, tasks_dir: Path, task: str) -> str | None:
    path = root / tasks_dir / task / names.INSTRUCTION
    return read_text(path, INSTRUCTION_BYTES)[0] if path.is_file() else None


def _run_pages(site: Site, inputs: SiteInputs) -> None:
    for result in inputs.results:
        # the result's own path names the run: <runs>/<agent>/<task>/attempt-<k>/result.json
        agent, task, attempt = result.parts[-4], result.parts[-3], result.parts[-2].removeprefix("attempt-")
        instruction = inputs.root / inputs.tasks_dir / task / names.INSTRUCTION
        key = f"{_stat_key(inputs.root / result)}|{_stat_key(instruction)}"

        def render(result: Path = result) -> str:
            data = run_page(inputs.root, result, inputs.tasks_dir)
            return site.render("run.html.j2", p=data, r=data.result)

        site.page(names.site_run_page(agent, task, attempt), key, render)


def _task_pages(site: Site, inputs: SiteInputs) -> None:
    for task, runs in inputs.summary.groupby("task", sort=True):
        page = names.site_task_page(str(task))
        instruction = inputs.root / inputs.tasks_dir / str(task) / names.INSTRUCTION
        key = _digest(runs.to_csv(index=False)) + "|" + _stat_key(instruction)

        def render(task: str = str(task), runs: pd.DataFrame = runs, page: str = page) -> str:
            return site.render(
                "task.html.j2",
                task=task,
                repository=str(runs["repository"].iloc[0]),
                rows=task_rows(runs, page),
                resolved=int((runs["status"] == Status.RESOLVED).sum()),
                categories=CATEGORIES,
                index=href(names.SITE_INDEX, page),
                instruction=_instruction(inputs.root, inputs.tasks_dir, task),
            )

        site.page(page, key, render)


def _pairs(inputs: SiteInputs) -> dict[tuple[str, str], list[Comparison]]:
    found: dict[tuple[str, str], list[Comparison]] = {}
    for comparison in inputs.comparisons:
        found.setdefault((comparison.agent_a, comparison.agent_b), []).append(comparison)
    return found


def _pair_pages(site: Site, inputs: SiteInputs) -> None:
    for (a, b), found in _pairs(inputs).items():
        page = names.site_pair_page(a, b)
        rows = [PairRow(c, "") for c in found]
        key = _digest(json.dumps([c.row() for c in found], sort_keys=True, default=str))
        site.page(
            page,
            key,
            lambda a=a, b=b, rows=rows, page=page: site.render(
                "pair.html.j2",
                a=a,
                b=b,
                rows=rows,
                header=PAIR_HEADER,
                note=COMPARISON_NOTE,
                index=href(names.SITE_INDEX, page),
                task_href=lambda t, page=page: href(names.site_task_page(t), page),
            ),
        )


def _index(site: Site, inputs: SiteInputs) -> None:
    pairs = [
        PairRow(c, href(names.site_pair_page(c.agent_a, c.agent_b), names.SITE_INDEX))
        for c in inputs.comparisons
    ]
    text = site.render(
        "index.html.j2",
        headlines=headlines(inputs.summary, inputs.overall),
        rate_note=RATE_NOTE,
        rates=rate_table(inputs.overall),
        by_repository=rate_table(inputs.by_repository),
        comparison_note=COMPARISON_NOTE,
        pair_header=PAIR_HEADER,
        pairs=pairs,
        grid=grid(inputs.summary),
    )
    site.page(names.SITE_INDEX, _digest(text), lambda: text)


def build_site(inputs: SiteInputs) -> BuildReport:
    """Write the pages whose inputs changed (the index last), remove the pages of runs that are gone."""
    site = Site(inputs.root)
    _run_pages(site, inputs)
    _task_pages(site, inputs)
    _pair_pages(site, inputs)
    _index(site, inputs)
    return site.finish()


def relative_results(root: Path, paths: Iterable[str | Path]) -> list[Path]:
    """Run record paths relative to the workflow directory (as rules list them)."""
    return [Path(os.path.relpath(root / p, root)) for p in paths]
