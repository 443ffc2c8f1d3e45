"""The retrieval rule of the egress record (`kotlin_bench.core.retrieval`) and `kotlin-bench egress
classify`: many URL shapes, Maven's version order, five real tasks' facts (one per Maven Central project,
from fix_releases.tsv and published_artifacts.json) and the examples' spec."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from kotlin_bench.core.retrieval import Facts, classify, compare_versions, coordinate_matches
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.tools.cli import main
from tests.conftest import REPO

CALC = Facts(("examples:calc",), "1.0.1-SNAPSHOT", "1.1.0", "https://example.invalid/examples/calc")
REPO_URL = "https://repo.examples.test/maven2"

# (task, the first fixed release's sources jar, an older release's sources jar); facts from the 106 tasks' spec
REAL = [
    (
        "pinterest_ktlint-2029",
        "com/pinterest/ktlint/ktlint-rule-engine/0.50.0/ktlint-rule-engine-0.50.0-sources.jar",
        "com/pinterest/ktlint/ktlint-rule-engine/0.49.1/ktlint-rule-engine-0.49.1-sources.jar",
    ),
    (
        "detekt_detekt-4205",
        "io/gitlab/arturbosch/detekt/detekt-rules-style/1.19.0-RC1/detekt-rules-style-1.19.0-RC1-sources.jar",
        "io/gitlab/arturbosch/detekt/detekt-rules-style/1.18.1/detekt-rules-style-1.18.1-sources.jar",
    ),
    (
        "oss-review-toolkit_ort-10179",
        "org/ossreviewtoolkit/model/59.2.0/model-59.2.0-sources.jar",
        "org/ossreviewtoolkit/model/59.1.0/model-59.1.0-sources.jar",
    ),
    (
        "Kotlin_dataframe-1072",
        "org/jetbrains/kotlinx/dataframe-core/1.0.0-Beta1/dataframe-core-1.0.0-Beta1-sources.jar",
        "org/jetbrains/kotlinx/dataframe-core/0.14.1/dataframe-core-0.14.1-sources.jar",
    ),
    (
        "square_okhttp-6887",
        "com/squareup/okhttp3/okhttp/5.0.0-alpha.3/okhttp-5.0.0-alpha.3-sources.jar",
        "com/squareup/okhttp3/okhttp/4.9.1/okhttp-4.9.1-sources.jar",
    ),
]
BENCHMARK = load_dataset(REPO / "dataset" / "kotlin-bench.json")


@pytest.mark.parametrize(("task", "fixed", "older"), REAL, ids=[r[0] for r in REAL])
def test_five_real_tasks_fixed_release_is_retrieval_older_is_ok(
    task: str, fixed: str, older: str, capsys: pytest.CaptureFixture[str]
) -> None:
    facts = BENCHMARK.task(task).retrieval_facts()
    for host in ("https://repo1.maven.org/maven2/", "https://repo.maven.apache.org/maven2/"):
        assert classify(host + fixed, facts).retrieval, (task, fixed)
        verdict = classify(host + older, facts)
        assert not verdict.retrieval and "at or before" in verdict.reason, (task, verdict)
    spec = ["--root", str(REPO), "egress", "classify", "--spec", str(REPO / "dataset" / "kotlin-bench.json")]
    assert main([*spec, "--task", task, "https://repo1.maven.org/maven2/" + fixed]) == 1
    assert capsys.readouterr().out.startswith("retrieval: ")
    assert main([*spec, "--task", task, "https://repo1.maven.org/maven2/" + older]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


RETRIEVAL = [
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0-sources.jar",
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0.jar",  # the binary jar
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0.pom",
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0-javadoc.jar",
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0.module",
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0-sources.jar.sha1",
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0.jar.asc",
    f"{REPO_URL}/examples/calc/1.2.0/calc-1.2.0.zip",  # a later release
    f"{REPO_URL}/examples/calc/1.0.1-SNAPSHOT/calc-1.0.1-20260101.101010-1.jar",  # the base's own snapshot
    f"{REPO_URL}/examples/calc/1.0.2/calc-1.0.2.aar",  # after the base, before the fix's release
    f"{REPO_URL}/examples%2Fcalc%2F1.1.0%2Fcalc-1.1.0-sources.jar",  # percent-encoded slashes
    f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0%2Dsources.jar",
    f"{REPO_URL}/examples%252Fcalc%252F1.1.0%252Fcalc-1.1.0.jar",  # encoded twice
    "https://repo.examples.test//maven2//examples/calc/1.1.0//calc-1.1.0.jar",
    "https://repo.examples.test/maven2/./examples/./calc/1.1.0/calc-1.1.0.jar",
    "https://repo.examples.test/maven2/x/../examples/calc/1.1.0/calc-1.1.0.jar",
    "https://REPO.Examples.TEST/maven2/examples/calc/1.1.0/calc-1.1.0.jar",
    "https://repo.examples.test/maven2/EXAMPLES/Calc/1.1.0/calc-1.1.0.jar",
    "https://repo.examples.test/maven2\\examples\\calc\\1.1.0\\calc-1.1.0.jar",
    "https://search.example/remotecontent?filepath=examples/calc/1.1.0/calc-1.1.0-sources.jar",
    "https://search.example/remotecontent?filepath=examples%2Fcalc%2F1.1.0%2Fcalc-1.1.0-sources.jar",
    "https://nexus.example/service/local/artifact/maven/redirect?r=central&g=examples&a=calc&v=1.1.0&c=sources",
    "https://nexus.example/service?groupId=examples&artifactId=calc&version=1.1.0",
    "https://nexus.example/service/local/artifact/maven/redirect?r=central&g=examples&a=calc&v=LATEST",
    "https://cache.example/fetch?url=https://repo.examples.test/maven2/examples/calc/1.1.0/calc-1.1.0.jar",
    "https://artifactory.example/artifactory/libs-release/examples/calc/1.1.0/calc-1.1.0.jar",
    "https://cache.example/example.invalid/examples/calc/archive/main.zip",  # names the upstream repository
    "repo.examples.test/maven2/examples/calc/1.1.0/calc-1.1.0.jar",  # no scheme
]

OK = [
    f"{REPO_URL}/examples/calc/maven-metadata.xml",
    f"{REPO_URL}/examples/calc/maven-metadata.xml.sha1",
    f"{REPO_URL}/examples/calc/1.1.0/",  # a directory listing
    f"{REPO_URL}/examples/calc/1.1.0",
    f"{REPO_URL}/examples/calc/",
    f"{REPO_URL}/examples/calc/1.0.0/calc-1.0.0-sources.jar",  # an older release
    f"{REPO_URL}/examples/calc/1.0.0/calc-1.0.0.jar",
    f"{REPO_URL}/examples/calc/1.0.1-SNAPSHOT/maven-metadata.xml",
    f"{REPO_URL}/examples/slug/1.1.0/slug-1.1.0-sources.jar",  # another artifact of the same group
    f"{REPO_URL}/junit/junit/4.13.2/junit-4.13.2.jar",
    f"{REPO_URL}/org/hamcrest/hamcrest-core/1.3/hamcrest-core-1.3.jar",
    "https://repo.examples.test/maven2/calc/1.1.0/calc-1.1.0.jar",  # no group: not these coordinates
    "https://services.gradle.org/distributions/gradle-8.5-bin.zip",
    "https://nexus.example/service?g=examples&a=calc&v=1.0.0",
]


@pytest.mark.parametrize("url", RETRIEVAL)
def test_retrieval_shapes_are_flagged(url: str) -> None:
    verdict = classify(url, CALC)
    assert verdict.retrieval, verdict


@pytest.mark.parametrize("url", OK)
def test_metadata_older_releases_and_other_coordinates_are_ok(url: str) -> None:
    verdict = classify(url, CALC)
    assert not verdict.retrieval, verdict


def test_github_jitpack_and_api_spellings_of_the_upstream_repository() -> None:
    ktlint = BENCHMARK.task("pinterest_ktlint-2029").retrieval_facts()
    for url in (
        "https://github.com/pinterest/ktlint/archive/refs/tags/0.50.0.zip",
        "https://codeload.github.com/pinterest/ktlint/zip/refs/heads/master",
        "https://raw.githubusercontent.com/pinterest/ktlint/master/build.gradle.kts",
        "https://api.github.com/repos/pinterest/ktlint/tarball",
        "https://jitpack.io/com/github/pinterest/ktlint/0.50.0/ktlint-0.50.0.jar",
        "https://proxy.example/github.com/Pinterest/KTLINT.git/info/refs",
        "https://proxy.example/get?repo=https://github.com/pinterest/ktlint",
    ):
        assert classify(url, ktlint).retrieval, url
    for url in ("https://github.com/pinterest/other", "https://repo1.maven.org/maven2/pinterest/ktlint/"):
        assert not classify(url, ktlint).retrieval, url


def test_maven_version_order() -> None:
    ordered = [
        "1.0-alpha1",
        "1.0-beta",
        "1.0-M1",
        "1.0-rc1",
        "1.0-SNAPSHOT",
        "1.0",
        "1.0-sp1",
        "1.0.1",
        "1.1",
        "2",
    ]
    for before, after in itertools.pairwise(ordered):
        assert compare_versions(before, after) == -1, (before, after)
        assert compare_versions(after, before) == 1, (before, after)
    assert compare_versions("1.0", "1.0.0") == 0 and compare_versions("1.0-ga", "1.0") == 0
    assert compare_versions("5.0.0-alpha.3", "5.0.0-SNAPSHOT") == -1
    assert compare_versions("1.10.0", "1.9.9") == 1


def test_coordinate_patterns() -> None:
    assert coordinate_matches("com.pinterest", "com.pinterest.ktlint", "ktlint-cli")
    assert not coordinate_matches("com.pinterest", "com.pinteresting", "x")
    assert coordinate_matches("org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx", "dataframe-core")
    assert not coordinate_matches(
        "org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx", "kotlinx-coroutines-core"
    )
    assert not coordinate_matches(
        "org.jetbrains.kotlinx:dataframe*", "org.jetbrains.kotlinx.sub", "dataframe"
    )
    assert coordinate_matches("com.squareup.okhttp3:okhttp", "com.squareup.okhttp3", "okhttp")
    assert not coordinate_matches("com.squareup.okhttp3:okhttp", "com.squareup.okhttp3", "okhttp-sse")


def test_the_base_release_itself_and_a_build_depending_on_its_own_older_release() -> None:
    released_base = Facts(("examples:calc",), "1.0.0", "1.1.0", None)
    assert not classify(f"{REPO_URL}/examples/calc/1.0.0/calc-1.0.0.jar", released_base).retrieval
    assert classify(
        f"{REPO_URL}/examples/calc/1.0.1-SNAPSHOT/calc-1.0.1-SNAPSHOT.jar", released_base
    ).retrieval
    unreleased = Facts(("examples:calc",), "1.0.1-SNAPSHOT", None, None)
    assert not classify(f"{REPO_URL}/examples/calc/1.0.0/calc-1.0.0.jar", unreleased).retrieval
    assert classify(f"{REPO_URL}/examples/calc/1.0.1/calc-1.0.1.jar", unreleased).retrieval


def _spec_with_facts(tmp_path: Path) -> Path:
    data = json.loads((REPO / "examples" / "dataset.json").read_text())
    data["repositories"]["examples/calc"]["artifacts"] = {
        "published_to": ["stand-in"],
        "coordinates": ["examples:calc"],
    }
    for task in data["tasks"]:
        if task["id"] == "examples_calc-4":
            task |= {"base_version": "1.0.1-SNAPSHOT", "fix_release": "1.1.0"}
    spec = tmp_path / "dataset.json"
    spec.write_text(json.dumps(data))
    return spec


def test_the_classify_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec_with_facts(tmp_path)
    args = ["--root", str(REPO), "egress", "classify", "--spec", str(spec), "--task", "examples_calc-4"]
    assert main([*args, f"{REPO_URL}/examples/calc/1.1.0/calc-1.1.0-sources.jar"]) == 1
    assert capsys.readouterr().out.startswith("retrieval: examples:calc:1.1.0")
    assert main([*args, f"{REPO_URL}/examples/calc/1.0.0/calc-1.0.0-sources.jar"]) == 0
    assert capsys.readouterr().out.startswith("ok: examples:calc:1.0.0")
    assert main([*args[:-1], "examples_calc-5", "x"]) == 2
    assert "examples_calc-4" in capsys.readouterr().err
    # the 106 tasks' spec: the command runs on it (facts or not)
    assert (
        main(
            [
                "--root",
                str(REPO),
                "egress",
                "classify",
                "--spec",
                str(REPO / "dataset" / "kotlin-bench.json"),
                "--task",
                "pinterest_ktlint-2029",
                "https://repo1.maven.org/maven2/junit/junit/4.13.2/junit-4.13.2.jar",
            ]
        )
        == 0
    )


def test_summary_and_rates_carry_the_egress_record() -> None:
    from kotlin_bench.core.record import RunResult, Status
    from kotlin_bench.results.stats import rates
    from kotlin_bench.results.summary import SUMMARY_COLUMNS, _typed, summary_row

    rows = []
    for task, flagged, record in (("t1", True, "urls"), ("t2", False, "urls"), ("t3", False, "hosts")):
        result = RunResult(task, "examples/calc", "a", "script", None, 1)
        result.score(1.0)
        result.egress = {"record": record, "requests": 3, "bytes": 300, "refused": 1, "blocked": 0}
        if flagged:
            result.flags["retrieval"] = [
                "https://repo.examples.test/maven2/examples/calc/1.1.0/calc-1.1.0.jar"
            ]
        rows.append(summary_row(result))
    assert [r["retrieval"] for r in rows] == [True, False, None]
    assert [r["egress_requests"] for r in rows] == [3, 3, None] and rows[0]["egress_refused"] == 1
    import pandas as pd

    frame = _typed(pd.DataFrame(rows, columns=SUMMARY_COLUMNS))
    assert (frame["status"] == Status.RESOLVED).all()
    table = rates(frame)
    assert table.loc[0, "resolve_rate"] == 1.0 and table.loc[0, "retrieval_flagged"] == 1
    assert table.loc[0, "resolve_rate_without_retrieval"] == round(2 / 3, 4)


def test_headlines_and_reproduce_say_the_rate_without_retrieval_flagged_runs() -> None:
    import pandas as pd

    from kotlin_bench.results.report import retrieval_headlines, retrieval_note

    frame = pd.DataFrame(
        {
            "status": ["resolved", "resolved", "unresolved", "resolved"],
            "retrieval": [True, False, False, None],
        }
    )
    assert retrieval_note(frame) == (
        "1 of 3 recorded runs flagged as retrieval (the egress record): resolved 75.0%, "
        "50.0% counting them as unresolved"
    )
    assert retrieval_note(frame.assign(retrieval=None)) is None
    two = pd.concat([frame.assign(agent="a"), frame.assign(agent="b", retrieval=False)], ignore_index=True)
    assert retrieval_headlines(two) == [f"a: {retrieval_note(frame)}"]  # b has none flagged: no line
    assert retrieval_headlines(two.assign(retrieval=False)) == [
        "retrieval: none of 8 recorded runs flagged (the egress record)"
    ]
    assert retrieval_headlines(two.assign(retrieval=None)) == []
