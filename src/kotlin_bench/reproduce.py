"""Reproduction: our outcomes against a reference table, task by task or repository by repository.

config.yaml:

    reproduce:
      reference: oracle        # `oracle`, `nop`, a CSV path (relative to the workflow directory),
                               # `leaderboard:<setup>` (a published leaderboard row, see below),
                               # or a mapping {agent name: reference}
      agents: [oracle]         # which agents are compared (default: every agent; not with a mapping)
      tolerance: 0.05          # rate references: allowed |ours - reference| outside our 95% interval

A reference CSV holds per-task outcomes (`task,resolved`; resolved is 1/0, true/false, yes/no or
resolved/unresolved; an optional `repository` column) or per-repository rates (`repository,rate`, rate
in [0, 1]). The built-in references are `oracle` (every task of our summary resolved) and `nop` (none).

Per task, ours is resolved when at least half of its attempts resolved it (an error counts as unresolved);
a task whose attempts all errored never agrees. Per repository, a rate reference agrees when it lies in our
95% bootstrap interval or within `tolerance` of our rate. Only tasks (repositories) present on both sides
are judged; the others are listed as not compared.

A leaderboard row (`leaderboard:Claude Code + Opus 4.7 xhigh`, rows in `reference/leaderboard.csv`, see
`kotlin_bench.leaderboard`) gives only counts: resolved of 105 submitted. The comparison is made on the
leaderboard's task set only: runs of other tasks are left out and named, tasks of the set that were not
run make the comparison NOT COMPARABLE (naming them; a rate on fewer tasks is not the row's rate), and
errored runs are counted both ways: as unresolved (the primary verdict) and excluded (n shrinks). Our
resolved count and the row's are two independent binomial proportions; the 95% interval of their
difference is Newcombe's hybrid score interval (`kotlin_bench.stats.newcombe_interval`). The verdict is
REPRODUCED when the interval contains 0, HIGHER / LOWER when it lies above / below 0. With several
attempts each attempt is judged, and the mean count (on the set's n, which is conservative) gives the
primary verdict, with the spread across attempts beside the published single number. Tokens and wall
time are set beside the row's (tokens in millions; whether the row's figure is per run or per task is
not certain, so both readings are shown).

Per agent: `results/reproduce/<agent>.csv` (the comparison; `level` is `task` or `repository`; for a
leaderboard row, `part` is `row`, `rate`, `usage` or `task`) and `results/reproduce/<agent>.md` (verdict
line, differing tasks, per-repository deltas; for a leaderboard row the rates, attempts, tokens and time,
and the task set). `reproduce_agent` makes both; the aggregate rule and `kotlin-bench reproduce` call it.
"""

from __future__ import annotations

import json
import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pandas as pd

from kotlin_bench import leaderboard, names
from kotlin_bench.fsutil import write_atomic
from kotlin_bench.record import Status
from kotlin_bench.render import Section, percent, plural, render_markdown
from kotlin_bench.stats import bootstrap_interval, newcombe_interval
from kotlin_bench.summary import write_table

BUILTIN = ("oracle", "nop")
DEFAULT_TOLERANCE = 0.05
TRUE = frozenset({"1", "1.0", "true", "yes", "resolved"})
FALSE = frozenset({"0", "0.0", "false", "no", "unresolved"})
MAX_LISTED = 20

COMPARISON_SCHEMA: dict[str, str] = {
    "level": "string",
    "task": "string",
    "repository": "string",
    "ours_resolved": "Int64",
    "ours_runs": "Int64",
    "ours": "float64",
    "reference": "float64",
    "delta": "float64",
    "ci95_low": "float64",
    "ci95_high": "float64",
    "agree": "boolean",
    "note": "string",
}
COMPARISON_COLUMNS = list(COMPARISON_SCHEMA)


class ReproduceError(ValueError):
    """A reference table or the `reproduce` config is unusable; the message names the file or key."""


# --------------------------------------------------------------------------- config


class ReferenceKind(StrEnum):
    TASKS = "tasks"  # per-task outcomes or per-repository rates: oracle, nop, a CSV
    LEADERBOARD = "leaderboard"  # a published leaderboard row: counts only


def reference_kind(spec: str) -> ReferenceKind:
    return ReferenceKind.LEADERBOARD if leaderboard.is_reference(spec) else ReferenceKind.TASKS


def reference_label(spec: str) -> str:
    return spec if spec in BUILTIN or leaderboard.is_reference(spec) else Path(spec).name


