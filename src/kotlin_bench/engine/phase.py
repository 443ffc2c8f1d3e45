"""One task container for one phase: the only place that starts and removes task containers.

Every phase that runs in a container from a task image (a run's agent phase and verifier phase, a
validation phase, the health check's network probe) goes through `PhaseContainer`:

    with PhaseContainer(engine, image_id, key, labels, Limits.of(task, engine.settings), phase=task.agent) as box:
        with box.network(task.agent, log_path=...) as net:      # the phase's network policy
            done = box.run(script, timeout, log, workdir=..., env=net.env)
        box.copy_out(...)
        box.raise_if_out_of_memory("...")

On entry it removes what an interrupted try with the same key left (containers, proxies, the per-run
network), then starts a container that idles until told what to do (with config `extra_hosts:` in its
/etc/hosts when the `phase` it is made for has a public network), labelled with the key and `labels`,
limited to the task's cpus and memory (swap bounded to the same figure) and to a number of processes
(`Limits.pids`: config `engine.pids_limit`, else sized from the task's cpus). An engine that cannot
enforce some of these limits (rootless Podman on cgroup v1) is named in the job's log, or refused with
`engine.require_limits`. On exit, whatever happened, the container is removed and the key's networks
and proxies with it. A container that stops under a phase without our watchdog stopping it raises
`containers.ContainerError`; out-of-memory kills and forks refused at the process limit are read from
the kernel's counters of the container (`kotlin_bench.engine.cgroups`), which nothing inside it can fake.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.engine import containers, network
from kotlin_bench.engine.engine import EngineSettings
from kotlin_bench.engine.images import workdir_label

if TYPE_CHECKING:
    from docker.models.containers import Container

    from kotlin_bench.dataset.task import Phase, Task
    from kotlin_bench.engine.egress import EgressSetup
    from kotlin_bench.engine.engine import Engine


@dataclass(frozen=True)
class Limits:
    """What one phase container may use: CPUs, memory (and as much memory with swap: no swap), and
    processes (threads included)."""

    cpus: float
    memory_mb: int
    pids: int

    @classmethod
    def of(cls, task: Task, settings: EngineSettings | None = None) -> Limits:
        cpus = task.environment.cpus
        return cls(cpus, task.environment.memory_mb, (settings or EngineSettings()).pids_for(cpus))


class PhaseContainer:
    """A container from a task image for one phase (a context manager; see the module's docstring)."""

    def __init__(
        self,
        engine: Engine,
        image: str,
        key: str,
        labels: dict[str, str],
        limits: Limits,
        *,
        hostname: str | None = None,
        phase: Phase | None = None,
    ) -> None:
        self.engine = engine
        self.client = engine.client
        self.image = image
        self.key = key
        self.labels = {**labels, **workdir_label()}
        self.limits = limits
        self.hostname = hostname
        self.phase = phase
        self.started = 0.0
        self._container: Container | None = None

    @property
    def container(self) -> Container:
        if self._container is None:
            raise RuntimeError("the phase container is not running (use it in a `with` block)")
        return self._container

    def __enter__(self) -> PhaseContainer:
        containers.reap(self.client, self.key)
        network.reap_networks(self.engine, self.key)
        self.started = time.time()
        if self.engine.unlimited:
            print(
                f"kotlin-bench: {self.engine.name} does not enforce {', '.join(self.engine.unlimited)} "
                f"limits: container {self.key} is not held to {self.limits}"
                + (" (processes: RLIMIT_NPROC instead)" if "pids" in self.engine.unlimited else ""),
                flush=True,
            )
        limits = self.limits
        try:
            self._container = containers.start(
                self.engine,
                self.image,
                self.key,
                self.labels,
                cpus=limits.cpus,
                memory_mb=limits.memory_mb,
                pids=limits.pids,
                hostname=self.hostname,
                extra_hosts=self.extra_hosts(),
            )
        except BaseException:  # `__exit__` is not called when `__enter__` raises (Ctrl-C, SIGTERM)
            with contextlib.suppress(Exception):  # the error on its way out is the one to see
                network.reap_networks(self.engine, self.key)
            raise
        return self

    def extra_hosts(self) -> dict[str, str]:
        """Config `extra_hosts:` for a container whose phase network is `public` (a verifier phase, a
        validation phase, a public agent phase); none for an `allowlist` or `no-network` phase, where every
        name must go through the proxy (whose container has them), nor when the phase is not known."""
        phase = self.phase
        if phase is None or network.effective_mode(phase.network_mode, phase.allowed_hosts) != "public":
            return {}
        return self.engine.extra_hosts()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        if self._container is not None:
            containers.remove(self._container)
            self._container = None
        network.reap_networks(self.engine, self.key)

    @contextlib.contextmanager
    def network(
        self, phase: Phase, log_path: Path | None = None, recording: EgressSetup | None = None
    ) -> Iterator[network.PhaseNetwork]:
        """The phase's network policy (`[agent]` or `[verifier]` of task.toml) for as long as the block
        runs; its `env` goes to the phase's processes. `recording`: an allowlist phase's egress record
        (`kotlin_bench.engine.egress`)."""
        with network.enter_phase(
            self.engine,
            self.container,
            phase.network_mode,
            phase.allowed_hosts,
            self.key,
            log_path=log_path,
            recording=recording,
        ) as net:
            yield net

    def run(
        self,
        script: str,
        timeout: float,
        log_path: Path,
        workdir: str | None = None,
        env: dict[str, str] | None = None,
    ) -> containers.ExecResult:
        """Run a bash script under a deadline, its output appended to `log_path`."""
        return containers.run(self.container, script, timeout, log_path, workdir=workdir, env=env)

    def copy_in(self, source: Path, dest: str) -> None:
        containers.copy_dir_in(self.container, source, dest)

    def copy_out(self, source: str, dest: Path) -> bool:
        """Copy a directory of the container out; False when it does not exist."""
        return containers.copy_dir_out(self.container, source, dest)

    def out_of_memory(self) -> bool:
        """Whether the kernel's OOM killer struck in the container since it started."""
        return containers.oom_kills(self.container, self.started, events=not self.engine.podman) > 0

    def hit_process_limit(self) -> bool | None:
        """Whether a fork in the container was refused at its process limit (None: cannot be known)."""
        refused = containers.refused_forks(self.container)
        return None if refused is None else refused > 0

    def leftover_tasks(self) -> int | None:
        """Processes and threads still running in the container besides its keep-alive (None: unknown)."""
        return containers.leftover_tasks(self.container)

    def restart(self) -> None:
        """End every process in the container (its filesystem stays): after a phase that may have left
        it full of processes (a fork bomb), so that the harness can start its own again."""
        containers.restart(self.container)

    def changes(self) -> list[dict[str, object]]:
        """The engine's view of what changed in the container's filesystem (`docker diff`)."""
        return list(self.container.diff() or [])
