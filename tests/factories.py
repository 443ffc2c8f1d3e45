"""Synthetic run records for the tests of the record, the summary, the statistics and the reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kotlin_bench.core import names
from kotlin_bench.core.codec import to_json
from kotlin_bench.core.record import RunResult, Status, Usage
from kotlin_bench.results.summary import summarize

CATEGORIES_OK = {
    "f2p": {"expected": 2, "landed": 2, "missing": []},
    "p2p": {"expected": 5, "landed": 5, "missing": []},
    "s2p": {"expected": 0, "landed": 0, "missing": []},
    "n2p": {"expected": 1, "landed": 1, "missing": []},
}


def verifier_report(reasons: list[str], f2p_landed: int = 2) -> dict[str, Any]:
    categories = {k: dict(v) for k, v in CATEGORIES_OK.items()}
    categories["f2p"]["landed"] = f2p_landed
    return {"resolved": not reasons, "valid": True, "reasons": reasons, "categories": categories}


def make_result(
    task: str, agent: str = "oracle", attempt: int = 1, status: str = "resolved", **fields: Any
) -> RunResult:
    """A run record as the runner writes it, with any of its result.json keys set (values as the file has
    them, or typed)."""
    data: dict[str, Any] = {
        "task": task,
        "repository": f"acme/{task.split('-')[0]}",
        "agent": agent,
        "kind": agent,
        "model": None,
        "attempt": attempt,
        "status": Status(status).value,
        "reward": {"resolved": 1.0, "unresolved": 0.0}.get(status),
        "image_id": "sha256:" + "ab" * 32,
        "timings": {"agent_sec": 1.5, "verifier_sec": 10.25, "total_sec": 12.0},
        "verifier": verifier_report([]) if status == "resolved" else {},
    }
    return RunResult.from_dict(data | {key: to_json(value) for key, value in fields.items()})


def write_results(root: Path, results: list[RunResult]) -> list[Path]:
    """Write each result to its run path under `root`; returns the paths in order."""
    paths = []
    for result in results:
        path = root / names.verify_result(result.agent, result.task, result.attempt)
        result.write(path)
        paths.append(path)
    return paths


def mixed_results() -> list[RunResult]:
    """oracle resolves 4 tasks; `agent` (model m1) has each kind of failure, one run errored."""
    tasks = ["calc-1", "calc-2", "slug-1", "units-1"]
    results = [make_result(t) for t in tasks]
    results += [
        make_result("calc-1", "agent", model="m1", usage=Usage(input_tokens=1200, output_tokens=300, cost_usd=0.042)),
        make_result(
            "calc-2", "agent", status="unresolved", model="m1", reason="f2p_failed",
            reason_detail="expected_missing: f2p 1 of 2",
            verifier=verifier_report(["expected_missing: f2p 1 of 2"], f2p_landed=1),
        ),
        make_result(
            "slug-1", "agent", status="unresolved", model="m1", reason="verifier_timeout",
            reason_detail="verifier_timeout",
        ),
        make_result(
            "units-1", "agent", status="error", model="m1", reason="infrastructure", reason_detail="RunError",
            error="the engine went away",
            timings={},
        ),
    ]  # fmt: skip
    return results


def mixed_summary(root: Path):
    return summarize(write_results(root, mixed_results()))


def partial_predictions_results(tasks: int = 5, covered: int = 2) -> list[RunResult]:
    """Issue 31's predictions agent `my-model`: a file with lines for `covered` of `tasks` tasks (the first
    resolved), the others recorded as a run without a model (as records written before an agent's identity
    came from its config were), plus oracle on every task."""
    ids = [f"calc-{i}" for i in range(1, tasks + 1)]
    results = [make_result(t) for t in ids]
    for i, task in enumerate(ids):
        if i >= covered:
            results.append(
                make_result(task, "my-model", status="unresolved", kind="predictions", reason="no_prediction")
            )
        else:
            status = "resolved" if i == 0 else "unresolved"
            reason = None if i == 0 else "patch_not_applied"
            results.append(
                make_result(
                    task, "my-model", status=status, kind="predictions", model="my-model", reason=reason
                )
            )
    return results
