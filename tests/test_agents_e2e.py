"""Agents end to end on the example dataset: predictions files and Harbor agents through the real
`harbor` CLI on the task images the workflow built. The same patch must get the same reward everywhere.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.dataset.task import load_task
from kotlin_bench.runs.agents.harbor import find_trial_result, stage_task, trial_compose
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import EXAMPLES, KOTLINC_EXAMPLES, REPO, copy_repo, snakemake

pytestmark = pytest.mark.usefixtures("docker_engine")
HARBOR = Path(os.environ.get("KOTLIN_BENCH_HARBOR", REPO / ".harbor"))
NOT_A_PATCH = "this is not a diff at all\n"
HARBOR_TASKS = ["examples_calc-4"]  # Harbor's agents run this one (a trial costs half a minute)
STALE_PATCH = (
    "diff --git a/README.md b/README.md\n--- a/README.md\n+++ b/README.md\n"
    "@@ -1,2 +1,2 @@\n-a line that is not in the file\n+a replacement\n context that does not exist\n"
)


@pytest.fixture(scope="module")
def harbor_installed() -> Path:
    if not (HARBOR / "venv/bin/harbor").exists():
        if os.environ.get("CI"):
            pytest.fail(f"harbor is not installed at {HARBOR}: CI must run scripts/setup_harbor.sh")
        pytest.skip(f"harbor is not installed at {HARBOR} (scripts/setup_harbor.sh)")
    return HARBOR


def test_the_harbor_tested_is_the_one_setup_installs(harbor_installed: Path) -> None:
    """scripts/setup_harbor.sh pins the release the README names; these tests run against that install."""
    pinned = re.search(r"HARBOR_VERSION:-([0-9][0-9.]*)", (REPO / "scripts/setup_harbor.sh").read_text())
    assert pinned is not None
    done = subprocess.run(
        [str(harbor_installed / "venv/bin/harbor"), "--version"], capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == pinned[1], (
        f"{harbor_installed} holds harbor {done.stdout.strip()}: run scripts/setup_harbor.sh"
    )
    assert f"Harbor {pinned[1]}" in (REPO / "README.md").read_text()


def _plain_harbor_run(work: Path, task_id: str, harbor_installed: Path) -> dict[str, Any]:
    """`harbor run -p <task dir> -a oracle` as the published benchmark documents it: Harbor builds the
    image of the compose file's name (`kotlin-bench/<repo>:pr-<N>`) and deletes it afterwards. The task
    directory is staged without our image and with the main service on no network (Harbor's allowlist
    sidecar image is not available offline), stopped as our trials stop it (`trial_compose`)."""
    staged = stage_task(load_task(work / "examples/tasks" / task_id), work / "plain")
    toml = (staged / "task.toml").read_text(encoding="utf-8")
    (staged / "task.toml").write_text(re.sub(r'^docker_image = "[^"]*"\n', "", toml, flags=re.MULTILINE))
    extra = work / "plain/extra.compose.yaml"
    extra.write_text(trial_compose(isolate_network=True), encoding="utf-8")  # ours: no network, quick stop
    harbor_bin = str(harbor_installed / "venv/bin/harbor")  # what setup_harbor.sh installed
    env = dict(os.environ) | {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    if (harbor_installed / "docker-config").is_dir():
        env["DOCKER_CONFIG"] = str(harbor_installed / "docker-config")
    jobs = work / "plain/jobs"
    cmd = [
        harbor_bin,
        "run",
        "-p",
        str(staged),
        "-a",
        "oracle",
        "-o",
        str(jobs),
        "--job-name",
        "job",
        "-y",
        "-q",
    ]
    done = subprocess.run([*cmd, "--extra-docker-compose", str(extra)], env=env, capture_output=True, text=True, timeout=900)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(find_trial_result(jobs).read_text())


def _task_images(work: Path) -> dict[str, str]:
    """Task image name -> id, as the workspace's sentinels record them."""
    records = [json.loads(p.read_text()) for p in (work / "results/images/task").glob("*.json")]
    return {r["image"]: r["id"] for r in records}


