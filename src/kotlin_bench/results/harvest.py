"""What a harvest of one repository and window produced (rule harvest_window): the candidates table, the
dated dataset specification of the accepted tasks with their derived lists and task directories, a config
that runs them like any dataset, and the page (markdown and HTML) of what was harvested, accepted and
rejected, and why.

`candidates.csv` has one row per pull request of the window (`TABLE_COLUMNS`): its verdict (`accepted`,
`rejected`, `error`), the reason of a rejection (`kotlin_bench.dataset.harvest.rules.Reason`), the detail,
its dates (`merged_at`, `issue_opened_at`: the API's, UTC), and for a validated candidate the base image
it was validated on, the variants tried and the lists' sizes.
"""

from __future__ import annotations

import html
import json
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.render import STYLE, Section, render_markdown, section_html
from kotlin_bench.dataset.generate import generate
from kotlin_bench.dataset.harvest import tasks as harvest_tasks
from kotlin_bench.dataset.harvest.records import Screened, Window
from kotlin_bench.dataset.harvest.rules import REASON_TEXT, Reason, Verdict
from kotlin_bench.dataset.spec import Dataset, ValidationMark, parse_dataset
from kotlin_bench.validation.harvest import CandidateVerdict

TABLE_COLUMNS = [
    "repository", "number", "title", "url", "author", "merged_at", "issue_opened_at", "issues",
    "verdict", "reason", "detail", "base_image", "variants_tried", "f2p", "p2p", "s2p", "n2p", "flaky", "task",
]  # fmt: skip
# What a harvested dataset's config takes from the config that harvested it; the rest is its own.
CARRIED = ("bases_manifest", "retries", "materialize", "extra_hosts", "disk", "engine", "github", "resources")


def rows(screened: Sequence[Screened], verdicts: Mapping[int, CandidateVerdict]) -> pd.DataFrame:
    """The candidates table: every pull request of the window with its final verdict."""
    out = []
    for s in screened:
        v = verdicts.get(s.number)
        verdict, reason, detail = (v.verdict, v.reason, v.detail) if v else (s.verdict, s.reason, s.detail)
        tried = "; ".join(f"{t['base_image']}: {'builds' if t['builds'] else 'fails'}" for t in v.tried) if v else ""
        counts = v.counts if v else {}
        out.append({
            "repository": s.repository, "number": s.number, "title": s.title, "url": s.url, "author": s.author,
            "merged_at": s.merged_at, "issue_opened_at": s.issue_opened_at,
            "issues": " ".join(f"#{n}" for n in s.issues), "verdict": verdict, "reason": reason or "",
            "detail": detail, "base_image": (v.base_image if v else None) or "", "variants_tried": tried,
            **{k: counts.get(k) for k in ("f2p", "p2p", "s2p", "n2p")},
            "flaky": len(v.flaky) if v else None, "task": v.task if v and v.verdict == Verdict.ACCEPTED else "",
        })  # fmt: skip
    counted = {k: "Int64" for k in ("f2p", "p2p", "s2p", "n2p", "flaky")}
    return pd.DataFrame(out, columns=TABLE_COLUMNS).astype(counted)


def accepted_entries(
    dataset: Dataset,
    screened: Sequence[Screened],
    verdicts: Mapping[int, CandidateVerdict],
    commands: Mapping[str, str] | None,
) -> list[dict[str, Any]]:
    """The accepted candidates' entries, `validation: valid`, with their counts, dates and flaky excludes
    (`dataset`: the specification harvested for, whose tasks give the test command)."""
    out = []
    for s in screened:
        v = verdicts.get(s.number)
        if v is None or v.verdict != Verdict.ACCEPTED or v.base_image is None:
            continue
        base = dataset.base(v.base_image)
        command = harvest_tasks.test_command(dataset, s.repository, commands)
        kind = harvest_tasks.init_script_kind(dataset, s.repository, command) if v.flaky_excludes else None
        out.append(harvest_tasks.entry(
            s, base, command, counts=v.counts, flaky_excludes=v.flaky_excludes, init_kind=kind,
            mark=ValidationMark.VALID,
        ))  # fmt: skip
    return out


