"""Images in a container registry: push by digest, pull by digest, and the check that a tag was not moved.

With `registry: {url: host[:port][/namespace]}` in the config, every image the workflow builds is pushed
to `<url>/<image repository>:<tag>` (e.g. `127.0.0.1:5000/kotlin-bench/examples_calc:pr-4`) and its
sentinel records the pushed reference `<url>/<repository>@sha256:<manifest digest>`
(`kotlin_bench.engine.images.Sentinel.pushed`). A job on any machine then pulls exactly that digest. A tag
re-pushed with other content keeps serving the old digest on a pull by digest, so the tag is checked too:
if it names another digest now, the image is refused (someone changed what the registry offers under our
name after it was built). Credentials and TLS are the engine's (`docker login`, its insecure-registries;
Podman's `registries.conf`); plain HTTP on 127.0.0.0/8 needs no setting on Docker, an `insecure` entry
on Podman (scripts/setup_podman.sh writes one for 127.0.0.1:5000).

Errors of the engine's push stream do not raise in the Docker SDK: every event is checked here. Podman's
push stream has no `aux` digest, only Docker's status line `<tag>: digest: sha256:... size: N`, which
both engines print; and Podman's Docker API cannot say which digest a registry serves for a tag
(`distribution/.../json` is missing), so the tag's manifest digest is asked of the registry itself
(`HEAD /v2/<repository>/manifests/<tag>`, anonymously; plain HTTP only for loopback hosts). The two
engines push different manifests of the same image (Docker's v2 schema 2, Podman's OCI), so their
digests differ; the image id is the same.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import docker

    from kotlin_bench.engine.engine import Engine

_DIGEST_RE = re.compile(r"digest: (sha256:[0-9a-f]{64})")
MANIFEST_TYPES = (
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.index.v1+json",
)
_URL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*$")


class RegistryError(RuntimeError):
    """A push, a pull or a check against the registry failed; the message names the image and the reference."""


@dataclass(frozen=True)
class Registry:
    """Where images are pushed: `host[:port][/namespace]`."""

    url: str

    @classmethod
    def from_config(cls, section: dict[str, Any] | None) -> Registry | None:
        if not section:
            return None
        url = str(section.get("url", "")).rstrip("/")
        if not _URL_RE.match(url):
            raise RegistryError(f"config registry.url: expected host[:port][/namespace], got {url!r}")
        return cls(url)

    def target(self, image: str) -> tuple[str, str]:
        """The registry repository and tag of one of our images (`kotlin-bench/<repo>:<tag>`)."""
        repository, tag = image.rsplit(":", 1)
        return f"{self.url}/{repository}", tag

    def holds(self, reference: str) -> bool:
        return reference.startswith(f"{self.url}/")


def split_reference(reference: str) -> tuple[str, str]:
    """`<repository>@sha256:...` -> (repository, digest)."""
    repository, sep, digest = reference.partition("@")
    if not sep or not digest.startswith("sha256:"):
        raise RegistryError(f"{reference!r} is not a reference by digest (<repository>@sha256:...)")
    return repository, digest


def push(engine: Engine, registry: Registry, image: str, image_id: str, log: IO[str]) -> str:
    """Push the image `image_id` (built as `image`) to the registry; return `<repository>@<digest>`."""
    import docker

    client = engine.client
    repository, tag = registry.target(image)
    local = client.images.get(image_id)
    local.tag(repository, tag)
    digest = None
    try:
        for event in client.images.push(repository, tag=tag, stream=True, decode=True):
            if "error" in event:
                raise RegistryError(f"pushing {image} to {repository}:{tag} failed: {event['error']}")
            if "progressDetail" not in event or not event["progressDetail"]:
                log.write(f"push {repository}:{tag}: {event.get('status', '')} {event.get('id', '')}\n")
            found = _DIGEST_RE.search(str(event.get("status", "")))
            digest = (event.get("aux") or {}).get("Digest") or (found[1] if found else digest)
    except docker.errors.APIError as exc:
        raise RegistryError(
            f"pushing {image} to {repository}:{tag} failed: {exc.explanation or exc}"
        ) from None
    finally:
        _untag(client, image_id, f"{repository}:{tag}")
    if not digest:
        raise RegistryError(f"pushing {image} to {repository}:{tag}: the registry returned no digest")
    return f"{repository}@{digest}"


def _untag(client: docker.DockerClient, image_id: str, name: str) -> None:
    """Drop the registry tag that push needed, but never the image's last name (that would delete it)."""
    local = client.images.get(image_id)
    if name in local.tags and len(local.tags) > 1:
        client.images.remove(name, noprune=True)


def tag_digest(engine: Engine, repository: str, tag: str) -> str:
    """The manifest digest the registry serves for `repository:tag` now (asked through Docker, or of the
    registry itself for Podman)."""
    import docker

    if engine.podman:
        return manifest_digest(repository, tag)
    client = engine.client
    try:
        return client.images.get_registry_data(f"{repository}:{tag}").id
    except docker.errors.NotFound:
        raise RegistryError(f"{repository}:{tag} is not in the registry") from None
    except docker.errors.APIError as exc:
        raise RegistryError(
            f"cannot ask the registry for {repository}:{tag}: {exc.explanation or exc}"
        ) from None


def manifest_digest(repository: str, tag: str) -> str:
    """`Docker-Content-Digest` of `HEAD /v2/<name>/manifests/<tag>` at the registry of `repository`
    (`host[:port]/name`): HTTPS, or plain HTTP for a loopback host (as Docker trusts 127.0.0.0/8)."""
    host, _, name = repository.partition("/")
    scheme = "http" if _loopback(host.rsplit(":", 1)[0] if host.count(":") == 1 else host) else "https"
    request = urllib.request.Request(
        f"{scheme}://{host}/v2/{name}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": ", ".join(MANIFEST_TYPES)},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            digest = answer.headers.get("Docker-Content-Digest")
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise RegistryError(f"{repository}:{tag} is not in the registry") from None
        raise RegistryError(
            f"cannot ask the registry for {repository}:{tag}: HTTP {exc.code} {exc.reason}"
        ) from None
    except OSError as exc:
        raise RegistryError(f"cannot ask the registry for {repository}:{tag}: {exc}") from None
    if not digest:
        raise RegistryError(f"the registry named no digest for {repository}:{tag}")
    return digest


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_tag(engine: Engine, reference: str, image: str, where: str) -> None:
    """Refuse an image whose registry tag now names another digest than the one recorded in `where`."""
    repository, recorded = split_reference(reference)
    tag = image.rsplit(":", 1)[1]
    found = tag_digest(engine, repository, tag)
    if found != recorded:
        raise RegistryError(
            f"image {image}: the registry tag {repository}:{tag} names {found}, but {where} recorded "
            f"{recorded} when the image was built; something else was pushed under the tag, so the image "
            f"is refused (delete {where} to rebuild and push it)"
        )


def pull(client: docker.DockerClient, reference: str, image: str, expected_id: str) -> None:
    """Pull `reference` (by digest) and check it is the image that was built (`expected_id`)."""
    import docker

    try:
        pulled = client.images.pull(reference, tag=None)
    except docker.errors.NotFound:
        raise RegistryError(f"image {image}: {reference} is not in the registry") from None
    except docker.errors.APIError as exc:
        raise RegistryError(f"image {image}: pulling {reference} failed: {exc.explanation or exc}") from None
    if pulled.id != expected_id:
        raise RegistryError(f"image {image}: {reference} is image {pulled.id}, but {expected_id} was built")
