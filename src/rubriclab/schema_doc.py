"""config/README.md from the config's JSON schema (workflow/schemas/config.schema.yaml), so the
reference of every key is the schema's own descriptions and defaults and cannot fall behind
it (tests/test_schema_doc.py compares the file with what this renders).

Why not a schema-to-markdown package: the ones on PyPI (json-schema-for-humans,
jsonschema2md) render HTML-like nested blocks per sub-schema; the reference wanted here is one
table per section with dotted key paths, `$defs` rendered once and linked where they are used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

HEADER = """# Configuration reference

Every key a config file may set, with its type, default and meaning, rendered from
`workflow/schemas/config.schema.yaml` by `rubriclab.schema_doc` (regenerate with
`.venv/bin/python -m rubriclab.schema_doc > config/README.md`; a test fails when this file
and the schema differ).

A config file stands alone: `--configfile X` means X over these defaults, and
`config/config.yaml` (the embedded default) is read only when no `--configfile` is given.
Several files may be named (later files win, key by key) and `--config KEY=VALUE` applies on
top. A key not listed here is an error naming the closest known one. Each run writes the
config it used, completed with these defaults, to `results/effective_config.yaml`.

The configs shipped here: `config.yaml` (the embedded default: offline, the local judge),
`fake.yaml` (every model `fake/hash`: the smoke test), `known_truth.yaml` (scripted models
answering from the ground truth, `make known-truth`) and `paper.yaml` (the papers' models and
sizes, API keys needed).
"""


def _type(schema: dict[str, Any]) -> str:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    kind = schema.get("type")
    if kind is None:
        if "oneOf" in schema or "anyOf" in schema:
            return " or ".join(_type(s) for s in schema["oneOf" if "oneOf" in schema else "anyOf"])
        return schema.get("format", "any")
    kinds = kind if isinstance(kind, list) else [kind]
    if "array" in kinds and isinstance(schema.get("items"), dict):
        kinds = [f"array of {_type(schema['items'])}" if k == "array" else k for k in kinds]
    return " or ".join(kinds)


def _anchor(name: str) -> str:
    return name.lower().replace("_", "-")


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(schema: dict[str, Any]) -> str:
    if "default" not in schema:
        return ""
    return _cell(f"`{json.dumps(schema['default'])}`")


def _rows(schema: dict[str, Any], prefix: str) -> list[str]:
    rows = []
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        rows.append(f"| `{path}` | {_type(sub)} | {_default(sub)} | "
                    f"{_cell(sub.get('description', ''))} |")
        rows += _nested(sub, path)
    return rows


def _nested(sub: dict[str, Any], path: str) -> list[str]:
    rows = []
    if "properties" in sub:
        rows += _rows(sub, f"{path}.")
    extra = sub.get("additionalProperties")
    if isinstance(extra, dict):
        key = f"{path}.<name>"
        rows.append(f"| `{key}` | {_type(extra)} | {_default(extra)} | "
                    f"{_cell(extra.get('description', ''))} |")
        rows += _nested(extra, key)
    return rows


def render(schema: dict[str, Any]) -> str:
    table_head = ["| key | type | default | meaning |", "|---|---|---|---|"]
    out = [HEADER, "## Top-level keys", "", *table_head, *_rows(schema, ""), ""]
    for name, sub in schema.get("$defs", {}).items():
        out += [f"## {name}", ""]
        if sub.get("description"):
            out += [_cell(sub["description"]), ""]
        rows = _nested(sub, "")
        if rows:
            out += [*table_head, *(r.replace("| `.", "| `", 1) for r in rows), ""]
        else:
            out += [f"Type: {_type(sub)}.", ""]
    return "\n".join(out)


def schema_path() -> Path:
    return Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


def main() -> None:
    print(render(yaml.safe_load(schema_path().read_text())), end="")


if __name__ == "__main__":
    main()
