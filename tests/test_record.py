"""The run records: reading and writing result.json and work.json, their statuses, the error record and
the errored query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.record import (
    RecordError,
    RunKey,
    RunResult,
    Status,
    WorkRecord,
    WorkStatus,
    errored_results,
)
from kotlin_bench.core.record_parts import Flag
from kotlin_bench.results.summary import summarize
from tests.factories import make_result, write_results


def test_round_trip(tmp_path: Path) -> None:
    result = make_result("calc-1", "agent", 2, status="unresolved", reason="f2p", flags={"tests": ["a"]})
    path = tmp_path / "result.json"
    result.write(path)
    back = RunResult.read(path)
    assert back == result
    assert json.loads(path.read_text())["status"] == "unresolved"
    assert not list(tmp_path.glob(".*tmp"))  # written atomically, nothing left beside it


def test_unknown_fields_are_ignored_and_missing_ones_named(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    data = make_result("calc-1").to_dict() | {"from_the_future": 1}
    path.write_text(json.dumps(data))
    assert RunResult.read(path).task == "calc-1"
    path.write_text(json.dumps({"status": "resolved", "task": "x"}))
    with pytest.raises(RecordError, match=r"result.json: fields \['agent', 'kind', 'attempt'\] are missing"):
        RunResult.read(path)
    path.write_text("{not json")
    with pytest.raises(RecordError, match="cannot read the run record"):
        RunResult.read(path)


def test_bad_status_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / names.verify_result("oracle", "calc-1", 1)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(make_result("calc-1").to_dict() | {"status": "done"}))
    with pytest.raises(RecordError, match="status 'done'"):
        summarize([path])


def test_error_record_and_the_errored_query(tmp_path: Path) -> None:
    base = make_result("calc-1", "agent", status="unresolved")
    error = RunResult.for_error(
        base, RuntimeError("engine gone"), "infrastructure", tries=["try 1 failed", "", "try 2 failed"]
    )
    assert (error.status, error.reward, error.reason, error.reason_detail, error.error) == (
        Status.ERROR,
        None,
        "infrastructure",
        "RuntimeError",
        "engine gone",
    )
    assert error.tries == ["try 1 failed", "try 2 failed"]
    paths = write_results(tmp_path, [error, make_result("calc-2")])
    (tmp_path / "results/runs/x/y/attempt-1").mkdir(parents=True)
    (tmp_path / "results/runs/x/y/attempt-1/result.json").write_text("{broken")
    found = errored_results(tmp_path / "results")
    assert [p for p, _ in found] == [paths[0]]
    assert found[0][1].error == "engine gone"


def test_work_record_round_trip_and_errors(tmp_path: Path) -> None:
    work = WorkRecord(RunKey("calc-1", "examples/calc", "oracle", "oracle", None, 2), outcome="empty_patch")
    work.work.flags = {Flag.TESTS: ["src/test/A.kt"]}
    path = tmp_path / "work" / "work.json"
    work.write(path)
    assert WorkRecord.read(path) == work
    path.write_text(json.dumps(work.to_dict() | {"status": "half"}))
    with pytest.raises(RecordError, match="status 'half'"):
        WorkRecord.read(path)
    path.write_text(json.dumps({"status": "done", "task": "x"}))
    with pytest.raises(RecordError, match=r"work.json: fields \['agent', 'kind', 'attempt'\] are missing"):
        WorkRecord.read(path)
    assert WorkRecord(RunKey("t", "r", "a", "k", None, 1)).status is WorkStatus.DONE


def test_each_record_writes_exactly_its_files_keys() -> None:
    """Every field of a record (its embedded key and work, flattened) has a place in its file's key order,
    and every key of the file comes from a field."""
    from kotlin_bench.core.record import RESULT_KEYS, WORK_KEYS

    result = RunResult(RunKey("t", "r", "a", "k", None, 1))
    work = WorkRecord(RunKey("t", "r", "a", "k", None, 1))
    assert list(result.to_dict()) == list(RESULT_KEYS)
    assert list(work.to_dict()) == list(WORK_KEYS)


def test_older_and_newer_files_still_read(tmp_path: Path) -> None:
    """A key a reader does not know is ignored at the top and kept inside a value; a result written before
    records had `usage` takes it from a trial's `agent_result`; a value of the wrong shape is named."""
    path = tmp_path / "result.json"
    data = make_result(
        "calc-1", "harbor-x", kind="harbor", trial_result="work/harbor/jobs/job/t/result.json"
    ).to_dict()
    data["from_the_future"] = 1
    data["verifier"]["categories"]["f2p"]["flaky"] = ["a.B.c()"]
    data["timings"]["queue_sec"] = 3.5
    data["flags"]["a_new_flag"] = ["x"]
    data["agent_result"] = {
        "n_input_tokens": 10,
        "n_cache_tokens": None,
        "n_output_tokens": 2,
        "cost_usd": 0.5,
    }
    del data["usage"]
    path.write_text(json.dumps(data))
    back = RunResult.read(path)
    assert back.work.usage.input_tokens == 10 and back.work.usage.cost_usd == 0.5
    again = back.to_dict()
    assert "from_the_future" not in again
    assert again["verifier"]["categories"]["f2p"]["flaky"] == ["a.B.c()"]
    assert again["timings"]["queue_sec"] == 3.5 and again["flags"]["a_new_flag"] == ["x"]
    assert again["agent_result"] == data["agent_result"]
    assert again["trial_result"] == "work/harbor/jobs/job/t/result.json"
    path.write_text(json.dumps(data | {"timings": [1, 2]}))
    with pytest.raises(RecordError, match=r"result.json.timings: expected an object, not list"):
        RunResult.read(path)
    path.write_text(json.dumps(data | {"attempt": "one"}))
    with pytest.raises(RecordError, match=r"result.json.attempt: expected an integer, not str 'one'"):
        RunResult.read(path)
