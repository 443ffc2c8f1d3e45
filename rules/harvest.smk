# The harvest (kotlin-bench harvest; docs/dataset.md, "Harvest"): per repository and window, the pull
# requests screened by the rules, each candidate validated on the repository's base variants (newest first),
# the candidates table, the dated specification of the accepted tasks and the page. Target:
#   snakemake results/harvest/<owner>/<repo>/<since>_<until>/dataset.json
# The input functions that read checkpoints are in rules/common.smk and kotlin_bench.dag.harvest.
from kotlin_bench.validation.records import PHASE_LABEL


wildcard_constraints:
    window=names.HARVEST_WINDOW,
    pr="[0-9]+",
    variant="[A-Za-z0-9][A-Za-z0-9._-]*",


# The API is read here, on the host that runs Snakemake (a cluster's nodes may not reach it); the client
# retries and waits for rate limits itself, so a failure here is final: the next run goes on from it.
checkpoint harvest_screen:
    input:
        lambda wildcards: HARVEST.history_inputs(wildcards.owner, wildcards.repo),
    output:
        names.harvest_screened("{owner}", "{repo}", "{window}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "{window}"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        github=config.get("github", {}),
        harvest=config.get("harvest", {}),
        mirrors=lambda wildcards: HARVEST.mirrors(wildcards.owner, wildcards.repo),
    script:
        "../workflow/scripts/harvest_screen.py"


rule harvest_task:
    input:
        lambda wildcards: HARVEST.task_inputs(
            wildcards.owner, wildcards.repo, wildcards.pr
        ),
    output:
        names.harvest_task_stamp("{owner}", "{repo}", "{pr}", "{variant}", "{task}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "pr-{pr}", "{variant}", "{task}"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        harvest=config.get("harvest", {}),
        materialize=config.get("materialize", {}),
        mirrors=lambda wildcards: HARVEST.mirrors(wildcards.owner, wildcards.repo),
    script:
        "../workflow/scripts/harvest_task.py"


checkpoint harvest_image:
    input:
        lambda wildcards: HARVEST.image_inputs(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant
        ),
    output:
        names.harvest_image("{owner}", "{repo}", "{pr}", "{variant}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "pr-{pr}", "{variant}", "image"),
    retries: SETTINGS.retries
    conda:
        "../environment.yml"
    threads: harvest_resource("threads", True)
    resources:
        docker=1,
        mem_mb=harvest_resource("mem_mb", True),
        runtime=harvest_resource("runtime", True),
        disk_mb=harvest_resource("disk_mb", True),
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: HARVEST.task_dir(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant
        ),
    script:
        "../workflow/scripts/harvest_image.py"


rule harvest_phase:
    input:
        lambda wildcards: HARVEST.phase_inputs(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant
        ),
    output:
        names.harvest_phase("{owner}", "{repo}", "{pr}", "{variant}", "{phase}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "pr-{pr}", "{variant}", "{phase}"),
    wildcard_constraints:
        phase=PHASE_LABEL,
    retries: SETTINGS.retries
    conda:
        "../environment.yml"
    threads: harvest_resource("threads", False)
    resources:
        docker=1,
        mem_mb=harvest_resource("mem_mb", False),
        runtime=harvest_resource("runtime", False),
        disk_mb=harvest_resource("disk_mb", False),
        tries=lambda wildcards, attempt: attempt,
    params:
        task_dir=lambda wildcards: HARVEST.task_dir(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant
        ),
    script:
        "../workflow/scripts/harvest_phase.py"


checkpoint harvest_probe:
    input:
        harvest_probe_inputs,
    output:
        names.harvest_probe("{owner}", "{repo}", "{pr}", "{variant}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "pr-{pr}", "{variant}", "probe"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        task_dir=lambda wildcards: HARVEST.task_dir(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant
        ),
    script:
        "../workflow/scripts/harvest_probe.py"


rule harvest_verdict:
    input:
        unpack(harvest_verdict_inputs),
    output:
        names.harvest_verdict("{owner}", "{repo}", "{pr}"),
    log:
        names.log("harvest", "{owner}", "{repo}", "pr-{pr}", "verdict"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        harvest=config.get("harvest", {}),
    script:
        "../workflow/scripts/harvest_verdict.py"


rule harvest_window:
    input:
        unpack(harvest_window_inputs),
    output:
        spec=names.harvest_spec("{owner}", "{repo}", "{window}"),
        table=f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_TABLE}",
        config=f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_CONFIG}",
        page=f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_PAGE}.md",
        html=f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_PAGE}.html",
        tasks=directory(
            f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_TASKS}"
        ),
        expected=directory(
            f"{names.harvest_window('{owner}', '{repo}', '{window}')}/{names.HARVEST_EXPECTED}"
        ),
    log:
        names.log("harvest", "{owner}", "{repo}", "{window}", "window"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        harvest=config.get("harvest", {}),
        materialize=config.get("materialize", {}),
    script:
        "../workflow/scripts/harvest_window.py"
