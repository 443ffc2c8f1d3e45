"""The workflow's configuration checked once, with one short message per mistake.

`check_config` validates the merged config against `workflow/schemas/config.schema.yaml` (jsonschema) and
turns the first error into one line that names the config file the key came from, the key path, the bad
value, the allowed keys or values and the closest match (`attemps` -> `attempts`; `kind: claude-code` ->
`kind: harbor, harbor_agent: claude-code`). rules/common.smk calls `settings_or_exit` once per invocation
(the one check, which also fills in the schema's defaults: the config's typed `Settings`) and then
`plan_or_exit` (the `Plan`); either gives the message and exit status 1 instead of Snakemake's traceback.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import jsonschema
import yaml

from kotlin_bench.core.render import error_line
from kotlin_bench.core.suggest import did_you_mean
from kotlin_bench.core.yamlfile import YamlFileError, read_yaml
from kotlin_bench.dag.plan import LegacyResultsError, Plan
from kotlin_bench.dag.settings import Settings
from kotlin_bench.engine.egress import EgressError
from kotlin_bench.engine.engine import EngineError
from kotlin_bench.engine.registry import RegistryError
from kotlin_bench.runs.agents import kind_hint

SCHEMA = Path("workflow/schemas/config.schema.yaml")
MAX_VALUE = 60


class ConfigError(ValueError):
    """A configuration that cannot be used; the message is the one line to show."""


def key_path(path: Iterable[Any]) -> str:
    """`agents[0].kind` from jsonschema's deque of keys and indexes."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(the top level)"


def _value(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE] + "..."


def _lookup(data: Any, path: Sequence[Any]) -> bool:
    for part in path:
        if (isinstance(part, int) and isinstance(data, list) and part < len(data)) or (
            isinstance(data, dict) and part in data
        ):
            data = data[part]
        else:
            return False
    return True


