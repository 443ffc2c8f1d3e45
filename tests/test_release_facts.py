"""The upstream projects' coordinates and versions in the dataset specification (issue 28): each repository's
coordinate patterns (read and checked), each task's base_version and fix_release, against the shared facts
(../shared/dataset: published_artifacts.json, fix_releases.tsv) and in Maven's version order."""

from __future__ import annotations

import csv
import json
import re
from functools import cmp_to_key
from typing import Any

import pytest

from kotlin_bench.dataset.artifacts import Coordinate, Scope
from kotlin_bench.dataset.spec import SpecError, TaskSpec, load_dataset, parse_dataset
from tests.test_dataset import SHARED, SPEC, small_spec

# --------------------------------------------------------------------------------------------------
# Maven's version order (ComparableVersion of Maven 3.6), as much of it as the recorded versions use

QUALIFIERS = ("alpha", "beta", "milestone", "rc", "snapshot", "", "sp")
ALIASES = {"ga": "", "final": "", "release": "", "cr": "rc"}
Item = tuple[str, Any] | list[Any]


def _text(value: str, followed_by_digit: bool = False) -> Item:
    if followed_by_digit and len(value) == 1:
        value = {"a": "alpha", "b": "beta", "m": "milestone"}.get(value, value)
    return ("s", ALIASES.get(value, value))


def _item(digits: bool, text: str) -> Item:
    return ("i", int(text)) if digits else _text(text)


def _normalize(items: list[Any]) -> None:
    for i in range(len(items) - 1, -1, -1):
        if items[i] in ([], ("i", 0), ("s", "")):
            del items[i]
        elif not isinstance(items[i], list):
            break


def maven_parse(version: str) -> list[Any]:
    version = version.lower()
    root: list[Any] = []
    current, stack, digits, start = root, [root], False, 0

    def sublist() -> list[Any]:
        new: list[Any] = []
        current.append(new)
        stack.append(new)
        return new

    for i, c in enumerate(version):
        if c in ".-":
            current.append(("i", 0) if i == start else _item(digits, version[start:i]))
            start = i + 1
            if c == "-":
                current = sublist()
        elif c.isdigit() != digits and i > start:  # a letter-digit boundary opens a sublist
            current.append(_text(version[start:i], True) if c.isdigit() else _item(True, version[start:i]))
            start, current = i, sublist()
        digits = c.isdigit() if c not in ".-" else digits
    if len(version) > start:
        current.append(_item(digits, version[start:]))
    for items in reversed(stack):
        _normalize(items)
    return root


def _qualifier(value: str) -> str:
    return str(QUALIFIERS.index(value)) if value in QUALIFIERS else f"{len(QUALIFIERS)}-{value}"


def _compare(a: Item | None, b: Item | None) -> int:
    if a is None:
        return 0 if b is None else -_compare(b, None)
    if isinstance(a, list):
        if b is None:
            return _compare(a[0], None) if a else 0
        if not isinstance(b, list):
            return -1 if b[0] == "i" else 1
        for x, y in zip(a + [None] * (len(b) - len(a)), b + [None] * (len(a) - len(b)), strict=True):
            if order := _compare(x, y):
                return order
        return 0
    kind, value = a
    if kind == "i":
        if b is None:
            return int(value != 0)
        return 1 if isinstance(b, list) or b[0] == "s" else (value > b[1]) - (value < b[1])
    if b is not None and (isinstance(b, list) or b[0] == "i"):
        return -1
    x, y = _qualifier(value), _qualifier("" if b is None else b[1])
    return (x > y) - (x < y)


def maven_compare(a: str, b: str) -> int:
    return _compare(maven_parse(a), maven_parse(b))


@pytest.mark.parametrize(
    ("lower", "higher"),
    [
        ("1.0-SNAPSHOT", "1.0"),
        ("1.0-alpha-1", "1.0-beta"),
        ("1.0-rc1", "1.0-SNAPSHOT"),  # a snapshot comes after the release candidates of its version
        ("5.0.0-alpha.3", "5.0.0-SNAPSHOT"),
        ("1.0", "1.0-sp"),
        ("1.9", "1.10"),
        ("1.23.8", "2.0.0-alpha.0"),
        ("2.22.0beta1", "2.22.0beta2"),
        ("9.0.0-beta2", "9.0.0-beta11"),
        ("1.0.0-Beta4", "1.0.0-dev"),  # an unknown qualifier comes after the known ones
        ("0.14.0", "0.14.0-dev"),  # ... and after the release
    ],
)
def test_the_maven_order_of_the_test(lower: str, higher: str) -> None:
    assert maven_compare(lower, higher) < 0 < maven_compare(higher, lower)


@pytest.mark.parametrize(("a", "b"), [("1.0", "1.0.0"), ("1.0-final", "1"), ("1.0-a1", "1.0-alpha1")])
def test_the_maven_order_of_the_test_knows_equal_spellings(a: str, b: str) -> None:
    assert maven_compare(a, b) == 0


# --------------------------------------------------------------------------------------------------
# Coordinates


