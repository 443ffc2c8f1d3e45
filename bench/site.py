"""Section 6: the results site at scale: the time and bytes of building it for the 15,000 synthetic runs of
section 4 (1,000 tasks x oracle, nop, gold x 5 attempts), and a rebuild after one changed run.

No container runs: each run's record is synthetic (`result.json` with the verifier's report, a verifier
log, the agent's diff and log, as a real run leaves them), written under a throw-away workflow
directory; then the summary, rates and comparisons are computed as the aggregate rule does, and the site
is built with `kotlin_bench.results.site.build.build_site` (what rule `site` calls). The rebuild changes
one unresolved run's reason (a new result.json, as a rerun writes it) and counts the pages written: the
run's page, its task's page and the index, nothing else.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from bench.common import Context, Row, log
from bench.scale import AGENTS, ATTEMPTS, synthetic_spec
from kotlin_bench.core import names
from kotlin_bench.core.record import AgentWork, RunKey, RunResult, Status
from kotlin_bench.core.record_parts import CategoryReport, Timings, VerifierReport
from kotlin_bench.results.compare import all_pairs
from kotlin_bench.results.site.build import SiteInputs, build_site
from kotlin_bench.results.stats import rates, rates_by_repository
from kotlin_bench.results.summary import summarize

TASKS = 1000
INDEX_LIMIT = 2 << 20
DIFF = "diff --git a/src/Calc.kt b/src/Calc.kt\n--- a/src/Calc.kt\n+++ b/src/Calc.kt\n@@ -1,3 +1,3 @@\n" + (
    " context line\n-old line\n+new line\n" * 30
)
VERIFIER_LOG = "".join(f"[verifier] step {i}: something the verifier did\n" for i in range(40))


def categories(resolved: bool) -> dict[str, CategoryReport]:
    missing = [] if resolved else [f"calc.CalcTest.case {i}()" for i in range(3)]
    return {
        "f2p": CategoryReport(expected=3, landed=3 - len(missing), missing=missing),
        "p2p": CategoryReport(expected=11, landed=11, missing=[]),
        "s2p": CategoryReport(expected=0, landed=0, missing=[]),
        "n2p": CategoryReport(expected=0, landed=0, missing=[]),
    }


def write_run(root: Path, task: dict[str, object], agent: str, attempt: int) -> Path:
    resolved = agent != "nop" and not (agent == "gold" and (attempt + int(task["pr"])) % 4 == 0)  # type: ignore[call-overload]
    key = RunKey(str(task["id"]), str(task["repository"]), agent, agent, None, attempt)
    result = RunResult(
        key,
        work=AgentWork(timings=Timings(agent_sec=1.2)),
        verify_timings=Timings(verifier_sec=6.5, total_sec=8.0),
        verifier=VerifierReport(resolved=resolved, reasons=[], categories=categories(resolved)),
    )
    result.score(1.0 if resolved else 0.0, None if resolved else "f2p_failed", "expected_missing: f2p 3 of 3")
    run = root / names.run_dir(agent, result.task, attempt)
    work = run / names.WORK_DIR
    work.mkdir(parents=True, exist_ok=True)
    (work / names.AGENT_DIFF).write_text("" if agent == "nop" else DIFF, encoding="utf-8")
    (work / names.AGENT_LOG).write_text("agent: done\n", encoding="utf-8")
    (run / names.VERIFIER_LOG).write_text(VERIFIER_LOG, encoding="utf-8")
    path = run / names.RESULT_FILE
    result.write(path)
    return path


def inputs(root: Path, paths: list[Path]) -> SiteInputs:
    summary = summarize(paths)
    return SiteInputs(
        root=root,
        results=[p.relative_to(root) for p in paths],
        summary=summary,
        overall=rates(summary),
        by_repository=rates_by_repository(summary),
        comparisons=all_pairs(summary),
        tasks_dir=Path("synth/tasks"),
    )


def tree_bytes(folder: Path) -> tuple[int, int]:
    pages = [p for p in folder.rglob("*.html")]
    return len(pages), sum(p.stat().st_size for p in pages)


def run(ctx: Context) -> None:
    root = ctx.tmp / "site-scale"
    spec = synthetic_spec(TASKS)
    started = time.monotonic()
    paths = [
        write_run(root, task, agent["name"], attempt)
        for task in spec["tasks"]  # type: ignore[attr-defined]
        for agent in AGENTS
        for attempt in range(1, ATTEMPTS + 1)
    ]
    runs = str(len(paths))
    log(f"site: {runs} synthetic runs written in {time.monotonic() - started:.0f}s")
    started = time.monotonic()
    site_inputs = inputs(root, paths)
    prepare_sec = time.monotonic() - started
    started = time.monotonic()
    first = build_site(site_inputs)
    build_sec = time.monotonic() - started
    index = (root / names.SITE_INDEX).stat().st_size
    pages, total = tree_bytes(root / names.SITE)
    ok = index < INDEX_LIMIT and len(first.written) == pages
    ctx.recorder.add(
        Row("site", runs, "summary_rates_comparisons", "all", 0, "wall_sec", prepare_sec),
        Row("site", runs, "first_build", "all", 0, "wall_sec", build_sec, ok=ok),
        Row(
            "site",
            runs,
            "first_build",
            "all",
            0,
            "index_bytes",
            float(index),
            unit="B",
            ok=index < INDEX_LIMIT,
        ),
        Row("site", runs, "first_build", "all", 0, "site_bytes", float(total), unit="B"),
        Row("site", runs, "first_build", "all", 0, "pages", float(pages), unit="pages"),
    )
    log(
        f"site: first build {build_sec:.1f}s, {pages} pages, {total / 2**20:.1f} MiB, index {index / 2**20:.2f} MiB"
    )

    changed = root / names.verify_result("nop", str(spec["tasks"][0]["id"]), 1)  # type: ignore[index]
    result = RunResult.read(changed)
    assert result.status is Status.UNRESOLVED
    result.score(0.0, "agent_timeout", "agent_timeout")
    result.write(changed)
    stat = changed.stat()
    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    site_inputs = inputs(root, paths)
    started = time.monotonic()
    again = build_site(site_inputs)
    rebuild_sec = time.monotonic() - started
    expected = {
        names.site_run_page(result.agent, result.task, 1),
        names.site_task_page(result.task),
        names.SITE_INDEX,
    }
    ok = set(again.written) == expected
    ctx.recorder.add(
        Row("site", runs, "rebuild_one_run", "all", 0, "wall_sec", rebuild_sec, ok=ok),
        Row(
            "site",
            runs,
            "rebuild_one_run",
            "all",
            0,
            "pages_written",
            float(len(again.written)),
            unit="pages",
            ok=ok,
            note=" ".join(sorted(again.written)),
        ),
    )
    log(f"site: rebuild after one changed run {rebuild_sec:.1f}s, wrote {sorted(again.written)}")


def lines(rows: list[Row]) -> list[str]:
    """The section's part of summary.md."""
    found = [r for r in rows if r.section == "site"]
    if not found:
        return []
    value = {(r.variant, r.metric): r for r in found}

    def get(variant: str, metric: str) -> float:
        row = value.get((variant, metric))
        return row.value if row else float("nan")

    runs = found[0].case
    return [
        f"## 6. The results site ({int(runs):,} synthetic runs)",
        "",
        "| measure | value |",
        "| --- | --- |",
        f"| summary, rates and comparisons (s) | {get('summary_rates_comparisons', 'wall_sec'):.1f} |",
        f"| first build (s) | {get('first_build', 'wall_sec'):.1f} |",
        f"| pages; bytes | {int(get('first_build', 'pages')):,}; {get('first_build', 'site_bytes') / 2**20:.1f} MiB |",
        f"| index.html | {get('first_build', 'index_bytes') / 2**20:.2f} MiB (goal < 2 MiB) |",
        f"| rebuild after one changed run (s) | {get('rebuild_one_run', 'wall_sec'):.1f} |",
        f"| pages written by it | {int(get('rebuild_one_run', 'pages_written'))} (goal: the run's, its task's, the index) |",
        "",
    ]
