import math

import matplotlib.collections

import numpy as np
import pandas as pd
import pytest

from rubriclab.transfer.figures import (
    IT_METRICS, STATS_COLUMNS, excludes_zero, interval_cell, short_name,
)
from rubriclab.transfer.figures_criteria import (
    CATEGORIES_COLUMNS, FIG6_COLUMNS, fig6_criteria_level,
)
from rubriclab.transfer.figures_existing import (
    FIG4_COLUMNS, FIGA1_COLUMNS, FIGA2_COLUMNS, fig4_existing_approaches,
    figA1_matching_framings, figA2_panel_sensitivity,
)
from rubriclab.transfer.figures_interventional import (
    FIG5_COLUMNS, FIGA4_COLUMNS, FIGA4_ORDER, fig5_interventional_transfer,
    figA4_by_response_model,
)
from rubriclab.labels import ModelLabels
from tests.figure_files import assert_figure_files, paths

QWEN = "openrouter/qwen/qwen3-8b"
DEEPSEEK = "deepseek/deepseek-chat"
OPUS = "anthropic/claude-opus-4-1-20250805"
GENERATORS = [QWEN, DEEPSEEK, OPUS]
GPT = "openai/gpt-5-mini"
GROK = "xai/grok-4"
BASE = dict(family="existing", generator_b="", response_model="", panel="", framing="",
            n_used=1000, B=1000, n_examples=105)


def stat(metric, generator, estimate, low=math.nan, high=math.nan, **fields):
    return {**BASE, **fields, "metric": metric, "generator": generator,
            "estimate": estimate, "low": low, "high": high}


def frame(rows):
    return pd.DataFrame(rows)[STATS_COLUMNS]


# --------------------------------------------------------------------------- helpers

def test_short_name_is_the_display_label():
    assert short_name(OPUS) == OPUS  # the provider kept, as carry names it
    assert short_name("fake/hash?salt=g1") == "fake/hash (g1)"
    assert short_name("gpt-4o") == "gpt-4o"
    assert short_name("expert") == "Expert"


def test_interval_cell_and_excludes_zero():
    assert interval_cell(0.4201, 0.314, 0.5549) == "0.42 [0.31, 0.55]"
    assert interval_cell(-0.001, -0.2, 0.1) == "0.00 [-0.20, 0.10]"
    assert interval_cell(math.nan, 0.1, 0.2) == "n/a"
    assert interval_cell(0.5, math.nan, math.nan) == "0.50 [n/a, n/a]"
    assert excludes_zero(0.01, 0.2) and excludes_zero(-0.3, -0.01)
    assert not excludes_zero(-0.01, 0.2)
    assert not excludes_zero(math.nan, -0.1) and not excludes_zero(0.0, 0.3)


# --------------------------------------------------------------------------- Figure 4

def existing_rows():
    rows = []
    for index, g in enumerate(GENERATORS):
        base = 0.4 + 0.1 * index
        rows += [stat("llm_matching_precision", g, base, base - 0.05, base + 0.05),
                 stat("llm_matching_recall", g, base + 0.02),
                 stat("llm_matching_f1", g, base + 0.01, base - 0.04, base + 0.06),
                 stat("embedding_f1", g, 0.9),
                 stat("panel_spearman", g, base, panel="all"),
                 stat("panel_spearman", g, 0.1 + index / 10, panel="small models"),
                 stat("panel_spearman", g, 0.2 + index / 10, panel="frontier"),
                 stat("physician_spearman", g, -0.1 + index / 10, -0.3, 0.1),
                 stat("discrimination", g, 0.6 + index / 20, 0.5, 0.7)]
    rows.append(stat("discrimination", "expert", 0.61, 0.52, 0.7))
    # Distractors: a paired difference and another family.
    rows.append(stat("llm_matching_f1", OPUS, 0.2, 0.1, 0.3, generator_b=QWEN))
    rows.append(stat("framing_f1", OPUS, 0.05, framing="implies", family="framing"))
    return rows


