# Three-phase validation (kotlin_bench.validation.derive): run, test, fix (and fix-<k> repetitions) per task, each
# in a fresh container from the task image; the task's verdict and derived lists; the summary.
from kotlin_bench.validation.records import PHASE_LABEL


rule validation_phase:
    input:
        validation_inputs,
    output:
        names.validation_phase("{task}", "{phase}"),
    log:
        names.validation_log("{task}", "{phase}"),
    wildcard_constraints:
        phase=PHASE_LABEL,
    priority: USES_IMAGE_PRIORITY
    retries: SETTINGS.retries
    conda:
        "../environment.yml"
    # one test command in a container from the task image: sized like a run (kotlin_bench.dag.resources)
    threads: validation_resource("threads")
    resources:
        docker=1,
        mem_mb=validation_resource("mem_mb"),
        runtime=validation_resource("runtime"),
        disk_mb=validation_resource("disk_mb"),
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/validation_phase.py"


rule validation_task:
    input:
        phases=validation_verdict_inputs,
        stamp=lambda wildcards: PLAN.stamp(wildcards.task),
    output:
        # and the derived expected_tests.json beside it, when the phases give something to derive from
        names.validation_verdict("{task}"),
    log:
        names.validation_log("{task}", "verdict"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
        stale=stale_validation_verdict,
    script:
        "../workflow/scripts/validation_task.py"


rule validation_summary:
    input:
        unpack(validation_summary_inputs),
    output:
        csv=names.VALIDATION_SUMMARY_CSV,
        markdown=names.VALIDATION_SUMMARY_MD,
    log:
        names.log("validation", "summary"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        stale=stale_validation_summary,
    script:
        "../workflow/scripts/validation_summary.py"
