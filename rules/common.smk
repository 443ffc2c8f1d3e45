import gc
import sys
from pathlib import Path

# Snakemake keeps every job with its files until it exits: two jobs per run, 31,000 at 15,000 runs. At
# Python's default thresholds (700, 10, 10) the collector goes through all of them again at each full
# collection, about a sixth of the CPU time of a dry run at that scale (bench/README.md, section 4); a
# full collection now waits for 1,000 collections of the middle generation instead of 10.
gc.set_threshold(1000, 20, 1000)

# This checkout's package first, whichever clone `scripts/setup.sh` installed editable: the rules and
# (through PYTHONPATH) the rule scripts import it, or the workflow refuses (kotlin_bench.core.checkout).
sys.path.insert(0, str(Path(workflow.basedir) / "src"))
try:
    from kotlin_bench.core.checkout import own_package_or_exit
except (
    ImportError
) as exc:  # no package here, and one from elsewhere (older) first on the path
    sys.exit(
        f"kotlin-bench: error: {workflow.basedir}/src/kotlin_bench cannot be imported: {exc}"
    )

own_package_or_exit(Path(workflow.basedir))

from snakemake.utils import min_version

from kotlin_bench.core import names
from kotlin_bench.dag.config import check_yaml_or_exit, plan_or_exit, settings_or_exit
from kotlin_bench.dag.progress import planned, print_headline, start_progress
from kotlin_bench.dag.redo import ErroredRuns
from kotlin_bench.dag.resources import USES_IMAGE_PRIORITY
from kotlin_bench.dag.stale import Staleness
from kotlin_bench.engine.retention import Purpose

min_version("9.0")

# a config.yaml that is not YAML: its line and column (Snakemake's message names neither)
check_yaml_or_exit(Path(workflow.basedir) / "config.yaml")


configfile: "config.yaml"


# the config checked once against workflow/schemas/config.schema.yaml (one short message per mistake), its
# defaults filled in: the typed settings (kotlin_bench.dag.settings; job scripts make theirs from the config)
SETTINGS = settings_or_exit(
    config,
    workflow.configfiles,
    Path(workflow.basedir),
    workflow.config_settings.config,
)
PLAN = plan_or_exit(config, workflow.configfiles, Path(workflow.basedir), SETTINGS)
# files made from many others that lack some of them (kotlin_bench.dag.stale; a dry run changes nothing)
STALE = Staleness(workflow)
# runs recorded as errors, redone by the next run (kotlin_bench.dag.redo)
ERRORED = ErroredRuns(workflow)


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
    # a run recorded as an error is redone, its failed step only (kotlin_bench.dag.redo)
    ERRORED.redo(
        names.verify_result(
            wildcards.agent,
            wildcards.task,
            wildcards.attempt,
            wildcards.get("repeat", 1),
        )
    )
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


def summary_inputs(wildcards):
    STALE.settle(names.SUMMARY_CSV, PLAN.summary_inputs(), "run result(s)")
    return {**PLAN.summary_inputs(), "releases": PLAN.releases(Purpose.RUNS)}


def stale_summary(wildcards):
    return STALE.parameter(names.SUMMARY_CSV, PLAN.summary_inputs(), "run result(s)")


def healthcheck_inputs(wildcards):
    made, needs = names.HEALTHCHECK_CSV, PLAN.healthcheck_inputs()
    STALE.settle(made, needs, "health check record(s)")
    return {**needs, "releases": PLAN.releases(Purpose.HEALTHCHECK)}


def stale_healthcheck(wildcards):
    return STALE.parameter(
        names.HEALTHCHECK_CSV, PLAN.healthcheck_inputs(), "health check record(s)"
    )


def validation_verdict_inputs(wildcards):
    verdict = names.validation_verdict(wildcards.task)
    phases = PLAN.validation_phases(wildcards.task)
    return STALE.settle(verdict, phases, "validation phase record(s)")


def stale_validation_verdict(wildcards):
    verdict = names.validation_verdict(wildcards.task)
    phases = PLAN.validation_phases(wildcards.task)
    return STALE.parameter(verdict, phases, "validation phase record(s)")


def validation_summary_inputs(wildcards):
    # each task's verdict first: Snakemake looks at the verdicts as this rule's inputs before it builds
    # their jobs, so a verdict that lacks a phase must be settled now to be made again
    for task_id in PLAN.tasks:
        verdict = names.validation_verdict(task_id)
        STALE.settle(
            verdict, PLAN.validation_phases(task_id), "validation phase record(s)"
        )
    made, needs = names.VALIDATION_SUMMARY_CSV, PLAN.validation_verdicts()
    STALE.settle(made, needs, "task verdict(s)")
    return {"verdicts": needs, "releases": PLAN.releases(Purpose.VALIDATION)}


def stale_validation_summary(wildcards):
    return STALE.parameter(
        names.VALIDATION_SUMMARY_CSV, PLAN.validation_verdicts(), "task verdict(s)"
    )


def regrade_inputs(wildcards):
    made, needs = names.REGRADE_CSV, PLAN.regrade_results()
    STALE.settle(made, needs, "regraded result(s)")
    return {"results": needs, "releases": PLAN.releases(Purpose.REGRADE)}


def release_inputs(wildcards):
    return PLAN.release_inputs(wildcards.task, Purpose(wildcards.purpose))


def stale_regrade(wildcards):
    return STALE.parameter(
        names.REGRADE_CSV, PLAN.regrade_results(), "regraded result(s)"
    )


def network_check_inputs(wildcards):
    return PLAN.network_check_inputs(wildcards.task)


# The harvest (rules/harvest.smk): its plan, and the input functions that read its checkpoints.
from kotlin_bench.dag.harvest import HarvestPlan
from kotlin_bench.dag.redo import ForcedAgain

HARVEST = HarvestPlan.from_config(config, Path(workflow.basedir))
HARVEST_ERRORS = ForcedAgain(workflow)


def harvest_resource(name, image):
    return lambda wildcards: getattr(
        HARVEST.resources(
            wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant, image
        ),
        name,
    )


def harvest_probe_inputs(wildcards):
    image = checkpoints.harvest_image.get(**wildcards).output[0]
    return HARVEST.probe_inputs(
        wildcards.owner, wildcards.repo, wildcards.pr, wildcards.variant, Path(image)
    )


def harvest_verdict_inputs(wildcards):
    # a candidate recorded as an error (the harness failed on every try) is tried again
    HARVEST_ERRORS.redo(HARVEST.errored(wildcards.owner, wildcards.repo, wildcards.pr))

    def probe(variant):
        return checkpoints.harvest_probe.get(**wildcards, variant=variant).output[0]

    return HARVEST.verdict_inputs(wildcards.owner, wildcards.repo, wildcards.pr, probe)


def harvest_window_inputs(wildcards):
    screened = checkpoints.harvest_screen.get(**wildcards).output[0]
    return HARVEST.window_inputs(wildcards.owner, wildcards.repo, Path(screened))
