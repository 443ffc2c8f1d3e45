rule run:
    input:
        run_inputs,
        # a script agent's script: editing it reruns that agent's runs
        agent_script=lambda wildcards: PLAN.agent(wildcards.agent).script or [],
    output:
        names.run_result("{agent}", "{task}", "{attempt}"),
    log:
        names.run_log("{agent}", "{task}", "{attempt}"),
    retries: config.get("retries", 1)
    conda:
        "../environment.yml"
    # sized from the task (kotlin_bench.dag.resources; README "Running on a cluster")
    threads: run_resource("threads")
    resources:
        docker=1,
        mem_mb=run_resource("mem_mb"),
        runtime=run_resource("runtime"),
        disk_mb=run_resource("disk_mb"),
        # the try number, for the script to record an error on the last one (scripts see no `attempt`)
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
        agent=lambda wildcards: PLAN.agent_config(wildcards.agent),
        prediction=lambda wildcards: PLAN.prediction_digest(
            wildcards.agent, wildcards.task
        ),
        verifier=config.get("verifier", {}),
        # the capture's limits (kotlin_bench.runs.handoff.Limits; defaults for keys not set)
        capture=config.get("capture", {}),
    script:
        "../workflow/scripts/run_task.py"
