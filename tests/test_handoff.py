"""The hand-off of an agent's work (kotlin_bench.runs.handoff): whatever the agent did to git, its work tree
arrives in the fresh verifier container byte for byte (modes and symlinks included), except what is
ignored or left out by the limits, which is listed; self-harm is scored from what can be recovered;
predicted patches are applied the way model outputs really look.

Three levels, on examples_calc-4 (unary minus; the fix is examples/adversarial/attacks/gold-script.sh):
- units: patch normalisation, the limits, the capture record (no containers);
- the hand-off itself, per class: an agent script in a container of the real task image, the capture,
  the apply in a fresh container, and both work trees compared file by file;
- end to end: one Snakemake invocation with script and predictions agents; each class with the fix
  scores 1, without it 0 with a clear reason, and no run's harness time is far above an ordinary run's.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from kotlin_bench.core import names
from kotlin_bench.core.codec import to_json
from kotlin_bench.core.record import RunResult
from kotlin_bench.dataset.predictions import load_predictions, patch_candidates
from kotlin_bench.dataset.task import Task, load_task
from kotlin_bench.engine import containers
from kotlin_bench.engine.engine import Engine, EngineSettings, connect
from kotlin_bench.engine.images import read_sentinel
from kotlin_bench.runs import handoff
from kotlin_bench.scoring.reasons import Reason
from kotlin_bench.tools.workspace import EXAMPLE_TASKS, Workspace
from tests.conftest import DOCKER_ONLY, REPO, on_engines, without_runs

TASK = "examples_calc-4"
GOLD = REPO / "examples/adversarial/attacks/gold-script.sh"
PARSER = "src/main/kotlin/calc/Parser.kt"
IGNORED = ("build",)  # the calc repository's .gitignore
GITC = "git -c user.name=agent -c user.email=agent@example.invalid"

# --------------------------------------------------------------------------- what agents do to git

CONFIG_KNOBS = """\
diff.noprefix true
diff.mnemonicPrefix true
diff.srcPrefix X/
diff.dstPrefix Y/
color.ui always
color.diff always
core.pager cat_-A
diff.external /bin/false
diff.relative true
diff.renames copies
diff.context 0
diff.suppressBlankEmpty true
diff.ignoreSubmodules all
diff.submodule diff
diff.orderFile /etc/hostname
core.quotePath false
core.autocrlf true
core.safecrlf true
core.eol crlf
core.filemode false
core.symlinks false
core.ignoreCase true
core.bigFileThreshold 1
core.fsmonitor /bin/false
core.hooksPath /nonexistent
core.sparseCheckout true
core.worktree /tmp
core.abbrev 4
apply.whitespace error
apply.ignoreWhitespace change
add.ignoreErrors true
alias.diff !echo-forged
alias.add !true
submodule.recurse true
status.showUntrackedFiles no
"""


def _config(scope: str) -> str:
    lines = [
        f"git config {scope} {k} {v.replace('_', ' ')!r}"
        for k, v in (x.split(" ", 1) for x in CONFIG_KNOBS.splitlines())
    ]
    return "\n".join(lines) + "\n"


THINGS: dict[str, str] = {
    "repository config": _config("--local"),
    "global, system and XDG config": (
        _config("--global")
        + _config("--system")
        + "mkdir -p /root/.config/git && cp /root/.gitconfig /root/.config/git/config\n"
        + "printf '[diff]\\n\\tnoprefix = true\\n' > /root/.extra && git config --global include.path /root/.extra\n"
    ),
    "attributes, diff drivers, textconv and filters": """\
printf '*.kt diff=evil filter=evil ident eol=crlf working-tree-encoding=UTF-16\\n* -text\\n' > .gitattributes
printf '*.kt binary\\n' > src/main/kotlin/calc/.gitattributes
printf '* -diff filter=evil\\n' > .git/info/attributes
printf '*.kt filter=evil\\n' > /root/.gitattributes_global
git config --global core.attributesFile /root/.gitattributes_global
git config filter.evil.clean 'sed s/factor/FACTOR/g'
git config filter.evil.smudge 'sed s/FACTOR/factor/g'
git config filter.evil.required true
git config diff.evil.textconv 'sed s/./X/g'
git config diff.evil.command /bin/false
""",
    "line endings: autocrlf, safecrlf and CRLF files": """\
git config --global core.autocrlf true
git config --global core.safecrlf true
sed -i 's/$/\\r/' src/main/kotlin/calc/Parser.kt src/main/kotlin/calc/Lexer.kt
printf 'mixed\\r\\nline\\nends\\r' > mixed.txt
""",
    "GIT_* exported in the agent's profiles": """\
