"""Which config sections change results, and which rules take them as parameters (issue 38, item 2).

Snakemake reruns a job when a parameter of its rule changes (the workflow profile's `rerun-triggers`
include `params`). So a config section that changes what a rule makes is a parameter of that rule, and a
section that changes no result is a parameter of none (it would rerun finished work for nothing): the
job scripts read those from the config (`snakemake.config`). `SECTIONS` says which is which for every
top-level key of `workflow/schemas/config.schema.yaml`; `tests/test_settings.py` holds rules/*.smk to it.
`RETRIEVAL_FACTS` is the one result-changing input that is not a config section: a task's facts for the
retrieval rule, from the dataset specification (`kotlin_bench.dag.plan.Plan.solve_retrieval`).

`Settings` is the config's sections the job scripts use, typed, made by one function (`Settings.of`) from
the config the workflow validated once (`kotlin_bench.dag.config.settle_config`, which also fills in the
schema's defaults); each rule script makes it once per job from `snakemake.config`
(`kotlin_bench.dag.smk.job_settings`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kotlin_bench.engine.disk import CONFIG_KEY as DISK_KEY
from kotlin_bench.engine.disk import DiskNeeds
from kotlin_bench.engine.egress import EgressPolicy
from kotlin_bench.engine.engine import EngineSettings
from kotlin_bench.engine.registry import Registry
from kotlin_bench.runs.handoff import Limits
from kotlin_bench.runs.verify import VerifierOptions

OUTAGE_BACKOFF_SEC = 60.0  # an agent's `outage_backoff_sec` when its entry does not say


class Effect(StrEnum):
    """What changing a config section changes."""

    RESULTS = "results"  # what a rule makes: a parameter of that rule, so a change reruns it
    SELECTION = "selection"  # which jobs there are (tasks, attempts, repeats): the DAG, no parameter
    RUNNING = "running"  # how jobs run (engine, disk, retries, limits): no result, no parameter


@dataclass(frozen=True)
class Section:
    """One top-level config section: its `effect`, and for `Effect.RESULTS` the parameter of each rule that
    takes it (`{rule: parameter}`) and how the parameter reads it (`config["<name>"]` or
    `config.get("<name>"...)` when `reads` is empty, else one of these expressions)."""

    effect: Effect
    params: dict[str, str] = field(default_factory=dict)
    reads: tuple[str, ...] = ()


SECTIONS: dict[str, Section] = {
    "spec": Section(Effect.RESULTS, {"materialize": "spec"}),
    "materialize": Section(
        Effect.RESULTS,
        {"materialize": "materialize", "harvest_task": "materialize", "harvest_window": "materialize"},
    ),
    "github": Section(Effect.RESULTS, {"harvest_screen": "github"}),
    "harvest": Section(
        Effect.RESULTS,
        {
            "harvest_screen": "harvest",
            "harvest_task": "harvest",
            "harvest_verdict": "harvest",
            "harvest_window": "harvest",
        },
    ),
    "tasks_dir": Section(Effect.RESULTS, {"summary": "tasks_dir", "site": "tasks_dir"}),
    "bases_manifest": Section(Effect.RESULTS, {"base_image": "manifest"}),
    "tasks": Section(Effect.SELECTION),
    "exclude": Section(Effect.SELECTION),
    # each agent's entry (`Plan.agent_config`), and the training cutoffs the reports draw
    "agents": Section(
        Effect.RESULTS,
        {"solve": "agent", "aggregate": "cutoffs", "plots": "cutoffs", "site": "cutoffs"},
        ("PLAN.agent_config", "CUTOFFS"),
    ),
    "model_apis": Section(Effect.RUNNING),
    "attempts": Section(Effect.SELECTION),
    "retries": Section(Effect.RUNNING),
    "verify": Section(Effect.SELECTION),  # repeats: how many verify jobs
    "verifier": Section(Effect.RESULTS, {"verify": "verifier"}),
    "egress": Section(Effect.RESULTS, {"solve": "egress"}),
    "capture": Section(Effect.RESULTS, {"solve": "capture"}),
    "base_build_timeout_sec": Section(
        Effect.RESULTS, {"base_image": "timeout"}, ("PLAN.base_build_timeout_sec",)
    ),
    "validation": Section(Effect.SELECTION),  # repeats: how many fix runs
    "resources": Section(Effect.RUNNING),
    "engine": Section(Effect.RUNNING),
    "extra_hosts": Section(Effect.RUNNING),
    "disk": Section(Effect.RUNNING),
    "registry": Section(Effect.RUNNING),
    "images": Section(Effect.RUNNING),
    "reproduce": Section(Effect.RESULTS, {"aggregate": "reproduce"}, ("REPRODUCE.to_params()",)),
}

# A task's facts for the retrieval rule: the solve's under `retrieval: block` (what the agent is refused),
# and the summary's (the flags, classified again from the kept egress records under `flag`).
RETRIEVAL_FACTS = Section(
    Effect.RESULTS,
    {"solve": "retrieval", "summary": "retrieval"},
    ("PLAN.solve_retrieval", "PLAN.summary_retrieval"),
)


@dataclass(frozen=True)
class AgentLimits:
    """What an agent's entry says of when its runs start and retry, which changes no result of a run that
    ran: its budget (`budget_usd`; None: none) and the wait before a try that follows a model outage."""

    budget_usd: float | None = None
    outage_backoff_sec: float = OUTAGE_BACKOFF_SEC


@dataclass(frozen=True)
class Settings:
    """The config's sections the job scripts use, typed (see the module's docstring). Those that change
    results (`capture`, `egress`, `verifier`) are also their rules' parameters (`SECTIONS`); the others are
    read from here only, so changing them reruns nothing."""

    engine: EngineSettings = field(default_factory=EngineSettings)  # `engine:` and `extra_hosts:`
    registry: Registry | None = None
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    capture: Limits = field(default_factory=Limits)
    verifier: VerifierOptions = field(default_factory=VerifierOptions)
    disk: DiskNeeds = field(default_factory=DiskNeeds)
    retries: int = 1
    agents: Mapping[str, AgentLimits] = field(default_factory=dict)

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> Settings:
        """The settings of a validated config (sections not set: their defaults)."""
        agents = {
            str(entry["name"]): AgentLimits(
                float(entry["budget_usd"]) if entry.get("budget_usd") is not None else None,
                float(entry.get("outage_backoff_sec", OUTAGE_BACKOFF_SEC)),
            )
            for entry in config.get("agents") or []
            if isinstance(entry, Mapping) and "name" in entry
        }
        return cls(
            engine=EngineSettings.of_config(dict(config)),
            registry=Registry.from_config(config.get("registry")),
            egress=EgressPolicy.from_config(config.get("egress")),
            capture=Limits.from_config(config.get("capture")),
            verifier=VerifierOptions.from_config(config.get("verifier")),
            disk=DiskNeeds.from_config(config.get(DISK_KEY)),
            retries=int(config.get("retries", 1)),
            agents=agents,
        )

    def agent(self, name: str) -> AgentLimits:
        """An agent's budget and backoff (the health check's agents, not configured: the defaults)."""
        return self.agents.get(name, AgentLimits())
