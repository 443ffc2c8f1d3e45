from workflow.reproduce import ReproducePlan

REPRODUCE = ReproducePlan.from_config(
    config.get("reproduce"), list(PLAN.agents), Path(workflow.basedir)
)


rule summary:
    input:
        all_results,
    output:
        "results/summary.csv",
    log:
        "results/logs/summary.log",
    localrule: True
    conda:
        "../environment.yml"
    params:
        tasks_dir=config["tasks_dir"],
    script:
        "../workflow/scripts/summarize.py"


rule aggregate:
    input:
        summary="results/summary.csv",
        references=REPRODUCE.reference_files(),
    output:
        rates="results/rates.csv",
        by_repository="results/rates_by_repository.csv",
        markdown="results/summary.md",
        reproduce_md=REPRODUCE.outputs(".md"),
        reproduce_csv=REPRODUCE.outputs(".csv"),
    log:
        "results/logs/aggregate.log",
    localrule: True
    conda:
        "../environment.yml"
    params:
        reproduce=REPRODUCE.to_params(),
    script:
        "../workflow/scripts/aggregate.py"


rule plots:
    input:
        summary="results/summary.csv",
        rates="results/rates.csv",
        by_repository="results/rates_by_repository.csv",
        reproduce=REPRODUCE.outputs(".csv"),
    output:
        rates="results/plots/rates.png",
        by_repository="results/plots/rates_by_repository.png",
        outcomes="results/plots/outcomes.png",
        html="results/report.html",
    log:
        "results/logs/plots.log",
    localrule: True
    conda:
        "../environment.yml"
    params:
        reproduce=REPRODUCE.to_params(),
    script:
        "../workflow/scripts/plots.py"
