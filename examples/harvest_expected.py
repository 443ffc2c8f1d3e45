#!/usr/bin/env python3
"""Harvest (and check) the expected test lists of the kotlin-bench examples by running them in Docker.

For each task of ``examples/dataset.json`` this starts one container of the task's base image
(``docker run``, no network) and, in the repository directory:

1. checks out the base commit and runs the test command               -> ``run_result``
2. applies the test part of the pull request and runs it again        -> ``test_patch_result``
3. applies the fix part too and runs it a third time                  -> the fix result

The pull request is ``refs/pull/<pr>/head`` of the repository in the image; its test part is the diff
of the files that match the repository's ``test_paths`` (git ``:(glob)`` pathspecs, so ``**/src/test/**``
also matches ``src/test/...``), the fix part is the rest. Every ``TEST*.xml`` under
``*/build/test-results/`` is then read on the host and the tests are classified:

    p2p: PASS at run, test and fix      f2p: FAIL at test, PASS at fix
    s2p: SKIP at test, PASS at fix      n2p: absent at test, PASS at fix

A test id is ``<classname>.<name>`` of a JUnit XML testcase (a trailing ``@<hex>`` removed from each
part; no classname: just the name). Testcases whose name or classname has a non-empty bracketed part
(parameterized invocations such as ``evaluates(String, long)[1]``) are ignored. ``<failure>`` or
``<error>`` is FAIL, ``<skipped>`` is SKIP, anything else PASS; for a repeated id the worst status wins.

Usage (from the repository root, after building the images of ``examples/bases/manifest``)::

    python3 examples/harvest_expected.py                   # write examples/expected/<task>.json
    python3 examples/harvest_expected.py --update-dataset  # ... and fill base_commit, fix_files,
                                                           #     test_files, expected_counts
    python3 examples/harvest_expected.py --verify          # re-run nop / oracle / careless and
                                                           # judge them against the expected lists
    python3 examples/harvest_expected.py --task examples_calc-4 --verify

``--verify`` runs, per task, the test patch alone (``nop``), test patch plus fix (``oracle``) and, when
``examples/patches/<task>/<name>.patch`` files exist, the test patch plus each of them. A run is resolved
when every expected f2p, s2p, n2p and p2p test passes. Expected: oracle resolved, the others not.

Needs Python 3.9+ (standard library only) and the ``docker`` command line.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
CATEGORIES = ("f2p", "p2p", "s2p", "n2p")
RANK = {"PASS": 0, "SKIP": 1, "FAIL": 2}

# Runs inside the container. Inputs: environment variables and a tar archive on standard input
# (extra patches under in/). Output: a tar archive of /out on standard output; everything else goes
# to log files in /out or to standard error.
CONTAINER_SCRIPT = r"""
set -u
exec 3>&1 1>&2
mkdir -p /out /in
tar -xf - -C /in
cd "$REPO_DIR"
base=$(git rev-parse --verify "${BASE_COMMIT}^{commit}")
head=$(git rev-parse --verify "refs/pull/${PR}/head^{commit}")
echo "$base" > /out/base_commit
echo "$head" > /out/pr_head
test_specs=()
fix_specs=(.)
while IFS= read -r p; do
    [ -n "$p" ] || continue
    test_specs+=(":(glob)$p")
    fix_specs+=(":(exclude,glob)$p")
done <<< "$TEST_PATHS"
git diff --binary "$base" "$head" -- "${test_specs[@]}" > /out/test.patch
git diff --binary "$base" "$head" -- "${fix_specs[@]}" > /out/fix.patch
git diff --name-only "$base" "$head" -- "${test_specs[@]}" > /out/test_files
git diff --name-only "$base" "$head" -- "${fix_specs[@]}" > /out/fix_files

