"""Free disk space is checked before a base build, a task build and every run step: too little refuses the
job with one message (the place and its path, the free and the needed bytes, the job, what to do), and
nothing is recorded; once space is freed, running again completes the job. Sizes come from `disk:` in
the config, raised by the image sizes the sentinels of the workspace record."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pytest
import yaml

from kotlin_bench.core import names
from kotlin_bench.dag.config import SCHEMA, ConfigError, check_config
from kotlin_bench.dag.smk import Tries, check_disk, job_settings
from kotlin_bench.engine import disk
from kotlin_bench.engine.disk import (
    DiskNeeds,
    DiskSpaceError,
    EngineRoot,
    GiB,
    Job,
    Measured,
    MiB,
    Place,
    Requirement,
)
from kotlin_bench.engine.images import Sentinel
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

SCHEMA_DATA = yaml.safe_load((REPO / SCHEMA).read_text(encoding="utf-8"))
CONFIG = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))
TASK = "examples_calc-4"


# --------------------------------------------------------------------------- sizes


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, 0),
        (False, 0),
        ("0", 0),
        (123, 123),
        ("100", 100),
        ("512 B", 512),
        ("20 GiB", 20 * 1024**3),
        ("20GiB", 20 * 1024**3),
        (" 8 gib ", 8 * 1024**3),
        ("1.5 GiB", 3 * 1024**3 // 2),
        ("500 MB", 500_000_000),
        ("2 kB", 2000),
        ("2 KiB", 2048),
        ("1 TB", 10**12),
        ("1 TiB", 1024**4),
    ],
)
def test_a_size_is_bytes_or_a_number_with_a_unit(value: object, expected: int) -> None:
    assert disk.parse_size(value) == expected


@pytest.mark.parametrize("value", ["20 G", "twenty GiB", "-1", "20 GiB free", -1, True, 1.5, None, [1]])
def test_a_size_that_is_not_one_is_refused_naming_the_key(value: object) -> None:
    with pytest.raises(ValueError, match=r"^disk\.run: .* is not a size: write bytes"):
        disk.parse_size(value, "disk.run")


def test_the_schema_accepts_exactly_the_sizes_the_parser_reads(tmp_path: Path) -> None:
    for good in (0, False, 123, "20 GiB", "1.5gb", "100"):
        check_config({**CONFIG, "disk": {"run": good}}, [tmp_path / "c.yaml"], REPO / SCHEMA)
        disk.parse_size(good)
    for bad in ("20 G", "-1", -1, True, 1.5):
        with pytest.raises(ConfigError) as caught:
            check_config({**CONFIG, "disk": {"run": bad}}, [tmp_path / "c.yaml"], REPO / SCHEMA)
        assert "disk.run: " in str(caught.value) and '"20 GiB"' in str(caught.value)
        with pytest.raises(ValueError):
            disk.parse_size(bad)


def test_human_units() -> None:
    assert disk.human(10) == "10 B"
    assert disk.human(3_355_443) == "3.2 MiB"
    assert disk.exact(20 * GiB) == "20.0 GiB (21,474,836,480 bytes)"


def test_the_schema_lists_the_defaults_of_disk_needs() -> None:
    listed = SCHEMA_DATA["properties"]["disk"]["properties"]
    assert sorted(listed) == sorted(f.name for f in fields(DiskNeeds))
    assert {key: disk.parse_size(spec["default"]) for key, spec in listed.items()} == {
        f.name: f.default for f in fields(DiskNeeds)
    }
    assert sorted(listed) == sorted([*(job.value for job in Job), disk.RESULTS_KEY])


def test_needs_from_the_config() -> None:
    needs = DiskNeeds.from_config({"run": "3 GiB", "results": 0})
    assert needs == DiskNeeds(run=3 * GiB, results=0)
    assert needs.on_engine(Job.RUN) == 3 * GiB and needs.on_engine(Job.BASE_IMAGE) == 20 * GiB
    assert DiskNeeds.from_config(None) == DiskNeeds()
    with pytest.raises(ValueError, match=r"disk: unknown keys \['runs'\]"):
        DiskNeeds.from_config({"runs": 1})


# --------------------------------------------------------------------------- the engine's data root


def test_the_data_root_of_docker_and_of_podman() -> None:
    assert disk.data_root({"DockerRootDir": "/var/lib/docker"}) == "/var/lib/docker"
    podman = {"store": {"graphRoot": "/var/lib/containers/storage", "runRoot": "/run/containers"}}
    assert disk.data_root(podman) == "/var/lib/containers/storage"
    assert disk.data_root({"Store": {"GraphRoot": "/home/u/.local/share/containers/storage"}}) == (
        "/home/u/.local/share/containers/storage"
    )
    assert disk.data_root({"ServerVersion": "20.10"}) is None


@dataclass
class _Api:
    base_url: str


class _Engine:
    """What `engine_root` asks an engine client: its address and its info."""

    def __init__(self, base_url: str, info: dict[str, Any]) -> None:
        self.api, self._info = _Api(base_url), info

    def info(self) -> dict[str, Any]:
        return self._info


def test_the_engine_root_is_checked_only_when_it_is_on_this_host(tmp_path: Path) -> None:
    here = disk.engine_root(_Engine(disk.LOCAL_SOCKET, {"DockerRootDir": str(tmp_path)}))  # type: ignore[arg-type]
    assert here == EngineRoot(tmp_path)
    remote = disk.engine_root(_Engine("http://10.0.0.5:2375", {"DockerRootDir": str(tmp_path)}))  # type: ignore[arg-type]
    assert (
        remote.path is None
        and "http://10.0.0.5:2375" in remote.why_not
        and "not on a local" in remote.why_not
    )
    ssh = disk.engine_root(_Engine("http+docker://ssh", {"DockerRootDir": str(tmp_path)}))  # type: ignore[arg-type]
    assert ssh.path is None
    hidden = disk.engine_root(_Engine(disk.LOCAL_SOCKET, {"DockerRootDir": str(tmp_path / "vm")}))  # type: ignore[arg-type]
    assert hidden.path is None and f"{tmp_path / 'vm'} is not visible on this host" in hidden.why_not


def test_an_engine_that_does_not_answer_is_the_jobs_to_meet_not_a_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The job then fails on the engine inside its own try, which retries or records it."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    root = disk.asked_engine_root()
    assert root.path is None and "EngineError" in root.why_not
    disk.check_job("rule x", Job.RUN, DiskNeeds(results=1), [tmp_path / "results"])
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith("kotlin-bench: disk: not checking the engine's free space: the engine did not")
    assert said[1].startswith(f"kotlin-bench: disk: the results directory {tmp_path} ")


# --------------------------------------------------------------------------- what images took here


def test_measured_needs_per_image_kind() -> None:
    bases = {
        "kotlin-bench/acme_widgets:base": 3 * GiB,
        "kotlin-bench/acme_gears:base": 5 * GiB,
        "kotlin-bench/os:bookworm": 200 * MiB,
    }
    tasks = {
        "kotlin-bench/acme_widgets:pr-1": 4 * GiB,  # adds 1 GiB to its base
        "kotlin-bench/acme_gears:pr-2": 7 * GiB,  # adds 2 GiB
        "kotlin-bench/nobase_x:pr-3": 9 * GiB,  # no recorded base: its own part is unknown
    }
    assert disk.largest_base(bases) == Measured(
        5 * GiB, "kotlin-bench/acme_gears:base", disk.largest_base(bases).what
    )  # type: ignore[union-attr]
    layers = disk.largest_task_layers(tasks, bases)
    assert layers is not None and (layers.size, layers.image) == (2 * GiB, "kotlin-bench/acme_gears:pr-2")
    assert disk.largest_base({}) is None and disk.largest_task_layers(tasks, {}) is None


def test_sentinels_without_a_size_are_tolerated(tmp_path: Path) -> None:
    directory = tmp_path / "results/images/base/acme_widgets"
    Sentinel("kotlin-bench/acme_widgets:base", "sha256:" + "1" * 64).write(directory / "base.json")
    (directory / "broken.json").write_text("{not json")
    assert disk.recorded_sizes(tmp_path / "results/images/base") == {}
    assert disk.recorded_sizes(tmp_path / "nowhere") == {}
    assert disk.measured(Job.BASE_IMAGE, tmp_path / "results") is None


def test_sentinels_with_a_size_raise_the_need(tmp_path: Path) -> None:
    if "size" not in {f.name for f in fields(Sentinel)}:
        pytest.skip("image sentinels record no size yet (Sentinel has no `size` field)")
    results = tmp_path / "results"
    base = Sentinel("kotlin-bench/acme_widgets:base", "sha256:" + "1" * 64, size=30 * GiB)  # type: ignore[call-arg]
    base.write(Path(names.base_sentinel("acme_widgets", "base", str(results))))
    assert disk.recorded_sizes(Path(names.base_sentinels(str(results)))) == {base.image: 30 * GiB}
    wanted = disk.engine_requirement("a job", Job.BASE_IMAGE, DiskNeeds(), EngineRoot(tmp_path), results)
    assert wanted is not None and wanted.needed == 30 * GiB


def test_the_engine_need_is_the_configured_one_or_what_images_took(tmp_path: Path) -> None:
    root = EngineRoot(tmp_path)
    plain = disk.engine_requirement("a job", Job.TASK_IMAGE, DiskNeeds(), root, tmp_path / "results")
    assert (
        plain is not None and plain.needed == 8 * GiB and plain.basis() == "`disk.task_image` in the config"
    )
    assert disk.engine_requirement("a job", Job.RUN, DiskNeeds(run=0), root, tmp_path) is None
    assert (
        disk.engine_requirement("a job", Job.RUN, DiskNeeds(), EngineRoot(None, "remote"), tmp_path) is None
    )
    seen = Measured(30 * GiB, "kotlin-bench/acme_widgets:base", "the largest base image built here")
    raised = Requirement("a job", Place.ENGINE, tmp_path, 30 * GiB, "base_image", 20 * GiB, seen)
    assert raised.basis() == (
        "the largest base image built here, kotlin-bench/acme_widgets:base; `disk.base_image` in the config "
        "asks for 20.0 GiB"
    )
    assert "set `disk.base_image: 0` to turn this check off" in raised.advice()


# --------------------------------------------------------------------------- the decision and the message


def _free(path: Path) -> int:
    return shutil.disk_usage(path).free


def test_a_job_that_fits_passes_and_one_that_does_not_is_refused(tmp_path: Path) -> None:
    fits = Requirement("rule x", Place.RESULTS, tmp_path / "not/yet/made", 1, "results", 1)
    [(checked, free)] = disk.check([fits])
    assert checked.path == tmp_path and free > 0  # the nearest directory that exists
    too_much = Requirement("rule x", Place.RESULTS, tmp_path, _free(tmp_path) + 1024**4, "results", 1)
    with pytest.raises(DiskSpaceError) as caught:
        disk.check([fits, too_much])
    assert caught.value.requirement.needed == too_much.needed and caught.value.free <= _free(tmp_path) + 1


def test_the_refusal_names_the_place_the_bytes_the_job_and_what_to_do(tmp_path: Path) -> None:
    req = Requirement(
        "rule solve (agent=nop, task=examples_calc-4, attempt=1)",
        Place.RESULTS,
        tmp_path,
        32 * MiB,
        "results",
        32 * MiB,
    )
    message = str(DiskSpaceError(req, 3_355_443))
    assert message == (
        "not enough free disk space for rule solve (agent=nop, task=examples_calc-4, attempt=1): "
        f"the results directory {tmp_path} has 3.2 MiB (3,355,443 bytes) free, the job needs 32.0 MiB "
        "(33,554,432 bytes) (`disk.results` in the config); free space there (e.g. `kotlin-bench clean`, "
        "or delete images and results you no longer need) and run again, or lower `disk.results` in the "
        "config (0 turns this check off). Nothing was recorded for this job."
    )


def test_the_results_need_is_checked_once_per_filesystem(tmp_path: Path) -> None:
    writes = [tmp_path / "results/runs/a/work", tmp_path / "results/logs/solve"]
    found = disk.results_requirements("rule x", DiskNeeds(results=MiB), writes)
    assert [(r.place, r.path, r.needed) for r in found] == [(Place.RESULTS, writes[0], MiB)]
    [(checked, _)] = disk.check(found)
    assert checked.path == tmp_path  # the nearest directory that exists
    assert disk.results_requirements("rule x", DiskNeeds(results=0), writes) == []


@dataclass
class _Script:
    """What a rule script's `snakemake` object gives `check_disk`."""

    output: list[str]
    log: list[str]
    config: dict[str, Any]
    rule: str = "solve"
    wildcards: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.wildcards = self.wildcards or {"agent": "nop", "task": TASK, "attempt": "1"}


