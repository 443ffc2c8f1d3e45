"""Fidelity: our generated task directories and base recipes against the published benchmark's, compared by
meaning, not by bytes.

For every file of ours that has a published counterpart, the facts that decide a run are read from both
sides and compared:

- `task.toml`: the limits and network policy of every phase; metadata (cosmetic);
- the task Dockerfile: the base image, WORKDIR, ENV, USER, the seal step, the agent's tools;
- preparation (published `prepare.sh`; ours `prepare.env`, `warmup.sh` and the shared `prepare.sh`): the
  base commit, git settings, the warm-up's environment, steps and failure policy, a shallow history;
- the verifier (`test.sh`, ours with `task.env`): the test command and its environment, whether the
  paths of the test patch are restored first, whether a test patch that does not apply fails closed,
  stale reports deleted, reward 0 written first, a reward of 1 without JUnit reports;
- the scorer (`junit_compare.py`): behaviour, by running both scorers on the same probes of our own (a
  skipped and failed testcase, bytes that are not UTF-8, comments that break XML, nested testcases,
  Kotlin Multiplatform suffixes, a DOCTYPE...) and comparing their rewards;
- the seal: whether history is sealed, the base's ancestors kept, the branch HEAD is on;
- the flaky-test init script: its patterns and whether a filter without tests fails the task;
- `solve.sh`, `docker-compose.yaml`, and every base recipe (final JDK image, ENV, apt and Android SDK
  packages, clone URL).

Each difference is `cosmetic` (no effect on any run), `restructured` (the same effect reached another way)
or `behaviour-changing`. A behaviour-changing difference that the dataset specification does not list in
`fidelity.intended` (with its reason) fails the check.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from kotlin_bench.dataset import Dataset, TaskSpec
from kotlin_bench.materialize import PublishedReader, PublishedSource

COMMAND_RE = re.compile(r"(?:^|[\s(])(?:\./gradlew|xvfb-run|ktest)\b")
EXPORT_RE = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.MULTILINE)
APPLY_STEP_RE = re.compile(r"^\s*(?:\()?git apply(?:\s+--\S+)*\s+(\S+\.patch)\b")
GIT_CONFIG_RE = re.compile(r"^\s*git config (?!--global|--system)([a-z][\w.-]*)\s+(\S+)\s*$", re.MULTILINE)
INFO_EXCLUDE_RE = re.compile(r"""echo\s+["']?([^"'\s>]+)["']?\s*>>\s*\S*info/exclude""")
SHA_RE = re.compile(r"\b[0-9a-f]{40}\b")
AGENT_TOOLS = ("tmux", "python3")


class Impact(StrEnum):
    COSMETIC = "cosmetic"
    RESTRUCTURED = "restructured"
    BEHAVIOUR = "behaviour-changing"


@dataclass(frozen=True)
class Difference:
    key: str  # what differs, e.g. "verifier.restore_test_patch_paths"
    impact: Impact
    ours: str
    published: str
    task: str | None = None  # None: a base recipe or the dataset
    intended: str | None = None  # the specification's reason, when it lists the difference


@dataclass
class FidelityReport:
    differences: list[Difference] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)  # file kind -> how many pairs
    missing: list[str] = field(default_factory=list)  # published counterparts that do not exist

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.impact is Impact.BEHAVIOUR and not d.intended]

    def count(self, kind: str) -> None:
        self.compared[kind] = self.compared.get(kind, 0) + 1


# --------------------------------------------------------------------------- reading facts


def _split(text: str) -> list[str]:
    """Shell words; a line that is not whole shell syntax falls back to whitespace words."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def _code_lines(text: str) -> list[str]:
    """Lines of a shell script without comments and continuation backslashes joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _strip_ignore(line: str) -> tuple[str, bool]:
    """A command line without its failure-ignoring tail (`|| true`, our `|| echo ... (ignored)`), and
    whether it had one."""
    match = re.match(r"^\(?(.*?)\)?\s*\|\|\s*(?:true|echo .*\(ignored\).*)$", line)
    return (match[1].strip(), True) if match else (line, False)


def exports(text: str) -> dict[str, str]:
    found = {}
    for name, value in EXPORT_RE.findall(text):
        parts = _split(value) if value.strip() else [""]
        found[name] = parts[0] if parts else ""
    return found


def test_command_of(text: str) -> str | None:
    """The test command line of a published-style test.sh (without `|| true`)."""
    for line in _code_lines(text):
        if COMMAND_RE.search(line) and not line.startswith(("export ", "echo ")):
            return _strip_ignore(line)[0]
    return None


@dataclass(frozen=True)
class Preparation:
    """What preparing a task image does, as facts."""

    base_commit: str | None
    git_config: tuple[tuple[str, str], ...]
    info_exclude: tuple[str, ...]
    warmup_env: tuple[tuple[str, str], ...]
    warmup_steps: tuple[str, ...]
    on_failure: str  # abort | ignore
    shallow: bool


def _steps(lines: Iterable[str], patch_names: Mapping[str, str], set_e: bool) -> tuple[tuple[str, ...], str]:
    steps, ignored = [], []
    for line in lines:
        apply = APPLY_STEP_RE.match(line)
        if apply and not line.startswith("git apply --index"):
            steps.append("apply " + patch_names.get(Path(apply[1]).name, Path(apply[1]).name))
            continue
        if COMMAND_RE.search(line):
            command, ignore = _strip_ignore(line)
            steps.append(command)
            ignored.append(ignore)
    on_failure = "ignore" if (ignored and all(ignored)) or not set_e else "abort"
    return tuple(steps), on_failure


def published_preparation(prepare: str, patch_names: Mapping[str, str]) -> Preparation:
    lines = _code_lines(prepare)
    checkout = next(
        (
            m[0]
            for line in lines
            if "checkout" in line or "BASE_COMMIT=" in line
            for m in [SHA_RE.findall(line)]
            if m
        ),
        None,
    )
    set_e = any(re.match(r"^set -\w*e", line) for line in lines)
    steps, on_failure = _steps(lines, patch_names, set_e)
    return Preparation(
        base_commit=checkout,
        git_config=tuple(GIT_CONFIG_RE.findall(prepare)),
        info_exclude=tuple(INFO_EXCLUDE_RE.findall(prepare)),
        warmup_env=tuple(sorted(exports(prepare).items())),
        warmup_steps=steps,
        on_failure=on_failure,
        shallow="--depth" in prepare,
    )


def _bash_array(env: str, name: str) -> tuple[str, ...]:
    match = re.search(rf"^{name}=\((.*)\)$", env, re.MULTILINE)
    return tuple(_split(match[1])) if match else ()


def our_preparation(task_dir: Path, patch_names: Mapping[str, str]) -> Preparation:
    env = (task_dir / "environment/prepare.env").read_text(encoding="utf-8")
    warmup = (task_dir / "environment/warmup.sh").read_text(encoding="utf-8")
    dockerfile = (task_dir / "environment/Dockerfile").read_text(encoding="utf-8")
    pairs = _bash_array(env, "GIT_CONFIG")
    lines = [line for line in _code_lines(warmup) if not line.startswith(("set ", "cd ", "export "))]
    steps, on_failure = _steps(lines, patch_names, "set -euo pipefail" in warmup)
    base = re.search(r"^BASE_COMMIT=(\S+)$", env, re.MULTILINE)
    return Preparation(
        base_commit=base[1] if base else None,
        git_config=tuple(zip(pairs[::2], pairs[1::2], strict=False)),
        info_exclude=_bash_array(env, "GIT_INFO_EXCLUDE"),
        warmup_env=tuple(sorted(exports(warmup).items())),
        warmup_steps=steps,
        on_failure=on_failure,
        shallow=bool(re.search(r"seal_git_history\.sh .*--shallow", dockerfile)),
    )


@dataclass(frozen=True)
class Verifier:
    """What a task's verifier does, as facts."""

    test_command: str | None
    env: tuple[tuple[str, str], ...]
    restores_test_patch_paths: bool
    apply_fails_closed: bool
    deletes_stale_reports: bool
    reward_zero_first: bool
    reward_one_without_reports: bool


