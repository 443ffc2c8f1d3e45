"""Shared fixtures: a minimal valid task directory, and the real engines when present.

The container engines: Docker (`docker_engine`), and rootful Podman (`podman_engine`) for the tests
marked `podman`, which run after all others (`pytest_collection_modifyitems`) with Docker out of reach:
under CI (`.ci/run` sets KOTLIN_BENCH_STOP_DOCKER=1) dockerd is stopped for them and started again at the
end of the session; elsewhere (a Docker engine shared with others) DOCKER_HOST points at a socket that
does not exist, so that nothing falls back to Docker unnoticed. A test written for both engines takes the
`engine` fixture (parametrized: `[docker]`, `[podman]`).

Podman builds nothing here: before Docker goes, the images of the Docker run of the examples
(`finished_examples`) are saved once and loaded into rootful Podman, and later into the rootless user's
(`docker save`, `podman load`: the image ids stay, so that run's sentinels hold on every engine). Building
from nothing on Podman (debootstrap or mmdebstrap, the bases, the task images) costs minutes and was run
by hand (docs/engines.md, "What the tests run, and what was run by hand").
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.dataset.task import discover, load_task
from kotlin_bench.engine.engine import EngineError, EngineSettings, Kind, connect
from kotlin_bench.engine.images import image_id, read_sentinel
from kotlin_bench.results.summary import summarize
from kotlin_bench.tools.workspace import Workspace, copy_checkout
from tests import forkbombs

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("KOTLIN_BENCH_SHARED", REPO.parent / "shared"))
DOCKER = EngineSettings()
PODMAN = EngineSettings(Kind.PODMAN, socket=os.environ.get("KOTLIN_BENCH_PODMAN_SOCKET") or None)
NO_DOCKER = "unix:///nonexistent/kotlin-bench-no-docker.sock"
EXAMPLES = [p.name for p in discover(REPO / "examples/tasks")]  # the example dataset's task ids
# The examples built by real Gradle (examples/README.md, `tally`: a daemon, downloads from the stand-in
# Maven repository) cost 10-20 s a build: the engine tests (Podman, rootless, Slurm) run the others.
GRADLE_EXAMPLES = [
    p.name
    for p in discover(REPO / "examples/tasks")
    if load_task(p, require_materialized=False).test_command.startswith("gradle ")
]
KOTLINC_EXAMPLES = [t for t in EXAMPLES if t not in GRADLE_EXAMPLES]
# Images the Podman tests use beside the examples' own, moved from Docker where it has them: the OS image
# (tests/test_network.py builds its test image on it), that test image, and the egress proxy's.
EXTRA_IMAGES = ["kotlin-bench/os:bookworm", "kotlin-bench/network-test:py3-curl"]
# The examples rootful Podman runs (conftest `podman_examples`): three, f2p, p2p and s2p between them (the
# engine changes none of what the verifier compares; the Docker run has every example), and the two of
# them the rootless user runs (tests/test_podman.py): each run is seconds of CI.
PODMAN_TASKS = ["examples_calc-4", "examples_semver-6", "examples_slug-8"]
ROOTLESS_TASKS = ["examples_calc-4", "examples_slug-8"]
DOCKER_PID = Path("/var/run/docker.pid")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests on Podman run last: from the first of them on, Docker is out of reach (`podman_engine`)."""
    items[:] = [i for i in items if not i.get_closest_marker("podman")] + [
        i for i in items if i.get_closest_marker("podman")
    ]


TASK_TOML = """\
version = "1.0"

[metadata]
author_name = "kotlin-bench"

[metadata.source]
repository_owner = "acme"
repository_name = "widgets"
repository_url = "https://example.invalid/acme/widgets"
license = "MIT"
code_change_type = "pull_request"
code_change_id = 7
code_change_url = "https://example.invalid/acme/widgets/pull/7"
issue_url = "https://example.invalid/acme/widgets/issues/6"

[metadata.kotlin_bench]
base_commit = "0123456789abcdef0123456789abcdef01234567"
base_image = "kotlin-bench/acme_widgets:base"
repo_dir = "/home/widgets"
test_command = "ktest ."

[verifier]
timeout_sec = 60.0
network_mode = "public"

[agent]
timeout_sec = 60.0
network_mode = "allowlist"
allowed_hosts = ["repo1.maven.org"]

[environment]
build_timeout_sec = 600.0
cpus = 1
memory_mb = 512
network_mode = "public"
"""

