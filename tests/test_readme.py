"""The README a newcomer reads: short, the two quick-start commands first, the reason vocabulary as the
code has it, and links that lead somewhere; docs/results.md documents every summary column."""

from __future__ import annotations

import re

from kotlin_bench.results.report import reasons_markdown
from kotlin_bench.results.summary import SUMMARY_COLUMNS
from kotlin_bench.scoring.expected import CATEGORIES
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_quick_start_commands_come_first() -> None:
    commands = [line.strip() for line in README.splitlines() if line.startswith("    scripts/setup.sh")]
    assert commands[:2] == [
        "scripts/setup.sh && snakemake --cores 2     # the example dataset with oracle and nop -> results/",
        "scripts/setup.sh --tests && python3 -m pytest -q      # the test suite (real Docker, Podman, Harbor, registry, Slurm)",
    ]
    assert (
        README.index("## Quick start")
        < README.index("## Run your own agent")
        < README.index("## Read the results")
    )


def test_the_reason_table_is_the_vocabulary() -> None:
    block = re.search(r"<!-- reasons:[^>]*-->\n(.*?)\n<!-- /reasons -->", README, re.DOTALL)
    assert block is not None
    assert block[1] == reasons_markdown(), "regenerate with kotlin_bench.results.report.reasons_markdown()"


def test_the_readme_is_short_and_its_links_lead_somewhere() -> None:
    assert len(README.splitlines()) < 200
    for page in (REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name}: link to {target}"
    for doc in ("results", "configuration", "dataset", "leaderboard", "threat-model", "operations", "layout"):
        assert f"(docs/{doc}.md)" in README


def test_every_summary_column_is_documented() -> None:
    text = (REPO / "docs/results.md").read_text(encoding="utf-8")
    per_category = {f"{c}_{k}" for c in CATEGORIES for k in ("expected", "landed", "missing")}
    for column in SUMMARY_COLUMNS:
        if column not in per_category:
            assert f"`{column}`" in text, column
    assert "`f2p_expected`, `f2p_landed`, `f2p_missing`" in text
