"""`kotlin-bench add-task OWNER/REPO#PR`: add a pull request to a dataset specification as a new task, and
mark it valid only once its three-phase validation passes.

Steps, each named in errors (`<task>: <step>: ...`):

1. `source`: the pull request in the upstream repository of the config's `materialize.upstream`
   (a mirror, one built from committed sources, or the clone URL; `refs/pull/<N>/head`), and its record
   from the GitHub REST API (`GET /repos/{owner}/{repo}/pulls/{n}`, read through
   `kotlin_bench.dataset.github`; cached as
   `<issues cache>/<owner>/<repo>/pulls/<n>.json`, which is how the offline examples supply it):
   - the issues it resolves: the closing keywords of its body (`Fixes #5`, as GitHub reads them), or
     `--issue`;
   - the base commit: the record's `base.sha` when the repository has it, else the merge base of the
     head and the default branch (the head's parent when the pull request is already on that branch);
   - the diff `base...head` split by the repository's `test_paths` into test and fix files; both must
     be there;
   - the task's dates (`kotlin_bench.dataset.dates`): the record's `merged_at` and the `created_at` of
     the first issue it resolves, each with that record as its source.
2. `spec`: the task goes into the specification (`validation: pending`; the base image and the test
   command of the repository's other tasks unless `--base-image`/`--test-command`) and its directory is
   generated (`kotlin_bench.dataset.generate.generate`).
3. `validation`: the workflow's own target `results/validation/<task>/validation.json` (mirror,
   materialization with instruction.md from the issues, task image, run/test/fix and the config's fix
   repetitions, verdict; `kotlin_bench.validation.derive`) in a `snakemake` subprocess.
4. the mark: `valid` when the verdict is valid (the oracle resolves, nop does not, ...) and the task has at
   least one f2p test, else `invalid`. Only with `--write-expected`, and only for a valid task, are the
   derived lists written to `<expected_tests_dir>/<task>.json`, `expected_counts` into the specification,
   and the task materialized again so that its directory holds them.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from kotlin_bench.core import names
from kotlin_bench.core.render import error_line
from kotlin_bench.dataset.dates import api_dates, utc_time
from kotlin_bench.dataset.generate import generate
from kotlin_bench.dataset.globs import split_paths
from kotlin_bench.dataset.materialize import (
    MaterializeError,
    MirrorSources,
    UpstreamSource,
    build_mirrors,
    changed_files,
    fetch_pull,
    fetch_repository_issue,
    materialize,
    open_repository,
    pull_request_head,
    source_from_config,
)
from kotlin_bench.dataset.pulls import base_commit, closing_issues, task_id_for
from kotlin_bench.dataset.spec import (
    Dataset,
    Repository,
    SpecError,
    ValidationMark,
    load_dataset,
    put_task,
    task_entry,
)
from kotlin_bench.tools.root import Rooted, add_root
from kotlin_bench.validation.records import TaskValidation, ValidationError

REF_RE = re.compile(
    r"^(?P<owner>[A-Za-z0-9][A-Za-z0-9_.-]*)/(?P<repo>[A-Za-z0-9][A-Za-z0-9_.-]*)#(?P<pr>[1-9][0-9]*)$"
)


class Step(StrEnum):
    SOURCE = "source"
    SPEC = "spec"
    MATERIALIZE = "materialize"
    BUILD = "build"
    VALIDATION = "validation"


class AddTaskError(RuntimeError):
    """add-task cannot go on; the message names the task and the step."""

    def __init__(self, task_id: str, step: Step, message: str) -> None:
        super().__init__(f"{task_id}: {step}: {message.removeprefix(f'{task_id}: ')}")


@dataclass(frozen=True)
class PullRequest:
    """What the task is made of: the pull request's head, its base commit, issues and split."""

    number: int
    head: str
    base: str
    issues: tuple[int, ...]
    fix_files: tuple[str, ...]
    test_files: tuple[str, ...]
    merged_at: str | None = None  # the record's, in UTC; None: not merged (or not said)


def parse_ref(text: str) -> tuple[str, str, int]:
    """`owner/repo#123` -> ("owner", "repo", 123)."""
    match = REF_RE.match(text.strip())
    if not match:
        raise ValueError(f"{text!r}: expected OWNER/REPO#PR, e.g. examples/calc#6")
    return match["owner"], match["repo"], int(match["pr"])


