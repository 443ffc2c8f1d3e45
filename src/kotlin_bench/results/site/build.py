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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, FileSystemLoader
from markupsafe import Markup

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.record import Status
from kotlin_bench.results import outcomes
from kotlin_bench.results.compare import Comparison
from kotlin_bench.results.cutoff import cutoff_gaps
from kotlin_bench.results.report import COMPARISON_NOTE, RATE_NOTE, headlines
from kotlin_bench.results.site.live import finished, running
from kotlin_bench.results.site.pages import (
    INSTRUCTION_BYTES,
    PAIR_HEADER,
    PairRow,
    cutoff_view,
    grid,
    href,
    rate_table,
    read_text,
    task_rows,
)
from kotlin_bench.results.site.pair import discordant
from kotlin_bench.results.site.run import run_page
from kotlin_bench.scoring.expected import CATEGORIES

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"


def environment() -> Environment:
    """Autoescaped HTML; a key an older record lacks renders empty. Every page has the outcome colours."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["outcome_css"] = Markup(outcomes.css())
    return env


def code_digest() -> str:
    """The templates, this package's code, the colours and the harness version: a change rebuilds every
    page."""
    sha = hashlib.sha256(HARNESS_VERSION.encode())
    for path in sorted([*TEMPLATES.rglob("*.j2"), *HERE.glob("*.py"), Path(outcomes.__file__)]):
        sha.update(path.relative_to(HERE.parent).as_posix().encode() + b"\0" + path.read_bytes())
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
    cutoffs: Mapping[str, str] = field(default_factory=dict)  # agent -> training cutoff (YYYY-MM-DD)


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
        agent, task, attempt = _run_of(result)
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
        tasks = sorted({t for c in found for t in (*c.only_a_tasks, *c.only_b_tasks)})
        runs = inputs.summary[inputs.summary["agent"].isin([a, b]) & inputs.summary["task"].isin(tasks)]
        key = _digest(
            json.dumps([c.row() for c in found], sort_keys=True, default=str) + runs.to_csv(index=False)
        )
        site.page(
            page,
            key,
            lambda a=a, b=b, rows=rows, page=page, found=found: site.render(
                "pair.html.j2",
                a=a,
                b=b,
                rows=rows,
                header=PAIR_HEADER,
                note=COMPARISON_NOTE,
                index=href(names.SITE_INDEX, page),
                discordant=discordant(inputs.root, inputs.summary, found, a, b, page),
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
        cutoff=cutoff_view(cutoff_gaps(inputs.summary, inputs.cutoffs)),
        charts=[
            (title, href(path, names.SITE_INDEX)) for title, path in CHARTS if (inputs.root / path).is_file()
        ],
    )
    site.page(names.SITE_INDEX, _digest(text), lambda: text)


CHARTS = (
    ("Resolve rate per agent (95% Wilson interval)", names.PLOT_RATES),
    ("Resolve rate per repository", names.PLOT_RATES_BY_REPOSITORY),
    ("Outcome per task and run", names.PLOT_OUTCOMES),
    ("Resolve rate by merge quarter (dashed: an agent's training cutoff)", names.PLOT_QUARTERS),
)


def render_live(site: Site, root: Path, stamp: str = "") -> str:
    """The page of runs in progress (`live.html`), as the results are now."""
    done, total = finished(root, names.SITE_LIVE)
    return site.render(
        "live.html.j2", running=running(root), finished=done, total=total, more=total > len(done), stamp=stamp
    )


def live_update(root: Path, result_path: Path, tasks_dir: Path) -> None:
    """After one run's verdict (a verify job): its page and the page of runs in progress, so that the
    site follows a long run. The site's own build at the end rewrites both."""
    site = Site(root)
    page = names.site_run_page(*_run_of(result_path))
    data = run_page(root, result_path, tasks_dir)
    write_atomic(root / page, site.render("run.html.j2", p=data, r=data.result))
    stamp = datetime.now(UTC).strftime("Written %Y-%m-%d %H:%M:%S UTC.")
    write_atomic(root / names.SITE_LIVE, render_live(site, root, stamp))


def _run_of(result: Path) -> tuple[str, str, str]:
    """(agent, task, attempt) of <runs>/<agent>/<task>/attempt-<k>/result.json."""
    return result.parts[-4], result.parts[-3], result.parts[-2].removeprefix("attempt-")


def build_site(inputs: SiteInputs) -> BuildReport:
    """Write the pages whose inputs changed (the index last), remove the pages of runs that are gone."""
    site = Site(inputs.root)
    _run_pages(site, inputs)
    _task_pages(site, inputs)
    _pair_pages(site, inputs)
    _index(site, inputs)
    text = render_live(site, inputs.root)
    site.page(names.SITE_LIVE, _digest(text), lambda: text)
    return site.finish()