@dataclass(frozen=True)
class ReproducePlan:
    """Which agent is compared with which reference (`oracle`, `nop`, a CSV path or `leaderboard:<row>`);
    `root` is the checkout whose reference/leaderboard.csv and dataset specification a row is read with."""

    references: dict[str, str] = field(default_factory=dict)
    tolerance: float = DEFAULT_TOLERANCE
    root: str = "."

    @classmethod
    def from_config(cls, raw: Any, agents: Sequence[str], root: Path) -> ReproducePlan:
        if not raw:
            return cls()
        if not isinstance(raw, dict) or "reference" not in raw:
            raise ReproduceError(
                "config reproduce: expected {reference: oracle | nop | <csv> | {agent: ...}}"
            )
        wanted = _wanted(raw, agents)
        unknown = sorted(set(wanted) - set(agents))
        if unknown:
            # A config for other agents may keep the bundled references: those agents are not run here.
            warnings.warn(
                f"config reproduce: no agent named {', '.join(unknown)} is configured (configured: "
                f"{', '.join(agents)}); their references are left out",
                stacklevel=2,
            )
            wanted = {agent: spec for agent, spec in wanted.items() if agent in agents}
        tolerance = float(raw.get("tolerance", DEFAULT_TOLERANCE))
        if not 0.0 <= tolerance <= 1.0:
            raise ReproduceError(f"config reproduce.tolerance: {tolerance} is not in [0, 1]")
        references = {agent: _resolve(spec, root) for agent, spec in wanted.items()}
        return cls(references, tolerance, str(root))

    @classmethod
    def from_params(cls, params: dict[str, Any], root: Path) -> ReproducePlan:
        return cls(
            dict(params.get("references") or {}), float(params.get("tolerance", DEFAULT_TOLERANCE)), str(root)
        )

    def to_params(self) -> dict[str, Any]:
        """The rule parameters: without the checkout's location (moving it must rerun nothing); reference
        CSVs inside the checkout are relative to it."""
        return {"references": dict(self.references), "tolerance": self.tolerance}

    def reference_files(self) -> list[str]:
        """The files the verdicts are computed from (rule inputs): CSVs; for a leaderboard row, the table
        and the specification that defines its task set."""
        files = {spec for spec in self.references.values() if reference_kind(spec) is ReferenceKind.TASKS}
        if any(leaderboard.is_reference(spec) for spec in self.references.values()):
            files |= {names.LEADERBOARD_CSV, names.BENCHMARK_SPEC}  # relative to the checkout, as rule inputs
        return sorted(files - set(BUILTIN))

    def outputs(self, suffix: str) -> list[str]:
        return [names.reproduce_output(agent, suffix) for agent in self.references]


def _wanted(raw: dict[str, Any], agents: Sequence[str]) -> dict[str, str]:
    reference = raw["reference"]
    if isinstance(reference, dict):
        return {str(agent): str(spec) for agent, spec in reference.items()}
    if not isinstance(reference, str) or not reference:
        raise ReproduceError(
            "config reproduce.reference: expected oracle, nop, a CSV path, leaderboard:<row> or a mapping"
        )
    return {agent: reference for agent in raw.get("agents") or agents}


def _resolve(spec: str, root: Path) -> str:
    if spec in BUILTIN:
        return spec
    if leaderboard.is_reference(spec):
        # checked now: an unknown row fails the configuration, listing the known rows
        row = leaderboard.find_row(
            leaderboard.load_rows(root / names.LEADERBOARD_CSV), leaderboard.row_name(spec)
        )
        return row.reference
    path = _reference_path(spec, root)
    if not path.is_file():
        raise ReproduceError(f"config reproduce.reference: {path} is not a file (nor oracle / nop)")
    return spec  # relative to the checkout when relative (reproduce_agent reads it there)


def _reference_path(spec: str, root: Path) -> Path:
    """A reference CSV's path: `spec` as given, relative to the checkout `root` (an absolute one stays)."""
    return root / spec


# --------------------------------------------------------------------------- references


@dataclass(frozen=True)
class Reference:
    """Per-task outcomes (`task`, `resolved`, `repository`) or per-repository rates (`repository`, `rate`)."""

    label: str
    tasks: pd.DataFrame | None = None
    repositories: pd.DataFrame | None = None


def builtin_reference(name: str, ours: pd.DataFrame) -> Reference:
    """`oracle` resolves every task of our summary, `nop` none."""
    tasks = ours[["task", "repository"]].drop_duplicates("task").reset_index(drop=True)
    return Reference(name, tasks.assign(resolved=name == "oracle"))


def _truth(value: str, where: str) -> bool:
    text = value.strip().lower()
    if text in TRUE or text in FALSE:
        return text in TRUE
    raise ReproduceError(f"{where}: resolved {value!r} is not one of 1/0, true/false, yes/no")


