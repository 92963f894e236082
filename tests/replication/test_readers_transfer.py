"""rubriclab.replication.readers_transfer on small hand-made outputs."""

import pandas as pd
import pytest

from rubriclab.replication.readers_transfer import READERS

QWEN, DEEPSEEK, OPUS = "g/qwen", "g/deepseek", "g/opus"
CONFIG = {"transfer": {"generators": [QWEN, DEEPSEEK, OPUS], "response_model": "m/main",
                       "degrader": "m/bad"}}
N = 105


def stat(metric, generator, estimate, low, high, generator_b="", response_model="m/main",
         family="it", panel="", framing=""):
    return dict(family=family, metric=metric, generator=generator, generator_b=generator_b,
                response_model=response_model, panel=panel, framing=framing,
                estimate=estimate, low=low, high=high, n_used=1000, B=1000, n_examples=N)


def q_rows(generator, minus=(0.6, 0.5, 0.7), plus=(0.05, -0.02, 0.12), model="m/main"):
    return [stat(m, generator, *values, response_model=model)
            for m, values in (("Q-(Cg->C*)", minus), ("Q+(Cg->C*)", plus),
                              ("Q-(C*->Cg)", minus), ("Q+(C*->Cg)", plus))]


def write(tmp_path, **tables) -> dict:
    paths = {}
    for name, rows in tables.items():
        paths[name] = tmp_path / f"{name}.csv"
        pd.DataFrame(rows).to_csv(paths[name], index=False, na_rep="NaN")
    return paths


def read(claim, paths, config=CONFIG):
    return READERS[claim](paths, config)


def holds(evidence):
    return [p.holds for p in evidence.parts]


# --------------------------------------------------------------------------- Figure 5

def test_q_metric_reads_one_generators_q_in_percent(tmp_path):
    paths = write(tmp_path, stats=[*q_rows(QWEN), *q_rows(DEEPSEEK),
                                   *q_rows(OPUS, plus=(0.11, 0.04, 0.18))])
    evidence = read("transfer.fig5.opus_gain", paths)
    assert (evidence.value, evidence.low, evidence.high, evidence.n) == \
        (pytest.approx(11), pytest.approx(4), pytest.approx(18), N)
    lost = read("transfer.fig5.generated_lost.deepseek", paths)
    assert lost.value == pytest.approx(60)


def test_q_metric_of_a_generator_the_run_lacks_cannot_tell(tmp_path):
    paths = write(tmp_path, stats=q_rows(QWEN))
    evidence = read("transfer.fig5.opus_gain", paths, {**CONFIG, "transfer": {
        **CONFIG["transfer"], "generators": [QWEN]}})
    assert "Opus-5 is generator 3" in evidence.cannot


def test_fail_beats_pass_holds_fails_and_cannot_tell(tmp_path):
    rows = [*q_rows(QWEN), *q_rows(DEEPSEEK), *q_rows(OPUS)]
    assert holds(read("transfer.fig5.fail_beats_pass", write(tmp_path, stats=rows))) == [True] * 6
    # Deepseek's Q- reaches into its Q+'s interval: not "far greater"
    overlapping = [*q_rows(QWEN), *q_rows(DEEPSEEK, minus=(0.3, 0.1, 0.5)), *q_rows(OPUS)]
    assert holds(read("transfer.fig5.fail_beats_pass", write(tmp_path, stats=overlapping))) \
        == [True, True, False, False, True, True]
    undefined = [*q_rows(QWEN), *q_rows(DEEPSEEK), *q_rows(OPUS, minus=(float("nan"),) * 3)]
    assert holds(read("transfer.fig5.fail_beats_pass", write(tmp_path, stats=undefined))) \
        == [True, True, True, True, None, None]
    # another response model's rows (Figure A.4) are not Figure 5's
    elsewhere = [*q_rows(QWEN, model="m/other"), *q_rows(DEEPSEEK), *q_rows(OPUS)]
    assert holds(read("transfer.fig5.fail_beats_pass", write(tmp_path, stats=elsewhere)))[:2] \
        == [None, None]


