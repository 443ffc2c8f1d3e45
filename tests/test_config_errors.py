"""A configuration mistake gives one short line: the config file, the key path, the bad value, what is
allowed and the closest match. Checked for every key and every enumerated value of the schema (misspelt
by a rule, not by hand), and end to end through Snakemake."""

from __future__ import annotations

import copy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kotlin_bench.dag.config import SCHEMA, ConfigError, check_config, load_plan
from kotlin_bench.tools.workspace import copy_checkout
from tests.conftest import REPO

CONFIG = yaml.safe_load((REPO / "config.yaml").read_text())
SCHEMA_DATA = yaml.safe_load((REPO / SCHEMA).read_text())
# A value for every mapping the schema allows, so that a key below it can be misspelt.
FULL = {
    **CONFIG,
    "verifier": {"test_patch": "restore"},
    "capture": {"max_file_bytes": 10},
    "resources": {"image": {"threads": 2}, "run": {"threads": 1}},
    "registry": {"url": "127.0.0.1:5000"},
    "egress": {"record": "urls", "retrieval": "flag"},
    "disk": {**CONFIG.get("disk", {}), "results": "512 MiB"},
}


def misspell(word: str) -> str:
    """The word with two neighbouring letters swapped (or a letter doubled): a typo, not another key."""
    if len(word) > 3:
        i = len(word) // 2
        return word[: i - 1] + word[i] + word[i - 1] + word[i + 1 :]
    return word + word[-1]


