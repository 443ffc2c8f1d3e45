# kotlin-bench: base image -> task image -> run (task, agent, attempt) -> result -> summary, rates, plots.


include: "rules/common.smk"
include: "rules/dataset.smk"
include: "rules/images.smk"
include: "rules/runs.smk"
include: "rules/report.smk"
include: "rules/validation.smk"
include: "rules/healthcheck.smk"
include: "rules/harvest.smk"


PROGRESS = []
PLANNED = []

# each model endpoint's concurrency limit (config model_apis), unless given on the command line
for api, limit in PLAN.model_apis.items():
    if f"model_api_{api}" not in workflow.global_resources:
        workflow.register_resource(f"model_api_{api}", limit)


onstart:
    # what this invocation will do: the progress line counts it, the headline follows an aggregate
    PLANNED.append(
        planned((j.rule.name, list(j.output)) for j in workflow.dag.needrun_jobs())
    )
    PROGRESS.append(
        start_progress(
            PLANNED[0].runs,
            interval=60,
            verifications=PLANNED[0].verifications,
        )
    )


onsuccess:
    for stop in PROGRESS:
        stop()
    if any("aggregate" in p.rules for p in PLANNED):
        print_headline()


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
