import math

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from rubriclab.carry.fig1 import FIG1_COLUMNS, fig1_strictness
from rubriclab.carry.fig4 import FIG4_COLUMNS, fig4_self_review_drift
from rubriclab.carry.fig5 import (
    FIG5_COLUMNS, fig5_attribution_by_origin, fig5_table, fig5_title, paper_chain_count,
)
from rubriclab.carry.fig6 import FIG6_COLUMNS, fig6_gated_quality, fig6_table
from rubriclab.carry.figures import RATES_COLUMNS
from tests.figure_files import assert_figure_files, paths

MAIN = "anthropic/claude-sonnet-4-5"
OTHER = "anthropic/claude-haiku-4-5"
N = {"correct_passed": 24, "flawed_caught": 48, "unplanned_caught": 12}
BASE = dict(dataset="recon", judge=MAIN, item_set="recon108", environments="all", reviser="",
            source="hand", rendering="per_check", mode="", seed=0, round=0, gate="none",
            variant="standard", n_no_evidence=0, low=math.nan, high=math.nan,
            n_undetermined=0)


def rate_rows(values: dict, **fields) -> list[dict]:
    """One RATES row per metric of `values`, the other columns from BASE and `fields`."""
    return [{**BASE, **fields, "metric": metric, "value": value, "n": N[metric]}
            for metric, value in values.items()]


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)[RATES_COLUMNS]


# --------------------------------------------------------------------------- Figure 1

@pytest.fixture
def fig1_rates():
    rows = []
    for judge, shift in ((MAIN, 0.0), (OTHER, 2.0)):
        for source, passed in (("hand", 95.0), ("generated", 5.0)):
            for rendering, nudge in (("per_check", 0.0), ("paragraph", 1.0)):
                rows += rate_rows({"correct_passed": passed - shift - nudge,
                                   "flawed_caught": 80.0 + nudge},
                                  judge=judge, item_set="recon72", source=source,
                                  rendering=rendering, low=1.0, high=99.0)
    # Distractors: a revision chain, a Recon-108 start and a gated row.
    rows += rate_rows({"correct_passed": 11.0, "flawed_caught": 11.0}, item_set="recon72",
                      mode="free", seed=1, round=1)
    rows += rate_rows({"correct_passed": 12.0, "flawed_caught": 12.0}, item_set="recon108")
    rows += rate_rows({"correct_passed": 13.0, "flawed_caught": 13.0}, item_set="recon72",
                      mode="free", seed=1, round=1, gate="S+P")
    return frame(rows)


def test_fig1_selects_start_rubrics_on_recon72(fig1_rates, tmp_path):
    png, pdf = paths(tmp_path, "fig1")
    table = fig1_strictness(fig1_rates, MAIN, png, pdf)
    assert list(table.columns) == FIG1_COLUMNS
    panel_a, panel_b = table[table["panel"] == "a"], table[table["panel"] == "b"]
    assert set(panel_a["judge"]) == {MAIN} and len(panel_a) == 8
    assert set(panel_b["metric"]) == {"correct_passed"} and len(panel_b) == 8
    assert set(panel_b["judge"]) == {MAIN, OTHER}
    assert list(dict.fromkeys(panel_b["judge"])) == [MAIN, OTHER]
    assert set(table["value"]) >= {95.0, 93.0, 5.0, 80.0, 81.0}
    assert not set(table["value"]) & {11.0, 12.0, 13.0}
    got = panel_a.set_index(["source", "rendering", "metric"])["value"]
    assert got[("generated", "paragraph", "correct_passed")] == 4.0
    assert got[("hand", "per_check", "flawed_caught")] == 80.0
    assert_figure_files(png, pdf)


def test_fig1_reads_csv_round_trip_with_empty_mode(fig1_rates, tmp_path):
    csv = tmp_path / "rates.csv"
    fig1_rates.to_csv(csv, index=False)
    reread = pd.read_csv(csv)
    assert reread["mode"].isna().any()  # "" comes back as NaN
    table = fig1_strictness(reread, MAIN, *paths(tmp_path, "fig1csv"))
    assert len(table) == 16


def test_fig1_errors_name_column_and_selection(fig1_rates, tmp_path):
    with pytest.raises(ValueError, match="'low'"):
        fig1_strictness(fig1_rates.drop(columns="low"), MAIN, *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="judge='openai/gpt-x'"):
        fig1_strictness(fig1_rates, "openai/gpt-x", *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="item_set='recon72'"):
        fig1_strictness(fig1_rates[fig1_rates["item_set"] != "recon72"], MAIN,
                        *paths(tmp_path, "x"))
    assert not (tmp_path / "out" / "x.png").exists()


