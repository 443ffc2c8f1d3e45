"""What the Snakemake DAG is made of: the task table, base images, runs, and the paths between them.

`rules/common.smk` builds a `Plan` once from the validated config; input functions ask it for paths.
Keeping this in Python keeps the rules thin and makes the DAG's shape testable without Snakemake.

Snakemake calls the input functions, params and resources of every job, two jobs per run (solve, verify):
30,000 jobs at 15,000 runs, while all the runs of a task (agents x attempts) depend on the same files. What
depends on the task (and the agent) alone is computed once per Plan and kept (`Plan._memo`), and the lists
are copied for each job; the Plan is not changed once made, and the dicts it gives as rule parameters are
shared by the jobs and not changed either.
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from snakemake.io import ancient

from kotlin_bench import LEGACY_LAYOUT, RESULTS_LAYOUT
from kotlin_bench.core import names
from kotlin_bench.core.record import legacy_runs
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.core.suggest import did_you_mean
from kotlin_bench.dag.resources import JobResources, Sizing
from kotlin_bench.dataset import leaderboard
from kotlin_bench.dataset.artifacts import ENTRY_FACT_KEYS
from kotlin_bench.dataset.dates import DATE_KEYS
from kotlin_bench.dataset.materialize import MirrorSources
from kotlin_bench.dataset.predictions import Prediction, load_predictions
from kotlin_bench.dataset.task import Task, TaskError, discover, load_task
from kotlin_bench.engine.egress import EgressPolicy, Record, Retrieval
from kotlin_bench.engine.images import (
    BASE_BUILD_TIMEOUT_SEC,
    BaseRecipe,
    order_recipes,
    parse_manifest,
    recipe_inputs,
    recipe_parent,
)
from kotlin_bench.engine.retention import Keep, Purpose
from kotlin_bench.runs.agents import Agent, agent_from_config, kind_of
from kotlin_bench.validation.records import phase_labels

HEALTHCHECK_AGENTS = ("oracle", "nop")  # the health check's agents: name = kind

T = TypeVar("T")


@functools.cache
def _spec_entries(spec: Path) -> dict[str, str]:
    """Task id -> sha256 of its entry in the specification (read once per process)."""
    try:
        tasks = json.loads(spec.read_text(encoding="utf-8")).get("tasks") or []
    except (OSError, ValueError):
        return {}
    unread = {*DATE_KEYS, *ENTRY_FACT_KEYS}
    return {  # without the dates and the retrieval facts: materialization reads neither (editing them redoes none)
        str(entry.get("id")): hashlib.sha256(
            json.dumps({k: v for k, v in entry.items() if k not in unread}, sort_keys=True).encode()
        ).hexdigest()
        for entry in tasks
        if isinstance(entry, dict)
    }


@functools.cache
def _spec_facts(spec: Path) -> dict[str, Facts]:
    """Task id -> its facts for the retrieval rule (`TaskSpec.retrieval_facts`), from the specification
    (read once per process; none when it is not there, e.g. task directories added by hand)."""
    from kotlin_bench.dataset.spec import load_dataset  # jsonschema: read only when a rule asks

    if not spec.is_file():
        return {}
    dataset = load_dataset(spec)
    return {task.id: task.retrieval_facts() for task in dataset.tasks}


@functools.cache
def _files(directory: Path) -> list[str]:
    """The files under `directory` (cached: input functions ask for the same task once per run job)."""
    return sorted(str(p) for p in directory.rglob("*") if p.is_file())


@dataclass
class Plan:
    root: Path
    tasks: dict[str, Task]
    bases: dict[str, BaseRecipe]
    agents: dict[str, Agent]
    attempts: int
    predictions: dict[str, dict[str, Prediction]] = field(default_factory=dict)
    materialize: dict[str, Any] = field(default_factory=dict)
    tasks_dir: str = "tasks"
    validation_repeats: int = 0  # extra fix runs of the three-phase validation (config validation.repeats)
    verify_repeats: int = 1  # verifications of each run's work (config verify.repeats)
    spec: str = names.BENCHMARK_SPEC  # the dataset specification the task directories come from
    sizing: Sizing = field(default_factory=Sizing)
    base_build_timeout_sec: float = BASE_BUILD_TIMEOUT_SEC
    keep: Keep = Keep.ALL  # which images stay (config images.keep)
    model_apis: dict[str, int] = field(default_factory=dict)  # config model_apis: endpoint -> concurrency
    model_api_of: dict[str, str] = field(default_factory=dict)  # agent -> its endpoint (config model_api)
    egress: EgressPolicy = field(default_factory=EgressPolicy)  # config egress
    # what the per-job functions computed, by (function, task, agent): see the module's docstring
    _memo: dict[tuple[str, ...], Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _once(self, key: tuple[str, ...], make: Callable[[], T]) -> T:
        """`make()`, computed on the first call with `key` only (`make` must depend on nothing else)."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[key] = make()
            return value

    @classmethod
    def from_config(cls, config: dict[str, Any], root: Path, egress: EgressPolicy | None = None) -> Plan:
        """The plan of a validated config; `egress`: its `egress:` as the workflow's `Settings` parsed it
        (else parsed here)."""
        tasks_dir = root / config["tasks_dir"]
        if not tasks_dir.is_dir():
            raise ValueError(f"config tasks_dir: {tasks_dir} is not a directory")
        tasks, invalid = {}, {}
        for path in discover(tasks_dir):
            try:
                tasks[path.name] = load_task(path, require_materialized=False)
            except TaskError as exc:  # one bad task never stops the others
                invalid[path.name] = str(exc)
        for name, why in sorted(invalid.items()):
            print(f"kotlin-bench: skipping invalid task {name}: {why}", file=sys.stderr)
        wanted = config.get("tasks", "all")
        if wanted == leaderboard.PRESET:  # the published leaderboard's 105 tasks
            wanted = leaderboard.task_set(root / config["spec"])
        wanted = wanted if wanted == "all" else [t for t in wanted if t not in invalid]
        exclude = [t for t in config.get("exclude", []) if t not in invalid]
        selected = _select(tasks, wanted, exclude)
        recipes = parse_manifest(root / config["bases_manifest"])
        bases = {r.image: r for r in order_recipes(recipes, root)}
        for task in selected.values():
            if task.base_image not in bases:
                raise TaskError(
                    task.path / "task.toml",
                    "metadata.kotlin_bench.base_image",
                    f"{task.base_image} is not listed in {config['bases_manifest']}",
                )
        agents = [agent_from_config(a, root) for a in config["agents"]]
        names = [a.name for a in agents]
        if len(set(names)) != len(names):
            raise ValueError(f"config agents: names must be unique, got {names}")
        predictions = {
            a.name: load_predictions(root / a.predictions, tasks) for a in agents if a.predictions is not None
        }
        for agent in agents:
            if agent.name in predictions:
                warning = missing_predictions(agent, predictions[agent.name], selected)
                if warning:
                    print(warning, file=sys.stderr)
        return cls(
            root,
            selected,
            bases,
            {a.name: a for a in agents},
            int(config["attempts"]),
            predictions,
            dict(config.get("materialize") or {}),
            str(config["tasks_dir"]),
            int((config.get("validation") or {}).get("repeats", 0)),
            int((config.get("verify") or {}).get("repeats", 1)),
            str(config["spec"]),
            Sizing.from_config(config.get("resources")),
            config.get("base_build_timeout_sec", BASE_BUILD_TIMEOUT_SEC),
            Keep((config.get("images") or {}).get("keep", Keep.ALL)),
            {str(k): int(v) for k, v in (config.get("model_apis") or {}).items()},
            {str(a["name"]): str(a["model_api"]) for a in config["agents"] if a.get("model_api")},
            egress or EgressPolicy.from_config(config.get("egress")),
        )

    def task_dir(self, task_id: str) -> str:
        """The task's directory relative to the workflow root (a stable rule parameter)."""
        return self._once(("task_dir", task_id), lambda: str(self.tasks[task_id].path.relative_to(self.root)))

    def model_api_resources(self) -> dict[str, Callable[..., int]]:
        """The solve rule's `model_api_<name>` resources: one unit for a job of an agent on that endpoint
        (its limit is the config's `model_apis: {<name>: N}`, registered as a global resource)."""
        return {
            f"model_api_{api}": lambda wildcards, api=api: int(self.model_api_of.get(wildcards.agent) == api)
            for api in sorted({*self.model_apis, *self.model_api_of.values()})
        }

    def agent(self, name: str) -> Agent:
        """A configured agent, or one of the health check's (`oracle`, `nop`) when not configured."""
        if name in self.agents:
            return self.agents[name]
        if name in HEALTHCHECK_AGENTS:
            return Agent(name, name)
        raise ValueError(f"no agent named {name!r} is configured (configured: {', '.join(self.agents)})")

    def agent_config(self, name: str) -> dict[str, Any]:
        """The agent's configuration (a rule parameter; one dict per agent, shared by its jobs: not changed)."""
        return self._once(("agent_config", name), lambda: self.agent(name).params())

    def prediction_digest(self, agent: str, task_id: str) -> str | None:
        """sha256 of the task's predicted patch: a rule parameter, so an edited patch reruns only its runs."""
        found = self.predictions.get(agent, {}).get(task_id)
        return found.digest if found else None

    def retrieval_facts(self, task_id: str) -> Facts:
        """The task's facts for the retrieval rule, from the specification (no facts when it does not
        state the task)."""
        return _spec_facts(self.root / self.spec).get(task_id, Facts())

    def solve_retrieval(self, task_id: str) -> dict[str, Any] | Facts | None:
        """The solve rule's `retrieval` parameter: the task's facts the recording proxy classifies with.
        Under `retrieval: block` they decide what the agent is refused, so they are given as plain data
        (`Facts.to_dict`), which Snakemake records: a change reruns the task's solve steps. Under `flag`
        they decide nothing the agent sees, only the flags, which the summary classifies again from the
        kept record when the facts change (`kotlin_bench.results.summary.flagged`): they are given as
        the `Facts` object, a value Snakemake does not record, so a change reruns no solve step (the
        record's `egress.facts` says which facts it was classified with). None under `record: hosts`."""
        if self.egress.record is not Record.URLS:
            return None
        facts = self.retrieval_facts(task_id)
        return facts.to_dict() if self.egress.retrieval is Retrieval.BLOCK else facts

    def summary_retrieval(self) -> dict[str, dict[str, Any]]:
        """The summary rule's `retrieval` parameter: every selected task's facts (`Facts.to_dict`), by task:
        a change reclassifies the kept egress records of that task's runs into summary.csv, and reruns
        what is made from it, and nothing else (under `block` it reruns the task's solve steps too)."""
        if self.egress.record is not Record.URLS:
            return {}
        return self._once(
            ("summary_retrieval",), lambda: {t: self.retrieval_facts(t).to_dict() for t in sorted(self.tasks)}
        )

    def base(self, repo_key: str, tag: str) -> BaseRecipe:
        image = names.image(repo_key, tag)
        if image not in self.bases:
            raise ValueError(f"{image} is not in the base manifest")
        return self.bases[image]

    def base_inputs(self, repo_key: str, tag: str) -> list[str]:
        """A base image depends on its recipe's files and on the manifest image it is built FROM."""
        entry = self.base(repo_key, tag)
        inputs = [str(p.relative_to(self.root)) for p in recipe_inputs(entry, self.root)]
        parent = recipe_parent(entry, self.root, set(self.bases))
        if parent:
            parent_entry = self.bases[parent]
            inputs.append(names.base_sentinel(parent_entry.repo_key, parent_entry.tag))
        return inputs

    def task_image_inputs(self, task_id: str) -> list[str]:
        return list(self._once(("task_image_inputs", task_id), lambda: self._task_image_inputs(task_id)))

    def _task_image_inputs(self, task_id: str) -> tuple[str, ...]:
        task = self.tasks[task_id]
        base = self.bases[task.base_image]
        environment = [
            str(Path(p).relative_to(self.root))
            for p in _files(task.path / "environment")
            if Path(p).relative_to(task.path).as_posix() not in names.MATERIALIZED
        ]
        # A warm-up patch is materialized: the image then waits for the task's materialization.
        stamp = [self.stamp(task_id)] if task.warmup_patch else []
        return (names.base_sentinel(base.repo_key, base.tag), *environment, *stamp)

    def materialized(self, task_id: str, rel: str) -> str:
        """A file materialization writes (an output of rule materialize), relative to the workflow."""
        return names.task_file(self.tasks_dir, task_id, rel)

    def solve_inputs(self, agent: str, task_id: str) -> list[str]:
        """A solve step depends on the task image (first, when the agent kind needs one), the task's
        instruction and the files the agent kind reads (the oracle's solution, a script agent's script);
        never on tests/ or the verifier, so that editing those redoes no agent's work."""
        listed = self._once(("solve_inputs", agent, task_id), lambda: self._solve_inputs(agent, task_id))
        # a fresh `ancient` flag per job: Snakemake keeps a flagged path's flags with that job's files
        return [ancient(path) if old else path for path, old in listed]

    def _solve_inputs(self, agent: str, task_id: str) -> tuple[tuple[str, bool], ...]:
        """The solve step's inputs as (path, ancient)."""
        configured = self.agent(agent)
        kind = kind_of(configured)
        task_dir = Path(self.task_dir(task_id))
        image = [(path, False) for path in self.task_image_use(task_id)] if kind.needs_image else []
        files = [self._solve_input(task_dir, p) for p in kind.inputs(configured, task_dir)]
        return (*image, (self.materialized(task_id, names.INSTRUCTION), True), *files)

    def task_image_use(self, task_id: str) -> list[Any]:
        """What a step that runs in the task image depends on for it: the sentinel (a rebuild by rule
        task_image, after a changed Dockerfile or base, redoes the runs; an image released and brought back
        by a job leaves the sentinel as it is, so it redoes none) and what the image is built from."""
        return [names.task_sentinel(task_id), *self.task_image_inputs(task_id)]

    def _solve_input(self, task_dir: Path, path: Path) -> tuple[str, bool]:
        """A materialized file a solve step reads is `ancient`: materialization, redone for any reason,
        never redoes an agent's work by itself (the work record keeps the digest of what the agent saw,
        and the summary names work made from a file that has changed since)."""
        rel = path.relative_to(task_dir).as_posix() if path.is_relative_to(task_dir) else None
        return str(path), rel in names.MATERIALIZED

    def verify_inputs(self, agent: str, task_id: str, attempt: str) -> dict[str, Any]:
        """A verify step depends on the run's work record, the task image and everything under the task's
        tests/ (the committed files and the materialized test patch and expected lists)."""
        image, image_inputs, tests = self._once(
            ("verify_inputs", task_id), lambda: self._verify_inputs(task_id)
        )
        return {
            "work": names.work_record(agent, task_id, attempt),
            "image": image,
            "image_inputs": list(image_inputs),
            "tests": list(tests),
        }

    def _verify_inputs(self, task_id: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """What a verify step depends on besides its work record: the task image's sentinel, what the image
        is built from, and the task's tests/."""
        task = self.tasks[task_id]
        committed = [
            str(Path(p).relative_to(self.root))
            for p in _files(task.path / "tests")
            if Path(p).relative_to(task.path).as_posix() not in names.MATERIALIZED
        ]
        materialized = [self.materialized(task_id, f) for f in (names.TEST_PATCH, names.EXPECTED_TESTS)]
        image, *image_inputs = self.task_image_use(task_id)
        return image, tuple(image_inputs), (*committed, *materialized)

    def solve_phase(self, task_id: str) -> dict[str, Any]:
        """What the agent phase reads of task.toml (a rule parameter: editing it redoes the agent's work;
        one dict per task, shared by its jobs: not changed)."""
        return self._once(("solve_phase", task_id), lambda: self._solve_phase(self.tasks[task_id]))

    @staticmethod
    def _solve_phase(task: Task) -> dict[str, Any]:
        return {"agent": asdict(task.agent), **_repository_facts(task)}

    def verify_phase(self, task_id: str) -> dict[str, Any]:
        """What the verifier phase reads of task.toml (a rule parameter: editing it redoes verification;
        one dict per task, shared by its jobs: not changed)."""
        return self._once(("verify_phase", task_id), lambda: self._verify_phase(self.tasks[task_id]))

    @staticmethod
    def _verify_phase(task: Task) -> dict[str, Any]:
        scorer = {"strip_test_name_suffixes": list(task.strip_test_name_suffixes)}
        return {"verifier": asdict(task.verifier), **_repository_facts(task), **scorer}

    def solve_resources(self, agent: str, task_id: str) -> JobResources:
        """What a solve step asks the scheduler for (kotlin_bench.dag.resources has the rule)."""
        trial = kind_of(self.agent(agent)).verifies_in_trial
        return self._once(
            ("solve_resources", str(trial), task_id),
            lambda: self.sizing.for_solve(self.tasks[task_id], trial),
        )

    def verify_resources(self, task_id: str) -> JobResources:
        return self._once(("verify_resources", task_id), lambda: self.sizing.for_verify(self.tasks[task_id]))

    def validation_inputs(self, task_id: str) -> list[str]:
        """A validation phase depends on the task image, the committed files it copies in (task.toml,
        solution/, tests/), and the materialization stamp, which stands for the upstream-authored files."""
        task = self.tasks[task_id]
        rel = task.path.relative_to(self.root)
        files = [str(rel / "task.toml")]
        for sub in ("solution", "tests"):
            files += [
                str(Path(p).relative_to(self.root))
                for p in _files(task.path / sub)
                if Path(p).relative_to(task.path).as_posix() not in names.MATERIALIZED
            ]
        return [names.task_sentinel(task_id), self.stamp(task_id), *files]

    def validation_resources(self, task_id: str) -> JobResources:
        """A validation phase runs one test command, like a verify step."""
        return self.sizing.for_verify(self.tasks[task_id])

    def task_image_resources(self, task_id: str) -> JobResources:
        return self.sizing.for_task_image(self.tasks[task_id])

    def base_image_resources(self) -> JobResources:
        return self.sizing.for_base_image(self.base_build_timeout_sec)

    def stamp(self, task_id: str) -> str:
        """The materialization stamp: the DAG node that stands for a task's upstream-authored files."""
        return names.stamp(self.tasks_dir, task_id)

    def mirror_sources(self) -> MirrorSources | None:
        return MirrorSources.from_config(self.materialize.get("upstream") or {})

    def mirror_source(self, owner: str, repo: str) -> str:
        sources = self.mirror_sources()
        if sources is None:
            raise ValueError("config materialize.upstream.mirror_sources is not set")
        return sources.source(owner, repo)

    def mirror_inputs(self, owner: str, repo: str) -> list[str]:
        source = self.root / self.mirror_source(owner, repo)
        if not source.is_dir():
            raise ValueError(f"no upstream source for {owner}/{repo} at {source}")
        builder = self.mirror_sources().builder  # type: ignore[union-attr]
        return [builder, *(str(Path(p).relative_to(self.root)) for p in _files(source))]

    def materialize_inputs(self, task_id: str) -> list[str]:
        """Materialization reads the task's entry of the specification (a rule parameter,
        `spec_entry_digest`) and, when the DAG builds one, its upstream mirror; not task.toml, so that
        editing a phase of it redoes only that phase's step."""
        task = self.tasks[task_id]
        if self.materialize.get("source") == "upstream" and self.mirror_sources():
            return [names.mirror_dir(task.source.owner, task.source.name)]
        return []

    def spec_entry_digest(self, task_id: str) -> str:
        """sha256 of the task's entry in the specification (a rule parameter of its materialization)."""
        return _spec_entries(self.root / self.spec).get(task_id, "")

    def mirrors(self, task_id: str) -> dict[str, str]:
        """The upstream mirror a task's materialization reads: the configured one of its repository, or
        the one the DAG builds (a rule parameter: it depends on the task alone, not on the selection)."""
        task = self.tasks[task_id]
        name = task.repository
        configured = dict((self.materialize.get("upstream") or {}).get("mirrors") or {})
        if name in configured:
            return {name: configured[name]}
        if self.mirror_sources():
            return {name: names.mirror_dir(task.source.owner, task.source.name)}
        return {}

    def validation_phases(self, task_id: str) -> list[str]:
        """The phase records of a task's validation: run, test, fix and the fix repetitions."""
        labels = phase_labels(self.validation_repeats)
        return [names.validation_phase(task_id, label) for label in labels]

    def validation_verdicts(self) -> list[str]:
        return [names.validation_verdict(task_id) for task_id in self.tasks]

    def _tasks(self, only: str | None) -> list[str]:
        return list(self.tasks) if only is None else [only]

    def results(self, task: str | None = None) -> list[str]:
        """Every run's verdict (repeat 1), the summary's rows (of one task, when given)."""
        return [
            names.verify_result(agent, task_id, attempt)
            for agent in self.agents
            for task_id in self._tasks(task)
            for attempt in range(1, self.attempts + 1)
        ]

    def refuse_legacy_results(self) -> None:
        """Stop before planning anything when results of layout 1 are here: the DAG would take
        their runs for unsolved and redo the agents' work (`kotlin-bench migrate` moves them, once)."""
        legacy = legacy_runs(self.results())
        if legacy:
            shown = ", ".join(str(p) for p in legacy[:3]) + (
                f" and {len(legacy) - 3} more" if len(legacy) > 3 else ""
            )
            raise LegacyResultsError(
                f"{len(legacy)} run(s) have results layout {LEGACY_LAYOUT}, where one step solved and scored "
                f"({shown}); run `kotlin-bench migrate` once: it keeps every agent's work and solves nothing, "
                f"into layout {RESULTS_LAYOUT}, and the next snakemake verifies those runs again"
            )

    def regrade_results(self, task: str | None = None) -> list[str]:
        """Every run's verdict again, staged for a regrade (in the order of `results`)."""
        return [
            names.regrade_result(agent, task_id, attempt)
            for agent in self.agents
            for task_id in self._tasks(task)
            for attempt in range(1, self.attempts + 1)
        ]

    def repeated_results(self, task: str | None = None) -> list[str]:
        """The repeated verifications (2 ... `verify.repeats`) of every run."""
        return [
            names.verify_result(agent, task_id, attempt, repeat)
            for agent in self.agents
            for task_id in self._tasks(task)
            for attempt in range(1, self.attempts + 1)
            for repeat in range(2, self.verify_repeats + 1)
        ]

    def healthcheck_results(self, task: str | None = None) -> list[str]:
        """The health check's runs: oracle and nop, attempt 1, on every selected task (the same targets as
        configured agents of those names, which must then be of those kinds)."""
        for name in HEALTHCHECK_AGENTS:
            agent = self.agents.get(name)
            if agent is not None and agent.kind != name:
                raise ValueError(
                    f"config agents: {name!r} is of kind {agent.kind!r}; the health check runs the {name} "
                    f"agent under that name (rename yours)"
                )
        return [
            names.verify_result(agent, task_id, 1)
            for agent in HEALTHCHECK_AGENTS
            for task_id in self._tasks(task)
        ]

    def healthcheck_repeats(self, task: str | None = None) -> list[str]:
        """The repeated verifications of the health check's oracle runs (`verify.repeats`): a verdict that
        changes from one verification to the next is reported."""
        return [
            names.verify_result("oracle", task_id, 1, repeat)
            for task_id in self._tasks(task)
            for repeat in range(2, self.verify_repeats + 1)
        ]

    def summary_inputs(self) -> dict[str, list[str]]:
        """What the summary is made from: every run's result, and its repeated verifications."""
        return {"results": self.results(), "repeats": self.repeated_results()}

    def task_sentinels(self) -> list[str]:
        return [names.task_sentinel(task_id) for task_id in self.tasks]

    def releases(self, purpose: Purpose) -> list[str]:
        """The task images' releases the target of `purpose` waits for (`images: {keep: bases}`; none
        otherwise): one per task whose image its jobs use."""
        if self.keep is not Keep.BASES:
            return []
        return [names.task_image_release(task_id, purpose) for task_id in self.tasks]

    def release_inputs(self, task_id: str, purpose: Purpose) -> list[str]:
        """What the release of a task's image for `purpose` waits for: the outputs of that purpose's jobs
        that run in it (a run's verdict comes after its solve step)."""
        match purpose:
            case Purpose.RUNS:
                return [*self.results(task_id), *self.repeated_results(task_id)]
            case Purpose.HEALTHCHECK:
                checks = [names.network_check(task_id)]
                return [*self.healthcheck_results(task_id), *self.healthcheck_repeats(task_id), *checks]
            case Purpose.VALIDATION:
                return self.validation_phases(task_id)
            case Purpose.REGRADE:
                return self.regrade_results(task_id)

    def healthcheck_inputs(self) -> dict[str, list[str]]:
        """What the health check's table is made from: the oracle and nop runs (and repeats), the probes."""
        return {
            "runs": self.healthcheck_results(),
            "repeats": self.healthcheck_repeats(),
            "checks": self.network_checks(),
        }

    def network_checks(self) -> list[str]:
        return [names.network_check(task_id) for task_id in self.tasks]

    def network_check_inputs(self, task_id: str) -> list[str]:
        """A task's network probe depends on its image and its task.toml (the agent phase's policy)."""
        return [
            names.task_sentinel(task_id),
            str(self.tasks[task_id].path.relative_to(self.root) / "task.toml"),
        ]


class LegacyResultsError(RuntimeError):
    """Results of an older layout are in the results tree; the message says what to run."""


def _repository_facts(task: Task) -> dict[str, Any]:
    """What both steps of a run read of task.toml besides their phase: the repository and the limits."""
    return {
        "repo_dir": task.repo_dir,
        "base_commit": task.base_commit,
        "environment": asdict(task.environment),
    }


def _select(tasks: dict[str, Task], wanted: str | list[str], exclude: list[str]) -> dict[str, Task]:
    ids = list(tasks) if wanted == "all" else list(wanted)
    for key, listed in (("tasks", ids), ("exclude", exclude)):
        unknown = [i for i in listed if i not in tasks]
        if unknown:
            named = "; ".join(f"`{i}`{did_you_mean(i, tasks)}" for i in unknown[:10])
            more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
            raise ValueError(f"{key}: unknown task id(s) {named}{more}")
    return {i: tasks[i] for i in ids if i not in exclude}


def missing_predictions(agent: Agent, predictions: dict[str, Prediction], tasks: Iterable[str]) -> str | None:
    """A warning naming the selected tasks a predictions file has no line for (they score 0)."""
    lacking = sorted(t for t in tasks if t not in predictions)
    if not lacking:
        return None
    shown = ", ".join(lacking[:10]) + (f", ... (+{len(lacking) - 10})" if len(lacking) > 10 else "")
    return (
        f"kotlin-bench: warning: agent {agent.name}: {len(lacking)} selected task(s) have no prediction in "
        f"{agent.predictions} and will score 0 (no_prediction): {shown}; add them, or leave them out with `exclude:`"
    )
