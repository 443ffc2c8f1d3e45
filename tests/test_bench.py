"""The performance suite (`python3 -m bench`) without Docker: every module imports, every name it uses of
the package exists, the command line parses, and the summary renders the sections' rows."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import SimpleNamespace

import docker
import pytest

from bench import images as bench_images
from bench import overhead
from bench.common import AGENT, Context, Recorder, Row
from bench.report import summarize
from bench.run import NEEDS_WORKSPACE, SECTIONS, parse
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

BENCH = REPO / "bench"
MODULES = sorted(p.stem for p in BENCH.glob("*.py") if p.stem != "__main__")


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_every_bench_module_imports(module: str) -> None:
    """`python3 -m bench` must keep running after code moves (it once failed on a moved import)."""
    importlib.import_module(f"bench.{module}" if module != "__init__" else "bench")


def _package_modules(tree: ast.Module) -> dict[str, str]:
    """Local name -> package module, for the package's modules the file imports as names."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kotlin_bench"):
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                try:
                    importlib.import_module(full)
                except ImportError:
                    continue  # a class or function, not a module
                bound[alias.asname or alias.name] = full
    return bound


@pytest.mark.parametrize("module", MODULES, ids=str)
def test_every_name_a_bench_module_uses_of_the_package_exists(module: str) -> None:
    """An attribute of a package module that is gone (`runner.run` once) fails here, not in a long run."""
    tree = ast.parse((BENCH / f"{module}.py").read_text(encoding="utf-8"))
    bound = _package_modules(tree)
    missing = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)):
            continue
        module = bound.get(node.value.id)
        if module and not hasattr(importlib.import_module(module), node.attr):
            missing.append(f"{module}.{node.attr} (line {node.lineno})")
    assert missing == []


def test_the_command_line_parses() -> None:
    args = parse(["--quick", "--sections", "overhead, regrade,images", "--reps", "1", "--rounds", "1"])
    assert (args.sections, args.reps, args.rounds, args.quick) == (
        ["overhead", "regrade", "images"],
        1,
        1,
        True,
    )
    full = parse([])
    assert (full.sections, full.reps, full.rounds) == (list(SECTIONS), 5, 2)
    quick = parse(["--quick"])
    assert (quick.reps, quick.rounds) == (3, 1)
    assert parse(["--summarize", "bench/results/x"]).summarize == Path("bench/results/x")