def _task_table(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    duplicated = sorted(set(frame.loc[frame["task"].duplicated(), "task"]))
    if duplicated:
        raise ReproduceError(f"{path}: tasks listed twice: {duplicated[:MAX_LISTED]}")
    resolved = [_truth(v, f"{path} task {t}") for t, v in zip(frame["task"], frame["resolved"], strict=True)]
    repository = frame.get("repository", pd.NA)
    return pd.DataFrame({"task": frame["task"], "repository": repository, "resolved": resolved})


def _rate_table(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    try:
        rate = frame["rate"].astype(float)
    except ValueError as exc:
        raise ReproduceError(f"{path}: rate is not a number ({exc})") from None
    if not rate.between(0.0, 1.0).all():
        raise ReproduceError(f"{path}: a rate is outside [0, 1] (write 0.75, not 75)")
    if frame["repository"].duplicated().any():
        raise ReproduceError(f"{path}: a repository is listed twice")
    return pd.DataFrame({"repository": frame["repository"], "rate": rate})


def read_reference(path: Path) -> Reference:
    """A reference CSV: `task,resolved[,repository]` or `repository,rate`."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip().lower() for c in frame.columns]
    frame = frame.apply(lambda col: col.str.strip())
    if {"task", "resolved"} <= set(frame.columns):
        return Reference(path.name, tasks=_task_table(frame, path))
    if {"repository", "rate"} <= set(frame.columns):
        return Reference(path.name, repositories=_rate_table(frame, path))
    raise ReproduceError(
        f"{path}: expected columns task,resolved or repository,rate; found {list(frame.columns)}"
    )


def load_reference(spec: str, ours: pd.DataFrame) -> Reference:
    return builtin_reference(spec, ours) if spec in BUILTIN else read_reference(Path(spec))


# --------------------------------------------------------------------------- comparison


def our_tasks(ours: pd.DataFrame) -> pd.DataFrame:
    """Per task of one agent: repository, runs, resolved and errored attempts."""
    status = ours["status"]
    frame = ours.assign(is_resolved=status == Status.RESOLVED, is_error=status == Status.ERROR)
    return (
        frame.groupby("task", sort=True)
        .agg(
            repository=("repository", "first"),
            runs=("status", "size"),
            resolved=("is_resolved", "sum"),
            errors=("is_error", "sum"),
        )
        .reset_index()
    )


def _task_row(task: str, mine: pd.Series | None, ref: pd.Series | None) -> dict[str, Any]:
    row: dict[str, Any] = {"level": "task", "task": task, "agree": pd.NA, "note": ""}
    if mine is not None:
        runs, resolved, errors = int(mine["runs"]), int(mine["resolved"]), int(mine["errors"])
        row.update(
            repository=mine["repository"], ours_resolved=resolved, ours_runs=runs, ours=resolved / runs
        )
        row["note"] = f"{errors} of {runs} attempts errored" if errors else ""
    if ref is not None:
        row["reference"] = 1.0 if ref["resolved"] else 0.0
        if mine is None:
            row["repository"] = ref["repository"]
    if mine is None:
        row["note"] = "not run"
    elif ref is None:
        row["note"] = "not in the reference"
    elif int(mine["errors"]) == int(mine["runs"]):
        row.update(agree=False, note="all attempts errored")
    else:
        row["agree"] = (row["ours"] >= 0.5) == bool(ref["resolved"])
    row["delta"] = row.get("ours", math.nan) - row.get("reference", math.nan)
    return row


def compare_tasks(mine: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    ours = mine.set_index("task")
    ref = reference.set_index("task")
    tasks = sorted(set(ours.index) | set(ref.index))
    rows = [
        _task_row(t, ours.loc[t] if t in ours.index else None, ref.loc[t] if t in ref.index else None)
        for t in tasks
    ]
    return pd.DataFrame(rows)


def _repository_row(repository: str, mine: pd.DataFrame, reference: float, agree: Any) -> dict[str, Any]:
    resolved, runs = int(mine["resolved"].sum()), int(mine["runs"].sum())
    low, high = bootstrap_interval(mine["resolved"], mine["runs"])
    ours = resolved / runs
    return {
        "level": "repository",
        "repository": repository,
        "ours_resolved": resolved,
        "ours_runs": runs,
        "ours": ours,
        "reference": reference,
        "delta": ours - reference,
        "ci95_low": low,
        "ci95_high": high,
        "agree": agree,
        "note": "",
    }


def repositories_from_tasks(mine: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """Per-repository deltas over the tasks judged on both sides."""
    judged = tasks[tasks["agree"].notna()].set_index("task")
    common = mine[mine["task"].isin(judged.index)]
    rows = []
    for repository, group in common.groupby("repository", sort=True):
        rows_of = judged.loc[group["task"]]
        agree = bool(rows_of["agree"].astype(bool).all())
        rows.append(_repository_row(repository, group, float(rows_of["reference"].mean()), agree))
    return pd.DataFrame(rows)


def compare_rates(mine: pd.DataFrame, reference: pd.DataFrame, tolerance: float) -> pd.DataFrame:
    ref = reference.set_index("repository")["rate"]
    rows = []
    for repository in sorted(set(mine["repository"]) | set(ref.index)):
        group = mine[mine["repository"] == repository]
        if repository not in ref.index:
            rows.append(
                {**_repository_row(repository, group, math.nan, pd.NA), "note": "not in the reference"}
            )
        elif group.empty:
            rows.append({"level": "repository", "repository": repository, "reference": ref[repository]})
            rows[-1].update(agree=pd.NA, note="not run")
        else:
            row = _repository_row(repository, group, float(ref[repository]), pd.NA)
            inside = row["ci95_low"] <= row["reference"] <= row["ci95_high"]
            row["agree"] = bool(inside or abs(row["delta"]) <= tolerance + 1e-12)
            rows.append(row)
    return pd.DataFrame(rows)


def compare(ours: pd.DataFrame, reference: Reference, tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """The comparison of one agent's summary rows with a reference (COMPARISON_SCHEMA)."""
    mine = our_tasks(ours)
    if reference.tasks is not None:
        tasks = compare_tasks(mine, reference.tasks)
        frames = [tasks, repositories_from_tasks(mine, tasks)]
    else:
        frames = [compare_rates(mine, reference.repositories, tolerance)]
    filled = [f for f in frames if not f.empty] or [pd.DataFrame(columns=COMPARISON_COLUMNS)]
    frame = pd.concat(filled, ignore_index=True)
    frame = frame.reindex(columns=COMPARISON_COLUMNS).astype(COMPARISON_SCHEMA)
    return frame.assign(note=frame["note"].replace("", pd.NA))


def read_comparison(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=COMPARISON_SCHEMA, keep_default_na=False, na_values=[""])


# --------------------------------------------------------------------------- verdict and report


def _level(comparison: pd.DataFrame) -> str:
    return "task" if (comparison["level"] == "task").any() else "repository"


def _noun(level: str, n: int) -> str:
    return plural(n, "task") if level == "task" else (f"{n} repository" if n == 1 else f"{n} repositories")


def _names(keys: Sequence[str]) -> str:
    more = f", ... (+{len(keys) - MAX_LISTED})" if len(keys) > MAX_LISTED else ""
    return ", ".join(keys[:MAX_LISTED]) + more


def verdict(comparison: pd.DataFrame) -> str:
    """`REPRODUCED: 4/4 tasks agree` or `NOT REPRODUCED: 2 tasks differ: a, b`."""
    level = _level(comparison)
    rows = comparison[comparison["level"] == level]
    judged = rows[rows["agree"].notna()]
    if judged.empty:
        return f"NOT REPRODUCED: no {level} in common with the reference"
    key = "task" if level == "task" else "repository"
    differ = judged[~judged["agree"].astype(bool)]
    if differ.empty:
        return f"REPRODUCED: {len(judged)}/{_noun(level, len(judged))} agree"
    verb = "differs" if len(differ) == 1 else "differ"
    return f"NOT REPRODUCED: {_noun(level, len(differ))} {verb}: {_names(list(differ[key]))}"


def _outcome(resolved: Any, runs: Any) -> str:
    return "" if pd.isna(runs) else f"{resolved}/{runs} resolved"


def _differing_tasks(tasks: pd.DataFrame) -> pd.DataFrame:
    differ = tasks[tasks["agree"].notna() & ~tasks["agree"].fillna(True).astype(bool)]
    return pd.DataFrame(
        {
            "task": differ["task"],
            "repository": differ["repository"],
            "ours": [
                _outcome(r, n) for r, n in zip(differ["ours_resolved"], differ["ours_runs"], strict=True)
            ],
            "reference": differ["reference"].map(lambda v: "resolved" if v == 1.0 else "unresolved"),
            "note": differ["note"],
        }
    )


def _agree_text(value: Any) -> str:
    return "-" if pd.isna(value) else ("yes" if value else "NO")


def _points(value: float) -> str:
    return "" if pd.isna(value) else f"{100 * value:+.1f} pts"


def repository_deltas(repositories: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "repository": repositories["repository"],
            "ours": [
                f"{_outcome(r, n)} ({percent(o)})" if not pd.isna(n) else ""
                for r, n, o in zip(
                    repositories["ours_resolved"],
                    repositories["ours_runs"],
                    repositories["ours"],
                    strict=True,
                )
            ],
            "reference": repositories["reference"].map(percent),
            "delta": repositories["delta"].map(_points),
            "95% CI (ours)": [
                "" if pd.isna(lo) else f"{percent(lo)} - {percent(hi)}"
                for lo, hi in zip(repositories["ci95_low"], repositories["ci95_high"], strict=True)
            ],
            "agree": repositories["agree"].map(_agree_text),
            "note": repositories["note"],
        }
    )


def _not_compared(comparison: pd.DataFrame) -> list[str]:
    level = _level(comparison)
    rows = comparison[(comparison["level"] == level) & comparison["agree"].isna()]
    key = "task" if level == "task" else "repository"
    lines = []
    for note in ("not run", "not in the reference"):
        keys = list(rows.loc[rows["note"] == note, key])
        if keys:
            lines.append(f"{_noun(level, len(keys))} {note}: {_names(keys)}")
    return lines


@dataclass(frozen=True)
class Verdict:
    """One agent's reproduction verdict, computed once by the aggregate step and read by the report."""

    agent: str
    reference: str
    text: str
    comparison: str  # the comparison CSV it was computed from
    kind: str = ReferenceKind.TASKS  # how that CSV reads (ReferenceKind)

    @property
    def line(self) -> str:
        return f"{self.agent} vs {self.reference}: {self.text}"


def judge(agent: str, spec: str, comparison: pd.DataFrame, comparison_path: str) -> Verdict:
    return Verdict(agent, reference_label(spec), verdict(comparison), comparison_path)


def write_verdicts(verdicts: Sequence[Verdict], path: Path) -> None:
    write_atomic(path, json.dumps([asdict(v) for v in verdicts], indent=2) + "\n")


def read_verdicts(path: Path) -> list[Verdict]:
    return [Verdict(**entry) for entry in json.loads(Path(path).read_text(encoding="utf-8"))]


def reproduction_sections(verdict_: Verdict, comparison: pd.DataFrame) -> list[Section]:
    tasks = comparison[comparison["level"] == "task"]
    repositories = comparison[comparison["level"] == "repository"]
    rule = (
        "per task: ours resolved when at least half of its attempts resolved it"
        if len(tasks)
        else "per repository: the reference rate lies in our 95% interval or within the tolerance"
    )
    lines = [verdict_.text, f"agent `{verdict_.agent}` against reference `{verdict_.reference}`; {rule}."]
    sections = [Section("Verdict", lines)]
    differ = _differing_tasks(tasks)
    if len(differ):
        sections.append(Section("Tasks that differ", table=differ))
    if len(repositories):
        sections.append(Section("Per-repository deltas", table=repository_deltas(repositories)))
    skipped = _not_compared(comparison)
    if skipped:
        sections.append(Section("Not compared", skipped))
    return sections


def render_reproduction(verdict_: Verdict, comparison: pd.DataFrame) -> str:
    """The page of a verdict (`results/reproduce/<agent>.md`), either kind of reference."""
    return render_markdown(sections_of(verdict_, comparison), _title(verdict_))


# --------------------------------------------------------------------------- a leaderboard row


class Call(StrEnum):
    """The verdict against a leaderboard row."""

    REPRODUCED = "REPRODUCED"  # the 95% interval of the difference contains 0
    HIGHER = "HIGHER"  # ... lies above 0
    LOWER = "LOWER"  # ... lies below 0
    NOT_COMPARABLE = "NOT COMPARABLE"  # not the row's task set, or not all of it was run


class Basis(StrEnum):
    ERRORS_UNRESOLVED = "errors as unresolved"
    ERRORS_EXCLUDED = "errors excluded"


class Part(StrEnum):
    ROW = "row"  # the published row
    RATE = "rate"  # our resolved count against the row's, per basis and attempt
    USAGE = "usage"  # tokens, cost, time beside the row's
    TASK = "task"  # a task of the set not run or errored, or a run left out


MEAN = "mean"
MILLION = 1_000_000
LEADERBOARD_SCHEMA: dict[str, str] = {
    "part": "string",
    "basis": "string",
    "attempt": "string",
    "task": "string",
    "measure": "string",
    "ours_resolved": "float64",
    "ours_n": "float64",
    "ours": "float64",
    "reference_resolved": "float64",
    "reference_n": "float64",
    "reference": "float64",
    "difference": "float64",
    "ci95_low": "float64",
    "ci95_high": "float64",
    "call": "string",
    "note": "string",
}
LEADERBOARD_COLUMNS = list(LEADERBOARD_SCHEMA)


@dataclass(frozen=True)
class LeaderboardReference:
    """A published row and the task set it was evaluated on."""

    row: leaderboard.Row
    tasks: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.row.reference


def leaderboard_reference(spec: str, root: Path = Path(".")) -> LeaderboardReference:
    rows = leaderboard.load_rows(root / names.LEADERBOARD_CSV)
    row = leaderboard.find_row(rows, leaderboard.row_name(spec))
    return LeaderboardReference(row, tuple(leaderboard.task_set(root / names.BENCHMARK_SPEC)))


@dataclass(frozen=True)
class _Attempt:
    """One attempt's runs of the set: how many ran, resolved, errored, and which tasks were not run."""

    attempt: int
    runs: int
    resolved: int
    errors: int
    missing: tuple[str, ...]


def _attempts(in_set: pd.DataFrame, wanted: Sequence[str]) -> list[_Attempt]:
    found = []
    for attempt, runs in in_set.groupby("attempt", sort=True):
        status, ran = runs["status"], set(runs["task"])
        missing = tuple(t for t in wanted if t not in ran)
        found.append(
            _Attempt(
                int(attempt),
                len(runs),
                int((status == Status.RESOLVED).sum()),
                int((status == Status.ERROR).sum()),
                missing,
            )
        )
    return found


def _call(low: float, high: float) -> Call:
    if low > 0:
        return Call.HIGHER
    if high < 0:
        return Call.LOWER
    return Call.REPRODUCED


def _rate(
    basis: Basis, attempt: str, resolved: float, n: float, row: leaderboard.Row, problem: str | None
) -> dict[str, Any]:
    """One line of the comparison: resolved of n against the row's, with the interval and call."""
    record: dict[str, Any] = {
        "part": Part.RATE,
        "basis": basis,
        "attempt": attempt,
        "ours_resolved": resolved,
        "ours_n": n,
        "ours": resolved / n if n else math.nan,
        "reference_resolved": row.resolved,
        "reference_n": row.submitted,
        "reference": row.resolved / row.submitted,
        "note": problem,
    }
    record["difference"] = record["ours"] - record["reference"]
    if problem is None and n <= 0:
        problem = record["note"] = "every run errored"
    if problem is None:
        low, high = newcombe_interval(resolved, n, row.resolved, row.submitted)
        record.update(ci95_low=low, ci95_high=high, call=_call(low, high))
    else:
        record["call"] = Call.NOT_COMPARABLE
    return record


def _set_problem(
    row: leaderboard.Row, wanted: Sequence[str], ours: pd.DataFrame, in_set: pd.DataFrame
) -> str | None:
    """Why no attempt can be compared at all (None: each attempt is judged on its own)."""
    if len(wanted) != row.submitted:
        return f"the row evaluated {row.submitted} tasks, the leaderboard's set here has {len(wanted)}"
    if in_set.empty:
        seen = sorted(set(ours["task"]))
        return (
            f"none of the leaderboard's {len(wanted)} tasks was run (the summary has "
            f"{plural(len(seen), 'task')} of this agent: {_names(seen) or 'none'})"
        )
    return None


def _missing_note(item: _Attempt, size: int) -> str | None:
    if not item.missing:
        return None
    return (
        f"{len(item.missing)} of the leaderboard's {size} tasks not run in attempt {item.attempt}: "
        f"{_names(list(item.missing))}"
    )


def _rate_lines(
    attempts: list[_Attempt], size: int, row: leaderboard.Row, problem: str | None
) -> list[dict[str, Any]]:
    lines = []
    for item in attempts:
        why = problem or _missing_note(item, size)
        n = item.runs if item.missing else size
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, str(item.attempt), item.resolved, n, row, why))
        lines.append(
            _rate(Basis.ERRORS_EXCLUDED, str(item.attempt), item.resolved, n - item.errors, row, why)
        )
    if len(attempts) > 1:
        incomplete = [item for item in attempts if item.missing]
        why = problem or (_missing_note(incomplete[0], size) if incomplete else None)
        resolved = statistics.fmean(item.resolved for item in attempts)
        kept = statistics.fmean(size - item.errors for item in attempts)
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, MEAN, resolved, size, row, why))
        lines.append(_rate(Basis.ERRORS_EXCLUDED, MEAN, resolved, kept, row, why))
    return lines