@pytest.mark.parametrize(
    ("pattern", "covered", "not_covered"),
    [
        ("com.pinterest.ktlint", ["com.pinterest.ktlint:ktlint-cli", "com.pinterest.ktlint.x:y"], ["com.pinterest:ktlint"]),
        ("com.pinterest:ktlint", ["com.pinterest:ktlint"], ["com.pinterest:ktlint-core", "com.pinterest:other"]),
        ("org.jetbrains.kotlinx:dataframe*", ["org.jetbrains.kotlinx:dataframe", "org.jetbrains.kotlinx:dataframe-core"],
         ["org.jetbrains.kotlinx:kotlinx-coroutines-core", "org.jetbrains.kotlinx.x:dataframe"]),
        ("dev.detekt:*", ["dev.detekt:detekt-api"], ["dev.detekt.x:detekt-api"]),
        ("com.jetbrains.plugins:nl.rubensten.texifyidea", ["com.jetbrains.plugins:nl.rubensten.texifyidea"],
         ["com.jetbrains.plugins:other"]),
    ],
)  # fmt: skip
def test_coordinate_patterns_cover_what_they_say(
    pattern: str, covered: list[str], not_covered: list[str]
) -> None:
    coordinate = Coordinate.parse(pattern)
    assert str(coordinate) == pattern
    assert all(coordinate.covers(*c.split(":")) for c in covered)
    assert not any(coordinate.covers(*c.split(":")) for c in not_covered)
    assert coordinate.scope is (
        Scope.PREFIX if "*" in pattern else Scope.ARTIFACT if ":" in pattern else Scope.GROUP
    )


@pytest.mark.parametrize(
    "pattern", ["com.pinterest:", "g:a:1.0", "com.pinterest.*", "*", "a b", ".com", "g:a*b"]
)
def test_a_pattern_that_is_no_coordinate_is_an_error_naming_the_repository(pattern: str) -> None:
    spec = small_spec()
    spec["repositories"]["acme/widgets"]["artifacts"] = {"published_to": [], "coordinates": ["acme", pattern]}
    with pytest.raises(SpecError) as info:
        parse_dataset(spec)
    assert f"$.repositories.acme/widgets.artifacts.coordinates: {pattern!r} is not `group`" in str(info.value)


def test_without_artifacts_and_versions_a_specification_still_loads() -> None:
    dataset = parse_dataset(small_spec())
    assert dataset.repositories["acme/widgets"].artifacts is None
    assert all(t.base_version is None and t.fix_release is None for t in dataset.tasks)


def _stated(text: str) -> tuple[str, str]:
    """A coordinate of published_artifacts.json (`group:artifact`, maybe with a note in parentheses)."""
    group, artifact = text.split(" (")[0].split(":")
    return group, artifact.rstrip("*") or "any-artifact"


@pytest.mark.skipif(not (SHARED / "published_artifacts.json").is_file(), reason="the shared facts are absent")
def test_every_repository_states_patterns_covering_its_published_coordinates() -> None:
    dataset = load_dataset(SPEC)
    facts = json.loads((SHARED / "published_artifacts.json").read_text(encoding="utf-8"))
    for name, repository in dataset.repositories.items():
        artifacts = repository.artifacts
        assert artifacts is not None, name
        uncovered = [c for c in facts[name]["coordinates"] if not artifacts.covers(*_stated(c))]
        assert uncovered == [], name
        assert bool(artifacts.coordinates) == bool(facts[name]["coordinates"]), name


# --------------------------------------------------------------------------------------------------
# Versions


def _first_tags() -> dict[str, str]:
    with (SHARED / "fix_releases.tsv").open(encoding="utf-8") as rows:
        return {row["id"]: row["first_tag"] for row in csv.DictReader(rows, delimiter="\t")}


def release_of_tag(tag: str) -> str:
    """The version a release tag publishes its artifacts under: `v1.1.0` and okhttp's `parent-5.0.0` name
    1.1.0 and 5.0.0 (every project's tag is checked against its build's version in docs/dataset.md)."""
    return re.sub(r"^(parent-)?v?", "", tag)


@pytest.mark.skipif(not (SHARED / "fix_releases.tsv").is_file(), reason="the shared facts are absent")
def test_fix_release_is_the_first_release_tag_of_every_task() -> None:
    dataset = load_dataset(SPEC)
    tags = _first_tags()
    assert sorted(tags) == sorted(t.id for t in dataset.tasks)
    assert {t.id: t.fix_release for t in dataset.tasks} == {
        task: release_of_tag(tag) if tag else None for task, tag in tags.items()
    }


def _earliest_fix(tasks: list[TaskSpec]) -> str | None:
    return min((t.fix_release for t in tasks if t.fix_release), key=cmp_to_key(maven_compare), default=None)


def test_every_task_has_its_base_version() -> None:
    """Every task states the version at its base; null only where no release precedes the base (ORT before
    its first release tag versioned builds by commit id), so the fix's release is the project's first."""
    dataset = load_dataset(SPEC)
    raw = json.loads(SPEC.read_text(encoding="utf-8"))["tasks"]
    assert all("base_version" in t and "fix_release" in t for t in raw)
    assert len(raw) == 106
    for task in (t for t in dataset.tasks if t.base_version is None):
        same = [t for t in dataset.tasks if t.repository is task.repository]
        assert task.fix_release == _earliest_fix(same), task.id


DEVELOPMENT = re.compile(r"-(SNAPSHOT|dev)$")


def test_the_base_comes_before_the_fix_in_maven_order() -> None:
    """base_version < fix_release, except where the base is a development version (`-SNAPSHOT`, `-dev`)
    that Maven orders after the pre-releases or the release that followed it (okhttp 5.0.0-SNAPSHOT before
    5.0.0-alpha.3; dataframe's 0.14.0-dev before 0.14.0; ktlint's 1.2.0-SNAPSHOT before 1.1.1): then the
    release it develops is not before the fix's."""
    dataset = load_dataset(SPEC)
    both = [t for t in dataset.tasks if t.base_version and t.fix_release]
    wrong = []
    for task in both:
        assert task.base_version is not None and task.fix_release is not None
        if maven_compare(task.base_version, task.fix_release) < 0:
            continue
        released = DEVELOPMENT.sub("", task.base_version)
        if released == task.base_version or maven_compare(released, task.fix_release) < 0:
            wrong.append(f"{task.id}: {task.base_version} !< {task.fix_release}")
    assert wrong == []