def _verifier_facts(script: str, test_command: str | None, env: Mapping[str, str]) -> Verifier:
    command_at = script.find(test_command) if test_command and test_command in script else len(script)
    zero = re.search(r"echo 0\s*>\s*\S*reward\.txt", script)
    return Verifier(
        test_command=test_command,
        env=tuple(sorted(env.items())),
        restores_test_patch_paths=re.search(r"restore --source=HEAD|checkout HEAD --", script) is not None,
        apply_fails_closed=re.search(r"if\s+!\s*git apply", script) is not None,
        deletes_stale_reports=re.search(r"find .*TEST\*\.xml.*-delete", script) is not None,
        reward_zero_first=zero is not None and zero.start() < command_at,
        reward_one_without_reports=re.search(r"echo 1\s*>\s*\S*reward\.txt", script) is not None,
    )


def published_verifier(test_sh: str) -> Verifier:
    return _verifier_facts(test_sh, test_command_of(test_sh), exports(test_sh))


def our_verifier(task_dir: Path) -> Verifier:
    script = (task_dir / "tests/test.sh").read_text(encoding="utf-8")
    env_text = (task_dir / "tests/task.env").read_text(encoding="utf-8")
    command = re.search(r"^TEST_COMMAND=(.*)$", env_text, re.MULTILINE)
    test_command = _split(command[1])[0] if command else None
    facts = _verifier_facts(script, None, exports(env_text))
    # Our test.sh runs "$TEST_COMMAND" after writing reward 0 (step 1) and deleting stale reports.
    return Verifier(
        test_command=test_command,
        env=facts.env,
        restores_test_patch_paths=facts.restores_test_patch_paths,
        apply_fails_closed=facts.apply_fails_closed,
        deletes_stale_reports=facts.deletes_stale_reports,
        reward_zero_first=facts.reward_zero_first,
        reward_one_without_reports=facts.reward_one_without_reports,
    )


