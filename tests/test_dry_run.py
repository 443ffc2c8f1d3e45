"""A preview changes nothing: every documented `snakemake` invocation, run with `-n` (and Snakemake's
other read-only modes) in a finished workspace that lacks some results, leaves every file as it was, and
the plan it prints is the one a real run then carries out."""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PLACEHOLDERS = {"<task>": "examples_calc-4", "<result>": names.verify_result("nop", "examples_calc-4", 1)}
# Snakemake's read-only modes besides -n, and changed --config values (a new attempt, repeats, a subset)
EXTRA = [
    ["--summary"],
    ["--detailed-summary"],
    ["--dag"],
    ["--list-changes", "params"],
    ["--list-changes", "input"],
    ["-n", "--config", "attempts=2"],
    ["-n", "--config", "tasks=[examples_calc-4]", "retries=3"],
    ["-n", "--forceall"],
    ["-n", "validation_summary"],
]
_SCALE = ("--cores", "--jobs", "-j", "-c")  # options that change how much runs at once, not what runs


def documented_invocations() -> list[list[str]]:
    """Every `snakemake ...` command line in the README and docs/ (continuations joined, comments and
    `&&` chains cut), its placeholders filled in."""
    found: list[list[str]] = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8").replace("\\\n", " ")
        for match in re.finditer(r"(?:^|&&|\$ |`)\s*(snakemake\s[^`\n]*)", text, re.MULTILINE):
            line = match.group(1).split("  #")[0].split("&&")[0].strip()
            for placeholder, value in PLACEHOLDERS.items():
                line = line.replace(placeholder, value)
            if "<" in line or "..." in line:
                continue
            args = shlex.split(line)[1:]
            if _what(args) not in [_what(a) for a in found]:
                found.append(args)
    return found


def _what(args: list[str]) -> list[str]:
    """An invocation without what only says how much runs at once (cores, resources) or that it is a
    preview."""
    kept: list[str] = []
    skipping = False
    for i, arg in enumerate(args):
        if (i and args[i - 1] in _SCALE) or arg in (*_SCALE, "-n", "--dry-run"):
            continue
        skipping = arg == "--resources" or (skipping and "=" in arg)
        if not skipping:
            kept.append(arg)
    return kept


def snapshot(root: Path) -> dict[str, tuple[str, int]]:
    """Every file (Snakemake's own records included, its logs and I/O cache excepted): digest, mtime."""
    files = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith((".snakemake/log/", ".snakemake/iocache")) or path.is_dir():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else os.readlink(path)
        files[rel] = (digest, path.lstat().st_mtime_ns)
    return files


@pytest.fixture(scope="module")
def stale(tmp_path_factory: pytest.TempPathFactory, finished_examples: Workspace) -> Workspace:
    """A finished workspace in which one run lost its result: the summary made from it is stale."""
    ws = finished_examples.clone(tmp_path_factory.mktemp("dry-run") / "ws")
    (ws.root / ws.target("nop", "examples_calc-4")).unlink()
    (ws.root / "validation.yaml").write_text("validation: {repeats: 2}\n")  # as docs/dataset.md writes it
    return ws


def preview(ws: Workspace, args: list[str]) -> subprocess.CompletedProcess[str]:
    read_only = ("-n", "--dry-run", "--dryrun", "--summary", "--detailed-summary", "--dag", "--list-changes")
    if not any(a in args for a in read_only):
        args = ["-n", *args]
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/kotlin-bench-dry-run.sock"}
    cmd = [sys.executable, "-m", "snakemake", *args]
    return subprocess.run(cmd, cwd=ws.root, capture_output=True, text=True, timeout=600, env=env)


def test_the_docs_document_the_invocations_this_test_previews() -> None:
    found = documented_invocations()
    previewed = [_what(args) for args in found]
    assert [] in previewed and ["results/validation/summary.csv"] in previewed, found
    assert any("--configfile" in args for args in found) and any("healthcheck" in args for args in found)


def test_no_preview_changes_a_workspace(stale: Workspace) -> None:
    """Each documented invocation as a dry run, and the read-only modes: every file stays as it was (the
    engine is out of reach, too: a preview never asks it), and each exits 0."""
    before = snapshot(stale.root)
    invocations = [*documented_invocations(), *EXTRA]
    with ThreadPoolExecutor(max_workers=2) as pool:  # read-only, so they may run side by side
        done = list(pool.map(lambda args: preview(stale, args), invocations))
    failed = [
        f"{shlex.join(args)}: {d.stderr[-1500:]}"
        for args, d in zip(invocations, done, strict=True)
        if d.returncode
    ]
    assert not failed, "\n".join(failed)
    after = snapshot(stale.root)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert not changed, f"previews {[shlex.join(a) for a in invocations]} changed {changed[:10]}"


def test_a_preview_shows_the_plan_a_run_carries_out(stale: Workspace) -> None:
    """The missing result, with the summary made from it, is in the plan of the default target and of
    `results/summary.csv` alike; the run then makes exactly those, and the next preview has nothing to do."""
    missing = stale.target("nop", "examples_calc-4")
    for target in ([], [names.SUMMARY_CSV]):
        done = preview(stale, ["--cores", "2", *target])
        assert done.returncode == 0, done.stderr[-2000:]
        assert missing in done.stdout and "rule summary:" in done.stdout, done.stdout[-3000:]
        assert "1 run result(s) missing" in done.stderr and "nothing changed" in done.stderr, done.stderr
    run = stale.snakemake(names.SUMMARY_CSV)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (stale.root / missing).is_file()
    said = "1 run result(s) missing; results/summary.csv is kept until it is made again from all of them"
    assert said in run.stderr, run.stderr[-3000:]  # kept readable (issue 31), made again at the end
    again = stale.snakemake("-n", names.SUMMARY_CSV)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr, again.stdout[-2000:]
