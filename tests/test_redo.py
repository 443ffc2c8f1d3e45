"""The failed step of a run recorded as an error is forced while the DAG is built (`kotlin_bench.dag.redo`):
its result for a failed verification, its work record too for a failed solve step; nothing for a verdict,
for a run not yet done, or for an invocation that only asks about the workflow. The workflow end to end:
tests/test_rerun_errors.py, test_gradle_examples.py (a network fault), test_model_agents_e2e.py (an outage)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import RunKey, RunResult, Status
from kotlin_bench.dag.redo import ErroredRuns


def workflow(dryrun: bool = False, executor: object | None = object()) -> SimpleNamespace:
    return SimpleNamespace(
        executor_plugin=executor,
        exec_mode=SimpleNamespace(name="DEFAULT"),
        dryrun=dryrun,
        touch=False,
        dag=SimpleNamespace(forcefiles=set()),
    )


def record(path: str, status: Status, failed_step: str | None = None) -> str:
    result = RunResult(RunKey("t", "o/r", "a", "script", None, 1), status=status, failed_step=failed_step)
    if status is Status.RESOLVED:
        result.score(1.0)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    result.write(Path(path))
    return path


@pytest.mark.parametrize("dryrun", [False, True], ids=["run", "preview"])
def test_a_failed_step_is_forced_and_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dryrun: bool
) -> None:
    monkeypatch.chdir(tmp_path)
    verify = record(names.verify_result("a", "t", 1), Status.ERROR, "verify")
    solve = record(names.verify_result("a", "u", 1), Status.ERROR, "solve")
    repeat = record(names.verify_result("a", "t", 1, 2), Status.ERROR, "verify")
    done = record(names.verify_result("a", "v", 1), Status.RESOLVED)
    wf = workflow(dryrun)
    errored = ErroredRuns(wf)
    for path in (verify, solve, repeat, done, names.verify_result("a", "w", 1)):
        errored.redo(path)
    assert wf.dag.forcefiles == {verify, solve, names.work_record("a", "u", 1), repeat}


def test_an_invocation_that_runs_nothing_forces_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    wf = workflow(executor=None)  # `--summary`, `--dag`, a rule script's parse
    ErroredRuns(wf).redo(record(names.verify_result("a", "t", 1), Status.ERROR, "verify"))
    assert wf.dag.forcefiles == set()
