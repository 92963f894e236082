import json
import math

import pandas as pd
import pytest

from tests.markdown_tables import has_run, table_rows
from rubriclab.tidy import write_table
from rubriclab.labels import ModelLabels

from rubriclab.carry.figures import RATES_COLUMNS
from rubriclab.carry.tables import (
    fig5b_supplement, fig6_supplement, positions_cell, table2_gate_replay,
    table3_gates_human_labeled, table3_supplement, table4_recon_failing_checks,
    table5_ragtruth_failing_checks,
)

HAIKU, SONNET, OPUS = ("anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-4-5",
                       "anthropic/claude-opus-4-1")
N = {"correct_passed": 36, "flawed_caught": 72, "unplanned_caught": 12}
BASE = dict(dataset="recon", judge=SONNET, item_set="recon108", environments="all", reviser=OPUS,
            source="hand", rendering="per_check", mode="free", seed=1, round=0, gate="none",
            variant="standard", n_no_evidence=0, low=math.nan, high=math.nan,
            n_undetermined=0)
METRICS = ["correct_passed", "flawed_caught", "unplanned_caught"]


def rate_rows(triple, n=N, **fields):
    """RATES rows for the metrics in `triple` (cp, fc[, uc]); other columns from BASE."""
    return [{**BASE, **fields, "metric": metric, "value": value, "n": n[metric]}
            for metric, value in zip(METRICS, triple)]


def frame(rows):
    return pd.DataFrame(rows)[RATES_COLUMNS]


# --------------------------------------------------------------------------- Table 2

PAPER_TABLE2 = {  # (source, seed) -> state -> judge -> (cp, fc, uc), from the paper
    ("hand", 1): {
        "start": {HAIKU: (100.0, 83.3, 0.0), SONNET: (97.2, 83.3, 0.0), OPUS: (97.2, 83.3, 0.0)},
        "ungated": {j: (5.6, 98.6, 91.7) for j in (HAIKU, SONNET, OPUS)},
        "loo": {HAIKU: (97.2, 83.3, 0.0), SONNET: (94.4, 83.3, 0.0), OPUS: (91.7, 83.3, 0.0)},
    },
    ("label", 2): {
        "start": {HAIKU: (80.6, 98.6, 91.7), SONNET: (83.3, 100, 100), OPUS: (83.3, 100, 100)},
        "ungated": {HAIKU: (83.3, 84.7, 16.7), SONNET: (80.6, 84.7, 8.3),
                    OPUS: (80.6, 86.1, 16.7)},
        "loo": {HAIKU: (83.3, 98.6, 91.7), SONNET: (80.6, 100, 100), OPUS: (80.6, 100, 100)},
    },
}


REFUSALS = {("hand", HAIKU): 3, ("hand", SONNET): 2.5, ("hand", OPUS): 3,
            ("label", HAIKU): 0, ("label", SONNET): 0, ("label", OPUS): 0}
PAPER_ROWS = [{"chain": "hand:free", "seed": 1}, {"chain": "label:free", "seed": 2}]


@pytest.fixture
def table2_rates():
    rows = []
    for (source, seed), states in PAPER_TABLE2.items():
        for judge in (HAIKU, SONNET, OPUS):
            chain = dict(judge=judge, source=source, seed=seed)
            rows += rate_rows(states["start"][judge], round=0, **chain)
            rows += rate_rows((50, 50, 50), round=2, **chain)
            rows += rate_rows(states["ungated"][judge], round=4, **chain)
            rows += rate_rows(states["loo"][judge], round=4, gate="S+P", variant="loo",
                              n_no_evidence=REFUSALS[(source, judge)], **chain)
            # Distractors: an earlier loo round, a standard gated row, evaluation envs.
            rows += rate_rows((1, 1, 1), round=2, gate="S+P", variant="loo", **chain)
            rows += rate_rows((2, 2, 2), round=4, gate="S+P", **chain)
            rows += rate_rows((3, 3, 3), round=4, environments="evaluation", **chain)
    return frame(rows)


