"""Deriving a task's lists and verdict from its three phases (kotlin_bench.validation.derive), on phase directories
written here with JUnit XML in the shape JUnit's console launcher writes. The same derivation runs on real
containers in tests/test_validation_e2e.py."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from kotlin_bench.core import names
from kotlin_bench.results.validation_summary import write_summary
from kotlin_bench.scoring.verifier import junit_compare as jc
from kotlin_bench.validation.derive import derive, write_derivation
from kotlin_bench.validation.records import (
    PhaseRecord,
    TaskValidation,
    ValidationError,
    phase_kind,
    phase_labels,
)

TASK = "acme_widgets-7"


def case(test_id: str, status: str) -> str:
    classname, name = test_id.rsplit(".", 1)
    child = {"PASS": "", "FAIL": "<failure message='no'/>", "SKIP": "<skipped/>"}[status]
    return f'<testcase name="{name}" classname="{classname}" time="0.01">{child}</testcase>'


def junit(statuses: dict[str, str], extra: str = "") -> str:
    cases = "".join(case(t, s) for t, s in statuses.items())
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="x">{cases}{extra}</testsuite></testsuites>\n'


def phase(
    root: Path,
    label: str,
    statuses: dict[str, str] | None,
    *,
    problem: str | None = None,
    output: str = "",
    error: str | None = None,
) -> Path:
    """A phase directory as validation_run leaves it (statuses None: no junit.xml)."""
    directory = root / label
    logs = directory / names.PHASE_OUT
    logs.mkdir(parents=True)
    if statuses is not None:
        (logs / names.JUNIT_XML).write_text(junit(statuses), encoding="utf-8")
    (logs / names.TEST_OUTPUT_LOG).write_text(output, encoding="utf-8")
    PhaseRecord(TASK, label, problem=problem, error=error, exit_code=0 if statuses else 1).write(
        directory / names.PHASE_FILE
    )
    return directory


BASE = {"w.A.old()": "PASS", "w.A.other()": "PASS", "w.A.skipped()": "SKIP"}
WITH_TESTS = BASE | {"w.A.new()": "FAIL", "w.A.later()": "SKIP"}
FIXED = {
    "w.A.old()": "PASS",
    "w.A.other()": "PASS",
    "w.A.skipped()": "SKIP",
    "w.A.new()": "PASS",
    "w.A.later()": "PASS",
    "w.B.added()": "PASS",
}


def three(tmp_path: Path, run=BASE, test=WITH_TESTS, fix=FIXED, repeats: tuple[dict[str, str], ...] = ()):
    dirs = {"run": phase(tmp_path, "run", run), "test": phase(tmp_path, "test", test)}
    dirs["fix"] = phase(tmp_path, "fix", fix)
    for k, statuses in enumerate(repeats, start=1):
        dirs[f"fix-{k}"] = phase(tmp_path, f"fix-{k}", statuses)
    return dirs


def test_phase_labels_and_kinds() -> None:
    assert phase_labels(0) == ["run", "test", "fix"]
    assert phase_labels(2) == ["run", "test", "fix", "fix-1", "fix-2"]
    assert [phase_kind(x) for x in ("run", "test", "fix", "fix-12")] == ["run", "test", "fix", "fix"]
    for bad in ("fix-0", "test-1", "fix-", "nop", "fix-x"):
        with pytest.raises(ValueError, match="expected run, test, fix or fix-<k>"):
            phase_kind(bad)


def test_categories_follow_multi_swe_bench(tmp_path: Path) -> None:
    verdict, derived = derive(TASK, three(tmp_path, repeats=(FIXED,)))
    assert verdict.valid, verdict.reasons
    assert derived is not None
    assert derived["f2p_tests"] == ["w.A.new()"]
    assert derived["p2p_tests"] == ["w.A.old()", "w.A.other()"]
    assert derived["s2p_tests"] == ["w.A.later()"]
    assert derived["n2p_tests"] == ["w.B.added()"]
    assert derived["test_patch_result"] == {
        "passed_tests": ["w.A.old()", "w.A.other()"],
        "failed_tests": ["w.A.new()"],
        "skipped_tests": ["w.A.later()", "w.A.skipped()"],
    }
    assert derived["run_result"]["passed_tests"] == ["w.A.old()", "w.A.other()"]
    assert verdict.counts == {"f2p": 1, "p2p": 2, "s2p": 1, "n2p": 1}
    assert verdict.oracle_resolved is True and verdict.nop_resolved is False
    assert verdict.expected == "missing" and verdict.flaky == {}
    # The derived document is one the verifier accepts, and scores the fix run as resolved.
    assert jc.score(FIXED, jc.parse_expected(derived))["resolved"]


def test_ids_are_the_verifiers(tmp_path: Path) -> None:
    """Parameterized invocations are ignored, identity hashes stripped, the worst status of a repeated id
    kept: the verifier's own parser reads the phases."""
    fix = dict(FIXED)
    dirs = three(tmp_path, fix=fix)
    extra = (
        '<testcase name="evaluates(String)[1]" classname="w.A"/>'
        '<testcase name="hashed()@1a2b3c" classname="w.A"/>'
        '<testcase name="other()" classname="w.A"><failure/></testcase>'
    )
    (dirs["fix"] / names.PHASE_OUT / names.JUNIT_XML).write_text(junit(fix, extra), encoding="utf-8")
    verdict, derived = derive(TASK, dirs)
    assert derived is not None
    assert "w.A.hashed()" in derived["n2p_tests"]
    assert not any("[1]" in t for lst in derived.values() if isinstance(lst, list) for t in lst)
    assert "w.A.other()" not in derived["p2p_tests"]  # FAIL wins over PASS
    assert any(r.startswith("fix: p2p_regressed: w.A.other()") for r in verdict.reasons), verdict.reasons


