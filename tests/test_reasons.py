"""The reason vocabulary and the classification of a run's raw codes (applied when a run is scored)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kotlin_bench.scoring.reasons import REASON_TEXT, Reason, classify, detail_of, raw_reasons


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
    raw = raw_reasons(reason, reasons)
    assert classify(raw) == expected
    detail = detail_of(raw)
    assert detail and (reasons[0] if reasons else reason) in detail


def test_no_results_with_a_failed_build_is_build_failed(tmp_path: Path) -> None:
    raw = raw_reasons("no_test_results", ["no_test_results"])
    log = tmp_path / "test_output.log"
    log.write_text("> ktest: .: compiling 3 file(s)\n> ktest: .: COMPILATION FAILED (no tests run)\n")
    assert classify(raw, log) == "build_failed"
    log.write_text("> ktest: .: no test sources\n")
    assert classify(raw, log) == "no_test_results"
    assert classify(raw) == "no_test_results"


def test_a_run_level_code_with_a_detail_wins_over_the_reports() -> None:
    raw = raw_reasons("verifier_tampered: reward.txt says 1", ["no_fixed_test"])
    assert raw[0].startswith("verifier_tampered") and classify(raw) == "verifier_tampered"


def test_every_reason_is_documented() -> None:
    assert set(REASON_TEXT) == set(Reason)
    assert all(isinstance(reason.text, str) and reason.text for reason in Reason)
    assert Reason.INFRASTRUCTURE in REASON_TEXT and Reason.OTHER in REASON_TEXT


def test_every_reason_has_a_class_and_every_class_a_colour() -> None:
    """The one colour vocabulary: a new reason must say whether it is the agent's outcome or not."""
    from kotlin_bench.results.outcomes import COLOURS, LABELS, ORDER, TEXT, outcome_of
    from kotlin_bench.scoring.reasons import REASON_CLASS, Reason, ReasonClass

    assert set(REASON_CLASS) == set(Reason)
    assert {c.value for c in ReasonClass} < set(ORDER) == set(COLOURS) == set(LABELS) == set(TEXT)
    assert (
        outcome_of("error", "infrastructure") == "infrastructure" == outcome_of("unresolved", "task_invalid")
    )
    assert (
        outcome_of("unresolved", "no_prediction") == "no_work" and outcome_of("resolved", None) == "resolved"
    )
    assert outcome_of("unresolved", "a word from elsewhere") == REASON_CLASS[Reason.OTHER].value
