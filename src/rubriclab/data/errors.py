"""The error raised for malformed input rows, and the JSON-lines reader that raises it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NoReturn


class DataFormatError(ValueError):
    """A malformed row in a data file, located by file and 1-based line.

    ``str(error)`` reads like ``"data/x.jsonl, line 17: field 'label' must be 0 or 1, got 'x'"``.
    ``line`` may be None for problems that concern a whole file. A source that is not a file
    (a split of a Hugging Face dataset, rubriclab.data.hub.HubSplit) names its own unit: "row".
    """

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path = str(path)
        self.line = line
        self.message = message
        unit = getattr(path, "unit", "line")
        where = self.path if line is None else f"{self.path}, {unit} {line}"
        super().__init__(f"{where}: {message}")


def read_text(path: Path) -> str:
    """Read a UTF-8 file; undecodable bytes raise DataFormatError at their line, and a file
    with nothing in it (a failed copy, a truncated download) is refused by name."""
    data = Path(path).read_bytes()
    if not data.strip():
        raise DataFormatError(path, None, "the file is empty: a data file needs at least one row "
                                          "(fetch it again: delete it and rerun)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(path, line, f"not valid UTF-8: {exc.reason}") from exc


def iter_json_lines(path: Path, text: str | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded value) for every non-blank line of a JSON-lines file."""
    if text is None:
        text = read_text(path)
    # split on "\n" only: str.splitlines() would also break on U+2028 and friends,
    # which may appear unescaped inside JSON strings.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, f"invalid JSON: {exc.msg} (column {exc.colno})") from exc


def ensure_unique(item_id: str, path: Path, line: int, first_seen: dict[str, tuple[str, int]]) -> None:
    """Record where ``item_id`` occurs; a second occurrence raises naming both locations."""
    if item_id in first_seen:
        first_path, first_line = first_seen[item_id]
        message = f"duplicate item {item_id}, first seen in {first_path}, line {first_line}"
        raise DataFormatError(path, line, message)
    first_seen[item_id] = (str(path), line)


# What `failer` returns: raises DataFormatError with a message, never returns.
Fail = Callable[[str], NoReturn]


def failer(path: Path, line: int, prefix: str = "") -> Fail:
    """A function that raises DataFormatError at `path`, `line` with a message."""
    def fail(message: str) -> NoReturn:
        raise DataFormatError(path, line, prefix + message)
    return fail


def require_fields(row: Any, fields: tuple[str, ...], fail: Callable[[str], NoReturn]) -> None:
    if not isinstance(row, dict):
        fail(f"expected a JSON object, got {type(row).__name__}")
    for field in fields:
        if field not in row:
            fail(f"missing field {field!r}")
