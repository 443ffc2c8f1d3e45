"""Scorer probes: JUnit reports of our own, scored by both junit_compare.py scripts."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# --------------------------------------------------------------------------- scorer probes


@dataclass(frozen=True)
class Probe:
    name: str
    xml: bytes
    expected: dict[str, Any]


def _expected(
    f2p: Sequence[str], p2p: Sequence[str] = (), unlisted_passed: Sequence[str] = ()
) -> dict[str, Any]:
    """Expected lists; `unlisted_passed` passed before the fix but is in no list (a regression check)."""
    passed = [*p2p, *unlisted_passed]
    return {
        "f2p_tests": list(f2p),
        "p2p_tests": list(p2p),
        "s2p_tests": [],
        "n2p_tests": [],
        "test_patch_result": {"passed_tests": passed, "failed_tests": list(f2p), "skipped_tests": []},
        "run_result": {"passed_tests": passed, "failed_tests": [], "skipped_tests": []},
    }


def _suite(*cases: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite>'
        + "".join(cases)
        + "</testsuite></testsuites>\n"
    ).encode()


def _case(name: str, body: str = "", cls: str = "p.T") -> str:
    return f'<testcase classname="{cls}" name="{name}">{body}</testcase>'


PROBES: tuple[Probe, ...] = (
    Probe("resolves", _suite(_case("fixed()"), _case("kept()")), _expected(["p.T.fixed()"], ["p.T.kept()"])),
    Probe(
        "f2p still failing",
        _suite(_case("fixed()", "<failure/>"), _case("kept()")),
        _expected(["p.T.fixed()"], ["p.T.kept()"]),
    ),
    Probe(
        "p2p regressed",
        _suite(_case("fixed()"), _case("kept()", "<failure/>")),
        _expected(["p.T.fixed()"], ["p.T.kept()"]),
    ),
    Probe(
        "skipped and failed in one testcase",
        _suite(_case("fixed()"), _case("kept()", "<skipped/><failure/>")),
        _expected(["p.T.fixed()"], unlisted_passed=["p.T.kept()"]),
    ),
    Probe(
        "a duplicate that fails",
        _suite(_case("fixed()"), _case("fixed()", "<failure/>")),
        _expected(["p.T.fixed()"]),
    ),
    Probe(
        "parameterized invocations ignored",
        _suite(_case("fixed()"), _case("fixed()[1]", "<failure/>")),
        _expected(["p.T.fixed()"]),
    ),
    Probe(
        "bytes that are not UTF-8",
        _suite(_case("fixed()"), _case("nBADBYTE()")).replace(b"BADBYTE", b"\xff\xfe"),
        _expected(["p.T.fixed()"]),
    ),
    Probe("a comment holding --", _suite("<!-- a -- b -->", _case("fixed()")), _expected(["p.T.fixed()"])),
    Probe(
        "nested testcases",
        _suite(_case("fixed()", _case("inner()", "<failure/>"))),
        _expected(["p.T.fixed()"], ["p.T.inner()"]),
    ),
    Probe("no test results", _suite(), _expected(["p.T.fixed()"])),
    Probe(
        "Kotlin Multiplatform target suffix",
        _suite(_case("fixed[desktop]"), _case("kept[jvm]")),
        _expected(["p.T.fixed"], ["p.T.kept"]),
    ),
    Probe(
        "a DOCTYPE",
        b'<?xml version="1.0"?><!DOCTYPE testsuites><testsuites>'
        + _suite(_case("fixed()")).split(b"<testsuites>", 1)[1],
        _expected(["p.T.fixed()"]),
    ),
)


def run_scorer(script: Path, probe: Probe, workdir: Path, options: Sequence[str] = ()) -> str:
    """The reward a junit_compare.py gives the probe ("0", "1", or what went wrong)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "junit.xml").write_bytes(probe.xml)
    (workdir / "expected.json").write_text(json.dumps(probe.expected), encoding="utf-8")
    reward = workdir / "reward.txt"
    reward.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(script),
        "--xml",
        str(workdir / "junit.xml"),
        "--expected",
        str(workdir / "expected.json"),
        "--reward",
        str(reward),
        *options,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    text = reward.read_text(encoding="utf-8").strip() if reward.is_file() else ""
    return text or f"no reward (exit {done.returncode})"
