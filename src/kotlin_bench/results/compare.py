"""Paired comparison of two agents on the tasks both ran: the tasks only one of them solves, the exact
McNemar test, and intervals of the difference of their resolve rates.

Per attempt k, each task both agents ran an attempt k of is one pair (resolved or not; an errored run
counts as unresolved, as in the headline rate):

- **discordant tasks**: solved by one agent only (`only_a`, `only_b`);
- **exact McNemar test**: the two-sided binomial test of the discordant counts against 1/2
  (`scipy.stats.binomtest`); 5 tasks all solved by one agent give p = 2 / 2**5 = 0.0625;
- **Newcombe's paired score interval** of the difference (method 10 of Newcombe, Statistics in Medicine
  17:2635-2650, 1998: the Wilson limits of each rate combined with the pairs' correlation); it does not
  collapse on small or uniform samples;
- **paired bootstrap interval**: percentile interval of the mean difference with tasks resampled with
  replacement (it can collapse: 5 tasks all solved by one agent give 100% to 100%).

Over attempts (agents with several attempts), each task's resolve rate over its attempts is compared: the
discordant tasks are those one agent solved in some attempt and the other in none; the test is the exact
sign test of the per-task differences (McNemar's test is its one-attempt case); the interval is the
paired bootstrap of the mean difference.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

from kotlin_bench.core.fsutil import atomic_path
from kotlin_bench.core.record import Status
from kotlin_bench.results.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, wilson_interval

OVER_ATTEMPTS = "over attempts"
NEWCOMBE = "Newcombe paired score"
BOOTSTRAP = "paired bootstrap, tasks resampled"
MCNEMAR = "exact McNemar"
SIGN_TEST = "exact sign test"


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """Agent a against agent b on the tasks both ran (one attempt, or every attempt)."""

    agent_a: str
    agent_b: str
    scope: str  # "attempt <k>" or "over attempts"
    tasks: int
    both: int
    only_a: int
    only_b: int
    neither: int
    rate_a: float
    rate_b: float
    difference: float
    ci_low: float
    ci_high: float
    ci_method: str
    bootstrap_low: float
    bootstrap_high: float
    p_value: float
    test: str
    only_a_tasks: list[str] = field(default_factory=list)
    only_b_tasks: list[str] = field(default_factory=list)

    @property
    def discordant(self) -> int:
        return self.only_a + self.only_b

    def row(self) -> dict[str, Any]:
        data = asdict(self)
        data["only_a_tasks"] = " ".join(self.only_a_tasks)
        data["only_b_tasks"] = " ".join(self.only_b_tasks)
        return data


COLUMNS = [f.name for f in Comparison.__dataclass_fields__.values()]


# --------------------------------------------------------------------------- the statistics


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value: the discordant pairs against a fair coin (1 without any)."""
    from scipy.stats import binomtest  # here: importing scipy.stats costs 0.5 s, and most readers never test

    n = only_a + only_b
    return 1.0 if n == 0 else float(binomtest(only_a, n, 0.5).pvalue)


def newcombe_paired_interval(both: int, only_a: int, only_b: int, neither: int) -> tuple[float, float]:
    """95% interval of rate_a - rate_b from a paired 2x2 table (Newcombe 1998, method 10, no continuity
    correction). The correlation term is 0 when a margin is empty, as the paper sets it."""
    n = both + only_a + only_b + neither
    if n == 0:
        return math.nan, math.nan
    p1, p2 = (both + only_a) / n, (both + only_b) / n
    l1, u1 = wilson_interval(both + only_a, n)
    l2, u2 = wilson_interval(both + only_b, n)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    phi = (both * neither - only_a * only_b) / math.sqrt(margins) if margins else 0.0
    delta = math.sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    epsilon = math.sqrt(max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2))
    difference = p1 - p2
    return max(-1.0, difference - delta), min(1.0, difference + epsilon)


