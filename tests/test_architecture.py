"""The shape of the package: groups whose imports only go downwards, no import cycles, small modules, one
reader of each record, one phase container, scripts that only call into the package, names spelled once."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PACKAGE = REPO / "src" / "kotlin_bench"
SCRIPTS = REPO / "workflow" / "scripts"


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (at the top or inside functions, typing-only excluded)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {
            id(n)
            for node in ast.walk(tree)
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                targets = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            for target in targets:
                if target in modules and target != name and target != "kotlin_bench":
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# The groups of docs/design.md, bottom first: a module imports only from its own group or one below it.
GROUPS = ("core", "scoring", "dataset", "engine", "runs", "validation", "results", "dag", "tools")
MAX_LINES = 700


def group_of(module: str) -> str | None:
    """The group of `kotlin_bench.<group>.<...>`; None for the package's face (`__init__`, `__main__`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "__main__" else None


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        source = group_of(module)
        if source is None:
            continue
        for target in sorted(targets):
            group = group_of(target)
            if group is not None and GROUPS.index(group) > GROUPS.index(source):
                found.append(f"{module} -> {target}")
    return found


def test_every_module_is_in_a_group() -> None:
    loose = [m for m in import_graph() if group_of(m) not in (*GROUPS, None)]
    faces = [m for m in import_graph() if group_of(m) is None]
    assert loose == []
    assert sorted(faces) == ["kotlin_bench", "kotlin_bench.__main__"]
    assert sorted(p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__") == sorted(
        GROUPS
    )


def test_imports_only_go_downwards_between_groups() -> None:
    assert upward_imports(import_graph()) == []


def test_an_upward_import_is_found() -> None:
    graph = {
        "kotlin_bench.core.names": {"kotlin_bench.results.summary"},
        "kotlin_bench.results.summary": set(),
    }
    assert upward_imports(graph) == ["kotlin_bench.core.names -> kotlin_bench.results.summary"]


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(p.relative_to(PACKAGE)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "kotlin_bench.core.record" in graph["kotlin_bench.runs.runner"]
    assert "kotlin_bench.dataset.fidelity" in graph["kotlin_bench.tools.cli.dataset"]  # inside a function


def _calls(tree: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == name)


def test_task_containers_start_and_end_in_the_phase_container_only() -> None:
    """Every phase (agent, verifier, validation, health-check probe) goes through engine.phase."""
    starting = {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        for name in ("containers.start", "containers.reap", "containers.remove")
        if _calls(ast.parse(p.read_text(encoding="utf-8")), name)
    }
    assert starting == {"engine/phase.py"}


def test_retry_bookkeeping_lives_in_the_scripts_helper() -> None:
    """Only dag/smk.py counts tries; rule scripts use its `Tries`, and `.tries` paths come from names."""
    counting = sorted(
        p.name
        for p in [*PACKAGE.rglob("*.py"), *SCRIPTS.glob("*.py")]
        if "resources.tries" in p.read_text(encoding="utf-8")
        or ".tries" in "".join(_code_strings(ast.parse(p.read_text(encoding="utf-8"))))
    )
    assert counting == ["names.py", "smk.py"]


def test_agent_kinds_are_not_dispatched_by_name() -> None:
    """The runner and the DAG ask the registry; no module compares an agent's kind with a kind's name."""
    compared = sorted(
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if re.search(
            r"kind\s*(?:==|!=)\s*[\"'](?:oracle|nop|predictions|harbor|script)[\"']",
            p.read_text(encoding="utf-8"),
        )
    )
    assert compared == []


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_cycle_detection_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_snakemake_scripts_only_call_into_the_package(script: Path) -> None:
    text = script.read_text(encoding="utf-8")
    assert "sys.path" not in text
    assert "snakemake" in text and "from kotlin_bench" in text


def _json_reads(tree: ast.AST) -> list[str]:
    """The arguments of every json.load()/json.loads() call, as source text."""
    return [
        ast.unparse(node.args[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and ast.unparse(node.func) in ("json.load", "json.loads") and node.args
    ]


def test_result_json_is_read_in_one_place() -> None:
    """Only kotlin_bench.core.record parses run and work records; every other module goes through RunResult
    and WorkRecord (Harbor's own trial result, which the harbor kind maps, is not ours)."""
    readers = {
        path.name: arg
        for path in PACKAGE.rglob("*.py")
        if path.name != "record.py"
        for arg in _json_reads(ast.parse(path.read_text(encoding="utf-8")))
        if re.search("result", arg, re.IGNORECASE) and "trial" not in arg
    }
    assert readers == {}


def _code_strings(tree: ast.AST) -> list[str]:
    """String literals that are not docstrings (f-strings: their first literal part)."""
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
            found.append(str(node.values[0].value))
    return found


def test_image_names_are_spelled_in_one_module() -> None:
    spelled = sorted(
        p.name
        for p in PACKAGE.rglob("*.py")
        if p.name != "names.py"
        and any(
            s.startswith("kotlin-bench/") for s in _code_strings(ast.parse(p.read_text(encoding="utf-8")))
        )
    )
    assert spelled == []


@pytest.mark.parametrize("script", sorted(SCRIPTS.glob("*.py")), ids=lambda p: p.name)
def test_every_name_a_rule_script_imports_exists(script: Path) -> None:
    """Rule scripts run only inside Snakemake; their imports from the package are checked here."""
    missing = []
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kotlin_bench"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name) and not _submodule(f"{node.module}.{alias.name}"):
                    missing.append(f"{node.module}.{alias.name}")
    assert missing == []


def _submodule(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
