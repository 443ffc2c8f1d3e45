"""summary.md and the Snakemake scripts of rules summary and aggregate, from synthetic result.json files."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from kotlin_bench.core.render import markdown_table, render_markdown
from kotlin_bench.dag.progress import headline
from kotlin_bench.results.report import report_sections
from kotlin_bench.results.stats import rates, rates_by_repository, read_rates
from kotlin_bench.results.summary import read_summary, summarize
from tests.factories import make_result, mixed_results, mixed_summary, write_results
from tests.rule_scripts import Files, aggregate_outputs, run_script


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return mixed_summary(tmp_path)


def test_markdown_headline_without_errors(tmp_path: Path) -> None:
    summary = summarize(write_results(tmp_path, [make_result(t) for t in ("a-1", "a-2", "b-1", "b-2")]))
    text = render_markdown(report_sections(summary, rates(summary), rates_by_repository(summary)))
    assert "- oracle: 4/4 resolved (100.0%), 0 errors" in text
    assert "errored" not in text
    assert "| oracle | - | acme/a | 2/2 |" in text


def test_markdown_with_errors(mixed: pd.DataFrame) -> None:
    verdicts = ["oracle vs oracle: REPRODUCED: 4/4 tasks agree"]
    text = render_markdown(report_sections(mixed, rates(mixed), rates_by_repository(mixed), verdicts))
    assert "- agent (m1): 1/4 resolved (25.0%), 1 error" in text
    rerun = "kotlin-bench errors --delete && snakemake --cores all"
    assert f"1 run errored and is counted as unresolved in the rate; rerun it with `{rerun}`" in text
    assert f"```\n{rerun}\n```" in text
    assert "| agent | f2p_failed | 1 | calc-2 |" in text
    assert "REPRODUCED: 4/4 tasks agree" in text
    assert "33.3%" in text  # the rate excluding errors


def test_markdown_table_escapes() -> None:
    table = markdown_table(pd.DataFrame({"a": ["x|y", None], "n": [1, 2]}))
    assert table.splitlines() == ["| a | n |", "| --- | ---: |", "| x\\|y | 1 |", "|  | 2 |"]


def test_summary_and_aggregate_scripts(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    paths = write_results(tmp_path, mixed_results())
    out = tmp_path / "results"
    run_script("summarize.py", input=Files(results=[str(p) for p in paths], repeats=[]), output=Files(summary=str(out / "summary.csv")), params=SimpleNamespace(tasks_dir=str(tmp_path / "tasks"), retrieval={}), log=[str(out / "logs/summary.log")])  # fmt: skip
    reproduce = {"references": {"oracle": "oracle"}, "tolerance": 0.05}
    outputs = aggregate_outputs(out, ["oracle"])
    run_script(
        "aggregate.py",
        input=Files(summary=str(out / "summary.csv"), references=[], images=[]),
        output=outputs,
        params=SimpleNamespace(reproduce=reproduce, cutoffs={"oracle": "2025-07-31"}),
        log=[str(out / "logs/aggregate.log")],
    )
    printed = capfd.readouterr().out
    assert "kotlin-bench: 8 runs (5 resolved, 2 unresolved, 1 error)" in printed
    # the terminal ends on the headline (Snakefile's onsuccess), not on summary.md printed mid-run
    assert "oracle: 4/4" not in printed
    assert "- oracle: 4/4 resolved (100.0%), 0 errors" in (out / "logs/aggregate.log").read_text()
    lines = headline(tmp_path)
    assert lines[1] == "oracle: 4/4 resolved (100.0%, 95% CI 51.0% - 100.0%), 0 errors"
    assert "oracle vs oracle: REPRODUCED: 4/4 tasks agree" in lines
    assert len(read_summary(out / "summary.csv")) == 8
    assert list(read_rates(out / "rates.csv")["agent"]) == ["agent", "oracle"]
    assert (out / "summary.md").read_text().startswith("# kotlin-bench results")
    assert "REPRODUCED: 4/4 tasks agree" in (out / "reproduce/oracle.md").read_text()
    # the oracle's cutoff: its tasks have no task directory, so no merge date: neither side can tell
    too_few = (
        "**oracle** (cutoff 2025-07-31): too few tasks merged before or after the cutoff to tell (before 0"
    )
    assert too_few in (out / "summary.md").read_text()
    assert "4 tasks without merged_at" in (out / "summary.md").read_text()
    assert too_few in (out / "reproduce/oracle.md").read_text()
    assert (out / "logs/aggregate.log").exists()
    [verdict] = json.loads((out / "reproduce/verdicts.json").read_text())
    assert verdict == {
        "agent": "oracle",
        "reference": "oracle",
        "text": "REPRODUCED: 4/4 tasks agree",
        "comparison": str(out / "reproduce/oracle.csv"),
        "kind": "tasks",
    }


def test_the_regrade_headline_is_per_agent() -> None:
    from kotlin_bench.results.regrade import Change, headline

    changes = [
        Change("oracle", "calc-1", 1, 1.0, 0.0, None, "f2p_failed"),
        Change("oracle", "calc-2", 1, 1.0, 1.0, None, None),
        Change("nop", "calc-1", 1, 0.0, 0.0, "empty_patch", "empty_patch"),
    ]
    assert headline(changes) == [
        "nop: 0/1 resolved now, 0/1 after the regrade (1 unchanged)",
        "oracle: 2/2 resolved now, 1/2 after the regrade (1 run 1 -> 0, 1 unchanged)",
    ]
