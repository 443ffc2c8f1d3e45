"""The examples show the real tasks' classes of requests (issue 36, item 7), offline, against the stand-in
Maven repository (examples/standin-repo/builds.txt, docs/standin-repo.md):

- a base build that applies the project's own published build at a version after its base: tally's
  `apiCheck` (build.gradle) resolves `examples:tally:1.1.0-dev-1`, a development build after the base's
  1.0.0 (as detekt applies its newer release to itself, as dataframe applies its `-dev-N` plugin); the
  tally tasks state it as `base_build`;
- a carrier: `examples:units-all`, units' fat jar, bundles tally (1.1.0 carries tally 1.1.0, the fix of
  examples_tally-2); tally states it under `carriers`, units under its own coordinates.

First the facts (they validate against the dataset schema, agree with builds.txt and the base's build
file, and the classifier judges them as intended), then one agent phase of examples_tally-2 per policy
behind the recording proxy, reaching the machine's stand-in repository as the examples' phases do: the
self-applying build resolves under `retrieval: block` unflagged; the carrier, the fix's release as a
dependency Gradle adds, and versions the rule cannot order are flagged under `flag` and refused under
`block`.
"""

from __future__ import annotations

import io
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.retrieval import classify
from kotlin_bench.dataset.spec import load_dataset
from kotlin_bench.engine import containers, egress, network
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.tools import standin_content
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO
from tests.test_standin_repo import fetch

EXAMPLES = load_dataset(REPO / "examples" / "dataset.json")  # checked against the schema as it loads
M2 = names.STANDIN_BASE_URL.rstrip("/")
TALLY = f"{M2}/examples/tally"
UNITS_ALL = f"{M2}/examples/units-all"
R, OK = "retrieval", "ok"
RANGE_QUERY = (
    f"https://{names.STANDIN_HOST}/service/rest/v1/search/assets/download"
    "?maven.groupId=examples&maven.artifactId=tally&maven.baseVersion=%5B0%2C%29"
)


def test_the_builds_of_the_stand_in_are_the_facts_of_the_examples() -> None:
    """builds.txt (what the stand-in serves) and examples/dataset.json (what the tasks state) agree; the
    base-build need is in the build file at the base commit, as its source says."""
    dev, bundles = standin_content.builds(REPO)
    assert dev and bundles
    for build in dev:
        tasks = [t for t in EXAMPLES.tasks if t.repository.repo == build.project]
        assert tasks
        for task in tasks:
            assert build.release == task.base_version, task.id  # a build of the base's own release
            need = [(str(n.coordinate), n.version) for n in task.base_build]
            assert need == [(f"{names.STANDIN_GROUP}:{build.project}", build.version)], task.id
            assert (
                task.base_commit in task.base_build[0].source and "build.gradle" in task.base_build[0].source
            )
        build_file = REPO / f"examples/bases/{build.project}/upstream/tree/build.gradle"
        assert f"'{names.STANDIN_GROUP}:{build.project}:{build.version}'" in build_file.read_text()
    for bundle in bundles:
        carried = EXAMPLES.repositories[f"examples/{bundle.carried}"].artifacts
        own = EXAMPLES.repositories[f"examples/{bundle.project}"].artifacts
        assert carried is not None and own is not None
        (carrier,) = [c for c in carried.carriers if str(c.coordinate) == f"examples:{bundle.artifact}"]
        assert carrier.project == f"examples/{bundle.project}" and carrier.how == "bundles"
        assert tuple((e.carrier_version, e.carried_version) for e in carrier.carries) == bundle.versions
        assert own.covers(names.STANDIN_GROUP, bundle.artifact)  # the bundle is its own project's too


