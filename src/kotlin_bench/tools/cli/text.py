"""What the commands print: lines on stdout and stderr, and plain tables."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

from kotlin_bench.core.render import error_line


def out(text: str = "") -> None:
    print(text, flush=True)


def err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def report_error(message: str) -> None:
    """An error on stderr with the one prefix every command and the workflow use."""
    err(error_line(message))


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    cells = [list(map(str, header)), *[list(map(str, r)) for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


Command = Callable[[argparse.Namespace], int]


def deprecated(old: str, new: str, command: Command) -> Command:
    """`command` under its old name: the same, with a note on stderr (old names work for one release)."""

    def run(args: argparse.Namespace) -> int:
        err(f"note: `kotlin-bench {old}` is now `kotlin-bench {new}`; the old name goes in the next release")
        return command(args)

    return run