for f in /root/.bashrc /root/.profile /etc/profile /etc/bash.bashrc; do
  echo 'export GIT_DIR=/nonexistent GIT_WORK_TREE=/ GIT_INDEX_FILE=/tmp/x GIT_CONFIG_PARAMETERS="'"'"'diff.noprefix'"'"'=true" BASH_ENV=/root/.bashrc' >> "$f"
done
echo GIT_DIR=/nonexistent >> /etc/environment
""",
    "hooks and fsmonitor": """\
mkdir -p /root/hooks && for h in pre-commit post-checkout post-index-change fsmonitor-watchman; do
  printf '#!/bin/sh\\necho hooked >&2\\nexit 1\\n' > /root/hooks/$h; chmod +x /root/hooks/$h
done
git config core.hooksPath /root/hooks
printf '#!/bin/sh\\nprintf "token\\\\0"\\n' > .git/fsmon && chmod +x .git/fsmon && git config core.fsmonitor "$PWD/.git/fsmon"
""",
    "index, replace objects and ignore rules outside the work tree": f"""\
git update-index --assume-unchanged {PARSER}
git update-index --skip-worktree README.md
git replace "$(git rev-parse HEAD:{PARSER})" "$(echo forged | git hash-object -w --stdin)"
echo notes > NOTES.md && echo 'NOTES.md' >> .git/info/exclude
printf '*.md\\n' > /root/.gitignore_global && git config --global core.excludesFile /root/.gitignore_global
head -c 4096 /dev/urandom > .git/index && touch .git/index.lock
""",
    "rebase in progress": f"""\
echo 'feature side' >> README.md
git checkout -q -b feature && {GITC} commit -qam feature
git checkout -q -b other "$KOTLIN_BENCH_BASE_COMMIT" && echo 'other side' >> README.md && {GITC} commit -qam other
git checkout -q feature && {GITC} rebase other; test -d .git/rebase-merge -o -d .git/rebase-apply
""",
    "merge in progress": f"""\
echo 'feature side' >> README.md
git checkout -q -b feature && {GITC} commit -qam feature
git checkout -q -b other "$KOTLIN_BENCH_BASE_COMMIT" && echo 'other side' >> README.md && {GITC} commit -qam other
{GITC} merge feature; test -f .git/MERGE_HEAD
""",
    "detached HEAD at another commit": f"""\
{GITC} commit -qam work && work=$(git rev-parse HEAD)
echo notes > NOTES.md && git add NOTES.md && {GITC} commit -qm notes
git checkout -q --detach "$work" && git checkout -q --detach HEAD~0
""",
    "deleted .git": "rm -rf .git\n",
    "a new repository in place of .git": f"rm -rf .git && git init -q && git add -A && {GITC} commit -qm new\n",
    "corrupted object store": "find .git/objects -type f -exec sh -c ': > \"$1\"' _ {} \\;\n",
    ".git replaced by a file": "rm -rf .git && echo 'gitdir: /nowhere' > .git\n",
    "embedded repositories": f"""\
