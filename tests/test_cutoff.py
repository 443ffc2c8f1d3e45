"""Dates and the training cutoff: the tasks' dates in the specification, task.toml and summary.csv, the
`cutoff:` of an agent in the config, and the before/after report (its statistics, its "too few")."""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kotlin_bench.core.render import render_markdown
from kotlin_bench.dag.config import ConfigError, check_config
from kotlin_bench.dataset.dates import Dated, day_of, quarter_of, quarters_between
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.results.cutoff import (
    MIN_TASKS,
    CutoffGap,
    Side,
    cutoff_gap,
    cutoff_section,
    fisher_exact_p,
    quarter_rates,
)
from kotlin_bench.results.stats import wilson_interval
from kotlin_bench.results.summary import SUMMARY_COLUMNS, summarize
from kotlin_bench.runs.agents.config import Agent, AgentConfigError, agent_cutoffs
from tests.conftest import TASK_TOML
from tests.factories import make_result, write_results

ROOT = Path(__file__).resolve().parent.parent
NEVER_MERGED = {"ankidroid_Anki-Android-19384", "square_okhttp-8968"}

# --------------------------------------------------------------------------- the dates of the tasks


def test_every_real_task_is_dated_but_the_two_never_merged() -> None:
    tasks = load_dataset(ROOT / "dataset/kotlin-bench.json").tasks
    assert len(tasks) == 106
    assert {t.id for t in tasks if t.merged_at is None} == NEVER_MERGED
    # never merged is said, with how it was established, not left out
    assert all(t.merged is not None and t.merged.source for t in tasks)
    assert all(t.merged.source for t in tasks if t.merged)
    both = [t for t in tasks if t.merged_at and t.issue_opened_at]
    assert len(both) >= 100
    for task in both:
        assert task.issue_opened.day <= task.merged.day, task.id  # type: ignore[union-attr,operator]
    # fix_releases.tsv's merge days are the committers' local days: these three differ in UTC
    utc = {t.id: t.merged_at for t in tasks}
    assert utc["detekt_detekt-4249"] == "2021-11-10T02:19:37Z"
    assert utc["detekt_detekt-7667"] == "2024-09-26T22:09:24Z"


def test_the_examples_are_dated_as_their_history_says() -> None:
    tasks = {t.id: t for t in load_dataset(ROOT / "examples/dataset.json").tasks}
    assert all(t.issue_opened_at for t in tasks.values())
    # refs/pull/4/head of calc and refs/pull/2/head of tally are on no branch of main
    assert {i for i, t in tasks.items() if t.merged_at is None} == {"examples_calc-4", "examples_tally-2"}
    assert tasks["examples_calc-6"].merged_at == "2024-01-01T06:00:00Z"


def test_task_toml_carries_the_dates_of_the_specification() -> None:
    from kotlin_bench.dataset.task import load_task

    for spec, tasks_dir in (
        ("dataset/kotlin-bench.json", "tasks"),
        ("examples/dataset.json", "examples/tasks"),
    ):
        for task in load_dataset(ROOT / spec).tasks:
            loaded = load_task(ROOT / tasks_dir / task.id, require_materialized=False)
            assert loaded.merged_at == task.merged_at, task.id
            assert loaded.never_merged == (task.merged is not None and task.merged_at is None), task.id


def test_a_date_is_a_utc_time_or_a_day() -> None:
    assert day_of("2024-09-26T22:09:24Z") == datetime.date(2024, 9, 26)
    assert day_of("2021-10-28") == datetime.date(2021, 10, 28)
    assert day_of(None) is None and Dated(None, "never merged").day is None
    with pytest.raises(ValueError, match="neither a UTC time"):
        day_of("2024-09-26 22:09")
    assert [quarter_of(datetime.date(2024, m, 1)) for m in (1, 3, 4, 12)] == ["2024-Q1"] * 2 + [
        "2024-Q2",
        "2024-Q4",
    ]
    assert quarters_between("2024-Q3", "2025-Q2") == ["2024-Q3", "2024-Q4", "2025-Q1", "2025-Q2"]


def test_the_specification_refuses_an_issue_opened_after_its_fix_was_merged(tmp_path: Path) -> None:
    import json

    from kotlin_bench.dataset.spec import SpecError, parse_dataset

    data = json.loads((ROOT / "examples/dataset.json").read_text())
    task = data["tasks"][1]
    task["issue_opened_at"] = {"value": "2024-02-01", "source": "a test"}
    with pytest.raises(SpecError, match="issue_opened_at 2024-02-01 is after merged_at"):
        parse_dataset(data)
    task["merged_at"] = {"value": "2024-01-01", "source": "a day is not a merge time"}
    with pytest.raises(SpecError, match="merged_at"):
        parse_dataset(data)


# --------------------------------------------------------------------------- summary.csv's column


