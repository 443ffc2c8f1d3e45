"""The dataset's commands: generate, materialize, lint, status, plan, fidelity, build-bases."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dataset.generate import generate
from kotlin_bench.dataset.materialize import (
    PUBLISHED_COMMIT,
    PUBLISHED_TASKS_SUBDIR,
    PUBLISHED_URL,
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
from kotlin_bench.dataset.spec import Dataset, SpecError, ValidationMark, load_dataset
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.tools.cli.text import deprecated, err, out, report_error, table
from kotlin_bench.tools.root import Rooted, add_root, from_config, selection

DEFAULT_SPEC = Rooted(names.BENCHMARK_SPEC)
DEFAULT_TASKS = Rooted("tasks")
DEFAULT_MANIFEST = Rooted("bases/manifest")
CONFIG_DEFAULTS = {"spec": names.BENCHMARK_SPEC, "tasks_dir": "tasks", "manifest": "bases/manifest"}


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
        err(f"warning: {stray} is not a task of {args.spec} (left alone)")
    if args.check:
        for path in report.differing:
            out(f"differs: {path}")
        if report.differing:
            err(f"{len(report.differing)} generated file(s) differ; run `kotlin-bench generate`")
            return 1
        out(f"up to date: {len(report.unchanged)} generated files for {len(dataset.tasks)} tasks")
        return 0
    for path in report.written:
        out(f"wrote   {path}")
    for path in report.removed:
        out(f"removed {path}")
    out(
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
        out(f"{result.task_id}: {_describe(result)}")
        for note in result.notes:
            out(f"  note: {note}")
        for problem in result.problems:
            err(f"  error: {problem}")
    failed = [r.task_id for r in results if not r.ok]
    unverified = [r.task_id for r in results if r.ok and r.verified is None]
    lacking = [r.task_id for r in results if r.ok and not r.expected_tests]
    out(
        f"{len(results) - len(failed)}/{len(results)} materialized; {len(failed)} failed; "
        f"{len(unverified)} unverified; {len(lacking)} without expected tests"
    )
    if unverified:
        out(f"unverified (no published digests): {' '.join(unverified)}")
    if lacking:
        out(f"lacking expected tests (cannot be run): {' '.join(lacking)}")
    return 1 if failed else 0


# --------------------------------------------------------------------------------------------------
# lint, status, plan


def _load_task_dir(path: Path, materialized: bool) -> str | None:
    """Validate one task directory; returns an error message or None."""
    try:
        load_task(path, require_materialized=materialized)
    except TaskError as exc:
        return str(exc)
    return None


def _manifest_problems(dataset: Dataset, tasks_dir: Path, manifest: Path, root: Path) -> list[str]:
    from kotlin_bench.engine.images import ImageError, dockerfile_parents, parse_manifest

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


def cmd_lint(args: argparse.Namespace) -> int:
    problems: list[str] = []
    dataset = load_dataset(args.spec)
    out(f"{args.spec}: valid ({len(dataset.tasks)} tasks, {len(dataset.bases)} bases)")
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
    out(table([*rows, ("total", "", len(dataset.tasks))], ("repository", "license", "tasks")))
    licenses = Counter(t.license for t in dataset.tasks)
    out("licenses: " + ", ".join(f"{lic} {n}" for lic, n in licenses.most_common()))
    for problem in problems:
        report_error(problem)
    if problems:
        err(f"{len(problems)} problem(s)")
        return 1
    out("all task directories and the manifest are valid")
    return 0


DIGESTS = {"yes": "match", "no": "differ", "unknown": "none"}
STATUS_LEGEND = (
    "materialized: the upstream-authored files (fix.patch, test.patch, instruction.md, expected_tests.json) "
    "are in the task directory; published digests: those files against the digests the dataset records "
    "(none: the dataset records none, as for the examples); validation: the task validation's verdict"
)


def cmd_status(args: argparse.Namespace) -> int:
    """The dataset's tasks (materialized, published digests, validation), then the runs per agent."""
    from kotlin_bench.results.status import HEADER, LEGEND, agent_runs

    config = from_config(args, CONFIG_DEFAULTS)
    dataset = load_dataset(args.spec)
    rows = []
    counts: Counter[str] = Counter()
    if config:
        out(f"config {args.config}: {args.spec}, {args.tasks_dir}")
    selected = dataset.select(selection(config, args.tasks, args.spec))
    for task in selected:
        status = task_status(task, args.tasks_dir / task.id)
        counts["materialized" if status.materialized else "not materialized"] += 1
        counts[f"published digests {DIGESTS[status.verified]}"] += 1
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
                DIGESTS[status.verified],
                status.source or "-",
                task.validation or "-",
                detail,
            )
        )
        if task.validation:
            counts[f"validation {task.validation}"] += 1
    out(table(rows, ("task", "materialized", "published digests", "source", "validation", "detail")))
    out(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    out(f"legend: {STATUS_LEGEND}")
    agents = [str(a.get("name")) for a in config.get("agents") or [] if isinstance(a, dict)]
    if agents:
        attempts = int(config.get("attempts") or 1)
        found = agent_runs(args.root, agents, [t.id for t in selected], attempts)
        out("")
        out(f"runs ({names.runs_root()}, {attempts} attempt(s) per task and agent):")
        out(table([r.row() for r in found], HEADER))
        out(f"legend: {LEGEND}")
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    from kotlin_bench.engine.images import ImageError, order_recipes, parse_manifest
    from kotlin_bench.engine.retention import ImageState, image_state

    config = from_config(args, CONFIG_DEFAULTS)
    dataset = load_dataset(args.spec)
    try:
        entries = order_recipes(parse_manifest(args.manifest), args.root)
    except (OSError, ImageError) as exc:
        report_error(str(exc))
        return 1
    tasks = dataset.select(selection(config, args.tasks, args.spec))
    needed = {t.base_image for t in tasks}
    results = args.results
    out(f"base images ({args.manifest}), in build order:")
    step = 0
    for entry in entries:
        if args.tasks and entry.image not in needed:
            continue
        step += 1
        built = Path(names.base_sentinel(entry.repo_key, entry.tag, str(results))).is_file()
        users = sum(1 for t in tasks if t.base_image == entry.image)
        state = "built" if built else "to build"
        out(f"  {step:3d}. {entry.image:50s} {state:9s} {entry.recipe}  ({users} tasks)")
    out("task images:")
    for task in tasks:
        step += 1
        built = Path(names.task_sentinel(task.id, str(results))).is_file()
        state = "to build"
        if built:  # built, or released by `images: {keep: bases}` (then built again when a job needs it)
            state = "built" if image_state(task.id, str(results)) is ImageState.PRESENT else "released"
        image = names.built_task_image(task.image, args.root)
        out(f"  {step:3d}. {image:50s} {state:9s} FROM {task.base_image}  ({task.id})")
    plan_runs(config, [t.id for t in tasks], results)
    return 0


def plan_runs(config: dict[str, Any], tasks: list[str], results: Path) -> None:
    """Per configured agent: the runs to do and what they are expected to cost (from its finished runs)."""
    from kotlin_bench.results.estimate import estimate

    agents = [a for a in config.get("agents") or [] if isinstance(a, dict) and a.get("name")]
    if not agents:
        return
    out("runs (per agent; expected tokens and dollars from the runs it finished here):")
    for agent in agents:
        out(estimate(results, agent, tasks, int(config.get("attempts") or 1)).line())


def cmd_fidelity(args: argparse.Namespace) -> int:
    """Compare our task directories and base recipes with the published benchmark, by meaning."""
    from kotlin_bench.dataset import fidelity
    from kotlin_bench.engine.network import phase_env
    from kotlin_bench.runs import handoff

    dataset = load_dataset(args.spec)
    source = PublishedSource(
        location=args.published,
        commit=args.commit,
        tasks_subdir=args.published_subdir or PUBLISHED_TASKS_SUBDIR,
        cache_dir=args.cache_dir or default_cache_dir(),
    )
    only = args.tasks or None
    report = fidelity.check(
        dataset,
        args.tasks_dir,
        args.bases_dir,
        source,
        only,
        agent_env=phase_env,
        carries_agent_head=handoff.carries_agent_head(),
    )
    text = fidelity.render(report, len(dataset.select(only)))
    if args.report:
        write_atomic(args.report, text)
    out(text)
    return 1 if report.unexplained else 0


def cmd_build_bases(args: argparse.Namespace) -> int:
    from kotlin_bench.engine.engine import EngineSettings
    from kotlin_bench.engine.images import build_manifest_images
    from kotlin_bench.engine.registry import Registry

    build_manifest_images(
        manifest=args.manifest,
        repo_root=args.root,
        logs_dir=args.logs_dir,
        only=args.only or None,
        rebuild=args.rebuild,
        registry=Registry.from_config({"url": args.registry} if args.registry else None),
        settings=EngineSettings.from_config({"kind": args.engine}),
    )
    return 0


def common(p: argparse.ArgumentParser, *, tasks_dir: bool = True, config: bool = False) -> None:
    """--spec, --tasks-dir and --root; with `config`, the first two default to the config in use."""
    spec_default = None if config else DEFAULT_SPEC
    tasks_default = None if config else DEFAULT_TASKS
    where = " (default: the config's, else %(default)s)" if config else " (default: %(default)s)"
    p.add_argument("--spec", type=Path, default=spec_default, help="dataset specification (JSON)" + where)
    if tasks_dir:
        p.add_argument("--tasks-dir", type=Path, default=tasks_default, help="task directories" + where)
    if config:
        p.add_argument(
            "--config",
            type=Path,
            default=Rooted("config.yaml"),
            help="the workflow config in use (default: config.yaml of the workflow)",
        )
    add_root(p)


def register(sub: Any) -> None:
    """The dataset's subcommands of `kotlin-bench`."""
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

    for name, func, help_text in (
        ("lint", cmd_lint, "check that the specification, task directories and manifest are well-formed"),
        (
            "validate",
            deprecated("validate", "lint", cmd_lint),
            "the old name of `lint` (kept for one release)",
        ),
    ):
        p = sub.add_parser(name, help=help_text)
        common(p)
        p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
        p.add_argument("--materialized", action="store_true", help="also require the materialized files")
        p.set_defaults(func=func)

    p = sub.add_parser(
        "status",
        help="the tasks of the config in use (materialized, digests, validation) and its runs per agent",
    )
    common(p, config=True)
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("plan", help="the images the config in use would build, in order")
    common(p, config=True)
    p.add_argument("--manifest", type=Path, default=None, help="base image manifest (default: the config's)")
    p.add_argument("--results", type=Path, default=Rooted(names.RESULTS), help="where image sentinels live")
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
    p.add_argument(
        "--bases-dir", type=Path, default=Rooted("bases"), help="our base recipes (default: bases)"
    )
    p.add_argument("--cache-dir", type=Path, help="where a URL is cloned (default: ~/.cache/kotlin-bench)")
    p.add_argument("--report", type=Path, help="also write the report (markdown) here")
    p.add_argument("tasks", nargs="*", help="task ids (default: all)")
    p.set_defaults(func=cmd_fidelity)

    p = sub.add_parser("build-bases", help="build the base images of a manifest")
    p.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    add_root(p)
    p.add_argument(
        "--logs-dir", type=Path, default=Rooted(names.LOGS), help="build logs go under <dir>/base/"
    )
    p.add_argument("--only", action="append", default=[], metavar="REPO_KEY|IMAGE", help="build only these")
    p.add_argument("--rebuild", action="store_true", help="rebuild images that are present")
    p.add_argument(
        "--registry",
        metavar="URL",
        help="push each image built to host[:port][/namespace] (config registry.url)",
    )
    p.add_argument(
        "--engine",
        choices=("docker", "podman"),
        default="docker",
        help="the container engine (config engine.kind; Podman's socket as engine.socket's default)",
    )
    p.set_defaults(func=cmd_build_bases)
