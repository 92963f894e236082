import math

import pandas as pd
import pytest

from tests.markdown_tables import has_run, table_rows
from rubriclab.labels import ModelLabels, labels_in_use
from rubriclab.tidy import write_table

from rubriclab.transfer.figures import STATS_COLUMNS
from rubriclab.transfer.tables import (
    CUTOFFS_COLUMNS, EDIT_SIZES_COLUMNS, tableA4_existing_paired_differences,
    tableA5_degradation, tableA6_similarity_pass_fail, tableA7_similarity_cutoffs,
    tableA8_it_paired_differences, tableA9_edit_sizes,
)


class ShortLabels(ModelLabels):
    """The model name without its provider, as these tables' expected cells spell it."""

    def __call__(self, model):
        return "Expert" if model == "expert" else str(model).rsplit("/", 1)[-1]


@pytest.fixture(autouse=True)
def short_labels():
    with labels_in_use(ShortLabels()):
        yield

QWEN = "openrouter/qwen/qwen3-8b"
DEEPSEEK = "deepseek/deepseek-chat"
OPUS = "anthropic/claude-opus-4-1-20250805"
GPT = "openai/gpt-5-mini"
GROK = "xai/grok-4"
LLAMA = "meta-llama/llama-4-scout"
BASE = dict(family="existing", generator_b="", response_model="", panel="", framing="",
            n_used=1000, B=1000, n_examples=105)
NAN = math.nan


def stat(metric, generator, estimate, low=NAN, high=NAN, **fields):
    return {**BASE, **fields, "metric": metric, "generator": generator,
            "estimate": estimate, "low": low, "high": high}


def frame(rows):
    return pd.DataFrame(rows)[STATS_COLUMNS]


# --------------------------------------------------------------------------- Table A.4

def a4_rows():
    return [
        stat("llm_matching_f1", DEEPSEEK, 0.0612, 0.0234, 0.0999, generator_b=QWEN),
        stat("llm_matching_f1", OPUS, 0.42, 0.31, 0.55, generator_b=QWEN),
        stat("discrimination", OPUS, 0.1, -0.05, 0.25, generator_b=QWEN),
        stat("panel_spearman", OPUS, 0.03, -0.1, 0.16, generator_b=QWEN, panel="all"),
        stat("panel_spearman", OPUS, 0.9, 0.8, 1.0, generator_b=QWEN, panel="frontier"),
        stat("llm_matching_precision", OPUS, -0.001, -0.2, NAN, generator_b=QWEN),
        stat("physician_spearman", DEEPSEEK, NAN, NAN, NAN, generator_b=QWEN),
        # Plain statistics and other families are not in the table.
        stat("llm_matching_f1", OPUS, 0.6, 0.5, 0.7),
        stat("Q+(Cg->C*)", OPUS, 0.3, 0.2, 0.4, family="it", response_model=GPT,
             generator_b=QWEN),
    ]


def test_tableA4_cells_and_order():
    markdown, table = tableA4_existing_paired_differences(frame(a4_rows()))
    opus, deepseek = "claude-opus-4-1-20250805 − qwen3-8b", "deepseek-chat − qwen3-8b"
    assert list(table.columns) == ["metric", "Metric", deepseek, opus]
    assert table["metric"].tolist() == ["llm_matching_precision", "llm_matching_f1",
                                        "panel_spearman", "physician_spearman",
                                        "discrimination"]
    cells = table.set_index("metric")
    assert cells.loc["llm_matching_f1", opus] == "0.42 [0.31, 0.55]"
    assert cells.loc["llm_matching_f1", deepseek] == "0.06 [0.02, 0.10]"
    assert cells.loc["panel_spearman", opus] == "0.03 [-0.10, 0.16]"  # panel "all" only
    assert cells.loc["llm_matching_precision", opus] == "0.00 [-0.20, n/a]"
    assert cells.loc["physician_spearman", deepseek] == "n/a"
    assert cells.loc["discrimination", deepseek] == "n/a"  # no row for that pair
    assert has_run(markdown, ["LLM-matching F1", "0.06 [0.02, 0.10]", "0.42 [0.31, 0.55]"])
    assert markdown.startswith("# transfer, Table A.4")
    assert "0.90" not in markdown


