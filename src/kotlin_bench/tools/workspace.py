"""A throw-away copy of a kotlin-bench checkout to run the workflow in, without touching its results.

The test suite, the integrity suite (`adversarial/`) and the benchmarks (`bench/`) all work in such
copies: tracked and new files that git does not ignore, so no results and nothing materialized, plus the
`npm pack`ed toolchain packages of the example images, which git ignores but the offline image build
needs.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kotlin_bench.core import names
from kotlin_bench.core.record import RecordError, RunResult, WorkRecord
from kotlin_bench.engine.engine import EngineSettings

NPM_PACKS = "examples/bases/toolchain/npm-packs"
EXAMPLE_TASKS = "examples/tasks"


def checkout_files(root: Path) -> list[str]:
    """The files of a checkout: tracked, and new ones that git does not ignore (relative paths)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    return [name.decode() for name in listed if name and (root / name.decode()).is_file()]


def copy_checkout(source: Path, dest: Path, skip: Iterable[str] = (), npm_packs: bool = True) -> Path:
    """Copy the checkout at `source` to `dest` (files under the `skip` prefixes left out)."""
    prefixes = tuple(skip)
    dest.mkdir(parents=True, exist_ok=True)
    for rel in checkout_files(source):
        if prefixes and rel.startswith(prefixes):
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, dest / rel)
    packs = source / NPM_PACKS
    if npm_packs and packs.is_dir():
        shutil.copytree(packs, dest / NPM_PACKS, dirs_exist_ok=True)
    return dest


