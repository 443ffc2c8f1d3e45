"""Base image manifests and image builds (the build tests use the real Docker engine)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from kotlin_bench.engine.images import (
    ImageError,
    build_base,
    context_files,
    order_recipes,
    parse_manifest,
    read_sentinel,
    recipe_inputs,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_manifest_parses_and_orders_by_from(tmp_path: Path) -> None:
    write(tmp_path / "b/app/Dockerfile", "FROM kotlin-bench/tool:jdk17\nRUN true\n")
    write(tmp_path / "b/tool/Dockerfile", "FROM kotlin-bench/os:bookworm AS build\n")
    manifest = write(
        tmp_path / "manifest",
        "# comment\nx_app base b/app/Dockerfile\n\ntool jdk17 b/tool/Dockerfile  # trailing\nos bookworm debootstrap:bookworm\n",
    )
    recipes = parse_manifest(manifest)
    assert [r.image for r in recipes] == [
        "kotlin-bench/x_app:base",
        "kotlin-bench/tool:jdk17",
        "kotlin-bench/os:bookworm",
    ]
    ordered = [r.image for r in order_recipes(recipes, tmp_path)]
    assert ordered == ["kotlin-bench/os:bookworm", "kotlin-bench/tool:jdk17", "kotlin-bench/x_app:base"]
    assert recipes[2].is_debootstrap and recipe_inputs(recipes[2], tmp_path) == [manifest]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("only two\n", ":1: expected '<repo_key> <tag> <recipe>'"),
        ("Bad_Key base x\n", ":1: invalid repo key or tag"),
        ("a base x\n# c\na base y\n", ":3: kotlin-bench/a:base is already listed on line 1"),
    ],
)
def test_manifest_errors_name_the_line(tmp_path: Path, text: str, message: str) -> None:
    manifest = write(tmp_path / "manifest", text)
    with pytest.raises(ImageError) as err:
        parse_manifest(manifest)
    assert str(manifest) + message in str(err.value)


def test_missing_recipe_and_cycle(tmp_path: Path) -> None:
    manifest = write(tmp_path / "manifest", "a base nowhere/Dockerfile\n")
    with pytest.raises(ImageError, match="recipe nowhere/Dockerfile does not exist"):
        recipe_inputs(parse_manifest(manifest)[0], tmp_path)
    write(tmp_path / "a/Dockerfile", "FROM kotlin-bench/b:base\n")
    write(tmp_path / "b/Dockerfile", "FROM kotlin-bench/a:base\n")
    manifest = write(tmp_path / "manifest", "a base a/Dockerfile\nb base b/Dockerfile\n")
    with pytest.raises(ImageError, match="depends on itself"):
        order_recipes(parse_manifest(manifest), tmp_path)


def test_context_files_leave_out_fetched_npm_packs(tmp_path: Path) -> None:
    write(tmp_path / "Dockerfile", "FROM x\n")
    write(tmp_path / "npm-packs/kotlin-compiler-2.4.20.tgz", "binary")
    write(tmp_path / "sub/script.sh", "echo\n")
    assert [p.relative_to(tmp_path).as_posix() for p in context_files(tmp_path)] == [
        "Dockerfile",
        "sub/script.sh",
    ]


@pytest.mark.usefixtures("docker_engine")
def test_build_records_image_id_and_fails_clearly(tmp_path: Path) -> None:
    import docker

    write(tmp_path / "img/Dockerfile", "FROM kotlin-bench/os:bookworm\nCOPY hello.txt /hello.txt\n")
    write(tmp_path / "img/hello.txt", "one\n")
    write(tmp_path / "bad/Dockerfile", "FROM kotlin-bench/os:bookworm\nRUN exit 3\n")
    manifest = write(
        tmp_path / "manifest",
        "os bookworm debootstrap:bookworm\ntestimg one img/Dockerfile\ntestimg bad bad/Dockerfile\n",
    )
    os_entry, good, bad = parse_manifest(manifest)
    client = docker.from_env()
    try:
        build_base(os_entry, tmp_path, tmp_path / "logs/os.log", tmp_path / "s/os.json", timeout=600)
        build_base(good, tmp_path, tmp_path / "logs/one.log", tmp_path / "s/one.json", timeout=600)
        first = read_sentinel(tmp_path / "s/one.json")
        assert first.image == "kotlin-bench/testimg:one"
        assert first.id == client.images.get("kotlin-bench/testimg:one").id
        write(tmp_path / "img/hello.txt", "two\n")  # a changed context gives a new image
        build_base(good, tmp_path, tmp_path / "logs/one.log", tmp_path / "s/one.json", timeout=600)
        assert read_sentinel(tmp_path / "s/one.json").id != first.id
        with pytest.raises(
            ImageError, match=r"building kotlin-bench/testimg:bad failed: .*returned a non-zero code: 3"
        ):
            build_base(bad, tmp_path, tmp_path / "logs/bad.log", tmp_path / "s/bad.json", timeout=600)
        assert not (tmp_path / "s/bad.json").exists()
        assert "exit 3" in (tmp_path / "logs/bad.log").read_text()
        assert json.loads((tmp_path / "s/os.json").read_text())["image"] == "kotlin-bench/os:bookworm"
    finally:
        for tag in ("one", "bad"):
            with contextlib.suppress(docker.errors.ImageNotFound):
                client.images.remove(f"kotlin-bench/testimg:{tag}", force=True)
