import copy

import pandas as pd
import pytest

from rubriclab.carry.chains import (DATASETS, agreement_datasets, check_chain_config,
                                    paper_chain_rows, planned_chains, planned_judges)
from rubriclab.config import ConfigError, load_yaml, validate_config


@pytest.fixture
def paper(repo, schema):
    return validate_config(load_yaml(repo / "config" / "paper.yaml"), schema)


@pytest.mark.parametrize("name", ["config.yaml", "paper.yaml"])
def test_shipped_chain_configs_pass(repo, schema, name):
    check_chain_config(validate_config(load_yaml(repo / "config" / name), schema)["carry"])


def test_main_reviser_chains_default_to_none(schema, embedded):
    del embedded["carry"]["chains"]["recon"]["main_reviser_chains"]
    config = validate_config(embedded, schema)
    assert config["carry"]["chains"]["recon"]["main_reviser_chains"] == []
    assert config["carry"]["chains"]["summedits"]["main_reviser_chains"] == []


def test_the_paper_runs_twelve_recon_chains_of_every_reviser_and_eight_of_the_main(paper):
    revisers = paper["models"]["revisers"]
    main = paper["models"]["reviser"]
    recon = planned_chains(paper["carry"]["chains"]["recon"], paper["carry"]["chains"]["seeds"],
                           revisers, main)
    assert len(recon) == 20
    free = [c for c in recon if c[2] == "free"]
    assert len(free) == 12  # 3 revisers x 2 starts x 2 seeds: "the 12 Recon revision chains"
    assert {(r, s) for r, s, _, _ in free} == {(r, s) for r in revisers for s in ("hand", "label")}
    others = [c for c in recon if c[2] != "free"]
    assert {r for r, *_ in others} == {main}
    assert sorted({(s, m) for _, s, m, _ in others}) == [
        ("hand", "delete_only"), ("hand", "fixed_count"), ("label", "delete_only"),
        ("label", "fixed_count")]
    # every reviser runs the four SummEdits chains, each seed
    summedits = planned_chains(paper["carry"]["chains"]["summedits"],
                               paper["carry"]["chains"]["seeds"], revisers, main)
    assert len(summedits) == 3 * 4 * 2
    # Table 2's default chains: the main reviser's hand chain seed 1, label chain seed 2
    assert paper["carry"]["recon"]["table2_chains"] == [{"chain": "hand:free", "seed": 1},
                                                        {"chain": "label:free", "seed": 2}]
    assert paper["carry"]["table3_seed"] is None


def test_the_main_reviser_must_be_a_reviser():
    with pytest.raises(ValueError, match="'c' is not among the revisers"):
        planned_chains({"chains": ["hand:free"]}, [1], ["a", "b"], "c")


def test_a_chain_in_both_lists_is_named(paper):
    carry = copy.deepcopy(paper["carry"])
    carry["chains"]["recon"]["main_reviser_chains"].append("label:free")
    with pytest.raises(ConfigError, match=r"config key 'carry.chains.recon.main_reviser_chains': "
                                          r"'label:free' is also in carry.chains.recon.chains"):
        check_chain_config(carry)


@pytest.mark.parametrize("entry, message", [
    ({"chain": "hand:delete_only", "seed": 1},
     r"'carry.recon.table2_chains\[1\]': 'hand:delete_only' is not one of the paper's Recon"),
    ({"chain": "label:free", "seed": 3},
     r"'carry.recon.table2_chains\[1\]': seed 3 is not one of carry.chains.seeds \[1, 2\]"),
])
def test_a_table2_chain_must_be_one_of_the_papers(paper, entry, message):
    carry = copy.deepcopy(paper["carry"])
    carry["recon"]["table2_chains"][1] = entry
    with pytest.raises(ConfigError, match=message):
        check_chain_config(carry)


def test_the_table3_seed_must_be_run(paper):
    carry = copy.deepcopy(paper["carry"])
    carry["table3_seed"] = 5
    with pytest.raises(ConfigError, match=r"'carry.table3_seed': seed 5 is not one of"):
        check_chain_config(carry)
    carry["table3_seed"] = 2
    check_chain_config(carry)


def test_paper_chain_rows_keep_the_starts_and_the_listed_chains():
    frame = pd.DataFrame({"source": ["hand", "hand", "hand", "label", "label"],
                          "mode": ["", "free", "delete_only", "free", None],
                          "value": [1, 2, 3, 4, 5]})
    kept = paper_chain_rows(frame, ["hand:free", "label:free"])
    assert list(kept["value"]) == [1, 2, 4, 5]
    assert list(paper_chain_rows(frame, None)["value"]) == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="paper_chains is empty"):
        paper_chain_rows(frame, [])


def test_the_other_judges_judge_only_the_datasets_of_all_judges_on():
    """carry.all_judges_on [recon] (the default): every judge on Recon, the main judge alone
    elsewhere; the agreement table covers only the datasets every judge judges."""
    judges = planned_judges(DATASETS, ["main", "other"], "main", ["recon"])
    assert judges == {"recon": ["main", "other"], "summedits": ["main"], "ragtruth": ["main"]}
    assert agreement_datasets(judges, ["main", "other"]) == ["recon"]
    every = planned_judges(DATASETS, ["main", "other"], "main", list(DATASETS))
    assert all(on == ["main", "other"] for on in every.values())
    assert agreement_datasets(every, ["main", "other"]) == list(DATASETS)
    # the main judge alone judges every dataset, and the table covers them all
    alone = planned_judges(DATASETS, ["main"], "main", ["recon"])
    assert alone == {d: ["main"] for d in DATASETS}
    assert agreement_datasets(alone, ["main"]) == list(DATASETS)
    with pytest.raises(ValueError, match="the main judge 'x' is not among the judges"):
        planned_judges(DATASETS, ["main"], "x", ["recon"])
