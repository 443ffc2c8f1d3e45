"""Snakemake script of rule harvest_task: a candidate's task directory on one base variant, generated from
its screening and materialized from the repository's history and the API's records read by the screening."""

from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.dag.smk import logged
from kotlin_bench.dataset.generate import generate
from kotlin_bench.dataset.harvest import tasks as harvest_tasks
from kotlin_bench.dataset.harvest.records import Screened
from kotlin_bench.dataset.materialize import MaterializeError, materialize, source_from_config
from kotlin_bench.dataset.spec import load_dataset

sm = snakemake  # noqa: F821
with logged(sm.log[0]):
    owner, repo, pr, variant = sm.wildcards.owner, sm.wildcards.repo, sm.wildcards.pr, sm.wildcards.variant
    repository = f"{owner}/{repo}"
    screened = Screened.read(Path(sm.input[0]))
    if screened is None:
        raise MaterializeError(f"{sm.input[0]}: the candidate's screening is unreadable; harvest again")
    spec = Path(sm.config["spec"])
    dataset = load_dataset(spec)
    base = harvest_tasks.variant(dataset, repository, variant)
    command = harvest_tasks.test_command(dataset, repository, (sm.params.harvest or {}).get("test_commands"))
    task = harvest_tasks.one_task(
        harvest_tasks.read_spec(spec), spec, repository, harvest_tasks.entry(screened, base, command)
    )
    tasks_dir = Path(sm.output[0]).parents[1]
    generate(task, tasks_dir, bases_out=None, repo_root=Path("."))
    conf = dict(sm.params.materialize)
    upstream = {
        **(conf.get("upstream") or {}),
        "mirrors": sm.params.mirrors,
        "issues_cache": names.HARVEST_RECORDS,
    }
    upstream.pop("mirror_sources", None)
    upstream.pop("expected_tests_dir", None)
    conf["upstream"] = upstream | {"offline": True}  # the records the screening read
    [result] = materialize(task, tasks_dir, source_from_config(conf, "upstream"))
    for line in result.notes:
        print(f"note: {line}")
    if not result.ok:
        raise MaterializeError("; ".join(result.problems))
    print(f"{result.task_id}: generated and materialized on {base.image}")
