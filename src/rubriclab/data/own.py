"""Items of a dataset of your own: a local file or a Hugging Face dataset, its columns mapped.

A dataset in config that is none of the registry's (``datasets.<name>`` with a ``title``)
names where its rows are (``file``: a .csv, .parquet or .jsonl file; or ``hub``, as for the
registry's datasets, rubriclab.data.hub) and which of their columns hold what a prepared item
needs (``columns``):

    task     the input the output answers (shown to the judge with it)
    output   the text to grade
    label    the human label; ``labels`` lists which of its values mean correct and which
             flawed (default: the words "correct" and "flawed")
    item_id  optional: a unique id per row (default: "<dataset>-<row number>")
    group    optional: the source document, which never spans the two splits (default: the
             item itself)
    domain   optional: a domain, counted in the manifest (default: empty)

Every row is checked as it is read; a malformed one raises DataFormatError naming the file (or
Hub split), the line (or row) and the column.
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rubriclab.data.errors import DataFormatError, ensure_unique, iter_json_lines, read_text

COLUMNS = ("task", "output", "label")
OPTIONAL_COLUMNS = ("item_id", "group", "domain")
DEFAULT_LABELS = {"correct": ["correct"], "flawed": ["flawed"]}
SUFFIXES = (".csv", ".jsonl", ".parquet")


def misspelt_datasets(datasets: Mapping, registry: list[str]) -> list[str]:
    """A line for each name under `datasets` that is not the registry's, has no title (so is
    no dataset of your own either) and is close to a registry name: most likely a typo."""
    problems = []
    for name, settings in (datasets or {}).items():
        if name in registry or (isinstance(settings, Mapping) and "title" in settings):
            continue
        close = difflib.get_close_matches(str(name), registry, n=1, cutoff=0.6)
        if close:
            problems.append(f"config key 'datasets.{name}' is not a setting; did you mean "
                            f"'datasets.{close[0]}'? (a dataset of your own needs a title, "
                            "docs/own_data.md)")
    return problems


def own_rows(settings: Mapping, key: str, base: Path | None = None
             ) -> Iterator[tuple[Any, int, Mapping]]:
    """(source, line or row number, row) of every row of the dataset's file or Hub split."""
    if settings.get("hub"):
        from rubriclab.data.hub import load_tables

        for split, rows in load_tables(settings["hub"], key=f"{key}.hub"):
            for number, row in rows:
                yield split, number, row
        return
    if not settings.get("file"):
        raise ValueError(f"config key '{key}': a dataset of your own needs 'file' (a .csv, "
                         ".parquet or .jsonl file) or 'hub'")
    path = Path(settings["file"])
    if base is not None and not path.is_absolute():
        path = base / path
    if not path.is_file():
        raise ValueError(f"config key '{key}.file': no such file: {path}")
    yield from file_rows(path)


def file_rows(path: Path) -> Iterator[tuple[Path, int, Mapping]]:
    suffix = path.suffix.lower()
    if suffix == ".csv":
        reader = csv.DictReader(io.StringIO(read_text(path), newline=""))
        line = 1
        for row in reader:
            yield path, line + 1, row
            line = reader.line_num
    elif suffix == ".jsonl":
        for number, row in iter_json_lines(path):
            if not isinstance(row, dict):
                raise DataFormatError(path, number, f"expected a JSON object, got "
                                                    f"{type(row).__name__}")
            yield path, number, row
    elif suffix == ".parquet":
        for number, row in enumerate(pd.read_parquet(path).to_dict("records"), start=1):
            yield path, number, row
    else:
        raise DataFormatError(path, None, f"cannot tell the format of {path.name!r}: name a "
                                          f"{', '.join(SUFFIXES)} file")


def load_own(dataset: str, settings: Mapping, *, key: str | None = None,
             base: Path | None = None) -> pd.DataFrame:
    """The item table of a dataset of your own (rubriclab.data.prepare's columns)."""
    key = key or f"datasets.{dataset}"
    columns = dict(settings["columns"])
    labels = {**DEFAULT_LABELS, **(settings.get("labels") or {})}
    words = {str(word): label for label in ("correct", "flawed") for word in labels[label]}
    both = sorted(set(map(str, labels["correct"])) & set(map(str, labels["flawed"])))
    if both:
        raise ValueError(f"config key '{key}.labels': {both} listed as both correct and flawed")
    items = []
    seen: dict[str, tuple[str, int]] = {}
    for source, line, row in own_rows(settings, key, base):
        def value(field: str, required: bool = True) -> str:
            column = columns.get(field)
            if column is None:
                return ""
            if column not in row:
                raise DataFormatError(source, line, f"no column {column!r} (config key "
                                                    f"'{key}.columns.{field}'); the row has "
                                                    f"{sorted(map(str, row))}")
            cell = row[column]
            text = "" if cell is None or (isinstance(cell, float) and pd.isna(cell)) \
                else str(cell).strip()
            if required and not text:
                raise DataFormatError(source, line, f"column {column!r} ({field}) is empty")
            return text

        raw_label = value("label")
        if raw_label not in words:
            raise DataFormatError(source, line, f"column {columns['label']!r} (label) is "
                                                f"{raw_label!r}, which config key '{key}.labels' "
                                                f"does not list; correct: {labels['correct']}, "
                                                f"flawed: {labels['flawed']}")
        item_id = value("item_id") if columns.get("item_id") else f"{dataset}-{line:05d}"
        ensure_unique(item_id, source, line, seen)
        items.append({
            "item_id": item_id, "dataset": dataset, "domain": value("domain", False),
            "group": value("group", False) or item_id, "task": value("task", False),
            "output": value("output", False), "label": words[raw_label],
            "source_file": str(source) if isinstance(source, Path) else source.name,
            "source_line": line,
        })
    if not items:
        raise ValueError(f"config key '{key}': the dataset has no rows")
    return pd.DataFrame(items)