def paired_bootstrap(
    a: np.ndarray, b: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """95% percentile interval of mean(a - b) with the pairs resampled with replacement."""
    import numpy as np

    diffs = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if diffs.size == 0:
        return math.nan, math.nan
    picks = np.random.default_rng(seed).integers(0, diffs.size, size=(resamples, diffs.size))
    low, high = np.quantile(diffs[picks].mean(axis=1), [0.025, 0.975])
    return float(low), float(high)


# --------------------------------------------------------------------------- from a summary


def solved(summary: pd.DataFrame, agent: str) -> pd.DataFrame:
    """task x attempt -> 1.0 (resolved) or 0.0 (unresolved or error) for one agent."""
    import pandas as pd

    runs = summary[summary["agent"] == agent]
    values = (runs["status"] == Status.RESOLVED).astype(float)
    frame = pd.DataFrame({"task": runs["task"], "attempt": runs["attempt"].astype(int), "solved": values})
    return frame.pivot_table(index="task", columns="attempt", values="solved", aggfunc="max")


def _tasks(mask: pd.Series) -> list[str]:
    return sorted(str(t) for t in mask[mask].index)


def compare_attempt(a: pd.Series, b: pd.Series, names: tuple[str, str], scope: str) -> Comparison:
    """One attempt: a and b map task -> 0/1 on the same tasks."""
    both = int(((a == 1) & (b == 1)).sum())
    only_a, only_b = (a == 1) & (b == 0), (a == 0) & (b == 1)
    neither = int(((a == 0) & (b == 0)).sum())
    n_a, n_b = int(only_a.sum()), int(only_b.sum())
    low, high = newcombe_paired_interval(both, n_a, n_b, neither)
    boot = paired_bootstrap(a.to_numpy(), b.to_numpy())
    return Comparison(
        agent_a=names[0],
        agent_b=names[1],
        scope=scope,
        tasks=len(a),
        both=both,
        only_a=n_a,
        only_b=n_b,
        neither=neither,
        rate_a=float(a.mean()),
        rate_b=float(b.mean()),
        difference=float(a.mean() - b.mean()),
        ci_low=low,
        ci_high=high,
        ci_method=NEWCOMBE,
        bootstrap_low=boot[0],
        bootstrap_high=boot[1],
        p_value=mcnemar_exact(n_a, n_b),
        test=MCNEMAR,
        only_a_tasks=_tasks(only_a),
        only_b_tasks=_tasks(only_b),
    )


def compare_over_attempts(a: pd.DataFrame, b: pd.DataFrame, names: tuple[str, str]) -> Comparison:
    """Every attempt: each task's rate over its attempts, a and b on the same tasks."""
    rate_a, rate_b = a.mean(axis=1), b.mean(axis=1)
    ever_a, ever_b = a.max(axis=1) == 1, b.max(axis=1) == 1
    only_a, only_b = ever_a & ~ever_b, ever_b & ~ever_a
    higher, lower = int((rate_a > rate_b).sum()), int((rate_a < rate_b).sum())
    boot = paired_bootstrap(rate_a.to_numpy(), rate_b.to_numpy())
    return Comparison(
        agent_a=names[0],
        agent_b=names[1],
        scope=OVER_ATTEMPTS,
        tasks=len(a),
        both=int((ever_a & ever_b).sum()),
        only_a=int(only_a.sum()),
        only_b=int(only_b.sum()),
        neither=int((~ever_a & ~ever_b).sum()),
        rate_a=float(rate_a.mean()),
        rate_b=float(rate_b.mean()),
        difference=float(rate_a.mean() - rate_b.mean()),
        ci_low=boot[0],
        ci_high=boot[1],
        ci_method=BOOTSTRAP,
        bootstrap_low=boot[0],
        bootstrap_high=boot[1],
        p_value=mcnemar_exact(higher, lower),
        test=SIGN_TEST,
        only_a_tasks=_tasks(only_a),
        only_b_tasks=_tasks(only_b),
    )


def compare(summary: pd.DataFrame, agent_a: str, agent_b: str) -> list[Comparison]:
    """agent_a against agent_b: one comparison per attempt both ran, then over attempts (when either ran
    more than one), each on the tasks both ran."""
    import pandas as pd

    known = sorted(set(summary["agent"]))
    for agent in (agent_a, agent_b):
        if agent not in known:
            raise ValueError(f"no runs of agent {agent!r} (agents: {', '.join(known) or 'none'})")
    a, b = solved(summary, agent_a), solved(summary, agent_b)
    names = (agent_a, agent_b)
    found = []
    for attempt in sorted(set(a.columns) & set(b.columns)):
        pair = pd.concat([a[attempt], b[attempt]], axis=1, keys=["a", "b"]).dropna()
        if len(pair):
            found.append(compare_attempt(pair["a"], pair["b"], names, f"attempt {attempt}"))
    common = a.index.intersection(b.index)
    if len(common) and max(len(a.columns), len(b.columns)) > 1:
        found.append(compare_over_attempts(a.loc[common], b.loc[common], names))
    return found


def all_pairs(summary: pd.DataFrame) -> list[Comparison]:
    """Every pair of agents of the summary, the one with the higher resolve rate first (then by name), so
    that differences read as gains."""
    rate = (summary["status"] == Status.RESOLVED).groupby(summary["agent"]).mean()
    agents = sorted(rate.index, key=lambda agent: (-rate[agent], agent))
    return [c for a, b in itertools.combinations(agents, 2) for c in compare(summary, a, b)]


def comparisons_frame(found: list[Comparison]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame([c.row() for c in found], columns=COLUMNS)


def write_comparisons(found: list[Comparison], path: Path) -> None:
    with atomic_path(path) as tmp:
        comparisons_frame(found).to_csv(tmp, index=False)


def read_comparisons(path: Path) -> list[Comparison]:
    import pandas as pd

    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"agent_a": str, "agent_b": str})
    found = []
    for record in frame.to_dict("records"):
        for key in ("only_a_tasks", "only_b_tasks"):
            value = record[key]
            record[key] = str(value).split() if isinstance(value, str) else []
        found.append(Comparison(**record))
    return found


