"""Ours against the published files, file kind by file kind, and the whole check."""

from __future__ import annotations

import dataclasses
import hashlib
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from kotlin_bench.dataset.fidelity.facts import (
    AGENT_TOOLS,
    agent_phase,
    our_preparation,
    our_seal,
    our_starting_tree,
    our_verifier,
    parse_dockerfile,
    parse_init_script,
    published_preparation,
    published_seal,
    published_starting_tree,
    published_verifier,
    size_cap,
)
from kotlin_bench.dataset.fidelity.model import Difference, FidelityReport, Impact
from kotlin_bench.dataset.fidelity.probes import PROBES, REPORT_PROBES, Pipeline, run_pipeline, run_scorer
from kotlin_bench.dataset.materialize import PublishedReader, PublishedSource
from kotlin_bench.dataset.spec import Dataset, TaskSpec

# What a runner adds to the environment of an agent phase in a network mode with these allowed hosts.
AgentEnv = Callable[[str, Sequence[str]], Mapping[str, str]]
# The published runner (Harbor 0.25) enforces an allowlist with a transparent egress sidecar: it adds no
# variable to the agent's environment, whatever the mode.
PUBLISHED_AGENT_ENV: Mapping[str, str] = {}

# --------------------------------------------------------------------------- comparison


class _Compare:
    """Collects the differences of one dataset against one published tree."""

    def __init__(self, dataset: Dataset, report: FidelityReport, carries_agent_head: bool = False) -> None:
        self.dataset, self.report = dataset, report
        self.carries_agent_head = carries_agent_head  # our hand-off makes the agent's commits HEAD again

    def add(self, key: str, impact: Impact, ours: Any, published: Any, task: TaskSpec | None = None) -> None:
        if ours == published:
            return
        task_id = task.id if task else None
        reason = next((i.reason for i in self.dataset.intended if i.covers(key, task_id)), None)
        self.report.differences.append(
            Difference(key, impact, _show(ours), _show(published), task_id, reason)
        )

    def facts(
        self, prefix: str, ours: Any, published: Any, impacts: Mapping[str, Impact], task: TaskSpec | None
    ) -> None:
        for name, impact in impacts.items():
            self.add(f"{prefix}.{name}", impact, getattr(ours, name), getattr(published, name), task)


def _show(value: Any) -> str:
    if isinstance(value, (frozenset, set)):
        value = sorted(value)
    if isinstance(value, tuple) and value and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return ", ".join(f"{k}={v}" for k, v in value) or "(none)"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "(none)"
    return "(none)" if value is None else str(value)


