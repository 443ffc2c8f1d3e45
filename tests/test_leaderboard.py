"""The published leaderboard as a reference: its rows, the task set, and the verdict on synthetic summaries
over the leaderboard's 105 task ids (offline: no Docker, no model calls)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from kotlin_bench.core.record import RunResult, Usage
from kotlin_bench.dataset import leaderboard
from kotlin_bench.dataset.leaderboard import LeaderboardError, find_row, load_rows, parse_latency, task_set
from kotlin_bench.results.reproduce.agent import reproduce_agent
from kotlin_bench.results.reproduce.leaderboard import (
    LEADERBOARD_SCHEMA,
    Call,
    compare_leaderboard,
    leaderboard_reference,
    leaderboard_verdict,
    read_leaderboard_comparison,
)
from kotlin_bench.results.reproduce.plan import ReproducePlan
from kotlin_bench.results.reproduce.verdicts import read_verdicts
from kotlin_bench.results.stats import newcombe_interval, wilson_interval
from kotlin_bench.results.summary import summarize, write_table
from kotlin_bench.tools.cli import main
from tests.conftest import REPO, SHARED
from tests.factories import make_result, write_results
from tests.rule_scripts import aggregate_outputs, run_script

TOP = "leaderboard:Claude Code + Opus 4.7 xhigh"  # 90 of 105
SET = task_set(REPO / "dataset/kotlin-bench.json")
EXCLUDED = "linreal_cascade-editor-16"


def runs(
    resolved: int, agent: str = "claude", attempt: int = 1, errors: int = 0, skip: int = 0, **fields: Any
):
    """One attempt over the leaderboard's tasks (the first `skip` left out): `resolved` resolved, then
    `errors` errored, the rest unresolved."""
    made = []
    for i, task in enumerate(SET[skip:]):
        status = "resolved" if i < resolved else "error" if i < resolved + errors else "unresolved"
        made.append(make_result(task, agent, attempt=attempt, status=status, **fields))
    return made


def summary_of(tmp_path: Path, results: list[RunResult]) -> pd.DataFrame:
    return summarize(write_results(tmp_path, results))


def judge(tmp_path: Path, results: list[RunResult], reference: str = TOP) -> tuple[str, pd.DataFrame]:
    comparison = compare_leaderboard(summary_of(tmp_path, results), leaderboard_reference(reference, REPO))
    return leaderboard_verdict(comparison), comparison


def rate_lines(comparison: pd.DataFrame) -> pd.DataFrame:
    return comparison[comparison["part"] == "rate"].set_index(["basis", "attempt"])


# --------------------------------------------------------------------------- rows, names, task set


def test_rows_are_the_published_facts() -> None:
    rows = load_rows(REPO / "reference/leaderboard.csv")
    assert len(rows) == 19
    top = find_row(rows, "Claude Code + Opus 4.7 xhigh")
    assert (top.submitted, top.resolved, top.rate, top.tokens_m, top.latency_sec, top.date) == (
        105,
        90,
        85.71,
        10.59,
        10 * 3600 + 37 * 60,
        "2026-05-06",
    )
    assert all(r.source.startswith("JetBrains/kotlin-web-site data/benchmark/leaderboard.yml") for r in rows)
    shared = SHARED / "dataset" / "leaderboard.csv"
    if shared.is_file():  # the facts as read for the project: ours must say exactly the same
        with shared.open(encoding="utf-8") as handle:
            facts = list(csv.DictReader(handle))
        assert [f["setup"] for f in facts] == [r.setup for r in rows]
        for fact, row in zip(facts, rows, strict=True):
            assert (int(fact["resolved"]), float(fact["resolution_rate"]), fact["date"]) == (
                row.resolved,
                row.rate,
                row.date,
            )
            assert (float(fact["tokens"]), fact["latency"]) == (row.tokens_m, row.latency)


@pytest.mark.parametrize(
    ("text", "seconds"), [("10h 37m", 38220), ("8h 1m", 28860), ("0h 5m", 300), ("2h", 7200)]
)
def test_latency(text: str, seconds: int) -> None:
    assert parse_latency(text) == seconds
    assert leaderboard.format_duration(seconds) == (text if "m" in text else "2h 0m")


@pytest.mark.parametrize("text", ["", "ten hours", "10:37", "37m 10h"])
def test_bad_latency(text: str) -> None:
    with pytest.raises(LeaderboardError, match="latency"):
        parse_latency(text)


def test_a_row_whose_rate_does_not_match_its_counts_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "leaderboard.csv"
    source = (REPO / "reference/leaderboard.csv").read_text(encoding="utf-8")
    path.write_text(source.replace(",105,90,85.71,", ",105,90,86.71,"), encoding="utf-8")
    with pytest.raises(LeaderboardError, match=r"line 2: resolution_rate 86.71 is not 90/105"):
        load_rows(path)
    path.write_text("setup,resolved\nx,1\n", encoding="utf-8")
    with pytest.raises(LeaderboardError, match="columns"):
        load_rows(path)


def test_row_names_ignore_case_and_spacing() -> None:
    rows = load_rows(REPO / "reference/leaderboard.csv")
    assert find_row(rows, "  claude code +  OPUS 4.7 XHIGH ").setup == "Claude Code + Opus 4.7 xhigh"


def test_an_unknown_row_lists_every_row_closest_first() -> None:
    rows = load_rows(REPO / "reference/leaderboard.csv")
    with pytest.raises(LeaderboardError) as raised:
        find_row(rows, "Codex GPT 5.4 xhigh")
    message = str(raised.value)
    listed = [line.strip() for line in message.splitlines()[1:]]
    assert message.startswith("no leaderboard row 'Codex GPT 5.4 xhigh'; the known rows, closest first:")
    assert sorted(listed) == sorted(r.reference for r in rows)
    assert listed[0] == "leaderboard:Codex + GPT 5.4 xHigh"


def test_the_task_set_is_the_benchmark_without_cascade_editor() -> None:
    assert len(SET) == 105 == len(set(SET))
    assert EXCLUDED not in SET
    with pytest.raises(LeaderboardError, match="lacks linreal_cascade-editor-16"):
        task_set(REPO / "examples/dataset.json")


# --------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(
    ("counts", "expected"),
    [  # Newcombe (1998), Table II, method 10
        ((56, 70, 48, 80), (0.0524, 0.3339)),
        ((9, 10, 3, 10), (0.1705, 0.8090)),
        ((6, 7, 2, 7), (0.0582, 0.8062)),
        ((5, 56, 0, 29), (-0.0381, 0.1926)),
        ((0, 10, 0, 20), (-0.1611, 0.2775)),
        ((10, 10, 0, 20), (0.6791, 1.0000)),
    ],
)
def test_newcombe_interval_matches_the_published_examples(
    counts: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    low, high = newcombe_interval(*counts)
    assert (round(low, 4), round(high, 4)) == expected


@pytest.mark.parametrize(
    ("counts", "expected"),
    [  # Newcombe (1998), "Two-sided confidence intervals for the single proportion", method 3
        ((81, 263), (0.2553, 0.3662)),
        ((15, 148), (0.0624, 0.1605)),
        ((0, 20), (0.0, 0.1611)),
        ((1, 29), (0.0061, 0.1718)),
    ],
)
def test_wilson_interval(counts: tuple[int, int], expected: tuple[float, float]) -> None:
    low, high = wilson_interval(*counts)
    assert (round(low, 4), round(high, 4)) == expected
    with pytest.raises(ValueError, match="n > 0"):
        wilson_interval(1, 0)


# --------------------------------------------------------------------------- verdicts


def test_88_of_105_reproduces_the_90_of_105_row(tmp_path: Path) -> None:
    text, comparison = judge(tmp_path, runs(88))
    assert text == (
        "REPRODUCED: 88/105 resolved against the published 90/105 (-1.9 pts, 95% CI -11.8 to +8.0)"
    )
    line = rate_lines(comparison).loc[("errors as unresolved", "1")]
    assert (line["ours_resolved"], line["ours_n"], line["reference_resolved"], line["reference_n"]) == (
        88,
        105,
        90,
        105,
    )
    assert line["ci95_low"] < 0 < line["ci95_high"]


def test_60_of_105_is_lower(tmp_path: Path) -> None:
    text, comparison = judge(tmp_path, runs(60))
    assert text.startswith("LOWER: 60/105 resolved against the published 90/105 (-28.6 pts, 95% CI -39.6 to")
    assert rate_lines(comparison).loc[("errors as unresolved", "1"), "ci95_high"] < 0


def test_a_better_agent_is_higher(tmp_path: Path) -> None:
    text, _ = judge(tmp_path, runs(70), "leaderboard:Gemini CLI (Gemini 3 Flash)")
    assert text.startswith("HIGHER: 70/105 resolved against the published 47/105 (+21.9 pts")


def test_a_summary_missing_10_tasks_is_not_comparable(tmp_path: Path) -> None:
    text, comparison = judge(tmp_path, runs(80, skip=10))
    missing = SET[:10]
    assert text == (
        f"NOT COMPARABLE: 10 of the leaderboard's 105 tasks not run in attempt 1: {', '.join(missing)}"
    )
    lines = rate_lines(comparison)
    assert set(lines["call"]) == {Call.NOT_COMPARABLE}
    assert lines["ci95_low"].isna().all()
    tasks = comparison[comparison["part"] == "task"]
    assert list(tasks.loc[tasks["note"] == "not run", "task"]) == missing


def test_errors_are_counted_both_ways(tmp_path: Path) -> None:
    text, comparison = judge(tmp_path, runs(80, errors=9))
    lines = rate_lines(comparison)
    unresolved = lines.loc[("errors as unresolved", "1")]
    excluded = lines.loc[("errors excluded", "1")]
    assert (unresolved["ours_resolved"], unresolved["ours_n"]) == (80, 105)
    assert (excluded["ours_resolved"], excluded["ours_n"]) == (80, 96)
    assert (unresolved["call"], excluded["call"]) == (Call.REPRODUCED, Call.REPRODUCED)
    assert text.startswith("REPRODUCED: 80/105 resolved against the published 90/105 (-9.5 pts")
    assert "; with errored runs excluded: REPRODUCED, 80/96 (-2.4 pts" in text
    errored = comparison[comparison["note"].str.startswith("errored", na=False)]
    assert list(errored["task"]) == sorted(SET[80:89])


def test_errors_can_change_the_verdict(tmp_path: Path) -> None:
    text, _ = judge(tmp_path, runs(75, errors=18))
    assert text.startswith("LOWER: 75/105")
    assert "; with errored runs excluded: REPRODUCED, 75/87" in text


def test_runs_outside_the_set_are_left_out_and_named(tmp_path: Path) -> None:
    extra = make_result(EXCLUDED, "claude", status="resolved")
    text, comparison = judge(tmp_path, [*runs(88), extra])
    assert text.startswith("REPRODUCED: 88/105 resolved")
    tasks = comparison[comparison["part"] == "task"]
    assert list(tasks["task"]) == [EXCLUDED]
    assert tasks.iloc[0]["note"] == "not in the leaderboard's set: left out"


def test_the_example_dataset_is_not_comparable(tmp_path: Path) -> None:
    results = [make_result(t, "claude") for t in ("examples_calc-4", "examples_slug-8")]
    text, _ = judge(tmp_path, results)
    assert text == (
        "NOT COMPARABLE: none of the leaderboard's 105 tasks was run (the summary has 2 tasks of this "
        "agent: examples_calc-4, examples_slug-8)"
    )


def test_several_attempts_each_the_mean_and_the_spread(tmp_path: Path) -> None:
    results = runs(88, attempt=1) + runs(85, attempt=2) + runs(92, attempt=3, errors=2)
    text, comparison = judge(tmp_path, results)
    lines = rate_lines(comparison)
    assert [lines.loc[("errors as unresolved", str(k)), "ours_resolved"] for k in (1, 2, 3)] == [88, 85, 92]
    mean = lines.loc[("errors as unresolved", "mean")]
    assert mean["ours_resolved"] == pytest.approx(265 / 3) and mean["ours_n"] == 105
    assert lines.loc[("errors excluded", "mean"), "ours_n"] == pytest.approx(105 - 2 / 3)
    assert set(lines["call"]) == {Call.REPRODUCED}
    assert text.startswith("REPRODUCED: mean of 3 attempts, 88.3/105 resolved against the published 90/105")
    assert text.endswith("; resolved per attempt 85-92 (sd 3.5)")


def test_an_incomplete_attempt_makes_the_mean_not_comparable(tmp_path: Path) -> None:
    results = runs(88, attempt=1) + runs(80, attempt=2, skip=5)
    text, comparison = judge(tmp_path, results)
    lines = rate_lines(comparison)
    assert lines.loc[("errors as unresolved", "1"), "call"] == Call.REPRODUCED
    assert lines.loc[("errors as unresolved", "2"), "call"] == Call.NOT_COMPARABLE
    assert text.startswith("NOT COMPARABLE: 5 of the leaderboard's 105 tasks not run in attempt 2")


def test_tokens_and_time_beside_the_row(tmp_path: Path) -> None:
    usage = Usage(input_tokens=100_000, cache_tokens=80_000, output_tokens=4_000, cost_usd=0.25)
    results = runs(88, usage=usage, started_at="2026-12-01T10:00:00+00:00")
    results[-1].started_at = "2026-12-01T12:00:00+00:00"  # the last run starts 2 h later, takes 12 s
    _, comparison = judge(tmp_path, results)
    usage_lines = comparison[comparison["part"] == "usage"].set_index("measure")
    every = usage_lines.loc["tokens (M): input (cache reads included) + output"]
    assert every["ours"] == pytest.approx(105 * 104_000 / 1e6) and every["reference"] == 10.59
    assert usage_lines.loc["tokens (M): input without cache reads + output", "ours"] == pytest.approx(
        105 * 24_000 / 1e6
    )
    assert usage_lines.loc["cost (USD)", "ours"] == pytest.approx(105 * 0.25)
    assert usage_lines.loc["wall time (s): sum of the agent phases", "ours"] == pytest.approx(105 * 1.5)
    elapsed = usage_lines.loc["wall time (s): first start to last finish"]
    assert (elapsed["ours"], elapsed["reference"]) == (7200 + 12, 38220)


def test_comparison_csv_round_trip(tmp_path: Path) -> None:
    _, comparison = judge(tmp_path, [*runs(80, errors=3), make_result(EXCLUDED, "claude")])
    write_table(comparison, tmp_path / "claude.csv")
    read = read_leaderboard_comparison(tmp_path / "claude.csv")
    assert {c: str(t) for c, t in read.dtypes.items()} == LEADERBOARD_SCHEMA
    pd.testing.assert_frame_equal(read, comparison)


# --------------------------------------------------------------------------- plan, DAG step and CLI


def test_plan_names_a_row(tmp_path: Path) -> None:
    plan = ReproducePlan.from_config(
        {"reference": {"claude": "leaderboard:claude code + opus 4.7 XHIGH"}}, ["claude"], REPO
    )
    assert plan.references == {"claude": TOP}
    # rule inputs, relative to the checkout
    assert plan.reference_files() == ["dataset/kotlin-bench.json", "reference/leaderboard.csv"]
    assert ReproducePlan.from_params(plan.to_params(), REPO) == plan
    assert str(REPO) not in json.dumps(plan.to_params())  # moving the checkout reruns nothing
    with pytest.raises(LeaderboardError, match="the known rows, closest first"):
        ReproducePlan.from_config({"reference": "leaderboard:GPT 9"}, ["claude"], REPO)


def test_the_dag_and_the_command_write_the_same_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.csv"
    write_table(summary_of(tmp_path, runs(88, errors=2) + runs(10, agent="other")), summary)
    dag = tmp_path / "dag"
    outputs = aggregate_outputs(dag, ["claude"])
    plan = ReproducePlan.from_config({"reference": {"claude": TOP}}, ["claude", "other"], REPO)
    run_script(
        "aggregate.py",
        input=SimpleNamespace(summary=str(summary), references=plan.reference_files(), images=[]),
        output=outputs,
        params=SimpleNamespace(reproduce=plan.to_params(), cutoffs={}),
        log=[str(dag / "aggregate.log")],
    )
    cli = tmp_path / "cli"
    code = main(["reproduce", "--summary", str(summary), "--agent", "claude", "--reference", TOP, "--out", str(cli), "--root", str(REPO)])  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert (cli / "claude.md").read_text() == (dag / "reproduce/claude.md").read_text()
    pd.testing.assert_frame_equal(
        read_leaderboard_comparison(cli / "claude.csv"),
        read_leaderboard_comparison(dag / "reproduce/claude.csv"),
    )
    [from_dag], [from_cli] = (
        read_verdicts(dag / "reproduce/verdicts.json"),
        read_verdicts(cli / "verdicts.json"),
    )
    assert from_dag.text == from_cli.text and from_cli.text.startswith("REPRODUCED: 88/105")
    assert f"claude vs {TOP}: REPRODUCED: 88/105 resolved" in printed
    assert "## Tokens and time" in printed and "## Task set" in printed
    page = (dag / "summary.md").read_text()
    assert f"claude vs {TOP}: REPRODUCED" in page
    # the report step renders the same sections from the files the aggregate step wrote
    charts = SimpleNamespace(
        rates=str(dag / "rates.png"),
        by_repository=str(dag / "by_repository.png"),
        outcomes=str(dag / "outcomes.png"),
        quarters=str(dag / "quarters.png"),
        html=str(dag / "report.html"),
    )
    inputs = SimpleNamespace(summary=str(summary), rates=outputs.rates, by_repository=outputs.by_repository, comparisons=outputs.comparisons, verdicts=outputs.verdicts, reproduce=outputs.reproduce_csv)  # fmt: skip
    run_script("plots.py", input=inputs, output=charts, params=SimpleNamespace(cutoffs={}), log=[str(dag / "plots.log")])  # fmt: skip
    html = (dag / "report.html").read_text()
    assert "Resolved on the leaderboard&#x27;s tasks" in html and "Newcombe" in html


def test_the_command_merges_verdicts_and_fails_on_unknown_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "summary.csv"
    write_table(summary_of(tmp_path, runs(60) + runs(88, agent="other")), summary)
    out = tmp_path / "reproduce"
    common = ["reproduce", "--summary", str(summary), "--out", str(out), "--root", str(REPO)]
    assert main([*common, "--agent", "claude", "--reference", TOP]) == 0
    assert main([*common, "--agent", "other", "--reference", TOP]) == 0
    assert main([*common, "--agent", "claude", "--reference", TOP]) == 0
    verdicts = json.loads((out / "verdicts.json").read_text())
    assert [(v["agent"], v["text"].split(":")[0], v["kind"]) for v in verdicts] == [
        ("other", "REPRODUCED", "leaderboard"),
        ("claude", "LOWER", "leaderboard"),
    ]
    capsys.readouterr()
    assert main([*common, "--agent", "claude", "--reference", "leaderboard:Opus 4.7"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        "kotlin-bench: error: no leaderboard row 'Opus 4.7'; the known rows, closest first:"
    )
    assert error.count("\n  leaderboard:") == 19
    assert main([*common, "--agent", "nobody", "--reference", TOP]) == 2
    assert "no runs of agent 'nobody' (agents: claude, other)" in capsys.readouterr().err


def test_reproduce_agent_on_a_task_reference_is_unchanged(tmp_path: Path) -> None:
    summary = summary_of(tmp_path, [make_result(t) for t in ("calc-1", "slug-1")])
    verdict = reproduce_agent("oracle", "oracle", summary, tmp_path / "o.csv", tmp_path / "o.md")
    assert (verdict.text, verdict.kind) == ("REPRODUCED: 2/2 tasks agree", "tasks")
    assert "REPRODUCED: 2/2 tasks agree" in (tmp_path / "o.md").read_text()
