"""The PNG charts and the HTML report, and the progress line."""

from __future__ import annotations

import base64
import io
import os
import re
import struct
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.core.render import Section, render_html
from kotlin_bench.dag.progress import (
    Counts,
    Progress,
    duration,
    format_line,
    headline,
    planned,
    print_headline,
    start_progress,
)
from kotlin_bench.results.plots import OUTCOMES, outcome_chart, outcome_matrix, rate_chart, repository_chart
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import summarize, write_table
from tests.factories import make_result, mixed_results, mixed_summary, write_results
from tests.rule_scripts import Files, aggregate_outputs, run_script

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the IHDR chunk, after checking the signature."""
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def mixed(tmp_path: Path) -> pd.DataFrame:
    return summarize(write_results(tmp_path / "runs", mixed_results()))


def many_tasks(tmp_path: Path, n: int, attempts: int = 1) -> pd.DataFrame:
    statuses = ("resolved", "unresolved", "error")
    results = [
        make_result(
            f"repo{i % 3}-{i}", agent, k, status=statuses[(i + k) % 3] if agent != "oracle" else "resolved"
        )
        for i in range(n)
        for agent in ("oracle", "agent")
        for k in range(1, attempts + 1)
    ]
    return summarize(write_results(tmp_path / f"runs-{n}-{attempts}", results))


def test_charts_are_valid_pngs(mixed: pd.DataFrame, tmp_path: Path) -> None:
    rate_chart(rates(mixed), tmp_path / "rates.png")
    repository_chart(rates_by_repository(mixed), tmp_path / "repos.png")
    outcome_chart(mixed, tmp_path / "outcomes.png")
    for name in ("rates.png", "repos.png", "outcomes.png"):
        width, height = png_size(tmp_path / name)
        assert 300 <= width <= 4000 and 150 <= height <= 4000, (name, width, height)


def test_outcome_matrix_has_one_row_per_task(mixed: pd.DataFrame) -> None:
    grid = outcome_matrix(mixed)
    assert list(grid.index) == ["calc-1", "calc-2", "slug-1", "units-1"]
    assert list(grid.columns) == ["agent", "oracle"]
    # one colour vocabulary: the class of the reason (f2p_failed: tests; verifier_timeout: a limit), and
    # an error is infrastructure, not the agent's outcome
    assert list(grid["agent"]) == ["resolved", "tests", "limit", "infrastructure"]
    assert set(grid.to_numpy().ravel()) <= set(OUTCOMES)


def test_outcome_matrix_with_attempts_and_missing_runs(tmp_path: Path) -> None:
    summary = many_tasks(tmp_path, 6, attempts=2)
    summary = summary[~((summary["agent"] == "agent") & (summary["task"] == "repo0-0"))]
    grid = outcome_matrix(summary)
    assert grid.shape == (6, 4)
    assert list(grid.columns) == ["agent #1", "agent #2", "oracle #1", "oracle #2"]
    assert list(grid.loc["repo0-0"]) == ["not_run", "not_run", "resolved", "resolved"]
    assert list(grid.index[:2]) == ["repo0-0", "repo0-3"]  # by repository, then task


def test_outcome_chart_grows_with_the_tasks(tmp_path: Path) -> None:
    outcome_chart(many_tasks(tmp_path, 6), tmp_path / "small.png")
    outcome_chart(many_tasks(tmp_path, 60), tmp_path / "large.png")
    small, large = png_size(tmp_path / "small.png"), png_size(tmp_path / "large.png")
    assert large[1] > small[1] + 54 * 20  # at least ~20 px per added row
    assert large[1] < 60 * 60


def test_html_embeds_images_and_tables(mixed: pd.DataFrame, tmp_path: Path) -> None:
    rate_chart(rates(mixed), tmp_path / "rates.png")
    table = pd.DataFrame({"agent": ["<b>x</b>"], "rate": ["50.0%"]})
    sections = [
        Section("Headline", ["oracle: 4/4 resolved (100.0%), 0 errors"]),
        Section("Rates", ["`cmd`"], table),
    ]
    page = render_html(sections, [("Resolve rate per agent", tmp_path / "rates.png")])
    assert page.startswith("<!DOCTYPE html>")
    assert "<li>oracle: 4/4 resolved (100.0%), 0 errors</li>" in page
    assert "<code>cmd</code>" in page and "&lt;b&gt;x&lt;/b&gt;" in page and "<table" in page
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)">', page)
    assert [alt for alt, _ in images] == ["Resolve rate per agent"]
    assert base64.b64decode(images[0][1]) == (tmp_path / "rates.png").read_bytes()
    assert page.index("<li>oracle") < page.index("<img") < page.index("<h2>Rates</h2>")


def test_plots_script(tmp_path: Path) -> None:
    paths = write_results(tmp_path, mixed_results())
    out = tmp_path / "results"
    log = [str(out / "logs/x.log")]
    run_script("summarize.py", input=Files(results=[str(p) for p in paths], repeats=[]), output=Files(s=str(out / "summary.csv")), params=SimpleNamespace(tasks_dir=str(tmp_path / "tasks"), retrieval={}), log=log)  # fmt: skip
    reproduce = {"references": {"agent": "nop"}, "tolerance": 0.05}
    aggregate = aggregate_outputs(out, ["agent"])
    params = type("Params", (), {"reproduce": reproduce, "cutoffs": {"agent": "2025-07-31"}})()
    run_script(
        "aggregate.py",
        input=Files(summary=str(out / "summary.csv"), images=[]),
        output=aggregate,
        params=params,
        log=log,
    )
    charts = Files(
        rates=str(out / "plots/rates.png"),
        by_repository=str(out / "plots/rates_by_repository.png"),
        outcomes=str(out / "plots/outcomes.png"),
        quarters=str(out / "plots/rate_by_merge_quarter.png"),
        html=str(out / "report.html"),
    )
    inputs = Files(
        summary=aggregate.markdown.replace("summary.md", "summary.csv"),
        rates=aggregate.rates,
        by_repository=aggregate.by_repository,
        verdicts=aggregate.verdicts,
        comparisons=aggregate.comparisons,
        reproduce=aggregate.reproduce_csv,
    )
    run_script("plots.py", input=inputs, output=charts, params=params, log=log)
    page = (out / "report.html").read_text()
    assert page.count("data:image/png;base64,") == 4
    assert "Before and after the training cutoff" in page and "too few tasks merged before or after" in page
    assert "agent vs nop: NOT REPRODUCED: 2 tasks differ: calc-1, units-1" in page  # units-1 errored
    assert "Reproduction agent vs nop: Verdict" in page
    text = re.sub(r'base64,[^"]+', "", page)
    assert "&lt;NA&gt;" not in text and ">nan<" not in text
    for name in ("rates", "by_repository", "outcomes", "quarters"):
        png_size(Path(getattr(charts, name)))


# --------------------------------------------------------------------------- progress


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (45.4, "45s"), (130, "2m10s"), (3725, "1h02m")])
def test_duration(seconds: float, text: str) -> None:
    assert duration(seconds) == text


def test_format_line() -> None:
    line = format_line(Counts(expected=8, done=5, resolved=3, errors=1), elapsed=130, done_since_start=5)
    assert line == "runs 5/8 done | resolved 3 | errors 1 | elapsed 2m10s | eta 1m18s"
    assert format_line(Counts(8, 2, 0, 0), 30, 0).endswith("eta ?")
    assert format_line(Counts(2, 2, 1, 0), 30, 2).endswith("eta 0s")


def test_progress_line_reads_the_results(tmp_path: Path) -> None:
    results = mixed_results()
    written = write_results(tmp_path, results[:5])
    expected = [str(p.relative_to(tmp_path)) for p in written]
    expected += ["results/runs/agent/x/attempt-1/result.json", "results/runs/agent/y/attempt-1/result.json"]
    (tmp_path / "results/runs/oracle/calc-2/attempt-1/result.json").write_text("{not json")
    line = Progress([Path(p) for p in expected], tmp_path, started=0.0, baseline=0).line(now=100)
    assert line == "runs 5/7 done | resolved 4 | errors 0 | elapsed 1m40s | eta 40s"


def test_progress_pace_counts_only_new_runs(tmp_path: Path) -> None:
    written = write_results(tmp_path, mixed_results())
    later = written[4:]
    for path in later:
        path.rename(path.with_suffix(".hidden"))
    progress = Progress(written, started=0.0)
    assert progress.line(now=10.0).startswith("runs 4/8 done | resolved 4 | errors 0 | elapsed 10s | eta ?")
    later[0].with_suffix(".hidden").rename(later[0])
    assert progress.line(now=20.0) == "runs 5/8 done | resolved 5 | errors 0 | elapsed 20s | eta 1m00s"


def test_start_progress_prints_and_stops(tmp_path: Path) -> None:
    written = write_results(tmp_path, mixed_results()[:2])
    stream = io.StringIO()
    stop = start_progress([*written, tmp_path / "missing.json"], interval=0.05, stream=stream)
    deadline = time.monotonic() + 60
    while stream.getvalue().count("\n") < 2 and time.monotonic() < deadline:  # two lines from the watcher
        time.sleep(0.01)
    stop()
    stop()  # idempotent
    lines = stream.getvalue().splitlines()
    assert len(lines) >= 3  # the watcher's two and the last one stop() prints
    assert all(
        line.startswith("kotlin-bench: runs 2/3 done | resolved 2 | errors 0 | elapsed ") for line in lines
    )
    assert not any(t.name == "kotlin-bench-progress" and t.is_alive() for t in threading.enumerate())
    with pytest.raises(ValueError):
        start_progress([], interval=0)


def test_progress_counts_what_this_invocation_does(tmp_path: Path) -> None:
    """Issue 31: a one-run target ended at `runs 21/25 done | eta 6m44s` (every run of the config was
    counted), and a regrade said `runs 20/20 done | eta 0s` while most verifications still ran."""
    results = mixed_results()
    written = write_results(tmp_path, results)
    jobs = [("verify", [str(written[0].relative_to(tmp_path))]), ("summary", ["results/summary.csv"])]
    plan = planned([*jobs, ("aggregate", ["results/rates.csv"])])
    assert [str(p) for p in plan.runs] == [str(written[0].relative_to(tmp_path))] and not plan.verifications
    assert "aggregate" in plan.rules
    one = Progress(plan.runs, tmp_path, started=0.0, baseline=0)
    assert one.line(now=30).startswith("runs 1/1 done | resolved 1 | errors 0")
    # a regrade: verifications of runs done already; a result.json of an earlier invocation is not done
    staged = [f"results/regrade/runs/{r.agent}/{r.task}/attempt-1/result.json" for r in results]
    regrade = planned([("regrade_verify", [p]) for p in staged])
    assert not regrade.runs and len(regrade.verifications) == len(results)
    for result, path in zip(results[:3], staged[:3], strict=True):
        result.write(tmp_path / path)
    old = tmp_path / staged[3]
    results[3].write(old)
    os.utime(old, ns=(0, 0))
    progress = Progress(regrade.runs, tmp_path, started=0.0, verifications=regrade.verifications, since_ns=1)
    assert progress.line(now=60) == (
        f"verifications 3/{len(results)} done | resolved 3 | errors 0 | elapsed 1m00s | eta ?"
    )
    progress.baseline = 0
    assert progress.line(now=60).endswith(f"eta {duration(60 / 3 * (len(results) - 3))}")


def test_the_headline_is_per_agent_with_its_interval(tmp_path: Path) -> None:
    summary = mixed_summary(tmp_path)
    (tmp_path / "results").mkdir(exist_ok=True)
    write_table(summary, tmp_path / names.SUMMARY_CSV)
    write_table(rates(summary), tmp_path / names.RATES_CSV)
    lines = headline(tmp_path)
    assert lines[0] == "agent (m1): 1/4 resolved (25.0%, 95% CI 4.6% - 69.9%), 1 error"
    assert lines[1].startswith("oracle: 4/4 resolved (100.0%, 95% CI 51.0% - 100.0%), 0 errors")
    assert lines[-1].startswith("details: results/summary.md")
    stream = io.StringIO()
    print_headline(tmp_path, stream)
    assert stream.getvalue().splitlines()[1:] == [f"kotlin-bench: {line}" for line in lines]
    assert headline(tmp_path / "nothing") == []
