from pathlib import Path

from snakemake.utils import min_version, validate

from kotlin_bench.core import names
from kotlin_bench.dag.config import check_or_exit, plan_or_exit
from kotlin_bench.dag.plan import drop_stale_summary
from kotlin_bench.dag.progress import start_progress

min_version("9.0")


configfile: "config.yaml"


# the config checked against workflow/schemas/config.schema.yaml: one short message per mistake
check_or_exit(config, workflow.configfiles, Path(workflow.basedir))
# fills in the schema's defaults
validate(config, "../workflow/schemas/config.schema.yaml")
PLAN = plan_or_exit(config, workflow.configfiles, Path(workflow.basedir))
MISSING_RUNS = drop_stale_summary(Path(names.SUMMARY_CSV), PLAN.results())


wildcard_constraints:
    task="[A-Za-z0-9][A-Za-z0-9_.-]*",
    agent="[A-Za-z0-9][A-Za-z0-9_.-]*",
    attempt="[0-9]+",
    repeat="[0-9]+",
    repo_key="[a-z0-9][a-z0-9._-]*",
    tag="[A-Za-z0-9][A-Za-z0-9._-]*",
    owner="[A-Za-z0-9][A-Za-z0-9_.-]*",
    repo="[A-Za-z0-9][A-Za-z0-9_.-]*",


def base_image_inputs(wildcards):
    return PLAN.base_inputs(wildcards.repo_key, wildcards.tag)


def task_image_inputs(wildcards):
    return PLAN.task_image_inputs(wildcards.task)


def solve_inputs(wildcards):
    return PLAN.solve_inputs(wildcards.agent, wildcards.task)


def verify_inputs(wildcards):
    return PLAN.verify_inputs(wildcards.agent, wildcards.task, wildcards.attempt)


def validation_inputs(wildcards):
    return PLAN.validation_inputs(wildcards.task)


def mirror_inputs(wildcards):
    return PLAN.mirror_inputs(wildcards.owner, wildcards.repo)


def materialize_inputs(wildcards):
    return PLAN.materialize_inputs(wildcards.task)


def solve_resource(name):
    """One figure of a solve step's request (threads, mem_mb, runtime, disk_mb), from its task and agent."""
    return lambda wildcards: getattr(
        PLAN.solve_resources(wildcards.agent, wildcards.task), name
    )


def verify_resource(name):
    """One figure of a verify step's request, from its task."""
    return lambda wildcards: getattr(PLAN.verify_resources(wildcards.task), name)


def validation_resource(name):
    """One figure of a validation phase's request, from its task."""
    return lambda wildcards: getattr(PLAN.validation_resources(wildcards.task), name)


def task_image_resource(name):
    return lambda wildcards: getattr(PLAN.task_image_resources(wildcards.task), name)


def all_results(wildcards):
    return PLAN.results()


def repeated_results(wildcards):
    return PLAN.repeated_results()


def healthcheck_runs(wildcards):
    return PLAN.healthcheck_results()


def healthcheck_repeats(wildcards):
    return PLAN.healthcheck_repeats()


def network_checks(wildcards):
    return PLAN.network_checks()


def network_check_inputs(wildcards):
    return PLAN.network_check_inputs(wildcards.task)
