"""The shape of the package: no import cycles, one reader of result.json, scripts that only call into the
package, names spelled once."""

from __future__ import annotations

import ast
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


def test_the_graph_sees_imports_inside_functions() -> None:
    graph = import_graph()
    assert "kotlin_bench.record" in graph["kotlin_bench.runner"]
    assert "kotlin_bench.runner" in graph["kotlin_bench.workspace"]  # imported inside a method


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
    """Only kotlin_bench.record parses run records; every other module goes through RunResult (Harbor's
    own trial result, which harbor.py maps, is not ours)."""
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