EXPECTED = {
    "f2p_tests": ["a.B.c()"],
    "p2p_tests": [],
    "s2p_tests": [],
    "n2p_tests": [],
    "test_patch_result": {"passed_tests": [], "failed_tests": ["a.B.c()"], "skipped_tests": []},
    "run_result": {"passed_tests": [], "failed_tests": [], "skipped_tests": []},
}


@pytest.fixture
def make_task(tmp_path: Path) -> Callable[..., Path]:
    """Write a minimal valid task directory; `toml` replaces task.toml, `skip` omits files."""

    def make(name: str = "acme_widgets-7", toml: str = TASK_TOML, skip: tuple[str, ...] = ()) -> Path:
        root = tmp_path / "tasks" / name
        files = {
            "task.toml": toml,
            "instruction.md": "# Implement the issue(s) in acme/widgets:\n",
            "environment/Dockerfile": "FROM kotlin-bench/acme_widgets:base\n",
            "solution/solve.sh": "#!/bin/bash\n",
            "tests/test.sh": "#!/bin/bash\n",
            "tests/expected_tests.json": json.dumps(EXPECTED),
        }
        for rel, text in files.items():
            if rel in skip:
                continue
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        return root

    return make


def copy_repo(dest: Path) -> Path:
    """A copy of the repository (tracked and new files, nothing ignored: no results, nothing materialized)."""
    return copy_checkout(REPO, dest)


def snakemake(
    workdir: Path, *args: str, timeout: int = 1800, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the workflow in `workdir` as a user would (the workflow profile applies)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
    environ = {**os.environ, **(env or {})}
    return subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=environ)


