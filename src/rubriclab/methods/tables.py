"""Reading the tables the methods take, and checking them column by column.

A table comes from a CSV, parquet or JSON-lines file (by its extension), or from a Hugging Face
dataset by name (`read_table("hf:owner/name@<commit>:split")`, through the project's own loader,
rubriclab.data.hub). Every value is checked where it is read: a table that lacks a column, or
holds a value a column cannot take, raises `InputError`, which names the table, the column and
the first offending row (the command line exits with status 2 and prints it).

Verdicts are "pass" or "fail" ("yes" and "no" are read as pass and fail, case and surrounding
spaces ignored, and so are the booleans of a parquet or JSON file); labels are "correct" or
"flawed". Ids are read as text, so "007" stays "007".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

PASS_WORDS = {"pass": True, "yes": True, "fail": False, "no": False}
LABEL_WORDS = {"correct": False, "flawed": True}  # value: is the item flawed
HUB_PREFIX = "hf:"
CSV_SUFFIXES = (".csv",)
PARQUET_SUFFIXES = (".parquet", ".pq")
JSONL_SUFFIXES = (".jsonl", ".ndjson")
ATTRS_KEY = "rubriclab_source"


class InputError(ValueError):
    """A table the methods cannot read: names the table, the column and, where one is at
    fault, the first offending row."""

    def __init__(self, table: str, column: str | None, detail: str):
        self.table, self.column, self.detail = table, column, detail
        where = f"column '{column}': " if column else ""
        super().__init__(f"{table}: {where}{detail}")


@dataclass(frozen=True)
class Source:
    """Where a table came from, for messages: its name and how a row is located in it."""

    name: str
    header_lines: int = 0  # a CSV's header: data row r (1-based) is line r + 1

    def row(self, position: int) -> str:
        """The 1-based data row at `position` (0-based), with its file line for a CSV."""
        number = position + 1
        return f"row {number} (line {number + self.header_lines})" if self.header_lines \
            else f"row {number}"


def read_table(source: str | Path, *, name: str | None = None) -> pd.DataFrame:
    """A table from a file (.csv, .parquet, .jsonl) or a Hugging Face dataset ("hf:...").

    Hugging Face: ``hf:NAME[@REVISION][:SPLIT]``; NAME is a dataset on the Hub, which needs a
    pinned 40-digit commit as REVISION (rubriclab.data.hub), or a local folder laid out like
    one. SPLIT defaults to "train". The frame remembers where it came from
    (``frame.attrs["rubriclab_source"]``), so that errors name it and the line of a CSV row.
    """
    text = str(source)
    label = name or text
    if text.startswith(HUB_PREFIX):
        frame = _read_hub(text[len(HUB_PREFIX):], label)
        _remember(frame, Source(label))
        return frame
    path = Path(source)
    if not path.is_file():
        raise InputError(label, None, f"no such file: {path}")
    suffix = path.suffix.lower()
    try:
        if suffix in CSV_SUFFIXES:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            _remember(frame, Source(label, header_lines=1))
            return frame
        if suffix in PARQUET_SUFFIXES:
            frame = pd.read_parquet(path)
        elif suffix in JSONL_SUFFIXES:
            frame = pd.read_json(path, lines=True, dtype=False)
        else:
            raise InputError(label, None, f"cannot tell the format of {path.name!r}: name a "
                                          ".csv, .parquet or .jsonl file")
    except InputError:
        raise
    except (ValueError, OSError, ImportError) as exc:  # a malformed file: say which
        raise InputError(label, None, f"cannot read {path}: {exc}") from exc
    _remember(frame, Source(label))
    return frame


def _read_hub(spec: str, label: str) -> pd.DataFrame:
    from rubriclab.data.download import DownloadError
    from rubriclab.data.hub import COMMIT, is_hub_name, load_tables

    name, colon, split = spec.rpartition(":")
    if not colon:
        name, split = spec, ""
    name, _, revision = name.partition("@")
    if not name:
        raise InputError(label, None, "name a dataset: hf:NAME[@REVISION][:SPLIT]")
    if is_hub_name(name) and not COMMIT.match(revision):
        raise InputError(label, None, f"{name!r} is read from the Hugging Face Hub and needs the "
                                      "40-digit commit to read, pinned: hf:NAME@COMMIT[:SPLIT] "
                                      f"(got {revision or 'none'})")
    source = {"name": name, "revision": revision or None, "split": split or "train"}
    try:
        ((_, rows),) = load_tables(source, key=label)
    except (ValueError, DownloadError) as exc:
        raise InputError(label, None, str(exc)) from exc
    return pd.DataFrame([row for _, row in rows])


def _remember(frame: pd.DataFrame, source: Source) -> None:
    # plain values: pandas writes attrs into parquet and JSON files
    frame.attrs[ATTRS_KEY] = {"name": source.name, "header_lines": source.header_lines}


def source_of(frame: pd.DataFrame, default: str) -> Source:
    """Where `read_table` read the frame from, or `default` (a frame made otherwise)."""
    remembered = frame.attrs.get(ATTRS_KEY)
    return Source(**remembered) if isinstance(remembered, dict) else Source(default)


def require_columns(frame: pd.DataFrame, columns: Iterable[str], table: str) -> Source:
    """Raise InputError for the first of `columns` that `frame` lacks; return its Source."""
    if not isinstance(frame, pd.DataFrame):
        raise InputError(table, None, f"must be a pandas DataFrame, got {type(frame).__name__}")
    source = source_of(frame, table)
    for column in columns:
        if column not in frame.columns:
            raise InputError(source.name, column, f"missing; the table has columns "
                                                  f"{list(map(str, frame.columns))}")
    if frame.empty:
        raise InputError(source.name, None, "has no rows")
    return source


def ids(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """The column as text ids; raises on an empty or missing id."""
    values = frame[column]
    text = values.map(lambda v: "" if _missing(v) else str(v).strip())
    empty = text == ""
    if empty.any():
        position = int(empty.to_numpy().nonzero()[0][0])
        raise InputError(source.name, column, f"{source.row(position)} has no {column}")
    return text


def verdicts(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """The column as booleans, True for pass."""
    return _mapped(frame, column, source, PASS_WORDS, "pass or fail (or yes / no)")


def flawed_labels(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """The column as booleans, True for flawed."""
    return _mapped(frame, column, source, LABEL_WORDS, "correct or flawed")


def human_verdicts(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """A person's verdict, True for pass: pass / fail, yes / no, or correct / flawed."""
    words = {**PASS_WORDS, **{word: not flawed for word, flawed in LABEL_WORDS.items()}}
    return _mapped(frame, column, source, words, "pass or fail (or correct / flawed)")


