"""The content of the stand-in Maven repository (docs/standin-repo.md): a Maven layout under `maven2/`,
built once per set of inputs and kept under a digest of them.

- The example projects' own releases, group `examples`, artifact = the project's name, made from the
  projects' upstream history (`examples/bases/<project>/upstream`, built into a git repository by
  `make-upstream-repo.sh`, as materialization does): `0.<k>.0` for each commit before the base that
  changed the main sources, `1.0.0` at the base commit, and `1.<i>.0` for the i-th pull request (in
  number order), built from its head, which contains its fix. Each version has `<a>-<v>.pom`, `<a>-<v>.jar`
  (the main sources compiled by kotlinc, the examples' own compiler from npm, on the host's JDK 17) and
  `<a>-<v>-sources.jar`; each artifact a `maven-metadata.xml`; every file a `.sha1` and `.md5`.
- Builds of the example projects besides their releases, listed in `examples/standin-repo/builds.txt`:
  development builds (a release's classes and sources under a `-dev-N` version: what a project's own
  build applies to itself) and bundles (one project's release with another's inside: a carrier of it).
- Third-party artifacts listed in `examples/standin-repo/third-party.txt`, jars copied from Debian's
  packages, poms written with the dependencies the list gives.

Everything is deterministic (fixed zip times, sorted entries, fixed metadata times): the same inputs give
the same bytes. `release_versions` is the one place the version rule is written; examples/dataset.json
carries its results (`base_version`, `fix_release`; the tasks' `base_build` and the repositories'
`carriers` for builds.txt), and tests/test_standin_repo.py and tests/test_retrieval_examples.py check they
agree.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from functools import cmp_to_key
from pathlib import Path

from kotlin_bench.core import names
from kotlin_bench.core.versions import gradle_compare

BUILDER = "examples/bases/toolchain/make-upstream-repo.sh"
NPM_PACKS = "examples/bases/toolchain/npm-packs.txt"
COMPILER_PACKAGE = "kotlin-compiler"
DEBIAN_MAVEN_REPO = Path("/usr/share/maven-repo")
DEBIAN_JAVA = Path("/usr/share/java")
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
METADATA_TIME = "20240101000000"
BASE_VERSION = "1.0.0"
COMPILE_TIMEOUT = 900
CDS_ARCHIVE = "kotlinc.jsa"
FAST_JVM = "-XX:TieredStopAtLevel=1 -Xlog:cds=off"
MAIN_SOURCES = re.compile(
    r"^(?:(?P<module>[^/]+)/)?src/main/(?:kotlin/(?P<path>.+\.kt)|java/(?P<java>.+\.java))$"
)


class ContentError(RuntimeError):
    """The repository's content could not be built; the message names the input at fault."""


@dataclass(frozen=True)
class Release:
    """One release of an example project: its version and the commit it is built from."""

    version: str
    commit: str
    what: str  # "history", "base" or "pull <N>"


@dataclass(frozen=True)
class DevBuild:
    """A `dev` line of builds.txt: `<project>`'s release `release` published again as `version`."""

    project: str
    version: str
    release: str


