"""The outcome of a run as every page, chart and legend shows it: one colour vocabulary.

An outcome is `resolved`, one class of the agent's unresolved outcomes (`kotlin_bench.scoring.reasons.
ReasonClass`: the tests did not pass, the work could not be applied, no work, a limit, tampered), or
`infrastructure` (the task or the harness failed, errors included: not the agent's outcome); charts add
`not run`. The site's CSS, report.html's charts and the legends all read `COLOURS` here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kotlin_bench.core.record import Status
from kotlin_bench.scoring.reasons import CLASS_TEXT, REASON_CLASS, REASON_TEXT, Reason, ReasonClass

RESOLVED = "resolved"
NOT_RUN = "not_run"
# the order of legends: the agent's outcomes first, then infrastructure, then not run
ORDER = (
    RESOLVED,
    ReasonClass.TESTS.value,
    ReasonClass.NOT_APPLIED.value,
    ReasonClass.NO_WORK.value,
    ReasonClass.LIMIT.value,
    ReasonClass.TAMPERED.value,
    ReasonClass.INFRASTRUCTURE.value,
    NOT_RUN,
)
COLOURS = {
    RESOLVED: "#2e9d46",  # green
    ReasonClass.TESTS.value: "#d0413e",  # red
    ReasonClass.NOT_APPLIED.value: "#8e5bb5",  # purple
    ReasonClass.NO_WORK.value: "#e3b62b",  # yellow
    ReasonClass.LIMIT.value: "#e8821c",  # orange
    ReasonClass.TAMPERED.value: "#222222",  # black
    ReasonClass.INFRASTRUCTURE.value: "#8c8c8c",  # grey
    NOT_RUN: "#e6e6e6",  # light grey
}
LABELS = {
    RESOLVED: "resolved",
    ReasonClass.TESTS.value: "tests did not pass",
    ReasonClass.NOT_APPLIED.value: "work not applied",
    ReasonClass.NO_WORK.value: "no work",
    ReasonClass.LIMIT.value: "limit hit",
    ReasonClass.TAMPERED.value: "tampered",
    ReasonClass.INFRASTRUCTURE.value: "infrastructure",
    NOT_RUN: "not run",
}
TEXT = {
    RESOLVED: "the expected tests passed: reward 1",
    **{c.value: t for c, t in CLASS_TEXT.items()},
    NOT_RUN: "no result yet",
}


def reason_of(status: Any, reason: Any) -> Reason | None:
    """The reason word of an unresolved or errored run (None when resolved)."""
    if str(status) == Status.RESOLVED:
        return None
    if str(status) == Status.ERROR:
        return Reason.INFRASTRUCTURE
    try:
        return Reason(str(reason))
    except ValueError:
        return Reason.OTHER


def outcome_of(status: Any, reason: Any) -> str:
    """`resolved`, a reason class, or `infrastructure` for an error."""
    word = reason_of(status, reason)
    return RESOLVED if word is None else REASON_CLASS[word].value


def is_agent_outcome(outcome: str) -> bool:
    return outcome not in (ReasonClass.INFRASTRUCTURE.value, NOT_RUN)


@dataclass(frozen=True)
class LegendRow:
    outcome: str
    colour: str
    label: str
    text: str
    reasons: tuple[tuple[str, str], ...]  # (word, text) of the reasons present in this class

    @property
    def agent(self) -> bool:
        return is_agent_outcome(self.outcome)


def legend(present: set[tuple[str, str | None]]) -> list[LegendRow]:
    """The legend of the (outcome, reason word) pairs present, in ORDER: each class with its words."""
    rows = []
    for outcome in ORDER:
        words = sorted(
            {w for o, w in present if o == outcome and w}, key=lambda w: list(Reason).index(Reason(w))
        )
        if any(o == outcome for o, _ in present):
            reasons = tuple((w, REASON_TEXT[Reason(w)]) for w in words)
            rows.append(LegendRow(outcome, COLOURS[outcome], LABELS[outcome], TEXT[outcome], reasons))
    return rows


def css() -> str:
    """One CSS class per outcome (`k-<outcome>`), for cells and badges."""
    return "".join(f".k-{o}{{background:{c}}}" for o, c in COLOURS.items())