def read_pull_request(
    task_id: str,
    repository: Repository,
    number: int,
    source: UpstreamSource,
    issues: Sequence[int] = (),
) -> PullRequest:
    """Step `source`: the pull request's head, base commit, issues and test/fix split."""
    try:
        repo = open_repository(task_id, repository, number, source)
    except MaterializeError as exc:
        why = str(exc).removeprefix(f"{task_id}: ")
        raise AddTaskError(task_id, Step.SOURCE, f"pull request #{number} does not exist: {why}") from None
    try:
        record = fetch_pull(task_id, repository, number, source)
    except MaterializeError as exc:
        raise AddTaskError(task_id, Step.SOURCE, str(exc)) from None
    found = list(issues) or closing_issues(str(record.get("body") or ""), repository)
    if not found:
        raise AddTaskError(
            task_id,
            Step.SOURCE,
            f"pull request #{number} names no issue it resolves (no closing keyword such as "
            "'Fixes #12' in its body); name them with --issue",
        )
    head = pull_request_head(repo, number)
    base = base_commit(repo, head, record)
    if base is None:
        raise AddTaskError(task_id, Step.SOURCE, f"no base commit for pull request #{number} (head {head})")
    fix, test = split_paths(changed_files(repo, base, head), repository.test_paths)
    span = f"{base[:12]}...{head[:12]}"
    if not test:
        raise AddTaskError(
            task_id,
            Step.SOURCE,
            f"the diff {span} has no test file: none of {fix} matches the test_paths "
            f"{list(repository.test_paths)}, so there would be no test.patch",
        )
    if not fix:
        raise AddTaskError(
            task_id, Step.SOURCE, f"the diff {span} changes test files only ({test}): there is no fix"
        )
    merged = utc_time(record.get("merged_at"))
    return PullRequest(number, head, base, tuple(found), tuple(fix), tuple(test), merged)


def task_dates(
    task_id: str, repository: Repository, pull: PullRequest, source: UpstreamSource
) -> dict[str, Any]:
    """Step `source`: the task's dates (`kotlin_bench.dataset.dates`), from the records of its pull request
    and of the first issue it resolves."""
    first = pull.issues[0]
    try:
        opened = utc_time(fetch_repository_issue(task_id, repository, first, source).get("created_at"))
    except MaterializeError as exc:
        raise AddTaskError(task_id, Step.SOURCE, str(exc)) from None
    return api_dates(repository.name, pull.number, pull.merged_at, first, opened)


def _only(values: set[str], what: str, task_id: str, option: str) -> str:
    if len(values) != 1:
        listed = ", ".join(sorted(values)) or "none"
        raise AddTaskError(task_id, Step.SPEC, f"cannot tell the {what} ({listed}); give {option}")
    return values.pop()


def new_entry(
    dataset: Dataset,
    task_id: str,
    repository: Repository,
    pull: PullRequest,
    *,
    base_image: str | None,
    test_command: str | None,
    releases: Releases,
) -> dict[str, Any]:
    """The task's entry in the specification, `validation: pending`; the release facts only where given."""
    siblings = [t for t in dataset.tasks if t.repository.name == repository.name and t.id != task_id]
    bases = {
        b.image for b in dataset.bases if b.repository is not None and b.repository.name == repository.name
    }
    return {
        "id": task_id,
        "repository": repository.name,
        "pr": pull.number,
        "issues": list(pull.issues),
        "base_commit": pull.base,
        **releases.entry(),
        "base_image": base_image or _only(bases, "base image", task_id, "--base-image"),
        "test_command": test_command
        or _only({t.test_command for t in siblings}, "test command", task_id, "--test-command"),
        "flaky_test_excludes": [],
        "flaky_init_script_kind": None,
        "expected_counts": None,
        "published_sha256": None,
        "fix_files": list(pull.fix_files),
        "test_files": list(pull.test_files),
        "validation": str(ValidationMark.PENDING),
    }


# --------------------------------------------------------------------------------------------------
# The command


@dataclass(frozen=True)
class Releases:
    """The release facts the retrieval flags need (docs/dataset.md), as given on the command line: they
    are read from the upstream repository, not from its pull request, so add-task does not guess them."""

    base_version: str | None = None
    fix_release: str | None = None

    def entry(self) -> dict[str, str]:
        given = {"base_version": self.base_version, "fix_release": self.fix_release}
        return {k: v for k, v in given.items() if v is not None}


@dataclass(frozen=True)
class Options:
    ref: str
    spec: Path
    tasks_dir: Path
    config: Path
    root: Path = Path(".")  # the workflow directory; the paths above are relative to it
    issues: tuple[int, ...] = ()
    base_image: str | None = None
    test_command: str | None = None
    releases: Releases = Releases()
    write_expected: bool = False
    cores: int = 2


def _config(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: cannot read the config: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a mapping")
    return data


def upstream_source(config: dict[str, Any], config_path: Path, repository: Repository) -> UpstreamSource:
    """The config's `materialize.upstream` source, with the repository's mirror where the config builds
    it from committed sources (as the DAG does)."""
    conf = dict(config.get("materialize") or {})
    if conf.get("source") != "upstream":
        raise SpecError(
            f"{config_path}: materialize.source must be `upstream`: a new task has no published files"
        )
    source = source_from_config(conf, "upstream")
    assert isinstance(source, UpstreamSource)
    return build_mirrors(
        source, MirrorSources.from_config(conf.get("upstream") or {}), [repository], Path(".")
    )


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path.resolve())


