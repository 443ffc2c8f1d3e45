"""A URL read into the places that can name something: its path's segments and its (key, value) pairs
(stdlib only: copied, with `retrieval.py`, into the recording egress proxy's container).

Every place is read after repeated percent-decoding (a decoded `?` or `#` starts a query or fragment),
backslashes as slashes, `//`, `/./` and `/../` resolved; `;params` are cut from their path segment and read
as pairs (matrix parameters, `;jsessionid=`); the query is split at `&` and `;`; the fragment is read as
pairs and, when it holds a path, as a path too.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

MAX_DECODE = 10  # rounds of percent-decoding at most


def decode(text: str) -> str:
    """Percent-decoded until nothing changes, backslashes as slashes."""
    for _ in range(MAX_DECODE):
        if "%" not in text:
            break
        decoded = unquote(text)
        if decoded == text:
            break
        text = decoded
    return text.replace("\\", "/")


def normalise_path(path: str) -> str:
    """A decoded path with `//`, `/./` and `/../` resolved (never above the root)."""
    path = decode(path)
    if "//" not in path and "/." not in path and path.startswith("/"):
        return path  # nothing to resolve
    normal = "/" + posixpath.normpath("/" + path.lstrip("/")).lstrip("/")
    return normal + ("/" if path.endswith("/") and normal != "/" else "")


@dataclass
class Request:
    """One request read into the places that can name something: path segments and (key, value) pairs."""

    host: str
    segments: list[str] = field(default_factory=list)
    directory: bool = False  # the path ends with "/" (a listing)
    pairs: list[tuple[str, str]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)  # the fragment, read as a path too
    named: tuple[str, str] | None = (
        None  # set by the rule: an artifact the path lists (a query may add a version)
    )


def read_pairs(query: str) -> list[tuple[str, str]]:
    """`k=v` items split at `&` and `;`, each key and value percent-decoded (keys lower-cased)."""
    out = []
    for item in re.split(r"[&;]", query):
        if not item:
            continue
        key, _, value = item.partition("=")
        out.append((decode(key).strip().lower(), decode(value)))
    return out


def read_request(host: str, path: str) -> Request:
    """`path` as sent (with its query and maybe a fragment), read into a `Request`."""
    request = Request(host.lower().rstrip("."))
    raw, _, fragment = path.partition("#")
    raw, _, query = raw.partition("?")
    decoded = decode(raw)
    decoded, _, more_fragment = decoded.partition("#")
    decoded, _, more_query = decoded.partition("?")
    normal = normalise_path(decoded)
    request.directory = normal.endswith("/")
    if ";" not in normal:
        request.segments = [s for s in normal.split("/") if s]
    for segment in normal.split("/") if ";" in normal else ():
        name, *params = segment.split(";")
        request.pairs.extend(p for param in params for p in read_pairs(param))
        if name:
            request.segments.append(name)
    for text in (query, more_query, fragment, more_fragment):
        if text:
            request.pairs.extend(read_pairs(text))
    for text in (fragment, more_fragment):
        if "/" in decode(text):
            request.texts.append(decode(text))
    return request
