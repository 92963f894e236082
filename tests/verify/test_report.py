import pandas as pd
import pytest

from rubriclab.verify.calibration import POST_CONFUSION
from rubriclab.verify.report import calibration_markdown, carry_judge_rows, plot_calibration, post_row


def per_check_rows(item_id, label, verdicts):
    return [dict(item_id=item_id, label=label, run=0, rendering="per_check", length=i + 1,
                 check_id=f"g{i + 1:02d}", verdict=v) for i, v in enumerate(verdicts)]


def toy():
    """Calibration: 4 correct (judge passes 3), 4 flawed (judge passes 1): TPR 0.75, TNR 0.75.
    Evaluation: 10 items, judge passes 6 of them; 5 are correct."""
    rows, items = [], []
    calibration = [("c", "correct", "yes")] * 3 + [("c", "correct", "no")] + \
                  [("f", "flawed", "yes")] + [("f", "flawed", "no")] * 3
    evaluation = [("c", "correct", "yes")] * 4 + [("c", "correct", "no")] + \
                 [("f", "flawed", "yes")] * 2 + [("f", "flawed", "no")] * 3
    for split, specs in (("calibration", calibration), ("evaluation", evaluation)):
        for i, (prefix, label, second) in enumerate(specs):
            item_id = f"{split}-{prefix}{i}"
            rows += per_check_rows(item_id, label, ["yes", second])
            items.append({"item_id": item_id, "split": split})
    return pd.DataFrame(rows), pd.DataFrame(items)


def test_carry_judge_is_calibrated_on_calibration_and_corrected_on_evaluation():
    verdicts, items = toy()
    (row,) = carry_judge_rows(verdicts, items, "toy", "fake/x", length=2, n_boot=2000, seed=0,
                              level=0.95)
    assert (row["tp"], row["fn"], row["fp"], row["tn"]) == (3, 1, 1, 3)
    assert row["q"] == pytest.approx(0.6) and row["n_judged"] == 10
    assert row["corrected"] == pytest.approx((0.6 - 0.25) / (0.75 - 0.25))
    assert row["human_pass_rate"] == pytest.approx(0.5)
    assert row["corrected_low"] < row["corrected"] < row["corrected_high"]
    assert row["labelled_in_judged"] is False and row["ppi"] is None


def test_estimates_outside_the_unit_interval_are_shown_clipped_with_the_raw_value():
    from rubriclab.verify.report import _shown
    assert _shown(-0.1234, 0.0) == "0.0 (raw -12.3)"
    assert _shown(0.5, 0.5) == "50.0"


def test_length_selects_the_checks_that_count():
    verdicts, items = toy()
    (row,) = carry_judge_rows(verdicts, items, "toy", "fake/x", length=1, n_boot=500, seed=0,
                              level=0.95)
    # With only the first check (always "yes") every item passes: TNR 0, an uninformative judge.
    assert row["tnr"] == 0 and row["status"] == "uninformative_judge" and row["corrected"] is None


def test_verdicts_for_unknown_items_are_refused():
    verdicts, items = toy()
    with pytest.raises(ValueError, match="not in the items"):
        carry_judge_rows(verdicts, items.iloc[1:], "toy", "fake/x", 2, 200, 0, 0.95)


def test_post_row_reproduces_the_worked_example():
    row = post_row(n_boot=2000, seed=0, level=0.95)
    assert round(row["corrected"], 2) == 0.65 and row["q"] == 0.75
    assert (row["tp"], row["fn"], row["fp"], row["tn"]) == (37, 1, 4, 8)


