"""YAML files people write (configs), read with one-line errors: the file, the line and column, and what
is wrong in words (a tab in the indentation is the usual one)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class YamlFileError(ValueError):
    """A YAML file that cannot be read; the message is one line naming the file (and line)."""


def describe_yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """`config.yaml: line 3, column 1: a tab in the indentation; YAML indents with spaces only`."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = str(getattr(exc, "problem", None) or exc).strip().replace("\n", " ")
    if "\\t" in problem or "tab" in problem:
        problem = "a tab in the indentation; YAML indents with spaces only"
    return f"{path}: {where}{problem}"


def read_yaml(path: Path) -> Any:
    """The YAML document in `path`; YamlFileError (one line) when it is missing or not YAML."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise YamlFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise YamlFileError(f"{path}: cannot be read ({exc.__class__.__name__}: {exc})") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise YamlFileError(describe_yaml_error(Path(path), exc)) from None