def test_summary_has_each_tasks_merge_time_from_its_task_directory(
    make_task: Callable[..., Path], tmp_path: Path
) -> None:
    dated = TASK_TOML.replace(
        'test_command = "ktest ."', 'test_command = "ktest ."\nmerged_at = "2025-03-04T05:06:07Z"'
    )
    never = TASK_TOML.replace('test_command = "ktest ."', 'test_command = "ktest ."\nmerged = false')
    make_task("calc-1", dated)
    make_task("calc-2", never)
    results = [make_result(t) for t in ("calc-1", "calc-2", "calc-3")]  # calc-3: no task directory
    paths = write_results(tmp_path / "runs", results)
    summary = summarize(paths, tasks_dir=tmp_path / "tasks").set_index("task")
    assert "merged_at" in SUMMARY_COLUMNS
    assert summary.loc["calc-1", "merged_at"] == "2025-03-04T05:06:07Z"
    assert pd.isna(summary.loc["calc-2", "merged_at"]) and pd.isna(summary.loc["calc-3", "merged_at"])
    assert summarize(paths)["merged_at"].isna().all()  # without task directories: empty, as before


# --------------------------------------------------------------------------- cutoff: in the config


def _check(cutoff: object) -> None:
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config["agents"] = [{"name": "oracle", "kind": "oracle", "cutoff": cutoff}]
    check_config(config, [ROOT / "config.yaml"], ROOT / "workflow/schemas/config.schema.yaml")


@pytest.mark.parametrize("value", [datetime.date(2025, 7, 31), "2025-07-31"])
def test_the_schema_takes_a_day_as_cutoff(value: object) -> None:
    _check(value)


@pytest.mark.parametrize("value", [2025, "July 2025", "2025-7-31", None, ["2025-07-31"]])
def test_the_schema_refuses_a_cutoff_that_is_not_a_day(value: object) -> None:
    with pytest.raises(ConfigError, match=r"agents\[0\]\.cutoff: .*YYYY-MM-DD"):
        _check(value)


def test_an_agents_cutoff_is_read_as_a_day_and_redoes_no_run() -> None:
    yaml_day = yaml.safe_load("cutoff: 2025-07-31")["cutoff"]  # YAML's own date
    agent = Agent.from_entry({"name": "m", "kind": "oracle", "cutoff": yaml_day})
    quoted = Agent.from_entry({"name": "n", "kind": "oracle", "cutoff": "2025-07-31"})
    assert agent.cutoff == quoted.cutoff == datetime.date(2025, 7, 31)
    assert "cutoff" not in agent.params()  # the solve rule's parameter: a cutoff added later reruns nothing
    assert agent.params() == Agent.from_entry({"name": "m", "kind": "oracle"}).params()
    assert agent_cutoffs([agent, Agent("o", "oracle")]) == {"m": "2025-07-31"}
    for bad in ("2025-02-30", datetime.datetime(2025, 7, 31, 12, 0)):
        with pytest.raises(AgentConfigError, match=r"agent m: cutoff: .* is not a day"):
            Agent.from_entry({"name": "m", "kind": "oracle", "cutoff": bad})


# --------------------------------------------------------------------------- the statistics


def test_wilson_interval_matches_newcombes_published_values() -> None:
    """Newcombe (1998), Statistics in Medicine 17:857-872, table I, method 3 (score, no correction)."""
    for (x, n), expected in {
        (81, 263): (0.2553, 0.3662),
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0, 0.1611),
        (1, 29): (0.0061, 0.1718),
    }.items():
        assert tuple(round(v, 4) for v in wilson_interval(x, n)) == expected


