"""summary.md from the rows of results.csv: the targets, then one table per section (medians [min, max])."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable

from bench import site
from bench.common import Row, spread

TARGET_OVERHEAD = 1.15
TARGET_HARBOR_DEFAULT = 2.0
TARGET_HARBOR_PREBUILT = 1.0
TARGET_NOOP_SEC = 10.0
TARGET_DRY_RUN_SEC = 15.0
TARGET_DRY_RUN_MB = 500.0
TARGET_ENGINE = 1.3
TARGET_EGRESS_DOWNLOADS = 1.3
TARGET_EGRESS_RUN = 1.1
TARGET_HARBOR_TRIAL = 1.1
TARGET_FENCE_SEC = 0.2  # issue 36: an allowlist phase start with its fence, over today
JOBS_AT_ONCE = 2  # bench.images.JOBS (not imported: this module only formats rows)


def _select(rows: Iterable[Row], **match: object) -> list[Row]:
    return [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]


def _values(rows: Iterable[Row], **match: object) -> list[float]:
    return [r.value for r in _select(rows, **match) if not math.isnan(r.value)]


def paired_ratios(
    rows: list[Row], section: str, variant: str, reference: str, task: str | None = None
) -> list[float]:
    """variant / reference of the wall times measured side by side (same task and repetition)."""
    by_key: dict[tuple[str, int], dict[str, float]] = defaultdict(dict)
    for r in _select(rows, section=section, metric="wall_sec"):
        if r.ok and (task is None or r.task == task):
            by_key[(r.task, r.rep)][r.variant] = r.value
    return [v[variant] / v[reference] for v in by_key.values() if variant in v and reference in v]


def _verdict(value: float, goal: float, at_most: bool) -> str:
    if math.isnan(value):
        return "not measured"
    margin = goal - value if at_most else value - goal
    if margin >= 0:
        return f"PASS (margin {margin:.2f})"
    return f"MISS by {-margin:.2f} ({-margin / goal:.0%} of the goal)"


def _md_table(header: list[str], body: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return [*lines, ""]


def targets(rows: list[Row]) -> list[str]:
    body = []
    for variant, label in (
        ("snakemake", "snakemake invocation"),
        ("runner", "solve + verify steps in-process"),
    ):
        s = spread(paired_ratios(rows, "overhead", variant, "bare"))
        body.append(
            [
                f"1. one oracle run, {label} / bare `docker run` (all tasks x reps)",
                s.text(),
                f"≤ {TARGET_OVERHEAD}",
                _verdict(s.median, TARGET_OVERHEAD, True),
            ]
        )
    for variant, goal in (
        ("harbor_default", TARGET_HARBOR_DEFAULT),
        ("harbor_prebuilt", TARGET_HARBOR_PREBUILT),
    ):
        s = spread(paired_ratios(rows, "attempts", variant, "kotlin_bench"))
        body.append(
            [
                f"2. k=3 oracle, {variant} / kotlin_bench (speed-up)",
                s.text(),
                f"≥ {goal}",
                _verdict(s.median, goal, False),
            ]
        )
    noop = spread(
        _values([r for r in rows if r.ok], section="incremental", variant="noop", metric="wall_sec")
    )
    body.append(
        [
            "3. no-op invocation (s)",
            noop.text(),
            f"≤ {TARGET_NOOP_SEC}",
            _verdict(noop.median, TARGET_NOOP_SEC, True),
        ]
    )
    dry = spread(_values(rows, section="scale", case="1590", variant="dry_run", metric="wall_sec"))
    body.append(
        [
            "4. dry run, 1,590 runs (s)",
            dry.text(),
            f"≤ {TARGET_DRY_RUN_SEC}",
            _verdict(dry.median, TARGET_DRY_RUN_SEC, True),
        ]
    )
    cpu = spread(_values(rows, section="scale", case="1590", variant="dry_run", metric="cpu_sec"))
    body.append(
        [
            "4. dry run, 1,590 runs, CPU user + sys (s; what load changes less)",
            cpu.text(),
            f"≤ {TARGET_DRY_RUN_SEC}",
            _verdict(cpu.median, TARGET_DRY_RUN_SEC, True),
        ]
    )
    rss = spread(_values(rows, section="scale", case="1590", variant="dry_run", metric="peak_rss_tree_mb"))
    body.append(
        [
            "4. dry run, 1,590 runs, peak RSS of the process tree (MB)",
            rss.text(0),
            f"≤ {TARGET_DRY_RUN_MB:.0f}",
            _verdict(rss.median, TARGET_DRY_RUN_MB, True),
        ]
    )
    for variant in ("podman", "podman_rootless"):
        s = spread(paired_ratios(rows, "engines", variant, "docker"))
        body.append(
            [
                f"9. one oracle run (snakemake invocation), {variant} / docker",
                s.text(),
                f"≤ {TARGET_ENGINE}",
                _verdict(s.median, TARGET_ENGINE, True),
            ]
        )
    body += regrade_targets(rows) + images_targets(rows) + egress_targets(rows) + harvest_targets(rows)
    return ["## Targets", "", *_md_table(["target", "measured: median [min, max]", "goal", "result"], body)]


def egress_targets(rows: list[Row]) -> list[list[str]]:
    """Issue 28: the recording egress proxy against a direct download and against the host-only proxy."""
    downloads = spread(paired_ratios(rows, "egress", "recorded", "direct"))
    run = spread(paired_ratios(rows, "egress", "urls", "hosts"))
    start = spread(
        _values([r for r in rows if r.ok], section="egress", variant="recorded", metric="enter_sec")
    )
    trial = spread(paired_ratios(rows, "egress", "trial_recorded", "trial_isolated"))
    network = spread(
        _values([r for r in rows if r.ok], section="egress", variant="trial_recorded", metric="network_sec")
    )
    return [
        [
            "10. 200 MB in 500 files over HTTPS, recording proxy / direct",
            downloads.text(),
            f"≤ {TARGET_EGRESS_DOWNLOADS}",
            _verdict(downloads.median, TARGET_EGRESS_DOWNLOADS, True),
        ],
        [
            "10. one oracle run with an allowlist, record: urls / record: hosts",
            run.text(),
            f"≤ {TARGET_EGRESS_RUN}",
            _verdict(run.median, TARGET_EGRESS_RUN, True),
        ],
        ["10. allowlist phase start with the recording proxy (s)", start.text(), "-", "measured"],
        [
            "10. a terminus-2 trial (solve step), on the record / isolate_network",
            trial.text(),
            f"≤ {TARGET_HARBOR_TRIAL}",
            _verdict(trial.median, TARGET_HARBOR_TRIAL, True),
        ],
        [
            "10. the trial's agent phase set up behind Harbor's healthcheck (s)",
            network.text(),
            "-",
            "measured",
        ],
        *fence_targets(rows),
    ]


def fence_targets(rows: list[Row]) -> list[list[str]]:
    """Issue 36: an allowlist phase's start with its network's fence against the same without (paired
    by repetition: fenced - unfenced, seconds)."""
    body = []
    for metric, what in (("enter_sec", "start"), ("leave_sec", "end")):
        by_rep: dict[int, dict[str, float]] = defaultdict(dict)
        for r in _select(rows, section="egress", case="fence", metric=metric):
            if r.ok:
                by_rep[r.rep][r.variant] = r.value
        pairs = [v for v in by_rep.values() if {"fenced", "unfenced"} <= set(v)]
        extra = spread([v["fenced"] - v["unfenced"] for v in pairs])
        fenced, bare = (spread([v[k] for v in pairs]) for k in ("fenced", "unfenced"))
        goal = TARGET_FENCE_SEC if metric == "enter_sec" else None
        body.append(
            [
                f"11. allowlist phase {what}, fenced - unfenced (s; fenced {fenced.text(3)}, unfenced {bare.text(3)})",
                extra.text(3),
                f"≤ {goal}" if goal else "-",
                _verdict(extra.median, goal, True) if goal else "measured",
            ]
        )
    for metric, what in (("install_sec", "installing it"), ("close_sec", "reading and removing it")):
        own = spread(_values(rows, section="egress", case="fence", variant="calls", metric=metric))
        body.append([f"11. the fence's own calls: {what} (s)", own.text(3), "-", "measured"])
    return body


def harvest_targets(rows: list[Row]) -> list[list[str]]:
    """Issue 37: a second listing with nothing new answered from ETags (a fraction of the first), and
    the candidates' validation in parallel (ratios reported, no number set)."""
    body = []
    for variant, reference, label, goal, at_most in (
        ("again", "first", "11. listing 1,000 pull requests again, nothing new / first (wall)", "< 1", True),
        ("cores_1", "cores_2", "11. validating 3 candidates, --cores 1 / --cores 2 (wall)", "> 1", False),
    ):
        s = spread(paired_ratios(rows, "harvest", variant, reference))
        if s.n:
            body.append([label, s.text(), goal, _verdict(s.median, 1.0, at_most)])
    return body