def test_a_rule_script_is_refused_before_it_starts_anything(tmp_path: Path) -> None:
    script = _Script(
        [str(tmp_path / "results/runs/nop/work/work.json")],
        [str(tmp_path / "results/logs/solve/x.log")],
        {"disk": {"results": _free(tmp_path) + 1024**4}},
    )
    refusal = rf"for rule solve \(agent=nop, task={TASK}, attempt=1\): the results directory {re.escape(str(tmp_path))} "
    with pytest.raises(DiskSpaceError, match=refusal):
        check_disk(script, Job.RUN, job_settings(script), uses_engine=False)
    script.config = {"disk": {"results": 1}}
    check_disk(script, Job.RUN, job_settings(script), uses_engine=False)
    assert not (tmp_path / "results").exists()  # the check writes nothing


@pytest.mark.parametrize(("number", "retries"), [(1, 2), (3, 2)], ids=["a retry", "the last try"])
def test_a_refusal_is_neither_recorded_nor_taken_for_the_last_failure(
    tmp_path: Path, number: int, retries: int
) -> None:
    """The rule scripts record an error on the last try (`Tries.failed` true); a refusal raises on every
    try and leaves no line in the tries log."""
    tries = Tries(tmp_path / "job.log.tries", number, retries)
    refused = DiskSpaceError(Requirement("rule x", Place.RESULTS, tmp_path, 2, "results", 2), 1)
    assert tries.failed(refused) is False
    assert tries.history() == []