def test_gain_only_opus(tmp_path):
    rows = [*q_rows(QWEN), *q_rows(DEEPSEEK), *q_rows(OPUS, plus=(0.11, 0.04, 0.18))]
    assert holds(read("transfer.fig5.gain_only_opus", write(tmp_path, stats=rows))) == \
        [True, True, True]
    assert holds(read("transfer.fig5.qwen_zero_gain", write(tmp_path, stats=rows))) == [True]
    # Opus's gain reaching 0: the claim's Opus part fails
    rows = [*q_rows(QWEN), *q_rows(DEEPSEEK), *q_rows(OPUS)]
    assert holds(read("transfer.fig5.gain_only_opus", write(tmp_path, stats=rows))) == \
        [True, True, False]
    one = {"transfer": {**CONFIG["transfer"], "generators": [QWEN]}}
    assert holds(read("transfer.fig5.gain_only_opus", write(tmp_path, stats=rows), one)) == \
        [True, None, None]


def test_differences_read_pairs_in_the_configs_order_either_way(tmp_path):
    metric = "Q-(C*->Cg)"
    rows = [stat(metric, QWEN, -0.2, -0.3, -0.1, generator_b=DEEPSEEK),
            stat(metric, DEEPSEEK, 0.15, 0.05, 0.25, generator_b=OPUS)]
    evidence = read("transfer.tableA8.deepseek_detects_degradation", write(tmp_path, stats=rows))
    # Deepseek - Qwen is the negated Qwen - Deepseek row: [0.1, 0.3], above 0
    assert holds(evidence) == [True, True]
    assert "0.2 [0.1, 0.3]" in evidence.parts[0].detail
    rows[1] = stat(metric, DEEPSEEK, 0.05, -0.05, 0.15, generator_b=OPUS)
    assert holds(read("transfer.tableA8.deepseek_detects_degradation",
                      write(tmp_path, stats=rows))) == [True, False]
    rows[1] = stat(metric, DEEPSEEK, float("nan"), float("nan"), float("nan"), generator_b=OPUS)
    assert holds(read("transfer.tableA8.deepseek_detects_degradation",
                      write(tmp_path, stats=rows))) == [True, None]


def test_across_response_models_expects_the_named_exceptions_to_differ(tmp_path):
    rows = []
    for model in ("m/main", "m/other", "x/claude-sonnet-4-6"):
        for generator in (QWEN, DEEPSEEK, OPUS):
            plus = (0.55, 0.4, 0.7) if model.endswith("sonnet-4-6") and generator == OPUS \
                else (0.05, -0.02, 0.12)
            rows += q_rows(generator, plus=plus, model=model)
    evidence = read("transfer.figA4.across_response_models", write(tmp_path, stats=rows))
    assert holds(evidence) == [True] * 8
    assert "Grok 4.20" in evidence.note and "Sonnet" not in evidence.note
    # the exception showing the asymmetry everywhere: its part fails
    rows = [r for m in ("m/main", "m/other", "x/claude-sonnet-4-6")
            for g in (QWEN, DEEPSEEK, OPUS) for r in q_rows(g, model=m)]
    assert holds(read("transfer.figA4.across_response_models",
                      write(tmp_path, stats=rows)))[-1] is False
    only_main = [r for g in (QWEN, DEEPSEEK, OPUS) for r in q_rows(g)]
    assert holds(read("transfer.figA4.across_response_models",
                      write(tmp_path, stats=only_main))) == [None]


# --------------------------------------------------------------------------- Figure 4, Table A.4

def figure4_rows(generator, value=(0.5, 0.4, 0.6)):
    return [stat("llm_matching_f1", generator, *value, family="existing", response_model=""),
            stat("panel_spearman", generator, *value, family="existing", response_model="",
                 panel="all"),
            stat("physician_spearman", generator, *value, family="existing", response_model=""),
            stat("discrimination", generator, *value, family="existing", response_model="m/bad")]


