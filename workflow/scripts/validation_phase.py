"""Snakemake script of rule validation_phase: one phase (run, test, fix, fix-<k>) of a task's validation.

An infrastructure error fails the job so that Snakemake retries it; on the last try it is recorded in the
phase's record instead, so that the task's verdict names it and the summary of the other tasks is made.
"""

from pathlib import Path

from kotlin_bench import validation_run
from kotlin_bench.smk import configured_retries, logged, stop_on_sigterm, task_image_id
from kotlin_bench.tasks import TaskError, load_task

stop_on_sigterm()
sm = snakemake  # noqa: F821
retries = configured_retries(sm.config)
with logged(sm.log[0]):
    label, task_id = sm.wildcards.phase, sm.wildcards.task
    out_dir = Path(sm.output[0]).parent
    tries = out_dir.parent / f".{label}.tries"  # each failed try (Snakemake clears the log before a retry)
    if sm.resources.tries == 1:
        tries.unlink(missing_ok=True)
    try:
        task = load_task(Path(sm.params.task_dir), require_materialized=False)
        image = task_image_id(sm.config, Path(sm.input[0]))
        record = validation_run.run_phase(task, label, out_dir, image)
    except Exception as exc:
        line = f"try {sm.resources.tries} of {retries + 1} failed: {type(exc).__name__}: {exc}"
        print(line)
        with tries.open("a", encoding="utf-8") as stream:
            stream.write(line + "\n")
        if sm.resources.tries <= retries and not isinstance(exc, TaskError):
            raise
        history = tries.read_text(encoding="utf-8").splitlines()
        record = validation_run.record_error(task_id, label, out_dir, exc, history)
    state = record.error or record.problem or f"test command exit code {record.exit_code}"
    print(f"{task_id} {label}: {state}")