@dataclass(frozen=True)
class Bundle:
    """A `bundle` line of builds.txt: artifact `examples:<artifact>`, each version a release of `project`
    with a release of `carried` inside (classes and sources): (its version, the carried release) pairs."""

    artifact: str
    project: str
    carried: str
    versions: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Artifact:
    """A third-party artifact of third-party.txt."""

    group: str
    artifact: str
    version: str
    package: str
    dependencies: tuple[str, ...]

    @property
    def coordinates(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"


# --- inputs ------------------------------------------------------------------------------------------


def projects(root: Path) -> dict[str, Path]:
    """The example projects with an upstream history: name -> its `upstream/` directory."""
    return {p.parent.name: p for p in sorted(root.glob(names.STANDIN_PROJECTS_GLOB)) if (p / "tree").is_dir()}


def third_party(root: Path) -> list[Artifact]:
    """The lines of third-party.txt; ContentError names the line at fault."""
    path = root / names.STANDIN_THIRD_PARTY
    found = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        coords = [f.split(":") for f in [fields[0], *fields[2:]]]
        if len(fields) < 2 or any(len(c) != 3 or not all(c) for c in coords):
            raise ContentError(
                f"{path}:{number}: expected `group:artifact:version  debian-package  [group:artifact:version ...]`"
            )
        group, artifact, version = coords[0]
        found.append(Artifact(group, artifact, version, fields[1], tuple(fields[2:])))
    return found


def builds(root: Path) -> tuple[list[DevBuild], list[Bundle]]:
    """The lines of builds.txt; ContentError names the line at fault."""
    path = root / names.STANDIN_BUILDS
    dev, bundles = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        pairs = [f.split("=") for f in fields[4:]]
        if fields[0] == "dev" and len(fields) == 4:
            dev.append(DevBuild(fields[1], fields[2], fields[3]))
        elif fields[0] == "bundle" and pairs and all(len(p) == 2 and all(p) for p in pairs):
            bundles.append(Bundle(fields[1], fields[2], fields[3], tuple((a, b) for a, b in pairs)))
        else:
            raise ContentError(
                f"{path}:{number}: expected `dev <project> <version> <release>` or "
                "`bundle <artifact> <project> <carried project> <version>=<carried release> ...`"
            )
    return dev, bundles


def compiler_version(root: Path) -> str:
    """The kotlinc the examples use (`kotlin-compiler@<version>` in the toolchain's npm-packs.txt)."""
    for line in (root / NPM_PACKS).read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{COMPILER_PACKAGE}@"):
            return line.split("@", 1)[1].strip()
    raise ContentError(f"{root / NPM_PACKS}: no {COMPILER_PACKAGE}@<version> line")


def debian_jar(artifact: Artifact) -> Path | None:
    """The Debian file that stands for `artifact`'s jar (None: its package is not installed)."""
    base = DEBIAN_MAVEN_REPO / artifact.group.replace(".", "/") / artifact.artifact
    for candidate in (
        base / artifact.version / f"{artifact.artifact}-{artifact.version}.jar",
        base / "debian" / f"{artifact.artifact}-debian.jar",
        DEBIAN_JAVA / f"{artifact.artifact}.jar",
    ):
        if candidate.is_file():
            return candidate.resolve()
    return None


def input_digest(root: Path) -> str:
    """A digest of everything the content is made of: the projects' upstream files, the builder, the
    compiler's version, third-party.txt and the Debian jars it names, and this module."""
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode())
        digest.update(data)

    for name, upstream in projects(root).items():
        for path in sorted(p for p in upstream.rglob("*") if p.is_file()):
            add(f"{name}/{path.relative_to(upstream)}", path.read_bytes())
    add("builder", (root / BUILDER).read_bytes())
    add("compiler", compiler_version(root).encode())
    add("third-party", (root / names.STANDIN_THIRD_PARTY).read_bytes())
    add("builds", (root / names.STANDIN_BUILDS).read_bytes())
    for artifact in third_party(root):
        jar = debian_jar(artifact)
        add(artifact.coordinates, jar.read_bytes() if jar else b"missing")
    add("module", Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


# --- releases of the example projects ----------------------------------------------------------------


def release_versions(builder_output: str, changed_main: list[bool]) -> list[Release]:
    """The releases of one project from make-upstream-repo's output lines (`history <sha> <msg>`,
    `base <sha>`, `pull <N> <sha>`): `0.<k>.0` for the k-th history commit that changed the main sources
    (`changed_main`, one flag per history line), `1.0.0` at the base, `1.<i>.0` for the i-th pull
    request in number order."""
    releases, history, pulls = [], [], []
    base = None
    for line in builder_output.splitlines():
        fields = line.split()
        if fields[:1] == ["history"]:
            history.append(fields[1])
        elif fields[:1] == ["base"]:
            base = fields[1]
        elif fields[:1] == ["pull"]:
            pulls.append((int(fields[1]), fields[2]))
    if base is None:
        raise ContentError("make-upstream-repo printed no base commit")
    kept = [sha for sha, changed in zip(history, changed_main, strict=True) if changed]
    releases += [Release(f"0.{k}.0", sha, "history") for k, sha in enumerate(kept, 1)]
    releases.append(Release(BASE_VERSION, base, "base"))
    releases += [Release(f"1.{i}.0", sha, f"pull {n}") for i, (n, sha) in enumerate(sorted(pulls), 1)]
    return releases


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ContentError(f"git {' '.join(args)} in {repo}: {result.stderr.strip()[-500:]}")
    return result.stdout


def _main_sources(repo: Path, commit: str) -> dict[str, bytes]:
    """The main Kotlin sources at `commit`: path in the sources jar (below `kotlin/`) -> content."""
    found = {}
    for path in _git(repo, "ls-tree", "-r", "--name-only", commit).splitlines():
        match = MAIN_SOURCES.match(path)
        if match:
            blob = subprocess.run(
                ["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True, check=True
            ).stdout
            found[match["path"] or match["java"]] = blob
    return found


def _kotlinc(root: Path, cache: Path, log: list[str]) -> Path:
    """kotlinc of the examples' version, unpacked once from `npm pack` into `cache`."""
    version = compiler_version(root)
    home = cache / f"kotlinc-{version}"
    kotlinc = home / "bin" / "kotlinc"
    if kotlinc.is_file():
        return kotlinc
    if shutil.which("npm") is None:
        raise ContentError(f"building the stand-in repository's jars needs npm (for {COMPILER_PACKAGE})")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        packed = subprocess.run(
            ["npm", "pack", "--silent", f"{COMPILER_PACKAGE}@{version}", "--pack-destination", tmp],
            capture_output=True,
            text=True,
            check=False,
        )
        if packed.returncode != 0:
            raise ContentError(f"npm pack {COMPILER_PACKAGE}@{version}: {packed.stderr.strip()[-500:]}")
        unpacked = Path(tmp) / "unpacked"
        unpacked.mkdir()
        tgz = next(Path(tmp).glob("*.tgz"))
        subprocess.run(
            ["tar", "-xzf", str(tgz), "-C", str(unpacked), "--strip-components=1", "--no-same-owner"],
            check=True,
        )
        for tool in (unpacked / "bin").iterdir():
            tool.chmod(0o755)
        # A class-data sharing archive of the compiler's classes, dumped by one compile of an empty file
        # (as the toolchain image does): with it and the C1 compiler only, a compile takes a third of the time.
        (Path(tmp) / "a.kt").write_text("fun main() {}\n", encoding="utf-8")
        dump = f"-Xmx512M {FAST_JVM} -XX:ArchiveClassesAtExit={unpacked / CDS_ARCHIVE} -Xlog:cds+dynamic=off"
        subprocess.run(
            [str(unpacked / "bin" / "kotlinc"), "-d", str(Path(tmp) / "out"), str(Path(tmp) / "a.kt")],
            env={**os.environ, "JAVA_OPTS": dump},
            capture_output=True,
            timeout=COMPILE_TIMEOUT,
            check=False,
        )
        unpacked.rename(home)
    log.append(f"kotlinc {version} unpacked into {home}")
    return kotlinc


def _compile(kotlinc: Path, sources: dict[str, bytes], what: str) -> dict[str, bytes]:
    """The class files (and Kotlin module file) kotlinc makes of `sources`: path in the jar -> bytes. A
    Java project (the Gradle example, `tally`: only `.java` sources) is compiled by the host JDK's javac."""
    with tempfile.TemporaryDirectory(prefix="kotlin-bench-standin-") as tmp:
        src, out = Path(tmp) / "src", Path(tmp) / "out"
        for path, data in sources.items():
            (src / path).parent.mkdir(parents=True, exist_ok=True)
            (src / path).write_bytes(data)
        archive = kotlinc.parent.parent / CDS_ARCHIVE
        shared = f" {FAST_JVM} -XX:SharedArchiveFile={archive}" if archive.is_file() else ""
        env = {**os.environ, "JAVA_OPTS": f"-Xmx512M{shared}"}
        java = bool(sources) and all(p.endswith(".java") for p in sources)
        compiler = ["javac", "-nowarn", "-encoding", "UTF-8"] if java else [str(kotlinc), "-nowarn"]
        result = subprocess.run(
            [*compiler, "-d", str(out), *sorted(str(src / p) for p in sources)],
            capture_output=True,
            text=True,
            env=env,
            timeout=COMPILE_TIMEOUT,
            check=False,
        )
        if result.returncode != 0:
            raise ContentError(f"{compiler[0]} {what}: {result.stderr.strip()[-1000:]}")
        return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


# --- the Maven layout ---------------------------------------------------------------------------------


def jar_bytes(entries: dict[str, bytes]) -> bytes:
    """A jar of `entries` with a manifest, entries sorted, times fixed: the same entries, the same bytes."""
    path = Path(tempfile.mkstemp(suffix=".jar")[1])
    try:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
            manifest = b"Manifest-Version: 1.0\r\nCreated-By: kotlin-bench stand-in repository\r\n\r\n"
            for name, data in [("META-INF/MANIFEST.MF", manifest), *sorted(entries.items())]:
                info = zipfile.ZipInfo(name, ZIP_TIME)
                info.compress_type, info.external_attr = zipfile.ZIP_DEFLATED, 0o644 << 16
                jar.writestr(info, data)
        return path.read_bytes()
    finally:
        path.unlink()


def pom(
    group: str, artifact: str, version: str, dependencies: tuple[str, ...] = (), about: str = ""
) -> bytes:
    deps = "".join(
        "    <dependency>\n"
        f"      <groupId>{g}</groupId>\n      <artifactId>{a}</artifactId>\n      <version>{v}</version>\n"
        "    </dependency>\n"
        for g, a, v in (d.split(":") for d in dependencies)
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        f"  <groupId>{group}</groupId>\n  <artifactId>{artifact}</artifactId>\n  <version>{version}</version>\n"
        "  <packaging>jar</packaging>\n"
        + (f"  <description>{about}</description>\n" if about else "")
        + (f"  <dependencies>\n{deps}  </dependencies>\n" if deps else "")
        + "</project>\n"
    ).encode()


def metadata(group: str, artifact: str, versions: list[str]) -> bytes:
    listed = "".join(f"      <version>{v}</version>\n" for v in versions)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<metadata>\n'
        f"  <groupId>{group}</groupId>\n  <artifactId>{artifact}</artifactId>\n  <versioning>\n"
        f"    <latest>{versions[-1]}</latest>\n    <release>{versions[-1]}</release>\n"
        f"    <versions>\n{listed}    </versions>\n    <lastUpdated>{METADATA_TIME}</lastUpdated>\n"
        "  </versioning>\n</metadata>\n"
    ).encode()


def _put(top: Path, relative: str, data: bytes) -> None:
    """A file of the layout and its checksums."""
    path = top / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.with_name(path.name + ".sha1").write_text(hashlib.sha1(data).hexdigest())
    path.with_name(path.name + ".md5").write_text(hashlib.md5(data).hexdigest())


def artifact_dir(group: str, artifact: str) -> str:
    return f"{group.replace('.', '/')}/{artifact}"


@dataclass(frozen=True)
class _Made:
    """One published version of an example project's artifact: its classes, its sources, where from."""

    classes: dict[str, bytes]
    sources: dict[str, bytes]
    what: str


def _made(made: dict[tuple[str, str], _Made], project: str, version: str, root: Path) -> _Made:
    if (project, version) not in made:
        raise ContentError(
            f"{root / names.STANDIN_BUILDS}: {project} {version} is not a release of an example project "
            f"(releases: {', '.join(sorted(f'{p} {v}' for p, v in made))})"
        )
    return made[project, version]


def _publish(top: Path, artifact: str, version: str, release: _Made, about: str) -> None:
    """`examples:<artifact>:<version>`: its pom, jar and sources jar."""
    stem = f"{artifact_dir(names.STANDIN_GROUP, artifact)}/{version}/{artifact}-{version}"
    _put(top, f"{stem}.pom", pom(names.STANDIN_GROUP, artifact, version, about=about))
    _put(top, f"{stem}.jar", jar_bytes(release.classes))
    _put(top, f"{stem}-sources.jar", jar_bytes(release.sources))


def build(root: Path, dest: Path, cache: Path) -> list[str]:
    """Write the repository's content for the checkout at `root` into `dest` (`dest/maven2/...`, which must
    not exist); returns a log of what was made."""
    log: list[str] = []
    top = dest / names.STANDIN_PATH.strip("/")
    top.mkdir(parents=True)
    kotlinc = _kotlinc(root, cache, log)
    made: dict[tuple[str, str], _Made] = {}  # (project, version) -> what was published
    for project, upstream in projects(root).items():
        with tempfile.TemporaryDirectory(prefix="kotlin-bench-standin-upstream-") as tmp:
            repo = Path(tmp) / project
            made_repo = subprocess.run(
                ["bash", str(root / BUILDER), str(upstream), str(repo)],
                capture_output=True,
                text=True,
                check=False,
            )
            if made_repo.returncode != 0:
                raise ContentError(f"{BUILDER} {upstream}: {made_repo.stderr.strip()[-500:]}")
            history = [
                line.split()[1] for line in made_repo.stdout.splitlines() if line.startswith("history ")
            ]
            before, changed = None, []
            for sha in history:
                sources = _main_sources(repo, sha)
                changed.append(bool(sources) and sources != before)
                before = sources
            for release in release_versions(made_repo.stdout, changed):
                sources = _main_sources(repo, release.commit)
                classes = _compile(kotlinc, sources, f"{project} {release.version}")
                made[project, release.version] = _Made(classes, sources, f"{release.what} ({release.commit})")
    dev, bundles = builds(root)
    for build_line in dev:
        release = _made(made, build_line.project, build_line.release, root)
        what = f"a development build of release {build_line.release}, {release.what}"
        made[build_line.project, build_line.version] = _Made(release.classes, release.sources, what)
    published: dict[str, list[str]] = {}
    for (project, version), release in made.items():
        _publish(top, project, version, release, f"{project} at {release.what}")
        published.setdefault(project, []).append(version)
        log.append(f"{names.STANDIN_GROUP}:{project}:{version} <- {release.what}")
    for bundle in bundles:
        for version, carried in bundle.versions:
            own, inside = (
                _made(made, bundle.project, version, root),
                _made(made, bundle.carried, carried, root),
            )
            about = (
                f"{bundle.project} {version} with {names.STANDIN_GROUP}:{bundle.carried}:{carried} bundled "
                "(its classes and sources inside)"
            )
            both = _Made(own.classes | inside.classes, own.sources | inside.sources, about)
            _publish(top, bundle.artifact, version, both, about)
            published.setdefault(bundle.artifact, []).append(version)
            log.append(f"{names.STANDIN_GROUP}:{bundle.artifact}:{version} <- {about}")
    for artifact, listed in published.items():
        ordered = sorted(listed, key=cmp_to_key(gradle_compare))
        where = artifact_dir(names.STANDIN_GROUP, artifact)
        _put(top, f"{where}/maven-metadata.xml", metadata(names.STANDIN_GROUP, artifact, ordered))
    by_artifact: dict[tuple[str, str], list[str]] = {}
    for artifact in third_party(root):
        jar = debian_jar(artifact)
        if jar is None:
            raise ContentError(
                f"{root / names.STANDIN_THIRD_PARTY}: {artifact.coordinates}: no jar of Debian's "
                f"{artifact.package} here (apt-get install {artifact.package})"
            )
        where = artifact_dir(artifact.group, artifact.artifact)
        stem = f"{where}/{artifact.version}/{artifact.artifact}-{artifact.version}"
        about = f"copied from Debian's {artifact.package} ({jar.name})"
        _put(
            top,
            f"{stem}.pom",
            pom(artifact.group, artifact.artifact, artifact.version, artifact.dependencies, about),
        )
        _put(top, f"{stem}.jar", jar.read_bytes())
        by_artifact.setdefault((artifact.group, artifact.artifact), []).append(artifact.version)
        log.append(f"{artifact.coordinates} <- {jar}")
    for (group, name), versions in by_artifact.items():
        _put(top, f"{artifact_dir(group, name)}/maven-metadata.xml", metadata(group, name, versions))
    return log
