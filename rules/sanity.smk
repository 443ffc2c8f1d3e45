# The sanity sweep: oracle 1 and nop 0 on every selected task, and a network probe inside each task's
# agent phase (an allowlisted host answers, GitHub does not); one table. Target: `snakemake sanity`.


rule network_check:
    input:
        network_check_inputs,
    output:
        names.network_check("{task}"),
    log:
        names.log("sanity", "network", "{task}"),
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/check_network.py"


rule sanity:
    input:
        runs=sanity_runs,
        checks=network_checks,
    output:
        csv=names.SANITY_CSV,
        markdown=names.SANITY_MD,
    log:
        names.log("sanity", "summary"),
    localrule: True
    conda:
        "../environment.yml"
    script:
        "../workflow/scripts/sanity.py"
