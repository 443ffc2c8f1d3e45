"""Images in a real registry on loopback (Debian's docker-registry, scripts/setup_registry.sh), pushed and
pulled by Docker, then by rootful Podman (the `engine` fixture; Podman pushes OCI manifests, so its
digests differ from Docker's for the same image, and it names no digest in its push stream's `aux`).

Every test pushes under a namespace of its own, and removes only the images it made. The example images
(`kotlin-bench/examples_*`) are shared with other checkouts on this engine, so the workflow test gives its
task an image of its own (a pull request number and a label no one else uses) before it removes it.
"""

from __future__ import annotations

import contextlib
import json
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from kotlin_bench.core import names
from kotlin_bench.engine.engine import Engine, EngineSettings, connect
from kotlin_bench.engine.images import (
    ImageError,
    Sentinel,
    build_manifest_images,
    ensure_image,
    pin_images,
    read_sentinel,
)
from kotlin_bench.engine.registry import Registry, RegistryError, push, split_reference, tag_digest
from kotlin_bench.tools.workspace import Workspace
from tests.conftest import REPO

pytestmark = [pytest.mark.registry, pytest.mark.docker]
TASK = "examples_calc-4"


@pytest.fixture
def eng(engine: EngineSettings) -> Engine:
    return connect(engine)


@pytest.fixture
def client(eng: Engine) -> docker.DockerClient:
    return eng.client


def tags(client: docker.DockerClient, image: str) -> list[str]:
    """An image's names without the registry Podman puts before short names (`localhost/`, `docker.io/`)."""
    return [t.removeprefix("localhost/").removeprefix("docker.io/") for t in client.images.get(image).tags]


@pytest.fixture
def namespace() -> str:
    return f"kbtest{uuid.uuid4().hex[:12]}"


@pytest.fixture
def made(client: docker.DockerClient) -> Iterator[list[str]]:
    """Ids of the images a test made; removed afterwards (only these)."""
    ids: list[str] = []
    yield ids
    for image_id in ids:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(image_id, force=True)


def tiny_image(eng: Engine, tmp_path: Path, name: str, marker: str) -> str:
    """A one-file image FROM scratch (builds offline in a second), tagged `name`."""
    context = tmp_path / marker
    context.mkdir()
    (context / "marker.txt").write_text(marker + "\n")
    (context / "Dockerfile").write_text("FROM scratch\nCOPY marker.txt /marker.txt\n")
    image, _ = eng.client.images.build(path=str(context), tag=eng.local_name(name), rm=True)
    return image.id


def test_the_registry_address_is_checked() -> None:
    assert Registry.from_config(None) is None
    registry = Registry.from_config({"url": "127.0.0.1:5000/team/"})
    assert registry == Registry("127.0.0.1:5000/team")
    assert registry.target("kotlin-bench/examples_calc:pr-4") == (
        "127.0.0.1:5000/team/kotlin-bench/examples_calc",
        "pr-4",
    )
    with pytest.raises(
        RegistryError, match=r"registry.url: expected host\[:port\]\[/namespace\], got 'http://x'"
    ):
        Registry.from_config({"url": "http://x"})
    with pytest.raises(RegistryError, match="not a reference by digest"):
        split_reference("127.0.0.1:5000/kotlin-bench/x:tag")


def test_a_failed_push_raises_and_leaves_no_registry_tag(
    eng: Engine, client: docker.DockerClient, tmp_path: Path, namespace: str, made: list[str]
) -> None:
    image = names.image("registry-test", namespace)
    made.append(tiny_image(eng, tmp_path, image, namespace))
    nowhere = Registry("127.0.0.1:9")  # nothing listens there: the engine reports it in the push stream
    with pytest.raises(
        RegistryError,
        match=rf"pushing {image} to 127.0.0.1:9/kotlin-bench/registry-test:{namespace} failed: .*127.0.0.1:9",
    ):
        push(eng, nowhere, image, made[0], (tmp_path / "push.log").open("w"))
    assert tags(client, made[0]) == [image]


def test_push_pull_by_digest_and_a_moved_tag_is_refused(
    *,
    eng: Engine,
    client: docker.DockerClient,
    tmp_path: Path,
    registry_service: str,
    namespace: str,
    made: list[str],
) -> None:
    registry = Registry(f"{registry_service}/{namespace}")
    image = names.image("registry-test", namespace)
    built = tiny_image(eng, tmp_path, image, "one")
    made.append(built)
    with (tmp_path / "push.log").open("w") as log:
        pushed = push(eng, registry, image, built, log)
    repository, digest = split_reference(pushed)
    assert repository == f"{registry_service}/{namespace}/kotlin-bench/registry-test"
    assert tag_digest(eng, repository, namespace) == digest
    assert tags(client, built) == [image]  # the push's own tag is gone again

    client.images.remove(built, force=True)  # this engine no longer has it, as a fresh node would not
    sentinel = Sentinel(image, built, pushed=pushed)
    path = tmp_path / "s.json"
    sentinel.write(path)
    pin_images(eng, [path], registry)
    assert image in tags(client, built)  # pulled by digest and named as built

    other = tiny_image(eng, tmp_path, f"{repository}:{namespace}", "tampered")  # other content, same tag
    made.append(other)
    for event in client.images.push(repository, tag=namespace, stream=True, decode=True):
        assert "error" not in event, event
    found = tag_digest(eng, repository, namespace)
    assert found != digest
    with pytest.raises(RegistryError) as refused:
        pin_images(eng, [path], registry)
    message = str(refused.value)
    assert image in message and digest in message and found in message and str(path) in message

    with pytest.raises(ImageError, match=r"s.json: .* was built without being pushed to .*delete s.json"):
        ensure_image(eng, Sentinel(image, built), registry, Path("s.json"))
    # without a registry, the recorded id as it is (as before registries)
    assert ensure_image(eng, Sentinel(image, built), None, Path("s.json")) == built


