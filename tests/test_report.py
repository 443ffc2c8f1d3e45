"""summary.csv, the rates, pass@k, the bootstrap interval and summary.md, from synthetic result.json files."""

from __future__ import annotations

import json
import math
import runpy
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO
from workflow.dag import run_result
from workflow.report import (
    REASONS,
    STATUSES,
    SUMMARY_COLUMNS,
    SUMMARY_SCHEMA,
    bootstrap_interval,
    classify,
    markdown_table,
    mean_pass_at_k,
    pass_at_k,
    rates,
    rates_by_repository,
    read_rates,
    read_summary,
    render_markdown,
    report_sections,
    summarize,
    write_csv,
)
from workflow.runner import Result

CATEGORIES_OK = {
    "f2p": {"expected": 2, "landed": 2, "missing": []},
    "p2p": {"expected": 5, "landed": 5, "missing": []},
    "s2p": {"expected": 0, "landed": 0, "missing": []},
    "n2p": {"expected": 1, "landed": 1, "missing": []},
}


def verifier_report(reasons: list[str], f2p_landed: int = 2) -> dict[str, Any]:
    categories = {k: dict(v) for k, v in CATEGORIES_OK.items()}
    categories["f2p"]["landed"] = f2p_landed
    return {"resolved": not reasons, "valid": True, "reasons": reasons, "categories": categories}


def make_result(
    task: str, agent: str = "oracle", attempt: int = 1, status: str = "resolved", **fields: Any
) -> dict[str, Any]:
    """A result.json as the runner writes it (runner.Result), plus any extra fields."""
    repository = fields.pop("repository", f"acme/{task.split('-')[0]}")
    result = Result(task, repository, agent, fields.pop("kind", agent), fields.pop("model", None), attempt)
    result.status = status
    result.reward = {"resolved": 1.0, "unresolved": 0.0}.get(status)
    result.image_id = "sha256:" + "ab" * 32
    result.timings = {"agent_sec": 1.5, "verifier_sec": 10.25, "total_sec": 12.0}
    if status == "resolved":
        result.verifier = verifier_report([])
    data = asdict(result)
    data.update(fields)
    return data


