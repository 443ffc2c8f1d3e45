"""summary.csv from synthetic result.json files: its schema, its values, and reading it back."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.core.render import render_markdown
from kotlin_bench.results.compare import all_pairs
from kotlin_bench.results.plots import _labels
from kotlin_bench.results.report import headlines, report_sections
from kotlin_bench.results.site.pages import grid
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import (
    STATUSES,
    SUMMARY_COLUMNS,
    SUMMARY_SCHEMA,
    read_summary,
    summarize,
    write_table,
)
from kotlin_bench.scoring.reasons import Reason
from tests.factories import mixed_summary, partial_predictions_results, write_results


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return mixed_summary(tmp_path)


def test_summary_schema(mixed: pd.DataFrame, tmp_path: Path) -> None:
    assert list(mixed.columns) == SUMMARY_COLUMNS
    assert {c: str(t) for c, t in mixed.dtypes.items()} == SUMMARY_SCHEMA
    assert set(mixed["status"]) <= set(STATUSES)
    failed = mixed[mixed["status"] != "resolved"]
    assert failed["reason"].notna().all()
    assert set(failed["reason"]) <= {r.value for r in Reason}
    assert mixed.loc[mixed["status"] == "resolved", "reason"].isna().all()
    write_table(mixed, tmp_path / "summary.csv")
    pd.testing.assert_frame_equal(read_summary(tmp_path / "summary.csv"), mixed)


def test_summary_values(mixed: pd.DataFrame) -> None:
    rows = mixed.set_index(["agent", "task"])
    assert list(mixed["agent"]) == ["agent"] * 4 + ["oracle"] * 4
    first = rows.loc[("agent", "calc-1")]
    assert (first["input_tokens"], first["output_tokens"], first["cost_usd"]) == (1200, 300, 0.042)
    assert (first["f2p_expected"], first["f2p_landed"], first["f2p_missing"]) == (2, 2, 0)
    assert (first["agent_sec"], first["verifier_sec"], first["total_sec"]) == (1.5, 10.25, 12.0)
    assert first["repository"] == "acme/calc" and first["model"] == "m1"
    assert rows.loc[("agent", "calc-2"), "reason"] == "f2p_failed"
    assert rows.loc[("agent", "calc-2"), "f2p_missing"] == 1
    assert rows.loc[("agent", "slug-1"), "reason"] == "verifier_timeout"
    error = rows.loc[("agent", "units-1")]
    assert list(error[["status", "reason", "reason_detail"]]) == ["error", "infrastructure", "RunError"]
    assert error["error"] == "the engine went away"
    assert pd.isna(error["reward"]) and pd.isna(error["total_sec"]) and pd.isna(error["input_tokens"])
    assert pd.isna(rows.loc[("oracle", "calc-1"), "model"])


def test_a_predictions_agent_is_one_row_everywhere(tmp_path: Path) -> None:
    """Issue 31: predictions for 2 of 5 tasks gave `my-model: 0/3` and `my-model (my-model): 1/2`. One
    agent is one row, `my-model: 1/5`, in the summary, both rate tables, the headline, summary.md, the
    charts' labels, the site's grid and the comparisons."""
    results = partial_predictions_results()
    tasks = len({r.task for r in results})
    summary = summarize(write_results(tmp_path, results))
    mine = summary[summary["agent"] == "my-model"]
    assert len(mine) == tasks and set(mine["model"]) == {"my-model"} and set(mine["kind"]) == {"predictions"}
    overall, by_repository = rates(summary), rates_by_repository(summary)
    assert list(overall["agent"]) == ["my-model", "oracle"]
    assert list(by_repository["agent"]) == ["my-model", "oracle"]
    lines = headlines(summary, overall)
    assert f"my-model: 1/{tasks} resolved (20.0%), 0 errors" in lines
    markdown = render_markdown(report_sections(summary, overall, by_repository, [], all_pairs(summary)))
    assert "my-model (my-model)" not in markdown and markdown.count(f"| 1/{tasks} |") == 2
    assert _labels(overall) == ["my-model", "oracle"]
    assert grid(summary).agents == ["my-model", "oracle"]
    assert {(c.agent_a, c.agent_b) for c in all_pairs(summary)} == {("oracle", "my-model")}
    # a summary.csv written before (one model missing) is still read as one agent
    old = summary.assign(model=summary["model"].where(summary["reason"] != "no_prediction", None))
    assert list(rates(old)["agent"]) == ["my-model", "oracle"]


def test_a_stale_summary_is_forced_and_kept_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 31: adding an agent removed summary.csv while the DAG was built, so `compare` failed until the
    run ended. In a run, a summary that lacks some of its results stays where it is and is forced (as
    `--forcerun` of that file would): Snakemake remakes it from all of them, atomically, at the end."""
    from types import SimpleNamespace

    from kotlin_bench.dag.stale import Staleness

    monkeypatch.chdir(tmp_path)
    (tmp_path / "summary.csv").write_text("agent\noracle\n")
    (tmp_path / "a.json").write_text("{}")
    dag = SimpleNamespace(forcefiles=set())
    workflow = SimpleNamespace(
        executor_plugin=object(),
        exec_mode=SimpleNamespace(name="DEFAULT"),
        dryrun=False,
        touch=False,
        persistence=SimpleNamespace(path=str(tmp_path / ".snakemake")),
        dag=dag,
    )
    stale = Staleness(workflow)
    assert stale.settle("summary.csv", ["a.json", "b.json"], "run result(s)") == ["a.json", "b.json"]
    assert (tmp_path / "summary.csv").read_text() == "agent\noracle\n" and dag.forcefiles == {"summary.csv"}
    (tmp_path / "b.json").write_text("{}")
    Staleness(workflow).settle("summary.csv", ["a.json", "b.json"], "run result(s)")
    assert dag.forcefiles == {"summary.csv"}  # complete: nothing more is forced