@pytest.mark.parametrize(
    ("task", "url", "expected"),
    [
        # the base's own build: its development build is ok whatever its version, under every form
        ("examples_tally-2", f"{TALLY}/1.1.0-dev-1/tally-1.1.0-dev-1.jar", OK),
        ("examples_tally-4", f"{TALLY}/1.1.0-dev-1/tally-1.1.0-dev-1.pom", OK),
        ("examples_tally-2", f"{TALLY}/1.1.0-dev-1/tally-1.1.0-dev-1.jar.sha1", OK),
        ("examples_tally-2", f"{TALLY}/1.1.0-dev-2/tally-1.1.0-dev-2.jar", R),  # another dev build: no need
        ("examples_tally-2", f"{TALLY}/1.0.0/tally-1.0.0-sources.jar", OK),
        # the carrier: what it carries decides, for tally-2 (fixed in 1.1.0) and tally-4 (after the base)
        ("examples_tally-2", f"{UNITS_ALL}/1.1.0/units-all-1.1.0.jar", R),
        ("examples_tally-4", f"{UNITS_ALL}/1.1.0/units-all-1.1.0-sources.jar", R),
        ("examples_tally-2", f"{UNITS_ALL}/1.0.0/units-all-1.0.0.jar", OK),
        ("examples_tally-2", f"{UNITS_ALL}/1.2.0/units-all-1.2.0.jar", R),  # newer than every mapped one
        ("examples_units-12", f"{UNITS_ALL}/1.1.0/units-all-1.1.0.jar", R),  # units' own fat jar
        ("examples_units-12", f"{UNITS_ALL}/1.0.0/units-all-1.0.0.jar", OK),
        ("examples_calc-4", f"{UNITS_ALL}/1.1.0/units-all-1.1.0.jar", OK),  # carries nothing of calc
        # versions the rule cannot order
        ("examples_tally-2", f"{TALLY}/main-SNAPSHOT/tally-main-SNAPSHOT.jar", R),
        ("examples_tally-2", f"{TALLY}/LATEST/tally-LATEST.jar", R),
        ("examples_tally-4", RANGE_QUERY, R),
        ("examples_tally-2", f"{TALLY}/maven-metadata.xml", OK),
    ],
)
def test_the_examples_facts_classify_as_intended(task: str, url: str, expected: str) -> None:
    verdict = classify(url, EXAMPLES.task(task).retrieval_facts())
    assert (R if verdict.retrieval else OK) == expected, verdict


def test_the_stand_in_serves_the_development_build_and_the_carrier(standin_repo: Any) -> None:
    """The development build holds the base release's classes; the carrier's 1.1.0 holds tally's fix."""
    jars = {}
    for url in (
        f"{TALLY}/1.0.0/tally-1.0.0.jar",
        f"{TALLY}/1.1.0-dev-1/tally-1.1.0-dev-1.jar",
        f"{UNITS_ALL}/1.0.0/units-all-1.0.0-sources.jar",
        f"{UNITS_ALL}/1.1.0/units-all-1.1.0-sources.jar",
        f"{UNITS_ALL}/1.1.0/units-all-1.1.0.jar",
    ):
        code, data = fetch(url)
        assert code == 200, url
        jars[url.rsplit("/", 1)[1]] = zipfile.ZipFile(io.BytesIO(data))
    base, dev = jars["tally-1.0.0.jar"], jars["tally-1.1.0-dev-1.jar"]
    assert {n: base.read(n) for n in base.namelist()} == {n: dev.read(n) for n in dev.namelist()}
    amount = "tally/Amount.java"
    assert "grouped(" in jars["units-all-1.1.0-sources.jar"].read(amount).decode()  # pull request 2's fix
    assert "grouped(" not in jars["units-all-1.0.0-sources.jar"].read(amount).decode()
    assert {"tally/Amount.class", "units/Length.class"} <= set(jars["units-all-1.1.0.jar"].namelist())
    code, metadata = fetch(f"{TALLY}/maven-metadata.xml")
    assert code == 200 and b"<version>1.1.0-dev-1</version>" in metadata


# The agent of the phase, in examples_tally-2's work tree: the base's own API check (its build applies
# the project's development build), then Gradle with dependencies the agent adds to the build (the fix's
# release, and the carrier), then fetches of versions the rule cannot order. One line each: `<label> <rest>`.
AGENT = r"""
import subprocess, sys, urllib.error, urllib.request
from pathlib import Path

ADDED = '''
configurations { added }
dependencies { added 'examples:tally:1.1.0'; added 'examples:units-all:1.1.0' }
task added { doLast { configurations.added.files.each { println "added:${it.name}" } } }
'''

def gradle(task):
    done = subprocess.run(["gradle", "--no-daemon", "-q", task], cwd="/home/tally", capture_output=True, text=True)
    out = " ".join((done.stdout + done.stderr).split())
    print(task, done.returncode, " ".join(w for w in out.split() if w.startswith("added:")) or out[-400:])

build = Path("/home/tally/build.gradle")
original = build.read_text()
if sys.argv[1] == "apiCheck":  # the base's own build: once, under `block` (Gradle's cache has it after)
    gradle("apiCheck")
build.write_text(original + ADDED)
gradle("added")
build.write_text(original)
for label, url in zip(sys.argv[2::2], sys.argv[3::2]):
    try:
        print(label, urllib.request.urlopen(url, timeout=30).status)
    except urllib.error.HTTPError as e:
        print(label, e.code, e.read()[:120])
    except OSError as e:
        print(label, "ERR", e)
"""
UNORDERABLE = {
    "snapshot": f"{TALLY}/main-SNAPSHOT/tally-main-SNAPSHOT.jar",
    "latest": f"{TALLY}/LATEST/tally-LATEST.jar",
    "range": RANGE_QUERY,
}
TASK = "examples_tally-2"


