"""The stand-in Maven repository (kotlin_bench.tools.standin_repo, docs/standin-repo.md): the machine's
server over HTTPS verified by the committed CA, from this host and from an example's containers (a public
verifier phase through `extra_hosts`, an allowlist agent phase through the egress proxy); its content
(compiled jars, sources jars whose fix releases contain the fixes, checksums, metadata, the dataset's
versions); faults, stops and starts on an instance of its own (the machine's server stays up for others).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import socket
import ssl
import subprocess
import urllib.error
import urllib.request
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine import containers
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.engine.phase import Limits, PhaseContainer
from kotlin_bench.tools.standin_repo import NGINX, StandinRepo, Status
from kotlin_bench.tools.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
CA = REPO / names.STANDIN_CA


def fetch(url: str) -> tuple[int, bytes]:
    """GET from this host, by the name /etc/hosts gives, verified by the committed CA only."""
    context = ssl.create_default_context(cafile=str(CA))
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    try:
        with opener.open(url, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def added_main_lines(patch: Path) -> dict[str, list[str]]:
    """The lines a pull request's patch adds to main sources: path below `kotlin/` -> lines."""
    added: dict[str, list[str]] = {}
    current = None
    for line in patch.read_text(encoding="utf-8").splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
            current = path.split("src/main/kotlin/", 1)[1] if "src/main/kotlin/" in path else None
        elif current and line.startswith("+") and line[1:].strip():
            added.setdefault(current, []).append(line[1:])
    return added


def test_the_examples_releases_and_third_party_artifacts_over_https(standin_repo: StandinRepo) -> None:
    status, line = standin_repo.status()
    assert status is Status.ANSWERS, line
    base = names.STANDIN_BASE_URL
    dataset = json.loads((REPO / "examples/dataset.json").read_text(encoding="utf-8"))
    checked = 0
    for task in dataset["tasks"]:
        project = task["repository"].split("/")[1]
        coordinates = dataset["repositories"][task["repository"]]["artifacts"]["coordinates"]
        # the project's own artifact first (a carrier of its code may follow: units-all)
        assert coordinates[0]["pattern"] == f"examples:{project}"
        code, metadata = fetch(f"{base}examples/{project}/maven-metadata.xml")
        versions = [v.split("<")[0] for v in metadata.decode().split("<version>")[1:]]
        assert code == 200 and task["base_version"] in versions and task["fix_release"] in versions
        assert any(v < task["base_version"] for v in versions), "an older release than the base's"
        jars = {}
        for version in (task["base_version"], task["fix_release"]):
            stem = f"{base}examples/{project}/{version}/{project}-{version}"
            for suffix in (".jar", "-sources.jar", ".pom"):
                code, data = fetch(stem + suffix)
                assert code == 200, stem + suffix
                assert fetch(stem + suffix + ".sha1") == (200, hashlib.sha1(data).hexdigest().encode())
                jars[version, suffix] = data
        sources = {
            v: zipfile.ZipFile(io.BytesIO(jars[v, "-sources.jar"]))
            for v in (task["base_version"], task["fix_release"])
        }
        binary = zipfile.ZipFile(io.BytesIO(jars[task["fix_release"], ".jar"]))
        classes = [n for n in binary.namelist() if n.endswith(".class")]
        for source in [n for n in sources[task["fix_release"]].namelist() if n.endswith(".kt")]:
            assert any(c.startswith(source.rsplit("/", 1)[0] + "/") for c in classes), f"{source} compiled"
        # the fix release holds every line the pull request adds to the main sources; the base release not
        patch = REPO / f"examples/bases/{project}/upstream/pulls/{task['pr']}.patch"
        for path, lines in added_main_lines(patch).items():
            fixed = sources[task["fix_release"]].read(path).decode()
            assert all(line in fixed for line in lines), f"{task['id']}: {path} of {task['fix_release']}"
            before = sources[task["base_version"]]
            old = before.read(path).decode() if path in before.namelist() else ""
            assert not all(line in old for line in lines), f"{task['id']}: {path} of {task['base_version']}"
            checked += 1
    assert checked >= len(dataset["tasks"])
    # calc #3, unary minus, is in calc 1.1.0 and not in 1.0.0
    parser = {v: fetch(f"{base}examples/calc/{v}/calc-{v}-sources.jar")[1] for v in ("1.0.0", "1.1.0")}
    text = {
        v: zipfile.ZipFile(io.BytesIO(b)).read("calc/Parser.kt").decode().lower() for v, b in parser.items()
    }
    assert "unary" in text["1.1.0"] and "unary" not in text["1.0.0"]
    code, pom = fetch(f"{base}junit/junit/4.13.2/junit-4.13.2.pom")
    assert code == 200 and b"<artifactId>hamcrest-core</artifactId>" in pom
    code, jar = fetch(f"{base}org/hamcrest/hamcrest-core/1.3/hamcrest-core-1.3.jar")
    assert code == 200 and "org/hamcrest/CoreMatchers.class" in zipfile.ZipFile(io.BytesIO(jar)).namelist()
    assert fetch(f"{base}examples/calc/9.9.9/calc-9.9.9.jar")[0] == 404
    script = subprocess.run([str(REPO / "scripts/standin_repo.sh"), "status"], capture_output=True, text=True)
    assert script.returncode == 0 and "answers 200" in script.stdout


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.skipif(os.geteuid() != 0 or not Path(NGINX).is_file(), reason="needs root and nginx")
def test_faults_stops_and_starts_of_an_instance_of_its_own(standin_repo: StandinRepo, tmp_path: Path) -> None:
    repo = StandinRepo(state_dir=tmp_path / "standin", port=free_port())
    try:
        assert repo.status()[0] is Status.STOPPED
        repo.start(REPO)  # the content the machine's server built is served again, not rebuilt
        assert repo.www.resolve() == standin_repo.www.resolve()
        pid = repo.pid()
        repo.start(REPO)
        assert repo.pid() == pid and repo.status()[0] is Status.ANSWERS
        metadata = "examples/calc/maven-metadata.xml"
        assert repo.answer(metadata) == 200
        repo.fault(503)
        assert repo.answer(metadata) == 503 and repo.answer() == 503
        assert repo.status()[0] is Status.ANSWERS  # it answers: with the fault's status
        repo.fault(None)
        assert repo.answer(metadata) == 200
        repo.fault(503)
        repo.start(REPO)  # start serves: the fault is off
        assert repo.answer(metadata) == 200 and repo.pid() == pid
        repo.stop()
        assert repo.status()[0] is Status.STOPPED and repo.answer() is None
        repo.stop()
        repo.start(REPO)
        assert repo.status()[0] is Status.ANSWERS and repo.pid() != pid
        assert standin_repo.answer(metadata) == 200  # the machine's server was never touched
    finally:
        repo.stop()


