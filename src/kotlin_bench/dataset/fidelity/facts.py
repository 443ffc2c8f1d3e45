"""The facts that decide a run, read from a task's files (ours and the published ones)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

COMMAND_RE = re.compile(r"(?:^|[\s(])(?:\./gradlew|xvfb-run|ktest)\b")
EXPORT_RE = re.compile(r"^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.MULTILINE)
APPLY_STEP_RE = re.compile(r"^\s*(?:\()?git apply(?:\s+--\S+)*\s+(\S+\.patch)\b")
GIT_CONFIG_RE = re.compile(r"^\s*git config (?!--global|--system)([a-z][\w.-]*)\s+(\S+)\s*$", re.MULTILINE)
INFO_EXCLUDE_RE = re.compile(r"""echo\s+["']?([^"'\s>]+)["']?\s*>>\s*\S*info/exclude""")
SHA_RE = re.compile(r"\b[0-9a-f]{40}\b")
AGENT_TOOLS = ("tmux", "python3")


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
class StartingTree:
    """What the agent's image holds after preparation: what happens to the tree after the warm-up."""

    test_results: str  # kept | deleted
    tracked_changes: str  # kept | reverted
    untracked_files: str  # kept | removed | removed, ignored files too
    clean_tree_required: bool  # a check after the warm-up fails the image build on a changed tree


CLEAN_CHECK_RE = re.compile(r"check_git_changes\.sh|git status --porcelain|git diff --quiet")


def starting_tree(lines: Iterable[str]) -> StartingTree:
    """The effect on the tree of the shell lines that run after the warm-up (and until the agent starts)."""
    test_results, tracked, untracked, clean = "kept", "kept", "kept", False
    for line in lines:
        if re.search(r"\bgit reset\b.*--hard", line):
            tracked = "reverted"
        clean_flags = re.search(r"\bgit clean\s+(-\S+(?:\s+-\S+)*)", line)
        if clean_flags and "d" in clean_flags[1] and ("f" in clean_flags[1] or "--force" in clean_flags[1]):
            untracked = "removed, ignored files too" if "x" in clean_flags[1] else "removed"
            if "x" in clean_flags[1]:
                test_results = "deleted"
        if "test-results" in line and re.search(r"\brm\b|-delete\b", line):
            test_results = "deleted"
        if CLEAN_CHECK_RE.search(line):
            clean = True
    return StartingTree(test_results, tracked, untracked, clean)


def published_starting_tree(prepare: str, dockerfile: str) -> StartingTree:
    """Published: prepare.sh's lines after its last warm-up command, then the Dockerfile's steps after it."""
    lines = _code_lines(prepare)
    last = max((i for i, line in enumerate(lines) if COMMAND_RE.search(line)), default=len(lines) - 1)
    return starting_tree([*lines[last + 1 :], *_after(_code_lines(dockerfile), "prepare.sh")])


def _after(lines: list[str], marker: str) -> list[str]:
    """The lines after the first RUN step that mentions `marker` (none when none does)."""
    at = next((i for i, line in enumerate(lines) if line.upper().startswith("RUN ") and marker in line), None)
    return [] if at is None else lines[at + 1 :]


def _case_arm(lines: list[str], variable: str, value: str) -> list[str]:
    """`lines` with each `case "$<variable>" in ... esac` replaced by the body of the arm `value` selects."""
    out: list[str] = []
    arms: dict[str, list[str]] | None = None
    current: list[str] | None = None
    for line in lines:
        if arms is None:
            if re.match(rf'^case "?\${{?{variable}}}?"? in$', line):
                arms, current = {}, None
            else:
                out.append(line)
            continue
        if line == "esac":
            out += arms.get(value, arms.get("*", []))
            arms = None
            continue
        arm = re.match(r"^([^()\s]+)\)\s*(.*)$", line)
        if arm and current is None:
            current = arms.setdefault(arm[1], [])
            line = arm[2]
        body = line.removesuffix(";;").strip()
        if body and current is not None:
            current.append(body)
        if line.endswith(";;"):
            current = None
    return out


def our_starting_tree(task_dir: Path) -> StartingTree:
    """Ours: the shared prepare.sh after it runs the warm-up, with the task's AFTER_WARMUP, then the task
    Dockerfile's steps after prepare.sh."""
    env = (task_dir / "environment/prepare.env").read_text(encoding="utf-8")
    after = re.search(r"^AFTER_WARMUP=(\S+)$", env, re.MULTILINE)
    script = _code_lines((task_dir / "environment/prepare.sh").read_text(encoding="utf-8"))
    warmup = next((i for i, line in enumerate(script) if line.startswith('bash "$WARMUP"')), len(script))
    lines = _case_arm(script[warmup + 1 :], "AFTER_WARMUP", after[1] if after else "")
    dockerfile = _code_lines((task_dir / "environment/Dockerfile").read_text(encoding="utf-8"))
    return starting_tree([*lines, *_after(dockerfile, "prepare.sh")])


# Where a verifier runs decides what the agent left outside its work tree: the published test.sh runs in
# the agent's own container; ours in a fresh container from the task image, given the captured diff.
KEPT = "kept (the agent's container)"
DROPPED = "dropped (a fresh container: only the captured diff of the repository)"
AGENT_HEAD = "the agent's HEAD"
BASE_COMMIT = "the base commit"


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
    other_processes: str  # left running | stopped
    # what the test patch's paths are restored to (when restored): the agent's HEAD, or the base commit
    restored_from: str = "n/a"
    # what the agent left outside the repository, in ignored files and build caches
    outside_repo: str = KEPT