def harvest(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="harvest")
    if not sec:
        return []
    body = []
    for case, variant in (
        ("listing", "first"),
        ("listing", "again"),
        ("validation", "cores_1"),
        ("validation", "cores_2"),
    ):
        walls = _select(sec, case=case, variant=variant, metric="wall_sec")
        if not walls:
            continue
        not_modified = spread(_values(sec, case=case, variant=variant, metric="not_modified"))
        requests = spread(_values(sec, case=case, variant=variant, metric="requests"))
        body.append([
            f"{case} {variant}", spread([w.value for w in walls]).text(2),
            requests.text(0) if requests.n else "-", not_modified.text(0) if not_modified.n else "-",
            "yes" if all(w.ok for w in walls) else "NO", walls[0].note,
        ])  # fmt: skip
    header = ["measurement", "wall (s)", "requests", "answered 304", "checks", "note (first)"]
    return [
        "## 11. Harvest: listing 1,000 pull requests; validating candidates",
        "",
        *_md_table(header, body),
    ]


def regrade_targets(rows: list[Row]) -> list[list[str]]:
    """Issue 19 sets no number: the ratios are reported, with the verdict 'measured'."""
    body = []
    for variant in ("reverify", "regrade"):
        s = spread(paired_ratios(rows, "regrade", variant, "rerun"))
        if s.n:
            body.append(
                [
                    f"7. {variant} / rerun of the same 8 runs (wall)",
                    s.text(),
                    "< 1",
                    _verdict(s.median, 1.0, True),
                ]
            )
    return body


