# The health check: oracle 1 and nop 0 on every selected task, and a network probe inside each task's
# agent phase (an allowlisted host answers, GitHub does not); one table. Target: `snakemake healthcheck`
# (`snakemake sanity`, its name before 0.3, still works for one release).


rule network_check:
    input:
        network_check_inputs,
    output:
        names.network_check("{task}"),
    log:
        names.log("healthcheck", "network", "{task}"),
    priority: USES_IMAGE_PRIORITY
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/check_network.py"


rule healthcheck:
    input:
        unpack(healthcheck_inputs),
    output:
        csv=names.HEALTHCHECK_CSV,
        markdown=names.HEALTHCHECK_MD,
    log:
        names.log("healthcheck", "summary"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        stale=stale_healthcheck,
    script:
        "../workflow/scripts/healthcheck.py"


# The name of the health check before kotlin-bench 0.3; kept for one release.
rule sanity:
    input:
        rules.healthcheck.output,
