"""A config read against its JSON schema (workflow/schemas/config.schema.yaml).

- `coerce_command_line`: values given with `snakemake --config` in nested form arrive as
  strings (Snakemake reads them with YAML's BaseLoader); where the schema wants a number, a
  boolean or null, the string is read as YAML, so `carry="{fig2: {runs: 2}}"` means runs = 2.
- `unknown_keys`: a key the schema does not know, with the closest known key (difflib).
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Mapping
from typing import Any

import yaml

from .config import key_path

_SCALAR_TYPES: dict[str, type | tuple[type, ...]] = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None)}


def _resolve(schema: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with its local $ref ("#/$defs/name") followed."""
    while isinstance(schema, dict) and "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema if isinstance(schema, dict) else {}


def _types(schema: dict[str, Any], root: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        types |= _types(_resolve(branch, root), root)
    return types


def _child_schema(schema: dict[str, Any], key: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(key, int):
        return _resolve(schema.get("items", {}), root)
    properties = schema.get("properties", {})
    if key in properties:
        return _resolve(properties[key], root)
    extra = schema.get("additionalProperties")
    return _resolve(extra, root) if isinstance(extra, dict) else {}


def _coerced(value: str, types: set[str]) -> Any:
    if not types or "string" in types:
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    for name in types:
        wanted = _SCALAR_TYPES.get(name)
        if wanted and isinstance(parsed, wanted) and not (name != "boolean" and isinstance(parsed, bool)):
            return parsed
    return value


def coerce_command_line(config: dict[str, Any], command_line: Mapping[str, Any] | None,
                        schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` in which each string that came from --config (`command_line`) and
    stands where the schema wants a number, boolean or null is read as YAML. Strings from
    config files are left as written: a file says what it means."""
    result = copy.deepcopy(config)

    def walk(given: Any, target: Any, where: dict[str, Any]) -> Any:
        if isinstance(given, dict) and isinstance(target, dict):
            for key, value in given.items():
                if key in target:
                    target[key] = walk(value, target[key], _child_schema(where, key, schema))
            return target
        if isinstance(given, list) and isinstance(target, list) and len(given) == len(target):
            return [walk(g, t, _child_schema(where, i, schema))
                    for i, (g, t) in enumerate(zip(given, target))]
        if isinstance(given, str) and given == target:
            return _coerced(given, _types(where, schema))
        return target

    return walk(dict(command_line or {}), result, _resolve(schema, schema))


def unknown_keys(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """One line per key the schema does not allow, with the closest allowed key if any."""
    problems: list[str] = []

    def walk(value: Any, where: dict[str, Any], path: list[Any]) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, _child_schema(where, i, schema), path + [i])
            return
        if not isinstance(value, dict):
            return
        properties = where.get("properties", {})
        closed = where.get("additionalProperties") is False
        for key, item in value.items():
            if closed and key not in properties:
                line = f"config key '{key_path(path + [key])}' is not a setting"
                close = difflib.get_close_matches(str(key), list(properties), n=1, cutoff=0.6)
                line += (f"; did you mean '{key_path(path + [close[0]])}'?" if close else
                         f" (known here: {', '.join(sorted(properties))})")
                problems.append(line)
                continue
            walk(item, _child_schema(where, key, schema), path + [key])

    walk(config, _resolve(schema, schema), [])
    return problems