def _fetch_in(box: PhaseContainer, url: str, env: dict[str, str]) -> str:
    """What a Python client in the container gets for `url` (its system CA bundle, the proxy variables
    of `env`): `<status> <bytes>`, or the error's class."""
    script = f"""python3 - <<'PY'
import urllib.request
try:
    with urllib.request.urlopen({url!r}, timeout=20) as answer:
        print(answer.status, len(answer.read()))
except Exception as exc:
    print(type(exc).__name__)
PY"""
    code, out = containers.output(box.container, script, env=env, timeout=60)
    assert code == 0, out
    return out.decode().strip()


def _hosts_address(box: PhaseContainer) -> str:
    """The address /etc/hosts gives the stand-in's name first ("" when none); no resolver is asked."""
    script = f"grep -w '{names.STANDIN_HOST}' /etc/hosts | head -1 | cut -f1 | cut -d' ' -f1"
    return containers.output(box.container, script)[1].decode().strip()


def test_an_examples_public_verifier_and_allowlist_agent_phase_reach_it(
    standin_repo: StandinRepo, finished_examples: Workspace
) -> None:
    """The example image trusts the CA (system bundle and the JDK's cacerts); a public phase resolves the
    name through `extra_hosts`; the allowlist agent phase has no such name and reaches the repository
    through the proxy, as its allowed_hosts say."""
    ws = finished_examples
    task = load_task(ws.root / "examples/tasks/examples_calc-4")
    assert task.agent.network_mode == "allowlist" and names.STANDIN_HOST in task.agent.allowed_hosts
    engine = connect(EngineSettings.of_config(ws.config()))
    assert engine.extra_hosts() == {names.STANDIN_HOST: "host-gateway"}
    image = read_sentinel(ws.root / names.task_sentinel(task.id)).id
    url = f"{names.STANDIN_BASE_URL}examples/calc/1.1.0/calc-1.1.0-sources.jar"
    size = len(fetch(url)[1])
    labels: dict[str, Any] = {names.LABEL_TASK: task.id, "kotlin-bench.test": "standin"}
    limits = Limits.of(task, engine.settings)
    key = f"standin.{uuid.uuid4().hex[:8]}.1"
    with PhaseContainer(engine, image, key, labels, limits, phase=task.verifier) as box:
        with box.network(task.verifier) as net:
            box.container.reload()  # Docker's host-gateway: the default bridge's gateway
            assert (
                _hosts_address(box) == box.container.attrs["NetworkSettings"]["Networks"]["bridge"]["Gateway"]
            )
            assert _fetch_in(box, url, net.env) == f"200 {size}"
        java = "keytool -list -cacerts -storepass changeit -alias debian:kotlin-bench-standin-ca.pem"
        assert containers.output(box.container, java)[0] == 0, "the JDK's cacerts trusts the CA"
    with PhaseContainer(engine, image, key, labels, limits, phase=task.agent) as box:
        assert _hosts_address(box) == ""
        with box.network(task.agent) as net:
            assert _fetch_in(box, url, net.env) == f"200 {size}"
            assert f"{names.STANDIN_HOST}:443" in net.proxy_log()  # through the proxy, not around it