mkdir -p vendor/lib && (cd vendor/lib && git init -q && cp ../../README.md . && git add -A && {GITC} commit -qm lib)
mkdir uncommitted && (cd uncommitted && git init -q && echo x > x)
(cd src/main/kotlin/calc && git init -q && git add -A && {GITC} commit -qm oops)
""",
    "git removed": "rm -f /usr/bin/git /usr/local/bin/git\n",
    "git replaced by a broken one": "printf '#!/bin/sh\\nexit 1\\n' > /usr/bin/git\n",
    "a planted capture directory": f'ln -s "$PWD" {names.CONTAINER_CAPTURE_DIR}\n',
}

FILE_KINDS = f"""\
mkdir -p assets deep/a/b/c
head -c 1048576 /dev/urandom > assets/blob.bin
printf 'no final newline' > deep/a/b/c/file.txt
: > empty.txt
ln -s ../README.md deep/link-to-readme
ln -s /etc/hostname absolute-link
chmod +x {PARSER}
git mv src/main/kotlin/calc/Lexer.kt src/main/kotlin/calc/Lexer2.kt 2>/dev/null || mv src/main/kotlin/calc/Lexer.kt src/main/kotlin/calc/Lexer2.kt
mv src/main/kotlin/calc/Lexer2.kt src/main/kotlin/calc/Lexer.kt
rm README.md
printf 'x' > "ünïcode näme.txt"
printf 'y' > "$(printf 'new\\nline\\tand "quotes"')"
"""
LARGE = """\
head -c 200000000 /dev/urandom > java_pid1234.hprof
head -c 20000000 /dev/urandom > data.bin
echo crash > hs_err_pid1234.log
echo replay > src/replay_pid1234.log
echo core > core.1234
mkdir -p build && truncate -s 1G build/huge.bin
"""
LARGE_LEFT_OUT = {
    ("java_pid1234.hprof", handoff.Why.SIZE),
    ("data.bin", handoff.Why.SIZE),
    ("hs_err_pid1234.log", handoff.Why.DEBRIS),
    ("src/replay_pid1234.log", handoff.Why.DEBRIS),
    ("core.1234", handoff.Why.DEBRIS),
}

# Every file of a work tree but .git, as "f:<sha256>" (executable: "x:"), symlinks as "link:<target>".
MANIFEST = r"""
import hashlib, json, os, sys
root, skip = sys.argv[1], set(sys.argv[2:])
found = {}
for top, dirs, files in os.walk(root):
    rel = os.path.relpath(top, root)
    rel = "" if rel == "." else rel + "/"
    links = [d for d in dirs if os.path.islink(os.path.join(top, d))]
    dirs[:] = [d for d in dirs if d != ".git" and rel + d not in skip and d not in links]
    for name in files + links:
        path, full = rel + name, os.path.join(top, name)
        if name == ".git" or path in skip:
            continue
        if os.path.islink(full):
            found[path] = "link:" + os.readlink(full)
            continue
        with open(full, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        found[path] = ("x:" if os.stat(full).st_mode & 0o100 else "f:") + digest
print(json.dumps(found))
"""


# --------------------------------------------------------------------------- units (no containers)


def in_a_list(diff: str) -> str:
    """A diff as models write it inside a numbered list: an indented fenced block."""
    body = "".join(f"   {line}" if line.strip() else line for line in diff.splitlines(keepends=True))
    return f"1. Apply this:\n\n   ```diff\n{body}   ```\n2. Run the tests.\n"


DIFF = (
    "diff --git a/src/x.kt b/src/x.kt\n--- a/src/x.kt\n+++ b/src/x.kt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n"
)


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        (DIFF, ()),
        (f"Here is the fix:\n\n```diff\n{DIFF}```\n\nIt changes two.", ("code_fence",)),
        (f"```patch\n{DIFF}```", ("code_fence",)),
        (f"```\n{DIFF}```", ("code_fence",)),
        (f"<patch>\n{DIFF}</patch>", ("code_fence",)),
        (f"I changed x.kt.\n--- is a separator\n\n{DIFF}", ("leading_prose",)),
        (DIFF.replace("\n", "\r\n"), ("crlf",)),
        (DIFF[:-1], ("final_newline",)),
        (f"Sure!\r\n```diff\r\n{DIFF[:-1]}".replace("\n", "\r\n") + "\r\n```", ("code_fence", "crlf")),
        (f"Sure, the patch:\n{DIFF[:-1]}".replace("\n", "\r\n"), ("leading_prose", "crlf", "final_newline")),
        (in_a_list(DIFF), ("code_fence",)),
    ],
)
def test_patch_candidates_normalise_only_what_is_needed(text: str, steps: tuple[str, ...]) -> None:
    found = patch_candidates(text)
    assert found[0] == ((), text), "the patch as given comes first"
    assert found[-1][0] == steps
    assert found[-1][1] == DIFF
    assert [s for s, _ in found] == [steps[:i] for i in range(len(steps) + 1)]


def test_two_fenced_diffs_are_joined_and_other_code_blocks_ignored() -> None:
    other = DIFF.replace("x.kt", "y.kt")
    text = f"```kotlin\nfun x() = 1\n```\nFirst:\n```diff\n{DIFF}```\nthen\n```diff\n{other}```\n"
    assert patch_candidates(text)[-1] == (("code_fence",), DIFF + other)


def test_a_patch_with_line_separators_survives_the_predictions_file(tmp_path: Path) -> None:
    patch = DIFF.replace("+three", '+val s = "\u2028\u0085\x0c"')
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"instance_id": TASK, "model_patch": patch}, ensure_ascii=False) + "\n")
    assert load_predictions(path)[TASK].patch == patch


def test_limits_come_from_config_with_defaults_and_errors_name_the_key() -> None:
    assert handoff.Limits.from_config(None) == handoff.Limits()
    limits = handoff.Limits.from_config({"max_file_bytes": 5, "exclude": ["*.dump"]})
    assert (limits.max_file_bytes, limits.exclude, limits.max_diff_bytes) == (5, ("*.dump",), 100 << 20)
    with pytest.raises(ValueError, match="unknown keys \\['max_bytes'\\]"):
        handoff.Limits.from_config({"max_bytes": 1})
    with pytest.raises(ValueError, match=r"capture\.timeout_sec must be positive"):
        handoff.Limits.from_config({"timeout_sec": 0})


def test_left_out_records_cover_embedded_repositories_once() -> None:
    data = b"size\x00300\x00clone/big.bin\x00debris\x006\x00hs_err_pid1.log\x00embedded_repository\x00\x00clone\x00"
    found = handoff._left_out(data)
    assert found == [
        handoff.LeftOut("hs_err_pid1.log", handoff.Why.DEBRIS, 6),
        handoff.LeftOut("clone", handoff.Why.EMBEDDED_REPOSITORY, None),
    ]
    record = handoff.Capture(
        handoff.CaptureOutcome.CAPTURED, left_out=found, errors=["error: invalid path '.GIT'"]
    )
    assert record.review() == [
        "hs_err_pid1.log (6 bytes, matches capture.exclude)",
        "clone (an embedded git repository)",
        "error: invalid path '.GIT'",
    ]
    assert json.loads(json.dumps(to_json(record)))["left_out"][1] == {
        "path": "clone",
        "why": "embedded_repository",
        "bytes": None,
    }


# --------------------------------------------------------------------------- the hand-off in containers


@dataclass
class Site:
    """The example task and its image, built in a workspace on one engine (Docker, then Podman)."""

    ws: Workspace
    task: Task
    image: str
    engine: Engine
    key: str = field(default_factory=lambda: f"handoff-test.{uuid.uuid4().hex[:8]}")

    def labels(self) -> dict[str, str]:
        return {names.LABEL_RUN: self.key}

    def start(self, phase: str, memory_mb: int) -> Any:
        """A container of the task image, as a phase container starts it."""
        labels = self.labels() | {names.LABEL_PHASE: phase}
        return containers.start(
            self.engine, self.image, self.key, labels, cpus=1, memory_mb=memory_mb, pids=4096
        )


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, engine: EngineSettings, finished_examples: Workspace
) -> Iterator[Site]:
    """A copy of the session's finished run of the examples, without its runs, on `engine` (on Podman, its
    images were moved there: conftest `podman_images`)."""
    ws = without_runs(finished_examples, tmp_path_factory.mktemp("handoff") / "ws")
    ws.use_engine(engine)
    task = load_task(ws.root / EXAMPLE_TASKS / TASK)
    image = read_sentinel(ws.root / names.task_sentinel(TASK)).id
    found = Site(ws, task, image, connect(engine))
    yield found
    client = found.engine.client
    for container in client.containers.list(all=True, filters={"label": f"{names.LABEL_RUN}={found.key}"}):
        containers.remove(container)
    for container in ws.containers():
        containers.remove(container)


@dataclass
class HandOff:
    capture: handoff.Capture
    applied: bool
    agent_tree: dict[str, str]
    verifier_tree: dict[str, str]
    diff: str
    log: str


def _manifest(container: Any, root: str, skip: set[str]) -> dict[str, str]:
    done = container.exec_run(["python3", "-c", MANIFEST, root, *sorted(skip)])
    assert done.exit_code == 0, done.output[-1000:]
    return json.loads(done.output)


def hand_off(
    site: Site,
    tmp: Path,
    thing: str,
    *,
    fix: bool = True,
    limits: handoff.Limits | None = None,
    task: Task | None = None,
    setup: str = "",
) -> HandOff:
    """Run (the fix and) `thing` in an agent container, capture, apply in a fresh one, list both trees."""
    task = task or site.task

    def start(phase: str) -> Any:
        return site.start(phase, 2048)

    agent = start("agent")
    verifier = None
    try:
        containers.copy_file_in(agent, GOLD, "/tmp")
        script = (
            f"set -u\n{setup}\ncd {task.repo_dir}\n"
            + (f"bash /tmp/{GOLD.name} >/dev/null\n" if fix else "")
            + thing
        )
        env = {"KOTLIN_BENCH_INSTRUCTION": "/dev/null", "KOTLIN_BENCH_BASE_COMMIT": task.base_commit}
        containers.run(
            agent, script, 600, tmp / "agent.log", workdir=task.repo_dir if not setup else "/", env=env
        )
        record = handoff.capture(
            agent,
            task,
            limits or handoff.Limits(),
            tmp / "agent.diff",
            tmp / "capture.log",
            image=site.image,
            labels=site.labels(),
        )
        skip = set(IGNORED) | {x.path for x in record.left_out}
        agent_tree = (
            _manifest(agent, task.repo_dir, skip) if record.outcome is handoff.CaptureOutcome.CAPTURED else {}
        )
        verifier = start("verifier")
        if setup:
            containers.run(verifier, setup, 60, tmp / "verifier.log", workdir="/")
        applied = handoff.apply_diff(verifier, task, tmp / "agent.diff", tmp / "verifier.log")
        verifier_tree = _manifest(verifier, task.repo_dir, skip)
    finally:
        containers.remove(agent)
        if verifier is not None:
            containers.remove(verifier)
    return HandOff(
        record,
        applied,
        agent_tree,
        verifier_tree,
        (tmp / "agent.diff").read_text(encoding="utf-8", errors="replace"),
        "\n".join(
            p.read_text(errors="replace")
            for p in (tmp / "agent.log", tmp / "capture.log", tmp / "verifier.log")
            if p.exists()
        ),
    )


def assert_carried(done: HandOff) -> None:
    assert done.capture.outcome is handoff.CaptureOutcome.CAPTURED, (done.capture, done.log[-3000:])
    assert done.applied, done.log[-3000:]
    missing = {p: v for p, v in done.agent_tree.items() if done.verifier_tree.get(p) != v}
    extra = sorted(set(done.verifier_tree) - set(done.agent_tree))
    assert not missing and not extra, (missing, extra, done.log[-3000:])


# On Podman only the classes whose capture takes git or objects from a second, pristine container: the
# others differ only in what git does inside the container, which is the same on both engines.
PODMAN_THINGS = ["deleted .git", "git removed"]


@pytest.mark.docker
@pytest.mark.parametrize(("engine", "thing"), on_engines(sorted(THINGS), PODMAN_THINGS), indirect=["engine"])
def test_whatever_the_agent_did_to_git_its_work_tree_arrives_byte_for_byte(
    site: Site, tmp_path: Path, thing: str
) -> None:
    done = hand_off(site, tmp_path, THINGS[thing])
    assert_carried(done)
    assert "TokenType.MINUS -> {" in done.diff, "the fix is in the diff"
    assert done.diff.startswith("diff --git a/"), done.diff[:200]
    expected_objects = (
        "pristine"
        if thing
        in (
            "deleted .git",
            "a new repository in place of .git",
            "corrupted object store",
            ".git replaced by a file",
        )
        else "repository"
    )
    assert done.capture.objects == expected_objects
    broken = thing in ("git removed", "git replaced by a broken one")
    assert done.capture.git == ("pristine" if broken else "container")
    if thing == "embedded repositories":  # a repository inside a tracked directory is not embedded
        assert {(x.path, x.why) for x in done.capture.left_out} == {
            ("vendor/lib", handoff.Why.EMBEDDED_REPOSITORY),
            ("uncommitted", handoff.Why.EMBEDDED_REPOSITORY),
        }
    else:
        assert done.capture.left_out == []
    if thing == "index, replace objects and ignore rules outside the work tree":
        assert "NOTES.md" in done.verifier_tree
    assert done.capture.seconds < 30


@pytest.mark.docker
def test_file_kinds_arrive_byte_for_byte(site: Site, tmp_path: Path) -> None:
    done = hand_off(site, tmp_path, FILE_KINDS)
    assert_carried(done)
    tree = done.verifier_tree
    assert (
        tree["deep/link-to-readme"] == "link:../README.md" and tree["absolute-link"] == "link:/etc/hostname"
    )
    assert tree[PARSER].startswith("x:") and "README.md" not in tree and "empty.txt" in tree
    assert any(p.startswith("new\nline") for p in tree) and "ünïcode näme.txt" in tree
    assert "GIT binary patch" in done.diff


@pytest.mark.docker
def test_large_files_and_debris_are_left_out_listed_and_fast(site: Site, tmp_path: Path) -> None:
    done = hand_off(site, tmp_path, LARGE)
    assert_carried(done)
    assert {(x.path, x.why) for x in done.capture.left_out} == LARGE_LEFT_OUT
    assert all(x.bytes for x in done.capture.left_out)
    assert done.capture.diff_bytes < 10_000
    assert done.capture.seconds < 15, f"the capture took {done.capture.seconds:.1f} s"


@pytest.mark.docker
def test_a_tracked_file_over_the_limit_keeps_its_base_version_and_is_listed(
    site: Site, tmp_path: Path
) -> None:
    limits = handoff.Limits(max_file_bytes=200)  # README.md (216 bytes) is over it, unchanged
    done = hand_off(site, tmp_path, "echo changed >> src/main/kotlin/calc/Calculator.kt\n", limits=limits)
    listed = {x.path for x in done.capture.left_out}
    assert "README.md" not in listed, "an unchanged tracked file is not worth a line"
    assert {"src/main/kotlin/calc/Calculator.kt", PARSER} <= listed
    assert done.applied and PARSER not in done.diff


@pytest.mark.docker
def test_a_diff_over_the_limit_is_an_outcome_not_an_error(site: Site, tmp_path: Path) -> None:
    thing = "mkdir gen && for i in 1 2 3; do head -c 600000 /dev/urandom | base64 > gen/$i.txt; done\n"
    done = hand_off(site, tmp_path, thing, limits=handoff.Limits(max_diff_bytes=1 << 20))
    assert done.capture.outcome is handoff.CaptureOutcome.TOO_LARGE
    assert (tmp_path / "agent.diff").stat().st_size == 0 and done.capture.diff_bytes == 0
    assert "max_diff_bytes" in done.capture.message


@pytest.mark.docker
def test_a_removed_work_tree_and_a_sabotaged_tool_are_outcomes(site: Site, tmp_path: Path) -> None:
    gone = hand_off(site, tmp_path / "gone", "cd / && rm -rf /home/calc\n")
    assert gone.capture.outcome is handoff.CaptureOutcome.WORK_TREE_GONE
    assert "/home/calc is not a directory" in gone.capture.message
    hang = "printf '#!/bin/sh\\nsleep 60\\n' > /usr/local/bin/find && chmod +x /usr/local/bin/find\n"
    slow = hand_off(site, tmp_path / "slow", hang, limits=handoff.Limits(timeout_sec=3))
    assert slow.capture.outcome is handoff.CaptureOutcome.UNAVAILABLE
    assert "capture.timeout_sec = 3" in slow.capture.message and slow.capture.seconds < 45


@pytest.mark.docker
def test_the_repositorys_own_attributes_decide_line_endings_on_both_sides(site: Site, tmp_path: Path) -> None:
    # A repository whose .gitattributes asks for CRLF in *.bat (as `gradle init` writes it): the diff is
    # taken and applied through the base's attributes, so an untouched .bat file is no change and a
    # changed one arrives with CRLF; the agent's own .gitattributes changes nothing of that.
    setup = f"""\
