"""Typed records (dataclasses) to and from JSON objects, in the order their fields are declared.

The run records (`kotlin_bench.core.record`) are dataclasses whose JSON is a contract: `result.json` and
`work.json` keep their keys, their order and their values from one release to the next. `to_json` writes a
dataclass as a JSON object with a key per field, in declaration order; `from_json` reads one back, checking
each value against its field's type (`ShapeError` names the field when it is not). A field's metadata
changes how it is written:

- `json_key("name")`: its JSON key is `name`, not the field's;
- `FLAT`: its value (a dataclass) is written as the enclosing object's own keys (composition, flattened);
- `EXTRA`: a `dict[str, Any]` of the keys a reader did not know, written back after the known ones (an
  older or newer file round-trips);
- `UNWRITTEN`: kept in memory only;
- `OMITTED_WHEN_NONE`: not written when None (a class that sets `SPARSE = True` treats every field so: a
  report without `counts` writes none, and its empty value is `{}`);
- `NONE_IS_EMPTY`: None is written as `{}`, and `{}` is read as None (a value that is there or not).
 Enum values are written as their values; a `dict`
keyed by an enum keeps keys outside the enum as they are (an open vocabulary). Nothing else is converted:
an int stays an int where a float is declared, so that a number is written back as it was read.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import Any, Union

FLAT = {"flat": True}
EXTRA = {"extra": True}
UNWRITTEN = {"unwritten": True}
OMITTED_WHEN_NONE = {"omitted_when_none": True}
NONE_IS_EMPTY = {"none_is_empty": True}


def json_key(name: str) -> dict[str, str]:
    """Field metadata: the field's JSON key."""
    return {"key": name}


class ShapeError(ValueError):
    """A JSON value that is not of its field's type; the message names the field (`where`)."""


class _Wrong(Exception):
    """A value not of its type, on its way up to the reader that names the file (then a ShapeError)."""

    def __init__(self, message: str) -> None:
        self.message, self.path = message, ""

    def at(self, segment: str) -> _Wrong:
        self.path = segment + self.path
        return self


def _expected(what: str, value: Any) -> _Wrong:
    return _Wrong(f"expected {what}, not {type(value).__name__} {str(value)[:40]!r}")


# --------------------------------------------------------------------------- a dataclass's plan

VALUE, FLATTENED, EXTRAS = "value", "flat", "extra"


@dataclass(frozen=True)
class _Field:
    """How one field is written and read (computed once per class)."""

    name: str
    key: str
    mode: str  # VALUE, FLATTENED (a dataclass whose keys are the enclosing object's) or EXTRAS
    omitted_when_none: bool
    none_is_empty: bool
    required: bool
    read: Callable[[Any], Any]
    part: type | None = None  # the dataclass of a FLATTENED field


@cache
def _plan(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls)
    sparse = bool(getattr(cls, "SPARSE", False))
    plan = []
    for f in dataclasses.fields(cls):
        meta = f.metadata
        if meta.get("unwritten"):
            continue
        mode = EXTRAS if meta.get("extra") else FLATTENED if meta.get("flat") else VALUE
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        plan.append(
            _Field(
                name=f.name,
                key=meta.get("key", f.name),
                mode=mode,
                omitted_when_none=sparse or bool(meta.get("omitted_when_none")),
                none_is_empty=bool(meta.get("none_is_empty")),
                required=required,
                read=_reader(hints[f.name]) if mode == VALUE else _identity,
                part=hints[f.name] if mode == FLATTENED else None,
            )
        )
    return tuple(plan)


@cache
def _keys(cls: type) -> frozenset[str]:
    """The JSON keys a dataclass reads (its flattened parts' too)."""
    found: set[str] = set()
    for f in _plan(cls):
        if f.mode == FLATTENED:
            assert f.part is not None
            found |= _keys(f.part)
        elif f.mode == VALUE:
            found.add(f.key)
    return frozenset(found)


# --------------------------------------------------------------------------- writing

_SCALAR_TYPES = (str, int, float, bool)


def to_json(value: Any) -> Any:
    """`value` as JSON data: a dataclass as an object, an enum as its value, containers element-wise."""
    if value is None or type(value) in _SCALAR_TYPES:
        return value
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {(k.value if isinstance(k, Enum) else k): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value)
    return value


