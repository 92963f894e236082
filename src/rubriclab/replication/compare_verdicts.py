"""The judges' verdicts of two runs side by side, for `rubriclab compare`: which agree, which
flipped and which way, which only one run has.

A run's verdicts are read back from its figures/verdicts.html, the one tidy table of every
verdict of the run that the verdict browser gathered (rubriclab.browser: TIDY_COLUMNS, stored in
the page as JSON, each column its distinct values and one index per row), so both runs' verdicts
are the rows the verdict browser shows, judges by their display names (the run's `labels:`,
else rubriclab.labels' defaults). Two rows are the same verdict when they answer the same
question: study, dataset, judge, item, label, rubric, check, rendering and sample (the n-th
repeat of a question with the n-th). A judge given another display name in one run is a judge
only that run has.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rubriclab.browser import display_name, read_page_table

PAGE = Path("figures/verdicts.html")
KEY = ["study", "dataset", "judge", "item_id", "label", "rubric", "check", "rendering", "sample"]
GROUP = ["study", "dataset", "judge"]
FLIPS_SHOWN = 200  # the page lists this many flipped verdicts, and says how many there are
_HEADERS = {"item_id": "item"}


@dataclass
class GroupCount:
    """The verdicts of one study, dataset and judge in the two runs."""
    study: str
    dataset: str
    judge: str
    agree: int = 0
    flipped: int = 0
    only_a: int = 0
    only_b: int = 0
    ways: dict[str, int] = field(default_factory=dict)  # "yes → no": how many


@dataclass
class VerdictDiff:
    """Both runs' verdicts compared; `missing` names the runs without a verdicts page."""
    missing: list[str] = field(default_factory=list)
    groups: list[GroupCount] = field(default_factory=list)
    ways: dict[str, int] = field(default_factory=dict)
    flips: list[dict[str, str]] = field(default_factory=list)  # the first FLIPS_SHOWN
    judges_only: dict[str, list[str]] = field(default_factory=dict)  # "A" / "B"

    def total(self, what: str) -> int:
        return sum(getattr(g, what) for g in self.groups)

    @property
    def changes(self) -> int:
        return self.total("flipped") + self.total("only_a") + self.total("only_b")


def read_verdicts(run: Path, name: str) -> pd.DataFrame | None:
    """The run's tidy verdict table (KEY columns and the verdict), from its verdicts page; None
    where the run has no page. `name`: how errors name the run."""
    path = Path(run) / PAGE
    if not path.is_file():
        return None
    try:
        frame = read_page_table(path.read_text(encoding="utf-8"), [*KEY, "verdict"])
    except ValueError as exc:
        raise ValueError(f"run {name}: {PAGE} {exc} (rebuild it with snakemake -f "
                         f"{PAGE})") from None
    # A page of an earlier release showed judges by their model strings (the columns the
    # browser shows by display names).
    for column in ("judge", "rubric", "item_id"):
        frame[column] = frame[column].map(display_name)
    return frame


def _tally(ways: pd.Series) -> dict[str, int]:
    return {str(way): int(n) for way, n in ways.value_counts().sort_index().items()}


def compare_verdicts(a: pd.DataFrame, b: pd.DataFrame,
                     shown: int = FLIPS_SHOWN) -> VerdictDiff:
    """The verdicts of run A and run B (read_verdicts' tables) matched question by question."""
    sides = [frame.assign(_n=frame.groupby(KEY, sort=False).cumcount()) for frame in (a, b)]
    both = sides[0].merge(sides[1], how="outer", on=[*KEY, "_n"], suffixes=("_a", "_b"),
                          indicator=True, sort=False)
    in_both = both["_merge"] == "both"
    flipped = in_both & (both["verdict_a"] != both["verdict_b"])
    both["_way"] = (both["verdict_a"].fillna("") + " → " + both["verdict_b"].fillna("")).where(
        flipped, "")
    diff = VerdictDiff()
    for (study, dataset, judge), rows in both.groupby(GROUP, sort=True):
        state = rows["_merge"]
        ways = rows.loc[flipped[rows.index], "_way"]
        diff.groups.append(GroupCount(
            str(study), str(dataset), str(judge),
            agree=int((state == "both").sum()) - len(ways), flipped=len(ways),
            only_a=int((state == "left_only").sum()), only_b=int((state == "right_only").sum()),
            ways=_tally(ways)))
    diff.ways = _tally(both.loc[flipped, "_way"])
    diff.flips = both.loc[flipped, [*KEY, "verdict_a", "verdict_b"]].head(shown).to_dict("records")
    judges = [set(frame["judge"]) for frame in (a, b)]
    diff.judges_only = {"A": sorted(judges[0] - judges[1]), "B": sorted(judges[1] - judges[0])}
    return diff


