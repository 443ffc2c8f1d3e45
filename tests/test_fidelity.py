"""`kotlin-bench fidelity` against published-style task trees of our own: what is equal in meaning passes,
each behaviour-changing difference is found and named, intended ones pass with their reason, cosmetic and
restructured ones never fail the check."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.dataset import fidelity
from kotlin_bench.dataset.fidelity import Impact
from kotlin_bench.dataset.generate import VERIFIER_DIR, generate
from kotlin_bench.dataset.materialize import PublishedSource
from kotlin_bench.dataset.spec import parse_dataset
from kotlin_bench.engine.network import phase_env
from kotlin_bench.tools.cli import main
from kotlin_bench.tools.workspace import Workspace

BASE = "0123456789abcdef0123456789abcdef01234567"
HOSTS = ["repo1.maven.org", "plugins.gradle.org"]
# The differences from the published benchmark kotlin-bench keeps (dataset/kotlin-bench.json lists them
# with their reasons), as the published-style tree below shows them.
KEPT = ["verifier.other_processes", "agent_phase.added_env", "collector.size_cap", "verifier.outside_repo"]


def spec() -> dict[str, Any]:
    return {
        "name": "tiny",
        "fidelity": {"intended": [{"key": key, "reason": "kept"} for key in KEPT]},
        "defaults": {
            "verifier_timeout_sec": 900.0,
            "agent_timeout_sec": 1800.0,
            "build_timeout_sec": 1800.0,
            "cpus": 4,
            "memory_mb": 10240,
            "agent_allowed_hosts": HOSTS,
        },
        "conventions": {
            "base_env": {"TZ": "Etc/UTC"},
            "git_config": {"core.autocrlf": "input", "core.filemode": "false"},
            "git_info_exclude": [".gitattributes"],
        },
        "repositories": {
            "acme/lint": {
                "license": "MIT",
                "url": "https://example.invalid/acme/lint",
                "clone_url": "https://example.invalid/acme/lint.git",
                "repo_dir": "/home/lint",
                "test_paths": ["**/src/test/**"],
                "test_env": {"CLI_MAX": "60"},
                "warmup": {"steps": ["./gradlew clean test"], "on_failure": "abort"},
            }
        },
        "bases": [
            {
                "repo_key": "acme_lint",
                "tag": "base",
                "repository": "acme/lint",
                "jdk": 21,
                "jdk_image": "eclipse-temurin:21-jdk",
                "android_sdk_packages": [],
                "extra_apt_packages": [],
                "env": {"LANG": "C.UTF-8"},
            }
        ],
        "tasks": [
            {
                "id": f"acme_lint-{n}",
                "repository": "acme/lint",
                "pr": n,
                "issues": [n - 1],
                "base_commit": BASE,
                "base_image": "kotlin-bench/acme_lint:base",
                "test_command": "./gradlew clean test --continue --init-script /home/exclude-flaky-tests.gradle",
                "flaky_test_excludes": ["*FlakyTest"],
                "flaky_init_script_kind": "groovy",
                "expected_counts": None,
                "published_sha256": None,
                "fix_files": None,
                "test_files": None,
            }
            for n in (7, 9)
        ],
    }


# Published-style files of our own making, written the way the published tasks lay out their steps.
PUB_TOML = """[metadata.source]
repository_owner = "acme"
repository_name = "lint"
repository_url = "https://example.invalid/acme/lint"
license = "MIT"
code_change_type = "pr"
code_change_id = "{n}"
code_change_url = "https://example.invalid/acme/lint/pull/{n}"
issue_url = "https://example.invalid/acme/lint/issues/{m}"

[verifier]
implemented = false
timeout_sec = {verifier_timeout}
network_mode = "public"

[agent]
timeout_sec = 1800.0
network_mode = "allowlist"
allowed_hosts = {hosts}

