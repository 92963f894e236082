import pandas as pd

from rubriclab.data.summary import PreparedDataset, data_summary_markdown, left_out_counts


def items():
    return pd.DataFrame({
        "item_id": list("abcdef"),
        "split": ["evaluation"] * 4 + ["calibration"] * 2,
        "label": ["correct", "flawed", "flawed", "correct", "correct", "flawed"],
        "flaw_type": ["", "missed_finding", "wrong_resource", "", "", "missed_finding"],
    })


def test_summary_tabulates_split_label_category_and_left_out_reasons():
    left_out = pd.DataFrame({"item_id": ["x", "y", "z"],
                             "reason": ["not sampled", "duplicate of a", "not sampled"]})
    md = data_summary_markdown([PreparedDataset("toy", items(), left_out, "flaw_type")])
    assert "## toy" in md and "6 items." in md
    assert "| evaluation  |         2 |        2 |       4 |" in md
    assert "| total       |         3 |        3 |       6 |" in md
    assert "| calibration | missed_finding |         0 |        1 |" in md
    assert "| evaluation  | (none)         |         2 |        0 |" in md
    assert "Rows left out: 3." in md
    assert "| not sampled       |      2 |" in md and "| duplicate row     |      1 |" in md


def test_unlabelled_datasets_and_nothing_left_out_are_said_plainly():
    hb = pd.DataFrame({"item_id": ["h1", "h2"], "split": ["evaluation"] * 2,
                       "theme": ["hedging", "communication"]})
    md = data_summary_markdown([PreparedDataset("healthbench", hb, pd.DataFrame(), "theme")])
    assert "unlabelled" in md and "Rows left out: none." in md
    assert left_out_counts(pd.DataFrame()).empty