def docker_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Integration tests use the real engine; CI starts it (scripts/setup_docker.sh), so absence fails."""
    if not docker_available():
        if os.environ.get("CI"):
            pytest.fail("no Docker engine: CI must start one (scripts/setup_docker.sh)")
        pytest.skip("no Docker engine (run scripts/setup_docker.sh)")


@pytest.fixture(scope="session")
def finished_examples(tmp_path_factory: pytest.TempPathFactory, docker_engine: None) -> Workspace:
    """A copy of the repository in which the default workflow ran to the end once (the example dataset,
    oracle and nop): tests that start from a finished run take a `clone` of it instead of running it again."""
    ws = Workspace.create(tmp_path_factory.mktemp("finished-examples"), REPO)
    out = ws.snakemake(timeout=1800)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
    return ws


def engine_answers(settings: EngineSettings) -> bool:
    try:
        connect(settings, timeout=20)
        return True
    except EngineError:
        return False


@contextlib.contextmanager
def docker_out_of_reach() -> Iterator[None]:
    """Docker unreachable while the block runs: dockerd stopped (KOTLIN_BENCH_STOP_DOCKER=1, started again
    afterwards with scripts/setup_docker.sh), else DOCKER_HOST pointed at a socket that does not exist."""
    stop = os.environ.get("KOTLIN_BENCH_STOP_DOCKER") == "1"
    before = os.environ.get("DOCKER_HOST")
    if stop and DOCKER_PID.is_file():
        pid = int(DOCKER_PID.read_text().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 120
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.5)
    else:
        os.environ["DOCKER_HOST"] = NO_DOCKER
    try:
        assert not docker_available(), "the Docker engine still answers"
        yield
    finally:
        if stop:
            subprocess.run([str(REPO / "scripts/setup_docker.sh"), "--timeout", "120"], check=False)
        elif before is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = before


@dataclass(frozen=True)
class ImageArchive:
    """Images saved from Docker into one archive (readable by the rootless user), and their ids."""

    path: Path
    ids: frozenset[str]
    named: tuple[tuple[str, str], ...] = ()  # (name, id) of each image, as saved

    def missing(self, settings: EngineSettings) -> list[str]:
        client = connect(settings).client
        return sorted(i for i in self.ids if image_id(client, i) is None)


@pytest.fixture(scope="session")
def podman_images(finished_examples: Workspace) -> Iterator[ImageArchive]:
    """The task images of the Docker run of the examples (by the names their sentinels record), and the
    EXTRA_IMAGES and the egress proxy's image where Docker has them, saved from Docker into one archive,
    and loaded into rootful Podman."""
    from kotlin_bench.engine import egress
    from kotlin_bench.engine.network import proxy_image_tag

    if not engine_answers(PODMAN):
        _service_missing("no rootful Podman service answers", "scripts/setup_podman.sh")
    docker = connect(DOCKER).client
    sentinels = sorted((finished_examples.root / names.task_sentinel("any")).parent.glob("*.json"))
    sentinels = [p for p in sentinels if p.stem not in GRADLE_EXAMPLES]  # the engine tests run the others
    wanted = {read_sentinel(p).image: read_sentinel(p).id for p in sentinels}
    for name in [*EXTRA_IMAGES, proxy_image_tag(), egress.image_tag()]:  # both proxies: none is built
        found = image_id(docker, name)
        if found is not None:
            wanted[name] = found
    for name, recorded in wanted.items():
        assert image_id(docker, name) == recorded, f"{name} no longer names {recorded[:19]} in Docker"
    folder = Path(tempfile.mkdtemp(prefix="kotlin-bench-images-", dir="/tmp"))
    archive = ImageArchive(folder / "images.tar", frozenset(wanted.values()), tuple(sorted(wanted.items())))
    try:
        folder.chmod(0o755)
        subprocess.run(["docker", "save", "-o", str(archive.path), *sorted(wanted)], check=True)
        archive.path.chmod(0o644)
        if archive.missing(PODMAN):
            subprocess.run(["podman", "load", "-q", "-i", str(archive.path)], check=True, capture_output=True)
        assert archive.missing(PODMAN) == []
        yield archive
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def podman_engine(podman_images: ImageArchive) -> Iterator[EngineSettings]:
    """Rootful Podman (scripts/setup_podman.sh) with the Docker run's images, and Docker out of reach from
    here to the session's end."""
    with docker_out_of_reach():
        yield PODMAN


@pytest.fixture(scope="session", params=["docker", pytest.param("podman", marks=pytest.mark.podman)])
def engine(request: pytest.FixtureRequest) -> EngineSettings:
    """The engine of a test written for both: Docker, then (last in the session) rootful Podman."""
    if request.param == "docker":
        request.getfixturevalue("docker_engine")
        return DOCKER
    settings: EngineSettings = request.getfixturevalue("podman_engine")
    return settings


def on_engines(docker: list[Any], podman: list[Any]) -> list[Any]:
    """Parameters of a test that takes the `engine` fixture (parametrize with indirect=["engine"]) and one
    value of its own: every value on Docker, and those of `podman` on Podman too (marked podman). For
    tests whose cases differ only in what happens inside the container, so that Podman runs a few."""
    return [pytest.param("docker", value, id=f"docker-{value}") for value in docker] + [
        pytest.param("podman", value, id=f"podman-{value}", marks=pytest.mark.podman) for value in podman
    ]


DOCKER_ONLY = pytest.mark.parametrize("engine", ["docker"], indirect=True)


def without_runs(ws: Workspace, dest: Path) -> Workspace:
    """A copy of a finished workspace without its runs: its images and materialized tasks stay."""
    copy = ws.clone(dest)
    shutil.rmtree(copy.root / names.runs_root())
    return copy


@dataclass(frozen=True)
class WatchedRun:
    """A workspace and its workflow run, watched (`forkbombs.run_watched`)."""

    ws: Workspace
    watched: forkbombs.Watched