def _fisher_by_hand(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher: the hypergeometric probabilities of every table with the margins of [[a, b], [c, d]]
    that are no more likely than it, summed (computed here from binomial coefficients)."""
    row, col, n = a + b, a + c, a + b + c + d

    def p(x: int) -> float:
        return math.comb(col, x) * math.comb(n - col, row - x) / math.comb(n, row)

    observed = p(a)
    tables = range(max(0, row + col - n), min(row, col) + 1)
    return sum(p(x) for x in tables if p(x) <= observed * (1 + 1e-7))


@pytest.mark.parametrize(
    ("table", "textbook"),
    [
        ((3, 1, 1, 3), 17 / 35),  # Fisher's lady tasting tea, two-sided: 0.4857
        ((1, 9, 11, 3), 0.002759),  # the dieting example of Fisher's exact test's textbooks
        ((10, 0, 0, 10), None),
        ((7, 5, 2, 9), None),
    ],
)
def test_fisher_exact_test(table: tuple[int, int, int, int], textbook: float | None) -> None:
    p = fisher_exact_p(*table)
    assert p == pytest.approx(_fisher_by_hand(*table), rel=1e-9)
    if textbook is not None:
        assert p == pytest.approx(textbook, abs=5e-7)


# --------------------------------------------------------------------------- before and after


def _summary(
    before: tuple[int, int], after: tuple[int, int], *, undated: int = 0, errors: int = 0
) -> pd.DataFrame:
    """An agent's first attempts: (tasks, resolved) merged before 2025-07-31 and after it, plus tasks without
    a date and errored runs; a second attempt of every task that must not count."""
    rows = []
    for side, (tasks, resolved), day in (
        ("b", before, "2024-05-01T10:00:00Z"),
        ("a", after, "2025-09-01T10:00:00Z"),
    ):
        for i in range(tasks):
            status = "resolved" if i < resolved else "unresolved"
            rows.append({"task": f"{side}{i}", "merged_at": day, "status": status})
    rows += [{"task": f"u{i}", "merged_at": None, "status": "resolved"} for i in range(undated)]
    rows += [{"task": f"e{i}", "merged_at": "2025-09-02T00:00:00Z", "status": "error"} for i in range(errors)]
    frame = pd.DataFrame(rows).assign(agent="m", attempt=1)
    second = frame.assign(attempt=2, status="resolved")
    return pd.concat([second, frame], ignore_index=True)


CUTOFF = datetime.date(2025, 7, 31)


def test_the_gap_counts_each_task_once_by_its_first_attempt() -> None:
    gap = cutoff_gap(_summary((30, 24), (12, 3), undated=2, errors=1), "m", CUTOFF)
    assert (gap.before, gap.after, gap.undated, gap.errors) == (Side(30, 24), Side(12, 3), 2, 1)
    assert gap.p_value == pytest.approx(_fisher_by_hand(24, 6, 3, 9))
    assert gap.too_few is None
    assert gap.verdict().startswith("55.0 points higher before the cutoff; Fisher's exact test p = ")
    assert "(significant at the 5% level)" in gap.verdict()
    assert gap.notes() == (
        "2 tasks without merged_at (never merged, or not known); 1 first attempt that ended in an error "
        "counted on neither side"
    )


def test_the_cutoff_day_itself_is_before() -> None:
    frame = pd.DataFrame(
        [{"agent": "m", "task": "t", "attempt": 1, "status": "resolved", "merged_at": "2025-07-31T23:59:59Z"}]
    )
    assert cutoff_gap(frame, "m", CUTOFF).before == Side(1, 1)


@pytest.mark.parametrize(
    ("before", "after", "message"),
    [
        ((30, 20), (3, 1), f"too few tasks merged after the cutoff to tell (3; at least {MIN_TASKS} needed)"),
        (
            (9, 9),
            (40, 10),
            f"too few tasks merged before the cutoff to tell (9; at least {MIN_TASKS} needed)",
        ),
        ((2, 1), (0, 0), "too few tasks merged before or after the cutoff to tell (before 2, after 0;"),
    ],
)
def test_too_few_tasks_on_a_side_are_said_plainly(
    before: tuple[int, int], after: tuple[int, int], message: str
) -> None:
    gap = cutoff_gap(_summary(before, after), "m", CUTOFF)
    assert gap.too_few is not None and gap.too_few.startswith(message)
    assert gap.verdict() == gap.too_few
    markdown = render_markdown([cutoff_section([gap])])  # type: ignore[list-item]
    assert message in markdown and "Fisher's exact test p =" not in markdown


def test_the_section_shows_both_sides_with_counts_and_intervals() -> None:
    gap = cutoff_gap(_summary((10, 8), (10, 2)), "m", CUTOFF)
    section = cutoff_section([gap])
    assert section is not None and cutoff_section([]) is None
    row = section.table.iloc[0]  # type: ignore[union-attr]
    assert row["merged before (on or before the cutoff)"] == "8/10 (80.0%, 95% CI 49.0% - 94.3%)"
    assert row["merged after"] == "2/10 (20.0%, 95% CI 5.7% - 51.0%)"
    assert row["Fisher's exact p (two-sided)"] == f"{_fisher_by_hand(8, 2, 2, 8):.4g}"
    few = cutoff_section([cutoff_gap(_summary((10, 8), (4, 2)), "m", CUTOFF)])
    assert few is not None and few.table.iloc[0]["Fisher's exact p (two-sided)"] == "- (too few tasks)"  # type: ignore[union-attr]
    assert isinstance(gap, CutoffGap) and math.isnan(
        cutoff_gap(_summary((3, 1), (0, 0)), "m", CUTOFF).p_value
    )


def test_quarter_rates_use_first_attempts_and_leave_undated_tasks_out() -> None:
    table = quarter_rates(_summary((4, 1), (2, 2), undated=3))
    assert table.to_dict("records") == [
        {"agent": "m", "quarter": "2024-Q2", "tasks": 4, "resolved": 1, "rate": 0.25},
        {"agent": "m", "quarter": "2025-Q3", "tasks": 2, "resolved": 2, "rate": 1.0},
    ]