@dataclass(frozen=True)
class Seal:
    sealed: bool
    ancestors_kept: bool
    branch: str | None


def published_seal(dockerfile: str, seal: str | None, prepare: str) -> Seal:
    if seal is None or "seal_git_history" not in dockerfile:
        return Seal(False, True, None)
    branch = re.search(r"checkout -B (\S+)", seal)
    return Seal(
        True, "--depth" not in prepare and "/shallow" not in seal, branch[1].strip('"') if branch else None
    )


def our_seal(task_dir: Path) -> Seal:
    dockerfile = (task_dir / "environment/Dockerfile").read_text(encoding="utf-8")
    seal = task_dir / "environment/seal_git_history.sh"
    if not seal.is_file() or "seal_git_history.sh" not in dockerfile:
        return Seal(False, True, None)
    branch = re.search(r"^branch=(\S+)$", seal.read_text(encoding="utf-8"), re.MULTILINE)
    shallow = re.search(r"seal_git_history\.sh .*--shallow", dockerfile) is not None
    return Seal(True, not shallow, branch[1] if branch else None)


@dataclass(frozen=True)
class Dockerfile:
    """The instructions that decide what a container of the image is (the final stage)."""

    base: str | None
    workdir: str | None
    env: tuple[tuple[str, str], ...]
    user: str | None
    apt: frozenset[str]
    sdk: frozenset[str]
    clone: str | None


