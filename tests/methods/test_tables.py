"""rubriclab.methods.read_table: CSV, parquet, JSON lines and a Hugging Face dataset folder."""

import pytest

from rubriclab.methods import InputError, attribute, read_table

from .conftest import EXAMPLES


def test_every_format_gives_the_same_attribution(tmp_path):
    verdicts = read_table(EXAMPLES / "table1" / "verdicts.csv")
    labels = read_table(EXAMPLES / "table1" / "labels.csv")
    verdicts.to_parquet(tmp_path / "v.parquet")
    verdicts.to_json(tmp_path / "v.jsonl", orient="records", lines=True)
    expected = attribute(verdicts, labels).checks
    for name in ("v.parquet", "v.jsonl"):
        assert attribute(read_table(tmp_path / name), labels).checks.equals(expected)


def test_csv_ids_with_leading_zeros_are_kept(tmp_path):
    (tmp_path / "l.csv").write_text("item_id,label\n007,correct\n")
    assert read_table(tmp_path / "l.csv")["item_id"].tolist() == ["007"]


def test_a_local_folder_in_the_hub_layout_reads_through_load_dataset(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "my_labels"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.csv").write_text(
        (EXAMPLES / "table1" / "labels.csv").read_text())
    frame = read_table(f"hf:{folder}:train")
    assert frame["item_id"].tolist() == ["R1", "R2", "R3", "R4", "R5"]
    verdicts = read_table(EXAMPLES / "table1" / "verdicts.csv")
    assert attribute(verdicts, frame).checks["unique_catches"].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("source, words", [
    ("hf:owner/name:train", "needs the 40-digit commit"),
    ("hf:owner/name@main:train", "(got main)"),
    ("hf:", "name a dataset"),
])
def test_a_hub_dataset_needs_a_pinned_commit(source, words):
    with pytest.raises(InputError, match=words.replace("(", r"\(").replace(")", r"\)")):
        read_table(source)


def test_an_unknown_extension_is_named(tmp_path):
    (tmp_path / "v.txt").write_text("x")
    with pytest.raises(InputError, match="cannot tell the format of 'v.txt'"):
        read_table(tmp_path / "v.txt")


def test_an_empty_table_is_refused(tmp_path):
    (tmp_path / "l.csv").write_text("item_id,label\n")
    verdicts = read_table(EXAMPLES / "table1" / "verdicts.csv")
    with pytest.raises(InputError, match="has no rows"):
        attribute(verdicts, read_table(tmp_path / "l.csv"))
