"""A configured agent: one entry of config.yaml's `agents:` (checked by its kind, `kotlin_bench.runs.agents`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class AgentConfigError(ValueError):
    """An agent entry of the config is unusable; the message names the agent and the key."""


@dataclass(frozen=True)
class Agent:
    """One entry of config.yaml's `agents:`; `name` labels its results."""

    name: str
    kind: str
    model: str | None = None
    predictions: str | None = None
    harbor_agent: str | None = None
    kwargs: tuple[tuple[str, str], ...] = ()
    isolate_network: bool = False
    script: str | None = None

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> Agent:
        return cls(
            name=entry["name"],
            kind=entry["kind"],
            model=entry.get("model"),
            predictions=entry.get("predictions"),
            harbor_agent=entry.get("harbor_agent"),
            kwargs=tuple(sorted((str(k), _option(v)) for k, v in (entry.get("kwargs") or {}).items())),
            isolate_network=bool(entry.get("isolate_network", False)),
            script=entry.get("script"),
        )


def _option(value: Any) -> str:
    """A Harbor agent option as `--ak key=value` carries it: booleans as JSON (`true`), the rest as text."""
    return json.dumps(value) if isinstance(value, bool) else str(value)