def test_fig4_selects_the_four_subplots(tmp_path):
    png, pdf = paths(tmp_path, "fig4")
    table = fig4_existing_approaches(frame(existing_rows()), png, pdf)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIG4_COLUMNS
    assert list(dict.fromkeys(table["subplot"])) == [
        "llm_matching", "panel_correlation", "physician_correlation", "discrimination"]
    matching = table[table["subplot"] == "llm_matching"]
    assert len(matching) == 9 and set(matching["generator"]) == set(GENERATORS)
    f1 = matching[(matching["metric"] == "llm_matching_f1") & (matching["generator"] == OPUS)]
    assert f1["estimate"].tolist() == [pytest.approx(0.61)]  # not the paired difference
    panel = table[table["subplot"] == "panel_correlation"]
    assert panel["estimate"].tolist() == pytest.approx([0.4, 0.5, 0.6])  # panel "all" only
    discrimination = table[table["subplot"] == "discrimination"]
    assert discrimination["generator"].tolist() == [*GENERATORS, "expert"]
    assert discrimination["estimate"].iloc[-1] == pytest.approx(0.61)
    assert len(table) == 9 + 3 + 3 + 4


def test_fig4_reads_empty_text_cells_back_from_csv(tmp_path):
    path = tmp_path / "stats.csv"
    frame(existing_rows()).to_csv(path, index=False)
    stats = pd.read_csv(path)
    assert stats["generator_b"].isna().any()
    png, pdf = paths(tmp_path, "fig4csv")
    table = fig4_existing_approaches(stats, png, pdf)
    assert len(table) == 19


def test_fig4_requires_the_expert_discrimination_bar(tmp_path):
    rows = [r for r in existing_rows() if r["generator"] != "expert"]
    with pytest.raises(ValueError, match="discrimination.*expert"):
        fig4_existing_approaches(frame(rows), *paths(tmp_path, "x"))


def test_fig4_names_a_missing_column(tmp_path):
    with pytest.raises(ValueError, match="missing column.*'panel'"):
        fig4_existing_approaches(frame(existing_rows()).drop(columns="panel"),
                                 *paths(tmp_path, "x"))


def test_fig4_empty_selection(tmp_path):
    rows = [r for r in existing_rows() if r["metric"] != "physician_spearman"]
    with pytest.raises(ValueError, match="physician"):
        fig4_existing_approaches(frame(rows), *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="family='existing'"):
        fig4_existing_approaches(frame([stat("framing_f1", OPUS, 0.1, family="framing")]),
                                 *paths(tmp_path, "x"))


def test_fig4_missing_generator_cell_raises(tmp_path):
    rows = [r for r in existing_rows()
            if not (r["metric"] == "llm_matching_recall" and r["generator"] == DEEPSEEK)]
    with pytest.raises(ValueError, match="llm_matching_recall"):
        fig4_existing_approaches(frame(rows), *paths(tmp_path, "x"))