def mappings(
    schema: dict[str, Any], data: Any, path: tuple[Any, ...] = ()
) -> Iterator[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path, schema) of every mapping of `data` the schema describes with fixed keys."""
    if isinstance(data, dict) and "properties" in schema:
        yield path, schema
        for key, sub in schema["properties"].items():
            if key in data:
                yield from mappings(sub, data[key], (*path, key))
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(data[:1]):
            yield from mappings(schema["items"], item, (*path, i))


def dotted(path: tuple[Any, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def check(config: dict[str, Any], tmp_path: Path) -> str:
    files = [tmp_path / "config.yaml"]
    files[0].write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError) as caught:
        check_config(config, files, REPO / SCHEMA)
    message = str(caught.value)
    # one line; short but for the path of the file and the keys it lists (a top-level key lists all of them)
    assert "\n" not in message and len(message.replace(str(files[0]), "config.yaml")) < 400
    return message


KEYS = [
    (path, key)
    for path, schema in mappings(SCHEMA_DATA, FULL)
    for key in schema["properties"]
    if key in at(FULL, path) and misspell(key) not in schema["properties"]
]


@pytest.mark.parametrize(("path", "key"), KEYS, ids=[dotted((*p, k)) for p, k in KEYS])
def test_a_misspelt_key_names_the_file_the_path_and_the_key_meant(
    path: tuple[Any, ...], key: str, tmp_path: Path
) -> None:
    config = copy.deepcopy(FULL)
    parent = at(config, path)
    parent[misspell(key)] = parent.pop(key)
    message = check(config, tmp_path)
    where = dotted((*path, misspell(key)))
    assert message.startswith(f"{tmp_path / 'config.yaml'}: {where}: unknown key"), message
    assert f"`{key}`" in message, message


def enums(schema: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], list[str]]]:
    if isinstance(schema, dict):
        if "enum" in schema and all(isinstance(v, str) for v in schema["enum"]):
            yield path, schema["enum"]
        for key, sub in (schema.get("properties") or {}).items():
            yield from enums(sub, (*path, key))
        if isinstance(schema.get("items"), dict):
            yield from enums(schema["items"], (*path, 0))


ENUMS = [(p, values, v) for p, values in enums(SCHEMA_DATA) for v in values]


@pytest.mark.parametrize(("path", "allowed", "value"), ENUMS, ids=[f"{dotted(p)}={v}" for p, _, v in ENUMS])
def test_a_misspelt_value_lists_the_allowed_ones(
    path: tuple[Any, ...], allowed: list[str], value: str, tmp_path: Path
) -> None:
    config = copy.deepcopy(FULL)
    parent = config
    for part in path[:-1]:
        parent = (
            parent[part] if not isinstance(parent, dict) or part in parent else parent.setdefault(part, {})
        )
    parent[path[-1]] = misspell(value)
    message = check(config, tmp_path)
    assert f"{dotted(path)}: `{misspell(value)}` is not one of {', '.join(allowed)}" in message, message
    assert f"`{value}`" in message or "Harbor agent" in message, message


@pytest.mark.parametrize("harbor_agent", ["claude-code", "codex", "openhands", "terminus-2"])
def test_a_harbor_agent_as_kind_says_what_to_write(harbor_agent: str, tmp_path: Path) -> None:
    config = copy.deepcopy(CONFIG)
    config["agents"][1]["kind"] = harbor_agent
    message = check(config, tmp_path)
    assert f"write `kind: harbor, harbor_agent: {harbor_agent}`" in message


def test_wrong_types_and_missing_keys(tmp_path: Path) -> None:
    config = {**CONFIG, "attempts": "two"}
    assert check(config, tmp_path).endswith("attempts: `two` is not of type integer")
    config = {k: v for k, v in CONFIG.items() if k != "agents"}
    assert "`agents:` is missing" in check(config, tmp_path)


def test_block_without_the_url_record_is_refused_in_one_line(tmp_path: Path) -> None:
    config = {**CONFIG, "egress": {"record": "hosts", "retrieval": "block"}}
    message = check(config, tmp_path)
    assert message.startswith(f"{tmp_path / 'config.yaml'}: egress: retrieval: block needs record: urls")
    assert "egress" in message and "record: urls" in message
    check_config({**CONFIG, "egress": {"record": "hosts"}}, [tmp_path / "config.yaml"], REPO / SCHEMA)


def test_the_file_that_sets_the_key_is_named(tmp_path: Path) -> None:
    """With --configfile, the mistake is in the file that sets the key, not in config.yaml."""
    base, extra = tmp_path / "config.yaml", tmp_path / "agents.yaml"
    base.write_text(yaml.safe_dump(CONFIG))
    extra.write_text("retires: 3\n")
    with pytest.raises(ConfigError, match=rf"^{extra}: retires: unknown key \(did you mean `retries`\?\)"):
        check_config({**CONFIG, "retires": 3}, [base, extra], REPO / SCHEMA)


def test_unknown_task_ids_give_the_closest_ids(tmp_path: Path) -> None:
    root = copy_checkout(REPO, tmp_path / "ws", npm_packs=False)
    for key, wrong in (("tasks", ["examples_calc-5"]), ("exclude", ["examples_slug8"])):
        config = {**CONFIG, key: wrong}
        with pytest.raises(ConfigError) as caught:
            load_plan(config, [root / "config.yaml"], root)
        message = str(caught.value)
        assert message.startswith(f"{root / 'config.yaml'}: {key}: unknown task id(s) `{wrong[0]}` (")
        assert "examples_calc-4" in message or "examples_slug-8" in message


def _snakemake_lines(root: Path, *args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    skipped = ("Using workflow", "Config file config.yaml is extended")
    return done.returncode, [
        line for line in (done.stdout + done.stderr).splitlines() if not line.startswith(skipped)
    ]


def test_snakemake_prints_one_line(tmp_path: Path) -> None:
    """A mistake in config.yaml, one on the command line (issue 31: `--config attemps=2` blamed
    config.yaml) and a tab in config.yaml (Snakemake's own message names no file or line): one line."""
    root = copy_checkout(REPO, tmp_path / "ws", npm_packs=False)
    keys = ", ".join(sorted(SCHEMA_DATA["properties"]))
    assert _snakemake_lines(root, "--config", "attemps=2") == (
        1,
        [
            f"kotlin-bench: error: --config: attemps: unknown key (did you mean `attempts`?); the keys here are {keys}"
        ],
    )
    original = (root / "config.yaml").read_text()
    (root / "config.yaml").write_text(original.replace("attempts: 1", "attemps: 1"))
    assert _snakemake_lines(root) == (
        1,
        [
            f"kotlin-bench: error: config.yaml: attemps: unknown key (did you mean `attempts`?); the keys here are {keys}"
        ],
    )
    lines = original.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  "))  # an indented line
    lines[at] = "\t" + lines[at].lstrip()
    (root / "config.yaml").write_text("\n".join(lines) + "\n")
    code, shown = _snakemake_lines(root)
    assert code == 1 and len(shown) == 1, shown
    assert shown[0].startswith("kotlin-bench: error: ") and shown[0].endswith(
        f"config.yaml: line {at + 1}, column 1: a tab in the indentation; YAML indents with spaces only"
    ), shown