rm -rf /tmp/base && mkdir -p /tmp/base/sub && cd /tmp/base && git init -q
printf '*.bat text eol=crlf\\n' > .gitattributes && printf '*.txt ident\\n' > sub/.gitattributes
printf 'echo one\\necho two\\n' > run.bat && printf 'echo keep\\n' > keep.bat && printf 'a\\n' > sub/a.txt
git add -A && GIT_AUTHOR_DATE="1000000000 +0000" GIT_COMMITTER_DATE="1000000000 +0000" {GITC} commit -qm base && rm *.bat && git checkout -- .
"""
    thing = "sed -i 's/two/TWO/' run.bat && printf '* -text\\n*.bat eol=lf\\n' >> .gitattributes\n"
    base = _base_commit(site, setup)
    task = replace(site.task, repo_dir="/tmp/base", base_commit=base)
    done = hand_off(site, tmp_path, f"cd /tmp/base\n{thing}", fix=False, task=task, setup=setup)
    assert_carried(done)
    assert "keep.bat" not in done.diff and "run.bat" in done.diff
    assert "\r" not in done.diff.split("run.bat", 1)[1], "the diff holds the normalised blob"


# A warm-up that left changes in the image's tree (kept, as published): the fresh verifier container has
# them too, and the diff (from the base commit) must still give it exactly the agent's tree.
WARMUP_LEFTOVERS = """\
cd /home/calc && printf 'warmed\\n' >> README.md && printf 'debris\\n' > warmup-debris.txt
mkdir -p build/test-results/test && touch build/test-results/test/TEST-warm.xml
"""


WARMUP_UNDONE = "git checkout -- README.md && rm warmup-debris.txt"


@pytest.mark.docker
@DOCKER_ONLY  # what git does in the container: the same on Podman
@pytest.mark.parametrize(
    ("thing", "fix"),
    [
        ("true", True),
        (WARMUP_UNDONE, True),
        ("printf 'more\\n' >> warmup-debris.txt && printf 'more\\n' >> README.md", True),
        (WARMUP_UNDONE, False),  # the agent's tree is the base commit's: an empty diff
    ],
    ids=["kept", "undone", "changed further", "undone, nothing else"],
)
def test_what_the_warmup_left_in_the_image_arrives_as_the_agent_left_it(
    site: Site, tmp_path: Path, thing: str, fix: bool
) -> None:
    done = hand_off(site, tmp_path, thing, fix=fix, setup=WARMUP_LEFTOVERS)
    assert_carried(done)
    assert ("warmup-debris.txt" in done.verifier_tree) is (thing != WARMUP_UNDONE)
    assert (done.diff == "") is (not fix and thing == WARMUP_UNDONE)


def _base_commit(site: Site, setup: str) -> str:
    box = site.start("setup", 1024)
    try:
        done = box.exec_run(["bash", "-c", f"{setup}\ngit -C /tmp/base rev-parse HEAD"])
        assert done.exit_code == 0, done.output
        return done.output.decode().split()[-1]
    finally:
        containers.remove(box)


@pytest.mark.docker
def test_predicted_patches_in_every_shape_apply_and_garbage_keeps_the_message(
    site: Site, tmp_path: Path
) -> None:
    gold = (site.ws.root / EXAMPLE_TASKS / TASK / names.FIX_PATCH).read_text(encoding="utf-8")
    shapes = {
        "as given": (gold, ()),
        "fenced with prose (git apply skips both)": (f"Here is my fix.\n\n```diff\n{gold}```\nDone.\n", ()),
        "in a list": (in_a_list(gold), ("code_fence",)),
        "CRLF without final newline": (gold.replace("\n", "\r\n")[:-2], ("crlf", "final_newline")),
    }
    for name, (text, steps) in shapes.items():
        box = site.start("agent", 1024)
        try:
            done, applied = handoff.apply_patch(
                box, site.task, patch_candidates(text), tmp_path / f"{name}.log", 120
            )
        finally:
            containers.remove(box)
        assert applied.applier == "git apply --verbose" and applied.normalised == steps, (name, applied)
        assert done.exit_code == 0
    box = site.start("agent", 1024)
    try:
        _done, applied = handoff.apply_patch(
            box, site.task, patch_candidates(gold.replace("val token", "val tokn")), tmp_path / "bad.log", 120
        )
        status = box.exec_run(["git", "-C", site.task.repo_dir, "status", "--porcelain"]).output.decode()
    finally:
        containers.remove(box)
    assert applied.applier is None and "Rejected hunk" in applied.message, "the last applier's message"
    assert status == "", "a failed applier leaves nothing behind"
    log = (tmp_path / "bad.log").read_text()
    assert "git apply --verbose --reject" in log and "GNU patch is not installed" in log


# --------------------------------------------------------------------------- end to end


@dataclass(frozen=True)
class Case:
    name: str
    thing: str
    fix: bool
    reward: float
    reasons: tuple[str, ...] = ()


# Through the workflow, the classes whose outcome is in the run's record: the capture's left-out files and
# flags (large), the pristine objects a deleted .git is rebuilt from, and the outcomes that score 0 with
# their reason (too large, work tree gone), each with and without the fix where it matters. Every other class
# (git configuration, line endings, embedded repositories, git removed, the other git states) meets the
# same capture and apply functions in the container-level test above, which compares the verifier's work
# tree byte for byte with the agent's: through the workflow it would only cost a run each.
E2E_THINGS = {
    "large": LARGE,
    "too-large": "mkdir gen && for i in 1 2 3 4 5 6; do head -c 800000 /dev/urandom | base64 > gen/$i.txt; done\n",
    "deleted-git": THINGS["deleted .git"],
    "work-tree-gone": "cd / && rm -rf /home/calc\n",
}
CASES = (
    Case("gold", "", True, 1.0),
    *(
        Case(name, E2E_THINGS[name], True, 1.0)
        for name in E2E_THINGS
        if name not in ("too-large", "work-tree-gone")
    ),
    Case("large-only", LARGE, False, 0.0, ("no_fixed_test", "f2p_failed")),
    Case("deleted-git-only", THINGS["deleted .git"], False, 0.0, ("no_fixed_test", "f2p_failed")),
    Case("too-large", E2E_THINGS["too-large"], True, 0.0, (Reason.DIFF_TOO_LARGE,)),
    Case("work-tree-gone", E2E_THINGS["work-tree-gone"], True, 0.0, (Reason.WORK_TREE_GONE,)),
)
# Through the workflow, one shape that needs two normalisations and one that applies nowhere: the others
# (fenced with prose, in a list, CRLF without a final newline) apply in the container-level test above
# with the same functions, and the record's `prediction` is checked here.
PREDICTIONS = {  # shape, and the normalisations it needs
    "pred-tagged-crlf": (
        lambda gold: f"<patch>\n{gold}</patch>\n".replace("\n", "\r\n"),
        ["code_fence", "crlf"],
    ),
    "pred-garbage": (lambda gold: gold.replace("val token", "val tokn"), []),
}


@pytest.fixture(scope="module")
def e2e(site: Site) -> dict[str, RunResult]:
    """Every class end to end, on Docker only: scoring does not depend on the engine, on Podman the
    classes' containers are checked above and the examples' runs end to end (tests/test_podman.py), and
    this part costs minutes of CI."""
    ws = site.ws
    agents: list[dict[str, Any]] = []
    fix = GOLD.read_text(encoding="utf-8")
    for case in CASES:
        body = (fix if case.fix else "#!/usr/bin/env bash\n") + "\nset +e\n" + case.thing
        rel = ws.write(f"handoff-agents/{case.name}.sh", body)
        agents.append({"name": case.name, "kind": "script", "script": rel})
    gold = (ws.root / EXAMPLE_TASKS / TASK / names.FIX_PATCH).read_text(encoding="utf-8")
    for name, (shape, _steps) in PREDICTIONS.items():
        line = json.dumps({"instance_id": TASK, "model_name_or_path": name, "model_patch": shape(gold)})
        agents.append(
            {
                "name": name,
                "kind": "predictions",
                "predictions": ws.write(f"handoff-agents/{name}.jsonl", line + "\n"),
            }
        )
    ws.configure([TASK], agents, capture={"max_diff_bytes": 4 << 20})
    out = ws.snakemake(*(ws.target(a["name"], TASK) for a in agents), timeout=3600)
    found = {a["name"]: ws.result(a["name"], TASK) for a in agents}
    missing = [name for name, result in found.items() if result is None]
    assert not missing, (missing, out.stderr[-3000:])
    return found  # type: ignore[return-value]


def _harness_sec(result: RunResult) -> float:
    """Time the harness spent on the run besides the agent's own work and the tests."""
    t = result.timings
    return (t.total_sec or 0.0) - (t.agent_sec or 0.0) - (t.verifier_sec or 0.0)


