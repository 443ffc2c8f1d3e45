"""The upstream projects' coordinates and versions in the dataset specification (issues 28, 36): each
repository's coordinate patterns (read and checked), each task's base_version, fix_release and other
releases of the fix, against the shared facts (../shared/dataset: published_artifacts.json,
fix_releases.tsv) and in Maven's version order (`kotlin_bench.core.versions`, tested in test_versions.py)."""

from __future__ import annotations

import csv
import json
import re
from functools import cmp_to_key

import pytest

from kotlin_bench.core.versions import maven_compare
from kotlin_bench.dataset.artifacts import Coordinate, Scope
from kotlin_bench.dataset.spec import SpecError, TaskSpec, load_dataset, parse_dataset
from tests.conftest import REPO
from tests.test_dataset import SHARED, SPEC, small_spec

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
    coordinates = [{"pattern": p, "source": "acme/widgets:build.gradle@HEAD"} for p in ("acme", pattern)]
    spec["repositories"]["acme/widgets"]["artifacts"] = {"published_to": [], "coordinates": coordinates}
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
        assert all(c.source for c in (*artifacts.coordinates, *artifacts.former_coordinates)), name
    # Anki-Android publishes no library of the app's code (published_artifacts.json), but its repository's
    # api/ module is a library (com.ichi2.anki:api) and jitpack builds it (com.github.ankidroid:Anki-Android)
    anki = dataset.repositories["ankidroid/Anki-Android"].artifacts
    assert (
        anki is not None
        and anki.covers("com.ichi2.anki", "api")
        and anki.covers("com.github.ankidroid", "Anki-Android")
    )


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


# --------------------------------------------------------------------------------------------------
# The docs agree with the specification


def test_the_threat_models_counts_are_the_specs() -> None:
    dataset = load_dataset(SPEC)
    text = " ".join((REPO / "docs" / "threat-model.md").read_text(encoding="utf-8").split())
    found = re.search(
        r"For (\d+) of the (\d+) tasks the fix has been released \(`fix_release` in the dataset spec\); for "
        r"(\d+) of them on Maven Central, with its sources, .*? \(the other (\d+): (\d+) TeXiFy-IDEA releases "
        r"on the JetBrains Marketplace, (\d+) Anki-Android APKs\)",
        text,
    )
    assert found is not None
    released = [t for t in dataset.tasks if t.fix_release]
    central = [
        t
        for t in released
        if t.repository.artifacts and "Maven Central" in t.repository.artifacts.published_to
    ]
    by_repo = {name: sum(t.repository.name == name for t in released) for name in dataset.repositories}
    assert [int(n) for n in found.groups()] == [
        len(released),
        len(dataset.tasks),
        len(central),
        len(released) - len(central),
        by_repo["Hannah-Sten/TeXiFy-IDEA"],
        by_repo["ankidroid/Anki-Android"],
    ]


def _coverage_rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "dataset.md").read_text(encoding="utf-8")
    table = text.split("| repository | coordinates | former coordinates |", 1)[1].split("\n\n", 1)[0]
    rows = [line.strip("|").split(" | ") for line in table.splitlines()[2:]]
    return {cells[0].strip(): [c.strip() for c in cells[1:]] for cells in rows}


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def test_the_facts_table_of_the_dataset_docs_is_the_specs() -> None:
    dataset = load_dataset(SPEC)
    rows = _coverage_rows()
    assert sorted(rows) == sorted(dataset.repositories)
    for name, repository in dataset.repositories.items():
        artifacts, github = repository.artifacts, repository.github
        assert artifacts is not None
        tasks = [t for t in dataset.tasks if t.repository is repository]
        coordinates, former, plugins, market, github_id, names, carriers, needs = rows[name]
        assert _ticked(coordinates) == [str(c.coordinate) for c in artifacts.coordinates], name
        assert _ticked(former) == [str(c.coordinate) for c in artifacts.former_coordinates], name
        assert _ticked(plugins) == [p.id for p in artifacts.plugin_ids], name
        assert _ticked(market) == [x for m in artifacts.marketplace for x in (m.xml_id, str(m.numeric_id))], (
            name
        )
        assert _ticked(github_id) == ([str(github.id)] if github and github.id else []), name
        assert _ticked(names) == ([n.name for n in github.names] if github else []), name
        assert _ticked(carriers) == sorted({str(c.coordinate) for c in artifacts.carriers}), name
        assert needs == f"{sum(1 for t in tasks if t.base_build)} of {len(tasks)}", name
