"""Load SummEdits (Laban et al., 2023) into the common item table.

Two file formats are read, told apart by their first non-blank character:
- ``[``: the original domain files ``summedits_<domain>.json`` (one JSON array);
- ``{``: JSON lines, as in the partial BillSum file ``summedits_billsum_partial_opencompass.jsonl``.
The domain comes from the file name: ``summedits_<domain>.json``, with any
``_partial...`` suffix dropped (so the partial file is domain ``billsum``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pandas as pd

from rubriclab.data.errors import DataFormatError, ensure_unique, iter_json_lines, read_text

DATASET = "summedits"
COLUMNS = [
    "item_id", "dataset", "domain", "group", "task", "output", "label", "flaw_type",
    "upstream_split", "source_file", "source_line",
]
_WHITESPACE = " \t\n\r"


def load_summedits(paths: list[Path]) -> pd.DataFrame:
    """One row per SummEdits row of every file in ``paths``, in file order.

    Malformed rows raise DataFormatError naming the file and the line where the row starts.
    """
    return _items((path, domain_from_file_name(path), iter_rows(path)) for path in map(Path, paths))


def load_summedits_tables(tables, domain: str | None = None) -> pd.DataFrame:
    """One row per SummEdits row of already decoded tables: (source, [(row number, row)]).

    For a Hugging Face dataset (rubriclab.data.hub.load_tables): rows in the schema of the
    domain files, each with a ``domain`` field unless ``domain`` names the one domain of all.
    """
    return _items((source, domain, rows) for source, rows in tables)


def _items(sources) -> pd.DataFrame:
    records = []
    first_seen: dict[str, tuple[str, int]] = {}
    for path, domain, rows in sources:
        for line, row in rows:
            record = item_record(row, domain or _row_domain(row, path, line), path, line)
            ensure_unique(record["item_id"], path, line, first_seen)
            records.append(record)
    return pd.DataFrame.from_records(records, columns=COLUMNS)


def _row_domain(row: Any, path, line: int) -> str:
    domain = row.get("domain") if isinstance(row, dict) else None
    if not isinstance(domain, str) or not domain:
        raise DataFormatError(path, line, "field 'domain' must be a non-empty string (rows not "
                                          f"read from a domain file name their own), got {domain!r:.60}")
    return domain


def domain_from_file_name(path: Path) -> str:
    stem = path.name.split(".", 1)[0]
    if not stem.startswith("summedits_") or stem == "summedits_":
        raise DataFormatError(path, None, "cannot tell the domain: expected a file named summedits_<domain>.json")
    return stem.removeprefix("summedits_").split("_partial", 1)[0]


def iter_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield (line where the row starts, decoded row) for a JSON-array or JSON-lines file."""
    text = read_text(path)
    stripped = text.lstrip(_WHITESPACE)
    if stripped.startswith("["):
        yield from iter_json_array(path, text)
    elif stripped.startswith("{"):
        yield from iter_json_lines(path, text)
    else:
        line = text.count("\n", 0, len(text) - len(stripped)) + 1
        raise DataFormatError(path, line, "expected a JSON array or JSON lines of objects")


def iter_json_array(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """Decode the elements of a top-level JSON array one at a time, with their start line."""
    decoder = json.JSONDecoder()
    position = _skip_whitespace(text, 0) + 1  # just past "["
    line, counted_to = 1, 0

    def line_at(offset: int) -> int:
        nonlocal line, counted_to
        line += text.count("\n", counted_to, offset)
        counted_to = offset
        return line

    position = _skip_whitespace(text, position)
    if text.startswith("]", position):
        return
    while True:
        start_line = line_at(position)
        try:
            element, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise DataFormatError(
                path, start_line, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
            ) from exc
        yield start_line, element
        position = _skip_whitespace(text, position)
        if text.startswith(",", position):
            position = _skip_whitespace(text, position + 1)
        elif text.startswith("]", position):
            break
        else:
            raise DataFormatError(path, line_at(position), "expected ',' or ']' after an array element")
    if _skip_whitespace(text, position + 1) != len(text):
        raise DataFormatError(path, line_at(position + 1), "unexpected text after the closing ']'")


def item_record(row: Any, domain: str, path: Path, line: int) -> dict:
    """Validate one SummEdits row and map it to the common item columns."""
    _validate_row(row, path, line)
    flawed = row["label"] == 0
    return {
        "item_id": f"{DATASET}:{domain}:{row['id']}",
        "dataset": DATASET,
        "domain": domain,
        "group": seed_document_id(row["id"]),
        "task": row["doc"],
        "output": row["summary"],
        "label": "flawed" if flawed else "correct",
        "flaw_type": ";".join(row["edit_types"]) if flawed else "",
        "upstream_split": row.get("split", ""),
        "source_file": path.name,
        "source_line": line,
    }


def seed_document_id(item_id: str) -> str:
    """``<seed_doc_id>_og`` and ``<seed_doc_id>_<k>`` both map to ``<seed_doc_id>``."""
    return item_id.rsplit("_", 1)[0]


def _validate_row(row: Any, path: Path, line: int) -> None:
    def fail(message: str) -> NoReturn:
        raise DataFormatError(path, line, message)

    if not isinstance(row, dict):
        fail(f"expected a JSON object, got {type(row).__name__}")
    for field in ("id", "doc", "summary", "label", "edit_types"):
        if field not in row:
            fail(f"missing field {field!r}")
    for field in ("id", "doc", "summary"):
        if not isinstance(row[field], str):
            fail(f"field {field!r} must be a string, got {row[field]!r:.60}")
    if not row["id"]:
        fail("field 'id' is empty")
    # bool is a subclass of int; true/false are not valid labels
    if type(row["label"]) is not int or row["label"] not in (0, 1):
        fail(f"field 'label' must be 0 or 1, got {row['label']!r}")
    edit_types = row["edit_types"]
    if not isinstance(edit_types, list) or not all(isinstance(t, str) for t in edit_types):
        fail(f"field 'edit_types' must be a list of strings, got {edit_types!r:.60}")
    if "split" in row and not isinstance(row["split"], str):
        fail(f"field 'split' must be a string, got {row['split']!r}")


def _skip_whitespace(text: str, position: int) -> int:
    while position < len(text) and text[position] in _WHITESPACE:
        position += 1
    return position
