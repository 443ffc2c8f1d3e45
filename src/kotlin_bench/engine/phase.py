"""One task container for one phase: the only place that starts and removes task containers.

Every phase that runs in a container from a task image (a run's agent phase and verifier phase, a
validation phase, the health check's network probe) goes through `PhaseContainer`:

    with PhaseContainer(client, image_id, key, labels, Limits.of(task)) as box:
        with box.network(task.agent, log_path=...) as net:      # the phase's network policy
            done = box.run(script, timeout, log, workdir=..., env=net.env)
        box.copy_out(...)
        box.raise_if_out_of_memory("...")

On entry it removes what an interrupted try with the same key left (containers, proxies, the per-run
network), then starts a container that idles until told what to do, labelled with the key and `labels`,
limited to the task's cpus and memory (swap bounded to the same figure). On exit, whatever happened,
the container is removed and the key's networks and proxies with it. A container that stops under a
phase without our watchdog stopping it raises `containers.ContainerError`; an out-of-memory kill is
read from the engine's events, which nothing inside the container can fake.
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
from kotlin_bench.engine.images import workdir_label

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

    from kotlin_bench.dataset.task import Phase, Task


@dataclass(frozen=True)
class Limits:
    """What one phase container may use."""

    cpus: float
    memory_mb: int

    @classmethod
    def of(cls, task: Task) -> Limits:
        return cls(task.environment.cpus, task.environment.memory_mb)


class PhaseContainer:
    """A container from a task image for one phase (a context manager; see the module's docstring)."""

    def __init__(
        self,
        client: docker.DockerClient,
        image: str,
        key: str,
        labels: dict[str, str],
        limits: Limits,
        hostname: str | None = None,
    ) -> None:
        self.client = client
        self.image = image
        self.key = key
        self.labels = {**labels, **workdir_label()}
        self.limits = limits
        self.hostname = hostname
        self.started = 0.0
        self._container: Container | None = None

    @property
    def container(self) -> Container:
        if self._container is None:
            raise RuntimeError("the phase container is not running (use it in a `with` block)")
        return self._container

    def __enter__(self) -> PhaseContainer:
        containers.reap(self.client, self.key)
        network.reap_networks(self.client, self.key)
        self.started = time.time()
        self._container = containers.start(
            self.client,
            self.image,
            self.key,
            self.labels,
            self.limits.cpus,
            self.limits.memory_mb,
            hostname=self.hostname,
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        if self._container is not None:
            containers.remove(self._container)
            self._container = None
        network.reap_networks(self.client, self.key)

    @contextlib.contextmanager
    def network(self, phase: Phase, log_path: Path | None = None) -> Iterator[network.PhaseNetwork]:
        """The phase's network policy (`[agent]` or `[verifier]` of task.toml) for as long as the block
        runs; its `env` goes to the phase's processes."""
        with network.enter_phase(
            self.container, phase.network_mode, phase.allowed_hosts, self.key, log_path=log_path
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
        return containers.run(self.container, script, timeout, log_path, workdir, env)

    def copy_in(self, source: Path, dest: str) -> None:
        containers.copy_dir_in(self.container, source, dest)

    def copy_out(self, source: str, dest: Path) -> bool:
        """Copy a directory of the container out; False when it does not exist."""
        return containers.copy_dir_out(self.container, source, dest)

    def out_of_memory(self) -> bool:
        """Whether the kernel's OOM killer struck in the container since it started."""
        return containers.oom_kills(self.container, self.started) > 0

    def changes(self) -> list[dict[str, object]]:
        """The engine's view of what changed in the container's filesystem (`docker diff`)."""
        return list(self.container.diff() or [])