def _task_lines(in_set: pd.DataFrame, attempts: list[_Attempt], left_out: list[str]) -> list[dict[str, Any]]:
    lines = [
        {"part": Part.TASK, "attempt": str(item.attempt), "task": task, "note": "not run"}
        for item in attempts
        for task in item.missing
    ]
    errored = in_set[in_set["status"] == Status.ERROR].sort_values(["attempt", "task"])
    lines += [
        {
            "part": Part.TASK,
            "attempt": str(run.attempt),
            "task": run.task,
            "note": f"errored ({run.reason_detail if isinstance(run.reason_detail, str) else 'error'})",
        }
        for run in errored.itertuples()
    ]
    lines += [
        {"part": Part.TASK, "task": task, "note": "not in the leaderboard's set: left out"}
        for task in left_out
    ]
    return lines


def _per_attempt(in_set: pd.DataFrame, values: pd.Series) -> tuple[float, int]:
    """The mean over attempts of the per-attempt sum of `values` (NaN where none was reported), and how
    many runs reported one."""
    reported = values.notna()
    if not reported.any():
        return math.nan, 0
    sums = values[reported].groupby(in_set.loc[reported, "attempt"]).sum()
    return float(sums.sum() / in_set["attempt"].nunique()), int(reported.sum())


def _elapsed(runs: pd.DataFrame) -> float:
    """First start to last finish of the runs (seconds); a run's finish is its start plus total_sec."""
    start = pd.to_datetime(runs["started_at"], utc=True, errors="coerce", format="ISO8601")
    finish = start + pd.to_timedelta(runs["total_sec"].fillna(0.0), unit="s")
    if start.isna().all():
        return math.nan
    return float((finish.max() - start.min()).total_seconds())


