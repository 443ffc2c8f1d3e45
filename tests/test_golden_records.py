"""result.json and work.json keep their bytes: golden records written by the release at 34c6789.

`tests/golden/` (its README says how each file was made) holds
- `records/works/*.json`: work records (real ones from a finished example run, and ones built from them
  the way the solve step builds them: a script agent that timed out with a model outage it claimed, an
  egress record with a flagged request, an engine that does not enforce a limit, a Harbor trial whose
  capture failed, ...), and `records/<scenario>/result.json` (or `error.txt`): what the verify step made
  of a work record and a verifier's output, for every way a verdict is reached;
- `workspace-34c6789/`: the run records of a previous release's workspace (the examples with oracle, nop,
  two predictions agents and two Harbor agents) and the summary.csv it wrote.

Every record reads and writes back byte for byte; each scenario, run again through the verify step with a
stand-in for the verifier's container (`FakeBox`: no Docker), gives the golden record; the old workspace
summarises to its own summary.csv and regrades (its verdicts made again from its work records and the
verifiers' outputs it kept) to its own results.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import file_sha256
from kotlin_bench.core.record import RunResult, WorkRecord
from kotlin_bench.core.record_parts import VerifierReport
from kotlin_bench.dataset.task import load_task
from kotlin_bench.engine import containers
from kotlin_bench.runs import handoff, runner, verify
from kotlin_bench.runs.agents.config import Agent
from tests.conftest import EXPECTED, TASK_TOML

GOLDEN = Path(__file__).parent / "golden"
RECORDS = GOLDEN / "records"
WORKS = RECORDS / "works"
OLD_WORKSPACE = GOLDEN / "workspace-34c6789"
# KOTLIN_BENCH_WRITE_GOLDEN=1 writes the scenarios' records instead of comparing (done once, at 34c6789)
WRITE = os.environ.get("KOTLIN_BENCH_WRITE_GOLDEN") == "1"
IMAGE_ID = "sha256:" + "5e" * 32
TEST_PATCH = "diff --git a/src/test/B.kt b/src/test/B.kt\n+// https://repo.examples.test/maven2\n"
ENGINE = {"engine": "docker 20.10.24+dfsg1", "unenforced_limits": []}
PODMAN = {"engine": "podman 4.3.1", "unenforced_limits": ["pids", "memory_swap"]}
# What changes from one writing to the next: when, by which commit, and how long the verify step took.
VOLATILE = ("started_at", "code")
VOLATILE_TIMINGS = ("verify_sec", "total_sec")


def golden_records() -> list[Path]:
    return sorted(
        p
        for p in GOLDEN.rglob("*.json")
        if p.name in (names.RESULT_FILE, names.WORK_FILE) or p.parent == WORKS
    )


# --------------------------------------------------------------------------- the verifier's stand-in


@dataclass
class Verifier:
    """What the verifier's container does in a scenario."""

    reward: str | None = "1"  # reward.txt (None: not written)
    report: dict[str, Any] | None = None  # report.json (None: not written)
    log: str = "BUILD SUCCESSFUL\n"  # test_output.log
    exit_code: int | None = 0
    timed_out: bool = False
    process_limit: bool = False  # the watchdog saw the tests fill the process table
    process_limit_after: bool = False  # ... seen only after the tests ended
    copied: bool = True  # /logs/verifier was there to copy out
    oom: bool = False
    seconds: float = 12.5
    applies: bool = True  # the captured diff applies (git apply)
    prediction: tuple[str | None, tuple[str, ...], str] = ("git apply --verbose", (), "")
    problem: str | None = None  # the host's re-scoring of a reward of 1
    engine: dict[str, Any] = field(default_factory=lambda: dict(ENGINE))


class FakeEngine:
    def __init__(self, described: dict[str, Any]) -> None:
        self.described = described
        self.settings = None

    def describe(self) -> dict[str, Any]:
        return dict(self.described)


