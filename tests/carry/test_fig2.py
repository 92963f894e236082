import math

import pandas as pd
import pytest
from matplotlib import image as mpimg

from rubriclab.carry.fig2 import FIG2_COLUMNS, fig2_table, plot_fig2

MEAN_COLUMNS = [c for c in FIG2_COLUMNS if c != "dataset"]


def mean_table(runs: int, offset: float) -> pd.DataFrame:
    rows = []
    for rendering in ("per_check", "paragraph"):
        for length in range(3, 11):
            passed = 90.0 - 3 * length - offset - (5 if rendering == "paragraph" else 0)
            caught = 40.0 + 2 * length + offset
            rows.append({
                "rendering": rendering, "length": length, "runs": runs,
                "n_correct": 50 * runs, "n_flawed": 49 * runs, "n_undetermined": length % 2,
                "correct_passed": passed, "flawed_caught": caught,
                "correct_passed_min": passed - 2, "correct_passed_max": passed + 2,
                "flawed_caught_min": caught - 1, "flawed_caught_max": caught + 1,
            })
    return pd.DataFrame(rows)[MEAN_COLUMNS]


@pytest.fixture
def tables():
    return {"summedits": mean_table(2, 0.0).assign(dataset="summedits"),
            "ragtruth": mean_table(2, 7.5).assign(dataset="ragtruth")}


def test_fig2_table_columns_and_values_equal_inputs(tables):
    combined = fig2_table(tables)
    assert list(combined.columns) == FIG2_COLUMNS == [
        "dataset", "rendering", "length", "runs", "n_correct", "n_flawed", "n_undetermined",
        "correct_passed", "flawed_caught", "correct_passed_min", "correct_passed_max",
        "flawed_caught_min", "flawed_caught_max"]
    assert len(combined) == 32
    assert list(dict.fromkeys(combined["dataset"])) == ["summedits", "ragtruth"]
    for dataset, table in tables.items():
        got = combined[combined["dataset"] == dataset].set_index(["rendering", "length"])
        want = table.set_index(["rendering", "length"])
        pd.testing.assert_frame_equal(
            got[want.columns].sort_index(), want.sort_index(), check_like=False)


def test_fig2_table_adds_missing_dataset_column():
    combined = fig2_table({"ragtruth": mean_table(1, 0.0)})
    assert set(combined["dataset"]) == {"ragtruth"}


def test_fig2_table_rejects_mismatched_dataset_and_missing_columns():
    with pytest.raises(ValueError, match="other datasets"):
        fig2_table({"ragtruth": mean_table(1, 0.0).assign(dataset="summedits")})
    with pytest.raises(ValueError, match="flawed_caught_max"):
        fig2_table({"ragtruth": mean_table(1, 0.0).drop(columns="flawed_caught_max")})


def test_plot_writes_valid_png_and_pdf(tables, tmp_path):
    png, pdf = tmp_path / "fig" / "fig2.png", tmp_path / "fig" / "fig2.pdf"
    plot_fig2(tables, png, pdf, judge_label="Qwen2.5-0.5B")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    pixels = mpimg.imread(png)
    height, width = pixels.shape[:2]
    assert 400 <= height <= 3000 and 800 <= width <= 4000 and width > height
    assert pixels.std() > 0  # not a blank canvas


def test_plot_handles_one_run_and_nan_rates(tmp_path):
    table = mean_table(1, 0.0)
    table.loc[0, "correct_passed"] = math.nan
    png, pdf = tmp_path / "a.png", tmp_path / "a.pdf"
    plot_fig2({"summedits": table, "ragtruth": mean_table(1, 3.0)}, png, pdf, "fake")
    assert png.stat().st_size > 0 and pdf.stat().st_size > 0


def test_plot_closes_its_figure(tables, tmp_path):
    import matplotlib.pyplot as plt

    before = len(plt.get_fignums())
    plot_fig2(tables, tmp_path / "b.png", tmp_path / "b.pdf", "fake")
    assert len(plt.get_fignums()) == before


from tests.figure_labels import capture_figures  # noqa: E402,F401


def test_equal_values_of_two_series_show_as_rings_of_different_sizes(capture_figures, tmp_path):
    table = mean_table(1, 0.0)
    # the paragraph rendering's caught rate equals the per-check rendering's at length 10
    equal = table["length"] == 10
    table.loc[equal & (table["rendering"] == "paragraph"), "flawed_caught"] = float(
        table.loc[equal & (table["rendering"] == "per_check"), "flawed_caught"].iloc[0])
    plot_fig2({"summedits": table}, tmp_path / "e.png", tmp_path / "e.pdf", "fake")
    ax = capture_figures[-1].axes[0]
    y = float(table.loc[equal, "flawed_caught"].iloc[0])
    at_point = [line for line in ax.get_lines()
                if any(x == 10 and v == y for x, v in zip(line.get_xdata(), line.get_ydata()))]
    series = [line for line in at_point if len(line.get_xdata()) > 1]
    rings = [line for line in at_point if len(line.get_xdata()) == 1]
    # (per check, its passed rate is 60 there too): each series after the first a larger ring
    assert len(series) == 3 and len(rings) == 2
    assert len({line.get_markersize() for line in at_point}) == 3
    assert all(line.get_markerfacecolor() == "none" for line in at_point)


def test_a_dataset_of_your_own_is_named_by_its_title_and_words(tmp_path, capture_figures):
    from tests.figure_labels import visible_texts

    own = {"travel_replies": mean_table(1, 3.0).assign(dataset="travel_replies")}
    plot_fig2(own, tmp_path / "f.png", tmp_path / "f.pdf", judge_label="my judge",
              titles={"travel_replies": "Travel desk replies"},
              words={"travel_replies": {"correct": "good", "flawed": "bad", "items": "replies"}})
    texts = visible_texts(capture_figures[-1])
    assert "(a) Travel desk replies: 50 good, 49 bad" in texts
    assert "good replies passed (one call per check)" in texts
    assert "percent of replies" in texts
    assert any(t.startswith("Checklists of increasing length: my judge judge") for t in texts)
    assert not any("travel_replies" in t or "SummEdits" in t or "Generic" in t for t in texts)
