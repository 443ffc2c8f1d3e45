"""Predictions files: both accepted shapes, and every problem reported before anything runs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kotlin_bench.dataset.predictions import PredictionsError, file_model, load_predictions

TASKS = ["examples_calc-4", "acme_widgets-7"]


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n", encoding="utf-8"
    )
    return path


def test_both_shapes_and_empty_patches(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "p.jsonl",
        [
            {
                "instance_id": "examples_calc-4",
                "model_name_or_path": "m1",
                "model_patch": "diff --git a/x b/x\n",
            },
            "",
            {"org": "acme", "repo": "widgets", "number": 7, "fix_patch": None},
        ],
    )
    found = load_predictions(path, TASKS)
    assert found["examples_calc-4"].model == "m1"
    assert found["examples_calc-4"].patch.startswith("diff --git")
    assert found["acme_widgets-7"].patch == ""
    assert found["examples_calc-4"].digest != found["acme_widgets-7"].digest


def test_all_problems_listed_together(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "p.jsonl",
        [
            {"task_id": "examples_calc-4", "model_patch": "a"},
            "{not json",
            {"task_id": "examples_calc-4", "model_patch": "b"},
            {"task_id": "nope-1", "model_patch": "c"},
            {"org": "acme", "fix_patch": "d"},
            [1, 2],
            {"task_id": "acme_widgets-7", "model_patch": 5},
        ],
    )
    with pytest.raises(PredictionsError) as err:
        load_predictions(path, TASKS)
    text = str(err.value)
    assert "6 problem(s)" in text
    for expected in (
        "line 2: malformed",
        "line 3: duplicate id examples_calc-4 (first on line 1)",
        "line 4: unknown task id nope-1",
        "line 5: malformed: Multi-SWE-bench shape needs repo, number",
        "line 6: malformed: expected a JSON object",
        "line 7: malformed: the patch must be a string or null",
    ):
        assert expected in text


def test_unreadable_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(PredictionsError, match=r"bad\.jsonl: cannot read predictions"):
        load_predictions(tmp_path / "bad.jsonl", TASKS)
    with pytest.raises(PredictionsError, match="cannot read"):
        load_predictions(tmp_path / "missing.jsonl", TASKS)


def test_agents_from_config_keep_every_field() -> None:
    from dataclasses import asdict

    from kotlin_bench.runs.agents import Agent, agent_from_config

    entry = {
        "name": "h",
        "kind": "harbor",
        "harbor_agent": "claude-code",
        "model": "m",
        "kwargs": {"b": 2, "a": "x"},
        "isolate_network": True,
    }
    agent = agent_from_config(entry, Path("."))
    assert (agent.harbor_agent, agent.model, agent.kwargs, agent.isolate_network) == (
        "claude-code",
        "m",
        (("a", "x"), ("b", "2")),
        True,
    )
    assert Agent(**asdict(agent)) == agent
    with pytest.raises(ValueError, match="kind harbor needs `harbor_agent"):
        agent_from_config({"name": "h", "kind": "harbor"}, Path("."))
    with pytest.raises(ValueError, match="unknown kind 'robot'"):
        agent_from_config({"name": "r", "kind": "robot"}, Path("."))


def test_a_json_array_is_named_as_such(tmp_path: Path) -> None:
    """A SWE-bench `.json` file (one array) gives one message, not one per line."""
    rows = [{"instance_id": t, "model_patch": ""} for t in TASKS * 6]
    for text in (json.dumps(rows), json.dumps(rows, indent=2), "  \n" + json.dumps([])):
        (tmp_path / "preds.json").write_text(text)
        with pytest.raises(PredictionsError) as err:
            load_predictions(tmp_path / "preds.json", TASKS)
        message = str(err.value)
        assert "a JSON array of" in message and "expected JSON Lines" in message
        assert "\n" not in message


def swap(word: str) -> str:
    i = len(word) // 2
    return word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]


@pytest.mark.parametrize(
    "key", ["patch", "diff", "prediction", "modelpatch", swap("model_patch"), "Model_Patch"]
)
def test_a_line_without_its_patch_key_names_the_unknown_key(key: str, tmp_path: Path) -> None:
    """Instead of scoring an empty patch: the key that is not read, and the one expected."""
    path = write_lines(
        tmp_path / "p.jsonl", [{"instance_id": "examples_calc-4", key: "diff --git a/x b/x\n"}]
    )
    with pytest.raises(PredictionsError) as err:
        load_predictions(path, TASKS)
    message = str(err.value)
    assert f"unknown key(s) `{key}`" in message and "model_patch" in message


def test_the_multi_swe_bench_shape_suggests_its_own_key(tmp_path: Path) -> None:
    line = {"org": "acme", "repo": "widgets", "number": 7, "fix_pach": "x"}
    with pytest.raises(PredictionsError, match=r"`fix_pach` \(did you mean `fix_patch`\?\)"):
        load_predictions(write_lines(tmp_path / "p.jsonl", [line]), TASKS)


def test_an_unknown_id_gives_the_closest_ids(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "p.jsonl", [{"instance_id": "examples_calc-5", "model_patch": "x"}])
    with pytest.raises(
        PredictionsError, match=r"unknown task id examples_calc-5 \(did you mean `examples_calc-4`\?\)"
    ):
        load_predictions(path, TASKS)


def test_selected_tasks_without_a_prediction_are_named() -> None:
    from kotlin_bench.dag.plan import missing_predictions
    from kotlin_bench.runs.agents import Agent

    agent = Agent("gold", "predictions", predictions="preds.jsonl")
    found = load_predictions_of(["examples_calc-4"])
    warning = missing_predictions(agent, found, ["examples_calc-4", "acme_widgets-7"])
    assert warning is not None
    assert "1 selected task(s) have no prediction in preds.jsonl" in warning and "acme_widgets-7" in warning
    assert missing_predictions(agent, found, ["examples_calc-4"]) is None


def load_predictions_of(ids: list[str]) -> dict:
    from kotlin_bench.dataset.predictions import Prediction

    return {i: Prediction(i, None, "x", n) for n, i in enumerate(ids, start=1)}


@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_the_suggested_conversion_keeps_the_input(tmp_path: Path) -> None:
    """Issue 31: for a JSON array in `preds.jsonl` the message suggested `jq ... preds.jsonl > preds.jsonl`,
    which empties the file. Run as printed, the suggestion now writes a new file that loads."""
    rows = [{"instance_id": t, "model_name_or_path": "m", "model_patch": "x"} for t in TASKS]
    source = tmp_path / "preds.jsonl"
    source.write_text(json.dumps(rows))
    with pytest.raises(PredictionsError) as err:
        load_predictions(source, TASKS)
    command = re.search(r"`(jq [^`]*)`", str(err.value))
    assert command is not None, err.value
    subprocess.run(command[1], shell=True, cwd=tmp_path, check=True)
    assert json.loads(source.read_text()) == rows
    converted = tmp_path / "preds.converted.jsonl"
    assert set(load_predictions(converted, TASKS)) == set(TASKS)
    assert file_model(load_predictions(converted, TASKS)) == "m"


def test_a_file_without_any_prediction_is_an_error(tmp_path: Path) -> None:
    """An emptied predictions file is refused, not run as every task scoring 0."""
    (tmp_path / "preds.jsonl").write_text("\n")
    with pytest.raises(PredictionsError, match="no prediction at all"):
        load_predictions(tmp_path / "preds.jsonl", TASKS)
