"""`kotlin-bench ...`: generate, materialize and check the dataset; build the base images.

Subcommands:

- ``generate``: write task directories (and base recipes + manifest) from a dataset specification;
  ``--check`` writes nothing and exits 1 listing every file that differs from what would be written.
- ``materialize``: put the upstream-authored files into task directories (``--source published|upstream``).
- ``validate``: the specification, every task directory, counts and licenses per repository, and the
  manifest (every task's FROM names an entry, every entry has a recipe).
- ``status``: per task, whether it is materialized and whether its files match the published digests.
- ``plan``: what would be built, in order: base images, then task images.
- ``fidelity``: compare the task directories and base recipes with the published benchmark, by meaning;
  exit 1 on a behaviour-changing difference the specification does not list as intended.
- ``build-bases``: build the manifest's base images (``scripts/build_bases.sh``).
- ``add-task``: add a pull request as a task, valid only once its validation passes (``kotlin_bench.add_task``).
- ``reproduce``: compare one agent of a finished ``summary.csv`` with a reference (``leaderboard:<row>``,
  ``oracle``, ``nop`` or a CSV), without Docker; prints the verdict and writes what the DAG writes.
- ``leaderboard``: the published leaderboard's rows and their Harbor configurations (``--write`` generates
  ``config/leaderboard/``, ``--check`` lists drift).

Paths are relative to the working directory, which is expected to be the repository root.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from kotlin_bench import add_task, names
from kotlin_bench.dataset import Dataset, SpecError, ValidationMark, generate, load_dataset
from kotlin_bench.fsutil import write_atomic
from kotlin_bench.materialize import (
    PUBLISHED_COMMIT,
    PUBLISHED_TASKS_SUBDIR,
    PUBLISHED_URL,
    MaterializeError,
    MirrorSources,
    PublishedSource,
    TaskResult,
    UpstreamSource,
    build_mirrors,
    default_cache_dir,
    materialize,
    source_from_config,
    task_status,
)
from kotlin_bench.record import errored_results

DEFAULT_SPEC = Path(names.BENCHMARK_SPEC)
DEFAULT_TASKS = Path("tasks")
DEFAULT_MANIFEST = Path("bases/manifest")


def _out(text: str = "") -> None:
    print(text, flush=True)


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [list(map(str, header)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# generate


def cmd_generate(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.spec)
    bases_out = None if args.no_bases else (args.bases_out or args.out.parent / "bases")
    extra: dict[str, Any] = {}
    if args.verifier_dir:
        extra["verifier_dir"] = args.verifier_dir
    report = generate(dataset, args.out, bases_out=bases_out, repo_root=args.root, check=args.check, **extra)
    for stray in report.strays:
        _err(f"warning: {stray} is not a task of {args.spec} (left alone)")
    if args.check:
        for path in report.differing:
            _out(f"differs: {path}")
        if report.differing:
            _err(f"{len(report.differing)} generated file(s) differ; run `kotlin-bench generate`")
            return 1
        _out(f"up to date: {len(report.unchanged)} generated files for {len(dataset.tasks)} tasks")
        return 0
    for path in report.written:
        _out(f"wrote   {path}")
    for path in report.removed:
        _out(f"removed {path}")
    _out(
        f"{len(dataset.tasks)} tasks: {len(report.written)} written, {len(report.removed)} removed, "
        f"{len(report.unchanged)} unchanged"
    )
    return 0


# --------------------------------------------------------------------------------------------------
# materialize


def _config_section(path: Path | None) -> dict[str, Any]:
    """The optional `materialize:` mapping of a YAML config file."""
    if path is None:
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    section = data.get("materialize", {}) if isinstance(data, dict) else {}
    if not isinstance(section, dict):
        raise SpecError(f"{path}: materialize: expected a mapping")
    return section


def _source(args: argparse.Namespace) -> PublishedSource | UpstreamSource:
    """Command-line options over the `materialize:` mapping of `--config`."""
    conf = dict(_config_section(args.config))
    published = dict(conf.get("published") or {})
    upstream = dict(conf.get("upstream") or {})
    overrides = {
        "location": args.published,
        "commit": args.published_commit,
        "tasks_subdir": args.published_subdir,
    }
    published.update({k: v for k, v in overrides.items() if v})
    mirrors = {str(k): str(v) for k, v in (upstream.get("mirrors") or {}).items()}
    for item in args.mirror:
        name, sep, location = item.partition("=")
        if not sep or not name or not location:
            raise SpecError(f"--mirror {item!r}: expected <owner>/<repo>=<path or URL>")
        mirrors[name] = location
    upstream["mirrors"] = mirrors
    for key in ("issues_cache", "expected_tests_dir", "instructions_dir"):
        if getattr(args, key):
            upstream[key] = getattr(args, key)
    upstream["offline"] = args.offline or bool(upstream.get("offline", False))
    conf.update(published=published, upstream=upstream)
    if args.cache_dir:
        conf["cache_dir"] = args.cache_dir
    return source_from_config(conf, args.source)


def _describe(result: TaskResult) -> str:
    if not result.ok:
        return "FAILED"
    verified = {True: "verified", False: "differs from published", None: "unverified"}[result.verified]
    expected = "" if result.expected_tests else ", no expected tests"
    return f"ok ({result.source}, {verified}{expected})"


def _build_mirrors(args: argparse.Namespace, dataset: Dataset, source: UpstreamSource) -> UpstreamSource:
    """Upstream mirrors the config builds from committed sources, built as the DAG builds them."""
    sources = MirrorSources.from_config(_config_section(args.config).get("upstream") or {})
    repositories = {t.repository.name: t.repository for t in dataset.select(args.tasks or None)}
    return build_mirrors(source, sources, repositories.values(), args.root)


def cmd_materialize(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.spec)
    source = _source(args)
    if isinstance(source, UpstreamSource):
        source = _build_mirrors(args, dataset, source)
    results = materialize(dataset, args.tasks_dir, source, only=args.tasks or None)
    for result in results:
        _out(f"{result.task_id}: {_describe(result)}")
        for note in result.notes:
            _out(f"  note: {note}")
        for problem in result.problems:
            _err(f"  error: {problem}")
    failed = [r.task_id for r in results if not r.ok]
    unverified = [r.task_id for r in results if r.ok and r.verified is None]
    lacking = [r.task_id for r in results if r.ok and not r.expected_tests]
    _out(
        f"{len(results) - len(failed)}/{len(results)} materialized; {len(failed)} failed; "
        f"{len(unverified)} unverified; {len(lacking)} without expected tests"
    )
    if unverified:
        _out(f"unverified (no published digests): {' '.join(unverified)}")
    if lacking:
        _out(f"lacking expected tests (cannot be run): {' '.join(lacking)}")
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------------
# validate, status, plan


def _load_task_dir(path: Path, materialized: bool) -> str | None:
    """Validate one task directory; returns an error message or None."""
    try:
        from kotlin_bench.tasks import TaskError, load_task
    except ImportError:  # pragma: no cover - the task model is part of the package
        return None if (path / "task.toml").is_file() else f"{path}/task.toml: missing file"
    try:
        load_task(path, require_materialized=materialized)
    except TaskError as exc:
        return str(exc)
    return None


def _manifest_problems(dataset: Dataset, tasks_dir: Path, manifest: Path, root: Path) -> list[str]:
    from kotlin_bench.images import ImageError, dockerfile_parents, parse_manifest

    problems: list[str] = []
    try:
        entries = parse_manifest(manifest)
    except (OSError, ImageError) as exc:
        return [f"{manifest}: {exc}"]
    images = {e.image for e in entries}
    for entry in entries:
        if entry.is_debootstrap:
            continue
        recipe = root / entry.recipe
        if not recipe.is_file():
            problems.append(f"{manifest}:{entry.line}: recipe {entry.recipe} of {entry.image} does not exist")
            continue
        for parent in dockerfile_parents(recipe):
            if names.is_ours(parent) and parent not in images:
                problems.append(f"{recipe}: FROM {parent} is not in {manifest}")
    for base in dataset.bases:
        if base.image not in images:
            problems.append(f"{manifest}: the specification's base {base.image} is not listed")
    for task in dataset.tasks:
        dockerfile = tasks_dir / task.id / "environment" / "Dockerfile"
        if not dockerfile.is_file():
            continue
        parents = dockerfile_parents(dockerfile)
        if not parents or parents[0] not in images:
            problems.append(f"{dockerfile}: FROM {parents[0] if parents else '(none)'} is not in {manifest}")
    return problems


def cmd_validate(args: argparse.Namespace) -> int:
    problems: list[str] = []
    dataset = load_dataset(args.spec)
    _out(f"{args.spec}: valid ({len(dataset.tasks)} tasks, {len(dataset.bases)} bases)")
    for task in dataset.tasks:
        if task.validation not in (None, ValidationMark.VALID):
            problems.append(
                f"{task.id}: validation {task.validation}: added by `kotlin-bench add-task`, not valid"
            )
        task_dir = args.tasks_dir / task.id
        if not task_dir.is_dir():
            problems.append(f"{task_dir}: missing task directory (run `kotlin-bench generate`)")
            continue
        error = _load_task_dir(task_dir, args.materialized)
        if error:
            problems.append(error)
    known = {t.id for t in dataset.tasks}
    if args.tasks_dir.is_dir():
        for toml in sorted(args.tasks_dir.glob("*/task.toml")):
            if toml.parent.name not in known:
                problems.append(f"{toml.parent}: not a task of {args.spec}")
    try:
        drift = generate(dataset, args.tasks_dir, bases_out=None, repo_root=args.root, check=True)
        problems += [f"{p}: differs from generation" for p in drift.differing]
    except FileNotFoundError as exc:
        problems.append(str(exc))
    problems += _manifest_problems(dataset, args.tasks_dir, args.manifest, args.root)

    per_repo = Counter(t.repository.name for t in dataset.tasks)
    rows = [(name, dataset.repositories[name].license, n) for name, n in per_repo.most_common()]
    _out(_table([*rows, ("total", "", len(dataset.tasks))], ("repository", "license", "tasks")))
    licenses = Counter(t.license for t in dataset.tasks)
    _out("licenses: " + ", ".join(f"{lic} {n}" for lic, n in licenses.most_common()))
    for problem in problems:
        _err(f"error: {problem}")
    if problems:
        _err(f"{len(problems)} problem(s)")
        return 1
    _out("all task directories and the manifest are valid")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    dataset = load_dataset(args.spec)
    rows = []
    counts: Counter[str] = Counter()
    for task in dataset.select(args.tasks or None):
        status = task_status(task, args.tasks_dir / task.id)
        counts["materialized" if status.materialized else "not materialized"] += 1
        counts[f"verified {status.verified}"] += 1
        detail = ""
        if status.missing:
            detail = "missing " + ", ".join(status.missing)
        elif status.mismatched:
            detail = "differs: " + ", ".join(status.mismatched)
        elif not status.expected_tests:
            detail = "no expected tests"
        rows.append(
            (
                task.id,
                "yes" if status.materialized else "no",
                status.verified,
                status.source or "-",
                task.validation or "-",
                detail,
            )
        )
        if task.validation:
            counts[f"validation {task.validation}"] += 1
    _out(_table(rows, ("task", "materialized", "verified", "source", "validation", "detail")))
    _out(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from kotlin_bench.images import ImageError, order_recipes, parse_manifest

    dataset = load_dataset(args.spec)
    try:
        entries = order_recipes(parse_manifest(args.manifest), args.root)
    except (OSError, ImageError) as exc:
        _err(f"error: {exc}")
        return 1
    tasks = dataset.select(args.tasks or None)
    needed = {t.base_image for t in tasks}
    results = args.results
    _out(f"base images ({args.manifest}), in build order:")
    step = 0
    for entry in entries:
        if args.tasks and entry.image not in needed:
            continue
        step += 1
        built = Path(names.base_sentinel(entry.repo_key, entry.tag, str(results))).is_file()
        users = sum(1 for t in tasks if t.base_image == entry.image)
        state = "built" if built else "to build"
        _out(f"  {step:3d}. {entry.image:50s} {state:9s} {entry.recipe}  ({users} tasks)")
    _out("task images:")
    for task in tasks:
        step += 1
        built = Path(names.task_sentinel(task.id, str(results))).is_file()
        state = "built" if built else "to build"
        _out(f"  {step:3d}. {task.image:50s} {state:9s} FROM {task.base_image}  ({task.id})")
    return 0


def cmd_fidelity(args: argparse.Namespace) -> int:
    """Compare our task directories and base recipes with the published benchmark, by meaning."""
    from kotlin_bench import fidelity

    dataset = load_dataset(args.spec)
    source = PublishedSource(
        location=args.published,
        commit=args.commit,
        tasks_subdir=args.published_subdir or PUBLISHED_TASKS_SUBDIR,
        cache_dir=args.cache_dir or default_cache_dir(),
    )
    only = args.tasks or None
    report = fidelity.check(dataset, args.tasks_dir, args.bases_dir, source, only)
    text = fidelity.render(report, len(dataset.select(only)))
    if args.report:
        write_atomic(args.report, text)
    _out(text)
    return 1 if report.unexplained else 0


def cmd_build_bases(args: argparse.Namespace) -> int:
    from kotlin_bench.images import build_manifest_images
    from kotlin_bench.registry import Registry

    build_manifest_images(
        manifest=args.manifest,
        repo_root=args.root,
        logs_dir=args.logs_dir,
        only=args.only or None,
        rebuild=args.rebuild,
        registry=Registry.from_config({"url": args.registry} if args.registry else None),
    )
    return 0


# --------------------------------------------------------------------------------------------------
# The parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kotlin-bench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, *, tasks_dir: bool = True) -> None:
        p.add_argument("--spec", type=Path, default=DEFAULT_SPEC, help="dataset specification (JSON)")
        if tasks_dir:
            p.add_argument("--tasks-dir", type=Path, default=DEFAULT_TASKS, help="task directories")
        p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")

    p = sub.add_parser("generate", help="write task directories and base recipes from the specification")
    common(p, tasks_dir=False)
    p.add_argument(
        "--out", type=Path, default=DEFAULT_TASKS, help="where task directories go (default: tasks)"
    )
    p.add_argument(
        "--bases-out", type=Path, help="where the manifest and base recipes go (default: <out>/../bases)"
    )
    p.add_argument("--no-bases", action="store_true", help="write no manifest or base recipe")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 listing files that differ")
    p.add_argument("--verifier-dir", type=Path, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("materialize", help="write the upstream-authored files of tasks")
    common(p)
    p.add_argument("--source", choices=("published", "upstream"), required=True)
    p.add_argument("--config", type=Path, help="YAML file whose `materialize:` mapping gives defaults")
    p.add_argument("--cache-dir", type=Path, help="clones and issues cache (default: ~/.cache/kotlin-bench)")
    p.add_argument("--published", help=f"published benchmark: local path or URL (default: {PUBLISHED_URL})")
    p.add_argument(
        "--published-commit", help=f"commit to read ('none': a plain directory; default: {PUBLISHED_COMMIT})"
    )
    p.add_argument(
        "--published-subdir", help=f"directory of the task dirs (default: {PUBLISHED_TASKS_SUBDIR})"
    )
    p.add_argument("--mirror", action="append", default=[], metavar="OWNER/REPO=PATH", help="upstream mirror")
    p.add_argument("--issues-cache", type=Path, help="issue JSON cache (default: <cache-dir>/issues)")
    p.add_argument("--expected-tests-dir", type=Path, help="upstream: <dir>/<id>.json expected test lists")
    p.add_argument("--instructions-dir", type=Path, help="upstream: <dir>/<id>.md instructions")
    p.add_argument("--offline", action="store_true", help="upstream: never call the GitHub API")
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_materialize)

    p = sub.add_parser("validate", help="check the specification, task directories and manifest")
    common(p)
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    p.add_argument("--materialized", action="store_true", help="also require the materialized files")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("status", help="materialization and verification per task")
    common(p)
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("plan", help="the images that would be built, in order")
    common(p)
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    p.add_argument("--results", type=Path, default=Path(names.RESULTS), help="where image sentinels live")
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "fidelity", help="compare the tasks and bases with the published benchmark, by meaning"
    )
    common(p)
    p.add_argument(
        "--published", required=True, help="the published benchmark: a checkout, a git dir or a URL"
    )
    p.add_argument("--commit", help="the published revision to read (default: HEAD of a git repository)")
    p.add_argument(
        "--published-subdir", help=f"directory of its task dirs (default: {PUBLISHED_TASKS_SUBDIR})"
    )
    p.add_argument("--bases-dir", type=Path, default=Path("bases"), help="our base recipes (default: bases)")
    p.add_argument("--cache-dir", type=Path, help="where a URL is cloned (default: ~/.cache/kotlin-bench)")
    p.add_argument("--report", type=Path, help="also write the report (markdown) here")
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_fidelity)

    p = sub.add_parser("build-bases", help="build the base images of a manifest")
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    p.add_argument("--logs-dir", type=Path, default=Path(names.LOGS), help="build logs go under <dir>/base/")
    p.add_argument("--only", action="append", default=[], metavar="REPO_KEY|IMAGE", help="build only these")
    p.add_argument("--rebuild", action="store_true", help="rebuild images that are present")
    p.add_argument(
        "--registry",
        metavar="URL",
        help="push each image built to host[:port][/namespace] (config registry.url)",
    )
    p.set_defaults(func=cmd_build_bases)

    p = sub.add_parser(
        "errors", help="list the runs recorded as errors; --delete lets the next run redo them"
    )
    p.add_argument(
        "--results", type=Path, default=Path(names.RESULTS), help="results directory (default: results)"
    )
    p.add_argument("--delete", action="store_true", help="delete their result.json so snakemake reruns them")
    p.set_defaults(func=cmd_errors)
    add_task.register(sub)

    p = sub.add_parser(
        "reproduce", help="compare one agent of a finished summary.csv with a reference (no Docker)"
    )
    p.add_argument("--summary", type=Path, default=Path(names.SUMMARY_CSV), help="a finished summary.csv")
    p.add_argument("--agent", required=True, help="the agent whose runs are compared")
    p.add_argument(
        "--reference",
        required=True,
        help='"leaderboard:<row>", oracle, nop, or a CSV (see reference/README.md)',
    )
    p.add_argument("--out", type=Path, default=Path(names.REPRODUCE_DIR), help="where <agent>.md/.csv go")
    p.add_argument(
        "--root", type=Path, default=Path("."), help="checkout with reference/ and dataset/ (default: .)"
    )
    p.add_argument(
        "--tolerance", type=float, help="rate references: allowed |ours - reference| (default 0.05)"
    )
    p.set_defaults(func=cmd_reproduce)

    p = sub.add_parser("leaderboard", help="the published leaderboard's rows and their configurations")
    p.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"generate {names.LEADERBOARD_CONFIGS}/")
    group.add_argument("--check", action="store_true", help="write nothing; exit 1 listing files that differ")
    p.set_defaults(func=cmd_leaderboard)
    return parser


def cmd_reproduce(args: argparse.Namespace) -> int:
    """The comparison the aggregate rule makes, for one agent of any finished summary."""
    from kotlin_bench.reproduce import ReproducePlan, merge_verdicts, reproduce_agent
    from kotlin_bench.summary import read_summary

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
    verdict = reproduce_agent(args.agent, spec, summary, csv_path, md_path, plan.tolerance, args.root)
    merge_verdicts([verdict], args.out / Path(names.VERDICTS_JSON).name)
    _out(md_path.read_text(encoding="utf-8"))
    _out(verdict.line)
    _out(f"wrote {md_path}, {csv_path} and {args.out / Path(names.VERDICTS_JSON).name}")
    return 0


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from kotlin_bench import leaderboard

    rows = leaderboard.load_rows(args.root / names.LEADERBOARD_CSV)
    if args.write or args.check:
        differing = leaderboard.write_configs(rows, args.root, check=args.check)
        for path in differing:
            _out(f"{'differs' if args.check else 'wrote  '}: {path}")
        if args.check and differing:
            _err(f"{len(differing)} configuration file(s) differ; run `kotlin-bench leaderboard --write`")
            return 1
        _out(
            f"{len(leaderboard.planned_configs(rows, args.root))} files up to date"
            if not differing
            else "done"
        )
        return 0
    table = []
    for row in rows:
        setup = leaderboard.harbor_setup(row)
        how = setup.config_path if setup else f"not runnable: {leaderboard.NOT_RUNNABLE[row.setup]}"
        table.append(
            (row.setup, f"{row.resolved}/{row.submitted}", f"{row.rate:.2f}%", row.tokens_m, row.latency, how)
        )
    _out(_table(table, ("setup", "resolved", "rate", "tokens (M)", "wall time", "configuration")))
    return 0


def cmd_errors(args: argparse.Namespace) -> int:
    """Errored runs are results (status `error`); deleting them makes exactly those runs missing, and the
    next `snakemake` invocation reruns them and nothing else."""
    found = errored_results(args.results)
    for path, result in found:
        _out(f"{path}: {result.reason}: {result.error}")
    if args.delete:
        for path, _ in found:
            path.unlink()
    verb = "deleted" if args.delete else "found"
    _out(
        f"{len(found)} errored run(s) {verb}"
        + ("; now run snakemake to redo them" if args.delete and found else "")
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into a pager or `head` that closed early
        sys.stderr.close()
        return 0
    except (SpecError, MaterializeError, FileNotFoundError, FileExistsError, KeyError, ValueError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        _err(f"error: {message}")
        return 2
