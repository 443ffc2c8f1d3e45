"""`kind: script`: your own agent, a bash script (`script: path/to/agent.sh`, relative to the workflow
directory), copied into the container and run with bash in the repository directory under the agent
timeout and network mode.

It sees `KOTLIN_BENCH_TASK`, `KOTLIN_BENCH_REPO_DIR`, `KOTLIN_BENCH_BASE_COMMIT` and
`KOTLIN_BENCH_INSTRUCTION` (the path of the task's instruction.md in the container), plus the phase's
network settings. Its exit status is recorded in agent.log and the work record; its work is whatever it
leaves in the repository. Processes it leaves behind keep running until the agent container is removed;
none of them reach the verifier.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from kotlin_bench.core import names
from kotlin_bench.engine import containers
from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
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
            containers.copy_dir_in(container, Path(tmp), SCRIPT_DIR)
        values = (task.id, task.repo_dir, task.base_commit, f"{SCRIPT_DIR}/instruction.md")
        env = {**env, **dict(zip(SCRIPT_ENV, values, strict=True))}
        with log_path.open("a", encoding="utf-8") as log:
            log.write(f"script: {agent.script}\n")
        result = containers.run(
            container, f"bash {SCRIPT_DIR}/agent.sh", task.agent.timeout_sec, log_path, task.repo_dir, env
        )
        with log_path.open("a", encoding="utf-8") as log:
            timed_out = " (timed out)" if result.timed_out else ""
            log.write(f"\nscript: exit code {result.exit_code}{timed_out}\n")
        return Outcome(result)
