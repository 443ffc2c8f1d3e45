rule upstream_mirror:
    input:
        mirror_inputs,
    output:
        directory(names.mirror_dir("{owner}", "{repo}")),
    log:
        names.log("upstream", "{owner}", "{repo}"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        source=lambda wildcards: PLAN.mirror_source(wildcards.owner, wildcards.repo),
        builder=lambda wildcards: PLAN.mirror_sources().builder,
    shell:
        "bash {params.builder} {params.source} {output} >{log} 2>&1"


rule materialize:
    input:
        materialize_inputs,
    output:
        PLAN.stamp("{task}"),
    log:
        names.log("materialize", "{task}"),
    localrule: True
    conda:
        "../environment.yml"
    resources:
        materialize=1,
    params:
        spec=config["spec"],
        materialize=config.get("materialize", {}),
        mirrors=lambda wildcards: PLAN.mirrors(),
    script:
        "../workflow/scripts/materialize_task.py"
