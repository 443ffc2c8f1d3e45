"""The README a newcomer reads: short, the two quick-start commands first, the reason vocabulary as the
code has it, and links that lead somewhere; docs/results.md documents every summary column."""

from __future__ import annotations

import re
from pathlib import Path

from kotlin_bench.results.report import reasons_markdown, terminal_headline
from kotlin_bench.results.stats import rates
from kotlin_bench.results.summary import SUMMARY_COLUMNS, summarize
from kotlin_bench.scoring.expected import CATEGORIES
from tests.conftest import REPO
from tests.factories import make_result, write_results

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_quick_start_commands_come_first() -> None:
    commands = [line.strip() for line in README.splitlines() if line.startswith("    scripts/setup.sh")]
    assert commands[:2] == [
        "scripts/setup.sh && snakemake --cores 2     # the example dataset with oracle and nop -> results/",
        "scripts/setup.sh --tests && python3 -m pytest -q      # the test suite (real Docker, Podman, Harbor, registry, Slurm)",
    ]
    assert (
        README.index("## Quick start")
        < README.index("## Read the results")
        < README.index("## Run your own agent")
        < README.index("## More")
    )


def test_the_headline_shown_is_the_one_printed(tmp_path: Path) -> None:
    """The quick start's example headline is what `terminal_headline` prints for those counts."""
    shown = [line.strip() for line in README.splitlines() if line.startswith("    kotlin-bench: ")]
    assert shown
    results = []
    for line in shown:
        agent, resolved, total = re.match(r"kotlin-bench: (\S+): (\d+)/(\d+) resolved", line).groups()
        for i in range(int(total)):
            status = "resolved" if i < int(resolved) else "unresolved"
            results.append(
                make_result(f"t-{i}", agent, status=status, reason=None if status == "resolved" else "other")
            )
    summary = summarize(write_results(tmp_path, results))
    printed = terminal_headline(summary, rates(summary), [])
    assert [f"kotlin-bench: {line}" for line in printed[: len(shown)]] == shown


def test_the_reason_table_is_the_vocabulary() -> None:
    block = re.search(r"<!-- reasons:[^>]*-->\n(.*?)\n<!-- /reasons -->", README, re.DOTALL)
    assert block is not None
    assert block[1] == reasons_markdown(), "regenerate with kotlin_bench.results.report.reasons_markdown()"


def test_the_readme_is_short_and_its_links_lead_somewhere() -> None:
    assert len(README.splitlines()) <= 120
    for page in (REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name}: link to {target}"
    for doc in (
        "results",
        "configuration",
        "dataset",
        "leaderboard",
        "threat-model",
        "operations",
        "layout",
        "what-was-run",
    ):
        assert f"(docs/{doc}.md)" in README


def test_every_summary_column_is_documented() -> None:
    text = (REPO / "docs/results.md").read_text(encoding="utf-8")
    per_category = {f"{c}_{k}" for c in CATEGORIES for k in ("expected", "landed", "missing")}
    for column in SUMMARY_COLUMNS:
        if column not in per_category:
            assert f"`{column}`" in text, column
    assert "`f2p_expected`, `f2p_landed`, `f2p_missing`" in text
