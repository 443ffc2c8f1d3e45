rule base_image:
    input:
        base_image_inputs,
    output:
        names.base_sentinel("{repo_key}", "{tag}"),
    log:
        names.log("images", "base", "{repo_key}", "{tag}"),
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        root=workflow.basedir,
        manifest=config["bases_manifest"],
        timeout=config.get("base_build_timeout_sec", 3600),
    script:
        "../workflow/scripts/build_base_image.py"


rule task_image:
    input:
        task_image_inputs,
    output:
        names.task_sentinel("{task}"),
    log:
        names.log("images", "task", "{task}"),
    conda:
        "../environment.yml"
    resources:
        docker=1,
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/build_task_image.py"
