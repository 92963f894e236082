"""Read the cells of markdown pipe tables, so that tests do not depend on column padding."""

import re

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+$")
_CELL_BORDER = re.compile(r"(?<!\\)\|")  # an escaped \| is part of its cell


def table_rows(markdown: str) -> list[list[str]]:
    """Every row (header rows included) of every pipe table in `markdown`, as stripped cells;
    the |---| lines under the headers are left out."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if line.startswith("|") and line.endswith("|") and not _SEPARATOR.match(line):
            rows.append([cell.strip() for cell in _CELL_BORDER.split(line[1:-1])])
    return rows


def has_run(markdown_or_rows, cells: list[str]) -> bool:
    """Whether some table row holds `cells` side by side (the whole row or a run within it)."""
    rows = table_rows(markdown_or_rows) if isinstance(markdown_or_rows, str) else markdown_or_rows
    width = len(cells)
    return any(row[start:start + width] == cells
               for row in rows for start in range(len(row) - width + 1))