reset() {
    git checkout -q -f "$base" && git clean -q -f -d -x
}
apply() {  # apply <scenario> <patch>
    [ -s "$2" ] || return 0
    if ! git apply --whitespace=nowarn "$2"; then
        echo "patch $2 does not apply" >> "/out/$1/apply_error"
        return 1
    fi
}
run_tests() {  # run_tests <scenario>
    local s=$1 start end
    find . -path '*/build/test-results/*' -name 'TEST*.xml' -delete 2>/dev/null
    start=$(date +%s.%N)
    bash -c "$TEST_COMMAND" > "/out/$s/test_output.log" 2>&1
    echo $? > "/out/$s/exit_code"
    end=$(date +%s.%N)
    echo "$start $end" > "/out/$s/times"
    find . -path '*/build/test-results/*' -name 'TEST*.xml' -print0 |
        while IFS= read -r -d '' f; do
            mkdir -p "/out/$s/xml/$(dirname "$f")"
            cp "$f" "/out/$s/xml/$f"
        done
}

for scenario in $SCENARIOS; do
    mkdir -p "/out/$scenario"
    reset
    case $scenario in
        run) ;;
        test|nop) apply "$scenario" /out/test.patch || continue ;;
        fix|oracle) { apply "$scenario" /out/test.patch && apply "$scenario" /out/fix.patch; } || continue ;;
        extra:*) { apply "$scenario" /out/test.patch && apply "$scenario" "/in/${scenario#extra:}.patch"; } || continue ;;
    esac
    run_tests "$scenario"
