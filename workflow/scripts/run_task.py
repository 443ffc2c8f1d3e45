"""Snakemake script of rule run: solve and verify one (task, agent, attempt) and write result.json.

An infrastructure error fails the job so that Snakemake retries it; on the last try it is recorded as
an `error` result instead, so that the summary shows it and `kotlin-bench errors` can find it.
SIGTERM (Snakemake or a CI runner stopping the job) ends the job like Ctrl-C does: the phase containers'
exits remove the run's containers, and no result is written.
"""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import (
    Tries,
    configured_engine,
    logged,
    stop_on_sigterm,
    task_image_id,
    workflow_root,
)
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.runs import runner
from kotlin_bench.runs.agents import Agent
from kotlin_bench.runs.handoff import Limits
from kotlin_bench.runs.verify import VerifierOptions

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    agent = Agent(**sm.params.agent)
    attempt = int(sm.wildcards.attempt)
    run_dir = Path(sm.output[0]).parent
    try:
        task = load_task(Path(sm.params.task_dir))
    except TaskError as exc:
        # A bad task is a result (status error, naming the file), not a failed job: no retry can fix it,
        # and the summary of the other tasks must not wait for it.
        print(f"invalid task: {exc}")
        runner.record_invalid_task(sm.wildcards.task, agent, attempt, run_dir, exc)
    else:
        tries = Tries.of_job(sm, names.tries_log(agent.name, task.id, attempt))
        try:
            result = runner.run(
                task,
                agent,
                attempt,
                run_dir,
                expected_image_id=task_image_id(sm.config, Path(sm.input[0])),
                options=VerifierOptions.from_config(sm.params.verifier),
                limits=Limits.from_config(sm.params.capture),
                root=workflow_root(sm),
                engine=configured_engine(sm.config),
            )
        except Exception as exc:
            if not tries.failed(exc):
                raise
            result = runner.record_error(task, agent, attempt, run_dir, exc, "\n".join(tries.history()))
        print(
            f"{task.id} {agent.name} attempt {attempt}: {result.status} reward={result.reward} {result.reason or ''}"
        )
