"""The results site on synthetic run records: what the pages show, and that a rebuild after one changed
run writes only that run's page, its task's page and the index. (The browser test on a finished run of
the examples is tests/test_site_browser.py.)"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import EgressSummary, PatchKind, RunKey, RunResult, Status, WorkRecord
from kotlin_bench.core.record_parts import Flag, PatchApplied
from kotlin_bench.results.compare import all_pairs
from kotlin_bench.results.site.build import SiteInputs, build_site, live_update
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import summarize
from tests.factories import mixed_results, partial_predictions_results, write_results


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
    assert len(report.written) == 8 + 4 + 1 + 1 + 1  # runs, tasks, one pair, the index, runs in progress
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
        [
            names.site_run_page("agent", "slug-1", 1),
            names.site_task_page("slug-1"),
            names.SITE_INDEX,
            names.SITE_LIVE,  # the newest finished run moved
            names.site_pair_page("oracle", "agent"),  # slug-1 is discordant: its reason is shown there
        ]
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
    result.work.usage.trajectory = "harbor/jobs/job/calc-1__abc/agent/trajectory.json"
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
    flagged = [f"https://repo.examples.test{fix}"]
    result.work.egress = EgressSummary(
        "urls", requests=2, bytes=1020, refused=0, blocked=0, retrieval=flagged,
        around_proxy=1, around_proxy_to=["tcp 192.168.0.1:443"], dns_refused=2,
    )  # fmt: skip
    result.work.flags[Flag.RETRIEVAL] = flagged
    result.work.flags[Flag.AROUND_PROXY] = ["tcp 192.168.0.1:443"]
    result.write(run / names.RESULT_FILE)
    build(site)
    page = (site / names.site_run_page("agent", "calc-2", 1)).read_text()
    assert 'id="egress-requests"' in page and "1 flagged as retrieval" in page
    assert (
        '<p class="flagged">fence of the phase\'s network: <b>1 connection attempts around the proxy '
        "refused</b>: tcp 192.168.0.1:443; 2 DNS queries refused (not flagged)</p>"
    ) in page.replace("&#39;", "'"), page
    assert f'<tr class="flagged"><td>GET</td><td><code>https://repo.examples.test{fix}</code>' in page
    assert (
        "<tr><td>GET</td><td><code>https://repo.examples.test/maven2/examples/calc/maven-metadata.xml" in page
    )
    assert "rate without retrieval-flagged runs" in (site / names.SITE_INDEX).read_text()


PLOTS = (names.PLOT_RATES, names.PLOT_RATES_BY_REPOSITORY, names.PLOT_OUTCOMES)
FENCED = "Here is my fix:\n```diff\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n```\n"


def predictions_site(root: Path) -> Path:
    """Issue 31's predictions agent `my-model` (2 of its tasks with a line), plus oracle; the first run's
    patch is given in a code fence and applied after normalising, the second did not apply."""
    results = partial_predictions_results()
    for r in results:
        if r.agent == "my-model" and r.reason != "no_prediction":
            r.prediction = PatchApplied("git apply --verbose", ("code_fence",))
            if r.status == Status.UNRESOLVED:
                r.prediction = PatchApplied(None)
                r.error = "error: patch failed: x:1"
    write_results(root, results)
    for r in results:
        if r.agent != "my-model":
            continue
        work = WorkRecord(r.key)
        work_dir = root / names.work_dir(r.agent, r.task, r.attempt)
        work_dir.mkdir(parents=True, exist_ok=True)
        if r.reason == "no_prediction":
            work.outcome = "no_prediction"
        else:
            (work_dir / "prediction.patch").write_text(FENCED)
            work.diff, work.patch = "prediction.patch", PatchKind.PREDICTED
        work.write(work_dir / names.WORK_FILE)
        (root / names.run_dir(r.agent, r.task, r.attempt) / names.VERIFIER_LOG).write_text(
            ">>> candidate 0: git apply --verbose\nerror: corrupt patch at line 2\n"
            ">>> candidate 1: git apply --verbose\nChecking patch x...\nApplied patch x cleanly.\n"
            "kotlin-bench: the patch applied: candidate 1, git apply --verbose\njunit_compare: RESOLVED\n"
        )
    return root


def test_a_predictions_run_page_answers_why(tmp_path: Path) -> None:
    """Issue 31: the page said "no diff was captured", did not link prediction.patch and showed the capture
    as a Python repr. It shows the patch as given and as normalised, which applier applied it, the
    appliers' messages, tables instead of reprs, and every file of the run."""
    root = predictions_site(tmp_path)
    build(root)
    page = (root / names.site_run_page("my-model", "calc-1", 1)).read_text()
    assert "The predicted patch" in page and "no diff was captured" not in page
    assert '<span class="add">+new</span>' in page and "Here is my fix:" in page  # as normalised, as given
    assert "Applied by <b>git apply --verbose</b>, after the normalisations code_fence" in page
    assert (
        "Applied patch x cleanly." in page
        and "junit_compare" not in page.split("applier-log")[1].split("</pre>")[0]
    )
    assert "{&#39;" not in page and "{'" not in page  # no Python reprs
    assert 'href="../../../../runs/my-model/calc-1/attempt-1/work/prediction.patch"' in page
    assert 'href="../../../../runs/my-model/calc-1/attempt-1/work/work.json"' in page
    failed = (root / names.site_run_page("my-model", "calc-2", 1)).read_text()
    assert "<b>No applier applied it</b>" in failed and "error: patch failed: x:1" in failed
    missing = (root / names.site_run_page("my-model", "calc-3", 1)).read_text()
    assert "no_prediction" in missing and "the predictions file has no line for this task" in missing


