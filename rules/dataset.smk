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
        # the stamp, and each file materialization writes (the steps of a run depend on them exactly)
        stamp=PLAN.stamp("{task}"),
        files=[PLAN.materialized("{task}", f) for f in names.MATERIALIZED_OUTPUTS],
    log:
        names.log("materialize", "{task}"),
    localrule: True
    conda:
        "../environment.yml"
    resources:
        materialize=1,
    params:
        spec=config["spec"],
        entry=lambda wildcards: PLAN.spec_entry_digest(wildcards.task),
        materialize=config.get("materialize", {}),
        mirrors=lambda wildcards: PLAN.mirrors(wildcards.task),
    script:
        "../workflow/scripts/materialize_task.py"