class FakeBox:
    """The verifier's phase container, as `runs/verify.py` uses it, doing what a `Verifier` says."""

    def __init__(self, spec: Verifier) -> None:
        self.spec = spec
        self.container = object()

    def __call__(self, *args: Any, **kwargs: Any) -> FakeBox:
        return self

    def __enter__(self) -> FakeBox:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def copy_in(self, source: Path, dest: str) -> None:
        assert (source / "test.sh").is_file(), source

    @contextlib.contextmanager
    def network(self, phase: object) -> Iterator[Any]:
        yield type("Net", (), {"env": {}})()

    def run(self, command: str, timeout: float, log: Path, **kwargs: Any) -> containers.ExecResult:
        with log.open("a", encoding="utf-8") as out:
            out.write("kotlin-bench: the verifier's stand-in ran test.sh\n")
        spec = self.spec
        return containers.ExecResult(spec.exit_code, spec.timed_out, spec.seconds, spec.process_limit)

    def copy_out(self, source: str, dest: Path) -> bool:
        if not self.spec.copied:
            return False
        out = dest / names.VERIFIER_OUT
        out.mkdir(parents=True, exist_ok=True)
        if self.spec.reward is not None:
            (out / names.REWARD_TXT).write_text(self.spec.reward + "\n", encoding="utf-8")
        if self.spec.report is not None:
            (out / names.REPORT_JSON).write_text(json.dumps(self.spec.report, indent=2), encoding="utf-8")
        (out / names.TEST_OUTPUT_LOG).write_text(self.spec.log, encoding="utf-8")
        return True

    def hit_process_limit(self) -> bool:
        return self.spec.process_limit_after

    def out_of_memory(self) -> bool:
        return self.spec.oom


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Callable[[Verifier], None]:
    """Put a `Verifier` in place of the verifier's container and of the host's re-scoring."""

    def install(spec: Verifier) -> None:
        monkeypatch.setattr(verify, "PhaseContainer", FakeBox(spec))
        monkeypatch.setattr(handoff, "apply_diff", lambda *a, **k: spec.applies)
        monkeypatch.setattr(handoff, "commit_head", lambda *a, **k: None)
        applier, normalised, message = spec.prediction
        applied = handoff.PatchApplied(applier, normalised, message)
        monkeypatch.setattr(handoff, "apply_patch", lambda *a, **k: (None, applied))
        monkeypatch.setattr(containers, "output", lambda *a, **k: (0, b"url 'https://repo.examples.test'\n"))
        monkeypatch.setattr(verify, "verdict_problem", lambda *a, **k: spec.problem)

    return install


# --------------------------------------------------------------------------- the scenarios

REPORT_OK = {
    "resolved": True,
    "valid": True,
    "reasons": [],
    "categories": {
        "f2p": {"expected": 1, "landed": 1, "missing": []},
        "p2p": {"expected": 2, "landed": 2, "missing": []},
        "s2p": {"expected": 0, "landed": 0, "missing": []},
        "n2p": {"expected": 0, "landed": 0, "missing": []},
    },
    "counts": {"passed": 3, "failed": 0, "skipped": 0},
}
REPORT_F2P = REPORT_OK | {
    "resolved": False,
    "reasons": ["expected_missing: f2p 1 of 1"],
    "categories": REPORT_OK["categories"] | {"f2p": {"expected": 1, "landed": 0, "missing": ["a.B.c()"]}},
    "counts": {"passed": 2, "failed": 1, "skipped": 0},
}
REPORT_NO_RESULTS = {
    "resolved": False,
    "valid": False,
    "reasons": ["no_test_results"],
    "categories": {c: {"expected": 0, "landed": 0, "missing": []} for c in ("f2p", "p2p", "s2p", "n2p")},
    "counts": {"passed": 0, "failed": 0, "skipped": 0},
}
NETWORK_LOG = (
    "> Could not resolve org.acme:lib:1.0.\n"
    "   > Could not get resource 'https://repo.examples.test/maven2/org/acme/lib/1.0/lib-1.0.pom'.\n"
    "      > Could not GET 'https://repo.examples.test/maven2/org/acme/lib/1.0/lib-1.0.pom'. "
    "Received status code 503 from server: Service Unavailable\n"
)


