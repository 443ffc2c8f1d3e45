#!/usr/bin/env python3
"""Score a candidate fix from its merged JUnit XML against ``expected_tests.json``.

Runs inside the task container: Python standard library only.

The verdict follows Multi-SWE-bench.  Each test has a status in three runs: ``run`` (the base
commit), ``test`` (base + test patch, both from expected_tests.json) and ``fix`` (base + test
patch + candidate fix: the XML given here).  A status is PASS, FAIL, SKIP or NONE (absent).

The run is valid only if
  1. the fix run has at least one test result;
  2. no test is PASS in ``test`` and FAIL in ``fix``;
  3. at least one test is not PASS in ``test`` and PASS in ``fix``;
  4. no test is NONE or SKIP in ``test``, PASS in ``run`` and FAIL in ``fix``.
Every test PASS in ``fix`` falls in one category by its ``test`` status: PASS -> p2p, FAIL -> f2p,
SKIP -> s2p, NONE -> n2p.  The task is resolved when the run is valid and every test listed in
the expected f2p/p2p/s2p/n2p lists lands in the same category again.

Fail closed: the reward file is set to 0 before anything else and set to 1 only as the last step
of a resolved verdict.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PASS = "PASS"
FAIL = "FAIL"
SKIP = "SKIP"
NONE = "NONE"
SEVERITY = {PASS: 1, SKIP: 2, FAIL: 3}
CATEGORIES = ("f2p", "p2p", "s2p", "n2p")
STATUS_OF_CATEGORY = {"p2p": PASS, "f2p": FAIL, "s2p": SKIP, "n2p": NONE}
RESULT_LISTS = {"passed_tests": PASS, "failed_tests": FAIL, "skipped_tests": SKIP}

MAX_XML_BYTES = 512 * 1024 * 1024
READ_CHUNK = 1 << 20
MAX_MISSING_LISTED = 50
MAX_IDS_PER_REASON = 10

# As published: a bracket, at least one character on the same line, a closing bracket.
PARAMETERIZED_RE = re.compile(r"\[.+?\]")
COMMENT_RE = re.compile(r"<!--.*?-->", re.DOTALL)
BOM = "\ufeff"
HASH_SUFFIX_RE = re.compile(r"@[0-9a-fA-F]+$")
UNNAMED = "<unnamed>"


class VerifierInputError(Exception):
    """An input the verdict cannot be based on; ``reason`` is ``<code>: <detail>``."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.reason = f"{code}: {detail}"


# --------------------------------------------------------------------------- test ids


def is_parameterized(part: str | None) -> bool:
    """True if ``part`` has a bracketed section with at least one character inside, all on one line."""
    return part is not None and PARAMETERIZED_RE.search(part) is not None


def strip_hash(part: str | None) -> str:
    """Trim whitespace and a trailing ``@<hex>`` identity hash."""
    return HASH_SUFFIX_RE.sub("", (part or "").strip())


def strip_suffix(part: str | None, suffixes: Sequence[str]) -> str | None:
    """``part`` without one trailing suffix of ``suffixes`` (Kotlin Multiplatform names a test of the JVM
    target ``test[jvm]`` or ``test[desktop]``). Trailing means what the published scorer's ``$`` means: at
    the end, or just before a final newline (which then stays)."""
    if part is None:
        return None
    for suffix in suffixes:
        match = re.search(re.escape(suffix) + "$", part)
        if match:
            return part[: match.start()] + part[match.end() :]
    return part


def make_test_id(classname: str | None, name: str | None, suffixes: Sequence[str] = ()) -> str | None:
    """``<classname>.<name>``; None for a parameterized invocation (ignored). With ``suffixes``, a target
    suffix is not a parameter: it is taken off the name (the classname keeps it)."""
    if is_parameterized(strip_suffix(classname, suffixes)) or is_parameterized(strip_suffix(name, suffixes)):
        return None
    cls = strip_hash(classname)
    method = strip_suffix(strip_hash(name), suffixes) or UNNAMED
    return f"{cls}.{method}" if cls else method


def worst(first: str, second: str) -> str:
    """The worse of two statuses: FAIL over SKIP over PASS."""
    return first if SEVERITY[first] >= SEVERITY[second] else second


def record(results: dict[str, str], test_id: str, status: str) -> None:
    """Record ``status`` for ``test_id``, keeping the worst status seen."""
    previous = results.get(test_id)
    results[test_id] = status if previous is None else worst(previous, status)


# --------------------------------------------------------------------------- JUnit XML


