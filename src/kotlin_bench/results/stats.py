"""Resolve rates and their uncertainty: counts per (agent, model[, repository]), errors counted apart, the
rate with errors counted as unresolved and without them, pass@k (unbiased estimator) with several
attempts, the 95% Wilson score interval of the rate (the interval the tables show: it does not collapse on
small or uniform samples), a 95% bootstrap interval that resamples tasks (kept in rates.csv), score
intervals for the difference of two independent proportions (Newcombe's hybrid score interval), and what
the runs cost: tokens, dollars and agent time."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from kotlin_bench.core.record import Status
from kotlin_bench.results.summary import one_identity

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240611
Z95 = 1.959963984540054  # the standard normal's 97.5% quantile


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task with n attempts, c of them resolved: 1 - C(n-c, k) / C(n, k)."""
    if not 0 < k <= n or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 < k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def mean_pass_at_k(runs: Sequence[int], resolved: Sequence[int], k: int) -> float:
    """pass@k averaged over the tasks with at least k attempts (NaN when there are none)."""
    import numpy as np

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
    import numpy as np

    hits, counts = np.asarray(resolved, dtype=float), np.asarray(runs, dtype=float)
    if hits.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, hits.size, size=(resamples, hits.size))
    estimates = hits[picks].sum(axis=1) / counts[picks].sum(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(estimates, [tail, 1.0 - tail])
    return float(low), float(high)


def wilson_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval of a proportion successes / n (no continuity correction).

    `successes` may be fractional (a mean over attempts); n must be positive."""
    if n <= 0 or not 0 <= successes <= n:
        raise ValueError(
            f"Wilson interval needs n > 0 and 0 <= successes <= n (successes={successes}, n={n})"
        )
    p = successes / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2.0 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1.0 - p) / n + z * z / (4.0 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(x1: float, n1: float, x2: float, n2: float, z: float = Z95) -> tuple[float, float]:
    """The interval of p1 - p2 (p1 = x1/n1, p2 = x2/n2, independent samples) by Newcombe's hybrid score
    method without continuity correction ("method 10" of Newcombe, Statistics in Medicine 17:873-890,
    1998): the Wilson limits of each proportion, combined. Good coverage at small n and near 0 or 1,
    where the Wald interval fails; it needs only the two counts."""
    p1, p2 = x1 / n1, x2 / n2
    low1, high1 = wilson_interval(x1, n1, z)
    low2, high2 = wilson_interval(x2, n2, z)
    difference = p1 - p2
    low = difference - math.sqrt((p1 - low1) ** 2 + (high2 - p2) ** 2)
    high = difference + math.sqrt((high1 - p1) ** 2 + (p2 - low2) ** 2)
    return low, high


def rate_interval(resolve_rate: float, tasks: int) -> tuple[float, float]:
    """The rate's 95% Wilson score interval with n = the number of tasks (several attempts of a task are
    averaged first, so repeated attempts do not pass for more tasks); NaN without tasks."""
    if tasks <= 0 or math.isnan(resolve_rate):
        return math.nan, math.nan
    return wilson_interval(resolve_rate * tasks, tasks)


USAGE_COLUMNS = ("input_tokens", "cache_tokens", "output_tokens", "cost_usd", "agent_sec")


def _usage(group: pd.DataFrame) -> dict[str, Any]:
    """Totals of the usage columns (missing where no run reports them) and the mean agent time per run."""
    import numpy as np
    import pandas as pd

    row: dict[str, Any] = {}
    for column in USAGE_COLUMNS:
        values = pd.to_numeric(group[column], errors="coerce").dropna() if column in group else pd.Series()
        row[f"{column}_total"] = round(float(values.sum()), 4) if len(values) else math.nan
    agent_sec = pd.to_numeric(group["agent_sec"], errors="coerce").dropna() if "agent_sec" in group else []
    row["agent_sec_mean"] = round(float(np.mean(agent_sec)), 2) if len(agent_sec) else math.nan
    return row


def _per_task(group: pd.DataFrame) -> pd.DataFrame:
    return group.groupby("task", sort=True)["status"].agg(
        runs="size", resolved=lambda s: int((s == Status.RESOLVED).sum())
    )


def _rate_row(group: pd.DataFrame, max_k: int, resamples: int, seed: int) -> dict[str, Any]:
    status = group["status"]
    total, errors = len(group), int((status == Status.ERROR).sum())
    resolved = int((status == Status.RESOLVED).sum())
    retrieval = group["retrieval"].fillna(False).astype(bool) if "retrieval" in group else status != status
    flagged, flagged_resolved = int(retrieval.sum()), int((retrieval & (status == Status.RESOLVED)).sum())
    tasks = _per_task(group)
    low, high = bootstrap_interval(tasks["resolved"], tasks["runs"], resamples, seed)
    wilson_low, wilson_high = rate_interval(tasks["resolved"].sum() / tasks["runs"].sum(), len(tasks))
    row: dict[str, Any] = {
        "tasks": len(tasks),
        "total": total,
        "resolved": resolved,
        "unresolved": int((status == Status.UNRESOLVED).sum()),
        "errors": errors,
        "resolve_rate": round(resolved / total, 4),
        "resolve_rate_excl_errors": round(resolved / (total - errors), 4) if total > errors else math.nan,
        # runs whose agent phase fetched what may be the task's fix (the egress record), and the rate with
        # those runs counted as unresolved
        "retrieval_flagged": flagged,
        "resolve_rate_without_retrieval": round((resolved - flagged_resolved) / total, 4),
        "ci95_low": round(low, 4),
        "ci95_high": round(high, 4),
        "wilson_low": round(wilson_low, 4),
        "wilson_high": round(wilson_high, 4),
        **_usage(group),
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
    import pandas as pd

    keys = list(by)
    frame = one_identity(summary)
    frame = frame.assign(model=frame["model"].astype(object).fillna(""))
    max_k = int(frame.groupby(["agent", "task"]).size().max()) if len(frame) else 0
    rows = [
        {**dict(zip(keys, key, strict=True)), **_rate_row(group, max_k, resamples, seed)}
        for key, group in frame.groupby(keys, sort=True, dropna=False)
    ]
    columns = [*keys, *_rate_columns(max_k)]
    return pd.DataFrame(rows, columns=columns)


def _rate_columns(max_k: int) -> list[str]:
    base = ["tasks", "total", "resolved", "unresolved", "errors", "resolve_rate"]
    base += [
        "resolve_rate_excl_errors",
        "retrieval_flagged",
        "resolve_rate_without_retrieval",
        "ci95_low",
        "ci95_high",
        "wilson_low",
        "wilson_high",
    ]
    base += [f"{c}_total" for c in USAGE_COLUMNS] + ["agent_sec_mean"]
    return base + ([f"pass@{k}" for k in range(1, max_k + 1)] if max_k > 1 else [])


def rates_by_repository(summary: pd.DataFrame, **kwargs: Any) -> pd.DataFrame:
    return rates(summary, by=("agent", "model", "repository"), **kwargs)


def read_rates(path: Path) -> pd.DataFrame:
    """Read rates.csv or rates_by_repository.csv back (no model: an empty string)."""
    import pandas as pd

    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"agent": str, "repository": str})
    return frame.assign(model=frame["model"].astype(object).fillna("").astype(str))
