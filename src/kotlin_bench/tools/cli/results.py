"""The results' commands: errors, compare, reproduce, leaderboard."""

from __future__ import annotations

import argparse
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

from kotlin_bench import LEGACY_LAYOUT, RESULTS_LAYOUT
from kotlin_bench.core import names
from kotlin_bench.core.record import errored_results, failed_step_outputs
from kotlin_bench.dag.progress import PREFIX
from kotlin_bench.tools.cli.text import err, out, report_error
from kotlin_bench.tools.cli.text import table as render_table
from kotlin_bench.tools.root import DEFAULT_CONFIG, Rooted, add_root, read_config


def cmd_reproduce(args: argparse.Namespace) -> int:
    """The comparison the aggregate rule makes, for one agent of any finished summary."""
    from kotlin_bench.results.cutoff import cutoff_gap
    from kotlin_bench.results.reproduce.agent import reproduce_agent
    from kotlin_bench.results.reproduce.plan import ReproducePlan
    from kotlin_bench.results.reproduce.verdicts import merge_verdicts
    from kotlin_bench.results.summary import read_summary

    if not args.summary.is_file():
        raise ValueError(
            f"{args.summary}: no such file; the summary of a run is {names.SUMMARY_CSV} (written by `snakemake`)"
        )
    summary = read_summary(args.summary)
    agents = sorted(set(summary["agent"]))
    if args.agent not in agents:
        raise ValueError(
            f"{args.summary}: no runs of agent {args.agent!r} (agents: {', '.join(agents) or 'none'})"
        )
    raw: dict[str, Any] = {"reference": {args.agent: args.reference}}
    if args.tolerance is not None:
        raw["tolerance"] = args.tolerance
    plan = ReproducePlan.from_config(raw, [args.agent], args.root)
    spec = plan.references[args.agent]
    csv_path, md_path = (args.out / f"{args.agent}{suffix}" for suffix in (".csv", ".md"))
    cutoff = args.cutoff or configured_cutoff(args.root, args.agent)
    gap = cutoff_gap(summary, args.agent, cutoff) if cutoff else None
    verdict = reproduce_agent(
        args.agent, spec, summary, csv_path, md_path, plan.tolerance, args.root, cutoff=gap
    )
    merge_verdicts([verdict], args.out / Path(names.VERDICTS_JSON).name)
    out(md_path.read_text(encoding="utf-8"))
    out(verdict.line)
    if gap is not None:
        out(f"{args.agent} (cutoff {gap.cutoff.isoformat()}): {gap.verdict()}")
    out(f"wrote {md_path}, {csv_path} and {args.out / Path(names.VERDICTS_JSON).name}")
    return 0


def configured_cutoff(root: Path, agent: str) -> date | None:
    """The `cutoff:` of the agent's entry in the workflow's config (None: no config, no such agent, none)."""
    from kotlin_bench.runs.agents.config import parse_cutoff

    try:
        config = read_config(root / DEFAULT_CONFIG)
    except (OSError, ValueError):
        return None
    entries = [a for a in config.get("agents") or [] if isinstance(a, dict) and a.get("name") == agent]
    return parse_cutoff(entries[0].get("cutoff"), agent) if entries else None


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a day; write YYYY-MM-DD (e.g. 2025-07-31)"
        ) from None


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from kotlin_bench.dataset import leaderboard

    rows = leaderboard.load_rows(args.root / names.LEADERBOARD_CSV)
    if args.write or args.check:
        differing = leaderboard.write_configs(rows, args.root, check=args.check)
        for path in differing:
            out(f"{'differs' if args.check else 'wrote  '}: {path}")
        if args.check and differing:
            err(f"{len(differing)} configuration file(s) differ; run `kotlin-bench leaderboard --write`")
            return 1
        out(
            f"{len(leaderboard.planned_configs(rows, args.root))} files up to date"
            if not differing
            else "done"
        )
        return 0
    rows_ = []
    for row in rows:
        setup = leaderboard.harbor_setup(row)
        how = setup.config_path if setup else f"not runnable: {leaderboard.NOT_RUNNABLE[row.setup]}"
        rows_.append(
            (row.setup, f"{row.resolved}/{row.submitted}", f"{row.rate:.2f}%", row.tokens_m, row.latency, how)
        )
    out(render_table(rows_, ("setup", "resolved", "rate", "tokens (M)", "wall time", "configuration")))
    return 0