def test_fig4_duplicate_rows_raise(tmp_path):
    rows = existing_rows() + [stat("physician_spearman", OPUS, 0.3, response_model=GPT)]
    with pytest.raises(ValueError, match="response_model"):
        fig4_existing_approaches(frame(rows), *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure 5

# (metric, generator, generator_b) -> (low, high) of the paired differences.
DIFFERENCES = {
    ("Q+(Cg->C*)", OPUS, QWEN): (0.02, 0.15),        # excludes 0 -> star
    ("Q+(Cg->C*)", OPUS, DEEPSEEK): (-0.05, 0.12),   # includes 0
    ("Q+(Cg->C*)", DEEPSEEK, QWEN): (-0.01, 0.08),   # includes 0
    ("Q-(Cg->C*)", DEEPSEEK, QWEN): (0.01, 0.2),     # star
    ("Q-(Cg->C*)", DEEPSEEK, OPUS): (0.03, 0.1),     # star
    ("Q-(Cg->C*)", OPUS, QWEN): (-0.1, 0.1),
    ("Q+(C*->Cg)", QWEN, OPUS): (-0.02, 0.05),
    ("Q-(C*->Cg)", QWEN, OPUS): (-0.3, -0.05),       # star (negative)
    ("Q-(C*->Cg)", QWEN, DEEPSEEK): (math.nan, math.nan),  # undefined: no star
}


def it_rows(response_model=GPT, scale=1.0):
    rows = []
    for m_index, metric in enumerate(IT_METRICS):
        for g_index, g in enumerate(GENERATORS):
            value = scale * (0.05 + 0.2 * m_index + 0.03 * g_index)
            rows.append(stat(metric, g, value, value - 0.05, value + 0.05, family="it",
                             response_model=response_model))
    return rows


def it_difference_rows(response_model=GPT):
    return [stat(metric, a, (low + high) / 2 if not math.isnan(low) else 0.0, low, high,
                 family="it", response_model=response_model, generator_b=b)
            for (metric, a, b), (low, high) in DIFFERENCES.items()]


def test_fig5_stars_exactly_the_pairs_excluding_zero(tmp_path):
    rows = it_rows() + it_difference_rows()
    # Other response model, with a would-be star: must not leak in.
    rows += it_rows(GROK) + [stat("Q+(C*->Cg)", QWEN, 0.3, 0.2, 0.4, family="it",
                                  response_model=GROK, generator_b=OPUS)]
    png, pdf = paths(tmp_path, "fig5")
    table = fig5_interventional_transfer(frame(rows), GPT, png, pdf)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIG5_COLUMNS
    bars = table[table["generator_b"] == ""]
    assert len(bars) == 12 and not bars["star"].any()
    assert list(dict.fromkeys(bars["metric"])) == IT_METRICS
    assert bars["generator"].tolist()[:3] == GENERATORS
    opus_plus = bars[(bars["metric"] == "Q+(Cg->C*)") & (bars["generator"] == OPUS)]
    assert opus_plus["estimate"].tolist() == [pytest.approx(0.11)]
    starred = {(r.metric, r.generator, r.generator_b)
               for r in table[table["star"]].itertuples(index=False)}
    assert starred == {("Q+(Cg->C*)", OPUS, QWEN), ("Q-(Cg->C*)", DEEPSEEK, QWEN),
                       ("Q-(Cg->C*)", DEEPSEEK, OPUS), ("Q-(C*->Cg)", QWEN, OPUS)}
    differences = table[table["generator_b"] != ""]
    assert len(differences) == len(DIFFERENCES)
    # Stacking: within Q-(Cg->C*) both starred pairs are neighbours; the leftmost
    # (qwen, deepseek) sits lowest.
    levels = {(r.generator, r.generator_b): r.star_level
              for r in table[(table["metric"] == "Q-(Cg->C*)") & table["star"]]
              .itertuples(index=False)}
    assert levels == {(DEEPSEEK, QWEN): 0, (DEEPSEEK, OPUS): 1}
    assert table.loc[~table["star"], "star_level"].isna().all()


def test_fig5_pair_in_both_orientations_counts_once(tmp_path):
    rows = it_rows() + it_difference_rows()
    rows.append(stat("Q+(Cg->C*)", QWEN, -0.08, -0.15, -0.02, family="it",
                     response_model=GPT, generator_b=OPUS))
    table = fig5_interventional_transfer(frame(rows), GPT, *paths(tmp_path, "fig5b"))
    plus = table[(table["metric"] == "Q+(Cg->C*)") & table["star"]]
    assert [(r.generator, r.generator_b) for r in plus.itertuples()] == [(OPUS, QWEN)]


def test_fig5_without_differences_has_no_stars(tmp_path):
    table = fig5_interventional_transfer(frame(it_rows()), GPT, *paths(tmp_path, "fig5c"))
    assert len(table) == 12 and not table["star"].any()


def test_fig5_errors(tmp_path):
    with pytest.raises(ValueError, match="response_model='nobody'"):
        fig5_interventional_transfer(frame(it_rows()), "nobody", *paths(tmp_path, "x"))
    missing_metric = [r for r in it_rows() if r["metric"] != "Q-(C*->Cg)"]
    with pytest.raises(ValueError, match=r"Q-\(C\*->Cg\)"):
        fig5_interventional_transfer(frame(missing_metric), GPT, *paths(tmp_path, "x"))
    stranger = it_rows() + [stat("Q+(Cg->C*)", OPUS, 0.1, 0.05, 0.2, family="it",
                                 response_model=GPT, generator_b="other/model")]
    with pytest.raises(ValueError, match="other/model"):
        fig5_interventional_transfer(frame(stranger), GPT, *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="'estimate'"):
        fig5_interventional_transfer(frame(it_rows()).drop(columns="estimate"), GPT,
                                     *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure 6

def category_rows(response_model=GPT):
    rows = []

    def bar(kind, generator, target, direction, shares, n=40):
        labels = (["irrelevant", "matched", "general"] if kind != "within"
                  else ["none", "one", "several"])
        for label, share in zip(labels, shares):
            if share is None:  # a zero category left out of the table
                continue
            rows.append(dict(generator=generator, response_model=response_model,
                             row_kind=kind, target_rubric=target, direction=direction,
                             category=label, share=share, n_criteria=n))

    for index, g in enumerate(GENERATORS):
        bar("gen->expert", g, g, "+", (50.0 + index, 30.0, 20.0 - index))
        bar("gen->expert", g, g, "-", (85.0, 15.0, None))
        bar("expert->gen", g, "expert", "+", (40.0, 35.0, 25.0), n=60)
        bar("expert->gen", g, "expert", "-", (70.0, 20.0, 10.0), n=60)
        bar("within", g, g, "+", (60.0, 30.0, 10.0))
        bar("within", g, g, "-", (80.0, 15.0, 5.0))
        # The expert's within rows, repeated identically under every generator.
        bar("within", g, "expert", "+", (47.0, 33.0, 20.0), n=60)
        bar("within", g, "expert", "-", (71.0, 19.0, 10.0), n=60)
    return rows


def categories_frame(rows):
    return pd.DataFrame(rows)[CATEGORIES_COLUMNS]


def test_fig6_rows_and_shares(tmp_path):
    rows = category_rows() + category_rows(GROK)
    png, pdf = paths(tmp_path, "fig6")
    short = ModelLabels({QWEN: "qwen3-8b", DEEPSEEK: "deepseek-chat",
                         OPUS: "claude-opus-4-1-20250805"})
    table = fig6_criteria_level(categories_frame(rows), GPT, png, pdf, labels=short)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIG6_COLUMNS
    labels = list(dict.fromkeys(table["row_label"]))
    assert labels == ["qwen3-8b → expert", "deepseek-chat → expert",
                      "claude-opus-4-1-20250805 → expert", "expert → qwen3-8b",
                      "expert → deepseek-chat", "expert → claude-opus-4-1-20250805",
                      "qwen3-8b within", "deepseek-chat within",
                      "claude-opus-4-1-20250805 within", "expert within"]
    assert table.groupby("row")["chart"].first().tolist() == ["between"] * 6 + ["within"] * 4
    assert len(table) == 10 * 2 * 3
    fail = table[(table["row_label"] == "qwen3-8b → expert") & (table["direction"] == "-")]
    assert fail.set_index("category")["share"].to_dict() == {
        "irrelevant": 85.0, "matched": 15.0, "general": 0.0}
    deepseek_pass = table[(table["row_label"] == "deepseek-chat → expert")
                          & (table["direction"] == "+")]
    assert deepseek_pass["share"].tolist() == [51.0, 30.0, 19.0]
    expert = table[table["row_label"] == "expert within"]
    assert expert["target_rubric"].unique().tolist() == ["expert"]
    assert expert[expert["direction"] == "+"]["share"].tolist() == [47.0, 33.0, 20.0]
    assert expert["n_criteria"].unique().tolist() == [60]
    assert set(table.loc[table["row_kind"] == "expert->gen", "target_rubric"]) == {"expert"}


def test_fig6_bar_without_criteria_is_empty_and_counted_zero(tmp_path):
    rows = category_rows()
    no_fail = [r for r in rows if not (r["row_kind"] == "within" and r["direction"] == "-"
                                       and r["target_rubric"] == OPUS)]
    table = fig6_criteria_level(categories_frame(no_fail), GPT, *paths(tmp_path, "empty"))
    bar = table[(table["row_kind"] == "within") & (table["direction"] == "-")
                & (table["target_rubric"] == OPUS)]
    assert set(bar["n_criteria"]) == {0} and set(bar["share"]) == {0.0}
    other = table[(table["row_kind"] == "within") & (table["direction"] == "+")
                  & (table["target_rubric"] == OPUS)]
    assert other["share"].sum() == pytest.approx(100.0)


def test_fig6_errors(tmp_path):
    rows = category_rows()
    with pytest.raises(ValueError, match="missing column.*'share'"):
        fig6_criteria_level(categories_frame(rows).drop(columns="share"), GPT,
                            *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="response_model='nobody'"):
        fig6_criteria_level(categories_frame(rows), "nobody", *paths(tmp_path, "x"))
    uneven = [dict(r) for r in rows]
    uneven[0]["share"] = 10.0
    with pytest.raises(ValueError, match="sum to"):
        fig6_criteria_level(categories_frame(uneven), GPT, *paths(tmp_path, "x"))
    disagreeing = [dict(r) for r in rows]
    for r in disagreeing:
        if (r["row_kind"], r["target_rubric"], r["generator"]) == ("within", "expert", OPUS):
            r["share"] = {"none": 50.0, "one": 30.0, "several": 20.0}[r["category"]]
    with pytest.raises(ValueError, match="within-expert"):
        fig6_criteria_level(categories_frame(disagreeing), GPT, *paths(tmp_path, "x"))
    wrong = [dict(r) for r in rows]
    wrong[0]["category"] = "none"
    with pytest.raises(ValueError, match="unknown category"):
        fig6_criteria_level(categories_frame(wrong), GPT, *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure A.1

def framing_rows():
    rows = []
    for f_index, framing in enumerate(["implies", "match_rubric", "simulate_intervention"]):
        for g_index, g in enumerate(GENERATORS):
            for m_index, metric in enumerate(["framing_precision", "framing_recall",
                                              "framing_f1"]):
                value = 0.1 * (f_index + 1) + 0.01 * g_index + 0.001 * m_index
                rows.append(stat(metric, g, value, value - 0.02, value + 0.02,
                                 family="framing", framing=framing))
    rows.append(stat("framing_f1", OPUS, 0.3, 0.1, 0.4, family="framing",
                     framing="implies", generator_b=QWEN))
    return rows


def test_figA1_framings_in_caption_order(tmp_path):
    png, pdf = paths(tmp_path, "figA1")
    table = figA1_matching_framings(frame(framing_rows()), png, pdf)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIGA1_COLUMNS
    assert list(dict.fromkeys(table["framing"])) == ["match_rubric", "simulate_intervention",
                                                     "implies"]
    assert len(table) == 27
    cell = table[(table["framing"] == "implies") & (table["generator"] == OPUS)
                 & (table["metric"] == "framing_f1")]
    assert cell["estimate"].tolist() == [pytest.approx(0.1 + 0.02 + 0.002)]


def test_figA1_errors(tmp_path):
    rows = [r for r in framing_rows() if not (r["framing"] == "implies"
                                              and r["generator"] == QWEN
                                              and r["metric"] == "framing_recall")]
    with pytest.raises(ValueError, match="implies"):
        figA1_matching_framings(frame(rows), *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="family='framing'"):
        figA1_matching_framings(frame(existing_rows()[:-1]), *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="'framing'"):
        figA1_matching_framings(frame(framing_rows()).drop(columns="framing"),
                                *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure A.2

def test_figA2_panel_choices(tmp_path):
    png, pdf = paths(tmp_path, "figA2")
    table = figA2_panel_sensitivity(frame(existing_rows()), png, pdf)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIGA2_COLUMNS
    assert list(dict.fromkeys(table["panel"])) == ["all", "small models", "frontier"]
    frontier = table[table["panel"] == "frontier"]
    assert frontier["estimate"].tolist() == pytest.approx([0.2, 0.3, 0.4])
    assert frontier["generator"].tolist() == GENERATORS


def test_figA2_errors(tmp_path):
    rows = [r for r in existing_rows() if r["metric"] != "panel_spearman"]
    with pytest.raises(ValueError, match="panel_spearman"):
        figA2_panel_sensitivity(frame(rows), *paths(tmp_path, "x"))
    rows = [r for r in existing_rows() if not (r["panel"] == "frontier" and r["generator"] == OPUS)]
    with pytest.raises(ValueError, match="frontier"):
        figA2_panel_sensitivity(frame(rows), *paths(tmp_path, "x"))


# --------------------------------------------------------------------------- Figure A.4

def test_figA4_rows_in_caption_order(tmp_path):
    rows = it_rows(GPT) + it_rows(GROK, scale=0.5) + it_difference_rows()
    png, pdf = paths(tmp_path, "figA4")
    table = figA4_by_response_model(frame(rows), png, pdf)
    assert_figure_files(png, pdf)
    assert list(table.columns) == FIGA4_COLUMNS
    assert list(dict.fromkeys(table["metric"])) == FIGA4_ORDER == [
        "Q+(Cg->C*)", "Q+(C*->Cg)", "Q-(C*->Cg)", "Q-(Cg->C*)"]
    assert list(dict.fromkeys(table["response_model"])) == [GPT, GROK]
    assert len(table) == 4 * 2 * 3
    assert (table["generator"] != "").all()
    grok = table[(table["response_model"] == GROK) & (table["metric"] == "Q-(Cg->C*)")]
    assert grok["estimate"].tolist() == pytest.approx(
        [0.5 * (0.25 + 0.03 * i) for i in range(3)])


def test_figA4_errors(tmp_path):
    rows = it_rows(GPT) + [r for r in it_rows(GROK) if r["generator"] != DEEPSEEK
                           or r["metric"] != "Q-(Cg->C*)"]
    with pytest.raises(ValueError, match="grok"):
        figA4_by_response_model(frame(rows), *paths(tmp_path, "x"))
    with pytest.raises(ValueError, match="family='it'"):
        figA4_by_response_model(frame(existing_rows()), *paths(tmp_path, "x"))
    rows = it_rows("")
    with pytest.raises(ValueError, match="empty response_model"):
        figA4_by_response_model(frame(rows), *paths(tmp_path, "x"))


def test_figures_return_numeric_estimates(tmp_path):
    table = figA2_panel_sensitivity(frame(existing_rows()), *paths(tmp_path, "n"))
    assert np.issubdtype(table["estimate"].dtype, np.floating)


def test_fig5_wider_bracket_stacks_above_the_neighbour_pair(tmp_path):
    rows = it_rows() + [
        stat("Q-(C*->Cg)", QWEN, -0.2, -0.3, -0.1, family="it", response_model=GPT,
             generator_b=OPUS),
        stat("Q-(C*->Cg)", OPUS, 0.1, 0.05, 0.2, family="it", response_model=GPT,
             generator_b=DEEPSEEK),
    ]
    table = fig5_interventional_transfer(frame(rows), GPT, *paths(tmp_path, "fig5d"))
    levels = {(r.generator, r.generator_b): r.star_level
              for r in table[table["star"]].itertuples(index=False)}
    assert levels == {(OPUS, DEEPSEEK): 0, (QWEN, OPUS): 1}


# --------------------------------------------------------------------------- readable figures

from tests.figure_labels import assert_readable, capture_figures, na_texts  # noqa: E402,F401

FAKE = {QWEN: "fake/hash?salt=qwen", DEEPSEEK: "fake/hash?salt=deepseek",
        OPUS: "fake/hash?salt=opus", GPT: "fake/hash?salt=gpt", GROK: "fake/hash?salt=grok"}


def faked(rows) -> pd.DataFrame:
    table = pd.DataFrame(rows)
    return table.replace({c: FAKE for c in ("generator", "generator_b", "response_model",
                                            "target_rubric")
                          if c in table})


def test_every_transfer_figure_reads_without_query_strings(capture_figures, tmp_path):
    existing = faked(existing_rows())[STATS_COLUMNS]
    it = faked(it_rows(GPT) + it_rows(GROK, scale=0.5) + it_difference_rows())[STATS_COLUMNS]
    fig4_existing_approaches(existing, *paths(tmp_path, "fig4"))
    fig5_interventional_transfer(it, FAKE[GPT], *paths(tmp_path, "fig5"))
    fig6_criteria_level(categories_frame(faked(category_rows()).to_dict("records")), FAKE[GPT],
                        *paths(tmp_path, "fig6"), n_examples=105)
    figA1_matching_framings(faked(framing_rows())[STATS_COLUMNS], *paths(tmp_path, "figA1"))
    figA2_panel_sensitivity(existing, *paths(tmp_path, "figA2"))
    figA4_by_response_model(it, *paths(tmp_path, "figA4"))
    assert len(capture_figures) == 6
    for fig in capture_figures:
        assert_readable(fig, shows=("fake/hash (", "105 HealthBench examples"))
        assert not na_texts(fig)


def test_undefined_panels_say_na_and_why(capture_figures, tmp_path):
    rows = existing_rows()
    for row in rows:
        if row["metric"] in ("panel_spearman", "physician_spearman"):
            row.update(estimate=math.nan, low=math.nan, high=math.nan, n_used=0)
    stats = frame(rows)
    fig4_existing_approaches(stats, *paths(tmp_path, "fig4"))
    figA2_panel_sensitivity(stats, *paths(tmp_path, "figA2"))
    fig4, figA2 = capture_figures
    assert len(na_texts(fig4)) == 2 and len(na_texts(figA2)) == 1
    assert all("undefined on all 105 examples" in text for text in na_texts(fig4) + na_texts(figA2))


def test_configured_labels_name_the_generators(capture_figures, tmp_path):
    labels = ModelLabels({OPUS: "Opus 4.1"})
    figA2_panel_sensitivity(frame(existing_rows()), *paths(tmp_path, "figA2"), labels=labels)
    assert_readable(capture_figures[-1], shows=("Opus 4.1",), hides=(OPUS,))


from tests.figure_labels import (  # noqa: E402
    texts_outside_their_axes, value_labels_crossed_by_error_bars,
)


def test_fig6_all_empty_direction_says_na_and_why_in_each_panel(capture_figures, tmp_path):
    rows = [r for r in category_rows() if r["direction"] != "+"]
    table = fig6_criteria_level(categories_frame(rows), GPT, *paths(tmp_path, "fig6na"))
    assert set(table.loc[table["direction"] == "+", "n_criteria"]) == {0}
    fig = capture_figures[-1]
    na = na_texts(fig)
    assert len(na) == 2 and all("none failed before the edit" in text for text in na)
    upper_left, lower_left = fig.axes[0], fig.axes[2]
    for ax in (upper_left, lower_left):
        assert any(t.get_text().startswith("n/a") for t in ax.texts)
        # the rows stay named on the empty panel
        assert all("(n=0)" in t.get_text() for t in ax.get_yticklabels())
    assert not texts_outside_their_axes(fig)


def test_fig6_single_empty_bar_is_marked_na(capture_figures, tmp_path):
    rows = [r for r in category_rows() if not (r["row_kind"] == "within"
                                               and r["direction"] == "-"
                                               and r["target_rubric"] == OPUS)]
    fig6_criteria_level(categories_frame(rows), GPT, *paths(tmp_path, "fig6bar"))
    assert na_texts(capture_figures[-1]) == ["n/a: no criterion to intervene on (n=0)"]


def test_na_reasons_are_wrapped_inside_their_panels(capture_figures, tmp_path):
    rows = existing_rows()
    for row in rows:
        if row["metric"] in ("panel_spearman", "physician_spearman"):
            row.update(estimate=math.nan, low=math.nan, high=math.nan, n_used=0)
    fig4_existing_approaches(frame(rows), *paths(tmp_path, "fig4"))
    fig = capture_figures[-1]
    assert len(na_texts(fig)) == 2
    assert not texts_outside_their_axes(fig)


def test_zero_bars_are_drawn_and_labelled(capture_figures, tmp_path):
    rows = existing_rows()
    for row in rows:
        if row["metric"] == "discrimination":
            row.update(estimate=0.0, low=math.nan, high=math.nan)
    fig4_existing_approaches(frame(rows), *paths(tmp_path, "fig4zero"))
    discrimination = capture_figures[-1].axes[3]
    marks = [c for c in discrimination.collections
             if isinstance(c, matplotlib.collections.LineCollection) and len(c.get_segments())
             and max(c.get_linewidths()) >= 2]
    # one visible stroke at 0 per generator and one for the expert (grey, as in the legend)
    assert len(marks) == len(GENERATORS) + 1
    assert [t.get_text() for t in discrimination.texts] == ["0.00"] * (len(GENERATORS) + 1)


def test_value_labels_clear_the_error_bars(capture_figures, tmp_path):
    rows = it_rows()
    for row in rows:  # the default run's shape: a bar of 0.50 with [0, 0.67]
        row.update(estimate=0.5, low=0.0, high=0.67)
    stats = frame(rows)
    fig5_interventional_transfer(stats, GPT, *paths(tmp_path, "fig5"))
    figA4_by_response_model(stats, *paths(tmp_path, "figA4"))
    for fig in capture_figures:
        labels = [t for ax in fig.axes for t in ax.texts if t.get_text() == "0.50"]
        assert labels
        assert not value_labels_crossed_by_error_bars(fig)