def images_targets(rows: list[Row]) -> list[list[str]]:
    peak = _select(rows, section="images", variant="bases", metric="task_images_peak")
    if not peak:
        return []
    s = spread([r.value for r in peak])
    goal = f"≤ {JOBS_AT_ONCE} (jobs at once)"
    return [
        ["8. keep: bases, peak task images present", s.text(0), goal, _verdict(s.high, JOBS_AT_ONCE, True)]
    ]


def overhead(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="overhead")
    if not sec:
        return []
    tasks = sorted({r.task for r in sec})
    body = []
    for task in [*tasks, None]:
        match = {} if task is None else {"task": task}
        cells = [task or "**all**"]
        for variant in ("bare", "runner", "snakemake"):
            cells.append(spread(_values(sec, variant=variant, metric="wall_sec", **match)).text(1))
        for variant in ("runner", "snakemake"):
            cells.append(spread(paired_ratios(sec, "overhead", variant, "bare", task)).text())
        cells.append(spread(_values(sec, variant="runner", metric="verifier_sec", **match)).text(1))
        for variant in ("runner", "snakemake"):
            cells.append(spread(_values(sec, variant=variant, metric="outside_sec", **match)).text(1))
        body.append(cells)
    failed = [r for r in _select(sec, metric="wall_sec") if not r.ok]
    header = [
        "task",
        "bare (s)",
        "runner: solve + verify (s)",
        "snakemake (s)",
        "runner / bare",
        "snakemake / bare",
        "test.sh in runner (s)",
        "runner outside agent + test.sh (s)",
        "snakemake outside agent + test.sh (s)",
    ]
    lines = ["## 1. Overhead of one oracle run (concurrency 1)", "", *_md_table(header, body)]
    container = spread(_values(sec, variant="container_true", metric="wall_sec"))
    lines += [
        f"`docker run --rm <task image> true` (start and remove one container): {container.text(2)} s.",
        "",
    ]
    if failed:
        lines += [f"Failed measurements (left out of the ratios): {len(failed)}", ""]
    return lines


