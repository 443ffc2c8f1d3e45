"""Report sections as markdown (summary.md, reproduction pages) and as one self-contained HTML page
(report.html, with charts embedded as base64 PNG)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class Section:
    """A titled part of the report: paragraphs (inline markdown), an optional table and code block."""

    title: str
    lines: list[str] = field(default_factory=list)
    table: pd.DataFrame | None = None
    code: str | None = None


def percent(value: float) -> str:
    import pandas as pd

    return "n/a" if pd.isna(value) else f"{100 * value:.1f}%"


ERROR_PREFIX = "kotlin-bench: error: "  # the one prefix of every error the CLI and the workflow print


def error_line(message: str) -> str:
    """An error as printed: the one prefix, then the message (one line)."""
    return ERROR_PREFIX + str(message)


def agent_label(agent: str, model: Any) -> str:
    """`agent (model)`, or the agent's name alone when it has no model or is named after it."""
    return f"{agent} ({model})" if isinstance(model, str) and model and model != agent else agent


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _md_cell(value: Any) -> str:
    import pandas as pd

    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return str(value).replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame) -> str:
    import pandas as pd

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


# --------------------------------------------------------------------------- HTML

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0 1.5rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.6rem; text-align: left; }
th { background: #f3f3f3; }
img { max-width: 100%; display: block; margin: 0.5rem 0 1.5rem; }
pre { background: #f6f6f6; padding: 0.6rem; overflow-x: auto; white-space: pre-wrap; }
code { background: #f6f6f6; padding: 0 0.2rem; }
"""


def inline(text: str) -> str:
    """Escape text, turning markdown `code` spans into <code>."""
    parts = re.split(r"`([^`]*)`", text)
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def image_tag(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def section_html(section: Section) -> str:
    parts = [f"<h2>{html.escape(section.title)}</h2>"]
    tag = "li" if section.title == "Headline" else "p"
    lines = [f"<{tag}>{inline(line)}</{tag}>" for line in section.lines]
    parts += ["<ul>", *lines, "</ul>"] if tag == "li" else lines
    if section.table is not None:
        table = section.table.astype(object).where(section.table.notna(), "")
        parts.append(table.to_html(index=False, border=0, escape=True))
    if section.code:
        parts.append(f"<pre><code>{html.escape(section.code)}</code></pre>")
    return "\n".join(parts)


def render_html(
    sections: Sequence[Section], images: Sequence[tuple[str, Path]], title: str = "kotlin-bench results"
) -> str:
    """The headline section, then the charts, then the other sections."""
    head, rest = list(sections[:1]), list(sections[1:])
    body = [f"<h1>{html.escape(title)}</h1>", *map(section_html, head), "<h2>Charts</h2>"]
    body += [image_tag(path, alt) for alt, path in images]
    body += [section_html(s) for s in rest]
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
