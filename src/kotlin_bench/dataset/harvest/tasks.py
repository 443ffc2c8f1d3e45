"""A harvested pull request as a task of the dataset specification: its base variants (newest first), its
test command, its entry, and a one-task dataset to generate and materialize it from.
"""

from __future__ import annotations

import copy
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kotlin_bench.dataset.dates import api_dates
from kotlin_bench.dataset.harvest.records import Screened
from kotlin_bench.dataset.pulls import task_id_for
from kotlin_bench.dataset.spec import INIT_SCRIPTS, Base, Dataset, SpecError, ValidationMark, parse_dataset

INIT_SCRIPT_OPTION = re.compile(r"\s+--init-script\s+/home/exclude-flaky-tests\.gradle(?:\.kts)?")


def variants(dataset: Dataset, repository: str) -> list[Base]:
    """The repository's base variants, the newest first: the highest JDK, then the tag."""
    own = [b for b in dataset.bases if b.repository is not None and b.repository.name == repository]
    if not own:
        raise SpecError(
            f"{dataset.path}: no base image clones {repository}: add one to `bases` to harvest it"
        )
    return sorted(own, key=lambda b: (-(b.jdk or 0), b.tag))


def variant(dataset: Dataset, repository: str, tag: str) -> Base:
    for base in variants(dataset, repository):
        if base.tag == tag:
            return base
    raise SpecError(f"{dataset.path}: {repository} has no base variant {tag!r}")


def test_command(dataset: Dataset, repository: str, configured: Mapping[str, str] | None = None) -> str:
    """The test command of the repository's new tasks: the config's (`harvest.test_commands`), else the one
    its tasks in the specification share (without their flaky-test init script), else the commonest."""
    if configured and repository in configured:
        return configured[repository]
    commands = Counter(
        INIT_SCRIPT_OPTION.sub("", t.test_command) for t in dataset.tasks if t.repository.name == repository
    )
    if not commands:
        raise SpecError(
            f"{dataset.path}: {repository} has no task to take a test command from; "
            f"set harvest.test_commands.{repository} in the config"
        )
    return commands.most_common(1)[0][0]


def init_script_kind(dataset: Dataset, repository: str, command: str) -> str:
    """The kind of flaky-test init script the repository's tasks use (kts unless they say groovy)."""
    kinds = [t.flaky_init_script_kind for t in dataset.tasks if t.repository.name == repository]
    found = [k for k in kinds if k]
    return found[0] if found else ("groovy" if re.search(r"(?:^|\s)gradle\s", command) else "kts")


def entry(
    screened: Screened,
    base: Base,
    command: str,
    *,
    counts: Mapping[str, int] | None = None,
    flaky_excludes: Sequence[str] = (),
    init_kind: str | None = None,
    mark: ValidationMark = ValidationMark.PENDING,
) -> dict[str, Any]:
    """The task's entry in a dataset specification (dates from the API's records)."""
    owner, repo = screened.repository.split("/", 1)
    if flaky_excludes and init_kind is None:
        raise ValueError("flaky_excludes need an init script kind")
    kind = init_kind if flaky_excludes else None
    return {
        "id": task_id_for(owner, repo, screened.number),
        "repository": screened.repository,
        "pr": screened.number,
        "issues": list(screened.issues),
        "base_commit": screened.base,
        "base_image": base.image,
        "test_command": f"{command} --init-script /home/{INIT_SCRIPTS[kind]}" if kind else command,
        "flaky_test_excludes": list(flaky_excludes),
        "flaky_init_script_kind": kind,
        "expected_counts": dict(counts) if counts is not None else None,
        "published_sha256": None,
        "fix_files": list(screened.fix_files),
        "test_files": list(screened.test_files),
        "validation": str(mark),
        **_dates(screened),
    }


def _dates(screened: Screened) -> dict[str, Any]:
    """The entry's dates with their sources: the API's records the harvest read."""
    first = screened.issues[0] if screened.issues else None
    return api_dates(
        screened.repository, screened.number, screened.merged_at, first, screened.issue_opened_at
    )


def read_spec(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SpecError(f"{path}: cannot read the dataset specification: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: expected a JSON object")
    return data


def spec_of(
    source: Mapping[str, Any], repository: str, name: str, entries: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A dataset specification of `entries` alone, with what they need of the `source` specification (its
    defaults and conventions, the repository and its bases)."""
    data = copy.deepcopy(dict(source))
    data["name"] = name
    data["repositories"] = {repository: data["repositories"][repository]}
    data["bases"] = [b for b in data["bases"] if b.get("repository") == repository]
    data["tasks"] = [dict(e) for e in entries]
    data.pop("fidelity", None)
    return data


def one_task(source: Mapping[str, Any], path: Path, repository: str, task: Mapping[str, Any]) -> Dataset:
    """The one-task dataset a candidate's try is generated and materialized from."""
    return parse_dataset(spec_of(source, repository, f"harvest-{repository.replace('/', '-')}", [task]), path)
