"""JUnit XML read on the host (with junitparser), into the statuses the verifier's rules work on.

In task containers the verifier reads reports with the Python standard library only
(`junit_compare.parse_junit_file`). On the host (re-scoring a copied-out report, the phases of a task's
validation) they are read with junitparser, and every test gets the verifier's id and status rules:
`junit_compare.make_test_id` (a parameterized invocation is ignored, target suffixes are taken off),
the worst status of a repeated id (`junit_compare.record`), and a `skipped` child winning over a failure.
Bytes that are not UTF-8 are replaced and a document that does not parse is tried again without its
comments, as the verifier does; DOCTYPE declarations are refused. A report the verifier accepts is read
to the same statuses (`tests/test_junit.py` holds the two readers against each other).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from xml.etree.ElementTree import ParseError

from junitparser import Error, Failure, JUnitXml, JUnitXmlError, Skipped, TestCase
from junitparser.junitparser import etree

from kotlin_bench.scoring.verifier import junit_compare as jc

JUnitResults = jc.JUnitResults
ReadError = jc.VerifierInputError


def _status(case: TestCase) -> str:
    results = case.result
    if any(isinstance(r, Skipped) for r in results):
        return jc.SKIP
    if any(isinstance(r, Failure | Error) for r in results):
        return jc.FAIL
    return jc.PASS


def _root(text: str) -> etree.Element:
    """The document's root element (junitparser's parser); a `<testsuite>` root is wrapped as junitparser
    does, any other root is read for its test cases all the same (as the verifier does)."""
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise ReadError("xml_rejected", "DOCTYPE/ENTITY declarations are not allowed")
    text = jc.strip_document(text)
    try:
        root = etree.fromstring(text.encode("utf-8"))
    except ParseError:
        root = etree.fromstring(jc.COMMENT_RE.sub("", text).encode("utf-8"))
    if root.tag in ("testsuites", "testsuite"):
        return JUnitXml.fromroot(root)._elem
    return root


def read_text(text: str | bytes, suffixes: Sequence[str] = ()) -> JUnitResults:
    """The statuses of a JUnit XML document held in memory."""
    decoded = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    try:
        root = _root(decoded)
    except ReadError:
        raise
    except (ParseError, JUnitXmlError, ValueError) as exc:
        raise ReadError("xml_unreadable", f"{type(exc).__name__}: {exc}") from exc
    results = JUnitResults()
    for element in root.iter("testcase"):
        case = TestCase.fromelem(element)
        test_id = jc.make_test_id(element.get("classname"), element.get("name"), suffixes)
        if test_id is None:
            results.ignored += 1
        else:
            jc.record(results.statuses, test_id, _status(case))
    return results


def read_file(path: Path, suffixes: Sequence[str] = (), max_bytes: int = jc.MAX_XML_BYTES) -> JUnitResults:
    """The statuses of a (merged) JUnit XML file; ReadError when it is too large or unreadable."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise ReadError("xml_rejected", f"{size} bytes exceeds the cap of {max_bytes}")
        return read_text(path.read_bytes(), suffixes)
    except OSError as exc:
        raise ReadError("xml_unreadable", f"{type(exc).__name__}: {exc}") from exc