def test_table2_cells_match_the_paper(table2_rates):
    markdown, table = table2_gate_replay(table2_rates, PAPER_ROWS, OPUS)
    refused = " refused without evidence"
    assert list(table.columns) == ["chain", "reviser", "source", "mode", "seed", "rubric_or_gate",
                                   "round",
                                   HAIKU, HAIKU + " 95% CI", HAIKU + refused,
                                   SONNET, SONNET + " 95% CI", SONNET + refused,
                                   OPUS, OPUS + " 95% CI", OPUS + refused]
    # every rate carries its interval, in the same layout (the fixture's bounds are NaN)
    hand_start = table[(table["source"] == "hand") & (table["rubric_or_gate"] == "start")]
    assert hand_start[SONNET + " 95% CI"].item() == "[n/a, n/a] / [n/a, n/a] / [n/a, n/a]"
    assert "95% Clopper-Pearson intervals over reports" in markdown
    assert "†" not in markdown  # no bounds, no flags

    assert list(table["rubric_or_gate"]) == ["start", "ungated (round 4)",
                                             "Gate S+P, leave-one-out"] * 2
    by = f"review by {OPUS}"
    assert list(table["chain"]) == ([f"Hand-written, free, {by}, seed 1"] * 3
                                    + [f"Label-taught, free, {by}, seed 2"] * 3)
    hand = table[table["source"] == "hand"].set_index("rubric_or_gate")
    assert hand.loc["start", SONNET] == "97.2 / 83.3 / 0.0"
    assert hand.loc["start", HAIKU] == "100.0 / 83.3 / 0.0"
    assert hand.loc["ungated (round 4)", OPUS] == "5.6 / 98.6 / 91.7"
    assert hand.loc["Gate S+P, leave-one-out", OPUS] == "91.7 / 83.3 / 0.0"
    label = table[table["source"] == "label"].set_index("rubric_or_gate")
    assert label.loc["ungated (round 4)", SONNET] == "80.6 / 84.7 / 8.3"
    assert label.loc["Gate S+P, leave-one-out", SONNET] == "80.6 / 100.0 / 100.0"
    rows = table_rows(markdown)
    assert has_run(rows, [f"Hand-written, free, {by}, seed 1", "start", "100.0 / 83.3 / 0.0",
                          "97.2 / 83.3 / 0.0"])
    assert has_run(rows, ["", "ungated (round 4)"])
    assert has_run(rows, ["Chain", "Rubric or gate", f"{HAIKU} judge", f"{SONNET} judge",
                          f"{OPUS} judge"])
    assert "Table 2: Gate replay under 3 judge models" in markdown
    assert "correct passed / flawed caught / unplanned caught (%)" in markdown
    # the refusals for want of evidence, per judge, on the gated row only
    assert hand.loc["Gate S+P, leave-one-out", SONNET + refused] == 2.5
    assert math.isnan(hand.loc["start", SONNET + refused])
    assert has_run(rows, ["", "Gate S+P, leave-one-out", "97.2 / 83.3 / 0.0", "94.4 / 83.3 / 0.0",
                          "91.7 / 83.3 / 0.0", "3 / 2.5 / 3"])
    assert has_run(rows, ["", "ungated (round 4)", "5.6 / 98.6 / 91.7", "5.6 / 98.6 / 91.7",
                          "5.6 / 98.6 / 91.7", "-"])
    assert f"Refused without evidence ({HAIKU} / {SONNET} / {OPUS})" in markdown


def test_table2_main_file_has_the_papers_shape_the_supplement_every_chain(table2_rates):
    # more chains, as paper.yaml runs them: another reviser, another seed, another mode
    extra = [table2_rates.assign(reviser=SONNET),
             table2_rates[table2_rates["source"] == "hand"].assign(seed=2),
             table2_rates[table2_rates["source"] == "hand"].assign(mode="delete_only")]
    rates = pd.concat([table2_rates, *extra], ignore_index=True)
    _, main = table2_gate_replay(rates, PAPER_ROWS, OPUS)
    assert len(main) == 6 and set(main["reviser"]) == {OPUS}
    assert list(zip(main["source"], main["seed"]))[::3] == [("hand", 1), ("label", 2)]
    # the configured order, not the sort order
    _, flipped = table2_gate_replay(rates, PAPER_ROWS[::-1], OPUS)
    assert list(flipped["source"])[::3] == ["label", "hand"]
    markdown, supplement = table2_gate_replay(rates, paper_chains=["hand:free", "label:free"])
    assert len(supplement) == 3 * 6
    assert supplement.groupby("mode")["paper_chain"].all().to_dict() == {
        "delete_only": False, "free": True}
    assert "Table 2 (supplement)" in markdown and "6 chains" in markdown
    with pytest.raises(ValueError, match=r"no rows of chain label:free seed 1 of reviser"):
        table2_gate_replay(rates, [{"chain": "label:free", "seed": 1}], OPUS)


