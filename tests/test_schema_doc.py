"""config/README.md is the schema rendered: it names every key and cannot fall behind."""

import yaml

from rubriclab import schema_doc
from rubriclab.config import validate_config


def _schema():
    return yaml.safe_load(schema_doc.schema_path().read_text())


def test_config_readme_is_the_schema_rendered():
    readme = schema_doc.schema_path().parents[2] / "config" / "README.md"
    assert readme.read_text() == schema_doc.render(_schema()), (
        "config/README.md differs from the schema: run "
        "`.venv/bin/python -m rubriclab.schema_doc > config/README.md`")


def test_every_default_of_a_top_level_section_is_in_the_reference():
    # Every key a completed config holds under the sections users set most is a row.
    text = schema_doc.render(_schema())
    embedded = yaml.safe_load((schema_doc.schema_path().parents[2] / "config" / "config.yaml").read_text())
    completed = validate_config(embedded, _schema())
    for section in ("carry", "verify", "transfer"):
        for key in completed[section]:
            assert f"| `{section}.{key}` |" in text, f"{section}.{key} has no row"


def test_a_ref_links_to_its_section_and_a_default_is_shown():
    schema = {"properties": {"a": {"$ref": "#/$defs/thing_kind"},
                             "b": {"type": "integer", "default": 3, "description": "x | y"}},
              "$defs": {"thing_kind": {"type": "object", "properties": {
                  "c": {"type": "string", "description": "inner"}}}}}
    text = schema_doc.render(schema)
    assert "| `a` | [thing_kind](#thing-kind) |  |  |" in text
    assert "| `b` | integer | `3` | x \\| y |" in text
    assert "## thing_kind" in text and "| `c` | string |  | inner |" in text
