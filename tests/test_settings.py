"""What a change of the config or of a task's retrieval facts reruns (issue 38, item 2), without Docker.

A finished-looking workspace: a copy of the repository whose every output exists and is recorded as made
by its rule with the parameters of now (`snakemake --touch`). Editing one task's retrieval facts in the
dataset specification (its repository's artifacts, its entry's releases of the fix) then plans, under `retrieval: block`, that task's
solve and verify steps and the tables made from the runs; under `flag`, only the tables: the summary
classifies the kept egress records again, and no agent runs again.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.core.retrieval import Facts
from kotlin_bench.dag.settings import RETRIEVAL_FACTS, SECTIONS, Effect, Section, Settings
from kotlin_bench.engine import egress
from tests.conftest import REPO, copy_repo, snakemake

EDITED = "examples_semver-6"  # the one task of examples/semver
REPORTS = {names.SUMMARY_CSV, names.RATES_CSV, names.SITE_INDEX}


def planned(root: Path) -> set[str]:
    """The files the next invocation would make (`snakemake --summary`: plan other than `no update`)."""
    done = snakemake(root, "--summary", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line.split("\t") for line in done.stdout.splitlines() if "\t" in line]
    return {cols[0] for cols in lines[1:] if cols[-1] != "no update"}


def finished(root: Path, policy: str) -> None:
    """Every output made (empty files, the first time) and recorded with the parameters of now, under
    `policy`."""
    config = root / "config.yaml"
    lines = [line for line in config.read_text().splitlines() if not line.startswith("egress:")]
    config.write_text("\n".join([*lines, f"egress: {{record: urls, retrieval: {policy}}}", ""]))
    for path in planned(root) if not (root / names.SUMMARY_CSV).exists() else ():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).touch()
    done = snakemake(root, "--touch", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


def edit_facts(root: Path, pattern: str, release: str) -> None:
    """One more coordinate pattern of examples/semver, the repository of EDITED alone, and one more release
    of the fix in EDITED's own entry."""
    spec = root / "examples" / "dataset.json"
    data = json.loads(spec.read_text())
    data["repositories"]["examples/semver"]["artifacts"]["coordinates"].append(
        {"pattern": pattern, "source": "tests/test_settings.py"}
    )
    [entry] = [t for t in data["tasks"] if t["id"] == EDITED]
    entry.setdefault("fix_also_released_in", []).append(
        {"version": release, "source": "tests/test_settings.py"}
    )
    spec.write_text(json.dumps(data, indent=2) + "\n")


def test_editing_retrieval_facts_reruns_what_they_decide(tmp_path: Path) -> None:
    """Under `flag` only the tables; under `block` the task's runs too (one workspace, finished under
    each policy in turn). What the edit adds to the plan is compared: a file planned before it (a copy's
    time stamps, seen once under load) is no effect of the facts."""
    root = copy_repo(tmp_path / "repo")
    agents = ("oracle", "nop")
    runs = {names.work_record(a, EDITED, 1) for a in agents} | {
        names.verify_result(a, EDITED, 1) for a in agents
    }
    for policy, pattern, release, rerun in (
        ("flag", "examples:semver-extra", "1.0.9", set()),
        ("block", "examples:semver-more", "1.0.8", runs),
    ):
        finished(root, policy)
        before = planned(root)
        if before:
            print(f"planned before the edit under {policy}: {sorted(before)}")
            print(snakemake(root, "-n", "-r", timeout=600).stdout[-5000:])
        edit_facts(root, pattern, release)
        added = planned(root) - before
        assert {p for p in added if p.startswith(names.runs_root() + "/")} == rerun - before, (policy, added)
        assert added >= REPORTS - before, (policy, added)
        assert not [p for p in added if "/images/" in p or "/tasks/" in p], (policy, added)


def test_the_summary_classifies_a_kept_record_again_when_the_facts_change(tmp_path: Path) -> None:
    """`flagged`: the record's own flags while its facts are the task's, else its requests classified
    again with the facts of now; a request refused under `block` stays flagged."""
    url = "/maven2/examples/calc/1.1.0/calc-1.1.0.jar"
    line = {"time": 0, "method": "GET", "scheme": "https", "host": "repo.test", "port": 443, "path": url}
    record = tmp_path / names.EGRESS_RECORD
    record.write_text(
        json.dumps(line | {"status": 200, "bytes": 1, "allowed": True, "blocked": False, "retrieval": None})
        + "\n"
    )
    before = Facts(coordinates=("examples:other",), base_version="1.0.0")
    after = Facts(coordinates=("examples:calc",), base_version="1.0.0")
    summary = egress.summarize(egress.read_egress(record), egress.Record.URLS, before)
    assert summary.retrieval == [] and summary.facts == before.digest()
    assert egress.flagged(summary, record, before) == []
    assert egress.flagged(summary, record, after) == [f"https://repo.test{url}"]
    assert egress.flagged(summary, tmp_path / "gone.jsonl", after) == []  # no record kept: as it says


