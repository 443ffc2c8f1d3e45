"""Agents: what runs in a task container during the agent phase.

An agent is configured in config.yaml as `{name, kind, model?, predictions?}`; `name` labels its results.
Kinds:
- `oracle`: copies the task's `solution/` to `/solution` and runs `solve.sh` (the gold patch);
- `nop`: does nothing (the floor: every task must score 0);
- `predictions`: applies the task's patch from a predictions file (see `kotlin_bench.predictions`): as
  given, then normalised, each with SWE-bench's appliers in order (`kotlin_bench.handoff.apply_patch`);
  an empty patch or one that does not apply is a result (reward 0, reason `empty_patch` /
  `patch_not_applied`, the last applier's message kept), and the verifier is skipped for it;
- `harbor`: a Harbor agent (`harbor_agent: claude-code`, `model: ...`) run by the `harbor` CLI on the task
  image the workflow built (see `kotlin_bench.harbor`);
- `script`: your own bash script (`script: path/to/agent.sh`, relative to the workflow directory), copied
  into the container and run with bash in the repository directory under the agent timeout and network
  mode. It sees `KOTLIN_BENCH_TASK`, `KOTLIN_BENCH_REPO_DIR`, `KOTLIN_BENCH_BASE_COMMIT` and
  `KOTLIN_BENCH_INSTRUCTION` (the path of the task's instruction.md in the container). Its exit status is
  recorded in agent.log only; its work is whatever it leaves in the repository. Processes it leaves behind
  keep running until the agent container is removed; none of them reach the verifier.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench import containers, handoff, names
from kotlin_bench.predictions import load_predictions, patch_candidates
from kotlin_bench.tasks import Task

if TYPE_CHECKING:
    from docker.models.containers import Container

KINDS = ("oracle", "nop", "predictions", "harbor", "script")
SCRIPT_DIR = names.CONTAINER_AGENT_SCRIPT_DIR


@dataclass(frozen=True)
class Agent:
    name: str
    kind: str
    model: str | None = None
    predictions: str | None = None
    harbor_agent: str | None = None
    kwargs: tuple[tuple[str, str], ...] = ()
    isolate_network: bool = False
    script: str | None = None

    @classmethod
    def from_config(cls, entry: dict[str, Any]) -> Agent:
        kind = entry.get("kind")
        if kind not in KINDS:
            raise ValueError(f"agent {entry.get('name')!r}: unknown kind {kind!r}; expected one of {KINDS}")
        if kind == "predictions" and not entry.get("predictions"):
            raise ValueError(f"agent {entry['name']!r}: kind predictions needs `predictions: <file.jsonl>`")
        if kind == "harbor" and not entry.get("harbor_agent"):
            raise ValueError(
                f"agent {entry['name']!r}: kind harbor needs `harbor_agent: <name or module:Class>`"
            )
        if kind == "script":
            script = entry.get("script")
            if not script:
                raise ValueError(
                    f"agent {entry['name']!r}: kind script needs `script: <path to a bash script>`"
                )
            if not Path(script).is_file():
                raise ValueError(f"agent {entry['name']!r}: script {script!r} is not a file")
        return cls(
            name=entry["name"],
            kind=kind,
            model=entry.get("model"),
            predictions=entry.get("predictions"),
            harbor_agent=entry.get("harbor_agent"),
            kwargs=tuple(sorted((str(k), _option(v)) for k, v in (entry.get("kwargs") or {}).items())),
            isolate_network=bool(entry.get("isolate_network", False)),
            script=entry.get("script"),
        )


def _option(value: Any) -> str:
    """A Harbor agent option as `--ak key=value` carries it: booleans as JSON (`true`), the rest as text."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Outcome:
    """What the agent phase did: its exec result, a reason when it ends the run early, the model seen,
    and how a predicted patch was applied."""

    exec: containers.ExecResult
    skip_verifier_reason: str | None = None
    model: str | None = None
    prediction: handoff.PatchApplied | None = None


NOTHING = containers.ExecResult(exit_code=0, timed_out=False, seconds=0.0)


def run_agent(
    agent: Agent, task: Task, container: Container, log_path: Path, env: dict[str, str] | None = None
) -> Outcome:
    """Run the agent phase under the task's agent timeout."""
    timeout = task.agent.timeout_sec
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if agent.kind == "oracle":
        containers.copy_dir_in(container, task.path / "solution", names.CONTAINER_SOLUTION)
        return Outcome(
            containers.run(
                container, f"bash {names.CONTAINER_SOLUTION}/solve.sh", timeout, log_path, task.repo_dir, env
            )
        )
    if agent.kind == "predictions":
        return _apply_prediction(agent, task, container, log_path, timeout, env)
    if agent.kind == "script":
        return _run_script(agent, task, container, log_path, timeout, env)
    log_path.write_text("nop: the agent phase does nothing\n", encoding="utf-8")
    return Outcome(NOTHING)


def _apply_prediction(
    agent: Agent, task: Task, container: Container, log_path: Path, timeout: float, env: dict[str, str] | None
) -> Outcome:
    assert agent.predictions is not None
    prediction = load_predictions(Path(agent.predictions)).get(task.id)
    model = agent.model or (prediction.model if prediction else None)
    if prediction is None or not prediction.patch.strip():
        log_path.write_text(f"predictions: no patch for {task.id}\n", encoding="utf-8")
        return Outcome(NOTHING, skip_verifier_reason="empty_patch", model=model)
    done, applied = handoff.apply_patch(
        container, task, patch_candidates(prediction.patch), log_path, timeout
    )
    result = containers.ExecResult(done.exit_code, done.timed_out, done.seconds)
    reason = None if applied.applier else "patch_not_applied"
    return Outcome(result, skip_verifier_reason=reason, model=model, prediction=applied)


def harness_paths(agent: Agent) -> tuple[str, ...]:
    """Paths outside the repository that the harness itself writes in the agent phase of `agent`."""
    return (names.CONTAINER_SOLUTION,) if agent.kind == "oracle" else ()


def _run_script(
    agent: Agent, task: Task, container: Container, log_path: Path, timeout: float, env: dict[str, str] | None
) -> Outcome:
    assert agent.script is not None
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "agent.sh").write_bytes(Path(agent.script).read_bytes())
        instruction = task.path / names.INSTRUCTION
        if instruction.is_file():
            (Path(tmp) / "instruction.md").write_bytes(instruction.read_bytes())
        containers.copy_dir_in(container, Path(tmp), SCRIPT_DIR)
    env = {
        **(env or {}),
        "KOTLIN_BENCH_TASK": task.id,
        "KOTLIN_BENCH_REPO_DIR": task.repo_dir,
        "KOTLIN_BENCH_BASE_COMMIT": task.base_commit,
        "KOTLIN_BENCH_INSTRUCTION": f"{SCRIPT_DIR}/instruction.md",
    }
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"script: {agent.script}\n")
    result = containers.run(container, f"bash {SCRIPT_DIR}/agent.sh", timeout, log_path, task.repo_dir, env)
    with log_path.open("a", encoding="utf-8") as log:
        log.write(f"\nscript: exit code {result.exit_code}{' (timed out)' if result.timed_out else ''}\n")
    return Outcome(result)