KILL_RE = re.compile(r"(?:^|[\s;&|(])(?:kill|pkill|killall)\b|gradlew\s+--stop\b")


def other_processes(script: str) -> str:
    """Whether a verifier stops processes it did not start (an agent's daemon, its background jobs)."""
    killing = any(KILL_RE.search(line) for line in _code_lines(script))
    return "stopped" if killing else "left running"


def _verifier_facts(script: str, test_command: str | None, env: Mapping[str, str]) -> Verifier:
    command_at = script.find(test_command) if test_command and test_command in script else len(script)
    zero = re.search(r"echo 0\s*>\s*\S*reward\.txt", script)
    return Verifier(
        test_command=test_command,
        env=tuple(sorted(env.items())),
        restores_test_patch_paths=_restores(script),
        apply_fails_closed=re.search(r"if\s+!\s*git apply", script) is not None,
        deletes_stale_reports=re.search(r"find .*TEST\*\.xml.*-delete", script) is not None,
        reward_zero_first=zero is not None and zero.start() < command_at,
        reward_one_without_reports=re.search(r"echo 1\s*>\s*\S*reward\.txt", script) is not None,
        other_processes=other_processes(script),
        restored_from=AGENT_HEAD if _restores(script) else "n/a",
    )


def _restores(script: str) -> bool:
    return re.search(r"restore --source=HEAD|checkout HEAD --", script) is not None


def published_verifier(test_sh: str) -> Verifier:
    return _verifier_facts(test_sh, test_command_of(test_sh), exports(test_sh))


def our_verifier(task_dir: Path, carries_agent_head: bool) -> Verifier:
    """Our verifier's facts. It runs in a fresh container: HEAD there is the agent's (its commits carried
    by the hand-off, `carries_agent_head`) or the base commit."""
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
        other_processes=facts.other_processes,
        restored_from=(AGENT_HEAD if carries_agent_head else BASE_COMMIT)
        if facts.restores_test_patch_paths
        else "n/a",
        outside_repo=DROPPED,
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
    cmdline_tools: str | None  # the build of Android's command-line tools (sdkmanager)
    sdkmanager_jdk: str | None  # the image whose JDK sdkmanager runs on (the FROM of its stage)


CMDLINE_TOOLS_RE = re.compile(r"commandlinetools-linux-(\d+)_latest\.zip")


def _with_arg_defaults(text: str) -> str:
    """`text` with every `${NAME}` of an `ARG NAME=default` replaced by its default."""
    for name, value in re.findall(r"^\s*ARG\s+(\w+)=(\S+)\s*$", text, re.MULTILINE):
        text = text.replace("${" + name + "}", value)
    return text


def _sdkmanager_stage(lines: list[str]) -> str | None:
    base = None
    for line in lines:
        if line.upper().startswith("FROM "):
            base = line.split()[1]
        elif "sdkmanager" in line and line.upper().startswith("RUN "):
            return base
    return None


def parse_dockerfile(text: str) -> Dockerfile:
    lines = _code_lines(text)
    final = max((i for i, line in enumerate(lines) if line.upper().startswith("FROM ")), default=-1)
    stage = lines[final:] if final >= 0 else lines
    tools = CMDLINE_TOOLS_RE.search(_with_arg_defaults(text))
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
    return Dockerfile(
        base,
        workdir,
        tuple(sorted(env.items())),
        user,
        frozenset(apt),
        frozenset(sdk),
        clone,
        tools[1] if tools else None,
        _sdkmanager_stage(lines),
    )


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


# --------------------------------------------------------------------------- the agent phase


# The variables every HotSpot JVM announces on stderr when it starts (JDK_JAVA_OPTIONS: the `java`
# launcher of JDK 9 and later).
JVM_BANNERS = (
    ("JAVA_TOOL_OPTIONS", "Picked up JAVA_TOOL_OPTIONS: "),
    ("_JAVA_OPTIONS", "Picked up _JAVA_OPTIONS: "),
    ("JDK_JAVA_OPTIONS", "NOTE: Picked up JDK_JAVA_OPTIONS: "),
)


@dataclass(frozen=True)
class AgentPhase:
    """What the agent phase's environment makes programs see and print."""

    added_env: tuple[str, ...]  # the variables the runner adds for the phase (names)
    jvm_banner: tuple[str, ...]  # what every JVM started in the phase prints on stderr first


def agent_phase(image_env: Mapping[str, str], added: Mapping[str, str]) -> AgentPhase:
    """The phase's facts, from the image's ENV and what the runner adds to it."""
    env = {**image_env, **added}
    banner = tuple(f"{text}{env[name]}" for name, text in JVM_BANNERS if env.get(name))
    return AgentPhase(tuple(sorted(added)), banner)


# --------------------------------------------------------------------------- report size caps


CAP_RE = re.compile(r"MAX_\w*BYTES\w*(?:\}?:-|\s*=\s*)(\d+(?:\s*\*\s*\d+)*)")


def size_cap(script: str) -> str:
    """The size cap a collector or scorer puts on reports (`MAX_..._BYTES`), or `none`."""
    match = CAP_RE.search(script)
    if match is None:
        return "none"
    total = 1
    for factor in match[1].split("*"):
        total *= int(factor)
    return f"{total / (1 << 20):g} MiB" if total % (1 << 20) == 0 else f"{total} bytes"
