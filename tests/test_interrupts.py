"""What an interrupted job does, without Docker: a second signal does not cut its removal of containers
short, and a container whose creation was interrupted is looked for by its run key. The whole path
(Snakemake's process group signalled in the agent phase) is tests/test_faults.py -k interrupted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import kotlin_bench
from kotlin_bench.core import names
from kotlin_bench.engine import containers
from kotlin_bench.engine.engine import EngineSettings


def test_the_first_signal_interrupts_a_job_the_second_does_not_cut_its_cleanup_short_a_third_does() -> None:
    script = textwrap.dedent(
        """
        import os, signal
        from kotlin_bench.dag.smk import stop_on_sigterm
        # Ctrl-C as in a terminal: a runner that starts the suite in the background ignores SIGINT, and a
        # process started so inherits that (stop_on_sigterm then leaves it ignored, as it should)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        stop_on_sigterm()
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.pause()
        except KeyboardInterrupt as exc:
            print("interrupted:", exc, flush=True)
            os.kill(os.getpid(), signal.SIGTERM)  # the runner's SIGTERM after its SIGINT, a second Ctrl-C
            print("cleaned up", flush=True)
            try:
                os.kill(os.getpid(), signal.SIGINT)  # a third: the user insists
                signal.pause()
            except KeyboardInterrupt as exc:
                print("stopped:", exc, flush=True)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(kotlin_bench.__file__).parents[1])}  # this checkout's package
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines == [
        "interrupted: signal 15",
        "kotlin-bench: signal 15 again; still removing this job's containers",
        "cleaned up",
        "stopped: signal 2",
    ]


class _Client:
    """The part of docker-py's client `containers.start` uses: a create the signal interrupts."""

    def __init__(self) -> None:
        self.listed: list[dict[str, Any]] = []
        self.containers = SimpleNamespace(create=self._create, list=self._list)

    def _create(self, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt("signal 15")

    def _list(self, **kwargs: Any) -> list[Any]:
        self.listed.append(kwargs["filters"])
        return []


def test_a_container_whose_creation_was_interrupted_is_looked_for_by_its_run_key() -> None:
    client = _Client()
    engine = SimpleNamespace(client=client, unlimited=(), settings=EngineSettings())
    with pytest.raises(KeyboardInterrupt):
        containers.start(engine, "image", "agent.task.1.abcd1234", {}, cpus=1.0, memory_mb=512, pids=4096)  # type: ignore[arg-type]
    assert client.listed == [{"label": f"{names.LABEL_RUN}=agent.task.1.abcd1234"}]
