"""Snakemake script of rule solve: the agent's work on one (task, agent, attempt), kept in a work record.

An infrastructure error fails the job so that Snakemake retries it; on the last try it is recorded as a
work record with status error, which the run's verify step turns into an error result of step `solve`.
SIGTERM (Snakemake or a CI runner stopping the job) ends the job like Ctrl-C does: the phase container's
exit removes the run's containers, and no record is written. Too little free disk space (see
kotlin_bench.engine.disk) refuses the job before anything starts, on every try, and is never recorded.
A model outage the harness saw (kotlin_bench.runs.model_api) waits the agent's `outage_backoff_sec` (doubled each try)
before the job fails into its retry.
"""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.dag.smk import (
    Tries,
    backoff_after_outage,
    check_disk,
    job_settings,
    logged,
    stop_on_sigterm,
    task_image,
    workflow_root,
)
from kotlin_bench.dataset.task import TaskError, load_task
from kotlin_bench.engine.disk import Job
from kotlin_bench.runs import runner
from kotlin_bench.runs.agents import Agent, kind_of
from kotlin_bench.runs.model_api import over_budget

stop_on_sigterm()
sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    settings = job_settings(sm)
    agent = Agent.from_params(sm.params.agent)
    check_disk(sm, Job.RUN, settings, uses_engine=kind_of(agent).needs_image)
    attempt = int(sm.wildcards.attempt)
    work_dir = Path(sm.output[0]).parent
    try:
        task = load_task(Path(sm.params.task_dir))
    except TaskError as exc:
        # A bad task is a record (naming the file), not a failed job: no retry can fix it, and the
        # summary of the other tasks must not wait for it.
        print(f"invalid task: {exc}")
        runner.record_invalid_task(sm.wildcards.task, agent, attempt, work_dir, exc)
    else:
        tries = Tries.of_job(sm, settings)
        root = workflow_root(sm)
        why = over_budget(settings.agent(agent.name).budget_usd, agent.name, work_dir.parents[2], work_dir)
        if why is not None:  # the agent's budget is spent: the run is listed as not run, never started
            print(why)
            work = runner.record_not_run(task, agent, attempt, work_dir, why)
        else:
            try:
                image = task_image(settings, task) if kind_of(agent).needs_image else None
                facts = Facts.from_dict(sm.params.retrieval) if sm.params.retrieval is not None else Facts()
                work = runner.solve_step(
                    task,
                    agent,
                    attempt,
                    work_dir,
                    image=image,
                    limits=settings.capture,
                    root=root,
                    engine=settings.engine,
                    egress=settings.egress,
                    facts=facts,
                )
            except Exception as exc:
                if not tries.failed(exc):
                    backoff_after_outage(settings, agent.name, exc, tries.number)
                    raise
                work = runner.record_solve_error(
                    task, agent, attempt, work_dir, error=exc, tries=tries.history()
                )
        if tries.number > 1:  # every run's number of tries reaches the summary (solve_tries)
            work.work.solve_tries, work.tries = tries.number, work.tries or tries.history()
            work.write(work_dir / names.WORK_FILE)
        what = work.outcome or (f"{work.diff} ({work.patch})" if work.diff else "no work to verify")
        print(f"{task.id} {agent.name} attempt {attempt}: solved, {work.status}: {what}")
