"""A Harbor trial's agent phase on the record: the same network policy, recording proxy, CA, JVM proxy
and fence as our own agent phases (`kotlin_bench.engine.network.enter_phase`), around a container that
Harbor starts.

Harbor runs the trial's main service under `docker compose` and execs every command into it (`bash -c`).
Our part, while `harbor run` runs (`TrialPhase.step`, polled by the harbor kind):

1. Harbor starts the main service (on the default bridge, as our phase containers start: the extra
   compose file says so) and, before it sets the agent up, runs the task's `[environment.healthcheck]`. The staged task's healthcheck (`GATE`) waits for a file
   that only we write, so nothing of the agent runs before its phase is set.
2. We find the container by its compose labels (the staged task's `environment/` is the project
   directory, unique to the run), enter the agent phase's network mode on it with `enter_phase`, exactly
   as `PhaseContainer.network` does for our own phases, write the phase's environment (the proxy and CA
   variables) into the file that the main service's `BASH_ENV` names (every `bash -c` Harbor runs, the
   agent's install and its commands included, reads it), and open the gate. A failure fails the gate:
   the trial stops before the agent starts and the run says why.
3. After the agent (also after its timeout or a failed setup) Harbor runs the `[[verifier.collect]]`
   hooks: the capture first, then the handshake (`HANDSHAKE`), which writes the run's token (known to
   the harness alone: it is not in the container until then) and waits. Seeing it, we close the phase:
   the proxy's record is copied out, the container's trust in the CA and the JDKs' `net.properties` are
   restored, the proxy and the network removed and the phase's environment emptied. The container is
   left without network for Harbor's own verifier (as with `isolate_network`): processes the agent left
   behind get no window of an unrecorded network. Then we answer with the token and the hook returns.
4. When `harbor run` ends, whatever is still open is closed (`TrialPhase.finish`).
"""

from __future__ import annotations

import contextlib
import io
import shlex
import tarfile
import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import containers, egress, network

if TYPE_CHECKING:
    from docker.models.containers import Container

    from kotlin_bench.engine.engine import Engine

TRIAL_DIR = names.CONTAINER_TRIAL_DIR
READY, FAILED, PHASE_ENV = "ready", "failed", "phase.env"
AGENT_DONE, SWITCHED = "agent-done", "switched"
GATE_SEC = 180  # how long Harbor's healthcheck waits for the gate
HANDSHAKE_SEC = 120  # how long the collect hook waits for the phase to be closed
MAIN_SERVICE = "main"


def gate_toml() -> str:
    """The staged task's `[environment.healthcheck]`: wait for the gate, once (a `failed` file ends it)."""
    steps = GATE_SEC * 10
    command = (
        f"i=0; while [ $i -lt {steps} ]; do [ -e {TRIAL_DIR}/{READY} ] && exit 0; "
        f"[ -e {TRIAL_DIR}/{FAILED} ] && exit 1; sleep 0.1; i=$((i+1)); done; exit 1"
    )
    return (
        f"\n[environment.healthcheck]\ncommand = {_toml_string(command)}\n"
        f"timeout_sec = {GATE_SEC + 30}.0\nretries = 1\ninterval_sec = 1.0\n"
    )


def handshake_toml(token: str) -> str:
    """The `[[verifier.collect]]` hook after the capture: the agent is done; wait until the phase is closed."""
    done, switched = f"{TRIAL_DIR}/{AGENT_DONE}", f"{TRIAL_DIR}/{SWITCHED}"
    command = (
        f"mkdir -p {TRIAL_DIR} && printf %s {token} > {done}.tmp && mv -f {done}.tmp {done}; i=0; "
        f'while [ $i -lt {HANDSHAKE_SEC * 10} ]; do [ "$(cat {switched} 2>/dev/null)" = {token} ] && exit 0; '
        "sleep 0.1; i=$((i+1)); done; exit 1"
    )
    return f"\n[[verifier.collect]]\ncommand = {_toml_string(command)}\ntimeout_sec = {HANDSHAKE_SEC + 30}\n"


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text)


def compose_environment() -> dict[str, str]:
    """What the main service's environment adds: bash reads the phase's environment file."""
    return {"BASH_ENV": f"{TRIAL_DIR}/{PHASE_ENV}"}


def env_file(env: dict[str, str]) -> bytes:
    """The phase's environment as the lines bash reads (`export K='V'`)."""
    return "".join(f"export {k}={shlex.quote(v)}\n" for k, v in sorted(env.items())).encode()


class Stage(StrEnum):
    WAITING = "waiting"  # for Harbor to start the container
    AGENT = "agent"  # the agent phase's network is in place
    DONE = "done"  # the phase is closed (or could not be set)
    UNSEEN = "unseen"  # `harbor run` ended before its container was seen