@dataclass
class Scenario:
    name: str
    work: str  # a work record of records/works/
    verifier: Verifier | None = None  # None: no container may start
    repeat: int = 1


SCENARIOS = [
    Scenario("oracle-resolved", "oracle-captured", Verifier("1", REPORT_OK)),
    Scenario("nop-unresolved", "nop-captured", Verifier("0", REPORT_F2P)),
    Scenario("nop-unresolved-repeat-2", "nop-captured", Verifier("0", REPORT_F2P), repeat=2),
    Scenario("committed-resolved", "script-timed-out", Verifier("1", REPORT_OK, engine=PODMAN)),
    Scenario("agent-timeout", "script-timed-out", Verifier("0", REPORT_F2P, engine=PODMAN)),
    Scenario("agent-process-limit", "script-process-limit", Verifier("0", REPORT_F2P)),
    Scenario("verifier-process-limit", "oracle-captured", Verifier(None, None, process_limit=True)),
    Scenario("verifier-process-limit-seen-after", "nop-captured", Verifier("0", REPORT_F2P, process_limit_after=True)),
    Scenario("verifier-timeout", "oracle-captured", Verifier(None, None, exit_code=None, timed_out=True)),
    Scenario("diff-not-applied", "oracle-captured", Verifier(applies=False)),
    Scenario("verifier-tampered", "oracle-captured", Verifier("1", REPORT_OK, problem="reward.txt says 1 but the host's re-scoring of junit.xml says 0 (f2p a.B.c() did not pass)")),
    Scenario("build-failed", "nop-captured", Verifier("0", REPORT_NO_RESULTS, log="FAILURE: Build failed with an exception.\nBUILD FAILED in 3s\n")),
    Scenario("network-fault", "nop-captured", Verifier("0", REPORT_NO_RESULTS, log=NETWORK_LOG)),
    Scenario("no-verifier-logs", "oracle-captured", Verifier(copied=False)),
    Scenario("out-of-memory", "oracle-captured", Verifier(oom=True)),
    Scenario("test-sh-killed", "oracle-captured", Verifier(exit_code=137)),
    Scenario("no-reward", "oracle-captured", Verifier(None, REPORT_OK)),
    Scenario("no-report", "oracle-captured", Verifier("0", None)),
    Scenario("predicted-resolved", "gold-predicted", Verifier("1", REPORT_OK, prediction=("git apply --verbose", (), ""))),
    Scenario("predicted-normalised", "gold-predicted", Verifier("1", REPORT_OK, prediction=("patch --batch --fuzz=5 -p1 -i", ("code_fence", "crlf"), ""))),
    Scenario("predicted-not-applied", "gold-predicted", Verifier(prediction=(None, (), "error: patch failed: README.md:1"))),
    Scenario("empty-patch", "bad-empty-patch"),
    Scenario("no-prediction", "bad-no-prediction"),
    Scenario("harbor-resolved-both", "harbor-oracle", Verifier("1", REPORT_OK)),
    Scenario("harbor-verdicts-disagree", "harbor-oracle", Verifier("0", REPORT_F2P)),
    Scenario("harbor-nop", "harbor-nop", Verifier("0", REPORT_F2P)),
    Scenario("harbor-without-capture", "harbor-no-capture"),
    Scenario("harbor-agent-timeout", "harbor-timed-out", Verifier("0", REPORT_F2P)),
    Scenario("solve-error", "solve-error"),
    Scenario("task-invalid", "task-invalid"),
    Scenario("not-run", "not-run"),
]  # fmt: skip


