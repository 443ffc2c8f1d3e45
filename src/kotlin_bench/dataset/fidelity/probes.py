"""Probes of our own, run through both sides' scripts: merged JUnit reports and expected lists given to
each junit_compare.py (scorer probes), and report files in a repository given to each collector and then
its scorer (pipeline probes: the report shapes the collectors copy differently)."""

from __future__ import annotations

import json
import shutil
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


def _without(expected: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in expected.items() if k not in keys}


def _overlap(expected: dict[str, Any], result: str, test_id: str) -> dict[str, Any]:
    """`test_id` listed as failed too in `result` (it is passed there already)."""
    lists = dict(expected[result])
    lists["failed_tests"] = [*lists["failed_tests"], test_id]
    return expected | {result: lists}


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
    # expected_tests.json as the published scorer reads it: missing keys empty, passed wins on overlap.
    Probe(
        "expected: no s2p_tests key",
        _suite(_case("fixed()")),
        _without(_expected(["p.T.fixed()"]), "s2p_tests"),
    ),
    Probe(
        "expected: no run_result",
        _suite(_case("fixed()")),
        _without(_expected(["p.T.fixed()"]), "run_result"),
    ),
    Probe(
        "expected: no result lists at all",
        _suite(_case("fixed()")),
        _without(_expected(["p.T.fixed()"]), "run_result", "test_patch_result"),
    ),
    Probe(
        "expected: a p2p test both passed and failed before the fix",
        _suite(_case("fixed()"), _case("kept()")),
        _overlap(_expected(["p.T.fixed()"], ["p.T.kept()"]), "test_patch_result", "p.T.kept()"),
    ),
    Probe(
        "expected: a test both passed and failed in the base run",
        _suite(_case("fixed()"), _case("kept()")),
        _overlap(_expected(["p.T.fixed()"], ["p.T.kept()"]), "run_result", "p.T.kept()"),
    ),
    Probe(
        "expected: one test in two categories",
        _suite(_case("fixed()")),
        _expected(["p.T.fixed()"]) | {"p2p_tests": ["p.T.fixed()"]},
    ),
    Probe(
        "expected: f2p_tests is a string",
        _suite(_case("fixed()")),
        _expected(["p.T.fixed()"]) | {"f2p_tests": "p.T.fixed()"},
    ),
    Probe(
        "expected: an empty string for s2p_tests",
        _suite(_case("fixed()")),
        _expected(["p.T.fixed()"]) | {"s2p_tests": ""},
    ),
    Probe(
        "a DOCTYPE",
        b'<?xml version="1.0"?><!DOCTYPE testsuites><testsuites>'
        + _suite(_case("fixed()")).split(b"<testsuites>", 1)[1],
        _expected(["p.T.fixed()"]),
    ),
)