@dataclass
class Workspace:
    """A copy of a checkout, with helpers to configure it, run Snakemake in it and read its results."""

    root: Path

    @classmethod
    def create(cls, dest: Path, source: Path, skip: Iterable[str] = ()) -> Workspace:
        return cls(copy_checkout(source, dest, skip).resolve())

    def clone(self, dest: Path) -> Workspace:
        """A copy of this workspace as it is, results and Snakemake's records included (modification times
        kept): what was done here is done there, so a workflow finished here has nothing to do there."""
        shutil.copytree(self.root, dest, symlinks=True)
        return Workspace(dest.resolve())

    # ------------------------------------------------------------------ configuration

    def config(self) -> dict[str, Any]:
        return yaml.safe_load((self.root / "config.yaml").read_text(encoding="utf-8"))

    def configure(self, tasks: list[str] | str, agents: list[dict[str, Any]], **settings: Any) -> None:
        """Select tasks and agents (retries 0 and one attempt unless given); no reproduction references."""
        config = self.config()
        config.pop("reproduce", None)
        config.update({"retries": 0, "attempts": 1, **settings, "tasks": tasks, "agents": agents})
        (self.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def edit_task(self, task: str, table: str, key: str, value: str) -> None:
        """Set `key = value` (TOML text) in `[table]` of an example task's task.toml."""
        path = self.root / EXAMPLE_TASKS / task / "task.toml"
        text = path.read_text(encoding="utf-8")
        section = re.search(rf"^\[{re.escape(table)}\]\n(?:(?!\[).*\n?)*", text, re.MULTILINE)
        if section is None:
            raise KeyError(f"{path}: no [{table}]")
        body, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", section[0], count=1, flags=re.MULTILINE)
        if n != 1:
            raise KeyError(f"{path}: no {key} in [{table}]")
        path.write_text(text[: section.start()] + body + text[section.end() :], encoding="utf-8")

    def write(self, rel: str, text: str, mode: int = 0o644) -> str:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        path.chmod(mode)
        return rel

    # ------------------------------------------------------------------ running

    def snakemake(
        self, *args: str, cores: int = 2, timeout: float = 1800, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "snakemake", "--cores", str(cores), *args]
        return subprocess.run(cmd, cwd=self.root, capture_output=True, text=True, timeout=timeout, env=env)

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """Snakemake in its own process group, output to snakemake.out, and as a terminal starts it: with
        SIGINT's default action (Ctrl-C stops it). A process started in the background of a
        non-interactive shell, as CI runs the suite, inherits SIGINT ignored, and so would Snakemake and
        its jobs: a SIGINT sent to them would do nothing."""
        cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *args]
        out = (self.root / "snakemake.out").open("ab")
        return subprocess.Popen(
            cmd, cwd=self.root, stdout=out, stderr=out, start_new_session=True, preexec_fn=_terminal_signals
        )

    def prepare(self, *tasks: str) -> subprocess.CompletedProcess[str]:
        """Build what runs need (images, upstream mirrors, materialized task files), but no run."""
        targets = [names.task_sentinel(t) for t in tasks]
        targets += [names.stamp(EXAMPLE_TASKS, t) for t in tasks]
        return self.snakemake(*targets)

    def planned(self, *targets: str) -> dict[str, int]:
        """The jobs a dry run plans, per rule."""
        out = self.snakemake("--dry-run", *targets)
        return job_counts(out.stdout + out.stderr)

    # ------------------------------------------------------------------ results

    @staticmethod
    def target(agent: str, task: str, attempt: int = 1) -> str:
        """A run's verdict: the verify step's output (the solve step runs first when its work is missing)."""
        return names.verify_result(agent, task, attempt)

    def run_dir(self, agent: str, task: str, attempt: int = 1) -> Path:
        return self.root / names.run_dir(agent, task, attempt)

    def result(self, agent: str, task: str, attempt: int = 1) -> RunResult | None:
        try:
            return RunResult.read(self.root / self.target(agent, task, attempt))
        except RecordError:
            return None

    def work(self, agent: str, task: str, attempt: int = 1) -> WorkRecord | None:
        try:
            return WorkRecord.read(self.root / names.work_record(agent, task, attempt))
        except RecordError:
            return None

    def tries(self, agent: str, task: str, attempt: int = 1, step: str = "all") -> str:
        """The failed tries of a run's steps (`solve`, `verify`, or `all`), one line each."""
        logs = {
            "solve": names.solve_log(agent, task, attempt),
            "verify": names.verify_log(agent, task, attempt),
        }
        found = []
        for name, log in logs.items():
            path = self.root / names.tries_log(log)
            if step in (name, "all") and path.is_file():
                found.append(path.read_text(encoding="utf-8"))
        return "".join(found)

    def tag(self) -> str:
        from kotlin_bench.core.names import workdir_tag

        return workdir_tag(self.root)

    def engine(self) -> EngineSettings:
        """The engine this workspace's config names (`engine:`; Docker by default)."""
        return EngineSettings.of_config(self.config())

    def use_engine(self, settings: EngineSettings) -> None:
        """Name the engine in this workspace's config (`engine:`)."""
        config = self.config()
        config["engine"] = settings.to_config()
        (self.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    def containers(self, running_only: bool = False) -> list[Any]:
        """This workspace's containers (task containers and egress proxies): their run key ends in its tag."""
        from kotlin_bench.engine.containers import listed
        from kotlin_bench.engine.engine import connect

        client = connect(self.engine()).client
        found = listed(client, {"label": names.LABEL_RUN}, everything=not running_only)
        return [c for c in found if c.labels.get(names.LABEL_RUN, "").endswith(f".{self.tag()}")]


def _terminal_signals() -> None:
    """In a child before it runs its program: SIGINT and SIGTERM at their default actions, as in a job a
    terminal starts (an ignored disposition is inherited across exec)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def job_counts(text: str) -> dict[str, int]:
    """Rule name -> job count from Snakemake's "Job stats" table; {} when there was nothing to do."""
    if "Nothing to be done" in text or "Job stats:" not in text:
        return {}
    block = text.split("Job stats:", 1)[1]
    found = {}
    for match in re.finditer(r"^(\w+)\s+(\d+)\s*$", block, re.MULTILINE):
        if match[1] == "total":
            break
        found[match[1]] = int(match[2])
    return found