def test_the_compare_page_shows_both_diffs_side_by_side(tmp_path: Path) -> None:
    root = predictions_site(tmp_path)
    for task in {r.task for r in partial_predictions_results()}:
        work_dir = root / names.work_dir("oracle", task, 1)
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / names.AGENT_DIFF).write_text(f"diff --git a/{task} b/{task}\n+oracle's fix of {task}\n")
        key = RunKey(task, "acme/calc", "oracle", "oracle", None, 1)
        WorkRecord(key, diff=names.AGENT_DIFF).write(work_dir / names.WORK_FILE)
    build(root)
    page = (root / names.site_pair_page("oracle", "my-model")).read_text()
    sections = page.split('<section class="discordant"')[1:]
    assert [s.split('id="t-')[1].split('"')[0] for s in sections] == ["calc-2", "calc-3", "calc-4", "calc-5"]
    calc2 = sections[0]
    assert calc2.count('class="side"') == 2
    assert "+oracle&#39;s fix of calc-2" in calc2 and "Here is my fix:" in calc2
    assert 'href="../runs/oracle/calc-2/attempt-1.html"' in calc2 and "patch_not_applied" in calc2


def test_a_copy_of_results_keeps_every_link(tmp_path: Path) -> None:
    """Issue 31: copying results/site/ alone broke its links. Every link of every page points inside
    results/ (relative), so a copy of results/ elsewhere has every target."""
    root = predictions_site(tmp_path / "ws")
    for made in (names.SUMMARY_MD, names.REPORT_HTML, names.SUMMARY_CSV, *PLOTS):  # as the aggregates are
        (root / made).parent.mkdir(parents=True, exist_ok=True)
        (root / made).write_text("")
    build(root)
    copy = tmp_path / "elsewhere" / "results"
    shutil.copytree(root / "results", copy)
    pages = sorted(copy.rglob("*.html"))
    assert len(pages) > 10
    broken = []
    for page in pages:
        for target in re.findall(r'(?:href|src)="([^"#:]+)(?:#[^"]*)?"', page.read_text()):
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(copy)} -> {target}")
    assert broken == []
    index = (copy / "site/index.html").read_text()
    assert all(f'src="{os.path.relpath(p, names.SITE)}"' in index for p in PLOTS)  # the charts on the site


def test_the_live_page_says_which_runs_are_going(tmp_path: Path) -> None:
    """A verify job writes its run's page and the page of runs in progress: a held runner lock is a run
    going, the verdicts are listed newest first."""
    root = predictions_site(tmp_path)
    lock = root / names.dir_lock(Path(names.run_dir("nop", "calc-9", 1)))
    lock.parent.mkdir(parents=True)
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = Path(names.verify_result("my-model", "calc-1", 1))
        live_update(root, result, Path("tasks"))
    live = (root / names.SITE_LIVE).read_text()
    assert "<td>nop</td><td>calc-9</td><td>1</td><td>verifying</td>" in live
    assert (root / names.site_run_page("my-model", "calc-1", 1)).is_file()
    assert 'href="runs/my-model/calc-1/attempt-1.html"' in live  # the run whose page exists is linked
    build(root)
    assert 'id="running-none"' in (root / names.SITE_LIVE).read_text()