def run_scorer(script: Path, probe: Probe, workdir: Path, options: Sequence[str] = ()) -> str:
    """The reward a junit_compare.py gives the probe: "1", or "0" (also when the scorer wrote none: both
    verifiers write 0 before the scorer runs)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "junit.xml").write_bytes(probe.xml)
    return _score(script, workdir / "junit.xml", probe.expected, workdir, options)


def _score(
    script: Path, xml: Path, expected: dict[str, Any], workdir: Path, options: Sequence[str] = ()
) -> str:
    (workdir / "expected.json").write_text(json.dumps(expected), encoding="utf-8")
    reward = workdir / "reward.txt"
    reward.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(script),
        "--xml",
        str(xml),
        "--expected",
        str(workdir / "expected.json"),
        "--reward",
        str(reward),
        *options,
    ]
    subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    return "1" if reward.is_file() and reward.read_text(encoding="utf-8").strip() == "1" else "0"


# --------------------------------------------------------------------------- pipeline probes


@dataclass(frozen=True)
class ReportProbe:
    """Report files (paths under a repository) that a test run might leave, and the expected lists."""

    name: str
    files: dict[str, bytes]
    expected: dict[str, Any]


DECLARATION = b'<?xml version="1.0" encoding="UTF-8"?>\n'
REPORT_PATH = "mod/build/test-results/test/TEST-p.T.xml"


def _report(*cases: str, head: bytes = DECLARATION, suite: str = '<testsuite name="p.T">') -> bytes:
    body = "".join(f"  {case}\n" for case in cases)
    return head + f"{suite}\n{body}</testsuite>\n".encode()


def _one(report: bytes) -> dict[str, bytes]:
    return {REPORT_PATH: report}


F2P = _expected(["p.T.fixed()"])
GOOD = _report(_case("fixed()"))

REPORT_PROBES: tuple[ReportProbe, ...] = (
    ReportProbe("a Gradle report", _one(GOOD), F2P),
    ReportProbe(
        "two reports",
        {
            REPORT_PATH: GOOD,
            "other/build/test-results/test/TEST-p.U.xml": _report(_case("kept()", cls="p.U")),
        },
        _expected(["p.T.fixed()"], ["p.U.kept()"]),
    ),
    ReportProbe(
        "a namespaced testsuite", _one(_report(_case("fixed()"), suite='<testsuite xmlns="urn:x">')), F2P
    ),
    ReportProbe(
        "a namespaced testcase",
        _one(
            _report(_case("fixed()").replace("testcase", "j:testcase"), suite='<testsuite xmlns:j="urn:j">')
        ),
        F2P,
    ),
    ReportProbe("no final newline", _one(GOOD.rstrip(b"\n")), F2P),
    ReportProbe("the whole report on one line", _one(GOOD.replace(b"\n", b"") + b"\n"), F2P),
    ReportProbe("a BOM before the declaration", _one(b"\xef\xbb\xbf" + GOOD), F2P),
    ReportProbe("the declaration and the root on one line", _one(GOOD.replace(b"?>\n", b"?>", 1)), F2P),
    ReportProbe("two declarations", _one(DECLARATION + GOOD), F2P),
    ReportProbe("a blank line before the declaration", _one(b"\n" + GOOD), F2P),
    ReportProbe("CRLF line ends", _one(GOOD.replace(b"\n", b"\r\n")), F2P),
    ReportProbe(
        "a NUL byte in system-out", _one(_report(_case("fixed()", "<system-out>a\0b</system-out>"))), F2P
    ),
    ReportProbe("a NUL byte in a name", _one(_report(_case("fix\0ed()"))), F2P),
    ReportProbe(
        "a DOCTYPE line", _one(DECLARATION + b"<!DOCTYPE testsuite>\n" + GOOD[len(DECLARATION) :]), F2P
    ),
    ReportProbe(
        "a DOCTYPE on the declaration line", _one(GOOD.replace(b"?>\n", b"?><!DOCTYPE testsuite>\n", 1)), F2P
    ),
    ReportProbe(
        "a newline inside brackets",
        _one(_report(_case("fixed()"), _case("p[a&#10;b]"))),
        _expected(["p.T.fixed()"], ["p.T.p[a\nb]"]),
    ),
    ReportProbe(
        "a newline inside brackets, failing",
        _one(_report(_case("fixed()"), _case("p[a&#10;b]", "<failure/>"))),
        _expected(["p.T.fixed()"], unlisted_passed=["p.T.p[a\nb]"]),
    ),
    ReportProbe(
        "a target suffix before a final newline",
        _one(_report(_case("fixed[jvm]&#10;"))),
        _expected(["p.T.fixed"]),
    ),
)


@dataclass(frozen=True)
class Pipeline:
    """A verifier's collector and scorer: how to run them."""

    collector: Path
    scorer: Path
    published: bool  # the published collector's command line (--root, --output), else ours
    options: tuple[str, ...] = ()  # the scorer's options


def run_pipeline(pipeline: Pipeline, probe: ReportProbe, workdir: Path) -> str:
    """The reward of the report files after the collector merged them and the scorer scored the merge;
    "0" when the collector fails (both verifiers have written 0 by then)."""
    shutil.rmtree(workdir, ignore_errors=True)
    repo, merged = workdir / "repo", workdir / "logs/junit.xml"
    for rel, data in probe.files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(data)
    merged.parent.mkdir(parents=True)
    collector = str(pipeline.collector.resolve())
    if pipeline.published:
        cmd = ["bash", collector, "--root", str(repo), "--output", str(merged)]
    else:
        cmd = ["bash", collector, str(repo), str(merged)]
    done = subprocess.run(cmd, capture_output=True, timeout=120, check=False, cwd=workdir)
    if done.returncode != 0 or not merged.is_file():
        return "0"
    return _score(pipeline.scorer, merged, probe.expected, workdir, pipeline.options)