def test_tableA4_errors():
    # one generator: nothing to pair (a note, tested below); two without differences: an error
    with pytest.raises(ValueError, match="paired-difference"):
        tableA4_existing_paired_differences(frame([stat("llm_matching_f1", OPUS, 0.6),
                                                   stat("llm_matching_f1", QWEN, 0.5)]))
    with pytest.raises(ValueError, match="family='existing'"):
        tableA4_existing_paired_differences(frame(a4_rows()[-1:]))
    with pytest.raises(ValueError, match="'generator_b'"):
        tableA4_existing_paired_differences(frame(a4_rows()).drop(columns="generator_b"))
    duplicated = a4_rows() + [stat("llm_matching_f1", OPUS, 0.4, 0.3, 0.5, generator_b=QWEN,
                                   response_model=GPT)]
    with pytest.raises(ValueError, match="response_model"):
        tableA4_existing_paired_differences(frame(duplicated))


# --------------------------------------------------------------------------- Table A.5

def test_tableA5_rows_per_degrading_model():
    rows = [stat("degradation_drop", "expert", 0.1049, 0.08, 0.131, family="degradation",
                 response_model=GROK, n_examples=92),
            stat("degradation_drop", "expert", 0.2, 0.15, 0.25, family="degradation",
                 response_model=LLAMA),
            stat("degradation_drop", OPUS, 0.9, 0.8, 1.0, family="degradation",
                 response_model=GROK)]
    markdown, table = tableA5_degradation(frame(rows))
    assert table["Degrading model"].tolist() == ["grok-4", "llama-4-scout"]
    assert table["Drop in expert score"].tolist() == ["0.10 [0.08, 0.13]", "0.20 [0.15, 0.25]"]
    assert table["n_examples"].tolist() == [92, 105]
    assert has_run(markdown, ["grok-4", "0.10 [0.08, 0.13]", "92"])


def test_intervals_of_zero_width_or_few_examples_are_flagged():
    """No [0.00, 0.00] without a mark; under 35 examples (where the coverage study found
    Algorithm 4 short of 95%) every interval is marked; each mark is explained once."""
    rows = [stat("degradation_drop", "expert", 0.0, 0.0, 0.0, family="degradation",
                 response_model=GROK),
            stat("degradation_drop", "expert", 0.2, 0.15, 0.25, family="degradation",
                 response_model=LLAMA, n_examples=15),
            stat("degradation_drop", "expert", 0.3, 0.301, 0.304, family="degradation",
                 response_model=QWEN)]
    markdown, table = tableA5_degradation(frame(rows))
    assert table["Drop in expert score"].tolist() == ["0.00 [0.00, 0.00]§", "0.20 [0.15, 0.25]‡",
                                                      "0.30 [0.30, 0.30]§"]
    notes = [line for line in markdown.splitlines() if line[:1] in ("§", "‡", "†")]
    assert [line[0] for line in notes] == ["§", "‡"]
    assert "zero width" in notes[0] and "fewer than 35 examples" in notes[1]
    assert markdown.index(notes[0]) > markdown.index("Table A.5: RubricRAG")
    # a paired difference of identical generators: [0.00, 0.00], flagged in Table A.8 too
    same = [stat("Q+(Cg->C*)", OPUS, 0.0, 0.0, 0.0, family="it", response_model=GPT,
                 generator_b=QWEN)]
    markdown, table = tableA8_it_paired_differences(frame(same), GPT)
    assert table.iloc[0]["claude-opus-4-1-20250805 − qwen3-8b"] == "0.00 [0.00, 0.00]§"
    assert "§ the interval has zero width" in markdown
    # nothing to flag, no footnote
    markdown, _ = tableA5_degradation(frame([
        stat("degradation_drop", "expert", 0.2, 0.15, 0.25, family="degradation",
             response_model=LLAMA)]))
    assert not any(mark in markdown for mark in ("§", "‡", "†"))