[environment]
build_timeout_sec = 1800.0
cpus = 4
memory_mb = 10240
network_mode = "public"
"""
PUB_DOCKERFILE = """FROM kotlin-bench/acme_lint:base
COPY exclude-flaky-tests.gradle /home/
COPY check_git_changes.sh /home/
COPY prepare.sh /home/
RUN bash /home/prepare.sh
RUN chmod +x /home/*.sh
RUN apt-get update -qq && apt-get install -y --no-install-recommends tmux python3 || true
COPY seal_git_history.sh /tmp/seal_git_history.sh
RUN bash /tmp/seal_git_history.sh /home/lint
WORKDIR /home/lint
"""
PUB_PREPARE = """#!/bin/bash
set -e
cd /home/lint
git config core.autocrlf input
git config core.filemode false
echo ".gitattributes" >> .git/info/exclude
bash /home/check_git_changes.sh
git checkout {base}
{exports}./gradlew clean test
"""
PUB_SEAL = """#!/bin/bash
set -euo pipefail
cd "$1"
base_sha=$(git rev-parse HEAD)
git checkout -B task-base "$base_sha"
git gc --prune=now
"""
PUB_TEST = """#!/bin/bash
set -euo pipefail
rm -rf /logs/verifier && mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
cd /home/lint
{restore}if ! git apply --whitespace=nowarn /tests/test.patch; then
  exit 1
fi
{exports}find . -type f -path '*/build/test-results/*/TEST*.xml' -delete
./gradlew clean test --continue --init-script /home/exclude-flaky-tests.gradle || true
bash /tests/kotlin_logs_collector.sh --root . --output /logs/verifier/all.xml
python3 /tests/junit_compare.py --xml /logs/verifier/all.xml --expected /tests/expected_tests.json --reward /logs/verifier/reward.txt
"""
PUB_RESTORE = """while IFS= read -r line; do
  case "$line" in "diff --git a/"*) p=${line#diff --git a/}; p=${p%% b/*}; git restore --source=HEAD -- "$p" 2>/dev/null || rm -f -- "$p";; esac
done < /tests/test.patch
"""
PUB_INIT = """allprojects {
    tasks.withType(Test).configureEach {
        filter {
            excludeTestsMatching "*FlakyTest"
            {no_match}
        }
    }
}
"""
# A collector in the published style, of our own: --root/--output; each report copied line by line by
# bash's `read`, its leading XML declaration lines left out.
PUB_COLLECTOR = r"""#!/bin/bash
set -eu
root=. output=merged.xml
while [ $# -gt 1 ]; do
  case $1 in --root) root=$2 ;; --output) output=$2 ;; *) exit 2 ;; esac
  shift 2
done
mkdir -p "$(dirname "$output")"
reports=$(cd "$root" && find . -type f -path '*/build/test-results/*/TEST*.xml')
[ -n "$reports" ] || exit 1
{
  echo '<?xml version="1.0" encoding="UTF-8"?>'
  echo '<testsuites>'
  for report in $reports; do
    declarations=yes
    while IFS= read -r text; do
      if [ $declarations = yes ] && [ "${text:0:5}" = '<?xml' ]; then continue; fi
      declarations=no
      echo "$text"
    done <"$root/$report"
  done
  echo '</testsuites>'
} >"$output"
"""
PUB_SOLVE = "#!/bin/bash\nset -euo pipefail\ngit apply --whitespace=nowarn /solution/fix.patch\n"
PUB_BASE = """FROM eclipse-temurin:21-jdk
WORKDIR /home/
ENV DEBIAN_FRONTEND=noninteractive
ENV TZ=Etc/UTC
ENV LANG=C.UTF-8
RUN apt-get update && apt-get install -y --no-install-recommends curl git bash ca-certificates unzip && apt-get clean
RUN git clone https://example.invalid/acme/lint.git /home/lint
RUN git config --global --add safe.directory /home
"""


def published_tree(root: Path, **change: Any) -> Path:
    """A published-style tree that means what our generated tasks mean, with `change` applied."""
    options: dict[str, Any] = {
        "verifier_timeout": "900.0",
        "exports": "export CLI_MAX=60\n",
        "test_exports": "export CLI_MAX=60\n",
        "restore": PUB_RESTORE,
        "no_match": "setFailOnNoMatchingTests(false)",
        "base": PUB_BASE,
        "scorer": (VERIFIER_DIR / "junit_compare.py").read_text(),
        "collector": PUB_COLLECTOR,
        "warmup": "./gradlew clean test",
        "dockerfile": PUB_DOCKERFILE,
    } | change
    for n, m in ((7, 6), (9, 8)):
        task = root / "tasks" / f"acme_lint-{n}"
        files = {
            "task.toml": PUB_TOML.format(
                n=n, m=m, verifier_timeout=options["verifier_timeout"], hosts=json.dumps(HOSTS)
            ),
            "environment/Dockerfile": options["dockerfile"],
            "environment/prepare.sh": PUB_PREPARE.format(base=BASE, exports=options["exports"]).replace(
                "./gradlew clean test\n", options["warmup"] + "\n"
            ),
            "environment/seal_git_history.sh": PUB_SEAL,
            "environment/exclude-flaky-tests.gradle": PUB_INIT.replace("{no_match}", options["no_match"]),
            "environment/docker-compose.yaml": f"services:\n  main:\n    image: kotlin-bench/acme_lint:pr-{n}\n",
            "tests/test.sh": PUB_TEST.format(restore=options["restore"], exports=options["test_exports"]),
            "tests/junit_compare.py": options["scorer"],
            "tests/kotlin_logs_collector.sh": options["collector"],
            "solution/solve.sh": PUB_SOLVE,
        }
        for rel, text in files.items():
            (task / rel).parent.mkdir(parents=True, exist_ok=True)
            (task / rel).write_text(text)
    (root / "bases/acme_lint").mkdir(parents=True, exist_ok=True)
    (root / "bases/acme_lint/Dockerfile.base").write_text(options["base"])
    return root


@pytest.fixture
def ours(tmp_path: Path) -> Callable[..., tuple[Any, Path]]:
    """Generate our task directories and bases from a (changed) spec; returns (dataset, root)."""

    def make(change: Callable[[dict[str, Any]], None] | None = None) -> tuple[Any, Path]:
        data = copy.deepcopy(spec())
        if change:
            change(data)
        dataset = parse_dataset(data)
        root = tmp_path / "ours"
        shutil.rmtree(root, ignore_errors=True)
        (root / "dataset").mkdir(parents=True)
        (root / "dataset/tiny.json").write_text(json.dumps(data))
        generate(dataset, root / "tasks", bases_out=root / "bases", repo_root=root)
        return dataset, root

    return make


def run_check(
    dataset: Any,
    root: Path,
    published: Path,
    agent_env: fidelity.AgentEnv = phase_env,
    carries_agent_head: bool = True,
) -> fidelity.FidelityReport:
    source = PublishedSource(location=str(published), commit=None)
    return fidelity.check(
        dataset,
        root / "tasks",
        root / "bases",
        source,
        agent_env=agent_env,
        carries_agent_head=carries_agent_head,
    )


def keys(report: fidelity.FidelityReport, impact: Impact) -> set[str]:
    return {d.key for d in report.differences if d.impact is impact}


def test_the_same_meaning_passes(ours: Callable[..., Any], tmp_path: Path) -> None:
    dataset, root = ours()
    report = run_check(dataset, root, published_tree(tmp_path / "pub"))
    assert report.unexplained == [], fidelity.render(report, 2)
    assert keys(report, Impact.BEHAVIOUR) == set(KEPT)
    assert {d.intended for d in report.differences if d.impact is Impact.BEHAVIOUR} == {"kept"}
    # Our metadata is not theirs, and we install the agent's tools in the base: never a failure.
    assert "task_toml.metadata.source.code_change_type" in keys(report, Impact.COSMETIC)
    assert "task_toml.verifier.implemented" in keys(report, Impact.COSMETIC)
    assert "task_dockerfile.agent_tools_installed_in" in keys(report, Impact.RESTRUCTURED)
    assert report.compared["tests/test.sh"] == 2 and report.compared["base recipe"] == 1


def test_a_verifier_that_restores_from_the_base_is_not_the_published_one(
    ours: Callable[..., Any], tmp_path: Path
) -> None:
    """The published test.sh restores the test patch's paths from HEAD in the agent's container: the
    agent's commits. Ours runs in a fresh container, where HEAD is the base unless the hand-off carries
    the agent's commits (it does: handoff.carries_agent_head)."""
    from kotlin_bench.runs import handoff

    assert handoff.carries_agent_head()
    dataset, root = ours()
    report = run_check(dataset, root, published_tree(tmp_path / "pub"), carries_agent_head=False)
    found = {(d.task, d.ours, d.published) for d in report.unexplained if d.key == "verifier.restored_from"}
    assert found == {(t, "the base commit", "the agent's HEAD") for t in ("acme_lint-7", "acme_lint-9")}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"test_exports": "export CLI_MAX=60\nexport CI=true\n"}, "verifier.env"),
        ({"exports": ""}, "prepare.warmup_env"),
        ({"warmup": "./gradlew clean test || true"}, "prepare.on_failure"),
        ({"warmup": "./gradlew clean jacocoUnitTestReport --max-workers=2"}, "prepare.warmup_steps"),
        ({"restore": ""}, "verifier.restores_test_patch_paths"),
        ({"no_match": ""}, "init_script.no_match_passes"),
        ({"verifier_timeout": "600.0"}, "task_toml.verifier.timeout_sec"),
        ({"base": PUB_BASE.replace("ENV LANG=C.UTF-8\n", "")}, "base[kotlin-bench/acme_lint:base].env"),
        (
            {"base": PUB_BASE.replace("unzip", "unzip libgl1")},
            "base[kotlin-bench/acme_lint:base].apt_missing",
        ),
        (
            {
                "scorer": (VERIFIER_DIR / "junit_compare.py")
                .read_text()
                .replace(
                    "return SKIP if self.skipped else FAIL if self.failed else PASS",
                    "return FAIL if self.failed else SKIP if self.skipped else PASS",
                )
            },
            "scorer.skipped_and_failed_in_one_testcase",
        ),
    ],
)
def test_a_behaviour_changing_difference_is_found(
    ours: Callable[..., Any], tmp_path: Path, change: dict[str, Any], key: str
) -> None:
    dataset, root = ours()
    report = run_check(dataset, root, published_tree(tmp_path / "pub", **change))
    assert key in {d.key for d in report.unexplained}, fidelity.render(report, 2)


def test_a_listed_difference_passes_with_its_reason_and_only_for_its_tasks(
    ours: Callable[..., Any], tmp_path: Path
) -> None:
    published = published_tree(tmp_path / "pub", restore="")
    listed = {"key": "verifier.restores_test_patch_paths", "reason": "we restore", "tasks": ["acme_lint-7"]}
    dataset, root = ours(lambda d: d["fidelity"]["intended"].append(listed))
    report = run_check(dataset, root, published)
    assert [(d.task, d.key) for d in report.unexplained] == [
        ("acme_lint-9", "verifier.restores_test_patch_paths")
    ]
    explained = [d for d in report.differences if d.intended and d.key not in KEPT]
    assert [(d.task, d.intended) for d in explained] == [("acme_lint-7", "we restore")]


# --------------------------------------------------------------------------- the six classes of issue 24
# Each published-style change below makes the check fail on a difference of its class until the
# specification lists it.

PUB_ANDROID = (
    "ENV ANDROID_SDK_ROOT=/opt/android-sdk ANDROID_HOME=/opt/android-sdk PATH=$PATH:/opt/android-sdk/cmdline-tools/latest/bin\n"
    "RUN mkdir -p /opt/android-sdk/cmdline-tools && curl -o t.zip https://dl.google.com/android/repository/"
    "commandlinetools-linux-{build}_latest.zip && unzip t.zip -d /opt/android-sdk/cmdline-tools && "
    "mv /opt/android-sdk/cmdline-tools/cmdline-tools /opt/android-sdk/cmdline-tools/latest\n"
    'RUN yes | sdkmanager --licenses && sdkmanager "platform-tools"\n'
)


def _android_base(build: str, stage: str = "") -> str:
    """The published-style base with an Android SDK by command-line tools `build` (in a stage of its own
    FROM `stage`, when given)."""
    sdk = PUB_ANDROID.format(build=build)
    if stage:
        sdk = sdk.replace("ENV ANDROID", "ENV XANDROID", 1)
        return (
            f"FROM {stage} AS sdk\n{sdk}" + PUB_BASE + "COPY --from=sdk /opt/android-sdk /opt/android-sdk\n"
        )
    return PUB_BASE.replace("RUN git clone", sdk + "RUN git clone", 1)


def _with_android(data: dict[str, Any], build: str = "7302050") -> None:
    data["bases"][0].update(android_sdk_packages=["platform-tools"], android_cmdline_tools=build)


def _scorer(old: str, new: str) -> str:
    text = (VERIFIER_DIR / "junit_compare.py").read_text()
    assert old in text
    return text.replace(old, new)


BASE_KEY = "base[kotlin-bench/acme_lint:base]"
CLASS_FIXTURES: dict[str, tuple[dict[str, Any], Callable[[dict[str, Any]], None] | None, set[str]]] = {
    # 1. what the agent phase makes programs print: a published image whose JVMs announce an option
    "agent phase: a JVM banner": (
        {"base": PUB_BASE.replace("ENV LANG=C.UTF-8\n", "ENV LANG=C.UTF-8\nENV JAVA_TOOL_OPTIONS=-Xss4m\n")},
        None,
        {"agent_phase.jvm_banner"},
    ),
    # 2. the agent's starting tree: the published warm-up's leftovers removed, or a clean tree required
    "starting tree: test results deleted": (
        {
            "warmup": "./gradlew clean test\nfind . -type d -path '*/build/test-results' -prune -exec rm -rf {} +"
        },
        None,
        {"starting_tree.test_results"},
    ),
    "starting tree: reset and cleaned": (
        {"warmup": "./gradlew clean test\ngit reset --hard\ngit clean -fdx"},
        None,
        {"starting_tree.tracked_changes", "starting_tree.untracked_files", "starting_tree.test_results"},
    ),
    "starting tree: a clean tree required": (
        {"dockerfile": PUB_DOCKERFILE.replace("RUN chmod", "RUN bash /home/check_git_changes.sh\nRUN chmod")},
        None,
        {"starting_tree.clean_tree_required"},
    ),
    "starting tree: ours resets": (
        {},
        lambda d: d["repositories"]["acme/lint"]["warmup"].update(after="reset"),
        {
            "starting_tree.tracked_changes",
            "starting_tree.untracked_files",
            "starting_tree.clean_tree_required",
        },
    ),
    # 3. base tool versions: another command-line tools build, or sdkmanager on another JDK
    "base tools: the command-line tools build": (
        {"base": _android_base("7302050")},
        lambda d: _with_android(d, "11076708"),
        {f"{BASE_KEY}.android_cmdline_tools"},
    ),
    "base tools: the JDK sdkmanager runs on": (
        {"base": _android_base("7302050", stage="eclipse-temurin:17-jdk")},
        _with_android,
        {f"{BASE_KEY}.sdkmanager_jdk"},
    ),
    # 4. process handling: a published verifier that leaves processes alone (KEPT lists ours)
    "processes: ours stops them": (
        {},
        lambda d: d["fidelity"]["intended"].pop(KEPT.index("verifier.other_processes")),
        {"verifier.other_processes"},
    ),
    # 5. the collector-plus-scorer pipeline on report shapes, and the size caps
    "reports: a collector that keeps the declarations": (
        {
            "collector": PUB_COLLECTOR.replace(
                "[ $declarations = yes ] && [ \"${text:0:5}\" = '<?xml' ]", "false"
            )
        },
        None,
        {"pipeline.two_declarations", "pipeline.a_gradle_report", "pipeline.two_reports"},
    ),
    "reports: a scorer that reads namespaced elements": (
        {"scorer": _scorer('if tag == "testcase":', 'if tag.rsplit("}", 1)[-1] == "testcase":')},
        None,
        {"pipeline.a_namespaced_testcase", "pipeline.a_namespaced_testsuite"},
    ),
    "reports: the collector's cap": (
        {},
        lambda d: d["fidelity"]["intended"].pop(KEPT.index("collector.size_cap")),
        {"collector.size_cap"},
    ),
    # 6. expected-list validation: a scorer that requires every list
    "expected lists: a missing list is invalid": (
        {"scorer": _scorer('data.get(f"{cat}_tests", [])', 'data.get(f"{cat}_tests")')},
        None,
        {"scorer.expected_no_s2p_tests_key"},
    ),
}


