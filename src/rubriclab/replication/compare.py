"""`rubriclab compare RUN_A RUN_B`: one page setting two runs' outputs side by side: every claim's
value and verdict (figures/replication.csv), every number of every table under figures/
(each .csv) and the judges' verdicts (compare_verdicts), each difference marked, each output one
run lacks named. The page names each run by its folder as given, or by the folder's name where
that is absolute or leaves the current folder: never a folder of the machine.

A run is a run folder (`runs/<name>/`, or the working folder of an unnamed run): the folder
holding `figures/`. Rows of two tables are matched by their text columns (the columns that are
not numbers in either run), the n-th repeat of a key with the n-th; numbers are equal when they
are equal to 1e-9 relative (or both empty). A changed text cell makes its row one that only one
run has.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .compare_verdicts import (VerdictDiff, compare_runs_verdicts, html_section, markdown_section,
                               markdown_table)
from .compare_verdicts import summary as verdict_summary

REPLICATION = Path("figures/replication.csv")
CLAIM_COLUMNS = ("run", "interval", "n", "as_measured", "verdict")
ONLY_A, ONLY_B = "only in A", "only in B"


def run_folder(given: str | Path) -> Path:
    """The folder with figures/ that `given` names: itself, or runs/<given>/."""
    path = Path(given)
    for candidate in (path, Path("runs") / path):
        if (candidate / "figures").is_dir():
            return candidate
    raise ValueError(f"{given}: no figures/ folder there nor in runs/{given}/ (give a run "
                     "folder: runs/<name>/ or the working folder of a run)")


@dataclass
class Cell:
    a: Any
    b: Any
    changed: bool


@dataclass
class TableDiff:
    """One output of both runs: rows (key cells, then a Cell per compared column) and where
    the runs disagree."""
    name: str
    keys: list[str]
    columns: list[str]
    rows: list[tuple[list[Any], list[Cell], str]] = field(default_factory=list)  # (key, cells, side)
    only_columns: dict[str, list[str]] = field(default_factory=dict)

    @property
    def changes(self) -> int:
        return sum(1 for _, cells, side in self.rows if side or any(c.changed for c in cells)) \
            + sum(len(v) for v in self.only_columns.values())


@dataclass
class Comparison:
    a: Path
    b: Path
    tables: list[TableDiff]
    missing: dict[str, list[str]]  # "A" / "B": outputs that run lacks
    verdicts: VerdictDiff = field(default_factory=VerdictDiff)


def shown_name(folder: Path) -> str:
    """How the page names a run folder: as given when relative and inside the current folder,
    else by its own name."""
    if folder.is_absolute() or ".." in folder.parts:
        return folder.resolve().name or str(folder)
    return str(folder)


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _same(a: Any, b: Any) -> bool:
    if _blank(a) or _blank(b):
        return _blank(a) and _blank(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return str(a) == str(b)


def _read(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not a readable csv ({exc})") from None


def _numeric(frame: pd.DataFrame, column: str) -> bool:
    return pd.api.types.is_numeric_dtype(frame[column]) \
        and not pd.api.types.is_bool_dtype(frame[column])


def _keyed(frame: pd.DataFrame, keys: list[str]) -> dict[tuple, dict[str, Any]]:
    out: dict[tuple, dict[str, Any]] = {}
    seen: dict[tuple, int] = {}
    for record in frame.to_dict("records"):
        key = tuple("" if _blank(record[k]) else str(record[k]) for k in keys)
        seen[key] = seen.get(key, 0) + 1
        out[(*key, seen[key])] = record
    return out


def compare_tables(name: str, a: pd.DataFrame, b: pd.DataFrame,
                   keys: list[str] | None = None) -> TableDiff:
    """Two versions of one table, rows matched by `keys` (default: the columns that are text in
    either run and present in both)."""
    shared = [c for c in a.columns if c in b.columns]
    if keys is None:
        keys = [c for c in shared if not (_numeric(a, c) and _numeric(b, c))]
    columns = [c for c in shared if c not in keys]
    diff = TableDiff(name, keys, columns, only_columns={
        side: cols for side, cols in ((ONLY_A, [c for c in a.columns if c not in b.columns]),
                                      (ONLY_B, [c for c in b.columns if c not in a.columns]))
        if cols})
    rows_a, rows_b = _keyed(a, keys), _keyed(b, keys)
    for key in [*rows_a, *(k for k in rows_b if k not in rows_a)]:
        ra, rb = rows_a.get(key), rows_b.get(key)
        side = "" if ra is not None and rb is not None else (ONLY_A if rb is None else ONLY_B)
        cells = [Cell(None if ra is None else ra[c], None if rb is None else rb[c],
                      ra is not None and rb is not None and not _same(ra[c], rb[c]))
                 for c in columns]
        diff.rows.append((list(key[:-1]), cells, side))
    return diff


def compare_runs(run_a: str | Path, run_b: str | Path) -> Comparison:
    a, b = run_folder(run_a), run_folder(run_b)
    names_a = {p.relative_to(a) for p in (a / "figures").rglob("*.csv")}
    names_b = {p.relative_to(b) for p in (b / "figures").rglob("*.csv")}
    tables = []
    for name in sorted(names_a & names_b, key=lambda p: (p != REPLICATION, str(p))):
        frame_a, frame_b = _read(a / name), _read(b / name)
        if name == REPLICATION:  # a claim per row; the rest of its columns are the claim's text
            keep = ["id", "where", *CLAIM_COLUMNS]
            frame_a, frame_b = (f[[c for c in keep if c in f.columns]] for f in (frame_a, frame_b))
            tables.append(compare_tables(str(name), frame_a.astype(str), frame_b.astype(str),
                                         keys=["id", "where"]))
        else:
            tables.append(compare_tables(str(name), frame_a, frame_b))
    return Comparison(a, b, tables, {"A": sorted(str(n) for n in names_b - names_a),
                                     "B": sorted(str(n) for n in names_a - names_b)},
                      compare_runs_verdicts(a, b, (shown_name(a), shown_name(b))))


def _show(value: Any) -> str:
    if _blank(value):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _summary(comparison: Comparison) -> list[str]:
    changed = [t for t in comparison.tables if t.changes]
    lines = [f"A: {shown_name(comparison.a)}", f"B: {shown_name(comparison.b)}",
             f"{len(comparison.tables)} outputs in both runs, {len(changed)} with differences"
             + (f": {', '.join(t.name for t in changed)}" if changed else "") + "."]
    for side in ("A", "B"):
        if comparison.missing[side]:
            lines.append(f"Missing in run {side}: {', '.join(comparison.missing[side])}.")
    return [*lines, verdict_summary(comparison.verdicts)]


def to_markdown(comparison: Comparison) -> str:
    """The page as markdown: a changed cell reads **A → B**, a row one run lacks is marked."""
    out = ["# Two runs side by side", "", *(f"- {line}" for line in _summary(comparison)), ""]
    for table in comparison.tables:
        out += [f"## {table.name}" + ("" if table.changes else " (no difference)"), ""]
        for side, cols in table.only_columns.items():
            out += [f"Columns {side}: {', '.join(cols)}.", ""]
        rows = []
        for key, cells, side in table.rows:
            shown = [f"**{_show(c.a)} → {_show(c.b)}**" if c.changed
                     else _show(c.a if side != ONLY_B else c.b) for c in cells]
            mark = f"**{side}**" if side else ("**changed**" if any(c.changed for c in cells)
                                               else "")
            rows.append([mark, *(str(k) for k in key), *shown])
        out += markdown_table(["", *table.keys, *table.columns], rows)
    return "\n".join([*out, *markdown_section(comparison.verdicts)])


_STYLE = ("body{font:14px sans-serif;margin:1.5em}table{border-collapse:collapse;margin:.5em 0 "
          "1.5em}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
          "td.changed{background:#ffe08a}tr.only td{background:#f8d0d0}"
          ".b{color:#555}")


def to_html(comparison: Comparison) -> str:
    """The page as one self-contained HTML file (no script, nothing loaded from elsewhere)."""
    e = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Two runs side by side"
           f"</title><style>{_STYLE}</style></head><body><h1>Two runs side by side</h1><ul>",
           *(f"<li>{e(line)}</li>" for line in _summary(comparison)), "</ul>"]
    for table in comparison.tables:
        out.append(f"<h2 id='{e(table.name)}'>{e(table.name)}"
                   + ("" if table.changes else " (no difference)") + "</h2>")
        for side, cols in table.only_columns.items():
            out.append(f"<p>Columns {e(side)}: {e(', '.join(cols))}.</p>")
        out.append("<table><tr><th></th>" + "".join(f"<th>{e(h)}</th>"
                                                  for h in [*table.keys, *table.columns])
                   + "</tr>")
        for key, cells, side in table.rows:
            tds = []
            for c in cells:
                if c.changed:
                    tds.append(f"<td class='changed'>{e(_show(c.a))} → "
                               f"<span class='b'>{e(_show(c.b))}</span></td>")
                else:
                    tds.append(f"<td>{e(_show(c.a if side != ONLY_B else c.b))}</td>")
            mark = side or ("changed" if any(c.changed for c in cells) else "")
            out.append(f"<tr{' class=only' if side else ''}><td>{e(mark)}</td>"
                       + "".join(f"<td>{e(str(k))}</td>" for k in key) + "".join(tds) + "</tr>")
        out.append("</table>")
    out += [*html_section(comparison.verdicts), "</body></html>"]
    return "\n".join(out)


def write_comparison(run_a: str | Path, run_b: str | Path, output: Path | None) -> str:
    """The page for two runs, written to `output` (.html or .md) and its verdicts' summary
    line returned, or returned as markdown."""
    if output is not None and output.suffix not in (".html", ".md"):
        raise ValueError(f"{output}: the page is .html or .md")
    comparison = compare_runs(run_a, run_b)
    if output is None:
        return to_markdown(comparison)
    output.write_text(to_html(comparison) if output.suffix == ".html"
                      else to_markdown(comparison), encoding="utf-8")
    return f"wrote {output}\n{verdict_summary(comparison.verdicts)}"