def test_tableA5_errors():
    with pytest.raises(ValueError, match="degradation_drop"):
        tableA5_degradation(frame([stat("llm_matching_f1", OPUS, 0.6)]))
    twice = [stat("degradation_drop", "expert", 0.1, family="degradation", response_model=GROK)] * 2
    with pytest.raises(ValueError, match="2 rows"):
        tableA5_degradation(frame(twice))


# --------------------------------------------------------------------------- Table A.6

def a6_rows(response_model=GPT):
    rows = []
    for index, g in enumerate([QWEN, OPUS]):
        rows += [stat("max_similarity_pass", g, 4.5 + index, 4.2 + index, 4.8 + index,
                      family="similarity", response_model=response_model),
                 stat("max_similarity_fail", g, 3.456, 3.1, 3.9, family="similarity",
                      response_model=response_model),
                 stat("max_similarity_diff", g, 1.044 + index, 0.6, 1.5 + index,
                      family="similarity", response_model=response_model)]
    return rows


def test_tableA6_cells():
    markdown, table = tableA6_similarity_pass_fail(frame(a6_rows()))
    assert table["Generator"].tolist() == ["qwen3-8b", "claude-opus-4-1-20250805"]
    qwen = table.iloc[0]
    assert qwen["Passing"] == "4.50 [4.20, 4.80]"
    assert qwen["Failing"] == "3.46 [3.10, 3.90]"
    assert qwen["Passing − failing"] == "1.04 [0.60, 1.50]"
    assert table.iloc[1]["Passing − failing"] == "2.04 [0.60, 2.50]"
    assert has_run(markdown, ["qwen3-8b", "4.50 [4.20, 4.80]", "3.46 [3.10, 3.90]",
                              "1.04 [0.60, 1.50]"])


def test_tableA6_response_model_selection():
    rows = a6_rows(GPT) + a6_rows(GROK)
    with pytest.raises(ValueError, match="response_model"):
        tableA6_similarity_pass_fail(frame(rows))
    _, table = tableA6_similarity_pass_fail(frame(rows), response_model=GROK)
    assert len(table) == 2
    with pytest.raises(ValueError, match="response_model='nobody'"):
        tableA6_similarity_pass_fail(frame(rows), response_model="nobody")


# --------------------------------------------------------------------------- Table A.7

def test_tableA7_percent_cells():
    rows = []
    for g in (QWEN, OPUS):
        for passed, n in ((True, 120), (False, 80)):
            for cutoff in (9, 5, 0):
                share = 100.0 if cutoff == 0 else (33.333 if passed else 12.55) / (10 - cutoff)
                rows.append(dict(generator=g, passed=passed, cutoff=cutoff, share=share,
                                 n_criteria=n))
    markdown, table = tableA7_similarity_cutoffs(pd.DataFrame(rows)[CUTOFFS_COLUMNS])
    assert table["cutoff"].tolist() == [0, 5, 9]
    assert list(table.columns) == ["cutoff", "qwen3-8b passing", "qwen3-8b failing",
                                   "claude-opus-4-1-20250805 passing",
                                   "claude-opus-4-1-20250805 failing"]
    row9 = table.set_index("cutoff").loc[9]
    assert row9["qwen3-8b passing"] == 33.3 and row9["qwen3-8b failing"] == 12.6
    assert has_run(markdown, ["≥ 5", "6.7", "2.5", "6.7", "2.5"])
    assert has_run(markdown, ["≥ 0", "100.0", "100.0", "100.0", "100.0"])
    assert "qwen3-8b passing (n=120)" in markdown and "qwen3-8b failing (n=80)" in markdown


def test_tableA7_string_booleans_and_missing_cells(tmp_path):
    rows = [dict(generator=QWEN, passed="True", cutoff=5, share=40.0, n_criteria=10),
            dict(generator=QWEN, passed="False", cutoff=5, share=20.0, n_criteria=8),
            dict(generator=QWEN, passed="True", cutoff=7, share=10.0, n_criteria=10)]
    markdown, table = tableA7_similarity_cutoffs(pd.DataFrame(rows))
    assert math.isnan(table.set_index("cutoff").loc[7, "qwen3-8b failing"])
    assert has_run(markdown, ["≥ 7", "10.0", "n/a"])