def _phase(
    engine: Any, container: Any, key: str, policy: egress.Retrieval, tmp: Path
) -> tuple[dict[str, str], list[egress.EgressRequest]]:
    """One allowlist phase of the agent behind the recording proxy: its lines by label, and the record."""
    setup = egress.EgressSetup(
        egress.EgressPolicy(retrieval=policy),
        EXAMPLES.task(TASK).retrieval_facts(),
        egress.ensure_ca(tmp / "ca"),
        tmp / f"{policy}.jsonl",
    )
    urls = [x for label, url in UNORDERABLE.items() for x in (label, url)]
    with network.enter_phase(
        engine, container, "allowlist", [names.STANDIN_HOST], key, recording=setup
    ) as phase:
        first = "apiCheck" if policy is egress.Retrieval.BLOCK else "-"
        done = container.exec_run(["python3", "/tmp/agent.py", first, *urls], environment=phase.env)
    assert done.exit_code == 0, done.output
    lines = dict(line.split(" ", 1) for line in done.output.decode().splitlines() if " " in line)
    return lines, egress.read_egress(setup.record_path)


def test_the_examples_classes_of_requests_through_the_recording_proxy(
    finished_examples: Workspace, standin_repo: Any, tmp_path: Path
) -> None:
    engine = connect(EngineSettings(extra_hosts=((names.STANDIN_HOST, "host-gateway"),)))
    image = read_sentinel(finished_examples.root / names.task_sentinel(TASK)).id
    key = f"retrievalexamples.{uuid.uuid4().hex[:8]}.1"
    labels = {"kotlin-bench.test": "retrieval-examples"}
    container = containers.start(engine, image, key, labels, cpus=2, memory_mb=2048, pids=4096)
    try:
        containers.put_files(container, "/tmp", {"agent.py": AGENT.encode()})
        # `block` first: the self-applying build's fetches happen here (Gradle's cache has them after)
        seen, requests = _phase(engine, container, key, egress.Retrieval.BLOCK, tmp_path)
        assert seen["apiCheck"].startswith("0 ") and "apiCheck: " in seen["apiCheck"], seen
        own = [r for r in requests if "/examples/tally/1.1.0-dev-1/" in r.path]
        assert {r.path.rsplit("/", 1)[1] for r in own} >= {"tally-1.1.0-dev-1.pom", "tally-1.1.0-dev-1.jar"}
        assert all(r.status == 200 and not r.retrieval and not r.blocked for r in own), own
        assert not seen["added"].startswith("0 ") and "403" in seen["added"], seen  # Gradle refused
        for label in UNORDERABLE:
            assert seen[label].startswith("403") and "may contain the task's fix" in seen[label], seen
        blocked = {r.path for r in requests if r.blocked}
        assert all(r.retrieval and r.status == 403 for r in requests if r.blocked)
        assert {p.rsplit("/", 1)[1] for p in blocked if "/examples/" in p} >= {
            "tally-1.1.0.pom",
            "units-all-1.1.0.pom",
            "tally-main-SNAPSHOT.jar",
            "tally-LATEST.jar",
        }, blocked
        assert any("maven.baseVersion" in p for p in blocked), blocked
        assert [r for r in requests if r.retrieval and not r.blocked] == []

        seen, requests = _phase(engine, container, key, egress.Retrieval.FLAG, tmp_path)
        assert seen["added"].split()[:1] == ["0"], seen
        assert {"added:tally-1.1.0.jar", "added:units-all-1.1.0.jar"} <= set(seen["added"].split()), seen
        assert not any(r.blocked for r in requests)
        flagged = {r.path.rsplit("/", 1)[1] for r in requests if r.retrieval}
        assert flagged >= {
            "tally-1.1.0.pom",
            "tally-1.1.0.jar",
            "units-all-1.1.0.pom",
            "units-all-1.1.0.jar",
            "tally-main-SNAPSHOT.jar",
            "tally-LATEST.jar",
        }, flagged
        assert any("maven.baseVersion" in r.path for r in requests if r.retrieval)
        for label in UNORDERABLE:  # passed on under `flag`: the stand-in has none of them
            assert seen[label].startswith("404"), seen
        # nothing else was flagged: metadata and the base's own build are not
        assert all("1.1.0-dev-1" not in r.path for r in requests if r.retrieval)
    finally:
        containers.reap(engine.client, key)
        network.reap_networks(engine, key)
