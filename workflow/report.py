"""Results into tables people can trust and read.

- `summarize`: every run's result.json -> one tidy row per run (`results/summary.csv`, `SUMMARY_SCHEMA`);
  each non-resolved row gets a `reason` from the stable vocabulary `REASONS`;
- `rates`: resolve rates per (agent, model) or per (agent, model, repository): errors counted apart from
  unresolved runs, the rate with errors counted as unresolved and the rate without them, pass@k (unbiased
  estimator) when there are several attempts, and a 95% bootstrap interval that resamples tasks;
- `report_sections` + `render_markdown`: the headline and tables of `results/summary.md` (the HTML report
  renders the same sections).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workflow.dag import run_result

STATUSES = ("resolved", "unresolved", "error")
CATEGORIES = ("f2p", "p2p", "s2p", "n2p")

# The reason vocabulary, in order of precedence (the first that applies names the row).
REASONS: dict[str, str] = {
    "empty_patch": "the agent (or its prediction) changed nothing; the verifier was skipped",
    "patch_not_applied": "the predicted patch did not apply to the repository; the verifier was skipped",
    "agent_timeout": "the agent phase hit [agent].timeout_sec (the verifier still scored what it left)",
    "verifier_timeout": "the verifier phase hit [verifier].timeout_sec",
    "diff_unavailable": "the agent left a repository that cannot be diffed against the base commit",
    "agent_diff_not_applied": "the agent's diff did not apply in the fresh verifier container (e.g. paths outside the repository)",
    "verifier_tampered": "the verifier's reward disagreed with the host's re-scoring of the copied-out JUnit XML",
    "test_patch_failed": "the task's test.patch did not apply over the agent's changes; no test ran",
    "task_invalid": "the task's own files are unusable (expected_tests.json or task.env invalid, repo dir missing)",
    "verifier_failed": "the verifier could not read its inputs (JUnit XML rejected or unreadable, internal error)",
    "build_failed": "no JUnit results, and the test output reports a failed build or compilation",
    "no_test_results": "the test command produced no JUnit results (no build failure recognized in its output)",
    "p2p_regressed": "a test that passed before the fix fails after it",
    "no_fixed_test": "no test went from failing (or absent) to passing",
    "f2p_failed": "an expected fail-to-pass test did not pass",
    "expected_missing": "every f2p test passed, but an expected p2p/s2p/n2p test did not pass or did not run",
    "infrastructure": "status error: the harness or the engine failed on every retry (see reason_detail, error)",
    "other": "unresolved for a reason this vocabulary does not know (see reason_detail)",
}

# Raw codes (result.json `reason`, the verifier report's `reasons` up to the first ':') -> vocabulary.
RAW_CODES: dict[str, str] = {
    **{code: code for code in REASONS},
    "expected_invalid": "task_invalid",
    "expected_empty": "task_invalid",
    "task_env_missing": "task_invalid",
    "task_env_invalid": "task_invalid",
    "repo_dir_missing": "task_invalid",
    "xml_rejected": "verifier_failed",
    "xml_unreadable": "verifier_failed",
    "internal_error": "verifier_failed",
    "marker_failed": "verifier_failed",
    "skip_or_none_regressed": "p2p_regressed",
    "leftover_processes": "verifier_failed",
}
RUN_LEVEL = (
    "empty_patch",
    "patch_not_applied",
    "agent_timeout",
    "verifier_timeout",
    "diff_unavailable",
    "agent_diff_not_applied",
    "verifier_tampered",
)
BUILD_FAILURE_MARKERS = ("BUILD FAILED", "COMPILATION FAILED", "Compilation error", "compilation failed")
LOG_TAIL_BYTES = 1 << 20
MAX_DETAIL = 400

SUMMARY_SCHEMA: dict[str, str] = {
    "task": "string",
    "repository": "string",
    "agent": "string",
    "kind": "string",
    "model": "string",
    "attempt": "int64",
    "reward": "float64",
    "status": "string",
    "reason": "string",
    "reason_detail": "string",
    "error": "string",
    **{f"{c}_{k}": "Int64" for c in CATEGORIES for k in ("expected", "landed", "missing")},
    "agent_sec": "float64",
    "verifier_sec": "float64",
    "total_sec": "float64",
    "input_tokens": "Int64",
    "output_tokens": "Int64",
    "cost_usd": "float64",
    "agent_timed_out": "boolean",
    "harness_version": "string",
    "image_id": "string",
    "task_digest": "string",
    "verifier_digest": "string",
    "started_at": "string",
}
SUMMARY_COLUMNS = list(SUMMARY_SCHEMA)

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240611
RERUN = "snakemake --cores all --forcerun"


# --------------------------------------------------------------------------- reasons


def _raw_code(raw: str) -> str:
    """`expected_missing: f2p 1 of 2` -> `f2p_failed`; other codes through RAW_CODES (unknown: `other`)."""
    code, _, rest = str(raw).partition(":")
    code = code.strip()
    if code == "expected_missing":
        return "f2p_failed" if rest.split()[:1] == ["f2p"] else "expected_missing"
    return RAW_CODES.get(code, "other")


def _build_failed(run_dir: Path | None) -> bool:
    """Whether the tail of the verifier's test output reports a failed build or compilation."""
    if run_dir is None:
        return False
    log = run_dir / "verifier" / "test_output.log"
    try:
        with log.open("rb") as stream:
            stream.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
            tail = stream.read().decode("utf-8", errors="replace")
    except OSError:
        return False
    return any(marker in tail for marker in BUILD_FAILURE_MARKERS)


