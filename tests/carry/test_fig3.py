from fractions import Fraction

import numpy as np
import pytest
from matplotlib import image as mpimg

from rubriclab.carry.fig3 import (
    FIG3_COLUMNS,
    accuracy_vs_flawed_share,
    balanced_accuracy,
    crossover_share,
    crossovers,
    plot_fig3,
)

# Recon rates as exact fractions. The hand-written rubric's start in carry's Table 2
# (Sonnet judge): 97.2 / 83.3 = 35 of 36 correct passed, 60 of 72 flawed caught. A
# generated draft that fails almost everything: 1 of 24 correct passed (about 4%, as in
# Figure 1), every flawed report caught. The label-taught start: 83.3 / 100.
HAND = (Fraction(35, 36), Fraction(60, 72))
DRAFT = (Fraction(1, 24), Fraction(1))
LABEL = (Fraction(30, 36), Fraction(1))
RATES = {"hand-written": HAND, "generated draft": DRAFT, "label-taught": LABEL}


def test_balanced_accuracy_of_a_draft_that_fails_almost_everything_is_chance():
    assert balanced_accuracy(0.04, 1.00) == pytest.approx(0.52)
    assert round(100 * balanced_accuracy(*DRAFT)) == 52
    assert balanced_accuracy(*HAND) == Fraction(35, 36) / 2 + Fraction(5, 12)


def test_crossover_share_is_exact():
    # (35/36 - 1/24) / ((35/36 - 1/24) + (1 - 5/6)) = (67/72) / (79/72)
    assert crossover_share(DRAFT, HAND) == Fraction(67, 79)
    assert crossover_share(HAND, DRAFT) == Fraction(67, 79)
    assert float(crossover_share(DRAFT, HAND)) == pytest.approx(0.8481, abs=1e-4)
    assert crossover_share((0.04, 1.0), (0.972, 0.833)) == pytest.approx(0.932 / 1.099)


def test_draft_outscores_hand_rubric_only_above_eighty_percent_flawed():
    table = accuracy_vs_flawed_share({"hand": HAND, "draft": DRAFT},
                                     shares=[0.0, 0.5, 0.8, 0.84, 0.85, 0.9, 1.0])
    accuracy = table.pivot(index="flawed_share", columns="rubric", values="accuracy")
    hand_ahead = accuracy["hand"] > accuracy["draft"]
    assert hand_ahead.to_dict() == {0.0: True, 0.5: True, 0.8: True, 0.84: True,
                                    0.85: False, 0.9: False, 1.0: False}
    assert accuracy.loc[0.5, "hand"] == pytest.approx(float(HAND[0] + HAND[1]) / 2)
    assert accuracy.loc[0.5, "draft"] == pytest.approx(0.5 * (1 / 24) + 0.5)
    assert accuracy.loc[0.9, "draft"] == pytest.approx(0.1 / 24 + 0.9)
    assert accuracy.loc[0.9, "hand"] == pytest.approx(0.1 * 35 / 36 + 0.9 * 60 / 72)


def test_accuracies_are_equal_at_the_crossover():
    share = float(crossover_share(DRAFT, HAND))
    table = accuracy_vs_flawed_share({"hand": HAND, "draft": DRAFT}, shares=[share])
    hand, draft = table.set_index("rubric")["accuracy"][["hand", "draft"]]
    assert hand == pytest.approx(draft, abs=1e-12)


def test_parallel_or_dominating_rubrics_have_no_crossover():
    assert crossover_share((0.9, 0.8), (0.7, 0.6)) is None          # parallel
    assert crossover_share((0.9, 0.8), (0.9, 0.8)) is None          # identical
    assert crossover_share((0.9, 0.9), (0.5, 0.6)) is None          # cross at s = 4
    assert crossover_share((0.9, 0.5), (0.5, 0.9)) == pytest.approx(0.5)
    assert crossover_share((0.9, 0.5), (0.9, 0.7)) == 0             # equal at s = 0


def test_table_columns_and_line_endpoints():
    table = accuracy_vs_flawed_share(RATES)
    assert list(table.columns) == FIG3_COLUMNS
    assert len(table) == 3 * 101
    assert table["rubric"].unique().tolist() == list(RATES)
    for rubric, (passed, caught) in RATES.items():
        rows = table[table["rubric"] == rubric].set_index("flawed_share")
        assert rows.loc[0.0, "accuracy"] == pytest.approx(float(passed))
        assert rows.loc[1.0, "accuracy"] == pytest.approx(float(caught))
        assert np.all(np.diff(rows["accuracy"]) * np.sign(float(caught - passed)) >= -1e-15)


def test_crossovers_lists_every_pair_crossing_in_range():
    points = crossovers(accuracy_vs_flawed_share(RATES)).set_index(["rubric_a", "rubric_b"])
    hand_draft = points.loc[("hand-written", "generated draft")]
    assert hand_draft["flawed_share"] == pytest.approx(67 / 79)
    hand_label = points.loc[("hand-written", "label-taught")]
    assert hand_label["flawed_share"] == pytest.approx(5 / 36 / (5 / 36 + 1 / 6))
    # Both catch every flawed report: they meet at s = 1, label-taught ahead below it.
    assert points.loc[("generated draft", "label-taught"), "flawed_share"] == 1
    assert len(points) == 3
    dominated = crossovers(accuracy_vs_flawed_share({"a": (0.9, 0.9), "b": (0.5, 0.6)}))
    assert dominated.empty


def test_rates_and_shares_out_of_range_are_rejected():
    with pytest.raises(ValueError, match="percents"):
        accuracy_vs_flawed_share({"hand": (97.2, 83.3)})
    with pytest.raises(ValueError, match="shares"):
        accuracy_vs_flawed_share(RATES, shares=[0.5, 1.5])
    with pytest.raises(ValueError, match="pair"):
        accuracy_vs_flawed_share({"hand": (0.9,)})
    with pytest.raises(ValueError, match="at least one"):
        accuracy_vs_flawed_share({})
    with pytest.raises(ValueError, match="fraction"):
        crossover_share((0.5, float("nan")), HAND)


def test_plot_writes_valid_png_and_pdf(tmp_path):
    png, pdf = tmp_path / "fig3.png", tmp_path / "sub" / "fig3.pdf"
    plot_fig3(accuracy_vs_flawed_share(RATES), png, pdf)
    image = mpimg.imread(png)
    assert image.ndim == 3 and image.shape[0] > 100 and image.shape[1] > 100
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"%%EOF" in data[-64:]


def test_plot_rejects_a_table_without_rates(tmp_path):
    table = accuracy_vs_flawed_share(RATES).drop(columns=["balanced_accuracy"])
    with pytest.raises(ValueError, match="balanced_accuracy"):
        plot_fig3(table, tmp_path / "a.png", tmp_path / "a.pdf")