def window_config(config: Mapping[str, Any], window_dir: Path) -> dict[str, Any]:
    """A config that runs the harvested tasks like any dataset (`--configfile`), oracle and nop."""
    out: dict[str, Any] = {
        "spec": str(window_dir / names.HARVEST_SPEC),
        "tasks_dir": str(window_dir / names.HARVEST_TASKS),
    }
    out |= {k: config[k] for k in CARRIED if k in config}
    materialize = dict(out.get("materialize") or {})
    upstream = dict(materialize.get("upstream") or {})
    upstream |= {"issues_cache": names.HARVEST_RECORDS, "expected_tests_dir": str(window_dir / names.HARVEST_EXPECTED)}
    out["materialize"] = {**materialize, "source": "upstream", "upstream": upstream}
    out |= {
        "tasks": "all",
        "agents": [{"name": "oracle", "kind": "oracle"}, {"name": "nop", "kind": "nop"}],
        "attempts": 1,
        "reproduce": {"reference": {"oracle": "oracle", "nop": "nop"}},
    }
    return out


def page_sections(table: pd.DataFrame, repository: str, window: Window, spec: Path) -> list[Section]:
    verdicts = Counter(table["verdict"])
    reasons = Counter(r for r in table.loc[table["verdict"] == Verdict.REJECTED, "reason"])
    lines = [
        f"{len(table)} pull request(s) of {repository} merged or closed from {window.since} to {window.until} "
        f"(exclusive): {verdicts.get(Verdict.ACCEPTED, 0)} accepted, {verdicts.get(Verdict.REJECTED, 0)} "
        f"rejected, {verdicts.get(Verdict.ERROR, 0)} error(s) (tried again by the next harvest).",
        f"The accepted tasks are in `{spec}`; run them with `snakemake --cores N --configfile "
        f"{spec.with_name(names.HARVEST_CONFIG)} --replace-workflow-config`.",
    ]
    sections = [Section("Headline", lines)]
    accepted = table[table["verdict"] == Verdict.ACCEPTED]
    if len(accepted):
        shown = accepted[["task", "title", "merged_at", "issue_opened_at", "base_image", "f2p", "p2p", "s2p", "n2p"]]
        sections.append(Section("Accepted", [], shown.reset_index(drop=True)))
    if reasons:
        counted = pd.DataFrame(
            [{"reason": r, "pull requests": n, "means": REASON_TEXT[Reason(r)]} for r, n in reasons.most_common()]
        )
        sections.append(Section("Rejected, by reason", [], counted))
    others = table[table["verdict"] != Verdict.ACCEPTED][["number", "title", "verdict", "reason", "detail"]]
    if len(others):
        sections.append(Section("Every pull request not accepted", [], others.reset_index(drop=True)))
    return sections


def render_page(sections: Sequence[Section], title: str) -> str:
    body = [f"<h1>{html.escape(title)}</h1>", *map(section_html, sections)]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body) + "\n</body>\n</html>\n"
    )  # fmt: skip


def write_window(
    *,
    source_spec: Path,
    config: Mapping[str, Any],
    repository: str,
    window: Window,
    screened: Sequence[Screened],
    verdicts: Mapping[int, CandidateVerdict],
    outputs: Mapping[str, Path],
) -> pd.DataFrame:
    """Every output of a window (`outputs`: spec, table, config, page, html, tasks, expected)."""
    source = harvest_tasks.read_spec(source_spec)
    commands = (config.get("harvest") or {}).get("test_commands")
    entries = accepted_entries(parse_dataset(source, source_spec), screened, verdicts, commands)
    owner, repo = repository.split("/", 1)
    name = f"harvest-{owner}-{repo}-{window.name}"
    spec_data = harvest_tasks.spec_of(source, repository, name, entries)
    dataset = parse_dataset(spec_data, outputs["spec"])
    write_atomic(outputs["spec"], json.dumps(spec_data, indent=2, ensure_ascii=False) + "\n")
    outputs["expected"].mkdir(parents=True, exist_ok=True)
    for entry in entries:
        derived = Path(names.harvest_verdict(owner, repo, entry["pr"])).with_name(names.DERIVED_EXPECTED)
        shutil.copyfile(derived, outputs["expected"] / f"{entry['id']}.json")
    outputs["tasks"].mkdir(parents=True, exist_ok=True)
    generate(dataset, outputs["tasks"], bases_out=None, repo_root=Path("."))
    window_dir = outputs["spec"].parent
    config_text = "# Made by kotlin-bench harvest: runs the accepted tasks of this window.\n" + yaml.safe_dump(
        window_config(config, window_dir), sort_keys=False
    )
    write_atomic(outputs["config"], config_text)
    table = rows(screened, verdicts)
    write_atomic(outputs["table"], table.to_csv(index=False))
    title = f"Harvest of {repository}, {window.since} to {window.until}"
    sections = page_sections(table, repository, window, outputs["spec"])
    write_atomic(outputs["page"], render_markdown(sections, title))
    write_atomic(outputs["html"], render_page(sections, title))
    return table


def read_table(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"reason": str, "detail": str, "task": str, "issues": str}, keep_default_na=False)
