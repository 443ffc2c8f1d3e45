"""`kind: script`: your own agent, a bash script (`script: path/to/agent.sh`, relative to the workflow
directory), copied into the container and run with bash in the repository directory under the agent
timeout and network mode.

It sees `KOTLIN_BENCH_TASK`, `KOTLIN_BENCH_REPO_DIR`, `KOTLIN_BENCH_BASE_COMMIT` and
`KOTLIN_BENCH_INSTRUCTION` (the path of the task's instruction.md in the container), plus the phase's
network settings, and for a model-driven agent: the values of the agent's `env:` names from the host's
environment (redacted from every file the run keeps), `KOTLIN_BENCH_MODEL` and `KOTLIN_BENCH_MODEL_URL`
(the agent's `model` and `base_url`), and three files it may write (docs/configuration.md has their
shapes): `KOTLIN_BENCH_USAGE` (its tokens and cost, a JSON object), `KOTLIN_BENCH_TRAJECTORY` (what it
did, ATIF JSON) and `KOTLIN_BENCH_OUTAGE` (the provider's answer, when it stopped because its model API
failed: a claim the harness checks, `kotlin_bench.runs.model_api`). Its exit status is recorded in
agent.log and the work record; its work is whatever it leaves in the repository. Processes it leaves behind keep running until the agent container is removed;
none of them reach the verifier.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.core.record import Usage
from kotlin_bench.engine import containers
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
from kotlin_bench.runs.model_api import read_usage
from kotlin_bench.runs.solve import Outcome, SolveContext

if TYPE_CHECKING:
    from docker.models.containers import Container

SCRIPT_DIR = names.CONTAINER_AGENT_SCRIPT_DIR
SCRIPT_ENV = (
    "KOTLIN_BENCH_TASK",
    "KOTLIN_BENCH_REPO_DIR",
    "KOTLIN_BENCH_BASE_COMMIT",
    "KOTLIN_BENCH_INSTRUCTION",
)
OUT_DIR = f"{SCRIPT_DIR}/out"  # the files the script may write, read back after it ends
OUTAGE_FILE = "outage.txt"
MAX_OUT_BYTES = 32 << 20


class Script(AgentKind):
    name = "script"
    summary = "your own bash script, run in the repository during the agent phase"
    required = (("script", "a bash script, relative to the workflow directory"),)
    harness_paths = (SCRIPT_DIR,)

    def inputs(self, agent: Agent, task_dir: Path) -> list[Path]:
        assert agent.script is not None
        return [Path(agent.script)]

    def check(self, agent: Agent, root: Path) -> None:
        assert agent.script is not None
        if not (root / agent.script).is_file():
            raise AgentConfigError(f"agent {agent.name!r}: script: {agent.script!r} is not a file")

    def act(self, ctx: SolveContext, container: Container, log_path: Path, env: dict[str, str]) -> Outcome:
        agent, task = ctx.agent, ctx.task
        assert agent.script is not None
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "agent.sh").write_bytes((ctx.root / agent.script).read_bytes())
            instruction = task.path / names.INSTRUCTION
            if instruction.is_file():
                (Path(tmp) / "instruction.md").write_bytes(instruction.read_bytes())
            (Path(tmp) / "out").mkdir()
            containers.copy_dir_in(container, Path(tmp), SCRIPT_DIR)
        values = (task.id, task.repo_dir, task.base_commit, f"{SCRIPT_DIR}/instruction.md")
        env = {**env, **dict(zip(SCRIPT_ENV, values, strict=True)), **model_env(agent)}
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"script: {agent.script}\n")
        result = containers.run(
            container,
            f"bash {SCRIPT_DIR}/agent.sh",
            task.agent.timeout_sec,
            log_path,
            workdir=task.repo_dir,
            env=env,
        )
        with log_path.open("a", encoding="utf-8") as log:
            timed_out = " (timed out)" if result.timed_out else ""
            log.write(f"\nscript: exit code {result.exit_code}{timed_out}\n")
        usage, claim = self._reports(ctx, container)
        if claim is not None:
            with log_path.open("a", encoding="utf-8") as log:
                log.write(f"script: says its model API failed: {claim.strip()[:600]}\n")
        return Outcome(result, usage=usage, outage_claim=claim if result.exit_code != 0 else None)

    def _reports(self, ctx: SolveContext, container: Container) -> tuple[Usage, str | None]:
        """The script's usage (its trajectory copied beside work.json) and its outage claim, if any."""
        read = {
            name: containers.read_file(container, f"{OUT_DIR}/{name}", MAX_OUT_BYTES)
            for name in (names.AGENT_USAGE, names.AGENT_TRAJECTORY, OUTAGE_FILE)
        }
        usage_file = read[names.AGENT_USAGE]
        usage = read_usage(usage_file.decode("utf-8", errors="replace")) if usage_file else Usage()
        if usage.cost_usd is None:
            usage.cost_usd = ctx.agent.cost_of(usage.input_tokens, usage.cache_tokens, usage.output_tokens)
        trajectory = read[names.AGENT_TRAJECTORY]
        if trajectory:
            (ctx.work_dir / names.AGENT_TRAJECTORY).write_bytes(trajectory)
            usage.trajectory = names.AGENT_TRAJECTORY
        outage = read[OUTAGE_FILE]
        return usage, outage.decode("utf-8", errors="replace") if outage is not None else None


def model_env(agent: Agent) -> dict[str, str]:
    """What a script sees of its model and of the files it may write."""
    env = {
        "KOTLIN_BENCH_USAGE": f"{OUT_DIR}/{names.AGENT_USAGE}",
        "KOTLIN_BENCH_TRAJECTORY": f"{OUT_DIR}/{names.AGENT_TRAJECTORY}",
        "KOTLIN_BENCH_OUTAGE": f"{OUT_DIR}/{OUTAGE_FILE}",
    }
    if agent.model:
        env["KOTLIN_BENCH_MODEL"] = agent.model
    if agent.base_url:
        env["KOTLIN_BENCH_MODEL_URL"] = agent.base_url
    return env
