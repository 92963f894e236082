"""Configuration: validation against the JSON schema (filling its defaults) with errors that
name the offending key, and the environment variables that stand in for config keys."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator, validators

ENV_OVERRIDES = {"data_mirror": "RUBRICLAB_DATA_MIRROR"}


class ConfigError(ValueError):
    pass


# Why not snakemake.utils.validate(config, schema, set_default=True): it fills the same
# defaults (tests/test_config.py checks both on the shipped configs), but it stops at the first
# violation and reports it as jsonschema's full message, the offending sub-schema printed
# whole; it takes the schema as a path relative to the calling Snakefile and mutates the
# config in place, sharing the schema's default objects with it. Here every violation (up to
# ten) is one line naming its key, the schema is a dict, and the config is a fresh deep copy.
# Defaults are filled only into objects: Snakemake's would call setdefault on a null section
# whose properties have defaults (the schema avoids those, see hub_source).
def _with_defaults(validator_class: Any) -> Any:
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator: Any, properties: dict, instance: Any, schema: dict) -> Any:
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})


DefaultFillingValidator = _with_defaults(Draft202012Validator)


def key_path(path: Any) -> str:
    parts: list[str] = []
    for part in path:
        parts.append(f"[{part}]" if isinstance(part, int) else (("." if parts else "") + str(part)))
    return "".join(parts) or "<top level>"


def validate_config(config: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of `config` with schema defaults filled in; raise ConfigError on the first
    violations, each naming its key (e.g. "carry.fig2.runs"), and on any string holding what no
    config string may (`string_problems`)."""
    completed = copy.deepcopy(config)
    validator = DefaultFillingValidator(schema)
    strings = string_problems(completed)  # before the defaults: they hold nothing refused
    errors = sorted(validator.iter_errors(completed), key=lambda e: list(e.absolute_path))
    told = {(tuple(e.absolute_path), e.instance) for e in errors if e.validator == "pattern"}
    lines = [_error_line(e) for e in errors] + [
        line for path, value, line in strings if (tuple(path), value) not in told]
    if lines:
        lines = lines[:10]
        if any(e.validator == "required" and not e.absolute_path for e in errors):
            lines.append(
                "a config file stands alone (only the schema's defaults are beneath it): to "
                "change a few keys of a shipped config, name it first, e.g. --configfile "
                "config/config.yaml yours.yaml")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return completed


_REQUIRED = re.compile(r"^'(.+)' is a required property$")


def _error_line(error: Any) -> str:
    """One violation as a line naming its key. A missing key is named itself (not its parent
    section), and an over-long string by its length rather than printed whole."""
    path = list(error.absolute_path)
    missing = _REQUIRED.match(error.message) if error.validator == "required" else None
    if missing:
        return (f"config key '{key_path(path + [missing.group(1)])}' is missing; it has no "
                f"default, so the config must give it (config/config.yaml shows one, and "
                f"workflow/schemas/config.schema.yaml describes it)")
    if error.validator == "maxLength" and isinstance(error.instance, str):
        return (f"config key '{key_path(path)}': {len(error.instance)} characters "
                f"({error.instance[:40]!r}...), at most {error.validator_value}")
    if error.validator == "pattern" and isinstance(error.instance, str):
        return _pattern_line(error, path)
    return f"config key '{key_path(path)}': {error.message}"


def _pattern_line(error: Any, path: list[Any]) -> str:
    """A string a pattern refuses for a character no name may hold (a control or formatting
    character, whitespace, < or >): that character named, and what the string may hold (the
    description beside the pattern, e.g. $defs.model_string's). Any other: jsonschema's
    message."""
    value, pattern = error.instance, error.validator_value
    refused = next((c for c in value if _odd_in_a_name(c)
                    and re.search(pattern, "a" + c) is None), None)
    if refused is None:
        return f"config key '{key_path(path)}': {error.message}"
    what = f"holds {character_name(refused)}"
    if "propertyNames" in error.schema_path:
        where = f"config key '{key_path(path)}' has a key {_shown(value)} that {what}"
    else:
        where = f"config key '{key_path(path)}': {_shown(value)} {what}"
    accepts = " ".join(str(error.schema.get("description", "")).split())
    return f"{where}; {accepts}" if accepts else where


