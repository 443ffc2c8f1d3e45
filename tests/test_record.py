"""The run record: reading and writing result.json, its statuses, the reason vocabulary, the error
record and the errored query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kotlin_bench import names
from kotlin_bench.record import (
    REASON_TEXT,
    Reason,
    RecordError,
    RunResult,
    Status,
    classify,
    errored_results,
)
from kotlin_bench.summary import summarize
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
    path = tmp_path / names.run_result("oracle", "calc-1", 1)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(make_result("calc-1").to_dict() | {"status": "done"}))
    with pytest.raises(RecordError, match="status 'done'"):
        summarize([path])


@pytest.mark.parametrize(
    ("reason", "reasons", "expected"),
    [
        ("empty_patch", [], "empty_patch"),
        ("patch_not_applied", [], "patch_not_applied"),
        (
            "test_patch_failed",
            ["test_patch_failed: git apply did not apply /tests/test.patch"],
            "test_patch_failed",
        ),
        (
            "p2p_regressed",
            ["p2p_regressed: a.B.c", "no_fixed_test", "expected_missing: f2p 1 of 1"],
            "p2p_regressed",
        ),
        ("skip_or_none_regressed", ["skip_or_none_regressed: a.B.c"], "p2p_regressed"),
        ("no_fixed_test", ["no_fixed_test", "expected_missing: f2p 2 of 2"], "no_fixed_test"),
        ("expected_missing", ["expected_missing: p2p 1 of 5"], "expected_missing"),
        ("expected_missing", ["expected_missing: p2p 1 of 5", "expected_missing: f2p 1 of 2"], "f2p_failed"),
        ("no_test_results", ["no_test_results"], "no_test_results"),
        ("expected_invalid", ["expected_invalid: top level must be an object"], "task_invalid"),
        ("xml_unreadable", ["xml_unreadable: ParseError"], "verifier_failed"),
        ("agent_timeout", ["no_fixed_test"], "agent_timeout"),
        ("verifier_timeout", [], "verifier_timeout"),
        ("unresolved", [], "other"),
        ("something_new", ["something_new: x"], "other"),
    ],
)
def test_reason_vocabulary(reason: str, reasons: list[str], expected: str) -> None:
    result = make_result("calc-1", status="unresolved", reason=reason, verifier={"reasons": reasons})
    found, detail = classify(result)
    assert found == expected
    assert detail and (reasons[0] if reasons else reason) in detail


def test_no_results_with_a_failed_build_is_build_failed(tmp_path: Path) -> None:
    result = make_result("calc-1", status="unresolved", reason="no_test_results")
    result.verifier = {"reasons": ["no_test_results"]}
    log = tmp_path / "verifier" / "test_output.log"
    log.parent.mkdir()
    log.write_text("> ktest: .: compiling 3 file(s)\n> ktest: .: COMPILATION FAILED (no tests run)\n")
    assert classify(result, tmp_path)[0] == "build_failed"
    log.write_text("> ktest: .: no test sources\n")
    assert classify(result, tmp_path)[0] == "no_test_results"


def test_every_reason_is_documented() -> None:
    assert set(REASON_TEXT) == set(Reason)
    assert all(isinstance(reason.text, str) and reason.text for reason in Reason)
    assert Reason.INFRASTRUCTURE in REASON_TEXT and Reason.OTHER in REASON_TEXT


def test_error_record_and_the_errored_query(tmp_path: Path) -> None:
    base = make_result("calc-1", "agent", status="unresolved")
    error = RunResult.for_error(base, RuntimeError("engine gone"), tries=["try 1 failed", "", "try 2 failed"])
    assert (error.status, error.reward, error.reason, error.error) == (
        Status.ERROR,
        None,
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