def _snakemake(options: Options, task_id: str, *targets: str, select: bool = True) -> int:
    """The workflow, for `targets`, in the given config (with only the task selected)."""
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        *targets,
        "--cores",
        str(options.cores),
        "--configfile",
        _relative(options.config, options.root),
        "--replace-workflow-config",  # the given config alone (not on top of the bundled config.yaml)
        "--config",
        f"spec={_relative(options.spec, options.root)}",
        f"tasks_dir={_relative(options.tasks_dir, options.root)}",
        *([f"tasks=[{task_id}]", "exclude=[]"] if select else []),
    ]
    print(f"{task_id}: snakemake {' '.join(cmd[3:])}", flush=True)
    return subprocess.run(cmd, cwd=options.root).returncode


def _refresh_mirror(options: Options, task_id: str, repository: Repository, built: bool) -> None:
    """A mirror the workflow builds from committed sources is brought up to date by the workflow
    (a pull request added to the sources since it was built is then in it)."""
    if not built:
        return
    target = names.mirror_dir(repository.owner, repository.repo)
    if _snakemake(options, task_id, target, select=False) != 0:  # (the task is not there yet)
        raise AddTaskError(
            task_id, Step.SOURCE, f"building the mirror {target} failed; see {names.LOGS}/upstream/"
        )


def _validate_in_dag(options: Options, task_id: str) -> None:
    """Step `validation`: the workflow's target for the task's verdict."""
    code = _snakemake(options, task_id, names.validation_verdict(task_id))
    if code == 0:
        return
    root = options.root
    if not (root / names.stamp(_relative(options.tasks_dir, root), task_id)).is_file():
        raise AddTaskError(task_id, Step.MATERIALIZE, f"see {names.log('materialize', task_id)}")
    if not (root / names.task_sentinel(task_id)).is_file():
        raise AddTaskError(
            task_id, Step.BUILD, f"the task image did not build; see {names.log('images', 'task', task_id)}"
        )
    raise AddTaskError(
        task_id, Step.VALIDATION, f"the workflow failed (exit {code}); see {names.LOGS}/validation/{task_id}/"
    )


def _verdict(task_id: str) -> TaskValidation:
    try:
        return TaskValidation.read(Path(names.validation_verdict(task_id)))
    except ValidationError as exc:
        raise AddTaskError(task_id, Step.VALIDATION, str(exc)) from None


def acceptance_problems(verdict: TaskValidation) -> list[str]:
    """Why a validated task is not accepted as new (empty: it is)."""
    problems = list(verdict.reasons)
    if verdict.valid and not verdict.counts.get("f2p"):
        problems.append(
            "validation: no f2p test: a new task needs a test that fails before the fix and passes with it"
        )
    return problems


def _write_expected(options: Options, task_id: str, source: UpstreamSource, verdict: TaskValidation) -> Path:
    """The derived lists into the config's expected_tests_dir, then the task materialized again."""
    expected_dir = source.expected_tests_dir
    if expected_dir is None:
        raise AddTaskError(
            task_id,
            Step.MATERIALIZE,
            f"--write-expected needs materialize.upstream.expected_tests_dir in {options.config}",
        )
    target = expected_dir / f"{task_id}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(names.derived_expected(task_id), target)
    entry = task_entry(options.spec, task_id) or {}
    dataset = put_task(options.spec, entry | {"expected_counts": dict(verdict.counts)})
    [result] = materialize(dataset, options.tasks_dir, source, only=[task_id])
    if not result.ok:
        raise AddTaskError(task_id, Step.MATERIALIZE, "; ".join(result.problems))
    return target


