"""The Snakemake DAG: the plan, job resources, progress, helpers of rule scripts."""
