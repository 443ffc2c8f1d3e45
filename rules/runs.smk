# A run (task, agent, attempt) is two steps: solve (the agent's work, kept) and verify (a verdict on it,
# in a fresh container; repeated with `verify: {repeats: N}`). Editing what only verification reads
# (tests/, the verifier config) reruns only verify jobs.


rule solve:
    input:
        solve_inputs,
    output:
        names.work_record("{agent}", "{task}", "{attempt}"),
    log:
        names.solve_log("{agent}", "{task}", "{attempt}"),
    priority: USES_IMAGE_PRIORITY
    retries: SETTINGS.retries
    conda:
        "../environment.yml"
    # sized from the task (kotlin_bench.dag.resources; README "Running on a cluster")
    threads: solve_resource("threads")
    # and one unit of model_api_<name> for an agent on a limited model endpoint (config model_apis)
    resources:
        **PLAN.model_api_resources(),
        docker=1,
        mem_mb=solve_resource("mem_mb"),
        runtime=solve_resource("runtime"),
        disk_mb=solve_resource("disk_mb"),
        # the try number, for the script to record an error on the last one (scripts see no `attempt`)
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
        agent=lambda wildcards: PLAN.agent_config(wildcards.agent),
        # what the agent phase depends on besides files: its phase of task.toml, the prediction's digest
        phase=lambda wildcards: PLAN.solve_phase(wildcards.task),
        prediction=lambda wildcards: PLAN.prediction_digest(
            wildcards.agent, wildcards.task
        ),
        # the capture's limits (kotlin_bench.runs.handoff.Limits; defaults for keys not set)
        capture=config.get("capture", {}),
        # how the agent phase's egress is recorded (kotlin_bench.engine.egress): `block` changes results
        egress=config.get("egress", {}),
        # the task's facts for the retrieval rule: recorded by Snakemake under `block` only, so an edit
        # reruns the task's solve steps under `block` and, under `flag`, only the summary, which
        # classifies the kept records again (kotlin_bench.dag.plan.Plan.solve_retrieval)
        retrieval=lambda wildcards: PLAN.solve_retrieval(wildcards.task),
    script:
        "../workflow/scripts/solve.py"


rule verify:
    input:
        unpack(verify_inputs),
    output:
        names.verify_result("{agent}", "{task}", "{attempt}"),
    log:
        names.verify_log("{agent}", "{task}", "{attempt}"),
    priority: USES_IMAGE_PRIORITY
    retries: SETTINGS.retries
    conda:
        "../environment.yml"
    threads: verify_resource("threads")
    resources:
        docker=1,
        mem_mb=verify_resource("mem_mb"),
        runtime=verify_resource("runtime"),
        disk_mb=verify_resource("disk_mb"),
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
        phase=lambda wildcards: PLAN.verify_phase(wildcards.task),
        verifier=config.get("verifier", {}),
    script:
        "../workflow/scripts/verify.py"


use rule verify as verify_repeat with:
    output:
        names.verify_result("{agent}", "{task}", "{attempt}", "{repeat}"),
    log:
        names.verify_log("{agent}", "{task}", "{attempt}", "{repeat}"),


# Regrade (`kotlin-bench regrade`): every run's work verified again into results/regrade/, then compared
# with the verdicts it would replace; nothing in results/runs/ changes until `regrade --apply`.
use rule verify as regrade_verify with:
    output:
        names.regrade_result("{agent}", "{task}", "{attempt}"),
    log:
        names.log("regrade", "{agent}", "{task}", "attempt-{attempt}"),


rule regrade_changes:
    input:
        unpack(regrade_inputs),
    output:
        csv=names.REGRADE_CSV,
        markdown=names.REGRADE_MD,
    log:
        names.log("regrade", "changes"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        # the verdicts a regrade would replace: read where they exist, never built by this rule
        current=PLAN.results(),
        stale=stale_regrade,
    script:
        "../workflow/scripts/regrade_changes.py"


rule regrade:
    input:
        rules.regrade_changes.output,
