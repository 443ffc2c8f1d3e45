"""Base and task images: the manifest, builds with the Docker SDK, build logs and sentinels.

A base image comes from a manifest line `<repo_key> <tag> <recipe>` (image `kotlin-bench/<repo_key>:<tag>`);
the recipe is a Dockerfile (context: its directory) or `debootstrap:<suite>` (an OS image made with
debootstrap and an import, for hosts without a registry; an ordinary user, for rootless Podman, makes
the same minbase variant with mmdebstrap in a user namespace). A Dockerfile's context may list npm
packages in `npm-packs.txt`; they are fetched on the host with `npm pack` into `<context>/npm-packs/`
before the build, so that containers never need the npm registry. A task image is built from the task's
`environment/` directory and tagged `kotlin-bench/<repo_key>:pr-<N>.ws-<workdir tag>`
(`names.built_task_image`: not the published name, which a Harbor run of the task directory builds and
deletes). Every image the workflow builds carries the label `kotlin-bench.workdir=<workflow directory>`.

Every build writes its log and, on success, a sentinel JSON recording the image's name, id and size. A
job uses an image through its sentinel (`use_image`): by the recorded id, named as recorded again when
something took the name away.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kotlin_bench.core import names
from kotlin_bench.core.fsutil import write_atomic
from kotlin_bench.dataset.task import Task
from kotlin_bench.engine.engine import Engine, EngineError, EngineSettings, connect
from kotlin_bench.engine.registry import Registry, check_tag, pull, push

if TYPE_CHECKING:
    import docker

DEBOOTSTRAP = "debootstrap:"
BASE_BUILD_TIMEOUT_SEC = 3600  # config base_build_timeout_sec (int: it is a rule parameter)
NPM_PACKS = "npm-packs.txt"
NPM_PACKS_DIR = "npm-packs"
_FROM_RE = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)", re.IGNORECASE | re.MULTILINE)
_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_TAG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ImageError(EngineError):
    """An image could not be built or found; the message says which and why."""


@dataclass(frozen=True)
class BaseRecipe:
    repo_key: str
    tag: str
    recipe: str
    manifest: Path
    line: int

    @property
    def image(self) -> str:
        return names.image(self.repo_key, self.tag)

    @property
    def is_debootstrap(self) -> bool:
        return self.recipe.startswith(DEBOOTSTRAP)

    def dockerfile(self, repo_root: Path) -> Path:
        return repo_root / self.recipe

    def context(self, repo_root: Path) -> Path:
        return self.dockerfile(repo_root).parent


def parse_manifest(path: Path) -> list[BaseRecipe]:
    """Read a manifest; malformed lines and duplicate images are errors naming file and line."""
    recipes: list[BaseRecipe] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 3:
            raise ImageError(f"{path}:{number}: expected '<repo_key> <tag> <recipe>', got {raw.strip()!r}")
        key, tag, recipe = fields
        if not _KEY_RE.match(key) or not _TAG_RE.match(tag):
            raise ImageError(f"{path}:{number}: invalid repo key or tag in {raw.strip()!r}")
        entry = BaseRecipe(key, tag, recipe, Path(path), number)
        if entry.image in seen:
            raise ImageError(f"{path}:{number}: {entry.image} is already listed on line {seen[entry.image]}")
        seen[entry.image] = number
        recipes.append(entry)
    return recipes


def dockerfile_parents(dockerfile: Path) -> list[str]:
    """The images a Dockerfile builds FROM (multi-stage files may name several)."""
    return _FROM_RE.findall(dockerfile.read_text(encoding="utf-8"))


def recipe_parent(entry: BaseRecipe, repo_root: Path, known: set[str]) -> str | None:
    """The manifest image this recipe builds on, if any."""
    if entry.is_debootstrap:
        return None
    return next((p for p in dockerfile_parents(entry.dockerfile(repo_root)) if p in known), None)


def context_files(context: Path) -> list[Path]:
    """The files of a build context that decide the image (fetched npm packs excluded)."""
    return sorted(
        p for p in context.rglob("*") if p.is_file() and NPM_PACKS_DIR not in p.relative_to(context).parts
    )


def recipe_inputs(entry: BaseRecipe, repo_root: Path) -> list[Path]:
    if entry.is_debootstrap:
        return [entry.manifest]
    dockerfile = entry.dockerfile(repo_root)
    if not dockerfile.is_file():
        raise ImageError(f"{entry.manifest}:{entry.line}: recipe {entry.recipe} does not exist")
    return context_files(entry.context(repo_root))


def image_id(client: docker.DockerClient, image: str) -> str | None:
    import docker

    try:
        return client.images.get(image).id
    except docker.errors.ImageNotFound:
        return None


@dataclass(frozen=True)
class Sentinel:
    """An image the workflow built: its name, id, when and how long, its size, and where it was pushed.

    `size` is the image's size in bytes as the engine reports it (its layers, shared ones included; None in
    sentinels written before 0.3), `layers` the bytes it adds to the image it was built FROM (a task image
    on its base). `pushed` is `<registry>/<repository>@sha256:...` when `registry:` is configured (the
    image's manifest digest in the registry), else None. `replaces` is the id of the image a rebuild
    replaced (kotlin_bench.engine.retention). Read and written only here (JSON; unset fields left out).
    """

    image: str
    id: str
    built_at: str = ""
    seconds: float = 0.0
    pushed: str | None = None
    size: int | None = None
    replaces: str | None = None
    layers: int | None = None

    def write(self, path: Path) -> None:
        record = {key: value for key, value in asdict(self).items() if value is not None}
        write_atomic(path, json.dumps(record, indent=2) + "\n")


def write_sentinel(path: Path, image: str, image_id: str, seconds: float, **recorded: Any) -> Sentinel:
    """Record a built image at `path` (`recorded`: the optional fields of `Sentinel`)."""
    now = datetime.now(UTC).isoformat(timespec="seconds")
    sentinel = Sentinel(image, image_id, now, round(seconds, 1), **recorded)
    sentinel.write(path)
    return sentinel


def read_sentinel(path: Path) -> Sentinel:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        known = {field.name for field in fields(Sentinel)}
        sentinel = Sentinel(**{key: value for key, value in data.items() if key in known})
        if not isinstance(sentinel.image, str) or not isinstance(sentinel.id, str):
            raise TypeError("image and id must be strings")
        return sentinel
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ImageError(
            f"image sentinel {path} is unreadable ({exc}); delete it to rebuild the image"
        ) from None


def fetch_npm_packs(context: Path, log: Any) -> None:
    """Run `npm pack` on the host for each package listed in `<context>/npm-packs.txt`."""
    listing = context / NPM_PACKS
    if not listing.is_file():
        return
    target = context / NPM_PACKS_DIR
    target.mkdir(exist_ok=True)
    for spec in (s.strip() for s in listing.read_text(encoding="utf-8").splitlines()):
        if not spec or spec.startswith("#"):
            continue
        name, _, version = spec.rpartition("@")
        if (target / f"{name.replace('/', '-').lstrip('@')}-{version}.tgz").is_file():
            continue
        if shutil.which("npm") is None:
            raise ImageError(f"{listing}: needs `npm` on the host to fetch {spec}")
        log.write(f"npm pack {spec}\n")
        result = subprocess.run(["npm", "pack", spec], cwd=target, capture_output=True, text=True)
        log.write(result.stdout + result.stderr)
        if result.returncode != 0:
            raise ImageError(f"{listing}: `npm pack {spec}` failed: {result.stderr.strip()[-500:]}")


def workdir_label() -> dict[str, str]:
    """The label every image and container of this workflow directory carries (`kotlin-bench clean` finds
    what a workspace left on the engine by it)."""
    return {names.LABEL_WORKDIR: str(Path.cwd().resolve())}


_STEP_RE = re.compile(r"^Step \d+/\d+ : (\S+)")
_LAYER_RE = re.compile(r"^ ---> ([0-9a-f]{12})$")
_CACHED = " ---> Using cache"
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class BuildLedger:
    """Appends each layer a build commits to the build ledger (`names.BUILD_LEDGER`) as the build goes,
    so that a build that fails or is killed has recorded what it made: its steps' layers, not those taken
    from the cache nor the images it builds FROM. Fed the build's output as it streams."""

    path: Path
    image: str
    _pending: str = ""
    _skip: bool = False

    def feed(self, text: str) -> None:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            self._line(_ANSI_RE.sub("", line).rstrip("\r"))

    def _line(self, line: str) -> None:
        step = _STEP_RE.match(line)
        if step:
            self._skip = step[1].upper() == "FROM"
        elif line == _CACHED:
            self._skip = True
        elif (layer := _LAYER_RE.match(line)) and not self._skip:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as ledger:  # one short append: whole lines
                ledger.write(f"{workdir_label()[names.LABEL_WORKDIR]}\t{layer[1]}\t{self.image}\n")


def read_ledger(path: Path, workdir: Path) -> dict[str, str]:
    """The layers the builds of `workdir` recorded in the ledger at `path`: short id -> the image being
    built (lines that a copy of another workspace's results brought along name that workspace, and are
    left out)."""
    if not path.is_file():
        return {}
    ours = str(workdir.resolve())
    found = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0] == ours:
            found[fields[1]] = fields[2]
    return found


