"""The container engine: the one connection every part of the package asks for.

Everything that talks to the engine gets its client here (`connect`); nothing else reads `DOCKER_HOST`
or opens a socket. A second engine plugs in here: the rest of the package only sees a Docker-API client.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import docker


class EngineError(RuntimeError):
    """The container engine cannot be reached; the message says how to start it."""


def connect(timeout: int = 600) -> docker.DockerClient:
    """A client of the engine, checked with a ping."""
    import docker

    try:
        client = docker.from_env(timeout=timeout)
        client.ping()
    except docker.errors.DockerException as exc:
        raise EngineError(f"cannot reach the Docker engine ({exc}); run scripts/setup_docker.sh") from None
    return client


def wait_until_up(seconds: float) -> bool:
    """Wait until the engine answers (e.g. while it restarts); False if it does not in time."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            connect(timeout=10)
            return True
        except EngineError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(2)