def parse_dockerfile(text: str) -> Dockerfile:
    lines = _code_lines(text)
    final = max((i for i, line in enumerate(lines) if line.upper().startswith("FROM ")), default=-1)
    stage = lines[final:] if final >= 0 else lines
    base = stage[0].split()[1] if stage and stage[0].upper().startswith("FROM ") else None
    env: dict[str, str] = {}
    workdir = user = clone = None
    apt: set[str] = set()
    sdk: set[str] = set()
    for line in lines:  # packages and the SDK may come from an earlier stage (ours copies it in)
        for install in re.findall(r"apt-get install ([^&|;]*)", line):
            apt |= {w for w in _split(install) if not w.startswith("-")}
        if "sdkmanager" in line and "--licenses" not in line.split("&&")[-1]:
            tail = line.split("sdkmanager", 1)[1].split("sdkmanager")[-1]
            words = (w.strip("'\"") for w in _split(tail))
            sdk |= {w for w in words if ";" in w or w == "platform-tools"}
    for line in stage:
        word, _, rest = line.partition(" ")
        if word.upper() == "ENV":
            for item in _split(rest):
                if "=" in item:
                    key, _, value = item.partition("=")
                    env[key] = value
        elif word.upper() == "WORKDIR":
            workdir = rest.strip().rstrip("/") or "/"
        elif word.upper() == "USER":
            user = rest.strip()
        if "git clone" in line:
            clone = _split(line.split("git clone", 1)[1])[0]
    return Dockerfile(base, workdir, tuple(sorted(env.items())), user, frozenset(apt), frozenset(sdk), clone)


@dataclass(frozen=True)
class InitScript:
    patterns: tuple[str, ...]
    no_match_passes: bool


def parse_init_script(text: str) -> InitScript:
    patterns = re.findall(r"excludeTestsMatching\s*\(?\s*[\"']([^\"']+)[\"']", text)
    lines = [p.strip().strip(",").strip("'\"") for p in text.splitlines()]
    listed = [p for p in lines if p.startswith("*") and not p.startswith("*/")]
    no_match = re.search(r"setFailOnNoMatchingTests\(false\)|[Ff]ailOnNoMatchingTests\s*=\s*false", text)
    return InitScript(tuple(patterns or listed), no_match is not None)


# --------------------------------------------------------------------------- scorer probes


@dataclass(frozen=True)
class Probe:
    name: str
    xml: bytes
    expected: dict[str, Any]


def _expected(
    f2p: Sequence[str], p2p: Sequence[str] = (), unlisted_passed: Sequence[str] = ()
) -> dict[str, Any]:
    """Expected lists; `unlisted_passed` passed before the fix but is in no list (a regression check)."""
    passed = [*p2p, *unlisted_passed]
    return {
        "f2p_tests": list(f2p),
        "p2p_tests": list(p2p),
        "s2p_tests": [],
        "n2p_tests": [],
        "test_patch_result": {"passed_tests": passed, "failed_tests": list(f2p), "skipped_tests": []},
        "run_result": {"passed_tests": passed, "failed_tests": [], "skipped_tests": []},
    }


def _suite(*cases: str) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite>'
        + "".join(cases)
        + "</testsuite></testsuites>\n"
    ).encode()


def _case(name: str, body: str = "", cls: str = "p.T") -> str:
    return f'<testcase classname="{cls}" name="{name}">{body}</testcase>'


PROBES: tuple[Probe, ...] = (
    Probe("resolves", _suite(_case("fixed()"), _case("kept()")), _expected(["p.T.fixed()"], ["p.T.kept()"])),
    Probe(
        "f2p still failing",
        _suite(_case("fixed()", "<failure/>"), _case("kept()")),
        _expected(["p.T.fixed()"], ["p.T.kept()"]),
    ),
    Probe(
        "p2p regressed",
        _suite(_case("fixed()"), _case("kept()", "<failure/>")),
        _expected(["p.T.fixed()"], ["p.T.kept()"]),
    ),
    Probe(
        "skipped and failed in one testcase",
        _suite(_case("fixed()"), _case("kept()", "<skipped/><failure/>")),
        _expected(["p.T.fixed()"], unlisted_passed=["p.T.kept()"]),
    ),
    Probe(
        "a duplicate that fails",
        _suite(_case("fixed()"), _case("fixed()", "<failure/>")),
        _expected(["p.T.fixed()"]),
    ),
    Probe(
        "parameterized invocations ignored",
        _suite(_case("fixed()"), _case("fixed()[1]", "<failure/>")),
        _expected(["p.T.fixed()"]),
    ),
    Probe(
        "bytes that are not UTF-8",
        _suite(_case("fixed()"), _case("nBADBYTE()")).replace(b"BADBYTE", b"\xff\xfe"),
        _expected(["p.T.fixed()"]),
    ),
    Probe("a comment holding --", _suite("<!-- a -- b -->", _case("fixed()")), _expected(["p.T.fixed()"])),
    Probe(
        "nested testcases",
        _suite(_case("fixed()", _case("inner()", "<failure/>"))),
        _expected(["p.T.fixed()"], ["p.T.inner()"]),
    ),
    Probe("no test results", _suite(), _expected(["p.T.fixed()"])),
    Probe(
        "Kotlin Multiplatform target suffix",
        _suite(_case("fixed[desktop]"), _case("kept[jvm]")),
        _expected(["p.T.fixed"], ["p.T.kept"]),
    ),
    Probe(
        "a DOCTYPE",
        b'<?xml version="1.0"?><!DOCTYPE testsuites><testsuites>'
        + _suite(_case("fixed()")).split(b"<testsuites>", 1)[1],
        _expected(["p.T.fixed()"]),
    ),
)


