"""A task's expected lists (`tests/expected_tests.json`), read on the host with the verifier's own rules.

The verifier (`junit_compare.py`, in task containers, Python stdlib only) is the one implementation of
what an expected list is: its categories (`CATEGORIES`), its result lists (`RESULT_LISTS`) and its
validation (`parse_expected`). The host imports the same module, so the task loader, the host's
re-scoring and the validation all accept and reject exactly what the verifier does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kotlin_bench.scoring.verifier import junit_compare as jc

CATEGORIES: tuple[str, ...] = jc.CATEGORIES  # f2p, p2p, s2p, n2p
LIST_KEYS: tuple[str, ...] = tuple(f"{cat}_tests" for cat in CATEGORIES)
RESULT_KEYS: tuple[str, ...] = ("run_result", "test_patch_result")
RESULT_LISTS: tuple[str, ...] = tuple(jc.RESULT_LISTS)  # passed_tests, failed_tests, skipped_tests
Expected = jc.Expected


class ExpectedError(ValueError):
    """An expected_tests.json the verifier would reject; the message names the file and the field."""


def read_expected(path: Path) -> tuple[dict[str, Any], Expected]:
    """The decoded document and its validated form, as the verifier reads it."""
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
        return data, jc.parse_expected(data)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ExpectedError(f"{path}: expected valid JSON: {exc}") from None
    except jc.VerifierInputError as exc:
        raise ExpectedError(f"{path}: {exc.reason}") from None


def load_expected(path: Path) -> Expected:
    return read_expected(path)[1]