def write_results(root: Path, results: list[dict[str, Any]]) -> list[Path]:
    """Write each result to its run path under `root`; returns the paths in order."""
    paths = []
    for result in results:
        path = root / run_result(result["agent"], result["task"], result["attempt"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def mixed_results() -> list[dict[str, Any]]:
    """oracle resolves 4 tasks; `agent` (model m1) has each kind of failure, one run errored."""
    tasks = ["calc-1", "calc-2", "slug-1", "units-1"]
    results = [make_result(t) for t in tasks]
    results += [
        make_result("calc-1", "agent", model="m1", agent_result={"n_input_tokens": 1200, "n_output_tokens": 300, "cost_usd": 0.042}),
        make_result(
            "calc-2", "agent", status="unresolved", model="m1", reason="f2p",
            verifier=verifier_report(["expected_missing: f2p 1 of 2"], f2p_landed=1),
        ),
        make_result("slug-1", "agent", status="unresolved", model="m1", reason="verifier_timeout"),
        make_result(
            "units-1", "agent", status="error", model="m1", reason="RunError", error="the engine went away",
            timings={},
        ),
    ]  # fmt: skip
    return results


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return summarize(write_results(tmp_path, mixed_results()))


# --------------------------------------------------------------------------- summary.csv


def test_summary_schema(mixed: pd.DataFrame, tmp_path: Path) -> None:
    assert list(mixed.columns) == SUMMARY_COLUMNS
    assert {c: str(t) for c, t in mixed.dtypes.items()} == SUMMARY_SCHEMA
    assert set(mixed["status"]) <= set(STATUSES)
    failed = mixed[mixed["status"] != "resolved"]
    assert failed["reason"].notna().all()
    assert set(failed["reason"]) <= set(REASONS)
    assert mixed.loc[mixed["status"] == "resolved", "reason"].isna().all()
    write_csv(mixed, tmp_path / "summary.csv")
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


def test_bad_status_is_rejected(tmp_path: Path) -> None:
    paths = write_results(tmp_path, [make_result("calc-1", status="done")])
    with pytest.raises(ValueError, match="status 'done'"):
        summarize(paths)


@pytest.mark.parametrize(
    ("reason", "reasons", "expected"),
    [
        ("empty_patch", [], "empty_patch"),
        ("patch_not_applied", [], "patch_not_applied"),
        (
            "test_patch_failed",
            ["test_patch_failed: git apply did not apply /tests/test.patch"],
            "test_patch_failed",
        ),
        (
            "p2p_regressed",
            ["p2p_regressed: a.B.c", "no_fixed_test", "expected_missing: f2p 1 of 1"],
            "p2p_regressed",
        ),
        ("skip_or_none_regressed", ["skip_or_none_regressed: a.B.c"], "p2p_regressed"),
        ("no_fixed_test", ["no_fixed_test", "expected_missing: f2p 2 of 2"], "no_fixed_test"),
        ("expected_missing", ["expected_missing: p2p 1 of 5"], "expected_missing"),
        ("expected_missing", ["expected_missing: p2p 1 of 5", "expected_missing: f2p 1 of 2"], "f2p_failed"),
        ("no_test_results", ["no_test_results"], "no_test_results"),
        ("expected_invalid", ["expected_invalid: top level must be an object"], "task_invalid"),
        ("xml_unreadable", ["xml_unreadable: ParseError"], "verifier_failed"),
        ("agent_timeout", ["no_fixed_test"], "agent_timeout"),
        ("verifier_timeout", [], "verifier_timeout"),
        ("unresolved", [], "other"),
        ("something_new", ["something_new: x"], "other"),
    ],
)
def test_reason_vocabulary(reason: str, reasons: list[str], expected: str) -> None:
    result = make_result("calc-1", status="unresolved", reason=reason, verifier={"reasons": reasons})
    found, detail = classify(result)
    assert found == expected
    assert detail and (reasons[0] if reasons else reason) in detail


def test_no_results_with_a_failed_build_is_build_failed(tmp_path: Path) -> None:
    result = make_result("calc-1", status="unresolved", reason="no_test_results")
    result["verifier"] = {"reasons": ["no_test_results"]}
    log = tmp_path / "verifier" / "test_output.log"
    log.parent.mkdir()
    log.write_text("> ktest: .: compiling 3 file(s)\n> ktest: .: COMPILATION FAILED (no tests run)\n")
    assert classify(result, tmp_path)[0] == "build_failed"
    log.write_text("> ktest: .: no test sources\n")
    assert classify(result, tmp_path)[0] == "no_test_results"


def test_every_reason_is_documented() -> None:
    assert all(isinstance(text, str) and text for text in REASONS.values())
    assert "infrastructure" in REASONS and "other" in REASONS


# --------------------------------------------------------------------------- rates


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
    write_csv(rates(mixed), tmp_path / "rates.csv")
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


# --------------------------------------------------------------------------- summary.md


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
    rerun = "snakemake --cores all --forcerun results/runs/agent/units-1/attempt-1/result.json"
    assert f"1 run errored and is counted as unresolved in the rate; rerun it with `{rerun}`" in text
    assert f"```\n{rerun}\n```" in text
    assert "| agent | f2p_failed | 1 | calc-2 |" in text
    assert "REPRODUCED: 4/4 tasks agree" in text
    assert "33.3%" in text  # the rate excluding errors


def test_markdown_table_escapes() -> None:
    table = markdown_table(pd.DataFrame({"a": ["x|y", None], "n": [1, 2]}))
    assert table.splitlines() == ["| a | n |", "| --- | ---: |", "| x\\|y | 1 |", "|  | 2 |"]


# --------------------------------------------------------------------------- the Snakemake scripts


class Files(list):
    """Snakemake's named lists: a list that also has its names as attributes."""

    def __init__(self, **named: Any) -> None:
        super().__init__(
            v for value in named.values() for v in (value if isinstance(value, list) else [value])
        )
        self.__dict__.update(named)


def run_script(name: str, **parts: Any) -> None:
    sm = SimpleNamespace(scriptdir=str(REPO / "workflow" / "scripts"), **parts)
    runpy.run_path(str(REPO / "workflow" / "scripts" / name), init_globals={"snakemake": sm})


def test_summary_and_aggregate_scripts(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    paths = write_results(tmp_path, mixed_results())
    out = tmp_path / "results"
    run_script("summarize.py", input=Files(runs=[str(p) for p in paths]), output=Files(summary=str(out / "summary.csv")), params=SimpleNamespace(tasks_dir=str(tmp_path / "tasks")), log=[str(out / "logs/summary.log")])  # fmt: skip
    reproduce = {"references": {"oracle": "oracle"}, "tolerance": 0.05}
    outputs = Files(
        rates=str(out / "rates.csv"),
        by_repository=str(out / "rates_by_repository.csv"),
        markdown=str(out / "summary.md"),
        reproduce_md=[str(out / "reproduce/oracle.md")],
        reproduce_csv=[str(out / "reproduce/oracle.csv")],
    )
    run_script(
        "aggregate.py",
        input=Files(summary=str(out / "summary.csv"), references=[]),
        output=outputs,
        params=SimpleNamespace(reproduce=reproduce),
        log=[str(out / "logs/aggregate.log")],
    )
    printed = capfd.readouterr().out
    assert "kotlin-bench: 8 runs (5 resolved, 2 unresolved, 1 error)" in printed
    assert "- oracle: 4/4 resolved (100.0%), 0 errors" in printed
    assert "oracle vs oracle: REPRODUCED: 4/4 tasks agree" in printed
    assert len(read_summary(out / "summary.csv")) == 8
    assert list(read_rates(out / "rates.csv")["agent"]) == ["agent", "oracle"]
    assert (out / "summary.md").read_text().startswith("# kotlin-bench results")
    assert "REPRODUCED: 4/4 tasks agree" in (out / "reproduce/oracle.md").read_text()
    assert (out / "logs/aggregate.log").exists()