def test_a_flaky_test_is_reported_and_left_out_of_every_list(tmp_path: Path) -> None:
    flaky = "w.C.flaky()"
    runs = [FIXED | {flaky: s} for s in ("PASS", "FAIL", "PASS")] + [FIXED]  # absent in the last one
    dirs = three(
        tmp_path,
        run=BASE | {flaky: "PASS"},
        test=WITH_TESTS | {flaky: "PASS"},
        fix=runs[0],
        repeats=tuple(runs[1:]),
    )
    verdict, derived = derive(TASK, dirs)
    assert verdict.valid, verdict.reasons
    assert verdict.flaky == {flaky: {"fix": "PASS", "fix-1": "FAIL", "fix-2": "PASS", "fix-3": "NONE"}}
    assert derived is not None
    listed = [t for k, v in derived.items() if k.endswith("_tests") for t in v]
    listed += [t for key in ("run_result", "test_patch_result") for v in derived[key].values() for t in v]
    assert flaky not in listed
    assert verdict.fix_runs == 4 and verdict.oracle_resolved
    assert "1 flaky test left out of every list: w.C.flaky()" in verdict.notes


def test_one_fix_run_cannot_tell_a_flaky_test(tmp_path: Path) -> None:
    verdict, _ = derive(TASK, three(tmp_path))
    assert verdict.fix_runs == 1 and any("one fix run" in n for n in verdict.notes)


@pytest.mark.parametrize(
    ("run", "test", "fix", "reason"),
    [
        (BASE, WITH_TESTS, FIXED | {"w.A.old()": "FAIL"}, "fix: p2p_regressed: w.A.old()"),
        (BASE, BASE, BASE, "fix: no_fixed_test"),
        (
            BASE | {"w.D.gone()": "PASS"},
            WITH_TESTS,
            FIXED | {"w.D.gone()": "FAIL"},
            "fix: skip_or_none_regressed: w.D.gone()",
        ),
    ],
    ids=["pass-to-fail", "nothing-fixed", "none-after-pass"],
)
def test_the_verifiers_validity_rules(tmp_path: Path, run, test, fix, reason: str) -> None:
    verdict, _ = derive(TASK, three(tmp_path, run=run, test=test, fix=fix))
    assert not verdict.valid
    assert reason in verdict.reasons
    assert verdict.oracle_resolved is None  # not scored: the task is invalid already


