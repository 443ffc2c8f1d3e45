"""The rates, pass@k and the bootstrap interval, hand-computed on synthetic summaries."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.results.stats import (
    bootstrap_interval,
    mean_pass_at_k,
    pass_at_k,
    rates,
    rates_by_repository,
    read_rates,
)
from kotlin_bench.results.summary import summarize, write_table
from tests.factories import make_result, mixed_summary, write_results


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return mixed_summary(tmp_path)


def test_rates_hand_computed(mixed: pd.DataFrame) -> None:
    table = rates(mixed).set_index("agent")
    agent = table.loc["agent"]
    assert agent["model"] == "m1"
    counts = ["tasks", "total", "resolved", "unresolved", "errors"]
    assert list(agent[counts]) == [4, 4, 1, 2, 1]
    assert agent["resolve_rate"] == 0.25
    assert agent["resolve_rate_excl_errors"] == pytest.approx(1 / 3, abs=1e-4)
    oracle = table.loc["oracle"]
    assert (oracle["model"], oracle["resolved"], oracle["total"], oracle["errors"]) == ("", 4, 4, 0)
    assert oracle["resolve_rate"] == oracle["resolve_rate_excl_errors"] == 1.0
    assert (oracle["ci95_low"], oracle["ci95_high"]) == (1.0, 1.0)
    assert not any(c.startswith("pass@") for c in table.columns)  # one attempt each


def test_rates_by_repository_hand_computed(mixed: pd.DataFrame) -> None:
    table = rates_by_repository(mixed).set_index(["agent", "repository"])
    assert len(table) == 6  # agent and oracle x calc, slug, units
    calc = table.loc[("agent", "acme/calc")]
    assert (calc["resolved"], calc["total"], calc["resolve_rate"]) == (1, 2, 0.5)
    units = table.loc[("agent", "acme/units")]
    assert (units["errors"], units["resolve_rate"]) == (1, 0.0)
    assert math.isnan(units["resolve_rate_excl_errors"])


def test_rates_read_back(mixed: pd.DataFrame, tmp_path: Path) -> None:
    write_table(rates(mixed), tmp_path / "rates.csv")
    back = read_rates(tmp_path / "rates.csv")
    assert list(back["model"]) == ["m1", ""]
    assert list(back["resolved"]) == [1, 4]


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (3, 1, 1, 1 / 3),
        (3, 1, 2, 2 / 3),
        (3, 1, 3, 1.0),
        (3, 0, 2, 0.0),
        (5, 2, 2, 1 - 3 / 10),
        (4, 4, 1, 1.0),
    ],
)
def test_pass_at_k(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_rejects_k_above_n() -> None:
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_pass_at_k_in_rates(tmp_path: Path) -> None:
    """t1: 1 of 3 resolved, t2: 3 of 3 -> pass@1 = 2/3, pass@2 = 5/6, pass@3 = 1; errors are failures."""
    results = [
        make_result("t-1", "a", 1),
        make_result("t-1", "a", 2, status="unresolved", reason="no_fixed_test"),
        make_result("t-1", "a", 3, status="error", reason="RunError"),
        *(make_result("t-2", "a", k) for k in (1, 2, 3)),
    ]
    row = rates(summarize(write_results(tmp_path, results))).iloc[0]
    assert (row["total"], row["resolved"], row["errors"]) == (6, 4, 1)
    assert row["pass@1"] == pytest.approx(2 / 3, abs=1e-4)
    assert row["pass@2"] == pytest.approx(5 / 6, abs=1e-4)
    assert row["pass@3"] == 1.0
    assert row["pass@1"] == pytest.approx(row["resolve_rate"], abs=1e-4)
    assert mean_pass_at_k([3, 1], [1, 1], 2) == pytest.approx(2 / 3)  # the 1-attempt task is left out


def test_bootstrap_interval() -> None:
    resolved, runs = [1, 0, 1, 1, 0, 1, 0, 1, 1, 1], [1] * 10
    low, high = bootstrap_interval(resolved, runs)
    assert low <= 0.7 <= high
    assert 0.0 < low < 0.7 < high <= 1.0
    assert bootstrap_interval(resolved, runs) == (low, high)  # fixed seed
    assert bootstrap_interval(resolved, runs, seed=1) != (low, high)
    assert bootstrap_interval([2, 2], [2, 2]) == (1.0, 1.0)
    assert all(math.isnan(v) for v in bootstrap_interval([], []))


def test_the_rate_interval_is_wilson_and_does_not_collapse(mixed: pd.DataFrame) -> None:
    """4/4 and 0/4 give Wilson's 51.0% - 100% and 0% - 49.0%, where the bootstrap says 100% - 100%."""
    table = rates(mixed).set_index("agent")
    oracle = table.loc["oracle"]
    assert (oracle["wilson_low"], oracle["wilson_high"]) == (pytest.approx(0.5101, abs=1e-4), 1.0)
    agent = table.loc["agent"]  # 1 of 4 resolved
    assert (agent["wilson_low"], agent["wilson_high"]) == (
        pytest.approx(0.0456, abs=1e-4),
        pytest.approx(0.6994, abs=1e-4),
    )


def test_tokens_cost_and_agent_time_per_agent(mixed: pd.DataFrame) -> None:
    table = rates(mixed).set_index("agent")
    agent = table.loc["agent"]
    assert (agent["input_tokens_total"], agent["output_tokens_total"]) == (1200, 300)
    assert agent["cost_usd_total"] == pytest.approx(0.042)
    assert agent["agent_sec_total"] == pytest.approx(4.5)  # three runs of 1.5 s; the errored run has none
    assert agent["agent_sec_mean"] == pytest.approx(1.5)
    assert math.isnan(table.loc["oracle", "cost_usd_total"])
