"""The fidelity report as text: differences grouped by what differs."""

from __future__ import annotations

from dataclasses import dataclass

from kotlin_bench.dataset.fidelity.model import FidelityReport, Impact

# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Group:
    """Differences that are the same but for the task."""

    key: str
    impact: Impact
    ours: str
    published: str
    intended: str | None
    tasks: tuple[str, ...]


def grouped(report: FidelityReport) -> list[Group]:
    groups: dict[tuple[str, Impact, str, str, str | None], list[str]] = {}
    for d in report.differences:
        groups.setdefault((d.key, d.impact, d.ours, d.published, d.intended), []).append(d.task or "")
    order = list(Impact)[::-1]
    return sorted(
        (Group(k, i, o, p, r, tuple(t for t in ts if t)) for (k, i, o, p, r), ts in groups.items()),
        key=lambda g: (order.index(g.impact), g.intended is not None, g.key),
    )


def _tasks_text(tasks: tuple[str, ...], total: int) -> str:
    if not tasks:
        return "-"
    if len(tasks) == total:
        return f"all {total}"
    return f"{len(tasks)}: " + ", ".join(tasks[:4]) + (", ..." if len(tasks) > 4 else "")


def render(report: FidelityReport, tasks_checked: int) -> str:
    import pandas as pd

    from kotlin_bench.core.render import Section, render_markdown

    rows = [
        {
            "impact": g.impact.value,
            "what": g.key,
            "ours": g.ours[:80],
            "published": g.published[:80],
            "tasks": _tasks_text(g.tasks, tasks_checked),
            "intended (reason)": g.intended or ("NO" if g.impact is Impact.BEHAVIOUR else ""),
        }
        for g in grouped(report)
    ]
    unexplained = {d.key for d in report.unexplained}
    verdict = (
        f"FAIL: {len(report.unexplained)} behaviour-changing difference(s) the specification does not list: "
        + ", ".join(sorted(unexplained))
        if unexplained
        else "OK: every behaviour-changing difference is listed as intended in the specification"
    )
    compared = ", ".join(f"{k} {v}" for k, v in sorted(report.compared.items()))
    sections = [
        Section("Verdict", [verdict, f"{tasks_checked} task(s) compared; files compared: {compared}."]),
        Section(
            "Differences",
            table=pd.DataFrame(
                rows, columns=["impact", "what", "ours", "published", "tasks", "intended (reason)"]
            ),
        ),
    ]
    if report.missing:
        sections.append(
            Section(
                "Not compared (no published counterpart)",
                [", ".join(report.missing[:40]) + (" ..." if len(report.missing) > 40 else "")],
            )
        )
    return render_markdown(sections, "Fidelity to the published benchmark")