done
reset
tar -cf - -C /out . >&3
"""


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a git-style glob (``**/``, ``/**``, ``*``, ``?``) into a regular expression."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def is_test_file(path: str, test_paths: list[str]) -> bool:
    return any(glob_regex(p).match(path) for p in test_paths)


_BRACKETED = re.compile(r"\[[^\]]+\]")
_HEX_SUFFIX = re.compile(r"@[0-9a-fA-F]+\Z")


def test_id(classname: str | None, name: str) -> str:
    name = _HEX_SUFFIX.sub("", name)
    if not classname:
        return name
    return f"{_HEX_SUFFIX.sub('', classname)}.{name}"


def parse_junit(xml_texts: list[bytes]) -> dict[str, str]:
    """Statuses (PASS, FAIL, SKIP) by test id from JUnit XML documents."""
    statuses: dict[str, str] = {}
    for text in xml_texts:
        root = ET.fromstring(text)
        for case in root.iter("testcase"):
            name = case.get("name") or ""
            classname = case.get("classname") or ""
            if _BRACKETED.search(name) or _BRACKETED.search(classname):
                continue
            if case.find("failure") is not None or case.find("error") is not None:
                status = "FAIL"
            elif case.find("skipped") is not None:
                status = "SKIP"
            else:
                status = "PASS"
            tid = test_id(classname, name)
            if tid not in statuses or RANK[status] > RANK[statuses[tid]]:
                statuses[tid] = status
    return statuses


def result_lists(statuses: dict[str, str]) -> dict[str, list[str]]:
    return {
        "passed_tests": sorted(t for t, s in statuses.items() if s == "PASS"),
        "failed_tests": sorted(t for t, s in statuses.items() if s == "FAIL"),
        "skipped_tests": sorted(t for t, s in statuses.items() if s == "SKIP"),
    }


def classify(run: dict[str, str], test: dict[str, str], fix: dict[str, str]) -> dict[str, list[str]]:
    lists: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for tid, status in fix.items():
        if status != "PASS":
            continue
        before = test.get(tid)
        if before == "PASS" and run.get(tid) == "PASS":
            lists["p2p"].append(tid)
        elif before == "FAIL":
            lists["f2p"].append(tid)
        elif before == "SKIP":
            lists["s2p"].append(tid)
        elif before is None:
            lists["n2p"].append(tid)
    return {c: sorted(v) for c, v in lists.items()}


def judge(expected: dict, statuses: dict[str, str]) -> tuple[bool, dict[str, list[str]]]:
    """Whether every expected test of every category passed; the ones that did not, by category."""
    missing = {c: [t for t in expected[f"{c}_tests"] if statuses.get(t) != "PASS"] for c in CATEGORIES}
    return not any(missing.values()), missing


class Outcome:
    def __init__(self, archive: bytes):
        self.files: dict[str, bytes] = {}
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            for member in tar.getmembers():
                if member.isfile():
                    f = tar.extractfile(member)
                    assert f is not None
                    self.files[member.name.removeprefix("./")] = f.read()

    def text(self, name: str) -> str:
        return self.files.get(name, b"").decode("utf-8", "replace")

    def lines(self, name: str) -> list[str]:
        return [line for line in self.text(name).splitlines() if line]

    def statuses(self, scenario: str) -> dict[str, str]:
        xml = [data for name, data in sorted(self.files.items()) if name.startswith(f"{scenario}/xml/")]
        return parse_junit(xml)

    def seconds(self, scenario: str) -> float | None:
        times = self.text(f"{scenario}/times").split()
        return round(float(times[1]) - float(times[0]), 1) if len(times) == 2 else None

    def apply_error(self, scenario: str) -> str:
        return self.text(f"{scenario}/apply_error").strip()


def run_container(
    task: dict, repo: dict, defaults: dict, scenarios: list[str], *, extra: dict[str, Path], limits: bool
) -> Outcome:
    base = task["base_commit"] if re.fullmatch(r"[0-9a-f]{40}", task.get("base_commit") or "") else "main"
    stdin = io.BytesIO()
    with tarfile.open(fileobj=stdin, mode="w") as tar:
        for name, path in extra.items():
            tar.add(path, arcname=f"{name}.patch")
    cmd = ["docker", "run", "--rm", "-i", "--network", "none"]
    if limits:
        cmd += [
            "--cpus",
            str(task.get("cpus", defaults.get("cpus", 1))),
            "--memory",
            f"{task.get('memory_mb', defaults.get('memory_mb', 2048))}m",
        ]
    env = {
        "REPO_DIR": repo["repo_dir"],
        "BASE_COMMIT": base,
        "PR": str(task["pr"]),
        "TEST_COMMAND": task["test_command"],
        "TEST_PATHS": "\n".join(repo["test_paths"]),
        "SCENARIOS": " ".join(scenarios),
    }
    for key, value in env.items():
        cmd += ["-e", f"{key}={value}"]
    cmd += [task["base_image"], "bash", "-c", CONTAINER_SCRIPT]
    timeout = float(task.get("verifier_timeout_sec", defaults.get("verifier_timeout_sec", 300.0)))
    proc = subprocess.run(
        cmd, input=stdin.getvalue(), capture_output=True, timeout=timeout * (len(scenarios) + 1)
    )
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
        raise SystemExit(f"{task['id']}: docker run failed with exit code {proc.returncode}")
    return Outcome(proc.stdout)


def harvest(task: dict, repo: dict, defaults: dict, out_dir: Path, limits: bool) -> dict:
    started = time.monotonic()
    outcome = run_container(task, repo, defaults, ["run", "test", "fix"], extra={}, limits=limits)
    for scenario in ("test", "fix"):
        if outcome.apply_error(scenario):
            raise SystemExit(f"{task['id']}: {scenario}: {outcome.apply_error(scenario)}")
    run, test, fix = (outcome.statuses(s) for s in ("run", "test", "fix"))
    lists = classify(run, test, fix)
    expected = {f"{c}_tests": lists[c] for c in CATEGORIES}
    expected["test_patch_result"] = result_lists(test)
    expected["run_result"] = result_lists(run)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{task['id']}.json").write_text(json.dumps(expected, indent=2) + "\n")

    test_files = outcome.lines("test_files")
    fix_files = outcome.lines("fix_files")
    for f in test_files:  # git's pathspec and our glob must agree
        assert is_test_file(f, repo["test_paths"]), f"{f}: git says test file, glob disagrees"
    for f in fix_files:
        assert not is_test_file(f, repo["test_paths"]), f"{f}: git says fix file, glob disagrees"
    not_passing = sorted(t for t, s in fix.items() if s != "PASS")
    info = {
        "base_commit": outcome.text("base_commit").strip(),
        "pr_head": outcome.text("pr_head").strip(),
        "fix_files": fix_files,
        "test_files": test_files,
        "expected_counts": {c: len(lists[c]) for c in CATEGORIES},
        "seconds": {s: outcome.seconds(s) for s in ("run", "test", "fix")},
        "exit_codes": {s: outcome.text(f"{s}/exit_code").strip() for s in ("run", "test", "fix")},
        "not_passing_with_fix": not_passing,
        "container_seconds": round(time.monotonic() - started, 1),
    }
    return info


def verify(task: dict, repo: dict, defaults: dict, expected: dict, limits: bool) -> list[tuple[str, bool]]:
    extra = {p.stem: p for p in sorted((HERE / "patches" / task["id"]).glob("*.patch"))}
    scenarios = ["nop", "oracle"] + [f"extra:{name}" for name in extra]
    outcome = run_container(task, repo, defaults, scenarios, extra=extra, limits=limits)
    verdicts = []
    for scenario in scenarios:
        label = scenario.removeprefix("extra:")
        if outcome.apply_error(scenario):
            print(f"  {label:10} patch does not apply: {outcome.apply_error(scenario)}")
            verdicts.append((label, False))
            continue
        resolved, missing = judge(expected, outcome.statuses(scenario))
        detail = "; ".join(f"{c} missing {len(v)}: {', '.join(v)}" for c, v in missing.items() if v)
        print(
            f"  {label:10} resolved={str(resolved).lower():5} ({outcome.seconds(scenario)}s)"
            + (f"  {detail}" if detail else "")
        )
        verdicts.append((label, resolved))
    return verdicts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", type=Path, default=HERE / "dataset.json")
    ap.add_argument("--out", type=Path, default=HERE / "expected", help="where <task>.json go")
    ap.add_argument("--task", action="append", help="only this task id (repeatable)")
    ap.add_argument(
        "--update-dataset",
        action="store_true",
        help="write base_commit, fix_files, test_files and expected_counts into the dataset",
    )
    ap.add_argument(
        "--verify",
        action="store_true",
        help="instead of harvesting, judge nop / oracle / extra patches against the lists",
    )
    ap.add_argument("--no-limits", action="store_true", help="do not pass the tasks' cpus and memory")
    args = ap.parse_args()

    dataset = json.loads(args.dataset.read_text())
    defaults = dataset.get("defaults", {})
    tasks = [t for t in dataset["tasks"] if not args.task or t["id"] in args.task]
    if args.task and len(tasks) != len(set(args.task)):
        raise SystemExit(f"unknown task in {args.task}")
    limits = not args.no_limits
    failures = 0
    for task in tasks:
        repo = dataset["repositories"][task["repository"]]
        print(f"{task['id']} ({task['base_image']}, {task['test_command']!r})", flush=True)
        if args.verify:
            expected = json.loads((args.out / f"{task['id']}.json").read_text())
            for label, resolved in verify(task, repo, defaults, expected, limits):
                if resolved != (label == "oracle"):
                    failures += 1
                    print(f"  UNEXPECTED: {label} should {'' if label == 'oracle' else 'not '}resolve")
            continue
        info = harvest(task, repo, defaults, args.out, limits)
        print(json.dumps(info, indent=2))
        if info["not_passing_with_fix"]:
            print(f"  note: {len(info['not_passing_with_fix'])} test(s) do not pass with the fix")
        if args.update_dataset:
            for key in ("base_commit", "fix_files", "test_files", "expected_counts"):
                task[key] = info[key]
    if args.update_dataset and not args.verify:
        args.dataset.write_text(json.dumps(dataset, indent=2, ensure_ascii=False) + "\n")
        print(f"updated {args.dataset}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