def test_tableA7_errors():
    with pytest.raises(ValueError, match="'n_criteria'"):
        tableA7_similarity_cutoffs(pd.DataFrame([dict(generator=QWEN, passed=True, cutoff=1,
                                                      share=1.0)]))
    with pytest.raises(ValueError, match="no rows"):
        tableA7_similarity_cutoffs(pd.DataFrame(columns=CUTOFFS_COLUMNS))
    with pytest.raises(ValueError, match="non-boolean"):
        tableA7_similarity_cutoffs(pd.DataFrame([dict(generator=QWEN, passed="maybe",
                                                      cutoff=1, share=1.0, n_criteria=3)]))


# --------------------------------------------------------------------------- Table A.8

def test_tableA8_rows_in_figure5_order():
    rows = [stat("Q-(C*->Cg)", OPUS, 0.05, -0.02, 0.12, family="it", response_model=GPT,
                 generator_b=QWEN),
            stat("Q+(Cg->C*)", OPUS, 0.084, 0.025, 0.146, family="it", response_model=GPT,
                 generator_b=QWEN),
            stat("Q+(Cg->C*)", DEEPSEEK, 0.01, -0.05, 0.07, family="it",
                 response_model=GPT, generator_b=QWEN),
            stat("Q+(Cg->C*)", OPUS, 0.5, 0.4, 0.6, family="it", response_model=GROK,
                 generator_b=QWEN),
            stat("Q+(Cg->C*)", OPUS, 0.11, 0.05, 0.17, family="it", response_model=GPT)]
    markdown, table = tableA8_it_paired_differences(frame(rows), GPT)
    opus = "claude-opus-4-1-20250805 − qwen3-8b"
    assert table["metric"].tolist() == ["Q+(Cg->C*)", "Q-(C*->Cg)"]
    cells = table.set_index("metric")
    assert cells.loc["Q+(Cg->C*)", opus] == "0.08 [0.03, 0.15]"
    assert cells.loc["Q-(C*->Cg)", opus] == "0.05 [-0.02, 0.12]"
    assert cells.loc["Q-(C*->Cg)", "deepseek-chat − qwen3-8b"] == "n/a"
    assert "0.50" not in markdown and "gpt-5-mini" in markdown


def test_tableA8_errors():
    rows = [stat("Q+(Cg->C*)", OPUS, 0.1, family="it", response_model=GPT, generator_b=QWEN)]
    with pytest.raises(ValueError, match="response_model='nobody'"):
        tableA8_it_paired_differences(frame(rows), "nobody")
    with pytest.raises(ValueError, match="paired-difference"):
        tableA8_it_paired_differences(frame([
            stat("Q+(Cg->C*)", OPUS, 0.1, family="it", response_model=GPT),
            stat("Q+(Cg->C*)", QWEN, 0.2, family="it", response_model=GPT)]), GPT)


# --------------------------------------------------------------------------- Table A.9

def edit_row(level, target, direction, ratio, n=10):
    measured = "expert" if target == "generated" else "generated"
    return dict(level=level, target=target, direction=direction, measured=measured,
                n_interventions=n, mean_criterion_words=12.345, mean_edit_words=88.06,
                edit_words_per_criterion_word=0.6789, mean_length_ratio=ratio)