def stream_build(
    engine: Engine,
    context: Path,
    dockerfile: str,
    tag: str,
    *,
    timeout: float,
    log: Any,
    ledger: Path | None = None,
) -> str:
    """Build and stream the log; stop with an error past `timeout` seconds. With `ledger`, the layers the
    build commits are recorded there (`BuildLedger`)."""
    client = engine.client
    deadline = time.monotonic() + timeout
    made = BuildLedger(ledger, tag) if ledger is not None else None
    stream: Iterator[dict[str, Any]] = client.api.build(
        path=str(context),
        dockerfile=dockerfile,
        tag=engine.local_name(tag),
        rm=True,
        forcerm=True,
        decode=True,
        labels=workdir_label(),
        extra_hosts=engine.build_extra_hosts(),
    )
    for chunk in stream:
        if "stream" in chunk:
            log.write(chunk["stream"])
            if made is not None:
                made.feed(chunk["stream"])
        if "error" in chunk:
            log.write(chunk["error"] + "\n")
            raise ImageError(f"building {tag} failed: {chunk['error'].strip()}")
        if time.monotonic() > deadline:
            raise ImageError(f"building {tag} exceeded its build timeout of {timeout:.0f}s")
    found = image_id(client, tag)
    if found is None:
        raise ImageError(f"building {tag} finished without producing the image")
    return found


