"""figures/replication.html: the replication page (page.replication_markdown) as one
self-contained HTML file, which report.html shows in place (a markdown item only downloads)."""

from __future__ import annotations

import html
import re
from typing import Sequence

import pandas as pd

from .page import replication_markdown

_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_STYLE = ("body{font:14px sans-serif;margin:1em}table{border-collapse:collapse}"
          "td,th{border:1px solid #ccc;padding:2px 5px;vertical-align:top;text-align:left}")


def _inline(text: str) -> str:
    text = html.escape(text.replace("\\|", "|"), quote=False)
    return _CODE.sub(r"<code>\1</code>", _BOLD.sub(r"<b>\1</b>", text))


def _cells(line: str) -> list[str]:
    parts = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [_inline(p.strip()) for p in parts]


def replication_html(table: pd.DataFrame, run_name: str | None = None,
                     readings: Sequence[str] = ()) -> str:
    """The page's markdown (headings, paragraphs, pipe tables) rendered as HTML."""
    out = ["<!doctype html><html><head><meta charset='utf-8'>"
           f"<title>Replication at a glance</title><style>{_STYLE}</style></head><body>"]
    lines = replication_markdown(table, run_name, readings).split("\n")
    k = 0
    while k < len(lines):
        line = lines[k]
        if line.startswith("|"):
            rows = []
            while k < len(lines) and lines[k].startswith("|"):
                rows.append(lines[k])
                k += 1
            header, body = _cells(rows[0]), [_cells(r) for r in rows[2:]]
            out.append("<table><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>"
                       + "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>"
                                 for row in body) + "</table>")
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        k += 1
    out.append("</body></html>")
    return "\n".join(out)