@dataclass(frozen=True, kw_only=True)
class PhasePlan:
    """What the trial's agent phase is to be: the task's agent network mode and allowed hosts (with what
    the Harbor agent needs), the run's key, where the proxy's log goes, the egress record's setup."""

    engine: Engine
    mode: str
    allowed_hosts: tuple[str, ...]
    key: str
    log_path: Path
    recording: egress.EgressSetup  # config `egress:` (`record: hosts`: tinyproxy, nothing recorded)


@dataclass
class TrialPhase:
    """One trial's agent phase (see the module's docstring). `project_dir`: the staged task's
    `environment/`, Harbor's compose project directory; `token`: the handshake's, in the staged task only."""

    plan: PhasePlan
    project_dir: Path
    token: str
    stage: Stage = Stage.WAITING
    error: str | None = None
    recorded: bool = False  # the recording proxy ran
    proxied: bool = False  # a proxy ran (recording or not)
    entered_sec: float | None = None  # how long entering the phase took
    container: Container | None = field(default=None, repr=False)
    # the phase's network, kept once closed: what it saw is read from it after the trial
    phase_network: network.PhaseNetwork | None = field(default=None, repr=False)

    def step(self) -> None:
        """One look at the trial: enter the phase once its container runs, close it once the agent is done."""
        if self.stage is Stage.WAITING:
            container = self._main_container()
            if container is not None:
                self._enter(container)
        elif self.stage is Stage.AGENT and self._agent_done():
            self._leave()

    def finish(self) -> None:
        """After `harbor run`: close what is still open (the container may be gone by now)."""
        if self.stage is Stage.AGENT and self.phase_network is not None:
            try:
                self.phase_network.close()
            except network.NetworkError as exc:
                self.error = self.error or f"closing the trial's agent phase: {exc}"
        network.reap_networks(self.plan.engine, self.plan.key)
        self.stage = Stage.UNSEEN if self.stage is Stage.WAITING else Stage.DONE

    def _main_container(self) -> Container | None:
        labels = [
            f"{names.LABEL_COMPOSE_WORKING_DIR}={self.project_dir}",
            f"{names.LABEL_COMPOSE_SERVICE}={MAIN_SERVICE}",
        ]
        found = containers.listed(self.plan.engine.client, {"label": labels}, everything=False)
        return found[0] if found else None

    def _enter(self, container: Container) -> None:
        self.container = container
        started = time.monotonic()
        try:
            plan = self.plan
            self.phase_network = network.enter_phase(
                plan.engine, container, plan.mode, plan.allowed_hosts, plan.key,
                log_path=plan.log_path, recording=plan.recording,
            )  # fmt: skip
            self.recorded = self.phase_network.egress is not None
            self.proxied = self.phase_network.proxy is not None
            _put(container, {PHASE_ENV: env_file(self.phase_network.env), READY: b""})
        except Exception as exc:  # the gate fails: Harbor stops the trial before the agent starts
            self.error = f"the trial's agent phase could not be set up: {exc}"
            self.stage = Stage.DONE
            with contextlib.suppress(Exception):  # else the gate times out; the error is kept either way
                _put(container, {FAILED: self.error.encode()})
            if self.phase_network is not None:
                with contextlib.suppress(network.NetworkError):
                    self.phase_network.close()
            return
        self.entered_sec = round(time.monotonic() - started, 2)
        self.stage = Stage.AGENT

    def _agent_done(self) -> bool:
        assert self.container is not None
        try:
            found = containers.read_member(self.container, f"{TRIAL_DIR}/{AGENT_DONE}", 4096)
        except Exception:  # a container going away: `finish` closes the phase
            return False
        return found is not None and found[1].decode("utf-8", "replace").strip() == self.token

    def _leave(self) -> None:
        assert self.container is not None and self.phase_network is not None
        try:
            self.phase_network.close()
            _put(self.container, {PHASE_ENV: b""})
        except Exception as exc:  # kept: the run fails with it after the trial
            self.error = f"closing the trial's agent phase: {exc}"
        self.stage = Stage.DONE
        with contextlib.suppress(Exception):  # else the hook times out, and the trial goes on
            _put(self.container, {SWITCHED: self.token.encode()})


def _put(container: Container, files: dict[str, bytes]) -> None:
    """Write files into the trial directory of the container (made when missing), readable by all."""
    buffer = io.BytesIO()
    root = TRIAL_DIR.strip("/")
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        directory = tarfile.TarInfo(root)
        directory.type, directory.mode, directory.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        tar.addfile(directory)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{root}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    if not container.put_archive("/", buffer.getvalue()):
        raise containers.ContainerError(f"could not write {', '.join(files)} into {TRIAL_DIR}")