# --------------------------------------------------------------------------- end to end, on a small filesystem


def _mount_tmpfs(path: Path, size: int) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


@contextlib.contextmanager
def small_results(ws: Workspace, room: int) -> Iterator[Path]:
    """The workspace's results/ on a tmpfs of its own with `room` bytes free (its files copied over,
    modification times kept, so that nothing is out of date); unmounted at exit."""
    results = ws.root / names.RESULTS
    kept = ws.root.parent / "results-on-disk"
    results.rename(kept)
    results.mkdir()
    used = sum(p.stat().st_size + 4096 for p in kept.rglob("*"))
    _mount_tmpfs(results, (used + room) // MiB * MiB + 2 * MiB)
    try:
        shutil.copytree(kept, results, symlinks=True, dirs_exist_ok=True)
        shutil.copystat(kept, results)
        yield results
    finally:
        if subprocess.run(["umount", str(results)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(results)], check=False)


def fill(results: Path, leave: int) -> Path:
    """A file that leaves `leave` bytes free on the filesystem of `results`."""
    filler = results / "filler"
    with filler.open("wb") as out:
        os.posix_fallocate(out.fileno(), 0, _free(results) - leave)
    assert 0 < _free(results) <= leave
    return filler


def _set_disk(ws: Workspace, **needs: str) -> None:
    config = ws.config()
    config["disk"] = {**(config.get("disk") or {}), **needs}
    (ws.root / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _refusal(text: str) -> tuple[int, int]:
    """(free, needed) bytes from the refusal in `text`."""
    found = re.search(
        r"has [0-9.]+ \w+ \(([0-9,]+) bytes\) free, the job needs [0-9.]+ \w+ \(([0-9,]+) bytes\)", text
    )
    assert found, text[-3000:]
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def _checked(text: str, place: str, mount: Path) -> Path:
    """The directory a refusal in `text` names at `place`, on the filesystem mounted at `mount`."""
    found = re.search(rf"{place} (\S+) \(on the filesystem mounted at {re.escape(str(mount))}\) has ", text)
    assert found, text[-3000:]
    return Path(found[1])


@pytest.fixture
def mounted(tmp_path: Path, finished_examples: Workspace) -> Iterator[tuple[Workspace, Path]]:
    """A clone of the finished examples whose results/ is a small filesystem (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs as results/ needs root")
    ws = finished_examples.clone(tmp_path / "ws")
    _set_disk(ws, results="32 MiB")
    with small_results(ws, 64 * MiB) as results:
        yield ws, results


@pytest.mark.usefixtures("docker_engine")
def test_a_run_refused_for_disk_space_leaves_no_record_and_runs_once_space_is_freed(
    mounted: tuple[Workspace, Path],
) -> None:
    ws, results = mounted
    run = ws.run_dir("nop", TASK)
    shutil.rmtree(run)
    assert ws.planned(ws.target("nop", TASK)) == {"solve": 1, "verify": 1}  # the copy is up to date
    filler = fill(results, 16 * MiB)

    out = ws.snakemake(ws.target("nop", TASK))  # retries: 1, so the last try is refused too
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert f"not enough free disk space for rule solve (agent=nop, task={TASK}, attempt=1): " in text
    where = _checked(text, "the results directory", results)
    assert (run / "work").is_relative_to(where) and where.is_relative_to(results)
    assert "Nothing was recorded for this job." in text
    free, needed = _refusal(text)
    assert needed == 32 * MiB and 0 < free < needed
    log = (ws.root / names.solve_log("nop", TASK, 1)).read_text(encoding="utf-8")
    assert "DiskSpaceError: not enough free disk space for rule solve" in log
    assert not (ws.root / names.work_record("nop", TASK, 1)).exists()
    assert not (ws.root / ws.target("nop", TASK)).exists()
    assert not (ws.root / names.tries_log(names.solve_log("nop", TASK, 1))).exists()
    errors = subprocess.run(
        [sys.executable, "-m", "kotlin_bench", "errors"], cwd=ws.root, capture_output=True, text=True
    )
    assert errors.returncode == 0 and "0 errored run(s) found" in errors.stdout, errors.stdout + errors.stderr

    filler.unlink()
    out = ws.snakemake(ws.target("nop", TASK))
    assert out.returncode == 0, out.stderr[-3000:]
    result = ws.result("nop", TASK)
    assert result is not None and result.status == "unresolved" and result.reward == 0.0
    solved = (ws.root / names.solve_log("nop", TASK, 1)).read_text(encoding="utf-8")
    assert (
        f"kotlin-bench: disk: the results directory {run / 'work'} (on the filesystem mounted at {results}): "
        in solved
    )
    assert "the engine's data root" in solved  # checked too (or why not, said once)


@pytest.mark.usefixtures("docker_engine")
def test_a_task_image_build_refused_for_disk_space_writes_no_sentinel(
    mounted: tuple[Workspace, Path],
) -> None:
    ws, results = mounted
    sentinel = ws.root / names.task_sentinel(TASK)
    sentinel.unlink()
    filler = fill(results, 16 * MiB)
    out = ws.snakemake(names.task_sentinel(TASK))
    assert out.returncode != 0
    text = out.stdout + out.stderr
    assert f"not enough free disk space for rule task_image (task={TASK}): the results directory " in text
    assert sentinel.parent == _checked(text, "the results directory", results)
    assert not sentinel.exists()

    filler.unlink()
    out = ws.snakemake(names.task_sentinel(TASK))  # from the layer cache
    assert out.returncode == 0, out.stderr[-3000:]
    assert sentinel.exists()
