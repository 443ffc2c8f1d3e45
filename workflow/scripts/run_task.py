"""Snakemake script of rule run: evaluate one (task, agent, attempt) and write result.json.

An infrastructure error fails the job so that Snakemake retries it; on the last try it is recorded as
an `error` result instead, so that the summary shows it and `kotlin-bench errors` can find it.
SIGTERM (Snakemake or a CI runner stopping the job) ends the job like Ctrl-C does: the runner's `finally`
blocks remove the run's containers, and no result is written.
"""

from pathlib import Path

from kotlin_bench import names, runner
from kotlin_bench.agents import Agent
from kotlin_bench.handoff import Limits
from kotlin_bench.smk import configured_retries, logged, stop_on_sigterm, task_image_id
from kotlin_bench.tasks import TaskError, load_task

stop_on_sigterm()
sm = snakemake  # noqa: F821
retries = configured_retries(sm.config)
with logged(sm.log[0]):
    agent = Agent(**sm.params.agent)
    limits = Limits.from_config(sm.params.capture)
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
        # Snakemake clears the job log before a retry; each try's failure is kept here too.
        tries = Path(names.tries_log(agent.name, sm.wildcards.task, attempt))
        if sm.resources.tries == 1:
            tries.unlink(missing_ok=True)
        try:
            image = task_image_id(sm.config, Path(sm.input[0]))
            options = runner.VerifierOptions.from_config(sm.params.verifier)
            result = runner.run(
                task, agent, attempt, run_dir, expected_image_id=image, options=options, limits=limits
            )
        except Exception as exc:
            line = f"try {sm.resources.tries} of {retries + 1} failed: {type(exc).__name__}: {exc}"
            print(line)
            with tries.open("a", encoding="utf-8") as record:
                record.write(line + "\n")
            if sm.resources.tries <= retries:
                runner.wait_for_engine(120)  # an engine that restarts gets time to come back before the retry
                raise
            result = runner.record_error(
                task, agent, attempt, run_dir, exc, tries.read_text(encoding="utf-8")
            )
        print(
            f"{task.id} {agent.name} attempt {attempt}: {result.status} reward={result.reward} {result.reason or ''}"
        )