def test_fig1_rejects_duplicate_rows(fig1_rates, tmp_path):
    doubled = pd.concat([fig1_rates, fig1_rates.iloc[:1].assign(value=50.0)])
    with pytest.raises(ValueError, match="differ in"):
        fig1_strictness(doubled, MAIN, *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure 4

def chain(source, mode, seed, by_round, **fields):
    rows = []
    for round_, values in by_round.items():
        rows += rate_rows(values, source=source, mode=mode, seed=seed, round=round_, **fields)
    return rows


def metrics(cp, fc, uc):
    return {"correct_passed": cp, "flawed_caught": fc, "unplanned_caught": uc}


@pytest.fixture
def fig4_rates():
    rows = []
    rows += chain("hand", "free", 1, {0: metrics(97, 83, 0), 1: metrics(50, 90, 40),
                                      2: metrics(10, 98, 90)})
    rows += chain("hand", "free", 2, {0: metrics(97, 83, 0), 1: metrics(40, 92, 50),
                                      2: metrics(6, 99, 92)})
    rows += chain("hand", "delete_only", 1, {0: metrics(97, 83, 0), 1: metrics(97, 83, 0),
                                             2: metrics(97, 82, 0)})
    # Label chains without their own round 0: they borrow the label start rubric's.
    rows += rate_rows(metrics(83, 100, 100), source="label")
    rows += chain("label", "free", 1, {1: metrics(82, 90, 40), 2: metrics(80, 85, 10)})
    # Distractors: gated rows, evaluation environments, loo variant, other judge.
    rows += chain("hand", "free", 1, {1: metrics(1, 1, 1), 2: metrics(1, 1, 1)}, gate="S+P")
    rows += chain("hand", "free", 1, {2: metrics(2, 2, 2)}, environments="evaluation")
    rows += chain("hand", "free", 1, {2: metrics(3, 3, 3)}, variant="loo")
    rows += chain("hand", "free", 1, {2: metrics(4, 4, 4)}, judge=OTHER)
    return frame(rows)


def test_fig4_picks_gate_none_and_averages_seeds(fig4_rates, tmp_path):
    png, pdf = paths(tmp_path, "fig4")
    table = fig4_self_review_drift(fig4_rates, MAIN, png, pdf)
    assert list(table.columns) == FIG4_COLUMNS
    got = table.set_index(["source", "mode", "round", "metric"])
    row = got.loc[("hand", "free", 2, "correct_passed")]
    assert (row["value"], row["min"], row["max"], row["seeds"]) == (8.0, 6.0, 10.0, 2)
    assert got.loc[("hand", "free", 1, "flawed_caught"), "value"] == 91.0
    assert got.loc[("hand", "delete_only", 2, "flawed_caught"), "seeds"] == 1
    assert not set(table["value"]) & {1.0, 2.0, 3.0, 4.0}
    assert set(table["round"]) == {0, 1, 2}
    assert len(table) == 2 * 3 * 3 + 1 * 3 * 3  # modes x rounds x metrics: hand, label
    assert_figure_files(png, pdf)


def test_fig4_label_chain_borrows_start_rubric(fig4_rates, tmp_path):
    table = fig4_self_review_drift(fig4_rates, MAIN, *paths(tmp_path, "fig4b"))
    start = table[(table["source"] == "label") & (table["round"] == 0)]
    assert set(start["mode"]) == {"free"}
    assert dict(zip(start["metric"], start["value"])) == {
        "correct_passed": 83.0, "flawed_caught": 100.0, "unplanned_caught": 100.0}


def test_fig4_errors(fig4_rates, tmp_path):
    with pytest.raises(ValueError, match="source 'label'"):
        fig4_self_review_drift(fig4_rates[fig4_rates["source"] != "label"], MAIN,
                               *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="'gate'"):
        fig4_self_review_drift(fig4_rates.drop(columns="gate"), MAIN, *paths(tmp_path, "x"))
    # One source only is fine when asked for.
    table = fig4_self_review_drift(fig4_rates[fig4_rates["source"] != "label"], MAIN,
                                   *paths(tmp_path, "y"), sources=("hand",))
    assert set(table["source"]) == {"hand"}


def test_figures_close_themselves(fig4_rates, tmp_path):
    before = len(plt.get_fignums())
    fig4_self_review_drift(fig4_rates, MAIN, *paths(tmp_path, "z"))
    assert len(plt.get_fignums()) == before


# --------------------------------------------------------------------------- Figure 5

REVIEW = "review by anthropic/claude-opus-4-1"


def attribution_row(check_id, origin, credit, blame, judge=MAIN, round_=1, **fields):
    return {"dataset": "recon", "judge": judge, "reviser": "rev/a", "source": "hand", "mode": "free", "seed": 1,
            "round": round_, "scope": "storage", "check_id": check_id, "origin": origin,
            "credit": credit, "blame": blame, "unique_catches": 0,
            "deleted_next_round": False, **fields}


def deletion_row(check_id, origin, unique, blame, judge=MAIN, **fields):
    return {"dataset": "recon", "judge": judge, "reviser": "rev/a", "source": "hand", "mode": "free", "seed": 1,
            "round": 2, "scope": "storage", "check_id": check_id, "origin": origin,
            "had_unique_catch": unique, "had_blame": blame, **fields}


@pytest.fixture
def fig5_frames():
    attribution = pd.DataFrame([
        attribution_row("c1", "hand", 2.0, 0.0),
        attribution_row("c1", "hand", 2.0, 0.0),            # the same state again: once
        attribution_row("c2", "hand", 1.0, 1.0),
        attribution_row("c1", "hand", 4.0, 0.0, round_=2),  # a later state: counts
        attribution_row("l1", "label", 3.0, 0.0, source="label"),
        attribution_row("r1", REVIEW, 0.5, 2.0),
        attribution_row("x", "hand", 100.0, 100.0, judge=OTHER),
        attribution_row("y", "hand", 100.0, 100.0, dataset="ragtruth"),
    ])
    deletions = pd.DataFrame([
        deletion_row("c1", "hand", True, False),
        deletion_row("c1", "hand", True, False),             # duplicate: once
        deletion_row("c3", "hand", False, True, seed=2),
        deletion_row("l1", "label", True, False, source="label"),
        deletion_row("l2", "label", "False", "False", source="label"),  # from CSV text
        deletion_row("z", "hand", True, True, judge=OTHER),
    ])
    return attribution, deletions


def test_fig5_counts_and_means(fig5_frames, tmp_path):
    png, pdf = paths(tmp_path, "fig5")
    table = fig5_attribution_by_origin(*fig5_frames, MAIN, png, pdf)
    assert list(table.columns) == FIG5_COLUMNS
    assert list(table["origin"]) == ["hand", "label", REVIEW]
    got = table.set_index("origin")
    assert got.loc["hand", "checks"] == 3
    assert got.loc["hand", "mean_credit"] == pytest.approx(7.0 / 3)
    assert got.loc["hand", "mean_blame"] == pytest.approx(1.0 / 3)
    assert got.loc["label", "mean_credit"] == 3.0
    assert (got.loc[REVIEW, "mean_blame"], got.loc[REVIEW, "deleted"]) == (2.0, 0)
    assert list(got["deleted"]) == [2, 2, 0]
    assert list(got["deleted_with_unique_catch"]) == [1, 1, 0]
    assert list(got["deleted_with_blame"]) == [1, 0, 0]
    assert fig5_title(table) == "2 of the 4 deleted checks held a unique catch and 1 carried blame"
    assert_figure_files(png, pdf)


def test_fig5_errors(fig5_frames, tmp_path):
    attribution, deletions = fig5_frames
    with pytest.raises(ValueError, match="'origin'"):
        fig5_attribution_by_origin(attribution.drop(columns="origin"), deletions, MAIN,
                                   *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="had_blame"):
        fig5_attribution_by_origin(attribution, deletions.drop(columns="had_blame"), MAIN,
                                   *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="non-boolean"):
        fig5_attribution_by_origin(attribution, deletions.assign(had_blame="maybe"), MAIN,
                                   *paths(tmp_path, "x"))


def test_fig5_without_any_deletion_draws_zero_counts(fig5_frames, tmp_path):
    attribution, deletions = fig5_frames
    table = fig5_attribution_by_origin(attribution, deletions.iloc[0:0], MAIN,
                                       *paths(tmp_path, "none"))
    assert table["deleted"].sum() == 0 and table["checks"].sum() > 0
    assert fig5_title(table) == "0 of the 0 deleted checks held a unique catch and 0 carried blame"
    with pytest.raises(ValueError, match="non-boolean"):
        fig5_attribution_by_origin(attribution, deletions.assign(had_blame="maybe"), MAIN,
                                   *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure 6

def gated_chain(source, mode, seed, final, start, ungated, sp, **fields):
    rows = chain(source, mode, seed, {0: start}, environments="evaluation", **fields)
    for round_ in range(1, final + 1):
        late = round_ == final
        rows += rate_rows(ungated if late else metrics(50, 50, 50), source=source, mode=mode,
                          seed=seed, round=round_, environments="evaluation", **fields)
        for gate, values in (("R", metrics(60, 60, 60)), ("P", metrics(70, 70, 70)),
                             ("S", metrics(80, 80, 80)), ("S+P", sp)):
            rows += rate_rows(values if late else metrics(50, 50, 50), source=source,
                              mode=mode, seed=seed, round=round_, gate=gate,
                              environments="evaluation", **fields)
    return rows


@pytest.fixture
def fig6_rates():
    rows = []
    rows += gated_chain("hand", "free", 1, 2, metrics(97, 83, 0), metrics(10, 98, 90),
                        metrics(96, 83, 0))
    rows += gated_chain("hand", "delete_only", 1, 2, metrics(97, 83, 0),
                        metrics(90, 80, 0), metrics(94, 81, 0))
    rows += gated_chain("label", "free", 1, 2, metrics(83, 100, 100), metrics(80, 85, 10),
                        metrics(83, 99, 98))
    # Distractors: all environments, another judge.
    rows += chain("hand", "free", 1, {2: metrics(1, 1, 1)}, gate="S+P")
    rows += chain("hand", "free", 1, {2: metrics(2, 2, 2)}, gate="S+P",
                  environments="evaluation", judge=OTHER)
    return frame(rows)


def test_fig6_final_round_evaluation_means(fig6_rates, tmp_path):
    png, pdf = paths(tmp_path, "fig6")
    table = fig6_gated_quality(fig6_rates, MAIN, png, pdf, gate_evidence="own_reports")
    assert list(table.columns) == FIG6_COLUMNS
    assert set(table["final_round"]) == {2}
    assert list(dict.fromkeys(table["gate"])) == ["none", "R", "P", "S", "S+P"]
    got = table.set_index(["source", "gate", "metric"])
    ungated = got.loc[("hand", "none", "correct_passed")]
    assert (ungated["value"], ungated["min"], ungated["max"], ungated["chains"]) == (50.0, 10, 90, 2)
    assert got.loc[("hand", "S+P", "flawed_caught"), "value"] == 82.0
    assert got.loc[("hand", "R", "correct_passed"), "value"] == 60.0  # round 2, not round 1's 50
    assert got.loc[("hand", "S+P", "correct_passed"), "start"] == 97.0
    assert got.loc[("label", "S+P", "unplanned_caught"), "value"] == 98.0
    assert got.loc[("label", "none", "unplanned_caught"), "start"] == 100.0
    assert not set(table["value"]) & {1.0, 2.0}
    assert len(table) == 2 * 5 * 3
    assert_figure_files(png, pdf)


def test_fig6_errors(fig6_rates, tmp_path):
    with pytest.raises(ValueError, match="environments='evaluation'"):
        fig6_gated_quality(fig6_rates[fig6_rates["environments"] != "evaluation"], MAIN,
                           *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="'variant'"):
        fig6_gated_quality(fig6_rates.drop(columns="variant"), MAIN, *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="no revision round"):
        fig6_gated_quality(fig6_rates[fig6_rates["round"] == 0], MAIN, *paths(tmp_path, "x"))


def test_fig6_shows_the_papers_chains_and_their_refusals(fig6_rates, capture_figures,
                                                         tmp_path):
    rates = fig6_rates.copy()
    second = rates[(rates["source"] == "hand") & (rates["mode"] == "free")
                   & (rates["environments"] == "evaluation") & (rates["judge"] == MAIN)]
    rates = pd.concat([rates, second.assign(seed=2)], ignore_index=True)
    gated = rates["gate"].isin(["R", "S", "S+P"]) & (rates["round"] == 2)
    hand_free = (rates["source"] == "hand") & (rates["mode"] == "free")
    rates.loc[gated & hand_free, "n_no_evidence"] = 73.0
    rates.loc[gated & hand_free & (rates["seed"] == 2), "n_no_evidence"] = 70.0
    rates.loc[gated & (rates["mode"] == "delete_only"), "n_no_evidence"] = 500.0
    table = fig6_gated_quality(rates, MAIN, *paths(tmp_path, "fig6p"),
                               paper_chains=["hand:free", "label:free"])
    got = table.set_index(["source", "gate", "metric"])
    # the delete-only chain is not one of the paper's: it neither dilutes nor adds refusals
    ungated = got.loc[("hand", "none", "correct_passed")]
    assert (ungated["value"], ungated["chains"]) == (10.0, 2)
    assert got.loc[("hand", "S+P", "correct_passed"), "value"] == 96.0
    assert got.loc[("hand", "S", "flawed_caught"), "no_evidence"] == 71.5
    assert got.loc[("hand", "S", "flawed_caught"), "no_evidence_max"] == 73.0
    assert got.loc[("hand", "P", "flawed_caught"), "no_evidence"] == 0.0
    assert got.loc[("label", "R", "correct_passed"), "no_evidence"] == 0.0
    fig = capture_figures[-1]
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert ticks == ["ungated", "Gate R\nrefused 71.5", "Gate P\nrefused 0",
                     "Gate S\nrefused 71.5", "Gate S+P\nrefused 71.5"]
    assert_readable(fig, shows=("2 chains per panel: free revision",
                                "refused for want of evidence, mean per chain"))
    # without the paper's chains every chain counts (the supplement's view)
    every = fig6_table(rates, MAIN).set_index(["source", "gate", "metric"])
    assert every.loc[("hand", "none", "correct_passed"), "chains"] == 3


def test_fig5b_counts_the_papers_chains_only(fig5_frames, tmp_path):
    attribution, deletions = fig5_frames
    attribution = pd.concat([attribution, pd.DataFrame([
        attribution_row("d1", "hand", 1.0, 0.0, mode="delete_only")])], ignore_index=True)
    deletions = pd.concat([deletions, pd.DataFrame([
        deletion_row("d1", "hand", True, True, mode="delete_only")])], ignore_index=True)
    every = fig5_table(attribution, deletions, MAIN)
    assert every.set_index("origin").loc["hand", "deleted"] == 3
    paper = ["hand:free", "label:free"]
    table = fig5_attribution_by_origin(attribution, deletions, MAIN, *paths(tmp_path, "f5p"),
                                       paper_chains=paper)
    hand = table.set_index("origin").loc["hand"]
    assert (hand["deleted"], hand["deleted_with_blame"]) == (2, 1)
    # panel (a) keeps every chain's check states: d1 of the delete-only chain counts there
    assert hand["checks"] == 4
    # rev/a's hand and label free chains, seed 1 (the deletions' seed 2 has no attribution)
    assert paper_chain_count(attribution, MAIN, paper) == 2
    assert fig5_title(table, 12) == ("2 of the 4 checks deleted across the 12 Recon revision "
                                     "chains held a unique catch and 1 carried blame")


# --------------------------------------------------------------------------- revisers

def test_fig4_and_fig6_keep_revisers_apart(fig4_rates, fig6_rates, tmp_path):
    other = fig4_rates[(fig4_rates["source"] == "hand") & (fig4_rates["mode"] == "free")
                       & (fig4_rates["seed"] == 1) & (fig4_rates["gate"] == "none")
                       & (fig4_rates["environments"] == "all") & (fig4_rates["judge"] == MAIN)
                       & (fig4_rates["variant"] == "standard")]
    second = other.assign(reviser="rev/b", value=other["value"] + 1)
    table = fig4_self_review_drift(pd.concat([fig4_rates, second]), MAIN, *paths(tmp_path, "r4"))
    got = table.set_index(["reviser", "source", "mode", "round", "metric"])
    # reviser "" keeps its two-seed mean; rev/b has its one seed, one point higher
    assert got.loc[("", "hand", "free", 2, "correct_passed"), "value"] == 8.0
    assert got.loc[("rev/b", "hand", "free", 2, "correct_passed"), "value"] == 11.0
    assert got.loc[("rev/b", "hand", "free", 2, "correct_passed"), "seeds"] == 1
    gated = fig6_rates[(fig6_rates["source"] == "hand") & (fig6_rates["mode"] == "free")
                       & (fig6_rates["environments"] == "evaluation")
                       & (fig6_rates["judge"] == MAIN)]
    table6 = fig6_gated_quality(pd.concat([fig6_rates, gated.assign(reviser="rev/b",
                                                                    value=gated["value"] / 2)]),
                                MAIN, *paths(tmp_path, "r6"))
    got6 = table6.set_index(["reviser", "source", "gate", "metric"])
    assert got6.loc[("rev/b", "hand", "S+P", "correct_passed"), "value"] == 48.0   # 96 / 2
    assert got6.loc[("", "hand", "S+P", "correct_passed"), "value"] == 95.0        # (96 + 94) / 2
    assert list(dict.fromkeys(table6["reviser"])) == ["", "rev/b"]


def test_fig5_counts_the_same_check_of_two_revisers_twice(fig5_frames, tmp_path):
    attribution, deletions = fig5_frames
    again = deletions[deletions["check_id"] == "c3"].assign(reviser="rev/b")
    table = fig5_attribution_by_origin(attribution, pd.concat([deletions, again]), MAIN,
                                       *paths(tmp_path, "fig5r"))
    hand = table.set_index("origin").loc["hand"]
    assert hand["deleted"] == 3 and hand["deleted_with_blame"] == 2   # c1, c3 (rev/a), c3 (rev/b)


# --------------------------------------------------------------------------- readable figures

from rubriclab.carry.fig2 import plot_fig2  # noqa: E402
from rubriclab.carry.fig3 import fig3_from_rates  # noqa: E402
from rubriclab.labels import ModelLabels  # noqa: E402
from tests.figure_labels import assert_readable, capture_figures  # noqa: E402,F401

FAKE_MAIN, FAKE_OTHER, FAKE_REVISER = ("fake/hash?salt=sonnet", "fake/hash?salt=haiku",
                                       "fake/hash?salt=opus")
FAKES = {MAIN: FAKE_MAIN, OTHER: FAKE_OTHER, "rev/a": FAKE_REVISER}


def faked(table: pd.DataFrame) -> pd.DataFrame:
    """The fixture with model strings that carry query strings, as a fake-model run has."""
    return table.replace({column: FAKES for column in ("judge", "reviser") if column in table})


def test_fig1_twelve_groups_read_without_overlap_or_query_strings(capture_figures, tmp_path):
    rows = []
    for judge in (MAIN, OTHER):
        for source in ("hand", "generated", "label"):
            for rendering in ("per_check", "all_in_one", "paragraph", "scale"):
                rows += rate_rows({"correct_passed": 100.0, "flawed_caught": 0.0}, judge=judge,
                                  item_set="recon72", source=source, rendering=rendering)
    fig1_strictness(faked(frame(rows)), FAKE_MAIN, *paths(tmp_path, "fig1"))
    fig = capture_figures[-1]
    assert len(fig.axes[1].get_xticklabels()) == 12
    text = assert_readable(fig, shows=("fake/hash (sonnet) judge", "fake/hash (haiku)",
                                       "24 correct, 48 flawed"))
    assert "Label-taught, generic scale" in text
    # a point at 0% / 100% lies inside the drawn limits, not on the clipping edge
    ax = fig.axes[0]
    assert ax.get_xlim()[0] <= -8 and ax.get_ylim()[1] >= 108
    # the twelve equal points sit at their true value (0% caught, 100% passed), unclipped,
    # drawn as concentric hollow rings of twelve sizes
    points = [line for line in ax.get_lines() if len(line.get_xdata()) == 1]
    assert len(points) == 12
    for line in points:
        assert (line.get_xdata()[0], line.get_ydata()[0]) == (0.0, 100.0)
        assert line.get_transform() == ax.transData and not line.get_clip_on()
        assert line.get_markerfacecolor() == "none"
    assert len({line.get_markersize() for line in points}) == 12
    # every bar of panel (b) carries its value: all 100% here
    bars = fig.axes[1].patches
    labels = [t.get_text() for t in fig.axes[1].texts]
    assert len(bars) == 24 and labels.count("100%") == 24


def test_fig1_uses_the_configured_label(fig1_rates, capture_figures, tmp_path):
    labels = ModelLabels({FAKE_MAIN: "Sonnet stand-in"})
    fig1_strictness(faked(fig1_rates), FAKE_MAIN, *paths(tmp_path, "fig1"), labels=labels)
    assert_readable(capture_figures[-1], shows=("Sonnet stand-in judge",),
                    hides=("fake/hash (sonnet)",))


def test_fig3_names_its_judge_counts_and_crossing(capture_figures, tmp_path):
    rows = []
    for source, passed, caught in (("hand", 96.0, 70.0), ("generated", 4.0, 100.0),
                                   ("label", 96.0, 70.0)):  # label equals hand: both shown
        rows += rate_rows({"correct_passed": passed, "flawed_caught": caught},
                          item_set="recon72", source=source)
    fig3_from_rates(faked(frame(rows)), FAKE_MAIN, *paths(tmp_path, "fig3"))
    fig = capture_figures[-1]
    assert_readable(fig, shows=("fake/hash (sonnet) judge", "24 correct, 48 flawed",
                                "equal at share", "crossing: the flawed share"))
    lines = [line for line in fig.axes[0].get_lines() if len(line.get_xdata()) > 2]
    styles = {(line.get_linestyle(), line.get_marker()) for line in lines}
    assert len(lines) == 3 and len(styles) == 3  # coincident lines drawn unlike each other


def test_fig4_lines_of_equal_value_sit_apart_and_bands_are_explained(fig4_rates,
                                                                     capture_figures, tmp_path):
    fig4_self_review_drift(faked(fig4_rates.assign(reviser="rev/a")), FAKE_MAIN,
                           *paths(tmp_path, "fig4"))
    fig = capture_figures[-1]
    assert_readable(fig, shows=("review by fake/hash (opus)", "shaded: min..max over seeds",
                                "reports: 24 correct, 48 flawed, 12 unplanned", "2 seeds"))
    ax = fig.axes[0]  # from the hand-written rubric: free and delete-only chains
    lines = [line for line in ax.get_lines() if len(line.get_xdata())]
    # every point at its true round and value: nothing shifted sideways off the round
    rounds = [x for line in lines if len(line.get_xdata()) > 1 for x in line.get_xdata()]
    assert rounds and set(rounds) <= {0.0, 1.0, 2.0}
    assert all(line.get_transform() == ax.transData for line in lines)
    # both modes start at 97%: two rings at (0, 97) of different sizes
    rings = [line for line in lines if len(line.get_xdata()) == 1
             and (line.get_xdata()[0], line.get_ydata()[0]) == (0.0, 97.0)
             and line.get_markerfacecolor() == "none"]
    assert len(rings) == 2 and len({ring.get_markersize() for ring in rings}) == 2
    # segments both modes share (round 0..1 of correct passed at 97%... none here) and every
    # segment: a tag per series, tags of one segment at distinct places along it
    tags = [line for line in lines if line.get_marker() in ("*", "X", "p")
            and len(line.get_xdata()) == 1]
    places = [(line.get_xdata()[0], line.get_ydata()[0]) for line in tags]
    assert len(tags) == 2 * 3 * 2 and len(set(places)) == len(places)
    assert all(0 < x < 2 and float(x) not in (0.0, 1.0, 2.0) for x, _ in places)


def test_fig4_coincident_lines_keep_their_values_and_tags_sit_apart(capture_figures, tmp_path):
    rows = []
    for source in ("hand", "label"):
        for mode in (("free", "delete_only") if source == "hand" else ("free",)):
            rows += chain(source, mode, 1, {0: metrics(0, 100, 100), 1: metrics(0, 100, 100)})
    fig4_self_review_drift(frame(rows), MAIN, *paths(tmp_path, "fig4eq"))
    fig = capture_figures[-1]
    ax = fig.axes[0]
    values = {y for line in ax.get_lines() for y in line.get_ydata()}
    assert values == {0.0, 100.0}  # exact: no line moved off 0% or 100%
    top = [line for line in ax.get_lines() if line.get_marker() in ("X", "p")]
    assert len(top) == 4 and len({line.get_xdata()[0] for line in top}) == 4
    assert {line.get_ydata()[0] for line in top} == {100.0}
    # the legend lists delete only; panel (b) says why it has no such line
    text = assert_readable(fig, shows=("delete only",))
    assert "no delete-only chain from this rubric" in fig.axes[1].get_title()
    assert "no " not in fig.axes[0].get_title()
    assert "unplanned reports" not in text


def paper_scale_fig4_rates(rounds=4):
    """Recon chains as paper.yaml plans them: the main reviser runs every mode from both
    starts, two more revisers the free chains; two seeds each."""
    rows = []
    for reviser, modes in (("rev/opus", ("free", "fixed_count", "delete_only")),
                           ("rev/haiku", ("free",)), ("rev/sonnet", ("free",))):
        for source in ("hand", "label"):
            for mode in modes:
                for seed in (1, 2):
                    drift = 0 if mode == "delete_only" else 20 + seed
                    rows += chain(source, mode, seed, {
                        r: metrics(max(0, 97 - drift * r) if source == "hand" else 83,
                                   83 + r if source == "hand" else 100 - drift * r / 4,
                                   min(100, 10 * r * (source == "hand"))
                                   if source == "hand" else 100 - drift * r)
                        for r in range(rounds + 1)}, reviser=reviser)
    return frame(rows)


def test_fig4_is_small_multiples_one_panel_per_start_and_reviser(capture_figures, tmp_path):
    """Paper scale (27 series in one panel before): one panel per start x reviser, the main
    reviser's row first, at most modes x metrics lines in a panel, each reviser named in its
    panels' titles; rings of coincident points stay within their size cap."""
    from rubriclab.carry.fig4 import FIG4_MARKER_LARGEST
    table = fig4_self_review_drift(paper_scale_fig4_rates(), MAIN, *paths(tmp_path, "fig4p"),
                                   main_reviser="rev/opus")
    fig = capture_figures[-1]
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert len(axes) == 3 * 2
    titles = [ax.get_title() for ax in axes]
    assert titles[0].startswith("(a) From the hand-written rubric, review by rev/opus")
    assert titles[1].startswith("(b) From the label-taught rubric, review by rev/opus")
    assert "review by rev/haiku" in titles[2] and "review by rev/sonnet" in titles[4]
    # the main reviser's panels have every mode; the others say which modes they lack
    assert "no fixed-count or delete-only chain from this rubric" in titles[2]
    assert "no " not in titles[0]
    for ax, lines in zip(axes, (9, 9, 3, 3, 3, 3)):
        drawn = [line for line in ax.get_lines() if len(line.get_xdata()) > 1]
        assert len(drawn) == lines  # modes x metrics of that reviser, no other reviser's
        rings = [line for line in ax.get_lines() if line.get_markerfacecolor() == "none"]
        assert max(line.get_markersize() for line in rings) <= FIG4_MARKER_LARGEST + 1e-9
    assert set(table["reviser"]) == {"rev/opus", "rev/haiku", "rev/sonnet"}
    text = assert_readable(fig, shows=("free", "fixed count", "delete only", "2 seeds",
                                       "one panel per start rubric and reviser"))
    assert "review by rev/opus" in text
    # readable at paper scale: each panel at least 5 x 3 inches
    width, height = fig.get_size_inches()
    assert width / 2 >= 5 and (height - 1.9) / 3 >= 3


def test_counts_phrase_has_no_plural_after_one():
    from rubriclab.carry.figures import counts_phrase
    assert counts_phrase({"correct": 3, "flawed": 6, "unplanned": 1}) == (
        "reports: 3 correct, 6 flawed, 1 unplanned")
    assert counts_phrase({"correct": 1, "flawed": 0, "unplanned": 0}) == "reports: 1 correct"


def test_fig5_names_reviser_origins_by_label(fig5_frames, capture_figures, tmp_path):
    attribution, deletions = fig5_frames
    fig5_attribution_by_origin(faked(attribution), faked(deletions), FAKE_MAIN,
                               *paths(tmp_path, "fig5"))
    assert_readable(capture_figures[-1], shows=("fake/hash (sonnet) judge", "check states"))


def test_fig6_start_values_are_ticks_over_their_bars(fig6_rates, capture_figures, tmp_path):
    table = fig6_gated_quality(faked(fig6_rates), FAKE_MAIN, *paths(tmp_path, "fig6"))
    fig = capture_figures[-1]
    assert_readable(fig, shows=("fake/hash (sonnet) judge", "start rubric (round 0)",
                                "min..max over chains", "chain"))
    ax = fig.axes[0]  # from the hand-written rubric
    ticks = [line for line in ax.get_lines() if line.get_gid() == "start rubric"]
    assert len(ticks) == 5 * 3  # one per bar
    bars = [patch for patch in ax.patches]
    assert all(t.get_zorder() > bar.get_zorder() for t in ticks for bar in bars)
    hand = table[table["source"] == "hand"]
    assert {t.get_ydata()[0] for t in ticks} == set(hand["start"])
    legend = fig.legends[0]
    assert "start rubric (round 0), over its own bar" in [t.get_text() for t in legend.get_texts()]
    # whiskers where the chains differ: a visible dark line with caps, over the bars
    whiskers = [c for c in ax.collections if c.get_segments()]
    spread = hand[hand["max"] > hand["min"]]
    assert 0 < len(spread) < len(hand)
    assert sum(len(w.get_segments()) for w in whiskers) == len(spread)
    for whisker in whiskers:
        assert whisker.get_linewidth()[0] >= 1.2 and whisker.get_zorder() > bars[0].get_zorder()
        assert tuple(whisker.get_color()[0][:3]) == matplotlib.colors.to_rgb("#222222")
        assert not whisker.get_clip_on()
    # every bar carries its value, a real 0 as "0%"
    labels = [t.get_text() for t in ax.texts if t.get_text().endswith("%")]
    assert len(labels) == len(bars) == len(hand)
    assert sorted(labels) == sorted(f"{v:.0f}%" for v in hand["value"])


def test_fig6_zero_bars_read_zero(fig6_rates, capture_figures, tmp_path):
    zeroed = fig6_rates.assign(value=fig6_rates["value"].where(
        fig6_rates["metric"] != "correct_passed", 0.0))
    table = fig6_gated_quality(zeroed, MAIN, *paths(tmp_path, "fig6z"))
    ax = capture_figures[-1].axes[0]
    hand = table[table["source"] == "hand"]
    zeros = int((hand["value"] == 0).sum())
    assert zeros >= 5 and [t.get_text() for t in ax.texts].count("0%") == zeros
    # the start ticks at 0 (correct passed's round 0 is zeroed too) are drawn, on the baseline
    starts = [t.get_ydata()[0] for t in ax.get_lines() if t.get_gid() == "start rubric"]
    assert starts.count(0.0) == (hand["start"] == 0).sum() >= 5


def test_fig2_speaks_the_papers_words(capture_figures, tmp_path):
    from tests.carry.test_fig2 import mean_table
    tables = {"summedits": mean_table(2, 0.0).assign(dataset="summedits"),
              "ragtruth": mean_table(2, 7.5).assign(dataset="ragtruth")}
    plot_fig2(tables, *paths(tmp_path, "fig2"), judge_label=ModelLabels()(FAKE_MAIN))
    assert_readable(capture_figures[-1], shows=(
        "consistent summaries passed", "inconsistent summaries caught",
        "faithful responses passed", "hallucinated responses caught",
        "100 consistent, 98 inconsistent", "fake/hash (sonnet) judge"),
        hides=("correct outputs", "flawed outputs"))


def test_fig1_zero_bars_and_points_read_at_their_values(fig1_rates, capture_figures, tmp_path):
    rates = fig1_rates.copy()
    generated = rates["source"] == "generated"
    rates.loc[generated & (rates["metric"] == "correct_passed"), "value"] = 0.0
    rates.loc[generated & (rates["metric"] == "flawed_caught"), "value"] = 100.0
    table = fig1_strictness(rates, MAIN, *paths(tmp_path, "fig1z"))
    fig = capture_figures[-1]
    bars = table[table["panel"] == "b"]
    labels = [t.get_text() for t in fig.axes[1].texts]
    assert len(labels) == len(bars) == len(fig.axes[1].patches)
    assert labels.count("0%") == (bars["value"] == 0).sum() == 4
    ax = fig.axes[0]
    at_corner = [line for line in ax.get_lines() if len(line.get_xdata()) == 1
                 and line.get_marker() in ("o", "^")  # per check, paragraph (not bar caps)
                 and (line.get_xdata()[0], line.get_ydata()[0]) == (100.0, 0.0)]
    assert len(at_corner) == 2 and len({line.get_markersize() for line in at_corner}) == 2
    x_low, x_high = ax.get_xlim()
    y_low, y_high = ax.get_ylim()
    assert x_low < 0 < 100 < x_high and y_low < 0 < 100 < y_high