def attempts(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="attempts")
    if not sec:
        return []
    body = []
    kb = spread(_values(sec, variant="kotlin_bench", metric="wall_sec"))
    for variant in ("kotlin_bench", "harbor_default", "harbor_default_warm", "harbor_prebuilt"):
        walls = _select(sec, variant=variant, metric="wall_sec", task="all")
        if not walls:
            continue
        ratio = spread(paired_ratios(sec, "attempts", variant, "kotlin_bench"))
        resolved = "/".join(str(int(v)) for v in _values(sec, variant=variant, metric="resolved"))
        setup = spread(_values(sec, variant=variant, metric="env_setup_sec"))
        left = "/".join(str(int(v)) for v in _values(sec, variant=variant, metric="images_left")) or "-"
        verifier = spread(_values(sec, variant=variant, metric="verifier_sec"))
        outside = spread(_values(sec, variant=variant, metric="overhead_sec"))
        teardown = spread(_values(sec, variant=variant, metric="teardown_sec"))
        body.append(
            [
                variant,
                spread([w.value for w in walls]).text(1),
                ratio.text(),
                resolved,
                verifier.text(1),
                outside.text(1),
                setup.text(1) if setup.n else "-",
                teardown.text(1) if teardown.n else "-",
                left,
                "yes" if all(w.ok for w in walls) else "NO",
            ]
        )
    cold = _values(sec, variant="cold_build", metric="wall_sec", task="all")
    lines = ["## 2. Repeated attempts: k = 3 oracle attempts x 4 tasks, concurrency 2", ""]
    lines += _md_table(
        [
            "variant",
            "wall (s)",
            "x kotlin_bench",
            "reward-1.0 trials (per rep)",
            "verifier per run (s)",
            "per-run time outside agent + verifier (s)",
            "Harbor env setup per trial (s)",
            "Harbor teardown per trial (s)",
            "Harbor images left",
            "checks",
        ],
        body,
    )
    if cold and kb.n:
        with_build = kb.median + cold[0]
        hd = spread(_values(sec, variant="harbor_default", metric="wall_sec", task="all"))
        lines += [
            f"Cold build of the 4 task images (no cache, 2 at a time): {cold[0]:.1f} s. kotlin-bench "
            f"including it: {with_build:.1f} s; Harbor default / that: {hd.median / with_build:.2f}x.",
            "",
        ]
    return lines


def incremental(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="incremental")
    if not sec:
        return []
    body = [
        [
            "finish the DAG once (default target: summary, aggregate, plots, site)",
            spread(_values(sec, case="finish", metric="wall_sec")).text(1),
            "",
        ],
        ["no-op `snakemake --cores 2`", spread(_values(sec, variant="noop", metric="wall_sec")).text(1), ""],
        [
            "one deleted result.json (its verify step + summary, aggregate, plots, site)",
            spread(_values(sec, variant="rerun_one", metric="wall_sec")).text(1),
            "the verify step itself: "
            + spread(_values(sec, variant="rerun_one", metric="verify_step_sec")).text(1)
            + " s",
        ],
    ]
    return ["## 3. Incremental behaviour", "", *_md_table(["invocation", "wall (s)", "note"], body)]


