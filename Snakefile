# kotlin-bench: base image -> task image -> run (task, agent, attempt) -> result -> summary.


include: "rules/common.smk"
include: "rules/dataset.smk"
include: "rules/images.smk"
include: "rules/runs.smk"
include: "rules/report.smk"


rule all:
    input:
        "results/summary.csv",
    default_target: True
