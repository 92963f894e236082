"""The replication page's notes name models by their display names (issue 38), not by the
model strings the readers find in the run's outputs."""

import pandas as pd

from rubriclab.labels import ModelLabels, labels_in_use
from rubriclab.replication import page
from rubriclab.replication.evidence import Evidence, Part, config_models, with_display_names

SONNET = "fake/hash?salt=sonnet"
CONFIG = {"models": {"judge": "fake/hash", "reviser": SONNET},
          "carry": {"judges": ["fake/hash", SONNET]},
          "transfer": {"generators": [SONNET], "panel": [f"{SONNET}@0"], "framing": "expert"},
          "labels": {SONNET: "Claude Sonnet (fake)"}, "stand_ins": {}}
LABELS = ModelLabels(CONFIG["labels"])


def test_config_models_are_every_model_string_and_no_word():
    assert config_models(CONFIG) == ["fake/hash", SONNET]


def test_notes_parts_and_reasons_read_display_names():
    evidence = Evidence(
        parts=(Part(f"Gate S+P near the start, {SONNET}", True,
                    f"{SONNET} hand 3.0, fake/hash label 7.0"),),
        note=f"judges ['fake/hash', '{SONNET}']; responder {SONNET}|2",
        cannot=f"no row of {SONNET} in stats.csv")
    shown = with_display_names(evidence, CONFIG, LABELS)
    assert shown.parts[0].name == "Gate S+P near the start, Claude Sonnet (fake)"
    assert shown.parts[0].detail == "Claude Sonnet (fake) hand 3.0, fake/hash label 7.0"
    assert shown.note == ("judges ['fake/hash', 'Claude Sonnet (fake)']; "
                          "responder Claude Sonnet (fake) #2")
    assert shown.cannot == "no row of Claude Sonnet (fake) in stats.csv"


def test_a_label_or_a_longer_model_string_is_left_alone():
    labels = ModelLabels({"fake/hash": "Judge A"})
    models = ["fake/hash", "fake/hash?delay_s=0"]
    text = "fake/hash (delay_s=0) beside fake/hash?delay_s=0, fake/hash?salt=x and fake/hash."
    assert labels.in_text(text, models) == (
        "fake/hash (delay_s=0) beside fake/hash (delay_s=0), fake/hash?salt=x and Judge A.")


def test_the_page_notes_use_the_labels_in_use(monkeypatch):
    def reader(outputs, config):
        return Evidence(parts=(Part(f"Gate S leaves the start, {SONNET}", False,
                                    f"largest move of {SONNET} 2.0"),),
                        n=10, note=f"{SONNET} judge")
    monkeypatch.setitem(page.READERS, "test.claim", reader)
    claim = {"id": "test.claim", "group": "g", "work": "carry", "where": "Figure 6",
             "sentence": "s", "kind": "qualitative", "seed": True, "models": ["models.reviser"]}
    with labels_in_use(LABELS):
        table = page.replication_table({}, CONFIG, claims=[claim])
    row = table.iloc[0]
    assert row["models"] == "Claude Sonnet (fake)"
    assert "Gate S leaves the start, Claude Sonnet (fake): no (largest move of Claude Sonnet " \
        "(fake) 2.0)" in row["note"] and "Claude Sonnet (fake) judge" in row["note"]
    assert SONNET not in " ".join(str(v) for v in row.values)
    markdown = page.replication_markdown(pd.DataFrame([row]))
    assert SONNET not in markdown and "Claude Sonnet (fake)" in markdown


def test_a_missing_output_named_by_model_reads_its_label(monkeypatch):
    """The page relabels whatever a reader returns, the reason of a missing row included."""
    def reader(outputs, config):
        raise KeyError(SONNET)
    monkeypatch.setitem(page.READERS, "test.claim", reader)
    claim = {"id": "test.claim", "group": "g", "work": "carry", "where": "Table 2",
             "sentence": "s", "kind": "measured", "seed": 1.0, "models": ["carry.judges"]}
    with labels_in_use(LABELS):
        table = page.replication_table({}, CONFIG, claims=[claim])
    assert table.iloc[0]["note"] == "not in this run's outputs ('Claude Sonnet (fake)')"