def test_table2_interval_cells_show_each_rates_bounds(table2_rates):
    rates = table2_rates.copy()
    rates["low"], rates["high"] = rates["value"] - 5, rates["value"] + 2.5
    _, table = table2_gate_replay(rates)
    hand_start = table[(table["source"] == "hand") & (table["rubric_or_gate"] == "start")]
    # the unplanned rate is 0.0: flagged (†)
    assert hand_start[SONNET + " 95% CI"].item() == "[92.2, 99.7] / [78.3, 85.8] / [-5.0, 2.5]†"


def with_intervals(rates):
    """The fixture's rates with the intervals rate_rows gives them (successes = value x n)."""
    from rubriclab.stats.intervals import rate_interval
    rates = rates.copy()
    bounds = [rate_interval(round(v * n / 100), n) for v, n in zip(rates["value"], rates["n"])]
    rates["low"] = [100 * low for low, _ in bounds]
    rates["high"] = [100 * high for _, high in bounds]
    return rates


def test_table2_flags_rates_at_0_and_100_and_says_why(table2_rates):
    markdown, table = table2_gate_replay(with_intervals(table2_rates))
    hand = table[table["source"] == "hand"].set_index("rubric_or_gate")
    # Haiku passes all 36 correct reports and catches none of the 12 unplanned ones
    assert hand.loc["start", HAIKU + " 95% CI"] == "[90.3, 100.0]† / [72.7, 91.1] / [0.0, 26.5]†"
    assert hand.loc["start", SONNET + " 95% CI"] == "[85.5, 99.9] / [72.7, 91.1] / [0.0, 26.5]†"
    lines = markdown.splitlines()
    note = [line for line in lines if line.startswith("†")]
    assert len(note) == 1 and "0% or 100%" in note[0] and "Clopper-Pearson" in note[0]
    assert "reports" in note[0]
    assert lines.index(note[0]) > lines.index("95% Clopper-Pearson intervals over reports, "
                                              "same layout:")
    assert "§" not in markdown  # Clopper-Pearson never has zero width


def test_table2_flags_a_zero_width_interval(table2_rates):
    """A rates.csv whose bounds are a collapsed percentile bootstrap ([100, 100])."""
    rates = table2_rates.copy()
    rates["low"], rates["high"] = rates["value"], rates["value"]
    markdown, table = table2_gate_replay(rates)
    hand = table[table["source"] == "hand"].set_index("rubric_or_gate")
    assert hand.loc["start", HAIKU + " 95% CI"] == ("[100.0, 100.0]†§ / [83.3, 83.3]§ / "
                                                    "[0.0, 0.0]†§")
    assert sum(line[:1] in ("†", "§") for line in markdown.splitlines()) == 2


def test_table2_missing_cell_prints_na(table2_rates):
    dropped = table2_rates[~((table2_rates["judge"] == OPUS) & (table2_rates["variant"] == "loo")
                             & (table2_rates["round"] == 4) & (table2_rates["source"] == "hand")
                             & (table2_rates["metric"] == "unplanned_caught"))]
    _, table = table2_gate_replay(dropped)
    hand = table[table["source"] == "hand"].set_index("rubric_or_gate")
    assert hand.loc["Gate S+P, leave-one-out", OPUS] == "91.7 / 83.3 / n/a"


