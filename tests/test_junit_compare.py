"""Tests of src/kotlin_bench/scoring/verifier/junit_compare.py: JUnit parsing, Multi-SWE-bench scoring, fail-closed CLI."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "src" / "kotlin_bench" / "scoring" / "verifier" / "junit_compare.py"


def _load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("junit_compare", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["junit_compare"] = module
    spec.loader.exec_module(module)
    return module


jc = _load_module()

Case = tuple[str | None, str | None, str]  # (classname, name, PASS|FAIL|ERROR|SKIP)


# --------------------------------------------------------------------------- builders


def junit_xml(cases: Iterable[Case], nested: bool = False) -> bytes:
    """A <testsuites> document with one suite (inside a second suite when ``nested``)."""
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name="suite")
    if nested:
        suite = ET.SubElement(suite, "testsuite", name="inner")
    for classname, name, status in cases:
        attrs = {"time": "0.01"}
        if classname is not None:
            attrs["classname"] = classname
        if name is not None:
            attrs["name"] = name
        case = ET.SubElement(suite, "testcase", attrs)
        if status == "FAIL":
            ET.SubElement(case, "failure", message="boom").text = "stack"
        elif status == "ERROR":
            ET.SubElement(case, "error", message="boom")
        elif status == "SKIP":
            ET.SubElement(case, "skipped")
        ET.SubElement(case, "system-out").text = "some output"
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def result(passed: Sequence[str] = (), failed: Sequence[str] = (), skipped: Sequence[str] = ()) -> dict:
    return {"passed_tests": list(passed), "failed_tests": list(failed), "skipped_tests": list(skipped)}


def expected(
    *,
    f2p: Sequence[str] = (),
    p2p: Sequence[str] = (),
    s2p: Sequence[str] = (),
    n2p: Sequence[str] = (),
    test: dict | None = None,
    run: dict | None = None,
) -> dict:
    return {
        "f2p_tests": list(f2p),
        "p2p_tests": list(p2p),
        "s2p_tests": list(s2p),
        "n2p_tests": list(n2p),
        "test_patch_result": test if test is not None else result(),
        "run_result": run if run is not None else result(),
    }


def run_cli(tmp_path: Path, xml: bytes | None, exp: dict | bytes) -> tuple[str, dict, str]:
    """Run the script as the container does; return (reward, report, stdout)."""
    xml_path = tmp_path / "junit.xml"
    if xml is not None:
        xml_path.write_bytes(xml)
    exp_path = tmp_path / "expected_tests.json"
    exp_path.write_bytes(exp if isinstance(exp, bytes) else json.dumps(exp).encode())
    reward, report = tmp_path / "logs" / "reward.txt", tmp_path / "logs" / "report.json"
    args = [
        "--xml",
        str(xml_path),
        "--expected",
        str(exp_path),
        "--reward",
        str(reward),
        "--report",
        str(report),
    ]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return reward.read_text().strip(), json.loads(report.read_text(encoding="utf-8")), proc.stdout


# --------------------------------------------------------------------------- scoring table

A1, A2, A3 = "demo.A.t1()", "demo.A.t2()", "demo.A.t3()"
F2P_BASE = {"test": result(passed=[A2], failed=[A1]), "run": result(passed=[A2, A1])}

SCORING_CASES: list[tuple[str, list[Case], dict, bool, list[str]]] = [
    (
        "resolved_f2p",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        True,
        [],
    ),
    (
        "p2p_regressed",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "FAIL")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        [f"p2p_regressed: {A2}", "expected_missing: p2p 1 of 1"],
    ),
    (
        "no_results",
        [],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        ["no_test_results", "expected_missing: f2p 1 of 1", "expected_missing: p2p 1 of 1"],
    ),
    (
        "only_parameterized_is_no_results",
        [("demo.A", "t1()[1]", "PASS")],
        expected(f2p=[A1], **F2P_BASE),
        False,
        ["no_test_results", "expected_missing: f2p 1 of 1"],
    ),
    (
        "no_fixed_test",
        [("demo.A", "t1()", "FAIL"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        ["no_fixed_test", "expected_missing: f2p 1 of 1"],
    ),
    (
        "s2p_and_n2p",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS"), ("demo.A", "t3()", "PASS")],
        expected(s2p=[A1], p2p=[A2], n2p=[A3], test=result(passed=[A2], skipped=[A1]), run=result([A2, A3])),
        True,
        [],
    ),
    (
        "rule4_none_in_test_pass_in_run_fail_in_fix",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t3()", "FAIL")],
        expected(f2p=[A1], test=result(failed=[A1]), run=result(passed=[A3])),
        False,
        [f"skip_or_none_regressed: {A3}"],
    ),
    (
        "rule4_skip_in_test_pass_in_run_fail_in_fix",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t3()", "FAIL")],
        expected(f2p=[A1], test=result(failed=[A1], skipped=[A3]), run=result(passed=[A3])),
        False,
        [f"skip_or_none_regressed: {A3}"],
    ),
    (
        "new_failing_test_unknown_before_is_allowed",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t3()", "FAIL")],
        expected(f2p=[A1], test=result(failed=[A1]), run=result()),
        True,
        [],
    ),
    (
        # Multi-SWE-bench's p2p is PASS in the test-patch run and in the fix run; the base run
        # (run_result) only matters for rule 4.
        "p2p_needs_no_pass_in_run_result",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], test=result(passed=[A2], failed=[A1]), run=result(skipped=[A1])),
        True,
        [],
    ),
    (
        "missing_expected_test",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1, A3], p2p=[A2], test=result(passed=[A2], failed=[A1, A3]), run=result([A2])),
        False,
        ["expected_missing: f2p 1 of 2"],
    ),
    (
        "duplicate_id_fail_wins",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t1()", "FAIL"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        ["no_fixed_test", "expected_missing: f2p 1 of 1"],
    ),
    (
        "duplicate_id_skip_beats_pass",
        [("demo.A", "t1()", "SKIP"), ("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        ["no_fixed_test", "expected_missing: f2p 1 of 1"],
    ),
    (
        "error_counts_as_fail",
        [("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "ERROR")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        False,
        [f"p2p_regressed: {A2}", "expected_missing: p2p 1 of 1"],
    ),
    (
        "hash_suffixes_stripped",
        [("demo.A@1a2b3c", "t1()@ff00", "PASS"), ("demo.A@DEADBEEF", "t2()", "PASS")],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        True,
        [],
    ),
    (
        "parameterized_invocations_ignored",
        [
            ("demo.A", "t1()", "PASS"),
            ("demo.A", "t2()", "PASS"),
            ("demo.A", "t2()[1]", "FAIL"),
            ("demo.A[input=a]", "t2()", "FAIL"),
            ("demo.A", "t2(String)[2] x", "FAIL"),
        ],
        expected(f2p=[A1], p2p=[A2], **F2P_BASE),
        True,
        [],
    ),
    (
        "empty_brackets_are_not_parameterized",
        [("demo.A", "t1()", "PASS"), ("demo.A", "expects [] syntax", "FAIL")],
        expected(f2p=[A1], p2p=["demo.A.expects [] syntax"], test=result(["demo.A.expects [] syntax"], [A1])),
        False,
        ["p2p_regressed: demo.A.expects [] syntax", "expected_missing: p2p 1 of 1"],
    ),
    (
        "awkward_names",
        [
            ("demo.CalcTest$Points", "adds two numbers()", "PASS"),
            ("demo.Spec$a context$nested", "it works", "PASS"),
            ("demo.Paths", "Given foo\\.Bar is excluded", "PASS"),
            ("demo.Ünïcode", "größer ✓ 比较()", "PASS"),
            ("demo.Magic", "'val x = 1 in 1..27' reports", "PASS"),
            (None, "topLevel()", "PASS"),
            ("", "emptyClassname", "PASS"),
        ],
        expected(
            f2p=["demo.CalcTest$Points.adds two numbers()"],
            p2p=[
                "demo.Spec$a context$nested.it works",
                "demo.Paths.Given foo\\.Bar is excluded",
                "demo.Ünïcode.größer ✓ 比较()",
                "demo.Magic.'val x = 1 in 1..27' reports",
                "topLevel()",
                "emptyClassname",
            ],
            test=result(
                passed=[
                    "demo.Spec$a context$nested.it works",
                    "demo.Paths.Given foo\\.Bar is excluded",
                    "demo.Ünïcode.größer ✓ 比较()",
                    "demo.Magic.'val x = 1 in 1..27' reports",
                    "topLevel()",
                    "emptyClassname",
                ],
                failed=["demo.CalcTest$Points.adds two numbers()"],
            ),
        ),
        True,
        [],
    ),
    (
        "nothing_expected_is_never_resolved",
        [("demo.A", "t1()", "PASS")],
        expected(test=result(failed=[A1])),
        False,
        ["expected_empty: no f2p/p2p/s2p/n2p test is listed"],
    ),
]


@pytest.mark.parametrize(
    ("cases", "exp", "resolved", "reasons"),
    [pytest.param(c, e, r, rs, id=name) for name, c, e, r, rs in SCORING_CASES],
)
def test_scoring_cli(
    tmp_path: Path, cases: list[Case], exp: dict, resolved: bool, reasons: list[str]
) -> None:
    reward, report, stdout = run_cli(tmp_path, junit_xml(cases, nested=True), exp)
    assert report["reasons"] == reasons
    assert report["resolved"] is resolved
    assert reward == ("1" if resolved else "0")
    assert ("RESOLVED" if resolved else "UNRESOLVED") in stdout


@pytest.mark.parametrize(
    ("cases", "exp", "resolved", "reasons"),
    [pytest.param(c, e, r, rs, id=name) for name, c, e, r, rs in SCORING_CASES],
)
def test_scoring_in_process(cases: list[Case], exp: dict, resolved: bool, reasons: list[str]) -> None:
    report = jc.score(jc.parse_junit_text(junit_xml(cases)).statuses, jc.parse_expected(exp))
    assert (report["resolved"], report["reasons"]) == (resolved, reasons)


# --------------------------------------------------------------------------- parsing details


@pytest.mark.parametrize(
    ("classname", "name", "test_id"),
    [
        ("demo.Foo@1a2b3c", "bar", "demo.Foo.bar"),
        ("demo.Foo", "bar@AbC09", "demo.Foo.bar"),
        ("demo.Foo", "mentions @Suppress", "demo.Foo.mentions @Suppress"),
        ("demo.Foo@", "bar", "demo.Foo@.bar"),
        (None, "bar()", "bar()"),
        ("", "bar()", "bar()"),
        ("demo.CalcTest$Points", "x()", "demo.CalcTest$Points.x()"),
        ("demo.Foo", "a\\b", "demo.Foo.a\\b"),
        ("demo.Foo", "does not report map access with []", "demo.Foo.does not report map access with []"),
        ("demo.Foo", "t[1]", None),
        ("demo.Foo", "t[input=a, b=2]", None),
        ("demo.Foo[jvm]", "t", None),
        # As published (`\[.+?\]`): brackets around anything on one line, a `]` too, are a parameter ...
        ("demo.Foo", "t[]]", None),
        ("demo.Foo", "t[]x]", None),
        # ... and a newline inside brackets is not.
        ("demo.Foo", "p[a\nb]", "demo.Foo.p[a\nb]"),
    ],
)
def test_make_test_id(classname: str | None, name: str, test_id: str | None) -> None:
    assert jc.make_test_id(classname, name) == test_id


def test_root_testsuite_and_counts() -> None:
    xml = (
        b'<testsuite name="x"><testcase classname="a.B" name="p"/>'
        b'<testcase classname="a.B" name="f"><failure/></testcase>'
        b'<testcase classname="a.B" name="e"><error/></testcase>'
        b'<testcase classname="a.B" name="s"><skipped/></testcase>'
        b'<testcase classname="a.B" name="both"><skipped/><failure/></testcase>'
        b'<testcase classname="a.B" name="p[1]"><failure/></testcase></testsuite>'
    )
    parsed = jc.parse_junit_text(xml)
    assert parsed.statuses == {
        "a.B.p": "PASS",
        "a.B.f": "FAIL",
        "a.B.e": "FAIL",
        "a.B.s": "SKIP",
        "a.B.both": "SKIP",  # a skipped child wins over a failure in the same testcase, as published
    }
    assert parsed.ignored == 1
    assert jc.counts(parsed.statuses) == {"passed": 1, "failed": 2, "skipped": 2}


def test_nested_testcases_count_with_their_own_children() -> None:
    """Every testcase element counts, one inside another too (the published scorer iterates them all)."""
    xml = (
        b'<testsuites><testcase classname="a.B" name="outer"><testcase classname="a.B" name="inner">'
        b"<failure/></testcase></testcase></testsuites>"
    )
    assert jc.parse_junit_text(xml).statuses == {"a.B.outer": "PASS", "a.B.inner": "FAIL"}


@pytest.mark.parametrize(
    ("name", "data", "test_id"),
    [
        (
            "non_utf8",
            b'<testsuites><testcase classname="demo.A" name="t1()"/><testcase classname="demo.A" name="t2\xff\xfe()"/></testsuites>',
            "demo.A.t2\ufffd\ufffd()",
        ),
        (
            "latin1_declared",
            b'<?xml version="1.0" encoding="ISO-8859-1"?><testsuites><testcase classname="d" name="\xe9"/></testsuites>',
            "d.\ufffd",
        ),
    ],
)
def test_bytes_that_are_not_utf8_are_replaced_as_published(
    tmp_path: Path, name: str, data: bytes, test_id: str
) -> None:
    path = tmp_path / f"{name}.xml"
    path.write_bytes(data)
    assert test_id in jc.parse_junit_file(path).statuses
    assert test_id in jc.parse_junit_text(data).statuses


def test_a_comment_that_breaks_parsing_is_dropped_and_parsing_retried(tmp_path: Path) -> None:
    xml = b'<testsuites><!-- a -- b --><testcase classname="a.B" name="p"/><!-- ok --></testsuites>'
    path = tmp_path / "c.xml"
    path.write_bytes(xml)
    assert jc.parse_junit_file(path).statuses == {"a.B.p": "PASS"}
    assert jc.parse_junit_text(xml).statuses == {"a.B.p": "PASS"}
    with pytest.raises(jc.VerifierInputError, match="xml_unreadable"):
        jc.parse_junit_text(b'<testsuites><!-- a -- b --><testcase classname="a.B" name="p">')


@pytest.mark.parametrize(
    ("classname", "name", "expected"),
    [
        ("io.x.BlockTest", "accepts indentation[desktop]", "io.x.BlockTest.accepts indentation"),
        ("io.x.BlockTest", "accepts indentation[jvm]", "io.x.BlockTest.accepts indentation"),
        ("io.x.BlockTest", "t@1a2b[jvm]", "io.x.BlockTest.t@1a2b"),  # the hash goes first, then the suffix
        ("io.x.BlockTest", "t[1][jvm]", None),  # still parameterized
        ("io.x.BlockTest", "t[js]", None),  # not a listed suffix: parameterized
        ("io.x.BlockTest[jvm]", "t", "io.x.BlockTest[jvm].t"),  # the classname keeps it
        # As published (`...$`): a suffix before a final newline is one; the newline goes with the trim.
        ("io.x.BlockTest", "fixed[jvm]\n", "io.x.BlockTest.fixed"),
        ("io.x.BlockTest", "fixed[jvm] ", None),
        ("io.x.BlockTest", "fixed[jvm]\n\n", None),
    ],
)
def test_target_suffixes_are_stripped_not_ignored(classname: str, name: str, expected: str | None) -> None:
    assert jc.make_test_id(classname, name, ("[desktop]", "[jvm]")) == expected
    assert jc.make_test_id(classname, name) is None or not name.endswith(("[desktop]", "[jvm]"))


def test_strip_name_suffix_option_scores_kmp_names(tmp_path: Path) -> None:
    xml = tmp_path / "j.xml"
    xml.write_text('<testsuite><testcase classname="a.B" name="fixed[desktop]"/></testsuite>')
    path = tmp_path / "expected.json"
    path.write_text(json.dumps(expected(f2p=["a.B.fixed"], test=result(failed=["a.B.fixed"]))))
    report, _ = jc.build_report(xml, path, None)
    assert not report["resolved"] and "no_test_results" in report["reasons"]
    report, _ = jc.build_report(xml, path, None, ["[desktop]", "[jvm]"])
    assert report["resolved"], report["reasons"]


def test_elements_are_matched_by_their_exact_names_as_published() -> None:
    """The published scorer finds `testcase`, `failure`, `error` and `skipped` without a namespace only."""
    xml = (
        b'<testsuites xmlns:j="urn:j"><testsuite><testcase classname="a.B" name="plain"/>'
        b'<j:testcase classname="a.B" name="namespaced"/>'
        b'<testcase classname="a.B" name="f"><j:failure/></testcase></testsuite>'
        b'<testsuite xmlns="urn:x"><testcase classname="a.B" name="default"/></testsuite></testsuites>'
    )
    assert jc.parse_junit_text(xml).statuses == {"a.B.plain": "PASS", "a.B.f": "PASS"}


@pytest.mark.parametrize(
    "head",
    [b"\xef\xbb\xbf", b"  \n\t", b"\xef\xbb\xbf\n "],
    ids=["bom", "whitespace", "bom then whitespace"],
)
def test_a_bom_and_whitespace_before_the_declaration_are_dropped_as_published(
    tmp_path: Path, head: bytes
) -> None:
    data = head + GOOD
    path = tmp_path / "j.xml"
    path.write_bytes(data)
    assert set(jc.parse_junit_file(path).statuses) == {A1, A2}
    assert set(jc.parse_junit_text(data).statuses) == {A1, A2}


def test_grandchild_failure_does_not_count() -> None:
    xml = b'<testsuites><testcase classname="a.B" name="p"><system-out><failure/></system-out></testcase></testsuites>'
    assert jc.parse_junit_text(xml).statuses == {"a.B.p": "PASS"}


BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
    b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
    b'<testsuites><testcase classname="a.B" name="&lol3;"/></testsuites>'
)
GOOD = junit_xml([("demo.A", "t1()", "PASS"), ("demo.A", "t2()", "PASS")])

BAD_XML_CASES = [
    ("doctype_entity_bomb", BILLION_LAUGHS, "xml_rejected: "),
    ("plain_doctype", b'<!DOCTYPE testsuites SYSTEM "x.dtd">' + GOOD.split(b"?>", 1)[1], "xml_rejected: "),
    ("truncated", GOOD[: len(GOOD) // 2], "xml_unreadable: "),
    ("empty_file", b"", "xml_unreadable: "),
    (
        "undefined_entity",
        b'<testsuites><testcase classname="a" name="&xxe;"/></testsuites>',
        "xml_unreadable: ",
    ),
    ("not_xml", b"BUILD FAILED", "xml_unreadable: "),
]


@pytest.mark.parametrize(("xml", "prefix"), [pytest.param(x, p, id=n) for n, x, p in BAD_XML_CASES])
def test_bad_xml_fails_closed(tmp_path: Path, xml: bytes, prefix: str) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "reward.txt").write_text("1\n")
    reward, report, _ = run_cli(tmp_path, xml, expected(f2p=[A1], p2p=[A2], **F2P_BASE))
    assert reward == "0"
    assert report["resolved"] is False and report["valid"] is False
    assert len(report["reasons"]) == 1 and report["reasons"][0].startswith(prefix)
    assert report["categories"]["f2p"] == {"expected": 1, "landed": 0, "missing": [A1]}


def test_missing_xml_file(tmp_path: Path) -> None:
    reward, report, _ = run_cli(tmp_path, None, expected(f2p=[A1], **F2P_BASE))
    assert reward == "0"
    assert report["reasons"][0].startswith("xml_unreadable: FileNotFoundError")


def test_size_cap(tmp_path: Path) -> None:
    path = tmp_path / "big.xml"
    path.write_bytes(GOOD)
    with pytest.raises(jc.VerifierInputError, match="xml_rejected"):
        jc.parse_junit_file(path, max_bytes=len(GOOD) - 1)
    assert set(jc.parse_junit_file(path, max_bytes=len(GOOD)).statuses) == {A1, A2}


BAD_EXPECTED_CASES = [
    ("not_json", b"{not json"),
    ("truncated_json", json.dumps(expected(f2p=[A1], **F2P_BASE)).encode()[:40]),
    ("non_utf8", b'{"f2p_tests": ["\xff"]}'),
    ("top_level_list", b"[]"),
    ("ids_not_strings", json.dumps(expected(f2p=[1], **F2P_BASE))),
    ("ids_a_string", json.dumps(expected(f2p=[A1], **F2P_BASE) | {"s2p_tests": ""})),
    ("list_null", json.dumps(expected(f2p=[A1], **F2P_BASE) | {"p2p_tests": None})),
    ("result_not_object", json.dumps(expected(f2p=[A1], test=[], run=result()))),
    ("result_list_not_a_list", json.dumps(expected(f2p=[A1], test={"passed_tests": {}}, run=result()))),
]


@pytest.mark.parametrize("data", [pytest.param(d, id=n) for n, d in BAD_EXPECTED_CASES])
def test_invalid_expected_fails_closed(tmp_path: Path, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    reward, report, _ = run_cli(tmp_path, GOOD, raw)
    assert reward == "0"
    assert report["resolved"] is False
    assert report["reasons"][0].startswith("expected_invalid: ")
    assert report["counts"] == {"passed": 2, "failed": 0, "skipped": 0}


def _without(data: dict, *keys: str) -> dict:
    return {k: v for k, v in data.items() if k not in keys}


LENIENT_EXPECTED_CASES = [
    # As published: a missing list or result object is empty ...
    ("no_s2p_key", _without(expected(f2p=[A1], p2p=[A2], **F2P_BASE), "s2p_tests"), True),
    ("no_run_result", _without(expected(f2p=[A1], p2p=[A2], **F2P_BASE), "run_result"), True),
    ("no_failed_list", expected(f2p=[A1], test={"passed_tests": [A2], "failed_tests": [A1]}, run={}), True),
    # (without test_patch_result, the fixed test is new: n2p, not the f2p listed)
    ("no_result_objects", _without(expected(f2p=[A1]), "test_patch_result", "run_result"), False),
    # ... and a test in two result lists has the first status of passed, failed, skipped.
    (
        "p2p_passed_and_failed",
        expected(f2p=[A1], p2p=[A2], test=result([A2], [A1, A2]), run=result([A2])),
        True,
    ),
    ("f2p_passed_and_failed", expected(f2p=[A1], test=result([A1], [A1]), run=result()), False),
    (
        "run_passed_and_failed",
        expected(f2p=[A1], p2p=[A2], test=result([A2], [A1]), run=result([A2], [A2])),
        True,
    ),
    ("one_test_in_two_categories", expected(f2p=[A1], p2p=[A1], **F2P_BASE), False),
]


@pytest.mark.parametrize(
    ("data", "resolved"), [pytest.param(d, r, id=n) for n, d, r in LENIENT_EXPECTED_CASES]
)
def test_expected_lists_are_read_as_leniently_as_published(
    tmp_path: Path, data: dict, resolved: bool
) -> None:
    reward, report, _ = run_cli(tmp_path, GOOD, data)
    assert reward == ("1" if resolved else "0"), report["reasons"]
    assert not any(r.startswith("expected_invalid") for r in report["reasons"])


def test_abort_mode_records_reason(tmp_path: Path) -> None:
    exp = tmp_path / "expected_tests.json"
    exp.write_text(json.dumps(expected(f2p=[A1], p2p=[A2], **F2P_BASE)))
    reward, report = tmp_path / "reward.txt", tmp_path / "report.json"
    reward.write_text("1")
    argv = ["--abort", "test_patch_failed: x", "--expected", str(exp), "--reward", str(reward)]
    assert jc.main([*argv, "--report", str(report)]) == 0
    data = json.loads(report.read_text())
    assert reward.read_text().strip() == "0"
    assert data["reasons"] == ["test_patch_failed: x"]
    assert data["categories"]["p2p"] == {"expected": 1, "landed": 0, "missing": [A2]}


def test_unexpected_exception_leaves_reward_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    xml, exp = tmp_path / "j.xml", tmp_path / "e.json"
    xml.write_bytes(GOOD)
    exp.write_text(json.dumps(expected(f2p=[A1], p2p=[A2], **F2P_BASE)))
    reward, report = tmp_path / "reward.txt", tmp_path / "report.json"
    reward.write_text("1")

    def boom(*_: Any) -> None:
        raise RuntimeError("kaput")

    monkeypatch.setattr(jc, "score", boom)
    args = ["--xml", str(xml), "--expected", str(exp), "--reward", str(reward), "--report", str(report)]
    assert jc.main(args) == 0
    assert reward.read_text().strip() == "0"
    assert json.loads(report.read_text())["reasons"] == ["internal_error: RuntimeError: kaput"]


def test_reward_zero_is_written_before_reading_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reward = tmp_path / "reward.txt"
    reward.write_text("1")
    seen: list[str] = []

    def spy(*_: Any) -> tuple[dict, int]:
        seen.append(reward.read_text())
        raise KeyboardInterrupt

    monkeypatch.setattr(jc, "build_report", spy)
    with pytest.raises(KeyboardInterrupt):
        jc.main(["--xml", "x", "--expected", "y", "--reward", str(reward)])
    assert seen == ["0\n"]
    assert reward.read_text() == "0\n"
    assert [p.name for p in tmp_path.iterdir()] == ["reward.txt"]  # no temporary files left


def test_bounded_reasons_and_missing_list() -> None:
    ids = [f"demo.A.t{i}()" for i in range(80)]
    exp = expected(
        p2p=ids, f2p=["demo.A.new()"], test=result(passed=ids, failed=["demo.A.new()"]), run=result(ids)
    )
    fix = {**dict.fromkeys(ids, "FAIL"), "demo.A.new()": "PASS"}
    report = jc.score(fix, jc.parse_expected(exp))
    regressed = [r for r in report["reasons"] if r.startswith("p2p_regressed: ")]
    assert len(regressed) == jc.MAX_IDS_PER_REASON + 1
    assert regressed[-1] == f"p2p_regressed: ... and {80 - jc.MAX_IDS_PER_REASON} more"
    assert report["categories"]["p2p"]["missing"] == ids[:50]
    assert report["categories"]["p2p"]["expected"] == 80


# --------------------------------------------------------------------------- the published samples

CLASS_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\$[^.]*)?")


def split_test_id(test_id: str) -> tuple[str, str]:
    """Split an id into (classname, name) so that ``classname + "." + name == test_id``.

    The classname is the longest run of leading dot-separated segments that look like Java
    identifiers (a nested-class suffix ``$...`` may hold anything but dots), always leaving at
    least one segment for the name: ``a.b.C$ctx x.does it()`` -> ``a.b.C$ctx x`` + ``does it()``,
    ``a.B.'x in 1..2' y`` -> ``a.B`` + ``'x in 1..2' y``.
    """
    segments = test_id.split(".")
    k = 0
    while k < len(segments) - 1 and CLASS_SEGMENT.fullmatch(segments[k]):
        k += 1
    return ".".join(segments[:k]), ".".join(segments[k:])


def shared_dir() -> Path:
    return Path(os.environ.get("KOTLIN_BENCH_SHARED", str(REPO.parent / "shared")))


def sample_files() -> list[Path]:
    return sorted((shared_dir() / "dataset" / "samples").glob("*/expected_tests.json"))


def sample_params() -> list[Any]:
    files = sample_files()
    if not files:
        return [pytest.param(None, id="no-samples")]
    return [pytest.param(path, id=path.parent.name) for path in files]


def load_sample(path: Path | None) -> dict:
    if path is None:
        pytest.skip(f"no samples under {shared_dir()} (set KOTLIN_BENCH_SHARED)")
    return json.loads(path.read_text(encoding="utf-8"))


def expected_ids(data: dict) -> list[str]:
    return [t for cat in jc.CATEGORIES for t in data[f"{cat}_tests"]]


def sample_xml(data: dict, overrides: dict[str, str] | None = None, drop: Iterable[str] = ()) -> bytes:
    """The fix-run XML the expected file implies: every expected test passes; skipped stay skipped."""
    statuses = dict.fromkeys(expected_ids(data), "PASS")
    for test_id in data["test_patch_result"]["skipped_tests"]:
        statuses.setdefault(test_id, "SKIP")
    statuses.update(overrides or {})
    for test_id in drop:
        statuses.pop(test_id)
    cases: list[Case] = [(*split_test_id(t), s) for t, s in statuses.items()]
    cases.append(("demo.Parameterized", "works(int)[1]", "FAIL"))  # ignored
    return junit_xml(cases)


def test_samples_are_present_when_shared_dir_exists() -> None:
    if not shared_dir().is_dir():
        pytest.skip(f"{shared_dir()} is absent")
    assert len(sample_files()) == 3


@pytest.mark.parametrize("path", sample_params())
def test_sample_ids_round_trip(path: Path | None) -> None:
    data = load_sample(path)
    ids = set(expected_ids(data)) | set(data["test_patch_result"]["skipped_tests"])
    for test_id in ids:
        classname, name = split_test_id(test_id)
        assert f"{classname}.{name}" == test_id or (not classname and name == test_id)
    assert set(jc.parse_junit_text(sample_xml(data)).statuses) == ids


@pytest.mark.parametrize("path", sample_params())
def test_sample_resolves(tmp_path: Path, path: Path | None) -> None:
    data = load_sample(path)
    reward, report, _ = run_cli(tmp_path, sample_xml(data), data)
    assert report["reasons"] == []
    assert (reward, report["resolved"], report["valid"]) == ("1", True, True)
    for cat in jc.CATEGORIES:
        n = len(set(data[f"{cat}_tests"]))
        assert report["categories"][cat] == {"expected": n, "landed": n, "missing": []}


def _fixed_category(data: dict) -> str:
    return next(cat for cat in ("f2p", "n2p", "s2p") if data[f"{cat}_tests"])


@pytest.mark.parametrize("path", sample_params())
def test_sample_dropped_fixed_test(tmp_path: Path, path: Path | None) -> None:
    data = load_sample(path)
    cat = _fixed_category(data)
    dropped = data[f"{cat}_tests"][0]
    reward, report, _ = run_cli(tmp_path, sample_xml(data, drop=[dropped]), data)
    total = len(data[f"{cat}_tests"])
    assert reward == "0" and report["resolved"] is False
    assert f"expected_missing: {cat} 1 of {total}" in report["reasons"]
    assert report["categories"][cat]["missing"] == [dropped]
    if total == 1 and not any(data[f"{c}_tests"] for c in ("f2p", "s2p", "n2p") if c != cat):
        assert "no_fixed_test" in report["reasons"]


@pytest.mark.parametrize("path", sample_params())
def test_sample_p2p_failure(tmp_path: Path, path: Path | None) -> None:
    data = load_sample(path)
    broken = sorted(data["p2p_tests"])[len(data["p2p_tests"]) // 2]
    reward, report, _ = run_cli(tmp_path, sample_xml(data, overrides={broken: "FAIL"}), data)
    assert reward == "0" and report["valid"] is False
    assert report["reasons"][0] == f"p2p_regressed: {broken}"
    assert report["categories"]["p2p"]["missing"] == [broken]
    assert report["counts"]["failed"] == 1


@pytest.mark.parametrize("path", sample_params())
def test_sample_everything_skipped(tmp_path: Path, path: Path | None) -> None:
    data = load_sample(path)
    overrides = dict.fromkeys(expected_ids(data), "SKIP")
    reward, report, _ = run_cli(tmp_path, sample_xml(data, overrides=overrides), data)
    assert reward == "0" and report["valid"] is False
    assert report["reasons"][0] == "no_fixed_test"
    assert report["counts"]["passed"] == 0
    for cat in jc.CATEGORIES:
        assert report["categories"][cat]["landed"] == 0
