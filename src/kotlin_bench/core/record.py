"""The records of one run: the agent's work (`work.json`) and the verdict (`result.json`), their digests,
and every read of them.

A run `(agent, task, attempt)` is solved once: its work record `results/runs/<agent>/<task>/attempt-<k>/
work/work.json` (`WorkRecord`) says what the agent did and where its captured diff is. It is verified
from that record: `results/runs/<agent>/<task>/attempt-<k>/result.json` (`RunResult`), written last and
atomically. Both records are made of the same two parts, embedded (not copied field by field): the run's
key (`RunKey`: task, repository, agent, kind, model, attempt) and the agent's work (`AgentWork`: its
image, timings, usage, changed files, flags, capture, egress, ...); each adds its own fields around them.
The values they hold are typed (`kotlin_bench.core.record_parts`), and both files keep the JSON they have
always had: the parts are flattened into one object, its keys in the order of `RESULT_KEYS` and
`WORK_KEYS` (`kotlin_bench.core.codec`; tests/golden holds the bytes). A result adds to the work's timings,
flags and capture what its verification found (`verify_timings`, `verify_flags`, `prediction`): its file
has them merged (`timings`, `flags`, `capture`). A result's `reason` is a word of the vocabulary
`kotlin_bench.scoring.reasons.Reason`, classified when the run was scored; `reason_detail` keeps the raw
codes it came from. Nothing else reads or writes result.json or work.json.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import KW_ONLY, dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from kotlin_bench import HARNESS_VERSION
from kotlin_bench.core import names
from kotlin_bench.core.codec import (
    FLAT,
    NONE_IS_EMPTY,
    OMITTED_WHEN_NONE,
    UNWRITTEN,
    ShapeError,
    convert,
    from_json,
    json_key,
    to_json,
)
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.core.record_parts import (
    Capture,
    EngineInfo,
    Flag,
    Flags,
    ModelOutageClaim,
    PatchApplied,
    Status,
    Timings,
    TrialVerdict,
    Verdict,
    VerifierReport,
)

MAX_ERROR = 2000

__all__ = ["RecordError", "RunKey", "RunResult", "Status", "Usage", "WorkRecord"]


class RecordError(ValueError):
    """A result.json that cannot be read as a run record; the message names the file."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# --------------------------------------------------------------------------- the agent's usage

# A trial's own `agent_result` (Harbor's names for the usage), as records of trials have always shown it.
TRIAL_USAGE = {
    "n_input_tokens": "input_tokens",
    "n_cache_tokens": "cache_tokens",
    "n_output_tokens": "output_tokens",
    "cost_usd": "cost_usd",
}


@dataclass
class Usage:
    """What an agent's model calls cost, for every kind (None: not reported): tokens read (`input_tokens`,
    cache reads included), of those read from a prompt cache (`cache_tokens`), written (`output_tokens`),
    dollars (`cost_usd`), the number of model calls, and the agent's trajectory (ATIF JSON) relative to
    the run's work directory. Each kind fills it from its own sources (Harbor's trial result, a script's
    `$KOTLIN_BENCH_USAGE` file); the summary and the site read only this."""

    input_tokens: int | None = None
    cache_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    model_calls: int | None = None
    trajectory: str | None = None

    @classmethod
    def from_dict(cls, data: Any) -> Usage:
        """The known keys of a mapping, their values as they are (a script's usage file, which its reader
        checks: `kotlin_bench.runs.model_api.read_usage`)."""
        if not isinstance(data, dict):
            return cls()
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def of_trial(cls, agent_result: Any, trajectory: str | None = None) -> Usage:
        """The usage a trial's own `agent_result` reports (Harbor's names); an empty one if it is none."""
        found = agent_result if isinstance(agent_result, dict) else {}
        return cls(**{ours: found.get(theirs) for theirs, ours in TRIAL_USAGE.items()}, trajectory=trajectory)

    def as_trial(self) -> dict[str, Any]:
        """This usage in a trial's own names (the records' `agent_result`)."""
        return {theirs: getattr(self, ours) for theirs, ours in TRIAL_USAGE.items()}

    def reported(self) -> bool:
        return any(v is not None for v in (self.input_tokens, self.output_tokens, self.cost_usd))