def test_table2_errors(table2_rates):
    with pytest.raises(ValueError, match="'variant'"):
        table2_gate_replay(table2_rates.drop(columns="variant"))
    with pytest.raises(ValueError, match="leave-one-out rows: no rows with .*variant='loo'"):
        table2_gate_replay(table2_rates[table2_rates["variant"] != "loo"])
    with pytest.raises(ValueError, match="item_set='recon108'"):
        table2_gate_replay(table2_rates.assign(item_set="recon72"))


# --------------------------------------------------------------------------- Table 3

SUMMEDITS_N = {"correct_passed": 50, "flawed_caught": 49}
RAGTRUTH_N = {"correct_passed": 56, "flawed_caught": 56}


def human_chain(dataset, source, mode, start, finals, n, seed=1):
    """Rounds 0..2 of one chain; `finals` maps gate -> (cp, fc) at round 2."""
    fields = dict(dataset=dataset, item_set="evaluation", source=source, mode=mode, seed=seed,
                  judge=OPUS, n=n)
    rows = rate_rows(start, round=0, **fields)
    for gate, pair in finals.items():
        rows += rate_rows((10, 10), round=1, gate=gate, **fields)
        rows += rate_rows(pair, round=2, gate=gate, **fields)
    return rows


@pytest.fixture
def table3_rates():
    rows = human_chain("summedits", "generated", "free", (72.5, 79.6),
                       {"none": (58.8, 87.8), "R": (64.7, 83.7), "P": (58.8, 87.8),
                        "S": (68.6, 81.6), "S+P": (68.6, 81.6)}, SUMMEDITS_N)
    rows += human_chain("summedits", "label", "fixed_count", (78.4, 81.6),
                        {"none": (60.8, 85.7), "R": (78.4, 81.6), "P": (70.6, 83.7),
                         "S": (68.6, 83.7), "S+P": (70.6, 83.7)}, SUMMEDITS_N)
    rows += human_chain("ragtruth", "label", "free", (80.4, 75.0),
                        {"none": (60.7, 80.4), "R": (62.5, 80.4), "P": (71.4, 78.6),
                         "S": (75.0, 76.8), "S+P": (80.4, 75.0)}, RAGTRUTH_N)
    table = frame(rows)
    table.loc[table["metric"] == "correct_passed", "n_undetermined"] = 1  # 50 + 1 = 51 items
    table.loc[table["dataset"] == "ragtruth", "n_undetermined"] = 0
    # Distractors: another judge, the calibration split.
    extra = human_chain("summedits", "generated", "free", (1, 1), {"none": (1, 1)},
                        SUMMEDITS_N)
    others = pd.concat([frame(extra).assign(judge=SONNET),
                        frame(extra).assign(item_set="calibration")])
    return pd.concat([table, others], ignore_index=True)


def test_table3_shows_single_chains_of_the_main_reviser_at_one_seed(table3_rates):
    # as paper.yaml runs them: another seed and another reviser beside the main one
    second = human_chain("summedits", "generated", "free", (70.0, 75.0),
                         {"none": (50.0, 90.0), "S+P": (60.0, 80.0)}, SUMMEDITS_N, seed=2)
    other = human_chain("summedits", "generated", "free", (70.0, 75.0),
                        {"none": (40.0, 95.0)}, SUMMEDITS_N)
    rates = pd.concat([table3_rates, frame(second), frame(other).assign(reviser=SONNET)],
                      ignore_index=True)
    markdown, table = table3_gates_human_labeled(rates, OPUS, OPUS, 1)
    assert list(table["chain"]) == ["Generated, free", "Label-taught, fixed count",
                                    "Label-taught, free"]
    assert set(table["reviser"]) == {OPUS} and set(table["seed"]) == {"1"}
    generated = table.iloc[0]
    # seed 1's own cells (no mean with seed 2's 50.0 / 90.0)
    assert [generated[c] for c in ("start", "ungated", "Gate S+P")] == [
        "72.5 / 79.6", "58.8 / 87.8", "68.6 / 81.6"]
    assert generated["start 95% CI"] == "[n/a, n/a] / [n/a, n/a]"
    rows = table_rows(markdown)
    assert has_run(rows, ["Generated, free", "72.5 / 79.6", "58.8 / 87.8", "64.7 / 83.7",
                          "58.8 / 87.8", "68.6 / 81.6", "68.6 / 81.6"])
    assert f"after round 2 of review by {OPUS}, seed 1" in markdown
    assert "SummEdits (51 consistent, 49 inconsistent evaluation items)" in markdown
    assert "mean of" not in markdown
    _, seed2 = table3_gates_human_labeled(rates[rates["dataset"] == "summedits"], OPUS, OPUS, 2,
                                          datasets=("summedits",))
    assert list(seed2["chain"]) == ["Generated, free"]
    assert seed2.iloc[0]["ungated"] == "50.0 / 90.0"
    with pytest.raises(ValueError, match=r"dataset 'ragtruth': no chain of reviser .* at seed 2 "
                                         r"\(carry.table3_seed\)"):
        table3_gates_human_labeled(rates, OPUS, OPUS, 2)