def cmd_errors(args: argparse.Namespace) -> int:
    """Errored runs are results (status `error`) that say which step failed; the next `snakemake` redoes
    exactly that step (`kotlin_bench.dag.redo`): a failed verification without touching the agent's work,
    a failed solve step then its verification, nothing else. --delete removes those outputs now."""
    runs = args.results / "runs"
    if not runs.is_dir():
        raise FileNotFoundError(
            f"{args.results}: no run records here (no {runs}); give the results directory with --results, "
            "or run the command inside a workflow that has run"
        )
    found = errored_results(args.results)
    for path, result in found:
        step = result.failed_step or "run"
        out(f"{path}: step {step} failed: {result.reason_detail or result.reason}: {result.error}")
    if args.delete:
        for path, result in found:
            for output in failed_step_outputs(path, result):
                output.unlink(missing_ok=True)
    verb = "deleted" if args.delete else "found"
    out(
        f"{len(found)} errored run(s) {verb}"
        + ("; now run snakemake to redo them" if args.delete and found else "")
    )
    return 0


def cmd_regrade(args: argparse.Namespace) -> int:
    """Verify every run's work again (the DAG's `regrade` target: no agent runs), show what changes, and
    with --apply move the new verdicts into place (each changed run keeps its previous one). Snakemake's
    job output goes to a log; the terminal shows the progress line and ends on the per-agent headline."""
    from kotlin_bench.results.regrade import apply, headline, read_changes, totals

    cmd = [sys.executable, "-m", "snakemake", "--cores", str(args.cores), "regrade", "--quiet", "rules"]
    for path in args.configfile:
        read_config(
            path, required=True
        )  # one line naming the file (and line) instead of Snakemake's traceback
        cmd += ["--configfile", str(path.resolve())]
    log = Path(names.log("regrade", "snakemake"))
    code = run_logged(cmd, args.root, args.root / log)
    if code != 0:
        report_error(f"the regrade's verifications failed (snakemake exited {code}); see {log}")
        return code
    changes = read_changes(args.root / names.REGRADE_CSV)
    out("")
    for line in headline(changes):
        out(line)
    out(f"details: {names.REGRADE_MD}")
    if not args.apply:
        out(f"regrade: {totals(changes)}; nothing was changed (apply with `kotlin-bench regrade --apply`)")
        return 0
    changed = apply(changes, args.root)
    out(f"regrade applied: {totals(changes)}; {changed} run(s) keep their previous verdict in previous/<n>/")
    return 0