def test_a_base_that_does_not_build_is_invalid_and_named(tmp_path: Path) -> None:
    dirs = {
        "run": phase(tmp_path, "run", {}, output="> ktest: .: COMPILATION FAILED (no tests run)\n"),
        "test": phase(tmp_path, "test", WITH_TESTS),
        "fix": phase(tmp_path, "fix", FIXED),
    }
    verdict, derived = derive(TASK, dirs)
    assert not verdict.valid
    assert verdict.reasons[0].startswith(
        "run: build_failed: the test command's output reports a failed build"
    )
    assert derived is not None  # the other lists are still derived, for the report


def test_no_reports_in_any_phase(tmp_path: Path) -> None:
    verdict, _ = derive(TASK, three(tmp_path, run={}, test={}, fix={}))
    assert not verdict.valid
    assert verdict.reasons == [
        "run: no_reports: the test command (exit 1) wrote no JUnit report",
        "fix: no_reports: the test command (exit 1) wrote no JUnit report",
    ]


def test_phase_problems_and_errors_name_the_phase(tmp_path: Path) -> None:
    problem = "test_patch_failed: tests/test.patch does not apply at the base commit"
    dirs = {
        "run": phase(tmp_path, "run", BASE),
        "test": phase(tmp_path, "test", None, problem=problem),
        "fix": phase(tmp_path, "fix", None, problem=problem),
        "fix-1": phase(tmp_path, "fix-1", None, error="PhaseError: the container stopped"),
    }
    verdict, derived = derive(TASK, dirs)
    assert derived is None and verdict.expected == "not derived"
    assert verdict.reasons == [
        f"test: {problem}",
        f"fix: {problem}",
        "fix-1: error: PhaseError: the container stopped",
    ]


def test_unreadable_reports_name_the_phase(tmp_path: Path) -> None:
    dirs = three(tmp_path)
    (dirs["test"] / names.PHASE_OUT / names.JUNIT_XML).write_text("<testsuites><testcase", encoding="utf-8")
    verdict, _ = derive(TASK, dirs)
    assert verdict.reasons[0].startswith("test: xml_unreadable:")


def test_comparison_with_the_expected_lists(tmp_path: Path) -> None:
    dirs = three(tmp_path, repeats=(FIXED,))
    _, derived = derive(TASK, dirs)
    assert derived is not None
    same = tmp_path / "same.json"
    same.write_text(json.dumps(derived))
    verdict, _ = derive(TASK, dirs, same)
    assert verdict.expected == "equal" and verdict.differences == {}
    other = json.loads(json.dumps(derived))
    other["f2p_tests"].append("w.Z.expected_only()")
    other["p2p_tests"].remove("w.A.other()")
    other["run_result"]["passed_tests"].remove("w.A.other()")
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(other))
    verdict, _ = derive(TASK, dirs, changed)
    assert verdict.valid and verdict.expected == "differs"
    assert verdict.differences == {
        "f2p_tests": {"only_derived": [], "only_expected": ["w.Z.expected_only()"]},
        "p2p_tests": {"only_derived": ["w.A.other()"], "only_expected": []},
        "run_result.passed_tests": {"only_derived": ["w.A.other()"], "only_expected": []},
    }
    broken = tmp_path / "broken.json"
    broken.write_text('{"f2p_tests": 3}')
    assert derive(TASK, dirs, broken)[0].expected == "unreadable"
    lenient = {key: value for key, value in derived.items() if key != "s2p_tests"}
    (tmp_path / "lenient.json").write_text(
        json.dumps(lenient)
    )  # a list left out is empty, as the verifier reads it
    assert derive(TASK, dirs, tmp_path / "lenient.json")[0].expected == (
        "differs" if derived["s2p_tests"] else "equal"
    )