@pytest.mark.parametrize("name", sorted(CLASS_FIXTURES))
def test_each_class_fails_until_listed(ours: Callable[..., Any], tmp_path: Path, name: str) -> None:
    published, change, found = CLASS_FIXTURES[name]
    dataset, root = ours(change)
    pub = published_tree(tmp_path / "pub", **published)
    report = run_check(dataset, root, pub)
    unexplained = {d.key for d in report.unexplained}
    assert found <= unexplained, fidelity.render(report, 2)

    def listed(data: dict[str, Any]) -> None:
        if change:
            change(data)
        data["fidelity"]["intended"] += [{"key": key, "reason": "for the test"} for key in unexplained]

    dataset, root = ours(listed)
    report = run_check(dataset, root, pub)
    assert report.unexplained == [], fidelity.render(report, 2)
    assert {d.key for d in report.differences if d.intended == "for the test"} == unexplained


def test_the_agent_phase_of_a_runner_that_sets_jvm_options_fails(
    ours: Callable[..., Any], tmp_path: Path
) -> None:
    """Our side of class 1: an agent phase that passed the proxy in JAVA_TOOL_OPTIONS (as kotlin-bench once
    did) makes every JVM print a banner the published runner never causes."""
    dataset, root = ours()

    def old_way(mode: str, hosts: Any) -> dict[str, str]:
        return {**phase_env(mode, hosts), "JAVA_TOOL_OPTIONS": "-Dhttps.proxyHost=egress-proxy"}

    report = run_check(dataset, root, published_tree(tmp_path / "pub"), agent_env=old_way)
    banner = {(d.ours, d.published) for d in report.unexplained if d.key == "agent_phase.jvm_banner"}
    assert banner == {("Picked up JAVA_TOOL_OPTIONS: -Dhttps.proxyHost=egress-proxy", "(none)")}