def _base_ids(work: Path) -> set[str]:
    """The base images' ids the sentinels record (their names are shared by every workspace on the engine
    and pinned again before each build, so only the images themselves must stay)."""
    return {json.loads(p.read_text())["id"] for p in (work / "results/images/base").glob("*/*.json")}


def _engine_ids(images: dict[str, str]) -> dict[str, str | None]:
    """Image name (or id) -> the id the engine has under it (None: not there)."""
    from kotlin_bench.engine.engine import connect
    from kotlin_bench.engine.images import image_id

    client = connect().client
    return {name: image_id(client, name) for name in images}


@pytest.fixture(scope="module")
def results(
    tmp_path_factory: pytest.TempPathFactory, harbor_installed: Path, finished_examples: Workspace
) -> pd.DataFrame:
    """The examples' finished run (oracle, nop) with predictions and Harbor agents added, after a plain
    Harbor run of a task directory on the same engine."""
    work = finished_examples.clone(tmp_path_factory.mktemp("agents") / "ws").root
    tasks = sorted(p.parent.name for p in (work / "examples/tasks").glob("*/task.toml"))
    images, bases = _task_images(work), _base_ids(work)
    trial = _plain_harbor_run(work, tasks[0], harbor_installed)
    assert trial["verifier_result"]["rewards"]["reward"] == 1.0  # Harbor built the image and ran the oracle
    assert _engine_ids(images) == images  # every task image still has its name, on the recorded image
    assert all(_engine_ids({base: base}).get(base) for base in bases)  # and every base is still there
    gold = [
        {
            "instance_id": t,
            "model_name_or_path": "gold",
            "model_patch": (work / f"examples/tasks/{t}/solution/fix.patch").read_text(),
        }
        for t in KOTLINC_EXAMPLES
    ]
    (work / "gold.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gold))
    # sorted: calc-4, calc-6, semver-6, slug-8, then the others; calc-6 and the others have no line (missing)
    calc, _calc6, semver, slug, *_others = tasks
    bad = [
        {"instance_id": calc, "model_name_or_path": "bad", "model_patch": ""},
        {"org": "examples", "repo": "semver", "number": 6, "fix_patch": NOT_A_PATCH},
        {"task_id": slug, "model_name_or_path": "bad", "model_patch": STALE_PATCH},
    ]
    assert semver == "examples_semver-6"
    (work / "bad.jsonl").write_text("".join(json.dumps(b) + "\n" for b in bad))
    ours = [{"name": "oracle", "kind": "oracle"}, {"name": "nop", "kind": "nop"}]
    predictions = {  # the kotlinc examples: a predicted patch is applied the same way on the Gradle ones
        "tasks": KOTLINC_EXAMPLES,
        "agents": [
            *ours,
            {"name": "gold", "kind": "predictions", "predictions": "gold.jsonl"},
            {"name": "bad", "kind": "predictions", "predictions": "bad.jsonl"},
        ],
        "reproduce": {"reference": {"oracle": "oracle", "gold": "oracle"}},
    }
    harbor = {  # a Harbor trial costs half a minute: one task, not seven
        "tasks": HARBOR_TASKS,
        "agents": [
            *ours,
            {"name": "harbor-oracle", "kind": "harbor", "harbor_agent": "oracle"},  # on the record
            {"name": "harbor-nop", "kind": "harbor", "harbor_agent": "nop", "isolate_network": True},
        ],
        "reproduce": {"reference": {"oracle": "oracle", "harbor-oracle": "oracle"}},
    }
    frames = []
    watched: dict[str, Any] = {}
    for name, config in (("predictions", predictions), ("harbor", harbor)):
        (work / f"{name}.yaml").write_text(yaml.safe_dump(config))
        env = {"KOTLIN_BENCH_HARBOR": str(harbor_installed)}
        if name == "predictions":  # watched from a second terminal while it runs (issue 31)
            out = _watched_run(work, tasks[0], f"{name}.yaml", env, watched)
        else:
            out = snakemake(work, "--configfile", f"{name}.yaml", env=env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-5000:]
        watched.setdefault("output", out.stdout + out.stderr)
        summary = pd.read_csv(work / "results/summary.csv")
        frames.append(summary if not frames else summary[summary.agent.str.startswith("harbor-")])
    frame = pd.concat(frames, ignore_index=True)
    frame.attrs["work"] = work
    frame.attrs["watched"] = watched
    return frame


def _watched_run(
    work: Path, task: str, configfile: str, env: dict[str, str], watched: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    """Snakemake adding the predictions agents, and what a second terminal sees once the first new run's
    work is there (its verification still to come): summary.csv as it was, and `compare`'s answer."""
    before = (work / names.SUMMARY_CSV).read_bytes()
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", configfile]
    process = subprocess.Popen(
        cmd, cwd=work, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout or []), daemon=True)
    reader.start()
    first = work / names.work_dir("gold", task, 1) / names.WORK_FILE
    deadline = time.monotonic() + 900
    while not first.is_file() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    watched["summary_kept"] = (work / names.SUMMARY_CSV).read_bytes() == before
    watched["compare"] = subprocess.run(
        [sys.executable, "-m", "kotlin_bench", "compare", "oracle", "nop"],
        cwd=work, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    code = process.wait(timeout=1800)
    reader.join(timeout=60)
    return subprocess.CompletedProcess(cmd, code, "".join(lines), "")


def by_agent(frame: pd.DataFrame, agent: str) -> pd.Series:
    return frame[frame.agent == agent].set_index("task")["reward"].sort_index()


def test_gold_predictions_and_harbor_agree_with_our_oracle(results: pd.DataFrame) -> None:
    oracle = by_agent(results, "oracle")
    assert len(oracle) == len(KOTLINC_EXAMPLES) and (oracle == 1.0).all()
    pd.testing.assert_series_equal(by_agent(results, "gold"), oracle, check_names=False)
    pd.testing.assert_series_equal(
        by_agent(results, "harbor-oracle"), oracle[HARBOR_TASKS], check_names=False
    )
    nop = by_agent(results, "nop")
    assert len(nop) == len(KOTLINC_EXAMPLES) and (nop == 0.0).all()
    pd.testing.assert_series_equal(by_agent(results, "harbor-nop"), nop[HARBOR_TASKS], check_names=False)
    gold_models = results[results.agent == "gold"]["model"]
    assert (gold_models == "gold").all()


def test_bad_predictions_score_zero_with_the_right_reason(results: pd.DataFrame) -> None:
    bad = results[results.agent == "bad"].set_index("task")
    assert (bad.reward == 0.0).all() and (bad.status == "unresolved").all()
    assert bad.loc["examples_calc-4", "reason"] == "empty_patch"
    assert bad.loc["examples_semver-6", "reason"] == "patch_not_applied"
    assert bad.loc["examples_slug-8", "reason"] == "patch_not_applied"
    assert bad.loc["examples_units-12", "reason"] == "no_prediction"  # no line at all: still a run of `bad`
    assert set(bad["model"]) == {"bad"}


def test_harbor_results_keep_the_trial_and_its_verifier_files(results: pd.DataFrame) -> None:
    work: Path = results.attrs["work"]
    run = work / "results/runs/harbor-oracle/examples_calc-4/attempt-1"
    result = json.loads((run / "result.json").read_text())
    assert result["kind"] == "harbor" and result["reward"] == 1.0
    assert (run / result["trial_result"]).is_file()
    assert (run / "verifier/junit.xml").read_text().count("<testcase") > 0
    assert "--extra-docker-compose" in (run / "work/harbor/harbor.log").read_text()  # the quick stop
    assert "stop_grace_period: 1s" in (run / "work/harbor/extra.compose.yaml").read_text()
    # the oracle's agent phase on the record (nothing fetched, nothing flagged); nop's without network
    record = json.loads((run / "work/work.json").read_text())
    assert record["egress"] == result["egress"] and record["egress"]["record"] == "urls"
    assert record["flags"]["retrieval"] == [] and (run / "work" / names.EGRESS_RECORD).is_file()
    rows = results[results.task == "examples_calc-4"].set_index("agent")
    assert rows.loc["harbor-oracle", "egress_requests"] == 0 and not rows.loc["harbor-oracle", "retrieval"]
    assert pd.isna(rows.loc["harbor-nop", "egress_requests"])
    nop = work / names.work_dir("harbor-nop", "examples_calc-4", 1)
    assert json.loads((nop / names.WORK_FILE).read_text())["egress"] is None
    assert "network_mode: none" in (nop / "harbor/extra.compose.yaml").read_text()
    staged = run / "work/harbor/task/examples_calc-4"
    built = json.loads((work / "results/images/task/examples_calc-4.json").read_text())["image"]
    assert built.startswith("kotlin-bench/examples_calc:pr-4.ws-")  # the workflow's own name, not Harbor's
    assert f'docker_image = "{built}"' in (staged / "task.toml").read_text()
    assert (
        yaml.safe_load((staged / "environment/docker-compose.yaml").read_text())["services"]["main"]["image"]
        == built
    )


def test_unknown_and_duplicate_prediction_ids_stop_before_any_container(tmp_path: Path) -> None:
    work = copy_repo(tmp_path / "w")
    lines = [{"instance_id": "nope-1", "model_patch": "x"}] + [
        {"instance_id": "examples_calc-4", "model_patch": "x"}
    ] * 2
    (work / "p.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + "{broken\n")
    (work / "p.yaml").write_text(
        yaml.safe_dump({"agents": [{"name": "p", "kind": "predictions", "predictions": "p.jsonl"}]})
    )
    out = snakemake(work, "--dry-run", "--configfile", "p.yaml")
    assert out.returncode != 0
    for expected in (
        "p.jsonl: 3 problem(s)",
        "unknown task id nope-1",
        "line 3: duplicate id examples_calc-4",
        "line 4: malformed",
    ):
        assert expected in out.stdout + out.stderr, out.stdout[-2000:]


def test_attempts_are_separate_targets(tmp_path: Path) -> None:
    work = copy_repo(tmp_path / "w")
    (work / "k.yaml").write_text(yaml.safe_dump({"attempts": 3}))
    out = snakemake(work, "--dry-run", "--configfile", "k.yaml")
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout + out.stderr
    for k in (1, 2, 3):
        assert f"results/runs/oracle/examples_calc-4/attempt-{k}/result.json" in text
    assert "attempt-4" not in text


def test_a_run_that_adds_agents_can_be_watched_and_ends_on_the_headline(results: pd.DataFrame) -> None:
    """Issue 31: adding an agent removed summary.csv at the start (`compare` failed until the end), the
    progress line counted every run of the config, and ~45 lines of job output followed the summary.
    The previous summary stays readable while the new runs go, the progress line counts this
    invocation's runs, and the terminal ends on the per-agent headline."""
    watched = results.attrs["watched"]
    tasks = sorted(set(results["task"]))
    assert watched["summary_kept"]
    assert watched["compare"].returncode == 0, watched["compare"].stderr
    assert f"{len(EXAMPLES)} tasks both ran" in watched["compare"].stdout  # the previous summary's
    lines = [x for x in watched["output"].splitlines() if x.strip()]
    runs = 2 * len(tasks)  # gold and bad on every task: bad's tasks without a line are runs too
    progress = [x for x in lines if x.startswith("kotlin-bench: runs ")]
    assert progress and progress[-1].startswith(f"kotlin-bench: runs {runs}/{runs} done"), progress
    details = max(i for i, x in enumerate(lines) if x.startswith("kotlin-bench: details: results/summary.md"))
    after = lines[details + 1 :]  # only Snakemake's own closing lines (its log, the elapsed time)
    assert len(after) <= 2 and not any("job" in x.lower() or x.startswith("rule ") for x in after), after
    headline = "\n".join(lines[max(0, details - 8) : details])
    assert f"kotlin-bench: gold: {len(tasks)}/{len(tasks)} resolved" in headline, headline
    assert f"kotlin-bench: bad: 0/{len(tasks)} resolved" in headline, headline
    assert "kotlin-bench: gold vs oracle: REPRODUCED" in headline, headline