def _debootstrap(engine: Engine, suite: str, image: str, log: Any) -> str:
    """An OS image of `suite`: debootstrap's minbase root filesystem, imported. debootstrap needs root;
    an ordinary user (rootless Podman) gets the same variant from mmdebstrap in a user namespace."""
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-rootfs-") as root:
        cmd = _os_command(suite, root, image)
        log.write(" ".join(cmd) + "\n")
        log.flush()
        if cmd[0] == "debootstrap":
            result = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
            if result.returncode != 0:
                raise ImageError(
                    f"{image}: debootstrap {suite} failed (exit {result.returncode}); see the log"
                )
            cmd = ["tar", "-C", root, "-c", "."]
        tar = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log)
        assert tar.stdout is not None
        # `repository` names the tag too: Podman ignores a separate `tag` (the image would be `:latest`)
        answer = engine.client.api.import_image_from_stream(tar.stdout, repository=engine.local_name(image))
        if tar.wait() != 0:
            raise ImageError(
                f"{image}: making the root filesystem failed ({cmd[0]} exit {tar.returncode}); see the log"
            )
    imported = _imported_id(answer)
    found = image_id(engine.client, image)
    if found is None or (imported and found != imported):
        raise ImageError(f"{image}: the import produced {imported or 'no image'}, but {image} is {found}")
    return found


def _os_command(suite: str, root: str, image: str) -> list[str]:
    """debootstrap into `root` (as root), or mmdebstrap writing the tarball to stdout (anyone else)."""
    if os.geteuid() == 0:
        if shutil.which("debootstrap") is None:
            raise ImageError(f"{image}: needs `debootstrap` on the host (apt-get install debootstrap)")
        return ["debootstrap", "--variant=minbase", suite, root]
    if shutil.which("mmdebstrap") is None:
        raise ImageError(
            f"{image}: an ordinary user needs `mmdebstrap` on the host (apt-get install mmdebstrap uidmap; "
            "scripts/setup_podman.sh installs it), or the image built by root or pulled from a registry"
        )
    return ["mmdebstrap", "--quiet", "--variant=minbase", "--mode=unshare", "--format=tar", suite, "-"]


