"""`rubriclab compare RUN_A RUN_B` (rubriclab.replication.compare): a changed number and a
changed verdict are marked, equal ones are not, an output one run lacks is named."""

from pathlib import Path

import pandas as pd

from rubriclab.cli import main
from rubriclab.replication.compare import compare_runs, run_folder, to_html, to_markdown


def make_run(folder: Path, rate: float = 0.5, verdict: str = "other models",
             extra: bool = False) -> Path:
    (folder / "figures" / "carry").mkdir(parents=True)
    pd.DataFrame([{"id": "carry.a", "where": "Figure 1", "sentence": "s", "run": "4.2",
                   "interval": "[1, 9]", "n": 24, "as_measured": "replicates",
                   "verdict": verdict},
                  {"id": "carry.b", "where": "Figure 2", "sentence": "t", "run": "7",
                   "interval": "", "n": 24, "as_measured": "holds", "verdict": "other models"}]
                 ).to_csv(folder / "figures" / "replication.csv", index=False)
    pd.DataFrame({"judge": ["fake/hash", "fake/hash"], "rubric": ["hand", "label"],
                  "rate": [rate, 0.25], "n": [10, 10]}).to_csv(
        folder / "figures" / "carry" / "fig1.csv", index=False)
    if extra:
        pd.DataFrame({"x": [1]}).to_csv(folder / "figures" / "carry" / "only_here.csv",
                                        index=False)
    return folder


def test_a_changed_number_and_verdict_are_marked_and_a_missing_output_named(tmp_path):
    a = make_run(tmp_path / "a", extra=True)
    b = make_run(tmp_path / "b", rate=0.75, verdict="cannot tell")
    comparison = compare_runs(a, b)
    tables = {t.name: t for t in comparison.tables}
    assert comparison.missing == {"A": [], "B": ["figures/carry/only_here.csv"]}
    fig1 = tables["figures/carry/fig1.csv"]
    assert fig1.keys == ["judge", "rubric"] and fig1.columns == ["rate", "n"]
    changed = {(tuple(key), col): (cell.a, cell.b) for key, cells, _ in fig1.rows
               for col, cell in zip(fig1.columns, cells) if cell.changed}
    assert changed == {(("fake/hash", "hand"), "rate"): (0.5, 0.75)}
    claims = tables["figures/replication.csv"]
    changed = [(key, col) for key, cells, _ in claims.rows
               for col, cell in zip(claims.columns, cells) if cell.changed]
    assert changed == [(["carry.a", "Figure 1"], "verdict")]
    page = to_markdown(comparison)
    assert "**0.5 → 0.75**" in page and "**other models → cannot tell**" in page
    assert "| **changed** | fake/hash | label |" not in page  # the equal row is not marked
    assert "|  | fake/hash | label | 0.25 | 10 |" in page
    assert "Missing in run B: figures/carry/only_here.csv." in page
    html = to_html(comparison)
    assert html.count("class='changed'") == 2 and "<script" not in html


def test_a_row_one_run_lacks_is_marked_and_identical_runs_show_no_difference(tmp_path):
    a = make_run(tmp_path / "a")
    b = make_run(tmp_path / "b")
    assert not any(t.changes for t in compare_runs(a, b).tables)
    frame = pd.read_csv(b / "figures/carry/fig1.csv")
    frame.loc[1, "rubric"] = "generated"
    frame.to_csv(b / "figures/carry/fig1.csv", index=False)
    fig1 = {t.name: t for t in compare_runs(a, b).tables}["figures/carry/fig1.csv"]
    assert sorted(side for _, _, side in fig1.rows) == ["", "only in A", "only in B"]


def test_the_command_names_a_folder_that_is_no_run(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_run(tmp_path / "runs" / "first")
    make_run(tmp_path / "second", rate=0.9)
    assert run_folder("first") == Path("runs/first")
    assert main(["compare", "first", "second", "-o", "both.html"]) == 0
    assert "0.5 → <span class='b'>0.9</span>" in (tmp_path / "both.html").read_text()
    assert main(["compare", "first", "nowhere"]) == 2
    assert "nowhere: no figures/ folder" in capsys.readouterr().err
