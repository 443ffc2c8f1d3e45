"""A harvest candidate validated on its repository's base variants, newest first, and its verdict.

On each variant in turn (`walk`): its task image (`ImageRecord`: built, or why its build failed), then the
`run` and `fix` phases; the variant builds when the image was built and both phases have test results
(`Probe`). The first variant that builds is the candidate's: its `test` phase and the fix repetitions run
there, and `kotlin_bench.validation.derive` gives the lists and the validity. A candidate that builds on no
variant is rejected with reason `environment`, naming each variant and why. A failure of the harness or
the engine on every try (an `error` of the image or a phase) is never a verdict on the candidate: it is an
`error`, and the next harvest tries it again.

Flaky tests (their status differs between the fix runs) are left out of every list, as validation leaves
them out; the task then leaves them out as the published tasks do (`flaky_test_excludes`, the Gradle init
script), which a test command that does not run Gradle cannot: such a candidate is rejected (`flaky`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dataset.harvest.rules import Reason, Verdict
from kotlin_bench.validation.derive import phase_results
from kotlin_bench.validation.records import PhaseKind, TaskValidation, ValidationError

GRADLE = re.compile(r"(?:^|[\s;&|(])(?:\./)?gradlew?\b")
MAX_SHOWN = 3


def _read(cls: Any, path: Path) -> Any:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValidationError(f"{path}: cannot read it: {exc}") from None
    if not isinstance(data, dict):
        raise ValidationError(f"{path}: expected a JSON object")
    known = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in known})


def _write(record: Any, path: Path) -> None:
    write_atomic(path, json.dumps(asdict(record), indent=2, ensure_ascii=False) + "\n")


@dataclass
class ImageRecord:
    """The candidate's task image on one variant (`image.json`): built (the image's name and id), its
    build failed (`why`: the variant's fault, e.g. the warm-up aborted), or the engine failed (`error`)."""

    task: str
    base_image: str
    built: bool
    image: str | None = None
    id: str | None = None
    why: str | None = None
    error: str | None = None
    tries: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        _write(self, path)

    @classmethod
    def read(cls, path: Path) -> ImageRecord:
        record: ImageRecord = _read(cls, path)
        return record


@dataclass
class Probe:
    """Whether the candidate builds on one variant (`probe.json`)."""

    task: str
    base_image: str
    builds: bool
    reasons: list[str] = field(default_factory=list)
    error: str | None = None

    def write(self, path: Path) -> None:
        _write(self, path)

    @classmethod
    def read(cls, path: Path) -> Probe:
        record: Probe = _read(cls, path)
        return record

    def said(self) -> str:
        why = self.error or "; ".join(self.reasons[:MAX_SHOWN]) or "builds"
        return f"{self.base_image} ({why})"


def probe(
    image: ImageRecord, phases: Mapping[str, Path] | None = None, suffixes: Sequence[str] = ()
) -> Probe:
    """The probe of a variant from its image record and (when the image was built) its run and fix
    phase directories."""
    out = Probe(image.task, image.base_image, builds=False)
    if image.error:
        out.error = f"image: {image.error}"
        return out
    if not image.built:
        out.reasons.append(f"image: {image.why}")
        return out
    for label in (PhaseKind.RUN, PhaseKind.FIX):
        ok, why, error = phase_results(str(label), (phases or {})[str(label)], suffixes)
        if error:
            out.error = error
            return out
        if not ok:
            out.reasons.append(str(why))
    out.builds = not out.reasons
    return out


def walk(variants: Sequence[str], probe_of: Callable[[str], Probe]) -> tuple[str | None, list[Probe]]:
    """The first variant (in the given order, newest first) whose probe builds or failed for the harness
    (then the candidate is an error), and the probes made on the way. None: no variant builds."""
    tried = []
    for variant in variants:
        found = probe_of(variant)
        tried.append(found)
        if found.builds or found.error:
            return variant, tried
    return None, tried


def gradle_excludes(flaky: Sequence[str]) -> list[str]:
    """The published tasks' exclusion patterns of flaky test ids: `*<Class>.<method>` (Gradle's test
    filter, class names without their package, a nested class's `$` as `.`, no `()`)."""
    out = []
    for test_id in flaky:
        classname, _, method = test_id.removesuffix("()").rpartition(".")
        simple = classname.rsplit(".", 1)[-1].replace("$", ".")
        out.append(f"*{simple}.{method}")
    return sorted(set(out))


def runs_gradle(test_command: str) -> bool:
    return GRADLE.search(test_command) is not None


@dataclass
class CandidateVerdict:
    """A candidate's verdict (`verdict.json`); its derived lists are `expected_tests.json` beside it."""

    task: str
    verdict: str
    reason: str | None = None
    detail: str = ""
    base_image: str | None = None
    tried: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    flaky: list[str] = field(default_factory=list)
    flaky_excludes: list[str] = field(default_factory=list)
    validation: dict[str, Any] = field(default_factory=dict)

    def write(self, path: Path) -> None:
        _write(self, path)

    @classmethod
    def read(cls, path: Path) -> CandidateVerdict:
        record: CandidateVerdict = _read(cls, path)
        return record


def decide(
    task_id: str, tried: Sequence[Probe], validation: TaskValidation | None, test_command: str
) -> CandidateVerdict:
    """The verdict, from the variants tried (the last is the chosen one when it builds) and the
    validation on it (None: no variant builds, or the last failed for the harness)."""
    out = CandidateVerdict(task_id, str(Verdict.REJECTED), tried=[asdict(p) for p in tried])
    last = tried[-1] if tried else None
    if last is not None and last.error:
        return _error(out, last.error)
    if last is None or not last.builds or validation is None:
        out.reason = str(Reason.ENVIRONMENT)
        out.detail = "the build fails on every base variant: " + "; ".join(p.said() for p in tried)
        return out
    out.base_image, out.counts, out.validation = last.base_image, dict(validation.counts), asdict(validation)
    errors = [r for r in validation.reasons if ": error: " in r]
    if errors:
        return _error(out, errors[0])
    out.flaky = sorted(validation.flaky)
    if not validation.valid:
        out.reason, out.detail = str(Reason.INVALID), "; ".join(validation.reasons[:MAX_SHOWN])
        return out
    if out.flaky and not runs_gradle(test_command):
        shown = ", ".join(out.flaky[:MAX_SHOWN])
        out.reason = str(Reason.FLAKY)
        out.detail = (
            f"{len(out.flaky)} flaky test(s) ({shown}); the test command `{test_command}` does not run "
            "Gradle, so no init script can leave them out"
        )
        return out
    if not validation.counts.get("f2p"):
        out.reason, out.detail = (
            str(Reason.INVALID),
            "no f2p test: no test fails before the fix and passes with it",
        )
        return out
    out.flaky_excludes = gradle_excludes(out.flaky)
    out.verdict, out.reason = str(Verdict.ACCEPTED), None
    counts = ", ".join(f"{k} {v}" for k, v in validation.counts.items())
    out.detail = f"valid on {last.base_image} ({counts})" + (
        f"; flaky tests left out: {', '.join(out.flaky_excludes)}" if out.flaky else ""
    )
    return out


def _error(out: CandidateVerdict, error: str) -> CandidateVerdict:
    out.verdict, out.reason, out.detail = str(Verdict.ERROR), str(Reason.INFRASTRUCTURE), error
    return out
