"""The results site on synthetic run records: what the pages show, and that a rebuild after one changed
run writes only that run's page, its task's page and the index. (The browser test on a finished run of
the examples is tests/test_site_browser.py.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import RunResult
from kotlin_bench.results.compare import all_pairs
from kotlin_bench.results.site.build import SiteInputs, build_site
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import summarize
from tests.factories import mixed_results, write_results


def build(root: Path) -> tuple[SiteInputs, object]:
    paths = sorted((root / "results/runs").glob(names.RESULT_GLOB))
    summary = summarize(paths)
    inputs = SiteInputs(
        root=root,
        results=[p.relative_to(root) for p in paths],
        summary=summary,
        overall=rates(summary),
        by_repository=rates_by_repository(summary),
        comparisons=all_pairs(summary),
        tasks_dir=Path("tasks"),
    )
    return inputs, build_site(inputs)


@pytest.fixture
def site(tmp_path: Path) -> Path:
    write_results(tmp_path, mixed_results())
    run = tmp_path / names.run_dir("agent", "calc-2", 1)
    (run / names.WORK_DIR).mkdir(parents=True)
    (run / names.WORK_DIR / names.AGENT_DIFF).write_text(
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"
    )
    (run / names.VERIFIER_LOG).write_text("".join(f"line {i}\n" for i in range(100)))
    (tmp_path / "tasks/calc-2").mkdir(parents=True)
    (tmp_path / "tasks/calc-2" / names.INSTRUCTION).write_text("# Fix <the> parser\n")
    return tmp_path


def test_pages_show_the_run(site: Path) -> None:
    _, report = build(site)
    assert len(report.written) == 8 + 4 + 1 + 1  # runs, tasks, one pair, the index
    page = (site / names.site_run_page("agent", "calc-2", 1)).read_text()
    assert "f2p_failed" in page and "an expected fail-to-pass test did not pass" in page
    assert '<span class="add">+new</span>' in page and "# Fix &lt;the&gt; parser" in page
    assert "line 99" in page and "line 59" not in page  # the log's tail only
    assert 'href="../../../../runs/agent/calc-2/attempt-1/verifier.log"' in page
    index = (site / names.SITE_INDEX).read_text()
    assert 'href="runs/agent/calc-2/attempt-1.html"' in index
    assert "95% CI (Wilson score, n = tasks)" in index and "oracle vs agent" in index
    task = (site / names.site_task_page("units-1")).read_text()
    assert "infrastructure" in task and "attempt-1.html" in task


def test_a_rebuild_writes_only_what_changed(site: Path) -> None:
    build(site)
    _, report = build(site)
    assert report.written == []
    result = site / names.verify_result("agent", "slug-1", 1)
    result.write_text(result.read_text().replace('"verifier_timeout"', '"agent_timeout"', 1))
    os.utime(result, ns=(result.stat().st_atime_ns, result.stat().st_mtime_ns + 10**9))
    _, report = build(site)
    assert sorted(report.written) == sorted(
        [names.site_run_page("agent", "slug-1", 1), names.site_task_page("slug-1"), names.SITE_INDEX]
    )
    result.unlink()  # a run that is gone loses its page
    _, report = build(site)
    assert names.site_run_page("agent", "slug-1", 1) in report.removed
    assert not (site / names.site_run_page("agent", "slug-1", 1)).exists()


def test_a_harbor_trajectory_is_shown(site: Path) -> None:
    """Harbor's ATIF trajectory of the trial: each step's source, message, tool calls and observations."""
    trial = site / names.work_dir("agent", "calc-1", 1) / names.HARBOR_DIR / "jobs/job/calc-1__abc"
    (trial / "agent").mkdir(parents=True)
    steps = [
        {"step_id": 1, "source": "user", "message": "Fix the parser"},
        {
            "step_id": 2,
            "source": "agent",
            "message": "Looking around",
            "tool_calls": [
                {"tool_call_id": "c1", "function_name": "bash", "arguments": {"command": "ls src"}}
            ],
            "observation": {"results": [{"source_call_id": "c1", "content": "Parser.kt"}]},
        },
    ]
    (trial / "agent/trajectory.json").write_text(json.dumps({"schema_version": "ATIF-v1.6", "steps": steps}))
    result_path = site / names.verify_result("agent", "calc-1", 1)
    result = RunResult.read(result_path)
    # as the Harbor kind names it
    result.usage.trajectory = "harbor/jobs/job/calc-1__abc/agent/trajectory.json"
    result.write(result_path)
    build(site)
    page = (site / names.site_run_page("agent", "calc-1", 1)).read_text()
    assert "Trajectory" in page and "Fix the parser" in page
    assert "bash({&#34;command&#34;: &#34;ls src&#34;})" in page and "Parser.kt" in page
    assert (
        'href="../../../../runs/agent/calc-1/attempt-1/work/harbor/jobs/job/calc-1__abc/agent/trajectory.json"'
        in page
    )


def test_the_run_page_lists_the_egress_record_with_flagged_requests_marked(site: Path) -> None:
    """A run whose agent phase was recorded (`egress: {record: urls}`): its requests, flagged ones marked,
    and the rates tables' rate without retrieval-flagged runs."""
    from kotlin_bench.core.record import RunResult

    run = site / names.run_dir("agent", "calc-2", 1)
    fix = "/maven2/examples/calc/1.1.0/calc-1.1.0-sources.jar"
    lines = [
        {"time": 1.0, "method": "GET", "scheme": "https", "host": "repo.examples.test", "port": 443,
         "path": "/maven2/examples/calc/maven-metadata.xml", "status": 200, "bytes": 120, "allowed": True,
         "blocked": False, "retrieval": None},
        {"time": 2.0, "method": "GET", "scheme": "https", "host": "repo.examples.test", "port": 443,
         "path": fix, "status": 200, "bytes": 900, "allowed": True, "blocked": False,
         "retrieval": "examples:calc:1.1.0: at or after the fix's release"},
    ]  # fmt: skip
    (run / names.WORK_DIR / names.EGRESS_RECORD).write_text("".join(json.dumps(x) + "\n" for x in lines))
    result = RunResult.read(run / names.RESULT_FILE)
    result.egress = {"record": "urls", "requests": 2, "bytes": 1020, "refused": 0, "blocked": 0,
                     "retrieval": [f"https://repo.examples.test{fix}"]}  # fmt: skip
    result.flags["retrieval"] = [f"https://repo.examples.test{fix}"]
    result.write(run / names.RESULT_FILE)
    build(site)
    page = (site / names.site_run_page("agent", "calc-2", 1)).read_text()
    assert 'id="egress-requests"' in page and "1 flagged as retrieval" in page
    assert f'<tr class="flagged"><td>GET</td><td><code>https://repo.examples.test{fix}</code>' in page
    assert (
        "<tr><td>GET</td><td><code>https://repo.examples.test/maven2/examples/calc/maven-metadata.xml" in page
    )
    assert "rate without retrieval-flagged runs" in (site / names.SITE_INDEX).read_text()