def _raw_reasons(result: dict[str, Any]) -> list[str]:
    reasons = (result.get("verifier") or {}).get("reasons")
    listed = [str(r) for r in reasons] if isinstance(reasons, list) else []
    own = result.get("reason")
    if own and (own in RUN_LEVEL or not listed):
        listed.insert(0, str(own))
    return listed


def classify(result: dict[str, Any], run_dir: Path | None = None) -> tuple[str | None, str | None]:
    """(reason, reason_detail) of a run: None for a resolved run; the raw codes go into the detail."""
    status = result.get("status")
    if status == "resolved":
        return None, None
    raw = _raw_reasons(result)
    detail = "; ".join(raw)[:MAX_DETAIL] or None
    if status == "error":
        return "infrastructure", detail
    codes = [_raw_code(r) for r in raw] or ["other"]
    reason = min(codes, key=list(REASONS).index)
    if reason == "no_test_results" and _build_failed(run_dir):
        reason = "build_failed"
    return reason, detail


# --------------------------------------------------------------------------- summary.csv


def _category_counts(verifier: dict[str, Any]) -> dict[str, int | None]:
    categories = verifier.get("categories") or {}
    row: dict[str, int | None] = {}
    for cat in CATEGORIES:
        counts = categories.get(cat) or {}
        expected, landed = counts.get("expected"), counts.get("landed")
        row[f"{cat}_expected"] = expected
        row[f"{cat}_landed"] = landed
        row[f"{cat}_missing"] = expected - landed if expected is not None and landed is not None else None
    return row


def summary_row(result: dict[str, Any], run_dir: Path | None = None) -> dict[str, Any]:
    """Flatten one result.json (its run directory holds the verifier's logs) into a summary row."""
    timings = result.get("timings") or {}
    usage = result.get("agent_result") or {}
    reason, detail = classify(result, run_dir)
    row = {col: result.get(col) for col in SUMMARY_COLUMNS}
    row.update(_category_counts(result.get("verifier") or {}))
    row.update({key: timings.get(key) for key in ("agent_sec", "verifier_sec", "total_sec")})
    if row["total_sec"] is None and timings:  # Harbor's trials time their phases only
        row["total_sec"] = round(sum(float(v) for v in timings.values() if v is not None), 2)
    row.update(
        reason=reason,
        reason_detail=detail,
        input_tokens=usage.get("n_input_tokens"),
        output_tokens=usage.get("n_output_tokens"),
        cost_usd=usage.get("cost_usd"),
    )
    return row


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.astype(SUMMARY_SCHEMA)


def _read_result(path: Path) -> dict[str, Any]:
    result = json.loads(path.read_text(encoding="utf-8"))
    if result.get("status") not in STATUSES:
        raise ValueError(f"{path}: status {result.get('status')!r} is not one of {', '.join(STATUSES)}")
    return result


def summarize(result_paths: Iterable[Path]) -> pd.DataFrame:
    """One row per run, typed by SUMMARY_SCHEMA, sorted by agent, task, attempt."""
    rows = [summary_row(_read_result(Path(p)), Path(p).parent) for p in result_paths]
    frame = _typed(pd.DataFrame(rows, columns=SUMMARY_COLUMNS))
    return frame.sort_values(["agent", "task", "attempt"], ignore_index=True)


def read_summary(path: Path) -> pd.DataFrame:
    """Read summary.csv back with its schema (an empty cell is missing, whatever the column)."""
    frame = pd.read_csv(path, dtype=SUMMARY_SCHEMA, keep_default_na=False, na_values=[""])
    missing = [c for c in SUMMARY_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} are missing; rerun rule summary")
    return frame[SUMMARY_COLUMNS]


