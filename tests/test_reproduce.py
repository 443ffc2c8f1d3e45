"""Reproduction verdicts: built-in and CSV references, per task and per repository."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.dataset.leaderboard import load_rows
from kotlin_bench.results.reproduce.agent import render_reproduction
from kotlin_bench.results.reproduce.plan import ReproduceError, ReproducePlan
from kotlin_bench.results.reproduce.tasks import (
    COMPARISON_COLUMNS,
    COMPARISON_SCHEMA,
    compare,
    load_reference,
    read_comparison,
    read_reference,
    verdict,
)
from kotlin_bench.results.reproduce.verdicts import Verdict
from kotlin_bench.results.summary import summarize, write_table
from tests.conftest import REPO
from tests.factories import make_result, write_results

TASKS = ["calc-1", "calc-2", "slug-1", "units-1"]


def page(agent: str, label: str, comparison: pd.DataFrame) -> str:
    return render_reproduction(Verdict(agent, label, verdict(comparison), ""), comparison)


@pytest.fixture
def all_resolved(tmp_path: Path) -> pd.DataFrame:
    return summarize(write_results(tmp_path, [make_result(t) for t in TASKS]))


def csv(tmp_path: Path, text: str, name: str = "reference.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_oracle_reference_matches_an_all_resolved_summary(all_resolved: pd.DataFrame) -> None:
    comparison = compare(all_resolved, load_reference("oracle", all_resolved))
    assert verdict(comparison) == "REPRODUCED: 4/4 tasks agree"
    assert list(comparison.columns) == COMPARISON_COLUMNS
    assert {c: str(t) for c, t in comparison.dtypes.items()} == COMPARISON_SCHEMA
    repos = comparison[comparison["level"] == "repository"].set_index("repository")
    assert list(repos.index) == ["acme/calc", "acme/slug", "acme/units"]
    assert repos.loc["acme/calc", "ours_resolved"] == 2 and repos.loc["acme/calc", "delta"] == 0.0
    assert repos["agree"].all()


def test_nop_reference_differs_everywhere(all_resolved: pd.DataFrame) -> None:
    comparison = compare(all_resolved, load_reference("nop", all_resolved))
    assert verdict(comparison) == "NOT REPRODUCED: 4 tasks differ: calc-1, calc-2, slug-1, units-1"
    repos = comparison[comparison["level"] == "repository"].set_index("repository")
    assert repos.loc["acme/calc", "delta"] == 1.0


def test_a_wrong_reference_reports_exactly_the_differing_tasks(
    all_resolved: pd.DataFrame, tmp_path: Path
) -> None:
    path = csv(tmp_path, "task,resolved\ncalc-1,1\ncalc-2,0\nslug-1,true\nunits-1,no\n")
    comparison = compare(all_resolved, read_reference(path))
    assert verdict(comparison) == "NOT REPRODUCED: 2 tasks differ: calc-2, units-1"
    tasks = comparison[comparison["level"] == "task"]
    assert list(tasks.loc[~tasks["agree"], "task"]) == ["calc-2", "units-1"]
    text = page("oracle", path.name, comparison)
    assert "NOT REPRODUCED: 2 tasks differ: calc-2, units-1" in text
    assert "| calc-2 | acme/calc | 1/1 resolved | unresolved |  |" in text
    assert "| acme/calc | 2/2 resolved (100.0%) | 50.0% | +50.0 pts |" in text


def test_one_differing_task_is_singular(all_resolved: pd.DataFrame, tmp_path: Path) -> None:
    path = csv(tmp_path, "task,resolved\ncalc-1,1\ncalc-2,0\nslug-1,1\nunits-1,1\n")
    assert verdict(compare(all_resolved, read_reference(path))) == "NOT REPRODUCED: 1 task differs: calc-2"


def test_tasks_on_one_side_only_are_not_judged(all_resolved: pd.DataFrame, tmp_path: Path) -> None:
    path = csv(
        tmp_path, "task,resolved,repository\ncalc-1,1,acme/calc\ncalc-2,1,acme/calc\nother-9,0,acme/other\n"
    )
    comparison = compare(all_resolved, read_reference(path))
    assert verdict(comparison) == "REPRODUCED: 2/2 tasks agree"
    notes = comparison[comparison["level"] == "task"].set_index("task")["note"]
    assert notes["other-9"] == "not run" and notes["slug-1"] == "not in the reference"
    text = page("oracle", path.name, comparison)
    assert "1 task not run: other-9" in text
    assert "2 tasks not in the reference: slug-1, units-1" in text


def test_no_common_task(all_resolved: pd.DataFrame, tmp_path: Path) -> None:
    comparison = compare(all_resolved, read_reference(csv(tmp_path, "task,resolved\nx-1,1\n")))
    assert verdict(comparison) == "NOT REPRODUCED: no task in common with the reference"


def test_attempts_majority_and_errors(tmp_path: Path) -> None:
    """2 of 3 -> resolved, 1 of 3 -> unresolved, 1 of 2 -> resolved, all errored -> never agrees."""
    results = [
        *(
            make_result("a-1", attempt=k, status=s)
            for k, s in enumerate(["resolved", "resolved", "unresolved"], 1)
        ),
        *(
            make_result("a-2", attempt=k, status=s)
            for k, s in enumerate(["resolved", "unresolved", "error"], 1)
        ),
        *(make_result("a-3", attempt=k, status=s) for k, s in enumerate(["unresolved", "resolved"], 1)),
        *(make_result("a-4", attempt=k, status="error") for k in (1, 2)),
    ]
    summary = summarize(write_results(tmp_path, results))
    path = csv(tmp_path, "task,resolved\na-1,1\na-2,0\na-3,1\na-4,0\n")
    comparison = compare(summary, read_reference(path))
    assert verdict(comparison) == "NOT REPRODUCED: 1 task differs: a-4"
    tasks = comparison[comparison["level"] == "task"].set_index("task")
    assert tasks.loc["a-2", "ours"] == pytest.approx(1 / 3)
    assert tasks.loc["a-2", "note"] == "1 of 3 attempts errored"
    assert tasks.loc["a-4", "note"] == "all attempts errored"


def test_rate_reference(all_resolved: pd.DataFrame, tmp_path: Path) -> None:
    good = csv(tmp_path, "repository,rate\nacme/calc,1.0\nacme/slug,0.97\nacme/units,1\n")
    comparison = compare(all_resolved, read_reference(good), tolerance=0.05)
    assert verdict(comparison) == "REPRODUCED: 3/3 repositories agree"
    bad = csv(tmp_path, "repository,rate\nacme/calc,0.5\nacme/slug,1\nacme/zzz,0.2\n", "bad.csv")
    comparison = compare(all_resolved, read_reference(bad))
    assert verdict(comparison) == "NOT REPRODUCED: 1 repository differs: acme/calc"
    notes = comparison.set_index("repository")["note"]
    assert notes["acme/zzz"] == "not run" and notes["acme/units"] == "not in the reference"
    assert "| acme/calc | 2/2 resolved (100.0%) | 50.0% | +50.0 pts | 100.0% - 100.0% | NO |" in (
        page("oracle", "bad.csv", comparison)
    )


def test_a_rate_inside_our_interval_agrees(tmp_path: Path) -> None:
    results = [make_result(f"calc-{i}", status="resolved" if i % 2 else "unresolved") for i in range(1, 11)]
    summary = summarize(write_results(tmp_path, results))
    path = csv(tmp_path, "repository,rate\nacme/calc,0.35\n")
    comparison = compare(summary, read_reference(path), tolerance=0.0)
    row = comparison.iloc[0]
    assert row["ci95_low"] <= 0.35 <= row["ci95_high"] and row["delta"] == pytest.approx(0.15)
    assert verdict(comparison) == "REPRODUCED: 1/1 repository agree"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name,score\nx,1\n", "expected columns task,resolved or repository,rate"),
        ("task,resolved\nx,maybe\n", "resolved 'maybe'"),
        ("task,resolved\nx,1\nx,0\n", "tasks listed twice"),
        ("repository,rate\na/b,75\n", "outside \\[0, 1\\]"),
        ("repository,rate\na/b,high\n", "not a number"),
    ],
)
def test_bad_reference_files(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ReproduceError, match=message):
        read_reference(csv(tmp_path, text))


def test_comparison_csv_round_trip(all_resolved: pd.DataFrame, tmp_path: Path) -> None:
    comparison = compare(all_resolved, load_reference("nop", all_resolved))
    write_table(comparison, tmp_path / "oracle.csv")
    pd.testing.assert_frame_equal(read_comparison(tmp_path / "oracle.csv"), comparison)


def test_plan_from_config(tmp_path: Path) -> None:
    agents = ["oracle", "nop", "claude"]
    assert ReproducePlan.from_config(None, agents, tmp_path).references == {}
    plan = ReproducePlan.from_config({"reference": "oracle", "agents": ["oracle"]}, agents, tmp_path)
    assert plan.references == {"oracle": "oracle"}
    assert plan.outputs(".md") == ["results/reproduce/oracle.md"]
    assert plan.reference_files() == []
    csv(tmp_path, "task,resolved\n", "paper.csv")
    plan = ReproducePlan.from_config(
        {"reference": {"oracle": "oracle", "nop": "nop", "claude": "paper.csv"}, "tolerance": 0.1},
        agents,
        tmp_path,
    )
    assert plan.references["claude"] == "paper.csv"  # relative to the checkout, as given
    assert plan.reference_files() == ["paper.csv"]
    assert ReproducePlan.from_params(plan.to_params(), tmp_path) == plan
    assert str(tmp_path) not in json.dumps(plan.to_params())  # moving the checkout reruns nothing
    every = ReproducePlan.from_config({"reference": "nop"}, agents, tmp_path)
    assert list(every.references) == agents


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"reference": "missing.csv"}, "is not a file"),
        ({"reference": "oracle", "tolerance": 5}, "tolerance"),
        ({"agents": ["oracle"]}, "expected"),
    ],
)
def test_plan_rejects_bad_config(tmp_path: Path, raw: dict[str, object], message: str) -> None:
    with pytest.raises(ReproduceError, match=message):
        ReproducePlan.from_config(raw, ["oracle", "nop"], tmp_path)


@pytest.mark.parametrize(
    "raw", [{"reference": "oracle", "agents": ["ghost"]}, {"reference": {"ghost": "nop"}}]
)
def test_references_of_agents_not_configured_are_a_warning(tmp_path: Path, raw: dict[str, object]) -> None:
    """A config for one's own agents may keep the bundled references of agents it does not run."""
    with pytest.warns(UserWarning, match="no agent named ghost is configured"):
        plan = ReproducePlan.from_config(raw, ["oracle", "nop"], tmp_path)
    assert plan.references == {}


def test_shipped_references_parse() -> None:
    shipped = sorted((REPO / "reference").glob("*.csv"))
    assert shipped
    for path in shipped:
        if (
            path.name == "leaderboard.csv"
        ):  # the published rows (kotlin_bench.dataset.leaderboard), not a table of outcomes
            assert len(load_rows(path)) == 19
            continue
        reference = read_reference(path)
        assert reference.tasks is not None or reference.repositories is not None