def binary(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """A 0/1 column (pass / fail and yes / no read as 1 / 0) as integers."""
    words = {"1": True, "0": False, **PASS_WORDS}
    return _mapped(frame, column, source, words, "0 or 1 (or pass / fail)").astype(int)


def one_of(frame: pd.DataFrame, column: str, source: Source, allowed: Sequence[str]) -> pd.Series:
    """The column as text, each value one of `allowed` (case and spaces ignored)."""
    return _mapped(frame, column, source, {a.lower(): a for a in allowed},
                   " or ".join(allowed))


def unique_rows(keys: pd.DataFrame, source: Source, column: str, what: str) -> None:
    """Raise InputError when two rows share the values of `keys` (one row per `what`)."""
    duplicated = keys.duplicated(keep="first").to_numpy()
    if duplicated.any():
        position = int(duplicated.nonzero()[0][0])
        values = ", ".join(f"{k}={v!r}" for k, v in keys.iloc[position].items())
        raise InputError(source.name, column, f"{source.row(position)} repeats {values}: "
                                              f"one row per {what}")


def _mapped(frame: pd.DataFrame, column: str, source: Source, words: dict, expected: str
            ) -> pd.Series:
    def read(value):
        if isinstance(value, bool) or (hasattr(value, "dtype") and value.dtype == bool):
            key = ("pass" if value else "fail") if "pass" in words else None
            return words.get(key, _BAD) if key else _BAD
        if _missing(value):
            return _BAD
        return words.get(str(value).strip().lower(), _BAD)

    values = frame[column].map(read)
    bad = values.map(lambda v: v is _BAD).to_numpy()
    if bad.any():
        position = int(bad.nonzero()[0][0])
        value = frame[column].iloc[position]
        shown = "empty" if _missing(value) or str(value).strip() == "" else repr(value)
        raise InputError(source.name, column, f"{source.row(position)} is {shown}; expected "
                                              f"{expected}")
    return values


_BAD = object()


def _missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