def test_table3_supplement_cells_and_headings(table3_rates):
    markdown, table = table3_supplement(table3_rates, OPUS)
    chains = table[table["kind"] == "chain"]
    assert list(chains["dataset"]) == ["summedits", "summedits", "ragtruth"]
    by = f"review by {OPUS}"
    assert list(chains["chain"]) == [f"Generated, free, {by}",
                                     f"Label-taught, fixed count, {by}",
                                     f"Label-taught, free, {by}"]
    # one seed per chain here: the csv's seed rows hold the same cells
    assert list(table[table["kind"] == "seed"]["chain"]) == [
        f"Generated, free, {by}, seed 1", f"Label-taught, fixed count, {by}, seed 1",
        f"Label-taught, free, {by}, seed 1"]
    generated = chains.iloc[0]
    assert [generated[c] for c in ("start", "ungated", "Gate R", "Gate P", "Gate S",
                                   "Gate S+P")] == [
        "72.5 / 79.6", "58.8 / 87.8", "64.7 / 83.7", "58.8 / 87.8", "68.6 / 81.6",
        "68.6 / 81.6"]
    assert set(table["final_round"]) == {2}
    assert "SummEdits (51 consistent, 49 inconsistent evaluation items)" in markdown
    assert "RAGTruth (56 faithful, 56 hallucinated evaluation items)" in markdown
    rows = table_rows(markdown)
    assert has_run(rows, [f"Label-taught, free, {by}", "80.4 / 75.0", "60.7 / 80.4", "62.5 / 80.4",
                          "71.4 / 78.6", "75.0 / 76.8", "80.4 / 75.0"])
    assert has_run(rows, ["Chain", "start", "ungated", "Gate R", "Gate P", "Gate S", "Gate S+P"])
    assert "after round 2" in markdown


def test_table3_supplement_has_one_row_per_chain_the_mean_of_its_seeds(table3_rates):
    second = human_chain("ragtruth", "label", "free", (80.4, 75.0),
                         {"none": (50.0, 90.0)}, RAGTRUTH_N, seed=2)
    rates = pd.concat([table3_rates, frame(second)], ignore_index=True)
    markdown, table = table3_supplement(rates, OPUS)
    rag = table[table["dataset"] == "ragtruth"]
    by = f"review by {OPUS}"
    assert list(rag["chain"]) == [f"Label-taught, free, {by}, seed 1",
                                  f"Label-taught, free, {by}, seed 2",
                                  f"Label-taught, free, {by}, mean of 2 seeds"]
    assert list(rag["kind"]) == ["seed", "seed", "chain"]
    assert rag.iloc[1]["Gate S+P"] == "n/a / n/a"
    mean = rag.iloc[2]
    # ungated: seed 1 60.7 / 80.4, seed 2 50.0 / 90.0 -> 55.35 / 85.2
    assert mean["ungated"] == "55.4 / 85.2" and mean["seed"] == "mean"
    assert mean["Gate S+P"] == "80.4 / 75.0"      # only seed 1 has the gate
    chain_rows = [row for row in table_rows(markdown) if "mean of 2 seeds" in row[0]]
    assert len(chain_rows) == 1 and "55.4 / 85.2" in chain_rows[0]