# --------------------------------------------------------------------------- rates


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with n attempts, c of them resolved: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(runs: Sequence[int], resolved: Sequence[int], k: int) -> float:
    """pass@k averaged over the tasks with at least k attempts (NaN when there are none)."""
    values = [pass_at_k(int(n), int(c), k) for n, c in zip(runs, resolved, strict=True) if n >= k]
    return float(np.mean(values)) if values else math.nan


def bootstrap_interval(
    resolved: Sequence[int],
    runs: Sequence[int],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of sum(resolved) / sum(runs) with tasks (the pairs) resampled with replacement."""
    hits, counts = np.asarray(resolved, dtype=float), np.asarray(runs, dtype=float)
    if hits.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, hits.size, size=(resamples, hits.size))
    estimates = hits[picks].sum(axis=1) / counts[picks].sum(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def _per_task(group: pd.DataFrame) -> pd.DataFrame:
    return group.groupby("task", sort=True)["status"].agg(
        runs="size", resolved=lambda s: int((s == "resolved").sum())
    )


def _rate_row(group: pd.DataFrame, max_k: int, resamples: int, seed: int) -> dict[str, Any]:
    status = group["status"]
    total, errors = len(group), int((status == "error").sum())
    resolved = int((status == "resolved").sum())
    tasks = _per_task(group)
    low, high = bootstrap_interval(tasks["resolved"], tasks["runs"], resamples, seed)
    row: dict[str, Any] = {
        "tasks": len(tasks),
        "total": total,
        "resolved": resolved,
        "unresolved": int((status == "unresolved").sum()),
        "errors": errors,
        "resolve_rate": round(resolved / total, 4),
        "resolve_rate_excl_errors": round(resolved / (total - errors), 4) if total > errors else math.nan,
        "ci95_low": round(low, 4),
        "ci95_high": round(high, 4),
    }
    if max_k > 1:
        for k in range(1, max_k + 1):
            row[f"pass@{k}"] = round(mean_pass_at_k(tasks["runs"], tasks["resolved"], k), 4)
    return row


def rates(
    summary: pd.DataFrame,
    by: Sequence[str] = ("agent", "model"),
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> pd.DataFrame:
    """One row per group: counts, both rates, the bootstrap interval and (attempts > 1) pass@1..pass@max."""
    keys = list(by)
    frame = summary.assign(model=summary["model"].fillna(""))
    max_k = int(frame.groupby(["agent", "task"]).size().max()) if len(frame) else 0
    rows = [
        {**dict(zip(keys, key, strict=True)), **_rate_row(group, max_k, resamples, seed)}
        for key, group in frame.groupby(keys, sort=True, dropna=False)
    ]
    columns = [*keys, *_rate_columns(max_k)]
    return pd.DataFrame(rows, columns=columns)


def _rate_columns(max_k: int) -> list[str]:
    base = ["tasks", "total", "resolved", "unresolved", "errors", "resolve_rate"]
    base += ["resolve_rate_excl_errors", "ci95_low", "ci95_high"]
    return base + ([f"pass@{k}" for k in range(1, max_k + 1)] if max_k > 1 else [])


def rates_by_repository(summary: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
    return rates(summary, by=("agent", "model", "repository"), **kwargs)


def read_rates(path: Path) -> pd.DataFrame:
    """Read rates.csv or rates_by_repository.csv back (no model: an empty string)."""
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"agent": str, "repository": str})
    return frame.assign(model=frame["model"].fillna("").astype(str))


# --------------------------------------------------------------------------- markdown


@dataclass
class Section:
    """A titled part of the report: paragraphs (inline markdown), an optional table and code block."""

    title: str
    lines: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None
    code: str | None = None


def percent(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{100 * value:.1f}%"


def agent_label(agent: str, model: Any) -> str:
    return f"{agent} ({model})" if isinstance(model, str) and model else agent


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def headline(row: pd.Series) -> str:
    """`oracle: 4/4 resolved (100.0%), 0 errors`."""
    label = agent_label(row["agent"], row["model"])
    text = f"{label}: {row['resolved']}/{row['total']} resolved ({percent(row['resolve_rate'])})"
    return f"{text}, {plural(int(row['errors']), 'error')}"


def error_runs(summary: pd.DataFrame) -> pd.DataFrame:
    return summary[summary["status"] == "error"]


def rerun_command(errors: pd.DataFrame) -> str:
    paths = [run_result(r.agent, r.task, int(r.attempt)) for r in errors.itertuples()]
    return " ".join([RERUN, *paths])


def error_note(errors: pd.DataFrame, inline: int = 3) -> str:
    """`N runs errored and are counted as unresolved in the rate; rerun them with ...`."""
    n = len(errors)
    verb, them = ("errored and is", "it") if n == 1 else ("errored and are", "them")
    command = rerun_command(errors) if n <= inline else f"{RERUN} <the {n} paths listed under Errors>"
    return f"{plural(n, 'run')} {verb} counted as unresolved in the rate; rerun {them} with `{command}`"


def display_rates(table: pd.DataFrame) -> pd.DataFrame:
    """The rates table for people: `3/4`, percentages, the interval, pass@k."""
    shown = pd.DataFrame({"agent": table["agent"], "model": table["model"].replace("", "-")})
    if "repository" in table:
        shown["repository"] = table["repository"]
    shown["resolved / total"] = [f"{r}/{t}" for r, t in zip(table["resolved"], table["total"], strict=True)]
    shown["unresolved"] = table["unresolved"]
    shown["errors"] = table["errors"]
    shown["rate (errors = unresolved)"] = table["resolve_rate"].map(percent)
    shown["rate excl. errors"] = table["resolve_rate_excl_errors"].map(percent)
    shown["95% CI (tasks resampled)"] = [
        f"{percent(lo)} - {percent(hi)}" for lo, hi in zip(table["ci95_low"], table["ci95_high"], strict=True)
    ]
    for col in (c for c in table.columns if c.startswith("pass@")):
        shown[col] = table[col].map(percent)
    return shown


def reason_counts(summary: pd.DataFrame, max_tasks: int = 5) -> pd.DataFrame:
    """Non-resolved runs per (agent, reason), with a few of their tasks."""
    failed = summary[summary["status"] != "resolved"]
    rows = [
        {
            "agent": agent,
            "reason": reason,
            "runs": len(group),
            "tasks": _some(sorted(set(group["task"])), max_tasks),
        }
        for (agent, reason), group in failed.groupby(["agent", "reason"], sort=True)
    ]
    return pd.DataFrame(rows, columns=["agent", "reason", "runs", "tasks"])


def _some(items: list[str], limit: int) -> str:
    more = f", ... (+{len(items) - limit})" if len(items) > limit else ""
    return ", ".join(items[:limit]) + more


def error_table(errors: pd.DataFrame, width: int = 160) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "agent": errors["agent"],
            "task": errors["task"],
            "attempt": errors["attempt"],
            "error type": errors["reason_detail"],
            "message": errors["error"].fillna("").str.slice(0, width),
        }
    )


def headlines(summary: pd.DataFrame, overall: pd.DataFrame) -> list[str]:
    lines = [headline(row) for _, row in overall.iterrows()]
    errors = error_runs(summary)
    return lines + ([error_note(errors)] if len(errors) else [])


def report_sections(
    summary: pd.DataFrame,
    overall: pd.DataFrame,
    by_repository: pd.DataFrame,
    verdicts: Sequence[str] = (),
) -> list[Section]:
    """The parts of summary.md and report.html, headline first."""
    sections = [
        Section("Headline", headlines(summary, overall)),
        Section("Resolve rate per agent", table=display_rates(overall)),
        Section("Resolve rate per repository", table=display_rates(by_repository)),
    ]
    if verdicts:
        sections.append(Section("Reproduction", list(verdicts)))
    reasons = reason_counts(summary)
    if len(reasons):
        sections.append(Section("Why runs were not resolved", table=reasons))
    errors = error_runs(summary)
    if len(errors):
        sections.append(
            Section(
                "Errors",
                [
                    "These runs failed on every retry; they count as unresolved. The command below reruns them."
                ],
                error_table(errors),
                rerun_command(errors),
            )
        )
    return sections


def _md_cell(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    numeric = [pd.api.types.is_numeric_dtype(frame[c]) for c in frame.columns]
    lines = [
        "| " + " | ".join(_md_cell(c) for c in frame.columns) + " |",
        "| " + " | ".join("---:" if num else "---" for num in numeric) + " |",
    ]
    lines += ["| " + " | ".join(_md_cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def render_markdown(sections: Sequence[Section], title: str = "kotlin-bench results") -> str:
    parts = [f"# {title}"]
    for section in sections:
        parts.append(f"## {section.title}")
        if section.title == "Headline":
            parts.append("\n".join(f"- {line}" for line in section.lines))
        else:
            parts += section.lines
        if section.table is not None:
            parts.append(markdown_table(section.table))
        if section.code:
            parts.append(f"```\n{section.code}\n```")
    return "\n\n".join(parts) + "\n"


# --------------------------------------------------------------------------- files


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)


def write_text(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