@dataclass
class JUnitResults:
    """Statuses by test id, and how many parameterized test cases were ignored."""

    statuses: dict[str, str] = field(default_factory=dict)
    ignored: int = 0


@dataclass
class _Case:
    depth: int
    attrs: dict[str, str]
    skipped: bool = False
    failed: bool = False

    @property
    def status(self) -> str:
        """A skipped child makes the test SKIP even beside a failure (as the published scorer has it)."""
        return SKIP if self.skipped else FAIL if self.failed else PASS


class _TestCaseTarget:
    """ElementTree parser target: collects the status of every testcase (nested ones too), keeps no
    text, rejects DOCTYPE. Element names are matched exactly, as the published scorer's ``iter`` and
    ``find`` do: a namespaced ``testcase``, ``failure`` or ``skipped`` is not one."""

    def __init__(self, suffixes: Sequence[str] = ()) -> None:
        self.results = JUnitResults()
        self._suffixes = tuple(suffixes)
        self._depth = 0
        self._cases: list[_Case] = []

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise VerifierInputError("xml_rejected", f"DOCTYPE/ENTITY declarations are not allowed ({name!r})")

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        self._depth += 1
        if self._cases and self._depth == self._cases[-1].depth + 1:
            case = self._cases[-1]
            case.skipped = case.skipped or tag == "skipped"
            case.failed = case.failed or tag in ("failure", "error")
        if tag == "testcase":
            self._cases.append(_Case(self._depth, dict(attrib)))

    def end(self, tag: str) -> None:
        if self._cases and self._depth == self._cases[-1].depth:
            case = self._cases.pop()
            test_id = make_test_id(case.attrs.get("classname"), case.attrs.get("name"), self._suffixes)
            if test_id is None:
                self.results.ignored += 1
            else:
                record(self.results.statuses, test_id, case.status)
        self._depth -= 1

    def data(self, data: str) -> None:
        """Text (system-out, failure messages) is not needed."""

    def close(self) -> JUnitResults:
        return self.results