def test_table3_flags_rates_at_0_and_100(table3_rates):
    rates = table3_rates.copy()
    gate_r = ((rates["dataset"] == "ragtruth") & (rates["gate"] == "R") & (rates["round"] == 2)
              & (rates["judge"] == OPUS))
    rates.loc[gate_r & (rates["metric"] == "correct_passed"), "value"] = 100.0
    rates.loc[gate_r & (rates["metric"] == "flawed_caught"), "value"] = 0.0
    main_markdown, main = table3_gates_human_labeled(with_intervals(rates), OPUS, OPUS, 1)
    assert main[main["dataset"] == "ragtruth"].iloc[0]["Gate R 95% CI"] == (
        "[93.6, 100.0]† / [0.0, 6.4]†")
    assert any(line.startswith("†") for line in main_markdown.splitlines())
    markdown, table = table3_supplement(with_intervals(rates), OPUS)
    seed = table[(table["dataset"] == "ragtruth") & (table["kind"] == "seed")].iloc[0]
    assert seed["Gate R 95% CI"] == "[93.6, 100.0]† / [0.0, 6.4]†"  # of 56 each
    assert "†" not in seed["ungated 95% CI"]
    notes = [line for line in markdown.splitlines() if line.startswith("†")]
    assert len(notes) == 1 and "Clopper-Pearson" in notes[0]  # RAGTruth's part only
    assert markdown.index(notes[0]) > markdown.index("RAGTruth (56 faithful")


def test_table3_errors(table3_rates):
    with pytest.raises(ValueError, match="dataset 'ragtruth'"):
        table3_supplement(table3_rates[table3_rates["dataset"] != "ragtruth"], OPUS)
    with pytest.raises(ValueError, match="judge='openai/x'"):
        table3_gates_human_labeled(table3_rates, "openai/x", OPUS, 1)
    with pytest.raises(ValueError, match="'n_undetermined'"):
        table3_supplement(table3_rates.drop(columns="n_undetermined"), OPUS)
    _, table = table3_supplement(
        table3_rates[table3_rates["dataset"] != "ragtruth"], OPUS, datasets=("summedits",))
    assert set(table["dataset"]) == {"summedits"}


# --------------------------------------------------------------------------- Tables 4, 5

VERSIONS = ["Hand-written", "Label-taught", "After review by local/default"]
PAPER_TABLE4 = [
    ("correct 1", "pass", [[], [], [3, 6, 7]]),
    ("correct 2", "pass", [[], [], [3, 6, 7]]),
    ("missed finding", "fail", [[6], [5], [3, 6, 7]]),
    ("wrong resource", "fail", [[4, 2, 3, 1], [1, 2, 4, 8], [1, 2, 3, 5, 6, 7, 8]]),
]


@pytest.fixture
def failing():
    rows = []
    for index, (name, label, per_version) in enumerate(PAPER_TABLE4):
        for version, positions in zip(VERSIONS, per_version):
            rows.append({"dataset": "recon", "item_id": f"storage-{index}", "item_name": name,
                         "label": label, "rubric_version": version,
                         "failing_positions": json.dumps(positions)})
    rows += [
        {"dataset": "ragtruth", "item_id": "L2M1E", "item_name": "L2M1E", "label": "faithful",
         "rubric_version": "Generated 10 checks", "failing_positions": "[]"},
        {"dataset": "ragtruth", "item_id": "C0YWR", "item_name": "C0YWR",
         "label": "hallucinated", "rubric_version": "Generated 10 checks",
         "failing_positions": "[1, 6, 8, 9]"},
        {"dataset": "ragtruth", "item_id": "C0YWR", "item_name": "C0YWR",
         "label": "hallucinated", "rubric_version": "Label-taught",
         "failing_positions": "[1, 7]"},
    ]
    return pd.DataFrame(rows)