def _toml(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def _network(table: Mapping[str, Any], environment: Mapping[str, Any]) -> str:
    if "network_mode" in table:
        return str(table["network_mode"])
    if "network_mode" in environment:
        return str(environment["network_mode"])
    return "public" if environment.get("allow_internet", True) else "no-network"


def compare_task_toml(cmp: _Compare, task: TaskSpec, ours: str, published: str) -> None:
    o, p = _toml(ours), _toml(published)
    for phase in ("verifier", "agent"):
        po, pp = o.get(phase, {}), p.get(phase, {})
        cmp.add(
            f"task_toml.{phase}.timeout_sec",
            Impact.BEHAVIOUR,
            po.get("timeout_sec"),
            pp.get("timeout_sec"),
            task,
        )
        cmp.add(
            f"task_toml.{phase}.network_mode",
            Impact.BEHAVIOUR,
            _network(po, o.get("environment", {})),
            _network(pp, p.get("environment", {})),
            task,
        )
        cmp.add(
            f"task_toml.{phase}.allowed_hosts",
            Impact.BEHAVIOUR,
            sorted(po.get("allowed_hosts") or []),
            sorted(pp.get("allowed_hosts") or []),
            task,
        )
    eo, ep = o.get("environment", {}), p.get("environment", {})
    for key in ("build_timeout_sec", "cpus", "memory_mb"):
        cmp.add(f"task_toml.environment.{key}", Impact.BEHAVIOUR, eo.get(key), ep.get(key), task)
    cmp.add("task_toml.environment.network_mode", Impact.BEHAVIOUR, _network(eo, eo), _network(ep, ep), task)
    cmp.add(
        "task_toml.verifier.implemented",
        Impact.COSMETIC,
        o.get("verifier", {}).get("implemented"),
        p.get("verifier", {}).get("implemented"),
        task,
    )
    so, sp = o.get("metadata", {}).get("source", {}), p.get("metadata", {}).get("source", p.get("source", {}))
    for key in sorted(set(so) | set(sp)):
        cmp.add(
            f"task_toml.metadata.source.{key}", Impact.COSMETIC, _show(so.get(key)), _show(sp.get(key)), task
        )


@dataclass(frozen=True)
class PublishedScripts:
    """A published task's scorer and collector (None: the task has none)."""

    scorer: bytes | None
    collector: bytes | None


def _stored(tmp: Path, data: bytes, name: str) -> tuple[Path, str]:
    """`data` written once under `tmp` by its digest; the path and the digest."""
    digest = hashlib.sha256(data).hexdigest()
    path = tmp / "published" / digest / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path, digest


def _options(task: TaskSpec) -> tuple[str, ...]:
    return tuple(a for s in task.strip_name_suffixes for a in ("--strip-name-suffix", s))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# What a probe gave a script, by the digests of the scripts, the options and the probe: a script's result
# depends on nothing else, so each is run once per process.
_RESULTS: dict[tuple[str, ...], str] = {}


def compare_scorers(
    cmp: _Compare, tasks: Sequence[tuple[TaskSpec, Path, PublishedScripts]], tmp: Path
) -> None:
    """Run each distinct published scorer and ours on every scorer probe, with each task's own options,
    and each distinct published collector-and-scorer pipeline and ours on every report probe."""
    cache = _RESULTS

    def once(key: tuple[str, ...], run: Callable[[], str]) -> str:
        if key not in cache:
            cache[key] = run()
        return cache[key]

    for task, tests_dir, published in tasks:
        if published.scorer is None:
            continue
        ours_scorer, options = tests_dir / "junit_compare.py", _options(task)
        scorer, scorer_digest = _stored(tmp, published.scorer, "junit_compare.py")
        ours_digest = _digest(ours_scorer)
        for probe in PROBES:
            o = once(
                (ours_digest, probe.name, *options),
                partial(run_scorer, ours_scorer, probe, tmp / "run", options),
            )
            pub = once((scorer_digest, probe.name), partial(run_scorer, scorer, probe, tmp / "run"))
            cmp.add(f"scorer.{_slug(probe.name)}", Impact.BEHAVIOUR, o, pub, task)
        if published.collector is None:
            continue
        collector, collector_digest = _stored(tmp, published.collector, "kotlin_logs_collector.sh")
        ours = Pipeline(tests_dir / "kotlin_logs_collector.sh", ours_scorer, False, options)
        theirs = Pipeline(collector, scorer, True)
        ours_key = ("pipeline", _digest(ours.collector), ours_digest, *options)
        theirs_key = ("pipeline", collector_digest, scorer_digest)
        for report in REPORT_PROBES:
            o = once((*ours_key, report.name), partial(run_pipeline, ours, report, tmp / "pipe"))
            pub = once((*theirs_key, report.name), partial(run_pipeline, theirs, report, tmp / "pipe"))
            cmp.add(f"pipeline.{_slug(report.name)}", Impact.BEHAVIOUR, o, pub, task)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def compare_task(
    cmp: _Compare, task: TaskSpec, task_dir: Path, read: Callable[[str], bytes | None]
) -> PublishedScripts:
    """Every file of one task that has a published counterpart; returns the published scorer and collector
    (run on the probes by `compare_scorers`)."""
    report = cmp.report

    def text(rel: str) -> str | None:
        data = read(rel)
        if data is None:
            report.missing.append(f"{task.id}/{rel}")
            return None
        report.count(rel)
        return data.decode("utf-8", errors="replace")

    toml = text("task.toml")
    if toml is not None:
        compare_task_toml(cmp, task, (task_dir / "task.toml").read_text(encoding="utf-8"), toml)
    dockerfile = text("environment/Dockerfile")
    prepare = text("environment/prepare.sh")
    patch_names = {"warmup.patch": "warmup-patch"}
    if task.warmup_patch is not None:
        patch_names[Path(task.warmup_patch.published_file).name] = "warmup-patch"
    if prepare is not None:
        impacts = _behaviour(
            "base_commit", "git_config", "info_exclude", "warmup_env", "warmup_steps", "on_failure"
        )
        ours_prep, pub_prep = (
            our_preparation(task_dir, patch_names),
            published_preparation(prepare, patch_names),
        )
        cmp.facts("prepare", ours_prep, pub_prep, impacts, task)
        impacts = _behaviour("test_results", "tracked_changes", "untracked_files", "clean_tree_required")
        pub_tree = published_starting_tree(prepare, dockerfile or "")
        cmp.facts("starting_tree", our_starting_tree(task_dir), pub_tree, impacts, task)
    if dockerfile is not None:
        ours_df = parse_dockerfile((task_dir / "environment/Dockerfile").read_text(encoding="utf-8"))
        pub_df = parse_dockerfile(dockerfile)
        cmp.facts(
            "task_dockerfile",
            ours_df,
            pub_df,
            _behaviour("base", "workdir", "env", "user"),
            task,
        )
        base_apt = _base_apt(cmp.dataset, task)
        tools_ours = sorted(t for t in AGENT_TOOLS if t in ours_df.apt | base_apt)
        tools_pub = sorted(t for t in AGENT_TOOLS if t in pub_df.apt | base_apt)
        cmp.add("task_dockerfile.agent_tools", Impact.BEHAVIOUR, tools_ours, tools_pub, task)
        where_ours = "task image" if set(AGENT_TOOLS) <= ours_df.apt else "base image"
        where_pub = "task image" if set(AGENT_TOOLS) <= pub_df.apt else "base image"
        cmp.add("task_dockerfile.agent_tools_installed_in", Impact.RESTRUCTURED, where_ours, where_pub, task)
        seal = read("environment/seal_git_history.sh")
        if seal is None and "seal_git_history" in dockerfile:
            report.missing.append(f"{task.id}/environment/seal_git_history.sh (run by its Dockerfile)")
        else:
            report.count("environment/seal_git_history.sh" if seal else "seal (none published)")
            pub_seal = published_seal(
                dockerfile, seal.decode("utf-8", "replace") if seal else None, prepare or ""
            )
            seal_facts = _behaviour("sealed", "ancestors_kept", "branch")
            cmp.facts("seal", our_seal(task_dir), pub_seal, seal_facts, task)
    test_sh = text("tests/test.sh")
    if test_sh is not None:
        impacts = _behaviour(
            "test_command",
            "env",
            "restores_test_patch_paths",
            "apply_fails_closed",
            "deletes_stale_reports",
            "reward_zero_first",
            "reward_one_without_reports",
            "other_processes",
            "restored_from",
            "outside_repo",
        )
        ours, theirs = our_verifier(task_dir, cmp.carries_agent_head), published_verifier(test_sh)
        if not (ours.restores_test_patch_paths and theirs.restores_test_patch_paths):
            # where the paths are restored from matters only when both restore them (else: that fact)
            ours = dataclasses.replace(ours, restored_from=theirs.restored_from)
        cmp.facts("verifier", ours, theirs, impacts, task)
    if task.init_script:
        init = text(f"environment/{task.init_script}")
        if init is not None:
            ours_init = parse_init_script(
                (task_dir / "environment" / task.init_script).read_text(encoding="utf-8")
            )
            cmp.facts(
                "init_script",
                ours_init,
                parse_init_script(init),
                _behaviour("patterns", "no_match_passes"),
                task,
            )
    solve = text("solution/solve.sh")
    if solve is not None:
        ours_solve = (task_dir / "solution/solve.sh").read_text(encoding="utf-8")
        cmp.add(
            "solve.applies_fix_patch", Impact.BEHAVIOUR, _applies_fix(ours_solve), _applies_fix(solve), task
        )
    compose = text("environment/docker-compose.yaml")
    if compose is not None:
        image = re.compile(r"^\s*image:\s*(\S+)", re.MULTILINE)
        ours_compose = (task_dir / "environment/docker-compose.yaml").read_text(encoding="utf-8")
        cmp.add("compose.image", Impact.COSMETIC, image.findall(ours_compose), image.findall(compose), task)
    scripts = PublishedScripts(read("tests/junit_compare.py"), read("tests/kotlin_logs_collector.sh"))
    for kind, data, ours_file in (
        ("scorer", scripts.scorer, "junit_compare.py"),
        ("collector", scripts.collector, "kotlin_logs_collector.sh"),
    ):
        if data is not None:
            ours_text = (task_dir / "tests" / ours_file).read_text(encoding="utf-8")
            cmp.add(
                f"{kind}.size_cap",
                Impact.BEHAVIOUR,
                size_cap(ours_text),
                size_cap(data.decode("utf-8", "replace")),
                task,
            )
    return scripts


def _behaviour(*facts: str) -> dict[str, Impact]:
    return dict.fromkeys(facts, Impact.BEHAVIOUR)


def _applies_fix(script: str) -> bool:
    """Whether an oracle script applies the solution's fix.patch with git apply."""
    return (
        "fix.patch" in script and re.search(r"^\s*(?:if !\s*)?git apply\b", script, re.MULTILINE) is not None
    )


def _base_apt(dataset: Dataset, task: TaskSpec) -> frozenset[str]:
    base = dataset.base(task.base_image)
    return (
        frozenset(base.extra_apt_packages) | {"git", "python3", "tmux"}
        if base.recipe is None
        else frozenset()
    )


def compare_base(cmp: _Compare, ours_text: str, published_text: str, image: str) -> None:
    ours, published = parse_dockerfile(ours_text), parse_dockerfile(published_text)
    key = f"base[{image}]"
    cmp.add(f"{key}.jdk_image", Impact.BEHAVIOUR, ours.base, published.base)
    android = {"PATH", "ANDROID_HOME", "ANDROID_SDK_ROOT"}
    env_o = tuple((k, v) for k, v in ours.env if k not in android)
    env_p = tuple((k, v) for k, v in published.env if k not in android)
    cmp.add(f"{key}.env", Impact.BEHAVIOUR, env_o, env_p)
    cmp.add(
        f"{key}.android_env",
        Impact.RESTRUCTURED,
        tuple(k for k, _ in ours.env if k in android),
        tuple(k for k, _ in published.env if k in android),
    )
    cmp.add(f"{key}.apt_missing", Impact.BEHAVIOUR, sorted(published.apt - ours.apt - {"bash"}), [])
    cmp.add(f"{key}.apt_extra", Impact.RESTRUCTURED, sorted(ours.apt - published.apt), [])
    cmp.add(f"{key}.android_sdk", Impact.BEHAVIOUR, ours.sdk, published.sdk)
    cmp.add(f"{key}.android_cmdline_tools", Impact.BEHAVIOUR, ours.cmdline_tools, published.cmdline_tools)
    cmp.add(f"{key}.sdkmanager_jdk", Impact.BEHAVIOUR, ours.sdkmanager_jdk, published.sdkmanager_jdk)
    cmp.add(f"{key}.clone", Impact.BEHAVIOUR, ours.clone, published.clone)


# --------------------------------------------------------------------------- the check


def _image_env(recipes: Sequence[str | None]) -> dict[str, str]:
    """The ENV of an image built by these Dockerfiles in order (a base, then the task's)."""
    env: dict[str, str] = {}
    for text in recipes:
        if text is not None:
            env.update(parse_dockerfile(text).env)
    return env


def _published_base(dockerfile: str | None, read_root: Callable[[str], bytes | None]) -> str | None:
    """The published base recipe the task Dockerfile starts FROM (`bases/<repo_key>/Dockerfile.<tag>`)."""
    base = parse_dockerfile(dockerfile).base if dockerfile else None
    match = re.match(r"^kotlin-bench/([^:/]+):(\S+)$", base or "")
    data = read_root(f"bases/{match[1]}/Dockerfile.{match[2]}") if match else None
    return data.decode("utf-8", "replace") if data is not None else None


def compare_agent_phase(
    cmp: _Compare,
    task: TaskSpec,
    ours: tuple[str | None, str],
    published: tuple[str | None, str | None],
    agent_env: AgentEnv,
) -> None:
    """What programs of the agent phase see and print: the image's ENV plus what the runner adds."""
    limits = task.limits
    added = agent_env(limits.agent_network_mode, limits.agent_allowed_hosts)
    ours_phase = agent_phase(_image_env(ours), added)
    published_phase = agent_phase(_image_env(published), PUBLISHED_AGENT_ENV)
    cmp.facts("agent_phase", ours_phase, published_phase, _behaviour("added_env", "jvm_banner"), task)


def check(
    dataset: Dataset,
    tasks_dir: Path,
    bases_dir: Path,
    source: PublishedSource,
    only: Sequence[str] | None = None,
    *,
    agent_env: AgentEnv,
    carries_agent_head: bool,
) -> FidelityReport:
    """Compare every selected task (and every base) with the published benchmark. `agent_env` is what our
    runner adds to an agent phase's environment (`kotlin_bench.engine.network.phase_env`);
    `carries_agent_head` whether our hand-off makes the agent's commits HEAD of the fresh verifier
    (`kotlin_bench.runs.handoff.carries_agent_head`)."""
    reader = PublishedReader(source)
    report = FidelityReport()
    cmp = _Compare(dataset, report, carries_agent_head)
    scripts: list[tuple[TaskSpec, Path, PublishedScripts]] = []
    for task in dataset.select(only):
        task_dir = tasks_dir / task.id
        if reader.read_path(reader.task_path(task.id, "task.toml")) is None:
            report.missing.append(f"{task.id} (no published task directory)")
            continue

        def read(rel: str, task_id: str = task.id) -> bytes | None:
            return reader.read_path(reader.task_path(task_id, rel))

        published = compare_task(cmp, task, task_dir, read)
        if published.scorer is not None:
            report.count("tests/junit_compare.py (run on the probes)")
        if published.collector is not None:
            report.count("tests/kotlin_logs_collector.sh (run on the report probes)")
        scripts.append((task, task_dir / "tests", published))
        dockerfile = read("environment/Dockerfile")
        published_dockerfile = dockerfile.decode("utf-8", "replace") if dockerfile is not None else None
        base = dataset.base(task.base_image)
        ours_base = bases_dir / base.generated_recipe
        compare_agent_phase(
            cmp,
            task,
            (
                ours_base.read_text(encoding="utf-8") if ours_base.is_file() else None,
                (task_dir / "environment/Dockerfile").read_text(encoding="utf-8"),
            ),
            (_published_base(published_dockerfile, reader.read_path), published_dockerfile),
            agent_env,
        )
        report.count("agent phase (environment and JVM output)")
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-fidelity.") as tmp:
        compare_scorers(cmp, scripts, Path(tmp))
    for base in dataset.bases:
        if base.recipe is not None:
            continue
        published = reader.read_path(f"bases/{base.repo_key}/Dockerfile.{base.tag}")
        if published is None:
            report.missing.append(f"bases/{base.repo_key}/Dockerfile.{base.tag}")
            continue
        report.count("base recipe")
        ours = (bases_dir / base.generated_recipe).read_text(encoding="utf-8")
        compare_base(cmp, ours, published.decode("utf-8", errors="replace"), base.image)
    return report