def source_file(
    path: Sequence[Any], configfiles: Sequence[Path], overrides: dict[str, Any] | None = None
) -> str:
    """Where `path` was set: `--config` when the command line set it (it wins over every file), else the
    last config file (they are merged in order) that sets it, else the last one given."""
    if path and overrides and _lookup(overrides, path[:1]):
        return "--config"
    found = None
    for file in configfiles:
        try:
            data = yaml.safe_load(Path(file).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            continue
        if _lookup(data, path):
            found = file
    chosen = found or (configfiles[-1] if configfiles else "config")
    return str(chosen)


def _allowed(schema: dict[str, Any]) -> list[str]:
    return sorted((schema.get("properties") or {}).keys())


def describe(error: jsonschema.ValidationError) -> tuple[list[Any], str]:
    """(the key path at fault, what is wrong with it and what would be right)."""
    path = list(error.absolute_path)
    schema, value = error.schema if isinstance(error.schema, dict) else {}, error.instance
    if error.validator == "additionalProperties" and isinstance(value, dict):
        allowed = _allowed(schema)
        unknown = sorted(k for k in value if k not in allowed)
        key = unknown[0] if unknown else "?"
        hint = did_you_mean(key, allowed) or ""
        return [*path, key], f"unknown key{hint}; the keys here are {', '.join(allowed)}"
    if error.validator == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else str(error.message)
        return path, f"`{missing}:` is missing (required: {', '.join(schema.get('required', []))})"
    if error.validator == "enum":
        allowed = [str(v) for v in error.validator_value]
        hint = kind_hint(value) if path[-1:] == ["kind"] else None
        hint = f"; {hint}" if hint else did_you_mean(str(value), allowed)
        return path, f"`{_value(value)}` is not one of {', '.join(allowed)}{hint}"
    if error.validator in ("oneOf", "pattern") and "description" in schema:
        return path, f"`{_value(value)}` is not allowed: {schema['description']}"
    if error.validator == "not" and isinstance(error.validator_value, dict):
        return path, str(error.validator_value.get("description") or f"`{_value(value)}` is not allowed")
    if error.validator == "type":
        return path, f"`{_value(value)}` is not of type {error.validator_value}"
    return path, f"`{_value(value)}`: {error.message}"


def read_schema(path: Path) -> dict[str, Any]:
    """The config schema, parsed once per process while the file is unchanged (the CLI and the tests check
    configs more than once; libyaml's parser where PyYAML has it: the pure-Python one takes a third of a
    second for this file)."""
    stat = path.stat()
    return _parsed_schema(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed_schema(path: str, _mtime_ns: int, _size: int) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)


@functools.cache
def _filling() -> type[jsonschema.protocols.Validator]:
    """The schema's validator that also fills in the defaults it states (as Snakemake's `validate` does)."""
    base = jsonschema.Draft202012Validator
    check_properties = base.VALIDATORS["properties"]

    def properties(validator: Any, props: dict[str, Any], instance: Any, schema: dict[str, Any]) -> Any:
        if isinstance(instance, dict):
            for name, sub in props.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(name, sub["default"])
        yield from check_properties(validator, props, instance, schema)

    return jsonschema.validators.extend(base, {"properties": properties})  # type: ignore[no-any-return]


def check_config(
    config: dict[str, Any],
    configfiles: Sequence[Path],
    schema_path: Path,
    overrides: dict[str, Any] | None = None,
    *,
    fill_defaults: bool = False,
) -> None:
    """Raise ConfigError with one line for the first schema violation of `config` (key order); `overrides`
    are the command line's `--config` values. `fill_defaults`: the same one pass also fills the schema's
    defaults into `config` (the workflow's check, `settings_or_exit`)."""
    kind = _filling() if fill_defaults else jsonschema.Draft202012Validator
    validator = kind(read_schema(Path(schema_path)))
    errors = sorted(
        validator.iter_errors(config), key=lambda e: (len(e.absolute_path), list(map(str, e.path)))
    )
    if not errors:
        return
    path, what = describe(errors[0])
    raise ConfigError(f"{source_file(path, configfiles, overrides)}: {key_path(path)}: {what}")


def load_plan(config: dict[str, Any], configfiles: Sequence[Path], root: Path) -> Plan:
    """The checked config's plan; ConfigError names the config file for every mistake found in it."""
    check_config(config, configfiles, root / SCHEMA)
    return _plan(config, configfiles, root)


def _plan(
    config: dict[str, Any], configfiles: Sequence[Path], root: Path, settings: Settings | None = None
) -> Plan:
    try:
        return Plan.from_config(config, root, settings.egress if settings else None)
    except ValueError as exc:  # agents, predictions, task ids, base images: the message names the key
        raise ConfigError(f"{source_file([], configfiles)}: {exc}") from None


def _files(configfiles: Sequence[str | Path], root: Path) -> list[Path]:
    return [Path(f) for f in configfiles] or [root / "config.yaml"]


def check_yaml_or_exit(path: Path) -> None:
    """For rules/common.smk, before Snakemake reads the workflow's config file: a file that is not YAML is
    one line naming it, its line and column (Snakemake's own message names neither)."""
    if path.is_file():
        try:
            read_yaml(path)
        except YamlFileError as exc:
            fail(str(exc))


def settings_or_exit(
    config: dict[str, Any],
    configfiles: Sequence[str | Path],
    root: Path,
    overrides: dict[str, Any] | None = None,
) -> Settings:
    """For rules/common.smk, the one check of the config in an invocation: its `Settings`, with the schema's
    defaults filled into `config`; or the one-line message on stderr and exit status 1. `overrides` are
    the command line's `--config` values (a mistake there is blamed on `--config`)."""
    try:
        check_config(config, _files(configfiles, root), root / SCHEMA, overrides, fill_defaults=True)
        return Settings.of(config)
    except ConfigError as exc:
        fail(str(exc))
    except (ValueError, EngineError, RegistryError, EgressError) as exc:  # a section's own check: it names it
        fail(f"{source_file([], _files(configfiles, root))}: {exc}")


def plan_or_exit(
    config: dict[str, Any], configfiles: Sequence[str | Path], root: Path, settings: Settings
) -> Plan:
    """For rules/common.smk, after `settings_or_exit` checked the config: the plan, or the one-line message
    on stderr and exit status 1 (a mistake the schema cannot see, or results of layout 1 that must be
    migrated first)."""
    try:
        plan = _plan(config, _files(configfiles, root), root, settings)
        plan.refuse_legacy_results()
    except (ConfigError, LegacyResultsError) as exc:
        fail(str(exc))
    return plan


def fail(message: str) -> NoReturn:
    print(error_line(message), file=sys.stderr)
    raise SystemExit(1)