def test_existing_mid_range(tmp_path):
    rows = [r for g in (QWEN, DEEPSEEK, OPUS) for r in figure4_rows(g)]
    assert holds(read("transfer.fig4.mid_range", write(tmp_path, stats=rows))) == [True] * 12
    rows[0] = stat("llm_matching_f1", QWEN, 0.9, 0.8, 0.95, family="existing", response_model="")
    rows[2] = stat("physician_spearman", QWEN, float("nan"), float("nan"), float("nan"),
                   family="existing", response_model="")
    assert holds(read("transfer.fig4.mid_range", write(tmp_path, stats=rows)))[:4] == \
        [False, True, None, True]


def test_existing_pairwise(tmp_path):
    rows = []
    exceptions = {("llm_matching_f1", QWEN, DEEPSEEK), ("llm_matching_f1", QWEN, OPUS),
                  ("discrimination", QWEN, OPUS)}
    for metric, model, panel in (("llm_matching_f1", "", ""), ("panel_spearman", "", "all"),
                                 ("physician_spearman", "", ""), ("discrimination", "m/bad", "")):
        for a, b in ((QWEN, DEEPSEEK), (QWEN, OPUS), (DEEPSEEK, OPUS)):
            value = (-0.1, -0.15, -0.05) if (metric, a, b) in exceptions else (0.0, -0.1, 0.1)
            rows.append(stat(metric, a, *value, generator_b=b, family="existing",
                             response_model=model, panel=panel))
    assert holds(read("transfer.tableA4.pairwise", write(tmp_path, stats=rows))) == [True] * 12
    # a significant difference the seed does not name
    rows[3] = {**rows[3], "estimate": 0.2, "low": 0.1, "high": 0.3}
    result = holds(read("transfer.tableA4.pairwise", write(tmp_path, stats=rows)))
    assert result[3] is False and result.count(False) == 1


def test_matching_f1_near_and_framing_sensitive(tmp_path):
    rows = [stat("llm_matching_f1", g, 0.5, 0.46, 0.54, family="existing", response_model="")
            for g in (QWEN, DEEPSEEK, OPUS)]
    for generator in (QWEN, DEEPSEEK, OPUS):
        rows += [stat("framing_f1", generator, 0.5, 0.45, 0.55, family="framing",
                      response_model="", framing="match_rubric"),
                 stat("framing_f1", generator, 0.1, 0.07, 0.13, family="framing",
                      response_model="", framing="implies")]
    paths = write(tmp_path, stats=rows)
    assert holds(read("transfer.figA1.f1_around_half", paths)) == [True] * 3
    assert holds(read("transfer.figA1.implies_low", paths)) == [True] * 3
    assert holds(read("transfer.figA1.framing_sensitive", paths)) == [True] * 3
    rows[-1] = {**rows[-1], "estimate": 0.45, "low": 0.3, "high": 0.6}  # Opus's implies
    paths = write(tmp_path, stats=rows)
    assert holds(read("transfer.figA1.implies_low", paths)) == [True, True, False]
    assert holds(read("transfer.figA1.framing_sensitive", paths)) == [True, True, False]


# --------------------------------------------------------------------------- counts, Table A.5

def test_largest_degradation_is_the_largest_drop_with_its_interval(tmp_path):
    rows = [stat("degradation_drop", "expert", d, d - 0.05, d + 0.05, family="degradation",
                 response_model=m) for m, d in (("m/a", 0.1), ("m/b", 0.37), ("m/c", 0.2))]
    evidence = read("transfer.tableA5.largest_drop", write(tmp_path, stats=rows))
    assert (evidence.value, evidence.low, evidence.high) == \
        (pytest.approx(37), pytest.approx(32), pytest.approx(42))
    assert "m/b 37.0" in evidence.note


