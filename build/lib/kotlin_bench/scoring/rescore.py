"""The host's own scoring of a copied-out verifier report: a reward of 1 stands only if it agrees.

Inside the container, the tests' code runs beside the verifier and could change its files or its reward.
The host scores the copied-out `junit.xml` again, read with `kotlin_bench.scoring.junit` and judged with
the verifier's own rules (`junit_compare.score`) against the task's committed `expected_tests.json`
(never the container's copy).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.scoring import junit
from kotlin_bench.scoring.expected import ExpectedError, load_expected
from kotlin_bench.scoring.verifier import junit_compare as jc


def rescore(task_dir: Path, verifier_out: Path, suffixes: Sequence[str] = ()) -> tuple[float, list[str]]:
    """(reward, reasons) of the copied-out report, scored on the host against the expected lists of the
    task directory; `suffixes` are the task's test-name suffixes the scorer takes off."""
    xml = verifier_out / names.JUNIT_XML
    if not xml.is_file():
        return 0.0, ["no junit.xml was copied out"]
    try:
        expected = load_expected(task_dir / names.EXPECTED_TESTS)
        statuses = junit.read_file(xml, suffixes).statuses
    except ExpectedError as exc:
        return 0.0, [str(exc)]
    except junit.ReadError as exc:
        return 0.0, [exc.reason]
    report = jc.score(statuses, expected)
    return (1.0 if report["resolved"] else 0.0), [str(r) for r in report["reasons"]]


def verdict_problem(
    task_dir: Path, verifier_out: Path, container_reward: float, suffixes: Sequence[str] = ()
) -> str | None:
    """Why the container's reward cannot stand (the host's scoring disagrees), or None."""
    if container_reward != 1.0:
        return None
    host, reasons = rescore(task_dir, verifier_out, suffixes)
    if host == 1.0:
        return None
    detail = "; ".join(reasons[:3]) or "unresolved"
    return f"reward.txt says 1 but the host's re-scoring of junit.xml says 0 ({detail})"
