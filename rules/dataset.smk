rule upstream_mirror:
    input:
        mirror_inputs,
    output:
        directory(mirror_dir("{owner}", "{repo}")),
    log:
        "results/logs/upstream/{owner}/{repo}.log",
    params:
        source=lambda wildcards: PLAN.mirror_source(wildcards.owner, wildcards.repo),
        builder=lambda wildcards: PLAN.mirror_sources()["builder"],
    localrule: True
    shell:
        "bash {params.builder} {params.source} {output} >{log} 2>&1"


rule materialize:
    input:
        materialize_inputs,
    output:
        PLAN.stamp("{task}"),
    log:
        "results/logs/materialize/{task}.log",
    params:
        spec=config["spec"],
        tasks_dir=config["tasks_dir"],
        materialize=config.get("materialize", {}),
        mirrors=lambda wildcards: PLAN.mirrors(),
    resources:
        materialize=1,
    localrule: True
    script:
        "../workflow/scripts/materialize_task.py"
