rule summary:
    input:
        all_results,
    output:
        "results/summary.csv",
    log:
        "results/logs/summary.log",
    localrule: True
    script:
        "../workflow/scripts/summarize.py"
