"""One validation phase of a task (`run`, `test`, `fix`, `fix-<k>`) in a fresh container from its image.

The container gets `tests/` at `/tests` (the test patch, `task.env`, the verifier's collector) and, for a
fix run, `solution/` at `/solution`. `PHASE_SCRIPT` then, in the repository: applies the test patch (not
for `run`) and the fix patch (only for fix runs), deletes stale JUnit reports, runs the task's
`TEST_COMMAND` from `task.env` under `[verifier].timeout_sec` and network mode, and merges the fresh
reports with `kotlin_logs_collector.sh`, as the verifier does. `/logs/phase` is copied out next to the
phase's record (`kotlin_bench.validation.derive.PhaseRecord`), which is written last.

The container's hostname is the phase's label (`fix-2`), so every phase of a task runs on a host of its
own name (the examples' deliberately flaky test depends on it; see examples/README.md). Containers carry
the key `validation-<label>.<task>.0.<workdir tag>` (`kotlin_bench.core.names.validation_key`): a phase
reaps what an interrupted try of the same phase left, and two checkouts never reap each other's.

A phase that stops short (a patch does not apply, the test command times out, the reports exceed the
collector's cap) is a result with a `problem`; a failure of the harness or the engine raises
`PhaseError`, and the caller records it with `record_error` after its last try.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.record import digests
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine import containers, network
from kotlin_bench.engine.engine import EngineSettings, connect
from kotlin_bench.engine.phase import Limits, PhaseContainer
from kotlin_bench.validation.records import PhaseKind, PhaseRecord, Problem, phase_kind

PHASE_LOG = "phase.log"  # what PHASE_SCRIPT itself printed (the test output is in phase/test_output.log)

# Runs in the task container: bash, git, find and the collector. Always exits 0; a phase that stops short
# says why in $OUT/problem (`<code>: <detail>`).
PHASE_SCRIPT = rf"""
set -u
out={names.CONTAINER_PHASE_LOGS}
mkdir -p "$out" && find "$out" -mindepth 1 -delete
stop() {{ printf '%s\n' "$1" >"$out/{names.PHASE_PROBLEM}"; echo "[phase] $1"; exit 0; }}
[ -f {names.CONTAINER_TESTS}/task.env ] || stop "{Problem.TASK_ENV_INVALID}: tests/task.env is missing"
. {names.CONTAINER_TESTS}/task.env
[ -n "${{REPO_DIR:-}}" ] && [ -n "${{TEST_COMMAND:-}}" ] \
    || stop "{Problem.TASK_ENV_INVALID}: tests/task.env does not set REPO_DIR and TEST_COMMAND"
cd "$REPO_DIR" || stop "{Problem.REPO_DIR_MISSING}: $REPO_DIR"
if [ "$PHASE" != {PhaseKind.RUN} ]; then
    git apply --whitespace=nowarn {names.CONTAINER_TESTS}/test.patch \
        || stop "{Problem.TEST_PATCH_FAILED}: tests/test.patch does not apply at the base commit"
fi
if [ "$PHASE" = {PhaseKind.FIX} ]; then
    git apply --whitespace=nowarn {names.CONTAINER_SOLUTION}/fix.patch \
        || stop "{Problem.FIX_PATCH_FAILED}: solution/fix.patch does not apply over tests/test.patch"
fi
find "$REPO_DIR" -type f -path '*/build/test-results/*/TEST*.xml' -delete 2>/dev/null
marker=$(mktemp) && touch "$marker" || stop "{Problem.ERROR}: mktemp failed"
echo "[phase] $PHASE on $(hostname): $TEST_COMMAND"
bash -c "$TEST_COMMAND" </dev/null >"$out/{names.TEST_OUTPUT_LOG}" 2>&1
status=$?
echo "$status" >"$out/{names.EXIT_CODE}"
echo "[phase] test command exit code $status"
bash {names.CONTAINER_TESTS}/kotlin_logs_collector.sh "$REPO_DIR" "$out/{names.JUNIT_XML}" "$marker"
[ $? -eq 3 ] && stop "{Problem.XML_REJECTED}: the JUnit reports exceed the collector's size cap"
exit 0
"""


class PhaseError(RuntimeError):
    """The harness or the engine failed during a phase; it has no result."""


def new_record(task: Task, label: str) -> PhaseRecord:
    return PhaseRecord(task.id, label, task_digest=digests(task.path)[0])


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def run_phase(
    task: Task, label: str, out_dir: Path, image_id: str, engine: EngineSettings | None = None
) -> PhaseRecord:
    """Run one phase of `task` in a fresh container from `image_id` on `engine` (config `engine:`);
    returns the record written to `<out_dir>/phase.json`."""
    kind = phase_kind(label)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    record = new_record(task, label)
    record.hostname, record.image_id = label, image_id
    labels = {names.LABEL_TASK: task.id, names.LABEL_PHASE: f"validation-{label}"}
    key = names.validation_key(task.id, label)
    phase = task.verifier
    try:
        limits = Limits.of(task, engine)
        with PhaseContainer(
            connect(engine), image_id, key, labels, limits, hostname=label, phase=phase
        ) as box:
            box.copy_in(task.path / "tests", names.CONTAINER_TESTS)
            if kind is PhaseKind.FIX:
                box.copy_in(task.path / "solution", names.CONTAINER_SOLUTION)
            with box.network(phase) as net:
                done = box.run(
                    PHASE_SCRIPT,
                    phase.timeout_sec,
                    out_dir / PHASE_LOG,
                    workdir=task.repo_dir,
                    env={"PHASE": str(kind), **net.env},
                )
            copied = box.copy_out(names.CONTAINER_PHASE_LOGS, out_dir)
            if box.out_of_memory():
                raise PhaseError(f"out of memory in phase {label} (memory_mb = {task.environment.memory_mb})")
    except (containers.ContainerError, network.NetworkError, OSError) as exc:
        raise PhaseError(f"phase {label}: {exc}") from exc
    record.seconds = round(done.seconds, 2)
    logs = out_dir / names.PHASE_OUT
    if done.timed_out:
        record.problem = (
            f"{Problem.TIMEOUT}: the phase exceeded [verifier].timeout_sec = {phase.timeout_sec:g}"
        )
    elif done.process_limit:
        raise PhaseError(
            f"phase {label}: the test command filled the container's process limit ({limits.pids})"
        )
    elif done.exit_code != 0 or not copied:
        raise PhaseError(f"phase {label}: the phase script exited with {done.exit_code} (see {PHASE_LOG})")
    else:
        record.problem = _read_text(logs / names.PHASE_PROBLEM)
    code = _read_text(logs / names.EXIT_CODE)
    record.exit_code = int(code) if code and code.lstrip("-").isdigit() else None
    record.write(out_dir / names.PHASE_FILE)
    return record


def record_error(
    task_id: str, label: str, out_dir: Path, error: BaseException, tries: list[str]
) -> PhaseRecord:
    """Record a phase that failed for good (every try), so the task's verdict can name it."""
    record = PhaseRecord(task_id, label, error=f"{type(error).__name__}: {error}"[:2000], tries=tries)
    out_dir.mkdir(parents=True, exist_ok=True)
    record.write(out_dir / names.PHASE_FILE)
    return record