def _imported_id(answer: str | bytes) -> str | None:
    """The image id in the last line of an import's answer (`{"status": "sha256:..."}`), if any."""
    text = answer.decode() if isinstance(answer, bytes) else str(answer)
    for line in reversed(text.strip().splitlines()):
        with contextlib.suppress(ValueError, AttributeError):
            status = str(json.loads(line).get("status", ""))
            if status.startswith("sha256:"):
                return status
    return None


def ensure_image(engine: Engine, sentinel: Sentinel, registry: Registry | None, where: Path) -> str:
    """The id of the image `sentinel` (read from `where`) records.

    Without a registry this is the recorded id, as it is (`use_image` checks that it is present). With
    one, the registry's tag must still name the recorded digest (else the image is refused), and the image
    is pulled by that digest when this engine lacks it."""
    if registry is None:
        return sentinel.id
    if sentinel.pushed is None or not registry.holds(sentinel.pushed):
        raise ImageError(
            f"{where}: {sentinel.image} was built without being pushed to {registry.url} "
            f"(recorded: {sentinel.pushed or 'not pushed'}); delete {where} to rebuild and push it"
        )
    check_tag(engine, sentinel.pushed, sentinel.image, str(where))
    if image_id(engine.client, sentinel.id) is None:
        pull(engine.client, sentinel.pushed, sentinel.image, sentinel.id)
    return sentinel.id


@dataclass(frozen=True)
class ImageRef:
    """An image a job uses: the name its sentinel records and the id it was built as."""

    name: str
    id: str


def use_image(engine: Engine, path: Path, registry: Registry | None = None) -> ImageRef:
    """The image the sentinel at `path` records, named as recorded: a name that something else took away
    (a Harbor build of the task directory, another checkout, `docker rmi` of the tag) or moved to another
    image points at the recorded image again before anything uses it. With a registry, the image is first
    checked and, where this engine lacks it, pulled by its recorded digest (`ensure_image`). An image that
    is gone is an error saying to delete the sentinel (the image is then rebuilt)."""
    import docker

    client = engine.client
    record = read_sentinel(path)
    wanted = ensure_image(engine, record, registry, path)
    if image_id(client, record.image) != wanted:
        try:
            image = client.images.get(wanted)
        except docker.errors.ImageNotFound:
            raise ImageError(
                f"{record.image}: the image built for it ({wanted[:19]}, {path}) is no longer in the engine; "
                f"delete {path} to rebuild it"
            ) from None
        repository, _, name = engine.local_name(record.image).rpartition(":")
        image.tag(repository, name)
    return ImageRef(record.image, wanted)


def pin_images(engine: Engine, sentinels: Iterable[Path], registry: Registry | None = None) -> None:
    """`use_image` for each sentinel, before a build FROM them: another checkout sharing the engine may
    have moved a base's tag to an image of its own."""
    for path in sentinels:
        use_image(engine, path, registry)


def _finish(
    engine: Engine,
    image: str,
    found: str,
    *,
    started: float,
    sentinel: Path,
    registry: Registry | None,
    log: Any,
    replaces: str | None = None,
    base: str | None = None,
) -> Sentinel:
    """Push the built image when a registry is configured, then write its sentinel (`base`: the image it
    was built FROM, whose size its `layers` leave out)."""
    seconds = time.monotonic() - started
    pushed = push(engine, registry, image, found, log) if registry else None
    size = _size(engine.client, found)
    below = _size(engine.client, base) if base else None
    layers = size - below if size is not None and below is not None else None
    return write_sentinel(
        sentinel, image, found, seconds, pushed=pushed, size=size, replaces=replaces, layers=layers
    )


def _size(client: docker.DockerClient, image: str) -> int | None:
    size = client.images.get(image).attrs.get("Size")
    return None if size is None else int(size)


