"""`rubriclab compare RUN_A RUN_B` (rubriclab.replication.compare): a changed number and a
changed verdict are marked, equal ones are not, an output one run lacks is named; the judges'
verdicts (compare_verdicts) counted as agreeing, flipped each way or one run's only."""

from pathlib import Path

import pandas as pd
import pytest

from rubriclab import browser
from rubriclab.cli import main
from rubriclab.replication.compare import compare_runs, run_folder, to_html, to_markdown
from rubriclab.replication.compare_verdicts import (compare_verdicts, markdown_section,
                                                    read_verdicts, summary)


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


# --- the judges' verdicts (rubriclab.replication.compare_verdicts) ------------------------------

def write_verdicts(folder: Path, answers: dict[tuple[str, str], str],
                   second_judge_label: str = "Judge Two") -> None:
    """figures/verdicts.html of a run, made as the verdict browser makes it: carry Figure 2
    verdict tables of two judges (fake/hash and fake/hash?salt=b, the second by a label) turned
    into tidy rows by rubriclab.browser, written with browser.write_page."""
    frames = []
    for judge in ("fake/hash", "fake/hash?salt=b"):
        rows = [{"item_id": item, "label": "correct", "run": 0, "rendering": "per_check",
                 "length": int(check[-1]), "check_id": check, "verdict": verdict,
                 "cache_key": f"{judge}-{item}-{check}"}
                for (item, check), verdict in answers.items()]
        frames.append(browser.fig2_rows(pd.DataFrame(rows), "carry fig2", "summedits", judge,
                                        {"g01": "Consistent.", "g02": "Complete."}))
    (folder / "figures").mkdir(parents=True, exist_ok=True)
    browser.write_page(folder / "figures" / "verdicts.html", pd.concat(frames), {},
                       paths=browser.machine_paths(folder),
                       labels={"fake/hash?salt=b": second_judge_label})


A_ANSWERS = {("i1", "g01"): "yes", ("i1", "g02"): "yes", ("i2", "g01"): "no"}


def test_flipped_verdicts_each_way_and_rows_one_run_has_are_counted_and_listed(tmp_path):
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    write_verdicts(a, A_ANSWERS)
    # i1 g01 flips yes -> no, i2 g01 no -> yes, i3 only in B; the second judge is renamed.
    write_verdicts(b, {("i1", "g01"): "no", ("i1", "g02"): "yes", ("i2", "g01"): "yes",
                       ("i3", "g01"): "yes"}, second_judge_label="Judge 2")
    verdicts = compare_runs(a.resolve(), b.resolve()).verdicts
    counts = {g.judge: (g.agree, g.flipped, g.only_a, g.only_b, g.ways) for g in verdicts.groups}
    assert counts == {"fake/hash": (1, 2, 0, 1, {"no → yes": 1, "yes → no": 1}),
                      "Judge 2": (0, 0, 0, 4, {}), "Judge Two": (0, 0, 3, 0, {})}
    assert verdicts.judges_only == {"A": ["Judge Two"], "B": ["Judge 2"]}
    assert [(f["judge"], f["item_id"], f["check"], f["verdict_a"], f["verdict_b"])
            for f in verdicts.flips] == [("fake/hash", "i1", "g01: Consistent.", "yes", "no"),
                                         ("fake/hash", "i2", "g01: Consistent.", "no", "yes")]
    line = ("Verdicts: 3 in both runs, 1 agree, 2 flipped (no → yes 1, yes → no 1), 3 only in "
            "A, 5 only in B; judges only in A: Judge Two; judges only in B: Judge 2.")
    assert summary(verdicts) == line
    page = to_markdown(compare_runs(a, b))
    assert f"- {line}" in page and "## The judges' verdicts\n" in page
    assert "| carry fig2 | summedits | fake/hash | 1 | 2 (no → yes 1, yes → no 1) | 0 | 1 |" in page
    assert "The 2 flipped verdicts:" in page
    assert ("| carry fig2 | summedits | fake/hash | i1 | correct | generic | g01: Consistent. "
            "| per_check | 0 | yes | no |") in page
    html = to_html(compare_runs(a.resolve(), b.resolve()))
    assert str(tmp_path) not in html and "salt=b" not in html and "<script" not in html
    assert html.count("<td class=changed>") == 4  # A's and B's verdict of each flip
    # The list is bounded, and says of how many.
    shown = compare_verdicts(read_verdicts(a, "a"), read_verdicts(b, "b"), shown=1)
    assert len(shown.flips) == 1 and "The first 1 of 2 flipped verdicts:" in "\n".join(
        markdown_section(shown))


def test_equal_verdicts_say_so_and_the_command_prints_the_verdicts_line(tmp_path, capsys):
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    write_verdicts(a, A_ANSWERS)
    write_verdicts(b, A_ANSWERS)
    verdicts = compare_runs(a, b).verdicts
    assert verdicts.changes == 0 and not verdicts.flips
    assert "## The judges' verdicts (no difference)" in to_markdown(compare_runs(a, b))
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "both.md")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "Verdicts: 6 in both runs, 6 agree, 0 flipped, 0 only in A, 0 only in B.")


def test_a_run_without_verdicts_is_named_and_a_page_without_data_refused(tmp_path):
    a, b = make_run(tmp_path / "a"), make_run(tmp_path / "b")
    write_verdicts(a, A_ANSWERS)
    verdicts = compare_runs(a, b).verdicts
    assert verdicts.missing == ["B"] and summary(verdicts) == (
        "Verdicts: not compared, run B has no figures/verdicts.html.")
    (b / "figures" / "verdicts.html").write_text("<html>an older page</html>")
    with pytest.raises(ValueError, match=r"run b: figures/verdicts.html holds no verdict data"):
        compare_runs(a, b)