def test_table4_cells(failing, tmp_path):
    markdown, table = table4_recon_failing_checks(failing)
    assert list(table.columns) == ["item_id", "item_name", "label", *VERSIONS]
    assert list(table["item_name"]) == ["correct 1", "correct 2", "missed finding",
                                        "wrong resource"]
    wrong = table.set_index("item_name").loc["wrong resource"]
    assert wrong["Hand-written"] == "{1, 2, 3, 4}"
    assert wrong["After review by local/default"] == "{1, 2, 3, 5, 6, 7, 8}"
    assert table.set_index("item_name").loc["correct 1", "Hand-written"] == "none"
    rows = table_rows(markdown)
    assert has_run(rows, ["Report", "Label", "Hand-written", "Label-taught",
                          "After review by local/default"])
    assert has_run(rows, ["correct 1", "pass", "none", "none", "{3, 6, 7}"])
    assert has_run(rows, ["wrong resource", "fail", "{1, 2, 3, 4}", "{1, 2, 4, 8}",
                          "{1, 2, 3, 5, 6, 7, 8}"])
    assert "Table 4: Checks answered No (F_i)" in markdown and "3 rubric versions" in markdown

    out_md, out_csv = tmp_path / "t" / "table4.md", tmp_path / "t" / "table4.csv"
    write_table(markdown, table, out_md, out_csv)
    assert out_md.read_text() == markdown
    reread = pd.read_csv(out_csv, keep_default_na=False)
    assert reread.loc[3, "Hand-written"] == "{1, 2, 3, 4}"
    assert reread.loc[0, "Hand-written"] == "none"


def test_table5_missing_cell_is_na(failing):
    markdown, table = table5_ragtruth_failing_checks(failing)
    assert list(table["item_name"]) == ["L2M1E", "C0YWR"]
    rows = table.set_index("item_name")
    assert rows.loc["L2M1E", "Generated 10 checks"] == "none"
    assert rows.loc["L2M1E", "Label-taught"] == "n/a"
    assert rows.loc["C0YWR", "Label-taught"] == "{1, 7}"
    assert "for the 2 responses of the example (1 faithful, 1 hallucinated;" in markdown
    rows = table_rows(markdown)
    assert has_run(rows, ["Item", "Label", "Generated 10 checks", "Label-taught"])
    assert has_run(rows, ["C0YWR", "hallucinated", "{1, 6, 8, 9}", "{1, 7}"])


def test_failing_tables_errors(failing):
    with pytest.raises(ValueError, match="'failing_positions'"):
        table4_recon_failing_checks(failing.drop(columns="failing_positions"))
    with pytest.raises(ValueError, match="Table 5: no rows with dataset='ragtruth'"):
        table5_ragtruth_failing_checks(failing[failing["dataset"] != "ragtruth"])
    with pytest.raises(ValueError, match="not a JSON list"):
        table4_recon_failing_checks(failing.assign(failing_positions="1, 2"))
    with pytest.raises(ValueError, match="rows for"):
        table4_recon_failing_checks(pd.concat([failing, failing.iloc[:1]]))


def test_positions_cell():
    assert positions_cell("[]", "x") == "none"
    assert positions_cell([4, 1, 2, 3], "x") == "{1, 2, 3, 4}"
    assert positions_cell("[2, 2, 1]", "x") == "{1, 2}"
    with pytest.raises(ValueError, match="1-based"):
        positions_cell("[0]", "x")


# --------------------------------------------------------------------------- supplements

def test_fig6_supplement_lists_every_chain_with_its_refusals():
    from tests.carry.test_figures import MAIN, frame as fig_frame, gated_chain, metrics
    rows = gated_chain("hand", "free", 1, 2, metrics(97, 83, 0), metrics(10, 98, 90),
                       metrics(96, 83, 0), reviser="rev/a")
    rows += gated_chain("hand", "delete_only", 1, 2, metrics(97, 83, 0), metrics(90, 80, 0),
                        metrics(94, 81, 0), reviser="rev/a")
    rows += gated_chain("label", "free", 2, 2, metrics(83, 100, 100), metrics(80, 85, 10),
                        metrics(83, 99, 98), reviser="rev/b")
    rates = fig_frame(rows)
    rates.loc[(rates["gate"] == "S") & (rates["source"] == "hand"), "n_no_evidence"] = 7
    markdown, table = fig6_supplement(rates, MAIN, ["hand:free", "label:free"])
    assert list(table["chain"]) == ["Hand-written, free, review by rev/a, seed 1",
                                    "Hand-written, delete only, review by rev/a, seed 1",
                                    "Label-taught, free, review by rev/b, seed 2"]
    assert list(table["paper_chain"]) == [True, False, True]
    free = table.iloc[0]
    assert (free["start"], free["ungated"], free["Gate S+P"]) == (
        "97.0 / 83.0 / 0.0", "10.0 / 98.0 / 90.0", "96.0 / 83.0 / 0.0")
    assert free["Gate S refused without evidence"] == 7
    assert table.iloc[2]["Gate S refused without evidence"] == 0
    rows = table_rows(markdown)
    assert has_run(rows, ["Hand-written, delete only, review by rev/a, seed 1", "no",
                          "97.0 / 83.0 / 0.0", "90.0 / 80.0 / 0.0"])
    assert has_run(rows, ["0 / 0 / 7 / 0"])