@pytest.mark.docker
@DOCKER_ONLY
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_end_to_end_each_class_scores_its_fix_and_only_its_fix(e2e: dict[str, RunResult], case: Case) -> None:
    result = e2e[case.name]
    assert result.status != "error", (result.reason, result.error, result.tries)
    assert result.reward == case.reward, (result.status, result.reason, result.error, result.capture)
    if case.reasons:
        assert result.reason in case.reasons, (result.reason, result.error)
    if case.reward == 0.0 and result.reason in (Reason.DIFF_TOO_LARGE, Reason.WORK_TREE_GONE):
        assert result.error, "the reason comes with what happened"
    assert (result.timings.capture_sec or 0.0) < 20
    ordinary = _harness_sec(e2e["gold"])
    assert _harness_sec(result) < 3 * ordinary + 20, (result.timings, e2e["gold"].timings)
    if case.name in ("large", "large-only"):
        assert result.capture is not None
        assert {(x.path, str(x.why)) for x in result.capture.left_out} == {
            (p, str(w)) for p, w in LARGE_LEFT_OUT
        }
        assert any("java_pid1234.hprof" in line for line in result.flags["left_out"])
    if case.name == "deleted-git":
        assert result.capture is not None and result.capture.objects == "pristine"


@pytest.mark.docker
@DOCKER_ONLY
@pytest.mark.parametrize("name", sorted(PREDICTIONS))
def test_end_to_end_predictions_in_every_shape(e2e: dict[str, RunResult], name: str) -> None:
    result = e2e[name]
    prediction = to_json(result.prediction) if result.prediction else {}
    if name == "pred-garbage":
        assert (result.reward, result.reason) == (0.0, Reason.PATCH_NOT_APPLIED)
        assert prediction["applier"] is None and "Rejected hunk" in (result.error or "")
    else:
        assert result.reward == 1.0, (result.reason, result.error, prediction)
        assert prediction == {"applier": "git apply --verbose", "normalised": PREDICTIONS[name][1]}


@pytest.mark.docker
def test_the_agent_log_is_written_while_the_agent_runs(site: Site, tmp_path: Path) -> None:
    """Issue 31: agent.log appeared only when the agent ended. Its output is in the file while it runs: the
    script waits for a file the test creates once the log shows the first line."""
    container = site.start("agent", 512)
    log = tmp_path / "agent.log"
    script = "echo first line; while [ ! -e /tmp/go ]; do sleep 0.05; done; echo last line"
    finished: list[containers.ExecResult] = []
    runner = threading.Thread(
        target=lambda: finished.append(containers.run(container, script, 120, log, workdir="/"))
    )
    try:
        runner.start()
        deadline = time.monotonic() + 60
        while "first line" not in (log.read_text() if log.is_file() else "") and time.monotonic() < deadline:
            time.sleep(0.02)
        assert log.read_text() == "first line\n" and not finished  # written while the script still runs
        container.exec_run(["touch", "/tmp/go"])
        runner.join(timeout=60)
        assert finished and finished[0].exit_code == 0
        assert log.read_text() == "first line\nlast line\n"
    finally:
        containers.remove(container)
