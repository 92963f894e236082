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


# The verdict claims of each work rest on (the report item of figures/verdicts.html).
VERDICTS_ITEM = "verdicts.html"


def replication_landing(csv_path: str | Path) -> dict:
    """report.html's first page (workflow/report/workflow.rst, a param of rule replication read
    when the report is built): the verdict counts, overall and per work (`work_counts`), and,
    per work, a headline per tested claim with the report items of the outputs it rests on (`items`: each output's figure or table,
    <stem>.png or <stem>.md, kept where the report has it) and the files that are no report
    item (`files`). Text is escaped for reStructuredText (rubriclab.markup). {} before the page
    is made."""
    import pandas as pd

    from .markup import rst_text

    path = Path(csv_path)
    if not path.exists():
        return {}
    table = pd.read_csv(path, keep_default_na=False, dtype=str)
    tested = table[~table["verdict"].isin(["not computed"]) & (table["kind"] != "arithmetic")]
    works: dict[str, list[dict]] = {}
    for row in tested.to_dict("records"):
        sources = row.get("outputs", "").split()
        stems = list(dict.fromkeys(Path(s).stem for s in sources))
        value = row["run"] or row["as_measured"]
        works.setdefault(row["work"], []).append({
            "where": rst_text(row["where"]), "verdict": rst_text(row["verdict"]),
            "sentence": rst_text(row["sentence"]), "seed": rst_text(row["seed"]),
            "run": rst_text(value) + (f" {rst_text(row['interval'])}" if row["interval"] else ""),
            "items": [f"{stem}{ext}" for stem in stems for ext in (".png", ".md")],
            "files": [s for s in sources if not s.startswith("figures/")],
        })

    def counted(verdicts: pd.Series) -> str:
        return ", ".join(f"{n} {rst_text(v)}" for v, n in verdicts.value_counts().items())
    return {"counts": counted(tested["verdict"]), "claims": len(tested), "works": works,
            "work_counts": {work: f"{len(rows)} claim{'s' * (len(rows) != 1)}: "
                                  f"{counted(rows['verdict'])}"
                            for work, rows in tested.groupby("work")},
            "verdicts": VERDICTS_ITEM}
