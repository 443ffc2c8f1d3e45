"""The paired comparison of agents: counts, the exact McNemar test, Newcombe's paired interval (checked
against the paper's example) and the paired bootstrap, per attempt and over attempts."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.results.compare import (
    OVER_ATTEMPTS,
    all_pairs,
    compare,
    mcnemar_exact,
    newcombe_paired_interval,
    read_comparisons,
    write_comparisons,
)
from kotlin_bench.results.summary import summarize
from tests.factories import make_result, write_results


def summary_of(tmp_path: Path, outcomes: dict[str, dict[str, list[str]]]) -> pd.DataFrame:
    """agent -> task -> the status of each attempt."""
    results = [
        make_result(task, agent, attempt, status, reason=None if status == "resolved" else "f2p_failed")
        for agent, tasks in outcomes.items()
        for task, statuses in tasks.items()
        for attempt, status in enumerate(statuses, start=1)
    ]
    return summarize(write_results(tmp_path, results))


def test_oracle_against_nop_on_five_tasks(tmp_path: Path) -> None:
    """The examples' shape: 5 tasks, all solved by one agent only: 5 discordant, p = 2 / 2**5."""
    tasks = [f"t-{i}" for i in range(5)]
    summary = summary_of(
        tmp_path,
        {"oracle": {t: ["resolved"] for t in tasks}, "nop": {t: ["unresolved"] for t in tasks}},
    )
    (found,) = compare(summary, "oracle", "nop")
    assert (found.scope, found.tasks, found.discordant, found.only_a, found.only_b) == (
        "attempt 1",
        5,
        5,
        5,
        0,
    )
    assert found.p_value == pytest.approx(0.0625)
    assert found.only_a_tasks == tasks and found.only_b_tasks == []
    assert found.difference == 1.0
    # the paired bootstrap collapses on this sample; Newcombe's interval does not
    assert (found.bootstrap_low, found.bootstrap_high) == (1.0, 1.0)
    assert found.ci_low == pytest.approx(0.3855, abs=1e-4) and found.ci_high == 1.0
    assert all_pairs(summary)[0].agent_a == "oracle"  # the higher rate first


def test_newcombe_paired_interval_matches_the_paper() -> None:
    """Newcombe 1998 (Stat Med 17:2635), example (a): 36 both, 12 and 2 discordant, 0 neither: method 10
    gives 0.0569 to 0.3404."""
    low, high = newcombe_paired_interval(36, 12, 2, 0)
    assert (round(low, 4), round(high, 4)) == (0.0569, 0.3404)
    low, high = newcombe_paired_interval(3, 0, 0, 2)  # no discordant pair: around 0, not collapsed
    assert low == pytest.approx(-high) and high > 0.05


def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(1, 1) == 1.0
    assert mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    assert mcnemar_exact(2, 9) == pytest.approx(0.06543, abs=1e-5)


def test_several_attempts_and_tasks_one_agent_lacks(tmp_path: Path) -> None:
    summary = summary_of(
        tmp_path,
        {
            "a": {
                "x-1": ["resolved", "resolved"],
                "x-2": ["resolved", "unresolved"],
                "x-3": ["unresolved"] * 2,
            },
            "b": {"x-1": ["unresolved", "resolved"], "x-2": ["unresolved"] * 2, "x-4": ["resolved"] * 2},
        },
    )
    found = {c.scope: c for c in compare(summary, "a", "b")}
    assert set(found) == {"attempt 1", "attempt 2", OVER_ATTEMPTS}
    first = found["attempt 1"]
    assert (first.tasks, first.only_a, first.only_b, first.both) == (2, 2, 0, 0)  # x-3, x-4: not both
    assert found["attempt 2"].both == 1 and found["attempt 2"].discordant == 0
    over = found[OVER_ATTEMPTS]
    assert (over.tasks, over.only_a_tasks, over.only_b_tasks) == (2, ["x-2"], [])
    assert over.rate_a == pytest.approx(0.75) and over.rate_b == pytest.approx(0.25)
    assert over.test == "exact sign test" and over.p_value == pytest.approx(0.5)


def test_comparisons_read_back(tmp_path: Path) -> None:
    summary = summary_of(tmp_path, {"a": {"x-1": ["resolved"]}, "b": {"x-1": ["unresolved"]}})
    found = all_pairs(summary)
    write_comparisons(found, tmp_path / "comparisons.csv")
    back = read_comparisons(tmp_path / "comparisons.csv")
    assert back[0].only_a_tasks == ["x-1"] and back[0].only_b_tasks == []
    assert back[0].p_value == found[0].p_value
    assert math.isclose(back[0].ci_low, found[0].ci_low)


def test_an_unknown_agent_is_named(tmp_path: Path) -> None:
    summary = summary_of(tmp_path, {"a": {"x-1": ["resolved"]}})
    with pytest.raises(ValueError, match="no runs of agent 'z'"):
        compare(summary, "a", "z")
