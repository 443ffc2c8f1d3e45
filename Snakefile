# kotlin-bench: base image -> task image -> run (task, agent, attempt) -> result -> summary, rates, plots.


include: "rules/common.smk"
include: "rules/dataset.smk"
include: "rules/images.smk"
include: "rules/runs.smk"
include: "rules/report.smk"
include: "rules/validation.smk"
include: "rules/healthcheck.smk"


PROGRESS = []


onstart:
    PROGRESS.append(start_progress(PLAN.results(), interval=60))


onsuccess:
    for stop in PROGRESS:
        stop()


onerror:
    for stop in PROGRESS:
        stop()


rule all:
    default_target: True
    input:
        names.SUMMARY_CSV,
        names.SUMMARY_MD,
        names.REPORT_HTML,
        names.SITE_INDEX,