def rule_params(text: str) -> dict[str, dict[str, str]]:
    """Each rule's (and checkpoint's) parameters in a rules file: {rule: {parameter: its expression}}."""
    found: dict[str, dict[str, str]] = {}
    rule, in_params, name = None, False, None
    for line in text.splitlines():
        head = re.match(r"(?:rule|checkpoint) (\w+):", line)
        if head or (line and not line[0].isspace()):
            rule, in_params = (head.group(1) if head else None), False
            continue
        indent = len(line) - len(line.lstrip())
        if rule is not None and line.strip() == "params:" and indent == 4:
            in_params, found[rule] = True, {}
        elif in_params and line.strip() and indent <= 4:
            in_params = False
        elif in_params and rule is not None and line.strip() and not line.strip().startswith("#"):
            param = re.match(r" {8}(\w+)=(.*)", line)
            if param:
                name = param.group(1)
                found[rule][name] = param.group(2)
            elif name is not None:
                found[rule][name] += " " + line.strip()
    return found


def all_rule_params(root: Path = REPO) -> dict[str, dict[str, str]]:
    params: dict[str, dict[str, str]] = {}
    for path in sorted((root / "rules").glob("*.smk")):
        params |= rule_params(path.read_text(encoding="utf-8"))
    return params


def reads(expression: str, name: str, section: Section) -> bool:
    """Whether a parameter's expression reads the section."""
    own = (f'config["{name}"]', f'config.get("{name}"')
    return any(form in expression for form in (*own, *section.reads))


def problems(params: dict[str, dict[str, str]], schema_keys: list[str]) -> list[str]:
    """What the rules get wrong against the table (`kotlin_bench.dag.settings`)."""
    found = [f"{key}: a config section missing from SECTIONS" for key in schema_keys if key not in SECTIONS]
    found += [f"{key}: in SECTIONS, not in the schema" for key in SECTIONS if key not in schema_keys]
    for name, section in [*SECTIONS.items(), ("retrieval facts", RETRIEVAL_FACTS)]:
        for rule, param in section.params.items():
            expression = params.get(rule, {}).get(param)
            if expression is None or not reads(expression, name, section):
                found.append(f"{name}: changes results, but is not parameter `{param}` of rule {rule}")
        if section.effect is not Effect.RESULTS:
            for rule, given in params.items():
                found += [
                    f"{name}: changes no result, but is parameter `{param}` of rule {rule}"
                    for param, expression in given.items()
                    if reads(expression, name, section)
                ]
    return found


def test_the_rules_take_exactly_the_result_changing_sections_as_parameters() -> None:
    schema = yaml.safe_load((REPO / "workflow/schemas/config.schema.yaml").read_text(encoding="utf-8"))
    assert problems(all_rule_params(), list(schema["properties"])) == []


def test_a_missing_or_needless_parameter_is_found() -> None:
    params = all_rule_params()
    keys = list(SECTIONS)
    del params["solve"]["retrieval"]  # the retrieval facts no longer rerun the solve under `block`
    params["verify"]["disk"] = 'config.get("disk", {})'  # free space would rerun every verdict
    params["verify"]["verifier"] = "{}"  # the verifier's options would rerun nothing
    assert problems(params, [*keys, "newsection"]) == [
        "newsection: a config section missing from SECTIONS",
        "verifier: changes results, but is not parameter `verifier` of rule verify",
        "disk: changes no result, but is parameter `disk` of rule verify",
        "retrieval facts: changes results, but is not parameter `retrieval` of rule solve",
    ]


def test_the_config_is_checked_once_and_gets_the_schema_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """rules/common.smk checks the config once (`settings_or_exit`, which fills in the schema's defaults as
    Snakemake's `validate` did), and the plan does not check it again."""
    from snakemake.utils import validate

    from kotlin_bench.dag import config as dag_config

    common = (REPO / "rules/common.smk").read_text(encoding="utf-8")
    assert common.count("settings_or_exit(") == 1 and "validate(" not in common, common
    raw = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
    theirs = copy.deepcopy(raw)
    validate(theirs, str(REPO / dag_config.SCHEMA))
    checks: list[object] = []
    check = dag_config.check_config
    monkeypatch.setattr(dag_config, "check_config", lambda *a, **k: checks.append(a) or check(*a, **k))
    ours = copy.deepcopy(raw)
    settings = dag_config.settings_or_exit(ours, [REPO / "config.yaml"], REPO)
    plan = dag_config.plan_or_exit(ours, [REPO / "config.yaml"], REPO, settings)
    assert len(checks) == 1 and ours == theirs
    assert settings == Settings.of(theirs) and plan.egress is settings.egress