def parse_junit_file(
    path: Path, max_bytes: int = MAX_XML_BYTES, suffixes: Sequence[str] = ()
) -> JUnitResults:
    """Parse a (merged) JUnit XML file; raises VerifierInputError on anything untrustworthy.

    As the published scorer does, bytes that are not UTF-8 are replaced (U+FFFD), a leading BOM and then
    whitespace are dropped (`strip_document`), and a document that does not parse is parsed once more without
    its comments (a comment holding ``--`` is not XML)."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise VerifierInputError("xml_rejected", f"{size} bytes exceeds the cap of {max_bytes}")
        try:
            return _parse_stream(path, max_bytes, suffixes)
        except ET.ParseError:
            text = strip_document(path.read_bytes()[:max_bytes].decode("utf-8", errors="replace"))
            return _parse_text(COMMENT_RE.sub("", text), suffixes)
    except VerifierInputError:
        raise
    except (OSError, ET.ParseError, ValueError) as exc:
        raise VerifierInputError("xml_unreadable", f"{type(exc).__name__}: {exc}") from exc


def strip_document(text: str) -> str:
    """The text the published scorer parses: without leading BOMs, then without surrounding whitespace."""
    return text.lstrip(BOM).strip()


def _parse_stream(path: Path, max_bytes: int, suffixes: Sequence[str]) -> JUnitResults:
    """`_parse_text(strip_document(<the file>))`, streamed (trailing whitespace is no part of the XML)."""
    parser = ET.XMLParser(target=_TestCaseTarget(suffixes))
    utf8 = codecs.getincrementaldecoder("utf-8")("replace")
    total = 0
    at_start = True  # nothing but (leading BOMs and) whitespace fed yet
    with path.open("rb") as stream:
        while chunk := stream.read(READ_CHUNK):
            total += len(chunk)
            if total > max_bytes:
                raise VerifierInputError("xml_rejected", f"more than {max_bytes} bytes")
            text = utf8.decode(chunk)
            if total == len(chunk):
                text = text.lstrip(BOM)
            if at_start:
                text = text.lstrip()
                at_start = not text
            parser.feed(text)
    parser.feed(utf8.decode(b"", True))
    return parser.close()


def _parse_text(text: str, suffixes: Sequence[str]) -> JUnitResults:
    parser = ET.XMLParser(target=_TestCaseTarget(suffixes))
    parser.feed(text)
    return parser.close()


def parse_junit_text(text: str | bytes, suffixes: Sequence[str] = ()) -> JUnitResults:
    """Parse JUnit XML held in memory (same rules as parse_junit_file)."""
    decoded = strip_document(text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text)
    try:
        try:
            return _parse_text(decoded, suffixes)
        except ET.ParseError:
            return _parse_text(COMMENT_RE.sub("", decoded), suffixes)
    except VerifierInputError:
        raise
    except (ET.ParseError, ValueError) as exc:
        raise VerifierInputError("xml_unreadable", f"{type(exc).__name__}: {exc}") from exc


# --------------------------------------------------------------------------- expected_tests.json


@dataclass(frozen=True)
class Expected:
    """The expected categories and the recorded ``run`` and ``test`` statuses."""

    lists: dict[str, list[str]]
    test_patch: dict[str, str]
    run: dict[str, str]


def _id_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise VerifierInputError("expected_invalid", f"{where} must be a list of strings")
    return value


def _result_statuses(value: Any, where: str) -> dict[str, str]:
    """A result object's statuses; a missing list is empty, and a test in two lists has the status of the
    first in the order passed, failed, skipped (the published scorer looks them up in that order)."""
    if not isinstance(value, dict):
        raise VerifierInputError("expected_invalid", f"{where} must be an object")
    statuses: dict[str, str] = {}
    for key, status in RESULT_LISTS.items():
        for test_id in _id_list(value.get(key, []), f"{where}.{key}"):
            statuses.setdefault(test_id, status)
    return statuses


def parse_expected(data: Any) -> Expected:
    """Validate the decoded expected_tests.json, as leniently as the published scorer reads it: a missing
    list or result object is empty. A value of the wrong type (a list that is not a list of strings, a
    result that is not an object) makes the file invalid."""
    if not isinstance(data, dict):
        raise VerifierInputError("expected_invalid", "top level must be an object")
    lists = {cat: _id_list(data.get(f"{cat}_tests", []), f"{cat}_tests") for cat in CATEGORIES}
    return Expected(
        lists=lists,
        test_patch=_result_statuses(data.get("test_patch_result", {}), "test_patch_result"),
        run=_result_statuses(data.get("run_result", {}), "run_result"),
    )


def load_expected(path: Path) -> Expected:
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise VerifierInputError("expected_invalid", f"{type(exc).__name__}: {exc}") from exc
    return parse_expected(data)


# --------------------------------------------------------------------------- scoring


def _bounded(code: str, ids: Sequence[str]) -> list[str]:
    reasons = [f"{code}: {test_id}" for test_id in ids[:MAX_IDS_PER_REASON]]
    if len(ids) > MAX_IDS_PER_REASON:
        reasons.append(f"{code}: ... and {len(ids) - MAX_IDS_PER_REASON} more")
    return reasons


def validity_reasons(fix: Mapping[str, str], expected: Expected) -> list[str]:
    """Reasons the run is invalid (rules 1-4); empty when valid."""
    if not fix:
        return ["no_test_results"]
    before, base = expected.test_patch, expected.run
    regressed = sorted(t for t, s in fix.items() if s == FAIL and before.get(t, NONE) == PASS)
    fixed = any(s == PASS and before.get(t, NONE) != PASS for t, s in fix.items())
    anomalous = sorted(
        t
        for t, s in fix.items()
        if s == FAIL and before.get(t, NONE) in (NONE, SKIP) and base.get(t, NONE) == PASS
    )
    reasons = _bounded("p2p_regressed", regressed)
    if not fixed:
        reasons.append("no_fixed_test")
    return reasons + _bounded("skip_or_none_regressed", anomalous)


def categorize(fix: Mapping[str, str], test_patch: Mapping[str, str]) -> dict[str, set[str]]:
    """Tests PASS in the fix run, by their status in the test-patch run."""
    by_status: dict[str, set[str]] = {status: set() for status in (PASS, FAIL, SKIP, NONE)}
    for test_id, status in fix.items():
        if status == PASS:
            by_status[test_patch.get(test_id, NONE)].add(test_id)
    return {cat: by_status[STATUS_OF_CATEGORY[cat]] for cat in CATEGORIES}


def category_report(expected_ids: Iterable[str], landed_in: set[str]) -> dict[str, Any]:
    unique = list(dict.fromkeys(expected_ids))
    missing = [test_id for test_id in unique if test_id not in landed_in]
    return {
        "expected": len(unique),
        "landed": len(unique) - len(missing),
        "missing": missing[:MAX_MISSING_LISTED],
    }


def missing_reasons(categories: Mapping[str, Mapping[str, Any]]) -> list[str]:
    reasons = []
    for cat in CATEGORIES:
        info = categories[cat]
        missed = info["expected"] - info["landed"]
        if missed:
            reasons.append(f"expected_missing: {cat} {missed} of {info['expected']}")
    return reasons


def counts(fix: Mapping[str, str]) -> dict[str, int]:
    values = list(fix.values())
    return {"passed": values.count(PASS), "failed": values.count(FAIL), "skipped": values.count(SKIP)}


def empty_categories() -> dict[str, dict[str, Any]]:
    return {cat: {"expected": 0, "landed": 0, "missing": []} for cat in CATEGORIES}


def score(fix: Mapping[str, str], expected: Expected) -> dict[str, Any]:
    """The report for a fix run whose inputs were all readable."""
    reasons = validity_reasons(fix, expected)
    valid = not reasons
    landed = categorize(fix, expected.test_patch)
    categories = {cat: category_report(expected.lists[cat], landed[cat]) for cat in CATEGORIES}
    reasons += missing_reasons(categories)
    if not any(expected.lists[cat] for cat in CATEGORIES):
        reasons.append("expected_empty: no f2p/p2p/s2p/n2p test is listed")
    return {
        "resolved": valid and not reasons,
        "valid": valid,
        "reasons": reasons,
        "categories": categories,
        "counts": counts(fix),
    }


def failed_report(reasons: list[str], expected: Expected | None, fix: Mapping[str, str]) -> dict[str, Any]:
    """The report when an input is unusable: unresolved, every expected test missing."""
    categories = empty_categories()
    if expected is not None:
        categories = {cat: category_report(expected.lists[cat], set()) for cat in CATEGORIES}
    return {
        "resolved": False,
        "valid": False,
        "reasons": reasons,
        "categories": categories,
        "counts": counts(fix),
    }


# --------------------------------------------------------------------------- files and CLI


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file in the same directory and os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def build_report(
    xml: Path | None, expected_path: Path, abort: str | None, suffixes: Sequence[str] = ()
) -> tuple[dict[str, Any], int]:
    """The report, and how many parameterized test cases were ignored."""
    reasons: list[str] = [abort] if abort else []
    expected: Expected | None = None
    junit = JUnitResults()
    try:
        expected = load_expected(expected_path)
    except VerifierInputError as exc:
        reasons.append(exc.reason)
    if not abort and xml is not None:
        try:
            junit = parse_junit_file(xml, suffixes=suffixes)
        except VerifierInputError as exc:
            reasons.append(exc.reason)
    if reasons or expected is None:
        return failed_report(reasons, expected, junit.statuses), junit.ignored
    return score(junit.statuses, expected), junit.ignored


def summary(report: Mapping[str, Any], ignored: int) -> str:
    verdict = "RESOLVED" if report["resolved"] else "UNRESOLVED"
    c = report["counts"]
    lines = [
        f"junit_compare: {verdict} (valid={str(report['valid']).lower()})",
        f"  fix run: {c['passed']} passed, {c['failed']} failed, {c['skipped']} skipped"
        f" ({ignored} parameterized test cases ignored)",
    ]
    for cat in CATEGORIES:
        info = report["categories"][cat]
        lines.append(f"  {cat}: {info['landed']} of {info['expected']} expected landed")
        lines.extend(f"    missing: {test_id}" for test_id in info["missing"][:5])
    lines.extend(f"  reason: {reason}" for reason in report["reasons"])
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xml", type=Path, help="merged JUnit XML of the fix run")
    parser.add_argument("--expected", type=Path, required=True, help="expected_tests.json")
    parser.add_argument("--reward", type=Path, required=True, help="reward file to write (0 or 1)")
    parser.add_argument("--report", type=Path, help="report JSON to write")
    parser.add_argument("--abort", metavar="REASON", help="record REASON and score 0 without reading XML")
    parser.add_argument(
        "--strip-name-suffix",
        action="append",
        default=[],
        metavar="SUFFIX",
        help="a test-name suffix that names a target, not a parameter (e.g. [jvm]); taken off the name",
    )
    args = parser.parse_args(argv)
    if args.xml is None and args.abort is None:
        parser.error("--xml is required unless --abort is given")
    return args


def say(text: str) -> None:
    """Print without ever failing on an unencodable test name."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    try:
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
        print(text, flush=True)
    except (OSError, UnicodeError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    write_atomic(args.reward, "0\n")
    try:
        report, ignored = build_report(args.xml, args.expected, args.abort, args.strip_name_suffix)
    except Exception as exc:  # fail closed on anything unforeseen
        report, ignored = failed_report([f"internal_error: {type(exc).__name__}: {exc}"], None, {}), 0
    say(summary(report, ignored))
    if args.report is not None:
        write_atomic(args.report, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    if report["resolved"]:
        write_atomic(args.reward, "1\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
