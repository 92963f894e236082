"""Reading the tables the methods take, and checking them column by column.

A table comes from a CSV, parquet or JSON-lines file (by its extension), or from a Hugging Face
dataset by name (`read_table("hf:owner/name@<commit>:split")`, through the project's own loader,
rubriclab.data.hub). Every value is checked where it is read: a table that lacks a column, or
holds a value a column cannot take, raises `InputError`, which names the table, the column and
the first offending row (the command line exits with status 2 and prints it).

A verdict is read from any of the pairs researchers write: pass / fail, 1 / 0 (ints, floats 1.0
and 0.0, or that text), true / false (booleans or text) and yes / no, case and surrounding
spaces ignored; parquet's categorical and boolean columns and JSON's booleans read the same. A
label is "correct" or "flawed", or one of those pairs with pass meaning correct. An error
shows a value as the file holds it ('maybe', 2, 0.5). Ids are read as text, so "007" stays
"007". `one_file` splits the one-file form of `correct`, `labels-needed` and `agreement`
(every item's verdict and, for the labelled ones, a person's) into the two tables they take.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

PASS_WORDS = {"pass": True, "yes": True, "true": True, "1": True, "1.0": True,
              "fail": False, "no": False, "false": False, "0": False, "0.0": False}
PASS_TEXT = "pass or fail, 1 or 0, true or false, yes or no"
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
    positions: tuple[int, ...] | None = None  # a subset of the rows: their places in the file

    def row(self, position: int) -> str:
        """The 1-based data row at `position` (0-based), with its file line for a CSV."""
        if self.positions is not None:
            position = self.positions[position]
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
    except ImportError as exc:  # pandas reads parquet with pyarrow: not in the light install
        raise InputError(label, None, f"cannot read {path}: reading parquet needs pyarrow: "
                                      "pip install 'rubriclab[parquet]'") from exc
    except (ValueError, OSError) as exc:  # a malformed file: say which
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
    return _mapped(frame, column, source, PASS_WORDS, PASS_TEXT)


def flawed_labels(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """The column as booleans, True for flawed (pass, 1, true, yes read as correct)."""
    words = {**LABEL_WORDS, **{word: not passed for word, passed in PASS_WORDS.items()}}
    return _mapped(frame, column, source, words, f"correct or flawed (or {PASS_TEXT})")


def human_verdicts(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """A person's verdict, True for pass: any verdict pair, or correct / flawed."""
    words = {**PASS_WORDS, **{word: not flawed for word, flawed in LABEL_WORDS.items()}}
    return _mapped(frame, column, source, words, f"{PASS_TEXT} (or correct / flawed)")


def binary(frame: pd.DataFrame, column: str, source: Source) -> pd.Series:
    """A 0/1 column (any verdict pair read as 1 / 0) as integers."""
    return _mapped(frame, column, source, PASS_WORDS, f"0 or 1 ({PASS_TEXT})").astype(int)


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


def one_file(frame: pd.DataFrame, label_column: str = "human", *, table: str = "judged",
             keys: Sequence[str] = ("item_id",)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The one-file form of `correct`, `labels-needed` and `agreement` as the two tables
    (judged, labeled) they take.

    `frame` has the `keys` (``item_id``, and ``check_id`` for `agreement` per check),
    ``verdict`` (the judge's, on every row) and `label_column` (a person's verdict, filled for
    the labelled rows only; empty, null or absent elsewhere), as truescore takes them. Every
    row-level check is made here, so that errors name the file's own rows: an id missing or
    repeated, a verdict or label that is not one, a label on a row without a verdict. The
    labeled table has the person's verdict as ``human``; both tables have the `keys`.
    """
    keys = list(keys)
    source = require_columns(frame, [*keys, "verdict"], table)
    if label_column not in frame.columns:
        raise InputError(source.name, label_column, "missing: one file holds the people's "
                                                    "verdicts in it (name another with "
                                                    "--label-column), or give the labels as a "
                                                    "second file")
    key_ids = pd.DataFrame({key: ids(frame, key, source) for key in keys})
    item_ids = key_ids["item_id"]
    unique_rows(key_ids, source, "item_id", "item and check" if len(keys) > 1 else "item")
    labelled = ~frame[label_column].map(_blank).to_numpy(dtype=bool)
    no_verdict = frame["verdict"].map(_blank).to_numpy(dtype=bool)
    both = labelled & no_verdict
    if both.any():
        position = int(both.nonzero()[0][0])
        raise InputError(source.name, "verdict",
                         f"{source.row(position)}: item {item_ids.iloc[position]!r} has a "
                         f"{label_column} label but no verdict: every item needs the judge's "
                         "verdict")
    passed = verdicts(frame, "verdict", source)
    if not labelled.any():
        raise InputError(source.name, label_column, "no row has a label: fill it for the "
                                                    "labelled items (empty elsewhere)")
    rows = tuple(int(p) for p in labelled.nonzero()[0])
    human = human_verdicts(frame.loc[labelled], label_column,
                           Source(source.name, source.header_lines, rows))
    judged = key_ids.assign(verdict=passed.map({True: "pass", False: "fail"}))
    labeled = key_ids[labelled].reset_index(drop=True).assign(
        human=human.map({True: "pass", False: "fail"}).to_numpy())
    _remember(judged, source)
    # only errors without a row reach the labeled table (both classes needed)
    _remember(labeled, Source(f"{source.name} (its {label_column} column)"))
    return judged, labeled


def _mapped(frame: pd.DataFrame, column: str, source: Source, words: dict, expected: str
            ) -> pd.Series:
    def read(value):
        if _missing(value):
            return _BAD
        if isinstance(value, (bool, np.bool_)):
            return words.get("true" if value else "false", _BAD)
        if isinstance(value, (int, np.integer, float, np.floating)):
            number = float(value)
            return words.get(str(int(number)), _BAD) if number in (0.0, 1.0) else _BAD
        return words.get(str(value).strip().lower(), _BAD)

    # object first: a categorical or nullable column would map into its own dtype
    values = frame[column].astype(object).map(read)
    bad = values.map(lambda v: v is _BAD).to_numpy()
    if bad.any():
        position = int(bad.nonzero()[0][0])
        value = frame[column].astype(object).iloc[position]
        raise InputError(source.name, column, f"{source.row(position)} is {shown(value)}; "
                                              f"expected {expected}")
    return values if values.map(lambda v: isinstance(v, str)).any() else values.astype(bool)


def shown(value) -> str:
    """A value as its file holds it: 'text' quoted, 2 and 0.5 and True bare, 'empty'."""
    if _missing(value) or (isinstance(value, str) and not value.strip()):
        return "empty"
    if isinstance(value, np.generic):
        value = value.item()
    return repr(value) if isinstance(value, str) else str(value)


_BAD = object()


def _blank(value) -> bool:
    return _missing(value) or (isinstance(value, str) and not value.strip())


def _missing(value) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False