def test_fig5b_supplement_counts_each_chains_deletions():
    from tests.carry.test_figures import MAIN, OTHER, deletion_row
    deletions = pd.DataFrame([
        deletion_row("c1", "hand", True, False),
        deletion_row("c1", "hand", True, False),             # the same state: once
        deletion_row("c2", "hand", False, "True"),
        deletion_row("d1", "hand", True, True, mode="delete_only"),
        deletion_row("l1", "label", True, False, source="label", seed=2),
        deletion_row("z", "hand", True, True, judge=OTHER),
    ])
    markdown, table = fig5b_supplement(deletions, MAIN, ["hand:free", "label:free"])
    assert list(zip(table["source"], table["mode"], table["seed"], table["deleted"])) == [
        ("hand", "free", 1, 2), ("hand", "delete_only", 1, 1), ("label", "free", 2, 1)]
    assert list(table["paper_chain"]) == [True, False, True]
    assert list(table["deleted_with_blame"]) == [1, 1, 0]
    assert ("The paper's chains deleted 3 checks (2 with a unique catch, 1 with blame); every "
            "chain 4 (3, 2).") in markdown
    empty_md, empty = fig5b_supplement(deletions.iloc[0:0], MAIN, ["hand:free"])
    assert empty.empty and "(no chain deleted a check)" in empty_md


def test_fig5b_supplement_names_a_reviewing_model_by_its_label():
    """The origin column of the markdown shows the reviser's display name; the csv keeps the
    model string (data, joined with results/)."""
    from tests.carry.test_figures import MAIN, deletion_row
    raw = "review by fake/hash?salt=haiku of hand"
    markdown, table = fig5b_supplement(pd.DataFrame([deletion_row("c1", raw, True, False)]),
                                       MAIN, ["hand:free"])
    assert "?salt=" not in markdown and list(table["origin"]) == [raw]
    assert "review by fake/hash (haiku) of hand" in markdown


def test_failing_checks_tables_name_the_reviser_by_its_label(failing):
    raw = "After review by fake/hash?salt=opus"
    failing = failing.replace({"rubric_version": {"After review by local/default": raw}})
    markdown, table = table4_recon_failing_checks(failing)
    assert "?salt=" not in markdown and raw in table.columns  # the csv keeps the model string
    assert has_run(table_rows(markdown), ["Report", "Label", "Hand-written", "Label-taught",
                                          "After review by fake/hash (opus)"])
    markdown, _ = table4_recon_failing_checks(
        failing, labels=ModelLabels({"fake/hash?salt=opus": "Opus stand-in"}))
    assert "After review by Opus stand-in" in markdown


def test_table2_caption_says_what_the_gates_decided_with(table2_rates):
    own, _ = table2_gate_replay(table2_rates, PAPER_ROWS, OPUS, gate_evidence="own_reports")
    assert "Gate evidence: leave-one-report-out over the labelled Recon-72 reports of the " \
           "rubric's own scope" in own
    other, _ = table2_gate_replay(table2_rates, PAPER_ROWS, OPUS,
                                  gate_evidence="calibration_environments")
    assert "calibration environments only" in other and "leave-one-report-out" not in other
    with pytest.raises(ValueError, match="carry.recon.gate_evidence"):
        table2_gate_replay(table2_rates, PAPER_ROWS, OPUS, gate_evidence="everything")