def _usage_lines(in_set: pd.DataFrame, row: leaderboard.Row, size: int) -> list[dict[str, Any]]:
    if in_set.empty:
        return []
    k = in_set["attempt"].nunique()
    runs = len(in_set)
    inputs, cache, outputs = (
        in_set[c].astype("Float64") for c in ("input_tokens", "cache_tokens", "output_tokens")
    )
    every = (inputs + outputs).astype(float)
    uncached = (inputs - cache.fillna(0) + outputs).astype(float)
    lines = []
    per = "per attempt, mean of the attempts" if k > 1 else "one run of the set"
    for measure, values in (
        ("tokens (M): input (cache reads included) + output", every),
        ("tokens (M): input without cache reads + output", uncached),
    ):
        total, reported = _per_attempt(in_set, values)
        lines.append(
            {
                "measure": measure,
                "ours": total / MILLION,
                "reference": row.tokens_m,
                "note": f"{per}; {reported} of {runs} runs reported tokens; if the row's "
                f"figure is per task: ours is {total / MILLION / size:.3f} M per task",
            }
        )
    cost, reported = _per_attempt(in_set, in_set["cost_usd"])
    lines.append(
        {
            "measure": "cost (USD)",
            "ours": cost,
            "note": f"{per}; {reported} of {runs} runs reported cost; not published",
        }
    )
    agent, reported = _per_attempt(in_set, in_set["agent_sec"])
    lines.append(
        {
            "measure": "wall time (s): sum of the agent phases",
            "ours": agent,
            "reference": row.latency_sec,
            "note": f"{per}, as if one task ran at a time; the row's is the whole run's wall time",
        }
    )
    lines.append(
        {
            "measure": "wall time (s): first start to last finish",
            "ours": _elapsed(in_set),
            "reference": row.latency_sec,
            "note": f"{'all attempts' if k > 1 else 'the runs'} of the set, at the concurrency they ran with",
        }
    )
    return [{"part": Part.USAGE, **line} for line in lines]


