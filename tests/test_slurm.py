"""The example dataset on a real Slurm cluster (scripts/setup_slurm.sh: one machine, accounting in slurmdbd).

A clone of the session's finished local run of the example dataset (conftest `finished_examples`:
images, materialization, runs, reports) redoes the runs of one task (oracle and nop, one resolved and
one not) through `--workflow-profile profiles/slurm`, each step as a Slurm job, and the summary's
verdict columns must be those of the local run. Slurm costs several seconds per job, so the images and the
materialized tasks of the local run are reused and only those runs go through the cluster (every run
costs the same two jobs: ten runs would show nothing four do not).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import verdicts

pytestmark = [pytest.mark.slurm, pytest.mark.docker, pytest.mark.usefixtures("slurm_cluster")]
SUBMITTED_RE = re.compile(r"submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/")
SACCT_FIELDS = "JobID,State,Comment,ReqMem,AllocCPUS,WorkDir,User"


def accounting(job_ids: list[str], seconds: float = 60) -> dict[str, list[str]]:
    """sacct's record of the jobs (JobID -> State, Comment, ReqMem in MB, AllocCPUS, WorkDir), once every job
    has finished there (slurmdbd records a job's end a moment after it)."""
    deadline = time.monotonic() + seconds
    while True:
        out = subprocess.run(
            ["sacct", "-X", "-n", "-P", "--units=M", "-j", ",".join(job_ids), "-o", SACCT_FIELDS],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        rows = {line.split("|")[0]: line.split("|")[1:] for line in out.splitlines() if line}
        if (set(rows) == set(job_ids) and all(r[0] == "COMPLETED" for r in rows.values())) or (
            time.monotonic() > deadline
        ):
            return rows
        time.sleep(2)


STEPS = ("solve", "verify")  # a run's two steps, each a job
ON_SLURM = ("examples_calc-4",)  # its runs go through the cluster (four jobs, seconds of start-up each)


def test_every_run_is_a_slurm_job_and_the_summary_matches_a_local_run(
    tmp_path, finished_examples: Workspace
) -> None:
    ws = finished_examples.clone(tmp_path / "ws")
    local_verdicts = verdicts(ws)
    tasks = sorted(set(local_verdicts.task))
    local_reproduction = (ws.root / names.VERDICTS_JSON).read_text(encoding="utf-8")

    # The runs of one task again, on the cluster; the images and materialized tasks stay. The summary
    # lacks those runs now, so the workflow drops and rebuilds it with the reports.
    for agent in ("oracle", "nop"):
        for task in ON_SLURM:
            shutil.rmtree(ws.run_dir(agent, task))
    on_slurm = ws.snakemake(
        "--workflow-profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "5", timeout=1800
    )
    output = on_slurm.stdout + on_slurm.stderr
    assert on_slurm.returncode == 0, output[-5000:]

    submitted = SUBMITTED_RE.findall(output)
    runs = [job for job, rule in submitted if rule in STEPS]
    assert {rule for _, rule in submitted} == set(STEPS), submitted  # the images were there already
    assert len(local_verdicts) == 2 * len(tasks)  # oracle and nop
    redone = local_verdicts[local_verdicts.task.isin(ON_SLURM)]
    assert len(redone) == 2 * len(ON_SLURM)
    assert len(runs) == len(STEPS) * len(redone)  # each run: a solve job and a verify job
    records = accounting(runs)
    comments = set()
    for job in runs:
        state, comment, req_mem, cpus, workdir, _user = records[job]
        assert state == "COMPLETED" and workdir == str(ws.root), records[job]
        # each request is the task's: 1 CPU, 2048 MB + the harness's 512 MB (kotlin_bench.dag.resources)
        assert (req_mem, cpus) == ("2560M", "1"), records[job]
        comments.add(comment)
    expected = {
        f"rule_{step}_wildcards_{row.agent}_{row.task}_{row.attempt}"
        for row in redone.itertuples()
        for step in STEPS
    }
    assert comments == expected

    slurm_verdicts = verdicts(ws)
    by_agent = slurm_verdicts.groupby("agent").status.value_counts().to_dict()
    assert by_agent == {("oracle", "resolved"): len(tasks), ("nop", "unresolved"): len(tasks)}
    pd.testing.assert_frame_equal(slurm_verdicts, local_verdicts)
    assert (ws.root / names.VERDICTS_JSON).read_text(encoding="utf-8") == local_reproduction