# --------------------------------------------------------------------------- the egress summary


@dataclass
class EgressSummary:
    """The agent phase's egress record in the work record (kotlin_bench.engine.egress): how it was recorded
    (`urls`: every request; `hosts`: the host-only proxy, no record), its requests, bytes, refused
    requests (hosts not allowed), requests refused as retrieval (`blocked`), and the URLs the retrieval
    rule flagged with the facts of `facts` (`flags.retrieval` lists the same); and what the phase network's fence refused
    (`kotlin_bench.engine.fence`): connection attempts around the proxy (`flags.around_proxy`), their
    destinations (`tcp 192.168.0.1:443`), and DNS queries (not flagged: Docker's resolver forwards the
    container's lookups of outside names that way); None (and not written) where no fence could see them
    (rootless Podman, or a record made before the fence)."""

    record: str
    requests: int = 0
    bytes: int = 0
    refused: int = 0
    blocked: int = 0
    retrieval: list[str] = field(default_factory=list)
    around_proxy: int | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    around_proxy_to: list[str] | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    dns_refused: int | None = field(default=None, metadata=OMITTED_WHEN_NONE)
    # the digest of the task's facts its requests were classified with (`Facts.digest`); the summary
    # classifies the kept record again when the task's facts are no longer these (None: a record made
    # before the digest was kept, always classified again)
    facts: str | None = field(default=None, metadata=OMITTED_WHEN_NONE)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EgressSummary:
        return from_json(cls, data, "egress")

    def recorded_urls(self) -> bool:
        """Whether every request was recorded (`egress: {record: urls}`), so that its counts mean something."""
        return self.record == "urls"


# --------------------------------------------------------------------------- the parts both records share


@dataclass(frozen=True)
class RunKey:
    """Which run a record is of: the task (and its repository), the agent (its name, kind and model) and
    the attempt."""

    task: str
    repository: str
    agent: str
    kind: str
    model: str | None
    attempt: int


@dataclass
class AgentWork:
    """What the agent did, as the solve step recorded it: the task image it worked in, the phases' timings,
    whether it timed out, its usage and how many times the solve step ran it, the paths it changed and the
    flags raised on them, a trial's own result file (relative to the work directory), the capture of its
    work and the agent phase's egress (None: no proxy). A result embeds its work record's `AgentWork` as
    it is."""

    image: str | None = None
    image_id: str | None = None
    timings: Timings = field(default_factory=Timings)
    agent_timed_out: bool = False
    usage: Usage = field(default_factory=Usage)
    solve_tries: int = 1  # how many times the solve step ran the agent (a model outage or a harness failure)
    changed_files: list[str] = field(default_factory=list)
    flags: Flags = field(default_factory=dict)
    trial_result: str | None = None  # a kind's own trial's result.json (Harbor's), kept as a file
    capture: Capture | None = field(default=None, metadata=NONE_IS_EMPTY)  # None: nothing was captured
    egress: EgressSummary | None = None  # None: the agent phase had no proxy (no allowlist, or no image)

    def agent_result(self) -> dict[str, Any]:
        """The records' `agent_result`: the usage in a trial's own names, for the work of a trial."""
        return self.usage.as_trial() if self.trial_result else {}


class _Keyed:
    """A record's key fields, read through."""

    key: RunKey

    @property
    def task(self) -> str:
        return self.key.task

    @property
    def repository(self) -> str:
        return self.key.repository

    @property
    def agent(self) -> str:
        return self.key.agent

    @property
    def kind(self) -> str:
        return self.key.kind

    @property
    def model(self) -> str | None:
        return self.key.model

    @property
    def attempt(self) -> int:
        return self.key.attempt


# --------------------------------------------------------------------------- the verdict