def run_logged(cmd: list[str], cwd: Path, log: Path) -> int:
    """Run `cmd` with its output in `log`; its own lines (`kotlin-bench: ...`: progress, errors) are shown
    on stderr as they come."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w", encoding="utf-8") as sink:
        process = subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        assert process.stdout is not None
        for line in process.stdout:
            sink.write(line)
            if line.startswith(PREFIX):
                err(line.rstrip("\n"))
        return process.wait()


def cmd_migrate(args: argparse.Namespace) -> int:
    """Results of layout 1 (one step solved and scored) into today's layout (the agents' work kept; nothing solved again)."""
    from kotlin_bench.tools.migrate import migrate

    if not (args.results / "runs").is_dir():
        report_error(f"{args.results / 'runs'} does not exist: no results to migrate")
        return 2
    migrated = migrate(args.results)
    for run_dir in migrated:
        out(f"migrated {run_dir}")
    out(
        f"{len(migrated)} run(s) migrated from results layout {LEGACY_LAYOUT} to {RESULTS_LAYOUT}"
        + (
            "; the next snakemake verifies them again from their kept work (no agent runs)"
            if migrated
            else ""
        )
    )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """The paired comparison of two agents of a finished summary: per attempt and over attempts."""
    from kotlin_bench.core.suggest import did_you_mean
    from kotlin_bench.results.compare import compare, display_comparisons
    from kotlin_bench.results.summary import read_summary

    if not args.summary.is_file():
        raise ValueError(
            f"{args.summary}: no such file; the summary of a run is {names.SUMMARY_CSV} (written by `snakemake`)"
        )
    summary = read_summary(args.summary)
    agents = sorted(set(summary["agent"]))
    for agent in (args.agent_a, args.agent_b):
        if agent not in agents:
            raise ValueError(
                f"{args.summary}: no runs of agent {agent!r}{did_you_mean(agent, agents)}; "
                f"the agents are {', '.join(agents) or 'none'}"
            )
    if args.agent_a == args.agent_b:
        raise ValueError("compare two different agents")
    found = compare(summary, args.agent_a, args.agent_b)
    if not found:
        raise ValueError(f"{args.agent_a} and {args.agent_b} ran no task in common")
    shown = display_comparisons(found, limit=10**6)
    for comparison, (_, row) in zip(found, shown.iterrows(), strict=True):
        out(f"{row['a vs b']}, {row['scope']}: {comparison.tasks} tasks both ran")
        out(
            f"  discordant: {comparison.discordant} ({comparison.only_a} only {args.agent_a}, {comparison.only_b} only {args.agent_b})"
        )
        out(f"  only {args.agent_a} solves: {row['tasks only a solves'] or '-'}")
        out(f"  only {args.agent_b} solves: {row['tasks only b solves'] or '-'}")
        out(
            f"  difference {row['difference (a - b)']}; 95% CI {row['95% CI']}; paired bootstrap {row['95% CI (paired bootstrap)']}"
        )
        out(f"  p = {row['p']}")
    return 0


def register(sub: Any) -> None:
    """The results' subcommands of `kotlin-bench`."""
    p = sub.add_parser(
        "errors", help="list the runs recorded as errors (the next snakemake redoes their failed steps)"
    )
    p.add_argument(
        "--results", type=Path, default=Rooted(names.RESULTS), help="results directory (default: results)"
    )
    p.add_argument("--delete", action="store_true", help="delete their failed steps' outputs now")
    add_root(p)
    p.set_defaults(func=cmd_errors)

    p = sub.add_parser(
        "regrade",
        help="verify every run's work again (no agent runs), show what changes; --apply moves it into place",
    )
    p.add_argument(
        "--apply", action="store_true", help="move the new verdicts into place (previous ones kept)"
    )
    p.add_argument("--cores", type=int, default=2, help="for the verifications (default: 2)")
    p.add_argument("--configfile", type=Path, action="append", default=[], help="as for snakemake")
    add_root(p)
    p.set_defaults(func=cmd_regrade)

    what = f"move results of layout {LEGACY_LAYOUT} (one step solved and scored) into layout {RESULTS_LAYOUT}, once"
    p = sub.add_parser("migrate", help=what, description=f"{what} (the package version is another number).")
    p.add_argument(
        "--results", type=Path, default=Rooted(names.RESULTS), help="results directory (default: results)"
    )
    add_root(p)
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser(
        "compare",
        help="paired comparison of two agents: tasks only one solves, exact McNemar test, intervals",
    )
    p.add_argument("agent_a", metavar="AGENT_A")
    p.add_argument("agent_b", metavar="AGENT_B")
    p.add_argument("--summary", type=Path, default=Rooted(names.SUMMARY_CSV), help="a finished summary.csv")
    add_root(p)
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "reproduce", help="compare one agent of a finished summary.csv with a reference (no Docker)"
    )
    p.add_argument("--summary", type=Path, default=Rooted(names.SUMMARY_CSV), help="a finished summary.csv")
    p.add_argument("--agent", required=True, help="the agent whose runs are compared")
    p.add_argument(
        "--reference",
        required=True,
        help='"leaderboard:<row>", oracle, nop, or a CSV (see reference/README.md)',
    )
    p.add_argument("--out", type=Path, default=Rooted(names.REPRODUCE_DIR), help="where <agent>.md/.csv go")
    add_root(p)
    p.add_argument(
        "--tolerance", type=float, help="rate references: allowed |ours - reference| (default 0.05)"
    )
    p.add_argument(
        "--cutoff",
        type=_day,
        help="the model's training cutoff (YYYY-MM-DD): its rate on tasks merged before and after it "
        "(default: the agent's cutoff: in the config, if any)",
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("leaderboard", help="the published leaderboard's rows and their configurations")
    add_root(p)
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"generate {names.LEADERBOARD_CONFIGS}/")
    group.add_argument("--check", action="store_true", help="write nothing; exit 1 listing files that differ")
    p.set_defaults(func=cmd_leaderboard)
