"""How report.html groups and marks its items (`report(..., category=, subcategory=, labels=)` in
workflow/rules): a subcategory per paper figure or table, named from its output's name, and in
an ablation (`base_run`) a label saying which items are copied from the base run
(rubriclab.reuse records the copies)."""

from __future__ import annotations

import re
from pathlib import Path

from .reuse import copied_from_base

# fig3_accuracy..., figA1_..., fig5b_supplement, table2_gate_replay, tableA4_..., table2_supplement
_PAPER_ITEM = re.compile(r"^(fig|table)(A?)(\d+)([a-z]?)_")


def paper_item(name: str) -> str:
    """The paper's figure or table an output is named after ("Figure 3", "Table A.4"); a
    supplement, or a panel's (fig5b_...), is grouped with the item it extends."""
    match = _PAPER_ITEM.match(name)
    if match is None:
        raise ValueError(f"report item {name!r}: not named fig<N>_... or table<N>_... (give the "
                         "report() flag an explicit subcategory)")
    kind, appendix, number, _panel = match.groups()  # a panel (5b) goes with its figure
    return f"{'Figure' if kind == 'fig' else 'Table'} {appendix + '.' if appendix else ''}{number}"


def made_by(path: str | Path, base_run: str | None, run_dir: str | Path = ".") -> dict | None:
    """The label of a report item of an ablation: made by this run, or copied from the base
    run (and not made again since); None outside an ablation (no labels: the report lists
    items by name as usual)."""
    if base_run is None:
        return None
    copied = copied_from_base(path, run_dir)
    return {"item": Path(path).name,
            "made by": f"copied from base run {copied}" if copied else "this run"}
