rule base_image:
    input:
        base_image_inputs,
    output:
        names.base_sentinel("{repo_key}", "{tag}"),
    log:
        names.log("images", "base", "{repo_key}", "{tag}"),
    conda:
        "../environment.yml"
    threads: PLAN.base_image_resources().threads
    resources:
        docker=1,
        mem_mb=PLAN.base_image_resources().mem_mb,
        runtime=PLAN.base_image_resources().runtime,
        disk_mb=PLAN.base_image_resources().disk_mb,
    params:
        manifest=config["bases_manifest"],
        timeout=PLAN.base_build_timeout_sec,
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
    threads: task_image_resource("threads")
    resources:
        docker=1,
        mem_mb=task_image_resource("mem_mb"),
        runtime=task_image_resource("runtime"),
        disk_mb=task_image_resource("disk_mb"),
    params:
        task_dir=lambda wildcards: PLAN.task_dir(wildcards.task),
    script:
        "../workflow/scripts/build_task_image.py"


# With `images: {keep: bases}`, a task image goes once the jobs of one purpose (runs, healthcheck,
# validation, regrade) that need it are done; a job that needs it later brings it back
# (kotlin_bench.engine.retention). The purpose's table waits for these records.
rule release_task_image:
    input:
        release_inputs,
    output:
        names.task_image_release("{task}", "{purpose}"),
    log:
        names.log("images", "release", "{purpose}", "{task}"),
    wildcard_constraints:
        purpose="|".join(Purpose),
    priority: USES_IMAGE_PRIORITY
    localrule: True
    conda:
        "../environment.yml"
    script:
        "../workflow/scripts/release_task_image.py"