def build_base(
    entry: BaseRecipe,
    repo_root: Path,
    log_path: Path,
    sentinel: Path,
    *,
    timeout: float,
    parents: Iterable[Path] = (),
    registry: Registry | None = None,
    settings: EngineSettings | None = None,
) -> None:
    """Build one manifest image FROM its parents (their sentinels) and record it in `sentinel`; with a
    registry, the parents come from it where this engine lacks them, and the image is pushed."""
    engine = connect(settings)
    pin_images(engine, parents, registry)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        if entry.is_debootstrap:
            # An OS image has no inputs that could change: reuse it when present.
            found = image_id(engine.client, entry.image) or _debootstrap(
                engine, entry.recipe[len(DEBOOTSTRAP) :], entry.image, log
            )
        else:
            context = entry.context(repo_root)
            fetch_npm_packs(context, log)
            found = stream_build(
                engine,
                context,
                entry.dockerfile(repo_root).name,
                entry.image,
                timeout=timeout,
                log=log,
                ledger=Path(names.BUILD_LEDGER),
            )
        _finish(engine, entry.image, found, started=started, sentinel=sentinel, registry=registry, log=log)


def build_task_image(
    task: Task,
    log_path: Path,
    sentinel: Path,
    *,
    base_sentinel: Path | None = None,
    registry: Registry | None = None,
    settings: EngineSettings | None = None,
    replaces: str | None = None,
) -> Sentinel:
    """Build the image of one task from its environment/ directory, FROM the base its sentinel records;
    with a registry, the base comes from it where this engine lacks it, and the image is pushed. The
    record is written to `sentinel` (`replaces`: the id of the image this build stands in for)."""
    engine = connect(settings)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    if base_sentinel is not None:
        pin_images(engine, [base_sentinel], registry)
    if image_id(engine.client, task.base_image) is None:
        raise ImageError(
            f"task {task.id}: base image {task.base_image} is not present; build the bases first"
        )
    started = time.monotonic()
    name = names.built_task_image(task.image)
    with log_path.open("w", encoding="utf-8") as log:
        found = stream_build(
            engine,
            task.path / "environment",
            "Dockerfile",
            name,
            timeout=task.environment.build_timeout_sec,
            log=log,
            ledger=Path(names.BUILD_LEDGER),
        )
        return _finish(
            engine,
            name,
            found,
            started=started,
            sentinel=sentinel,
            registry=registry,
            log=log,
            replaces=replaces,
            base=task.base_image,
        )


def order_recipes(recipes: list[BaseRecipe], repo_root: Path) -> list[BaseRecipe]:
    """Recipes in build order: every image after the manifest image it is built FROM."""
    known = {r.image for r in recipes}
    by_image = {r.image: r for r in recipes}
    ordered: list[BaseRecipe] = []
    visiting: set[str] = set()

    def visit(entry: BaseRecipe) -> None:
        if entry in ordered:
            return
        if entry.image in visiting:
            raise ImageError(f"{entry.manifest}:{entry.line}: {entry.image} depends on itself")
        visiting.add(entry.image)
        parent = recipe_parent(entry, repo_root, known)
        if parent:
            visit(by_image[parent])
        ordered.append(entry)

    for entry in recipes:
        visit(entry)
    return ordered


def build_manifest_images(
    manifest: Path,
    repo_root: Path,
    logs_dir: Path,
    *,
    only: list[str] | None,
    rebuild: bool,
    timeout: float = BASE_BUILD_TIMEOUT_SEC,
    registry: Registry | None = None,
    settings: EngineSettings | None = None,
) -> None:
    """Build the manifest's images in order, skipping present ones unless `rebuild` (scripts/build_bases.sh);
    with `registry`, push each image built, as the workflow does."""
    recipes = order_recipes(parse_manifest(manifest), repo_root)
    if only:
        unknown = set(only) - {r.repo_key for r in recipes} - {r.image for r in recipes}
        if unknown:
            raise ImageError(f"{manifest}: no entries for {', '.join(sorted(unknown))}")
        recipes = [r for r in recipes if r.repo_key in only or r.image in only]
    client = connect(settings).client
    for entry in recipes:
        present = image_id(client, entry.image)
        if present and not rebuild:
            print(f"skip  {entry.image} (present: {present[:19]})", flush=True)
            continue
        print(f"build {entry.image} ...", flush=True)
        sentinel = repo_root / names.base_sentinel(entry.repo_key, entry.tag)
        log = logs_dir / "base" / entry.repo_key / f"{entry.tag}.log"
        build_base(entry, repo_root, log, sentinel, timeout=timeout, registry=registry, settings=settings)
        print(f"built {entry.image} ({read_sentinel(sentinel).seconds}s, log {log})", flush=True)