def compare_leaderboard(ours: pd.DataFrame, reference: LeaderboardReference) -> pd.DataFrame:
    """One agent's summary rows against a leaderboard row, on the row's task set (LEADERBOARD_SCHEMA)."""
    row, wanted = reference.row, reference.tasks
    in_set = ours[ours["task"].isin(set(wanted))]
    left_out = sorted(set(ours["task"]) - set(wanted))
    attempts = _attempts(in_set, wanted)
    problem = _set_problem(row, wanted, ours, in_set)
    published = {
        "part": Part.ROW,
        "measure": row.setup,
        "reference_resolved": row.resolved,
        "reference_n": row.submitted,
        "reference": row.resolved / row.submitted,
        "ours_n": len(wanted),
        "note": f"evaluated {row.date}; {row.source}",
    }
    lines = [published, *_rate_lines(attempts, len(wanted), row, problem)]
    if problem is not None and not attempts:
        lines.append(_rate(Basis.ERRORS_UNRESOLVED, "", 0, 0, row, problem))
    lines += _usage_lines(in_set, row, len(wanted)) + _task_lines(in_set, attempts, left_out)
    frame = pd.DataFrame(lines).reindex(columns=LEADERBOARD_COLUMNS)
    return frame.astype(LEADERBOARD_SCHEMA)


