"""A configured agent: one entry of config.yaml's `agents:` (checked by its kind, `kotlin_bench.runs.agents`)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from datetime import date, datetime
from typing import Any
from urllib.parse import urlsplit

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# keys the solve step does not read at all when unset: left out of the rule parameter then, so that a
# workspace made before they existed reruns nothing
OPTIONAL = ("env", "model_hosts", "base_url", "price")
# keys no run reads (the reports do): never in the rule parameter, so that setting one redoes no run
REPORT_ONLY = ("cutoff",)


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
    env: tuple[
        str, ...
    ] = ()  # names of host environment variables passed to the agent (values never recorded)
    model_hosts: tuple[str, ...] = ()  # model API hosts the allowlist phase lets through
    base_url: str | None = None  # the model API's base URL (OpenAI-compatible), given to the agent
    # the model's prices in LiteLLM's names (input_cost_per_token, output_cost_per_token,
    # cache_read_input_token_cost), as pairs: the cost of tokens a script reports without a cost
    price: tuple[tuple[str, float], ...] = ()
    # the model's training cutoff: the reports compare its rate on tasks merged before and after it
    cutoff: date | None = None

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
            env=tuple(entry.get("env") or ()),
            model_hosts=tuple(str(h) for h in entry.get("model_hosts") or ()),
            base_url=entry.get("base_url"),
            price=tuple(sorted((str(k), float(v)) for k, v in (entry.get("price") or {}).items())),
            cutoff=parse_cutoff(entry.get("cutoff"), str(entry.get("name"))),
        )

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Agent:
        """The agent from its rule parameter (`params`)."""
        values = {f.name: params[f.name] for f in fields(cls) if f.name in params}
        for key in ("env", "model_hosts"):
            values[key] = tuple(values.get(key) or ())
        values["kwargs"] = tuple(tuple(pair) for pair in values.get("kwargs") or ())
        values["price"] = tuple((str(k), float(v)) for k, v in values.get("price") or ())
        return cls(**values)

    def params(self) -> dict[str, Any]:
        """The rule parameter of the agent's solve jobs: its fields, those of `OPTIONAL` only when set."""
        return {k: v for k, v in asdict(self).items() if k not in REPORT_ONLY and (k not in OPTIONAL or v)}

    def all_model_hosts(self) -> tuple[str, ...]:
        """`model_hosts`, and the host of `base_url`."""
        host = urlsplit(self.base_url).hostname if self.base_url else None
        return tuple(dict.fromkeys([*self.model_hosts, *([host] if host else [])]))

    def passed_env(self, environ: dict[str, str] | None = None) -> dict[str, str]:
        """The values of `env:` from the host's environment (`environ`: os.environ); a name that is not set
        is left out (the agent sees it unset, as it would on the host)."""
        environ = dict(os.environ) if environ is None else environ
        return {name: environ[name] for name in self.env if name in environ}

    def cost_of(
        self, input_tokens: int | None, cache_tokens: int | None, output_tokens: int | None
    ) -> float | None:
        """The dollars of these tokens at `price` (cache reads at their own price where one is given), or
        None without a price or tokens."""
        price = dict(self.price)
        if not price or input_tokens is None or output_tokens is None:
            return None
        cached = cache_tokens or 0
        read = price.get("cache_read_input_token_cost", price.get("input_cost_per_token", 0.0))
        cost = (input_tokens - cached) * price.get("input_cost_per_token", 0.0) + cached * read
        return round(cost + output_tokens * price.get("output_cost_per_token", 0.0), 8)


def parse_cutoff(value: Any, agent: str) -> date | None:
    """`cutoff:` of an agent: a day (YAML reads `2025-07-31` as one; a quoted "2025-07-31" is read here)."""
    if value is None:
        return None
    if isinstance(value, date) and not isinstance(value, datetime):
        return value
    try:
        if isinstance(value, str):
            return date.fromisoformat(value)
    except ValueError:
        pass
    raise AgentConfigError(
        f"agent {agent}: cutoff: {value!r} is not a day; write the model's training cutoff as YYYY-MM-DD "
        "(e.g. cutoff: 2025-07-31)"
    )


def agent_cutoffs(agents: Iterable[Agent]) -> dict[str, str]:
    """The agents' cutoffs as days (`YYYY-MM-DD`) by agent name, those with one: the reports' parameter."""
    return {a.name: a.cutoff.isoformat() for a in agents if a.cutoff is not None}


def _option(value: Any) -> str:
    """A Harbor agent option as `--ak key=value` carries it: booleans, lists and mappings as JSON (Harbor
    parses a value as JSON first), the rest as text."""
    return json.dumps(value) if isinstance(value, bool | list | dict) else str(value)
