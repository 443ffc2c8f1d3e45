"""Bad inputs: each must be rejected with an error that names it (malformed task files, configs,
predictions, JUnit XML, escaping patches), and one bad task must not stop the others."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from adversarial.common import ADVERSARIAL, REPO, TASK, Row, record
from kotlin_bench.tools.workspace import Workspace


def _raises(call: Callable[[], Any], *needles: str) -> tuple[bool, str]:
    """Whether `call` raises an exception whose message contains every needle (and that message)."""
    try:
        call()
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        return all(n in text for n in needles), " ".join(text.split())[:150]
    return False, "accepted"


def _task_dir(root: Path, name: str) -> Path:
    """A copy of the example task, complete even in a fresh clone (where nothing is materialized yet)."""
    source = REPO / "examples/tasks" / TASK
    dest = root / "tasks" / name
    shutil.copytree(source, dest)
    if not (dest / "tests/expected_tests.json").exists():
        shutil.copy(REPO / "examples/expected" / f"{TASK}.json", dest / "tests/expected_tests.json")
    if not (dest / "instruction.md").exists():
        (dest / "instruction.md").write_text("# Implement the issue(s) in examples/calc:\n", encoding="utf-8")
    return dest


def apply_patch(repo: Path, patch: str) -> tuple[bool, str]:
    (repo.parent / "in.patch").write_text(patch, encoding="utf-8")
    done = subprocess.run(
        ["git", "apply", "--binary", str(repo.parent / "in.patch")], cwd=repo, capture_output=True, text=True
    )
    return done.returncode != 0, " ".join(done.stderr.split())[:150]


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    subprocess.run(["git", "init", "-q"], cwd=path, check=True, env=env)
    (path / "a.txt").write_text("a\n")
    subprocess.run(["git", "add", "a.txt"], cwd=path, check=True, env=env)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
        cwd=path,
        check=True,
        env=env,
    )
    return path


ENTITY_BOMB = (
    '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + "".join(f'<!ENTITY lol{i} "{"&lol{};".format("" if i == 1 else i - 1) * 10}">' for i in range(1, 10))
    + ']>\n<testsuite><testcase classname="a" name="&lol9;"/></testsuite>\n'
)
XXE = '<?xml version="1.0"?>\n<!DOCTYPE t [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<testsuite><testcase classname="a" name="&x;"/></testsuite>\n'


def run_bad_inputs(tmp: Path) -> list[Row]:
    """Each bad input must be rejected with an error that names it (host only, no containers)."""
    from kotlin_bench.dag.config import check_config
    from kotlin_bench.dataset.predictions import load_predictions
    from kotlin_bench.dataset.task import load_task
    from kotlin_bench.runs.agents import agent_from_config
    from kotlin_bench.scoring.verifier import junit_compare as jc

    rows: list[Row] = []

    def add(name: str, result: tuple[bool, str]) -> None:
        rows.append(Row("bad-input", name, "rejected" if result[0] else "NOT REJECTED", result[1], result[0]))

    t = _task_dir(tmp, "broken-toml")
    (t / "task.toml").write_text((t / "task.toml").read_text() + "garbage = = =\n")
    add("malformed task.toml", _raises(lambda: load_task(t), str(t / "task.toml"), "not valid TOML"))
    t = _task_dir(tmp, "wrong-type")
    text = (t / "task.toml").read_text().replace("timeout_sec = 300.0", 'timeout_sec = "soon"', 1)
    (t / "task.toml").write_text(text)
    add("task.toml field of the wrong type", _raises(lambda: load_task(t), "task.toml", "timeout_sec"))
    t = _task_dir(tmp, "missing-file")
    (t / "tests/test.sh").unlink()
    add(
        "missing task file (tests/test.sh)",
        _raises(lambda: load_task(t), str(t / "tests/test.sh"), "missing file"),
    )
    t = _task_dir(tmp, "bad-expected")
    (t / "tests/expected_tests.json").write_text('{"f2p_tests": "all of them"}')
    add("invalid expected_tests.json", _raises(lambda: load_task(t), "expected_tests.json", "f2p_tests"))
    report, _ = jc.build_report(None, t / "tests/expected_tests.json", "x")
    add(
        "invalid expected_tests.json (verifier)",
        (any("expected_invalid" in r for r in report["reasons"]), str(report["reasons"][-1])[:150]),
    )

    schema = REPO / "workflow/schemas/config.schema.yaml"
    base = yaml.safe_load((REPO / "config.yaml").read_text())
    configs = [REPO / "config.yaml"]
    for label, change, needle in (
        ("config attempts = 0", {"attempts": 0}, "attempts"),
        ("config agent name with a space", {"agents": [{"name": "my agent", "kind": "nop"}]}, "my agent"),
        ("config unknown agent kind", {"agents": [{"name": "x", "kind": "magic"}]}, "magic"),
        ("config script agent without script", {"agents": [{"name": "x", "kind": "script"}]}, "script"),
        ("config misspelt key (attemps)", {"attemps": 1}, "did you mean `attempts`?"),
        (
            "config Harbor agent as kind",
            {"agents": [{"name": "x", "kind": "claude-code"}]},
            "`kind: harbor, harbor_agent: claude-code`",
        ),
    ):
        # as rules/common.smk checks it: one line naming the file, the key and the value
        add(
            label,
            _raises(
                lambda change=change: check_config({**base, **change}, configs, schema), "config.yaml", needle
            ),
        )
    add(
        "unknown agent kind (Agent)",
        _raises(lambda: agent_from_config({"name": "x", "kind": "magic"}, tmp), "'x'", "magic"),
    )
    add(
        "script agent with a missing file",
        _raises(
            lambda: agent_from_config({"name": "x", "kind": "script", "script": str(tmp / "nope.sh")}, tmp),
            "nope.sh",
        ),
    )

    preds = tmp / "predictions.jsonl"
    preds.write_text(
        '{"instance_id": "examples_calc-4", "model_patch": 7}\nnot json\n{"instance_id": "nope"}\n'
    )
    add(
        "malformed predictions",
        _raises(
            lambda: load_predictions(preds, [TASK]), "line 1", "line 2", "line 3", "unknown task id nope"
        ),
    )

    array = tmp / "predictions.json"
    array.write_text('[{"instance_id": "examples_calc-4", "model_patch": ""}]\n')
    add(
        "predictions: a JSON array",
        _raises(lambda: load_predictions(array, [TASK]), "a JSON array", "expected JSON Lines"),
    )
    misspelt = tmp / "misspelt.jsonl"
    misspelt.write_text('{"instance_id": "examples_calc-4", "patch": "diff --git a/x b/x"}\n')
    add(
        "predictions: patch key misspelt",
        _raises(lambda: load_predictions(misspelt, [TASK]), "unknown key(s) `patch`", "model_patch"),
    )

    def xml_case(name: str, data: bytes, code: str, max_bytes: int | None = None) -> None:
        path = tmp / f"{name}.xml"
        path.write_bytes(data)
        try:
            if max_bytes is None:
                jc.parse_junit_file(path)
            else:
                jc.parse_junit_file(path, max_bytes=max_bytes)
        except jc.VerifierInputError as exc:
            rows.append(
                Row(
                    "bad-input",
                    f"JUnit XML: {name}",
                    "rejected",
                    exc.reason[:150],
                    exc.reason.startswith(code),
                )
            )
            return
        rows.append(Row("bad-input", f"JUnit XML: {name}", "NOT REJECTED", "", False))

    # Not rejected, as published: bytes that are not UTF-8 are replaced, and the test counts under that id.
    path = tmp / "non-utf8.xml"
    path.write_bytes(b'<testsuite><testcase classname="a" name="\xff\xfe"/></testsuite>')
    statuses = jc.parse_junit_file(path).statuses
    replaced = statuses == {"a.\ufffd\ufffd": "PASS"}
    outcome = "replaced (U+FFFD), as published" if replaced else f"NOT REPLACED: {statuses}"
    rows.append(
        Row("bad-input", "JUnit XML: non-UTF-8", outcome, "the test counts as a.\\ufffd\\ufffd", replaced)
    )
    xml_case("truncated", b'<testsuite><testcase classname="a" name="b"/><testca', "xml_unreadable")
    xml_case(
        "huge (over the cap)", b"<testsuite>" + b" " * 4096 + b"</testsuite>", "xml_rejected", max_bytes=1024
    )
    xml_case("entity bomb", ENTITY_BOMB.encode(), "xml_rejected")
    xml_case("external entity", XXE.encode(), "xml_rejected")
    rows.extend(_collector_cap(tmp))

    repo = init_repo(tmp / "patch-repo")
    outside = tmp / "outside.txt"
    for label, patch in (
        ("patch: ../ path", "--- /dev/null\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n"),
        ("patch: absolute path", f"--- /dev/null\n+++ {outside}\n@@ -0,0 +1 @@\n+x\n"),
        (
            "patch: into .git",
            "diff --git a/.git/hooks/pre-commit b/.git/hooks/pre-commit\nnew file mode 100755\n--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1 @@\n+x\n",
        ),
        ("patch: beyond a symlink", (REPO / ADVERSARIAL / "patches/escape.patch").read_text()),
        (
            "patch: corrupt binary hunk",
            "diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 12\nzcmZ?wbhEHbG%;~yVEXd_\n\nliteral 0\nHcmV?d00001\n\n",
        ),
    ):
        refused, why = apply_patch(repo, patch)
        escaped = outside.exists() or (repo / ".git/hooks/pre-commit").exists()
        if escaped:
            outcome = "WROTE OUTSIDE THE REPOSITORY"
        elif refused:
            outcome = "refused"
        else:  # `+++ /abs/path` without a git header: -p1 strips the leading component, so it lands inside
            inside = [str(p.relative_to(repo)) for p in repo.rglob("outside.txt")]
            outcome, why = "applied inside the repository", f"as {inside}"
        rows.append(Row("bad-input", label, outcome, why, not escaped))
    return rows


def _collector_cap(tmp: Path) -> list[Row]:
    """The collector refuses a flood of reports (exit 3) instead of merging it."""
    repo = tmp / "flood"
    reports = repo / "build/test-results/test"
    reports.mkdir(parents=True)
    (reports / "TEST-big.xml").write_bytes(b"<testsuite>" + b" " * 10000 + b"</testsuite>")
    out = tmp / "flood-junit.xml"
    done = subprocess.run(
        [
            "bash",
            str(REPO / "src/kotlin_bench/scoring/verifier/kotlin_logs_collector.sh"),
            str(repo),
            str(out),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "KOTLIN_BENCH_MAX_REPORT_BYTES": "4096"},
    )
    ok = done.returncode == 3 and "exceed the cap" in done.stderr and b"<testcase" not in out.read_bytes()
    return [
        Row(
            "bad-input",
            "JUnit reports flood (collector cap)",
            f"exit {done.returncode}",
            done.stderr.strip().splitlines()[0][:150],
            ok,
        )
    ]


def run_bad_task_keep_going(ws: Workspace) -> list[Row]:
    """One bad task among two: the other still gets its result; the bad one is an error naming the file."""
    good, bad = "examples_calc-4", "examples_slug-8"
    ws.edit_task(good, "verifier", "timeout_sec", "3.0")
    ws.configure([good, bad], [{"name": "nop", "kind": "nop"}], retries=1)
    prep = ws.prepare(good, bad)
    if prep.returncode != 0:
        return [Row("bad-input", "preparation", f"exit {prep.returncode}", prep.stderr[-400:], False)]
    (ws.root / "examples/tasks" / bad / "tests/expected_tests.json").write_text("{not json", encoding="utf-8")
    out = ws.snakemake(ws.target("nop", good), ws.target("nop", bad))
    g, b = record(ws, "nop", good), record(ws, "nop", bad)
    # A task directory that cannot even be planned (malformed task.toml of a task not selected).
    toml = ws.root / "examples/tasks/examples_units-12/task.toml"
    toml.write_text(toml.read_text(encoding="utf-8") + "garbage = = =\n", encoding="utf-8")
    dry = ws.snakemake("--dry-run", ws.target("nop", good))
    named = "examples_units-12/task.toml" in dry.stdout + dry.stderr
    planned = dry.returncode == 0
    return [
        Row(
            "bad-input",
            "malformed task.toml among several (planning)",
            "the others are still planned" if planned else "planning stops for every task",
            "the error names examples_units-12/task.toml" if named else (dry.stderr[-150:] or "no error"),
            named,
            ""
            if planned
            else "GAP: kotlin_bench/dag.py must skip and report invalid task dirs (fix proposed)",
        ),
        Row(
            "bad-input",
            "one bad task among several (keep-going)",
            f"good: {g.get('status')}/{g.get('reason')}; bad: {b.get('status')}/{b.get('reason')}",
            (b.get("error") or "")[:150],
            out.returncode == 0
            and g.get("status") == "unresolved"
            and b.get("status") == "error"
            and "expected_tests.json" in (b.get("error") or ""),
        ),
    ]