# --------------------------------------------------------------------------- for people


def points(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{100 * value:+.1f} pts"


def interval(low: float, high: float) -> str:
    return "n/a" if math.isnan(low) else f"{100 * low:+.1f} to {100 * high:+.1f} pts"


def p_text(p: float) -> str:
    return f"{p:.4g}"


def _some(tasks: list[str], limit: int) -> str:
    more = f", ... (+{len(tasks) - limit})" if len(tasks) > limit else ""
    return ", ".join(tasks[:limit]) + more


def display_comparisons(found: list[Comparison], limit: int = 5) -> pd.DataFrame:
    """The comparison table of summary.md and the results site."""
    import pandas as pd

    rows = [
        {
            "a vs b": f"{c.agent_a} vs {c.agent_b}",
            "scope": c.scope,
            "tasks": c.tasks,
            "only a": c.only_a,
            "only b": c.only_b,
            "difference (a - b)": points(c.difference),
            "95% CI": f"{interval(c.ci_low, c.ci_high)} ({c.ci_method})",
            "95% CI (paired bootstrap)": interval(c.bootstrap_low, c.bootstrap_high),
            "p": f"{p_text(c.p_value)} ({c.test})",
            "tasks only a solves": _some(c.only_a_tasks, limit),
            "tasks only b solves": _some(c.only_b_tasks, limit),
        }
        for c in found
    ]
    return pd.DataFrame(rows)


def describe(c: Comparison) -> str:
    """One line: `oracle vs nop, attempt 1: 5 discordant tasks (5 only oracle, 0 only nop), ...`."""
    return (
        f"{c.agent_a} vs {c.agent_b}, {c.scope}: {c.tasks} tasks, {c.discordant} discordant "
        f"({c.only_a} only {c.agent_a}, {c.only_b} only {c.agent_b}); difference {points(c.difference)}, "
        f"95% CI {interval(c.ci_low, c.ci_high)} ({c.ci_method}), paired bootstrap "
        f"{interval(c.bootstrap_low, c.bootstrap_high)}; {c.test} p = {p_text(c.p_value)}"
    )
