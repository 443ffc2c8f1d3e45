"""Ours against the published files, file kind by file kind, and the whole check."""

from __future__ import annotations

import hashlib
import re
import tempfile
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kotlin_bench.dataset.fidelity.facts import (
    AGENT_TOOLS,
    our_preparation,
    our_seal,
    our_verifier,
    parse_dockerfile,
    parse_init_script,
    published_preparation,
    published_seal,
    published_verifier,
)
from kotlin_bench.dataset.fidelity.model import Difference, FidelityReport, Impact
from kotlin_bench.dataset.fidelity.probes import PROBES, run_scorer
from kotlin_bench.dataset.materialize import PublishedReader, PublishedSource
from kotlin_bench.dataset.spec import Dataset, TaskSpec

# --------------------------------------------------------------------------- comparison


class _Compare:
    """Collects the differences of one dataset against one published tree."""

    def __init__(self, dataset: Dataset, report: FidelityReport) -> None:
        self.dataset, self.report = dataset, report

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


def compare_scorers(cmp: _Compare, tasks: Sequence[tuple[TaskSpec, Path, bytes]], tmp: Path) -> None:
    """Run each distinct published scorer and ours on every probe, with each task's own options."""
    cache: dict[tuple[str, str, tuple[str, ...]], str] = {}
    for task, ours_script, published_source in tasks:
        digest = hashlib.sha256(published_source).hexdigest()
        published_script = tmp / "published" / digest / "junit_compare.py"
        if not published_script.is_file():
            published_script.parent.mkdir(parents=True, exist_ok=True)
            published_script.write_bytes(published_source)
        options = tuple(a for s in task.strip_name_suffixes for a in ("--strip-name-suffix", s))
        for probe in PROBES:
            o_key = (hashlib.sha256(ours_script.read_bytes()).hexdigest(), probe.name, options)
            p_key = (digest, probe.name, ())
            if o_key not in cache:
                cache[o_key] = run_scorer(ours_script, probe, tmp / "run", options)
            if p_key not in cache:
                cache[p_key] = run_scorer(published_script, probe, tmp / "run")
            cmp.add(f"scorer.{_slug(probe.name)}", Impact.BEHAVIOUR, cache[o_key], cache[p_key], task)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def compare_task(
    cmp: _Compare, task: TaskSpec, task_dir: Path, read: Callable[[str], bytes | None]
) -> bytes | None:
    """Every file of one task that has a published counterpart; returns the published scorer, if any."""
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
        )
        cmp.facts("verifier", our_verifier(task_dir), published_verifier(test_sh), impacts, task)
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
    return read("tests/junit_compare.py")


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
    cmp.add(f"{key}.clone", Impact.BEHAVIOUR, ours.clone, published.clone)


# --------------------------------------------------------------------------- the check


def check(
    dataset: Dataset,
    tasks_dir: Path,
    bases_dir: Path,
    source: PublishedSource,
    only: Sequence[str] | None = None,
) -> FidelityReport:
    """Compare every selected task (and every base) with the published benchmark."""
    reader = PublishedReader(source)
    report = FidelityReport()
    cmp = _Compare(dataset, report)
    scorers: list[tuple[TaskSpec, Path, bytes]] = []
    for task in dataset.select(only):
        task_dir = tasks_dir / task.id
        if reader.read_path(reader.task_path(task.id, "task.toml")) is None:
            report.missing.append(f"{task.id} (no published task directory)")
            continue

        def read(rel: str, task_id: str = task.id) -> bytes | None:
            return reader.read_path(reader.task_path(task_id, rel))

        published_scorer = compare_task(cmp, task, task_dir, read)
        if published_scorer is not None:
            report.count("tests/junit_compare.py (run on the probes)")
            scorers.append((task, task_dir / "tests/junit_compare.py", published_scorer))
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-fidelity.") as tmp:
        compare_scorers(cmp, scorers, Path(tmp))
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
