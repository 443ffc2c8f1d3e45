"""The harvest without containers: the API client against the stand-in GitHub API (pagination, ETags and
304s, rate limits, server errors and outages), the rules, the screening of the example repositories'
pull requests, and the verdicts of validated candidates. The whole harvest, with its validation in real
containers, runs in tests/test_harvest_e2e.py."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.dag.harvest import HarvestPlan
from kotlin_bench.dataset.github import Client, GitHubError, GitHubSettings
from kotlin_bench.dataset.harvest import tasks as harvest_tasks
from kotlin_bench.dataset.harvest.listing import Harvest, screen_window
from kotlin_bench.dataset.harvest.records import IssueRecord, PullRecord, Screened, Window
from kotlin_bench.dataset.harvest.rules import (
    Caps,
    Reason,
    Verdict,
    author_rule,
    change_rule,
    merge_rule,
    resolved_issues,
    size_rule,
)
from kotlin_bench.dataset.materialize import UpstreamSource
from kotlin_bench.dataset.pulls import Unsplittable, split_at_base
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.tools.github_api import Fault, RateLimit, example_repositories
from kotlin_bench.tools.github_records import synthetic
from kotlin_bench.tools.harvest import targets
from kotlin_bench.validation.harvest import ImageRecord, Probe, decide, gradle_excludes, probe, walk
from kotlin_bench.validation.records import PhaseRecord, TaskValidation
from tests.conftest import REPO

EXAMPLES = load_dataset(REPO / "examples/dataset.json")
JANUARY = Window.of("2026-01-01", "2026-02-01")


def client(api: Any, tmp: Path, **settings: Any) -> tuple[Client, list[str]]:
    lines: list[str] = []
    made = Client(
        GitHubSettings(api_url=api.url, cache_dir=tmp / "http", backoff_sec=0.05, **settings), lines.append
    )
    return made, lines


def listing(made: Client, owner: str, repo: str) -> list[int]:
    numbers, page = [], 1
    while page:
        found = made.closed_pulls(owner, repo, page)
        numbers += [p["number"] for p in found.items]
        page = found.next
    return numbers


# --------------------------------------------------------------------------------------------------
# The client against the stand-in


def test_pages_follow_the_link_header_and_a_second_listing_is_answered_by_etags(github_api, tmp_path) -> None:
    api = github_api([synthetic("acme", "many", 250)])
    first, _ = client(api, tmp_path)
    page = first.closed_pulls("acme", "many", 1)
    assert (page.number, page.next, page.last, len(page.items)) == (1, 2, 3, 100)
    assert page.items[0]["number"] == 250  # the last updated first
    assert listing(first, "acme", "many")[-1] == 1
    assert first.stats.by_status == {200: 3, 304: 1}  # page 1 again: from the cache
    remaining = api.api.rate.remaining
    again, _ = client(api, tmp_path)  # a later run: the same on-disk cache
    assert len(listing(again, "acme", "many")) == 250
    assert again.stats.not_modified == again.stats.requests == 3
    assert api.api.rate.remaining == remaining  # 304s are not counted against the rate limit
    api.api.touch("acme/many", 7)  # an edit: the pages change
    changed, _ = client(api, tmp_path)
    assert listing(changed, "acme", "many")[0] == 7
    assert changed.stats.by_status == {200: 3}


@pytest.mark.parametrize("status", [403, 429])
def test_a_spent_rate_limit_is_waited_for_saying_so(github_api, tmp_path, status) -> None:
    api = github_api([synthetic("acme", "many", 250)], RateLimit(limit=2, window_sec=1.0))
    api.api.limit_status = status
    made, lines = client(api, tmp_path)
    assert len(listing(made, "acme", "many")) == 250
    assert made.stats.by_status.get(status) == made.stats.rate_limited == 1
    assert any("waiting" in line and "primary rate limit" in line and "page 3" in line for line in lines), (
        lines
    )


def test_a_secondary_limit_and_server_errors_are_retried(github_api, tmp_path) -> None:
    api = github_api([synthetic("acme", "many", 250)])
    api.api.set_faults(Fault.parse("secondary:page=2*1"), Fault.parse("502:page=3*2"))
    made, lines = client(api, tmp_path)
    assert len(listing(made, "acme", "many")) == 250
    assert made.stats.by_status == {200: 3, 403: 1, 502: 2}
    assert any("secondary rate limit" in line for line in lines)
    assert sum("502 Bad Gateway; trying again" in line for line in lines) == 2


def test_an_outage_or_a_limit_beyond_the_waits_ends_with_the_page_named(github_api, tmp_path) -> None:
    api = github_api([synthetic("acme", "many", 250)])
    api.api.set_faults(Fault.parse("503:page=2"))
    made, _ = client(api, tmp_path, retries=2)
    with pytest.raises(GitHubError) as caught:
        listing(made, "acme", "many")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("acme/many pull requests, page 2: GET /repos/acme/many/pulls?")
    assert "503 Service Unavailable, 3 tries" in message and "run again later" in message
    api.api.set_faults(Fault.parse("primary"))  # spent for an hour: longer than the longest wait
    limited, _ = client(api, tmp_path / "elsewhere", max_wait_sec=5)  # (a cache without page 1)
    with pytest.raises(GitHubError, match=r"page 1: .*the primary rate limit holds for \d+ s more"):
        limited.closed_pulls("acme", "many", 1)


# --------------------------------------------------------------------------------------------------
# The rules


def pull(**fields: Any) -> PullRecord:
    record = {
        "number": 5, "title": "Fix the parser", "body": "Fixes #4", "user": {"login": "ana", "type": "User"},
        "labels": [], "state": "closed", "created_at": "2026-01-02T00:00:00Z", "updated_at": "2026-01-03T00:00:00Z",
        "merged_at": "2026-01-03T00:00:00Z", "head": {"ref": "fix", "sha": "a" * 40}, "base": {"ref": "main", "sha": "b" * 40},
    }  # fmt: skip
    return PullRecord.model_validate(record | fields)


def test_merged_into_the_default_branch() -> None:
    assert merge_rule(pull(), "main") is None
    assert merge_rule(pull(merged_at=None), "main").reason is Reason.NOT_MERGED
    assert merge_rule(pull(base={"ref": "1.x"}), "main").reason is Reason.OTHER_BRANCH
    assert merge_rule(pull(base={"ref": "master"}), "master") is None


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({"user": {"login": "renovate[bot]", "type": "Bot"}}, Reason.BOT),
        ({"user": {"login": "dependabot", "type": "User"}}, Reason.BOT),
        ({"title": "chore(deps): update dependency gradle to v8.6"}, Reason.DEPENDENCY_BUMP),
        ({"title": "Bump org.junit:junit-bom from 5.10.0 to 5.10.1"}, Reason.DEPENDENCY_BUMP),
        ({"title": "Update Kotlin to v2.0.0"}, Reason.DEPENDENCY_BUMP),
        ({"labels": [{"name": "dependencies"}]}, Reason.DEPENDENCY_BUMP),
        ({"title": "Update the README"}, None),
        ({"title": "Fix a bump in the road"}, None),
    ],
)
def test_bots_and_dependency_updates(fields: dict[str, Any], reason: Reason | None) -> None:
    found = author_rule(pull(**fields))
    assert (found.reason if found else None) is reason


def test_the_issues_a_pull_request_resolves() -> None:
    calc = EXAMPLES.repositories["examples/calc"]
    issues = {4: {"number": 4, "title": "i", "created_at": "2025-12-01T00:00:00Z"},
              6: {"number": 6, "title": "p", "created_at": "2025-12-02T00:00:00Z", "pull_request": {}}}  # fmt: skip

    def issue(n: int) -> IssueRecord | None:
        return IssueRecord.model_validate(issues[n]) if n in issues else None

    asked: list[int] = []

    def messages() -> list[str]:
        asked.append(1)
        return ["Tidy\n\nCloses #4"]

    found, none = resolved_issues(pull(), messages, calc, issue)
    assert ([i.number for i in found], none, asked) == ([4], None, [])  # the body's: no commit asked for
    found, none = resolved_issues(pull(body="Tidy up"), messages, calc, issue)
    assert [i.number for i in found] == [4] and asked == [1]  # from a commit message
    _, none = resolved_issues(pull(body="Fixes #6 and #9"), lambda: [], calc, issue)
    assert (
        none.reason is Reason.NO_ISSUE and "#6: not an issue" in none.detail
    )  # #6 is a pull request, #9 absent
    _, none = resolved_issues(pull(body="Fixes other/repo#4"), lambda: [], calc, issue)
    assert none.reason is Reason.NO_ISSUE


def test_tests_and_code_and_the_size_cap() -> None:
    paths = ["**/src/test/**"]
    assert change_rule(["src/main/A.kt", "src/test/ATest.kt"], paths)[2] is None
    assert change_rule(["src/main/A.kt"], paths)[2].reason is Reason.NO_TEST_CHANGE
    assert change_rule(["src/test/ATest.kt"], paths)[2].reason is Reason.NO_FIX_CHANGE
    caps = Caps(max_files=3, max_lines=100)
    assert size_rule(3, 100, caps) is None
    assert size_rule(4, 10, caps).detail == "4 changed files (cap 3)"
    assert size_rule(2, 101, caps).detail == "101 changed lines (cap 100)"


def test_windows() -> None:
    window = Window.parse("2026-01-01_2026-02-01")
    assert window.holds(datetime(2026, 1, 31, 23, 59, tzinfo=UTC)) and not window.holds(window.end)
    with pytest.raises(ValueError, match="--until must come after --since"):
        Window.of("2026-02-01", "2026-01-01")
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        Window.parse("2026-1_2026-02-01")


def test_a_submodule_change_does_not_split(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    run = lambda *a: subprocess.run(["git", "-C", str(repo), *a], check=True, capture_output=True)  # noqa: E731
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "src/test").mkdir(parents=True)
    (repo / "src/test/T.kt").write_text("a\n")
    run("add", "-A")
    run("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "base")
    base = run("rev-parse", "HEAD").stdout.decode().strip()
    run("update-index", "--add", "--cacheinfo", f"160000,{base},vendor/lib")
    (repo / "src/test/T.kt").write_text("b\n")
    run("add", "src")
    run("-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "pr")
    with pytest.raises(Unsplittable, match=r"submodules \['vendor/lib'\]"):
        split_at_base(repo, base, "HEAD", ["**/src/test/**"])


# --------------------------------------------------------------------------------------------------
# The example repositories' pull requests, screened


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("served")
    return {"repositories": example_repositories(REPO, REPO / "config.yaml", tmp), "mirrors": tmp}


def harvest_of(served: dict[str, Any], tmp: Path, repo: str, window: Window = JANUARY) -> Harvest:
    mirror = str(served["mirrors"] / "examples" / repo)
    return Harvest(
        repository=EXAMPLES.repositories[f"examples/{repo}"],
        window=window,
        caps=Caps(),
        ledger=tmp / repo / "pulls",
        records=tmp / "records",
        source=UpstreamSource(mirrors={f"examples/{repo}": mirror}),
    )


CALC = {
    10: Reason.NOT_MERGED, 11: Reason.OTHER_BRANCH, 12: Reason.NO_ISSUE, 13: Reason.NO_TEST_CHANGE,
    14: Reason.NO_FIX_CHANGE, 15: Reason.BOT, 16: Reason.TOO_LARGE, 17: Reason.MALFORMED,
    18: Reason.UNSPLITTABLE, 19: Reason.BASE_GONE,
}  # fmt: skip


def test_each_rule_rejects_its_example_and_the_candidates_carry_their_dates(
    github_api, served, tmp_path
) -> None:
    api = github_api(served["repositories"])
    made, lines = client(api, tmp_path)
    calc = screen_window(made, harvest_of(served, tmp_path, "calc"), lines.append)
    assert {s.number: Reason(s.reason) for s in calc} == CALC  # calc #8 was merged in December: not listed
    by = {s.number: s for s in calc}
    assert "release-1.x" in by[11].detail and "dependabot[bot]" in by[15].detail
    assert by[16].detail == "2209 changed lines (cap 2000)"  # its issue is named in a commit message only
    assert by[17].detail.startswith("page 1, item 1: user: ") and "created_at" in by[17].detail
    assert by[18].detail.startswith("test.patch does not apply at the base commit 665e3c681bcb")
    assert (
        by[19].detail == "base.sha 5c0ffee5f00d5eed0ddba11c0ffee0ddba11c0de is not a commit of examples/calc"
    )
    december = Window.of(
        "2025-12-01", "2026-01-01"
    )  # #17's record is malformed, but its merge was in January
    assert [
        (s.number, s.reason)
        for s in screen_window(made, harvest_of(served, tmp_path, "calc", december), print)
    ] == [(8, "no_fix_change")]
    semver = {s.number: s for s in screen_window(made, harvest_of(served, tmp_path, "semver"), lines.append)}
    assert sorted(n for n, s in semver.items() if s.verdict == Verdict.CANDIDATE) == [8, 10, 12]
    eight = semver[8]
    assert (eight.merged_at, eight.issue_opened_at, eight.issues) == (
        "2026-01-14T16:05:00Z",
        "2025-12-28T17:04:00Z",
        [7],
    )
    assert (
        eight.test_files == ["src/test/kotlin/semver/VersionTest.kt"]
        and eight.base == "f013a04a5e9b51f94e9eb0f6ddff6c9fdc40d965"
    )
    issue = json.loads((tmp_path / "records/examples/semver/7.json").read_text())  # for materialization
    assert issue["title"].startswith("`Version.parse` rejects")


def test_a_second_screening_reads_only_what_changed(github_api, served, tmp_path) -> None:
    api = github_api(served["repositories"])
    harvest = harvest_of(served, tmp_path, "semver")
    screen_window(client(api, tmp_path)[0], harvest, print)
    again, lines = client(api, tmp_path)
    screen_window(again, harvest, lines.append)
    assert again.stats.by_status == {304: 2}  # the repository and the one page: nothing else read
    assert "5 unchanged since the last harvest (not read again)" in lines[-1]
    api.api.touch("examples/semver", 8)
    edited, _ = client(api, tmp_path)
    screen_window(edited, harvest, print)
    pulls_read = [t for t, _ in api.api.seen[-edited.stats.requests :] if "/pulls/" in t]
    assert pulls_read and all("/pulls/8" in t for t in pulls_read)


def test_an_outage_ends_the_listing_and_the_next_run_goes_on_from_there(github_api, tmp_path) -> None:
    api = github_api([synthetic("acme", "many", 150)])  # two pages: #150 to #51, then #50 to #1
    window = Window.of("2026-01-01", "2026-02-01")
    repository = load_dataset(REPO / "examples/dataset.json").repositories["examples/calc"]
    harvest = Harvest(
        repository=repository.__class__(**{**repository.__dict__, "name": "acme/many"}),
        window=window,
        caps=Caps(),
        ledger=tmp_path / "pulls",
        records=tmp_path / "records",
        source=UpstreamSource(mirrors={"acme/many": str(tmp_path / "no-history")}),
    )
    api.api.set_faults(Fault.parse("503:page=2"))
    with pytest.raises(GitHubError, match=r"^acme/many pull requests, page 2: GET "):
        screen_window(client(api, tmp_path, retries=1)[0], harvest, print)
    assert len(list((tmp_path / "pulls").glob("*.json"))) == 100  # page 1's, kept
    api.api.set_faults()
    resumed, lines = client(api, tmp_path)
    found = screen_window(resumed, harvest, lines.append)
    assert len(found) == 150 and "100 unchanged since the last harvest" in lines[-1]
    read = [t for t, _ in api.api.seen[-resumed.stats.requests :] if "/pulls/" in t]
    assert not any(f"/pulls/{n}/" in t or t.endswith(f"/pulls/{n}") for n in range(51, 151) for t in read)
    assert any(t.endswith("/pulls/50") for t in read)
    assert {s.reason for s in found} == {str(Reason.UNSPLITTABLE)}  # no history to diff: never a crash


# --------------------------------------------------------------------------------------------------
# Base variants and verdicts


def test_variants_newest_first() -> None:
    real = load_dataset(REPO / "dataset/kotlin-bench.json")
    assert [b.tag for b in harvest_tasks.variants(real, "pinterest/ktlint")] == ["base", "base-JDK-17"]
    assert [b.tag for b in harvest_tasks.variants(real, "square/okhttp")] == ["base-JDK-17", "base-JDK-8"]
    assert (
        harvest_tasks.test_command(real, "GradleUp/shadow") == real.task("GradleUp_shadow-1313").test_command
    )
    tally = harvest_tasks.test_command(EXAMPLES, "examples/tally")
    assert tally == "gradle clean test --continue"  # the flaky-test init script of tally-4 left out


def validation(**fields: Any) -> TaskValidation:
    return TaskValidation(
        "examples_semver-8", **{"valid": True, "counts": {"f2p": 2, "p2p": 11, "s2p": 0, "n2p": 0}, **fields}
    )


def test_variants_are_walked_until_one_builds() -> None:
    probes = {
        "a": Probe("t", "img:a", False, ["fix: build_failed"]),
        "b": Probe("t", "img:b", True),
        "c": Probe("t", "img:c", True),
    }
    assert walk(["a", "b", "c"], probes.__getitem__) == ("b", [probes["a"], probes["b"]])
    failing = {"a": probes["a"], "b": Probe("t", "img:b", False, ["image: building failed"])}
    chosen, tried = walk(["a", "b"], failing.__getitem__)
    verdict = decide("t", tried, None, "ktest .")
    assert chosen is None and (verdict.verdict, verdict.reason) == ("rejected", "environment")
    assert verdict.detail == (
        "the build fails on every base variant: img:a (fix: build_failed); img:b (image: building failed)"
    )
    broken = {"a": Probe("t", "img:a", False, error="image: the engine went away")}
    chosen, tried = walk(["a", "b"], broken.__getitem__)
    assert chosen == "a" and decide("t", tried, None, "ktest .").verdict == "error"  # not a rejection


def test_verdicts_of_validated_candidates() -> None:
    built = [Probe("t", "img:a", True)]
    assert decide("t", built, validation(), "ktest .").verdict == "accepted"
    flaky = validation(flaky={"a.B.c()": {"fix": "PASS", "fix-1": "FAIL"}})
    assert (decide("t", built, flaky, "ktest .").reason) == "flaky"
    gradle = decide("t", built, flaky, "./gradlew test")
    assert gradle.verdict == "accepted" and gradle.flaky_excludes == ["*B.c"]
    invalid = decide("t", built, validation(valid=False, reasons=["fix: p2p_regressed: a.B.d()"]), "ktest .")
    assert (invalid.reason, invalid.detail) == ("invalid", "fix: p2p_regressed: a.B.d()")
    assert decide("t", built, validation(counts={"f2p": 0, "p2p": 3}), "ktest .").reason == "invalid"
    errored = decide("t", built, validation(valid=False, reasons=["fix-1: error: engine gone"]), "ktest .")
    assert (errored.verdict, errored.reason) == ("error", "infrastructure")
    assert gradle_excludes(
        ["tally.report.HostNameTest.passesOnSomeHostsOnly", "calc.A$Nested.works fine()"]
    ) == [
        "*A.Nested.works fine",
        "*HostNameTest.passesOnSomeHostsOnly",
    ]


def test_a_probe_reads_the_image_and_the_run_and_fix_phases(tmp_path: Path) -> None:
    image = ImageRecord("t", "img:a", built=False, why="building x failed: warm-up")
    assert probe(image).reasons == ["image: building x failed: warm-up"]
    assert probe(ImageRecord("t", "img:a", built=False, error="docker gone")).error == "image: docker gone"
    for label in ("run", "fix"):
        (tmp_path / label).mkdir()
        PhaseRecord("t", label, error="the engine failed on every try" if label == "fix" else None).write(
            tmp_path / label / "phase.json"
        )
    found = probe(ImageRecord("t", "img:a", built=True), {"run": tmp_path / "run", "fix": tmp_path / "fix"})
    assert not found.builds and "the engine failed on every try" in str(found.error)


def test_errors_are_made_again_and_the_verdict_waits_for_the_chosen_variant(tmp_path: Path) -> None:
    plan = HarvestPlan(REPO, "examples/dataset.json", repeats=1)
    root = tmp_path
    plan.root = root
    plan.__dict__["dataset"] = EXAMPLES
    probe_path = "results/harvest/examples/semver/pr-8/base/probe.json"
    (root / probe_path).parent.mkdir(parents=True)
    Probe("examples_semver-8", "kotlin-bench/examples_semver:base", True).write(root / probe_path)
    inputs = plan.verdict_inputs("examples", "semver", 8, lambda v: probe_path)
    assert inputs["probes"] == [probe_path]
    assert [Path(p).parent.name for p in inputs["phases"]] == ["run", "test", "fix", "fix-1"]
    verdict = root / "results/harvest/examples/semver/pr-8/verdict.json"
    decide(
        "examples_semver-8", [Probe("t", "i", True)], validation(valid=False, reasons=["test: error: x"]), "k"
    ).write(verdict)
    phase = root / "results/harvest/examples/semver/pr-8/base/test/phase.json"
    phase.parent.mkdir(parents=True)
    PhaseRecord("examples_semver-8", "test", error="x").write(phase)
    assert plan.errored("examples", "semver", 8) == [
        "results/harvest/examples/semver/pr-8/verdict.json",
        "results/harvest/examples/semver/pr-8/base/test/phase.json",
        probe_path,
    ]


def test_a_screened_record_is_rewritten_only_when_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "8.json"
    record = Screened("examples/semver", 8, "candidate", updated_at="2026-01-14T16:05:00Z")
    record.write(path)
    before = path.stat().st_mtime_ns
    record.write(path)
    assert path.stat().st_mtime_ns == before and Screened.read(path) == record


def test_the_command_names_one_target_per_repository_and_refuses_unknown_ones() -> None:
    window = Window.of("2026-01-01", "2026-02-01")
    assert targets(["examples/calc", "examples/semver"], window) == [
        "results/harvest/examples/calc/2026-01-01_2026-02-01/dataset.json",
        "results/harvest/examples/semver/2026-01-01_2026-02-01/dataset.json",
    ]
    done = subprocess.run(
        [sys.executable, "-m", "kotlin_bench", "harvest", "examples/nope", "--since", "2026-01-01"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "kotlin-bench: error: ['examples/nope'] not in examples/dataset.json: add a repository "
        "(and a base image for it) to harvest it"
    )