@pytest.fixture
def golden_task(tmp_path: Path) -> Path:
    """A task directory, the same for every writing (its digests are in the results)."""
    root = tmp_path / "tasks" / "acme_widgets-7"
    files = {
        "task.toml": TASK_TOML,
        "instruction.md": "# Implement the issue(s) in acme/widgets:\n",
        "environment/Dockerfile": "FROM kotlin-bench/acme_widgets:base\n",
        "solution/solve.sh": "#!/bin/bash\n",
        "tests/test.sh": "#!/bin/bash\n",
        "tests/expected_tests.json": json.dumps(EXPECTED),
        names.TEST_PATCH: TEST_PATCH,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _work_dir(tmp_path: Path, work_name: str) -> Path:
    """A run's work directory holding the work record (and the files it names)."""
    work_dir = tmp_path / "run" / names.WORK_DIR
    work_dir.mkdir(parents=True)
    shutil.copyfile(WORKS / f"{work_name}.json", work_dir / names.WORK_FILE)
    work = json.loads((work_dir / names.WORK_FILE).read_text(encoding="utf-8"))
    for name in (work.get("diff"), work.get("committed")):
        if name:
            (work_dir / name).write_text("diff --git a/x b/x\n", encoding="utf-8")
    if work.get("trial_result"):
        trial = work_dir / work["trial_result"]
        (trial.parent / "verifier").mkdir(parents=True)
        (trial.parent / "verifier" / names.REWARD_TXT).write_text("1\n", encoding="utf-8")
        trial.write_text("{}\n", encoding="utf-8")
    return work_dir


def run_scenario(
    scenario: Scenario, task_dir: Path, tmp_path: Path, install: Callable[[Verifier], None]
) -> str:
    """The result.json the verify step writes for the scenario, or the error it raises (`error: ...`)."""
    work_dir = _work_dir(tmp_path, scenario.work)
    run_dir = work_dir.parent if scenario.repeat == 1 else work_dir.parent / "repeats" / str(scenario.repeat)
    task = load_task(task_dir)
    spec = scenario.verifier or Verifier(copied=False, exit_code=None)
    install(spec)
    work_path = work_dir / names.WORK_FILE
    try:
        if WorkRecord.read(work_path).status != "done":
            runner.verify_step(task=task, work_path=work_path, verify_dir=run_dir, repeat=scenario.repeat)
        else:
            ctx = verify.VerifyContext(
                engine=FakeEngine(spec.engine),  # type: ignore[arg-type]
                task=task,
                work_dir=work_dir,
                run_dir=run_dir,
                image_id=IMAGE_ID,
                key="scenario",
                options=verify.VerifierOptions(),
                repeat=scenario.repeat,
                work_sha256=file_sha256(work_path),
            )
            verify.verify(ctx, WorkRecord.read(work_path))
    except verify.VerifyError as exc:
        return f"error: {type(exc).__name__}: {exc}\n"
    return (run_dir / names.RESULT_FILE).read_text(encoding="utf-8")


def normalised(text: str) -> str:
    """A record with what changes from one writing to the next made constant (keys keep their order)."""
    if text.startswith("error: "):
        return text
    data = json.loads(text)
    for key in VOLATILE:
        if key in data:
            data[key] = f"<{key}>"
    for key in VOLATILE_TIMINGS:
        if key in (data.get("timings") or {}):
            data["timings"][key] = f"<{key}>"
    return json.dumps(data, indent=2) + "\n"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_each_way_to_a_verdict_writes_the_golden_result(
    scenario: Scenario, golden_task: Path, tmp_path: Path, stand_in: Callable[[Verifier], None]
) -> None:
    written = run_scenario(scenario, golden_task, tmp_path, stand_in).replace(str(tmp_path), "<tmp>")
    expected = (
        RECORDS / scenario.name / (names.RESULT_FILE if not written.startswith("error: ") else "error.txt")
    )
    if WRITE:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(written, encoding="utf-8")
    assert expected.is_file(), f"{expected} is missing (the scenario gave {written[:200]!r})"
    assert normalised(written) == normalised(expected.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- the runner's error records


def _agent(work: dict[str, Any]) -> Agent:
    return Agent(name=work["agent"], kind=work["kind"], model=work["model"])


ERROR_RECORDS: dict[str, Callable[[Path, Path], Path]] = {}


def error_record(name: str) -> Callable[[Callable[[Path, Path], Path]], Callable[[Path, Path], Path]]:
    def register(make: Callable[[Path, Path], Path]) -> Callable[[Path, Path], Path]:
        ERROR_RECORDS[name] = make
        return make

    return register


@error_record("works/solve-error.json")
def _solve_error(task_dir: Path, tmp: Path) -> Path:
    work_dir = tmp / names.WORK_DIR
    tries = ["try 1: RunError: the engine went away", "", "try 2: RunError: the engine went away"]
    error = runner.RunError("the engine went away")
    agent = Agent("my-script", "script")
    runner.record_solve_error(
        task=load_task(task_dir), agent=agent, attempt=1, work_dir=work_dir, error=error, tries=tries
    )
    return work_dir / names.WORK_FILE


@error_record("works/task-invalid.json")
def _task_invalid(task_dir: Path, tmp: Path) -> Path:
    work_dir = tmp / names.WORK_DIR
    error = ValueError(f"{task_dir}/task.toml: [verifier] timeout_sec: expected a number")
    agent = Agent("oracle", "oracle")
    runner.record_invalid_task(task_id=task_dir.name, agent=agent, attempt=1, work_dir=work_dir, error=error)
    return work_dir / names.WORK_FILE


@error_record("works/not-run.json")
def _not_run(task_dir: Path, tmp: Path) -> Path:
    work_dir = tmp / names.WORK_DIR
    why = "the agent's budget_usd (1.00) is spent: 1.02 USD"
    agent = Agent("model-agent", "script", model="m-1")
    runner.record_not_run(task=load_task(task_dir), agent=agent, attempt=2, work_dir=work_dir, why=why)
    return work_dir / names.WORK_FILE


@error_record("verify-error/result.json")
def _verify_error(task_dir: Path, tmp: Path) -> Path:
    work_dir = _work_dir(tmp, "oracle-captured")
    tries = ["try 1: VerifyError: test.sh exited with 137", "try 2: VerifyError: test.sh exited with 137"]
    error = verify.VerifyError("test.sh exited with 137: it was killed before it finished")
    runner.record_verify_error(
        task=load_task(task_dir),
        work_path=work_dir / names.WORK_FILE,
        verify_dir=work_dir.parent,
        repeat=1,
        error=error,
        tries=tries,
    )
    return work_dir.parent / names.RESULT_FILE


@error_record("unverifiable/result.json")
def _unverifiable(task_dir: Path, tmp: Path) -> Path:
    work_dir = _work_dir(tmp, "nop-captured")
    error = ValueError(f"{task_dir}/tests/test.sh: missing")
    runner.record_unverifiable(
        work_path=work_dir / names.WORK_FILE, verify_dir=work_dir.parent, repeat=1, error=error
    )
    return work_dir.parent / names.RESULT_FILE


@pytest.mark.parametrize("name", sorted(ERROR_RECORDS))
def test_the_runners_error_records_are_the_golden_ones(name: str, golden_task: Path, tmp_path: Path) -> None:
    written = (
        ERROR_RECORDS[name](golden_task, tmp_path).read_text(encoding="utf-8").replace(str(tmp_path), "<tmp>")
    )
    expected = RECORDS / name
    if WRITE:
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(written, encoding="utf-8")
    assert normalised(written) == normalised(expected.read_text(encoding="utf-8"))


# --------------------------------------------------------------------------- reading and writing back


@pytest.mark.parametrize("path", golden_records(), ids=lambda p: str(p.relative_to(GOLDEN)))
def test_every_golden_record_reads_and_writes_back_byte_for_byte(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    if path.name == names.WORK_FILE or path.parent == WORKS:
        WorkRecord.read(path).write(copy)
    else:
        RunResult.read(path).write(copy)
    assert copy.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


def test_the_golden_records_cover_every_field() -> None:
    """Each field of both records has a value other than its empty one in some golden record."""
    seen: dict[str, set[str]] = {"result": set(), "work": set()}
    for path in golden_records():
        which = "work" if path.name == names.WORK_FILE or path.parent == WORKS else "result"
        data = json.loads(path.read_text(encoding="utf-8"))
        seen[which] |= {k for k, v in data.items() if v not in (None, {}, [], False, "")}
    unseen = {
        "result": sorted(
            set(json.loads((RECORDS / "oracle-resolved/result.json").read_text())) - seen["result"]
        ),
        "work": sorted(set(json.loads((WORKS / "oracle-captured.json").read_text())) - seen["work"]),
    }
    assert unseen == {"result": [], "work": []}


# --------------------------------------------------------------------------- a previous release's workspace


def old_results() -> list[Path]:
    return sorted((OLD_WORKSPACE / "results/runs").glob(names.RESULT_GLOB))


def test_a_previous_releases_workspace_summarises_to_its_own_summary(tmp_path: Path) -> None:
    from kotlin_bench.results.summary import summarize, write_table

    """Every column the old summary has holds the same text; a column added since is empty for its runs."""
    import csv

    assert len(old_results()) == 24
    write_table(summarize(old_results()), tmp_path / "summary.csv")
    with (
        (OLD_WORKSPACE / "results/summary.csv").open(newline="") as then,
        (tmp_path / "summary.csv").open(newline="") as now,
    ):
        old_rows, new_rows = list(csv.DictReader(then)), list(csv.DictReader(now))
    assert len(new_rows) == len(old_rows) == 24
    for before, after in zip(old_rows, new_rows, strict=True):
        assert {k: after[k] for k in before} == before
        assert all(after[k] == "" for k in after.keys() - before.keys()), after


@pytest.mark.parametrize("path", old_results(), ids=lambda p: "/".join(p.parts[-4:-1]))
def test_a_previous_releases_workspace_regrades_to_its_own_verdicts(path: Path) -> None:
    """Each verdict of the old workspace, made again from its work record and what its verifier left (the
    reward, the report; its engine, time and how a predicted patch applied, as the result recorded them), is the
    verdict it has, byte for byte."""
    from kotlin_bench.runs.agents import kind_named
    from kotlin_bench.runs.verdict import Stamp, VerifierOutput, verdict

    old = RunResult.read(path)
    work = WorkRecord.read(path.parent / names.WORK_DIR / names.WORK_FILE)
    output = None
    if work.needs_verifier():
        out = path.parent / names.VERIFIER_OUT
        applied = old.reason not in ("patch_not_applied", "agent_diff_not_applied")
        reward = float((out / names.REWARD_TXT).read_text().strip()) if applied else None
        output = VerifierOutput(
            old.engine,
            applied=applied,
            prediction=replace(old.prediction, message=old.error or "") if old.prediction else None,
            seconds=old.verify_timings.verifier_sec,
            reward=reward,
            report=VerifierReport.read(out / names.REPORT_JSON),
        )
    stamp = Stamp(
        started_at=old.started_at,
        code=old.code,
        task_digest=old.task_digest,
        verifier_digest=old.verifier_digest,
        repeat=old.repeat,
        work_sha256=old.work_sha256,
        image_id=old.verify_image_id,
        seconds=old.verify_timings.verify_sec or 0.0,
    )
    again = verdict(work, output, None, kind=kind_named(work.kind), stamp=stamp)
    assert again.to_dict() == old.to_dict()
    assert json.dumps(again.to_dict(), indent=2) + "\n" == path.read_text(encoding="utf-8")
