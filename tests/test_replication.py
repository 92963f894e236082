import pandas as pd
import pytest

from rubriclab.replication import (NOT_MODELS, NOT_SIZE, READERS, RunValue, load_headlines,
                                   replication_markdown, replication_table, verdict)

PAPER = {"models": {"judge": "anthropic/claude-sonnet-4-5", "reviser": "anthropic/claude-opus-4-1",
                    "generator": "anthropic/claude-opus-4-1"},
         "carry": {"judges": None}, "transfer": {}}


def test_every_headline_has_a_reader_and_a_sentence():
    headlines = load_headlines()
    assert len(headlines) >= 15
    assert {h["id"] for h in headlines} == set(READERS)
    assert all(len(h["sentence"]) > 20 for h in headlines)


@pytest.mark.parametrize("entry, run, expected", [
    ({"kind": "exact", "seed": 0.83, "decimals": 2}, RunValue(5 / 6), "matches"),
    ({"kind": "exact", "seed": 0.83, "decimals": 2}, RunValue(0.8), "differs"),
    ({"kind": "measured", "seed": 75, "models": ["models.judge"]},
     RunValue(70.0, 60.0, 80.0, 56), "within the interval"),
    ({"kind": "measured", "seed": 75, "models": ["models.judge"]},
     RunValue(50.0, 40.0, 60.0, 56), "differs"),
    ({"kind": "measured", "seed": [82, 87], "models": ["models.judge"]},
     RunValue(80.0, 78.0, 83.0), "within the interval"),
    ({"kind": "measured", "seed": 75, "models": ["models.judge"], "paper_n": 56},
     RunValue(75.0, 60.0, 90.0, 6), NOT_SIZE),
    ({"kind": "measured", "seed": 186, "models": ["models.judge"]}, RunValue(186.0), "matches"),
    ({"kind": "claim", "seed": True, "models": ["carry.judges"]}, RunValue(False), "does not hold"),
    ({"kind": "claim", "seed": True, "models": ["carry.judges"]}, RunValue(None), "not computed"),
])
def test_verdicts(entry, run, expected):
    assert verdict(entry, run, PAPER) == expected


def test_a_stand_in_model_is_never_compared():
    config = {**PAPER, "models": {**PAPER["models"], "judge": "fake/hash"}}
    entry = {"kind": "measured", "seed": 75, "models": ["models.judge"]}
    assert verdict(entry, RunValue(75.0, 70.0, 80.0, 56), config) == NOT_MODELS
    local = {**PAPER, "transfer": {"generators": ["local/default@1"]}}
    entry = {"kind": "claim", "seed": True, "models": ["transfer.generators"]}
    assert verdict(entry, RunValue(True), local) == NOT_MODELS


def test_table1_and_a_missing_output(tmp_path):
    table1 = tmp_path / "table1.csv"
    pd.DataFrame({"check_id": list("ABCD"), "credit": [1.5, 5 / 6, 1 / 3, 1 / 3],
                  "blame": [0.0, 0.0, 0.0, 1.0]}).to_csv(table1, index=False)
    headlines = [h for h in load_headlines() if h["id"].startswith("carry.table1.")
                 or h["id"] == "carry.fig3.crossover"]
    table = replication_table({"table1": table1}, PAPER, headlines)
    verdicts = table.set_index("id")["verdict"]
    assert (verdicts.drop("carry.fig3.crossover") == "matches").all()
    assert verdicts["carry.fig3.crossover"] == "not computed"
    assert "not in this run's outputs" in table.set_index("id").loc["carry.fig3.crossover", "note"]
    page = replication_markdown(table, "demo")
    assert page.startswith("# Replication at a glance: run demo")
    assert "5 matches, 1 not computed" in page


def test_fig3_crossover_is_the_first_share_where_the_draft_wins(tmp_path):
    shares = [0.0, 0.5, 0.66, 0.67, 1.0]  # the draft passes nothing: accuracy = share
    rows = []
    for share in shares:
        rows.append({"rubric": "hand-written", "flawed_share": share, "accuracy": 1 - 0.5 * share,
                     "balanced_accuracy": 0.75})
        rows.append({"rubric": "generated draft", "flawed_share": share, "accuracy": share,
                     "balanced_accuracy": 0.52})
    path = tmp_path / "fig3.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert READERS["carry.fig3.crossover"]({"fig3": path}).value == pytest.approx(67.0)
    assert READERS["carry.fig3.generated_balanced_accuracy"]({"fig3": path}).value == \
        pytest.approx(52.0)


def test_fig5_asymmetry_over_generators_and_response_models(tmp_path):
    rows = [{"family": "it", "metric": metric, "generator": g, "response_model": r,
             "estimate": value, "n_examples": 105}
            for g in ("gen-a", "gen-b") for r in ("resp-1", "resp-2")
            for metric, value in (("Q+(Cg->C*)", 0.1), ("Q-(Cg->C*)", 0.4))]
    rows.append({"family": "existing", "metric": "Q+(Cg->C*)", "generator": "gen-a",
                 "response_model": "resp-1", "estimate": 9.0, "n_examples": 105})
    path = tmp_path / "stats.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    read = READERS["transfer.fig5.fail_beats_pass"]
    assert read({"stats": path}).value is True and read({"stats": path}).n == 105
    rows[0]["estimate"] = 0.9  # gen-a / resp-1: Q+ above Q-
    pd.DataFrame(rows).to_csv(path, index=False)
    assert read({"stats": path}).value is False