@pytest.mark.parametrize("argv", [["--sections", "overhead,nope"], ["--reps", "0"], ["--rounds", "-1"]])
def test_the_command_line_refuses(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse(argv)
    assert stopped.value.code == 2 and "error:" in capsys.readouterr().err


def test_every_section_that_needs_the_workspace_is_a_section() -> None:
    assert set(SECTIONS) >= NEEDS_WORKSPACE
    assert set(SECTIONS) == {
        *(
            "overhead",
            "attempts",
            "incremental",
            "scale",
            "disk",
            "site",
            "regrade",
            "images",
            "engines",
            "egress",
            "fence",
            "harvest",
        )
    }


def test_the_summary_reports_the_fence_as_paired_differences() -> None:
    """Section `fence`: fenced - unfenced per repetition (the median of the differences, not of each)."""
    rows = []
    for rep, (fenced, bare) in enumerate(((1.30, 1.25), (2.00, 1.10), (1.00, 1.05))):
        rows += [
            Row("egress", "fence", "fenced", "-", rep, "enter_sec", fenced),
            Row("egress", "fence", "unfenced", "-", rep, "enter_sec", bare),
            Row("egress", "fence", "calls", "-", rep, "install_sec", 0.02),
        ]
    text = summarize(rows, ["# test", ""])
    assert "| 0.050 [-0.050, 0.900] | ≤ 0.2 | PASS (margin 0.15) |" in text, text
    assert "| 11. the fence's own calls: installing it (s) | 0.020 [0.020, 0.020] | - | measured |" in text


def test_the_summary_reports_the_harvest_ratios() -> None:
    rows = [
        Row("harvest", "listing", "first", "acme/many", 1, "wall_sec", 2.0),
        Row("harvest", "listing", "again", "acme/many", 1, "wall_sec", 0.5),
        Row("harvest", "listing", "again", "acme/many", 1, "not_modified", 10, "requests"),
        Row("harvest", "validation", "cores_1", "examples/semver", 1, "wall_sec", 90.0),
        Row("harvest", "validation", "cores_2", "examples/semver", 1, "wall_sec", 60.0),
    ]
    text = summarize(rows, [])
    assert "| 11. listing 1,000 pull requests again, nothing new / first (wall) | 0.25 | < 1 | PASS" in text
    assert "| 11. validating 3 candidates, --cores 1 / --cores 2 (wall) | 1.50 | > 1 | PASS" in text
    assert "| listing again | 0.50 | - | 10 | yes |" in text


def _row(section: str, variant: str, metric: str, value: float, *, rep: int = 0, ok: bool = True) -> Row:
    return Row(section, "x", variant, "all", rep, metric, value, ok=ok)


def test_the_summary_reports_the_regrade_ratios_and_the_images_peaks() -> None:
    rows = [
        _row("regrade", "rerun", "wall_sec", 100.0),
        _row("regrade", "reverify", "wall_sec", 60.0),
        _row("regrade", "regrade", "wall_sec", 70.0),
        _row("regrade", "rerun", "solve_sec", 3.0),
        _row("regrade", "rerun", "verify_sec", 9.0),
    ]
    for policy, peak, final in (("all", 4, 4), ("bases", 2, 0)):
        rows += [
            _row("images", policy, "wall_sec", 90.0),
            _row("images", policy, "base_bytes", 1.2e9),
            _row("images", policy, "task_images_peak", peak),
            _row("images", policy, "task_bytes_peak", peak * 40e3),
            _row("images", policy, "task_listed_bytes_peak", peak * 1.14e9),
            _row("images", policy, "total_bytes_peak", 1.2e9 + peak * 40e3),
            _row("images", policy, "task_images_final", final),
            _row("images", policy, "task_bytes_final", final * 40e3),
            _row("images", policy, "total_bytes_final", 1.2e9 + final * 40e3),
            _row("images", policy, "bound_bytes", 1.2e9 + 2 * 40e3),
        ]
    text = summarize(rows, ["# test", ""])
    assert "| 7. reverify / rerun of the same 8 runs (wall) | 0.60 | < 1 | PASS (margin 0.40) |" in text
    assert "| 7. regrade / rerun of the same 8 runs (wall) | 0.70 |" in text
    assert (
        "| 8. keep: bases, peak task images present | 2 | ≤ 2 (jobs at once) | PASS (margin 0.00) |" in text
    )
    expected = "| bases | 90.0 | 1.20 GB | 2 | 80.0 kB | 2.28 GB | 0 | 0.0 kB | 1,200.080 MB | 1,200.000 MB | 1,200.080 MB | yes |"
    assert expected in text
    assert "All measurements passed their checks." in text


class _Images:
    def __init__(self, known: dict[str, tuple[int, list[str]]]) -> None:
        self.known = known

    def get(self, image_id: str) -> SimpleNamespace:
        if image_id not in self.known:
            raise docker.errors.ImageNotFound(image_id)
        size, layers = self.known[image_id]
        return SimpleNamespace(attrs={"Size": size, "RootFS": {"Layers": layers}})


def test_image_bytes_count_each_layer_once() -> None:
    """A base on a base, a task image on the upper one: own bytes are above the largest prefix."""
    known = {
        "os": (100, ["a"]),
        "toolchain": (300, ["a", "b"]),
        "calc": (310, ["a", "b", "c"]),
        "slug": (305, ["a", "b", "s"]),
        "task": (312, ["a", "b", "c", "t"]),
    }
    sizes = bench_images.Sizes(SimpleNamespace(images=_Images(known)))  # type: ignore[arg-type]
    bases = ["os", "toolchain", "calc", "slug"]
    assert bench_images.base_bytes(sizes, bases) == 100 + 200 + 10 + 5
    assert sizes.own("task", bases) == 2
    assert sizes.own("gone", bases) == 0


def test_the_overhead_section_runs_one_task_of_a_finished_workspace(
    tmp_path: Path, finished_examples: Workspace
) -> None:
    """Section 1 for real, once, on one example task of the session's finished workspace (its task images
    are there): the bare run, the two steps called in this process as the rule scripts call them, and the
    Snakemake run all resolve. A refactor of the steps' signatures (it broke this section twice) fails
    here instead of in the next bench run."""
    ws = finished_examples.clone(tmp_path / "ws")
    task = "examples_calc-4"
    ws.configure([task], [{"name": AGENT, "kind": "oracle"}])
    ctx = Context(
        out=tmp_path / "out",
        tmp=tmp_path / "tmp",
        quick=True,
        reps=1,
        recorder=Recorder(tmp_path / "rows.csv"),
    )
    ctx.workspace = ws.root
    overhead.run(ctx, [task])
    walls = {(r.case, r.variant): r for r in ctx.recorder.rows if r.metric == "wall_sec"}
    assert set(walls) == {("single_run", v) for v in overhead.VARIANTS} | {("container", "container_true")}
    assert [(key, row.note) for key, row in walls.items() if not row.ok] == []
    assert all(row.task == task and row.value > 0 for row in walls.values())
