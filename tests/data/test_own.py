"""rubriclab.data.own: a dataset of your own, from a file or the Hub, its columns mapped."""

import json
from pathlib import Path

import pandas as pd
import pytest

from rubriclab.data.errors import DataFormatError
from rubriclab.data.own import load_own
from rubriclab.data.prepare import REQUIRED_COLUMNS, prepare

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

OWN = EXAMPLES / "own_data"
SETTINGS = {"file": str(OWN / "replies.csv"),
            "columns": {"item_id": "reply_id", "group": "booking", "task": "customer_message",
                        "output": "reply", "label": "grade"},
            "labels": {"correct": ["good"], "flawed": ["bad"]}}


def test_the_example_maps_to_prepared_items():
    items = load_own("travel_replies", SETTINGS)
    assert set(REQUIRED_COLUMNS) <= set(items.columns)
    raw = pd.read_csv(OWN / "replies.csv", dtype=str)
    assert items["item_id"].tolist() == raw["reply_id"].tolist()
    assert items["label"].tolist() == raw["grade"].map({"good": "correct",
                                                        "bad": "flawed"}).tolist()
    assert items["task"].tolist() == raw["customer_message"].tolist()
    assert items["group"].tolist() == raw["booking"].tolist()
    assert items["source_line"].tolist() == list(range(2, 14))
    assert (items["dataset"] == "travel_replies").all()
    prepared, _, manifest = prepare(items, seed=0, evaluation={"correct": 2, "flawed": 2},
                                    calibration={"correct": 2, "flawed": 2})
    assert manifest["counts"]["evaluation"] == {"correct": 2, "flawed": 2}
    # no booking (group) has replies in both splits
    groups = prepared.groupby("group")["split"].nunique()
    assert (groups == 1).all()


def test_jsonl_and_parquet_read_as_the_csv(tmp_path):
    raw = pd.read_csv(OWN / "replies.csv", dtype=str)
    raw.to_json(tmp_path / "r.jsonl", orient="records", lines=True)
    raw.to_parquet(tmp_path / "r.parquet")
    expected = load_own("d", SETTINGS).drop(columns=["source_file"])
    for name in ("r.jsonl", "r.parquet"):
        got = load_own("d", {**SETTINGS, "file": str(tmp_path / name)})
        assert got.drop(columns=["source_file"]).equals(expected.assign(
            source_line=range(1, 13)))


def test_optional_columns_default_to_row_ids(tmp_path):
    (tmp_path / "r.csv").write_text("q,a,ok\nhi,hello,correct\nbye,\"two\nlines\",flawed\nx,y,flawed\n")
    items = load_own("mine", {"file": str(tmp_path / "r.csv"),
                              "columns": {"task": "q", "output": "a", "label": "ok"}})
    # a quoted field over two lines: the next row starts on line 5
    assert items["item_id"].tolist() == ["mine-00002", "mine-00003", "mine-00005"]
    assert items["group"].tolist() == items["item_id"].tolist()
    assert items["output"].tolist()[1] == "two\nlines"


@pytest.mark.parametrize("text, words", [
    ("id,q,a,ok\n1,x,y,correct\n2,x,y,maybe\n", "line 3: column 'ok' (label) is 'maybe'"),
    ("id,q,a,ok\n1,x,y,correct\n1,x,z,flawed\n", "line 3: duplicate item 1"),
    ("id,q,a,ok\n1,x,y,\n", "line 2: column 'ok' (label) is empty"),
])
def test_a_malformed_row_is_named_by_file_line_and_column(tmp_path, text, words):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(DataFormatError, match=words.replace("(", r"\(").replace(")", r"\)")) \
            as caught:
        load_own("mine", {"file": str(tmp_path / "r.csv"),
                          "columns": {"item_id": "id", "task": "q", "output": "a",
                                      "label": "ok"}})
    assert str(tmp_path / "r.csv") in str(caught.value)


def test_a_mapped_column_the_file_lacks_names_the_config_key(tmp_path):
    (tmp_path / "r.jsonl").write_text(json.dumps({"q": "x", "a": "y"}) + "\n")
    with pytest.raises(DataFormatError, match=r"line 1: no column 'ok' \(config key "
                                              r"'datasets.mine.columns.label'\)"):
        load_own("mine", {"file": str(tmp_path / "r.jsonl"),
                          "columns": {"task": "q", "output": "a", "label": "ok"}})


def test_a_value_listed_under_both_labels_is_refused():
    with pytest.raises(ValueError, match="listed as both correct and flawed"):
        load_own("mine", {**SETTINGS, "labels": {"correct": ["good"], "flawed": ["good"]}})


def test_a_local_folder_in_the_hub_layout_drops_in(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "hub" / "data").mkdir(parents=True)
    (tmp_path / "hub" / "data" / "test.csv").write_text((OWN / "replies.csv").read_text())
    items = load_own("d", {**SETTINGS, "file": None,
                           "hub": {"name": str(tmp_path / "hub"), "split": "test"}})
    assert items["item_id"].tolist() == load_own("d", SETTINGS)["item_id"].tolist()
    assert items["source_file"].iloc[0].endswith(":test")


def test_the_example_config_validates_with_defaults_filled(embedded, schema):
    from rubriclab.config import ConfigError, load_yaml, validate_config

    example = load_yaml(OWN / "config.yaml")
    config = {**embedded, "datasets": {**embedded["datasets"], **example["datasets"]},
              "carry": {**embedded["carry"], "fig2": {**embedded["carry"]["fig2"],
                                                       **example["carry"]["fig2"]}}}
    own = validate_config(config, schema)["datasets"]["travel_replies"]
    assert own["hub"] is None and own["seed"] == 0 and own["max_task_chars"] is None
    assert own["columns"]["domain"] is None
    del config["datasets"]["travel_replies"]["title"]
    with pytest.raises(ConfigError, match="datasets.travel_replies.title' is missing"):
        validate_config(config, schema)
    config["datasets"]["Bad-Name"] = config["datasets"].pop("travel_replies")
    with pytest.raises(ConfigError, match="Bad-Name"):
        validate_config(config, schema)


def test_a_misspelt_registry_dataset_is_not_taken_for_your_own():
    from rubriclab.data.own import misspelt_datasets

    registry = ["summedits", "ragtruth", "healthbench"]
    problems = misspelt_datasets({"sumedits": {"seed": 1}, "summedits": {},
                                  "travel_replies": {"title": "T"}, "zzz": {}}, registry)
    assert problems == ["config key 'datasets.sumedits' is not a setting; did you mean "
                        "'datasets.summedits'? (a dataset of your own needs a title, "
                        "docs/own_data.md)"]
