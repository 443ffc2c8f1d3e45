"""Files written whole or not at all (a reader never sees a partial result, report or sentinel, and a
full disk leaves no partial file behind), and their digests."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """A temporary path beside `path` to write to; renamed over `path` when the block succeeds and
    removed when it raises (the rename is atomic on one filesystem)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Write `data` (text is UTF-8) to `path` atomically, with file `mode` when given."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        if mode is not None:
            tmp.chmod(mode)


def write_if_changed(path: Path, data: bytes | str) -> bool:
    """Write `data` atomically unless `path` holds it already (its modification time then stays, so that
    nothing made from it is redone); whether it was written."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if Path(path).read_bytes() == raw:
            return False
    except OSError:
        pass
    write_atomic(path, raw)
    return True


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in chunks."""
    sha = hashlib.sha256()
    with Path(path).open("rb") as stream:
        while chunk := stream.read(1 << 20):
            sha.update(chunk)
    return sha.hexdigest()