def scale(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="scale")
    if not sec:
        return []
    body = []
    for case in sorted({r.case for r in sec}, key=int):
        c = _select(sec, case=case)
        first = _values(c, variant="dry_run_first", metric="wall_sec")
        total = _values(c, variant="profile", metric="profiled_total_sec")
        funcs = _values(c, variant="profile", metric="rule_functions_cum_sec")
        step_inputs = _values(c, variant="profile", metric="step_inputs_cum_sec")
        plan = _values(c, variant="profile", metric="plan_from_config_cum_sec")
        printing = _values(c, variant="profile", metric="dryrun_printjob_cum_sec")
        body.append(
            [
                f"{int(case):,}",
                spread(_values(c, variant="generate", metric="wall_sec")).text(1),
                f"{first[0]:.1f}" if first else "-",
                spread(_values(c, variant="dry_run", metric="wall_sec")).text(1),
                spread(_values(c, variant="dry_run", metric="cpu_sec")).text(1),
                spread(_values(c, variant="dry_run", metric="peak_rss_tree_mb")).text(0),
                spread(_values(c, variant="dry_run", metric="max_rss_mb")).text(0),
                "/".join(str(int(v)) for v in _values(c, variant="dry_run", metric="solve_jobs"))
                + " + "
                + "/".join(str(int(v)) for v in _values(c, variant="dry_run", metric="verify_jobs")),
                "/".join(str(int(v)) for v in _values(c, variant="dry_run", metric="total_jobs")),
                f"{total[0]:.1f}: rule functions {funcs[0]:.1f} (solve_inputs + verify_inputs "
                f"{step_inputs[0]:.1f}), Plan.from_config {plan[0]:.1f}, dry-run job printing {printing[0]:.1f}"
                if total and funcs and step_inputs and plan and printing
                else "-",
            ]
        )
    header = [
        "runs",
        "generate (s)",
        "first dry run (s)",
        "dry run (s)",
        "dry run CPU, user + sys (s)",
        "peak RSS tree (MB)",
        "max RSS one process (MB)",
        "solve + verify jobs",
        "all jobs",
        "cProfile (s): total; inside it",
    ]
    return ["## 4. DAG scale (dry run, 3 agents x 5 attempts)", "", *_md_table(header, body)]


def disk(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="disk")
    if not sec:
        return []
    body = []
    for task in sorted({r.task for r in sec}):
        own = _select(sec, task=task, variant="own_layers", metric="bytes")
        count = _select(sec, task=task, variant="own_layers", metric="count")
        unique = _values(sec, task=task, variant="df_unique", metric="bytes")
        base = _values(sec, task=task, variant="base_size", metric="bytes")
        body.append(
            [
                task,
                f"{own[0].value / 1e3:.1f} kB" if own else "-",
                f"{int(count[0].value)} ({count[0].note})" if count else "-",
                f"{unique[0] / 1e3:.1f} kB" if unique else "-",
                f"{base[0] / 1e6:.0f} MB" if base else "-",
                "yes" if own and own[0].ok else "NO",
            ]
        )
    header = [
        "task",
        "own layers (bytes)",
        "own layers (count)",
        "`docker system df` unique",
        "base image",
        "base layers are a prefix",
    ]
    return ["## 5. Disk per task image (on top of its base)", "", *_md_table(header, body)]


def engines(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="engines")
    if not sec:
        return []
    header = ["variant", "wall (s)", "outside agent + verifier (s)", "verifier (s)", "/ docker (paired)"]
    body = []
    for variant in ("docker", "podman", "podman_rootless"):
        ok = [r for r in sec if r.variant == variant and r.ok]
        if not ok:
            continue
        ratio = spread(paired_ratios(rows, "engines", variant, "docker")) if variant != "docker" else None
        body.append(
            [
                variant,
                spread(_values(ok, metric="wall_sec")).text(),
                spread(_values(ok, metric="outside_sec")).text(),
                spread(_values(ok, metric="verifier_sec")).text(),
                ratio.text() if ratio else "1",
            ]
        )
    return [
        "## 9. One oracle run per engine (snakemake invocation, concurrency 1)",
        "",
        *_md_table(header, body),
    ]