def test_tableA9_row_order_and_numbers():
    rows = [edit_row("rubric", "expert", "-", 0.42, n=105),
            edit_row("criterion", "expert", "+", 1.1, n=900),
            edit_row("criterion", "generated", "-", 0.92, n=700),
            edit_row("rubric", "generated", "+", 1.31, n=105),
            edit_row("criterion", "generated", "+", 1.05, n=700),
            edit_row("rubric", "generated", "-", 0.62, n=105),
            edit_row("rubric", "expert", "+", 1.2, n=105),
            edit_row("criterion", "expert", "-", 0.915, n=900)]
    markdown, table = tableA9_edit_sizes(pd.DataFrame(rows)[EDIT_SIZES_COLUMNS])
    assert list(zip(table["target"], table["direction"])) == [
        ("generated", "+"), ("generated", "-"), ("expert", "+"), ("expert", "-")]
    assert table["measured"].tolist() == ["expert", "expert", "generated", "generated"]
    assert table["rubric_mean_length_ratio"].tolist() == [1.31, 0.62, 1.2, 0.42]
    assert table["criterion_mean_length_ratio"].tolist() == [1.05, 0.92, 1.1, 0.92]
    assert table["criterion_n_interventions"].tolist() == [700, 700, 900, 900]
    assert table["rubric_mean_criterion_words"].tolist() == [12.3] * 4
    assert table["rubric_edit_words_per_criterion_word"].tolist() == [0.68] * 4
    header, *rows = table_rows(markdown)
    assert [row[0] for row in rows] == ["Cᵍ + (pass)", "Cᵍ - (fail)", "C* + (pass)", "C* - (fail)"]
    assert rows[0] == ["Cᵍ + (pass)", "C*", "700", "12.3", "88.1", "0.68", "1.05", "105", "12.3",
                       "88.1", "0.68", "1.31"]
    assert "rubric (R'−R)/\\|C\\|" in header and "criterion \\|c\\|" in header
    assert len(header) == 12  # the criterion pipes are escaped


def test_tableA9_missing_level_prints_na():
    rows = [edit_row("rubric", "generated", "-", 0.5), edit_row("criterion", "expert", "+", 1.0)]
    markdown, table = tableA9_edit_sizes(pd.DataFrame(rows))
    assert list(zip(table["target"], table["direction"])) == [("generated", "-"),
                                                            ("expert", "+")]
    assert math.isnan(table.iloc[0]["criterion_mean_edit_words"])
    assert has_run(markdown, ["Cᵍ - (fail)", "C*", "n/a", "n/a", "n/a", "n/a", "n/a", "10"])


def test_tableA9_errors():
    good = edit_row("rubric", "generated", "+", 1.0)
    with pytest.raises(ValueError, match="'mean_length_ratio'"):
        tableA9_edit_sizes(pd.DataFrame([good]).drop(columns="mean_length_ratio"))
    with pytest.raises(ValueError, match="no rows"):
        tableA9_edit_sizes(pd.DataFrame(columns=EDIT_SIZES_COLUMNS))
    with pytest.raises(ValueError, match="unknown level"):
        tableA9_edit_sizes(pd.DataFrame([{**good, "level": "sentence"}]))
    with pytest.raises(ValueError, match="2 rows"):
        tableA9_edit_sizes(pd.DataFrame([good, good]))


# --------------------------------------------------------------------------- write_table

def test_write_table(tmp_path):
    markdown, table = tableA4_existing_paired_differences(frame(a4_rows()))
    out_md, out_csv = tmp_path / "t" / "a4.md", tmp_path / "t" / "a4.csv"
    write_table(markdown, table, out_md, out_csv)
    assert out_md.read_text() == markdown
    back = pd.read_csv(out_csv, keep_default_na=False)
    assert back["claude-opus-4-1-20250805 − qwen3-8b"].tolist() == \
        table["claude-opus-4-1-20250805 − qwen3-8b"].tolist()


def test_paired_difference_tables_say_so_when_there_is_one_generator():
    stats = pd.DataFrame([dict(family="it", metric="Q+(Cg->C*)", generator="local/default",
                               generator_b="", response_model="local/default", panel="",
                               framing="", estimate=0.1, low=0.0, high=0.2, n_used=1000,
                               B=1000, n_examples=3)])
    markdown, frame = tableA8_it_paired_differences(stats, "local/default")
    assert "this run has one generator (local/default)" in markdown
    assert list(frame.columns) == ["note"]
    markdown, _ = tableA4_existing_paired_differences(stats)
    assert "no paired difference of the existing approaches" in markdown