def read_leaderboard_comparison(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=LEADERBOARD_SCHEMA, keep_default_na=False, na_values=[""])


def _count(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _fraction(resolved: float, n: float) -> str:
    return f"{_count(resolved)}/{_count(n)}"


def _pts(value: float) -> str:
    return f"{100 * value:+.1f}"


def _judged(line: pd.Series) -> str:
    """`REPRODUCED: 88/105 resolved against the published 90/105 (-1.9 pts, 95% CI -11.8 to +8.0)`."""
    if line["call"] == Call.NOT_COMPARABLE:
        return f"{Call.NOT_COMPARABLE}: {line['note']}"
    return (
        f"{line['call']}: {_fraction(line['ours_resolved'], line['ours_n'])} resolved against the published "
        f"{_fraction(line['reference_resolved'], line['reference_n'])} ({_pts(line['difference'])} pts, "
        f"95% CI {_pts(line['ci95_low'])} to {_pts(line['ci95_high'])})"
    )


def _primary(rates: pd.DataFrame, basis: Basis) -> pd.Series:
    lines = rates[rates["basis"] == basis]
    mean = lines[lines["attempt"] == MEAN]
    return (mean if len(mean) else lines).iloc[0]


def _spread(rates: pd.DataFrame) -> list[float]:
    lines = rates[(rates["basis"] == Basis.ERRORS_UNRESOLVED) & (rates["attempt"] != MEAN)]
    return [float(v) for v in lines["ours_resolved"]] if len(lines) > 1 else []


def leaderboard_verdict(comparison: pd.DataFrame) -> str:
    """The verdict line: the primary call (errors as unresolved; the mean with several attempts), then
    the call with errors excluded when errors changed n, and the spread across attempts."""
    rates = comparison[comparison["part"] == Part.RATE]
    first = _primary(rates, Basis.ERRORS_UNRESOLVED)
    text = _judged(first)
    if first["call"] == Call.NOT_COMPARABLE:
        return text
    spread = _spread(rates)
    if first["attempt"] == MEAN:
        text = text.replace(": ", f": mean of {len(spread)} attempts, ", 1)
    excluded = _primary(rates, Basis.ERRORS_EXCLUDED)
    if excluded["ours_n"] != first["ours_n"]:
        text += (
            f"; with errored runs excluded: {excluded['call']}, "
            f"{_fraction(excluded['ours_resolved'], excluded['ours_n'])} ({_pts(excluded['difference'])} pts, "
            f"95% CI {_pts(excluded['ci95_low'])} to {_pts(excluded['ci95_high'])})"
        )
    if spread:
        text += (
            f"; resolved per attempt {min(spread):.0f}-{max(spread):.0f} (sd {statistics.stdev(spread):.1f})"
        )
    return text


def _rates_table(rates: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "basis": rates["basis"],
            "attempt": rates["attempt"],
            "ours": [
                f"{_fraction(r, n)} ({percent(o)})" if n else "-"
                for r, n, o in zip(rates["ours_resolved"], rates["ours_n"], rates["ours"], strict=True)
            ],
            "published": [
                f"{_fraction(r, n)} ({percent(v)})"
                for r, n, v in zip(
                    rates["reference_resolved"], rates["reference_n"], rates["reference"], strict=True
                )
            ],
            "difference": [("" if pd.isna(d) else f"{_pts(d)} pts") for d in rates["difference"]],
            "95% CI (Newcombe)": [
                "" if pd.isna(lo) else f"{_pts(lo)} to {_pts(hi)} pts"
                for lo, hi in zip(rates["ci95_low"], rates["ci95_high"], strict=True)
            ],
            "verdict": rates["call"],
        }
    )


def _usage_value(measure: str, value: float) -> str:
    if pd.isna(value):
        return "-"
    if measure.startswith("tokens"):
        return f"{value:.2f} M ({round(value * MILLION):,} tokens)"
    if measure.startswith("wall time"):
        return leaderboard.format_duration(value)
    return f"{value:.2f}"


def _usage_table(usage: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "measure": usage["measure"],
            "ours": [_usage_value(m, v) for m, v in zip(usage["measure"], usage["ours"], strict=True)],
            "published": [
                _usage_value(m, v) for m, v in zip(usage["measure"], usage["reference"], strict=True)
            ],
            "ours / published": [
                "" if pd.isna(o) or pd.isna(r) or not r else f"{o / r:.2f}"
                for o, r in zip(usage["ours"], usage["reference"], strict=True)
            ],
            "note": usage["note"],
        }
    )


