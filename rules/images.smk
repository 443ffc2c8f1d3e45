rule base_image:
    input:
        base_image_inputs,
    output:
        base_sentinel("{repo_key}", "{tag}"),
    log:
        "results/logs/images/base/{repo_key}/{tag}.log",
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        manifest=config["bases_manifest"],
        timeout=config.get("base_build_timeout_sec", 3600),
    script:
        "../workflow/scripts/build_base_image.py"


rule task_image:
    input:
        task_image_inputs,
    output:
        task_sentinel("{task}"),
    log:
        "results/logs/images/task/{task}.log",
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/build_task_image.py"