RESULT_KEYS = (
    "task", "repository", "agent", "kind", "model", "attempt",
    "reward", "status", "reason", "reason_detail", "error",
    "image", "image_id", "timings", "started_at", "harness_version", "code", "agent_timed_out",
    "task_digest", "verifier_digest", "verifier", "agent_result", "usage", "tries", "solve_tries",
    "changed_files", "flags", "trial_result", "capture", "failed_step", "repeat", "work_sha256",
    "verify_image_id", "fresh_verdict", "engine", "egress",
)  # fmt: skip
# what a verification adds to the work's timings and flags (the rest of them are the work's)
VERIFY_TIMINGS = ("verifier_sec", "verify_sec", "total_sec")
VERIFY_FLAGS = (Flag.VERIFIER, Flag.VERDICTS)


@dataclass
class RunResult(_Keyed):
    """One run's result.json: the verdict, on the agent's work as its work record says (`work`)."""

    key: RunKey = field(metadata=FLAT)
    _: KW_ONLY
    work: AgentWork = field(default_factory=AgentWork, metadata=FLAT)
    reward: float | None = None
    status: Status = Status.ERROR
    reason: str | None = None
    reason_detail: str | None = None
    error: str | None = None
    started_at: str = field(default_factory=_now)
    harness_version: str = HARNESS_VERSION
    code: str | None = None  # the commit of the code that wrote the record (kotlin_bench.core.checkout)
    task_digest: str | None = None
    verifier_digest: str | None = None
    verifier: VerifierReport = field(default_factory=VerifierReport)
    tries: list[str] = field(default_factory=list)
    failed_step: str | None = None  # of an error: `solve` (the agent's work) or `verify` (the verdict)
    repeat: int = 1  # which verification of the run's work (`verify: {repeats: N}`)
    work_sha256: str | None = None  # the work record the verdict was made on
    # the task image the verdict was made in: `image_id` (the one the agent worked in) unless the image
    # was built again since (kotlin_bench.engine.retention)
    verify_image_id: str | None = None
    # A kind whose trial verifies in the agent's container (Harbor): the verdict above is the trial's
    # (the published protocol); ours, on the captured work in a fresh container, is kept here.
    fresh_verdict: Verdict | None = None
    engine: EngineInfo = field(default_factory=EngineInfo)  # the verifier's engine, and what it did not limit
    # what the verification adds to the work's timings, flags and capture (written merged with them)
    verify_timings: Timings = field(default_factory=Timings, metadata=UNWRITTEN)
    verify_flags: Flags = field(default_factory=dict, metadata=UNWRITTEN)
    prediction: PatchApplied | None = field(default=None, metadata=UNWRITTEN)  # how a predicted patch applied

    @property
    def timings(self) -> Timings:
        """The run's timings: the work's, and the verification's."""
        return self.work.timings.merged(self.verify_timings)

    @property
    def flags(self) -> Flags:
        """The run's flags: the work's, then the verification's (a new mapping: set them on `work.flags`
        or `verify_flags`)."""
        return self.work.flags | self.verify_flags

    @property
    def capture(self) -> Capture | None:
        """The capture of the agent's work (None: there was none, as for a predicted patch)."""
        return self.work.capture

    def score(self, reward: float, reason: str | None = None, detail: str | None = None) -> None:
        """Set a verdict: reward 1 is resolved, anything else unresolved with `reason` (a vocabulary
        word) and `detail` (the raw codes)."""
        self.reward = reward
        self.status = Status.RESOLVED if reward == 1.0 else Status.UNRESOLVED
        resolved = self.status is Status.RESOLVED
        self.reason = None if resolved else reason
        self.reason_detail = None if resolved else detail

    def to_dict(self) -> dict[str, Any]:
        data = to_json(self) | {
            "agent_result": self.work.agent_result(),
            "timings": to_json(self.timings),
            "flags": to_json(self.flags),
        }
        if self.prediction is not None:
            data["capture"] = data["capture"] | {"prediction": to_json(self.prediction)}
        if self.work.trial_result:
            data["trial_result"] = f"{names.WORK_DIR}/{self.work.trial_result}"
        return _ordered(data, RESULT_KEYS)

    def write(self, path: Path) -> None:
        """Write result.json atomically (a full disk leaves no partial file behind)."""
        _write_json(path, self.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<result>") -> RunResult:
        try:
            Status(data.get("status"))
        except ValueError:
            raise RecordError(
                f"{source}: status {data.get('status')!r} is not one of {', '.join(s.value for s in Status)}"
            ) from None
        values = _common(data, source)
        timings, flags = _object_at(values, "timings", source), _object_at(values, "flags", source)
        capture = dict(_object_at(values, "capture", source))
        values["timings"] = {k: v for k, v in timings.items() if k not in VERIFY_TIMINGS}
        values["flags"] = {k: v for k, v in flags.items() if k not in VERIFY_FLAGS}
        prediction = capture.pop("prediction", None)
        values["capture"] = capture
        trial = values.get("trial_result")
        if isinstance(trial, str) and trial.startswith(f"{names.WORK_DIR}/"):
            values["trial_result"] = trial.removeprefix(f"{names.WORK_DIR}/")
        try:
            result: RunResult = from_json(cls, values, source)
            result.verify_timings = from_json(
                Timings, {k: v for k, v in timings.items() if k in VERIFY_TIMINGS}, f"{source}: timings"
            )
            result.verify_flags = _flags({k: v for k, v in flags.items() if k in VERIFY_FLAGS}, source)
            if prediction is not None:
                result.prediction = from_json(PatchApplied, prediction, f"{source}: capture.prediction")
        except ShapeError as exc:
            raise RecordError(str(exc)) from None
        return result

    @classmethod
    def read(cls, path: Path) -> RunResult:
        return cls.from_dict(_read_json(path, "run record"), str(path))

    @classmethod
    def for_error(
        cls,
        base: RunResult,
        error: BaseException | str,
        reason: str,
        tries: Iterable[str] = (),
    ) -> RunResult:
        """The error record of a run that failed for good: `base` with status error, `reason` (a
        vocabulary word), the error's type as the detail, its message, and every earlier try's failure."""
        base.status, base.reward = Status.ERROR, None
        base.reason = reason
        base.reason_detail = type(error).__name__ if isinstance(error, BaseException) else None
        base.error = str(error)[:MAX_ERROR]
        base.tries = [line for line in tries if line.strip()]
        return base


def _ordered(data: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """A record's JSON object in its file's key order; a field with no place in that order is a mistake
    of the code (a new field belongs in `RESULT_KEYS` or `WORK_KEYS` too)."""
    unplaced = sorted(set(data) - set(keys))
    if unplaced:
        raise ValueError(f"record fields {unplaced} have no place in the file's key order")
    return {k: data[k] for k in keys if k in data}


def _object_at(values: dict[str, Any], name: str, source: str) -> dict[str, Any]:
    """The JSON object at `name` ({} when it is missing or null)."""
    found = values.get(name)
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise RecordError(f"{source}.{name}: expected an object, not {type(found).__name__}")
    return found


def _flags(data: dict[str, Any], source: str) -> Flags:
    found: Flags = convert(Flags, data, f"{source}: flags")
    return found


def _common(data: dict[str, Any], source: str) -> dict[str, Any]:
    """What both records' readers ask of a file before its fields are read: the key's fields (an older
    file may lack the repository and the model), and the usage (one written before records had `usage`
    has a trial's `agent_result` only)."""
    missing = [k for k in ("task", "agent", "kind", "attempt") if k not in data]
    if missing:
        raise RecordError(f"{source}: fields {missing} are missing")
    values = {"repository": "", "model": None} | data
    if "usage" not in values and values.get("agent_result"):
        values["usage"] = to_json(Usage.of_trial(values["agent_result"]))
    if not isinstance(values.get("usage"), dict):
        values["usage"] = {}
    return values


def _write_json(path: Path, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def _read_json(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path}: cannot read the {what}: {exc}") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path}: expected a JSON object")
    return data


# --------------------------------------------------------------------------- the work record


class PatchKind(StrEnum):
    """What the work's patch file holds, and so how the verifier applies it."""

    CAPTURED = "captured"  # a diff taken from the agent's container by the hand-off: applied as is
    PREDICTED = "predicted"  # a patch from a predictions file: applied as given, then normalised


class WorkStatus(StrEnum):
    DONE = "done"  # the agent phase ran and its work was taken (or it says why there is none)
    ERROR = "error"  # the harness or the engine failed on every try: there is no work to verify


WORK_KEYS = (
    "task", "repository", "agent", "kind", "model", "attempt",
    "status", "outcome", "error", "tries", "image", "image_id", "started_at", "harness_version", "code",
    "agent_exit_code", "agent_timed_out", "agent_process_limit", "engine", "timings", "agent_result", "usage",
    "solve_tries", "model_outage", "capture", "changed_files", "flags", "diff", "diff_sha256", "committed",
    "patch", "trial_result", "harbor", "inputs", "egress",
)  # fmt: skip


@dataclass
class WorkRecord(_Keyed):
    """One solve step's work.json: what the agent did (`work`), and where its work is.

    `outcome` is None when the captured diff (`diff`, beside work.json) is to be verified; otherwise it is
    the vocabulary word that ends the run without a verifier (`empty_patch`, `patch_not_applied`,
    `diff_too_large`, `work_tree_gone`, `diff_unavailable`), with `error` saying what happened.
    `trial_verdict` (the file's `harbor`) holds the verdict of a kind's own trial that verified in the
    agent's container (Harbor's)."""

    key: RunKey = field(metadata=FLAT)
    _: KW_ONLY
    work: AgentWork = field(default_factory=AgentWork, metadata=FLAT)
    status: WorkStatus = WorkStatus.DONE
    outcome: str | None = None
    error: str | None = None
    tries: list[str] = field(default_factory=list)
    started_at: str = field(default_factory=_now)
    harness_version: str = HARNESS_VERSION
    code: str | None = None  # the commit of the code that wrote the record (kotlin_bench.core.checkout)
    agent_exit_code: int | None = None
    agent_process_limit: bool = False  # a fork was refused at the container's process limit
    engine: EngineInfo = field(
        default_factory=EngineInfo
    )  # the agent phase's engine, and what it did not limit
    # a model outage the agent claimed (a script's outage file) that the harness did not see
    model_outage: ModelOutageClaim | None = None
    diff: str | None = None  # the patch's file name (beside work.json); None: nothing to verify
    diff_sha256: str | None = None
    # the diff of the agent's commits (beside work.json; names.COMMITTED_DIFF), when its HEAD moved
    committed: str | None = None
    patch: PatchKind = PatchKind.CAPTURED
    trial_verdict: TrialVerdict | None = field(default=None, metadata=json_key("harbor"))
    # sha256 of each materialized task file the agent phase read (instruction.md; the oracle's
    # fix.patch): materialization never redoes work by itself, so what changed since is named instead
    inputs: dict[str, str] = field(default_factory=dict)

    def needs_verifier(self) -> bool:
        """Whether a verifier must look at the work: it has a patch and nothing ended the run before."""
        return self.outcome is None and self.diff is not None

    def to_dict(self) -> dict[str, Any]:
        return _ordered(to_json(self) | {"agent_result": self.work.agent_result()}, WORK_KEYS)

    def write(self, path: Path) -> None:
        """Write work.json atomically, last of the work directory's files."""
        _write_json(path, self.to_dict())

    @classmethod
    def read(cls, path: Path) -> WorkRecord:
        data = _read_json(path, "work record")
        try:
            WorkStatus(data.get("status"))
        except ValueError:
            raise RecordError(f"{path}: status {data.get('status')!r} is not done or error") from None
        values = _common(data, str(path))
        try:
            PatchKind(values.setdefault("patch", PatchKind.CAPTURED))
        except ValueError:
            raise RecordError(f"{path}: patch {data.get('patch')!r} is not captured or predicted") from None
        try:
            return from_json(cls, values, str(path))
        except ShapeError as exc:
            raise RecordError(str(exc)) from None


# --------------------------------------------------------------------------- results of 0.2

# A 0.2 run directory (one step did both solving and scoring) holds the agent's files beside result.json.
LEGACY_FILES = (names.AGENT_DIFF, names.AGENT_LOG, names.CAPTURE_LOG, names.PROXY_LOG, names.HARBOR_DIR)


def is_legacy(run_dir: Path) -> bool:
    """A 0.2 run directory: a result, the agent's files beside it, and no work record."""
    return (
        (run_dir / names.RESULT_FILE).is_file()
        and not (run_dir / names.WORK_DIR / names.WORK_FILE).exists()
        and any((run_dir / name).exists() for name in LEGACY_FILES)
    )


def legacy_runs(result_paths: Iterable[str | Path]) -> list[Path]:
    """The run directories among those of `result_paths` that still have the 0.2 layout."""
    return [Path(p).parent for p in result_paths if is_legacy(Path(p).parent)]


def read_status(path: Path) -> Status | None:
    """The status of a finished run (None: missing or unreadable), for progress counting."""
    try:
        return RunResult.read(path).status
    except RecordError:
        return None


def errored_results(results: Path) -> list[tuple[Path, RunResult]]:
    """The run records (verdicts and repeated verifications) under `<results>/runs` whose status is error."""
    found = []
    runs = Path(results) / "runs"
    for path in sorted([*runs.glob(names.RESULT_GLOB), *runs.glob(names.REPEAT_GLOB)]):
        try:
            result = RunResult.read(path)
        except RecordError:
            continue
        if result.status is Status.ERROR:
            found.append((path, result))
    return found


def failed_step_outputs(path: Path, result: RunResult) -> list[Path]:
    """What to delete so that exactly the failed step of an errored run is redone: the verification's
    result.json for step `verify` (the agent's work is kept), the work record too for step `solve`."""
    if result.failed_step == "solve":
        run_dir = path.parent if result.repeat == 1 else path.parents[2]
        return [run_dir / names.WORK_DIR / names.WORK_FILE, path]
    return [path]


# --------------------------------------------------------------------------- digests


def _digest(root: Path, paths: Iterable[Path]) -> str:
    sha = hashlib.sha256()
    for path in sorted(paths):
        sha.update(path.relative_to(root).as_posix().encode() + b"\0")
        sha.update(path.read_bytes() + b"\0")
    return sha.hexdigest()


def task_digest(task_dir: Path) -> str:
    """sha256 over every file of the task directory (paths and contents)."""
    return _digest(task_dir, (p for p in task_dir.rglob("*") if p.is_file()))


def verifier_digest(task_dir: Path) -> str:
    """sha256 over the verifier scripts a run of the task uses (test.sh, collector, junit_compare)."""
    tests = task_dir / "tests"
    return _digest(tests, (p for p in tests.iterdir() if p.is_file() and p.suffix in (".sh", ".py")))


def digests(task_dir: Path) -> tuple[str | None, str | None]:
    """(task digest, verifier digest); (None, None) when the directory cannot be read."""
    try:
        return task_digest(task_dir), verifier_digest(task_dir)
    except OSError:
        return None, None


def digest_problems(result: RunResult, task_id: str, task_dir: Path) -> list[str]:
    """Why `result` is not a result of the task directory as it is now (empty: it is)."""
    problems = []
    if result.task != task_id:
        problems.append(f"result is for task {result.task!r}, not {task_id!r}")
    for key, current in (
        ("task_digest", task_digest(task_dir)),
        ("verifier_digest", verifier_digest(task_dir)),
    ):
        recorded = getattr(result, key)
        if not recorded:
            problems.append(f"{key} is missing (written by an older harness?)")
        elif recorded != current:
            problems.append(f"{key} {str(recorded)[:12]} differs from the task directory's {current[:12]}")
    return problems