# --------------------------------------------------------------------------- Figure 6

def category_rows(row_kind, direction, generator, counts, labels):
    n = sum(counts)
    return [dict(n_criteria=n, category=label, share=100 * k / n if n else 0.0,
                 generator=generator, response_model="m/main", row_kind=row_kind,
                 target_rubric=generator, direction=direction)
            for label, k in zip(labels, counts)]


MOVE = ("irrelevant", "matched", "general")
REDUNDANCY = ("none", "one", "several")


def test_irrelevant_share_is_pooled_over_criteria_with_an_exact_interval(tmp_path):
    rows = [*category_rows("gen->expert", "+", QWEN, (9, 1, 0), MOVE),
            *category_rows("gen->expert", "+", DEEPSEEK, (7, 2, 1), MOVE),
            *category_rows("gen->expert", "-", QWEN, (3, 3, 0), MOVE)]
    evidence = read("transfer.fig6.irrelevant_failing", write(tmp_path, categories=rows))
    # 16 of 20 criteria; Clopper-Pearson 95%: [56.34, 94.27]
    assert (evidence.value, evidence.n) == (pytest.approx(80), 20)
    assert evidence.low == pytest.approx(56.34, abs=0.01)
    assert evidence.high == pytest.approx(94.27, abs=0.01)
    assert "g/qwen 90.0%" in evidence.note and "g/deepseek 70.0%" in evidence.note
    passing = read("transfer.fig6.irrelevant_passing", write(tmp_path, categories=rows))
    assert (passing.value, passing.n) == (pytest.approx(50), 6)


def test_irrelevant_share_without_criteria_cannot_tell(tmp_path):
    rows = category_rows("gen->expert", "+", QWEN, (9, 1, 0), MOVE)
    evidence = read("transfer.fig6.irrelevant_passing", write(tmp_path, categories=rows))
    assert evidence.value is None and "direction '-'" in evidence.cannot


def redundancy_table(expert_passing=(4, 3, 3), generator_failing=(8, 2, 0)):
    rows = []
    for rubric in (QWEN, DEEPSEEK, OPUS):
        rows += category_rows("within", "-", rubric, (6, 2, 2), REDUNDANCY)
        rows += category_rows("within", "+", rubric, generator_failing, REDUNDANCY)
    rows += category_rows("within", "-", "expert", expert_passing, REDUNDANCY)
    rows += category_rows("within", "+", "expert", (7, 2, 1), REDUNDANCY)
    return rows


def test_passing_more_redundant_and_expert_most_redundant(tmp_path):
    paths = write(tmp_path, categories=redundancy_table())
    assert holds(read("transfer.fig6.passing_more_redundant", paths)) == [True] * 4
    assert holds(read("transfer.fig6.expert_most_redundant", paths)) == [True] * 6
    expert = read("transfer.fig6.expert_redundancy_passing", paths)
    # 6 of 10 expert passing criteria with some redundancy: Clopper-Pearson [26.24, 87.84]
    assert (expert.value, expert.n) == (pytest.approx(60), 10)
    assert (expert.low, expert.high) == (pytest.approx(26.24, abs=0.01),
                                         pytest.approx(87.84, abs=0.01))
    # failing generated criteria as redundant as passing ones: not "more"
    paths = write(tmp_path, categories=redundancy_table(generator_failing=(6, 2, 2)))
    assert holds(read("transfer.fig6.passing_more_redundant", paths)) == \
        [False, False, False, True]
    # no expert passing criteria: its part cannot tell
    rows = [r for r in redundancy_table()
            if not (r["generator"] == "expert" and r["direction"] == "-")]
    assert holds(read("transfer.fig6.passing_more_redundant",
                      write(tmp_path, categories=rows)))[-1] is None