def _object(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for f in _plan(type(obj)):
        value = getattr(obj, f.name)
        if f.mode == FLATTENED:
            out.update(_object(value))
        elif f.mode == EXTRAS:
            extra = value
        elif value is not None:
            out[f.key] = to_json(value)
        elif f.none_is_empty:
            out[f.key] = {}
        elif not f.omitted_when_none:
            out[f.key] = None
    for k, v in extra.items():
        out.setdefault(k, v)
    return out


# --------------------------------------------------------------------------- reading


def from_json(cls: type[Any], data: Any, where: str) -> Any:
    """A `cls` (a dataclass) from a JSON object; keys it does not know go to its `EXTRA` field, if any, or
    are ignored. Raises ShapeError naming the first value that is not of its field's type."""
    try:
        return _read_object(cls, data)
    except _Wrong as wrong:
        raise ShapeError(f"{where}{wrong.path}: {wrong.message}") from None


def convert(tp: Any, value: Any, where: str) -> Any:
    """`value` (JSON data) as the type `tp`: dataclasses, enums, lists, tuples, dicts, scalars, Optional."""
    try:
        return _reader(tp)(value)
    except _Wrong as wrong:
        raise ShapeError(f"{where}{wrong.path}: {wrong.message}") from None


def _read_object(cls: type[Any], data: Any) -> Any:
    if not isinstance(data, dict):
        raise _expected("an object", data)
    values: dict[str, Any] = {}
    missing = []
    for f in _plan(cls):
        if f.mode == VALUE:
            if f.key in data:
                value = data[f.key]
                if f.none_is_empty and value == {}:
                    value = None
                try:
                    values[f.name] = f.read(value)
                except _Wrong as wrong:
                    raise wrong.at(f".{f.key}") from None
            elif f.required:
                missing.append(f.key)
        elif f.mode == FLATTENED:
            assert f.part is not None
            values[f.name] = _read_object(f.part, data)
        else:
            known = _keys(cls)
            values[f.name] = {k: v for k, v in data.items() if k not in known}
    if missing:
        raise _Wrong(f"fields {missing} are missing")
    return cls(**values)


def _identity(value: Any) -> Any:
    return value


SCALARS: dict[Any, tuple[tuple[type, ...], str]] = {
    float: ((int, float), "a number"),
    int: ((int,), "an integer"),
    bool: ((bool,), "true or false"),
    str: ((str,), "a string"),
}


@cache
def _reader(tp: Any) -> Callable[[Any], Any]:
    """How to read JSON data as the type `tp` (made once per type)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return _identity
    if origin in (Union, types.UnionType):
        (inner,) = [a for a in args if a is not type(None)]
        read_inner = _reader(inner)
        return lambda value: None if value is None else read_inner(value)
    if dataclasses.is_dataclass(tp):
        return lambda value: _read_object(tp, value)  # type: ignore[arg-type]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _enum_reader(tp)
    if origin in (list, tuple):
        return _list_reader(_reader(args[0]), origin)
    if origin is dict:
        return _dict_reader(args[0], _reader(args[1]))
    if tp not in SCALARS:
        raise TypeError(f"the codec cannot read a {tp!r}")
    allowed, what = SCALARS[tp]
    exact = tp is bool

    def read_scalar(value: Any) -> Any:
        if not isinstance(value, allowed) or (isinstance(value, bool) and not exact):
            raise _expected(what, value)
        return value

    return read_scalar


def _enum_reader(tp: type[Enum]) -> Callable[[Any], Any]:
    def read_enum(value: Any) -> Any:
        try:
            return tp(value)
        except ValueError:
            raise _Wrong(f"{value!r} is not one of {', '.join(str(m.value) for m in tp)}") from None

    return read_enum


def _list_reader(read_item: Callable[[Any], Any], origin: Any) -> Callable[[Any], Any]:
    def read_list(value: Any) -> Any:
        if not isinstance(value, list):
            raise _expected("a list", value)
        items = []
        for i, item in enumerate(value):
            try:
                items.append(read_item(item))
            except _Wrong as wrong:
                raise wrong.at(f"[{i}]") from None
        return items if origin is list else tuple(items)

    return read_list


def _dict_reader(key_type: Any, read_value: Callable[[Any], Any]) -> Callable[[Any], Any]:
    members = (
        {m.value: m for m in key_type} if isinstance(key_type, type) and issubclass(key_type, Enum) else {}
    )

    def read_dict(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _expected("an object", value)
        found = {}
        for k, v in value.items():
            try:
                found[members.get(k, k)] = read_value(v)  # a key outside an enum stays as it is
            except _Wrong as wrong:
                raise wrong.at(f".{k}") from None
        return found

    return read_dict