def regrade(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="regrade")
    if not sec:
        return []
    body = []
    for variant in ("rerun", "reverify", "regrade"):
        walls = _select(sec, variant=variant, metric="wall_sec", task="all")
        if not walls:
            continue
        ratio = spread(paired_ratios(sec, "regrade", variant, "rerun"))
        solve = spread(_values(sec, variant=variant, metric="solve_sec"))
        verify = spread(_values(sec, variant=variant, metric="verify_sec"))
        body.append(
            [
                variant,
                spread([w.value for w in walls]).text(1),
                ratio.text(),
                solve.text(1) if variant == "rerun" else "(work kept)",
                verify.text(1) if verify.n else "-",
                "yes" if all(w.ok for w in walls) else "NO",
                walls[0].note,
            ]
        )
    header = [
        "variant",
        "wall (s)",
        "x rerun",
        "solve step per run (s)",
        "verify step per run (s)",
        "checks",
        "note (first round)",
    ]
    return ["## 7. Regrade against re-running (8 oracle runs, concurrency 2)", "", *_md_table(header, body)]


def _bytes(value: float, exact: bool = False) -> str:
    """GB for image sizes, kB for a task image's own layers; `exact` keeps kB in a sum of both."""
    if math.isnan(value):
        return "-"
    if exact:
        return f"{value / 1e6:,.3f} MB"
    return f"{value / 1e9:.2f} GB" if value >= 1e8 else f"{value / 1e3:.1f} kB"


def _cell(rows: list[Row], metric: str, digits: int = 0, as_bytes: bool = False, exact: bool = False) -> str:
    """Counts and times as median [min, max]; bytes one value per round, "/" between rounds."""
    values = _values(rows, metric=metric)
    if as_bytes or exact:
        return " / ".join(_bytes(v, exact) for v in values) or "-"
    return spread(values).text(digits)


def images(rows: list[Row]) -> list[str]:
    sec = _select(rows, section="images")
    if not sec:
        return []
    body = []
    for policy in ("all", "bases"):
        c = _select(sec, variant=policy)
        if not c:
            continue
        body.append(
            [
                policy,
                _cell(c, "wall_sec", 1),
                _cell(c, "base_bytes", as_bytes=True),
                _cell(c, "task_images_peak"),
                _cell(c, "task_bytes_peak", as_bytes=True),
                _cell(c, "task_listed_bytes_peak", as_bytes=True),
                _cell(c, "task_images_final"),
                _cell(c, "task_bytes_final", as_bytes=True),
                _cell(c, "total_bytes_peak", exact=True),
                _cell(c, "total_bytes_final", exact=True),
                _cell(c, "bound_bytes", exact=True),
                "yes" if all(r.ok for r in c) else "NO",
            ]
        )
    header = [
        "keep",
        "wall (s)",
        "bases (bytes)",
        "task images: peak",
        "task bytes (own layers): peak",
        "task bytes as `docker images` lists them: peak",
        "task images: final",
        "task bytes (own layers): final",
        "bases + tasks: peak",
        "bases + tasks: final",
        f"bound: bases + {JOBS_AT_ONCE} task images",
        "checks",
    ]
    notes = [f"- keep {r.variant} round {r.rep}: {r.note}" for r in _select(sec, metric="wall_sec")]
    return [
        "## 8. Images on the engine: keep all against keep bases (the examples run, concurrency 2)",
        "",
        *_md_table(header, body),
        *notes,
        "",
    ]


def failures(rows: list[Row]) -> list[str]:
    bad = [r for r in rows if not r.ok and r.metric in ("wall_sec", "bytes", "task_images_peak")]
    if not bad:
        return ["All measurements passed their checks.", ""]
    lines = ["## Failed checks", ""]
    lines += [
        f"- {r.section}/{r.case}/{r.variant} {r.task} rep {r.rep}: {r.note or 'check failed'}" for r in bad
    ]
    return [*lines, ""]


def summarize(rows: list[Row], header: list[str]) -> str:
    parts = [
        *header,
        *targets(rows),
        *overhead(rows),
        *attempts(rows),
        *incremental(rows),
        *scale(rows),
        *disk(rows),
        *site.lines(rows),
        *regrade(rows),
        *images(rows),
        *engines(rows),
        *harvest(rows),
    ]
    parts += failures(rows)
    return "\n".join(parts).rstrip() + "\n"