def compare_runs_verdicts(a: Path, b: Path, names: tuple[str, str]) -> VerdictDiff:
    """The verdicts of two run folders (`names`: how to name them)."""
    tables = [read_verdicts(folder, name) for folder, name in zip((a, b), names)]
    if tables[0] is None or tables[1] is None:
        return VerdictDiff(missing=[s for s, t in zip("AB", tables) if t is None])
    return compare_verdicts(tables[0], tables[1])


def _ways(ways: dict[str, int]) -> str:
    return ", ".join(f"{way} {n}" for way, n in ways.items())


def summary(diff: VerdictDiff) -> str:
    """One line: how many verdicts agree, flipped (each way) and only one run has."""
    if diff.missing:
        return (f"Verdicts: not compared, run {' and run '.join(diff.missing)} "
                f"{'has' if len(diff.missing) == 1 else 'have'} no {PAGE}.")
    line = (f"Verdicts: {diff.total('agree') + diff.total('flipped')} in both runs, "
            f"{diff.total('agree')} agree, {diff.total('flipped')} flipped"
            + (f" ({_ways(diff.ways)})" if diff.ways else "")
            + f", {diff.total('only_a')} only in A, {diff.total('only_b')} only in B")
    for side in ("A", "B"):
        if diff.judges_only.get(side):
            line += f"; judges only in {side}: {', '.join(diff.judges_only[side])}"
    return line + "."


def _group_rows(diff: VerdictDiff) -> tuple[list[str], list[list[str]]]:
    header = ["study", "dataset", "judge", "agree", "flipped", "only in A", "only in B"]
    rows = [[g.study, g.dataset, g.judge, str(g.agree),
             str(g.flipped) + (f" ({_ways(g.ways)})" if g.ways else ""), str(g.only_a),
             str(g.only_b)] for g in diff.groups]
    return header, rows


def _flip_rows(diff: VerdictDiff) -> tuple[list[str], list[list[str]]]:
    header = [_HEADERS.get(c, c) for c in KEY] + ["A", "B"]
    return header, [[str(f[c]) for c in [*KEY, "verdict_a", "verdict_b"]] for f in diff.flips]


def _listed(diff: VerdictDiff) -> str:
    total = diff.total("flipped")
    return (f"The {total} flipped verdicts:" if len(diff.flips) == total else
            f"The first {len(diff.flips)} of {total} flipped verdicts:")


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The compare page's pipe table, then a blank line. Not rubriclab.tidy.markdown_table:
    cells here are the runs' own text, so a | or a line break in one is escaped, and rows are
    not padded (a page may hold every row of every table of two runs)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(cell(v) for v in row) + " |" for row in rows), ""]


def markdown_section(diff: VerdictDiff) -> list[str]:
    """The page's section on the judges' verdicts, as markdown lines."""
    out = ["## The judges' verdicts" + ("" if diff.changes or diff.missing
                                        else " (no difference)"), "", summary(diff), ""]
    if diff.missing:
        return out
    out += markdown_table(*_group_rows(diff))
    if diff.flips:
        out += [_listed(diff), "", *markdown_table(*_flip_rows(diff))]
    return out


def html_section(diff: VerdictDiff) -> list[str]:
    """The page's section on the judges' verdicts, as HTML lines (no script)."""
    e = html.escape

    def table(header: list[str], rows: list[list[str]], changed: tuple[int, ...] = ()) -> str:
        cells = ["<tr>" + "".join(f"<td{' class=changed' if i in changed else ''}>{e(v)}</td>"
                                  for i, v in enumerate(row)) + "</tr>" for row in rows]
        return ("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>"
                + "".join(cells) + "</table>")

    out = ["<h2 id='verdicts'>The judges' verdicts" + ("" if diff.changes or diff.missing
                                                        else " (no difference)") + "</h2>",
           f"<p>{e(summary(diff))}</p>"]
    if diff.missing:
        return out
    out.append(table(*_group_rows(diff)))
    if diff.flips:
        header, rows = _flip_rows(diff)
        out += [f"<p>{e(_listed(diff))}</p>", table(header, rows, (len(KEY), len(KEY) + 1))]
    return out
