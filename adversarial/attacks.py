"""Attacks on the verifier: scripts and patches in examples/adversarial/ run as agents on one example
task; each must score 0 and the result must say why (its status, reason or flags), except the one
documented as a known limit, which must be flagged; the gold patch must still score 1."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from adversarial.common import ADVERSARIAL, TASK, Row, no_containers, record
from kotlin_bench.core import names
from kotlin_bench.tools.workspace import Workspace


@dataclass(frozen=True)
class Attack:
    name: str
    defence: str
    script: str | None = None  # examples/adversarial/attacks/<script>
    patch: str | None = None  # examples/adversarial/patches/<patch>, as a predictions agent
    reward: float = 0.0
    reasons: tuple[str, ...] = ()  # the result's reason must be one of these (empty: any)
    flags: dict[str, str] = field(default_factory=dict)  # flag -> text one entry must contain ("": any)
    leftover: bool = False  # verifier/leftover_processes.txt must name a killed process
    known_limit: bool = False  # not prevented: must be flagged, the reward may be 1
    control: bool = False  # not an attack: must score 1 and raise no flag


ATTACKS: tuple[Attack, ...] = (
    Attack(
        "plant-verdict",
        "fresh verifier container; /tests from the host; /logs/verifier reset",
        script="plant-verdict.sh",
        flags={"outside_repo": "/logs/verifier/reward.txt"},
    ),
    Attack(
        "replace-ktest",
        "fresh container (the image's ktest); repository files are not on PATH",
        script="replace-ktest.sh",
        flags={"infrastructure": "ktest", "outside_repo": "/usr/local/bin/ktest"},
    ),
    Attack(
        "fake-xml",
        "stale TEST*.xml deleted; only reports newer than the start marker count",
        script="fake-xml.sh",
        flags={"infrastructure": "build/test-results/"},
    ),
    Attack(
        "edit-tests",
        "the paths the hidden test patch touches are restored, then it is applied",
        script="edit-tests.sh",
        reasons=("no_fixed_test", "expected_missing"),
        flags={"tests": "CalculatorTest.kt"},
    ),
    Attack(
        "disable-tests",
        "skipped is not passed: every expected test must pass",
        script="disable-tests.sh",
        flags={"tests": "LexerTest.kt"},
    ),
    Attack(
        "delete-tests",
        "every expected p2p test must run and pass",
        script="delete-tests.sh",
        flags={"tests": "LexerTest.kt"},
    ),
    Attack(
        "background-tamper",
        "fresh verifier container: agent processes never reach it",
        script="background-tamper.sh",
        flags={"outside_repo": "/tests/test.sh"},
    ),
    Attack(
        "deep-after-verdict",
        "test.sh kills leftovers before collecting; reward read after it exits",
        script="deep-after-verdict.sh",
        flags={"suspicious": "/logs/verifier"},
        leftover=True,
    ),
    Attack(
        "deep-verifier-files",
        "the host re-scores junit.xml with its own scorer and list",
        script="deep-verifier-files.sh",
        reasons=("verifier_tampered",),
        flags={"verifier": "host", "suspicious": "/tests/"},
    ),
    Attack(
        "forge-diff",
        "git apply refuses paths outside the work tree and in .git",
        script="forge-diff.sh",
        reasons=("agent_diff_not_applied",),
        flags={"outside_repo": "/usr/bin/git"},
    ),
    Attack(
        "escape-patch",
        "git apply refuses ../, absolute and beyond-symlink paths",
        patch="escape.patch",
        reasons=("patch_not_applied",),
    ),
    Attack(
        "forge-reports-at-test-time",
        "none inside the container (threat model): flagged for review",
        script="forge-reports-at-test-time.sh",
        flags={"suspicious": "addShutdownHook"},
        known_limit=True,
    ),
    Attack("oracle", "the gold patch, every defence on", reward=1.0, control=True),
)
REVIEW_FLAGS = ("infrastructure", "tests", "suspicious", "outside_repo", "verifier")


def attack_agents(ws: Workspace, attacks: tuple[Attack, ...] = ATTACKS) -> list[dict[str, Any]]:
    agents: list[dict[str, Any]] = []
    for attack in attacks:
        if attack.script:
            agents.append(
                {
                    "name": attack.name,
                    "kind": "script",
                    "script": str(ADVERSARIAL / "attacks" / attack.script),
                }
            )
        elif attack.patch:
            patch = (ws.root / ADVERSARIAL / "patches" / attack.patch).read_text(encoding="utf-8")
            line = json.dumps({"instance_id": TASK, "model_name_or_path": attack.name, "model_patch": patch})
            rel = ws.write(f"adversarial-input/{attack.name}.jsonl", line + "\n")
            agents.append({"name": attack.name, "kind": "predictions", "predictions": rel})
        else:
            agents.append({"name": attack.name, "kind": "oracle"})
    return agents


def judge_attack(ws: Workspace, attack: Attack) -> Row:
    result = record(ws, attack.name)
    if not result:
        return Row("attacks", attack.name, "no result", "", False, attack.defence)
    flags = {k: v for k, v in (result.get("flags") or {}).items() if v}
    leftovers = ws.run_dir(attack.name, TASK) / names.VERIFIER_OUT / names.LEFTOVER_PROCESSES
    killed = (
        leftovers.read_text(encoding="utf-8", errors="replace").splitlines() if leftovers.is_file() else []
    )
    why = [f"{result.get('status')}/{result.get('reason') or '-'}"]
    why += [
        f"{k}: {', '.join(str(x) for x in v[:2])}{' ...' if len(v) > 2 else ''}" for k, v in flags.items()
    ]
    if killed:
        shown = next((k for k in killed if "bash" in k), killed[0])
        why.append(f"killed after the tests: {shown[:70]}")
    flag_ok = all(
        any(text in str(entry) for entry in flags.get(name, [])) for name, text in attack.flags.items()
    )
    reward = result.get("reward")
    if attack.control:
        ok = reward == 1.0 and not any(flags.get(k) for k in REVIEW_FLAGS)
    elif attack.known_limit:
        ok = flag_ok
    else:
        ok = (
            reward == attack.reward
            and flag_ok
            and (not attack.reasons or result.get("reason") in attack.reasons)
        )
        ok = ok and (not attack.leftover or bool(killed))
    outcome = f"reward {reward}"
    if attack.known_limit:
        outcome += " NOT PREVENTED, flagged" if flag_ok else " NOT PREVENTED, NOT FLAGGED"
    return Row("attacks", attack.name, outcome, "; ".join(why), ok, attack.defence)


def run_attacks(ws: Workspace, attacks: tuple[Attack, ...] = ATTACKS) -> list[Row]:
    """All attacks (and the gold controls) on one task, in one Snakemake invocation."""
    ws.configure([TASK], attack_agents(ws, attacks), retries=0)
    out = ws.snakemake(*(ws.target(a.name, TASK) for a in attacks))
    rows = [judge_attack(ws, attack) for attack in attacks]
    clean, left = no_containers(ws)
    rows.append(Row("attacks", "containers after the batch", f"left: {left}", "", clean))
    if out.returncode != 0:
        rows.append(Row("attacks", "snakemake", f"exit {out.returncode}", out.stderr[-300:], False))
    return rows