def _task_set_lines(comparison: pd.DataFrame) -> list[str]:
    row = comparison[comparison["part"] == Part.ROW].iloc[0]
    tasks = comparison[comparison["part"] == Part.TASK]
    size = int(row["ours_n"])
    excluded = ", ".join(f"`{t}`" for t in leaderboard.EXCLUDED)
    lines = [
        f"The comparison uses exactly the leaderboard's {size} tasks: the benchmark's tasks without "
        f"{excluded} (an inference: every row submitted {size} tasks, and the benchmark had those "
        f"{size} before that task was added)."
    ]
    for note, what in (("not run", "not run"), ("not in the leaderboard's set: left out", "left out")):
        chosen = tasks[tasks["note"] == note]
        if len(chosen):
            label = (
                f"{plural(len(chosen), 'run')} {what}"
                if what == "left out"
                else f"{plural(len(chosen), 'task')} {what}"
            )
            lines.append(f"{label}: {_names([_with_attempt(r) for r in chosen.itertuples()])}")
    errored = tasks[tasks["note"].str.startswith("errored", na=False)]
    if len(errored):
        lines.append(
            f"{plural(len(errored), 'run')} errored (counted both ways above): "
            f"{_names([f'{_with_attempt(r)} {r.note}' for r in errored.itertuples()])}"
        )
    return lines


def _with_attempt(line: Any) -> str:
    return line.task if pd.isna(line.attempt) or not line.attempt else f"{line.task} (attempt {line.attempt})"


def leaderboard_sections(verdict_: Verdict, comparison: pd.DataFrame) -> list[Section]:
    row = comparison[comparison["part"] == Part.ROW].iloc[0]
    rates = comparison[comparison["part"] == Part.RATE]
    usage = comparison[comparison["part"] == Part.USAGE]
    published = _fraction(row["reference_resolved"], row["reference_n"])
    lines = [
        verdict_.text,
        f"agent `{verdict_.agent}` against the leaderboard row `{row['measure']}` (published: {published} "
        f"resolved, {percent(row['reference'])}; {row['note']}).",
        "Method: our resolved count and the row's as two independent proportions; 95% interval of the "
        "difference by Newcombe's hybrid score method; REPRODUCED when it contains 0, HIGHER or LOWER when "
        "it lies above or below 0. Errored runs are counted as unresolved (the verdict) and excluded (n shrinks).",
    ]
    sections = [
        Section("Verdict", lines),
        Section("Resolved on the leaderboard's tasks", table=_rates_table(rates)),
    ]
    spread = _spread(rates)
    if spread:
        sections.append(
            Section(
                "Attempts",
                [
                    f"Resolved per attempt (errors as unresolved): {', '.join(_count(v) for v in spread)}; "
                    f"min {_count(min(spread))}, max {_count(max(spread))}, mean {statistics.fmean(spread):.1f}, "
                    f"sd {statistics.stdev(spread):.1f}; published: {_count(row['reference_resolved'])} "
                    "(a single number)."
                ],
            )
        )
    if len(usage):
        sections.append(
            Section(
                "Tokens and time",
                [f"The row's tokens are {leaderboard.TOKENS_UNIT}; its wall time is the whole run's."],
                _usage_table(usage),
            )
        )
    sections.append(Section("Task set", _task_set_lines(comparison)))
    return sections


# --------------------------------------------------------------------------- one agent, either kind


def reproduce_agent(
    agent: str,
    spec: str,
    summary: pd.DataFrame,
    csv_path: Path,
    md_path: Path,
    tolerance: float = DEFAULT_TOLERANCE,
    root: Path = Path("."),
) -> Verdict:
    """Compare one agent's runs of `summary` with a reference; write the comparison CSV and page."""
    ours = summary[summary["agent"] == agent]
    if leaderboard.is_reference(spec):
        reference = leaderboard_reference(spec, root)
        comparison = compare_leaderboard(ours, reference)
        verdict_ = Verdict(
            agent, reference.label, leaderboard_verdict(comparison), str(csv_path), ReferenceKind.LEADERBOARD
        )
    else:
        source = spec if spec in BUILTIN else str(_reference_path(spec, root))
        comparison = compare(ours, load_reference(source, summary), tolerance)
        verdict_ = judge(agent, spec, comparison, str(csv_path))
    write_table(comparison, csv_path)
    write_atomic(md_path, render_reproduction(verdict_, comparison))
    return verdict_


def _title(verdict_: Verdict) -> str:
    return f"Reproduction: {verdict_.agent} vs {verdict_.reference}"


def sections_of(verdict_: Verdict, comparison: pd.DataFrame | None = None) -> list[Section]:
    """The sections of a verdict's page; the comparison is read from its CSV unless given."""
    if verdict_.kind == ReferenceKind.LEADERBOARD:
        frame = (
            comparison if comparison is not None else read_leaderboard_comparison(Path(verdict_.comparison))
        )
        return leaderboard_sections(verdict_, frame)
    frame = comparison if comparison is not None else read_comparison(Path(verdict_.comparison))
    return reproduction_sections(verdict_, frame)


def merge_verdicts(verdicts: Sequence[Verdict], path: Path) -> list[Verdict]:
    """Write `verdicts` into an existing verdicts file, replacing the entries of the same agents."""
    kept = (
        [v for v in read_verdicts(path) if v.agent not in {n.agent for n in verdicts}]
        if path.is_file()
        else []
    )
    merged = [*kept, *verdicts]
    write_verdicts(merged, path)
    return merged