def add_task(options: Options) -> tuple[str, list[str]]:
    """Add (or re-validate) the task of `options.ref`; returns its id and why it is not valid (empty: valid)."""
    owner, repo, number = parse_ref(options.ref)
    task_id = task_id_for(owner, repo, number)
    dataset = load_dataset(options.spec)
    repository = dataset.repositories.get(f"{owner}/{repo}")
    if repository is None:
        raise AddTaskError(
            task_id,
            Step.SPEC,
            f"{owner}/{repo} is not a repository of {options.spec}; add it to `repositories` first "
            "(license, url, clone_url, repo_dir, test_paths) and a base image for it to `bases`",
        )
    existing = task_entry(options.spec, task_id)
    if existing is not None and "validation" not in existing:
        raise AddTaskError(task_id, Step.SPEC, f"already a task of {options.spec}, not one add-task added")
    config = _config(options.config)
    builds_mirror = MirrorSources.from_config((config.get("materialize") or {}).get("upstream") or {})
    _refresh_mirror(
        options,
        task_id,
        repository,
        builds_mirror is not None
        and repository.name
        not in (((config.get("materialize") or {}).get("upstream") or {}).get("mirrors") or {}),
    )
    source = upstream_source(config, options.config, repository)
    pull = read_pull_request(task_id, repository, number, source, options.issues)
    entry = new_entry(
        dataset,
        task_id,
        repository,
        pull,
        base_image=options.base_image,
        test_command=options.test_command,
        releases=options.releases,
    ) | task_dates(task_id, repository, pull, source)
    try:
        dataset = put_task(options.spec, entry)
    except SpecError as exc:
        raise AddTaskError(task_id, Step.SPEC, str(exc)) from None
    generate(dataset, options.tasks_dir, bases_out=None, repo_root=Path("."))
    print(
        f"{task_id}: added to {options.spec} (base {pull.base[:12]}, head {pull.head[:12]}, issues "
        f"{', '.join(f'#{n}' for n in pull.issues)}; {len(pull.fix_files)} fix and {len(pull.test_files)} test "
        "files); validation pending",
        flush=True,
    )
    try:
        _validate_in_dag(options, task_id)
    except AddTaskError:
        put_task(options.spec, entry | {"validation": str(ValidationMark.INVALID)})
        raise
    verdict = _verdict(task_id)
    problems = acceptance_problems(verdict)
    mark = ValidationMark.INVALID if problems else ValidationMark.VALID
    put_task(options.spec, entry | {"validation": str(mark)})
    if not problems and options.write_expected:
        written = _write_expected(options, task_id, source, verdict)
        print(f"{task_id}: wrote the derived lists to {written}", flush=True)
    return task_id, problems


def cmd_add_task(args: argparse.Namespace) -> int:
    """Runs in the workflow directory (its config's relative paths are relative to it), with the paths
    given on the command line taken from where the command was started."""
    with contextlib.chdir(args.root):
        return _add_task_command(
            args, Path(args.spec).resolve(), Path(args.tasks_dir).resolve(), Path(args.config).resolve()
        )


def _add_task_command(args: argparse.Namespace, spec: Path, tasks_dir: Path, config: Path) -> int:
    options = Options(
        ref=args.ref,
        spec=spec,
        tasks_dir=tasks_dir,
        config=config,
        issues=tuple(args.issue),
        base_image=args.base_image,
        test_command=args.test_command,
        releases=Releases(args.base_version, args.fix_release),
        write_expected=args.write_expected,
        cores=args.cores,
    )
    try:
        task_id, problems = add_task(options)
    except AddTaskError as exc:
        print(error_line(str(exc)), file=sys.stderr, flush=True)
        return 1
    verdict = _verdict(task_id)
    counts = ", ".join(f"{cat} {n}" for cat, n in verdict.counts.items())
    flaky = (
        f"; {len(verdict.flaky)} flaky test(s) left out: {', '.join(verdict.flaky)}" if verdict.flaky else ""
    )
    if problems:
        print(f"{task_id}: INVALID ({counts}{flaky}); marked invalid in {options.spec}:", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print(f"{task_id}: valid ({counts}{flaky}); marked valid in {options.spec}")
    if not options.write_expected:
        print(f"  derived lists: {names.derived_expected(task_id)} (written only with --write-expected)")
    return 0


def register(sub: Any) -> None:
    """The `add-task` subcommand of `kotlin-bench`."""
    p = sub.add_parser("add-task", help="add a pull request as a task; valid only once its validation passes")
    p.add_argument("ref", metavar="OWNER/REPO#PR", help="the pull request, e.g. examples/calc#6")
    p.add_argument("--spec", type=Path, default=Rooted(names.BENCHMARK_SPEC), help="dataset specification")
    p.add_argument("--tasks-dir", type=Path, default=Rooted("tasks"), help="task directories")
    p.add_argument(
        "--config", type=Path, default=Rooted("config.yaml"), help="workflow config (materialize, validation)"
    )
    add_root(p)
    p.add_argument(
        "--issue", type=int, action="append", default=[], help="issue it resolves (default: from its body)"
    )
    p.add_argument("--base-image", help="base image (default: the repository's only one)")
    p.add_argument("--test-command", help="test command (default: that of the repository's other tasks)")
    p.add_argument(
        "--base-version", help="the version the build declares at the base commit (for the retrieval flags)"
    )
    p.add_argument("--fix-release", help="the first release that contains the fix (for the retrieval flags)")
    p.add_argument(
        "--write-expected", action="store_true", help="write the derived expected lists of a valid task"
    )
    p.add_argument("--cores", type=int, default=2, help="for the validation workflow (default: 2)")
    p.set_defaults(func=cmd_add_task)