def test_table_and_figure(tmp_path):
    verdicts, items = toy()
    table = pd.DataFrame([post_row(1000, 0, 0.95)] + carry_judge_rows(
        verdicts, items, "toy", "fake/x", 1, 200, 0, 0.95) + carry_judge_rows(
        verdicts, items, "toy", "fake/x", 2, 200, 0, 0.95))
    markdown = calibration_markdown(table)
    assert "| worked example (the post's numbers) | refund replies |" in markdown
    assert "| 38/12 | 97.4 | 66.7 | 90.0 | 75.0" in markdown and "| 65.1 |" in markdown
    assert "uninformative_judge" in markdown
    # each column names its interval method
    assert "reported q and TPR/TNR (csv), Wilson score interval" in markdown
    assert "Rogan-Gladen p, Lang-Reiczigel adjusted Wald interval" in markdown
    assert "PPI p, the normal" in markdown
    # Rogan-Gladen and PPI side by side for the worked example, estimates and intervals
    post = table.iloc[0]
    assert post.corrected_clipped == pytest.approx(0.6507, abs=1e-4)
    assert post.ppi == pytest.approx(0.68) and post.labelled_in_judged
    assert (f"| 65.1 | [{100 * post.corrected_low:.1f}, {100 * post.corrected_high:.1f}] |"
            f" 68.0 | [{100 * post.ppi_low:.1f}, {100 * post.ppi_high:.1f}] |") in markdown
    # the toy judge (TPR 0.75, TNR 0.75 on 4 + 4 labels): flagged, with the reason
    toy_row = table[(table.dataset == "toy") & (table.status != "uninformative_judge")].iloc[0]
    assert not toy_row.stable and "wider than [0, 1]" in toy_row.interval_flags
    assert f"| unstable: {toy_row.interval_flags} |" in markdown
    assert "n/a (labels not from the judged set)" in markdown
    assert "| ok |" in markdown  # the post's interval is not flagged
    plot_calibration(table, POST_CONFUSION, tmp_path / "f.png", tmp_path / "f.pdf")
    assert (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "f.pdf").read_bytes()[:5] == b"%PDF-"


from tests.figure_labels import assert_readable, capture_figures  # noqa: E402,F401


def test_figure_names_each_judge_by_label_with_its_counts(capture_figures, tmp_path):
    verdicts, items = toy()
    table = pd.DataFrame([post_row(1000, 0, 0.95)] + carry_judge_rows(
        verdicts, items, "toy", "fake/hash?salt=judge", 1, 200, 0, 0.95))
    plot_calibration(table, POST_CONFUSION, tmp_path / "f.png", tmp_path / "f.pdf")
    assert_readable(capture_figures[-1], shows=("fake/hash (judge) judge",
                                                "8 labelled, 10 judged", "the post's judge"))


from tests.figure_labels import texts_outside_their_axes, visible_texts  # noqa: E402


def test_figure_notes_name_their_estimator_and_stay_inside_the_panel(capture_figures, tmp_path):
    verdicts, items = toy()
    table = pd.DataFrame([post_row(1000, 0, 0.95)] + carry_judge_rows(
        verdicts, items, "toy", "fake/x", 2, 200, 0, 0.95))
    toy_row = table.iloc[1]
    assert not toy_row.stable and "wider than [0, 1]" in toy_row.interval_flags
    plot_calibration(table, POST_CONFUSION, tmp_path / "f.png", tmp_path / "f.pdf")
    fig = capture_figures[-1]
    texts = visible_texts(fig)
    unstable = [t for t in texts if "wider than [0, 1]" in t]
    assert len(unstable) == 1 and unstable[0].startswith("Rogan-Gladen interval unstable: ")
    # the toy row has no PPI marker and says why; the post's row has no human star and says why
    assert "PPI n/a: the labelled items are not part of the judged set" in texts
    assert any(t.startswith("no human pass rate: humans labelled only 50 of the 400 judged")
               for t in texts)
    assert not texts_outside_their_axes(fig)


def test_figure_names_the_datasets_as_the_papers_do(capture_figures, tmp_path):
    verdicts, items = toy()
    table = pd.DataFrame([post_row(1000, 0, 0.95)] + carry_judge_rows(
        verdicts, items, "summedits", "fake/x", 1, 200, 0, 0.95))
    plot_calibration(table, POST_CONFUSION, tmp_path / "f.png", tmp_path / "f.pdf")
    texts = visible_texts(capture_figures[-1])
    assert any(t.startswith("SummEdits, ") for t in texts)
    assert not any(t.startswith("summedits") for t in texts)
