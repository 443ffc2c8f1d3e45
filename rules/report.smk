from kotlin_bench.results.reproduce.plan import ReproducePlan
from kotlin_bench.runs.agents.config import agent_cutoffs

REPRODUCE = ReproducePlan.from_config(
    config.get("reproduce"), list(PLAN.agents), Path(workflow.basedir)
)
# the agents' training cutoffs (config agents: cutoff:), for the reports only
CUTOFFS = agent_cutoffs(PLAN.agents.values())


rule summary:
    input:
        unpack(summary_inputs),
    output:
        names.SUMMARY_CSV,
    log:
        names.log("summary"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        tasks_dir=config["tasks_dir"],
        stale=stale_summary,
        # every task's facts for the retrieval rule: an edit classifies its runs' kept egress records
        # again (kotlin_bench.results.summary.flagged), without running them again
        retrieval=PLAN.summary_retrieval(),
    script:
        "../workflow/scripts/summarize.py"


rule aggregate:
    input:
        summary=names.SUMMARY_CSV,
        references=REPRODUCE.reference_files(),
        # the task images' records, for the sizes table (kotlin_bench.engine.retention.image_rows)
        images=PLAN.task_sentinels(),
    output:
        rates=names.RATES_CSV,
        by_repository=names.RATES_BY_REPOSITORY_CSV,
        comparisons=names.COMPARISONS_CSV,
        markdown=names.SUMMARY_MD,
        verdicts=names.VERDICTS_JSON,
        reproduce_md=REPRODUCE.outputs(".md"),
        reproduce_csv=REPRODUCE.outputs(".csv"),
    log:
        names.log("aggregate"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        reproduce=REPRODUCE.to_params(),
        cutoffs=CUTOFFS,
    script:
        "../workflow/scripts/aggregate.py"


rule plots:
    input:
        summary=names.SUMMARY_CSV,
        rates=names.RATES_CSV,
        by_repository=names.RATES_BY_REPOSITORY_CSV,
        verdicts=names.VERDICTS_JSON,
        comparisons=names.COMPARISONS_CSV,
        reproduce=REPRODUCE.outputs(".csv"),
    output:
        rates=names.PLOT_RATES,
        by_repository=names.PLOT_RATES_BY_REPOSITORY,
        outcomes=names.PLOT_OUTCOMES,
        quarters=names.PLOT_QUARTERS,
        html=names.REPORT_HTML,
    log:
        names.log("plots"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        cutoffs=CUTOFFS,
    script:
        "../workflow/scripts/plots.py"


rule site:
    input:
        all_results,
        summary=names.SUMMARY_CSV,
        rates=names.RATES_CSV,
        by_repository=names.RATES_BY_REPOSITORY_CSV,
        comparisons=names.COMPARISONS_CSV,
        # the charts the index shows (relative links: a copy of results/ keeps them)
        plots=[
            names.PLOT_RATES,
            names.PLOT_RATES_BY_REPOSITORY,
            names.PLOT_OUTCOMES,
            names.PLOT_QUARTERS,
        ],
    output:
        names.SITE_INDEX,
    log:
        names.log("site"),
    localrule: True
    conda:
        "../environment.yml"
    params:
        tasks_dir=config["tasks_dir"],
        cutoffs=CUTOFFS,
    script:
        "../workflow/scripts/site.py"