@pytest.fixture(scope="session")
def podman_examples(
    tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace, podman_engine: EngineSettings
) -> WatchedRun:
    """One workflow run on rootful Podman, with Docker out of reach, of what the Podman tests check: the
    oracle and nop runs of PODMAN_TASKS, and the two fork bombs on examples_calc-4 (`engine.pids_limit` 512), in
    a copy of the Docker run's workspace without its runs (its images are in Podman: `podman_images`)."""
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("podman-examples") / "ws")
    ws.use_engine(EngineSettings(Kind.PODMAN, podman_engine.socket, pids_limit=forkbombs.PIDS))
    config = ws.config()
    config["agents"] = [*config["agents"], *forkbombs.agents(ws)]
    (ws.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    targets = [ws.target(agent, task) for agent in ("oracle", "nop") for task in PODMAN_TASKS]
    targets += [ws.target(agent, forkbombs.TASK) for agent in forkbombs.PHASES]
    watched = forkbombs.run_watched(ws, targets)
    assert watched.returncode == 0, watched.output[-5000:]
    return WatchedRun(ws, watched)


# What a run decided, as opposed to how long it took or when it ran.
VERDICT = [
    "task",
    "repository",
    "agent",
    "kind",
    "attempt",
    "reward",
    "status",
    "reason",
    "reason_detail",
    *[f"{c}_{k}" for c in ("f2p", "p2p", "s2p", "n2p") for k in ("expected", "landed", "missing")],
    "image_id",
    "task_digest",
    "verifier_digest",
]


# calc #6's HostNameTest passes or fails by the container's random hostname (examples/README.md): it is in
# no expected list, so no reward depends on it, but the verifier's validity rule counts it as a fixed test
# when it passes, so a failing run's reason is `expected_missing` or `no_fixed_test` by chance.
HOSTNAME_DEPENDENT = {"examples_calc-6"}


def verdicts(ws: Workspace, tasks: list[str] | None = None) -> pd.DataFrame:
    """The verdict columns of a workspace's summary (of `tasks`; all by default), one row per run, in a
    fixed order."""
    summary = pd.read_csv(ws.root / names.SUMMARY_CSV)
    return verdict_table(summary if tasks is None else summary[summary.task.isin(tasks)].copy())


def run_verdicts(
    ws: Workspace, agents: tuple[str, ...] = ("oracle", "nop"), tasks: list[str] = PODMAN_TASKS
) -> pd.DataFrame:
    """The verdict columns of the runs of `agents` on `tasks` in a workspace, as its summary would have
    them (the runs must all be there)."""
    paths = [ws.root / names.verify_result(a, t, 1) for a in agents for t in tasks]
    summary = summarize(paths).to_csv(index=False)  # through CSV, as `verdicts` reads the summary's
    return verdict_table(pd.read_csv(io.StringIO(summary)))


def verdict_table(summary: pd.DataFrame) -> pd.DataFrame:
    chance = summary.task.isin(HOSTNAME_DEPENDENT) & (summary.status != "resolved")
    # A column with no value at all reads as float: the mark is text.
    summary = summary.astype({"reason": object, "reason_detail": object})
    summary.loc[chance, ["reason", "reason_detail"]] = "(by chance)"
    return summary[VERDICT].sort_values(["agent", "task", "attempt"]).reset_index(drop=True)


ROOTLESS_USER = os.environ.get("KOTLIN_BENCH_ROOTLESS_USER", "kbtest")
ROOTLESS_PYTHON = os.environ.get("KOTLIN_BENCH_ROOTLESS_PYTHON", "/opt/kotlin-bench/rootless-venv/bin/python")


@dataclass(frozen=True)
class RootlessUser:
    """An ordinary user with rootless Podman (scripts/setup_podman.sh --user), no access to any Docker
    engine, and a Python with kotlin-bench's dependencies (scripts/setup.sh --tests); the package itself
    comes from the workspace it runs in (PYTHONPATH)."""

    name: str
    uid: int
    gid: int
    home: Path
    python: Path
    made: list[Path] = field(default_factory=list)  # directories of this session, removed at its end

    @property
    def runtime_dir(self) -> Path:
        return Path(f"/run/user/{self.uid}")

    @property
    def engine(self) -> EngineSettings:
        """The user's engine, as root reaches it (root may use a rootless socket)."""
        return EngineSettings(Kind.PODMAN, socket=f"unix://{self.runtime_dir}/podman/podman.sock")

    def env(self, workspace: Path | None = None) -> dict[str, str]:
        env = {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "LANG": "C.UTF-8",
            "PATH": f"{self.python.parent}:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "XDG_RUNTIME_DIR": str(self.runtime_dir),
        }
        if workspace is not None:
            env["PYTHONPATH"] = f"{workspace / 'src'}:{workspace}"
        return env

    def command(self, argv: list[str], workspace: Path | None = None) -> list[str]:
        """`argv` as this user, with nothing of root's environment."""
        env = [f"{k}={v}" for k, v in self.env(workspace).items()]
        return ["runuser", "-u", self.name, "--", "env", "-i", *env, *argv]

    def run(
        self, argv: list[str], cwd: Path, timeout: float = 1800, workspace: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`argv` as this user, in `cwd`."""
        command = self.command(argv, workspace)
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def snakemake(self, ws: Workspace, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        return self.run(
            [str(self.python), "-m", "snakemake", "--cores", "2", *args], ws.root, timeout, ws.root
        )

    def popen(self, ws: Workspace, output: Path, *args: str) -> subprocess.Popen[bytes]:
        """Snakemake as this user in `ws`, started and left running; its output goes to `output`."""
        argv = [str(self.python), "-m", "snakemake", "--cores", "2", *args]
        with output.open("wb") as out:
            return subprocess.Popen(self.command(argv, ws.root), cwd=ws.root, stdout=out, stderr=out)

    def give(self, path: Path) -> None:
        """Make `path` (a tree) this user's."""
        subprocess.run(["chown", "-R", f"{self.uid}:{self.gid}", str(path)], check=True)

    def clone(self, ws: Workspace) -> Workspace:
        """A copy of `ws` that this user owns, where the user can reach it (not under pytest's private
        temporary directories)."""
        root = Path(tempfile.mkdtemp(prefix="kotlin-bench-rootless-", dir="/tmp"))
        root.chmod(0o755)
        self.made.append(root)
        copy = ws.clone(root / "ws")
        self.give(copy.root)
        return copy


@pytest.fixture(scope="session")
def rootless(podman_engine: EngineSettings) -> Iterator[RootlessUser]:
    """The rootless test user (KOTLIN_BENCH_ROOTLESS_USER, default kbtest), checked: their Podman answers
    and is rootless, and their Python runs."""
    import pwd

    try:
        entry = pwd.getpwnam(ROOTLESS_USER)
    except KeyError:
        _service_missing(f"no user {ROOTLESS_USER}", "scripts/setup.sh --tests")
    user = RootlessUser(ROOTLESS_USER, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), Path(ROOTLESS_PYTHON))
    if not user.python.is_file() or not engine_answers(user.engine):
        _service_missing(
            f"no rootless Podman service or Python for {user.name} ({user.runtime_dir}, {user.python})",
            "scripts/setup.sh --tests",
        )
    assert connect(user.engine).rootless
    yield user
    for made in user.made:
        shutil.rmtree(made, ignore_errors=True)


@pytest.fixture(scope="session")
def rootless_examples(
    rootless: RootlessUser, podman_images: ImageArchive, finished_examples: Workspace
) -> Iterator[Workspace]:
    """A copy of the Docker run of the examples without its runs, owned by the rootless user and naming
    their Podman (`engine: {kind: podman}`), and its images loaded into the user's Podman from the archive
    Docker saved (`podman_images`; image ids stay): those of ROOTLESS_TASKS and the images that are not
    task images, saved again from rootful Podman. The task images leave the user's Podman at the
    session's end."""
    sentinels = sorted((finished_examples.root / names.task_sentinel("any")).parent.glob("*.json"))
    others = {read_sentinel(p).image for p in sentinels if p.stem not in ROOTLESS_TASKS}
    wanted = [(name, id_) for name, id_ in podman_images.named if name not in others]
    archive = ImageArchive(
        podman_images.path.with_name("rootless.tar"), frozenset(id_ for _, id_ in wanted), tuple(wanted)
    )
    if archive.missing(rootless.engine):
        if not archive.path.is_file():
            saved = subprocess.run(
                [
                    "podman",
                    "save",
                    "-q",
                    "-m",
                    "-o",
                    str(archive.path),
                    *(f"localhost/{n}" for n, _ in wanted),
                ],
                capture_output=True,
                text=True,
            )
            assert saved.returncode == 0, saved.stderr[-2000:]
            archive.path.chmod(0o644)
        loaded = rootless.run(["podman", "load", "-q", "-i", str(archive.path)], Path("/"))
        assert loaded.returncode == 0, loaded.stderr[-2000:]
    assert archive.missing(rootless.engine) == []
    ws = rootless.clone(finished_examples)
    shutil.rmtree(ws.root / names.runs_root())
    ws.use_engine(EngineSettings(Kind.PODMAN))  # config.yaml is rewritten in place: still the user's
    yield ws
    sentinels = (ws.root / names.task_sentinel("any")).parent.glob("*.json")
    tasks = [read_sentinel(p).id for p in sentinels if p.stem in ROOTLESS_TASKS]  # those loaded
    rootless.run(["podman", "rmi", "-f", *tasks], Path("/"))


REGISTRY = os.environ.get("KOTLIN_BENCH_REGISTRY", "127.0.0.1:5000")


def _service_missing(what: str, setup: str) -> None:
    """Skip where a service is absent; under CI, .ci/run was to set it up, so its absence fails."""
    if os.environ.get("CI"):
        pytest.fail(f"{what}: CI must set it up ({setup}, called by .ci/run)")
    pytest.skip(f"{what} (run {setup})")


@pytest.fixture(scope="session")
def standin_repo() -> Any:
    """The machine's stand-in Maven repository (scripts/standin_repo.sh, called by scripts/setup.sh),
    serving this checkout's content: started (idempotent; fast when the content exists) where root can."""
    from kotlin_bench.tools.standin_repo import NGINX, StandinRepo, Status

    repo = StandinRepo()
    if os.geteuid() == 0 and Path(NGINX).is_file():
        repo.start(REPO)
    elif repo.status()[0] is not Status.ANSWERS:
        _service_missing("the stand-in Maven repository does not answer", "scripts/standin_repo.sh start")
    return repo


@pytest.fixture
def github_api() -> Iterator[Callable[..., Any]]:
    """The stand-in GitHub REST API (kotlin_bench.tools.github_api) in this process: call it with the
    repositories to serve (`github_records.Repository`, e.g. `from_history`, `synthetic`) and a rate limit;
    it answers on loopback (`.url`, `.api` its state: faults, counts) and stops at the test's end."""
    from kotlin_bench.tools.github_api import GitHubApi, RateLimit, Running

    started: list[Running] = []

    def start(repositories: list[Any], rate: RateLimit | None = None) -> Running:
        started.append(Running(GitHubApi(repositories, rate)))
        return started[-1]

    yield start
    for running in started:
        running.stop()


@pytest.fixture(scope="session")
def registry_service() -> str:
    """A container registry on loopback (`KOTLIN_BENCH_REGISTRY`, default 127.0.0.1:5000): its host:port."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://{REGISTRY}/v2/", timeout=5) as answer:
            ok = answer.status == 200
    except OSError:
        ok = False
    if not ok:
        _service_missing(f"no container registry answers on {REGISTRY}", "scripts/setup_registry.sh")
    return REGISTRY


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    """A Slurm cluster whose accounting answers (the executor's status source), and the executor plugin."""
    try:
        idle = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
        accounting = subprocess.run(["sacct", "-n", "-X", "-j", "1"], capture_output=True, timeout=20)
        ready = idle.returncode == 0 and idle.stdout.strip() != "" and accounting.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ready = False
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        ready = False
    if not ready:
        _service_missing(
            "no Slurm cluster with accounting and snakemake-executor-plugin-slurm", "scripts/setup_slurm.sh"
        )
