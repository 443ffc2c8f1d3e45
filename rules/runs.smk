rule run:
    input:
        run_inputs,
        # a script agent's script: editing it reruns that agent's runs
        agent_script=lambda wildcards: PLAN.agents[wildcards.agent].script or [],
    output:
        names.run_result("{agent}", "{task}", "{attempt}"),
    log:
        names.run_log("{agent}", "{task}", "{attempt}"),
    retries: config.get("retries", 1)
    conda:
        "../environment.yml"
    resources:
        docker=1,
        # the try number, for the script to record an error on the last one (scripts see no `attempt`)
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
        agent=lambda wildcards: PLAN.agent_config(wildcards.agent),
        prediction=lambda wildcards: PLAN.prediction_digest(
            wildcards.agent, wildcards.task
        ),
        retries=config.get("retries", 1),
        verifier=config.get("verifier", {}),
    script:
        "../workflow/scripts/run_task.py"