def _odd_in_a_name(char: str) -> bool:
    return char in "<>" or char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def character_name(char: str) -> str:
    """How an error names one character: 'a newline (U+000A)', "'<' (U+003C)",
    'U+202E RIGHT-TO-LEFT OVERRIDE'."""
    code = f"U+{ord(char):04X}"
    plain = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", " ": "a space"}
    if char in plain:
        return f"{plain[char]} ({code})"
    if unicodedata.category(char) == "Cc":
        return f"a control character ({code})"
    if char.isprintable() and not char.isspace():
        return f"{char!r} ({code})"
    return f"{code} {unicodedata.name(char, '(unnamed)')}"


def _shown(value: str, limit: int = 60) -> str:
    return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."


# What no config string may hold, whatever it names (model strings, labels and titles are held
# to more by the schema's $defs model_string and display_name): a line break or other control
# character, which reStructuredText and YAML read as structure; and "</", which would end the
# <script> element in which Snakemake's report.html keeps each job's params (unescaped JSON).
_LINE_SEPARATORS = ("\u2028", "\u2029")


def string_problem(value: str) -> str | None:
    """What is wrong with `value` as any config string, or None."""
    for char in value:
        if unicodedata.category(char) == "Cc" or char in _LINE_SEPARATORS:
            return (f"holds {character_name(char)}; no config string may hold a line break or "
                    "other control character")
    if "</" in value:
        return ("holds '</'; no config string may (report.html keeps each job's params in a "
                "<script> element, which '</' would end)")
    return None


def string_problems(config: Any) -> list[tuple[list[Any], str, str]]:
    """(key path, string, error line) for every string of `config`, key or value, that
    `string_problem` refuses."""
    found: list[tuple[list[Any], str, str]] = []

    def walk(value: Any, path: list[Any]) -> None:
        if isinstance(value, str):
            problem = string_problem(value)
            if problem:
                found.append((path, value,
                              f"config key '{key_path(path)}': {_shown(value)} {problem}"))
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = string_problem(key) if isinstance(key, str) else None
                if problem:
                    found.append((path, key, f"config key '{key_path(path)}' has a key "
                                             f"{_shown(key)} that {problem}"))
                walk(item, path + [key])
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, path + [i])

    walk(config, [])
    return found


def load_yaml(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def apply_env_overrides(config: dict[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Environment variables fill config keys that the config leaves unset (null or absent)."""
    environ = os.environ if environ is None else environ
    updated = dict(config)
    for key, variable in ENV_OVERRIDES.items():
        if updated.get(key) in (None, "") and environ.get(variable):
            updated[key] = environ[variable]
    return updated


# Where the data and the cache are read from changes no request.
_NOT_DIGESTED = ("data_mirror", "cache_dir")


def config_digest(config: dict[str, Any]) -> str:
    """Of the effective config: a plan (rubriclab.plan, results/plan/plan.json) is the plan of
    exactly this config."""
    kept = {k: v for k, v in config.items() if k not in _NOT_DIGESTED}
    canonical = json.dumps(kept, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def config_overrides(entries: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """--config KEY=VALUE arguments as Snakemake reads them: its own parser
    (snakemake.cli.parse_config: an int, a float, True/False, else YAML read with BaseLoader,
    nested values staying strings; KEY= is null). ConfigError for an argument it refuses."""
    from snakemake.cli import parse_config

    try:
        return parse_config(list(entries))
    except ValueError as exc:
        raise ConfigError(f"--config takes KEY=VALUE (KEY an identifier), got "
                          f"{' '.join(map(repr, entries))}: {exc}") from None


def merge_config(into: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """`update` merged into `into` (and returned), nested mappings key by key, as Snakemake
    merges config files and --config (snakemake.utils.update_config)."""
    from snakemake.utils import update_config

    update_config(into, update)
    return into


def merged_config(configfiles: list[str | Path] | tuple[str | Path, ...],
                  config_args: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The config files read and merged in order as Snakemake reads and merges them
    (snakemake.common.configfile.load_configfile, update_config), the --config arguments
    (`config_overrides`) on top; nothing validated. ConfigError for a missing file."""
    from snakemake.common.configfile import load_configfile

    merged: dict[str, Any] = {}
    for path in configfiles:
        if not Path(path).is_file():
            raise ConfigError(f"no config file {path}")
        merge_config(merged, load_configfile(Path(path)))
    return merge_config(merged, config_overrides(config_args))


def write_effective_config(config: dict[str, Any], path: str | Path) -> None:
    """The validated config, as YAML, with a header saying what it is."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("# The configuration this run used: the named config file(s) over the schema's\n"
                 "# defaults, then --config overrides (written by rule effective_config).\n")
        yaml.safe_dump(config, fh, sort_keys=True)