def test_a_placeholder_for_lists_not_materialized_is_missing_not_compared(tmp_path: Path) -> None:
    """An added task whose expected lists could not be materialized: its tests/expected_tests.json is a
    placeholder beside tests/.expected_tests_missing, and validation derives the lists without comparing."""
    dirs = three(tmp_path / "phases", repeats=(FIXED,))
    task_dir = tmp_path / "task"
    (task_dir / "tests").mkdir(parents=True)
    (task_dir / names.MISSING_EXPECTED_MARKER).write_text("not materialized\n")
    expected = task_dir / names.EXPECTED_TESTS
    expected.write_text(json.dumps({"missing": "no expected test lists could be materialized"}))
    verdict, derived = derive(TASK, dirs, expected)
    assert derived is not None and verdict.expected == "missing" and verdict.differences == {}


def test_records_round_trip_and_name_their_file(tmp_path: Path) -> None:
    verdict, derived = derive(TASK, three(tmp_path, repeats=(FIXED,)))
    target = tmp_path / "out" / names.VALIDATION_FILE
    write_derivation(verdict, derived, target, target.with_name(names.DERIVED_EXPECTED))
    assert TaskValidation.read(target) == verdict
    assert json.loads(target.with_name(names.DERIVED_EXPECTED).read_text()) == derived
    write_derivation(verdict, None, target, target.with_name(names.DERIVED_EXPECTED))
    assert not target.with_name(names.DERIVED_EXPECTED).exists()  # nothing stale is left
    (tmp_path / "bad.json").write_text("[1]")
    with pytest.raises(ValidationError, match=r"bad\.json: expected a JSON object"):
        PhaseRecord.read(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="phases \\['fix'\\] are missing"):
        derive(TASK, {"run": tmp_path / "run", "test": tmp_path / "test"})


def test_summary_csv_and_markdown(tmp_path: Path) -> None:
    good, _ = derive("a-1", three(tmp_path / "a", repeats=(FIXED,)))
    bad, _ = derive("b-2", three(tmp_path / "b", fix=FIXED | {"w.A.old()": "FAIL"}))
    paths = []
    for verdict in (bad, good):
        path = tmp_path / verdict.task / names.VALIDATION_FILE
        verdict.write(path)
        paths.append(path)
    frame = write_summary(paths, tmp_path / "summary.csv", tmp_path / "summary.md")
    read = pd.read_csv(tmp_path / "summary.csv")
    assert list(read["task"]) == ["a-1", "b-2"] and list(read["valid"]) == [True, False]
    assert read.loc[1, "reasons"].startswith("fix: p2p_regressed: w.A.old()")
    assert list(frame["f2p"]) == [1, 1]  # the lists are derived all the same
    text = (tmp_path / "summary.md").read_text()
    assert "2 tasks: 1 valid, 1 invalid" in text
    assert "## b-2 (INVALID)" in text and "- fix: p2p_regressed: w.A.old()" in text


def test_the_tasks_scorer_suffixes_are_stripped_as_the_verifier_does(tmp_path: Path) -> None:
    """A KMP task's scorer strips `[jvm]` from test names (Task.strip_test_name_suffixes); without the
    option such a name is a parameterized invocation and ignored."""
    dirs = three(tmp_path)
    kmp = '<testcase name="new()[jvm]" classname="w.K"/>'
    (dirs["fix"] / names.PHASE_OUT / names.JUNIT_XML).write_text(junit(FIXED, kmp), encoding="utf-8")
    _, plain = derive(TASK, dirs)
    _, stripped = derive(TASK, dirs, suffixes=("[jvm]",))
    assert plain is not None and stripped is not None
    assert "w.K.new()" not in plain["n2p_tests"]
    assert "w.K.new()" in stripped["n2p_tests"]