def test_matched_and_general_parts(tmp_path):
    rows = []
    for generator in (QWEN, DEEPSEEK, OPUS):
        rows += category_rows("expert->gen", "-", generator, (4, 4, 2), MOVE)
        rows += category_rows("expert->gen", "+", generator, (7, 2, 1), MOVE)
        rows += category_rows("gen->expert", "-", generator, (5, 4, 1), MOVE)
        rows += category_rows("gen->expert", "+", generator, (9, 1, 0), MOVE)
    paths = write(tmp_path, categories=rows)
    assert holds(read("transfer.fig6.expert_passing_moves_more", paths)) == [True] * 3
    assert holds(read("transfer.fig6.expert_to_generated_moves_more", paths)) == [True] * 6
    rows += category_rows("expert->gen", "+", "g/other", (0, 0, 0), MOVE)
    rows = [r for r in rows if not (r["generator"] == OPUS and r["row_kind"] == "gen->expert"
                                    and r["direction"] == "-")]
    rows += category_rows("gen->expert", "-", OPUS, (2, 6, 2), MOVE)
    assert holds(read("transfer.fig6.expert_to_generated_moves_more",
                      write(tmp_path, categories=rows))) == [True] * 5 + [False]


# --------------------------------------------------------------------------- Tables A.6, A.9

def test_similarity_parts(tmp_path):
    rows = []
    for generator in (QWEN, DEEPSEEK, OPUS):
        rows += [stat("max_similarity_pass", generator, 4.6, 4.3, 4.9, family="similarity",
                      response_model=""),
                 stat("max_similarity_fail", generator, 3.4, 3.1, 3.7, family="similarity",
                      response_model=""),
                 stat("max_similarity_diff", generator, 1.2, 0.8, 1.6, family="similarity",
                      response_model="")]
    paths = write(tmp_path, stats=rows)
    assert holds(read("transfer.tableA6.pass_above_fail", paths)) == [True] * 3
    assert holds(read("transfer.tableA6.levels", paths)) == [True] * 6
    rows[2] = {**rows[2], "low": -0.1}
    rows[0] = {**rows[0], "estimate": 6.0, "low": 5.6, "high": 6.4}
    paths = write(tmp_path, stats=rows)
    assert holds(read("transfer.tableA6.pass_above_fail", paths)) == [False, True, True]
    assert holds(read("transfer.tableA6.levels", paths))[:2] == [False, True]


def edit_row(level, target, direction, ratio, per_word, n=105):
    return dict(level=level, target=target, direction=direction,
                measured="generated" if target == "expert" else "expert", n_interventions=n,
                mean_criterion_words=10.0, mean_edit_words=50.0,
                edit_words_per_criterion_word=per_word, mean_length_ratio=ratio)


def test_edit_sizes(tmp_path):
    rows = []
    for level, fail_ratio in (("rubric", 0.5), ("criterion", 0.92)):
        for target in ("generated", "expert"):
            rows += [edit_row(level, target, "-", fail_ratio, 3.0),
                     edit_row(level, target, "+", 1.2, 1.0)]
    paths = write(tmp_path, edit_sizes=rows)
    evidence = read("transfer.tableA9.rubric_shortens.expert", paths)
    assert (evidence.value, evidence.low, evidence.n) == (pytest.approx(50), None, 105)
    assert read("transfer.tableA9.criterion_shortens.generated", paths).value == \
        pytest.approx(92)
    assert holds(read("transfer.tableA9.fail_edits_more", paths)) == [True] * 4
    assert holds(read("transfer.tableA9.pass_lengthens", paths)) == [True] * 4
    rows[1] = edit_row("rubric", "generated", "+", 0.9, 4.0)
    rows = rows[:-2]  # no criterion-level expert rows
    paths = write(tmp_path, edit_sizes=rows)
    assert holds(read("transfer.tableA9.fail_edits_more", paths)) == [False, True, True, None]
    assert holds(read("transfer.tableA9.pass_lengthens", paths)) == [False, True, True, None]
