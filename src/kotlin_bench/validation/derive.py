"""Three-phase validation of a task, the Multi-SWE-bench way, and the lists derived from it.

A task's test suite runs three times, each in a fresh container from the task image, with the task's own
test command and the verifier's collector (`kotlin_bench.validation.phase`):

- `run`: the base commit as it is;
- `test`: the base commit with `tests/test.patch`;
- `fix`: with `tests/test.patch` and `solution/fix.patch`; `validation: {repeats: N}` in the config runs
  it N more times (`fix-1` ... `fix-N`), to find flaky tests.

Each phase leaves a record, `results/validation/<task>/<label>/phase.json` (`PhaseRecord`), with the
container's `/logs/phase` (`junit.xml`, `test_output.log`, ...) copied out beside it. `derive` turns a
task's phases into its verdict, `results/validation/<task>/validation.json` (`TaskValidation`), and the
derived `expected_tests.json` beside it:

- statuses are read from each phase's junit.xml on the host (`kotlin_bench.scoring.junit`, with the
  verifier's rules: the same test ids, the same rule for parameterized tests, the worst status of a
  repeated id), so they are the statuses the verifier sees;
- flaky: a test whose status (PASS, FAIL, SKIP or absent) is not the same in every fix run; flaky tests
  are reported and left out of every list, `run_result` and `test_patch_result` included;
- categories (`junit_compare.categorize`): a test PASS in `fix` is p2p, f2p, s2p or n2p by its status in
  `test` (PASS, FAIL, SKIP, absent);
- valid when: every phase ran to the end (the patches applied, the test command finished, its reports
  were readable); the base builds (`run` has test results); the verifier's rules hold
  (`junit_compare.validity_reasons`: `fix` has results, no PASS(test) -> FAIL(fix), at least one
  not-PASS(test) -> PASS(fix), no NONE/SKIP(test) + PASS(run) -> FAIL(fix)); the gold patch resolves
  against the derived lists in every fix run (`junit_compare.score`) and the test patch alone (`nop`)
  does not;
- compared, list by list, with the task's `tests/expected_tests.json`: equal, or the ids only in the
  derived lists and only in the expected ones.

`kotlin_bench.results.validation_summary` makes `results/validation/summary.csv` and `summary.md` from the verdicts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.scoring.expected import CATEGORIES, RESULT_KEYS, ExpectedError, read_expected
from kotlin_bench.scoring.junit import ReadError, read_file
from kotlin_bench.scoring.reasons import build_failed_in
from kotlin_bench.scoring.verifier import junit_compare as jc
from kotlin_bench.validation.records import (
    PhaseKind,
    PhaseRecord,
    Problem,
    TaskValidation,
    ValidationError,
    phase_kind,
)

MAX_IDS_IN_REASON = 5


# --------------------------------------------------------------------------- derivation


@dataclass(frozen=True)
class _Phase:
    """A phase as the derivation sees it: its statuses, or why there are none to use."""

    label: str
    directory: Path
    statuses: dict[str, str] | None  # None: unusable (see reason)
    reason: str | None
    record: PhaseRecord | None


def _load_phase(label: str, directory: Path, suffixes: Sequence[str]) -> _Phase:
    try:
        record = PhaseRecord.read(directory / names.PHASE_FILE)
    except ValidationError as exc:
        return _Phase(label, directory, None, f"{label}: {Problem.ERROR}: {exc}", None)
    if record.error:
        return _Phase(label, directory, None, f"{label}: {Problem.ERROR}: {record.error}", record)
    if record.problem:
        return _Phase(label, directory, None, f"{label}: {record.problem}", record)
    try:
        junit = read_file(directory / names.PHASE_OUT / names.JUNIT_XML, suffixes)
    except ReadError as exc:
        return _Phase(label, directory, None, f"{label}: {exc.reason}", record)
    return _Phase(label, directory, junit.statuses, None, record)


def _no_results(phase: _Phase) -> str:
    """Why a phase has no test result: a failed build, or no report at all."""
    log = phase.directory / names.PHASE_OUT / names.TEST_OUTPUT_LOG
    exit_code = phase.record.exit_code if phase.record else None
    if build_failed_in(log):
        return f"{phase.label}: {Problem.BUILD_FAILED}: the test command's output reports a failed build (exit {exit_code})"
    return f"{phase.label}: {Problem.NO_REPORTS}: the test command (exit {exit_code}) wrote no JUnit report"


def phase_results(
    label: str, directory: Path, suffixes: Sequence[str] = ()
) -> tuple[bool, str | None, str | None]:
    """Whether a phase has test results: (True, None, None); else (False, why, None), or (False, None,
    the error) when the harness failed on every try (infrastructure, not a verdict on the task)."""
    phase = _load_phase(label, directory, suffixes)
    if phase.record is None or phase.record.error:
        return False, None, phase.reason
    if phase.statuses is None:
        return False, phase.reason, None
    if not phase.statuses:
        return False, _no_results(phase), None
    return True, None, None


def flaky_tests(fix_runs: Mapping[str, Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """Tests whose status differs between the fix runs: test id -> run label -> status (NONE: absent)."""
    ids = sorted({t for statuses in fix_runs.values() for t in statuses})
    found = {}
    for test_id in ids:
        seen = {label: statuses.get(test_id, jc.NONE) for label, statuses in fix_runs.items()}
        if len(set(seen.values())) > 1:
            found[test_id] = seen
    return found


def result_lists(statuses: Mapping[str, str]) -> dict[str, list[str]]:
    """`{passed_tests, failed_tests, skipped_tests}` of an expected_tests.json, sorted."""
    return {
        key: sorted(t for t, s in statuses.items() if s == status) for key, status in jc.RESULT_LISTS.items()
    }


def expected_document(
    run: Mapping[str, str], test: Mapping[str, str], fix: Mapping[str, str]
) -> dict[str, Any]:
    """An expected_tests.json from the statuses of the three runs (flaky tests already left out)."""
    categories = jc.categorize(fix, test)
    document: dict[str, Any] = {f"{cat}_tests": sorted(categories[cat]) for cat in CATEGORIES}
    document["test_patch_result"] = result_lists(test)
    document["run_result"] = result_lists(run)
    return document


def _without(statuses: Mapping[str, str], left_out: Iterable[str]) -> dict[str, str]:
    skip = set(left_out)
    return {t: s for t, s in statuses.items() if t not in skip}


def _bounded(prefix: str, ids: list[str]) -> str:
    more = f" and {len(ids) - MAX_IDS_IN_REASON} more" if len(ids) > MAX_IDS_IN_REASON else ""
    return f"{prefix}{', '.join(ids[:MAX_IDS_IN_REASON])}{more}"


def _gold_and_nop(
    phases: Mapping[str, _Phase], fix_labels: list[str], test: _Phase, derived: dict[str, Any]
) -> tuple[list[str], bool, bool]:
    """Score every fix run (the gold patch) and the test run (nop) against the derived lists, as the
    verifier will: (reasons, oracle resolved in every fix run, nop resolved)."""
    expected = jc.parse_expected(derived)
    reasons = []
    for label in fix_labels:
        report = jc.score(phases[label].statuses or {}, expected)
        if not report["resolved"]:
            reasons.append(
                f"{label}: {Problem.ORACLE_UNRESOLVED}: the gold patch scores 0: {'; '.join(report['reasons'][:3])}"
            )
    oracle = not reasons
    nop = bool(jc.score(test.statuses or {}, expected)["resolved"])
    if nop:
        reasons.append(
            f"{test.label}: {Problem.NOP_RESOLVED}: the test patch alone scores 1 (nothing to fix)"
        )
    return reasons, oracle, nop


def compare(derived: Mapping[str, Any], expected: Mapping[str, Any]) -> dict[str, dict[str, list[str]]]:
    """The lists that differ: name -> {only_derived, only_expected}; empty when every list is equal."""
    differences = {}
    # expected lists are read leniently, as the verifier reads them: a list that is not there is empty
    pairs = [
        (f"{cat}_tests", derived[f"{cat}_tests"], expected.get(f"{cat}_tests") or []) for cat in CATEGORIES
    ]
    for key in RESULT_KEYS:
        given = expected.get(key) or {}
        pairs += [(f"{key}.{sub}", derived[key][sub], given.get(sub) or []) for sub in jc.RESULT_LISTS]
    for name, ours, theirs in pairs:
        only_derived, only_expected = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
        if only_derived or only_expected:
            differences[name] = {"only_derived": only_derived, "only_expected": only_expected}
    return differences


def _read_expected(path: Path | None) -> tuple[dict[str, Any] | None, str]:
    """The task's expected_tests.json (checked with the verifier's rules) and its state for the report."""
    if path is None or not path.is_file():
        return None, "missing"
    if (path.parent.parent / names.MISSING_EXPECTED_MARKER).exists():
        return None, "missing"  # materialization wrote a placeholder: no lists to compare with yet
    try:
        return read_expected(path)[0], "equal"
    except ExpectedError:
        return None, "unreadable"


def _phase_summary(phase: _Phase) -> dict[str, Any]:
    record = phase.record
    summary: dict[str, Any] = {
        "exit_code": record.exit_code if record else None,
        "seconds": record.seconds if record else None,
        "problem": phase.reason,
    }
    if phase.statuses is not None:
        summary.update(jc.counts(phase.statuses))
    return summary


def _lists_and_validity(
    verdict: TaskValidation, phases: Mapping[str, _Phase], fix_labels: list[str]
) -> dict[str, Any] | None:
    """The derived document (flaky tests left out), the verifier's validity rules and, for a task valid so
    far, the gold and nop scores; None when run, test or fix has no statuses to derive from."""
    run, test, fix = (phases[str(kind)] for kind in PhaseKind)
    if run.statuses is None or test.statuses is None or fix.statuses is None:
        return None
    base, with_tests, with_fix = (_without(p.statuses or {}, verdict.flaky) for p in (run, test, fix))
    derived = expected_document(base, with_tests, with_fix)
    verdict.counts = {cat: len(derived[f"{cat}_tests"]) for cat in CATEGORIES}
    if fix.statuses:  # (a fix run without any result is reported with what its output says)
        rules = jc.validity_reasons(with_fix, jc.Expected({}, with_tests, base))
        verdict.reasons += [f"{fix.label}: {r}" for r in rules]
    if not verdict.reasons:
        reasons, verdict.oracle_resolved, verdict.nop_resolved = _gold_and_nop(
            phases, fix_labels, test, derived
        )
        verdict.reasons += reasons
    return derived


def _notes(verdict: TaskValidation, derived: dict[str, Any] | None) -> list[str]:
    notes = []
    if verdict.flaky:
        many = "s" if len(verdict.flaky) > 1 else ""
        notes.append(
            _bounded(f"{len(verdict.flaky)} flaky test{many} left out of every list: ", list(verdict.flaky))
        )
    if derived is not None and verdict.counts.get("f2p") == 0:
        notes.append("no f2p test (kotlin-bench add-task accepts a new task only with one)")
    if verdict.fix_runs < 2:
        notes.append("one fix run: flaky tests cannot be told apart (validation: {repeats: N})")
    return notes


def derive(
    task_id: str,
    phase_dirs: Mapping[str, Path],
    expected_path: Path | None = None,
    suffixes: Sequence[str] = (),
) -> tuple[TaskValidation, dict[str, Any] | None]:
    """The verdict of a task from its phase directories (label -> directory), and the derived
    expected_tests.json (None when run, test or fix has nothing to derive from). `suffixes` are the
    test-name suffixes the task's scorer strips (`Task.strip_test_name_suffixes`), as the verifier does."""
    missing = [str(kind) for kind in PhaseKind if kind not in phase_dirs]
    if missing:
        raise ValueError(f"{task_id}: phases {missing} are missing")
    phases = {label: _load_phase(label, Path(d), suffixes) for label, d in phase_dirs.items()}
    verdict = TaskValidation(task_id, valid=False, phases={lb: _phase_summary(p) for lb, p in phases.items()})
    verdict.reasons = [p.reason for p in phases.values() if p.reason]
    verdict.reasons += [
        _no_results(p) for p in (phases[PhaseKind.RUN], phases[PhaseKind.FIX]) if p.statuses == {}
    ]
    fix_labels = [
        lb for lb, p in phases.items() if phase_kind(lb) is PhaseKind.FIX and p.statuses is not None
    ]
    verdict.fix_runs = len(fix_labels)
    verdict.flaky = flaky_tests({lb: phases[lb].statuses or {} for lb in fix_labels})
    derived = _lists_and_validity(verdict, phases, fix_labels)
    verdict.valid = not verdict.reasons
    expected, verdict.expected = _read_expected(expected_path)
    if derived is None:
        verdict.expected = "not derived"
    elif expected is not None:
        verdict.differences = compare(derived, expected)
        verdict.expected = "differs" if verdict.differences else "equal"
    verdict.notes = _notes(verdict, derived)
    return verdict, derived


def write_derivation(
    verdict: TaskValidation, derived: dict[str, Any] | None, verdict_path: Path, expected_path: Path
) -> None:
    """validation.json, and the derived expected_tests.json (removed when nothing could be derived)."""
    if derived is None:
        expected_path.unlink(missing_ok=True)
    else:
        write_atomic(expected_path, json.dumps(derived, indent=2, ensure_ascii=False) + "\n")
    verdict.write(verdict_path)
