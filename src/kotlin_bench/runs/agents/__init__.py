"""Agent kinds, one module each, in one registry: `kind:` in config.yaml names one of `KINDS`.

To add a kind: a module here with an `AgentKind` subclass (its `name`, `summary`, `required` config
keys, `check`, and `act` or `solve`), listed in `KINDS`; the config schema's `kind` enum and the README's
table follow from `KINDS` (a test checks both). Nothing else branches on kind names.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from kotlin_bench.runs.agents.base import AgentKind
from kotlin_bench.runs.agents.config import Agent, AgentConfigError
from kotlin_bench.runs.agents.harbor import HARBOR_AGENTS, Harbor
from kotlin_bench.runs.agents.nop import Nop
from kotlin_bench.runs.agents.oracle import Oracle
from kotlin_bench.runs.agents.predictions import Predictions
from kotlin_bench.runs.agents.script import Script

KINDS: dict[str, AgentKind] = {
    kind.name: kind for kind in (Oracle(), Nop(), Predictions(), Script(), Harbor())
}

__all__ = [
    "KINDS",
    "Agent",
    "AgentConfigError",
    "AgentKind",
    "agent_from_config",
    "kind_hint",
    "kind_named",
    "kind_of",
]


def kind_of(agent: Agent) -> AgentKind:
    return KINDS[agent.kind]


def kind_named(name: str) -> AgentKind:
    """The kind a record names; a kind no longer known (a record of another release) has the defaults."""
    return KINDS.get(name) or AgentKind()


def kind_hint(kind: object) -> str | None:
    """What to write instead of an unknown `kind:` (a Harbor agent's name, or a close kind), or None."""
    if isinstance(kind, str) and kind in HARBOR_AGENTS:
        return f"{kind} is a Harbor agent: write `kind: harbor, harbor_agent: {kind}`"
    close = difflib.get_close_matches(str(kind), list(KINDS), n=1)
    return f"did you mean `{close[0]}`?" if close else None


def _unknown_kind(name: str, kind: object) -> str:
    message = f"agent {name!r}: unknown kind {kind!r}; the kinds are {', '.join(KINDS)}"
    hint = kind_hint(kind)
    return f"{message}; {hint}" if hint else message


def agent_from_config(entry: dict[str, Any], root: Path) -> Agent:
    """A configured agent, checked by its kind; AgentConfigError names the agent and the key at fault."""
    name, kind = entry.get("name"), entry.get("kind")
    if kind not in KINDS:
        raise AgentConfigError(_unknown_kind(str(name), kind))
    for key, what in KINDS[kind].required:
        if not entry.get(key):
            raise AgentConfigError(f"agent {name!r}: kind {kind} needs `{key}:` ({what})")
    agent = Agent.from_entry(entry)
    KINDS[kind].check(agent, root)
    return agent