def test_our_side_changes_are_found_too(ours: Callable[..., Any], tmp_path: Path) -> None:
    """The check reads our generated files: a spec that drops a published fact is caught."""

    def drop_env(data: dict[str, Any]) -> None:
        del data["repositories"]["acme/lint"]["test_env"]
        data["conventions"]["git_config"] = {"core.autocrlf": "input"}

    dataset, root = ours(drop_env)
    report = run_check(dataset, root, published_tree(tmp_path / "pub"))
    assert {"verifier.env", "prepare.warmup_env", "prepare.git_config"} <= {d.key for d in report.unexplained}


def test_cli_exit_status_and_report(
    ours: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, root = ours()
    monkeypatch.chdir(root)
    base = ["fidelity", "--spec", "dataset/tiny.json", "--published"]
    assert main([*base, str(published_tree(tmp_path / "good")), "--report", "r.md"]) == 0
    assert "OK: every behaviour-changing difference" in (root / "r.md").read_text()
    assert main([*base, str(published_tree(tmp_path / "bad", no_match=""))]) == 1
    out = capsys.readouterr().out
    assert "FAIL: 2 behaviour-changing difference(s)" in out and "init_script.no_match_passes" in out
    assert "Not compared" not in out
    assert main([*base, str(tmp_path / "nowhere")]) == 2


# --------------------------------------------------------------------------- on the example dataset


def test_a_fix_with_edited_hidden_test_files_resolves_as_published(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    """An agent that writes the fix and also edits the test file the hidden test patch changes (and adds
    the tests it adds, its own way) resolves: the published verifier restores those files first. With
    `verifier: {test_patch: strict}` the same work scores 0 (test_patch_failed). The same work committed
    scores 0 (test_patch_failed) as published: the published verifier restores from the agent's HEAD, in
    its container; the fresh verifier makes the agent's committed tree HEAD (work/committed.diff)."""
    from kotlin_bench.core.record import Status
    from tests.conftest import REPO, without_runs

    task = "examples_calc-4"
    ws = without_runs(finished_examples, tmp_path / "ws")
    attacks = REPO / "examples/adversarial/attacks"
    script = (
        (attacks / "gold-script.sh").read_text()
        + "\n"
        + (attacks / "edit-tests.sh").read_text().split("\n", 1)[1]
    )
    agent = ws.write("fix-and-edit-tests.sh", script, 0o755)
    commit = "\ngit add -A && git -c user.name=a -c user.email=a@example.invalid commit -qm 'my fix'\n"
    committing = ws.write("fix-edit-tests-and-commit.sh", script + commit, 0o755)
    agents = [
        {"name": "published", "kind": "script", "script": agent},
        {"name": "strict", "kind": "script", "script": agent},
        {"name": "committing", "kind": "script", "script": committing},
    ]
    ws.configure([task], agents)
    out = ws.snakemake(ws.target("published", task), ws.target("committing", task))
    assert out.returncode == 0, out.stderr[-3000:]
    ws.configure([task], agents, verifier={"test_patch": "strict"})
    out = ws.snakemake(ws.target("strict", task))
    assert out.returncode == 0, out.stderr[-3000:]
    published, strict = ws.result("published", task), ws.result("strict", task)
    assert published is not None and strict is not None
    assert published.status is Status.RESOLVED, published.verifier.reasons
    assert "src/test/kotlin/calc/CalculatorTest.kt" in published.flags["tests"]  # flagged for review
    assert (strict.status, strict.reason) == (Status.UNRESOLVED, "test_patch_failed")
    committed = ws.result("committing", task)
    assert committed is not None
    assert (committed.status, committed.reason) == (Status.UNRESOLVED, "test_patch_failed")
    assert committed.capture is not None and committed.capture.committed_bytes > 0
    work = (ws.root / names.work_record("committing", task, 1)).parent
    assert "src/test/kotlin/calc/CalculatorTest.kt" in (work / "committed.diff").read_text()


def test_the_tools_build_is_read_through_an_arg_default() -> None:
    """A recipe that names the build in an ARG (as kotlin-bench's recipes once did) is read for its value."""
    from kotlin_bench.dataset.fidelity.facts import parse_dockerfile

    recipe = (
        "FROM eclipse-temurin:17-jdk AS sdk\nARG BUILD=11076708\n"
        'RUN curl -o t.zip "https://dl.google.com/android/repository/commandlinetools-linux-${BUILD}_latest.zip"\n'
        "RUN sdkmanager --install platform-tools\nFROM eclipse-temurin:8-jdk\n"
    )
    parsed = parse_dockerfile(recipe)
    assert (parsed.cmdline_tools, parsed.sdkmanager_jdk, parsed.base) == (
        "11076708",
        "eclipse-temurin:17-jdk",
        "eclipse-temurin:8-jdk",
    )