def run_scorer(script: Path, probe: Probe, workdir: Path, options: Sequence[str] = ()) -> str:
    """The reward a junit_compare.py gives the probe ("0", "1", or what went wrong)."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "junit.xml").write_bytes(probe.xml)
    (workdir / "expected.json").write_text(json.dumps(probe.expected), encoding="utf-8")
    reward = workdir / "reward.txt"
    reward.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        str(script),
        "--xml",
        str(workdir / "junit.xml"),
        "--expected",
        str(workdir / "expected.json"),
        "--reward",
        str(reward),
        *options,
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    text = reward.read_text(encoding="utf-8").strip() if reward.is_file() else ""
    return text or f"no reward (exit {done.returncode})"


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


# --------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Group:
    """Differences that are the same but for the task."""

    key: str
    impact: Impact
    ours: str
    published: str
    intended: str | None
    tasks: tuple[str, ...]


def grouped(report: FidelityReport) -> list[Group]:
    groups: dict[tuple[str, Impact, str, str, str | None], list[str]] = {}
    for d in report.differences:
        groups.setdefault((d.key, d.impact, d.ours, d.published, d.intended), []).append(d.task or "")
    order = list(Impact)[::-1]
    return sorted(
        (Group(k, i, o, p, r, tuple(t for t in ts if t)) for (k, i, o, p, r), ts in groups.items()),
        key=lambda g: (order.index(g.impact), g.intended is not None, g.key),
    )


def _tasks_text(tasks: tuple[str, ...], total: int) -> str:
    if not tasks:
        return "-"
    if len(tasks) == total:
        return f"all {total}"
    return f"{len(tasks)}: " + ", ".join(tasks[:4]) + (", ..." if len(tasks) > 4 else "")


def render(report: FidelityReport, tasks_checked: int) -> str:
    import pandas as pd

    from kotlin_bench.render import Section, render_markdown

    rows = [
        {
            "impact": g.impact.value,
            "what": g.key,
            "ours": g.ours[:80],
            "published": g.published[:80],
            "tasks": _tasks_text(g.tasks, tasks_checked),
            "intended (reason)": g.intended or ("NO" if g.impact is Impact.BEHAVIOUR else ""),
        }
        for g in grouped(report)
    ]
    unexplained = {d.key for d in report.unexplained}
    verdict = (
        f"FAIL: {len(report.unexplained)} behaviour-changing difference(s) the specification does not list: "
        + ", ".join(sorted(unexplained))
        if unexplained
        else "OK: every behaviour-changing difference is listed as intended in the specification"
    )
    compared = ", ".join(f"{k} {v}" for k, v in sorted(report.compared.items()))
    sections = [
        Section("Verdict", [verdict, f"{tasks_checked} task(s) compared; files compared: {compared}."]),
        Section(
            "Differences",
            table=pd.DataFrame(
                rows, columns=["impact", "what", "ours", "published", "tasks", "intended (reason)"]
            ),
        ),
    ]
    if report.missing:
        sections.append(
            Section(
                "Not compared (no published counterpart)",
                [", ".join(report.missing[:40]) + (" ..." if len(report.missing) > 40 else "")],
            )
        )
    return render_markdown(sections, "Fidelity to the published benchmark")