def test_build_bases_pushes_what_it_builds(
    eng: Engine, tmp_path: Path, registry_service: str, namespace: str, made: list[str]
) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img/marker.txt").write_text(namespace)
    (tmp_path / "img/Dockerfile").write_text("FROM scratch\nCOPY marker.txt /marker.txt\n")
    (tmp_path / "manifest").write_text(f"registry-test {namespace} img/Dockerfile\n")
    registry = Registry(f"{registry_service}/{namespace}")
    build_manifest_images(
        tmp_path / "manifest",
        tmp_path,
        tmp_path / "logs",
        only=None,
        rebuild=False,
        registry=registry,
        settings=eng.settings,
    )
    sentinel = read_sentinel(tmp_path / names.base_sentinel("registry-test", namespace))
    made.append(sentinel.id)
    assert sentinel.pushed
    repository, digest = split_reference(sentinel.pushed)
    assert repository == f"{registry.url}/kotlin-bench/registry-test"
    assert tag_digest(eng, repository, namespace) == digest


def test_a_run_pulls_its_image_by_digest_and_refuses_a_moved_tag(
    *,
    eng: Engine,
    client: docker.DockerClient,
    tmp_path: Path,
    registry_service: str,
    namespace: str,
    made: list[str],
) -> None:
    if eng.podman:
        # Podman's pushes and pulls by digest are checked above; this one pushes the examples' 1 GB image
        # chain into a fresh namespace, minutes of CI for the same functions.
        pytest.skip("a run from the registry: on Docker only (push and pull by digest on Podman above)")
    ws = Workspace.create(tmp_path / "ws", REPO)
    ws.use_engine(eng.settings)
    url = f"{registry_service}/{namespace}"
    ws.configure([TASK], [{"name": "oracle", "kind": "oracle"}], registry={"url": url})
    # An image of this test's own: nobody else's runs or tags are touched when it is removed.
    pr = random.randint(900_000, 999_999)
    ws.edit_task(TASK, "metadata.source", "code_change_id", str(pr))
    dockerfile = ws.root / "examples/tasks" / TASK / "environment/Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + f'LABEL kotlin-bench.test="{namespace}"\n')
    image = names.built_task_image(names.task_image("examples_calc", pr), ws.root)
    tag = image.rsplit(":", 1)[1]  # pr-<N>.ws-<workspace tag>: the workflow's own name

    prepared = ws.prepare(TASK)  # images built and pushed, the task materialized; no run yet
    assert prepared.returncode == 0, prepared.stdout[-3000:] + prepared.stderr[-3000:]
    sentinel = read_sentinel(ws.root / names.task_sentinel(TASK))
    made.append(sentinel.id)
    assert sentinel.image == image and sentinel.pushed and sentinel.pushed.startswith(f"{url}/kotlin-bench/")
    base = read_sentinel(ws.root / names.base_sentinel("examples_calc", "base"))
    assert base.pushed and base.pushed.startswith(f"{url}/kotlin-bench/examples_calc@sha256:")
    repository, digest = split_reference(sentinel.pushed)
    assert tag_digest(eng, repository, tag) == digest

    # A node without the image: remove it (ours alone); the run pulls it by digest.
    client.images.remove(sentinel.id, force=True)
    target = ws.target("oracle", TASK)
    ran = ws.snakemake(target, timeout=1800)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    record = ws.result("oracle", TASK)
    assert record is not None and record.status == "resolved" and record.reward == 1.0
    assert record.work.image_id == sentinel.id
    pulled = client.images.get(sentinel.id)
    assert sentinel.pushed in pulled.attrs["RepoDigests"] and image in tags(client, sentinel.id)

    # Someone pushes other content under the tag: the run refuses it, naming image and both digests.
    other = tiny_image(eng, tmp_path, f"{repository}:{tag}", namespace)
    made.append(other)
    for event in client.images.push(repository, tag=tag, stream=True, decode=True):
        assert "error" not in event, event
    found = tag_digest(eng, repository, tag)
    (ws.root / target).unlink()
    refused = ws.snakemake(target, timeout=1800)
    assert refused.returncode == 0, refused.stdout[-3000:] + refused.stderr[-3000:]  # an error result
    record = ws.result("oracle", TASK)
    assert record is not None and record.status == "error", json.dumps(record.to_dict() if record else None)
    for part in (image, digest, found, names.task_sentinel(TASK)):
        assert part in (record.error or ""), record.error
